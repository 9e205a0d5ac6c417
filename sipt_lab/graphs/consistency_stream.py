"""Local consistency of a labelled graph read from disk in bounded memory (out of core).

The in-memory path (:func:`sipt_lab.graphs.tsv.load_graph_tsv` + :func:`~sipt_lab.graphs.consistency.consistency_report`)
holds every edge. Here the edges are streamed in chunks (:func:`sipt_lab.graphs.edge_tables.edge_chunks`)
and each chunk becomes *directed records*: for every edge ``{a, b}`` between labelled nodes with
``a != b`` the two int64 keys ``a * n + b`` and ``b * n + a`` (source, neighbour). Records are
appended to spill files partitioned by source-node range, so every record of a node, and every
copy of a repeated edge, lands in one partition, whatever chunk it came from. Each partition is
then loaded alone, sorted and deduplicated (exactly the graph's distinct edges, seen from their
source), and its rows are counted by the same compiled per-row kernel as the in-memory path
(:func:`~sipt_lab.graphs.consistency_kernel.row_label_counts`), giving every
node's degree, same-label neighbour count and number of tied plurality labels. The report is then
computed from those ``(n,)`` arrays by the same code as in memory, so the numbers are identical,
ties included. Self-loops and duplicate edges are dropped and counted as in memory; an edge line
naming a node without a label is left out and counted, as in memory (the labels may cover a subset).

Both passes run in ``workers`` threads (Arrow's kernels, numpy's sorts and the counting kernel
release the GIL): while this thread reads the next chunk, up to ``workers`` chunks are mapped and
partitioned, each appended to the spill files under a lock, and their tallies are merged in file
order; then each thread loads, counts and deletes one partition at a time. Every node belongs to
one partition, so the threads never write the same node's counts.

Memory bound, for ``n`` labelled nodes, chunks of ``c`` edges and ``w`` workers: ``O(n)`` for the
labels, the per-node counts and the report (about 55 bytes per node at the peak), plus ``O(w c)``
for ``w + 1`` chunks in flight (about 100 bytes per edge, Arrow's reader block included), plus ``w``
partitions: partitions are sized to hold about ``4c / w`` records and one over ``8c / w`` is
re-split by node range before it is loaded, so at most ``max(8c, w * largest degree)`` records of
8 bytes in all, about five times over while sorted and split. Never ``O(edges)``. Spill files take
16 bytes per edge on disk and are deleted at the end.
"""

from __future__ import annotations

import functools
import math
import os
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.consistency_kernel import (
    ConsistencyReport,
    check_labelled_edges,
    check_ties,
    node_scores,
    report_from_counts,
    row_label_counts,
)
from sipt_lab.graphs.edge_tables import (
    NodeIndex,
    as_arrow,
    check_chunk_edges,
    edge_chunks,
    estimate_edges,
    read_node_index,
)

#: Default number of edges per chunk.
DEFAULT_CHUNK_EDGES = 1 << 21
#: Most spill files open at once (one per partition).
MAX_PARTITIONS = 256
#: Records per partition, in chunks: a larger partition is re-split before it is loaded.
PARTITION_CHUNKS = 4


@dataclass(frozen=True)
class FileConsistency:
    """A :class:`~sipt_lab.graphs.consistency_kernel.ConsistencyReport` of a graph read from files, with what the
    reader dropped (self-loops, repeated undirected edges) and left out (edge lines naming a node
    without a label)."""

    report: ConsistencyReport
    dropped_self_loops: int
    dropped_duplicates: int
    unlabelled_edges: int = 0

    def to_dict(self) -> dict:
        """JSON-ready dict: the report's fields and the three counts of edge lines not in the graph."""
        return {
            **self.report.to_dict(),
            "dropped_self_loops": self.dropped_self_loops,
            "dropped_duplicates": self.dropped_duplicates,
            "unlabelled_edges": self.unlabelled_edges,
        }


@dataclass
class EdgeTally:
    """What the reading pass saw: data rows, self-loops and rows naming unlabelled nodes."""

    rows: int = 0
    self_loops: int = 0
    unknown: int = 0
    first_null: int | None = None  # 1-based row of the first row with a null id

    def add(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Count the rows with node numbers ``u``, ``v`` (``(m,)`` int64, -1 where unlabelled);
        returns the ``(m,)`` bool mask of the edges to keep (labelled ends, not a self-loop)."""
        unknown = (u < 0) | (v < 0)
        loops = ~unknown & (u == v)
        self.rows += int(u.size)
        self.unknown += int(unknown.sum())
        self.self_loops += int(loops.sum())
        return ~unknown & ~loops

    def extend(self, later: EdgeTally) -> None:
        """Add the tally of the rows that follow these."""
        if self.first_null is None and later.first_null is not None:
            self.first_null = self.rows + later.first_null
        self.rows += later.rows
        self.self_loops += later.self_loops
        self.unknown += later.unknown

    def check_nulls(self, edges) -> None:
        """SiptError naming the first edge with a null node id (an empty Parquet or CSV cell): a
        broken row, not a node without a label (a node may be named 'None')."""
        if self.first_null is not None:
            raise SiptError(
                f"{edges}: edge {self.first_null}: a node id is null (an empty cell); fill it in or remove the edge"
            )


@dataclass
class NodeCounts:
    """Per-node results of the counting pass, ``(n,)`` each: neighbours sharing the node's label
    (int32), labels tied for the plurality when the node's is one of them, else 0 (int32), degree
    (int64)."""

    same: np.ndarray
    n_tied: np.ndarray
    degree: np.ndarray = field(repr=False)

    @classmethod
    def zeros(cls, n: int) -> NodeCounts:
        return cls(np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int64))

    def add(self, nodes, same, n_tied, degree) -> None:
        """Store the counts of ``nodes`` (each node is counted in one block only)."""
        self.same[nodes], self.n_tied[nodes], self.degree[nodes] = same, n_tied, degree

    def result(self, tally: EdgeTally, n_classes: int, ties: str) -> FileConsistency:
        n_edges = int(self.degree.sum()) // 2
        check_labelled_edges(n_edges, tally.unknown)
        report = report_from_counts(
            node_scores(self.n_tied, self.degree, ties), self.same, self.degree, n_edges, n_classes, ties
        )
        return FileConsistency(
            report, tally.self_loops, tally.rows - tally.unknown - tally.self_loops - n_edges, tally.unknown
        )


def stream_consistency(
    edges,
    labels,
    ties: str = "split",
    *,
    chunk_edges: int | None = None,
    edge_columns=("u", "v"),
    label_columns=("node", "label"),
    spill_dir=None,
    workers: int | None = None,
) -> FileConsistency:
    """:func:`sipt_lab.graphs.consistency.consistency_from_files` on this machine, in bounded memory (see
    the module doc): ``chunk_edges`` edges per chunk (default :data:`DEFAULT_CHUNK_EDGES`), spill
    files in a temporary directory under ``spill_dir`` (default: the system's), chunks spilled and
    partitions counted by ``workers`` threads (default: :func:`available_cores`; at most one per
    chunk or partition)."""
    check_ties(ties)
    chunk = check_chunk_edges(DEFAULT_CHUNK_EDGES if chunk_edges is None else chunk_edges)
    workers = check_workers(workers)
    index = read_node_index(labels, label_columns)
    part_records = max(1, PARTITION_CHUNKS * chunk // workers)
    n_edges = estimate_edges(edges)
    n_parts = min(MAX_PARTITIONS, max(1, math.ceil(2 * n_edges / part_records)))
    tally = EdgeTally()
    counts = NodeCounts.zeros(index.n_nodes)
    with tempfile.TemporaryDirectory(prefix="sipt-lab-spill-", dir=spill_dir) as tmp:
        spill = Spill(tmp, index.n_nodes, 0, index.n_nodes, n_parts)
        spill_ids = functools.partial(spill_chunk, index=index, spill=spill)
        chunks = edge_chunks(edges, chunk, edge_columns)
        for chunk_tally in bounded_map(spill_ids, chunks, min(workers, math.ceil(n_edges / chunk))):
            tally.extend(chunk_tally)
        spill.close()
        count = functools.partial(count_partition, index=index)
        for result in bounded_map(count, spill.partitions(2 * part_records), min(workers, n_parts)):
            counts.add(*result)
    tally.check_nulls(edges)
    return counts.result(tally, index.n_classes, ties)


def available_cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def check_workers(workers) -> int:
    """``workers`` as an int (None: :func:`available_cores`) if it is a positive whole number, else
    a one-line SiptError."""
    if workers is None:
        return available_cores()
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise SiptError(f"ConsistencyJob.workers must be a positive number of workers, got {workers!r}; pass e.g. 2")
    return int(workers)


def bounded_map(fn: Callable, items: Iterable, workers: int) -> Iterator:
    """``fn`` of each of ``items``, in order, computed by ``workers`` threads with at most
    ``workers`` items in flight (so at most that many items' memory at once); in this thread when
    ``workers`` is 1."""
    if workers <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="sipt-lab-count") as pool:
        pending: deque = deque()
        for item in items:
            if len(pending) >= workers:
                yield pending.popleft().result()
            pending.append(pool.submit(fn, item))
        while pending:
            yield pending.popleft().result()


def count_partition(path, index: NodeIndex):
    """:func:`node_counts` of the records in the spill file ``path``, which is deleted."""
    keys = np.fromfile(path, np.int64)
    os.remove(path)
    return node_counts(keys, index)


def spill_chunk(ids, index: NodeIndex, spill: Spill) -> EdgeTally:
    """Append the :func:`directed_keys` of one chunk (the pair of id arrays ``ids``) to ``spill``;
    returns the chunk's tally (row numbers counted from the chunk's first row)."""
    tally = EdgeTally()
    spill.add(directed_keys(*ids, index, tally))
    return tally


def directed_keys(u_ids, v_ids, index: NodeIndex, tally: EdgeTally) -> np.ndarray:
    """:func:`pair_keys` of the edges of a chunk (id arrays ``u_ids``, ``v_ids``) that join two
    distinct labelled nodes; ``tally`` counts the chunk's rows, self-loops and unlabelled ends."""
    u, v = index.lookup(u_ids), index.lookup(v_ids)
    rows = tally.rows
    keep = tally.add(u, v)
    if tally.first_null is None and tally.unknown:
        nulls = np.flatnonzero(_is_null(u_ids) | _is_null(v_ids))
        if nulls.size:
            tally.first_null = rows + int(nulls[0]) + 1
    return pair_keys(u[keep], v[keep], index.n_nodes)


def _is_null(ids) -> np.ndarray:
    """``(m,)`` bool: which ids of a chunk are null (an empty Parquet or CSV cell)."""
    return as_arrow(ids).is_null().to_numpy(zero_copy_only=False)


def pair_keys(u: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """``(2k,)`` int64 directed records ``src * n + dst`` of both directions of the ``k`` edges
    ``(u, v)`` (node numbers, ``u != v``)."""
    n = np.int64(n)
    return np.concatenate([u * n + v, v * n + u])


def node_counts(keys: np.ndarray, index: NodeIndex):
    """``(nodes, same, n_tied, degree)`` of the source nodes of ``keys``, directed records that
    hold every record of their sources (repeats allowed); each output is ``(k,)`` over the ``k``
    distinct sources, ``nodes`` sorted."""
    n = np.int64(index.n_nodes)
    keys = np.sort(keys)
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.size else keys
    src = keys // n
    dst = keys - src * n
    first = np.concatenate([[True], src[1:] != src[:-1]]) if src.size else np.zeros(0, bool)
    starts = np.flatnonzero(first)
    nodes = src[starts]
    indptr = np.append(starts, src.size)
    same, n_tied = row_label_counts(indptr, dst, index.codes, index.codes[nodes], index.n_classes)
    return nodes, same, n_tied, np.diff(indptr)


class Spill:
    """Directed records appended to one file per source-node range of ``[lo, hi)`` (``n_parts``
    equal ranges), in a new directory under ``directory``; several threads may add at once."""

    def __init__(self, directory, n: int, lo: int, hi: int, n_parts: int):
        self.directory, self.n = str(directory), n
        self.bounds = lo + (hi - lo) * np.arange(n_parts + 1, dtype=np.int64) // n_parts
        own = tempfile.mkdtemp(prefix="spill-", dir=directory)
        self.paths = [os.path.join(own, f"part-{k}.i64") for k in range(n_parts)]
        self.handles = [open(path, "wb") for path in self.paths]  # noqa: SIM115 (closed by close())
        self.lock = threading.Lock()

    def add(self, keys: np.ndarray) -> None:
        part = np.searchsorted(self.bounds[1:-1] * np.int64(self.n), keys, side="right")
        order = np.argsort(part.astype(np.uint16), kind="stable")  # a radix sort: linear time
        ends = np.cumsum(np.bincount(part, minlength=len(self.handles)))
        keys = keys[order]
        with self.lock:
            for handle, start, end in zip(self.handles, np.concatenate([[0], ends[:-1]]), ends):
                if end > start:
                    keys[start:end].tofile(handle)

    def close(self) -> None:
        for handle in self.handles:
            handle.close()

    def partitions(self, max_records: int) -> Iterator[str]:
        """The non-empty spill files, each of at most ``max_records`` records (a larger one is
        re-split by node range first, unless it holds a single node); empty ones are deleted."""
        for k, path in enumerate(self.paths):
            size = os.path.getsize(path) // 8
            lo, hi = int(self.bounds[k]), int(self.bounds[k + 1])
            if size > max_records and hi - lo > 1:
                sub = Spill(
                    self.directory, self.n, lo, hi, min(hi - lo, MAX_PARTITIONS, 2 * math.ceil(size / max_records))
                )
                with open(path, "rb") as handle:
                    while (keys := np.fromfile(handle, np.int64, count=max_records)).size:
                        sub.add(keys)
                sub.close()
                os.remove(path)
                yield from sub.partitions(max_records)
            elif size:
                yield path
            else:
                os.remove(path)
