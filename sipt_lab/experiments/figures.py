"""The paper's figures and the theory checks, each a function ``(out_dir, options) -> paths``.

:data:`FIGURES` maps a name to a function that computes the figure's numbers, writes them as
``<out_dir>/<name>.csv`` (atomically) and draws ``<name>.png`` / ``<name>.pdf`` with
:mod:`sipt_lab.plots`. :func:`make_figures` runs a list of them; ``sipt-lab figures`` and the
scripts in ``paper_figures/`` call it.

Expensive work runs as cells of :func:`~sipt_lab.experiments.sweep.run_grid` under
``options.cells_dir`` (default ``<out_dir>/cells``), so it is computed once and a re-run skips
finished cells:

* ``fig5a``, ``fig5b`` and ``theorem1`` share ONE grid of :func:`simulate_seed` cells
  (:func:`figure5_configs`): every family at noise 0, plus CLIQUES at every noise rate, seeds
  ``0 .. seeds-1``. Its tidy table (every config field and metric) is ``fig5_cells.csv``.
* ``theorem1``'s oracle embedder (``L_SI`` on free node vectors, no encoder) runs as cells under
  ``<cells_dir>/oracle`` on the very same datasets (same :class:`GraphSpec`).
* ``corollary1``'s oracle runs as cells under ``<cells_dir>/corollary1``.
* ``heldout_scale`` runs :func:`heldout_scale_cell` cells under ``<cells_dir>/heldout_scale``:
  CLIQUES and TORUS at growing sizes (:data:`HELDOUT_SCALE_NODES`, the largest the embedded corpus
  builds), a fixed number of passes per pre-training sample (``steps = passes * n / batch``,
  :func:`passes_to_steps`), 200 held-out sentences each. Per arm: LOO and held-out 3-NN AUROC, and
  a linear probe (:func:`heldout_probe`) trained on the pre-training sentences' frozen embeddings
  and topic labels (strength chosen on a random 20 % of them) and scored on every held-out
  sentence: the held-out 3-NN's reference set is the pre-training samples too, so both ask the same
  question (does what SIPT learnt on ``G_PT`` carry over to unseen sentences), and the whole
  held-out set stays the test set. Its tidy table is ``heldout_scale_cells.csv``.

``fig5cd`` and ``topology`` train the two arms on one dataset each (seed 0) in this process;
``corollary2`` needs no training.

Topology (``topology``): Betti numbers ``b0, b1, b2`` read off the LM and SIPT embeddings of TORUS
and SPHERE (seed 0) by :func:`sipt_lab.evaluation.topology.rips_betti`: Vietoris-Rips persistence
(gudhi) not of the raw Euclidean distances, which concentrate in 64 dimensions (nearly every point
was its own component), but of the shortest-path distances along the symmetrised k-nearest-neighbour
graph (k = :data:`~sipt_lab.evaluation.topology.KNN_NEIGHBOURS` = 10; Isomap-style), on at most
:data:`TOPOLOGY_MAX_POINTS` points (farthest-point sampling in that metric). Rule, relative to that
metric's own scale: ``eps`` = the median distance from a point to its 10th nearest point; the
filtration stops at ``L = 3 eps``; a bar is *long-lived* when its lifetime (death capped at ``L``,
so a bar alive at ``L`` lives ``L - birth``) is at least
:data:`~sipt_lab.evaluation.topology.LONG_BAR_FRACTION` ``* L = eps``, i.e. it outlives the
neighbourhood scale. The long-lived bars per dimension are compared with the surface's Betti
numbers (torus 1, 2, 1; sphere 1, 0, 1).

Check of the method, row ``surface (geodesic)``: the same rule on the exact on-surface distances of
:data:`TOPOLOGY_CHECK_POINTS` points spread evenly over the surface (farthest-point sample of
:data:`TOPOLOGY_CHECK_POOL` uniform points); it recovers 1, 2, 1 and 1, 0, 1. Columns
``positions_b0..2``: the same rule on the on-surface distances of the very sentences the embeddings
are of (its own farthest-point sample of them beyond :data:`TOPOLOGY_MAX_POINTS`). At the default
100 sentences these do NOT recover the Betti numbers (embedded corpus, seed 0: torus 2, 3, 0; sphere
1, 1, 1): 100 independent points leave holes that live as long as real loops, and the torus's void
is born too late to outlive ``eps``, so at that size a mismatch of the LM / SIPT rows, b2 above all,
says little against the embeddings.

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
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sipt_lab import plots
from sipt_lab.errors import SiptError
from sipt_lab.fileio import prepare_output_dir
from sipt_lab.stats import mean_sd
from sipt_lab.evaluation.topology import KNN_NEIGHBOURS, LONG_BAR_FRACTION, RIPS_CUTOFF, RipsBetti, rips_betti
from sipt_lab.experiments.paper_values import CLIQUES_NOISE_AUROC, FAMILY_AUROC
from sipt_lab.evaluation import ProbeResult, linear_probe
from sipt_lab.experiments.simulate import (
    ARMS,
    MAX_SEEDS,
    SEED_RESULT_KEYS,
    SimulationConfig,
    run_arms,
    seed_result,
    simulate_seed,
    simulation_config,
)
from sipt_lab.experiments.sweep import (
    EXECUTORS,
    CellResult,
    GridInterrupted,
    result_rows,
    run_grid,
    write_results_csv,
)
from sipt_lab.synthetic import GraphSpec, SyntheticDataset, build_dataset
from sipt_lab.synthetic.registry import MAX_NODES, get_family, prepare_topics, resolve_spec
from sipt_lab.theory import corollary1_experiment, correlated_labels, theorem1_check
from sipt_lab.training.trainer import MAX_STEPS

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
    """How to make the figures (round-trips through :mod:`sipt_lab.config`).

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


def cells_root(out_dir: str | Path, options: FigureOptions) -> Path:
    """The directory of the shared grid cells."""
    return Path(options.cells_dir) if options.cells_dir is not None else Path(out_dir) / "cells"


# --- the shared Figure 5 grid ----------------------------------------------------------------------


def experiment_config(family: str, options: FigureOptions, *, seed: int = 0, noise: float = 0.0) -> SimulationConfig:
    """The :class:`SimulationConfig` of one experiment under ``options`` (family defaults otherwise)."""
    graph_options: dict[str, Any] = {"noise": float(noise)}
    if options.n_nodes is not None:
        graph_options["n_nodes"] = options.n_nodes
    return simulation_config(family, seed=seed, steps=options.steps, graph_options=graph_options)


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


def _cells(results: Sequence[CellResult], graph: str, noise: float) -> list[dict]:
    return [cell.result for cell in results if cell.result["graph"] == graph and cell.result["noise"] == noise]


def _summary(cells: Sequence[dict], metrics: Sequence[str] = ("auroc", "heldout_auroc", "accuracy")) -> dict[str, float]:
    """Mean and sd over seeds of LC and every arm's ``metrics`` (default: AUROC, held-out AUROC, accuracy)."""
    row = {"n_seeds": len(cells), **_mean_sd("local_consistency", [c["local_consistency"] for c in cells])}
    for arm in ARMS:
        for metric in metrics:
            row.update(_mean_sd(f"{arm}_{metric}", [c["methods"][arm].get(metric) for c in cells]))
    return row


def _mean_sd(name: str, values: Sequence[float | None]) -> dict[str, float]:
    """``{name_mean, name_sd}`` of :func:`sipt_lab.stats.mean_sd` (sample sd, nan for one value)."""
    mean, sd = mean_sd(values)
    return {f"{name}_mean": mean, f"{name}_sd": sd}


def fig5a(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """LOO and held-out 3-NN AUROC of LM vs SIPT per graph family (noise 0), LC marked."""
    out = Path(out_dir)
    results = run_figure5_grid(out, options)
    rows = []
    for family in options.families:
        paper = FAMILY_AUROC.get(family, (math.nan, math.nan))
        rows.append({"graph": family, **_summary(_cells(results, family, 0.0)),
                     "paper_lm_auroc": paper[0], "paper_sipt_auroc": paper[1]})
    write_results_csv(rows, out / "fig5a.csv", list(rows[0]))
    column = {key: [row[key] for row in rows] for key in rows[0]}
    lc = {"local consistency (LC)": column["local_consistency_mean"]}
    panels = [
        plots.BarPanel(
            "leave-one-out (pre-training samples)", "3-NN AUROC (topic task)",
            {"LM": (column["lm_auroc_mean"], column["lm_auroc_sd"]),
             "SIPT": (column["sipt_auroc_mean"], column["sipt_auroc_sd"])},
            {**lc, "LM (paper)": column["paper_lm_auroc"], "SIPT (paper)": column["paper_sipt_auroc"]}),
        plots.BarPanel(
            "held-out samples (never pre-trained on)", "3-NN AUROC (topic task)",
            {"LM": (column["lm_heldout_auroc_mean"], column["lm_heldout_auroc_sd"]),
             "SIPT": (column["sipt_heldout_auroc_mean"], column["sipt_heldout_auroc_sd"])}, lc),
    ]
    title = f"Figure 5a: LM vs SIPT per graph family (mean ± sd over {options.seeds} seed(s))"
    figure = plots.grouped_bars(out / "fig5a", [f.upper() for f in options.families], panels, title=title,
                                xlabel="graph family")
    return [out / "fig5a.csv", out / "fig5_cells.csv", *figure]


def fig5b(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """LOO 3-NN AUROC of LM and SIPT on CLIQUES as edge noise grows (mean ± sd bands)."""
    out = Path(out_dir)
    results = run_figure5_grid(out, options)
    rates = sorted({float(rate) for rate in options.noise_rates})
    rows = []
    for rate in rates:
        paper = CLIQUES_NOISE_AUROC.get(rate, (math.nan, math.nan))
        rows.append({"noise": rate, "noise_percent": 100 * rate, **_summary(_cells(results, "cliques", rate)),
                     "paper_lm_auroc": paper[0], "paper_sipt_auroc": paper[1]})
    write_results_csv(rows, out / "fig5b.csv", list(rows[0]))
    column = {key: [row[key] for row in rows] for key in rows[0]}
    figure = plots.lines_with_bands(
        out / "fig5b", rates,
        {"LM": (column["lm_auroc_mean"], column["lm_auroc_sd"]),
         "SIPT": (column["sipt_auroc_mean"], column["sipt_auroc_sd"]),
         "LC of the task over G_PT": (column["local_consistency_mean"], None)},
        markers={"LM (paper)": (rates, column["paper_lm_auroc"]), "SIPT (paper)": (rates, column["paper_sipt_auroc"])},
        styles={"LC of the task over G_PT": {"linestyle": "--", "marker": None, "linewidth": 1.2}},
        xlabel="edge noise rate (each non-adjacent pair gains an edge with this probability)",
        ylabel="LOO 3-NN AUROC  /  local consistency",
        title=f"Figure 5b: CLIQUES with edge noise (mean ± sd over {options.seeds} seed(s))",
        percent_x=True, hline=0.5, hline_label="chance (AUROC 0.5)", ylim=(0.0, 1.05))
    return [out / "fig5b.csv", out / "fig5_cells.csv", *figure]


# --- Theorem 1: SIPT and the oracle embedder against LC ----------------------------------------------


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
    """The oracle's LOO ``k``-NN accuracy and AUROC next to LC (:func:`~sipt_lab.theory.theorem1_check`)."""
    dataset = build_dataset(config.graph, progress=False)
    check = theorem1_check(dataset.graph, dataset.labels, k=config.k, seed=config.graph.seed,
                           dim=config.dim, steps=config.steps, loss=config.loss, **config.loss_params)
    return {"graph": config.graph.family, "noise": config.graph.noise, "seed": config.graph.seed,
            "local_consistency": check.bound, "accuracy": check.nn_accuracy, "auroc": check.nn_auroc}


def theorem1(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """SIPT's and the oracle's LOO 3-NN accuracy against LC, one point per (graph, noise, seed)."""
    out = Path(out_dir)
    results = run_figure5_grid(out, options)
    oracle_configs = [
        OracleConfig(graph=cell.config.graph, loss=cell.config.train.loss, loss_params=cell.config.train.loss_params, k=cell.config.k)
        for cell in results
    ]
    oracle = run_grid(oracle_cell, oracle_configs, cells_root(out, options) / "oracle",
                      executor=options.executor, progress=options.progress)
    rows = []
    for embedder, cells in (("sipt", [c.result for c in results]), ("oracle", [c.result for c in oracle])):
        for cell in cells:
            metrics, lc = (cell["methods"]["sipt"] if embedder == "sipt" else cell), cell["local_consistency"]
            rows.append({"graph": cell["graph"], "noise": cell["noise"], "seed": cell["seed"], "embedder": embedder,
                         "local_consistency": lc, "accuracy": metrics["accuracy"], "auroc": metrics["auroc"],
                         "accuracy_minus_lc": metrics["accuracy"] - lc})
    write_results_csv(rows, out / "theorem1.csv", list(rows[0]))
    names = {"sipt": "SIPT encoder", "oracle": "oracle (free vectors, L_SI only)"}
    above = {e: np.mean([r["accuracy_minus_lc"] >= -0.02 for r in rows if r["embedder"] == e]) for e in names}
    figure = plots.scatter_vs_diagonal(
        out / "theorem1", [r["local_consistency"] for r in rows], [r["accuracy"] for r in rows],
        groups=[_condition(r["graph"], r["noise"]) for r in rows], shapes=[names[r["embedder"]] for r in rows],
        xlabel="local consistency of the topic task over G_PT", ylabel="LOO 3-NN accuracy (fraction correct)",
        title="Theorem 1: nearest-neighbour accuracy vs local consistency",
        note=f"on/above y = x (within 0.02): SIPT {above['sipt']:.0%}, oracle {above['oracle']:.0%}")
    return [out / "theorem1.csv", out / "fig5_cells.csv", *figure]


def _condition(graph: str, noise: float) -> str:
    return graph.upper() if noise == 0 else f"{graph.upper()} +{100 * noise:g}% noise"


# --- Figure 5c/d: UMAP of LM and SIPT embeddings on MOBIUS -------------------------------------------


def trained_arms(family: str, options: FigureOptions) -> tuple[SimulationConfig, SyntheticDataset, dict]:
    """Build ``family``'s seed-0 dataset and train both arms on it in this process."""
    config = experiment_config(family, options)
    _say(options, f"training LM and SIPT on {family} (seed 0, {config.train.steps} steps per arm)")
    dataset = build_dataset(config.graph, progress=False)
    return config, dataset, run_arms(dataset, config, progress=options.progress)


def fig5cd(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """UMAP (random_state 0) of the LM and SIPT embeddings of MOBIUS (seed 0), coloured by topic."""
    out = Path(out_dir)
    _, dataset, arms = trained_arms("mobius", options)
    coordinates = {arm: umap_2d(arms[arm].embeddings) for arm in ARMS}
    rows = [{"arm": arm, "node": node, "umap_x": xy[0], "umap_y": xy[1], "topic": int(dataset.labels[node]),
             "arm_loo_auroc": arms[arm].metrics["auroc"]}
            for arm in ARMS for node, xy in enumerate(coordinates[arm].tolist())]
    write_results_csv(rows, out / "fig5cd.csv", list(rows[0]))
    panels = {f"{arm.upper()} (LOO 3-NN AUROC {arms[arm].metrics['auroc']:.3f})": coordinates[arm] for arm in ARMS}
    figure = plots.embedding_panels(
        out / "fig5cd", panels, dataset.labels,
        title=f"Figure 5c/d: MÖBIUS, UMAP of pre-training embeddings ({dataset.n_nodes} sentences, seed 0, "
              f"LC {dataset.local_consistency:.3f})")
    return [out / "fig5cd.csv", *figure]


def umap_2d(embeddings: np.ndarray, seed: int = 0) -> np.ndarray:
    """``(n, 2)`` UMAP coordinates of ``(n, H)`` embeddings (umap-learn, ``random_state=seed``)."""
    import umap  # slow to import: only when a UMAP is drawn

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "n_jobs overridden by setting random_state"
        reducer = umap.UMAP(n_components=2, n_neighbors=min(15, len(embeddings) - 1), random_state=seed)
        return np.asarray(reducer.fit_transform(np.asarray(embeddings, dtype=np.float32)), dtype=float)


# --- Corollaries -------------------------------------------------------------------------------------


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


def corollary1(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """Label-clique PT graph from one labelling, FT on a correlated one: accuracy vs the bound."""
    check_options(options)
    out = Path(out_dir)
    configs = [Corollary1Config(agreement=a, seed=s) for a in COROLLARY1_AGREEMENTS for s in range(options.seeds)]
    results = run_grid(corollary1_cell, configs, cells_root(out, options) / "corollary1",
                       executor=options.executor, progress=options.progress)
    rows = [{"agreement": cell.config.agreement, "seed": cell.config.seed, "bound": cell.result["bound"],
             "nn_accuracy": cell.result["nn_accuracy"], "nn_auroc": cell.result["nn_auroc"],
             "accuracy_minus_bound": cell.result["nn_accuracy"] - cell.result["bound"]} for cell in results]
    write_results_csv(rows, out / "corollary1.csv", list(rows[0]))
    first = configs[0]
    below = np.mean([r["accuracy_minus_bound"] <= 0.02 for r in rows])
    figure = plots.scatter_vs_diagonal(
        out / "corollary1", [r["bound"] for r in rows], [r["nn_accuracy"] for r in rows],
        values=[r["agreement"] for r in rows], value_label="P(FT label follows the PT class)",
        xlabel="Corollary 1 bound (P[FT label = its PT clique's majority])",
        ylabel="oracle LOO 3-NN accuracy on the FT task", lims=(0.0, 1.02),
        title=f"Corollary 1: {first.n_pt_classes} PT cliques of {first.per_class}, {first.n_ft_classes} FT classes",
        note=f"on/below y = x (within 0.02): {below:.0%} of {len(rows)} runs")
    return [out / "corollary1.csv", *figure]


def corollary2(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """LC of the nearest-vertex task over radius graphs (mean degree 10) as n grows, per surface."""
    from sipt_lab.manifolds import corollary2_curve, get_surface

    check_options(options)
    out = Path(out_dir)
    rows = []
    for seed in range(options.seeds):
        _say(options, f"corollary2: seed {seed}, n up to {max(COROLLARY2_N)}")
        for row in corollary2_curve({s: get_surface(s) for s in COROLLARY2_SURFACES}, COROLLARY2_N, seed=seed):
            rows.append({"surface": row["surface"], "n": row["n"], "seed": seed, "r": row["r"], "lc": row["lc"],
                         "mean_degree": row["mean_degree"]})
    write_results_csv(rows, out / "corollary2.csv", list(rows[0]))
    series = {}
    for surface in COROLLARY2_SURFACES:
        stats = [_mean_sd("lc", [r["lc"] for r in rows if (r["surface"], r["n"]) == (surface, n)])
                 for n in COROLLARY2_N]
        series[surface.upper()] = ([s["lc_mean"] for s in stats], [s["lc_sd"] for s in stats])
    figure = plots.lines_with_bands(
        out / "corollary2", COROLLARY2_N, series, logx=True, hline=1.0, hline_label="LC = 1",
        xlabel=r"points on the surface $n$ (log scale); radius $r \propto n^{-1/2}$ (mean degree 10)",
        ylabel="local consistency of the nearest-vertex task",
        title=f"Corollary 2: LC over radius graphs tends to 1 (mean ± sd over {options.seeds} seed(s))")
    return [out / "corollary2.csv", *figure]


# --- topology ----------------------------------------------------------------------------------------


def topology(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """Betti numbers read off LM and SIPT embeddings on TORUS and SPHERE, and the rule's check on
    evenly spread true positions (module docstring)."""
    from scipy.spatial.distance import pdist, squareform

    from sipt_lab.manifolds import geodesic_matrix, get_surface, uniform_points
    from sipt_lab.manifolds.topology import betti_numbers

    check_options(options)
    out = Path(out_dir)
    rows, bars, panel_rows = [], [], []
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
        true_betti = betti_numbers(tiling, 2)
        results: dict[str, RipsBetti] = {}
        for embedder, (matrix, max_points, what) in inputs.items():
            _say(options, f"topology: Rips persistence of {surface} / {embedder} ({len(matrix)} points)")
            result = results[embedder] = rips_betti(matrix, max_points=max_points)
            rows.append({"surface": surface, "embedder": embedder, "n_points": len(result.kept),
                         "rips_quantile": result.within_cutoff, "max_edge_length": result.cutoff,
                         "long_bar_fraction": LONG_BAR_FRACTION,
                         **{f"b{d}": result.counts[d] for d in range(3)},
                         **{f"true_b{d}": true_betti[d] for d in range(3)},
                         "matches": tuple(result.counts) == tuple(true_betti),
                         "points": what, "n_input": len(matrix), "knn_k": KNN_NEIGHBOURS, "knn_scale": result.scale,
                         **{f"positions_b{d}": positions.counts[d] for d in range(3)}})
            bars += [{"surface": surface, "embedder": embedder, "dimension": int(dim), "birth": birth, "death": death,
                      "lifetime": min(death, 1.0) - birth, "long_lived": bool(long)}
                     for (dim, birth, death), long in zip(result.diagram.tolist(), result.long_lived())]
        counts = {embedder: result.counts for embedder, result in results.items()}
        counts = {CHECK_ROW: counts.pop(CHECK_ROW), "sentences' positions": positions.counts, **counts}
        panel_rows.append(plots.TopologyRow(
            surface.upper(), {embedder: result.diagram for embedder, result in results.items()}, counts, true_betti))
    write_results_csv(rows, out / "topology.csv", list(rows[0]))
    write_results_csv(bars, out / "topology_bars.csv", list(bars[0]))
    figure = plots.topology_panels(
        out / "topology", panel_rows, threshold=LONG_BAR_FRACTION, scale_name="L",
        title=f"Topology: Rips persistence of {KNN_NEIGHBOURS}-NN graph geodesics up to L = {RIPS_CUTOFF:g} eps "
              f"(eps = median distance to the {KNN_NEIGHBOURS}th neighbour); long-lived = lifetime >= eps; "
              f"surface row: {TOPOLOGY_CHECK_POINTS} evenly spread true positions")
    return [out / "topology.csv", out / "topology_bars.csv", *figure]


# --- held-out gain against the size of G_PT ---------------------------------------------------------

#: ``heldout_scale``'s families and, per family, its pre-training sizes: the largest the embedded
#: corpus can build with :data:`HELDOUT_SCALE_HELDOUT` held-out sentences on every seed. CLIQUES
#: (20 topics, top-topic p >= 0.8) needs ``n / 10 + 20`` confident sentences on each of 10 topics;
#: the 10th largest topic has 205, so 1,850 nodes is its ceiling and 5,000 cannot be built.
#: TORUS fails at 550 nodes on seed 0 (no topic map gives all 14 triangles a triple with enough
#: sentences), so it stops at 500.
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
            base = simulation_config(family, graph_options=graph)
            steps = passes_to_steps(passes, n_nodes, base.train.batch_size)
            configs += [HeldoutScaleConfig(simulation_config(family, seed=seed, steps=steps, graph_options=graph),
                                           passes) for seed in range(options.seeds)]
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
    """One seed of LM vs SIPT (:func:`~sipt_lab.experiments.simulate.run_arms`) plus, per arm, the
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


def heldout_scale(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """LM vs SIPT on CLIQUES and TORUS as G_PT grows at a fixed number of passes per sample: LOO and
    held-out 3-NN AUROC and the held-out probe's macro-F1 (mean ± sd over seeds)."""
    check_options(options)
    out = Path(out_dir)
    configs = heldout_scale_configs(options)
    prepare_grid_topics([c.simulation.graph for c in configs], options)
    results = run_grid(heldout_scale_cell, configs, cells_root(out, options) / "heldout_scale",
                       executor=options.executor, progress=options.progress)
    write_results_csv(result_rows(results), out / "heldout_scale_cells.csv")
    rows = []
    for family in HELDOUT_SCALE_NODES:
        for n_nodes in dict.fromkeys(c.simulation.graph.n_nodes for c in configs if c.simulation.graph.family == family):
            cells = [cell.result for cell in results if (cell.result["graph"], cell.result["n_nodes"]) == (family, n_nodes)]
            rows.append({"graph": family, "n_nodes": n_nodes, "steps": cells[0]["steps"], "passes": cells[0]["passes"],
                         "batch_size": cells[0]["batch_size"], "n_heldout": cells[0]["n_heldout"],
                         **_summary(cells, tuple(SCALE_METRICS))})
    write_results_csv(rows, out / "heldout_scale.csv", list(rows[0]))
    panels = [[plots.LinePanel(
        f"{family.upper()}: {label}", "pre-training nodes (log scale)", label.split(" (")[0],
        [r["n_nodes"] for r in rows if r["graph"] == family],
        {arm.upper(): ([r[f"{arm}_{metric}_mean"] for r in rows if r["graph"] == family],
                       [r[f"{arm}_{metric}_sd"] for r in rows if r["graph"] == family]) for arm in ARMS},
        hline=chance, hline_label="chance AUROC (0.5)")
        for metric, (label, chance) in SCALE_METRICS.items()] for family in HELDOUT_SCALE_NODES]
    figure = plots.line_panels(
        out / "heldout_scale", panels, logx=True, ylim=(0.0, 1.05),
        title=f"Held-out gain vs size of G_PT, {configs[0].passes:g} passes per sample "
              f"(mean ± sd over {options.seeds} seed(s))")
    return [out / "heldout_scale.csv", out / "heldout_scale_cells.csv", *figure]


# --- registry ------------------------------------------------------------------------------------------

FigureFn = Callable[[Path, FigureOptions], list[Path]]

#: Figure name -> function ``(out_dir, options) -> paths written``.
FIGURES: dict[str, FigureFn] = {
    "fig5a": fig5a,
    "fig5b": fig5b,
    "fig5cd": fig5cd,
    "theorem1": theorem1,
    "corollary1": corollary1,
    "corollary2": corollary2,
    "topology": topology,
    "heldout_scale": heldout_scale,
    "methods": lambda out_dir, options: __import__("sipt_lab.experiments.methods_figure", fromlist=["_"]).methods_figure(out_dir, options),
}


def make_figures(names: Sequence[str] | None, out_dir: str | Path, options: FigureOptions) -> dict[str, list[Path]]:
    """Make the named figures (None: all, in :data:`FIGURES` order) into ``out_dir``.

    Returns name -> paths written. Unknown names raise SiptError before anything runs.
    """
    names = list(FIGURES) if not names else list(dict.fromkeys(names))
    unknown = [name for name in names if name not in FIGURES]
    if unknown:
        raise SiptError(f"unknown figure(s) {', '.join(unknown)}; choose from: {', '.join(FIGURES)}")
    check_options(options)
    out = prepare_output_dir(out_dir)
    if options.cells_dir is not None:
        prepare_output_dir(options.cells_dir, "cells directory")
    written = {}
    for name in names:
        start = time.perf_counter()
        _say(options, f"figure {name} ...")
        written[name] = FIGURES[name](out, options)
        _say(options, f"figure {name} done in {time.perf_counter() - start:.1f} s")
    return written


def _say(options: FigureOptions, message: str) -> None:
    if options.progress:
        print(f"sipt-lab figures: {message}", file=sys.stderr, flush=True)
