"""The NETWORKS Hamming graph (:func:`sipt_lab.domains.networks.hamming_graph`) on a Dask cluster,
as joins and group-bys over partitioned ``(sample, label)`` rows.

Samples ``i``, ``j`` with label sets of sizes ``s <= t`` are linked when ``s + t - 2 |shared| <= D``.
Pairs with ``s + t <= D`` are edges whatever their labels and come from the ``(n,)`` label counts
alone (:func:`~sipt_lab.domains.networks.small_count_pairs`). Every other edge shares at least
``ceil((s + t - D) / 2) >= 1`` labels, and by the prefix-filter lemma the ``D + 1`` globally rarest
labels of ``i`` and of ``j`` then share one (both prefixes are at most ``D + 1`` long for
``t - s <= D``). So, with every step a Dask join, group-by or shuffle:

1. the label frequencies (a group-by) give every label a rank, rarest first;
2. the rows are shuffled by sample and each sample keeps its ``D + 1`` rarest labels (its prefix);
3. the prefixes are shuffled by label and joined with themselves: the candidate pairs, once each;
4. the candidates whose counts cannot be within ``D`` are dropped, the others are joined with the
   labels of ``i`` and then of ``(j, label)``; a group-by counts their shared labels, which gives the
   exact distance.

The client holds ``O(n)`` counts, ``O(L)`` label ranks and the resulting edges; a worker holds
partitions. The single-machine builder's sharper prefixes (which depend on the two counts) are
not used: one global prefix per sample is what a join can use, at the cost of more candidates
when common labels enter short label sets' prefixes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sipt_lab.core.errors import SiptError
from sipt_lab.domains.networks import DEFAULT_MAX_DISTANCE, check_max_distance, small_count_pairs
from sipt_lab.graphs.consistency_dask import dask_client
from sipt_lab.graphs.consistency_job import SCHEDULER_TIMEOUT
from sipt_lab.graphs.consistency_stream import check_workers
from sipt_lab.graphs.graph import PretrainingGraph

_PAIRS = pd.DataFrame({"i": pd.Series([], dtype="int64"), "j": pd.Series([], dtype="int64")})


def label_rows(labels) -> pd.DataFrame:
    """The ``(sample, label)`` rows (int64 columns) of the non-zeros of an ``(n, L)`` 0/1 matrix."""
    import scipy.sparse as sp

    coo = sp.coo_array(labels)
    return pd.DataFrame({"sample": coo.row.astype(np.int64), "label": coo.col.astype(np.int64)})[coo.data != 0]


def dask_hamming_graph(
    rows,
    n_samples: int,
    max_distance: int = DEFAULT_MAX_DISTANCE,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    connect_timeout: float = SCHEDULER_TIMEOUT,
) -> PretrainingGraph:
    """:func:`~sipt_lab.domains.networks.hamming_graph` of the samples ``0..n_samples-1`` whose labels
    are the ``rows``: a ``dask.dataframe`` (or pandas) with columns ``sample`` (int in
    ``[0, n_samples)``) and ``label`` (any hashable, e.g. GO term ids), one row per (sample, label),
    repeats allowed; samples without rows have no labels. Runs on the Dask scheduler at
    ``scheduler``, or a ``LocalCluster`` of ``workers`` workers (default: one per core) when None."""
    import dask.dataframe as dd

    D = check_max_distance(max_distance)
    n = int(n_samples)
    with dask_client(scheduler, check_workers(workers), connect_timeout) as client:
        frame = rows if isinstance(rows, dd.DataFrame) else dd.from_pandas(rows, npartitions=2)
        missing = {"sample", "label"} - set(frame.columns)
        if missing:
            raise SiptError(
                f"the label rows have no column {', '.join(sorted(missing))} (columns: "
                f"{', '.join(map(str, frame.columns))}); give one (sample, label) row per label"
            )
        frame = frame[["sample", "label"]].drop_duplicates()
        counts, frequency = client.compute([frame.groupby("sample").size(), frame.groupby("label").size()], sync=True)
        _check_samples(counts.index.to_numpy(), n)
        count = np.zeros(n, np.int64)
        count[counts.index.to_numpy()] = counts.to_numpy()
        ranks = frequency.reset_index(name="frequency").sort_values(["frequency", "label"], kind="stable")
        ranks = ranks.assign(rank=np.arange(len(ranks), dtype=np.int64))[["label", "rank"]]
        ranked = frame.merge(ranks, on="label")  # a broadcast join: ranks is a pandas frame of L rows
        prefixes = ranked.shuffle(on="sample").map_partitions(_prefix, D + 1, meta=ranked._meta)
        shared_count = client.scatter(count, broadcast=True)
        pairs = (
            prefixes.shuffle(on="rank")
            .map_partitions(_prefix_pairs, meta=_PAIRS)
            .drop_duplicates()
            .map_partitions(_possible, shared_count, D, meta=_PAIRS)
        )
        with_labels = pairs.merge(frame, left_on="i", right_on="sample")[["i", "j", "label"]]
        both = with_labels.merge(frame, left_on=["j", "label"], right_on=["sample", "label"])
        shared = client.compute(both.groupby(["i", "j"]).size(), sync=True)
    i, j = (shared.index.get_level_values(k).to_numpy(np.int64) for k in ("i", "j"))
    close = count[i] + count[j] - 2 * shared.to_numpy() <= D
    edges = np.concatenate([small_count_pairs(count, D), np.stack([i[close], j[close]], axis=1)])
    return PretrainingGraph.from_edges(edges[:, 0], edges[:, 1], n)


def _check_samples(samples: np.ndarray, n: int) -> None:
    if samples.size and (samples.min() < 0 or samples.max() >= n):
        raise SiptError(f"sample ids must be in [0, {n}), got {samples.min()}..{samples.max()}; number the samples")


def _prefix(part: pd.DataFrame, length: int) -> pd.DataFrame:
    """Each sample's ``length`` rarest labels (every row of a sample is in this partition)."""
    return part.sort_values(["sample", "rank"], kind="stable").groupby("sample").head(length)


def _prefix_pairs(part: pd.DataFrame) -> pd.DataFrame:
    """Pairs ``i < j`` of samples sharing a prefix label (every row of a label is in this partition)."""
    both = part[["sample", "rank"]].merge(part[["sample", "rank"]], on="rank", suffixes=("_i", "_j"))
    both = both[both["sample_i"] < both["sample_j"]]
    return pd.DataFrame({"i": both["sample_i"].to_numpy(np.int64), "j": both["sample_j"].to_numpy(np.int64)})


def _possible(part: pd.DataFrame, count: np.ndarray, D: int) -> pd.DataFrame:
    """The pairs whose label counts allow a distance ``<= D`` and are not already small pairs."""
    s, t = count[part["i"].to_numpy()], count[part["j"].to_numpy()]
    return part[(np.abs(s - t) <= D) & (s + t > D)]
