"""How long a pre-training run will take, from one forward pass of its own encoder on its own
samples, measured before the first step.

A training step encodes its batch's distinct samples forwards and backwards (about
:data:`TRAIN_COST` forward passes each), a head warm-up step encodes its seeds forwards only (the
encoder is frozen), and embedding a sample is one forward pass; so one measured number, the seconds
of a forward pass per sample, prices every phase. The estimate ignores loading and writing files.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from torch import nn

from sipt_lab.models import evaluating

#: Forward passes' worth of work in one training step per encoded sample (forward + backward).
TRAIN_COST = 3.0
#: Samples the timing pass encodes, spread through the run's samples.
TIMED_SAMPLES = 16


def forward_seconds(encoder: nn.Module, inputs, device: torch.device) -> float:
    """Seconds per sample of a forward pass of ``encoder`` (no gradients, eval mode: no random
    draws) over up to :data:`TIMED_SAMPLES` of ``inputs`` (featurised samples), after one untimed
    pass over two of them that pays one-off setup."""
    rows = np.unique(np.linspace(0, len(inputs.lengths) - 1, TIMED_SAMPLES).astype(np.int64))
    with evaluating(encoder), torch.inference_mode():
        encoder.embed(inputs.batch(rows[:2]))
        _synchronize(device)
        began = time.perf_counter()
        encoder.embed(inputs.batch(rows))
        _synchronize(device)
    return (time.perf_counter() - began) / len(rows)


def estimated_seconds(
    per_sample: float, steps: int, samples_per_step: int, warmup_steps: int, warmup_samples: int, embedded: int
) -> float:
    """Wall seconds of ``steps`` training steps encoding ``samples_per_step`` samples each,
    ``warmup_steps`` head warm-up steps of ``warmup_samples`` seeds and ``embedded`` embedded
    samples, at ``per_sample`` seconds per sample's forward pass."""
    forwards = TRAIN_COST * steps * samples_per_step + warmup_steps * warmup_samples + embedded
    return per_sample * forwards


def estimate_line(
    encoder: nn.Module, inputs, device: torch.device, config, first_batch, warmup_steps: int, embedded: int
) -> str:
    """One line: the estimated time of a run of ``config`` (a :class:`~sipt_lab.training.TrainConfig`)
    whose steps encode as many samples as its ``first_batch``, with ``warmup_steps`` head warm-up
    steps and ``embedded`` samples embedded besides, priced by :func:`forward_seconds` of
    ``encoder`` on ``inputs``."""
    per_sample = forward_seconds(encoder, inputs, device)
    seeds = min(config.batch_size, len(inputs.lengths))
    samples_per_step = (len(getattr(first_batch, "nodes", ())) or seeds) * config.grad_accum
    seconds = estimated_seconds(per_sample, config.steps, samples_per_step, warmup_steps, seeds, embedded)
    parts = [f"{config.steps:,} training step{'s' if config.steps != 1 else ''} of ~{samples_per_step:,} samples"]
    if warmup_steps:
        parts.append(f"a head warm-up of {warmup_steps:,} steps")
    if embedded:
        parts.append(f"{embedded:,} samples embedded")
    return (
        f"estimated time: {duration_text(seconds)} ({', '.join(parts)}; measured {per_sample * 1e3:.1f} ms per "
        f"sample's forward pass on {device.type})"
    )


def duration_text(seconds: float) -> str:
    """``seconds`` as a line says it: ``"42 s"`` below two minutes, else ``"3.5 min"``."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
