"""How ``simulate`` and ``figures`` train each graph family: the training presets
(:data:`TRAINING_PRESETS`, ``default`` and the paper's), each a layer of typed overrides
(:class:`~sipt_lab.training.defaults.TrainOverrides`) over the defaults table, and the encoder
sizes they name (:data:`sipt_lab.models.encoder.ENCODER_PRESETS`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sipt_lab.core.errors import ConfigError
from sipt_lab.models import EncoderConfig
from sipt_lab.models.encoder import ENCODER_PRESETS
from sipt_lab.models.subword import TokenizerConfig
from sipt_lab.studies import names
from sipt_lab.training.defaults import PAPER_LAMBDA_SI, TrainOverrides

#: What every semi-synthetic experiment sets over the ``char`` row of the defaults table: the SIPT
#: arm's λ is the paper's protocol (0.1), not the char init's default for a user's short run, and
#: sentences are cut to their first 63 characters. The contrastive loss keeps the char row's
#: margins: µ− = 10, with linked samples allowed up to µ+ = 5 apart instead of pulled onto one
#: point (with µ+ = 0 no embedding satisfies both hinges on a radius graph, whose neighbours are
#: often not each other's, and the compromise blurs the neighbourhoods; with µ+ = µ−/2 the surface
#: itself, scaled, has zero loss: benchmarks/bench_margins.py).
SIMULATION_TRAINING = TrainOverrides(where="simulate", lambda_si=PAPER_LAMBDA_SI, steps=600, max_len=64)


@dataclass(frozen=True)
class FamilyTraining:
    """How one graph family trains under a preset (see :data:`TRAINING_PRESETS`).

    Attributes:
        encoder: encoder sizes.
        tokenizer: the encoder's vocabulary (characters, or a subword vocabulary learnt on the corpus).
        train: :class:`TrainConfig` fields over :data:`SIMULATION_TRAINING` (a layer of
            :func:`~sipt_lab.training.defaults.resolve_train_config`).
        epochs: when set, ``steps`` is that many passes over the pre-training samples.
        whole_graph: every step's batch is the whole graph (``batch_size`` = ``n_nodes``).
    """

    encoder: EncoderConfig = ENCODER_PRESETS["default"]
    tokenizer: TokenizerConfig = TokenizerConfig()
    train: TrainOverrides = TrainOverrides()
    epochs: float | None = None
    whole_graph: bool = False


#: The ``default`` preset per graph family; families not listed use ``FamilyTraining()``. The paper
#: trained 1,500-8,000 epochs at lr 3e-4 (no schedule) with hidden 10 or 256 on a GPU. On a CPU, a
#: hidden-64 encoder at lr 5e-4 with linear decay, on sentences truncated to their first 63
#: characters, with ``L_SI`` over every pair in the batch, fits the pre-training graph in a few
#: hundred steps (benchmarks/bench_simulate.py, bench_pairs.py; numbers in benchmarks/RESULTS.md).
TRAINING_DEFAULTS: dict[str, FamilyTraining] = {
    # a BPE vocabulary learnt on the sentences: the LM arm learns (benchmarks/bench_lm_baseline.py)
    "cliques": FamilyTraining(tokenizer=TokenizerConfig("bpe"), train=TrainOverrides(batch_size=50)),
    "torus": FamilyTraining(train=TrainOverrides(steps=400)),  # a shorter default run for the largest default surface
    "neighborhood": FamilyTraining(train=TrainOverrides(batch_size=64)),
    "motif": FamilyTraining(train=TrainOverrides(batch_size=64)),
    "structural": FamilyTraining(train=TrainOverrides(batch_size=64)),
}

#: The paper's settings (its Methods and original code): CLIQUES and the mechanistic graphs train
#: the ``paper-small`` encoder (hidden 10) on the whole graph every step for 8,000 steps; the
#: surfaces the ``paper-manifolds`` encoder (hidden 256 x 3 layers) for 1,500 epochs of 16 seeds;
#: AdamW at lr 3e-4, constant, no warm-up; the paper's pairs (each seed with one sampled neighbour
#: and non-neighbour) and contrastive margins (µ+ = 0, µ− = 10). Sentences keep sipt-lab's
#: 63-character cut (the original padded to the longest, <= 350). CLIQUES uses a BPE vocabulary
#: learnt on its sentences instead of characters: with characters the LM baseline stays on the
#: unigram plateau (benchmarks/bench_lm_baseline.py, RESULTS.md).
PAPER_TRAINING = TrainOverrides(
    where="preset paper", steps=8000, lr=3e-4, pairs="sampled", schedule="constant", loss_params={}
)
PAPER_SMALL = FamilyTraining(encoder=ENCODER_PRESETS["paper-small"], train=PAPER_TRAINING, whole_graph=True)
PAPER_MANIFOLDS = FamilyTraining(
    encoder=ENCODER_PRESETS["paper-manifolds"], train=PAPER_TRAINING | {"batch_size": 16}, epochs=1500.0
)


@dataclass(frozen=True)
class TrainingPreset:
    """Per-family training of one preset: ``families[name]``, else ``fallback``."""

    fallback: FamilyTraining
    families: dict[str, FamilyTraining]

    def for_family(self, family: str) -> FamilyTraining:
        return self.families.get(family, self.fallback)


#: Training presets by name (:data:`sipt_lab.studies.names.SIMULATION_PRESETS`), resolved by
#: :func:`~sipt_lab.studies.simulation.config.simulation_config`.
TRAINING_PRESETS: dict[str, TrainingPreset] = dict(
    zip(
        names.SIMULATION_PRESETS,
        (
            TrainingPreset(FamilyTraining(), TRAINING_DEFAULTS),
            TrainingPreset(
                PAPER_SMALL,
                {
                    "cliques": dataclasses.replace(PAPER_SMALL, tokenizer=TokenizerConfig("bpe")),
                    **{surface: PAPER_MANIFOLDS for surface in ("plane", "mobius", "sphere", "torus")},
                },
            ),
        ),
        strict=True,
    )
)


def training_preset(name: str) -> TrainingPreset:
    """The training preset ``name``; a ConfigError naming ``simulation_config.preset`` otherwise."""
    if name not in TRAINING_PRESETS:
        raise ConfigError(
            "simulation_config.preset", f"{name!r} is unknown; choose one of {', '.join(TRAINING_PRESETS)}"
        )
    return TRAINING_PRESETS[name]


def encoder_config(name: str | EncoderConfig | None, fallback: EncoderConfig) -> EncoderConfig:
    """An encoder given by its :data:`~sipt_lab.models.encoder.ENCODER_PRESETS` name or as a config
    (None: ``fallback``); a ConfigError naming ``simulation_config.encoder`` for an unknown name."""
    if name is None:
        return fallback
    if not isinstance(name, str):
        return name
    if name not in ENCODER_PRESETS:
        raise ConfigError(
            "simulation_config.encoder", f"{name!r} is unknown; choose one of {', '.join(ENCODER_PRESETS)}"
        )
    return ENCODER_PRESETS[name]
