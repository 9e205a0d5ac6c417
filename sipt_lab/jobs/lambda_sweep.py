"""``sipt-lab lambda-sweep``: choose ``λ_SI`` by link retrieval on ``G_PT``, without the fine-tuning labels.

The paper (Methods, "Further details on choosing λ_SI", Tables 9-10) pre-trained one model per
``λ_SI`` and kept the one whose embeddings best retrieve each node's ``G_PT`` neighbours; it scored
retrieval on the very links pre-training had fitted. Here a random ``validation`` fraction of the
linked samples is held out of pre-training altogether (their texts and every edge touching them), and
``λ`` is chosen by how well their neighbours rank first among all samples (:data:`SELECTION_METRICS`,
MRR by default), links no run has seen. The paper's own measure (retrieval on the pre-training graph)
is reported beside it.

``out`` holds:

* ``sweep.json``: the :class:`LambdaSweep` (written first; a re-run with the same sweep resumes);
* ``split/``: the pre-training samples (JSON Lines), their edges and, with labels, their labels, and
  ``validation_ids.txt``;
* ``lambda-<λ>/``: one ordinary ``sipt-lab pretrain`` run per ``λ`` on the split (finished runs are
  kept, unfinished ones resume from their checkpoint);
* ``cells/``: the grid of those runs (one :func:`pretrain_lambda` cell per ``λ``, run by
  :func:`~sipt_lab.grid.run_grid`: a finished run is skipped, and an executor may run them side by side);
* ``lambda_sweep.csv`` and ``result.json`` (written last): per row (random vectors, the initial
  encoder, each ``λ``) the validation and pre-training-graph LRAP, nDCG, AP and MRR; the chosen
  ``λ`` and its model directory.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sipt_lab.core import outputs
from sipt_lab.core.config_io import config_from_dict, save_config
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_json_atomic, write_text_atomic
from sipt_lab.data.samples import Samples, read_labelled_subset, read_sample_graph, read_samples
from sipt_lab.data.splits import link_queries
from sipt_lab.evaluation import link_retrieval_metrics
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.grid import check_executor, run_grid, write_results_csv
from sipt_lab.jobs import names
from sipt_lab.jobs.configs import LambdaSweep, PretrainJob
from sipt_lab.jobs.pretrain import FINISHED_MARKER, initial_embeddings, job_source, run_pretraining
from sipt_lab.models import load_encoder
from sipt_lab.training import embed, resolve_device, steps_for_epochs

logger = logging.getLogger(__name__)

DEFAULT_LAMBDAS = names.LAMBDA_GRID
SELECTION_METRICS = names.RETRIEVAL_METRICS
#: Queries of the pre-training-graph retrieval (a random subset on large graphs).
PT_QUERIES = 1000
SWEEP_CONFIG, RESULT_FILE, TABLE_FILE, CELLS_DIR = "sweep.json", "result.json", "lambda_sweep.csv", "cells"


@dataclass
class SweepOutcome:
    """The table of :func:`run_lambda_sweep` (one dict per row), the chosen ``λ`` and its model."""

    rows: list[dict] = field(default_factory=list)
    chosen: float = math.nan
    model_dir: Path | None = None
    out_dir: Path | None = None


@dataclass(frozen=True)
class LambdaRun:
    """One cell of a sweep's grid: the pre-training run ``job`` (the split's job at one ``λ``) into ``run_dir``."""

    job: PretrainJob
    run_dir: str


def pretrain_lambda(run: LambdaRun) -> dict:
    """The cell function: pre-train ``run`` (resuming from its checkpoint) unless it has finished;
    the run's log lines are returned (``log``) for the sweep to print."""
    lines: list[str] = []
    if not (Path(run.run_dir) / FINISHED_MARKER).is_file():
        run_pretraining(run.job, run.run_dir, resume=True, log=lines.append)
    return {"run_dir": run.run_dir, "lambda_si": run.job.train.lambda_si, "log": lines}


def run_lambda_sweep(sweep: LambdaSweep, out: str | Path, *, log=None, executor: str = "serial") -> SweepOutcome:
    r"""Pre-train every ``λ`` of ``sweep`` into ``out`` (cells of :func:`~sipt_lab.grid.run_grid` run
    by ``executor``) and choose one (module docstring). The inputs are read before anything is
    written, and ``out`` is locked while the sweep runs.

    Two values of ``λ``, two steps each, a quarter of the linked samples held out to choose:

    ```pycon
    >>> import pathlib, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> texts = ["red apple", "green apple", "ripe pear", "sour pear", "blue sky", "grey sky", "clear night", "dark night"]
    >>> _ = (tmp / "samples.tsv").write_text("".join(f"s{i}\t{text}\n" for i, text in enumerate(texts)))
    >>> _ = (tmp / "edges.tsv").write_text("s0\ts1\ns2\ts3\ns0\ts2\ns4\ts5\ns6\ts7\ns4\ts6\n")
    >>> from sipt_lab import LambdaSweep, PretrainJob, run_lambda_sweep, train_config
    >>> job = PretrainJob(samples=str(tmp / "samples.tsv"), edges=str(tmp / "edges.tsv"), init="char",
    ...                   encoder="paper-small", train=train_config("char", steps=2, batch_size=4, device="cpu"))
    >>> outcome = run_lambda_sweep(LambdaSweep(job=job, lambdas=(0.0, 0.5), validation=0.25), tmp / "sweep")
    >>> [row["embedder"] for row in outcome.rows], outcome.chosen in (0.0, 0.5)
    (['random', 'initial', 'lm', 'sipt'], True)
    >>> outcome.model_dir.parent.name in ("lambda-0", "lambda-0.5")
    True

    ```
    """
    log = logger.info if log is None else log  # the CLI passes print: its lines are the command's output
    outputs.check_output_dir(out)
    check_executor(executor)
    job = sweep.job
    samples = read_samples(job.samples)
    graph = read_sample_graph(job.edges, samples)
    labels = None
    if job.labels:
        labelled, label_strings = read_labelled_subset(job.labels, samples)
        labels = dict(zip(labelled.tolist(), label_strings.tolist()))
    validation = link_queries(graph, sweep.validation, job.train.seed)
    train_nodes = np.setdiff1d(np.arange(len(samples)), validation)
    with outputs.locked_dir(Path(out)):
        out_dir = _claim(sweep, out)
        split_job = _write_split(out_dir / "split", samples, graph, labels, train_nodes, validation, job)

        texts = list(samples.texts)
        source = job_source(job)
        device = resolve_device(job.train.device)
        train_graph = graph.subgraph(train_nodes)
        rows = [
            _row("random", math.nan, _random_vectors(len(texts), job), graph, train_graph, validation, train_nodes),
            _row(
                "initial",
                math.nan,
                initial_embeddings(texts, job.train, source, source.tokenizer(texts, job.train.max_len)),
                graph,
                train_graph,
                validation,
                train_nodes,
            ),
        ]
        runs = [
            LambdaRun(
                dataclasses.replace(split_job, train=dataclasses.replace(split_job.train, lambda_si=value)),
                str((out_dir / lambda_dir_name(value)).resolve()),
            )
            for value in sweep.lambdas
        ]
        for run in runs:
            if not (Path(run.run_dir) / FINISHED_MARKER).is_file():
                log(f"lambda-sweep: pre-training λ = {run.job.train.lambda_si:g} into {run.run_dir}")
        cells = run_grid(
            functools.partial(pretrain_lambda),
            runs,
            out_dir / CELLS_DIR,
            executor=executor,
            required_keys=("run_dir",),
        )
        for value, cell in zip(sweep.lambdas, cells):
            for line in cell.result["log"]:
                log(line)
            encoder, tokenizer = load_encoder(Path(cell.result["run_dir"]) / "model", device)
            vectors = embed(encoder, tokenizer, texts)
            rows.append(
                _row("lm" if value == 0 else "sipt", value, vectors, graph, train_graph, validation, train_nodes)
            )

        trained = [row for row in rows if not math.isnan(row["lambda_si"])]
        best = max(trained, key=lambda row: (row[f"validation_{sweep.metric}"], -row["lambda_si"]))
        for row in rows:
            row["chosen"] = row is best
        outcome = SweepOutcome(rows, best["lambda_si"], out_dir / lambda_dir_name(best["lambda_si"]) / "model", out_dir)
        write_results_csv(rows, out_dir / TABLE_FILE, list(rows[0]))
        write_json_atomic(
            out_dir / RESULT_FILE,
            {
                "chosen_lambda_si": outcome.chosen,
                "model": str(outcome.model_dir),
                "metric": sweep.metric,
                "n_validation": int(len(validation)),
                "n_pretraining": int(len(train_nodes)),
                "rows": rows,
            },
        )
        return outcome


def lambda_dir_name(value: float) -> str:
    return f"lambda-{value:g}"


def format_sweep(outcome: SweepOutcome, metric: str) -> str:
    """A readable table of a sweep: validation and pre-training-graph retrieval per row."""
    lines = [
        f"{'embedder':<10} {'λ_SI':>6}  {'val LRAP':>9} {'val nDCG':>9} {'val AP':>8} {'val MRR':>8}   "
        f"{'PT LRAP':>8} {'PT MRR':>8}"
    ]
    for row in outcome.rows:
        value = "" if math.isnan(row["lambda_si"]) else f"{row['lambda_si']:g}"
        lines.append(
            f"{row['embedder']:<10} {value:>6}  {row['validation_lrap']:>9.4f} {row['validation_ndcg']:>9.4f} "
            f"{row['validation_ap']:>8.4f} {row['validation_mrr']:>8.4f}   {row['pt_lrap']:>8.4f} {row['pt_mrr']:>8.4f}"
            + ("   <- chosen" if row["chosen"] else "")
        )
    lines += [
        "",
        f"chosen λ_SI = {outcome.chosen:g} (best validation {metric.upper()} on links no run saw): {outcome.model_dir}",
        f"table: {outcome.out_dir / TABLE_FILE}",
    ]
    return "\n".join(lines)


def _claim(sweep: LambdaSweep, out: str | Path) -> Path:
    """``out`` for ``sweep``: new, empty, or holding the same sweep (resumed); anything else is refused."""
    out_dir = outputs.check_output_dir(out)
    config = out_dir / SWEEP_CONFIG
    if out_dir.is_dir() and outputs.holds_files(out_dir):
        if not config.is_file():
            raise SiptError(f"--out {out_dir} is not empty and holds no λ sweep; choose a new or empty directory")
        try:
            same = config_from_dict(LambdaSweep, json.loads(config.read_text(encoding="utf-8"))) == sweep
        except (ValueError, TypeError, SiptError):
            same = False
        if not same:
            raise SiptError(f"--out {out_dir} holds another λ sweep (different settings); use another --out")
        return out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    save_config(sweep, config)
    return out_dir


def _write_split(
    split_dir: Path,
    samples: Samples,
    graph: PretrainingGraph,
    labels,
    train_nodes: np.ndarray,
    validation: np.ndarray,
    job: PretrainJob,
) -> PretrainJob:
    """Write the pre-training samples, edges and labels (``labels``: sample index -> label of the
    labelled ones, None without) under ``split_dir``; the job that reads them."""
    split_dir.mkdir(parents=True, exist_ok=True)
    ids = samples.ids
    write_text_atomic(
        split_dir / "samples.jsonl",
        "".join(json.dumps({"id": ids[i], "text": samples.texts[i]}, ensure_ascii=False) + "\n" for i in train_nodes),
    )
    edges = graph.subgraph(train_nodes).edges()
    write_text_atomic(
        split_dir / "edges.tsv", "".join(f"{ids[train_nodes[u]]}\t{ids[train_nodes[v]]}\n" for u, v in edges)
    )
    write_text_atomic(split_dir / "validation_ids.txt", "".join(f"{ids[i]}\n" for i in validation))
    labels_path = None
    if labels is not None:
        labels_path = str(split_dir / "labels.tsv")
        write_text_atomic(
            Path(labels_path), "".join(f"{ids[i]}\t{labels[i]}\n" for i in train_nodes.tolist() if i in labels)
        )
    train = job.train
    if job.epochs is not None:  # the same passes over the fewer samples left for pre-training
        train = dataclasses.replace(
            train, steps=steps_for_epochs(job.epochs, len(train_nodes), train.batch_size, train.grad_accum)
        )
    return dataclasses.replace(
        job,
        samples=str(split_dir / "samples.jsonl"),
        edges=str(split_dir / "edges.tsv"),
        labels=labels_path,
        train=train,
    )


def _row(
    embedder: str,
    lambda_si: float,
    vectors: np.ndarray,
    graph: PretrainingGraph,
    train_graph: PretrainingGraph,
    validation: np.ndarray,
    train_nodes: np.ndarray,
) -> dict:
    """Validation retrieval (validation samples' links among all samples) and the paper's measure
    (retrieval on the pre-training graph among the pre-training samples) of ``(n, H)`` ``vectors``."""
    held_out = link_retrieval_metrics(vectors, graph, queries=validation)
    fitted = link_retrieval_metrics(vectors[train_nodes], train_graph, max_queries=PT_QUERIES, rng=0)
    return {
        "embedder": embedder,
        "lambda_si": lambda_si,
        **{f"validation_{name}": held_out[name] for name in SELECTION_METRICS},
        **{f"pt_{name}": fitted[name] for name in SELECTION_METRICS},
    }


def _random_vectors(n: int, job: PretrainJob) -> np.ndarray:
    """Chance: ``(n, 64)`` standard normal vectors (seeded)."""
    return np.random.default_rng([job.train.seed, 0x2B]).standard_normal((n, 64))
