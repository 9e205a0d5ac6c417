"""Radius graphs on a tiling (``i ~ j`` iff geodesic distance ``< r``) and Corollary 2 in numbers.

:func:`radius_graph` wraps :func:`~sipt_lab.manifolds.geodesic.pairs_within` (a k-d tree per
unfolded patch, exact distances) into a :class:`~sipt_lab.graphs.graph.PretrainingGraph`: undirected, no
self-loops (the original code linked every node to itself because ``d_ii = 0 < r``).

:func:`corollary2_curve` measures the paper's Corollary 2 without a corpus: points spread uniformly
over the tiling's area, labelled by their nearest vertex in barycentric terms (the vertex with the
largest coordinate, exactly the topic task's FT label), and the local consistency of that labelling
over radius graphs as ``n`` grows and ``r`` shrinks.
"""

from __future__ import annotations

import numpy as np

from sipt_lab.graphs.consistency import local_consistency
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.manifolds.geodesic import pairs_within
from sipt_lab.manifolds.tilings import Tiling


def radius_graph(tiling: Tiling, tri: np.ndarray, bary: np.ndarray, r: float) -> PretrainingGraph:
    """``G_PT`` over the ``n`` placed points: an edge iff their geodesic distance is ``< r``.

    ``tri``: ``(n,)`` triangle of each point; ``bary``: ``(n, 3)`` barycentric coordinates.
    """
    i, j, _ = pairs_within(tiling, tri, bary, r)
    return PretrainingGraph.from_edges(i, j, len(tri))


def radius_for_degree(tiling: Tiling, n_points: int, mean_degree: float) -> float:
    """The ``r`` at which ``n_points`` spread uniformly over the tiling have ``mean_degree``
    neighbours on average, ignoring the boundary: ``(n - 1) pi r^2 / area = mean_degree``."""
    return float(np.sqrt(mean_degree * tiling.area / (np.pi * max(n_points - 1, 1))))


def uniform_points(tiling: Tiling, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(tri, bary)``: ``n`` points uniform over the tiling's area (equal shares per triangle, sizes
    differing by at most one; uniform within a triangle, i.e. Dirichlet(1, 1, 1) coordinates)."""
    tri = rng.permutation(np.arange(n) % tiling.n_triangles).astype(np.int64)
    return tri, rng.dirichlet(np.ones(3), size=n)


def vertex_labels(tiling: Tiling, tri: np.ndarray, bary: np.ndarray) -> np.ndarray:
    """``(n,)`` the vertex with the largest barycentric coordinate (the topic task's FT label)."""
    return tiling.triangles[tri, np.argmax(bary, axis=1)]


def corollary2_curve(
    tilings: dict[str, Tiling] | list[Tiling],
    n_values,
    r_values=None,
    *,
    mean_degree: float = 10.0,
    seed: int = 0,
) -> list[dict]:
    """Local consistency of the nearest-vertex task on radius graphs as ``n`` grows and ``r`` shrinks.

    ``n_values`` and ``r_values`` are paired (same length); ``r_values=None`` uses
    :func:`radius_for_degree` with ``mean_degree``, i.e. ``r ~ n^-1/2`` with a constant expected
    degree, the regime of the paper's proof. Returns one row per (surface, n): ``{"surface", "n",
    "r", "lc", "mean_degree"}`` (plain floats and ints).
    """
    items = tilings.items() if isinstance(tilings, dict) else [(t.name, t) for t in tilings]
    n_values = [int(n) for n in n_values]
    rows = []
    for name, tiling in items:
        radii = r_values if r_values is not None else [radius_for_degree(tiling, n, mean_degree) for n in n_values]
        if len(radii) != len(n_values):
            raise ValueError("n_values and r_values must have the same length")
        for n, r in zip(n_values, radii):
            rng = np.random.default_rng([seed, n])
            tri, bary = uniform_points(tiling, n, rng)
            graph = radius_graph(tiling, tri, bary, float(r))
            rows.append(
                {
                    "surface": name,
                    "n": n,
                    "r": float(r),
                    "lc": float(local_consistency(graph, vertex_labels(tiling, tri, bary))),
                    "mean_degree": float(2 * graph.n_edges / n),
                }
            )
    return rows
