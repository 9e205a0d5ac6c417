"""``topology``: Betti numbers read off the LM and SIPT embeddings of TORUS and SPHERE (seed 0).

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

from dataclasses import dataclass
from typing import Any

import numpy as np

from sipt_lab.evaluation.embedding_topology import KNN_NEIGHBOURS, LONG_BAR_FRACTION, RipsBetti, rips_betti
from sipt_lab.studies.paper.figure5 import trained_arms
from sipt_lab.studies.paper.figure_options import FigureOptions, say
from sipt_lab.studies.simulation.config import ARMS

TOPOLOGY_SURFACES = ("torus", "sphere")
TOPOLOGY_MAX_POINTS = 300
TOPOLOGY_CHECK_POINTS = 300
TOPOLOGY_CHECK_POOL = 1200
CHECK_ROW = "surface (geodesic)"


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
        inputs = {
            CHECK_ROW: (
                geodesic_matrix(tiling, pool_tri, pool_bary),
                TOPOLOGY_CHECK_POINTS,
                f"evenly spread on the surface, from {TOPOLOGY_CHECK_POOL} uniform",
            )
        }
        inputs.update(
            {
                arm.upper(): (
                    squareform(pdist(arms[arm].embeddings.astype(float))),
                    TOPOLOGY_MAX_POINTS,
                    "pre-training sentences",
                )
                for arm in ARMS
            }
        )
        true_betti = tuple(betti_numbers(tiling, 2))
        results: dict[str, RipsBetti] = {}
        for embedder, (matrix, max_points, what) in inputs.items():
            say(f"topology: Rips persistence of {surface} / {embedder} ({len(matrix)} points)")
            result = results[embedder] = rips_betti(matrix, max_points=max_points)
            tables.rows.append(
                {
                    "surface": surface,
                    "embedder": embedder,
                    "n_points": len(result.kept),
                    "rips_quantile": result.within_cutoff,
                    "max_edge_length": result.cutoff,
                    "long_bar_fraction": LONG_BAR_FRACTION,
                    **{f"b{d}": result.counts[d] for d in range(3)},
                    **{f"true_b{d}": true_betti[d] for d in range(3)},
                    "matches": tuple(result.counts) == true_betti,
                    "points": what,
                    "n_input": len(matrix),
                    "knn_k": KNN_NEIGHBOURS,
                    "knn_scale": result.scale,
                    **{f"positions_b{d}": positions.counts[d] for d in range(3)},
                }
            )
            tables.bars += [
                {
                    "surface": surface,
                    "embedder": embedder,
                    "dimension": int(dim),
                    "birth": birth,
                    "death": death,
                    "lifetime": min(death, 1.0) - birth,
                    "long_lived": bool(long),
                }
                for (dim, birth, death), long in zip(result.diagram.tolist(), result.long_lived())
            ]
        tables.surfaces[surface] = (results, tuple(positions.counts), true_betti)
    return tables
