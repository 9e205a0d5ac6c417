"""The pre-training loop: ``L_PT = (1 − λ_SI)·L_M + λ_SI·L_SI`` with AdamW over graph-aware batches.

All sentences are tokenised once into one padded id tensor on the device; a step gathers the rows
of its batch in a few length buckets (each cut to its own longest row, so little compute goes to
padding), masks the seeds, runs the encoder once per bucket and takes one AdamW step. Runs are
deterministic on CPU for a given seed (model init and dropout use a forked torch RNG seeded from
``config.seed``; batches and masks come from :class:`GraphBatchSampler`), and a run resumed from
a checkpoint ends with the same numbers as an uninterrupted one. Steps count from 0.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from sipt_lab.config import config_to_dict, save_config
from sipt_lab.errors import SiptError
from sipt_lab.fileio import write_bytes_atomic, write_json_atomic
from sipt_lab.graph import PretrainingGraph
from sipt_lab.models import MASK_ID, CharTokenizer, EncoderConfig, TransformerEncoder, save_pretrained
from sipt_lab.objectives import ObjectiveInputs, build_objectives, check_loss_params, combine
from sipt_lab.training.batches import GraphBatchSampler, PretrainBatch, check_pair_mode

CHECKPOINT_NAME = "checkpoint.pt"
#: TrainConfig fields that may differ between a checkpoint and the run resuming from it.
_RESUMABLE_CHANGES = ("steps", "checkpoint_every", "log_every", "device")


@dataclass(frozen=True)
class TrainConfig:
    """How to pre-train (the paper's optimiser: AdamW, lr 3e-4, weight decay 0.01, no schedule).

    Attributes:
        steps: optimiser steps.
        batch_size: seed samples per step (capped at the number of nodes).
        lr, weight_decay: AdamW settings.
        lambda_si: weight of ``L_SI``; 0 is the LM baseline, the paper's SIPT uses 0.1.
        loss: structure-inducing loss name (``"contrastive"`` or ``"multisim"``).
        loss_params: that loss's parameters (contrastive: pos_margin, neg_margin; multisim: w_pos, w_neg, t).
        pairs: which pairs ``L_SI`` scores, a name in :data:`PAIR_MODES`: ``"sampled"`` (the paper's:
            each seed with one neighbour and one non-neighbour) or ``"batch"`` (every pair of
            encoded samples, labelled by the graph).
        mask_prob: MLM masking probability per character.
        seed: seeds model init, dropout, batches and masks.
        device: ``"auto"`` (CUDA when present), ``"cpu"`` or ``"cuda"``.
        amp: on CUDA, autocast to bf16 (fp16 with loss scaling where bf16 is unsupported).
        checkpoint_every: write a checkpoint every this many steps (0: only at the end); needs a checkpoint_dir.
        log_every: steps between progress-bar loss updates and non-finite-loss checks.
        max_len: tokens per sample including ``[CLS]`` (longer sentences are truncated);
            None uses the encoder's ``max_len``.
        schedule: learning-rate schedule, a name in :data:`LR_SCHEDULES` (``"constant"``, the
            paper's; ``"linear"`` or ``"cosine"`` decay to 0 at the last step).
        warmup: fraction of the steps over which the rate rises linearly from 0 (any schedule).
    """

    steps: int = 1000
    batch_size: int = 32
    lr: float = 3e-4
    weight_decay: float = 0.01
    lambda_si: float = 0.1
    loss: str = "contrastive"
    loss_params: dict[str, float] = field(default_factory=dict)
    pairs: str = "sampled"
    mask_prob: float = 0.15
    seed: int = 0
    device: str = "auto"
    amp: bool = True
    checkpoint_every: int = 0
    log_every: int = 50
    max_len: int | None = None
    schedule: str = "constant"
    warmup: float = 0.0


#: Learning-rate schedules: name -> factor of ``lr`` at progress ``t`` in [0, 1) after warm-up.
LR_SCHEDULES: dict[str, Callable[[float], float]] = {
    "constant": lambda t: 1.0,
    "linear": lambda t: 1.0 - t,
    "cosine": lambda t: 0.5 * (1.0 + math.cos(math.pi * t)),
}


def lr_factor(config: TrainConfig, step: int) -> float:
    """Multiplier of ``config.lr`` at optimiser step ``step`` (0-based); a pure function of the
    step, so a resumed run continues the schedule without saving scheduler state."""
    warmup_steps = int(round(config.warmup * config.steps))
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    return LR_SCHEDULES[config.schedule]((step - warmup_steps) / max(config.steps - warmup_steps, 1))


@dataclass
class PretrainResult:
    """A trained encoder (eval mode, on the training device) with its tokenizer.

    ``history`` maps ``"loss"`` (the weighted total) and each computed term (``"mlm"``, ``"si"``)
    to a ``(steps,)`` float64 array of per-step values.
    """

    encoder: nn.Module
    tokenizer: CharTokenizer
    history: dict[str, np.ndarray]
    config: TrainConfig
    encoder_config: EncoderConfig

    def save(self, directory: str | Path) -> Path:
        """:func:`save_pretrained` files plus ``train_config.json`` and ``history.json``."""
        out = save_pretrained(self.encoder, self.tokenizer, directory)
        save_config(self.config, out / "train_config.json")
        write_json_atomic(out / "history.json", {k: v.tolist() for k, v in self.history.items()})
        return out


def resolve_device(name: str | torch.device) -> torch.device:
    """``"auto"`` -> CUDA when available else CPU; ``"cpu"``, ``"cuda"``, ``"cuda:N"`` as given;
    CUDA without a GPU is a SiptError."""
    name = str(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name != "cpu" and name.split(":")[0] != "cuda":
        raise SiptError(f"unknown device {name!r}; use auto, cpu or cuda")
    if name != "cpu" and not torch.cuda.is_available():
        raise SiptError("device cuda requested but torch sees no CUDA GPU; use --device cpu or auto")
    return torch.device(name)


def pretrain(
    sentences: list[str],
    graph: PretrainingGraph,
    config: TrainConfig,
    encoder_config: EncoderConfig,
    *,
    checkpoint_dir: str | Path | None = None,
    progress: bool = True,
    make_encoder: Callable[[EncoderConfig], nn.Module] = TransformerEncoder,
) -> PretrainResult:
    """Pre-train an encoder on ``sentences`` (node ``i`` of ``graph`` is ``sentences[i]``).

    ``make_encoder`` builds the model from ``encoder_config`` with ``vocab_size`` filled in from the
    tokenizer; any ``nn.Module`` satisfying :class:`sipt_lab.models.SequenceEncoder` works.

    With ``checkpoint_dir``, a checkpoint there from an earlier run of the same configuration
    (``steps`` may grow) is resumed, and one is written every ``checkpoint_every`` steps and at the end.
    A non-finite loss stops the run with a SiptError naming the step.
    """
    _validate(config)
    device = resolve_device(config.device)
    tokenizer = CharTokenizer.build(sentences, max_len=config.max_len or encoder_config.max_len)
    encoder_config = dataclasses.replace(encoder_config, vocab_size=tokenizer.vocab_size)
    if tokenizer.max_len > encoder_config.max_len:
        raise SiptError(
            f"max_len {tokenizer.max_len} exceeds the encoder's {encoder_config.max_len} positions; lower max_len or raise EncoderConfig.max_len"
        )
    ids, lengths = tokenizer.encode(sentences)
    sampler = GraphBatchSampler(graph, lengths, config.batch_size, config.mask_prob, config.seed, config.pairs)
    objectives = build_objectives(config.lambda_si, config.loss, config.loss_params)
    names = ["loss"] + [objective.name for _, objective in objectives]
    step_fn = _Step(torch.as_tensor(ids, device=device), lengths, objectives, device, config.amp)

    cuda_devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda_devices):
        torch.manual_seed(config.seed)
        encoder = make_encoder(encoder_config).to(device)
        trainable = nn.ModuleList([encoder, *(objective for _, objective in objectives)]).to(device)
        optimizer = _make_optimizer(trainable.parameters(), config.lr, config.weight_decay, fused=device.type == "cuda")
        scaler = torch.amp.GradScaler(device.type, enabled=step_fn.amp_dtype == torch.float16)
        history = torch.full((config.steps, len(names)), float("nan"), device=device)
        checkpoint = None if checkpoint_dir is None else Path(checkpoint_dir) / CHECKPOINT_NAME
        state = _State(trainable, optimizer, scaler, history, config, encoder_config, tokenizer, cuda_devices)
        start = state.load(checkpoint) if checkpoint is not None and checkpoint.is_file() else 0

        trainable.train()
        checked = start
        with tqdm(total=config.steps, initial=start, disable=not progress, desc="pretrain", unit="step") as bar:
            for step in range(start, config.steps):
                for group in optimizer.param_groups:
                    group["lr"] = config.lr * lr_factor(config, step)
                history[step] = step_fn(encoder, optimizer, scaler, sampler.batch(step))
                bar.update()
                done = step + 1
                save_now = checkpoint is not None and (done == config.steps or (config.checkpoint_every and done % config.checkpoint_every == 0))
                if save_now or done % config.log_every == 0 or done == config.steps:
                    values = _check_finite(history, checked, done, names)
                    checked = done
                    bar.set_postfix({name: f"{value:.4g}" for name, value in zip(names, values[-1])}, refresh=False)
                if save_now:
                    state.save(checkpoint, done)
    encoder.eval()
    table = history.cpu().double().numpy()
    return PretrainResult(encoder, tokenizer, {name: table[:, k] for k, name in enumerate(names)}, config, encoder_config)


#: An extra length bucket must save more than this share of a step's real tokens in padding.
BUCKET_PENALTY = 0.05


class _Step:
    """One optimiser step on a :class:`PretrainBatch`; returns the ``(1 + terms,)`` detached losses.

    The batch's distinct samples are encoded in up to ``max_buckets`` sub-batches of similar
    length (see :func:`_length_buckets`), each padded only to its own longest member; every
    sample is encoded alone in its row, so the result is that of one pass over the whole batch
    padded to its longest (bar dropout draws and float rounding), at a fraction of the padding.
    """

    def __init__(self, ids: torch.Tensor, lengths: np.ndarray, objectives, device: torch.device, amp: bool, max_buckets: int = 4) -> None:
        self.ids = ids
        self.lengths = lengths
        self.objectives = objectives
        self.device = device
        self.max_buckets = max_buckets
        self.needs_pairs = any(objective.needs_pairs for _, objective in objectives)
        self.needs_mlm = any(objective.needs_mlm for _, objective in objectives)
        self.amp_dtype = None
        if amp and device.type == "cuda":
            self.amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16

    def __call__(self, encoder, optimizer, scaler, batch: PretrainBatch) -> torch.Tensor:
        nodes = batch.nodes if self.needs_pairs else batch.nodes[: batch.n_seeds]
        lengths = self.lengths[nodes]
        mask = np.zeros((len(nodes), max(lengths.max(), batch.mask.shape[1])), dtype=bool)
        mask[: batch.n_seeds, : batch.mask.shape[1]] = batch.mask
        buckets = _length_buckets(lengths, self.max_buckets)
        with torch.autocast(self.device.type, dtype=self.amp_dtype, enabled=self.amp_dtype is not None):
            embeddings, logits, targets = [], [], []
            for rows in buckets:
                width = int(lengths[rows].max())
                inputs = self.ids[self._tensor(nodes[rows]), :width]
                if self.needs_mlm:
                    masked_rows, masked_cols = np.nonzero(mask[rows, :width])
                    positions = self._tensor(masked_rows * width + masked_cols)
                    targets.append(inputs.view(-1)[positions])
                    inputs.view(-1)[positions] = MASK_ID
                    bucket_embeddings, bucket_logits = encoder.embed_and_masked_logits(inputs, positions)
                    logits.append(bucket_logits)
                else:
                    bucket_embeddings = encoder.embed(inputs)
                embeddings.append(bucket_embeddings)
            embeddings = torch.cat(embeddings)
            if len(buckets) > 1:
                embeddings = embeddings[self._tensor(np.argsort(np.concatenate(buckets)))]
            total, terms = combine(
                self.objectives,
                ObjectiveInputs(
                    embeddings,
                    self._tensor(batch.positive_pairs),
                    self._tensor(batch.negative_pairs),
                    torch.cat(logits) if self.needs_mlm else None,
                    torch.cat(targets) if self.needs_mlm else None,
                ),
            )
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(total).backward()
        scaler.step(optimizer)
        scaler.update()
        return torch.stack([total.detach(), *(term.detach() for term in terms.values())]).float()

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(array, device=self.device)


def _length_buckets(lengths: np.ndarray, max_buckets: int) -> list[np.ndarray]:
    """Split samples into at most ``max_buckets`` groups of consecutive lengths, minimising padding.

    Padding a group to its longest costs ``size × longest`` token slots; the split minimises the
    total slots plus :data:`BUCKET_PENALTY` × (real tokens) per group (each group is one more pass
    through the model), exactly, by dynamic programming over the sorted lengths.

    Args:
        lengths: ``(U,)`` tokens per sample.

    Returns:
        Index arrays into ``lengths``, shortest group first, each sorted by length; together a
        permutation of ``0..U-1``. A single group is ``[0..U-1]`` in order.
    """
    order = np.argsort(lengths, kind="stable")
    if max_buckets <= 1 or len(order) < 2:
        return [np.arange(len(order))]
    ends = np.arange(len(order) + 1)
    longest = lengths[order][np.maximum(ends - 1, 0)].astype(np.float64)
    # slots[i, j]: a group of sorted samples i..j-1, padded to the last (longest) of them
    slots = np.where(ends[:, None] < ends[None, :], (ends[None, :] - ends[:, None]) * longest[None, :], np.inf)
    cost, cuts = slots[0], []
    best_groups, best_cost = 1, cost[-1]
    for groups in range(2, max_buckets + 1):
        totals = cost[:, None] + slots
        cuts.append(totals.argmin(axis=0))
        cost = totals.min(axis=0)
        if cost[-1] + BUCKET_PENALTY * lengths.sum() * (groups - 1) < best_cost:
            best_groups, best_cost = groups, cost[-1] + BUCKET_PENALTY * lengths.sum() * (groups - 1)
    if best_groups == 1:
        return [np.arange(len(order))]
    bounds = [len(order)]
    for group in range(best_groups - 1, 0, -1):
        bounds.append(int(cuts[group - 1][bounds[-1]]))
    bounds.append(0)
    return [order[start:stop] for start, stop in zip(bounds[:0:-1], bounds[-2::-1])]


def _make_optimizer(params, lr: float, weight_decay: float, fused: bool) -> torch.optim.AdamW:
    """AdamW; ``fused`` updates all parameters in one kernel. The trainer fuses on CUDA only: on
    CPU the per-parameter loop measured 3-14 % faster for the small presets
    (benchmarks/bench_training.py --ablation)."""
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, fused=fused)


@dataclass
class _State:
    """Everything a checkpoint holds, and the checks that a checkpoint fits the current run."""

    trainable: nn.ModuleList
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    history: torch.Tensor
    config: TrainConfig
    encoder_config: EncoderConfig
    tokenizer: CharTokenizer
    cuda_devices: list

    def identity(self) -> dict:
        run = {k: v for k, v in config_to_dict(self.config).items() if k not in _RESUMABLE_CHANGES}
        return {"train": run, "encoder": config_to_dict(self.encoder_config), "tokenizer": self.tokenizer.to_dict()}

    def save(self, path: Path, step: int) -> None:
        payload = {
            "step": step,
            "identity": json.dumps(self.identity(), sort_keys=True),
            "modules": self.trainable.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "history": self.history[:step].cpu(),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": [torch.cuda.get_rng_state(d) for d in self.cuda_devices],
        }
        buffer = io.BytesIO()
        torch.save(payload, buffer)
        write_bytes_atomic(path, buffer.getvalue())

    def load(self, path: Path) -> int:
        """Restore from ``path``; returns the step to continue from."""
        payload = torch.load(path, map_location="cpu", weights_only=True)
        if payload["identity"] != json.dumps(self.identity(), sort_keys=True):
            raise SiptError(
                f"checkpoint {path} was written by a different configuration or corpus; use another checkpoint_dir or delete it"
            )
        step = int(payload["step"])
        if step > self.config.steps:
            raise SiptError(f"checkpoint {path} is at step {step}, beyond steps={self.config.steps}; raise steps")
        self.trainable.load_state_dict(payload["modules"])
        self.optimizer.load_state_dict(payload["optimizer"])
        self.scaler.load_state_dict(payload["scaler"])
        self.history[:step] = payload["history"].to(self.history.device)
        torch.set_rng_state(payload["torch_rng"])
        for device, rng in zip(self.cuda_devices, payload["cuda_rng"]):
            torch.cuda.set_rng_state(rng, device)
        return step


def _check_finite(history: torch.Tensor, start: int, stop: int, names: list[str]) -> np.ndarray:
    """History rows ``start..stop-1`` as numpy; SiptError at the first non-finite one."""
    values = history[start:stop].cpu().numpy()
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        terms = ", ".join(f"{name}={value:.4g}" for name, value in zip(names, values[row]))
        raise SiptError(f"non-finite loss at step {start + row} ({terms}); lower lr, check the inputs, or disable amp")
    return values


def _validate(config: TrainConfig) -> None:
    if config.steps < 1:
        raise SiptError(f"steps is {config.steps}; use at least 1")
    if config.lr <= 0 or config.weight_decay < 0:
        raise SiptError(f"lr {config.lr} must be > 0 and weight_decay {config.weight_decay} >= 0")
    if config.log_every < 1 or config.checkpoint_every < 0:
        raise SiptError("log_every must be >= 1 and checkpoint_every >= 0")
    if config.max_len is not None and config.max_len < 2:
        raise SiptError(f"max_len is {config.max_len}; use at least 2 or None")
    if config.schedule not in LR_SCHEDULES:
        raise SiptError(f"unknown lr schedule {config.schedule!r}; use one of {', '.join(LR_SCHEDULES)}")
    if not 0.0 <= config.warmup < 1.0:
        raise SiptError(f"warmup is {config.warmup}; use a fraction of the steps in [0, 1)")
    check_loss_params(config.loss, dict(config.loss_params))
    check_pair_mode(config.pairs)


def embed(
    encoder: nn.Module,
    tokenizer: CharTokenizer,
    sentences: list[str],
    batch_size: int = 256,
    device: str | torch.device | None = None,
) -> np.ndarray:
    """``(n, H)`` float32 embeddings ``f(x)`` of ``sentences`` (eval mode, no gradients, unmasked).

    Sentences are batched by length so each batch is padded only to its own longest member.
    ``device`` defaults to the encoder's.
    """
    device = next(encoder.parameters()).device if device is None else resolve_device(device)
    ids, lengths = tokenizer.encode(sentences)
    order = np.argsort(lengths, kind="stable")
    was_training = encoder.training
    encoder.eval()
    out = np.empty((len(sentences), encoder.hidden_size), dtype=np.float32)
    try:
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                batch = torch.as_tensor(ids[rows, : lengths[rows].max()], device=device)
                out[rows] = encoder.embed(batch).float().cpu().numpy()
    finally:
        encoder.train(was_training)
    return out
