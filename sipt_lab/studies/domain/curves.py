"""Fine-tuning curves over finished domain runs (``sipt-lab domain curves``, the paper's Figure 3):
a task's validation (or test) score against the fine-tuning step, SIPT against the domain's
per-token and per-sample baselines (:data:`~sipt_lab.studies.domain.table2.TABLE2_BASELINES`),
mean ± sd over seeds, one panel per task.

The scores are the ``history.csv`` a domain run writes (every fully fine-tuned arm's validation and
test metrics after each pass, per learning rate); each seed's curve is the one of the learning
rate its fine-tuning chose (``finetune_lr`` of the run's summary). Curves are aligned by
evaluation: point ``k`` is every seed's ``k``-th evaluation, drawn at the mean step of the
``k``-th evaluations of the panel's arms, averaged over the seeds still training (early
stopping ends some sooner: ``n_seeds`` in ``curves.csv`` says how many remain).
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np

from sipt_lab.core import outputs
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import read_text_file
from sipt_lab.core.stats import mean_sd, spread_phrase
from sipt_lab.grid.results_table import write_results_csv
from sipt_lab.jobs.finetune import HISTORY_CSV
from sipt_lab.studies.domain.report_options import DomainCurvesConfig
from sipt_lab.studies.domain.saved_runs import TaskRuns, find_arm, merge_runs, sipt_arms
from sipt_lab.studies.domain.table2 import DEFAULT_BASELINES, TABLE2_BASELINES
from sipt_lab.training.finetune import HISTORY_COLUMNS
from sipt_lab.viz.plots import LinePanel, line_panels

CURVES_FILES = ("curves.png", "curves.pdf", "curves.csv")
CURVE_COLUMNS = ("domain", "task", "role", "arm", "point", "step", "n_seeds", "mean", "sd")
#: Column -> how a ``history.csv`` value is read.
_HISTORY_TYPES = {"seed": int, "lr": float, "epoch": int, "step": int, "value": float}


def read_history(run: Path) -> list[dict]:
    """The rows of ``run/history.csv`` (:data:`~sipt_lab.training.finetune.HISTORY_COLUMNS`, typed);
    SiptError when the run has none or it is damaged."""
    path = run / HISTORY_CSV
    if not path.is_file():
        raise SiptError(
            f"{run} has no {HISTORY_CSV}: no arm was fully fine-tuned there (a probe-only run), or its cells "
            "were computed before fine-tuning histories were kept; run `domain run` with mode full or both into a "
            "new directory"
        )
    reader = csv.DictReader(io.StringIO(read_text_file(path, "fine-tuning history")))
    if tuple(reader.fieldnames or ()) != HISTORY_COLUMNS:
        raise SiptError(f"{path} does not have the columns {', '.join(HISTORY_COLUMNS)}; run its domain run again")
    try:
        return [{key: _HISTORY_TYPES.get(key, str)(value) for key, value in row.items()} for row in reader]
    except (TypeError, ValueError):
        raise SiptError(f"{path} has a malformed row; run its domain run again to rewrite it") from None


def seed_curves(history: list[dict], entry: dict, arm: str, split: str, metric: str) -> list[tuple[np.ndarray, ...]]:
    """``[(steps (k,), values (k,))]`` per seed of ``arm`` (its summary ``entry``) that has a
    history: ``metric`` on ``split`` at the seed's chosen learning rate, in step order."""
    curves = []
    for i, seed in enumerate(entry["seeds"]):
        rows = [r for r in history if r["model"] == arm and r["seed"] == seed and r["split"] == split]
        if not rows:
            continue
        chosen = (entry.get("finetune_lr") or [None] * len(entry["seeds"]))[i]
        rates = sorted({r["lr"] for r in rows})
        if chosen is None and len(rates) > 1:
            raise SiptError(f"{arm} seed {seed} tried several learning rates and its summary names none; rerun it")
        rows = [r for r in rows if math.isclose(r["lr"], rates[0] if chosen is None else chosen, rel_tol=1e-5)]
        if not any(r["metric"] == metric for r in rows):
            metrics = sorted({r["metric"] for r in rows}) or ["none at its chosen learning rate"]
            raise SiptError(f"{arm} has no fine-tuning metric {metric!r}; choose one of {', '.join(metrics)}")
        rows = [r for r in rows if r["metric"] == metric]
        rows.sort(key=lambda r: r["step"])
        curves.append((np.array([r["step"] for r in rows], float), np.array([r["value"] for r in rows], float)))
    return curves


def task_curves(task: TaskRuns, histories: dict[Path, list[dict]], split: str, metric: str) -> tuple[list, list]:
    """``(rows, notes)``: the task's curve points (:data:`CURVE_COLUMNS` rows, one per arm and
    point) for its SIPT arms and baselines, and a line per series that could not be drawn."""
    baselines = TABLE2_BASELINES.get(task.domain, DEFAULT_BASELINES)
    roles = [("SIPT", name) for name in sipt_arms(task)]
    for role, name in (("per-token", baselines.per_token), ("per-sample", baselines.per_sample)):
        if name is not None:
            roles.append((role, find_arm(task, name) or name))
    rows, notes, where = [], [], f"{task.domain}:{task.task}"
    for role, arm in roles:
        if arm not in task.arms:
            notes.append(f"{where}: {role} baseline {arm} not run")
            continue
        run_arm = task.arms[arm]
        curves = seed_curves(histories[run_arm.run], run_arm.entry, arm, split, metric)
        if not curves:
            notes.append(
                f"{where}: {arm} has no fine-tuning history (not fully fine-tuned, or computed before histories were kept)"
            )
            continue
        for k in range(max(len(steps) for steps, _ in curves)):
            reached = [(steps[k], values[k]) for steps, values in curves if len(steps) > k]
            mean, sd = mean_sd(value for _, value in reached)
            point = {"point": k + 1, "step": float(np.mean([s for s, _ in reached])), "n_seeds": len(reached)}
            rows.append(
                {"domain": task.domain, "task": task.task, "role": role, "arm": arm, **point, "mean": mean, "sd": sd}
            )
    return rows, notes


def curves_panel(task: TaskRuns, rows: list[dict], split: str, metric: str) -> LinePanel:
    """The task's panel: one line per arm over the points, at the mean step of each point."""
    points = sorted({r["point"] for r in rows})
    steps = [float(np.mean([r["step"] for r in rows if r["point"] == k])) for k in points]
    series = {}
    for role, arm in dict.fromkeys((r["role"], r["arm"]) for r in rows):
        by_point = {r["point"]: r for r in rows if r["arm"] == arm}
        mean = [by_point[k]["mean"] if k in by_point else math.nan for k in points]
        sd = [by_point[k]["sd"] if k in by_point else math.nan for k in points]
        series[f"{role}: {arm}"] = (mean, sd)
    return LinePanel(f"{task.domain}: {task.task}", "fine-tuning step", f"{split} {metric}", steps, series)


def run_domain_curves(
    config: DomainCurvesConfig, out: str | Path, *, overwrite: bool = False, log=None
) -> tuple[list[dict], list[str]]:
    """Read the runs, draw one panel per task and write :data:`CURVES_FILES` atomically into
    ``out`` (:func:`~sipt_lab.core.outputs.run_output`'s rule; the runs are checked first);
    returns ``(rows, notes)`` as :func:`task_curves`."""
    tasks = merge_runs(list(config.runs))
    histories = {run: read_history(run) for task in tasks for run in task.runs}
    rows, notes, panels = [], [], []
    for task in tasks:
        metric = config.metric or task.primary
        task_rows, task_notes = task_curves(task, histories, config.split, metric)
        rows += task_rows
        notes += task_notes
        if task_rows:
            panels.append(curves_panel(task, task_rows, config.split, metric))
    if not panels:
        raise SiptError("the runs hold no fine-tuning history to draw; " + "; ".join(notes))
    with outputs.run_output(
        out, "domain curves", finished="curves.csv", overwrite=overwrite, resumable=False, log=log
    ) as out_dir:
        outputs.record_files(out_dir, list(CURVES_FILES))
        line_panels(
            out_dir / "curves",
            [panels],
            title=f"{', '.join(sorted({row['domain'] for row in rows}))}: fine-tuning {config.split} score against step "
            f"({spread_phrase(max(int(row['n_seeds']) for row in rows))})",
            xticks=False,
        )
        write_results_csv(rows, out_dir / "curves.csv", CURVE_COLUMNS)
    return rows, notes
