"""Radius graphs (:func:`sipt_lab.evaluation.radius_recovery.radius_graph`) by blocked neighbour
search, on this machine in bounded memory or on a Dask cluster.

One k-d tree holds the ``n`` points (``O(n H)``); the points are then queried in blocks of
``block_rows`` rows against it (``query_ball_point``, the same inclusive ``<= radius`` test as the
tree's ``query_pairs``), and each block keeps its pairs ``i < j``. Working memory is one block's
neighbour lists, so the peak is the tree plus the edges found, never an ``n x n`` matrix or all
directed pairs at once. On Dask the tree is sent once to every worker and each block is a task;
the client gathers the edges. Both give exactly the single-machine graph.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from sipt_lab.core.errors import SiptError
from sipt_lab.evaluation.radius_recovery import check_radius_query
from sipt_lab.graphs.consistency_dask import dask_client
from sipt_lab.graphs.consistency_job import SCHEDULER_TIMEOUT
from sipt_lab.graphs.consistency_stream import check_workers
from sipt_lab.graphs.graph import PretrainingGraph

#: Query points per block.
DEFAULT_BLOCK_ROWS = 1 << 14


def blocked_radius_graph(embeddings, radius: float, *, block_rows: int = DEFAULT_BLOCK_ROWS) -> PretrainingGraph:
    """Graph on the ``n`` rows of ``(n, H)`` ``embeddings`` linking pairs at Euclidean distance
    ``<= radius``, found by querying blocks of ``block_rows`` points against one k-d tree."""
    tree, z, block_rows = _tree(embeddings, radius, block_rows)
    pairs = [
        block_pairs(tree, start, min(start + block_rows, len(z)), radius) for start in range(0, len(z), block_rows)
    ]
    return _graph(pairs, len(z))


def dask_radius_graph(
    embeddings,
    radius: float,
    *,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    scheduler: str | None = None,
    workers: int | None = None,
    connect_timeout: float = SCHEDULER_TIMEOUT,
) -> PretrainingGraph:
    """:func:`blocked_radius_graph` with each block a task on the Dask scheduler at ``scheduler``,
    or on a ``LocalCluster`` of ``workers`` workers (default: one per core) when None."""
    tree, z, block_rows = _tree(embeddings, radius, block_rows)
    with dask_client(scheduler, check_workers(workers), connect_timeout) as client:
        shared = client.scatter(tree, broadcast=True)
        starts = range(0, len(z), block_rows)
        tasks = [client.submit(block_pairs, shared, a, min(a + block_rows, len(z)), radius, pure=False) for a in starts]
        pairs = client.gather(tasks)
    return _graph(pairs, len(z))


def block_pairs(tree: cKDTree, start: int, stop: int, radius: float) -> np.ndarray:
    """``(m, 2)`` int64 pairs ``(i, j)``, ``start <= i < stop``, ``i < j``, of the tree's points
    within ``radius`` of each other."""
    neighbours = tree.query_ball_point(tree.data[start:stop], radius)
    lengths = np.fromiter(map(len, neighbours), np.int64, count=len(neighbours))
    j = np.concatenate([np.asarray(row, np.int64) for row in neighbours]) if lengths.sum() else np.zeros(0, np.int64)
    i = np.repeat(np.arange(start, stop, dtype=np.int64), lengths)
    keep = i < j
    return np.stack([i[keep], j[keep]], axis=1)


def _tree(embeddings, radius: float, block_rows: int) -> tuple[cKDTree, np.ndarray, int]:
    z = check_radius_query(embeddings, radius)
    if isinstance(block_rows, bool) or not isinstance(block_rows, (int, np.integer)) or block_rows < 1:
        raise SiptError(f"block_rows must be a positive number of points, got {block_rows!r}; pass e.g. 16384")
    return cKDTree(z), z, int(block_rows)


def _graph(pairs: list[np.ndarray], n: int) -> PretrainingGraph:
    edges = np.concatenate(pairs) if pairs else np.zeros((0, 2), np.int64)
    return PretrainingGraph.from_edges(edges[:, 0], edges[:, 1], n)
