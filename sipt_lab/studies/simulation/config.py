"""The resolved config of one seed of a semi-synthetic experiment, and the one way to build it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.core.options import option
from sipt_lab.models import EncoderConfig
from sipt_lab.models.subword import TokenizerConfig
from sipt_lab.studies.simulation.presets import SIMULATION_TRAINING, encoder_config, training_preset
from sipt_lab.studies.simulation.simulate_job import ARMS
from sipt_lab.synthetic.builder import resolve_spec
from sipt_lab.synthetic.graph_spec import GraphSpec
from sipt_lab.training import TrainConfig
from sipt_lab.training.defaults import method_train_config, resolve_train_config
from sipt_lab.training.methods import ConceptOptions
from sipt_lab.training.train_config import FinetuneConfig

#: No MLSM / LSM settings given: the methods' defaults.
DEFAULT_CONCEPTS = ConceptOptions()


@dataclass(frozen=True)
class SimulationConfig:
    """Everything one seed of an experiment depends on, fully resolved (its hash names the result
    directory, so it records what runs, not what was asked). Build it with :func:`simulation_config`.

    Attributes:
        graph: which dataset to build, with the family's sizes filled in (``graph.seed`` is the
            experiment seed).
        train: the SIPT arm's training config; the LM arm is the same with ``lambda_si = 0``.
            ``train.seed`` always equals ``graph.seed``.
        encoder: encoder sizes (``vocab_size`` comes from the tokenizer).
        tokenizer: the encoder's vocabulary, learnt on each seed's pre-training sentences.
        k: neighbours of the k-NN evaluation (the paper: 3).
        link_queries: nodes sampled for link retrieval (None: every node with a neighbour).
        methods: the pre-training methods compared (:data:`sipt_lab.training.methods.METHODS`), each on the
            same seeds, batch size and steps; results are keyed by method.
        concepts: the MLSM / LSM settings (used when ``methods`` holds one of them).
        finetune: full fine-tuning of every arm on the topic task (random 80/10/10 splits of the
            pre-training samples drawn with the seed; :func:`~sipt_lab.training.finetune.finetune`);
            None: not run.
    """

    graph: GraphSpec
    train: TrainConfig
    encoder: EncoderConfig
    k: int
    link_queries: int | None
    tokenizer: TokenizerConfig = TokenizerConfig()
    methods: tuple[str, ...] = ARMS
    concepts: ConceptOptions = ConceptOptions()
    finetune: FinetuneConfig | None = option(
        None, help="full fine-tuning of every arm on the topic task", omit_default=True
    )

    def __post_init__(self) -> None:
        if not self.graph.is_resolved:
            raise ConfigError(
                "SimulationConfig.graph",
                "has unresolved sizes (None); build the config with simulation_config(), which fills the family's",
            )
        if self.train.seed != self.graph.seed:
            raise ConfigError(
                "TrainConfig.seed",
                f"{self.train.seed} must equal GraphSpec.seed {self.graph.seed} (one seed per experiment)",
            )
        if self.k < 1:
            raise ConfigError("SimulationConfig.k", f"must be >= 1, got {self.k}")
        if self.graph.n_nodes <= self.k:
            raise ConfigError(
                "GraphSpec.n_nodes",
                f"must be above {self.k} for the {self.k}-NN evaluation, got {self.graph.n_nodes}; use {self.k + 1} or more",
            )
        if self.link_queries is not None and self.link_queries < 1:
            raise ConfigError("SimulationConfig.link_queries", f"must be >= 1 or None, got {self.link_queries}")
        if not self.methods or len(set(self.methods)) != len(self.methods):
            raise ConfigError("SimulationConfig.methods", f"must name distinct methods, got {list(self.methods)}")
        for name in self.methods:
            try:
                method_train_config(name, self.train)
            except SiptError as error:
                raise ConfigError("SimulationConfig.methods", str(error)) from None
        self.concepts.check_layer(self.encoder.n_layers)  # the teacher is the lm arm, of this encoder


def simulation_config(
    family: str,
    *,
    seed: int = 0,
    steps: int | None = None,
    batch_size: int | None = None,
    encoder: EncoderConfig | str | None = None,
    tokenizer: TokenizerConfig | None = None,
    preset: str = "default",
    graph_options: dict[str, Any] | None = None,
    train_options: dict[str, Any] | None = None,
    k: int = 3,
    link_queries: int | None = 500,
    methods: tuple[str, ...] = ARMS,
    concepts: ConceptOptions = DEFAULT_CONCEPTS,
    finetune: FinetuneConfig | None = None,
) -> SimulationConfig:
    """The one way to get a :class:`SimulationConfig`: the family's training under ``preset``
    (:data:`~sipt_lab.studies.simulation.presets.TRAINING_PRESETS`: ``default``, or ``paper``, the paper's
    settings), its sizes via :func:`~sipt_lab.synthetic.builder.resolve_spec`, for whatever is not given.

    ``encoder`` is an :class:`EncoderConfig` or the name of one of
    :data:`~sipt_lab.models.encoder.ENCODER_PRESETS` (None: the preset's). ``graph_options`` go to
    :class:`GraphSpec` (``noise``, ``n_nodes``, ``corpus`` ...), ``train_options`` to
    :class:`TrainConfig` (``lambda_si``, ``loss``, ``device`` ...); their ``loss_params`` override
    the preset's one key at a time. Everything is resolved here (the whole-graph batch to
    ``n_nodes``, epochs to steps), so the config's hash records what runs. Invalid values raise
    :class:`~sipt_lab.core.errors.ConfigError` naming the field.

    ```pycon
    >>> from sipt_lab import ConfigError, simulation_config
    >>> config = simulation_config("cliques", seed=1, steps=20, train_options={"lambda_si": 0.5})
    >>> config.graph.family, config.graph.n_nodes, config.graph.n_topics, config.graph.seed
    ('cliques', 50, 100, 1)
    >>> config.train.steps, config.train.batch_size, config.train.lambda_si, config.train.seed, config.methods
    (20, 50, 0.5, 1, ('lm', 'sipt'))
    >>> simulation_config("cliques", encoder="paper-small").encoder.hidden
    10
    >>> try:
    ...     simulation_config("cliques", graph_options={"noise": 2.0})
    ... except ConfigError as error:
    ...     print(error)
    GraphSpec.noise must be in [0, 1], got 2.0

    ```
    """
    defaults = training_preset(preset).for_family(family)
    encoder = encoder_config(encoder, defaults.encoder)
    graph = resolve_spec(GraphSpec(family=family, seed=seed, **(graph_options or {})))
    given = {"steps": steps, "batch_size": batch_size, "seed": seed, **(train_options or {})}
    if batch_size is None and defaults.whole_graph:
        given["batch_size"] = graph.n_nodes
    train = resolve_train_config(
        "char",
        SIMULATION_TRAINING,
        defaults.train,
        given,
        epochs=defaults.epochs if steps is None else None,
        n_samples=graph.n_nodes,
    )
    return SimulationConfig(
        graph=graph,
        train=train,
        encoder=encoder,
        k=k,
        link_queries=link_queries,
        tokenizer=defaults.tokenizer if tokenizer is None else tokenizer,
        methods=tuple(methods),
        concepts=concepts,
        finetune=finetune,
    )


def with_seed(config: SimulationConfig, seed: int) -> SimulationConfig:
    """``config`` for another seed (graph and training together)."""
    return dataclasses.replace(
        config,
        graph=dataclasses.replace(config.graph, seed=seed),
        train=dataclasses.replace(config.train, seed=seed),
    )
