"""The paper's Table 2 over finished domain runs (``sipt-lab domain table``): per task and
evaluation, SIPT's relative error reduction (RRE, mean ± sd over paired seeds) against the
domain's per-token baseline and against its per-sample baseline, each marked ↑ / ∼ / ↓ by a paired
t-test of the per-seed errors at p < 0.1, written as Markdown, CSV and LaTeX.

Which arm is which baseline is one table, :data:`TABLE2_BASELINES` (the paper's Table 1). Each
graph's SIPT arm is the one its run reports (:func:`~sipt_lab.studies.domain.saved_runs.sipt_arms`:
λ chosen by validation link retrieval when the run had a grid). A comparison that cannot be made
is a row with a status, never left out: ``not run`` (the runs hold no such arm or evaluation),
``no baseline`` (the paper has none for the domain, N/A in its table), ``no paired seeds``.
Errors and tests are :func:`~sipt_lab.evaluation.comparison.compare_errors`'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from sipt_lab.core import outputs
from sipt_lab.core.fileio import write_text_atomic
from sipt_lab.core.stats import minimum_detectable_effect
from sipt_lab.data.tasks import get_task_kind
from sipt_lab.evaluation.comparison import compare_errors
from sipt_lab.grid.results_table import write_results_csv
from sipt_lab.studies.domain.cells import BASELINE_ARM
from sipt_lab.studies.domain.report_options import DomainTableConfig
from sipt_lab.studies.domain.saved_runs import TaskRuns, find_arm, merge_runs, sipt_arms


@dataclass(frozen=True)
class Baselines:
    """The arms a domain's SIPT arm is compared with in Table 2: ``per_token`` (a language-model
    objective) and ``per_sample`` (a per-sample pre-training objective; None: the paper has none)."""

    per_token: str
    per_sample: str | None


#: Domain -> its Table 2 baselines, as the paper's Table 1 names them: per-token, the domain's
#: language-model objective continued from the same warm start under the same budget (the ``lm``
#: arm: TAPE's MLM, SciBERT's MLM, Hu et al.'s attribute masking); per-sample, PLUS's same-family
#: prediction for PROTEINS, Hu et al.'s multi-task GO classification for NETWORKS, none for
#: ABSTRACTS. ``wiki``, not in the paper, takes the multi-task baseline on the head nouns of its
#: short descriptions (:func:`~sipt_lab.domains.wiki.description_labels`). A domain not listed has
#: :data:`DEFAULT_BASELINES`.
TABLE2_BASELINES: dict[str, Baselines] = {
    "proteins": Baselines(BASELINE_ARM, "same-family"),
    "abstracts": Baselines(BASELINE_ARM, None),
    "networks": Baselines(BASELINE_ARM, "multitask"),
    "wiki": Baselines(BASELINE_ARM, "multitask"),
}
DEFAULT_BASELINES = Baselines(BASELINE_ARM, None)
#: Table 2's two comparisons, in column order.
COLUMNS = ("per-token", "per-sample")
#: The CSV's columns, one row per (task, evaluation, SIPT arm, comparison); ``detectable_rre`` is the
#: smallest mean RRE its seeds detect (paired t-test, two-sided 5 %, power 0.8, at the RRE's sd over
#: seeds): what a ``∼`` could have missed.
CSV_COLUMNS = (
    "domain",
    "task",
    "evaluation",
    "method",
    "comparison",
    "baseline",
    "status",
    "n_seeds",
    "baseline_error",
    "model_error",
    "rre_mean",
    "rre_sd",
    "p_value",
    "detectable_rre",
    "mark",
)
#: The numbers of a comparison that was made (:class:`~sipt_lab.evaluation.comparison.Comparison` fields).
NUMBERS = CSV_COLUMNS[8:13]
TABLE2_FILES = ("table2.md", "table2.csv", "table2.tex")


def change_mark(n_seeds: int, p_value: float, baseline_error: float, model_error: float, significance: float) -> str:
    """``↑`` (SIPT's mean error lower, p < ``significance``), ``↓`` (higher, p < ``significance``),
    ``∼`` (no significant change, or no difference at all: p undefined over several seeds) or
    ``n/a`` (one seed: no test)."""
    if n_seeds < 2:
        return "n/a"
    if math.isnan(p_value) or p_value >= significance:
        return "∼"
    return "↑" if model_error < baseline_error else "↓"


def table2_rows(tasks: list[TaskRuns], significance: float = 0.1) -> list[dict]:
    """One row (:data:`CSV_COLUMNS`) per task, evaluation, SIPT arm and comparison (:data:`COLUMNS`)."""
    rows = []
    for task in tasks:
        baselines = TABLE2_BASELINES.get(task.domain, DEFAULT_BASELINES)
        for part in task.parts:
            for method in sipt_arms(task) or ["sipt"]:
                for column, baseline in zip(COLUMNS, (baselines.per_token, baselines.per_sample), strict=True):
                    rows.append(_compare(task, part, method, column, baseline, significance))
    return rows


def _compare(task: TaskRuns, part: str, method: str, column: str, baseline: str | None, significance: float) -> dict:
    row = {"domain": task.domain, "task": task.task, "evaluation": part, "method": method, "comparison": column}
    row |= {"baseline": baseline or "", "n_seeds": 0, **dict.fromkeys(NUMBERS), "detectable_rre": None, "mark": ""}
    if baseline is None:
        return row | {"status": "no baseline"}
    base_arm = find_arm(task, baseline)
    errors = [_errors(task, name, part) for name in (base_arm, method)]
    if not all(errors):
        return row | {"status": "not run"}
    seeds = sorted(set(errors[0]) & set(errors[1]))
    if not seeds:
        return row | {"status": "no paired seeds"}
    c = compare_errors(
        [errors[0][s] for s in seeds],
        [errors[1][s] for s in seeds],
        task=f"{task.domain}:{task.task} ({part})",
        method=method,
        baseline=base_arm,
    )
    return row | {
        "baseline": base_arm,
        "status": "ok",
        "n_seeds": c.n_seeds,
        **{name: getattr(c, name) for name in NUMBERS},
        "detectable_rre": minimum_detectable_effect(c.rre_sd, c.n_seeds),
        "mark": change_mark(c.n_seeds, c.p_value, c.baseline_error, c.model_error, significance),
    }


def _errors(task: TaskRuns, arm: str | None, part: str) -> dict[int, float]:
    """Seed -> the arm's error on ``part`` (``{}`` when the arm or its scores there are missing)."""
    if arm is None or arm not in task.arms:
        return {}
    entry, kind = task.arms[arm].entry, get_task_kind(task.kind)
    scores = entry["scores"].get(part) or []
    return {seed: kind.error(metrics) for seed, metrics in zip(entry["seeds"], scores) if metrics is not None}


#: What a comparison that was not made shows in the Markdown and LaTeX tables.
STATUS_TEXT = {"not run": "not run", "no baseline": "N/A", "no paired seeds": "no paired seeds"}


def _rre_text(row: dict) -> str:
    if row["status"] != "ok":
        return STATUS_TEXT[row["status"]]
    if row["rre_mean"] is None or math.isnan(row["rre_mean"]):
        return "undefined (baseline error 0)"
    sd = "" if math.isnan(row["rre_sd"]) else f" ± {100 * row['rre_sd']:.1f}"
    return f"{100 * row['rre_mean']:+.1f}%{sd}"


def _p_text(row: dict) -> str:
    if row["status"] != "ok":
        return "-"
    p = "-" if math.isnan(row["p_value"]) else f"{row['p_value']:.3g}"
    return f"{p} ({row['n_seeds']})"


def _wide(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Table 2's header and rows: per task, evaluation and SIPT arm, RRE / Δ / p of each comparison."""
    header = ["domain", "task", "evaluation", "SIPT arm"]
    header += [name for column in COLUMNS for name in (f"RRE vs {column}", "Δ", "p (n)")]
    grouped: dict[tuple, list[str]] = {}
    for row in rows:
        key = (row["domain"], row["task"], row["evaluation"], row["method"])
        grouped.setdefault(key, list(key)).extend([_rre_text(row), row["mark"] or "-", _p_text(row)])
    return header, list(grouped.values())


def _legend(rows: list[dict], significance: float) -> list[str]:
    domains = dict.fromkeys(row["domain"] for row in rows)
    named = "; ".join(
        f"{d}: per-token {b.per_token}, per-sample {b.per_sample or 'none (N/A)'}"
        for d in domains
        for b in [TABLE2_BASELINES.get(d, DEFAULT_BASELINES)]
    )
    return [
        "RRE = (baseline error - SIPT error) / baseline error, error = 1 - the task's primary metric; mean ± sd "
        "(percentage points) over the n seeds both arms ran; p (n): the paired t-test's p-value and n.",
        f"Δ: paired t-test of the per-seed errors, ↑ SIPT better and ↓ worse at p < {significance:g}, ∼ no "
        "significant change, n/a one seed. N/A: the paper has no per-sample baseline for the domain; not run: the "
        "runs hold no such arm or evaluation.",
        f"Baseline arms: {named}.",
    ]


def table2_markdown(rows: list[dict], significance: float = 0.1) -> str:
    """Table 2 as a Markdown table with its legend."""
    header, body = _wide(rows)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join([*lines, "", *_legend(rows, significance)]) + "\n"


#: Text -> LaTeX, applied in order (backslash first).
LATEX_ESCAPES = (
    ("\\", r"\textbackslash{}"),
    ("&", r"\&"),
    ("%", r"\%"),
    ("_", r"\_"),
    ("#", r"\#"),
    ("±", r"$\pm$"),
    ("↑", r"$\uparrow$"),
    ("↓", r"$\downarrow$"),
    ("∼", r"$\sim$"),
    ("<", r"$<$"),
    ("Δ", r"$\Delta$"),
    ("λ", r"$\lambda$"),
)


def _latex(text: str) -> str:
    for plain, escaped in LATEX_ESCAPES:
        text = text.replace(plain, escaped)
    return text


def table2_latex(rows: list[dict], significance: float = 0.1) -> str:
    """Table 2 as a LaTeX ``tabular`` (booktabs rules) with its legend as a comment."""
    header, body = _wide(rows)
    lines = [f"% {_latex(line)}" for line in _legend(rows, significance)]
    lines += [r"\begin{tabular}{llll" + "lcl" * len(COLUMNS) + "}", r"\toprule"]
    lines.append(" & ".join(_latex(h) for h in header) + r" \\")
    lines.append(r"\midrule")
    lines += [" & ".join(_latex(cell) for cell in cells) + r" \\" for cells in body]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def run_domain_table(config: DomainTableConfig, out: str | Path, *, overwrite: bool = False, log=None) -> list[dict]:
    """Read the runs, build Table 2 and write :data:`TABLE2_FILES` atomically into ``out`` (its own
    directory, under :func:`~sipt_lab.core.outputs.run_output`'s rule: an earlier table there is
    replaced only with ``overwrite``); returns the rows. The runs are checked before ``out`` is touched."""
    rows = table2_rows(merge_runs(list(config.runs)), config.significance)
    with outputs.run_output(
        out, "domain table", finished="table2.csv", overwrite=overwrite, resumable=False, log=log
    ) as out_dir:
        outputs.record_files(out_dir, list(TABLE2_FILES))
        write_text_atomic(out_dir / "table2.md", table2_markdown(rows, config.significance))
        write_text_atomic(out_dir / "table2.tex", table2_latex(rows, config.significance))
        write_results_csv(rows, out_dir / "table2.csv", CSV_COLUMNS)  # numbers empty where not compared
    return rows
