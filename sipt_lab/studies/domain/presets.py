"""The budgets of ``domain run``: :data:`PRESETS` per scale, with per-domain replacements in
:data:`DOMAIN_PRESETS` and the paper's fine-tuning per task (:data:`PAPER_FINETUNE`). Each preset's
pre-training config is resolved by :func:`~sipt_lab.training.defaults.train_config` from its init
kind's defaults; the presets set the budget."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sipt_lab.core.errors import SiptError
from sipt_lab.studies import names
from sipt_lab.training import TrainConfig
from sipt_lab.training.defaults import train_config
from sipt_lab.training.finetune import FinetuneConfig


@dataclass(frozen=True)
class DomainPreset:
    """The budget of a domain run.

    Attributes:
        n_samples: samples per seed (a snowball slice), None for all.
        pretrain: the trainer's settings (``steps``, ``batch_size``, ``lr``, ``max_len`` ...).
        finetune: full fine-tuning's settings.
        lambdas: the SIPT ``λ`` grid.
        mode: a :data:`~sipt_lab.jobs.finetune.MODES` name.
        epochs: when set, pre-training runs this many passes over the pre-training samples
            (``pretrain.steps`` is then replaced, :func:`~sipt_lab.training.steps_for_epochs`).
    """

    n_samples: int | None
    pretrain: TrainConfig
    finetune: FinetuneConfig
    lambdas: tuple[float, ...]
    mode: str
    epochs: float | None = None


#: ``cpu``: a budget for a few CPU cores with MiniLM (benchmarks/RESULTS.md); ``full``: the paper's
#: scale for a GPU. The objective (loss, λ, head warm-up) is a checkpoint's default
#: (:data:`sipt_lab.training.defaults.INIT_DEFAULTS`); the presets set the budget.
PRESETS: dict[str, DomainPreset] = dict(
    zip(
        names.DOMAIN_PRESETS,
        (
            DomainPreset(
                n_samples=1000,
                pretrain=train_config("checkpoint", steps=40, batch_size=16, lr=1e-4, max_len=32, log_every=5),
                finetune=FinetuneConfig(lrs=(1e-4,), epochs=2, patience=1, batch_size=16, max_len=32),
                lambdas=(0.1,),
                mode="both",
            ),
            DomainPreset(
                n_samples=None,
                pretrain=train_config("checkpoint", steps=2000, batch_size=64, max_len=128, checkpoint_every=500),
                finetune=FinetuneConfig(lrs=(2e-5, 5e-5, 1e-4), epochs=3, patience=1, batch_size=32, max_len=128),
                lambdas=(0.05, 0.1, 0.3),
                mode="both",
            ),
        ),
        strict=True,
    )
)


#: Per-domain presets that replace :data:`PRESETS` entries, keyed ``(domain, preset)``. ``full`` follows
#: the paper's Methods: PROTEINS and ABSTRACTS warm-start a 12-layer BERT (TAPE's, SciBERT's: pass it
#: as ``--init DIR``) and continue for 1 and 4 epochs at 512 tokens, λ chosen by link retrieval over
#: {0.05, 0.1, 0.3}; NETWORKS trains the GIN from scratch with batch 1024 and lr 0.01 (Hu et al.'s
#: attribute masking, scaled), λ = 0.1. Fine-tuning is the paper's per task where it gives it
#: (:data:`PAPER_FINETUNE`); the entries here are for the other tasks: a small grid for PROTEINS,
#: SciBERT's grid (lr 5e-6 .. 5e-5, batch 32, no early stopping) for ABSTRACTS, Hu et al.'s lr 1e-3
#: and batch 32 for NETWORKS (the paper names no values). bf16 autocast on a GPU that has it
#: (precision ``auto``). Batch sizes are global: under torchrun each of K GPUs encodes 1/K of them.
DOMAIN_PRESETS: dict[tuple[str, str], DomainPreset] = {
    ("proteins", "full"): DomainPreset(
        n_samples=None,
        pretrain=train_config(
            "checkpoint", batch_size=64, lr=2e-5, warmup=0.05, max_len=512, checkpoint_every=1000, log_every=100
        ),
        finetune=FinetuneConfig(lrs=(1e-5, 5e-5, 1e-4), epochs=10, patience=2, batch_size=32, max_len=512),
        lambdas=(0.05, 0.1, 0.3),
        mode="both",
        epochs=1.0,
    ),
    ("abstracts", "full"): DomainPreset(
        n_samples=None,
        pretrain=train_config(
            "checkpoint", batch_size=64, lr=2e-5, warmup=0.05, max_len=512, checkpoint_every=1000, log_every=100
        ),
        finetune=FinetuneConfig(lrs=(5e-6, 1e-5, 2e-5, 5e-5), epochs=4, patience=4, batch_size=32, max_len=512),
        lambdas=(0.05, 0.1, 0.3),
        mode="both",
        epochs=4.0,
    ),
    ("networks", "cpu"): DomainPreset(
        n_samples=600,
        pretrain=train_config("graph", steps=60, batch_size=64, log_every=10),
        finetune=FinetuneConfig(lrs=(1e-3,), epochs=5, patience=2, batch_size=32),
        lambdas=(0.1,),
        mode="both",
    ),
    ("networks", "full"): DomainPreset(
        n_samples=None,
        pretrain=train_config("graph", batch_size=1024, lr=1e-2, checkpoint_every=500, log_every=50),
        finetune=FinetuneConfig(lrs=(1e-3,), epochs=50, patience=10, batch_size=32),
        lambdas=(0.1,),
        mode="both",
        epochs=100.0,
    ),
}


@dataclass(frozen=True)
class PaperFinetune:
    """One task's full fine-tuning as the SIPT paper's Methods give it.

    Attributes:
        lr: the learning rate.
        epochs: most passes over the train split.
        batch_size: samples per step.
        patience: :class:`FinetuneConfig`'s: passes without a better validation score that are
            tolerated before stopping (``epochs``: no early stopping).
        source: where the paper gives the values, and what one value stands for when the paper gives two.
    """

    lr: float
    epochs: int
    batch_size: int
    patience: int
    source: str

    def apply(self, finetune: FinetuneConfig) -> FinetuneConfig:
        """``finetune`` with this task's learning rate (a grid of one), epochs, batch and patience."""
        return dataclasses.replace(
            finetune, lrs=(self.lr,), epochs=self.epochs, batch_size=self.batch_size, patience=self.patience
        )


#: The preset whose fine-tuning follows :data:`PAPER_FINETUNE` for the tasks it lists.
PAPER_PRESET = "full"
#: ``(domain, task)`` -> fine-tuning in the SIPT paper's Methods ("Further Details on Architecture &
#: Hyperparameters", Tables 5 and 6). PROTEINS (Table 5): 200 epochs, "early stopping after 25 epochs
#: of no validation set improvement" (patience 24 here: stop once 25 passes in a row bring no better
#: validation score), batch and lr per task. ABSTRACTS (Table 6): batch 32 and no early stopping as
#: SciBERT; the epochs and lr chosen per task from SciBERT's grid (lr 5e-6 .. 5e-5, 2 .. 5 epochs),
#: where the paper tuned the epochs per arm (LM / SIPT) the larger is kept, since fine-tuning scores
#: the best validation pass of those run. The paper gives no fine-tuning values for contact
#: prediction, SciERC or NETWORKS ("chosen to match the original source model [Hu et al.] save the
#: increase in batch size and learning rate"): those tasks keep their domain's ``full`` preset.
PAPER_FINETUNE: dict[tuple[str, str], PaperFinetune] = {
    ("proteins", "remote_homology"): PaperFinetune(1e-5, 200, 16, 24, "Table 5"),
    ("proteins", "fluorescence"): PaperFinetune(5e-5, 200, 128, 24, "Table 5"),
    ("proteins", "stability"): PaperFinetune(1e-4, 200, 512, 24, "Table 5"),
    ("proteins", "secondary_structure"): PaperFinetune(1e-5, 200, 16, 24, "Table 5"),
    ("abstracts", "mag"): PaperFinetune(5e-5, 2, 32, 2, "Table 6 (Paper Field)"),
    ("abstracts", "acl-arc"): PaperFinetune(5e-5, 5, 32, 5, "Table 6: 4 epochs for LM, 5 for SIPT"),
    ("abstracts", "sci-cite"): PaperFinetune(1e-5, 3, 32, 3, "Table 6: 3 epochs for LM, 2 for SIPT"),
}


def preset_for(domain: str, name: str, task: str | None = None) -> DomainPreset:
    """The preset ``name`` (a :data:`PRESETS` key) for ``domain``: its :data:`DOMAIN_PRESETS` entry if
    any, with :data:`PAPER_FINETUNE`'s fine-tuning of ``task`` under :data:`PAPER_PRESET`."""
    if name not in PRESETS:
        raise SiptError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
    preset = DOMAIN_PRESETS.get((domain, name), PRESETS[name])
    paper = PAPER_FINETUNE.get((domain, task)) if name == PAPER_PRESET else None
    return preset if paper is None else dataclasses.replace(preset, finetune=paper.apply(preset.finetune))
