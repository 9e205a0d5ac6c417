"""Subsets of a pre-training graph's nodes that keep its local structure."""

from __future__ import annotations

import numpy as np

from sipt_lab.graphs.graph import PretrainingGraph


def snowball_sample(graph: PretrainingGraph, n: int, seed: int = 0) -> np.ndarray:
    """``(min(n, graph.n_nodes),)`` sorted nodes reached by breadth-first search from a random
    start (restarting at a random unvisited node when a component is exhausted), so that the
    slice keeps the graph's local density, unlike a uniform sample."""
    rng = np.random.default_rng(seed)
    adjacency = graph.adjacency()
    visited = np.zeros(graph.n_nodes, dtype=bool)
    order = []
    while len(order) < min(n, graph.n_nodes):
        frontier = [int(rng.choice(np.flatnonzero(~visited)))]
        visited[frontier] = True
        while frontier and len(order) < n:
            order.extend(frontier)
            neighbours = np.unique(adjacency[frontier].indices)
            fresh = neighbours[~visited[neighbours]]
            fresh = rng.permutation(fresh)
            visited[fresh] = True
            frontier = fresh.tolist()
    return np.sort(np.array(order[:n], dtype=np.int64))
