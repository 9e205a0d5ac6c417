"""Full fine-tuning: a linear head on the pooled embedding (or, for a per-token task kind, on each
residue's last-layer state), trained with the encoder end to end.

For each learning rate of a small grid, a fresh copy of the encoder gets a linear head (classes,
one value, or one logit per label, by :data:`HEADS`) and trains with AdamW (linear warm-up over
the first 10 % of steps, linear decay to 0) for up to ``epochs`` passes over the train split,
scoring validation after each; training stops after ``patience`` passes without a better
validation score. The result is the test score at the best validation pass of the best learning
rate. Everything random (head init, dropout, shuffling) comes from ``seed``, so seeds are the
repetitions the paper's t-tests run over.

Per-token kinds (:attr:`~sipt_lab.data.tasks.TaskKind.per_token`, TAPE's secondary
structure) read the states after ``[CLS]``, token ``1 + r`` for residue ``r``: the tokenizer must make
one token per character (:func:`token_counts` checks it); residues beyond ``max_len`` are neither
trained on nor scored. Pairwise kinds (:attr:`~sipt_lab.data.tasks.TaskKind.pairwise`, TAPE's
contact prediction) read those residue states in pairs (:mod:`~sipt_lab.training.pair_features`,
``2H`` features a pair) and train a two-class head on the valid pairs; their memory grows with
the square of the residues read, checked against ``FinetuneConfig.pair_memory_gib``.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sipt_lab.core.errors import SiptError
from sipt_lab.data.contacts import contact_labels, flatten_pairs, pair_contacts, pair_count
from sipt_lab.data.splits import Splits
from sipt_lab.data.tasks import Task, TaskKind, check_train_labels, flatten_tokens, get_task_kind
from sipt_lab.models import Tokenizer
from sipt_lab.training.inputs import TokenRows, encoder_inputs
from sipt_lab.training.pair_features import check_pair_memory, pair_features
from sipt_lab.training.runtime import resolve_device
from sipt_lab.training.train_config import FinetuneConfig

#: ``() -> (encoder in train mode on CPU, its tokenizer)``: a fresh copy each call.
EncoderLoader = Callable[[], tuple[nn.Module, Tokenizer]]


def copies_of(encoder: nn.Module, tokenizer: Tokenizer) -> EncoderLoader:
    """The :data:`EncoderLoader` of an encoder in memory: a deep copy in train mode each call."""
    return lambda: (copy.deepcopy(encoder).train(), tokenizer)


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


def _valid_pair_loss(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over the pairs whose target is not -1 (an invalid residue); 0 when there are none."""
    scored = target >= 0
    return F.cross_entropy(out[scored], target[scored].long()) if bool(scored.any()) else out.sum() * 0.0


#: Task kind -> how its head trains (regression targets are standardised on the train split).
_CLASSES = HeadSpec(
    lambda y: int(y.max()) + 1,
    F.cross_entropy,
    lambda y, train: torch.as_tensor(y, dtype=torch.long),
    lambda out: out.argmax(1).numpy(),
)
HEADS: dict[str, HeadSpec] = {
    "classification": _CLASSES,
    "classification-f1": _CLASSES,
    "token-classification": _CLASSES,
    "regression": HeadSpec(
        lambda y: 1, lambda out, t: F.mse_loss(out.squeeze(1), t), _standardised, lambda out: out.squeeze(1).numpy()
    ),
    "contact-prediction": HeadSpec(
        lambda y: 2,
        _valid_pair_loss,
        lambda y, train: torch.as_tensor(contact_labels(y)),
        lambda out: torch.softmax(out, 1)[:, 1].numpy(),
    ),
    "multilabel": HeadSpec(
        lambda y: y.shape[1],
        F.binary_cross_entropy_with_logits,
        lambda y, train: torch.as_tensor(y, dtype=torch.float32),
        lambda out: torch.sigmoid(out).numpy(),
    ),
}


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


SPLIT_NAMES = ("train", "validation", "test")
#: Columns of a fine-tuning history (``history.csv`` of ``sipt-lab finetune``): which model and part
#: (``model``, ``part``, ``seed``, set by the caller), then the learning rate, pass (1-based), steps
#: done, split (``train`` for the loss) and metric.
HISTORY_COLUMNS = ("model", "part", "seed", "lr", "epoch", "step", "split", "metric", "value")


def token_counts(tokenizer: Tokenizer, texts: list[str], inputs) -> np.ndarray:
    """``(n,)`` residues of each text that the encoder reads, one token each after ``[CLS]``:
    ``min(len(text), max_len - 1 - suffix_tokens)``. ``inputs`` are the texts' encoder inputs.

    SiptError (one line) when the inputs are not token rows (a graph encoder) or when some text's
    token count is not its character count (a subword or word tokenizer: ProtBERT-style
    tokenizers want spaced residues), since residue labels could not be aligned to the tokens.
    """
    if not isinstance(inputs, TokenRows):
        raise SiptError(
            "per-token tasks need a text encoder whose tokens are the sequence's residues; "
            f"{type(inputs).__name__} inputs have no per-residue tokens"
        )
    suffix = tokenizer.suffix_tokens
    counts = np.asarray(inputs.lengths, dtype=np.int64) - 1 - suffix
    expected = np.minimum([len(text) for text in texts], tokenizer.max_len - 1 - suffix)
    wrong = np.flatnonzero(counts != expected)
    if wrong.size:
        k = int(wrong[0])
        raise SiptError(
            f"the tokenizer makes {counts[k]} tokens of a {len(texts[k])}-residue sequence, so residue "
            "labels cannot be aligned; per-token tasks need one token per residue (PretrainJob.init char, or an "
            "ESM-style checkpoint)"
        )
    return counts


def token_states(encoder: nn.Module, ids: torch.Tensor, counts: np.ndarray) -> torch.Tensor:
    """``(sum counts, H)`` last-layer states of residues ``1..counts[b]`` of each row of ``ids``
    ``(B, T)`` (``counts`` ``(B,)``), row after row, residue order."""
    states = encoder.hidden_states(ids)
    positions = torch.arange(states.shape[1], device=states.device)
    keep = (positions >= 1) & (positions <= torch.as_tensor(counts, device=states.device)[:, None])
    return states[keep]


def segments(sizes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Flat indices of the segments of ``rows`` ``(k,)``, in ``rows`` order, within the
    concatenation of every sample's segment (sample ``i`` has ``sizes[i]`` entries)."""
    rows = np.asarray(rows, dtype=np.int64)
    starts = (np.cumsum(sizes) - sizes)[rows]
    lengths = np.asarray(sizes)[rows]
    return np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))


@dataclass(frozen=True)
class Readout:
    """What the head reads of one split: the pooled embedding (``sizes`` all 1), for a per-token
    kind the states of the ``sizes[i]`` scored residues of each sample ``i``, or, when ``residues``
    ``(n,)`` is given (a pairwise kind), the ``sizes[i]`` scored pairs of its first ``residues[i]``
    residues."""

    per_token: bool
    sizes: np.ndarray
    residues: np.ndarray | None = None

    def features(self, encoder: nn.Module, inputs, rows: np.ndarray) -> torch.Tensor:
        """``(sizes[rows].sum(), H)`` (``2H`` for pairs): the features of ``rows``, sample after sample."""
        batch = inputs.batch(rows)
        if not self.per_token:
            return encoder.embed(batch)
        if self.residues is None:
            return token_states(encoder, batch, self.sizes[rows])
        return pair_features(token_states(encoder, batch, self.residues[rows]), self.residues[rows])

    def labels(self, raw: np.ndarray, train: bool = False) -> np.ndarray:
        """The labels of what this readout reads, from a split's task labels ``raw`` ``(n,)``: as they
        are, per token (:func:`~sipt_lab.data.tasks.flatten_tokens`) or per pair
        (:func:`~sipt_lab.data.contacts.flatten_pairs`; for the ``train`` split only their contact
        column, :func:`~sipt_lab.data.contacts.pair_contacts`, one byte a pair)."""
        if not self.per_token:
            return raw
        if self.residues is None:
            return flatten_tokens(raw, self.sizes)
        return pair_contacts(raw, self.residues) if train else flatten_pairs(raw, self.residues)


def readout(
    kind: TaskKind, tokenizer: Tokenizer, texts: list[str], inputs, hidden: int, pair_memory_gib: float, split: str
) -> Readout:
    """The :class:`Readout` of one split's ``texts`` for ``kind`` (``hidden``: the encoder's width,
    for :func:`~sipt_lab.training.pair_features.check_pair_memory` of a pairwise kind)."""
    if not kind.per_token:
        return Readout(False, np.ones(len(texts), dtype=np.int64))
    counts = token_counts(tokenizer, texts, inputs)
    if not kind.pairwise:
        return Readout(True, counts)
    check_pair_memory(counts, hidden, pair_memory_gib, split)
    return Readout(True, pair_count(counts), counts)


def finetune(
    load: EncoderLoader,
    texts: list[str],
    task: Task,
    splits: Splits,
    config: FinetuneConfig,
    seed: int = 0,
    record: Callable[[dict], None] | None = None,
) -> FinetuneResult:
    """Fine-tune the encoder that ``load`` gives on ``task`` (see the module docstring).

    Args:
        load: returns a fresh encoder and its tokenizer (called once per learning rate).
        texts: all ``n`` samples' texts; ``splits`` index into them and ``task`` labels them.
        record: called with one row per logged value (:data:`HISTORY_COLUMNS` minus the
            caller's): every step's train loss, and the validation and test metrics after every
            pass and every ``config.eval_every`` steps, for every learning rate.
    """
    kind, head_spec = get_task_kind(task.kind), HEADS[task.kind]
    raw = {name: task.labels_of(getattr(splits, name)) for name in SPLIT_NAMES}
    split_texts = {name: [texts[i] for i in getattr(splits, name)] for name in SPLIT_NAMES}
    device = resolve_device(config.device, "FinetuneConfig.device")
    best: FinetuneResult | None = None
    for lr in config.lrs:
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            encoder, tokenizer = load()
            if config.max_len is not None:
                tokenizer = dataclasses.replace(tokenizer, max_len=config.max_len)
            inputs = {name: encoder_inputs(tokenizer, split_texts[name], device) for name in SPLIT_NAMES}
            readouts = {
                name: readout(
                    kind, tokenizer, split_texts[name], inputs[name], encoder.hidden_size, config.pair_memory_gib, name
                )
                for name in SPLIT_NAMES
            }
            labels = {name: readouts[name].labels(raw[name], train=name == "train") for name in raw}
            check_train_labels(task.name, task.kind, labels["train"], task.label_names)
            targets = head_spec.target(labels["train"], labels["train"])
            width = encoder.hidden_size * (2 if kind.pairwise else 1)
            head = nn.Linear(width, head_spec.width(labels["train"]))
            model = nn.ModuleDict({"encoder": encoder, "head": head}).to(device)
            result = _train_one_rate(
                model,
                inputs,
                readouts,
                labels,
                targets,
                kind,
                head_spec,
                config,
                lr,
                seed,
                device,
                record or (lambda row: None),
            )
        if best is None or result.validation[kind.primary] > best.validation[kind.primary]:
            best = result
    return best


def _train_one_rate(
    model, inputs, readouts, labels, targets, kind, head_spec, config, lr, seed, device, record
) -> FinetuneResult:
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=config.weight_decay)
    per_epoch = math.ceil(len(inputs["train"].lengths) / config.batch_size)
    total = per_epoch * config.epochs
    warmup = max(1, round(0.1 * total))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(total - s, 0) / max(total - warmup, 1))
    )
    rng = np.random.default_rng([seed, 7])
    train = readouts["train"]
    best, stale, epochs, step = None, 0, 0, 0

    def score(epoch: int) -> dict[str, dict[str, float]]:
        scores = {
            name: kind.metrics(
                labels[name], head_spec.predict(_outputs(model, inputs[name], readouts[name], config.batch_size))
            )
            for name in ("validation", "test")
        }
        for name, metrics in scores.items():
            for metric, value in metrics.items():
                record({"lr": lr, "epoch": epoch, "step": step, "split": name, "metric": metric, "value": float(value)})
        return scores

    for epoch in range(config.epochs):
        model.train()
        for rows in np.array_split(rng.permutation(len(inputs["train"].lengths)), per_epoch):
            outputs = model["head"](train.features(model["encoder"], inputs["train"], rows)).float()
            loss = head_spec.loss(outputs, targets[segments(train.sizes, rows)].to(device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            step += 1
            record(
                {
                    "lr": lr,
                    "epoch": epoch + 1,
                    "step": step,
                    "split": "train",
                    "metric": "loss",
                    "value": float(loss.item()),
                }
            )
            if config.eval_every is not None and step % config.eval_every == 0 and step % per_epoch:
                score(epoch + 1)
                model.train()
        epochs = epoch + 1
        scores = score(epochs)
        if not np.isfinite(loss.item()):
            raise SiptError(f"fine-tuning loss became non-finite at lr {lr}; lower the learning rates")
        if best is None or scores["validation"][kind.primary] > best.validation[kind.primary]:
            best, stale = FinetuneResult(scores["test"], scores["validation"], lr, epochs), 0
        else:
            stale += 1
            if stale > config.patience:
                break
    return dataclasses.replace(best, epochs=epochs)


def _outputs(model: nn.ModuleDict, inputs, readout: Readout, batch_size: int) -> torch.Tensor:
    """``(sizes.sum(), outputs)`` head outputs of ``inputs`` (one row per sample, or per scored residue)."""
    return read_out(model["encoder"], inputs, readout, batch_size * 4, head=model["head"])


def read_out(
    encoder: nn.Module, inputs, readout: Readout, batch_size: int, head: nn.Module | None = None
) -> torch.Tensor:
    """``(sizes.sum(), H)`` features of the :class:`~sipt_lab.models.EncoderInputs` ``inputs`` that
    ``readout`` reads (``(sizes.sum(), outputs)`` through ``head`` when given), sample after sample,
    float32 on CPU; eval mode, no gradients, batched by length."""
    encoder.eval()
    if head is not None:
        head.eval()
    order = np.argsort(inputs.lengths, kind="stable")
    chunks = []
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            features = readout.features(encoder, inputs, order[start : start + batch_size])
            chunks.append((features if head is None else head(features)).float().cpu())
    return torch.cat(chunks)[torch.as_tensor(np.argsort(segments(readout.sizes, order)))]
