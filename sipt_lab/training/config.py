"""What one pre-training run does: :class:`TrainConfig` (validated once, in ``__post_init__``),
its learning-rate schedule and the helpers that derive step counts and micro-batches from it."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sipt_lab.core import names
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.objectives import check_loss_params
from sipt_lab.objectives.structure import STRUCTURE_LOSSES, check_geometry
from sipt_lab.training.sampler import (
    MASK_REPLACEMENTS,
    MASK_UNITS,
    NEGATIVE_SAMPLERS,
    PAIR_MODES,
    check_mask,
)

if TYPE_CHECKING:
    from sipt_lab.models import EncoderSource

#: TrainConfig fields that may differ between a checkpoint and the run resuming from it.
_RESUMABLE_CHANGES = ("steps", "checkpoint_every", "log_every", "device")
#: Largest accepted ``steps`` (the trainer allocates a loss history of that length).
MAX_STEPS = 10_000_000
#: Mixed-precision choices; ``auto`` is bf16 on a CUDA GPU that supports it, fp16 on one that
#: does not, fp32 on CPU.
PRECISIONS = names.PRECISIONS


@dataclass(frozen=True)
class TrainConfig:
    """How to pre-train (the paper's optimiser: AdamW, lr 3e-4, weight decay 0.01, no schedule).

    Attributes:
        steps: optimiser steps.
        batch_size: seed samples per micro-batch (capped at the number of nodes); with data
            parallelism, per micro-batch over all processes together.
        grad_accum: micro-batches (consecutive sampler batches) whose gradients make one step.
        lr, weight_decay: AdamW settings.
        lambda_si: weight of ``L_SI``; 0 is the LM baseline (continued LM pre-training on the same
            samples, the paper's "same data, no structure" ablation), the paper's SIPT uses 0.1.
        loss: structure-inducing loss name (``"contrastive"``, ``"multisim"`` or ``"infonce"``).
        loss_params: that loss's parameters (contrastive: pos_margin, neg_margin; multisim: w_pos,
            w_neg, t; infonce: temperature).
        pairs: which pairs ``L_SI`` scores, a name in :data:`PAIR_MODES`: ``"sampled"`` (the paper's:
            each seed with one neighbour and one non-neighbour) or ``"batch"`` (every pair of
            encoded samples, labelled by the graph).
        negatives: how each seed's non-neighbour is drawn, a name in :data:`NEGATIVE_SAMPLERS`
            (``uniform``, ``two-hop`` hard negatives, ``same-component``).
        mask_prob: MLM masking probability per token (1, every token, only with ``"keep"``).
        mask_replacement: what a masked token becomes, a name in :data:`MASK_REPLACEMENTS`:
            ``"mask"`` (always ``[MASK]``), ``"bert"`` (80 % ``[MASK]``, 10 % random, 10 % kept)
            or ``"keep"`` (the token stays visible and is only predicted: LSM).
        mask_unit: which tokens are masked together, a name in :data:`MASK_UNITS`: ``"token"``
            (each alone) or ``"word"`` (whole words: every character or piece of a chosen word).
        seed: seeds model init, dropout, batches and masks.
        device: ``"auto"`` (CUDA when present), ``"cpu"`` or ``"cuda"``.
        precision: autocast dtype, a name in :data:`PRECISIONS`.
        checkpoint_every: write a checkpoint every this many steps (0: only at the end); needs a checkpoint_dir.
        log_every: steps between progress-bar loss updates and non-finite-loss checks.
        max_len: tokens per sample including special tokens (longer samples are truncated);
            None uses the encoder source's default.
        schedule: learning-rate schedule, a name in :data:`LR_SCHEDULES` (``"constant"``, the
            paper's; ``"linear"`` or ``"cosine"`` decay to 0 at the last step).
        warmup: fraction of the steps over which the rate rises linearly from 0 (any schedule).
        head_warmup: steps that fit a new MLM head (an init without one of its own) with the
            encoder frozen, before the first training step; 0: none.
        head_lr: the head warm-up's constant AdamW learning rate.
    """

    steps: int = 1000
    batch_size: int = 32
    grad_accum: int = 1
    lr: float = 3e-4
    weight_decay: float = 0.01
    lambda_si: float = 0.1
    loss: str = "contrastive"
    loss_params: dict[str, float] = field(default_factory=dict)
    pairs: str = "sampled"
    negatives: str = "uniform"
    mask_prob: float = 0.15
    mask_replacement: str = "mask"
    mask_unit: str = "token"
    seed: int = 0
    device: str = "auto"
    precision: str = "auto"
    checkpoint_every: int = 0
    log_every: int = 50
    max_len: int | None = None
    schedule: str = "constant"
    warmup: float = 0.0
    head_warmup: int = 0
    head_lr: float = 1e-3

    def __post_init__(self) -> None:
        for name, low, high in (("steps", 1, MAX_STEPS), ("batch_size", 1, None), ("grad_accum", 1, None),
                                ("log_every", 1, None), ("checkpoint_every", 0, None),
                                ("head_warmup", 0, MAX_STEPS)):
            value = getattr(self, name)
            if value < low or (high is not None and value > high):
                bound = f"in [{low}, {high:,}]" if high is not None else f">= {low}"
                raise ConfigError(f"TrainConfig.{name}", f"must be {bound}, got {value:,}")
        for name in ("lr", "head_lr"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"TrainConfig.{name}", f"must be > 0, got {getattr(self, name)}")
        if self.weight_decay < 0:
            raise ConfigError("TrainConfig.weight_decay", f"must be >= 0, got {self.weight_decay}")
        if not 0.0 <= self.lambda_si <= 1.0:
            raise ConfigError("TrainConfig.lambda_si", f"must be in [0, 1], got {self.lambda_si}")
        if self.mask_prob <= 0.0 or (self.mask_replacement in MASK_REPLACEMENTS and check_mask(self.mask_prob, self.mask_replacement)):
            raise ConfigError("TrainConfig.mask_prob", f"must be in (0, 1) (1 only with mask_replacement 'keep'), got {self.mask_prob}")
        if self.max_len is not None and self.max_len < 2:
            raise ConfigError("TrainConfig.max_len", f"must be >= 2 or None, got {self.max_len}")
        if not 0.0 <= self.warmup < 1.0:
            raise ConfigError("TrainConfig.warmup", f"must be a fraction of the steps in [0, 1), got {self.warmup}")
        for name, choices in (("schedule", LR_SCHEDULES), ("precision", PRECISIONS), ("pairs", PAIR_MODES),
                              ("negatives", NEGATIVE_SAMPLERS), ("loss", STRUCTURE_LOSSES),
                              ("mask_replacement", MASK_REPLACEMENTS), ("mask_unit", MASK_UNITS)):
            if getattr(self, name) not in choices:
                raise ConfigError(f"TrainConfig.{name}", f"{getattr(self, name)!r} is unknown; choose one of {', '.join(choices)}")
        check_loss_params(self.loss, dict(self.loss_params))


#: Learning-rate schedules: name -> factor of ``lr`` at progress ``t`` in [0, 1) after warm-up.
LR_SCHEDULES: dict[str, Callable[[float], float]] = dict(zip(names.LR_SCHEDULES, (
    lambda t: 1.0,
    lambda t: 1.0 - t,
    lambda t: 0.5 * (1.0 + math.cos(math.pi * t)),
), strict=True))


def check_structure_geometry(config: TrainConfig, source: EncoderSource) -> None:
    """SiptError, before anything trains, when ``config``'s ``L_SI`` cannot be satisfied on the
    vectors ``source``'s encoder outputs (:func:`~sipt_lab.objectives.structure.check_geometry`)."""
    if config.lambda_si > 0:
        check_geometry(config.loss, dict(config.loss_params), source.normalizes)


def lr_factor(config: TrainConfig, step: int) -> float:
    """Multiplier of ``config.lr`` at optimiser step ``step`` (0-based); a pure function of the
    step, so a resumed run continues the schedule without saving scheduler state."""
    warmup_steps = int(round(config.warmup * config.steps))
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    return LR_SCHEDULES[config.schedule]((step - warmup_steps) / max(config.steps - warmup_steps, 1))


def split_batch(config: TrainConfig, micro_batches: int) -> TrainConfig:
    """``config`` with each step's ``batch_size x grad_accum`` seeds split into ``micro_batches``
    micro-batches: the same effective batch (and steps per epoch) in less memory per micro-batch."""
    effective = config.batch_size * config.grad_accum
    if micro_batches < 1 or effective % micro_batches:
        raise ConfigError("TrainConfig.grad_accum", f"must divide the {effective} seeds of a step into equal micro-batches, got {micro_batches}")
    return replace(config, batch_size=effective // micro_batches, grad_accum=micro_batches)


def steps_for_epochs(epochs: float, n_samples: int, batch_size: int, grad_accum: int = 1) -> int:
    """Optimiser steps that make ``epochs`` passes over ``n_samples`` seeds (an epoch is
    ``n // batch_size`` micro-batches, the sampler drops the last incomplete one); at least 1."""
    if epochs <= 0:
        raise SiptError(f"epochs is {epochs}; use a positive number of passes over the samples")
    micro_per_epoch = max(n_samples // max(min(batch_size, n_samples), 1), 1)
    return max(math.ceil(epochs * micro_per_epoch / grad_accum), 1)
