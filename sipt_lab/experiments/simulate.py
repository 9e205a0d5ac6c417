"""One semi-synthetic experiment end to end: LM vs SIPT pre-training on a graph family.

For each seed: build the family's dataset (:func:`sipt_lab.synthetic.build_dataset`), pre-train the
same encoder twice on the same batches and masks — once with ``λ_SI = 0`` (LM) and once with the
configured ``λ_SI`` (SIPT) — embed the pre-training and held-out sentences, and score each arm by
leave-one-out 3-NN AUROC (the paper's protocol), held-out 3-NN AUROC and link retrieval on G_PT.
Theorem 1 predicts SIPT's nearest-neighbour accuracy approaches at least the topic task's local
consistency over G_PT, which is reported next to the scores.

Each seed is one cell of :func:`sipt_lab.experiments.sweep.run_grid`, so an interrupted run
resumes with finished seeds loaded from disk, and the same cell function serves the paper's sweeps.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sipt_lab.config import config_hash, config_to_dict, save_config
from sipt_lab.errors import ConfigError, SiptError
from sipt_lab.evaluation import heldout_knn, link_retrieval_metrics, loo_knn
from sipt_lab.experiments.sweep import EXECUTORS, CellResult, GridInterrupted, run_grid
from sipt_lab.fileio import prepare_output_dir, write_json_atomic
from sipt_lab.models import EncoderConfig
from sipt_lab.models.encoder import ENCODER_PRESETS
from sipt_lab.synthetic import GraphSpec, SyntheticDataset, build_dataset
from sipt_lab.synthetic.registry import MAX_SEED, prepare_topics, resolve_spec
from sipt_lab.evaluation.concept_probe import concept_probe
from sipt_lab.methods import ConceptOptions, Teacher, get_method, method_recipe, method_train_config, relation_accuracy
from sipt_lab.training import TrainConfig, embed, pretrain, resolve_device

#: The default methods (arms) of an experiment; any of :data:`sipt_lab.methods.METHODS` may be run.
ARMS = ("lm", "sipt")


@dataclass(frozen=True)
class FamilyTraining:
    """Per-family training defaults (see :data:`TRAINING_DEFAULTS`).

    Attributes:
        encoder: encoder sizes.
        steps, batch_size, lr, schedule, warmup, max_len, pairs: as in :class:`TrainConfig`.
    """

    encoder: EncoderConfig = ENCODER_PRESETS["default"]
    steps: int = 600
    batch_size: int = 32
    lr: float = 5e-4
    pairs: str = "batch"
    schedule: str = "linear"
    warmup: float = 0.0
    max_len: int | None = 64


#: Defaults per graph family; families not listed use ``FamilyTraining()``. The paper trained
#: 1,500-8,000 epochs at lr 3e-4 (no schedule) with hidden 10 or 256 on a GPU. On a CPU, a hidden-64
#: encoder at lr 5e-4 with linear decay, on sentences truncated to their first 63 characters, with
#: ``L_SI`` over every pair in the batch, fits the pre-training graph in a few hundred steps
#: (measured in benchmarks/bench_simulate.py). With the paper's one sampled pair per seed, the
#: embeddings sit collapsed (SI loss stuck at the margin) for the first ~200 steps and some seeds
#: never leave (with µ+ = 0: SPHERE 0.78 vs 0.91 LOO AUROC with nothing else changed; with the
#: default µ+ = 5 the gap is 0.02-0.11: benchmarks/bench_pairs.py).
TRAINING_DEFAULTS: dict[str, FamilyTraining] = {
    "cliques": FamilyTraining(batch_size=50),
    # 400 steps keep `sipt-lab simulate --graph torus` (3 seeds, two on one core) within a minute
    # on 2 cores (450 steps measured 61 s warm).
    "torus": FamilyTraining(steps=400),
    "neighborhood": FamilyTraining(batch_size=64),
    "motif": FamilyTraining(batch_size=64),
    "structural": FamilyTraining(batch_size=64),
}


#: ``L_SI`` parameters of the experiments, per loss, where they differ from the loss's own defaults
#: (the original code's). The contrastive loss keeps µ− = 10 but lets linked samples sit up to
#: µ+ = 5 apart instead of pulling them onto one point: with µ+ = 0 no embedding satisfies both
#: hinges on a radius graph (a node's neighbours are often not each other's), and the compromise
#: blurs the neighbourhoods; with µ+ = µ−/2 the surface itself, scaled, has zero loss. On the
#: manifolds SIPT's LOO AUROC rises from 0.86-0.92 to 0.96-0.98 at the same cost
#: (benchmarks/bench_margins.py), and free vectors trained on L_SI alone rise with it.
LOSS_PARAMS: dict[str, dict[str, float]] = {"contrastive": {"pos_margin": 5.0}}


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
        k: neighbours of the k-NN evaluation (the paper: 3).
        link_queries: nodes sampled for link retrieval (None: every node with a neighbour).
        methods: the pre-training methods compared (:data:`sipt_lab.methods.METHODS`), each on the
            same seeds, batch size and steps; results are keyed by method.
        concepts: the MLSM / LSM settings (used when ``methods`` holds one of them).
    """

    graph: GraphSpec
    train: TrainConfig
    encoder: EncoderConfig
    k: int
    link_queries: int | None
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


def simulation_config(
    family: str,
    *,
    seed: int = 0,
    steps: int | None = None,
    batch_size: int | None = None,
    encoder: EncoderConfig | None = None,
    graph_options: dict[str, Any] | None = None,
    train_options: dict[str, Any] | None = None,
    k: int = 3,
    link_queries: int | None = 500,
    methods: tuple[str, ...] = ARMS,
    concepts: ConceptOptions = ConceptOptions(),
) -> SimulationConfig:
    """The one way to get a :class:`SimulationConfig`: the family's defaults (:data:`TRAINING_DEFAULTS`,
    its sizes via :func:`~sipt_lab.synthetic.registry.resolve_spec`) for whatever is not given.

    ``graph_options`` go to :class:`GraphSpec` (``noise``, ``n_nodes``, ``corpus`` ...),
    ``train_options`` to :class:`TrainConfig` (``lambda_si``, ``loss``, ``device`` ...); their
    ``loss_params`` override :data:`LOSS_PARAMS` one key at a time. Invalid values raise
    :class:`~sipt_lab.errors.ConfigError` naming the field.
    """
    graph = resolve_spec(GraphSpec(family=family, seed=seed, **(graph_options or {})))
    defaults = TRAINING_DEFAULTS.get(family, FamilyTraining())
    family_options = {name: getattr(defaults, name) for name in ("lr", "pairs", "schedule", "warmup", "max_len")}
    train_options = {**family_options, **(train_options or {})}
    loss = train_options.get("loss", TrainConfig.loss)
    train_options["loss_params"] = {**LOSS_PARAMS.get(loss, {}), **train_options.get("loss_params", {})}
    train = TrainConfig(
        steps=defaults.steps if steps is None else steps,
        batch_size=defaults.batch_size if batch_size is None else batch_size,
        seed=seed,
        **train_options,
    )
    return SimulationConfig(graph=graph, train=train, encoder=defaults.encoder if encoder is None else encoder,
                            k=k, link_queries=link_queries, methods=tuple(methods), concepts=concepts)


#: Largest accepted ``--seeds``.
MAX_SEEDS = 1_000


@dataclass
class ArmOutput:
    """One arm's trained embeddings and scores.

    Attributes:
        embeddings: ``(n, H)`` pre-training sample embeddings.
        heldout_embeddings: ``(h, H)`` held-out sample embeddings.
        metrics: ``auroc``, ``accuracy`` (LOO 3-NN), ``heldout_auroc``, ``heldout_accuracy``,
            ``link`` (LRAP, nDCG, AP, MRR), ``final_loss`` and ``seconds``.
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
        train = method_train_config(arm, config.train)
        start = time.perf_counter()
        recipe = method_recipe(arm, teacher, config.concepts)
        result = pretrain(dataset.sentences, dataset.graph, train, config.encoder, progress=progress, method=recipe)
        if arm == "lm" and needs_teacher:
            teacher = Teacher(result.encoder, result.tokenizer)
        z = embed(result.encoder, result.tokenizer, dataset.sentences)
        z_heldout = embed(result.encoder, result.tokenizer, dataset.heldout_sentences)
        seconds = time.perf_counter() - start
        loo = loo_knn(z, dataset.labels, config.k)
        metrics: dict[str, Any] = {
            "auroc": loo.auroc,
            "accuracy": loo.accuracy,
            "link": link_retrieval_metrics(z, dataset.graph, config.link_queries, rng=config.graph.seed),
            "final_loss": float(np.mean(result.history["loss"][-20:])),
            "seconds": seconds,
        }
        if len(dataset.heldout_sentences) and len(np.unique(dataset.heldout_labels)) > 1:
            heldout = heldout_knn(z, dataset.labels, z_heldout, dataset.heldout_labels, config.k)
            metrics.update(heldout_auroc=heldout.auroc, heldout_accuracy=heldout.accuracy)
        metrics.update(_method_metrics(arm, result, recipe, teacher, dataset))
        if arm in config.methods:
            outputs[arm] = ArmOutput(z, z_heldout, metrics)
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


#: Keys of a :func:`simulate_seed` result; a stored result without them is recomputed.
SEED_RESULT_KEYS = ("graph", "seed", "noise", "local_consistency", "n_nodes", "n_edges", "n_classes", "methods")


def simulate_seed(config: SimulationConfig) -> dict[str, Any]:
    """The cell function: one seed, both arms; a JSON-able dict with :data:`SEED_RESULT_KEYS`."""
    dataset = build_dataset(config.graph, progress=False)
    return seed_result(config, dataset, run_arms(dataset, config))


def seed_result(config: SimulationConfig, dataset: SyntheticDataset, arms: dict[str, ArmOutput]) -> dict[str, Any]:
    """A seed's JSON-able cell result: the dataset's sizes and LC, and each arm's metrics."""
    return {
        "graph": config.graph.family,
        "seed": config.graph.seed,
        "noise": config.graph.noise,
        "local_consistency": dataset.local_consistency,
        "n_nodes": dataset.graph.n_nodes,
        "n_edges": dataset.graph.n_edges,
        "n_classes": int(np.unique(dataset.labels).size),
        "methods": {arm: output.metrics for arm, output in arms.items()},
    }


def simulate(
    config: SimulationConfig,
    n_seeds: int = 3,
    out_dir: str | Path | None = None,
    *,
    executor: str = "serial",
    progress: bool = True,
) -> dict[str, Any]:
    """Run seeds ``config.graph.seed .. + n_seeds - 1`` and aggregate them.

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
    out = prepare_output_dir(Path("runs") / f"simulate-{config_hash(config)}" if out_dir is None else out_dir)
    seeds = [config.graph.seed + i for i in range(n_seeds)]
    cells = [with_seed(config, seed) for seed in seeds]
    if executor != "serial":
        prepare_topics(config.graph, progress=progress)
    if progress:
        print(f"sipt-lab: {n_seeds} seed(s) x {len(config.methods)} methods on {config.graph.family}; results in {out}", flush=True)
    try:
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
