"""NETWORKS' Hamming graph: :func:`sipt_lab.domains.networks.hamming_graph` vs dense all pairs.

Run as ``python benchmarks/bench_hamming.py``. Labels are GO-like: ``L = 500`` terms with
Zipf-like frequencies (a few near-root terms most proteins carry, a long tail of specific ones),
samples in clusters of ~25 around a prototype of ~12 terms (each prototype term dropped with
probability 0.15, ~1 extra term added), so density is ~2.5 % and edges exist. ``D = 9``.

For ``n <= 10,000`` the reference is plain vectorised numpy in the same process: ``A A^T`` as a
float32 matrix product in row blocks, ``d = |a_i| + |a_j| - 2 a_i . a_j``; its edge count must equal
the graph's. Timings are single runs. A second table times the ℓ of the ℓ-prefix filter
(``networks.PREFIX_SHARED``; 1 is the classic prefix filter) side by side at ``n = 30,000``.
"""

from __future__ import annotations

import time

import numpy as np

from sipt_lab.domains import networks
from sipt_lab.domains.networks import hamming_graph

N_LABELS = 500
MAX_DISTANCE = 9


def go_like_labels(n: int, seed: int = 0) -> np.ndarray:
    """``(n, N_LABELS)`` bool labels, clustered as the module docstring says."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / (np.arange(N_LABELS) + 5.0)
    weights /= weights.sum()
    n_clusters = max(1, n // 25)
    prototypes = np.zeros((n_clusters, N_LABELS), dtype=bool)
    for row in prototypes:
        row[rng.choice(N_LABELS, size=12, replace=False, p=weights)] = True
    labels = prototypes[rng.integers(0, n_clusters, n)] & (rng.random((n, N_LABELS)) >= 0.15)
    extra = rng.choice(N_LABELS, size=(n, rng.poisson(1.0) + 1), p=weights)
    labels[np.arange(n)[:, None], extra] = True
    return labels


def dense_edge_count(labels: np.ndarray, block: int = 2000) -> int:
    """Edges ``i < j`` with Hamming distance ``<= MAX_DISTANCE``, every pair via a matrix product."""
    A = labels.astype(np.float32)
    counts = A.sum(axis=1)
    total = 0
    for start in range(0, len(A), block):
        distance = counts[start : start + block, None] + counts[None, :] - 2 * (A[start : start + block] @ A.T)
        rows = np.arange(start, min(start + block, len(A)))[:, None]
        total += int(np.count_nonzero((distance <= MAX_DISTANCE + 0.5) & (np.arange(len(A))[None, :] > rows)))
    return total


def main() -> None:
    print("| n | labels/sample | hamming_graph s | edges | dense numpy s | speed-up |")
    print("|---|---|---|---|---|---|")
    for n in (1_000, 10_000, 100_000):
        labels = go_like_labels(n)
        start = time.perf_counter()
        graph = hamming_graph(labels, MAX_DISTANCE)
        seconds = time.perf_counter() - start
        reference = "n/a (~10^10 pairs)"
        ratio = ""
        if n <= 10_000:
            start = time.perf_counter()
            expected = dense_edge_count(labels)
            dense_seconds = time.perf_counter() - start
            assert expected == graph.n_edges, (expected, graph.n_edges)
            reference, ratio = f"{dense_seconds:.2f}", f"{dense_seconds / seconds:.1f}x"
        print(
            f"| {n:,} | {labels.sum(axis=1).mean():.1f} | {seconds:.2f} | {graph.n_edges:,} | {reference} | {ratio} |"
        )
    labels = go_like_labels(30_000)
    chosen = networks.PREFIX_SHARED
    print("\n| ℓ (n = 30,000) | hamming_graph s | edges |\n|---|---|---|")
    try:
        for shared in (1, 2, 3):
            networks.PREFIX_SHARED = shared
            start = time.perf_counter()
            graph = hamming_graph(labels, MAX_DISTANCE)
            print(
                f"| {shared}{' (default)' if shared == chosen else ''} | {time.perf_counter() - start:.2f} | {graph.n_edges:,} |"
            )
    finally:
        networks.PREFIX_SHARED = chosen


if __name__ == "__main__":
    main()
