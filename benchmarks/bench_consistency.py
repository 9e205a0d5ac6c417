"""Local consistency speed: sparse and implicit-clique paths vs a networkx per-node loop.

Run as ``python benchmarks/bench_consistency.py``. Graph construction is not timed; every timing is
the best of 3. Cases:

1. LC on a planted-partition graph with 100,000 nodes / ~1,000,000 edges against a
   straightforward networkx loop (per node: ``Counter`` of neighbour labels, plurality check, ties
   split), both values checked equal (target >= 100x); run first, in a fresh heap;
2. LC on a planted-partition graph with 1,000,000 nodes and ~20,000,000 undirected edges
   (target <= 1 s);
3. LC on an implicit label-clique graph with 10,000,000 nodes (target <= 1 s), and on 200,000
   nodes against the same graph materialised as a sparse adjacency.
"""

from __future__ import annotations

import resource
import sys
import time
from collections import Counter

import networkx as nx
import numpy as np

from sipt_lab.consistency import local_consistency
from sipt_lab.graph import PretrainingGraph

N_CLASSES = 10


def planted_partition(n: int, m: int, p_within: float, rng: np.random.Generator):
    """``(graph, labels)``: ``m`` random pairs, a fraction ``p_within`` inside a label class."""
    labels = rng.integers(0, N_CLASSES, n)
    u = rng.integers(0, n, m, dtype=np.int64)
    v = rng.integers(0, n, m, dtype=np.int64)
    within = rng.random(m) < p_within
    # move v to the nearest id with u's label (ids cycle through classes only on average, so use the class list)
    by_class = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[by_class], np.arange(N_CLASSES + 1))
    cls = labels[u[within]]
    size = starts[cls + 1] - starts[cls]
    v[within] = by_class[starts[cls] + (v[within] % size)]
    return PretrainingGraph.from_edges(u, v, n), labels


def best_of(repeats: int, fn):
    """``(best seconds, last value)`` of ``repeats`` calls of ``fn()``."""
    best, value = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def networkx_local_consistency(G: nx.Graph, labels: list[int]) -> float:
    """Reference: Definition 5 node by node, ties split, isolated nodes skipped."""
    total, counted = 0.0, 0
    for node in G:
        votes = Counter(labels[nb] for nb in G[node])
        if not votes:
            continue
        top = max(votes.values())
        tied = [label for label, count in votes.items() if count == top]
        total += (labels[node] in tied) / len(tied)
        counted += 1
    return total / counted


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []

    graph, labels = planted_partition(100_000, 1_000_000, 0.05, rng)
    G = graph.to_networkx()
    label_list = labels.tolist()
    t, lc = best_of(3, lambda: local_consistency(graph, labels))
    t_ref, lc_ref = best_of(3, lambda: networkx_local_consistency(G, label_list))
    same = abs(lc - lc_ref) < 1e-12
    rows.append(("1. sparse LC vs networkx loop", f"{graph.n_nodes:,} n / {graph.n_edges:,} e", t, t_ref,
                 ">= 100x", t_ref / t >= 100 and same, f"LC={lc:.6f} nx={lc_ref:.6f} equal={same}"))
    del graph, labels, G

    graph, labels = planted_partition(1_000_000, 20_000_000, 0.05, rng)
    t, lc = best_of(3, lambda: local_consistency(graph, labels))
    rows.append(("2. sparse LC", f"{graph.n_nodes:,} n / {graph.n_edges:,} e", t, None, "<= 1 s",
                 t <= 1.0, f"LC={lc:.4f}"))
    del graph, labels

    groups = rng.integers(0, 1000, 10_000_000)
    ft = np.where(rng.random(groups.size) < 0.7, groups % N_CLASSES, rng.integers(0, N_CLASSES, groups.size))
    cliques = PretrainingGraph.from_groups(groups)
    t, lc = best_of(3, lambda: local_consistency(cliques, ft))
    rows.append(("3. implicit clique LC", f"{cliques.n_nodes:,} n / {cliques.n_edges:,} e", t, None,
                 "<= 1 s", t <= 1.0, f"LC={lc:.4f}"))
    del cliques

    small = PretrainingGraph.from_groups(groups[:200_000])
    materialised = PretrainingGraph.from_adjacency(small.adjacency())
    t, lc = best_of(3, lambda: local_consistency(small, ft[:200_000]))
    t_ref, lc_ref = best_of(3, lambda: local_consistency(materialised, ft[:200_000]))
    same = abs(lc - lc_ref) < 1e-12
    rows.append(("3b. implicit vs materialised", f"{small.n_nodes:,} n / {small.n_edges:,} e", t, t_ref,
                 "equal", same, f"LC={lc:.6f} equal={same}"))

    header = ("case", "graph", "ours (s)", "reference (s)", "speed-up", "target", "met", "check")
    table = [header] + [
        (name, size, f"{ours:.3f}", "-" if ref is None else f"{ref:.3f}",
         "-" if ref is None else f"{ref / ours:.0f}x", target, "yes" if ok else "NO", check)
        for name, size, ours, ref, target, ok, check in rows
    ]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip())
    print(f"peak RSS {peak_rss_gib():.2f} GiB; python {sys.version.split()[0]}, numpy {np.__version__}, "
          f"networkx {nx.__version__}; best of 3, graph building not timed")


if __name__ == "__main__":
    main()
