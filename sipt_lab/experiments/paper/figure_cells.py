"""The experiments behind the paper's figures: their configs, grid cells and tables of numbers.

:mod:`sipt_lab.experiments.paper.figures` draws them (CSV + PNG/PDF); everything here computes, and the
expensive work runs as cells of :func:`~sipt_lab.grid.runner.run_grid` under
``options.cells_dir`` (default ``<out_dir>/cells``), so it is computed once and a re-run skips
finished cells:

* ``fig5a``, ``fig5b`` and ``theorem1`` share ONE grid of :func:`simulate_seed` cells
  (:func:`figure5_configs`): every family at noise 0, plus CLIQUES at every noise rate, seeds
  ``0 .. seeds-1``. Its tidy table (every config field and metric) is ``fig5_cells.csv``.
  ``FigureOptions.batched`` trains each condition's seeds x arms as one batched model
  (:mod:`sipt_lab.experiments.simulation.stacked_cells`); the cells stay the same, one per seed.
* ``theorem1``'s oracle embedder (``L_SI`` on free node vectors, no encoder) runs as
  :func:`oracle_cell` cells under ``<cells_dir>/oracle`` on the very same datasets (same :class:`GraphSpec`).
* ``corollary1``'s oracle runs as :func:`corollary1_cell` cells under ``<cells_dir>/corollary1``.
* ``heldout_scale`` runs :func:`heldout_scale_cell` cells under ``<cells_dir>/heldout_scale``:
  CLIQUES and TORUS at growing sizes (:data:`HELDOUT_SCALE_NODES`), a fixed number of passes per
  pre-training sample (``steps = passes * n / batch``, :func:`passes_to_steps`), 200 held-out
  sentences each. Per arm: LOO and held-out 3-NN AUROC, and a linear probe (:func:`heldout_probe`)
  trained on the pre-training sentences' frozen embeddings and topic labels (strength chosen on a
  random 20 % of them) and scored on every held-out sentence: the held-out 3-NN's reference set is
  the pre-training samples too, so both ask the same question (does what SIPT learnt on ``G_PT``
  carry over to unseen sentences), and the whole held-out set stays the test set.
* ``fig5cd`` and ``topology`` train the two arms on one dataset each (seed 0) in this process
  (:func:`trained_arms`); ``corollary2`` needs no training (:func:`corollary2_rows`).

Topology (:func:`topology_tables`): Betti numbers ``b0, b1, b2`` read off the LM and SIPT
embeddings of TORUS and SPHERE (seed 0) by :func:`sipt_lab.evaluation.embedding_topology.rips_betti`:
Vietoris-Rips persistence (gudhi) not of the raw Euclidean distances, which concentrate in 64
dimensions, but of the shortest-path distances along the symmetrised k-nearest-neighbour graph
(k = :data:`~sipt_lab.evaluation.embedding_topology.KNN_NEIGHBOURS`; Isomap-style), on at most
:data:`TOPOLOGY_MAX_POINTS` points (farthest-point sampling in that metric). Rule, relative to that
metric's own scale: ``eps`` = the median distance from a point to its k-th nearest point; the
filtration stops at ``L = 3 eps``; a bar is *long-lived* when its lifetime (death capped at ``L``)
is at least :data:`~sipt_lab.evaluation.embedding_topology.LONG_BAR_FRACTION` ``* L = eps``. The long-lived
bars per dimension are compared with the surface's Betti numbers (torus 1, 2, 1; sphere 1, 0, 1).
Check of the method, row :data:`CHECK_ROW`: the same rule on the exact on-surface distances of
:data:`TOPOLOGY_CHECK_POINTS` points spread evenly over the surface (farthest-point sample of
:data:`TOPOLOGY_CHECK_POOL` uniform points). Columns ``positions_b0..2``: the same rule on the
on-surface distances of the very sentences the embeddings are of (what they give at the default
size is in the README, "topology").

``topology.csv``: per surface and embedder, ``n_points`` (points in the Rips complex), ``rips_quantile``
(the fraction of their pairwise graph distances ``<= L``), ``max_edge_length`` (``L``),
``long_bar_fraction``, ``b0..b2``, ``true_b0..2``, ``matches``, then ``points`` (what they are),
``n_input`` (points before the farthest-point sampling), ``knn_k``, ``knn_scale`` (``eps``) and
``positions_b0..2``. ``topology_bars.csv``: every bar, birth / death / lifetime in units of ``L``.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.data.tasks import ProbeResult, linear_probe
from sipt_lab.experiments.simulation.stacked_cells import run_arms_batched, train_batched_cells
from sipt_lab.experiments.paper.paper_values import CLIQUES_NOISE_AUROC, FAMILY_AUROC
from sipt_lab.evaluation.embedding_topology import KNN_NEIGHBOURS, LONG_BAR_FRACTION, RipsBetti, rips_betti
from sipt_lab.experiments.simulation.simulate import (
    ARMS,
    MAX_SEEDS,
    SEED_RESULT_KEYS,
    TRAINING_PRESETS,
    SimulationConfig,
    run_arms,
    seed_result,
    simulate_seed,
    simulation_config,
)
from sipt_lab.models.encoder import ENCODER_PRESETS
from sipt_lab.grid.runner import EXECUTORS, CellResult, GridInterrupted, result_rows, run_grid, write_results_csv
from sipt_lab.core.stats import mean_sd
from sipt_lab.synthetic import GraphSpec, SyntheticDataset, build_dataset
from sipt_lab.synthetic.builder import prepare_topics, resolve_spec
from sipt_lab.synthetic.families import get_family
from sipt_lab.synthetic.spec import MAX_NODES
from sipt_lab.experiments.paper.theory import corollary1_experiment, correlated_labels, theorem1_check
from sipt_lab.training.config import MAX_STEPS

#: The graph families of Figure 5a, and the edge-noise rates of Figure 5b (on CLIQUES).
FIGURE5_FAMILIES = ("cliques", "plane", "mobius", "sphere", "torus", "neighborhood", "motif", "structural")
NOISE_RATES = (0.0, 0.05, 0.1, 0.15, 0.5)

COROLLARY1_AGREEMENTS = tuple(np.round(np.linspace(0.0, 1.0, 11), 2).tolist())
COROLLARY2_SURFACES = ("plane", "mobius", "sphere", "torus")
COROLLARY2_N = tuple(np.unique(np.round(np.geomspace(100, 30000, 12)).astype(int)).tolist())
TOPOLOGY_SURFACES = ("torus", "sphere")
TOPOLOGY_MAX_POINTS = 300
TOPOLOGY_CHECK_POINTS = 300
TOPOLOGY_CHECK_POOL = 1200
CHECK_ROW = "surface (geodesic)"


@dataclass(frozen=True)
class FigureOptions:
    """How to make the figures (round-trips through :mod:`sipt_lab.core.config`).

    Attributes:
        seeds: seeds ``0 .. seeds-1`` of every experiment (error bars are sd over seeds).
        executor: where grid cells run (``serial``, ``local``, ``slurm``).
        steps: pre-training steps per arm; None: each family's default.
        n_nodes: pre-training samples per dataset; None: each family's default.
        families: the graph families of ``fig5a`` / ``theorem1``.
        noise_rates: the edge-noise rates of ``fig5b`` / ``theorem1`` (on CLIQUES).
        cells_dir: where grid cells live; None: ``<out_dir>/cells``.
        progress: progress bars and lines on stderr.
        passes: ``heldout_scale``'s training budget, passes over each pre-training sample per arm;
            None: :data:`HELDOUT_SCALE_PASSES`.
        scale_nodes: ``heldout_scale``'s pre-training sizes for every family; None: each family's
            :data:`HELDOUT_SCALE_NODES`.
        preset: training settings per family (:data:`~sipt_lab.experiments.simulation.simulate.TRAINING_PRESETS`:
            ``default`` or ``paper``).
        encoder: char encoder sizes, a name in :data:`~sipt_lab.models.encoder.ENCODER_PRESETS`;
            None: the preset's.
        batched: train each condition's seeds x arms of the Figure 5 grid as one batched model
            (conditions side by side under ``executor``), and ``fig5cd`` / ``topology``'s two
            arms as one batched model in this process (same cells).
    """

    seeds: int = 3
    executor: str = "local"
    steps: int | None = None
    n_nodes: int | None = None
    families: tuple[str, ...] = FIGURE5_FAMILIES
    noise_rates: tuple[float, ...] = NOISE_RATES
    cells_dir: str | None = None
    progress: bool = True
    passes: float | None = None
    scale_nodes: tuple[int, ...] | None = None
    preset: str = "default"
    encoder: str | None = None
    batched: bool = False


def check_options(options: FigureOptions) -> None:
    """One-line SiptErrors for options that cannot run."""
    if not 1 <= options.seeds <= MAX_SEEDS:
        raise SiptError(f"--seeds must be >= 1 and <= {MAX_SEEDS}, got {options.seeds:,}")
    if options.executor not in EXECUTORS:
        raise SiptError(f"unknown executor {options.executor!r}; choose one of {', '.join(EXECUTORS)}")
    if options.steps is not None and not 1 <= options.steps <= MAX_STEPS:
        raise SiptError(
            f"--steps must be a positive number of optimiser steps up to {MAX_STEPS:,}, got {options.steps:,}")
    if options.n_nodes is not None and not 2 <= options.n_nodes <= MAX_NODES:
        raise SiptError(f"--nodes must be in [2, {MAX_NODES:,}], got {options.n_nodes:,}")
    if not options.families:
        raise SiptError("no graph families given; name at least one")
    for family in options.families:
        get_family(family)
    for rate in options.noise_rates:
        if not 0.0 <= rate <= 1.0:
            raise SiptError(f"noise rates must be in [0, 1], got {rate}")
    if options.passes is not None and options.passes <= 0:
        raise SiptError(f"--passes must be a positive number of passes per sample, got {options.passes}")
    if options.scale_nodes is not None and (not options.scale_nodes or min(options.scale_nodes) < 2):
        raise SiptError(f"--scale-nodes must be sizes of at least 2 nodes, got {options.scale_nodes}")
    if options.preset not in TRAINING_PRESETS:
        raise SiptError(f"--preset {options.preset!r} is unknown; choose one of {', '.join(TRAINING_PRESETS)}")
    if options.encoder is not None and options.encoder not in ENCODER_PRESETS:
        raise SiptError(f"--encoder {options.encoder!r} is unknown; choose one of {', '.join(ENCODER_PRESETS)}")


def cells_root(out_dir: str | Path, options: FigureOptions) -> Path:
    """The directory of the shared grid cells."""
    return Path(options.cells_dir) if options.cells_dir is not None else Path(out_dir) / "cells"


# --- the shared Figure 5 grid ----------------------------------------------------------------------


def experiment_config(family: str, options: FigureOptions, *, seed: int = 0, noise: float = 0.0) -> SimulationConfig:
    """The :class:`SimulationConfig` of one experiment under ``options`` (family defaults otherwise)."""
    graph_options: dict[str, Any] = {"noise": float(noise)}
    if options.n_nodes is not None:
        graph_options["n_nodes"] = options.n_nodes
    return simulation_config(family, seed=seed, steps=options.steps, preset=options.preset, encoder=options.encoder,
                             graph_options=graph_options)


def figure5_configs(options: FigureOptions) -> list[SimulationConfig]:
    """The shared grid: every family at noise 0, CLIQUES at every noise rate; seeds vary fastest."""
    conditions = [(family, 0.0) for family in options.families]
    conditions += [("cliques", float(rate)) for rate in options.noise_rates]
    conditions = list(dict.fromkeys(conditions))
    return [experiment_config(f, options, seed=s, noise=p) for f, p in conditions for s in range(options.seeds)]


def run_figure5_grid(out_dir: str | Path, options: FigureOptions) -> list[CellResult]:
    """Run (or load) the shared grid and write its tidy table ``<out_dir>/fig5_cells.csv``."""
    check_options(options)
    configs = figure5_configs(options)
    prepare_grid_topics([c.graph for c in configs], options)
    try:
        if options.batched:
            train_batched_cells(configs, cells_root(out_dir, options), executor=options.executor, progress=options.progress)
        results = run_grid(simulate_seed, configs, cells_root(out_dir, options), executor=options.executor,
                           progress=options.progress, required_keys=SEED_RESULT_KEYS)
    except GridInterrupted as interrupt:  # keep the table of what finished, then stop
        write_results_csv(result_rows(interrupt.results), Path(out_dir) / "fig5_cells.csv")
        raise
    write_results_csv(result_rows(results), Path(out_dir) / "fig5_cells.csv")
    return results


def prepare_grid_topics(specs: Sequence[GraphSpec], options: FigureOptions) -> None:
    """Fit each topic model the grid's datasets need once, here, rather than in every worker at once
    (only for executors that run cells in other processes)."""
    if options.executor != "serial":
        models = {(spec.corpus, spec.n_topics): spec for spec in map(resolve_spec, specs)}
        for spec in models.values():
            prepare_topics(spec, progress=options.progress)


def cells_of(results: Sequence[CellResult], graph: str, noise: float) -> list[dict]:
    """The results of the grid's cells on ``graph`` at edge-noise rate ``noise`` (one per seed)."""
    return [cell.result for cell in results if cell.result["graph"] == graph and cell.result["noise"] == noise]


def seed_summary(cells: Sequence[dict], metrics: Sequence[str] = ("auroc", "heldout_auroc", "accuracy")) -> dict[str, float]:
    """Mean and sd over seeds of LC and every arm's ``metrics`` (default: AUROC, held-out AUROC, accuracy)."""
    row = {"n_seeds": len(cells), **mean_sd_columns("local_consistency", [c["local_consistency"] for c in cells])}
    for arm in ARMS:
        for metric in metrics:
            row.update(mean_sd_columns(f"{arm}_{metric}", [c["methods"][arm].get(metric) for c in cells]))
    return row


def mean_sd_columns(name: str, values: Sequence[float | None]) -> dict[str, float]:
    """``{name_mean, name_sd}`` of :func:`sipt_lab.core.stats.mean_sd` (sample sd, nan for one value)."""
    mean, sd = mean_sd(values)
    return {f"{name}_mean": mean, f"{name}_sd": sd}


def fig5a_rows(results: Sequence[CellResult], options: FigureOptions) -> list[dict[str, Any]]:
    """Per family (noise 0): :func:`seed_summary` next to the paper's LM / SIPT AUROC."""
    rows = []
    for family in options.families:
        paper = FAMILY_AUROC.get(family, (math.nan, math.nan))
        rows.append({"graph": family, **seed_summary(cells_of(results, family, 0.0)),
                     "paper_lm_auroc": paper[0], "paper_sipt_auroc": paper[1]})
    return rows


def fig5b_rows(results: Sequence[CellResult], options: FigureOptions) -> list[dict[str, Any]]:
    """Per CLIQUES noise rate (ascending): :func:`seed_summary` next to the paper's LM / SIPT AUROC."""
    rows = []
    for rate in sorted({float(rate) for rate in options.noise_rates}):
        paper = CLIQUES_NOISE_AUROC.get(rate, (math.nan, math.nan))
        rows.append({"noise": rate, "noise_percent": 100 * rate, **seed_summary(cells_of(results, "cliques", rate)),
                     "paper_lm_auroc": paper[0], "paper_sipt_auroc": paper[1]})
    return rows


# --- Theorem 1's oracle ----------------------------------------------------------------------------


@dataclass(frozen=True)
class OracleConfig:
    """One oracle cell: ``L_SI`` optimised on free node vectors over the dataset ``graph`` builds,
    with the SIPT arm's loss and loss parameters."""

    graph: GraphSpec
    loss: str = "contrastive"
    loss_params: dict[str, float] = field(default_factory=dict)
    dim: int = 16
    steps: int = 500
    k: int = 3


def oracle_cell(config: OracleConfig) -> dict[str, Any]:
    """The oracle's LOO ``k``-NN accuracy and AUROC, and its r-NN accuracy at the radius best
    recovering ``G_PT`` (:func:`~sipt_lab.experiments.paper.theory.theorem1_check`), next to LC."""
    dataset = build_dataset(config.graph, progress=False)
    check = theorem1_check(dataset.graph, dataset.labels, k=config.k, seed=config.graph.seed,
                           dim=config.dim, steps=config.steps, loss=config.loss, **config.loss_params)
    return {"graph": config.graph.family, "noise": config.graph.noise, "seed": config.graph.seed,
            "local_consistency": check.bound, "accuracy": check.nn_accuracy, "auroc": check.nn_auroc,
            "radius_f1": check.radius_f1, "radius_nn_accuracy": check.radius_nn_accuracy,
            "radius_nn_coverage": check.radius_nn_coverage}


#: Theorem 1's radius terms in the ``theorem1`` table (NaN for cells computed before they were recorded).
RADIUS_COLUMNS = ("radius_f1", "radius_nn_accuracy", "radius_nn_coverage")


def theorem1_rows(out_dir: str | Path, results: Sequence[CellResult], options: FigureOptions) -> list[dict[str, Any]]:
    """Run (or load) the oracle cells on the grid's datasets; one row per (embedder, graph, noise,
    seed): LC, LOO 3-NN accuracy and AUROC, ``accuracy_minus_lc``, and the radius terms
    (:data:`RADIUS_COLUMNS`) with ``radius_nn_minus_lc`` (embedders ``sipt``, ``oracle``)."""
    oracle_configs = [
        OracleConfig(graph=cell.config.graph, loss=cell.config.train.loss, loss_params=cell.config.train.loss_params, k=cell.config.k)
        for cell in results
    ]
    oracle = run_grid(oracle_cell, oracle_configs, cells_root(out_dir, options) / "oracle",
                      executor=options.executor, progress=options.progress, required_keys=RADIUS_COLUMNS)
    rows = []
    for embedder, cells in (("sipt", [c.result for c in results]), ("oracle", [c.result for c in oracle])):
        for cell in cells:
            metrics, lc = (cell["methods"]["sipt"] if embedder == "sipt" else cell), cell["local_consistency"]
            radius = {name: float(metrics.get(name, math.nan)) for name in RADIUS_COLUMNS}
            rows.append({"graph": cell["graph"], "noise": cell["noise"], "seed": cell["seed"], "embedder": embedder,
                         "local_consistency": lc, "accuracy": metrics["accuracy"], "auroc": metrics["auroc"],
                         "accuracy_minus_lc": metrics["accuracy"] - lc, **radius,
                         "radius_nn_minus_lc": radius["radius_nn_accuracy"] - lc})
    return rows


# --- one seed trained in this process (fig5cd, topology) ----------------------------------------


def trained_arms(family: str, options: FigureOptions) -> tuple[SimulationConfig, SyntheticDataset, dict]:
    """Build ``family``'s seed-0 dataset and train both arms on it in this process."""
    config = experiment_config(family, options)
    say(options, f"training LM and SIPT on {family} (seed 0, {config.train.steps} steps per arm)")
    dataset = build_dataset(config.graph, progress=False)
    if options.batched:
        return config, dataset, run_arms_batched([dataset], [config], progress=options.progress)[0]
    return config, dataset, run_arms(dataset, config, progress=options.progress)


def umap_2d(embeddings: np.ndarray, seed: int = 0) -> np.ndarray:
    """``(n, 2)`` UMAP coordinates of ``(n, H)`` embeddings (umap-learn, ``random_state=seed``)."""
    import umap  # slow to import: only when a UMAP is drawn

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "n_jobs overridden by setting random_state"
        reducer = umap.UMAP(n_components=2, n_neighbors=min(15, len(embeddings) - 1), random_state=seed)
        return np.asarray(reducer.fit_transform(np.asarray(embeddings, dtype=np.float32)), dtype=float)


@dataclass
class TopologyTables:
    """What ``topology`` computes (module docstring).

    Attributes:
        rows: ``topology.csv``'s rows, per surface and embedder.
        bars: ``topology_bars.csv``'s rows, every persistence bar.
        surfaces: per surface: ``(results, positions, true_betti)``: embedder -> :class:`RipsBetti`
            (the check row first, then the arms), the Betti counts of the sentences' own positions,
            and the surface's Betti numbers.
    """

    rows: list[dict[str, Any]]
    bars: list[dict[str, Any]]
    surfaces: dict[str, tuple[dict[str, RipsBetti], tuple[int, ...], tuple[int, ...]]]


def topology_tables(options: FigureOptions) -> TopologyTables:
    """Train LM and SIPT on each of :data:`TOPOLOGY_SURFACES` (seed 0) and read Betti numbers off
    their embeddings, the sentences' positions and evenly spread check points."""
    from scipy.spatial.distance import pdist, squareform

    from sipt_lab.manifolds import geodesic_matrix, get_surface, uniform_points
    from sipt_lab.manifolds.homology import betti_numbers

    tables = TopologyTables([], [], {})
    for surface in TOPOLOGY_SURFACES:
        _, dataset, arms = trained_arms(surface, options)
        tiling = get_surface(surface)
        columns, points = dataset.tables["points"]
        tri = points[:, columns.index("triangle")].astype(np.int64)
        bary = points[:, [columns.index(c) for c in ("b0", "b1", "b2")]].astype(float)
        positions = rips_betti(geodesic_matrix(tiling, tri, bary), max_points=TOPOLOGY_MAX_POINTS)
        pool_tri, pool_bary = uniform_points(tiling, TOPOLOGY_CHECK_POOL, np.random.default_rng(0))
        inputs = {CHECK_ROW: (geodesic_matrix(tiling, pool_tri, pool_bary), TOPOLOGY_CHECK_POINTS,
                              f"evenly spread on the surface, from {TOPOLOGY_CHECK_POOL} uniform")}
        inputs.update({arm.upper(): (squareform(pdist(arms[arm].embeddings.astype(float))), TOPOLOGY_MAX_POINTS,
                                     "pre-training sentences") for arm in ARMS})
        true_betti = tuple(betti_numbers(tiling, 2))
        results: dict[str, RipsBetti] = {}
        for embedder, (matrix, max_points, what) in inputs.items():
            say(options, f"topology: Rips persistence of {surface} / {embedder} ({len(matrix)} points)")
            result = results[embedder] = rips_betti(matrix, max_points=max_points)
            tables.rows.append({"surface": surface, "embedder": embedder, "n_points": len(result.kept),
                                "rips_quantile": result.within_cutoff, "max_edge_length": result.cutoff,
                                "long_bar_fraction": LONG_BAR_FRACTION,
                                **{f"b{d}": result.counts[d] for d in range(3)},
                                **{f"true_b{d}": true_betti[d] for d in range(3)},
                                "matches": tuple(result.counts) == true_betti,
                                "points": what, "n_input": len(matrix), "knn_k": KNN_NEIGHBOURS, "knn_scale": result.scale,
                                **{f"positions_b{d}": positions.counts[d] for d in range(3)}})
            tables.bars += [{"surface": surface, "embedder": embedder, "dimension": int(dim), "birth": birth,
                             "death": death, "lifetime": min(death, 1.0) - birth, "long_lived": bool(long)}
                            for (dim, birth, death), long in zip(result.diagram.tolist(), result.long_lived())]
        tables.surfaces[surface] = (results, tuple(positions.counts), true_betti)
    return tables


# --- Corollaries --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Corollary1Config:
    """One Corollary 1 cell: ``n_pt_classes`` PT cliques of ``per_class`` nodes; FT labels that
    follow the PT class (``c mod n_ft_classes``) with probability ``agreement``."""

    agreement: float
    seed: int = 0
    n_pt_classes: int = 10
    per_class: int = 30
    n_ft_classes: int = 5
    steps: int = 500


def corollary1_cell(config: Corollary1Config) -> dict[str, Any]:
    """The oracle's LOO 3-NN accuracy on the FT labels next to the Corollary 1 bound."""
    pt_labels = np.repeat(np.arange(config.n_pt_classes), config.per_class)
    rng = np.random.default_rng([config.seed, round(1000 * config.agreement)])
    ft_labels = correlated_labels(pt_labels, config.n_ft_classes, config.agreement, rng)
    check = corollary1_experiment(pt_labels, ft_labels, seed=config.seed, steps=config.steps)
    return dataclasses.asdict(check)


def corollary1_rows(out_dir: str | Path, options: FigureOptions) -> tuple[Corollary1Config, list[dict[str, Any]]]:
    """Run (or load) the Corollary 1 cells (every agreement x seed); returns the first config (the
    sizes) and one row per cell: agreement, seed, bound, oracle accuracy / AUROC, ``accuracy_minus_bound``."""
    configs = [Corollary1Config(agreement=a, seed=s) for a in COROLLARY1_AGREEMENTS for s in range(options.seeds)]
    results = run_grid(corollary1_cell, configs, cells_root(out_dir, options) / "corollary1",
                       executor=options.executor, progress=options.progress)
    return configs[0], [
        {"agreement": cell.config.agreement, "seed": cell.config.seed, "bound": cell.result["bound"],
         "nn_accuracy": cell.result["nn_accuracy"], "nn_auroc": cell.result["nn_auroc"],
         "accuracy_minus_bound": cell.result["nn_accuracy"] - cell.result["bound"]} for cell in results]


def corollary2_rows(options: FigureOptions) -> list[dict[str, Any]]:
    """LC of the nearest-vertex task over radius graphs (mean degree 10) on every surface of
    :data:`COROLLARY2_SURFACES` at every size of :data:`COROLLARY2_N`, per seed."""
    from sipt_lab.manifolds import corollary2_curve, get_surface

    rows = []
    for seed in range(options.seeds):
        say(options, f"corollary2: seed {seed}, n up to {max(COROLLARY2_N)}")
        for row in corollary2_curve({s: get_surface(s) for s in COROLLARY2_SURFACES}, COROLLARY2_N, seed=seed):
            rows.append({"surface": row["surface"], "n": row["n"], "seed": seed, "r": row["r"], "lc": row["lc"],
                         "mean_degree": row["mean_degree"]})
    return rows


# --- held-out gain against the size of G_PT ----------------------------------------------------

#: ``heldout_scale``'s families and, per family, its pre-training sizes: the largest the embedded
#: corpus can build with :data:`HELDOUT_SCALE_HELDOUT` held-out sentences on every seed (CLIQUES
#: needs ``n / 10 + 20`` confident sentences on each of 10 topics; the limits found are in
#: benchmarks/RESULTS.md, "Held-out gain vs size of G_PT").
HELDOUT_SCALE_NODES: dict[str, tuple[int, ...]] = {"cliques": (50, 200, 1000), "torus": (50, 200, 500)}
#: Passes over each pre-training sample per arm (``steps = passes * n / batch``), the same at every size.
HELDOUT_SCALE_PASSES = 64.0
#: Held-out sentences per dataset, the same at every size (the default 20 is too few to score a probe).
HELDOUT_SCALE_HELDOUT = 200
#: One topic model for both families (the surfaces' default): at CLIQUES' 100 topics only 9 topics
#: hold >= 22 confident sentences, so CLIQUES could not reach even 200 nodes.
HELDOUT_SCALE_TOPICS = 20
#: Fraction of the pre-training samples that choose the probe's regularisation (the rest train it).
PROBE_VALIDATION = 0.2
#: ``heldout_scale``'s metrics per arm: name -> (panel label, chance level drawn or None).
SCALE_METRICS = {"auroc": ("LOO 3-NN AUROC (pre-training samples)", 0.5),
                 "heldout_auroc": ("held-out 3-NN AUROC", 0.5),
                 "probe_macro_f1": ("held-out linear-probe macro-F1", None)}


@dataclass(frozen=True)
class HeldoutScaleConfig:
    """One ``heldout_scale`` cell: a seed of LM vs SIPT whose steps follow the passes rule, and its probe.

    Attributes:
        simulation: the experiment (``simulation.train.steps == passes_to_steps(passes, ...)``).
        passes: passes over each pre-training sample per arm.
        probe_validation: fraction of the pre-training samples that choose the probe's strength.
    """

    simulation: SimulationConfig
    passes: float
    probe_validation: float = PROBE_VALIDATION


def passes_to_steps(passes: float, n_nodes: int, batch_size: int) -> int:
    """Optimiser steps for ``passes`` passes over ``n_nodes`` samples at ``batch_size`` seeds per step
    (the batch is capped at ``n_nodes``, as the trainer does): ``ceil(passes * n / min(batch, n))``."""
    return max(1, math.ceil(passes * n_nodes / min(batch_size, n_nodes)))


def heldout_scale_configs(options: FigureOptions) -> list[HeldoutScaleConfig]:
    """Every family at every size and seed (seeds vary fastest), each with the passes rule's steps."""
    passes = HELDOUT_SCALE_PASSES if options.passes is None else options.passes
    configs = []
    for family, sizes in HELDOUT_SCALE_NODES.items():
        for n_nodes in options.scale_nodes or sizes:
            graph = {"n_nodes": n_nodes, "n_heldout": HELDOUT_SCALE_HELDOUT, "n_topics": HELDOUT_SCALE_TOPICS}
            training = {"preset": options.preset, "encoder": options.encoder, "graph_options": graph}
            base = simulation_config(family, **training)
            steps = passes_to_steps(passes, n_nodes, base.train.batch_size)
            configs += [HeldoutScaleConfig(simulation_config(family, seed=seed, steps=steps, **training), passes)
                        for seed in range(options.seeds)]
    return configs


def heldout_probe(embeddings: np.ndarray, labels: np.ndarray, heldout_embeddings: np.ndarray,
                  heldout_labels: np.ndarray, validation: float, seed: int) -> ProbeResult:
    """Linear probe (:func:`~sipt_lab.evaluation.linear_probe`, classification) trained on the frozen
    ``(n, H)`` pre-training embeddings and their ``(n,)`` topic labels, its strength chosen on a random
    ``validation`` fraction of them (seeded), tested on the ``(h, H)`` held-out embeddings ``(h,)``."""
    order = np.random.default_rng(seed).permutation(len(labels))
    val, train = np.split(order, [max(1, round(validation * len(labels)))])
    return linear_probe(embeddings[train], labels[train], embeddings[val], labels[val],
                        heldout_embeddings, heldout_labels, "classification")


def heldout_scale_cell(config: HeldoutScaleConfig) -> dict[str, Any]:
    """One seed of LM vs SIPT (:func:`~sipt_lab.experiments.simulation.simulate.run_arms`) plus, per arm, the
    held-out probe's ``probe_macro_f1``, ``probe_accuracy`` and ``probe_strength``."""
    simulation = config.simulation
    dataset = build_dataset(simulation.graph, progress=False)
    arms = run_arms(dataset, simulation)
    result = seed_result(simulation, dataset, arms)
    for arm, output in arms.items():
        probe = heldout_probe(output.embeddings, dataset.labels, output.heldout_embeddings, dataset.heldout_labels,
                              config.probe_validation, simulation.graph.seed)
        result["methods"][arm].update(probe_macro_f1=probe.test["macro_f1"], probe_accuracy=probe.test["accuracy"],
                                      probe_strength=probe.strength)
    result.update(n_heldout=len(dataset.heldout_sentences), passes=config.passes, steps=simulation.train.steps,
                  batch_size=simulation.train.batch_size)
    return result


def heldout_scale_tables(out_dir: str | Path, options: FigureOptions) -> tuple[list[HeldoutScaleConfig], list[CellResult], list[dict[str, Any]]]:
    """Run (or load) the ``heldout_scale`` cells; returns the configs, the cells and one row per
    (family, size): steps, passes, batch, held-out size and :func:`seed_summary` of :data:`SCALE_METRICS`."""
    configs = heldout_scale_configs(options)
    prepare_grid_topics([c.simulation.graph for c in configs], options)
    results = run_grid(heldout_scale_cell, configs, cells_root(out_dir, options) / "heldout_scale",
                       executor=options.executor, progress=options.progress)
    rows = []
    for family in HELDOUT_SCALE_NODES:
        for n_nodes in dict.fromkeys(c.simulation.graph.n_nodes for c in configs if c.simulation.graph.family == family):
            cells = [cell.result for cell in results if (cell.result["graph"], cell.result["n_nodes"]) == (family, n_nodes)]
            rows.append({"graph": family, "n_nodes": n_nodes, "steps": cells[0]["steps"], "passes": cells[0]["passes"],
                         "batch_size": cells[0]["batch_size"], "n_heldout": cells[0]["n_heldout"],
                         **seed_summary(cells, tuple(SCALE_METRICS))})
    return configs, results, rows


def say(options: FigureOptions, message: str) -> None:
    """A progress line on stderr when ``options.progress``."""
    if options.progress:
        print(f"sipt-lab figures: {message}", file=sys.stderr, flush=True)
