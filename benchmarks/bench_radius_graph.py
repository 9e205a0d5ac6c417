"""Radius graphs on surfaces: a k-d tree per unfolded patch vs all pairs (numpy), side by side.

Run as ``python benchmarks/bench_radius_graph.py``. Points are spread uniformly over each surface's
tiling (:func:`sipt_lab.manifolds.uniform_points`), ``r`` gives the stated expected mean degree
(:func:`sipt_lab.manifolds.radius_for_degree`). Timings are the best of 3 (1 for the 100k rows).

1. The same edges from both methods (every pair, every distance) on growing ``n``, with the ratio.
   The reference is :func:`sipt_lab.manifolds.brute_force_pairs`: the same unfolding and
   straight-segment test, but every (root point, patch point) distance computed densely.
2. :func:`sipt_lab.manifolds.radius_graph` (pairs plus the ``PretrainingGraph``) on 100,000 points
   on every surface (target: <= 10 s each); the all-pairs reference would need ~10^10 distances.
"""

from __future__ import annotations

import time

import numpy as np

from sipt_lab.manifolds import (
    SURFACES,
    brute_force_pairs,
    get_surface,
    pairs_within,
    radius_for_degree,
    radius_graph,
    uniform_points,
)


def best_of(repeats: int, fn):
    """``(best seconds, last value)`` of ``repeats`` calls of ``fn()``."""
    best, value = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def side_by_side(surface: str, n: int, degree: float) -> str:
    tiling = get_surface(surface)
    tri, bary = uniform_points(tiling, n, np.random.default_rng(n))
    r = radius_for_degree(tiling, n, degree)
    t_tree, fast = best_of(3, lambda: pairs_within(tiling, tri, bary, r))
    t_all, slow = best_of(3, lambda: brute_force_pairs(tiling, tri, bary, r))
    same = np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])
    gap = float(np.abs(fast[2] - slow[2]).max()) if same and fast[2].size else float("nan")
    return (
        f"| {surface:<10} | {n:>7,} | {r:.4f} | {fast[0].size:>9,} | {t_tree:8.3f} | {t_all:8.3f} | "
        f"{t_all / t_tree:6.1f}x | {'yes' if same else 'NO'} ({gap:.1e}) |"
    )


def large(surface: str, n: int, degree: float) -> str:
    tiling = get_surface(surface)
    tri, bary = uniform_points(tiling, n, np.random.default_rng(0))
    r = radius_for_degree(tiling, n, degree)
    seconds, graph = best_of(1, lambda: radius_graph(tiling, tri, bary, r))
    verdict = "ok" if seconds <= 10 else "OVER"
    return (
        f"| {surface:<10} | {n:>7,} | {degree:>4.0f} | {r:.4f} | {graph.n_edges:>10,} | "
        f"{2 * graph.n_edges / n:6.2f} | "
        f"{seconds:7.2f} | {verdict} |"
    )


def main() -> None:
    print("## 1. k-d tree per patch vs all pairs (same unfolding), mean degree 10")
    print("| surface    |       n | r      |     edges | tree (s) |  all (s) |  ratio | same edges (max |d| gap) |")
    print("|---|---|---|---|---|---|---|---|")
    for surface in ("torus", "sphere", "mobius"):
        for n in (1_000, 3_000, 10_000):
            print(side_by_side(surface, n, 10.0), flush=True)
    print()
    print("## 2. radius_graph on 100,000 points, k-d tree per patch (target <= 10 s)")
    print("| surface    |       n | deg  | r      |      edges | mean deg | seconds | target |")
    print("|---|---|---|---|---|---|---|---|")
    for surface in SURFACES:
        print(large(surface, 100_000, 10.0), flush=True)
    for surface in ("torus", "sphere"):
        print(large(surface, 100_000, 50.0), flush=True)


if __name__ == "__main__":
    main()
