"""The atlas's summary: one row per pair (:func:`atlas_table`), the predictor fitted on them with its
leave-one-pair-out validation (``fit.json``) and the figure."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from sipt_lab.core import fileio
from sipt_lab.core.errors import SiptError
from sipt_lab.core.stats import interval, mean_sd
from sipt_lab.studies.lc.atlas_config import MIN_PAIRS, AtlasConfig
from sipt_lab.studies.lc.atlas_pairs import CORPUS_NAME, GRAPH_K, atlas_draw, never_seen_positions

#: Columns of ``results.csv``: one row per language, task, arm, split seed, seed and metric.
RESULT_COLUMNS = ("language", "task", "arm", "split_seed", "seed", "metric", "value")
#: Columns of ``atlas.csv``: what produced the pair, its LC and the encoder's, and SIPT's gain over
#: LM-only and over the init in the primary metric (mean, 95 % t-interval over replicates), then
#: the gain over LM-only in every other metric.
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
    "seeds",
    "split_seeds",
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
    "gain_low",
    "gain_high",
    "gain_over_init",
    "gain_over_init_low",
    "gain_over_init_high",
)
#: Columns of ``atlas.csv`` after the metric columns: the gain predicted for the pair with it left out.
PREDICTION_COLUMNS = ("predicted", "predicted_low", "predicted_high")


def other_metrics(config: AtlasConfig) -> list[str]:
    """The study's metrics other than the primary one, in order."""
    from sipt_lab.studies.names import STUDY_METRICS

    return [metric for metric in STUDY_METRICS if metric != config.metric and not metric.startswith("finetune_")]


def metric_columns(config: AtlasConfig) -> list[str]:
    """``gain_<metric>``, ``_low``, ``_high`` of every metric but the primary one (the gain over LM-only)."""
    return [f"gain_{metric}{end}" for metric in other_metrics(config) for end in ("", "_low", "_high")]


def write_atlas(out_dir: Path, config: AtlasConfig, arms: list[tuple], log=lambda line: None) -> dict:
    """``results.csv``, ``atlas.csv``, ``fit.json`` and the figure in ``out_dir`` from the arms'
    ``(cell, result)``; logs one line per pair; returns the fit with its validation."""
    from sipt_lab.jobs.gain_predictor import fit_gain, leave_one_pair_out
    from sipt_lab.studies.lc.transfer import results_csv

    rows = [row for _, result in arms for row in result["rows"]]
    table = atlas_table(config, arms)
    for pair in table:
        log(
            f"{pair['language']} {pair['task']} x {pair['graph']}: LC {pair['lc']:.3f}, encoder {pair['encoder_consistency']:.3f}, "
            f"gain {pair['gain']:+.3f} {format_interval(pair['gain_low'], pair['gain_high'])}"
        )
    measured = [pair for pair in table if math.isfinite(pair["lc"])]  # a graph linking no two labelled has none
    if len(measured) < MIN_PAIRS:
        raise SiptError(
            f"{len(measured)} of the {len(table)} pairs have an LC (a graph that links no two labelled articles has "
            f"none); the predictor needs {MIN_PAIRS}: add graphs or tasks, or more pre-training articles, and --resume "
            "(the finished arms are kept)"
        )
    fit = fit_gain(measured)
    validation = leave_one_pair_out(measured)
    natural = [pair for pair in measured if pair["kind"] == "natural"]
    fit["validation"] = {key: value for key, value in validation.items() if key != "predictions"}
    fit["validation_natural"] = (
        {key: value for key, value in leave_one_pair_out(natural).items() if key != "predictions"}
        if len(natural) >= MIN_PAIRS
        else None
    )
    fit |= {
        "metric": config.metric,
        "init": config.init,
        "max_len": config.train.max_len,
        "labelled_range": [
            min(p["labelled_pretrain"] for p in measured),
            max(p["labelled_pretrain"] for p in measured),
        ],
    }
    for pair in table:
        pair |= {"predicted": None, "predicted_low": None, "predicted_high": None}
    for pair, prediction in zip(measured, validation["predictions"]):
        pair |= {
            "predicted": prediction["predicted"],
            "predicted_low": prediction["low"],
            "predicted_high": prediction["high"],
        }
    fileio.write_text_atomic(out_dir / "results.csv", results_csv(rows, RESULT_COLUMNS))
    fileio.write_text_atomic(
        out_dir / "atlas.csv", results_csv(table, (*ATLAS_COLUMNS, *metric_columns(config), *PREDICTION_COLUMNS))
    )
    fileio.write_json_atomic(out_dir / "fit.json", fit)
    draw_atlas_figure(out_dir / "atlas", table, config)
    log(validation_line(fit))
    return fit


def format_interval(low: float | None, high: float | None) -> str:
    return "(no interval: under 3 replicates)" if low is None or math.isnan(low) else f"[{low:+.3f}, {high:+.3f}]"


def validation_line(fit: dict) -> str:
    """The leave-one-pair-out validation in one line."""
    v = fit["validation"]
    sign = "n/a (no interval excludes 0)" if v["sign_accuracy"] is None else f"{v['sign_accuracy']:.2f}"
    return (
        f"leave-one-pair-out over {v['pairs']} pairs: sign accuracy {sign} on the {v['decided']} whose 90% interval "
        f"excludes 0, mean absolute error {v['mae']:.3f}, coverage of the 90% intervals {v['coverage']:.2f}"
    )


def atlas_table(config: AtlasConfig, arms: list[tuple]) -> list[dict]:
    """One row per (language, task, SIPT arm) with :data:`ATLAS_COLUMNS`: means over the replicates
    of the LC, the encoder's consistency and the paired gains (95 % t-intervals, none under 3)."""
    values: dict[tuple, float] = {}
    for cell, result in arms:
        for row in result["rows"]:
            values[(cell.language, row["task"], cell.arm, cell.split_seed, cell.seed, row["metric"])] = row["value"]
    own: dict[tuple, list] = {}
    lcs: dict[tuple, list] = {}
    for cell, result in arms:
        for pair in result["pairs"]:
            key = (cell.language, pair["task"]) if cell.arm == "init" else (cell.language, pair["task"], cell.arm)
            (own if cell.arm == "init" else lcs).setdefault(key, []).append(pair)
    replicates = [(s, seed) for s in config.split_seeds for seed in range(config.seeds)]
    table = []
    for (language, task, arm), pairs in lcs.items():
        labels = [draw_labels(config, language, s, task) for s in config.split_seeds]

        def paired(reference: str, metric: str, key=(language, task, arm)) -> list[float]:
            return [
                values[(*key, s, seed, metric)] - values[(*key[:2], reference, s, seed, metric)]
                for s, seed in replicates
            ]

        gains, over_init = paired("lm", config.metric), paired("init", config.metric)
        lc, lc_sd = mean_sd([p["lc"] for p in pairs])
        encoder = mean_sd([p["encoder_consistency"] for p in own[(language, task)]])[0]
        dial = arm.startswith("dial:")
        row = {
            "corpus": CORPUS_NAME,
            "language": language,
            "task": task,
            "classes": int(np.mean([len(set(y)) for y in labels])),
            "graph": f"dial q={arm.split(':')[2]}" if dial else arm,
            "kind": "dial" if dial else "natural",
            "k": None if dial else GRAPH_K.get(arm),
            "q": float(arm.split(":")[2]) if dial else None,
            "n_pretrain": config.n_pretrain,
            "labelled_pretrain": float(np.mean([p["labelled"] for p in own[(language, task)]])),
            "n_never_seen": config.n_never_seen,
            "test": float(np.mean([scored_test_size(config, language, s, task) for s in config.split_seeds])),
            "seeds": config.seeds,
            "split_seeds": " ".join(map(str, config.split_seeds)),
            "steps": config.train.steps,
            "init": config.init,
            "lambda_si": config.train.lambda_si,
            "metric": config.metric,
            "edges": float(np.mean([p["edges"] for p in pairs])),
            "lc": lc,
            "lc_sd": lc_sd,
            "encoder_consistency": encoder,
            "lc_minus_encoder": lc - encoder,
            "lm": mean_sd([values[(language, task, "lm", s, seed, config.metric)] for s, seed in replicates])[0],
            "sipt": mean_sd([values[(language, task, arm, s, seed, config.metric)] for s, seed in replicates])[0],
        }
        others = {f"gain_{metric}": paired("lm", metric) for metric in other_metrics(config)}
        for name, series in (("gain", gains), ("gain_over_init", over_init), *others.items()):
            row[name] = mean_sd(series)[0]
            row[f"{name}_low"], row[f"{name}_high"] = interval(series) or [None, None]
        table.append(row)
    return table


def draw_labels(config: AtlasConfig, language: str, split_seed: int, task: str) -> np.ndarray:
    """The classes of ``task``'s labelled pre-training articles in a draw."""
    return atlas_draw(config, language, split_seed).pretrain_labels(task)[1]


def scored_test_size(config: AtlasConfig, language: str, split_seed: int, task: str) -> int:
    """Never-seen test articles of ``task`` in a draw (after dropping classes without references)."""
    draw = atlas_draw(config, language, split_seed)
    return int(never_seen_positions(draw.articles.labels[task][draw.never_seen[task]])[2].size)


def draw_atlas_figure(stem: str | Path, table: list[dict], config: AtlasConfig) -> list[Path]:
    """``<stem>.png`` / ``.pdf``: each pair's mean gain (95 % interval bars) against its LC and against
    LC minus the encoder's own consistency, natural and dial pairs apart, every pair labelled."""
    from sipt_lab.studies.lc.config import metric_words
    from sipt_lab.viz.labelled_points import labelled_errorbar_panels

    names = [f"{p['language']} {p['task']} / {p['graph']}" for p in table]

    def series(x: str) -> dict:
        out = {}
        for kind, label in (("natural", "natural graph"), ("dial", "label-built dial")):
            mask = [p["kind"] == kind for p in table]
            half = [
                math.nan if p["gain_low"] is None else (p["gain_high"] - p["gain_low"]) / 2 if m else math.nan
                for p, m in zip(table, mask)
            ]
            out[label] = (
                [p[x] if m else math.nan for p, m in zip(table, mask)],
                [p["gain"] if m else math.nan for p, m in zip(table, mask)],
                half,
            )
        return out

    v = validation_line_short(table)
    return labelled_errorbar_panels(
        stem,
        [
            ("LC of the graph over the labelled pre-training articles", series("lc")),
            ("LC minus the init's own 3-NN consistency on the same articles", series("lc_minus_encoder")),
        ],
        names,
        ylabel=f"SIPT - LM-only, {metric_words(config.metric, config.k)} (95% CI)",
        title=f"Natural-graph atlas: {len(table)} pairs, {config.init}, {config.train.steps} steps, "
        f"{len(config.split_seeds) * config.seeds} replicates (draw x seed), never-seen test articles",
        note=v,
    )


def validation_line_short(table: list[dict]) -> str:
    """How many pairs' intervals lie above, below or across zero, for the figure's note."""
    above = sum(p["gain_low"] is not None and p["gain_low"] > 0 for p in table)
    below = sum(p["gain_high"] is not None and p["gain_high"] < 0 for p in table)
    return f"{above} pairs gain (interval above 0), {below} lose (below 0), {len(table) - above - below} cannot tell"
