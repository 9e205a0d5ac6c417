"""The study's statistics: paired gains SIPT - LM-only, the line of gain against LC with bootstrap
CIs, the summary and its one-line verdict, and the power of a number of seeds."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from sipt_lab.core import fileio
from sipt_lab.core.errors import SiptError
from sipt_lab.experiments.study.study_config import LcTransferConfig


def pilot_sd(summary_path: str | Path) -> float:
    """The ``paired_sd`` of an earlier study's ``summary.json`` (the pilot's seed-to-seed sd of the
    paired gains); SiptError when it is missing or undefined (a pilot of one seed)."""
    import json

    text = fileio.read_text_file(summary_path, "pilot summary")
    try:
        value = json.loads(text).get("paired_sd")
    except (ValueError, AttributeError):
        value = None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SiptError(
            f"{summary_path} holds no finite paired_sd; pass the summary.json of a study with at least two seeds"
        )
    return float(value)


def power_line(sd: float, seeds: int) -> str:
    """What ``seeds`` seeds can detect when the paired gains have sd ``sd``, in one line."""
    from sipt_lab.core.stats import minimum_detectable_effect

    return (
        f"with {seeds} seeds and a paired sd of {sd:.4f}, the smallest gain a paired t-test detects "
        f"(two-sided 5%, power 0.8) is {minimum_detectable_effect(sd, seeds):.4f}"
    )


def paired_gains(
    rows: list[dict], metric: str, n_levels: int, n_seeds: int, baseline: str = "lm", arm: str = "sipt"
) -> tuple[np.ndarray, np.ndarray]:
    """``(levels, seeds)`` gains ``arm`` − ``baseline`` on ``metric`` (paired by seed) and the
    ``(levels, seeds)`` measured LC of each seed's graph (NaN where ``arm`` has no row)."""
    base = {row["seed"]: row["value"] for row in rows if row["arm"] == baseline and row["metric"] == metric}
    gains, lcs = np.full((n_levels, n_seeds), np.nan), np.full((n_levels, n_seeds), np.nan)
    for row in rows:
        if row["arm"] == arm and row["metric"] == metric:
            gains[row["level"], row["seed"]] = row["value"] - base[row["seed"]]
            lcs[row["level"], row["seed"]] = row["lc"]
    return gains, lcs


def gain_slope(lc: np.ndarray, gains: np.ndarray, bootstrap: int, rng: np.random.Generator) -> dict:
    """Least-squares line of the mean gain (over seeds) against ``(levels,)`` mean LC, from
    ``(levels, seeds)`` ``gains``: ``slope`` (gain per unit LC), ``intercept``, ``crossover_lc`` (where
    the line crosses zero; None when outside ``[0, 1]`` or flat), and percentile 95 % bootstrap CIs
    over seeds resampled with replacement (``slope_ci``, ``crossover_ci``; NaN with one seed)."""

    def fit(g: np.ndarray) -> tuple[float, float]:
        slope, intercept = np.polyfit(lc, g.mean(axis=1), 1)
        return float(slope), float(intercept)

    def crossing(slope: float, intercept: float) -> float:
        x = -intercept / slope if slope else math.nan
        return x if 0.0 <= x <= 1.0 else math.nan

    slope, intercept = fit(gains)
    n_seeds = gains.shape[1]
    slope_ci = crossover_ci = [math.nan, math.nan]
    if n_seeds > 1:
        draws = np.array([fit(gains[:, rng.integers(0, n_seeds, n_seeds)]) for _ in range(bootstrap)])
        slope_ci = np.percentile(draws[:, 0], [2.5, 97.5]).tolist()
        crossings = np.array([crossing(s, i) for s, i in draws])
        crossings = crossings[np.isfinite(crossings)]
        if crossings.size:
            crossover_ci = np.percentile(crossings, [2.5, 97.5]).tolist()
    crossover = crossing(slope, intercept)
    return {
        "slope": slope,
        "slope_ci": slope_ci,
        "intercept": intercept,
        "crossover_lc": None if math.isnan(crossover) else crossover,
        "crossover_ci": crossover_ci,
    }


def summarise(rows: list[dict], config: LcTransferConfig, own_consistency: float) -> dict:
    """The ``summary.json`` of a study's ``rows``: per-level paired gains SIPT − LM-only (and SIPT −
    init) on ``config.metric`` with 95 % t-CIs, :func:`gain_slope`, the control's gain (the lowest
    ``q``), the encoder's own consistency and how far the crossover lies above it, every arm's mean per metric, the minimum detectable effect
    of the seeds (paired sd pooled over levels, two-sided 5 %, power 0.8) and a one-line verdict."""
    from sipt_lab.core.stats import mean_ci, mean_sd, minimum_detectable_effect

    n_levels = len(config.levels)
    gains, lcs = paired_gains(rows, config.metric, n_levels, config.seeds)
    over_init, _ = paired_gains(rows, config.metric, n_levels, config.seeds, baseline="init")
    lc = lcs.mean(axis=1)
    levels = []
    for level, q in enumerate(config.levels):
        mean, low, high = mean_ci(gains[level])
        init_mean, init_low, init_high = mean_ci(over_init[level])
        levels.append(
            {
                "q": q,
                "target_lc": dial_target_lc_of(rows, level),
                "lc": float(lc[level]),
                "gain": mean,
                "gain_ci": [low, high],
                "gain_over_init": init_mean,
                "gain_over_init_ci": [init_low, init_high],
            }
        )
    fit = gain_slope(lc, gains, config.bootstrap, np.random.default_rng(config.split_seed))
    control = levels[int(np.argmin(config.levels))]
    paired_sd = float(np.sqrt(np.nanmean(gains.var(axis=1, ddof=1)))) if config.seeds > 1 else math.nan
    arms = {}
    for row in rows:
        arms.setdefault(row["arm"], {}).setdefault(row["metric"], []).append(row["value"])
    summary = {
        "protocol": config.protocol,
        "metric": config.metric,
        "seeds": config.seeds,
        "levels": levels,
        **fit,
        "control_gain": control["gain"],
        "control_gain_ci": control["gain_ci"],
        "encoder_consistency": own_consistency,
        "crossover_minus_encoder": None if fit["crossover_lc"] is None else fit["crossover_lc"] - own_consistency,
        "paired_sd": paired_sd,
        "mde": minimum_detectable_effect(paired_sd, config.seeds),
        "planned_mde": None if config.pilot_sd is None else minimum_detectable_effect(config.pilot_sd, config.seeds),
        "arms": {arm: {m: mean_sd(v)[0] for m, v in metrics.items()} for arm, metrics in arms.items()},
    }
    natural = gain_over_lm(rows, "natural", config.metric)
    if natural is not None:
        lc_natural = float(np.mean([row["lc"] for row in rows if row["arm"] == "natural"]))
        summary["natural"] = {
            "lc": lc_natural,
            **natural,
            "predicted_gain": fit["intercept"] + fit["slope"] * lc_natural,
        }
    per_sample = None if config.per_sample_arm is None else gain_over_lm(rows, config.per_sample_arm, config.metric)
    if per_sample is not None:
        summary["per_sample"] = {"arm": config.per_sample_arm, **per_sample}
    geometry = geometry_entry(rows, config, gains)
    if geometry is not None:
        summary["geometry"] = geometry
    summary["verdict"] = verdict(summary)
    return summary


def gain_over_lm(rows: list[dict], arm: str, metric: str) -> dict | None:
    """``{"gain", "gain_ci"}``: ``arm``'s paired gain in ``metric`` over LM-only, mean over seeds
    with a 95 % t-CI; None when no row is ``arm``'s."""
    from sipt_lab.core.stats import mean_ci

    own = {row["seed"]: row["value"] for row in rows if row["arm"] == arm and row["metric"] == metric}
    if not own:
        return None
    base = {row["seed"]: row["value"] for row in rows if row["arm"] == "lm" and row["metric"] == metric}
    mean, low, high = mean_ci([value - base[seed] for seed, value in own.items()])
    return {"gain": mean, "gain_ci": [low, high]}


def geometry_entry(rows: list[dict], config: LcTransferConfig, gains: np.ndarray) -> dict | None:
    """The geometry arm's paired gain over LM-only at its level with a 95 % t-CI, beside the default
    SIPT arm's (``gains``: :func:`paired_gains` of ``sipt``) and the paired difference of the two;
    None without a geometry arm."""
    from sipt_lab.core.stats import mean_ci
    from sipt_lab.experiments.study.study_config import GEOMETRY_ARMS

    found = [(geometry, arm) for geometry, arm in GEOMETRY_ARMS.items() if any(row["arm"] == arm for row in rows)]
    if not found:
        return None
    geometry, arm = found[0]
    level = next(row["level"] for row in rows if row["arm"] == arm)
    other, lcs = paired_gains(rows, config.metric, len(config.levels), config.seeds, arm=arm)
    mean, low, high = mean_ci(other[level])
    default, default_low, default_high = mean_ci(gains[level])
    difference, difference_low, difference_high = mean_ci(other[level] - gains[level])
    return {
        "arm": arm,
        "si_geometry": geometry,
        "level": level,
        "q": config.levels[level],
        "lc": float(np.nanmean(lcs[level])),
        "gain": mean,
        "gain_ci": [low, high],
        "default_gain": default,
        "default_gain_ci": [default_low, default_high],
        "gain_minus_default": difference,
        "gain_minus_default_ci": [difference_low, difference_high],
    }


def dial_target_lc_of(rows: list[dict], level: int) -> float:
    """The target LC recorded on ``rows`` for ``level``."""
    return next(row["target_lc"] for row in rows if row["level"] == level)


def verdict(summary: dict) -> str:
    """One line: the slope with its CI, the crossover against the encoder's own consistency, the control."""
    fmt = lambda ci: f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
    crossover = summary["crossover_lc"]
    where = (
        "gain does not cross zero for LC in [0, 1]"
        if crossover is None
        else f"gain crosses zero at LC {crossover:.3f} (encoder's own neighbourhood consistency "
        f"{summary['encoder_consistency']:.3f})"
    )
    samples = "never-seen" if summary["protocol"] == "inductive" else "pre-trained-on (transductive)"
    line = (
        f"SIPT - LM-only on {samples} test samples ({summary['metric']}, {summary['seeds']} seeds): slope "
        f"{summary['slope']:+.3f} per unit LC, 95% CI {fmt(summary['slope_ci'])}; {where}; control gain "
        f"{summary['control_gain']:+.3f} {fmt(summary['control_gain_ci'])}; detectable effect {summary['mde']:.3f}"
    )
    if "natural" in summary:
        own = summary["natural"]
        line += (
            f"; the task's own graph (LC {own['lc']:.3f}): gain {own['gain']:+.3f} {fmt(own['gain_ci'])}, "
            f"the line predicts {own['predicted_gain']:+.3f}"
        )
    if "per_sample" in summary:
        baseline = summary["per_sample"]
        line += f"; the per-sample baseline {baseline['arm']}: gain {baseline['gain']:+.3f} {fmt(baseline['gain_ci'])}"
    if "geometry" in summary:
        other = summary["geometry"]
        line += (
            f"; L_SI on {other['si_geometry']} vectors at q={other['q']:g}: gain {other['gain']:+.3f} "
            f"{fmt(other['gain_ci'])} against {other['default_gain']:+.3f} {fmt(other['default_gain_ci'])}"
        )
    return line
