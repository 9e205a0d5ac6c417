"""Local consistency (Definition 5 of the SIPT paper) and its relatives.

Local consistency ``LC_G(y)`` is the probability that a node's label equals the plurality label of
its neighbours: the leave-one-out accuracy of a one-hop majority vote. By Theorem 1 it lower-bounds
the nearest-neighbour fine-tuning accuracy of an optimal SIPT embedder. Unlike node homophily (the
mean *fraction* of same-label neighbours) it is a hard decision, so it needs policies for

* **ties** (``TIE_POLICIES``): when the node's label is one of ``k`` labels tied for the plurality,
  ``"split"`` scores ``1/k`` (the expected accuracy of a random tie-break), ``"strict"`` scores 0 and
  ``"lenient"`` scores 1;
* **isolated nodes**: they have no neighbours to vote, score NaN per node and are left out of every
  mean here (PyG's ``homophily(method='node')`` counts them as 0 instead).

Sparse graphs: one compiled (numba) pass over the CSR rows counts each node's neighbour labels in
a scratch array of one count per class (``O(edges)`` time) and serves local consistency and both
homophilies. Implicit label-clique graphs use the closed form per group (``O(n)``, no edges
materialised) on vectorised group-by-label count matrices. Not to be confused with Zhou et al.'s
(2004) "local and global consistency" (label spreading).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.arrays import factorize
from sipt_lab.graphs.consistency_kernel import (
    TIE_POLICIES,
    ConsistencyReport,
    check_ties,
    edge_homophily_from_counts,
    mean_over_connected,
    node_homophily_from_counts,
    node_scores,
    report_from_counts,
    row_label_counts,
    tie_score,
)
from sipt_lab.graphs.graph import PretrainingGraph

__all__ = [
    "TIE_POLICIES",
    "ConsistencyReport",
    "consistency_from_files",
    "consistency_report",
    "corollary1_bound",
    "edge_homophily",
    "labelled_subgraph",
    "local_consistency",
    "local_consistency_per_node",
    "node_homophily",
]


def labelled_subgraph(graph: PretrainingGraph, nodes) -> tuple[PretrainingGraph, int]:
    """Where labels cover some of the samples: ``graph`` restricted to the labelled ``nodes``
    ``(m,)`` (the induced subgraph; its node ``k`` is ``nodes[k]``) and how many of ``graph``'s edges
    that leaves out (those with an end without a label).

    The one rule of every command that takes labels (``sipt-lab consistency``, ``advise``, the
    reports of ``pretrain`` and the studies): local consistency and the metrics on labels are
    measured on this graph, so the same files give the same LC everywhere.

    ```pycon
    >>> from sipt_lab import PretrainingGraph
    >>> path = PretrainingGraph.from_edges([0, 1, 2], [1, 2, 3], n_nodes=4)
    >>> part, left_out = labelled_subgraph(path, [0, 1, 2])
    >>> part.n_nodes, part.n_edges, left_out
    (3, 2, 1)

    ```
    """
    part = graph.subgraph(nodes)
    return part, graph.n_edges - part.n_edges


def local_consistency_per_node(graph: PretrainingGraph, labels, ties: str = "split") -> np.ndarray:
    """``(n,)`` float per-node local consistency in ``[0, 1]``; NaN for isolated nodes.

    A node scores 1 if its label is the unique plurality label of its neighbours, 0 if it is not a
    plurality label, and ``1/k`` / 0 / 1 (``ties`` = split / strict / lenient) if it is one of ``k``
    tied plurality labels. ``labels``: ``(n,)`` class of each node (any sortable values).
    """
    check_ties(ties)
    return _neighbour_stats(graph, *_label_codes(graph, labels), ties)[0]


def local_consistency(graph: PretrainingGraph, labels, ties: str = "split") -> float:
    """Definition 5: mean :func:`local_consistency_per_node` over non-isolated nodes.

    On a path ``0 - 1 - 2 - 3`` labelled ``a a b b``, the end nodes agree with their one neighbour
    and the middle two see a tie:

    ```pycon
    >>> from sipt_lab import PretrainingGraph, local_consistency
    >>> path = PretrainingGraph.from_edges([0, 1, 2], [1, 2, 3], n_nodes=4)
    >>> local_consistency(path, ["a", "a", "b", "b"])
    0.75
    >>> local_consistency(path, ["a", "a", "b", "b"], ties="strict")
    0.5

    ```
    """
    return mean_over_connected(local_consistency_per_node(graph, labels, ties))


def node_homophily(graph: PretrainingGraph, labels) -> float:
    """Mean over non-isolated nodes of the fraction of neighbours sharing the node's label.

    PyG's ``homophily(..., method='node')`` averages over *all* nodes, counting isolated ones as 0;
    we exclude them, as :func:`local_consistency` does.
    """
    return node_homophily_from_counts(
        graph.degrees(), _neighbour_stats(graph, *_label_codes(graph, labels), "split")[1]
    )


def edge_homophily(graph: PretrainingGraph, labels) -> float:
    """Fraction of undirected edges whose endpoints share a label."""
    codes, n_classes = _label_codes(graph, labels)
    if graph.n_edges == 0:
        raise SiptError("edge homophily is undefined on a graph without edges; add edges")
    return edge_homophily_from_counts(_neighbour_stats(graph, codes, n_classes, "split")[1], graph.n_edges)


def corollary1_bound(pt_labels, ft_labels, ties: str = "split") -> float:
    """Corollary 1's bound on SIPT nearest-neighbour FT accuracy when ``G_PT`` links same-PT-label samples.

    With ``G_PT`` the label-clique graph of ``pt_labels`` (``i ~ j`` iff ``pt_i == pt_j``), the
    neighbours of sample ``i`` are the rest of its PT clique, so by the law of total probability

        LC_{G_PT}(y_FT) = sum_l P(pt = l) * P(y_FT(x) = majority y_FT of the rest of the clique | pt = l),

    which is exactly the local consistency of ``ft_labels`` over that implicit clique graph; this
    function computes it with the ``O(n)`` closed form (nothing quadratic is built). Probabilities are
    empirical over the samples; samples alone in their PT class have no neighbours and are left out,
    and ties follow ``ties`` as in :func:`local_consistency_per_node`. ``pt_labels``, ``ft_labels``:
    ``(n,)`` class per sample.
    """
    pt_labels = np.asarray(pt_labels)
    ft_labels = np.asarray(ft_labels)
    if pt_labels.shape != ft_labels.shape or pt_labels.ndim != 1:
        raise SiptError(
            f"pt_labels and ft_labels must be 1-D of the same length, got shapes "
            f"{pt_labels.shape} and {ft_labels.shape}; pass one label of each per sample"
        )
    return local_consistency(PretrainingGraph.from_groups(pt_labels), ft_labels, ties)


def consistency_report(graph: PretrainingGraph, labels, ties: str = "split") -> ConsistencyReport:
    """Local consistency, node and edge homophily and graph counts in one :class:`ConsistencyReport`,
    from one pass that counts each node's neighbour labels (``sipt-lab consistency``).

    The example files of ``sipt-lab consistency --example``, read with
    :func:`~sipt_lab.graphs.tsv.load_graph_tsv`:

    ```pycon
    >>> from importlib import resources
    >>> from sipt_lab import consistency_report, load_graph_tsv
    >>> data = resources.files("sipt_lab") / "data"
    >>> labelled = load_graph_tsv(data / "example_edges.tsv", data / "example_labels.tsv")
    >>> report = consistency_report(labelled.graph, labelled.labels)
    >>> report.n_nodes, report.n_edges, report.n_isolated, report.n_classes
    (31, 49, 1, 2)
    >>> round(report.local_consistency, 3), round(report.edge_homophily, 3)
    (0.95, 0.837)

    ```
    """
    check_ties(ties)
    codes, n_classes = _label_codes(graph, labels)
    per_node, same = _neighbour_stats(graph, codes, n_classes, ties)
    return report_from_counts(per_node, same, graph.degrees(), graph.n_edges, n_classes, ties)


def consistency_from_files(
    edges,
    labels,
    ties: str = "split",
    *,
    engine: str = "stream",
    chunk_edges: int | None = None,
    edge_columns=("u", "v"),
    label_columns=("node", "label"),
    scheduler: str | None = None,
    workers: int | None = None,
    spill_dir=None,
    connect_timeout: float = 10.0,
):
    """:func:`consistency_report` of a labelled graph too large for memory, read from files.

    ``edges``: a Parquet file or directory (columns ``edge_columns``), or a text file, ``.tsv`` /
    ``.csv``, optionally ``.gz``, one edge per line; ``labels``: the same formats with columns
    ``label_columns`` (``node``, ``label``). ``engine="stream"`` reads the edges in chunks of
    ``chunk_edges`` on this machine with ``workers`` threads (:mod:`sipt_lab.graphs.consistency_stream`,
    memory bound there); ``"dask"`` runs the same computation on a Dask cluster at ``scheduler`` (a
    ``LocalCluster`` of ``workers`` workers when None, giving up on an unreachable one after
    ``connect_timeout`` seconds; :mod:`sipt_lab.graphs.consistency_dask`). The result equals
    :func:`consistency_report` of the same graph read in memory, ties included; self-loops and
    duplicate edges are dropped and counted as there. Returns a
    :class:`~sipt_lab.graphs.consistency_stream.FileConsistency`.

    ```pycon
    >>> from importlib import resources
    >>> from sipt_lab import consistency_from_files
    >>> data = resources.files("sipt_lab") / "data"
    >>> result = consistency_from_files(data / "example_edges.tsv", data / "example_labels.tsv", chunk_edges=10)
    >>> round(result.report.local_consistency, 3), result.report.n_edges, result.dropped_duplicates
    (0.95, 49, 0)

    ```
    """
    check_ties(ties)
    if engine == "stream":
        from sipt_lab.graphs.consistency_stream import stream_consistency

        return stream_consistency(
            edges,
            labels,
            ties,
            chunk_edges=chunk_edges,
            edge_columns=edge_columns,
            label_columns=label_columns,
            spill_dir=spill_dir,
            workers=workers,
        )
    if engine == "dask":
        from sipt_lab.graphs.consistency_dask import dask_consistency

        return dask_consistency(
            edges,
            labels,
            ties,
            scheduler=scheduler,
            workers=workers,
            chunk_edges=chunk_edges,
            edge_columns=edge_columns,
            label_columns=label_columns,
            connect_timeout=connect_timeout,
        )
    raise SiptError(f"unknown engine {engine!r}; use stream or dask")


# ---------------------------------------------------------------------- internals
def _neighbour_stats(
    graph: PretrainingGraph, codes: np.ndarray, n_classes: int, ties: str
) -> tuple[np.ndarray, np.ndarray]:
    """One counting pass over the neighbours' labels: ``(n,)`` float local consistency per node (NaN
    for isolated nodes) and ``(n,)`` int count of neighbours sharing the node's label."""
    if graph.is_implicit:
        counts = _group_label_counts(graph, codes, n_classes)
        return _clique_local_consistency(graph, counts, codes, ties), _lookup(counts, graph.group_codes, codes) - 1
    same, n_tied = _neighbour_label_counts(graph.adjacency(), codes, n_classes)
    return node_scores(n_tied, graph.degrees(), ties), same


def _label_codes(graph: PretrainingGraph, labels) -> tuple[np.ndarray, int]:
    """``(n,)`` int64 codes ``0..C-1`` of ``labels`` and ``C``; validates the length."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size != graph.n_nodes:
        raise SiptError(
            f"labels has shape {labels.shape} but the graph has {graph.n_nodes} nodes; pass one label per node"
        )
    uniques, codes = factorize(labels)
    return codes, uniques.size


def _neighbour_label_counts(A: sp.csr_array, codes: np.ndarray, n_classes: int):
    """``(same, n_tied)``, two ``(n,)`` int32 arrays over the nodes of the CSR adjacency ``A``.

    ``same``: how many neighbours share the node's label; ``n_tied``: how many labels tie for the
    neighbours' plurality when the node's own label is one of them, else 0 (isolated nodes: 0, 0).
    ``codes``: ``(n,)`` label codes ``0..n_classes-1``. See :func:`~sipt_lab.graphs.consistency_kernel.row_label_counts`.
    """
    return row_label_counts(A.indptr, A.indices, codes, codes, n_classes)


def _count_matrix(rows: np.ndarray, cols: np.ndarray, n_rows: int, n_cols: int):
    """``(n_rows, n_cols)`` int64 counts of the pairs ``(rows[k], cols[k])``.

    Dense (one bincount) unless that would be much larger than the input, then a CSR array. The
    dense matrix is the transpose of a ``(n_cols, n_rows)`` C-ordered array, so per-row reductions
    over the few columns run as fast elementwise passes.
    """
    if n_rows * n_cols <= max(2 * rows.size, 1 << 20):
        # int32 keys where they fit: the gather and add are memory bound, so half the bytes is faster
        key_dtype = np.int32 if n_rows * n_cols < np.iinfo(np.int32).max else np.int64
        keys = cols.astype(key_dtype) * key_dtype(n_rows)
        keys += rows.astype(key_dtype, copy=False)
        return np.bincount(keys, minlength=n_rows * n_cols).reshape(n_cols, n_rows).T
    counts = sp.csr_array((np.ones(rows.size, np.int64), (rows, cols)), shape=(n_rows, n_cols))
    counts.sum_duplicates()
    return counts


def _row_top(counts, exclude=None) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the largest count and how many columns reach it.

    With ``exclude`` (a per-row value), counts equal to it are ignored, which gives the runner-up.
    Sparse rows ignore their implicit zeros (callers never need a zero maximum).
    """
    if not sp.issparse(counts):
        values = counts if exclude is None else np.where(counts == exclude[:, None], -1, counts)
        top = values.max(axis=1)
        return top, (values == top[:, None]).sum(axis=1)
    row_len = np.diff(counts.indptr)
    values = counts.data
    if exclude is not None:
        values = np.where(values == np.repeat(exclude, row_len), -1, values)
    top = np.zeros(counts.shape[0], dtype=np.int64)
    filled = row_len > 0
    top[filled] = np.maximum(np.maximum.reduceat(values, counts.indptr[:-1][filled]), 0)
    rows = np.repeat(np.arange(counts.shape[0]), row_len)
    n_top = np.bincount(rows[values == np.repeat(top, row_len)], minlength=counts.shape[0])
    return top, n_top


def _lookup(counts, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``counts[rows[k], cols[k]]`` for a dense array or a CSR array with sorted indices."""
    if not sp.issparse(counts):
        return counts[rows, cols]
    return np.asarray(counts[rows, cols]).astype(np.int64).ravel()


def _group_label_counts(graph: PretrainingGraph, codes: np.ndarray, n_classes: int):
    """``(G, C)`` counts of each label within each group of an implicit clique graph."""
    groups = graph.group_codes
    return _count_matrix(groups, codes, int(graph.group_sizes.size), n_classes)


def _clique_local_consistency(graph: PretrainingGraph, counts, codes, ties: str) -> np.ndarray:
    """Closed form over implicit cliques: node i's neighbour counts are its group's counts minus i.

    Let ``top``/``n_top`` be the group's largest label count and how many labels reach it, and
    ``second``/``n_second`` the runner-up. Removing i lowers its own label's count by one, so i
    scores only if its label had the unique top count; it then ties with the ``n_second`` runner-up
    labels when ``second == top - 1`` and wins outright when ``second < top - 1``.
    """
    top, n_top = _row_top(counts)
    second, n_second = _row_top(counts, exclude=top)
    g = graph.group_codes
    own = _lookup(counts, g, codes)
    wins = (own == top[g]) & (n_top[g] == 1)
    tied = wins & (second[g] == top[g] - 1)
    score = np.where(wins, 1.0, 0.0)
    score[tied] = tie_score(1 + n_second[g][tied], ties)
    score[graph.group_sizes[g] == 1] = np.nan
    return score
