"""What one pre-training run does: :class:`TrainConfig` (validated once, in ``__post_init__``),
its learning-rate schedule and the helpers that derive step counts and micro-batches from it.

Its fields carry their range, choices and help (:func:`sipt_lab.core.options.option`); the CLI's
training flags are generated from them. Its defaults are the fresh character encoder's (the ``char``
row of :data:`sipt_lab.training.defaults.INIT_DEFAULTS`, which is read from here). This module
imports no torch: the CLI's parser reads it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.core.options import option, validate
from sipt_lab.objectives import names as objective_names
from sipt_lab.training import names as training_names

if TYPE_CHECKING:
    from sipt_lab.models import EncoderSource

#: TrainConfig fields that may differ between a checkpoint and the run resuming from it.
_RESUMABLE_CHANGES = (
    "steps",
    "checkpoint_every",
    "log_every",
    "device",
    "eval_every",
    "keep_best",
    "patience",
    "report_to",
)
#: Largest accepted ``steps`` (the trainer allocates a loss history of that length).
MAX_STEPS = 10_000_000
#: Mixed-precision choices; ``auto`` is bf16 on a CUDA GPU that supports it, fp16 on one that
#: does not, fp32 on CPU and for the lab's char encoders (launch-bound on a GPU: autocast only adds casts).
PRECISIONS = training_names.PRECISIONS
#: ``L_SI`` parameters of the fresh character encoder over the contrastive loss's own
#: (:data:`~sipt_lab.objectives.names.LOSS_PARAMETERS`): linked samples may sit up to µ+ = 5 apart.
CHAR_LOSS_PARAMS = {"pos_margin": 5.0}
#: Steps between evaluations when evaluating is asked for without an interval (``--eval-every``
#: alone, or ``--keep-best`` without it): rare enough that the evaluations of the validation slice
#: cost a small share of the training time.
EVAL_EVERY_DEFAULT = 100


@dataclass(frozen=True)
class TrainConfig:
    """How to pre-train. The defaults are a fresh character encoder's (AdamW at lr 5e-4 with linear
    decay, λ_SI 0.5, contrastive µ+ = 5 over every pair of the batch); the paper's optimiser was
    AdamW at lr 3e-4, weight decay 0.01, no schedule.

    Attributes:
        steps: optimiser steps.
        batch_size: seed samples per micro-batch (capped at the number of nodes); with data
            parallelism, per micro-batch over all processes together.
        grad_accum: micro-batches (consecutive sampler batches) whose gradients make one step.
        lr, weight_decay: AdamW settings.
        lambda_si: weight of ``L_SI``; 0 is the LM baseline (continued LM pre-training on the same
            samples, the paper's "same data, no structure" ablation), the paper's SIPT uses 0.1
            (:data:`~sipt_lab.training.defaults.PAPER_LAMBDA_SI`).
        loss: structure-inducing loss name (``"contrastive"``, ``"multisim"`` or ``"infonce"``).
        loss_params: that loss's parameters over its own defaults
            (:data:`~sipt_lab.objectives.names.LOSS_PARAMETERS`; contrastive: pos_margin, neg_margin;
            multisim: w_pos, w_neg, t; infonce: temperature). None (the default) resolves on
            construction to :data:`CHAR_LOSS_PARAMS` for the contrastive loss, ``{}`` for another.
        si_geometry: the vector ``L_SI`` trains on, a name in
            :data:`~sipt_lab.training.names.SI_GEOMETRIES`: ``"output"`` (the vector the encoder
            outputs: L2-normalised when the checkpoint's pipeline normalises, else raw),
            ``"normalised"`` (the L2-normalised pooled vector) or ``"raw"`` (the pooled vector,
            never normalised); :func:`si_normalizes`. Left out of the saved config while ``"output"``.
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
        pt_labels: the per-sample pre-training labels of the per-sample baselines (methods
            ``multitask`` and ``same-family``): a file of ``id<TAB>label;label;...`` lines, the
            layout of the NETWORKS domain's ``go_pretrain.tsv`` (:mod:`sipt_lab.training.per_sample`);
            None: none. Left out of the saved config while None.
        allow_missing: pre-training samples that ``pt_labels`` does not list are skipped by the
            per-sample term (they keep the per-token loss) instead of refused. Left out while False.
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
        head_warmup: steps that fit each new head with the encoder frozen, before the first training
            step: the MLM head of an init without one of its own, and an objective's own head
            (LinkBERT's relation head, the per-sample baselines'); 0: none.
        head_lr: the head warm-up's constant AdamW learning rate.
        eval_every: steps between evaluations of the embedding during training (and one at the
            last step); None: none. Only runs that are given an evaluator evaluate (``pretrain``).
        keep_best: the evaluation metric (a name in :data:`~sipt_lab.training.names.EVAL_METRICS`)
            whose best value's model is kept beside the last one; evaluates every
            :data:`EVAL_EVERY_DEFAULT` steps when ``eval_every`` is None.
        patience: stop after this many evaluations without a better ``keep_best``; None: never.
        report_to: where the run logs besides its ``history.csv``, a name in
            :data:`~sipt_lab.training.names.REPORT_TO`.

    The last four watch a run rather than define it: they are left out of the saved config while
    they hold their defaults, and a checkpoint resumes whatever they are.
    """

    steps: int = option(1000, help="optimiser steps", range=(1, MAX_STEPS), metavar="N")
    batch_size: int = option(
        32,
        help="seed samples per micro-batch; each pulls in a linked sample and a non-neighbour, so a step "
        "encodes up to 3B distinct samples",
        range=(1, None),
        metavar="B",
    )
    grad_accum: int = option(1, help="micro-batches per optimiser step", range=(1, None), metavar="K")
    lr: float = option(5e-4, help="peak AdamW learning rate", range=(0.0, None), open="low")
    weight_decay: float = option(0.01, help="AdamW weight decay", range=(0.0, None))
    lambda_si: float = option(
        0.5, help="weight of L_SI in [0, 1]; 0 = continued LM pre-training", range=(0.0, 1.0), metavar="L"
    )
    loss: str = option(
        "contrastive",
        choices=objective_names.STRUCTURE_LOSSES,
        help="structure-inducing loss, trained on the vector the encoder outputs "
        "(L2-normalised when the checkpoint normalises)",
    )
    loss_params: dict[str, float] | None = option(
        None, help="a parameter of that loss, repeatable", flag="--loss-param", metavar="NAME=VALUE"
    )
    si_geometry: str = option(
        "output",
        choices=training_names.SI_GEOMETRIES,
        omit_default=True,
        help="the vector L_SI trains on: output (the encoder's, L2-normalised when the checkpoint "
        "normalises), normalised (always L2-normalised) or raw (never)",
    )
    pairs: str = option("batch", choices=training_names.PAIR_MODES, help="pairs L_SI scores")
    negatives: str = option(
        "uniform",
        choices=training_names.NEGATIVE_SAMPLERS,
        help="each seed's non-neighbour: uniform, two-hop (hard) or same-component",
    )
    mask_prob: float = option(
        0.15, help="MLM masking probability per token (1 only with mask replacement keep)", range=(0.0, 1.0), open="low"
    )
    mask_replacement: str = option(
        "mask",
        choices=training_names.MASK_REPLACEMENTS,
        help="what a masked token becomes: bert (80 % [MASK], 10 % random, 10 % kept), mask (always [MASK]) "
        "or keep (the token stays visible and is only predicted, as LSM does)",
    )
    mask_unit: str = option("token", choices=training_names.MASK_UNITS, help="which tokens are masked together")
    pt_labels: str | None = option(
        None,
        nonempty=True,
        omit_default=True,
        flag="--pt-labels",
        metavar="FILE",
        help="per-sample pre-training labels of the multitask and same-family methods: "
        "id<TAB>label;label... a line (the layout of go_pretrain.tsv), for every pre-training sample, "
        "since the method trains each on its labels (or --allow-missing)",
    )
    allow_missing: bool = option(
        False,
        omit_default=True,
        help="skip pre-training samples that --pt-labels does not list (they keep the per-token loss)",
    )
    seed: int = option(0, help="seed of init, batches, masks and dropout", range=(0, None))
    device: str = option("auto", help="auto (CUDA when present), cpu or cuda", nonempty=True)
    precision: str = option(
        "auto", choices=PRECISIONS, help="autocast: auto = bf16 on a GPU, fp32 on CPU and for char encoders"
    )
    checkpoint_every: int = option(
        0, help="checkpoint every N steps (always at the end)", range=(0, None), flag="--save-every", metavar="N"
    )
    log_every: int = option(
        50, help="steps between progress-bar loss updates and non-finite-loss checks", range=(1, None), metavar="N"
    )
    max_len: int | None = option(
        None,
        help="tokens per sample",
        range=(2, None),
        flag="--max-length",
        metavar="T",
        default_help="the encoder source's",
    )
    schedule: str = option("linear", choices=training_names.LR_SCHEDULES, help="decay after warm-up")
    warmup: float = option(0.0, help="fraction of steps of linear warm-up", range=(0.0, 1.0), open="high", metavar="F")
    head_warmup: int = option(
        0,
        help="steps that fit each new head (a checkpoint's missing MLM head, a method's own head) with the "
        "encoder frozen, before training; 0 = none",
        range=(0, MAX_STEPS),
        metavar="N",
    )
    head_lr: float = option(1e-2, help="learning rate of the head warm-up", range=(0.0, None), open="low", metavar="LR")
    eval_every: int | None = option(
        None,
        help="evaluate the embedding every N steps and at the end (link retrieval "
        f"on the graph; with labels LOO 3-NN AUROC and the LC of its 3-NN graph); N "
        f"left out: {EVAL_EVERY_DEFAULT}",
        range=(1, MAX_STEPS),
        metavar="N",
        default_help="none",
        omit_default=True,
    )
    keep_best: str | None = option(
        None,
        choices=training_names.EVAL_METRICS,
        metavar="METRIC",
        omit_default=True,
        help=f"keep the model with the best value of this evaluation metric ({', '.join(training_names.EVAL_METRICS)}) in DIR/best "
        f"(evaluating every {EVAL_EVERY_DEFAULT} steps unless --eval-every says)",
    )
    patience: int | None = option(
        None,
        help="stop after N evaluations without a better --keep-best metric",
        range=(1, None),
        metavar="N",
        default_help="never",
        omit_default=True,
    )
    report_to: str = option(
        "tensorboard",
        choices=training_names.REPORT_TO,
        omit_default=True,
        help="log loss terms, learning rate, evaluations and throughput to TensorBoard event "
        "files in DIR/tensorboard (and CSV), to CSV files only, or to none besides history.csv",
    )

    def __post_init__(self) -> None:
        if self.loss_params is None:  # the char row's parameters of the default loss, another loss's own
            object.__setattr__(self, "loss_params", dict(CHAR_LOSS_PARAMS) if self.loss == "contrastive" else {})
        validate(self)
        if self.keep_best is not None and self.eval_every is None:
            object.__setattr__(self, "eval_every", EVAL_EVERY_DEFAULT)
        if self.patience is not None and self.keep_best is None:
            raise ConfigError("TrainConfig.patience", "needs keep_best, the metric whose progress it waits for")
        if self.steps * self.grad_accum > MAX_STEPS:
            raise ConfigError(
                "TrainConfig.grad_accum",
                f"makes {self.steps:,} steps x {self.grad_accum:,} = {self.steps * self.grad_accum:,} micro-batches, "
                f"over {MAX_STEPS:,}; lower grad_accum or steps",
            )
        if self.mask_prob == 1.0 and self.mask_replacement != "keep":
            raise ConfigError(
                "TrainConfig.mask_prob",
                f"must be in (0, 1) (1 only with mask_replacement 'keep'), got {self.mask_prob}",
            )
        known = objective_names.LOSS_PARAMETERS[self.loss]
        unknown = sorted(set(self.loss_params) - set(known))
        if unknown:
            raise ConfigError(
                "TrainConfig.loss_params",
                f"is wrong: loss {self.loss!r} has no parameter(s) {', '.join(unknown)}; it takes {', '.join(known)}",
            )


@dataclass(frozen=True)
class FinetuneConfig:
    """How to fine-tune an encoder with a linear head on a labelled task.

    Attributes:
        lrs: the learning-rate grid, chosen on validation.
        epochs: most passes over the train split.
        patience: passes without a better validation score before stopping.
        batch_size: samples per step.
        weight_decay: AdamW's.
        max_len: tokens per sample (None: the tokenizer's own).
        device: ``auto``, ``cpu`` or ``cuda``.
        eval_every: also score validation and test every this many steps (not only after each
            pass); None: after each pass only. Left out of the saved config while None.
        pair_memory_gib: pairwise tasks (contact prediction): most GiB of float32 pair features of
            one sequence, ``4 * 2H * (L - 6)(L - 5) / 2`` bytes for ``L`` residues read at hidden size
            ``H`` (L = 512, H = 768: 0.73 GiB); a longer sequence is refused. Left out of the saved
            config at its default.
    """

    lrs: tuple[float, ...] = option(
        (2e-5, 5e-5, 1e-4), help="learning-rate grid", range=(0.0, None), open="low", flag="--lr", metavar="LR"
    )
    epochs: int = option(3, help="most passes over the train split", range=(1, None))
    patience: int = option(1, help="passes without a better validation score before stopping", range=(0, None))
    batch_size: int = option(16, help="samples per step", range=(1, None), metavar="B")
    weight_decay: float = option(0.01, help="AdamW weight decay", range=(0.0, None))
    max_len: int | None = option(
        None, help="tokens per sample", range=(2, None), flag="--max-length", metavar="T", default_help="the model's"
    )
    device: str = option("auto", help="auto, cpu or cuda", nonempty=True)
    eval_every: int | None = option(
        None,
        help="also score validation and test every N steps (history.csv); they are scored after every pass anyway",
        range=(1, None),
        metavar="N",
        default_help="after each pass only",
        omit_default=True,
    )
    pair_memory_gib: float = option(
        2.0,
        help="contact prediction: most GiB of pair features per sequence (4*2H bytes a pair, (L-6)(L-5)/2 pairs)",
        range=(0.0, None),
        open="low",
        metavar="GIB",
        omit_default=True,
    )

    def __post_init__(self) -> None:
        if not self.lrs:
            raise ConfigError("FinetuneConfig.lrs", "is empty; give at least one learning rate")
        validate(self)


#: Learning-rate schedules: name -> factor of ``lr`` at progress ``t`` in [0, 1) after warm-up.
LR_SCHEDULES: dict[str, Callable[[float], float]] = dict(
    zip(
        training_names.LR_SCHEDULES,
        (
            lambda t: 1.0,
            lambda t: 1.0 - t,
            lambda t: 0.5 * (1.0 + math.cos(math.pi * t)),
        ),
        strict=True,
    )
)


def si_normalizes(config: TrainConfig, output_normalizes: bool) -> bool:
    """Whether ``L_SI`` sees L2-normalised vectors under ``config.si_geometry``, for an encoder
    whose output is normalised when ``output_normalizes``."""
    return output_normalizes if config.si_geometry == "output" else config.si_geometry == "normalised"


def check_structure_geometry(config: TrainConfig, source: EncoderSource) -> None:
    """SiptError, before anything trains, when ``config``'s ``L_SI`` cannot be satisfied on the
    vectors it trains on (``config.si_geometry`` over ``source``'s output;
    :func:`~sipt_lab.objectives.structure.check_geometry`)."""
    from sipt_lab.objectives.structure import check_geometry

    if config.lambda_si > 0:
        check_geometry(config.loss, dict(config.loss_params), si_normalizes(config, source.normalizes))


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
        raise ConfigError(
            "TrainConfig.grad_accum",
            f"must divide the {effective} seeds of a step into equal micro-batches, got {micro_batches}",
        )
    return replace(config, batch_size=effective // micro_batches, grad_accum=micro_batches)


def epoch_remainder_note(n_samples: int, batch_size: int) -> str | None:
    """What an epoch leaves out when ``batch_size`` does not divide ``n_samples`` (the sampler
    draws ``n // batch_size`` whole batches of each epoch's shuffle), as a note for the run's log;
    None when every sample is seen each epoch."""
    left_out = n_samples % batch_size if batch_size < n_samples else 0
    if not left_out:
        return None
    return (
        f"an epoch is {n_samples // batch_size:,} batch{'es' if n_samples // batch_size > 1 else ''} of "
        f"{batch_size}: {left_out} of the {n_samples:,} samples "
        f"(a different {left_out} each epoch) are left out of each pass; a batch size that divides "
        f"{n_samples:,} sees every sample every epoch"
    )


def steps_for_epochs(epochs: float, n_samples: int, batch_size: int, grad_accum: int = 1) -> int:
    """Optimiser steps of ``grad_accum`` micro-batches that make ``epochs`` passes over
    ``n_samples`` seeds (an epoch is ``n // batch_size`` micro-batches, the sampler drops the last
    incomplete one), rounded up. SiptError when even one step would be more passes than asked."""
    if epochs <= 0:
        raise SiptError(f"epochs is {epochs}; use a positive number of passes over the samples")
    micro_per_epoch = max(n_samples // max(min(batch_size, n_samples), 1), 1)
    micro_batches = epochs * micro_per_epoch
    if micro_batches < grad_accum:
        raise SiptError(
            f"{epochs:g} epochs over {n_samples:,} samples are {micro_batches:g} micro-batches of "
            f"{min(batch_size, n_samples)}, fewer than one step's TrainConfig.grad_accum={grad_accum}; "
            "lower TrainConfig.grad_accum or ask for more epochs"
        )
    return math.ceil(micro_batches / grad_accum)
