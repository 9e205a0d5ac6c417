"""Mean ± sd over seeds, one way everywhere (tables, benchmarks, figures, summaries).

The sd is the sample standard deviation (``ddof = 1``): seeds are a sample of the runs one could
make. With one value it is undefined (NaN), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


def mean_sd(values: Iterable[float | None]) -> tuple[float, float]:
    """Mean and sample sd (ddof 1) of the values that are not None; ``(nan, nan)`` when none are,
    sd NaN when one is."""
    known = np.array([value for value in values if value is not None], dtype=float)
    if known.size == 0:
        return math.nan, math.nan
    return float(known.mean()), float(known.std(ddof=1)) if known.size > 1 else math.nan


def spread_phrase(seeds: int) -> str:
    """What a figure of ``seeds`` seeds shows, for its title: ``"mean ± sd over 3 seeds"``; ``"one
    seed, no spread"`` for one (its sd is undefined, so no band or bar is drawn)."""
    return "one seed, no spread" if seeds == 1 else f"mean ± sd over {seeds} seeds"


def format_mean_sd(values: Iterable[float | None] | None, digits: int = 3) -> str:
    """``"0.512 ± 0.038"``; ``"0.512"`` for one value, ``"-"`` for none (or None)."""
    mean, sd = mean_sd(() if values is None else values)
    if math.isnan(mean):
        return "-"
    return f"{mean:.{digits}f}" if math.isnan(sd) else f"{mean:.{digits}f} ± {sd:.{digits}f}"


def mean_ci(values, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and two-sided Student-t confidence interval ``(mean, low, high)`` of ``values`` (e.g.
    paired differences over seeds); the interval is NaN for fewer than two values."""
    from scipy.stats import t

    known = np.asarray(list(values), dtype=float)
    mean, sd = mean_sd(known)
    if known.size < 2:
        return mean, math.nan, math.nan
    half = float(t.ppf(0.5 + level / 2, known.size - 1)) * sd / math.sqrt(known.size)
    return mean, mean - half, mean + half


def minimum_detectable_effect(sd: float, n: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest mean paired difference a two-sided t-test at ``alpha`` over ``n`` seeds detects with
    probability ``power`` when the differences have standard deviation ``sd`` (same units as ``sd``);
    NaN for ``n < 2`` or an unknown ``sd``."""
    from scipy.stats import t

    if n < 2 or not math.isfinite(sd):
        return math.nan
    return float(t.ppf(1 - alpha / 2, n - 1) + t.ppf(power, n - 1)) * sd / math.sqrt(n)


def seeds_for_effect(sd: float, effect: float, *, alpha: float = 0.05, power: float = 0.8, most: int = 1000) -> int:
    """Fewest seeds (at least 2) whose :func:`minimum_detectable_effect` is at most ``effect``; ``most``
    when even that many are not enough."""
    return next(
        (n for n in range(2, most) if minimum_detectable_effect(sd, n, alpha=alpha, power=power) <= effect), most
    )


#: Fewest replicates (seeds) whose spread a confidence interval is computed from: with two, a t-interval
#: rests on one degree of freedom and a bootstrap on three distinct resamples; neither is reported.
MIN_REPLICATES_FOR_INTERVAL = 3
#: Fewest clusters (e.g. split seeds, each holding several seeds) a clustered interval is computed from:
#: two give the t quantile on one degree of freedom (12.7 at 95 %), wide, and the honest width of
#: what two clusters tell about a spread between them that the seeds within one cannot show.
MIN_CLUSTERS_FOR_INTERVAL = 2


def cluster_means(values, clusters) -> np.ndarray:
    """``(g,)`` means of the finite ``values`` ``(n,)`` in each of the ``g`` distinct ``clusters``
    ``(n,)`` that holds one, in the clusters' sorted order."""
    values, clusters = np.asarray(values, dtype=float), np.asarray(clusters)
    known = np.isfinite(values)
    return np.array([values[known & (clusters == c)].mean() for c in np.unique(clusters[known])])


def interval(values, level: float = 0.95, clusters=None) -> list[float] | None:
    """The Student-t interval ``[low, high]`` of :func:`mean_ci`, or None with fewer than
    :data:`MIN_REPLICATES_FOR_INTERVAL` finite values. With ``clusters`` ``(n,)`` (the split seed of
    each replicate, say) it is cluster-robust: the t-interval over the :func:`cluster_means` (clusters
    − 1 degrees of freedom; for equal clusters the CR1 interval of the mean), None under
    :data:`MIN_CLUSTERS_FOR_INTERVAL` clusters."""
    values = np.asarray([math.nan if value is None else value for value in values], dtype=float)
    known = values[np.isfinite(values)]
    if known.size < MIN_REPLICATES_FOR_INTERVAL:
        return None
    if clusters is not None:
        known = cluster_means(values, clusters)
        if known.size < MIN_CLUSTERS_FOR_INTERVAL:
            return None
    _, low, high = mean_ci(known, level)
    return [low, high]


def fieller_interval(numerators, denominators, level: float = 0.95, clusters=None) -> tuple[list[float] | None, bool]:
    """Fieller's confidence set for the ratio of means ``mean(numerators) / mean(denominators)`` of
    paired replicates (``(n,)`` each, e.g. minus the intercept and the slope of each seed's line:
    where the mean line crosses zero). Returns ``(interval, bounded)``: ``([low, high], True)`` when
    the denominator's mean differs from 0 at ``level``; ``(None, False)`` when it does not (the set
    is then unbounded: the data cannot place the ratio), or with fewer than
    :data:`MIN_REPLICATES_FOR_INTERVAL` replicates. With ``clusters`` ``(n,)`` it is computed from
    the :func:`cluster_means` of both, as :func:`interval` is (None under
    :data:`MIN_CLUSTERS_FOR_INTERVAL` clusters)."""
    from scipy.stats import t

    x, y = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    if x.size < MIN_REPLICATES_FOR_INTERVAL:
        return None, False
    if clusters is not None:
        x, y = cluster_means(x, clusters), cluster_means(y, clusters)
        if x.size < MIN_CLUSTERS_FOR_INTERVAL:
            return None, False
    n = x.size
    covariance = np.cov(np.vstack([x, y]), ddof=1) / n  # of the two means
    quantile = float(t.ppf(0.5 + level / 2, n - 1)) ** 2
    mx, my = x.mean(), y.mean()
    a = my**2 - quantile * covariance[1, 1]
    if a <= 0:
        return None, False
    b = -2 * (mx * my - quantile * covariance[0, 1])
    c = mx**2 - quantile * covariance[0, 0]
    root = math.sqrt(max(b * b - 4 * a * c, 0.0))
    return [(-b - root) / (2 * a), (-b + root) / (2 * a)], True


def wilson_interval(proportion: float, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval ``(low, high)`` of a proportion observed over ``trials`` (a share
    of agreeing samples, a coverage); it stays inside [0, 1], unlike a t-interval. NaN for no trials."""
    from scipy.stats import norm

    if trials == 0:
        return math.nan, math.nan
    z = float(norm.ppf(0.5 + confidence / 2))
    centre = (proportion + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(proportion * (1 - proportion) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)
