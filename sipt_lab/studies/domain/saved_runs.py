"""Finished ``domain run`` directories read back for the reports across runs (``domain table``,
``domain curves``): each run's ``summary.json``, the runs merged per task, and the checks that make
a merge sound.

Runs of one domain and task merge into one :class:`TaskRuns`, their arms paired by seed (a later
run with a per-sample baseline beside an earlier one without). They must agree on everything that
makes seed ``s`` one experiment: the slice, the warm start, the pre-training and fine-tuning
budgets (their summaries' ``setting`` but :data:`UNPAIRED_KEYS`), and an arm may come from one run
only. All the runs of one report must be of one preset (a table at two scales is refused).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import read_text_file, shorten
from sipt_lab.data.tasks import TASK_KINDS
from sipt_lab.grid.results_table import flatten

SUMMARY_JSON = "summary.json"
#: Setting keys (flattened) that may differ between runs merged by seed: where the data and the
#: devices were, and which evaluations ran (a missing one is reported as not run).
UNPAIRED_KEYS = ("data", "mode", "pretrain.device", "finetune.device")
#: The reports' order of evaluations: the paper's Table 2 is full fine-tuning's.
PARTS = ("full", "probe")


@dataclass(frozen=True)
class RunArm:
    """One arm of a merged task: its entry of ``summary.json``'s ``arms`` (``seeds``, per-seed
    ``scores`` and ``finetune_lr``, means) and the run directory it came from."""

    entry: dict
    run: Path


@dataclass(frozen=True)
class TaskRuns:
    """The arms of every run of one domain and task.

    Attributes:
        domain, task: names; kind, primary: the task kind and its primary metric (error = 1 - it).
        arms: arm name (``lm``, ``sipt[graph, chosen λ]`` ...) -> :class:`RunArm`.
        runs: the run directories merged, in the order given.
    """

    domain: str
    task: str
    kind: str
    primary: str
    arms: dict[str, RunArm]
    runs: tuple[Path, ...]

    @property
    def parts(self) -> list[str]:
        """The evaluations (:data:`PARTS` order) some arm has scores for."""
        return [part for part in PARTS if any(part in arm.entry["scores"] for arm in self.arms.values())]


def read_summary(run: str | Path) -> dict:
    """``run/summary.json`` of a finished ``domain run``; a one-line SiptError when ``run`` is not a
    directory, holds no summary, or holds one from before per-seed scores were kept."""
    run = Path(run)
    if run.is_file():
        raise SiptError(
            f"{run} is a file, not a run directory; pass the output directory of `sipt-lab domain run` "
            f"(the folder that holds {SUMMARY_JSON})"
        )
    if not run.is_dir():
        raise SiptError(f"run directory {run} does not exist; pass the output directory of `sipt-lab domain run`")
    path = run / SUMMARY_JSON
    if not path.is_file():
        raise SiptError(
            f"{run} holds no {SUMMARY_JSON}: not a finished domain run; finish it by running its "
            "`sipt-lab domain run` command again"
        )
    try:
        summary = json.loads(read_text_file(path, "run summary"))
    except ValueError:
        raise SiptError(
            f"{path} is not valid JSON; run its `sipt-lab domain run` command again to rewrite it"
        ) from None
    if not isinstance(summary, dict) or not all(key in summary for key in ("domain", "task", "arms", "primary")):
        raise SiptError(
            f"{path} is not the summary of a domain run; pass the output directory of `sipt-lab domain run`"
        )
    if "setting" not in summary or (
        isinstance(summary["arms"], dict)
        and any(isinstance(entry, dict) and "scores" not in entry for entry in summary["arms"].values())
    ):
        raise SiptError(
            f"{path} was written by an older sipt-lab, without per-seed scores; run its `sipt-lab domain run` "
            "command again (finished cells are reused) to rewrite it"
        )
    problem = summary_problem(summary)
    if problem:
        raise SiptError(
            f"{path} is damaged ({problem}); run its `sipt-lab domain run` command again (finished cells are "
            "reused) to rewrite it"
        )
    return summary


def summary_problem(summary: dict) -> str | None:
    """What makes a domain run's summary unreadable by the reports (a field of the wrong type, an
    unknown task kind, per-seed lists that do not match the seeds), or None."""
    for key in ("domain", "task", "kind", "primary"):
        if not isinstance(summary.get(key), str):
            return f"{key} is not a string"
    if summary["kind"] not in TASK_KINDS:
        return f"unknown task kind {shorten(summary['kind'])}"
    if not isinstance(summary["setting"], dict):
        return "setting is not a mapping"
    if not isinstance(summary["arms"], dict) or not summary["arms"]:
        return "arms is not a mapping of arms"
    for name, entry in summary["arms"].items():
        seeds = entry.get("seeds") if isinstance(entry, dict) else None
        if not isinstance(seeds, list) or not seeds:
            return f"arm {shorten(name)} has no list of seeds"
        scores = entry["scores"]
        if not isinstance(scores, dict) or not all(
            isinstance(per_seed, list)
            and len(per_seed) == len(seeds)
            and all(metrics is None or isinstance(metrics, dict) for metrics in per_seed)
            for per_seed in scores.values()
        ):
            return f"the scores of arm {shorten(name)} are not one mapping of metrics per seed"
        rates = entry.get("finetune_lr")
        if rates is not None and not (isinstance(rates, list) and len(rates) == len(seeds)):
            return f"the finetune_lr of arm {shorten(name)} is not one value per seed"
    return None


def merge_runs(runs: list[str | Path]) -> list[TaskRuns]:
    """The runs' arms merged per (domain, task), in the order the tasks first appear; SiptError
    (one line, naming the runs) for runs of different presets, runs of one task whose settings
    differ (naming the first differing setting), an arm in two runs of one task, or a run given twice."""
    paths = [Path(run) for run in runs]
    seen = {}
    for path in paths:
        if path.resolve() in seen:
            raise SiptError(f"run {path} is given twice (also as {seen[path.resolve()]}); pass each run once")
        seen[path.resolve()] = path
    summaries = [(path, read_summary(path)) for path in paths]
    first_path, first = summaries[0]
    for path, summary in summaries[1:]:
        if summary.get("preset") != first.get("preset"):
            raise SiptError(
                f"runs {first_path} (preset {_preset(first)}) and {path} (preset {_preset(summary)}) were made "
                "at different presets; a report compares runs of one preset, so pass runs of one preset"
            )
    firsts: dict[tuple[str, str], tuple[Path, dict, dict]] = {}  # the first run of each task, its summary and setting
    arms: dict[tuple[str, str], dict[str, RunArm]] = {}
    for path, summary in summaries:
        key = (summary["domain"], summary["task"])
        setting = {k: v for k, v in flatten(summary["setting"]).items() if k not in UNPAIRED_KEYS}
        first_run, _, first_setting = firsts.setdefault(key, (path, summary, setting))
        _check_same_setting(key, (first_run, first_setting), (path, setting))
        merged = arms.setdefault(key, {})
        for name, entry in summary["arms"].items():
            if name in merged:
                raise SiptError(
                    f"arm {name} of {key[0]}:{key[1]} is in both {merged[name].run} and {path}; pass each "
                    "arm's run once (a run with more methods repeats lm and sipt: pass it alone)"
                )
            merged[name] = RunArm(entry, path)
    return [
        TaskRuns(
            *key,
            summary["kind"],
            summary["primary"],
            arms[key],
            tuple(path for path, other in summaries if (other["domain"], other["task"]) == key),
        )
        for key, (_, summary, _) in firsts.items()
    ]


def sipt_arms(task: TaskRuns) -> list[str]:
    """The SIPT arm each graph reports: ``sipt[graph, chosen λ]`` when the run chose λ, else
    ``sipt[graph]`` (the paper's λ), in the order the arms appear."""
    graphs: dict[str, str] = {}
    for name in task.arms:
        if name.startswith("sipt["):
            graph = name.removeprefix("sipt[").removesuffix("]").split(",")[0]
            if graph not in graphs or "chosen" in name:
                graphs[graph] = name
    return list(graphs.values())


def find_arm(task: TaskRuns, method: str) -> str | None:
    """The arm of ``method`` in ``task``: named ``method`` or ``method[graph]``; None when not run.
    SiptError when it ran over several graphs (no one arm to compare with)."""
    found = [name for name in task.arms if name == method or name.startswith(f"{method}[")]
    if len(found) > 1:
        raise SiptError(
            f"{task.domain}:{task.task} has {len(found)} arms of {method} ({', '.join(found)}); "
            "pass runs with one pre-training graph for it"
        )
    return found[0] if found else None


def _check_same_setting(key: tuple[str, str], first: tuple[Path, dict], other: tuple[Path, dict]) -> None:
    (first_path, a), (path, b) = first, other
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            raise SiptError(
                f"runs {first_path} and {path} of {key[0]}:{key[1]} differ in {name} ({a.get(name)} vs "
                f"{b.get(name)}), so their seeds are not one experiment; pass runs made with the same options"
            )


def _preset(summary: dict) -> str:
    return summary.get("preset") or "not recorded"
