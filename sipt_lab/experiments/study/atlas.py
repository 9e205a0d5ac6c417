"""Will SIPT on a natural graph help on samples it never saw? The atlas (``sipt-lab study atlas``).

The LC-transfer study dials a graph's LC by building it from the task's labels; users' graphs are
citations, mentions and similarity neighbourhoods. The atlas measures SIPT's held-out gain over
many (graph, task) pairs whose graphs are *not* built from the task's labels
(:mod:`~sipt_lab.experiments.study.atlas_pairs`), so the same graph meets several tasks and has a
different LC under each (Definition 5), and fits a predictor of the gain from what is known before
training (:mod:`~sipt_lab.experiments.gain_predictor`), validated leave-one-pair-out.

Protocol, per language and split seed: ``n_pretrain`` articles drawn from the whole corpus are the
pre-training nodes; per task, ``n_never_seen`` other articles it labels are the never-seen samples
(references, validation and test; :func:`~sipt_lab.experiments.study.atlas_pairs.never_seen_positions`).
Each article is its own group and no article is on two sides. Per seed every arm starts from the
same init with the same steps, batches and head warm-up: ``init`` (untrained), ``lm`` (λ_SI = 0;
it reads no graph, so one run serves every graph and task), one SIPT arm per graph (one run serves
every task: the graph does not depend on the task) and per dial task and level. Each arm is one
grid cell (resumable per arm); each is scored on every task's never-seen test articles with the
LC-transfer study's metrics (3-NN accuracy primary).

Files written into the run directory (under :func:`sipt_lab.core.outputs.run_output`):

* ``config.json``; ``cells/`` (one cell per language x split seed x seed x arm);
* ``results.csv``: one row per language, task, arm, split seed, seed and metric (the value on the
  never-seen test articles);
* ``atlas.csv``: one row per pair (:data:`ATLAS_COLUMNS`), ``fit.json``: the predictor fitted on every
  pair and its leave-one-pair-out validation;
* ``atlas.png`` / ``.pdf``: gain against LC and against LC minus the encoder's own consistency.
"""

from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from sipt_lab.core import fileio, outputs
from sipt_lab.core.config_io import save_config
from sipt_lab.core.stats import interval, mean_sd
from sipt_lab.experiments.study.atlas_config import AtlasConfig
from sipt_lab.experiments.study.atlas_pairs import (
    CORPUS_NAME,
    GRAPH_BUILDERS,
    GRAPH_K,
    AtlasDraw,
    draw_articles,
    never_seen_positions,
)
from sipt_lab.graphs.graph import PretrainingGraph

logger = logging.getLogger(__name__)

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
RUN_FILES = ("config.json", "results.csv", "atlas.csv", "fit.json", "atlas.png", "atlas.pdf")
CELLS_DIR = "cells"
#: Keys of an :func:`atlas_arm` result; a stored result without them is recomputed.
ARM_KEYS = ("rows", "pairs")


@dataclass(frozen=True)
class AtlasArm:
    """One grid cell: one arm (``init``, ``lm``, a graph of :data:`GRAPH_BUILDERS` or
    ``dial:<task>:<q>``) of one seed on one split seed's draw of one language."""

    atlas: AtlasConfig
    language: str
    split_seed: int
    seed: int
    arm: str


def atlas_arms(config: AtlasConfig) -> list[AtlasArm]:
    """Every cell of the atlas, the shared arms (``init``, ``lm``) of a draw first."""
    return [
        AtlasArm(config, language, split_seed, seed, arm)
        for language in config.languages
        for split_seed in config.split_seeds
        for seed in range(config.seeds)
        for arm in ("init", "lm", *config.graphs, *config.dial_arms(language))
    ]


def atlas_draw(config: AtlasConfig, language: str, split_seed: int) -> AtlasDraw:
    """:func:`~sipt_lab.experiments.study.atlas_pairs.draw_articles` of the config (once per process)."""
    return _draw(language, config.tasks, config.n_pretrain, config.n_never_seen, split_seed)


_draw = functools.lru_cache(maxsize=4)(draw_articles)


def init_vectors(config: AtlasConfig, language: str, split_seed: int) -> np.ndarray:
    """``(m, H)`` the init's embedding of the pre-training articles (once per process and draw)."""
    key = (config.init, config.pooling, config.train.max_len, config.train.device)
    return _init_vectors(key, language, config.tasks, config.n_pretrain, config.n_never_seen, split_seed)


@functools.lru_cache(maxsize=4)
def _init_vectors(key: tuple, language: str, *draw: object) -> np.ndarray:
    from sipt_lab.models import encoder_source
    from sipt_lab.training import embed

    init, pooling, max_len, device = key
    texts = [_draw(language, *draw).articles.texts[i] for i in _draw(language, *draw).pretrain]
    source = encoder_source(init, None, pooling)
    tokenizer = source.tokenizer(texts, max_len)
    encoder, _ = source.encoder(tokenizer)
    return embed(encoder, tokenizer, texts, device=device)


def atlas_source(config: AtlasConfig):
    from sipt_lab.models import encoder_source

    return encoder_source(config.init, None, config.pooling)


def init_encoder(config: AtlasConfig, texts: list[str], seed: int):
    """``(encoder, tokenizer)`` as initialised (new heads drawn with ``seed``)."""
    import torch

    source = atlas_source(config)
    tokenizer = source.tokenizer(texts, config.train.max_len)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        encoder, _ = source.encoder(tokenizer)
    return encoder, tokenizer


#: Heads fitted by earlier arms of this process: arms of one draw and seed share their warm-up.
_WARMUPS = None


def process_warmups():
    """This process's :class:`~sipt_lab.training.head_warmups.HeadWarmups`."""
    global _WARMUPS
    if _WARMUPS is None:
        from sipt_lab.training.head_warmups import HeadWarmups

        _WARMUPS = HeadWarmups()
    return _WARMUPS


def arm_graph(cell: AtlasArm, draw: AtlasDraw) -> PretrainingGraph:
    """The pre-training graph of a SIPT arm: a graph of :data:`GRAPH_BUILDERS`, or the dial's cliques
    over the task's labelled pre-training articles (the others isolated)."""
    config = cell.atlas
    if cell.arm == "lm":
        return PretrainingGraph.from_edges([], [], draw.pretrain.size)  # LM-only reads no graph
    if not cell.arm.startswith("dial:"):
        vectors = functools.partial(init_vectors, config, cell.language, cell.split_seed)
        return GRAPH_BUILDERS[cell.arm](draw, vectors, cell.split_seed)
    from sipt_lab.experiments.study.dial import dial_groups

    _, task, q = cell.arm.split(":")
    positions, labels = draw.pretrain_labels(task)
    codes = np.unique(labels.astype(str), return_inverse=True)[1]
    level = config.dial_levels.index(float(q))
    groups = np.arange(draw.pretrain.size) + codes.max() + 1  # unlabelled articles: cliques of one
    groups[positions] = dial_groups(codes, float(q), np.random.default_rng([cell.split_seed, cell.seed, level]))
    return PretrainingGraph.from_groups(groups)


def arm_tasks(cell: AtlasArm) -> tuple[str, ...]:
    """The tasks an arm is scored on: a dial arm its own task, every other arm every task."""
    return (cell.arm.split(":")[1],) if cell.arm.startswith("dial:") else cell.atlas.tasks


def atlas_arm(cell: AtlasArm) -> dict:
    """The cell function: train the arm (``init`` none) and score it on the never-seen test articles
    of its tasks; ``{"rows": [...], "pairs": [...]}``, ``pairs`` holding per task the LC of the arm's
    graph over the task's labelled pre-training articles (the init: the encoder's own consistency)."""
    from sipt_lab.experiments.study.metrics import encoder_consistency
    from sipt_lab.graphs.consistency import local_consistency

    config = cell.atlas
    draw = atlas_draw(config, cell.language, cell.split_seed)
    texts = [draw.articles.texts[i] for i in draw.pretrain]
    tasks = arm_tasks(cell)
    pairs = []
    if cell.arm == "init":
        encoder, tokenizer = init_encoder(config, texts, cell.seed)
        vectors = init_vectors(config, cell.language, cell.split_seed)
        for task in tasks:
            positions, labels = draw.pretrain_labels(task)
            own = encoder_consistency(vectors[positions], labels.astype(str), config.k)
            pairs.append({"task": task, "encoder_consistency": own, "labelled": int(positions.size)})
    else:
        from sipt_lab.experiments.study.study_arms import train_arm

        graph = arm_graph(cell, draw)
        train = replace(config.train, seed=cell.seed)
        if cell.arm == "lm":
            train = replace(train, lambda_si=0.0)
        else:
            for task in tasks:
                positions, labels = draw.pretrain_labels(task)
                labelled = graph.subgraph(positions)
                lc = local_consistency(labelled, labels.astype(str)) if labelled.n_edges else math.nan
                pairs.append({"task": task, "lc": float(lc), "edges": int(graph.n_edges)})
        result = train_arm(texts, graph, train, atlas_source(config), head_warmups=process_warmups())
        encoder, tokenizer = result.encoder, result.tokenizer
    rows = [
        {"language": cell.language, "task": task, "arm": cell.arm, "split_seed": cell.split_seed, "seed": cell.seed}
        | {"metric": metric, "value": value}
        for task, metrics in task_metrics(encoder, tokenizer, draw, tasks, config).items()
        for metric, value in metrics.items()
    ]
    return {"rows": rows, "pairs": pairs}


def task_metrics(encoder, tokenizer, draw: AtlasDraw, tasks: tuple[str, ...], config: AtlasConfig) -> dict[str, dict]:
    """Task -> the study's metrics of ``encoder`` on the task's never-seen test articles (k-NN
    references and the probe's data from its reference and validation articles); the never-seen
    articles of every task embedded in one pass."""
    from sipt_lab.experiments.study.metrics import heldout_metrics
    from sipt_lab.training import embed

    scored = np.concatenate([draw.never_seen[task] for task in tasks])
    vectors = embed(encoder, tokenizer, [draw.articles.texts[i] for i in scored], device=config.train.device)
    metrics, start = {}, 0
    for task in tasks:
        rows = draw.never_seen[task]
        labels = draw.articles.labels[task][rows].astype(str)
        metrics[task] = heldout_metrics(
            vectors[start : start + rows.size], labels, *never_seen_positions(labels), config.k
        )
        start += rows.size
    return metrics


def run_atlas(
    config: AtlasConfig,
    out: str | Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    log=None,
    executor: str = "serial",
) -> dict:
    """Run the atlas of the module docstring into ``out``; returns the ``fit.json`` content. The
    draws are checked before any training; an interrupted atlas keeps its finished arms."""
    from sipt_lab.experiments.study.lc_transfer import check_same_study
    from sipt_lab.grid import check_executor, run_grid

    log = logger.info if log is None else log
    outputs.check_output_dir(out)
    check_executor(executor)
    for language in config.languages:
        for split_seed in config.split_seeds:
            atlas_draw(config, language, split_seed)  # a corpus too small is refused before anything is written
    cells = atlas_arms(config)
    log(
        f"atlas: {len(cells)} arms ({len(config.languages)} languages x {len(config.split_seeds)} draws x "
        f"{config.seeds} seeds); {sum(cell.arm != 'init' for cell in cells)} of them train {config.train.steps} steps"
    )
    with outputs.run_output(
        out,
        "study atlas",
        finished="fit.json",
        resume=resume,
        overwrite=overwrite,
        keep_on_failure=lambda out_dir: any((out_dir / CELLS_DIR).glob("*/result.json")),
        log=log,
    ) as out_dir:
        if resume:
            check_same_study(out_dir, config)
        outputs.record_files(out_dir, list(RUN_FILES))
        save_config(config, out_dir / "config.json")
        try:
            results = run_grid(atlas_arm, cells, out_dir / CELLS_DIR, executor=executor, required_keys=ARM_KEYS)
        finally:
            outputs.record_tree(out_dir, CELLS_DIR)
        fit = write_atlas(out_dir, config, [(result.config, result.result) for result in results], log)
    return fit


def write_atlas(out_dir: Path, config: AtlasConfig, arms: list[tuple[AtlasArm, dict]], log=lambda line: None) -> dict:
    """``results.csv``, ``atlas.csv``, ``fit.json`` and the figure in ``out_dir`` from the arms'
    ``(cell, result)``; logs one line per pair; returns the fit with its validation."""
    from sipt_lab.experiments.gain_predictor import fit_gain, leave_one_pair_out
    from sipt_lab.experiments.study.lc_transfer import results_csv

    rows = [row for _, result in arms for row in result["rows"]]
    table = atlas_table(config, arms)
    for pair in table:
        log(
            f"{pair['language']} {pair['task']} x {pair['graph']}: LC {pair['lc']:.3f}, encoder {pair['encoder_consistency']:.3f}, "
            f"gain {pair['gain']:+.3f} {format_interval(pair['gain_low'], pair['gain_high'])}"
        )
    measured = [pair for pair in table if math.isfinite(pair["lc"])]  # a graph linking no two labelled articles has no LC
    fit = fit_gain(measured)
    validation = leave_one_pair_out(measured)
    natural = [pair for pair in measured if pair["kind"] == "natural"]
    fit["validation"] = {key: value for key, value in validation.items() if key != "predictions"}
    fit["validation_natural"] = {
        key: value for key, value in leave_one_pair_out(natural).items() if key != "predictions"
    }
    fit |= {
        "metric": config.metric,
        "init": config.init,
        "max_len": config.train.max_len,
        "labelled_range": [min(p["labelled_pretrain"] for p in measured), max(p["labelled_pretrain"] for p in measured)],
    }
    for pair in table:
        pair |= {"predicted": None, "predicted_low": None, "predicted_high": None}
    for pair, prediction in zip(measured, validation["predictions"]):
        pair |= {"predicted": prediction["predicted"], "predicted_low": prediction["low"], "predicted_high": prediction["high"]}
    fileio.write_text_atomic(out_dir / "results.csv", results_csv(rows, RESULT_COLUMNS))
    fileio.write_text_atomic(
        out_dir / "atlas.csv", results_csv(table, (*ATLAS_COLUMNS, "predicted", "predicted_low", "predicted_high"))
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


def atlas_table(config: AtlasConfig, arms: list[tuple[AtlasArm, dict]]) -> list[dict]:
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

        def paired(reference: str, metric: str = config.metric) -> list[float]:
            return [
                values[(language, task, arm, s, seed, metric)] - values[(language, task, reference, s, seed, metric)]
                for s, seed in replicates
            ]

        gains, over_init = paired("lm"), paired("init")
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
            "test": float(np.mean([test_size(config, language, s, task) for s in config.split_seeds])),
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
            "gain": mean_sd(gains)[0],
            "gain_over_init": mean_sd(over_init)[0],
        }
        for name, series in (("gain", gains), ("gain_over_init", over_init)):
            bounds = interval(series) or [None, None]
            row[f"{name}_low"], row[f"{name}_high"] = bounds
        table.append(row)
    return table


def draw_labels(config: AtlasConfig, language: str, split_seed: int, task: str) -> np.ndarray:
    """The classes of ``task``'s labelled pre-training articles in a draw."""
    return atlas_draw(config, language, split_seed).pretrain_labels(task)[1]


def test_size(config: AtlasConfig, language: str, split_seed: int, task: str) -> int:
    """Never-seen test articles of ``task`` in a draw (after dropping classes without references)."""
    draw = atlas_draw(config, language, split_seed)
    return int(never_seen_positions(draw.articles.labels[task][draw.never_seen[task]])[2].size)


def draw_atlas_figure(stem: str | Path, table: list[dict], config: AtlasConfig) -> list[Path]:
    """``<stem>.png`` / ``.pdf``: each pair's mean gain (95 % interval bars) against its LC and against
    LC minus the encoder's own consistency, natural and dial pairs apart, every pair labelled."""
    from sipt_lab.experiments.study.study_config import metric_words
    from sipt_lab.viz.plots import labelled_errorbar_panels

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
