"""The atlas's summary: its runs (:func:`atlas_runs`), one row per pair and budget
(:func:`atlas_table`), the budget curve (:func:`budget_table`), the predictor with its grouped
validation (``fit.json``, :func:`~sipt_lab.jobs.gain_predictor.fit_atlas`), the losses and the figure."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from sipt_lab.core import fileio
from sipt_lab.core.errors import SiptError
from sipt_lab.core.stats import mean_ci, mean_sd
from sipt_lab.studies.lc.atlas_config import CONTROL_GRAPHS, MIN_PAIRS, AtlasConfig
from sipt_lab.studies.lc.atlas_pairs import CORPUS_NAME, GRAPH_K, atlas_draw, never_seen_positions

#: Columns of ``results.csv``: one row per language, task, arm, budget, split seed, seed and metric.
RESULT_COLUMNS = ("language", "task", "arm", "steps", "split_seed", "seed", "metric", "value")
#: Columns of ``runs.csv``: one row per natural pair's run at one budget (a draw and seed), what
#: the predictor is fitted and validated on: the pair's LC and the init's consistency in that draw,
#: and the run's gain of SIPT over LM-only in the primary metric.
RUN_COLUMNS = (
    "language",
    "task",
    "graph",
    "steps",
    "split_seed",
    "seed",
    "labelled",
    "lc",
    "encoder_consistency",
    "lm",
    "sipt",
    "gain",
)
#: Columns of ``atlas.csv``: one row per pair and budget: what produced it, its LC and the
#: encoder's, and SIPT's gain over LM-only and over the init (mean and 95 % t-interval over the
#: replicates, the t-test's p-value and whether it stays below 0.05 after Holm's adjustment over
#: the budget's natural pairs), then the gain over LM-only in every other metric.
ATLAS_COLUMNS = (
    "corpus",
    "language",
    "task",
    "classes",
    "graph",
    "kind",
    "k",
    "q",
    "n_pretrain",
    "labelled_pretrain",
    "n_never_seen",
    "test",
    "replicates",
    "steps",
    "init",
    "lambda_si",
    "metric",
    "edges",
    "lc",
    "lc_sd",
    "encoder_consistency",
    "lc_minus_encoder",
    "lm",
    "sipt",
    "gain",
    "gain_se",
    "gain_low",
    "gain_high",
    "gain_p",
    "holm_significant",
    "gain_over_init",
    "gain_over_init_low",
    "gain_over_init_high",
)
#: Columns of ``budgets.csv``: per budget and language, LM-only minus the init (mean and 95 %
#: t-interval over tasks and replicates) and the natural pairs' gains: how many, the median
#: per-pair standard error beside the spread (sd) of the pair means, how many are distinguishable
#: from 0 at 0.05, raw and after Holm's adjustment.
BUDGET_COLUMNS = (
    "steps",
    "language",
    "lm_minus_init",
    "lm_minus_init_low",
    "lm_minus_init_high",
    "pairs",
    "gain_mean",
    "pair_se_median",
    "pair_spread",
    "distinguishable",
    "distinguishable_holm",
)
#: Columns of ``validation.csv``: :func:`~sipt_lab.jobs.gain_predictor.validation_row` per budget.
VALIDATION_COLUMNS = (
    "steps",
    "scheme",
    "model",
    "runs",
    "groups",
    "mae",
    "sign_accuracy",
    "decided",
    "decided_right",
    "coverage",
    "coverage_low",
    "coverage_high",
)
#: Columns of ``losses.csv``: every trained arm's loss terms per optimiser step.
LOSS_COLUMNS = ("language", "arm", "split_seed", "seed", "step", "loss", "mlm", "si")
#: Significance level of the per-pair tests.
ALPHA = 0.05


def other_metrics(config: AtlasConfig) -> list[str]:
    """The study's metrics other than the primary one, in order."""
    from sipt_lab.studies.names import STUDY_METRICS

    return [metric for metric in STUDY_METRICS if metric != config.metric and not metric.startswith("finetune_")]


def metric_columns(config: AtlasConfig) -> list[str]:
    """``gain_<metric>``, ``_low``, ``_high`` of every metric but the primary one (the gain over LM-only)."""
    return [f"gain_{metric}{end}" for metric in other_metrics(config) for end in ("", "_low", "_high")]


def regime(config: AtlasConfig) -> dict:
    """What the atlas's numbers are for: the settings a prediction from it assumes."""
    train = config.train
    return {
        "init": config.init,
        "pooling": config.pooling,
        "max_len": train.max_len,
        "batch_size": train.batch_size,
        "budgets": list(config.budgets),
        "lr": train.lr,
        "warmup": train.warmup,
        "schedule": f"{train.schedule} over the longest budget, read after each",
        "lambda_si": train.lambda_si,
        "loss": train.loss,
        "head_warmup": train.head_warmup,
        "k": config.k,
        "metric": config.metric,
        "languages": list(config.languages),
        "corpus": CORPUS_NAME,
        "n_pretrain": config.n_pretrain,
        "n_never_seen": config.n_never_seen,
        "replicates": len(config.split_seeds) * config.seeds,
    }


def write_atlas(out_dir: Path, config: AtlasConfig, arms: list[tuple], log=lambda line: None) -> dict:
    """``results.csv``, ``runs.csv``, ``atlas.csv``, ``budgets.csv``, ``validation.csv``,
    ``losses.csv``, ``fit.json`` and the figure in ``out_dir`` from the arms' ``(cell, result)``;
    logs the time split, one line per budget and the validation; returns the fit."""
    from sipt_lab.jobs.gain_predictor import draw_fit, fit_atlas
    from sipt_lab.studies.lc.transfer import results_csv

    for _, result in arms:  # a stored result holds an undefined LC as null, a fresh one as NaN
        for pair in result["pairs"]:
            if "lc" in pair and pair["lc"] is None:
                pair["lc"] = math.nan
    seconds = {stage: sum(result["seconds"][stage] for _, result in arms) for stage in arms[0][1]["seconds"]}
    log("atlas time: " + ", ".join(f"{stage} {value:.0f} s" for stage, value in seconds.items()))
    rows = [row for _, result in arms for row in result["rows"]]
    runs = [  # as runs.csv holds them, so that the fit is recomputed from that file exactly
        {key: float(f"{value:.6g}") if isinstance(value, float) else value for key, value in run.items()}
        for run in atlas_runs(config, arms)
    ]
    natural = [run for run in runs if math.isfinite(run["lc"])]
    pairs = {(run["language"], run["task"], run["graph"]) for run in natural}
    if len(pairs) < MIN_PAIRS:
        raise SiptError(
            f"{len(pairs)} natural pairs have an LC (a graph that links no two labelled articles has none); the "
            f"predictor needs {MIN_PAIRS}: add graphs or tasks, or more pre-training articles, and --resume (the "
            "finished arms are kept)"
        )
    table = atlas_table(config, arms)
    budgets = budget_table(config, arms, table)
    for row in budgets:
        log(
            f"{row['steps']} steps, {row['language']}: LM-only - init {row['lm_minus_init']:+.3f}; "
            f"{row['pairs']} natural pairs, mean gain {row['gain_mean']:+.3f}, per-pair se {row['pair_se_median']:.3f} "
            f"against a spread of {row['pair_spread']:.3f}; distinguishable from 0: {row['distinguishable']} "
            f"({row['distinguishable_holm']} after Holm)"
        )
    fit = fit_atlas(natural, regime(config)) | {"seconds": seconds, "pairs": len(pairs), "points": atlas_points(table)}
    write_csv = lambda name, records, columns: fileio.write_text_atomic(out_dir / name, results_csv(records, columns))
    write_csv("results.csv", rows, RESULT_COLUMNS)
    write_csv("runs.csv", runs, RUN_COLUMNS)
    write_csv("atlas.csv", table, (*ATLAS_COLUMNS, *metric_columns(config)))
    write_csv("budgets.csv", budgets, BUDGET_COLUMNS)
    write_csv("validation.csv", fit["validation"], VALIDATION_COLUMNS)
    write_csv("losses.csv", loss_rows(arms), LOSS_COLUMNS)
    fileio.write_json_atomic(out_dir / "fit.json", fit)
    draw_fit(out_dir / "atlas", fit)
    for line in validation_lines(fit):
        log(line)
    return fit


def atlas_runs(config: AtlasConfig, arms: list[tuple]) -> list[dict]:
    """One row per natural graph's run at each budget and task (:data:`RUN_COLUMNS`): the pair's LC
    and the init's consistency in the run's draw, LM-only's and SIPT's score and the gain. A pair
    whose graph links no two labelled articles has LC NaN."""
    values = _values(arms, config.metric)
    own = {(c.language, p["task"], c.split_seed, c.seed): p for c, r in arms if c.arm == "init" for p in r["pairs"]}
    runs = []
    for cell, result in arms:
        if cell.arm in ("init", "lm", *CONTROL_GRAPHS) or cell.arm.startswith("dial:"):
            continue
        for pair in result["pairs"]:
            init = own[(cell.language, pair["task"], cell.split_seed, cell.seed)]
            for steps in cell.budgets:
                key = (cell.language, pair["task"], steps, cell.split_seed, cell.seed)
                lm, sipt = values[(*key[:2], "lm", *key[2:])], values[(*key[:2], cell.arm, *key[2:])]
                runs.append(
                    {
                        "language": cell.language,
                        "task": pair["task"],
                        "graph": cell.arm,
                        "steps": steps,
                        "split_seed": cell.split_seed,
                        "seed": cell.seed,
                        "labelled": float(init["labelled"]),
                        "lc": pair["lc"],
                        "encoder_consistency": init["encoder_consistency"],
                        "lm": lm,
                        "sipt": sipt,
                        "gain": sipt - lm,
                    }
                )
    return runs


def _values(arms: list[tuple], metric: str | None = None) -> dict[tuple, float]:
    """``(language, task, arm, steps, split_seed, seed[, metric]) -> value`` of every arm's rows
    (the metric left out of the key when ``metric`` names the one kept)."""
    return {
        (cell.language, row["task"], cell.arm, row["steps"], cell.split_seed, cell.seed)
        + (() if metric else (row["metric"],)): row["value"]
        for cell, result in arms
        for row in result["rows"]
        if metric is None or row["metric"] == metric
    }


def holm_rejections(p_values: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down test: which of ``p_values`` stay below ``alpha`` with the family-wise error
    held at ``alpha`` (NaN p-values are never rejected and not counted)."""
    known = [(p, i) for i, p in enumerate(p_values) if math.isfinite(p)]
    rejected = [False] * len(p_values)
    for rank, (p, i) in enumerate(sorted(known)):
        if p > alpha / (len(known) - rank):
            break
        rejected[i] = True
    return rejected


def _t_test_p(values: list[float]) -> float:
    from scipy.stats import ttest_1samp

    values = np.asarray(values, dtype=float)
    if values.size < 2 or np.all(values == values[0]):
        return math.nan if values.size < 2 or values[0] == 0 else 0.0
    return float(ttest_1samp(values, 0.0).pvalue)


def _scores(values: dict, language: str, task: str, arm: str, metric: str, *, steps: int, replicates) -> list[float]:
    """An arm's score per replicate at a budget (the init: untrained, whatever ``steps``)."""
    at = 0 if arm == "init" else steps
    return [values[(language, task, arm, at, s, seed, metric)] for s, seed in replicates]


def _paired(values: dict, language: str, task: str, arm: str, reference: str, metric: str, **where) -> list[float]:
    """``arm``'s score minus ``reference``'s per replicate (:func:`_scores`' ``steps`` and ``replicates``)."""
    ours, theirs = (_scores(values, language, task, name, metric, **where) for name in (arm, reference))
    return [a - b for a, b in zip(ours, theirs)]


def atlas_table(config: AtlasConfig, arms: list[tuple]) -> list[dict]:
    """One row per (language, task, SIPT arm, budget) with :data:`ATLAS_COLUMNS`: means over the
    replicates of the LC, the encoder's consistency and the paired gains (95 % t-intervals, none
    under 3 replicates), the t-test's p-value and Holm's verdict over the budget's natural pairs."""
    from sipt_lab.core.stats import interval

    values = _values(arms)
    own: dict[tuple, list] = {}
    lcs: dict[tuple, list] = {}
    for cell, result in arms:
        for pair in result["pairs"]:
            key = (cell.language, pair["task"]) if cell.arm == "init" else (cell.language, pair["task"], cell.arm)
            (own if cell.arm == "init" else lcs).setdefault(key, []).append(pair)
    replicates = [(s, seed) for s in config.split_seeds for seed in range(config.seeds)]
    table = []
    for (language, task, arm), pairs in lcs.items():
        labels = [atlas_draw(config, language, s).pretrain_labels(task)[1] for s in config.split_seeds]
        dial = arm.startswith("dial:")
        lc, lc_sd = mean_sd([p["lc"] for p in pairs])
        encoder = mean_sd([p["encoder_consistency"] for p in own[(language, task)]])[0]
        for steps in config.budgets:
            scores = functools.partial(_scores, values, language, task, steps=steps, replicates=replicates)
            paired = functools.partial(_paired, values, language, task, arm, steps=steps, replicates=replicates)
            gains = paired("lm", config.metric)
            row = {
                "corpus": CORPUS_NAME,
                "language": language,
                "task": task,
                "classes": int(np.mean([len(set(y)) for y in labels])),
                "graph": f"dial q={arm.split(':')[2]}" if dial else arm,
                "kind": "dial" if dial else "control" if arm in CONTROL_GRAPHS else "natural",
                "k": None if dial else GRAPH_K.get(arm),
                "q": float(arm.split(":")[2]) if dial else None,
                "n_pretrain": config.n_pretrain,
                "labelled_pretrain": float(np.mean([p["labelled"] for p in own[(language, task)]])),
                "n_never_seen": config.n_never_seen,
                "test": float(np.mean([scored_test_size(config, language, s, task) for s in config.split_seeds])),
                "replicates": len(replicates),
                "steps": steps,
                "init": config.init,
                "lambda_si": config.train.lambda_si,
                "metric": config.metric,
                "edges": float(np.mean([p["edges"] for p in pairs])),
                "lc": lc,
                "lc_sd": lc_sd,
                "encoder_consistency": encoder,
                "lc_minus_encoder": lc - encoder,
                "lm": mean_sd(scores("lm", config.metric))[0],
                "sipt": mean_sd(scores(arm, config.metric))[0],
                "gain_se": mean_sd(gains)[1] / math.sqrt(len(gains)),
                "gain_p": _t_test_p(gains),
            }
            others = {f"gain_{metric}": paired("lm", metric) for metric in other_metrics(config)}
            for name, series in (("gain", gains), ("gain_over_init", paired("init", config.metric)), *others.items()):
                row[name] = mean_sd(series)[0]
                row[f"{name}_low"], row[f"{name}_high"] = interval(series) or [None, None]
            table.append(row)
    for steps in config.budgets:
        natural = [
            row for row in table if row["steps"] == steps and row["kind"] == "natural" and math.isfinite(row["lc"])
        ]
        for row, rejected in zip(natural, holm_rejections([row["gain_p"] for row in natural])):
            row["holm_significant"] = rejected
    for row in table:
        row.setdefault("holm_significant", None)
    return table


def budget_table(config: AtlasConfig, arms: list[tuple], table: list[dict]) -> list[dict]:
    """:data:`BUDGET_COLUMNS` per budget and language: what LM-only training alone does to the init,
    and how the natural pairs' gains compare with their own noise."""
    values = _values(arms, config.metric)
    rows = []
    for steps in config.budgets:
        for language in config.languages:
            lm_minus_init = [
                values[(language, task, "lm", steps, s, seed)] - values[(language, task, "init", 0, s, seed)]
                for task in config.tasks
                for s in config.split_seeds
                for seed in range(config.seeds)
            ]
            mean, low, high = mean_ci(lm_minus_init)
            pairs = [
                row
                for row in table
                if row["steps"] == steps
                and row["language"] == language
                and row["kind"] == "natural"
                and math.isfinite(row["lc"])
            ]
            ses = [row["gain_se"] for row in pairs if math.isfinite(row["gain_se"])]
            rows.append(
                {
                    "steps": steps,
                    "language": language,
                    "lm_minus_init": mean,
                    "lm_minus_init_low": low,
                    "lm_minus_init_high": high,
                    "pairs": len(pairs),
                    "gain_mean": mean_sd([row["gain"] for row in pairs])[0],
                    "pair_se_median": float(np.median(ses)) if ses else math.nan,
                    "pair_spread": mean_sd([row["gain"] for row in pairs])[1],
                    "distinguishable": sum(row["gain_p"] < ALPHA for row in pairs if math.isfinite(row["gain_p"])),
                    "distinguishable_holm": sum(bool(row["holm_significant"]) for row in pairs),
                }
            )
    return rows


def loss_rows(arms: list[tuple]) -> list[dict]:
    """:data:`LOSS_COLUMNS` rows of every trained arm's loss history (``si`` empty for LM-only)."""
    return [
        {
            "language": cell.language,
            "arm": cell.arm,
            "split_seed": cell.split_seed,
            "seed": cell.seed,
            "step": step + 1,
        }
        | {
            name: (result["history"][name][step] if name in result["history"] else None)
            for name in ("loss", "mlm", "si")
        }
        for cell, result in arms
        if result["history"]
        for step in range(len(result["history"]["loss"]))
    ]


def scored_test_size(config: AtlasConfig, language: str, split_seed: int, task: str) -> int:
    """Never-seen test articles of ``task`` in a draw (after dropping classes without references)."""
    draw = atlas_draw(config, language, split_seed)
    return int(never_seen_positions(draw.articles.labels[task][draw.never_seen[task]])[2].size)


def validation_lines(fit: dict) -> list[str]:
    """The grouped validation in words: per budget, the shipped model's and the baselines'
    single-run error under each scheme, and the coverage of its single-run intervals."""
    from sipt_lab.jobs.gain_predictor import GROUPED_SCHEMES

    lines = [
        f"shipped predictor: {fit['model']} ({fit['model_words']}), chosen by grouped error "
        + ", ".join(f"{model} {error:.4f}" for model, error in fit["selection"].items())
    ]
    for row in fit["validation"]:
        if row["model"] == fit["model"] and row["scheme"] in ("pair", *GROUPED_SCHEMES):
            lines.append(
                f"{row['steps']} steps, leave-one-{row['scheme']}-out: single-run error {row['mae']:.4f}, "
                f"{fit['level']:.0%} interval coverage {row['coverage']:.2f} [{row['coverage_low']:.2f}, "
                f"{row['coverage_high']:.2f}] over {row['runs']} runs"
            )
    return lines


def atlas_points(table: list[dict]) -> list[dict]:
    """The natural and control pairs of ``table`` as the figure's points (kept in ``fit.json`` for
    ``advise --plot``)."""
    return [
        {key: row[key] for key in ("steps", "lc", "gain", "kind", "language")}
        for row in table
        if row["kind"] != "dial" and math.isfinite(row["lc"])
    ]
