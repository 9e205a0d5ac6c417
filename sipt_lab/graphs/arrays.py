"""Array helpers of the graph package: factorizing labels, sorted sets of int64 keys, vectorised
searches in sorted segments, and building read-only symmetric CSR matrices."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def factorize(values) -> tuple[np.ndarray, np.ndarray]:
    """``(uniques, codes)`` with ``uniques[codes] == values``, uniques sorted; codes ``(n,)`` int64.

    Linear time for small non-negative integers (bincount), a sort otherwise (NumPy 2's
    ``np.unique`` is hash based and slow on large integer arrays).
    """
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D array, got shape {values.shape}")
    if values.size == 0:
        return values.copy(), np.empty(0, dtype=np.int64)
    if values.dtype.kind in "iub" and values.min() >= 0 and values.max() < 4 * values.size + 1024:
        present = np.bincount(values.astype(np.int64)) > 0
        remap = np.cumsum(present) - 1
        return np.flatnonzero(present).astype(values.dtype), remap[values]
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    new = np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]])
    codes = np.empty(values.size, dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return sorted_values[new], codes


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values of ``values``, sorted."""
    s = np.sort(values)
    return s[np.concatenate([[True], s[1:] != s[:-1]])] if s.size else s


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two code arrays induce the same partition of the nodes."""
    keys = a.astype(np.int64) * (int(b.max(initial=0)) + 1) + b
    return factorize(keys)[0].size == factorize(a)[0].size == factorize(b)[0].size


def segment_bisect(values, starts, ends, targets, side: str) -> np.ndarray:
    """Vectorised ``bisect`` of ``targets[q]`` in the sorted segment ``values[starts[q]:ends[q]]``.

    Returns the insertion offset within the segment (``side`` as in ``np.searchsorted``).
    """
    lo, hi = starts.astype(np.int64), ends.astype(np.int64)
    active = np.flatnonzero(lo < hi)
    while active.size:
        mid = (lo[active] + hi[active]) // 2
        if side == "left":
            right = values[mid] < targets[active]
        else:
            right = values[mid] <= targets[active]
        lo[active[right]] = mid[right] + 1
        hi[active[~right]] = mid[~right]
        active = active[lo[active] < hi[active]]
    return lo - starts


def select_missing(values, starts, ends, ranks) -> np.ndarray:
    """The ``ranks[q]``-th non-negative integer absent from the sorted distinct segment ``q``.

    With ``S`` the segment, that integer is ``r + #{j : S[j] - j <= r}``; ``S[j] - j`` is
    non-decreasing, so the count is a binary search on it.
    """
    lo, hi = starts.astype(np.int64), ends.astype(np.int64)
    starts64 = lo.copy()
    active = np.flatnonzero(lo < hi)
    while active.size:
        mid = (lo[active] + hi[active]) // 2
        right = values[mid] - (mid - starts64[active]) <= ranks[active]
        lo[active[right]] = mid[right] + 1
        hi[active[~right]] = mid[~right]
        active = active[lo[active] < hi[active]]
    return ranks + (lo - starts64)


def index_dtype(n: int, nnz: int):
    """The CSR index dtype for ``n`` rows and ``nnz`` entries: int32 where it fits, else int64."""
    return np.int32 if max(n, nnz) < np.iinfo(np.int32).max else np.int64


def csr_from_pair_keys(keys: np.ndarray, n: int) -> sp.csr_array:
    """Symmetric CSR from sorted distinct keys ``lo * n + hi`` (``lo < hi``)."""
    idx = index_dtype(n, 2 * keys.size)
    lo = (keys // max(n, 1)).astype(idx)
    hi = (keys % max(n, 1)).astype(idx)
    csr = sp.csr_array(
        (np.ones(2 * keys.size, np.int8), (np.concatenate([lo, hi]), np.concatenate([hi, lo]))), shape=(n, n)
    )
    csr.sort_indices()
    return freeze_csr(csr)


def freeze_csr(csr: sp.csr_array) -> sp.csr_array:
    """``csr`` with its arrays made read-only."""
    for arr in (csr.data, csr.indices, csr.indptr):
        arr.flags.writeable = False
    return csr


def check_n_nodes(n_nodes) -> int:
    """``n_nodes`` as an int; ValueError unless it is a whole number in ``[0, 3e9]``."""
    n = int(n_nodes)
    # Edge keys lo * n + hi and pair indices hi * (hi - 1) / 2 must fit in int64.
    if n < 0 or n != n_nodes or n > 3_000_000_000:
        raise ValueError(f"n_nodes must be an integer in [0, 3e9], got {n_nodes!r}")
    return n


def as_index_array(values, name: str) -> np.ndarray:
    """``values`` as a flat int64 array; ValueError naming ``name`` unless they are integers."""
    arr = np.asarray(values)
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be an integer array, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False).ravel()
