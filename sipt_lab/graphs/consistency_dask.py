"""Local consistency on a Dask cluster: the computation of :mod:`sipt_lab.graphs.consistency_stream`
with ``dask.dataframe`` partitions in place of chunks and a shuffle in place of spill files.

The edges are a ``dask.dataframe`` (``read_parquet`` over a Parquet file or directory; byte-range
partitions of a text file read by the same Arrow reader as the stream engine, one partition per
``.gz`` file). Each partition maps its ids to node numbers through the labels, scattered once to
every worker, and emits its directed records (:func:`~sipt_lab.graphs.consistency_stream.directed_keys`);
the records are shuffled by source node, so that every record of a node and every copy of a
repeated edge meet in one partition, where :func:`~sipt_lab.graphs.consistency_stream.node_counts`
counts them. The client gathers the ``(n,)`` per-node counts and computes the report as the other
engines do, so the numbers are identical. Memory: the client holds ``O(n)`` (labels and counts);
a worker holds one input partition and one shuffled partition at a time.
"""

from __future__ import annotations

import logging
import math
import os
import re
import socket
from contextlib import contextmanager

import numpy as np
import pandas as pd

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.consistency_kernel import check_ties
from sipt_lab.graphs.consistency_stream import (
    DEFAULT_CHUNK_EDGES,
    PARTITION_CHUNKS,
    EdgeTally,
    FileConsistency,
    NodeCounts,
    check_workers,
    node_counts,
)
from sipt_lab.graphs.edge_tables import (
    TEXT_BYTES_PER_EDGE,
    NodeIndex,
    check_chunk_edges,
    estimate_edges,
    is_parquet,
    parquet_dataset,
    read_node_index,
    read_text_range,
)

#: Seconds to wait for a Dask scheduler before giving up.
CONNECT_TIMEOUT_S = 10
#: Largest first frame a Dask scheduler's handshake starts with, in bytes (it is a few hundred).
MAX_HANDSHAKE_BYTES = 1 << 20


def _empty(**dtypes) -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series([], dtype=dtype) for name, dtype in dtypes.items()})


_TALLY = _empty(rows="int64", self_loops="int64", unknown="int64")
_RECORDS = _empty(src="int64", dst="int64")
_COUNTS = _empty(node="int64", same="int32", n_tied="int32", degree="int64")


def dask_consistency(
    edges,
    labels,
    ties: str = "split",
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    chunk_edges: int | None = None,
    edge_columns=("u", "v"),
    label_columns=("node", "label"),
    connect_timeout: float = CONNECT_TIMEOUT_S,
) -> FileConsistency:
    """:func:`sipt_lab.graphs.consistency.consistency_from_files` on the Dask cluster at ``scheduler``
    (``tcp://host:8786``), or on a ``LocalCluster`` of ``workers`` threads (default: one per
    available core) when None; a scheduler
    not reached within ``connect_timeout`` seconds is a SiptError. ``chunk_edges`` sizes the text
    partitions (about 12 bytes per edge) and the shuffled partitions (``4 * chunk_edges`` records)."""
    check_ties(ties)
    dd = _import_dask()
    chunk = check_chunk_edges(DEFAULT_CHUNK_EDGES if chunk_edges is None else chunk_edges)
    workers = check_workers(workers)
    index = read_node_index(labels, label_columns)
    with dask_client(scheduler, workers, connect_timeout) as client:
        frame = _edge_frame(dd, edges, chunk, edge_columns)
        shared = client.scatter(index, broadcast=True)
        mapped = frame.map_partitions(_map_ids, shared, meta=_RECORDS)
        tally = mapped.map_partitions(_tally_rows, meta=_TALLY).sum()
        records = mapped.map_partitions(_both_directions, meta=_RECORDS)
        n_parts = max(frame.npartitions, math.ceil(2 * estimate_edges(edges) / (PARTITION_CHUNKS * chunk)))
        counts = records.shuffle(on="src", npartitions=n_parts).map_partitions(_node_counts, shared, meta=_COUNTS)
        tally, counts = client.compute([tally, counts], sync=True)
        result = EdgeTally(int(tally["rows"]), int(tally["self_loops"]), int(tally["unknown"]))
    node = NodeCounts.zeros(index.n_nodes)
    node.add(
        counts["node"].to_numpy(), counts["same"].to_numpy(), counts["n_tied"].to_numpy(), counts["degree"].to_numpy()
    )
    return node.result(result, index.n_classes, ties)


def _import_dask():
    try:
        import dask.dataframe as dd
        import distributed  # noqa: F401
    except ImportError:
        raise SiptError("the dask engine needs dask and distributed; pip install 'sipt-lab[dask]'") from None
    return dd


@contextmanager
def dask_client(scheduler: str | None, workers: int, timeout: float):
    """A ``distributed.Client`` of the scheduler at ``scheduler``, or of a ``LocalCluster`` of
    ``workers`` single-thread workers when None; a one-line SiptError when the scheduler does not
    answer within ``timeout`` seconds or dask is not installed."""
    _import_dask()
    from distributed import Client, LocalCluster

    if scheduler is None:
        # Threads: the heavy steps (Arrow parsing, numpy sorts, the numba kernel) release the GIL.
        with (
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=False,
                dashboard_address=None,
                silence_logs=logging.CRITICAL,  # a task's error is raised here, one line, not logged
            ) as cluster,
            Client(cluster) as client,
        ):
            yield client
        return
    check_scheduler_answers(scheduler, timeout)
    try:
        client = Client(scheduler, timeout=timeout)
    except (OSError, TimeoutError, ValueError, TypeError) as error:
        raise SiptError(
            f"cannot reach the Dask scheduler at {scheduler} within {timeout:g} s "
            f"({str(error).splitlines()[0][:120]}); check the address and that the scheduler "
            "runs, or leave out the scheduler for a LocalCluster"
        ) from None
    with client:
        yield client


def check_scheduler_answers(scheduler: str, timeout: float) -> None:
    """A one-line SiptError when something other than a Dask scheduler listens at the TCP address
    ``scheduler`` (``tcp://host:port`` or ``host:port``): a scheduler sends its handshake first, a
    frame of a few hundred bytes whose length leads it, while an HTTP server sends nothing (the
    client would wait past ``timeout`` seconds) and other servers send bytes the client reads as a
    length of exabytes. Other protocols, and addresses nothing listens at, are left to the client."""
    address = scheduler.removeprefix("tcp://")
    host, _, port = address.rpartition(":")
    if "://" in address or not re.fullmatch(r"[0-9]{1,5}", port):
        return
    try:
        with socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout=timeout) as conn:
            conn.settimeout(timeout)
            head = b""
            while len(head) < 8 and (part := conn.recv(8 - len(head))):
                head += part
    except TimeoutError:
        head = None
    except OSError:
        return  # refused or unreachable: the client says so
    if head is None or len(head) < 8 or int.from_bytes(head, "little") > MAX_HANDSHAKE_BYTES:
        what = "sends nothing within the timeout (an HTTP server?)" if head is None else "answers in another protocol"
        raise SiptError(
            f"the server at {scheduler} {what}, not as a Dask scheduler; check the address and port "
            "(a scheduler listens on 8786 unless told otherwise)"
        )


def _edge_frame(dd, edges, chunk: int, columns):
    """Dask dataframe of the raw ids, columns ``u`` and ``v``."""
    if is_parquet(edges):
        parquet_dataset(edges, "edges", columns)  # a one-line error for missing columns
        frame = dd.read_parquet(str(edges), columns=list(columns))
        return frame.rename(columns=dict(zip(columns, ("u", "v"))))
    if not os.path.isfile(edges):
        raise SiptError(f"edges file {edges} does not exist or is not a file; check the path")
    size = os.path.getsize(edges)
    step = size if str(edges).endswith(".gz") else chunk * TEXT_BYTES_PER_EDGE
    ranges = [(start, start + step) for start in range(0, max(size, 1), max(step, 1))]
    meta = read_text_range(edges, 0, 0).to_pandas()
    return dd.from_map(_read_range, ranges, path=str(edges), meta=meta, enforce_metadata=False)


def _read_range(byte_range, path):
    from sipt_lab.graphs.edge_tables import read_table

    if path.endswith(".gz"):
        return read_table(path, "edges", None).to_pandas()
    return read_text_range(path, *byte_range).to_pandas()


def _map_ids(part: pd.DataFrame, index: NodeIndex) -> pd.DataFrame:
    """Node numbers of a partition's ids (-1 where unlabelled)."""
    return pd.DataFrame({"src": index.lookup(part["u"]), "dst": index.lookup(part["v"])})


def _tally_rows(part: pd.DataFrame) -> pd.DataFrame:
    tally = EdgeTally()
    tally.add(part["src"].to_numpy(), part["dst"].to_numpy())
    return pd.DataFrame({"rows": [tally.rows], "self_loops": [tally.self_loops], "unknown": [tally.unknown]})


def _both_directions(part: pd.DataFrame) -> pd.DataFrame:
    u, v = part["src"].to_numpy(), part["dst"].to_numpy()
    keep = EdgeTally().add(u, v)
    u, v = u[keep], v[keep]
    return pd.DataFrame({"src": np.concatenate([u, v]), "dst": np.concatenate([v, u])})


def _node_counts(part: pd.DataFrame, index: NodeIndex) -> pd.DataFrame:
    n = np.int64(index.n_nodes)
    nodes, same, n_tied, degree = node_counts(part["src"].to_numpy() * n + part["dst"].to_numpy(), index)
    return pd.DataFrame({"node": nodes, "same": same, "n_tied": n_tied, "degree": degree})
