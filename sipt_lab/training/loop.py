"""The training loop: AdamW steps of a :class:`~sipt_lab.training.step.Step` over its runs' batches.

One loop trains one model (:class:`~sipt_lab.training.step.ModelStep`, from
:func:`~sipt_lab.training.trainer.pretrain`) or a stack of K models
(:class:`~sipt_lab.training.stacked_step.StackedStep`, from
:func:`~sipt_lab.training.trainer.pretrain_batched`); the step gives, per micro-batch of every
run, the loss to back-propagate and each run's detached losses, and everything else lives here
once: the learning-rate schedule, gradient accumulation (``grad_accum`` consecutive sampler
batches per step), the gradient scaler, data parallelism, checkpoints and resume, the
non-finite-loss stop, the ``L_SI`` stall guard and the progress bar. Steps count from 0.

**Data parallel.** With ``place.world`` > 1 (under ``torchrun``) the step is wrapped in
``DistributedDataParallel``: every process draws the same global batch and its step encodes its
shard of the rows (:class:`~sipt_lab.training.step.RunLoss`), so K processes with global batch B
optimise the same loss as one process with batch B (up to float rounding). Only rank 0 shows
progress, warns and writes checkpoints.

**Resume.** Batches are a pure function of the step and the rate a pure function of the step
(:func:`~sipt_lab.training.train_config.lr_factor`), and a checkpoint keeps the RNG states, so a run
resumed from a checkpoint ends with the numbers of an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from sipt_lab.core.errors import SiptError
from sipt_lab.core.progress import progress_bar
from sipt_lab.training.batch_stream import batch_stream
from sipt_lab.training.checkpoint import Checkpoint
from sipt_lab.training.diagnostics import guard_step, stalled_structure_loss
from sipt_lab.training.recipe import BatchSampler
from sipt_lab.training.recorded_steps import RecordedSteps
from sipt_lab.training.runtime import SINGLE_PROCESS, Distributed
from sipt_lab.training.step import Step, make_optimizer, set_learning_rate, train_step
from sipt_lab.training.train_config import TrainConfig, lr_factor
from sipt_lab.training.watch import Watch

logger = logging.getLogger(__name__)

#: Worker processes that draw a recorded training's batches ahead of it (:func:`draw_workers`).
DRAW_WORKERS = 2


def train(
    step: Step,
    samplers: Sequence[BatchSampler],
    config: TrainConfig,
    optimizer: torch.optim.Optimizer,
    *,
    place: Distributed = SINGLE_PROCESS,
    checkpoint: Checkpoint | None = None,
    warm_up: Callable[[], None] | None = None,
    desc: str = "pretrain",
    position: int | None = None,
    watch: Watch | None = None,
) -> list[dict[str, np.ndarray]]:
    """Train ``step`` for ``config.steps`` optimiser steps; run ``k`` reads ``samplers[k]``'s batches.

    ``config`` gives the steps, accumulation, rate schedule and logging cadence (shared by all
    runs). With ``checkpoint``, a checkpoint there is resumed, and one is written every
    ``checkpoint_every`` steps and at the end. ``warm_up`` is called once before the first step of
    a run that starts afresh (not on resume). A non-finite loss stops the run with a SiptError
    naming the step. ``position``: the terminal line of the step bar (tqdm's).

    ``watch`` (:class:`~sipt_lab.training.watch.Watch`): with its ``evaluate`` and
    ``config.eval_every``, the model is evaluated every ``eval_every`` steps and at the last; with
    ``config.keep_best``, ``watch.keep_best`` is called at each new best value of that metric, and
    with ``config.patience`` the run stops after that many evaluations without one; ``watch.log``
    receives every step's loss terms (``loss/<term>``, one run) and ``lr``, the throughput and the
    evaluations (main process only). The evaluations go into the checkpoint: a resumed run hands
    them to ``watch.restore``, keeps its best value and its count towards the patience, and one
    that the patience had stopped stays stopped (unless resumed with a larger patience).

    Returns:
        per run, its history: ``"loss"`` (the weighted total), each term and ``"lr"`` to a
        ``(steps,)`` float64 array of per-step values (fewer when the patience stopped the run).
    """
    names = step.names
    device = step.device
    trainable: nn.Module = step
    if place.world > 1:
        trainable = DistributedDataParallel(
            step, broadcast_buffers=False, find_unused_parameters=not all(run.needs_mlm for run in step.runs)
        )
    scaler = torch.amp.GradScaler(device.type, enabled=step.amp_dtype == torch.float16)
    histories = [torch.full((config.steps, len(run_names)), float("nan"), device=device) for run_names in names]
    start, evaluations = 0, []
    if checkpoint is not None and checkpoint.exists():
        start, evaluations = checkpoint.load(step, optimizer, scaler, histories)
    if start == 0 and warm_up is not None:
        warm_up()

    trainable.train()
    steps = optimiser_steps(step, samplers, config, optimizer, scaler, start, trainable)
    checked = start
    watch = watch if watch is not None else Watch()
    log = watch.log if place.is_main else None
    evaluating = watch.evaluate is not None and config.eval_every is not None
    best, stale = None, 0
    for record in evaluations:  # a resumed run goes on from its best so far and its patience
        improved, stale = _progress(record["metrics"], config.keep_best, best, stale)
        best = improved if improved is not None else best
    if evaluations and watch.restore is not None:
        watch.restore(evaluations)
    stopped = start if evaluations and _exhausted(config, stale) else None
    clock, clocked, evaluation_seconds = time.perf_counter(), start, 0.0
    began = clock
    with progress_bar(
        total=config.steps,
        initial=start,
        disable=not place.is_main,
        desc=desc,
        unit="step",
        position=position,
    ) as bar:
        for index in range(start, config.steps if stopped is None else start):
            rate = config.lr * lr_factor(config, index)
            set_learning_rate(optimizer, rate)
            for history, values in zip(histories, next(steps)):
                history[index, :-1] = values
                history[index, -1] = rate
            bar.update()
            done = index + 1
            if evaluating and (done % config.eval_every == 0 or done == config.steps):
                began = time.perf_counter()
                metrics = {name: float(value) for name, value in watch.evaluate(done).items()}
                seconds = time.perf_counter() - began
                evaluation_seconds += seconds
                evaluations.append({"step": done, "metrics": metrics, "seconds": seconds})
                if log is not None:
                    log(done, {f"eval/{name}": value for name, value in metrics.items()} | {"eval/seconds": seconds})
                improved, stale = _progress(metrics, config.keep_best, best, stale)
                if improved is not None:
                    best = improved
                    if watch.keep_best is not None and place.is_main:
                        watch.keep_best(done)
                if _exhausted(config, stale):
                    stopped = done
            save_now = checkpoint is not None and (
                done == config.steps
                or stopped is not None
                or (config.checkpoint_every and done % config.checkpoint_every == 0)
            )
            if save_now or done % config.log_every == 0 or done == config.steps or stopped is not None:
                rows = [
                    check_finite(history, checked, done, run_names, run if len(names) > 1 else None)
                    for run, (history, run_names) in enumerate(zip(histories, names))
                ]
                if log is not None:
                    seconds = time.perf_counter() - clock - evaluation_seconds
                    _log_rows(log, rows, checked, names, config, (done - clocked) / max(seconds, 1e-9))
                    clock, clocked, evaluation_seconds = time.perf_counter(), done, 0.0
                checked = done
                bar.set_postfix(_postfix([values[-1] for values in rows], names), refresh=False)
            if done == guard_step(config.steps) and place.is_main:
                _guard(histories, names, done, config)
            if save_now and place.is_main:
                checkpoint.save(step, optimizer, scaler, histories, done, evaluations)
            if stopped is not None:
                break
    logger.debug(
        "training: steps %d..%d, %d runs, batch %d x %d, %d evaluations, in %.1f s",
        start + 1,
        stopped or config.steps,
        len(names),
        config.batch_size,
        config.grad_accum,
        len(evaluations),
        time.perf_counter() - began,
    )
    if stopped is not None:
        logger.info("stopped at step %d: %d evaluations without a better %s", stopped, stale, config.keep_best)
        histories = [history[:stopped] for history in histories]
    tables = [history.cpu().double().numpy() for history in histories]
    return [{name: table[:, k] for k, name in enumerate(run_names)} for table, run_names in zip(tables, names)]


def optimiser_steps(
    step: Step,
    samplers: Sequence[BatchSampler],
    config: TrainConfig,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    start: int = 0,
    trainable: nn.Module | None = None,
) -> Iterator[list[torch.Tensor]]:
    """The optimiser steps ``start..config.steps-1`` of ``step``: each ``next()`` takes one (at the
    rate the optimiser holds then) and returns :func:`train_step`'s per-run losses; run ``k`` reads
    ``samplers[k]``. A step that records its steps replays CUDA graphs (:class:`RecordedSteps`) on
    its prepared batches, drawn ahead by :func:`draw_workers` processes (:func:`batch_stream`); any
    other step runs :func:`train_step` on batches drawn here (``trainable``: ``step``, or ``step``
    wrapped in DDP). Start it after any checkpoint is loaded into the optimiser."""
    recorded = RecordedSteps(step, optimizer) if step.records_steps else None
    workers = draw_workers() if recorded is not None else 0
    for micro in batch_stream(samplers, config.grad_accum, start, config.steps, workers):
        if recorded is not None:
            yield recorded([step.prepare(batches) for batches in micro])
        else:
            yield train_step(step if trainable is None else trainable, optimizer, scaler, micro)


def draw_workers() -> int:
    """Worker processes that draw a recorded training's batches: :data:`DRAW_WORKERS`, fewer on a
    machine with fewer cores (one stays for this process)."""
    return max(0, min(DRAW_WORKERS, (os.cpu_count() or 1) - 1))


@contextlib.contextmanager
def frozen_except(heads: list[nn.Parameter], parameters: Iterable[nn.Parameter]) -> Iterator[None]:
    """Within the block, every trainable parameter of ``parameters`` but ``heads`` is frozen."""
    head_ids = {id(p) for p in heads}
    frozen = [p for p in parameters if p.requires_grad and id(p) not in head_ids]
    for parameter in frozen:
        parameter.requires_grad_(False)
    try:
        yield
    finally:
        for parameter in frozen:
            parameter.requires_grad_(True)


def fit_heads(
    heads: list[nn.Parameter],
    step: Step,
    sampler: BatchSampler,
    config: TrainConfig,
    what: str,
    log: Callable[[int, dict[str, float]], None] | None = None,
) -> str:
    """Fit new ``heads`` (an init's missing MLM head, an objective's own head) for
    ``config.head_warmup`` steps at the constant ``config.head_lr`` with every other parameter of
    ``step`` frozen, on the sampler's first batches (their seeds' masks: the same for every λ, so LM
    and SIPT arms start from the same state), with a progress bar. ``step`` computes the heads' loss
    of a batch (one run); ``log`` receives each warm-up step's loss as ``head_warmup/loss`` at steps
    1.. (a Watch's log: its own tag, apart from the training steps). Returns a note for the log
    naming ``what`` was fitted."""
    optimizer = make_optimizer(heads, config.head_lr, config.weight_decay, fused=False)
    scaler = torch.amp.GradScaler(enabled=False)
    began, losses = time.perf_counter(), []
    with frozen_except(heads, step.parameters()):
        step.train()
        for k in progress_bar(range(config.head_warmup), desc=f"{what} warm-up", unit="step"):
            losses.append(float(train_step(step, optimizer, scaler, [[sampler.batch(k)]])[0][0]))
            if log is not None:
                log(k + 1, {"head_warmup/loss": losses[-1]})
    steps = f"{config.head_warmup} step{'s' if config.head_warmup > 1 else ''}"
    terms = " + ".join(step.names[0][1:-1])
    logger.debug(
        "head warm-up: %s, %s of %d seeds in %.1f s", what, steps, config.batch_size, time.perf_counter() - began
    )
    return f"{what} fitted for {steps} with the encoder frozen: {terms} loss {losses[0]:.3g} -> {losses[-1]:.3g}"


def check_finite(history: torch.Tensor, start: int, stop: int, names: list[str], run: int | None = None) -> np.ndarray:
    """Rows ``start..stop-1`` of a ``(steps, columns)`` history as numpy; SiptError at the first
    non-finite one (naming run ``run`` when given)."""
    values = history[start:stop].cpu().numpy()
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        terms = ", ".join(f"{name}={value:.4g}" for name, value in zip(names, values[row]))
        which = "" if run is None else f"run {run}: "
        raise SiptError(
            f"{which}non-finite loss at step {start + row} ({terms}); lower lr, check the inputs, or use precision fp32"
        )
    return values


def _exhausted(config: TrainConfig, stale: int) -> bool:
    """Whether ``stale`` evaluations without a better ``keep_best`` use up ``config.patience``."""
    return config.patience is not None and stale >= config.patience


def _progress(
    metrics: dict[str, float], metric: str | None, best: float | None, stale: int
) -> tuple[float | None, int]:
    """``(the new best value or None, evaluations since the last best)`` after an evaluation's
    ``metrics``, tracking ``metric`` (higher is better; None: no tracking)."""
    if metric is None:
        return None, stale
    if metric not in metrics:
        raise SiptError(f"the evaluation gives no {metric}; it gives {', '.join(metrics) or 'nothing'}")
    value = float(metrics[metric])
    if best is None or value > best:
        return value, 0
    return None, stale + 1


def _log_rows(
    log: Callable[[int, dict[str, float]], None],
    rows: list[np.ndarray],
    start: int,
    names: list[list[str]],
    config: TrainConfig,
    steps_per_second: float,
) -> None:
    """History rows ``start..`` of every run to ``log``, each at its count of steps done (one run: each term as ``loss/<term>``;
    several: their mean total as ``loss/loss``), then the throughput at the last of them."""
    for offset in range(len(rows[0])):
        if len(rows) == 1:
            values = {
                (name if name == "lr" else f"loss/{name}"): float(v) for name, v in zip(names[0], rows[0][offset])
            }
        else:
            values = {"loss/loss": float(np.mean([run[offset][0] for run in rows])), "lr": float(rows[0][offset][-1])}
        log(start + offset + 1, values)
    samples = config.batch_size * config.grad_accum * len(rows)
    log(
        start + len(rows[0]),
        {"throughput/steps_per_second": steps_per_second, "throughput/samples_per_second": steps_per_second * samples},
    )


def _postfix(last: list[np.ndarray], names: list[list[str]]) -> dict[str, str]:
    """The progress bar's latest values: one run's every column, several runs' mean total loss."""
    if len(last) == 1:
        return {name: f"{value:.4g}" for name, value in zip(names[0], last[0])}
    return {"loss": f"{np.mean([values[0] for values in last]):.4g}"}


def _guard(histories: Sequence[torch.Tensor], names: list[list[str]], done: int, config: TrainConfig) -> None:
    """Log :func:`~sipt_lab.training.diagnostics.stalled_structure_loss` for each run with ``L_SI``."""
    for run, (history, run_names) in enumerate(zip(histories, names)):
        if "si" in run_names:
            warning = stalled_structure_loss(history[:done, run_names.index("si")].cpu().double().numpy(), config)
            if warning:
                logger.warning(warning if len(names) == 1 else f"run {run}: {warning}")
