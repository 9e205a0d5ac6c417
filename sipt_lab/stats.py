"""Mean ± sd over seeds, one way everywhere (tables, benchmarks, figures, summaries).

The sd is the sample standard deviation (``ddof = 1``): seeds are a sample of the runs one could
make. With one value it is undefined (NaN), never 0.
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np


def mean_sd(values: Iterable[float | None]) -> tuple[float, float]:
    """Mean and sample sd (ddof 1) of the values that are not None; ``(nan, nan)`` when none are,
    sd NaN when one is."""
    known = np.array([value for value in values if value is not None], dtype=float)
    if known.size == 0:
        return math.nan, math.nan
    return float(known.mean()), float(known.std(ddof=1)) if known.size > 1 else math.nan


def format_mean_sd(values: Iterable[float | None] | None, digits: int = 3) -> str:
    """``"0.512 ± 0.038"``; ``"0.512"`` for one value, ``"-"`` for none (or None)."""
    mean, sd = mean_sd(() if values is None else values)
    if math.isnan(mean):
        return "-"
    return f"{mean:.{digits}f}" if math.isnan(sd) else f"{mean:.{digits}f} ± {sd:.{digits}f}"
