"""Comparing a method with a baseline as the paper reports it: relative error reduction (RRE)
``(baseline error - model error) / baseline error`` per seed, its mean +- sample sd over seeds, and a
paired t-test (``scipy.stats.ttest_rel``) of the per-seed errors; one table, one CSV.

Errors come from :meth:`sipt_lab.data.tasks.TaskKind.error` (``1 - primary metric``). Seed
``s`` of the method is paired with seed ``s`` of the baseline (same split, same probe grid).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import ttest_rel

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_text_atomic
from sipt_lab.core.stats import mean_sd, minimum_detectable_effect, seeds_for_effect


def relative_error_reduction(baseline_error, model_error):
    """``(baseline_error - model_error) / baseline_error``, elementwise over broadcastable arrays
    (a float for scalar input); NaN where the baseline error is 0 (nothing to reduce: undefined,
    written as null in JSON and "undefined" in tables)."""
    baseline_error = np.asarray(baseline_error, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rre = np.where(
            baseline_error == 0, np.nan, (baseline_error - np.asarray(model_error, dtype=np.float64)) / baseline_error
        )
    return float(rre) if rre.ndim == 0 else rre


@dataclass(frozen=True)
class Comparison:
    """A method against a baseline on one task, over paired seeds.

    Attributes:
        task, method, baseline: names, for the table.
        n_seeds: number of paired seeds.
        baseline_error, model_error: mean error over seeds.
        rre_mean, rre_sd: mean and sample sd (ddof 1; NaN for one seed) of the per-seed RRE; NaN
            (undefined) when the baseline's error is 0 on some seed.
        p_value: two-sided paired t-test of the per-seed errors (NaN for one seed or no variation).
    """

    task: str
    method: str
    baseline: str
    n_seeds: int
    baseline_error: float
    model_error: float
    rre_mean: float
    rre_sd: float
    p_value: float


def compare_errors(baseline_errors, model_errors, *, task: str, method: str, baseline: str) -> Comparison:
    """Compare per-seed errors ``(s,)`` of ``method`` with those ``(s,)`` of ``baseline``, paired by seed."""
    baseline_errors = np.asarray(baseline_errors, dtype=np.float64)
    model_errors = np.asarray(model_errors, dtype=np.float64)
    if baseline_errors.ndim != 1 or baseline_errors.shape != model_errors.shape or not baseline_errors.size:
        raise SiptError(
            f"{method} and {baseline} on {task} have {model_errors.size} and "
            f"{baseline_errors.size} seeds; run both on the same seeds"
        )
    rre = relative_error_reduction(baseline_errors, model_errors)
    several = rre.size > 1
    rre_mean, rre_sd = mean_sd(rre.tolist())
    return Comparison(
        task=task,
        method=method,
        baseline=baseline,
        n_seeds=int(rre.size),
        baseline_error=float(baseline_errors.mean()),
        model_error=float(model_errors.mean()),
        rre_mean=rre_mean,
        rre_sd=rre_sd,
        p_value=float(ttest_rel(baseline_errors, model_errors).pvalue) if several else float("nan"),
    )


#: What a table shows for a spread or a test one seed cannot give (never ``nan``).
ONE_SEED = "n/a (one seed)"
_HEADER = ("task", "method", "baseline", "seeds", "baseline error", "model error", "RRE", "p")


def format_comparison_table(comparisons: list[Comparison]) -> str:
    """A Markdown table, one row per comparison: errors, RRE mean +- sd and the paired p-value."""
    lines = ["| " + " | ".join(_HEADER) + " |", "|" + "---|" * len(_HEADER)]
    for c in comparisons:
        cells = (
            c.task,
            c.method,
            c.baseline,
            str(c.n_seeds),
            f"{c.baseline_error:.3f}",
            f"{c.model_error:.3f}",
            _rre_cell(c),
            ONE_SEED if c.n_seeds == 1 else "n/a (no variation)" if math.isnan(c.p_value) else f"{c.p_value:.3g}",
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _rre_cell(c: Comparison) -> str:
    if math.isnan(c.rre_mean):
        return "undefined (baseline error 0)" if c.baseline_error == 0 or math.isnan(c.baseline_error) else "undefined"
    return f"{c.rre_mean:+.3f} ± {ONE_SEED if math.isnan(c.rre_sd) else f'{c.rre_sd:.3f}'}"


def write_comparison_csv(path: str | Path, comparisons: list[Comparison]) -> None:
    """Write the comparisons atomically as CSV, one column per :class:`Comparison` field."""
    fields = [field.name for field in dataclasses.fields(Comparison)]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(dataclasses.asdict(c) for c in comparisons)
    write_text_atomic(path, buffer.getvalue())


def test_size_warning(n_test: int) -> str | None:
    """A warning when ``n_test`` test samples can detect nothing: a paired t-test over them
    (two-sided 5 %, power 0.8; :func:`~sipt_lab.core.stats.minimum_detectable_effect`, the studies'
    rule) misses even the largest difference in error, every sample flipped (per-sample error
    differences of sd 1); None from the smallest test split that could detect one on."""
    if minimum_detectable_effect(1.0, n_test) <= 1.0:
        return None
    return (
        f"the test split holds {n_test} sample(s): a paired t-test over fewer than {seeds_for_effect(1.0, 1.0)} "
        "test samples (two-sided 5%, power 0.8) detects no difference in error, however large, so the RRE and "
        "p-value above rest on too little to compare the encoders; label more samples or pass a larger test split"
    )
