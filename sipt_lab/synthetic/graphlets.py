"""Small connected graphs (the motif atlas) and per-node graphlet orbit counts of order 4.

:func:`connected_graphs` lists every connected graph with a given range of node counts, once per
isomorphism class (networkx's graph atlas, deduplicated with the exact test ``nx.is_isomorphic``;
the original SIPT code used the heuristic ``could_be_isomorphic``, which merges distinct graphs).

:func:`orbit_counts` returns graphlet degree vectors (GDVs): for every node, how many connected
*induced* 2-to-4-node subgraphs touch it in each of the 15 automorphism orbits, in ORCA's order
(Przulj 2007; Hocevar & Demsar 2014):

====  ==================================  ====  ==================================
 0    edge                                 8    4-cycle
 1    3-path, end                          9    paw, tail (degree-1 node)
 2    3-path, centre                      10    paw, degree-2 triangle node
 3    triangle                            11    paw, centre (degree 3)
 4    4-path, end                         12    diamond, degree-2 node (off the chord)
 5    4-path, interior                    13    diamond, degree-3 node (on the chord)
 6    3-star, leaf                        14    4-clique
 7    3-star, centre
====  ==================================  ====  ==================================

The counts come from sparse-matrix products: first the *non-induced* count of every pattern
(how many copies of the pattern's edge set touch the node, extra edges allowed), then the induced
counts by back-substitution, since a non-induced count is the induced count plus the copies hidden
inside every denser 4-node graphlet (coefficients in ``_EMBEDDINGS``). This is the approach of the
Fast Graphlet Transform (pyfglt); unlike pyfglt it needs no pandas and uses ORCA's orbit order
(pyfglt's column ``c`` is ORCA orbit ``c - 1``, except that its 4-cycle, column 12, is ORCA's 8 and
its paw columns 9-11 are ORCA's 9-11).
"""

from __future__ import annotations

from functools import cache

import networkx as nx
import numpy as np
import scipy.sparse as sp

N_ORBITS = 15

# Non-induced count of orbit o (rows, 4..13) = induced count of o + sum over denser graphlet orbits o'
# of coefficient * induced count of o' (the number of copies of o's pattern, with the node in orbit
# o, inside one o' graphlet). Orbits 0-3 are handled directly in orbit_counts.
_EMBEDDINGS = {
    4: {8: 2, 9: 2, 10: 1, 12: 4, 13: 2, 14: 6},
    5: {8: 2, 10: 1, 11: 2, 12: 2, 13: 4, 14: 6},
    6: {9: 1, 10: 1, 12: 2, 13: 1, 14: 3},
    7: {11: 1, 13: 1, 14: 1},
    8: {12: 1, 13: 1, 14: 3},
    9: {12: 2, 14: 3},
    10: {12: 2, 13: 2, 14: 6},
    11: {13: 2, 14: 3},
    12: {14: 3},
    13: {14: 3},
}


@cache
def _atlas_classes(max_nodes: int) -> tuple[nx.Graph, ...]:
    if not 1 <= max_nodes <= 7:
        raise ValueError(f"the graph atlas covers 1 to 7 nodes, got max_nodes={max_nodes}")
    kept: list[nx.Graph] = []
    buckets: dict[tuple, list[nx.Graph]] = {}
    for graph in nx.graph_atlas_g():
        if graph.number_of_nodes() == 0 or graph.number_of_nodes() > max_nodes or not nx.is_connected(graph):
            continue
        key = (graph.number_of_nodes(), graph.number_of_edges(), tuple(sorted(d for _, d in graph.degree())))
        same_invariants = buckets.setdefault(key, [])
        if any(nx.is_isomorphic(graph, other) for other in same_invariants):
            continue
        same_invariants.append(graph)
        kept.append(nx.convert_node_labels_to_integers(graph))
    return tuple(kept)


def connected_graphs(min_nodes: int = 2, max_nodes: int = 5) -> list[nx.Graph]:
    """Every connected graph with ``min_nodes..max_nodes`` nodes, one per isomorphism class.

    Nodes are ``0..k-1``; the order is the atlas order (by node count, then edge count, ...).
    Counts per node count 1..7: 1, 1, 2, 6, 21, 112, 853.
    """
    return [g.copy() for g in _atlas_classes(max_nodes) if g.number_of_nodes() >= min_nodes]


def orbit_counts(adjacency) -> np.ndarray:
    """Graphlet degree vectors of order 4: ``(n, 15)`` int64, ORCA orbit order (module docstring).

    ``adjacency``: ``(n, n)`` symmetric matrix (scipy sparse or dense; non-zeros are edges) without
    self-loops.
    Cost: a few sparse products, ``O(sum_v deg(v)^2)`` work for the 2-hop counts.
    """
    A = sp.csr_array(sp.csr_array(adjacency) != 0, dtype=np.int64)
    n = A.shape[0]
    if A.shape != (n, n) or (A != A.T).nnz:
        raise ValueError(f"adjacency must be square and symmetric, got shape {A.shape}")
    if A.diagonal().any():
        raise ValueError("adjacency has self-loops")
    d = np.asarray(A.sum(axis=1)).ravel()
    W = sp.csr_array(A @ A)  # W[u, v]: common neighbours (walks of length 2)
    on_edges = sp.csr_array(A.multiply(W))  # common neighbours of adjacent pairs = triangles on the edge
    t = np.asarray(on_edges.sum(axis=1)).ravel() // 2  # triangles at each node

    raw = np.zeros((n, N_ORBITS), dtype=np.int64)
    p1 = A @ (d - 1)  # 2-paths starting at v (non-induced)
    raw[:, 0] = d
    raw[:, 1] = p1 - 2 * t
    raw[:, 2] = d * (d - 1) // 2 - t
    raw[:, 3] = t
    raw[:, 4] = A @ p1 - d * (d - 1) - 2 * t
    raw[:, 5] = (d - 1) * p1 - 2 * t
    raw[:, 6] = A @ ((d - 1) * (d - 2) // 2)
    raw[:, 7] = d * (d - 1) * (d - 2) // 6
    raw[:, 8] = _row_sums_of(W, lambda w: w * (w - 1) // 2) - d * (d - 1) // 2  # minus the u = v term
    raw[:, 9] = A @ t - 2 * t
    raw[:, 10] = on_edges @ (d - 2)
    raw[:, 11] = t * (d - 2)
    chord_extra = sp.csr_array(on_edges - A)  # on edge (a, b): common neighbours other than one
    raw[:, 12] = np.asarray((A @ chord_extra).multiply(A).sum(axis=1)).ravel() // 2
    raw[:, 13] = _row_sums_of(on_edges, lambda w: w * (w - 1) // 2)
    raw[:, 14] = _four_cliques_per_node(A)

    induced = raw.copy()
    for orbit in sorted(_EMBEDDINGS, reverse=True):
        for denser, coefficient in _EMBEDDINGS[orbit].items():
            induced[:, orbit] -= coefficient * induced[:, denser]
    return induced


def _row_sums_of(matrix: sp.csr_array, transform) -> np.ndarray:
    """Row sums of ``transform`` applied to the stored entries of a CSR matrix (``(n,)`` int64)."""
    values = transform(matrix.data.astype(np.int64))
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    return np.bincount(rows, weights=values, minlength=matrix.shape[0]).astype(np.int64)


def _four_cliques_per_node(A: sp.csr_array) -> np.ndarray:
    """``(n,)`` number of 4-cliques containing each node.

    A 4-clique on edge ``(a, b)`` is an edge between two common neighbours of ``a`` and ``b``; each
    4-clique at ``v`` contains three edges at ``v``.
    """
    n = A.shape[0]
    upper = sp.triu(A, k=1, format="coo")
    if upper.nnz == 0:
        return np.zeros(n, dtype=np.int64)
    common = sp.csr_array(A[upper.row].multiply(A[upper.col]))  # (m, n): common neighbours per edge
    per_edge = np.asarray((common @ A).multiply(common).sum(axis=1)).ravel() // 2
    per_node = np.bincount(upper.row, weights=per_edge, minlength=n) + np.bincount(
        upper.col, weights=per_edge, minlength=n
    )
    return (per_node // 3).astype(np.int64)
