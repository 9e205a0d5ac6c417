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
