"""The study's statistics: paired gains SIPT − a baseline, the line of gain against LC with its
intervals, every metric's summary, and the one-line verdict.

A *replicate* is one ``(split_seed, seed)``: its arms share the splits, the dial's graphs and the
start. Everything is paired by replicate. Intervals are Student-t (the slope: over each
replicate's own least-squares line), the crossover's is Fieller's for the ratio of the mean intercept
to the mean slope. With two split seeds or more they are split-clustered (over the split seeds'
means, :func:`~sipt_lab.core.stats.interval`), so they allow for another split giving other gains;
with one they are over its seeds and hold for that split only (``interval_basis`` says which). With
fewer than :data:`~sipt_lab.core.stats.MIN_REPLICATES_FOR_INTERVAL` replicates no interval is reported
and the summary says what the replicates can detect instead.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from sipt_lab.core import fileio
from sipt_lab.core.errors import SiptError
from sipt_lab.studies.lc.config import LcTransferConfig, metric_words

#: The baselines each SIPT level is compared with, by summary key: LM-only, the untouched init, and
#: the labels-direct arms (the same encoders with the pre-training samples and their dial labels
#: added to the k-NN references and the probe's training data).
BASELINES = {
    "gain": "lm",
    "gain_over_init": "init",
    "gain_over_labels_direct": "lm+labels",
    "gain_over_init_labels": "init+labels",
}


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


def power_line(sd: float, seeds: int, split_seeds: int) -> str:
    """What ``seeds`` x ``split_seeds`` replicates can detect when the paired gains have sd ``sd``, in one line."""
    from sipt_lab.core.stats import minimum_detectable_effect

    replicates = seeds * split_seeds
    return (
        f"with {replicates} replicates ({seeds} seeds x {split_seeds} split seeds) and a paired sd of {sd:.4f}, the "
        f"smallest gain a paired t-test detects (two-sided 5%, power 0.8) is {minimum_detectable_effect(sd, replicates):.4f}"
    )


def split_clusters(replicates: list[tuple[int, int]]) -> list[int] | None:
    """The split seed of each ``(split_seed, seed)`` replicate: the clusters the intervals allow for;
    None on one split seed (the intervals are then over its seeds, for that split only)."""
    split_seeds = [split_seed for split_seed, _ in replicates]
    return split_seeds if len(set(split_seeds)) > 1 else None


def interval_basis(replicates: list[tuple[int, int]]) -> str:
    """What the intervals over ``replicates`` allow for, in a few words for a reader."""
    split_seeds = len({split_seed for split_seed, _ in replicates})
    if split_seeds == 1:
        return "one split"
    return f"split-clustered over {split_seeds} split seeds, {plural(split_seeds - 1, 'degree')} of freedom"


def replicate_keys(rows: list[dict]) -> list[tuple[int, int]]:
    """The sorted ``(split_seed, seed)`` replicates of ``rows`` (those with an LM-only row)."""
    return sorted({(row["split_seed"], row["seed"]) for row in rows if row["arm"] == "lm"})


def paired_gains(
    rows: list[dict],
    metric: str,
    n_levels: int,
    replicates: list[tuple[int, int]],
    baseline: str = "lm",
    arm: str = "sipt",
) -> tuple[np.ndarray, np.ndarray]:
    """``(levels, replicates)`` gains ``arm`` − ``baseline`` on ``metric``, paired by replicate (and
    by level where the baseline has one, as the labels-direct arms do), and the ``(levels,
    replicates)`` measured LC of each replicate's graph; NaN where either has no row."""
    column = {key: i for i, key in enumerate(replicates)}
    base = {
        (row["split_seed"], row["seed"], row["level"]): row["value"]
        for row in rows
        if row["arm"] == baseline and row["metric"] == metric
    }
    gains, lcs = np.full((n_levels, len(replicates)), np.nan), np.full((n_levels, len(replicates)), np.nan)
    for row in rows:
        if row["arm"] != arm or row["metric"] != metric:
            continue
        key, level = (row["split_seed"], row["seed"]), row["level"] or 0  # an arm without levels is level 0
        reference = base.get((*key, row["level"]), base.get((*key, None)))
        if reference is not None:
            gains[level, column[key]] = row["value"] - reference
        lcs[level, column[key]] = row["lc"]
    return gains, lcs


def crossing(slope: float, intercept: float) -> float:
    """Where the line ``intercept + slope * LC`` crosses zero; NaN when flat or outside ``[0, 1]``."""
    x = -intercept / slope if slope else math.nan
    return x if 0.0 <= x <= 1.0 else math.nan


def gain_line(lcs: np.ndarray, gains: np.ndarray, clusters: list[int] | None = None) -> dict:
    """The line of gain against LC from ``(levels, replicates)`` measured ``lcs`` and ``gains``: each
    replicate's own least-squares line, then ``slope`` and ``intercept`` (their means), ``slope_ci``
    (Student-t over the replicates' slopes, clustered by ``clusters``, one per replicate, when
    given), ``crossover_lc`` (where the mean line crosses zero; None outside ``[0, 1]``),
    ``crossover_ci`` (Fieller's, clustered alike; None when unbounded: ``crossover_ci_bounded``;
    given wherever the point lies), and ``crossover_undefined_share``, the share of replicates whose
    own line does not cross zero in ``[0, 1]``."""
    from sipt_lab.core.stats import fieller_interval, interval

    lines = []
    for r in range(gains.shape[1]):
        known = np.isfinite(gains[:, r]) & np.isfinite(lcs[:, r])
        lines.append(np.polyfit(lcs[known, r], gains[known, r], 1) if np.unique(lcs[known, r]).size > 1 else (0, 0))
    slopes, intercepts = np.array(lines, dtype=float).T
    slope, intercept = float(slopes.mean()), float(intercepts.mean())
    crossover = crossing(slope, intercept)
    crossover_ci, bounded = fieller_interval(-intercepts, slopes, clusters=clusters)
    own = np.array([crossing(s, i) for s, i in zip(slopes, intercepts)])
    return {
        "slope": slope,
        "slope_ci": interval(slopes, clusters=clusters),
        "intercept": intercept,
        "crossover_lc": None if math.isnan(crossover) else crossover,
        "crossover_ci": crossover_ci,
        "crossover_ci_bounded": bounded,
        "crossover_undefined_share": float(np.isnan(own).mean()),
        "replicate_slopes": slopes.tolist(),
    }


def metric_summary(rows: list[dict], config: LcTransferConfig, metric: str, replicates: list[tuple[int, int]]) -> dict:
    """One metric's part of the summary: per level the paired gains over every :data:`BASELINES` arm
    that has rows, with Student-t 95 % intervals (split-clustered: :func:`split_clusters`);
    :func:`gain_line`; the control's gain (the lowest
    ``q``); the paired sd pooled over levels and the gain it lets the replicates detect; the same line
    per split seed, with the sd of the split seeds' slopes."""
    from sipt_lab.core.stats import interval, mean_sd, minimum_detectable_effect

    n_levels = len(config.levels)
    gains, lcs = paired_gains(rows, metric, n_levels, replicates)
    clusters = split_clusters(replicates)
    lc = np.nanmean(lcs, axis=1)
    compared = {
        key: paired_gains(rows, metric, n_levels, replicates, baseline=arm)[0] for key, arm in BASELINES.items()
    }
    compared = {key: values for key, values in compared.items() if np.isfinite(values).any()}
    levels = []
    for level, q in enumerate(config.levels):
        entry = {"q": q, "target_lc": dial_target_lc_of(rows, level), "lc": float(lc[level])}
        for key, values in compared.items():
            entry[key] = float(np.nanmean(values[level]))
            entry[f"{key}_ci"] = interval(values[level], clusters=clusters)
        levels.append(entry)
    control = levels[int(np.argmin(config.levels))]
    variances = [np.var(row[np.isfinite(row)], ddof=1) for row in gains if np.isfinite(row).sum() > 1]
    paired_sd = float(np.sqrt(np.mean(variances))) if variances else math.nan
    by_split = []
    for split_seed in sorted({key[0] for key in replicates}):
        columns = [i for i, key in enumerate(replicates) if key[0] == split_seed]
        line = gain_line(lcs[:, columns], gains[:, columns])
        by_split.append(
            {
                "split_seed": split_seed,
                "seeds": len(columns),
                "slope": line["slope"],
                "crossover_lc": line["crossover_lc"],
                "gains": np.nanmean(gains[:, columns], axis=1).tolist(),
            }
        )
    split_sd = mean_sd(split["slope"] for split in by_split)[1]
    return {
        "metric": metric,
        "metric_name": metric_words(metric, config.k),
        "levels": levels,
        **gain_line(lcs, gains, clusters),
        "control_gain": control["gain"],
        "control_gain_ci": control["gain_ci"],
        "paired_sd": paired_sd,
        "mde": minimum_detectable_effect(paired_sd, len(replicates)),
        "by_split": by_split,
        "split_slope_sd": None if math.isnan(split_sd) else split_sd,
    }


def summarise(rows: list[dict], config: LcTransferConfig, own_consistency: float) -> dict:
    """The ``summary.json`` of a study's ``rows``: the primary metric's :func:`metric_summary` at the
    top level and every metric's under ``metrics``, the encoder's own consistency and how far the
    crossover lies above it, how many comparisons the study makes, every arm's mean per metric, the
    natural, per-sample and geometry arms when present, warnings, and a one-line verdict."""
    from sipt_lab.core.stats import MIN_REPLICATES_FOR_INTERVAL, mean_sd, minimum_detectable_effect

    replicates = replicate_keys(rows)
    measured = [name for name in config_metrics(config) if any(row["metric"] == name for row in rows)]
    metrics = {name: metric_summary(rows, config, name, replicates) for name in measured}
    primary = metrics[config.metric]
    arms: dict[str, dict[str, list]] = {}
    for row in rows:
        arms.setdefault(row["arm"], {}).setdefault(row["metric"], []).append(row["value"])
    crossover = primary["crossover_lc"]
    summary = {
        "protocol": config.protocol,
        "dataset": config.dataset,
        "metric": config.metric,
        "seeds": config.seeds,
        "split_seeds": list(config.split_seeds),
        "replicates": len(replicates),
        "interval_basis": interval_basis(replicates),
        "k": config.k,
        **{key: value for key, value in primary.items() if key != "metric"},  # with its metric_name
        "encoder_consistency": own_consistency,
        "encoder_consistency_graph": f"the init's {config.k}-NN graph over the same pre-training samples: LC of the "
        "same labels on the same nodes as the dial's LC, over the encoder's neighbourhoods instead of the dial's cliques",
        "crossover_minus_encoder": None if crossover is None else crossover - own_consistency,
        "planned_mde": None if config.pilot_sd is None else minimum_detectable_effect(config.pilot_sd, len(replicates)),
        "multiplicity": {
            "levels": len(config.levels),
            "metrics": len(metrics),
            "comparisons": len(config.levels) * len(metrics),
            "primary": config.metric,
            "note": f"{config.metric} is the pre-registered metric (Theorem 1 bounds nearest-neighbour accuracy); the "
            "other metrics' intervals are not adjusted for the number of comparisons",
        },
        "metrics": metrics,
        "arms": {arm: {m: mean_sd(v)[0] for m, v in values.items()} for arm, values in arms.items()},
    }
    natural = gain_over_lm(rows, "natural", config.metric, replicates)
    if natural is not None:
        lc_natural = float(np.mean([row["lc"] for row in rows if row["arm"] == "natural"]))
        summary["natural"] = {
            "lc": lc_natural,
            **natural,
            "predicted_gain": primary["intercept"] + primary["slope"] * lc_natural,
        }
    per_sample = (
        None if config.per_sample_arm is None else gain_over_lm(rows, config.per_sample_arm, config.metric, replicates)
    )
    if per_sample is not None:
        summary["per_sample"] = {"arm": config.per_sample_arm, **per_sample}
    geometry = geometry_entry(rows, config, replicates)
    if geometry is not None:
        summary["geometry"] = geometry
    warnings = []
    if len(replicates) < MIN_REPLICATES_FOR_INTERVAL:
        warnings.append(
            f"{len(replicates)} replicate(s) (seeds x split seeds): no interval is reported; "
            + (
                f"with a paired sd of {primary['paired_sd']:.4f} they detect only gains above {primary['mde']:.4f}"
                if math.isfinite(primary["mde"])
                else "one replicate measures no spread, so no gain can be called detectable"
            )
        )
    elif not primary["crossover_ci_bounded"]:
        warnings.append("the crossover's Fieller interval is unbounded: the slope does not differ from 0 at 95 %")
    summary["warnings"] = warnings
    summary["verdict"] = verdict(summary)
    return summary


def config_metrics(config: LcTransferConfig) -> tuple[str, ...]:
    """The metrics a study of ``config`` measures, in :data:`STUDY_METRICS` order."""
    from sipt_lab.studies.lc.config import STUDY_METRICS

    return tuple(name for name in STUDY_METRICS if config.finetune_epochs or not name.startswith("finetune_"))


def gain_over_lm(rows: list[dict], arm: str, metric: str, replicates: list[tuple[int, int]]) -> dict | None:
    """``{"gain", "gain_ci"}``: ``arm``'s paired gain in ``metric`` over LM-only, mean over
    replicates with a Student-t 95 % interval (None under three replicates; split-clustered as the
    levels' are); None when no row is ``arm``'s."""
    from sipt_lab.core.stats import interval

    if not any(row["arm"] == arm and row["metric"] == metric for row in rows):
        return None
    gains, _ = paired_gains(rows, metric, 1, replicates, arm=arm)
    return {"gain": float(np.nanmean(gains[0])), "gain_ci": interval(gains[0], clusters=split_clusters(replicates))}


def geometry_entry(rows: list[dict], config: LcTransferConfig, replicates: list[tuple[int, int]]) -> dict | None:
    """The geometry arm's paired gain over LM-only at its level, beside the default SIPT arm's and the
    paired difference of the two (Student-t 95 % intervals, split-clustered as the levels' are); None
    without a geometry arm."""
    from sipt_lab.core.stats import interval
    from sipt_lab.studies.lc.config import GEOMETRY_ARMS

    found = [(geometry, arm) for geometry, arm in GEOMETRY_ARMS.items() if any(row["arm"] == arm for row in rows)]
    if not found:
        return None
    geometry, arm = found[0]
    level = next(row["level"] for row in rows if row["arm"] == arm)
    n_levels = len(config.levels)
    other, lcs = paired_gains(rows, config.metric, n_levels, replicates, arm=arm)
    default, _ = paired_gains(rows, config.metric, n_levels, replicates)
    clusters = split_clusters(replicates)
    return {
        "arm": arm,
        "si_geometry": geometry,
        "level": level,
        "q": config.levels[level],
        "lc": float(np.nanmean(lcs[level])),
        "gain": float(np.mean(other[level])),
        "gain_ci": interval(other[level], clusters=clusters),
        "default_gain": float(np.mean(default[level])),
        "default_gain_ci": interval(default[level], clusters=clusters),
        "gain_minus_default": float(np.mean(other[level] - default[level])),
        "gain_minus_default_ci": interval(other[level] - default[level], clusters=clusters),
    }


def dial_target_lc_of(rows: list[dict], level: int) -> float:
    """The target LC recorded on ``rows`` for ``level``."""
    return next(row["target_lc"] for row in rows if row["level"] == level and row["target_lc"] is not None)


def plural(count: int, noun: str) -> str:
    """``"1 seed"``, ``"4 seeds"``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def format_ci(ci: list[float] | None) -> str:
    """``[+0.012, +0.020]``, or ``n/a`` where no interval is reported; an interval of no width (the
    replicates agree to the digits shown: a spread they do not show, not certainty) says so."""
    if ci is None:
        return "n/a"
    low, high = f"{ci[0]:+.3f}", f"{ci[1]:+.3f}"
    warning = " (warning: the replicates show no spread; add seeds before trusting it)" if low == high else ""
    return f"[{low}, {high}]{warning}"


def crossover_words(entry: dict) -> str:
    """A metric's crossover in a few words, Fieller's interval given wherever the point lies:
    ``0.473 [0.420, 0.521]``, ``outside [0, 1] [0.890, 1.992]``, ``0.700 (CI unbounded)``."""
    point = "outside [0, 1]" if entry["crossover_lc"] is None else f"{entry['crossover_lc']:.3f}"
    ci = entry["crossover_ci"]
    return f"{point} " + ("(CI unbounded)" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]")


def verdict(summary: dict) -> str:
    """One line: what the intervals allow for, the primary metric's slope with its interval, the
    crossover with Fieller's interval (wherever the point lies) against the encoder's own
    consistency, the control, SIPT against the labels-direct baseline at the top level, what the
    replicates can detect, and the other metrics' crossovers (:func:`crossover_words`)."""
    interval = (
        f"Fieller 95% CI [{summary['crossover_ci'][0]:.3f}, {summary['crossover_ci'][1]:.3f}]"
        if summary["crossover_ci_bounded"]
        else "its interval unbounded"
    )
    crossover = summary["crossover_lc"]
    if crossover is None:
        where = f"the gain does not cross zero for LC in [0, 1] (point estimate outside [0, 1]; {interval})"
    else:
        where = f"the gain crosses zero at LC {crossover:.3f} ({interval})"
    where += (
        f", {summary['crossover_undefined_share']:.0%} of replicate lines do not cross in [0, 1]; the encoder's own "
        f"consistency {summary['encoder_consistency']:.3f}"
    )
    samples = "never-seen" if summary["protocol"] == "inductive" else "pre-trained-on (transductive)"
    top = summary["levels"][int(np.argmax([level["q"] for level in summary["levels"]]))]
    line = (
        f"SIPT - LM-only on {samples} test samples of {summary['dataset']} ({summary['metric_name']}, primary; "
        f"{plural(summary['seeds'], 'seed')} x {plural(len(summary['split_seeds']), 'split')}; 95% CIs "
        f"{summary['interval_basis']}): slope {summary['slope']:+.3f} per unit LC, "
        f"95% CI {format_ci(summary['slope_ci'])}; {where}; control gain {summary['control_gain']:+.3f} "
        f"{format_ci(summary['control_gain_ci'])}"
    )
    if "gain_over_labels_direct" in top:
        line += (
            f"; at q={top['q']:g} SIPT - (LM-only + the dial's labels) {top['gain_over_labels_direct']:+.3f} "
            f"{format_ci(top['gain_over_labels_direct_ci'])}"
        )
    line += "; detectable effect " + ("n/a" if not math.isfinite(summary["mde"]) else f"{summary['mde']:.3f}")
    if "natural" in summary:
        own = summary["natural"]
        line += (
            f"; the task's own graph (LC {own['lc']:.3f}): gain {own['gain']:+.3f} {format_ci(own['gain_ci'])}, "
            f"the line predicts {own['predicted_gain']:+.3f}"
        )
    if "per_sample" in summary:
        baseline = summary["per_sample"]
        line += f"; the per-sample baseline {baseline['arm']}: gain {baseline['gain']:+.3f} {format_ci(baseline['gain_ci'])}"
    if "geometry" in summary:
        other = summary["geometry"]
        line += (
            f"; L_SI on {other['si_geometry']} vectors at q={other['q']:g}: gain {other['gain']:+.3f} "
            f"{format_ci(other['gain_ci'])} against {other['default_gain']:+.3f} {format_ci(other['default_gain_ci'])}"
        )
    others = [
        f"{name} {crossover_words(entry)}" for name, entry in summary["metrics"].items() if name != summary["metric"]
    ]
    if others:
        line += "; crossover by other metric: " + ", ".join(others)
    return line
