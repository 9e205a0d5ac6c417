"""Will SIPT on a natural graph help on samples it never saw? The atlas (``sipt-lab study atlas``).

The LC-transfer study dials a graph's LC by building it from the task's labels; users' graphs are
citations, mentions and similarity neighbourhoods. The atlas measures SIPT's held-out gain over
many (graph, task) pairs whose graphs are *not* built from the task's labels
(:mod:`~sipt_lab.studies.lc.atlas_pairs`), so the same graph meets several tasks and has a
different LC under each (Definition 5), and fits a predictor of the gain from what is known before
training (:mod:`~sipt_lab.jobs.gain_predictor`), chosen and validated by leaving out whole
pairs, graphs, tasks and languages.

Protocol, per language and split seed: ``n_pretrain`` articles crawled from the whole corpus
(:func:`~sipt_lab.studies.lc.atlas_pairs.crawl`) are the pre-training nodes; per task, ``n_never_seen`` other articles it labels are the never-seen samples
(references, validation and test; :func:`~sipt_lab.studies.lc.atlas_pairs.never_seen_positions`).
Each article is its own group and no article is on two sides. Per seed every arm starts from the
same init with the same budgets, batches and head warm-up: ``init`` (untrained), ``lm`` (λ_SI = 0;
it reads no graph, so one run serves every graph and task), one SIPT arm per graph (one run serves
every task: the graph does not depend on the task) and per dial task and level. Each arm is one
grid cell (resumable per arm), trained for the longest budget and scored after each on every
task's never-seen test articles with the LC-transfer study's metrics (3-NN accuracy primary).

Files written into the run directory (under :func:`sipt_lab.core.outputs.run_output`):

* ``config.json``; ``cells/`` (one cell per language x split seed x seed x arm);
* ``results.csv``: one row per language, task, arm, budget, split seed, seed and metric (the value
  on the never-seen test articles);
* ``runs.csv``, ``atlas.csv``, ``budgets.csv``, ``validation.csv``, ``losses.csv`` and ``fit.json``
  (:mod:`~sipt_lab.studies.lc.atlas_summary`): the runs the predictor is fitted on, one row per
  pair and budget, the budget curve, the grouped validation, every arm's losses, the predictor;
* ``atlas.png`` / ``.pdf``: per budget, gain against LC with LC alone's line and the single-run band.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from sipt_lab.core import outputs
from sipt_lab.core.config_io import save_config
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.studies.lc.atlas_config import GROWABLE_FIELDS, AtlasConfig
from sipt_lab.studies.lc.atlas_pairs import GRAPH_BUILDERS, AtlasDraw, atlas_draw, never_seen_positions
from sipt_lab.training import TrainConfig
from sipt_lab.training.watch import Watch

logger = logging.getLogger(__name__)

RUN_FILES = ("config.json", "results.csv", "atlas.csv", "fit.json", "atlas.png", "atlas.pdf")
CELLS_DIR = "cells"
#: Keys of an :func:`atlas_arm` result; a stored result without them is recomputed.
ARM_KEYS = ("rows", "pairs")


@dataclass(frozen=True)
class AtlasArm:
    """One grid cell: one arm (``init``, ``lm``, a graph of :data:`GRAPH_BUILDERS` or
    ``dial:<task>:<q>``) of one seed on one split seed's draw of one language, trained for the
    longest of ``budgets`` and scored after each (the ``init`` arm: ``budgets`` empty, scored
    untrained), holding only the settings its result depends on (an atlas grown by a language, a
    graph or a dial task keeps every finished arm)."""

    language: str
    split_seed: int
    seed: int
    arm: str
    budgets: tuple[int, ...]
    tasks: tuple[str, ...]
    n_pretrain: int
    n_never_seen: int
    init: str
    pooling: str | None
    train: TrainConfig
    k: int


def atlas_arms(config: AtlasConfig) -> list[AtlasArm]:
    """Every cell of the atlas, the shared arms (``init``, ``lm``) of a draw first."""
    return [
        AtlasArm(
            language,
            split_seed,
            seed,
            arm,
            () if arm == "init" else config.budgets,
            config.tasks,
            config.n_pretrain,
            config.n_never_seen,
            config.init,
            config.pooling,
            config.train,
            config.k,
        )
        for language in config.languages
        for split_seed in config.split_seeds
        for seed in range(config.seeds)
        for arm in ("init", "lm", *config.graphs, *config.dial_arms(language))
    ]


def init_vectors(config: AtlasConfig | AtlasArm, language: str, split_seed: int) -> np.ndarray:
    """``(m, H)`` the init's embedding of the pre-training articles (once per process and draw)."""
    from sipt_lab.training import embed

    train = config.train
    key = (
        config.init,
        config.pooling,
        train.max_len,
        train.device,
        language,
        split_seed,
        config.tasks,
        config.n_pretrain,
    )
    if key not in _INIT_VECTORS:
        draw = atlas_draw(config, language, split_seed)
        texts = [draw.articles.texts[i] for i in draw.pretrain]
        encoder, tokenizer = init_encoder(config, texts, seed=0)
        _INIT_VECTORS[key] = embed(encoder, tokenizer, texts, device=train.device)
    return _INIT_VECTORS[key]


#: :func:`init_vectors` of this process, by init and draw.
_INIT_VECTORS: dict[tuple, np.ndarray] = {}


def atlas_source(config: AtlasConfig | AtlasArm):
    from sipt_lab.models import encoder_source

    return encoder_source(config.init, None, config.pooling)


def init_encoder(config: AtlasConfig | AtlasArm, texts: list[str], seed: int):
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
    if cell.arm == "lm":
        return PretrainingGraph.from_edges([], [], draw.pretrain.size)  # LM-only reads no graph
    if not cell.arm.startswith("dial:"):
        vectors = functools.partial(init_vectors, cell, cell.language, cell.split_seed)
        return GRAPH_BUILDERS[cell.arm](draw, vectors, cell.split_seed)
    from sipt_lab.studies.lc.dial import dial_groups

    _, task, q = cell.arm.split(":")
    positions, labels = draw.pretrain_labels(task)
    codes = np.unique(labels.astype(str), return_inverse=True)[1]
    groups = np.arange(draw.pretrain.size) + codes.max() + 1  # unlabelled articles: cliques of one
    rng = np.random.default_rng([cell.split_seed, cell.seed, round(float(q) * 1000)])
    groups[positions] = dial_groups(codes, float(q), rng)
    return PretrainingGraph.from_groups(groups)


def arm_tasks(cell: AtlasArm) -> tuple[str, ...]:
    """The tasks an arm is scored on: a dial arm its own task, every other arm every task."""
    return (cell.arm.split(":")[1],) if cell.arm.startswith("dial:") else cell.tasks


#: Stages of an arm whose seconds it reports (:func:`atlas_arm`'s ``seconds``).
STAGES = ("graph", "train", "embed", "score")


def atlas_arm(cell: AtlasArm) -> dict:
    """The cell function: train the arm (``init`` none) and score it on the never-seen test articles
    of its tasks after each budget; ``{"rows", "pairs", "seconds", "history"}``: ``rows`` one per
    budget (``steps``; the init 0), task and metric, ``pairs`` per task the LC of the arm's graph
    over the task's labelled pre-training articles (the init: the encoder's own consistency),
    ``seconds`` the wall time of each of :data:`STAGES`, ``history`` the per-step losses."""
    from sipt_lab.evaluation.heldout import encoder_consistency
    from sipt_lab.graphs.consistency import local_consistency

    clock = StageClock()
    draw = atlas_draw(cell, cell.language, cell.split_seed)
    texts = [draw.articles.texts[i] for i in draw.pretrain]
    tasks = arm_tasks(cell)
    pairs = []
    if cell.arm == "init":
        encoder, tokenizer = init_encoder(cell, texts, cell.seed)
        with clock("embed"):
            vectors = init_vectors(cell, cell.language, cell.split_seed)
        with clock("score"):
            for task in tasks:
                positions, labels = draw.pretrain_labels(task)
                own = encoder_consistency(vectors[positions], labels.astype(str), cell.k)
                pairs.append({"task": task, "encoder_consistency": own, "labelled": int(positions.size)})
        scores, history = {0: task_metrics(encoder, tokenizer, draw, tasks, cell, clock)}, {}
    else:
        from sipt_lab.studies.lc.arms import train_arm

        with clock("graph"):
            graph = arm_graph(cell, draw)
            if cell.arm != "lm":
                for task in tasks:
                    positions, labels = draw.pretrain_labels(task)
                    labelled = graph.subgraph(positions)
                    lc = local_consistency(labelled, labels.astype(str)) if labelled.n_edges else math.nan
                    pairs.append({"task": task, "lc": float(lc), "edges": int(graph.n_edges)})
        train = replace(
            cell.train,
            seed=cell.seed,
            lambda_si=0.0 if cell.arm == "lm" else cell.train.lambda_si,
            eval_every=math.gcd(*cell.budgets),
        )
        scores: dict[int, dict] = {}

        def watch(encoder, tokenizer):
            def evaluate(step: int) -> dict:
                if step in cell.budgets:
                    scores[step] = task_metrics(encoder, tokenizer, draw, tasks, cell, clock)
                return {}

            return Watch(evaluate=evaluate)

        with clock("train"):
            result = train_arm(texts, graph, train, atlas_source(cell), watch=watch, head_warmups=process_warmups())
        clock.seconds["train"] -= clock.seconds["embed"] + clock.seconds["score"]  # the evaluations ran inside
        history = {name: np.round(values, 5).tolist() for name, values in result.history.items() if name != "lr"}
    rows = [
        {"language": cell.language, "task": task, "arm": cell.arm, "steps": steps}
        | {"split_seed": cell.split_seed, "seed": cell.seed, "metric": metric, "value": value}
        for steps, metrics in scores.items()
        for task, values in metrics.items()
        for metric, value in values.items()
    ]
    return {"rows": rows, "pairs": pairs, "seconds": clock.seconds, "history": history}


class StageClock:
    """Wall seconds per stage: ``with clock("train"): ...`` adds the block's time to ``seconds["train"]``."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(STAGES, 0.0)

    @contextlib.contextmanager
    def __call__(self, stage: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] += time.perf_counter() - start


def task_metrics(
    encoder, tokenizer, draw: AtlasDraw, tasks: tuple[str, ...], config: AtlasArm, clock: StageClock
) -> dict[str, dict]:
    """Task -> the study's metrics of ``encoder`` on the task's never-seen test articles (k-NN
    references and the probe's data from its reference and validation articles); the never-seen
    articles of every task embedded in one pass."""
    from sipt_lab.evaluation.heldout import heldout_metrics
    from sipt_lab.training import embed

    scored = np.concatenate([draw.never_seen[task] for task in tasks])
    with clock("embed"):
        vectors = embed(encoder, tokenizer, [draw.articles.texts[i] for i in scored], device=config.train.device)
    metrics, start = {}, 0
    with clock("score"):
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
    time_limit: float | None = None,
) -> dict:
    """Run the atlas of the module docstring into ``out``; returns the ``fit.json`` content. The
    draws are checked before any training; an interrupted atlas keeps its finished arms, and one
    given a ``time_limit`` stops as :func:`~sipt_lab.studies.lc.transfer.run_lc_transfer`'s does."""
    from sipt_lab.grid import check_executor, deadline_options, run_grid
    from sipt_lab.studies.lc.atlas_summary import write_atlas
    from sipt_lab.studies.lc.transfer import check_same_study

    log = logger.info if log is None else log
    outputs.check_output_dir(out)
    check_executor(executor)
    stop = deadline_options(executor, time_limit)
    for language in config.languages:
        for split_seed in config.split_seeds:
            atlas_draw(config, language, split_seed)  # a corpus too small is refused before anything is written
    cells = atlas_arms(config)
    log(
        f"atlas: {len(cells)} arms ({len(config.languages)} languages x {len(config.split_seeds)} draws x "
        f"{config.seeds} seeds); {sum(cell.arm != 'init' for cell in cells)} of them train "
        f"{config.budgets[-1]} steps, scored after {', '.join(map(str, config.budgets))}"
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
            check_same_study(out_dir, config, GROWABLE_FIELDS)
        outputs.record_files(out_dir, list(RUN_FILES))
        save_config(config, out_dir / "config.json")
        try:
            results = run_grid(atlas_arm, cells, out_dir / CELLS_DIR, executor=executor, required_keys=ARM_KEYS, **stop)
        finally:
            outputs.record_tree(out_dir, CELLS_DIR)
        fit = write_atlas(out_dir, config, [(result.config, result.result) for result in results], log)
    return fit
