"""Watching a pre-training run: evaluations on a fixed validation slice, the best model, TensorBoard.

What ``sipt-lab pretrain`` hands the training loop (:class:`~sipt_lab.training.watch.Watch`):

* an :class:`Evaluator`: the embeddings of a fixed slice of the samples (a snowball sample of
  ``G_PT`` of at most :data:`EVAL_MAX_SAMPLES` samples, tokenised once), scored by
  :func:`evaluation_metrics`: link retrieval of the slice's ``G_PT`` (MRR, LRAP) and, with labels,
  LOO 3-NN AUROC and accuracy and the labels' local consistency over the embedding's own 3-NN
  graph (``knn_lc``). Its link and 3-NN numbers are those of the run's report (same functions,
  queries and ``k``) whenever the slice is the report's (runs of at most
  :data:`EVAL_MAX_SAMPLES` samples);
* the best model by ``TrainConfig.keep_best``, saved to ``DIR/best``;
* a :class:`~sipt_lab.training.watch.ScalarLog` writing TensorBoard event files to
  ``DIR/tensorboard`` (``report_to`` ``tensorboard``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sipt_lab.core import outputs
from sipt_lab.core.errors import ConfigError
from sipt_lab.core.fileio import write_text_atomic
from sipt_lab.evaluation import link_retrieval_metrics, loo_knn
from sipt_lab.evaluation.heldout import encoder_consistency
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.graphs.sampling import snowball_sample
from sipt_lab.training import names
from sipt_lab.training.embedding import embed_inputs
from sipt_lab.training.inputs import encoder_inputs
from sipt_lab.training.train_config import TrainConfig
from sipt_lab.training.watch import ScalarLog, Watch

#: Most samples an evaluation embeds: a fixed snowball slice of ``G_PT``.
EVAL_MAX_SAMPLES = 512
#: Query nodes of link retrieval (the report's).
LINK_QUERIES = 1000
#: Neighbours of the LOO k-NN scores and of the embedding's own k-NN graph (the paper's 3-NN).
K = 3
#: Where the TensorBoard event files go, and the evaluations' CSV file, in a run directory.
TENSORBOARD_DIR = "tensorboard"
#: The file in ``best/`` that holds the step of the model kept there.
BEST_STEP_FILE = "step.txt"
EVALUATIONS_CSV = "evaluations.csv"
BEST_DIR = "best"


def check_watch(config: TrainConfig, has_labels: bool) -> None:
    """ConfigError, before anything trains, when ``config.keep_best`` names a metric that needs labels
    and none are given."""
    if config.keep_best in names.LABEL_METRICS and not has_labels:
        raise ConfigError(
            "TrainConfig.keep_best",
            f"{config.keep_best} needs labels (PretrainJob.labels L.tsv); without them "
            f"choose one of {', '.join(m for m in names.EVAL_METRICS if m not in names.LABEL_METRICS)}",
        )


def evaluation_metrics(embeddings: np.ndarray, graph: PretrainingGraph, labels: np.ndarray | None) -> dict[str, float]:
    """The evaluation of ``(n, H)`` embeddings of ``graph``'s nodes: ``link_mrr``, ``link_lrap`` and,
    with ``(n,)`` ``labels``, ``loo_3nn_auroc``, ``loo_3nn_accuracy`` and ``knn_lc``."""
    link = link_retrieval_metrics(embeddings, graph, LINK_QUERIES, rng=0)
    metrics = {"link_mrr": float(link["mrr"]), "link_lrap": float(link["lrap"])}
    if labels is not None:
        scores = loo_knn(embeddings, labels, K)
        metrics |= {
            "loo_3nn_auroc": float(scores.auroc),
            "loo_3nn_accuracy": float(scores.accuracy),
            "knn_lc": encoder_consistency(embeddings, labels, K),
        }
    return metrics


@dataclass
class Validation:
    """The fixed slice an evaluation embeds: ``nodes`` of ``G_PT``, their subgraph, texts and labels."""

    nodes: np.ndarray
    graph: PretrainingGraph
    texts: list
    labels: np.ndarray | None

    @classmethod
    def of(
        cls,
        graph: PretrainingGraph,
        texts: list,
        labels: np.ndarray | None,
        seed: int,
        max_samples: int = EVAL_MAX_SAMPLES,
    ) -> Validation:
        nodes = snowball_sample(graph, max_samples, seed=seed)
        return cls(nodes, graph.subgraph(nodes), [texts[i] for i in nodes], None if labels is None else labels[nodes])


@dataclass
class Evaluator:
    """``evaluate(step)`` of the loop's Watch: the validation slice's embeddings by ``encoder`` now,
    scored by :func:`evaluation_metrics`; every evaluation is kept in ``records`` (with its cost in
    seconds; a resumed run's first ``restored`` come from its checkpoint, :meth:`restore`) and the
    last embeddings in ``vectors``."""

    validation: Validation
    encoder: object
    tokenizer: object
    records: list[dict] = field(default_factory=list)
    vectors: np.ndarray | None = None
    restored: int = 0

    def __post_init__(self) -> None:  # tokenised once, for every evaluation
        self.inputs = encoder_inputs(self.tokenizer, self.validation.texts, next(self.encoder.parameters()).device)

    def __call__(self, step: int) -> dict[str, float]:
        began = time.perf_counter()
        self.vectors = embed_inputs(self.encoder, self.inputs)
        metrics = evaluation_metrics(self.vectors, self.validation.graph, self.validation.labels)
        self.records.append({"step": step, **metrics, "seconds": time.perf_counter() - began})
        return metrics

    def restore(self, evaluations: list[dict]) -> None:
        """The Watch's ``restore``: the evaluations a resumed run made before its checkpoint come first."""
        self.records[:0] = [{"step": e["step"], **e["metrics"], "seconds": e["seconds"]} for e in evaluations]
        self.restored = len(evaluations)

    @property
    def seconds(self) -> float:
        """Seconds spent on the evaluations this process made (not the restored ones)."""
        return float(sum(record["seconds"] for record in self.records[self.restored :]))

    def summary(self, config: TrainConfig, training_seconds: float) -> dict:
        """For the run's report: interval, slice size, count, cost (and its share of the training
        time), the last evaluation and, with ``keep_best``, the best one."""
        out = {
            "every": config.eval_every,
            "samples": len(self.validation.nodes),
            "evaluations": len(self.records),
            "seconds": self.seconds,
            "share_of_training": self.seconds / max(training_seconds, 1e-9),
            "last": _metrics_of(self.records[-1]) if self.records else {},
        }
        if config.keep_best is not None and self.records:
            best = max(self.records, key=lambda record: record[config.keep_best])  # the first of equals, as the loop
            out["best"] = {"step": best["step"], **_metrics_of(best)}
        return out

    def csv(self) -> str:
        """``evaluations.csv``: one row per evaluation, step, metrics, seconds."""
        if not self.records:
            return ""
        columns = list(self.records[0])
        lines = [",".join(columns)] + [
            ",".join(f"{record[name]:.6g}" if name != "step" else str(record[name]) for name in columns)
            for record in self.records
        ]
        return "\n".join(lines) + "\n"


def _metrics_of(record: dict) -> dict[str, float]:
    return {name: value for name, value in record.items() if name not in ("step", "seconds")}


def cost_line(summary: dict) -> str:
    """One line stating what the evaluations cost."""
    return (
        f"evaluation: {summary['evaluations']} x {summary['samples']} samples every {summary['every']} steps took "
        f"{summary['seconds']:.1f} s, {summary['share_of_training']:.1%} of the training time"
    )


def best_saver(out_dir: Path, encoder, tokenizer):
    """``keep_best(step)`` of the Watch: ``encoder`` (as now) saved to ``out_dir/best``."""

    def keep(step: int) -> None:
        encoder.save(out_dir / BEST_DIR, tokenizer)
        write_text_atomic(out_dir / BEST_DIR / BEST_STEP_FILE, f"{step}\n")
        outputs.record_tree(out_dir, BEST_DIR)

    return keep


def kept_step(out_dir: Path) -> int | None:
    """The step of the model kept in ``out_dir/best``, None when the run kept none."""
    path = out_dir / BEST_DIR / BEST_STEP_FILE
    return int(path.read_text()) if path.is_file() else None


class RunWatch:
    """How a pretrain run into ``out_dir`` watches its training: a
    :data:`~sipt_lab.training.watch.WatchFactory` (:func:`~sipt_lab.training.trainer.pretrain`
    calls it with the encoder it builds) that evaluates with ``config.eval_every``, keeps the best
    model with ``config.keep_best`` and logs to TensorBoard with ``config.report_to``
    ``tensorboard``; only the ``main`` process writes."""

    def __init__(
        self,
        config: TrainConfig,
        out_dir: Path,
        graph: PretrainingGraph,
        texts: list,
        labels: np.ndarray | None,
        main: bool = True,
    ) -> None:
        self.config, self.out_dir, self.main = config, Path(out_dir), main
        self.validation = lambda: Validation.of(graph, texts, labels, config.seed)
        self.evaluator: Evaluator | None = None
        self.scalars = ScalarLog(self.out_dir / TENSORBOARD_DIR) if main and config.report_to == "tensorboard" else None
        self._recorded = False

    def __call__(self, encoder, tokenizer) -> Watch:
        if self.config.eval_every is not None:
            self.evaluator = Evaluator(self.validation(), encoder, tokenizer)
        keep = best_saver(self.out_dir, encoder, tokenizer) if self.config.keep_best and self.main else None
        restore = None if self.evaluator is None else self.evaluator.restore
        return Watch(self.evaluator, keep, self._log if self.scalars is not None else None, restore)

    def _log(self, step: int, scalars: dict[str, float]) -> None:
        self.scalars(step, scalars)
        if not self._recorded:  # the event file now exists: the run owns it
            outputs.record_tree(self.out_dir, TENSORBOARD_DIR)
            self._recorded = True

    def project(self, vectors: np.ndarray, labels: np.ndarray | None) -> None:
        """The final embeddings (of the report's slice) for TensorBoard's embedding projector."""
        if self.scalars is not None:
            self.scalars.embedding(vectors, labels)

    def finish(self, steps_run: int, seconds: float, log=None) -> dict:
        """What the run's report adds: the evaluations' summary (``evaluation``) and, when the
        patience stopped the run, ``stopped_at``; writes ``evaluations.csv`` (``report_to`` not
        ``none``) and logs the evaluations' cost with ``log``."""
        added: dict = {}
        if steps_run < self.config.steps:
            added["stopped_at"] = steps_run
            if log is not None:
                patience = self.config.patience
                log(
                    f"stopped at step {steps_run:,} of {self.config.steps:,}: {patience} "
                    f"evaluation{'s' if patience != 1 else ''} in a row without a better {self.config.keep_best}"
                )
        if self.evaluator is not None:
            summary = self.evaluator.summary(self.config, seconds - self.evaluator.seconds)
            added["evaluation"] = summary
            if self.main and self.config.report_to != "none":
                outputs.record_files(self.out_dir, [EVALUATIONS_CSV])
                write_text_atomic(self.out_dir / EVALUATIONS_CSV, self.evaluator.csv())
            if log is not None:
                log(cost_line(summary))
        return added

    def close(self) -> None:
        if self.scalars is not None:
            self.scalars.close()
            if (self.out_dir / TENSORBOARD_DIR).is_dir():
                outputs.record_tree(self.out_dir, TENSORBOARD_DIR)
