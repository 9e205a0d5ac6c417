"""The NETWORKS domain: PPI ego-networks (graph samples), linked when their Gene-Ontology labels agree.

:func:`hamming_graph` links samples ``i ~ j`` when their 0/1 label vectors differ in at most
``max_distance`` labels (the paper's ``G_PT`` for NETWORKS, ``max_distance = 9``). It never compares
all ``n^2`` pairs:

* pairs with ``|a_i| + |a_j| <= D`` are edges whatever their labels (their distance is at most the
  sum), enumerated from the label counts alone;
* every other edge ``i ~ j``, ``s = |a_i| <= t = |a_j| = s + δ``, ``δ <= D``, shares
  ``o >= ceil((s + t - D) / 2) >= 1`` labels. By the prefix-filter lemma of set-similarity joins
  (Chaudhuri et al. 2006; Xiao et al. 2011), with the labels ordered rarest first, the
  ``s - o + 1 <= 1 + (D - δ) // 2`` rarest labels of ``i`` then meet the ``1 + (D + δ) // 2`` rarest
  of ``j``. Samples are grouped by label count; for each pair of groups ``(s, s + δ)`` the candidates
  are the non-zeros of ``S P^T`` (``S``, ``P``: those prefixes, a sparse product in row blocks),
  verified by XOR and popcount on bit-packed label rows. Prefixes that depend on ``δ`` (both 5
  labels for equal counts at ``D = 9``) keep far fewer candidates than one long prefix of ``D + 1``.

Rare labels are specific (GO terms deep in the ontology), so the prefixes are short lists of rare
terms and the candidates few; the common terms near the root never enter a prefix of a well
annotated sample. Timings: ``benchmarks/bench_hamming.py``.

The domain (listed as ``networks``, data files in :data:`LAYOUT`) pairs that graph with graph
samples for a GIN (:mod:`sipt_lab.models.graph_encoder`) and the multi-label GO task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from sipt_lab.core.errors import SiptError
from sipt_lab.data.tasks import Task
from sipt_lab.domains.base import SHARED, Domain, DomainData
from sipt_lab.domains.loaders import read_term_sets, read_tu_graphs
from sipt_lab.graphs.graph import PretrainingGraph

#: The paper's threshold for NETWORKS: at most 9 differing GO labels.
DEFAULT_MAX_DISTANCE = 9
_ROW_BLOCK = 4096  # samples whose candidates are found by one sparse product
_PAIR_CHUNK = 1 << 20  # candidate pairs verified by one XOR / popcount pass
#: ℓ of the ℓ-prefix filter: candidates share at least this many prefix labels (fewer when the
#: counts need fewer shared labels). 1 is the classic prefix filter; larger values lengthen the prefixes
#: (a costlier product) and drop more pairs before verification (benchmarks/bench_hamming.py).
PREFIX_SHARED = 2
_BYTE_POPCOUNT = np.array([bin(byte).count("1") for byte in range(256)], dtype=np.uint8)


def hamming_graph(labels, max_distance: int = DEFAULT_MAX_DISTANCE) -> PretrainingGraph:
    """``i ~ j`` iff the label rows ``i`` and ``j`` differ in at most ``max_distance`` labels.

    Args:
        labels: ``(n, L)`` 0/1 matrix, numpy or scipy sparse (any non-zero counts as 1).
        max_distance: ``D >= 0``, the most labels two linked samples may disagree on.
    Returns the :class:`PretrainingGraph` on ``n`` samples. Identical rows are linked; so are any two
    rows with at most ``D`` labels between them (``[1, 0, 0]`` and ``[0, 1, 0]`` for ``D = 2``).
    """
    A = _binary_csr(labels)
    D = check_max_distance(max_distance)
    counts = np.diff(A.indptr).astype(np.int64)
    small = small_count_pairs(counts, D)
    shared = _shared_label_pairs(A, counts, D)
    edges = np.concatenate([small, shared])
    return PretrainingGraph.from_edges(edges[:, 0], edges[:, 1], A.shape[0])


def _binary_csr(labels) -> sp.csr_array:
    """``labels`` as an ``(n, L)`` int32 0/1 CSR with sorted indices."""
    if sp.issparse(labels):
        A = sp.csr_array(labels, copy=True)  # eliminate_zeros below must not change the caller's matrix
    else:
        array = np.asarray(labels)
        if array.ndim != 2 or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
            raise SiptError(
                f"labels must be an (n, L) 0/1 matrix, got shape {array.shape} of {array.dtype}; "
                "pass one row of GO labels per sample"
            )
        A = sp.csr_array(array)
    if A.ndim != 2:
        raise SiptError(f"labels must be an (n, L) 0/1 matrix, got shape {A.shape}; pass one row per sample")
    A.eliminate_zeros()
    if A.nnz and not np.all(A.data == 1):
        raise SiptError("labels must be 0/1, found other values; binarise them (labels != 0) first")
    A = sp.csr_array((np.ones(A.nnz, dtype=np.int32), A.indices, A.indptr), shape=A.shape)
    A.sort_indices()
    return A


def check_max_distance(max_distance) -> int:
    if isinstance(max_distance, bool) or not isinstance(max_distance, (int, np.integer)) or max_distance < 0:
        raise SiptError(f"max_distance must be an integer >= 0, got {max_distance!r}; pass e.g. 9")
    return int(max_distance)


def small_count_pairs(counts: np.ndarray, D: int) -> np.ndarray:
    """``(m, 2)`` all pairs ``i < j`` with ``counts[i] + counts[j] <= D`` (edges without a check)."""
    order = np.argsort(counts, kind="stable")
    sorted_counts = counts[order]
    n_small = int(np.searchsorted(sorted_counts, D // 2, side="right"))  # the lower count of a pair is <= D/2
    p = np.arange(n_small)
    ends = np.searchsorted(sorted_counts, D - sorted_counts[:n_small], side="right")  # partners q in (p, ends)
    lengths = np.maximum(ends - p - 1, 0)
    first = np.repeat(p, lengths)
    offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    second = first + 1 + offsets
    return np.stack([order[first], order[second]], axis=1).astype(np.int64)


def _shared_label_pairs(A: sp.csr_array, counts: np.ndarray, D: int) -> np.ndarray:
    """``(m, 2)`` pairs with ``counts[i] + counts[j] > D`` at Hamming distance ``<= D``, each pair once.

    Samples are taken in groups of equal label count. Two samples with counts ``s <= t = s + δ``
    within the distance share ``o >= o* = ceil((s + t - D) / 2)`` labels, so (the ℓ-prefix lemma,
    ``ℓ = min(PREFIX_SHARED, o*)``) the ``floor((D - δ) / 2) + ℓ`` rarest labels of the smaller and the
    ``floor((D + δ) / 2) + ℓ`` rarest of the larger share at least ``ℓ``: one sparse product of those
    prefixes per pair of groups, in row blocks, counts them, and the pairs with ``ℓ`` or more are the
    candidates, verified on the packed label rows."""
    order = np.argsort(counts, kind="stable")
    sorted_counts = counts[order]
    starts = np.searchsorted(
        sorted_counts, np.arange(int(sorted_counts.max(initial=0)) + D + 2)
    )  # count s: [starts[s], starts[s + 1])
    ranked, position = _ranked_labels(A[order])
    prefixes: dict[int, sp.csr_array] = {}

    def prefix(length: int) -> sp.csr_array:
        if length not in prefixes:
            prefixes[length] = _prefix(ranked, position, length)
        return prefixes[length]

    packed = _pack_rows(A)
    found = []
    for delta in range(D + 1):
        for s in range((D - delta) // 2 + 1, len(starts) - delta - 1):  # 2 s + δ > D
            rows, columns = (starts[s], starts[s + 1]), (starts[s + delta], starts[s + delta + 1])
            if rows[0] == rows[1] or columns[0] == columns[1]:
                continue
            shared = min(PREFIX_SHARED, -(-(2 * s + delta - D) // 2))
            short, long = prefix((D - delta) // 2 + shared), prefix((D + delta) // 2 + shared)
            partners = long[columns[0] : columns[1]].T.tocsr()
            for lo in range(rows[0], rows[1], _ROW_BLOCK):
                candidates = sp.coo_array(short[lo : min(lo + _ROW_BLOCK, rows[1])] @ partners)
                keep = candidates.data >= shared
                a = candidates.row[keep].astype(np.int64) + lo
                b = candidates.col[keep].astype(np.int64) + columns[0]
                if delta == 0:  # one group with itself: each pair once
                    a, b = a[a < b], b[a < b]
                found += _verified(packed, order[a], order[b], D)
    return np.concatenate(found) if found else np.empty((0, 2), dtype=np.int64)


def _verified(packed: np.ndarray, a: np.ndarray, b: np.ndarray, D: int) -> list[np.ndarray]:
    """The candidate pairs ``(a[k], b[k])`` whose packed label rows differ in at most ``D`` bits, as ``(m, 2)`` chunks."""
    found = []
    for lo in range(0, a.size, _PAIR_CHUNK):
        i, j = a[lo : lo + _PAIR_CHUNK], b[lo : lo + _PAIR_CHUNK]
        close = _popcount_rows(packed[i] ^ packed[j]) <= D
        found.append(np.stack([i[close], j[close]], axis=1))
    return found


def _ranked_labels(A: sp.csr_array) -> tuple[sp.csr_array, np.ndarray]:
    """``A`` with labels renumbered by rank, rarest first (ties: lower label index), each row's
    labels in that order, and ``(nnz,)`` each entry's position within its row."""
    frequency = np.bincount(A.indices, minlength=A.shape[1])
    rank = np.empty(A.shape[1], dtype=np.int64)
    rank[np.lexsort((np.arange(A.shape[1]), frequency))] = np.arange(A.shape[1])
    ranked = sp.csr_array((A.data, rank[A.indices], A.indptr.copy()), shape=A.shape)
    ranked.sort_indices()
    return ranked, np.arange(A.nnz) - np.repeat(ranked.indptr[:-1], np.diff(ranked.indptr))


def _prefix(ranked: sp.csr_array, position: np.ndarray, length: int) -> sp.csr_array:
    """``(n, L)`` 0/1 CSR keeping each row's ``length`` rarest labels (of :func:`_ranked_labels`)."""
    # copies of the index arrays: eliminate_zeros compacts them in place, and scipy may share them with A
    prefix = sp.csr_array(
        ((position < length).astype(np.int32), ranked.indices.copy(), ranked.indptr.copy()), shape=ranked.shape
    )
    prefix.eliminate_zeros()
    return prefix


def _pack_rows(A: sp.csr_array) -> np.ndarray:
    """``(n, w)`` uint64: each label row bit-packed (``w = ceil(L / 64)``), built in row blocks."""
    n, L = A.shape
    n_bytes = 8 * max(1, -(-L // 64))
    packed = np.zeros((n, n_bytes), dtype=np.uint8)
    for start in range(0, n, _ROW_BLOCK):
        block = packed[start : start + _ROW_BLOCK]
        block[:, : -(-L // 8)] = np.packbits(A[start : start + _ROW_BLOCK].toarray().astype(bool), axis=1)
    return packed.view(np.uint64)


def _popcount_rows(words: np.ndarray) -> np.ndarray:
    """``(m,)`` set bits per row of the ``(m, w)`` uint64 ``words``."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2
        return np.bitwise_count(words).sum(axis=1, dtype=np.int64)
    return _BYTE_POPCOUNT[words.view(np.uint8)].sum(axis=1, dtype=np.int64)


# ---------------------------------------------------------------------- the NETWORKS domain
#: The files the NETWORKS domain reads from its data directory (``docs/domains.md``).
LAYOUT = (
    "a TUDataset (NAME_A.txt, NAME_graph_indicator.txt, NAME_node_labels.txt, NAME_edge_attributes.txt), "
    "go_pretrain.tsv and go_finetune.tsv (graph id<TAB>GO terms)"
)


@dataclass(frozen=True)
class NetworkData(DomainData):
    """:class:`DomainData` whose samples are graphs.

    Attributes (besides ``ids``, ``texts`` = the ids, ``tasks``):
        graphs: ``(n,)`` :class:`torch_geometric.data.Data`, node codes ``x`` in ``[0, len(code_names))``.
        go_terms: ``(n,)`` int64 arrays, each graph's pre-training GO term columns (``G_PT``'s labels).
        code_names: the node attribute names, code ``c`` is ``code_names[c]``.
        edge_code_names: the edge attribute rows (Hu et al.'s 7 interaction types), edge code ``c`` is
            ``edge_code_names[c]``; empty when the graphs have no edge attributes.
    """

    graphs: list = field(default_factory=list)
    go_terms: list = field(default_factory=list)
    code_names: tuple[str, ...] = field(default=(), metadata=SHARED)
    edge_code_names: tuple[str, ...] = field(default=(), metadata=SHARED)

    @property
    def samples(self) -> list:
        return self.graphs


def load_networks(directory: Path) -> NetworkData:
    """The ego-networks, their pre-training GO terms and the ``go`` task (see :data:`LAYOUT`).

    Task ``go`` (multi-label, macro AUROC): the graphs ``go_finetune.tsv`` lists, one column per term
    it names. A graph that ``go_pretrain.tsv`` does not list has no pre-training terms.
    """
    dataset = read_tu_graphs(directory)
    pretrain_terms = read_term_sets(directory / "go_pretrain.tsv", dataset.ids).matrix
    task_terms = read_term_sets(directory / "go_finetune.tsv", dataset.ids)
    labelled = np.flatnonzero(task_terms.listed).astype(np.int64)
    if labelled.size == 0:
        raise SiptError(f"{directory / 'go_finetune.tsv'} labels no graph; list the task's graphs with their GO terms")
    task = Task("go", "multilabel", labelled, task_terms.matrix[labelled].toarray().astype(np.int64), task_terms.terms)
    rows = [
        pretrain_terms.indices[pretrain_terms.indptr[k] : pretrain_terms.indptr[k + 1]].astype(np.int64)
        for k in range(len(dataset.ids))
    ]
    return NetworkData(
        list(dataset.ids),
        list(dataset.ids),
        {"go": task},
        graphs=dataset.graphs,
        go_terms=rows,
        code_names=dataset.code_names,
        edge_code_names=dataset.edge_code_names,
    )


def go_hamming_graph(data: NetworkData, seed: int = 0) -> PretrainingGraph:
    """The paper's ``G_PT``: graphs whose pre-training GO term sets differ in at most 9 terms (``seed`` unused)."""
    n_terms = max((int(row.max()) + 1 for row in data.go_terms if row.size), default=0)
    indptr = np.concatenate([[0], np.cumsum([row.size for row in data.go_terms])])
    columns = np.concatenate(data.go_terms) if data.go_terms else np.empty(0, np.int64)
    labels = sp.csr_array((np.ones(columns.size, dtype=np.int32), columns, indptr), shape=(len(data.go_terms), n_terms))
    return hamming_graph(labels)


def gin_source(init: str, data: NetworkData):
    """``--init gin``: a fresh GIN sized for the data's node codes and edge codes (edge attributes, when the
    graphs have them, make attribute masking mask edges; the paper trains NETWORKS from scratch)."""
    from sipt_lab.models.graph_encoder import GRAPH_INIT, GINConfig, GraphInit

    if init != GRAPH_INIT:
        raise SiptError(f"networks samples are graphs; use DomainRunConfig.init {GRAPH_INIT} (got {init!r})")
    return GraphInit(GINConfig(n_values=len(data.code_names), n_edge_values=len(data.edge_code_names)))


NETWORKS = Domain(
    name="networks",
    description="PPI ego-networks (graphs) linked by GO-term Hamming distance <= 9, multi-label GO task",
    load=load_networks,
    graphs={"go-hamming": go_hamming_graph},
    default_task="go",
    layout=LAYOUT,
    default_init="gin",
    encoder_source=gin_source,
)
