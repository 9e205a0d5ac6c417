"""The corollaries' numbers: Corollary 1's oracle as grid cells under ``<cells_dir>/corollary1``
(:func:`corollary1_cell`), and Corollary 2's LC curves, which need no training (:func:`corollary2_rows`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sipt_lab.grid import run_grid
from sipt_lab.studies.paper.figure_options import FigureOptions, cells_root, say
from sipt_lab.studies.paper.theory import corollary1_experiment, correlated_labels

COROLLARY1_AGREEMENTS = tuple(np.round(np.linspace(0.0, 1.0, 11), 2).tolist())
COROLLARY2_SURFACES = ("plane", "mobius", "sphere", "torus")
COROLLARY2_N = tuple(np.unique(np.round(np.geomspace(100, 30000, 12)).astype(int)).tolist())


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
    results = run_grid(
        corollary1_cell,
        configs,
        cells_root(out_dir, options) / "corollary1",
        executor=options.executor,
    )
    return configs[0], [
        {
            "agreement": cell.config.agreement,
            "seed": cell.config.seed,
            "bound": cell.result["bound"],
            "nn_accuracy": cell.result["nn_accuracy"],
            "nn_auroc": cell.result["nn_auroc"],
            "accuracy_minus_bound": cell.result["nn_accuracy"] - cell.result["bound"],
        }
        for cell in results
    ]


def corollary2_rows(options: FigureOptions) -> list[dict[str, Any]]:
    """LC of the nearest-vertex task over radius graphs (mean degree 10) on every surface of
    :data:`COROLLARY2_SURFACES` at every size of :data:`COROLLARY2_N`, per seed."""
    from sipt_lab.manifolds import corollary2_curve, get_surface

    rows = []
    for seed in range(options.seeds):
        say(f"corollary2: seed {seed}, n up to {max(COROLLARY2_N)}")
        for row in corollary2_curve({s: get_surface(s) for s in COROLLARY2_SURFACES}, COROLLARY2_N, seed=seed):
            rows.append(
                {
                    "surface": row["surface"],
                    "n": row["n"],
                    "seed": seed,
                    "r": row["r"],
                    "lc": row["lc"],
                    "mean_degree": row["mean_degree"],
                }
            )
    return rows
