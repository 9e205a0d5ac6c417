"""The Figure 5 grid and Theorem 1's oracle, as grid cells and tables.

``fig5a``, ``fig5b`` and ``theorem1`` share ONE grid of :func:`~sipt_lab.studies.simulation.arms.simulate_seed`
cells (:func:`figure5_configs`): every family at noise 0, plus CLIQUES at every noise rate, seeds
``0 .. seeds-1``. Its tidy table (every config field and metric) is ``fig5_cells.csv``.
``FigureOptions.batched`` trains each condition's seeds x arms as one batched model, on a CUDA GPU
the whole grid's as one (:mod:`sipt_lab.studies.simulation.stacked_cells`; ``FigureOptions.compile``
compiles it); the cells stay the same, one per seed.
``theorem1``'s oracle embedder (``L_SI`` on free node vectors, no encoder) runs as
:func:`oracle_cell` cells under ``<cells_dir>/oracle`` on the very same datasets (same :class:`GraphSpec`).
``fig5cd`` and ``topology`` train the two arms on one dataset each (seed 0) in this process
(:func:`trained_arms`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sipt_lab.grid import CellResult, GridInterrupted, as_cells, result_rows, run_grid, write_results_csv
from sipt_lab.studies.paper.figure_options import (
    FigureOptions,
    cells_root,
    check_options,
    experiment_config,
    mean_sd_columns,
    prepare_grid_topics,
    say,
)
from sipt_lab.studies.paper.theory import theorem1_check
from sipt_lab.studies.paper.values import CLIQUES_NOISE_AUROC, FAMILY_AUROC
from sipt_lab.studies.simulation.arms import SEED_RESULT_KEYS, run_arms, simulate_seed
from sipt_lab.studies.simulation.config import ARMS, SimulationConfig
from sipt_lab.studies.simulation.stacked_cells import run_arms_batched, train_batched_cells
from sipt_lab.synthetic import GraphSpec, SyntheticDataset, build_dataset

# --- the shared Figure 5 grid ----------------------------------------------------------------------


#: The parts of the shared grid: every family at noise 0 (``fig5a``), CLIQUES at every noise rate (``fig5b``).
GRID_PARTS = ("families", "noise")


def figure5_configs(options: FigureOptions, parts: Sequence[str] = GRID_PARTS) -> list[SimulationConfig]:
    """The shared grid, or the ``parts`` of it (:data:`GRID_PARTS`) a figure reads: every family at
    noise 0, CLIQUES at every noise rate; seeds vary fastest."""
    conditions = [(family, 0.0) for family in options.families] if "families" in parts else []
    conditions += [("cliques", float(rate)) for rate in options.noise_rates] if "noise" in parts else []
    conditions = list(dict.fromkeys(conditions))
    return [experiment_config(f, options, seed=s, noise=p) for f, p in conditions for s in range(options.seeds)]


def run_figure5_grid(
    out_dir: str | Path, options: FigureOptions, parts: Sequence[str] = GRID_PARTS
) -> list[CellResult]:
    """Run (or load) the shared grid's ``parts`` (:func:`figure5_configs`: a figure runs only the cells
    it reads) and write their tidy table ``<out_dir>/fig5_cells.csv``."""
    check_options(options)
    cells = as_cells(figure5_configs(options, parts))
    prepare_grid_topics([cell.config.graph for cell in cells], options)
    try:
        if options.batched:
            train_batched_cells(cells, cells_root(out_dir, options), executor=options.executor, compile=options.compile)
        results = run_grid(
            simulate_seed,
            cells,
            cells_root(out_dir, options),
            executor=options.executor,
            required_keys=SEED_RESULT_KEYS,
        )
    except GridInterrupted as interrupt:  # keep the table of what finished, then stop
        write_results_csv(result_rows(interrupt.results), Path(out_dir) / "fig5_cells.csv")
        raise
    write_results_csv(result_rows(results), Path(out_dir) / "fig5_cells.csv")
    return results


def cells_of(results: Sequence[CellResult], graph: str, noise: float) -> list[dict]:
    """The results of the grid's cells on ``graph`` at edge-noise rate ``noise`` (one per seed)."""
    return [cell.result for cell in results if cell.result["graph"] == graph and cell.result["noise"] == noise]


def seed_summary(
    cells: Sequence[dict], metrics: Sequence[str] = ("auroc", "heldout_auroc", "accuracy")
) -> dict[str, float]:
    """Mean and sd over seeds of LC and every arm's ``metrics`` (default: AUROC, held-out AUROC, accuracy)."""
    row = {"n_seeds": len(cells), **mean_sd_columns("local_consistency", [c["local_consistency"] for c in cells])}
    for arm in ARMS:
        for metric in metrics:
            row.update(mean_sd_columns(f"{arm}_{metric}", [c["methods"][arm].get(metric) for c in cells]))
    return row


def fig5a_rows(results: Sequence[CellResult], options: FigureOptions) -> list[dict[str, Any]]:
    """Per family (noise 0): :func:`seed_summary` next to the paper's LM / SIPT AUROC."""
    rows = []
    for family in options.families:
        paper = FAMILY_AUROC.get(family, (math.nan, math.nan))
        rows.append(
            {
                "graph": family,
                **seed_summary(cells_of(results, family, 0.0)),
                "paper_lm_auroc": paper[0],
                "paper_sipt_auroc": paper[1],
            }
        )
    return rows


def fig5b_rows(results: Sequence[CellResult], options: FigureOptions) -> list[dict[str, Any]]:
    """Per CLIQUES noise rate (ascending): :func:`seed_summary` next to the paper's LM / SIPT AUROC."""
    rows = []
    for rate in sorted({float(rate) for rate in options.noise_rates}):
        paper = CLIQUES_NOISE_AUROC.get(rate, (math.nan, math.nan))
        rows.append(
            {
                "noise": rate,
                "noise_percent": 100 * rate,
                **seed_summary(cells_of(results, "cliques", rate)),
                "paper_lm_auroc": paper[0],
                "paper_sipt_auroc": paper[1],
            }
        )
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
    recovering ``G_PT`` (:func:`~sipt_lab.studies.paper.theory.theorem1_check`), next to LC."""
    dataset = build_dataset(config.graph)
    check = theorem1_check(
        dataset.graph,
        dataset.labels,
        k=config.k,
        seed=config.graph.seed,
        dim=config.dim,
        steps=config.steps,
        loss=config.loss,
        **config.loss_params,
    )
    return {
        "graph": config.graph.family,
        "noise": config.graph.noise,
        "seed": config.graph.seed,
        "local_consistency": check.bound,
        "accuracy": check.nn_accuracy,
        "auroc": check.nn_auroc,
        "radius_f1": check.radius_f1,
        "radius_nn_accuracy": check.radius_nn_accuracy,
        "radius_nn_coverage": check.radius_nn_coverage,
    }


#: Theorem 1's radius terms in the ``theorem1`` table (NaN for cells computed before they were recorded).
RADIUS_COLUMNS = ("radius_f1", "radius_nn_accuracy", "radius_nn_coverage")


def theorem1_rows(out_dir: str | Path, results: Sequence[CellResult], options: FigureOptions) -> list[dict[str, Any]]:
    """Run (or load) the oracle cells on the grid's datasets; one row per (embedder, graph, noise,
    seed): LC, LOO 3-NN accuracy and AUROC, ``accuracy_minus_lc``, and the radius terms
    (:data:`RADIUS_COLUMNS`) with ``radius_nn_minus_lc`` (embedders ``sipt``, ``oracle``)."""
    oracle_configs = [
        OracleConfig(
            graph=cell.config.graph,
            loss=cell.config.train.loss,
            loss_params=cell.config.train.loss_params,
            k=cell.config.k,
        )
        for cell in results
    ]
    oracle = run_grid(
        oracle_cell,
        oracle_configs,
        cells_root(out_dir, options) / "oracle",
        executor=options.executor,
        required_keys=RADIUS_COLUMNS,
    )
    rows = []
    for embedder, cells in (("sipt", [c.result for c in results]), ("oracle", [c.result for c in oracle])):
        for cell in cells:
            metrics, lc = (cell["methods"]["sipt"] if embedder == "sipt" else cell), cell["local_consistency"]
            radius = {name: float(metrics.get(name, math.nan)) for name in RADIUS_COLUMNS}
            rows.append(
                {
                    "graph": cell["graph"],
                    "noise": cell["noise"],
                    "seed": cell["seed"],
                    "embedder": embedder,
                    "local_consistency": lc,
                    "accuracy": metrics["accuracy"],
                    "auroc": metrics["auroc"],
                    "accuracy_minus_lc": metrics["accuracy"] - lc,
                    **radius,
                    "radius_nn_minus_lc": radius["radius_nn_accuracy"] - lc,
                }
            )
    return rows


# --- one seed trained in this process (fig5cd, topology) ----------------------------------------


def trained_arms(family: str, options: FigureOptions) -> tuple[SimulationConfig, SyntheticDataset, dict]:
    """Build ``family``'s seed-0 dataset and train both arms on it in this process."""
    config = experiment_config(family, options)
    say(f"training LM and SIPT on {family} (seed 0, {config.train.steps} steps per arm)")
    dataset = build_dataset(config.graph)
    if options.batched:
        return config, dataset, run_arms_batched([dataset], [config])[0]
    return config, dataset, run_arms(dataset, config)


def umap_2d(embeddings: np.ndarray, seed: int = 0) -> np.ndarray:
    """``(n, 2)`` UMAP coordinates of ``(n, H)`` embeddings (umap-learn, ``random_state=seed``)."""
    import umap  # slow to import: only when a UMAP is drawn

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "n_jobs overridden by setting random_state"
        reducer = umap.UMAP(n_components=2, n_neighbors=min(15, len(embeddings) - 1), random_state=seed)
        return np.asarray(reducer.fit_transform(np.asarray(embeddings, dtype=np.float32)), dtype=float)
