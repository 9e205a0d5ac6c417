"""Grouping variable-length sequences into a few padded buckets.

Padding every sequence of a batch to its longest wastes the slots between each one's end and the
longest; splitting the batch into a few groups of similar length, each padded to its own longest,
saves most of them at the price of one more kernel call per group. :func:`length_buckets` chooses
the split exactly (dynamic programming over the sorted lengths) for a cost that is linear in the
padded length (a layer over every token slot) or quadratic (attention scores).
"""

from __future__ import annotations

import numpy as np

#: An extra bucket must save more than this share of the real (unpadded) cost.
BUCKET_PENALTY = 0.05


def length_buckets(lengths: np.ndarray, max_buckets: int, power: int = 1) -> list[np.ndarray]:
    """Split sequences into at most ``max_buckets`` groups of consecutive lengths, minimising padding.

    A group of ``size`` sequences padded to its longest ``longest`` costs ``size × longest**power``
    (``power`` 1: token slots; 2: attention scores); the split minimises the total cost plus
    :data:`BUCKET_PENALTY` × ``sum(lengths**power)`` per extra group (each group is one more pass).

    Args:
        lengths: ``(U,)`` tokens per sequence.

    Returns:
        Index arrays into ``lengths``, shortest group first, each sorted by length; together a
        permutation of ``0..U-1``. A single group is ``[0..U-1]`` in order.
    """
    order = np.argsort(lengths, kind="stable")
    if max_buckets <= 1 or len(order) < 2:
        return [np.arange(len(order))]
    # cut only between distinct lengths: moving a group's members of its lower neighbour's longest
    # length down to that neighbour never costs more, so the split over distinct lengths is optimal
    distinct, counts = np.unique(lengths, return_counts=True)
    ends = np.concatenate([[0], np.cumsum(counts)])  # sequences before each distinct length
    longest = np.concatenate([[0.0], distinct.astype(np.float64) ** power])
    index = np.arange(len(ends))
    # slots[i, j]: the cost of a group of the sequences with distinct lengths i..j-1, padded to the last
    slots = np.where(index[:, None] < index[None, :], (ends[None, :] - ends[:, None]) * longest[None, :], np.inf)
    penalty = BUCKET_PENALTY * float((lengths.astype(np.float64) ** power).sum())
    cost, cuts = slots[0], []
    best_groups, best_cost = 1, cost[-1]
    for groups in range(2, max_buckets + 1):
        totals = cost[:, None] + slots
        cuts.append(totals.argmin(axis=0))
        cost = totals.min(axis=0)
        if cost[-1] + penalty * (groups - 1) < best_cost:
            best_groups, best_cost = groups, cost[-1] + penalty * (groups - 1)
    if best_groups == 1:
        return [np.arange(len(order))]
    bounds = [len(distinct)]
    for group in range(best_groups - 1, 0, -1):
        bounds.append(int(cuts[group - 1][bounds[-1]]))
    bounds.append(0)
    return [order[ends[start] : ends[stop]] for start, stop in zip(bounds[:0:-1], bounds[-2::-1])]
