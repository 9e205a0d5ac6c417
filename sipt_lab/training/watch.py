"""What the training loop reports to while it trains: evaluations, the best model, logged scalars.

The loop knows no metric and no file: a :class:`Watch` hands it an ``evaluate(step)`` that returns
named metrics, a ``keep_best(step)`` that saves the model whose ``TrainConfig.keep_best`` metric
is the best so far, and a ``log(step, scalars)`` that records scalars (TensorBoard, CSV). The run
that builds the encoder builds its Watch from the encoder (:data:`WatchFactory`), so that
``evaluate`` can embed with the very model being trained.

:class:`ScalarLog` is the usual ``log``: TensorBoard event files (``torch.utils.tensorboard``)
in a directory, opened on first use.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)


@dataclass
class Watch:
    """Callbacks of the loop, each optional.

    Attributes:
        evaluate: ``step -> {metric: value}`` of the model after ``step`` optimiser steps; called
            every ``TrainConfig.eval_every`` steps and at the last step, in every process under
            data parallelism (its decisions must agree), in eval mode by its own choice.
        keep_best: ``step -> None``, called (in the main process only) when the ``keep_best``
            metric of an evaluation beats every earlier one.
        log: ``(step, {name: value}) -> None``, called in the main process only with the loss
            terms and learning rate of every step, the throughput, and each evaluation's metrics
            (prefixed ``eval/``) and cost.
        restore: ``[{"step", "metrics", "seconds"}] -> None``, called once when a run resumes from
            a checkpoint with the evaluations made before it, in order.
    """

    evaluate: Callable[[int], dict[str, float]] | None = None
    keep_best: Callable[[int], None] | None = None
    log: Callable[[int, dict[str, float]], None] | None = None
    restore: Callable[[list[dict]], None] | None = None


#: ``(encoder, tokenizer) -> Watch``: how :func:`~sipt_lab.training.trainer.pretrain` lets its caller
#: watch the model it builds.
WatchFactory = Callable[[object, object], Watch]


class ScalarLog:
    """Scalars to TensorBoard event files in ``directory`` (opened on the first value, so a run that
    logs nothing writes nothing); ``close`` flushes. Without the ``tensorboard`` package it warns
    once and logs nothing."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._writer = None
        self._failed = False

    def __call__(self, step: int, scalars: dict[str, float]) -> None:
        writer = self._open()
        if writer is None:
            return
        for name, value in scalars.items():
            writer.add_scalar(name, float(value), step)

    def embedding(self, vectors, labels=None, tag: str = "final") -> None:
        """The ``(n, H)`` ``vectors`` (with per-row ``labels``) for TensorBoard's embedding projector."""
        writer = self._open()
        if writer is not None:
            writer.add_embedding(
                vectors, metadata=None if labels is None else [str(label) for label in labels], tag=tag
            )

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _open(self):
        if self._writer is None and not self._failed:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # the package is a dependency; a broken install should not stop training
                self._failed = True
                logger.warning(
                    "the tensorboard package is not installed; no event files are written "
                    "(pip install tensorboard, or pass --report-to csv)"
                )
                return None
            self._writer = SummaryWriter(log_dir=str(self.directory))
        return self._writer
