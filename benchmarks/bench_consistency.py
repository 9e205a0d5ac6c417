"""Local consistency speed: sparse and implicit-clique paths vs a networkx per-node loop.

Run as ``python benchmarks/bench_consistency.py``. Graph construction is not timed; every timing is
the best of 5, after a warm-up call. Cases:

0. the first call of the compiled sparse kernel in a fresh interpreter: JIT compilation with an
   empty numba cache directory, then loading it from that cache;
1. LC on a planted-partition graph with 100,000 nodes / ~1,000,000 edges against a
   straightforward networkx loop (per node: ``Counter`` of neighbour labels, plurality check, ties
   split), both values checked equal (target >= 100x); run first, in a fresh heap;
2. LC on a planted-partition graph with 1,000,000 nodes and ~20,000,000 undirected edges
   (target <= 1 s), and node + edge homophily on the same graph;
3. LC on an implicit label-clique graph with 10,000,000 nodes (target <= 1 s), and on 200,000
   nodes against the same graph materialised as a sparse adjacency.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from functools import partial

import networkx as nx
import numba
import numpy as np

from sipt_lab.graphs.consistency import edge_homophily, local_consistency, node_homophily
from sipt_lab.graphs.graph import PretrainingGraph

N_CLASSES = 10
REPEATS = 5

# Times the first local_consistency call on a tiny sparse graph (the int32 CSR / uint8 label
# signature that the benchmark graphs use too).
FIRST_CALL = """
import time, numpy as np
from sipt_lab.graphs.consistency import local_consistency
from sipt_lab.graphs.graph import PretrainingGraph
graph = PretrainingGraph.from_edges([0, 1, 2], [1, 2, 3], 5)
start = time.perf_counter()
local_consistency(graph, np.array([0, 0, 1, 1, 0]))
print(time.perf_counter() - start)
"""


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


def first_call_seconds(cache_dir: str) -> float:
    """Seconds of :data:`FIRST_CALL` in a fresh interpreter with ``NUMBA_CACHE_DIR=cache_dir``."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    done = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, check=True, capture_output=True, text=True)
    return float(done.stdout.split()[-1])


def best_of(repeats: int, fn):
    """``(best seconds, last value)`` of a warm-up call and then ``repeats`` timed calls of ``fn()``."""
    best, value = float("inf"), fn()
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


def homophilies(graph: PretrainingGraph, labels: np.ndarray) -> tuple[float, float]:
    return node_homophily(graph, labels), edge_homophily(graph, labels)


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []

    with tempfile.TemporaryDirectory() as cache_dir:
        t_compile = first_call_seconds(cache_dir)
        t_cached = first_call_seconds(cache_dir)  # the compiling run has just filled it
    rows.append(
        ("0. first call: JIT compile", "5 n / 3 e", t_compile, None, "-", None, "fresh process, empty numba cache")
    )
    rows.append(
        ("0b. first call: cache load", "5 n / 3 e", t_cached, None, "-", None, "fresh process, kernel cached on disk")
    )

    graph, labels = planted_partition(100_000, 1_000_000, 0.05, rng)
    G = graph.to_networkx()
    label_list = labels.tolist()
    t, lc = best_of(REPEATS, partial(local_consistency, graph, labels))
    t_ref, lc_ref = best_of(REPEATS, partial(networkx_local_consistency, G, label_list))
    same = abs(lc - lc_ref) < 1e-12
    rows.append(
        (
            "1. sparse LC vs networkx loop",
            f"{graph.n_nodes:,} n / {graph.n_edges:,} e",
            t,
            t_ref,
            ">= 100x",
            t_ref / t >= 100 and same,
            f"LC={lc:.6f} nx={lc_ref:.6f} equal={same}",
        )
    )
    del graph, labels, G

    graph, labels = planted_partition(1_000_000, 20_000_000, 0.05, rng)
    t, lc = best_of(REPEATS, partial(local_consistency, graph, labels))
    rows.append(
        ("2. sparse LC", f"{graph.n_nodes:,} n / {graph.n_edges:,} e", t, None, "<= 1 s", t <= 1.0, f"LC={lc:.4f}")
    )
    t, (h_node, h_edge) = best_of(REPEATS, partial(homophilies, graph, labels))
    rows.append(
        (
            "2b. node + edge homophily",
            f"{graph.n_nodes:,} n / {graph.n_edges:,} e",
            t,
            None,
            "<= 1 s",
            t <= 1.0,
            f"node={h_node:.4f} edge={h_edge:.4f}",
        )
    )
    del graph, labels

    groups = rng.integers(0, 1000, 10_000_000)
    ft = np.where(rng.random(groups.size) < 0.7, groups % N_CLASSES, rng.integers(0, N_CLASSES, groups.size))
    cliques = PretrainingGraph.from_groups(groups)
    t, lc = best_of(REPEATS, partial(local_consistency, cliques, ft))
    rows.append(
        (
            "3. implicit clique LC",
            f"{cliques.n_nodes:,} n / {cliques.n_edges:,} e",
            t,
            None,
            "<= 1 s",
            t <= 1.0,
            f"LC={lc:.4f}",
        )
    )
    del cliques

    small = PretrainingGraph.from_groups(groups[:200_000])
    materialised = PretrainingGraph.from_adjacency(small.adjacency())
    t, lc = best_of(REPEATS, lambda: local_consistency(small, ft[:200_000]))
    t_ref, lc_ref = best_of(REPEATS, lambda: local_consistency(materialised, ft[:200_000]))
    same = abs(lc - lc_ref) < 1e-12
    rows.append(
        (
            "3b. implicit vs materialised",
            f"{small.n_nodes:,} n / {small.n_edges:,} e",
            t,
            t_ref,
            "equal",
            same,
            f"LC={lc:.6f} equal={same}",
        )
    )

    header = ("case", "graph", "ours (s)", "reference (s)", "speed-up", "target", "met", "check")
    table = [header] + [
        (
            name,
            size,
            f"{ours:.4f}",
            "-" if ref is None else f"{ref:.4f}",
            "-" if ref is None else f"{ref / ours:.0f}x",
            target,
            "-" if ok is None else "yes" if ok else "NO",
            check,
        )
        for name, size, ours, ref, target, ok, check in rows
    ]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip())
    print(
        f"peak RSS {peak_rss_gib():.2f} GiB; python {sys.version.split()[0]}, numpy {np.__version__}, "
        f"networkx {nx.__version__}, numba {numba.__version__}; best of {REPEATS} after a warm-up, "
        f"graph building not timed; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
