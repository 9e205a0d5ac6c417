"""Small conversions between Arrow arrays and numpy, shared by the columnar edge-table readers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def as_arrow(values) -> pa.Array:
    """``values`` (Arrow, numpy, pandas or a list) as one Arrow array."""
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    return values if isinstance(values, pa.Array) else pa.array(values)


def is_string(dtype) -> bool:
    return pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype)


def to_numpy(values: pa.Array) -> np.ndarray:
    return values.to_numpy(zero_copy_only=False)


def nulls(values: pa.Array) -> np.ndarray:
    return to_numpy(pc.is_null(values))


def fill(indices: pa.Array) -> np.ndarray:
    """``(m,)`` int64 of an Arrow index array, -1 where null."""
    return to_numpy(pc.cast(indices, pa.int64()).fill_null(-1))


def fill_bool(mask: pa.Array) -> np.ndarray:
    return to_numpy(mask.fill_null(False))


_MAX_INT_DIGITS = 18
_POW10 = 10 ** np.arange(1, _MAX_INT_DIGITS + 1, dtype=np.int64)


def int_keys(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(ints, valid)``: ``(m,)`` int64 values of integer ids and ``(m,)`` bool, False where an id
    is null or a string that is not a canonical decimal integer of at most 18 digits (its int is 0)."""
    values = as_arrow(values)
    if pa.types.is_integer(values.type):
        valid = np.ones(len(values), bool) if values.null_count == 0 else ~nulls(values)
        if values.type == pa.uint64():  # past int64: no labelled node can have that id
            valid &= fill_bool(pc.less_equal(values, pa.scalar(np.iinfo(np.int64).max, pa.uint64())))
        ints = to_numpy(pc.cast(values.fill_null(0), pa.int64(), safe=False))
        return np.where(valid, ints, 0), valid
    if not is_string(values.type):
        return np.zeros(len(values), np.int64), np.zeros(len(values), bool)
    try:
        parsed = pc.cast(values, pa.int64())
        valid = ~nulls(parsed)
    except pa.ArrowInvalid:  # some ids are not integers: parse those that are
        valid = fill_bool(pc.match_substring_regex(values, rf"^-?[0-9]{{1,{_MAX_INT_DIGITS}}}$"))
        parsed = pc.cast(pc.if_else(pa.array(valid), values, "0"), pa.int64())
    ints = to_numpy(parsed.fill_null(0))
    magnitude = np.abs(ints)
    digits = np.searchsorted(_POW10, magnitude, side="right") + 1
    lengths = to_numpy(pc.binary_length(values).fill_null(0)).astype(np.int64)
    valid &= (lengths == digits + (ints < 0)) & (magnitude < _POW10[-1])
    return np.where(valid, ints, 0), valid
