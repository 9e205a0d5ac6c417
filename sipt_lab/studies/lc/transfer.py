"""Does SIPT pre-training help on samples it never saw, and does LC predict when? (``sipt-lab study lc-transfer``)

Theorem 1 speaks of the pre-trained nodes; a user wants to know whether pre-training on *their*
graph helps *new* samples of their task. :func:`run_lc_transfer` answers it on any labelled task
(texts + integer labels) with a dial for the pre-training graph's local consistency:

* **The LC dial** (:func:`~sipt_lab.studies.lc.dial.dial_graph`): cliques over labels that
  agree with the task label with probability ``q``, else uniform. ``q = 0`` is the negative control
  (a random clique graph), ``q = 1`` the task's own label cliques. In the large clique limit its LC
  is :func:`~sipt_lab.studies.lc.dial.dial_target_lc`; the LC reported is the one *measured*
  on the graph over the pre-training nodes.
* **Grouped inductive splits** (:func:`~sipt_lab.studies.lc.dial.grouped_splits`), one set
  per split seed: pre-training nodes, then fine-tuning train / validation / test drawn from the
  samples never pre-trained on, no group (the article of a sentence, ``--groups`` for own data) on
  two sides; written as ``splits.tsv``. The cliques task's topic model is fitted on the pre-training
  side only (:func:`~sipt_lab.studies.lc.tasks.cliques_task`). The ``transductive`` protocol
  pre-trains on every split's samples instead (the paper's setting), and says so.
* **Arms**, per replicate (split seed x seed), same steps, data order and seed: ``init`` (the
  encoder as initialised, no training), ``lm`` (λ_SI = 0; the graph is not read, so one run serves
  every level), ``sipt`` (the init kind's default λ_SI, one run per level), the labels-direct arms
  ``init+labels`` and ``lm+labels`` per level (no training: those encoders with the pre-training
  samples and their dial labels added to the k-NN references and the probe's training data, what a
  user who holds the graph's labels could do without SIPT), plus the reference row ``tfidf`` (word
  TF-IDF fitted on the pre-training texts, no training) per split seed.
* **Metrics on the never-seen test split** (:func:`~sipt_lab.evaluation.heldout.heldout_metrics`):
  ``k``-NN accuracy (the pre-registered primary metric: Theorem 1 bounds nearest-neighbour
  accuracy) and macro AUROC with neighbours from the fine-tuning train split, and a linear probe
  (fitted on train, strength chosen on validation) accuracy and macro-F1; with fine-tuning, its
  accuracy and macro-F1.

Files written into the run directory (a new or empty one; an earlier study's is replaced only when
asked, :func:`sipt_lab.core.outputs.run_output`; an interrupted study keeps its finished replicates,
and resuming it with the same config trains only the others):

* ``config.json``: the :class:`LcTransferConfig`;
* ``splits.tsv``: ``split_seed<TAB>id<TAB>pretrain|train|validation|test``;
* ``results.csv``: one row per LC level x arm x replicate x metric, columns ``level`` (index into
  the grid; empty for arms that do not depend on it: ``init``, ``lm``, ``tfidf``), ``q``,
  ``target_lc``, ``lc`` (measured over the pre-training nodes for that replicate's graph), ``arm``,
  ``split_seed``, ``seed`` (empty for ``tfidf``), ``metric``, ``value`` (in ``[0, 1]``);
* ``cells/``: the grid of replicates (one :func:`~sipt_lab.studies.lc.arms.study_seed` cell each);
* ``summary.json``: :func:`~sipt_lab.studies.lc.gain_stats.summarise`'s fields (the primary
  metric's ``slope``, ``slope_ci``, ``crossover_lc``, ``crossover_ci``, ``crossover_undefined_share``,
  per-level gains over LM-only, the init and the labels-direct arms, ``control_gain``, ``mde``, the
  spread over split seeds; every metric's under ``metrics``; ``encoder_consistency``,
  ``multiplicity``, ``warnings``, ``verdict``);
* ``gain_vs_lc.png`` / ``.pdf``: the paired gains against measured LC with their intervals.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from pathlib import Path

import numpy as np

from sipt_lab.core import fileio, outputs
from sipt_lab.core.config_io import config_to_dict, field_differences, save_config
from sipt_lab.core.errors import SiptError
from sipt_lab.core.stats import MIN_REPLICATES_FOR_INTERVAL
from sipt_lab.grid import check_executor, deadline_options, run_grid
from sipt_lab.studies.lc.arms import (
    SEED_KEYS,
    Scorer,
    StudySeed,
    level_lines,
    row_recorder,
    study_inputs,
    study_seed,
    study_source,
)
from sipt_lab.studies.lc.config import LcTransferConfig
from sipt_lab.studies.lc.dial import pretraining_nodes, splits_tsv
from sipt_lab.studies.lc.estimate import estimate_line
from sipt_lab.studies.lc.gain_stats import plural, power_line, summarise

logger = logging.getLogger(__name__)

#: The arms' validation metrics during training, when ``TrainConfig.eval_every`` is set: one row
#: per arm x seed x level x step x metric.
TRACE_FILE = "evaluations.csv"
RESULT_COLUMNS = ("level", "q", "target_lc", "lc", "arm", "split_seed", "seed", "metric", "value")
TRACE_COLUMNS = ("arm", "level", "split_seed", "seed", "step", "metric", "value")
RUN_FILES = ("config.json", "splits.tsv", "results.csv", "summary.json", "gain_vs_lc.png", "gain_vs_lc.pdf")
#: The study's grid root inside its run directory.
CELLS_DIR = "cells"


def run_lc_transfer(
    config: LcTransferConfig,
    out: str | Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    log=None,
    executor: str = "serial",
    time_limit: float | None = None,
) -> dict:
    r"""Run the study of the module docstring into ``out`` (a new or empty directory; an earlier
    study's with ``overwrite``, or with ``resume`` when its config is ``config``, under
    :func:`sipt_lab.core.outputs.run_output`); returns the summary. Every input check runs before
    any training. Each seed is one cell of :func:`~sipt_lab.grid.run_grid` under ``out/cells``, run
    by ``executor``; a study that fails or is interrupted keeps the seeds it finished. With
    ``time_limit`` (seconds from this call, serial executor) no seed starts that would likely end
    past it (:func:`~sipt_lab.grid.deadline_options`): the study then stops with
    :class:`~sipt_lab.grid.GridStopped`, keeping its finished seeds for ``resume``.

    A toy study: 32 labelled samples, the dial at ``q = 0`` and ``1``, one seed of two steps per arm
    (far too small to conclude anything; it shows the calls and the files):

    ```pycon
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from sipt_lab import LcTransferConfig, run_lc_transfer, train_config
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> rng = np.random.default_rng(0)
    >>> words = {"fruit": "apple pear plum fig lime kiwi".split(), "sky": "cloud rain sun star moon wind".split()}
    >>> labels = ["fruit", "sky"] * 16
    >>> _ = (tmp / "samples.tsv").write_text("".join(f"s{i}\t{' '.join(rng.choice(words[y], 4))}\n" for i, y in enumerate(labels)))
    >>> _ = (tmp / "labels.tsv").write_text("".join(f"s{i}\t{y}\n" for i, y in enumerate(labels)))
    >>> config = LcTransferConfig(samples=str(tmp / "samples.tsv"), labels=str(tmp / "labels.tsv"), n_pretrain=12,
    ...                           n_train=8, n_validation=4, n_test=8, levels=(0.0, 1.0), seeds=1, init="char",
    ...                           encoder="paper-small", split_seeds=(0,),
    ...                           train=train_config("char", steps=2, batch_size=4, max_len=16, device="cpu"))
    >>> summary = run_lc_transfer(config, tmp / "study", log=lambda line: None)
    >>> summary["metric"], summary["replicates"], summary["protocol"], len(summary["levels"]), summary["slope_ci"]
    ('knn_accuracy', 1, 'inductive', 2, None)
    >>> sorted(path.name for path in (tmp / "study").iterdir())
    ['.sipt-lab-files.json', 'cells', 'config.json', 'gain_vs_lc.pdf', 'gain_vs_lc.png', 'results.csv', 'splits.tsv', 'summary.json']

    ```
    """
    log = logger.info if log is None else log  # the CLI passes print: its lines are the command's output
    outputs.check_output_dir(out)
    check_executor(executor)
    stop = deadline_options(executor, time_limit)
    inputs = {split_seed: study_inputs(config, split_seed) for split_seed in config.split_seeds}
    source = study_source(config)  # a missing checkpoint is refused before anything is written
    if config.pilot_sd is not None:
        log(power_line(config.pilot_sd, config.seeds, len(config.split_seeds)))
    task, splits, _ = inputs[config.split_seeds[0]]
    log(estimate_line(config, [task.texts[i] for i in pretraining_nodes(splits, config.protocol)], source))
    with outputs.run_output(
        out,
        "study lc-transfer",
        finished="summary.json",
        resume=resume,
        overwrite=overwrite,
        keep_on_failure=finished_seeds,
        log=log,
    ) as out_dir:
        if resume:
            check_same_study(out_dir, config)
        outputs.record_files(out_dir, list(RUN_FILES))
        save_config(config, out_dir / "config.json")
        fileio.write_text_atomic(
            out_dir / "splits.tsv",
            "".join(splits_tsv(split_seed, task.ids, splits) for split_seed, (task, splits, _) in inputs.items()),
        )
        try:
            cells = run_grid(
                functools.partial(study_seed),
                [
                    StudySeed(config, split_seed, seed)
                    for split_seed in config.split_seeds
                    for seed in range(config.seeds)
                ],
                out_dir / CELLS_DIR,
                executor=executor,
                required_keys=SEED_KEYS,
                **stop,
            )
        finally:
            outputs.record_tree(out_dir, CELLS_DIR)  # the run owns its cells (``--overwrite`` removes them)
        trace = [row for cell in cells for row in cell.result.get("trace", [])]
        if trace:  # the arms' validation metrics during training (TrainConfig.eval_every)
            outputs.record_files(out_dir, [TRACE_FILE])
            fileio.write_text_atomic(out_dir / TRACE_FILE, results_csv(trace, TRACE_COLUMNS))
        summary = write_summary(out_dir, config, [cell.result for cell in cells], log)
    log(summary["verdict"])
    return summary


def finished_seeds(out_dir: Path) -> bool:
    """Whether the study in ``out_dir`` has a finished seed (a cell's ``result.json``) worth resuming from."""
    return any((out_dir / CELLS_DIR).glob("*/result.json"))


def check_same_study(out_dir: Path, config, growable: tuple[str, ...] = ()) -> None:
    """SiptError naming the fields in which the study saved in ``out_dir`` (its ``config.json``)
    differs from ``config``: a resumed study is the same study, but for the ``growable`` fields
    (those that only add cells, e.g. the atlas's graphs and seeds)."""
    saved = out_dir / "config.json"
    if not saved.is_file():
        return  # stopped before it wrote anything but cells: the cells' own hashes decide
    stored = json.loads(fileio.read_text_file(saved, "the study's config file"))
    current = json.loads(fileio.json_text(config_to_dict(config)))
    differences = [name for name in field_differences(stored, current) if name not in growable]
    if differences:
        names = [
            f"TrainConfig.{name[6:]}" if name.startswith("train.") else f"{type(config).__name__}.{name}"
            for name in differences
        ]
        grows = f" ({', '.join(growable)} may change)" if growable else ""
        raise SiptError(
            f"{out_dir} holds a study of another configuration (differs in {', '.join(names)}); "
            f"resume it with the same settings{grows}, or pass --overwrite to replace it, or another --out"
        )


def write_summary(out_dir: Path, config: LcTransferConfig, seed_results: list[dict], log=lambda line: None) -> dict:
    """``results.csv``, ``summary.json`` and the gain figure in ``out_dir`` from the replicates'
    :func:`~sipt_lab.studies.lc.arms.study_seed` results and each split seed's TF-IDF
    reference row; logs one line per replicate and level; returns the summary."""
    rows: list[dict] = []
    for split_seed in sorted({row["split_seed"] for result in seed_results for row in result["rows"]}):
        task, splits, _ = study_inputs(config, split_seed)
        score = Scorer(config, task.texts, task.labels, splits)
        pt_texts = [task.texts[i] for i in pretraining_nodes(splits, config.protocol)]
        row_recorder(rows, split_seed, None)("tfidf", score(tfidf_vectors(pt_texts, score.texts)))
    for result in seed_results:
        rows += result["rows"]
    for line in level_lines(rows, config.metric):
        log(line)
    summary = summarise(rows, config, float(np.mean([result["encoder_consistency"] for result in seed_results])))
    fileio.write_text_atomic(out_dir / "results.csv", results_csv(rows))
    fileio.write_json_atomic(out_dir / "summary.json", summary)
    draw_gain_figure(out_dir / "gain_vs_lc", summary)
    return summary


def results_csv(rows: list[dict], columns: tuple[str, ...] = RESULT_COLUMNS) -> str:
    """The CSV text of ``rows`` (``results.csv``'s columns of the module docstring, or
    :data:`TRACE_COLUMNS`; None is empty)."""
    cell = lambda v: "" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v))
    return ",".join(columns) + "\n" + "".join(",".join(cell(row[c]) for c in columns) + "\n" for row in rows)


def draw_gain_figure(stem: str | Path, summary: dict) -> list[Path]:
    """``<stem>.png`` / ``.pdf``: per-level mean gain in the primary metric against measured LC, over
    LM-only and over LM-only given the dial's labels, with 95 % interval bars (none under three
    replicates), and the encoder's own consistency as a vertical line; the title names the dataset,
    the metric and the replicates, the note the crossover and what the intervals allow for."""
    from sipt_lab.viz.labelled_points import labelled_errorbars

    levels = summary["levels"]
    lcs = [lv["lc"] for lv in levels]

    def half(key: str) -> list[float]:
        return [math.nan if lv[f"{key}_ci"] is None else (lv[f"{key}_ci"][1] - lv[f"{key}_ci"][0]) / 2 for lv in levels]

    series = {"SIPT - LM-only": (lcs, [lv["gain"] for lv in levels], half("gain"))}
    if "gain_over_labels_direct" in levels[0]:
        series["SIPT - (LM-only + the dial's labels)"] = (
            lcs,
            [lv["gain_over_labels_direct"] for lv in levels],
            half("gain_over_labels_direct"),
        )
    crossover = summary["crossover_lc"]
    note = (
        "the line does not cross zero in [0, 1]"
        if crossover is None
        else f"the line crosses zero at LC {crossover:.3f}"
    )
    if summary["crossover_ci"] is not None:
        note += f"; Fieller 95% CI of its zero [{summary['crossover_ci'][0]:.3f}, {summary['crossover_ci'][1]:.3f}]"
    enough = summary["replicates"] >= MIN_REPLICATES_FOR_INTERVAL
    note += f"\n95% CIs {summary['interval_basis']}" if enough else ""
    bars = "95% CI" if enough else "no interval: too few replicates"
    return labelled_errorbars(
        stem,
        series,
        [f"q={lv['q']:g}" for lv in levels],
        xlabel="LC of the pre-training graph over the pre-training samples (measured)",
        ylabel=f"gain in {summary['metric_name']} ({bars})",
        title=f"{summary['dataset']}: held-out gain vs LC\n{plural(summary['seeds'], 'seed')} x "
        f"{plural(len(summary['split_seeds']), 'split')}, never-seen test samples",
        note=note,
        marks={f"encoder's own {summary['k']}-NN consistency": summary["encoder_consistency"]},
    )


def tfidf_vectors(pretrain_texts: list[str], texts: list[str]) -> np.ndarray:
    """``(n, V)`` dense word TF-IDF rows of ``texts`` (at most 8192 words), vocabulary and IDF fitted
    on ``pretrain_texts`` only (:func:`sipt_lab.domains.wiki.tfidf_features`)."""
    from sipt_lab.domains.wiki import tfidf_features

    return (
        tfidf_features([*pretrain_texts, *texts], np.arange(len(pretrain_texts)), 8192)[len(pretrain_texts) :]
        .toarray()
        .astype(np.float32)
    )
