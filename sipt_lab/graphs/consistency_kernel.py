"""What every local-consistency engine shares: tie policies, the per-row neighbour-label count
kernel and the assembly of a :class:`ConsistencyReport` from per-node counts.

The in-memory path (:mod:`sipt_lab.graphs.consistency`) and the out-of-core engines
(:mod:`sipt_lab.graphs.consistency_stream`, :mod:`sipt_lab.graphs.consistency_dask`) all count with
:func:`row_label_counts` and report with :func:`report_from_counts`, so their numbers are identical.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numba
import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs import names

TIE_POLICIES = names.TIE_POLICIES


@dataclass(frozen=True)
class ConsistencyReport:
    """Summary of how consistent a labelling is over a graph (means over non-isolated nodes)."""

    local_consistency: float
    node_homophily: float
    edge_homophily: float
    n_nodes: int
    n_edges: int
    n_isolated: int
    n_classes: int
    tie_policy: str

    def to_dict(self) -> dict:
        """JSON-ready dict of the fields."""
        return dataclasses.asdict(self)


def check_ties(ties: str) -> None:
    if ties not in TIE_POLICIES:
        raise SiptError(f"unknown tie policy {ties!r}; use one of {', '.join(TIE_POLICIES)}")


def check_labelled_edges(n_edges: int, unlabelled_edges: int) -> None:
    """SiptError when every edge was left out for an end without a label (LC is then undefined)."""
    if n_edges == 0 and unlabelled_edges:
        raise SiptError(
            f"no edge joins two labelled nodes (all {unlabelled_edges} have an end without a label), so LC is "
            "undefined; label nodes that the graph links"
        )


def node_scores(n_tied: np.ndarray, degrees: np.ndarray, ties: str) -> np.ndarray:
    """``(n,)`` float local consistency per node from the ``n_tied`` of
    :func:`row_label_counts` and the ``(n,)`` degrees (NaN where 0)."""
    score = np.where(n_tied > 0, tie_score(n_tied, ties), 0.0)
    score[degrees == 0] = np.nan
    return score


def report_from_counts(per_node, same, degrees, n_edges: int, n_classes: int, ties: str) -> ConsistencyReport:
    """:class:`ConsistencyReport` from ``(n,)`` per-node scores, same-label neighbour counts and degrees."""
    return ConsistencyReport(
        local_consistency=mean_over_connected(per_node),
        node_homophily=node_homophily_from_counts(degrees, same),
        edge_homophily=edge_homophily_from_counts(same, n_edges),
        n_nodes=int(degrees.size),
        n_edges=int(n_edges),
        n_isolated=int(np.count_nonzero(degrees == 0)),
        n_classes=int(n_classes),
        tie_policy=ties,
    )


def node_homophily_from_counts(degrees: np.ndarray, same: np.ndarray) -> float:
    """Mean over non-isolated nodes of ``same / degree``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = same / degrees
    return mean_over_connected(np.where(degrees > 0, fraction, np.nan))


def edge_homophily_from_counts(same: np.ndarray, n_edges: int) -> float:
    """Fraction of same-label edges; every same-label edge counts once from each end of ``same``."""
    return float(same.sum(dtype=np.int64) / (2 * n_edges))


def row_label_counts(indptr, indices, codes, row_codes, n_classes: int):
    """``(same, n_tied)``, two ``(r,)`` int32 arrays over the rows of a CSR block.

    ``same``: how many neighbours share the row's label; ``n_tied``: how many labels tie for the
    neighbours' plurality when the row's own label is one of them, else 0 (rows without neighbours:
    0, 0). ``indptr`` ``(r+1,)`` and ``indices`` (neighbours, into ``codes``, the ``(n,)`` label
    codes ``0..n_classes-1``) describe ``r`` rows whose own labels are ``row_codes`` ``(r,)``: the
    whole graph when ``row_codes`` is ``codes``, a block of rows out of it when a gather of ``codes``."""
    # The smallest code dtype keeps the random gathers codes[indices] in cache.
    dtype = np.min_scalar_type(max(n_classes - 1, 0))
    return _neighbour_label_kernel(
        indptr, indices, codes.astype(dtype, copy=False), row_codes.astype(dtype, copy=False), n_classes
    )


# Serial on purpose: numba's parallel loops run on OpenMP threads that spin while they wait, which
# slows a loaded machine down, oversubscribes the one-process-per-core sweep workers, and aborts
# forked children. nogil lets callers run it from several threads instead.
@numba.njit(cache=True, nogil=True)
def _neighbour_label_kernel(indptr, indices, codes, row_codes, n_classes):
    """:func:`row_label_counts` on the raw CSR arrays: one pass per row plus an O(degree) or
    O(classes) scan, with one scratch count array kept all zero between rows."""
    n = indptr.size - 1
    same = np.zeros(n, np.int32)
    n_tied = np.zeros(n, np.int32)
    counts = np.zeros(n_classes, np.int32)
    for i in range(n):
        start, end = indptr[i], indptr[i + 1]
        top = n_top = 0
        if n_classes <= end - start:
            # Many neighbours per class: count, then scan every class (branch-free passes).
            for e in range(start, end):
                counts[codes[indices[e]]] += 1
            own = counts[row_codes[i]]
            for c in range(n_classes):
                top = max(top, counts[c])
            for c in range(n_classes):
                n_top += counts[c] == top
                counts[c] = 0
        else:
            # Fewer neighbours than classes: touch only the neighbours' labels. The second pass
            # counts each top label once, as it resets the label's count on its first visit.
            for e in range(start, end):
                label = codes[indices[e]]
                counts[label] += 1
                top = max(top, counts[label])
            own = counts[row_codes[i]]
            for e in range(start, end):
                label = codes[indices[e]]
                n_top += counts[label] == top
                counts[label] = 0
        same[i] = own
        if own == top and top > 0:
            n_tied[i] = n_top
    return same, n_tied


def tie_score(n_tied: np.ndarray, ties: str) -> np.ndarray:
    n_tied = np.asarray(n_tied, dtype=np.float64)
    if ties == "split":
        return 1.0 / np.maximum(n_tied, 1.0)
    if ties == "strict":
        return (n_tied == 1).astype(np.float64)
    return np.ones_like(n_tied)


def mean_over_connected(per_node: np.ndarray) -> float:
    connected = ~np.isnan(per_node)
    if not connected.any():
        raise SiptError("every node is isolated, so the measure is undefined; add edges to the graph")
    return float(per_node[connected].mean())
