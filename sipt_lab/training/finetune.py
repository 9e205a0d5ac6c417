"""Full fine-tuning: a linear head on the pooled embedding, trained with the encoder end to end.

For each learning rate of a small grid, a fresh copy of the encoder gets a linear head (classes,
one value, or one logit per label, by :data:`HEADS`) and trains with AdamW (linear warm-up over
the first 10 % of steps, linear decay to 0) for up to ``epochs`` passes over the train split,
scoring validation after each; training stops after ``patience`` passes without a better
validation score. The result is the test score at the best validation pass of the best learning
rate. Everything random (head init, dropout, shuffling) comes from ``seed``, so seeds are the
repetitions the paper's t-tests run over.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sipt_lab.errors import SiptError
from sipt_lab.evaluation.splits import Splits
from sipt_lab.evaluation.tasks import Task, check_train_labels, get_task_kind
from sipt_lab.models import Tokenizer
from sipt_lab.training.trainer import encoder_inputs, resolve_device

#: ``() -> (encoder in train mode on CPU, its tokenizer)``: a fresh copy each call.
EncoderLoader = Callable[[], tuple[nn.Module, Tokenizer]]


@dataclass(frozen=True)
class HeadSpec:
    """How one task kind is trained: output width from the train labels, a loss, and the
    ``(n, outputs)`` head output turned into what :attr:`TaskKind.metrics` reads."""

    width: Callable[[np.ndarray], int]
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    target: Callable[[np.ndarray, np.ndarray], torch.Tensor]
    predict: Callable[[torch.Tensor], np.ndarray]


def _standardised(labels: np.ndarray, train: np.ndarray) -> torch.Tensor:
    return torch.as_tensor((labels - train.mean()) / max(float(train.std()), 1e-12), dtype=torch.float32)


#: Task kind -> how its head trains (regression targets are standardised on the train split).
_CLASSES = HeadSpec(lambda y: int(y.max()) + 1, F.cross_entropy,
                    lambda y, train: torch.as_tensor(y, dtype=torch.long), lambda out: out.argmax(1).numpy())
HEADS: dict[str, HeadSpec] = {
    "classification": _CLASSES,
    "classification-f1": _CLASSES,
    "regression": HeadSpec(lambda y: 1, lambda out, t: F.mse_loss(out.squeeze(1), t),
                           _standardised, lambda out: out.squeeze(1).numpy()),
    "multilabel": HeadSpec(lambda y: y.shape[1], F.binary_cross_entropy_with_logits,
                           lambda y, train: torch.as_tensor(y, dtype=torch.float32), lambda out: torch.sigmoid(out).numpy()),
}


@dataclass(frozen=True)
class FinetuneConfig:
    """Attributes:
    lrs: the learning-rate grid, chosen on validation.
    epochs: most passes over the train split.
    patience: passes without a better validation score before stopping.
    batch_size: samples per step.
    weight_decay: AdamW's.
    max_len: tokens per sample (None: the tokenizer's own).
    device: ``auto``, ``cpu`` or ``cuda``.
    """

    lrs: tuple[float, ...] = (2e-5, 5e-5, 1e-4)
    epochs: int = 3
    patience: int = 1
    batch_size: int = 16
    weight_decay: float = 0.01
    max_len: int | None = None
    device: str = "auto"

    def __post_init__(self) -> None:
        if not self.lrs or min(self.lrs) <= 0:
            raise SiptError(f"fine-tuning learning rates {self.lrs} must be positive; give at least one")
        if self.epochs < 1 or self.patience < 0 or self.batch_size < 1:
            raise SiptError("fine-tuning needs epochs >= 1, patience >= 0 and batch_size >= 1")


@dataclass(frozen=True)
class FinetuneResult:
    """Attributes:
    test, validation: the task kind's metrics at the chosen learning rate's best validation pass.
    lr: the chosen learning rate.
    epochs: passes run for it (early stopping may end sooner than ``epochs``).
    """

    test: dict[str, float]
    validation: dict[str, float]
    lr: float
    epochs: int


def finetune(load: EncoderLoader, texts: list[str], task: Task, splits: Splits, config: FinetuneConfig, seed: int = 0) -> FinetuneResult:
    """Fine-tune the encoder that ``load`` gives on ``task`` (see the module docstring).

    Args:
        load: returns a fresh encoder and its tokenizer (called once per learning rate).
        texts: all ``n`` samples' texts; ``splits`` index into them and ``task`` labels them.
    """
    kind, head_spec = get_task_kind(task.kind), HEADS[task.kind]
    labels = {name: task.labels_of(getattr(splits, name)) for name in ("train", "validation", "test")}
    check_train_labels(task.name, task.kind, labels["train"])
    targets = head_spec.target(labels["train"], labels["train"])
    device = resolve_device(config.device)
    best: FinetuneResult | None = None
    for lr in config.lrs:
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            encoder, tokenizer = load()
            if config.max_len is not None:
                tokenizer = dataclasses.replace(tokenizer, max_len=config.max_len)
            inputs = {name: encoder_inputs(tokenizer, [texts[i] for i in getattr(splits, name)], device) for name in labels}
            head = nn.Linear(encoder.hidden_size, head_spec.width(labels["train"]))
            model = nn.ModuleDict({"encoder": encoder, "head": head}).to(device)
            result = _train_one_rate(model, inputs, labels, targets, kind, head_spec, config, lr, seed, device)
        if best is None or result.validation[kind.primary] > best.validation[kind.primary]:
            best = result
    return best


def _train_one_rate(model, inputs, labels, targets, kind, head_spec, config, lr, seed, device) -> FinetuneResult:
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=config.weight_decay)
    per_epoch = math.ceil(len(inputs["train"].lengths) / config.batch_size)
    total = per_epoch * config.epochs
    warmup = max(1, round(0.1 * total))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / warmup, max(total - s, 0) / max(total - warmup, 1)))
    rng = np.random.default_rng([seed, 7])
    best, stale, epochs = None, 0, 0
    for epoch in range(config.epochs):
        model.train()
        for rows in np.array_split(rng.permutation(len(inputs["train"].lengths)), per_epoch):
            loss = head_spec.loss(model["head"](model["encoder"].embed(inputs["train"].batch(rows))).float(), targets[rows].to(device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
        epochs = epoch + 1
        scores = {name: kind.metrics(labels[name], head_spec.predict(_outputs(model, inputs[name], config.batch_size)))
                  for name in ("validation", "test")}
        if not np.isfinite(loss.item()):
            raise SiptError(f"fine-tuning loss became non-finite at lr {lr}; lower the learning rates")
        if best is None or scores["validation"][kind.primary] > best.validation[kind.primary]:
            best, stale = FinetuneResult(scores["test"], scores["validation"], lr, epochs), 0
        else:
            stale += 1
            if stale > config.patience:
                break
    return dataclasses.replace(best, epochs=epochs)


def _outputs(model: nn.ModuleDict, inputs, batch_size: int) -> torch.Tensor:
    """``(n, outputs)`` head outputs of the :class:`~sipt_lab.models.EncoderInputs` ``inputs``, on CPU,
    in eval mode, batched by length."""
    model.eval()
    order = np.argsort(inputs.lengths, kind="stable")
    chunks = []
    with torch.inference_mode():
        for start in range(0, len(order), batch_size * 4):
            rows = order[start : start + batch_size * 4]
            chunks.append(model["head"](model["encoder"].embed(inputs.batch(rows))).float().cpu())
    return torch.cat(chunks)[torch.as_tensor(np.argsort(order))]
