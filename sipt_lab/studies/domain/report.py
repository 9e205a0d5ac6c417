"""The report of a domain run: the λ each SIPT arm reports, the per-arm table, the comparisons
with LM-only and off-the-shelf, and SIPT's gain against LC as a figure."""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path

import numpy as np

from sipt_lab.core.config_io import config_to_dict
from sipt_lab.core.stats import mean_sd, spread_phrase
from sipt_lab.data.tasks import get_task_kind
from sipt_lab.evaluation.comparison import Comparison, compare_errors, format_comparison_table
from sipt_lab.studies.domain.cells import BASELINE_ARM, CONCEPT_METHODS, DomainCell
from sipt_lab.viz.labelled_points import labelled_errorbars


def plot_rre_vs_lc(summary: dict, stem: str | Path) -> list[Path]:
    """Theorem 1 in a real domain: SIPT's relative error reduction over LM-only (mean ± sd over
    seeds, one series per evaluation) against the task's local consistency over each graph, and the
    MLSM family's (which reads no graph) as levels across LC, from the first evaluation that has
    them; no figure (``[]``) when no graph has an LC for the task."""
    sipt_arms = [name for name, entry in summary["arms"].items() if entry.get("local_consistency") is not None]
    chosen = [name for name in sipt_arms if "chosen" in name]
    graphs = chosen or sipt_arms
    if not graphs:
        return []
    series, levels = {}, {}
    for part in ("probe", "full"):
        found = {
            c["method"]: c
            for c in summary["comparisons"]
            if c["baseline"] == BASELINE_ARM and c["task"].endswith(f"({part})")
        }
        if all(name in found for name in graphs):
            series[part] = (
                [summary["arms"][g]["local_consistency"] for g in graphs],
                [found[g]["rre_mean"] for g in graphs],
                [found[g]["rre_sd"] for g in graphs],
            )
        flat = [name for name in CONCEPT_METHODS if name in found]
        if flat and not levels:
            levels = {f"{name} ({part})": (found[name]["rre_mean"], found[name]["rre_sd"]) for name in flat}
    return labelled_errorbars(
        stem,
        series,
        [g.removeprefix("sipt[").removesuffix("]").split(",")[0] for g in graphs],
        xlabel=f"local consistency of {summary['task']} over G_PT (pre-training nodes)",
        ylabel="relative error reduction vs LM-only",
        title=f"SIPT on {summary['domain']}: relative error reduction in {summary['task']} over LM-only vs LC "
        f"({spread_phrase(max(len(summary['arms'][g]['seeds']) for g in graphs))})",
        note="Theorem 1: the gain should grow with LC and vanish near chance LC"
        + ("; intra-sample methods (dotted) read no graph" if levels else ""),
        levels=levels,
    )


#: The paper's λ_SI, reported as its own SIPT arm whenever the grid holds it.
PAPER_LAMBDA = 0.1


def choose_lambdas(rows: list[dict]) -> list[dict]:
    """The rows each arm reports: the non-SIPT rows; per (SIPT graph, seed) the row at the paper's
    λ when the grid holds it, and, when the grid has several values, the row at the λ with the best
    validation link MRR as arm ``sipt[graph, chosen λ]``."""
    chosen = [row for row in rows if row["arm"] != "sipt"]
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["arm"] == "sipt":
            groups.setdefault((row["graph"], row["seed"]), []).append(row)
    for group in groups.values():
        chosen += [row for row in group if row["lambda_si"] == PAPER_LAMBDA]
        if len(group) > 1:
            best = max(group, key=lambda row: (row["validation_links"]["mrr"], -row["lambda_si"]))
            chosen.append({**best, "selection": "chosen λ"})
    return chosen


def reported_arms(rows: list[dict]) -> dict[str, list[dict]]:
    """Arm name (``lm``, ``sipt[graph]``, ``sipt[graph, chosen λ]`` ...) -> the rows it reports
    (:func:`choose_lambdas`), in seed order."""
    arms: dict[str, list[dict]] = {}
    for row in sorted(choose_lambdas(rows), key=lambda r: r["seed"]):
        arms.setdefault(_arm_name(row), []).append(row)
    return arms


def finetune_history(rows: list[dict]) -> list[dict]:
    """The full fine-tuning histories of the reported arms as rows of
    :data:`~sipt_lab.training.finetune.HISTORY_COLUMNS` (``model`` the arm's name, ``part`` full);
    cells computed before histories were kept add none."""
    return [
        {"model": name, "part": "full", "seed": row["seed"], **entry}
        for name, runs in reported_arms(rows).items()
        for row in runs
        for entry in row.get("finetune_history", ())
    ]


def comparison_task(domain: str, task: str, part: str) -> str:
    """The ``task`` of a domain run's comparison: the domain's task and the evaluation, e.g.
    ``wiki:category (probe)``."""
    return f"{domain}:{task} ({part})"


def summarize_domain(rows: list[dict], cell: DomainCell, preset: str | None = None) -> dict:
    """Per arm: mean ± sd of each score over seeds, and each seed's scores (``scores``: part ->
    metrics per seed, in ``seeds`` order) and fine-tuning learning rate (``finetune_lr``, None
    where unknown); comparisons (RRE, paired t-test) of every arm with LM-only and of SIPT with
    off-the-shelf; LC of the task over each SIPT graph as pre-trained on (``local_consistency``:
    pre-training nodes, held-out edges removed) and over the whole graph
    (``local_consistency_all_splits``: the labelled samples of every split). ``setting``: what
    every arm shares (``cell``'s fields but arm, graph, λ and seed); ``preset``: the budget's name
    (None: not known)."""
    kind = get_task_kind(rows[0]["kind"])
    arms = reported_arms(rows)
    table = {}
    for name, runs in arms.items():
        entry = {
            "seeds": [r["seed"] for r in runs],
            "lambda_si": [r["lambda_si"] for r in runs],
            "scores": {part: [r["scores"].get(part) for r in runs] for part in runs[0]["scores"]},
            "finetune_lr": [r.get("finetune_lr") for r in runs],
        }
        for part in runs[0]["scores"]:
            for metric in runs[0]["scores"][part]:
                mean, sd = mean_sd(
                    r["scores"][part].get(metric) for r in runs
                )  # cells stored before a metric existed lack it
                entry[f"{part}.{metric}"] = {"mean": mean, "sd": sd}
        if "concepts" in runs[0]:
            entry["concept_codes_nonzero_median"] = float(np.mean([r["concepts"]["nonzero_median"] for r in runs]))
        if "graph_summary" in runs[0]:
            for key in ("local_consistency", "local_consistency_all_splits"):
                lcs = [r["graph_summary"].get(key) for r in runs]  # cells stored before a field existed lack it
                entry[key] = None if None in lcs else float(np.mean(lcs))
            entry["n_edges"] = float(np.mean([r["graph_summary"]["n_edges"] for r in runs]))
            entry["coverage"] = float(np.mean([r["graph_summary"]["coverage"] for r in runs]))
        table[name] = entry
    comparisons = []
    for baseline in (BASELINE_ARM, "off-the-shelf"):
        for name, runs in arms.items():
            if name == baseline or (baseline == "off-the-shelf" and name == BASELINE_ARM):
                continue  # LM-only vs off-the-shelf is already listed the other way round
            paired = {r["seed"]: r for r in arms[baseline]}
            for part in runs[0]["scores"]:
                pairs = [(paired[r["seed"]], r) for r in runs if r["seed"] in paired]
                comparisons.append(
                    compare_errors(
                        [kind.error(b["scores"][part]) for b, _ in pairs],
                        [kind.error(m["scores"][part]) for _, m in pairs],
                        task=comparison_task(cell.domain, cell.task, part),
                        method=name,
                        baseline=baseline,
                    )
                )
    shared = {f.name for f in dataclasses.fields(DomainCell)} - {"arm", "graph", "lambda_si", "seed"}
    return {
        "domain": cell.domain,
        "task": cell.task,
        "kind": kind.name,
        "primary": kind.primary,
        "preset": preset,
        "setting": {key: value for key, value in config_to_dict(cell).items() if key in shared},
        "arms": table,
        "comparisons": [dataclasses.asdict(c) for c in comparisons],
    }


def format_domain_summary(summary: dict) -> str:
    """The per-arm table (scores mean ± sd, LC over G_PT as pre-trained and over every split) and
    the comparison table."""
    metrics = sorted({key for entry in summary["arms"].values() for key in entry if "." in key})
    lines = [
        f"{summary['domain']}:{summary['task']} ({summary['kind']}; errors are 1 - {summary['primary']})",
        "LC: the task's local consistency over the graph the model was pre-trained on (pre-training "
        "nodes, held-out edges removed); LC (all splits): over the whole graph, validation and test edges included",
        "",
        "| arm | LC | LC (all splits) | " + " | ".join(metrics) + " |",
        "|---|---|---|" + "---|" * len(metrics),
    ]
    for name, entry in summary["arms"].items():
        lcs = [
            f"{entry[key]:.3f}" if entry.get(key) is not None else "-"
            for key in ("local_consistency", "local_consistency_all_splits")
        ]
        cells = [f"{entry[m]['mean']:.3f} ± {entry[m]['sd']:.3f}" if m in entry else "-" for m in metrics]
        lines.append(f"| {name} | " + " | ".join(lcs + cells) + " |")
    lines += ["", format_comparison_table([Comparison(**c) for c in summary["comparisons"]])]
    return "\n".join(lines)


def arms_csv(summary: dict) -> str:
    """``arms.csv`` of a domain run: one row per arm of ``summary``: ``arm``; ``lambda`` (its λ_SI,
    the seeds' values joined by ``/`` where they differ); ``lc`` and ``lc_all_splits`` (the task's
    local consistency over the arm's graph, empty without one); each score as
    ``<evaluation>_<metric>_mean`` / ``_sd`` (in [0, 1]); and per evaluation the relative error
    reduction against LM-only, ``rre_<evaluation>_mean`` / ``_sd`` / ``_p`` (the paired t-test's p;
    empty for LM-only itself)."""
    arms = summary["arms"]
    metrics = sorted({key for entry in arms.values() for key in entry if "." in key})
    parts = sorted({metric.split(".")[0] for metric in metrics})
    against_lm = {(c["method"], c["task"]): c for c in summary["comparisons"] if c["baseline"] == BASELINE_ARM}
    columns = ["arm", "lambda", "lc", "lc_all_splits"]
    columns += [f"{m.replace('.', '_')}_{stat}" for m in metrics for stat in ("mean", "sd")]
    columns += [f"rre_{part}_{stat}" for part in parts for stat in ("mean", "sd", "p")]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for name, entry in arms.items():
        row = [name, "/".join(f"{value:g}" for value in dict.fromkeys(entry.get("lambda_si", [])))]
        row += [entry.get(key) for key in ("local_consistency", "local_consistency_all_splits")]
        row += [entry[m][stat] if m in entry else None for m in metrics for stat in ("mean", "sd")]
        for part in parts:
            found = against_lm.get((name, comparison_task(summary["domain"], summary["task"], part)))
            row += [found[key] if found else None for key in ("rre_mean", "rre_sd", "p_value")]
        writer.writerow(["" if value is None else value for value in row])
    return buffer.getvalue()


def _arm_name(row: dict) -> str:
    if row["arm"] != "sipt":
        return row["arm"] if row["graph"] is None else f"{row['arm']}[{row['graph']}]"
    return f"sipt[{row['graph']}, {row['selection']}]" if "selection" in row else f"sipt[{row['graph']}]"
