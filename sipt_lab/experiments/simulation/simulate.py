"""One semi-synthetic experiment end to end: LM vs SIPT pre-training on a graph family.

For each seed: build the family's dataset (:func:`sipt_lab.synthetic.build_dataset`), pre-train the
same encoder twice on the same batches and masks — once with ``λ_SI = 0`` (LM) and once with the
configured ``λ_SI`` (SIPT) — embed the pre-training and held-out sentences, and score each arm by
leave-one-out 3-NN AUROC (the paper's protocol), held-out 3-NN AUROC and link retrieval on G_PT.
Theorem 1 predicts SIPT's nearest-neighbour accuracy approaches at least the topic task's local
consistency over G_PT, which is reported next to the scores.

Each seed is one cell of :func:`sipt_lab.grid.runner.run_grid`, so an interrupted run
resumes with finished seeds loaded from disk, and the same cell function serves the paper's sweeps.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sipt_lab.core import names
from sipt_lab.core.config import config_hash, config_to_dict, save_config
from sipt_lab.training.defaults import PAPER_LAMBDA_SI, init_defaults
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.evaluation import heldout_knn, link_retrieval_metrics, loo_knn, radius_terms
from sipt_lab.grid.runner import EXECUTORS, CellResult, GridInterrupted, run_grid
from sipt_lab.core.fileio import write_json_atomic
from sipt_lab.core.outputs import prepare_grid_dir
from sipt_lab.models import CharInit, EncoderConfig
from sipt_lab.models.subword import TokenizerConfig
from sipt_lab.models.tokenizer import unigram_entropy
from sipt_lab.models.encoder import ENCODER_PRESETS
from sipt_lab.synthetic import GraphSpec, SyntheticDataset, build_dataset
from sipt_lab.synthetic.builder import prepare_topics, resolve_spec
from sipt_lab.synthetic.spec import MAX_SEED
from sipt_lab.evaluation.concept_probe import concept_probe
from sipt_lab.training.methods import ConceptOptions, Teacher, get_method, method_recipe, method_train_config, relation_accuracy
from sipt_lab.training import TrainConfig, embed, pretrain, resolve_device
from sipt_lab.training.trainer import PretrainResult
from sipt_lab.training.config import steps_for_epochs

#: The defaults of the character transformer every experiment trains; the SIPT arm's λ is the
#: paper's protocol (0.1), not the char init's default for a user's short run.
CHAR_DEFAULTS = dataclasses.replace(init_defaults("char"), lambda_si=PAPER_LAMBDA_SI)
#: The default methods (arms) of an experiment; any of :data:`sipt_lab.training.methods.METHODS` may be run.
ARMS = ("lm", "sipt")


#: ``L_SI`` parameters of the experiments, per loss, where they differ from the loss's own defaults
#: (the original code's): the char init's (:data:`sipt_lab.training.defaults.INIT_DEFAULTS`). The contrastive
#: loss keeps µ− = 10 but lets linked samples sit up to µ+ = 5 apart instead of pulling them onto one
#: point: with µ+ = 0 no embedding satisfies both hinges on a radius graph (a node's neighbours are
#: often not each other's), and the compromise blurs the neighbourhoods; with µ+ = µ−/2 the surface
#: itself, scaled, has zero loss (measured on the manifolds by benchmarks/bench_margins.py).
LOSS_PARAMS: dict[str, dict[str, float]] = {CHAR_DEFAULTS.loss: CHAR_DEFAULTS.loss_params}


@dataclass(frozen=True)
class FamilyTraining:
    """How one graph family trains under a preset (see :data:`TRAINING_PRESETS`).

    Attributes:
        encoder: encoder sizes.
        tokenizer: the encoder's vocabulary (characters, or a subword vocabulary learnt on the corpus).
        steps: optimiser steps per arm (unless ``epochs`` is set).
        epochs: when set, ``steps`` is that many passes over the pre-training samples
            (:func:`~sipt_lab.training.config.steps_for_epochs` of the resolved graph and batch).
        batch_size: seeds per step; None: the whole graph every step (``n_nodes``).
        lr, schedule, warmup, max_len, pairs: as in :class:`TrainConfig`.
        loss_params: ``L_SI`` parameters per loss over the loss's own defaults (:data:`LOSS_PARAMS`;
            ``{}``: the original code's µ+ = 0).
    """

    encoder: EncoderConfig = ENCODER_PRESETS["default"]
    tokenizer: TokenizerConfig = TokenizerConfig()
    steps: int = 600
    epochs: float | None = None
    batch_size: int | None = 32
    lr: float = CHAR_DEFAULTS.lr
    pairs: str = CHAR_DEFAULTS.pairs
    schedule: str = CHAR_DEFAULTS.schedule
    warmup: float = CHAR_DEFAULTS.warmup
    max_len: int | None = 64
    loss_params: dict[str, dict[str, float]] = dataclasses.field(default_factory=lambda: LOSS_PARAMS)


#: The ``default`` preset per graph family; families not listed use ``FamilyTraining()``. The paper
#: trained 1,500-8,000 epochs at lr 3e-4 (no schedule) with hidden 10 or 256 on a GPU. On a CPU, a
#: hidden-64 encoder at lr 5e-4 with linear decay, on sentences truncated to their first 63
#: characters, with ``L_SI`` over every pair in the batch, fits the pre-training graph in a few
#: hundred steps (benchmarks/bench_simulate.py, bench_pairs.py; numbers in benchmarks/RESULTS.md).
TRAINING_DEFAULTS: dict[str, FamilyTraining] = {
    # a BPE vocabulary learnt on the sentences: the LM arm learns (benchmarks/bench_lm_baseline.py)
    "cliques": FamilyTraining(batch_size=50, tokenizer=TokenizerConfig("bpe")),
    "torus": FamilyTraining(steps=400),  # keeps `sipt-lab simulate --graph torus` near a minute on 2 cores
    "neighborhood": FamilyTraining(batch_size=64),
    "motif": FamilyTraining(batch_size=64),
    "structural": FamilyTraining(batch_size=64),
}

#: The paper's settings (its Methods; /work/shared/reference/original_sipt_code.md): CLIQUES and
#: the mechanistic graphs train the ``paper-small`` encoder (hidden 10) on the whole graph every
#: step for 8,000 steps; the surfaces the ``paper-manifolds`` encoder (hidden 256 x 3 layers) for
#: 1,500 epochs of 16 seeds; AdamW at lr 3e-4, constant, no warm-up; the paper's pairs (each seed
#: with one sampled neighbour and non-neighbour) and contrastive margins (µ+ = 0, µ− = 10).
#: Sentences keep sipt-lab's 63-character cut (the original padded to the longest, <= 350). CLIQUES
#: uses a BPE vocabulary learnt on its sentences instead of characters: with characters the LM
#: baseline stays on the unigram plateau (benchmarks/bench_lm_baseline.py, RESULTS.md).
PAPER_SMALL = FamilyTraining(encoder=ENCODER_PRESETS["paper-small"], steps=8000, batch_size=None, lr=3e-4,
                             pairs="sampled", schedule="constant", loss_params={})
PAPER_MANIFOLDS = dataclasses.replace(PAPER_SMALL, encoder=ENCODER_PRESETS["paper-manifolds"], epochs=1500.0,
                                      batch_size=16)


@dataclass(frozen=True)
class TrainingPreset:
    """Per-family training of one preset: ``families[name]``, else ``fallback``."""

    fallback: FamilyTraining
    families: dict[str, FamilyTraining]

    def for_family(self, family: str) -> FamilyTraining:
        return self.families.get(family, self.fallback)


#: Training presets by name (:data:`sipt_lab.core.names.SIMULATION_PRESETS`), resolved by :func:`simulation_config`.
TRAINING_PRESETS: dict[str, TrainingPreset] = dict(zip(names.SIMULATION_PRESETS, (
    TrainingPreset(FamilyTraining(), TRAINING_DEFAULTS),
    TrainingPreset(PAPER_SMALL, {"cliques": dataclasses.replace(PAPER_SMALL, tokenizer=TokenizerConfig("bpe")),
                                 **{surface: PAPER_MANIFOLDS for surface in ("plane", "mobius", "sphere", "torus")}}),
), strict=True))


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
    """

    graph: GraphSpec
    train: TrainConfig
    encoder: EncoderConfig
    k: int
    link_queries: int | None
    tokenizer: TokenizerConfig = TokenizerConfig()
    methods: tuple[str, ...] = ARMS
    concepts: ConceptOptions = ConceptOptions()

    def __post_init__(self) -> None:
        if not self.graph.is_resolved:
            raise ConfigError("SimulationConfig.graph", "has unresolved sizes (None); build the config with simulation_config(), which fills the family's")
        if self.train.seed != self.graph.seed:
            raise ConfigError("TrainConfig.seed", f"{self.train.seed} must equal GraphSpec.seed {self.graph.seed} (one seed per experiment)")
        if self.k < 1:
            raise ConfigError("SimulationConfig.k", f"must be >= 1, got {self.k}")
        if self.graph.n_nodes <= self.k:
            raise ConfigError("GraphSpec.n_nodes", f"must be above {self.k} for the {self.k}-NN evaluation, got {self.graph.n_nodes}; use {self.k + 1} or more")
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
    concepts: ConceptOptions = ConceptOptions(),
) -> SimulationConfig:
    """The one way to get a :class:`SimulationConfig`: the family's training under ``preset``
    (:data:`TRAINING_PRESETS`: ``default``, or ``paper``, the paper's settings), its sizes via
    :func:`~sipt_lab.synthetic.builder.resolve_spec`, for whatever is not given.

    ``encoder`` is an :class:`EncoderConfig` or the name of one of
    :data:`~sipt_lab.models.encoder.ENCODER_PRESETS` (None: the preset's). ``graph_options`` go to
    :class:`GraphSpec` (``noise``, ``n_nodes``, ``corpus`` ...), ``train_options`` to
    :class:`TrainConfig` (``lambda_si``, ``loss``, ``device`` ...); their ``loss_params`` override
    the preset's one key at a time. Everything is resolved here (the whole-graph batch to
    ``n_nodes``, epochs to steps), so the config's hash records what runs. Invalid values raise
    :class:`~sipt_lab.core.errors.ConfigError` naming the field.
    """
    if preset not in TRAINING_PRESETS:
        raise ConfigError("simulation_config.preset", f"{preset!r} is unknown; choose one of {', '.join(TRAINING_PRESETS)}")
    if isinstance(encoder, str) and encoder not in ENCODER_PRESETS:
        raise ConfigError("simulation_config.encoder", f"{encoder!r} is unknown; choose one of {', '.join(ENCODER_PRESETS)}")
    graph = resolve_spec(GraphSpec(family=family, seed=seed, **(graph_options or {})))
    defaults = TRAINING_PRESETS[preset].for_family(family)
    family_options = {name: getattr(defaults, name) for name in ("lr", "pairs", "schedule", "warmup", "max_len")}
    train_options = {**family_options, **(train_options or {})}
    loss = train_options.get("loss", TrainConfig.loss)
    train_options["loss_params"] = {**defaults.loss_params.get(loss, {}), **train_options.get("loss_params", {})}
    if batch_size is None:
        batch_size = graph.n_nodes if defaults.batch_size is None else defaults.batch_size
    if steps is None:
        steps = defaults.steps if defaults.epochs is None else steps_for_epochs(defaults.epochs, graph.n_nodes, batch_size)
    train = TrainConfig(**{**CHAR_DEFAULTS.train_options(), "steps": steps, "batch_size": batch_size, "seed": seed, **train_options})
    encoder = defaults.encoder if encoder is None else ENCODER_PRESETS[encoder] if isinstance(encoder, str) else encoder
    return SimulationConfig(graph=graph, train=train, encoder=encoder, k=k, link_queries=link_queries,
                            tokenizer=defaults.tokenizer if tokenizer is None else tokenizer,
                            methods=tuple(methods), concepts=concepts)


#: Largest accepted ``--seeds``.
MAX_SEEDS = 1_000


@dataclass
class ArmOutput:
    """One arm's trained embeddings and scores.

    Attributes:
        embeddings: ``(n, H)`` pre-training sample embeddings.
        heldout_embeddings: ``(h, H)`` held-out sample embeddings.
        metrics: ``auroc``, ``accuracy`` (LOO 3-NN), ``heldout_auroc``, ``heldout_accuracy``,
            ``link`` (LRAP, nDCG, AP, MRR), Theorem 1's ``radius``, ``radius_f1``,
            ``radius_nn_accuracy``, ``radius_nn_coverage`` (:func:`~sipt_lab.evaluation.radius_terms`),
            ``final_loss`` and ``final_terms`` (the total and each term by name, e.g. ``mlm``, ``si``:
            means of the last 20 steps; MLM in nats), ``unigram_entropy`` (the MLM loss of a
            context-free predictor on the same tokens, nats) and ``seconds``.
    """

    embeddings: np.ndarray
    heldout_embeddings: np.ndarray
    metrics: dict[str, Any]


def run_arms(
    dataset: SyntheticDataset, config: SimulationConfig, *, progress: bool = False
) -> dict[str, ArmOutput]:
    """Pre-train and evaluate each of ``config.methods`` on ``dataset`` (paired: same seed, same
    seeds per step, same steps). The MLSM family's teacher is the ``lm`` arm, trained first (and
    not reported when ``lm`` is not among the methods)."""
    outputs, teacher = {}, None
    needs_teacher = any(get_method(name).needs_teacher for name in config.methods)
    order = (["lm"] if needs_teacher else []) + [name for name in config.methods if not (needs_teacher and name == "lm")]
    for arm in order:
        start = time.perf_counter()
        recipe = method_recipe(arm, teacher, config.concepts)
        result = pretrain(dataset.sentences, dataset.graph, arm_config(config, arm), CharInit(config.encoder, config.tokenizer),
                          progress=progress, method=recipe)
        if arm == "lm" and needs_teacher:
            teacher = Teacher(result.encoder, result.tokenizer)
        output = evaluate_arm(dataset, config, result, time.perf_counter() - start)
        output.metrics.update(_method_metrics(arm, result, recipe, teacher, dataset))
        if arm in config.methods:
            outputs[arm] = output
    return {arm: outputs[arm] for arm in config.methods}


def _method_metrics(arm: str, result, recipe, teacher: Teacher | None, dataset: SyntheticDataset) -> dict[str, Any]:
    """What only some methods report: LinkBERT's relation accuracy on fresh pairs; for the MLSM
    family the concept codes' sparsity and the concept -> vocabulary probe against the teacher's MLM."""
    if "drp" in result.objectives:
        sampler = recipe.plan_sampler(dataset.sentences, dataset.graph, result.tokenizer, result.config)
        return {"drp": relation_accuracy(result.encoder, result.objectives["drp"], sampler)}
    if "concepts" in result.objectives:
        ids, lengths = result.tokenizer.encode(dataset.sentences)
        probe = concept_probe(result.encoder, teacher.encoder, ids, lengths, result.tokenizer.vocab_size,
                              result.tokenizer.mask_id, seed=result.config.seed)
        return {"concepts": dict(result.objectives["concepts"].targets.stats), "probe": probe}
    return {}


def arm_config(config: SimulationConfig, arm: str) -> TrainConfig:
    """The training config of method ``arm`` (:func:`~sipt_lab.training.methods.method_train_config`: e.g.
    ``λ_SI = 0`` for ``lm``, the config's for ``sipt``)."""
    return method_train_config(arm, config.train)


def evaluate_arm(dataset: SyntheticDataset, config: SimulationConfig, result: PretrainResult, seconds: float) -> ArmOutput:
    """Embed the pre-training and held-out sentences with a trained arm and score them; ``seconds``
    is the arm's training time, recorded with the embedding time added (as ``metrics["seconds"]``)."""
    start = time.perf_counter()
    z = embed(result.encoder, result.tokenizer, dataset.sentences)
    z_heldout = embed(result.encoder, result.tokenizer, dataset.heldout_sentences)
    seconds += time.perf_counter() - start
    loo = loo_knn(z, dataset.labels, config.k)
    metrics: dict[str, Any] = {
        "auroc": loo.auroc,
        "accuracy": loo.accuracy,
        "link": link_retrieval_metrics(z, dataset.graph, config.link_queries, rng=config.graph.seed),
        **radius_terms(z, dataset.graph, dataset.labels),
        "final_loss": float(np.mean(result.history["loss"][-20:])),
        "final_terms": {term: float(np.mean(values[-20:])) for term, values in result.history.items() if term not in ("loss", "lr")},
        "unigram_entropy": unigram_entropy(*result.tokenizer.encode(dataset.sentences), result.tokenizer.suffix_tokens),
        "seconds": seconds,
    }
    if len(dataset.heldout_sentences) and len(np.unique(dataset.heldout_labels)) > 1:
        heldout = heldout_knn(z, dataset.labels, z_heldout, dataset.heldout_labels, config.k)
        metrics.update(heldout_auroc=heldout.auroc, heldout_accuracy=heldout.accuracy)
    return ArmOutput(z, z_heldout, metrics)


#: Keys of a :func:`simulate_seed` result; a stored result without them is recomputed.
SEED_RESULT_KEYS = ("graph", "seed", "noise", "local_consistency", "n_nodes", "n_edges", "n_classes", "methods")


def simulate_seed(config: SimulationConfig) -> dict[str, Any]:
    """The cell function: one seed, both arms; a JSON-able dict with :data:`SEED_RESULT_KEYS`."""
    dataset = build_dataset(config.graph, progress=False)
    return seed_result(config, dataset, run_arms(dataset, config))


def seed_result(config: SimulationConfig, dataset: SyntheticDataset, arms: dict[str, ArmOutput]) -> dict[str, Any]:
    """A seed's JSON-able cell result: the dataset's sizes and LC, and each arm's metrics."""
    return {**seed_fields(config, dataset), "methods": {arm: output.metrics for arm, output in arms.items()}}


def seed_fields(config: SimulationConfig, dataset: SyntheticDataset) -> dict[str, Any]:
    """What a seed's cell result says besides its arms' metrics: the condition, the dataset's sizes and LC."""
    return {
        "graph": config.graph.family,
        "seed": config.graph.seed,
        "noise": config.graph.noise,
        "local_consistency": dataset.local_consistency,
        "n_nodes": dataset.graph.n_nodes,
        "n_edges": dataset.graph.n_edges,
        "n_classes": int(np.unique(dataset.labels).size),
    }


def simulate(
    config: SimulationConfig,
    n_seeds: int = 3,
    out_dir: str | Path | None = None,
    *,
    executor: str = "serial",
    progress: bool = True,
    batched: bool = False,
) -> dict[str, Any]:
    """Run seeds ``config.graph.seed .. + n_seeds - 1`` and aggregate them.

    ``batched`` trains every seed's two arms as one batched model, a cell run by ``executor``
    (:func:`sipt_lab.experiments.simulation.stacked_cells.train_batched_cells`; same cells, same numbers up to float
    rounding); otherwise each seed is a cell run by ``executor``.

    Results land in ``out_dir`` (default ``runs/simulate-<hash>``): one cell directory per seed
    under ``cells/``, plus ``results.json`` and ``config.json``. Re-running skips finished seeds.

    Returns ``{"graph", "noise", "local_consistency", "local_consistency_per_seed", "seeds",
    "methods": {"lm"|"sipt": {metric: [one value per seed]}}, "out_dir", "config"}``.
    """
    resolve_device(config.train.device)  # cuda without a GPU fails here, before any work
    if not 1 <= n_seeds <= MAX_SEEDS:
        raise SiptError(f"--seeds must be >= 1 and <= {MAX_SEEDS}, got {n_seeds:,}")
    if config.graph.seed + n_seeds - 1 > MAX_SEED:
        raise SiptError(f"--seed + --seeds - 1 must be at most {MAX_SEED}; pass a smaller --seed")
    if executor not in EXECUTORS:
        raise SiptError(f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTORS)}")
    out = prepare_grid_dir(Path("runs") / f"simulate-{config_hash(config)}" if out_dir is None else out_dir)
    seeds = [config.graph.seed + i for i in range(n_seeds)]
    cells = [with_seed(config, seed) for seed in seeds]
    if executor != "serial":
        prepare_topics(config.graph, progress=progress)
    if progress:
        print(f"sipt-lab: {n_seeds} seed(s) x {len(config.methods)} methods on {config.graph.family}; results in {out}", flush=True)
    try:
        if batched:
            from sipt_lab.experiments.simulation.stacked_cells import train_batched_cells  # it builds on this module

            train_batched_cells(cells, out / "cells", executor=executor, progress=progress)
        results = run_grid(simulate_seed, cells, out / "cells", executor=executor, progress=progress,
                           required_keys=SEED_RESULT_KEYS)
    except GridInterrupted as interrupt:  # keep what finished, then stop
        if interrupt.results:
            _write_summary(config, interrupt.results, n_seeds, out)
        raise
    return _write_summary(config, results, n_seeds, out)


def _write_summary(config: SimulationConfig, results: list[CellResult], n_seeds: int, out: Path) -> dict[str, Any]:
    """Aggregate the finished seeds into ``out/results.json`` (and ``out/config.json``); returns the summary."""
    summary = aggregate([cell.result for cell in results])
    summary.update(out_dir=str(out), config=config_to_dict(config), n_seeds=n_seeds)
    save_config(config, out / "config.json")
    write_json_atomic(out / "results.json", summary)
    return summary


def with_seed(config: SimulationConfig, seed: int) -> SimulationConfig:
    """``config`` for another seed (graph and training together)."""
    return dataclasses.replace(
        config,
        graph=dataclasses.replace(config.graph, seed=seed),
        train=dataclasses.replace(config.train, seed=seed),
    )


def aggregate(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-seed cell results -> lists per metric (dotted names for nested ones, e.g. ``link.mrr``)."""
    first = cells[0]
    methods = {
        arm: _collect([_flatten(cell["methods"][arm]) for cell in cells]) for arm in first["methods"]
    }
    lc = [cell["local_consistency"] for cell in cells]
    return {
        "graph": first["graph"],
        "noise": first["noise"],
        "seeds": [cell["seed"] for cell in cells],
        "local_consistency": float(np.mean(lc)),
        "local_consistency_per_seed": lc,
        "n_nodes": [cell["n_nodes"] for cell in cells],
        "n_edges": [cell["n_edges"] for cell in cells],
        "methods": methods,
    }


def _flatten(metrics: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat = {}
    for key, value in metrics.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _collect(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    keys = [key for key in rows[0] if all(key in row for row in rows)]
    return {key: [row[key] for row in rows] for key in keys}
