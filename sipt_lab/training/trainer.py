"""The pre-training loop: ``L_PT = (1 − λ_SI)·L_M + λ_SI·L_SI`` with AdamW over graph-aware batches.

All samples are tokenised once into one padded id tensor on the device; a step gathers the rows
of its batch in a few length buckets (each cut to its own longest row, so little compute goes to
padding), masks the seeds, runs the encoder once per bucket and takes one AdamW step (after
``grad_accum`` such micro-batches). Runs are deterministic on CPU for a given seed (model init and
dropout use a forked torch RNG seeded from ``config.seed``; batches and masks come from
:class:`GraphBatchSampler`), and a run resumed from a checkpoint ends with the same numbers as an
uninterrupted one. Steps count from 0.

**Data parallel.** Under ``torchrun`` (``WORLD_SIZE`` > 1) every process draws the same global
batch and encodes its shard of the batch's rows (row ``r`` goes to process ``r mod K``); the
encoder is wrapped in ``DistributedDataParallel`` (NCCL on CUDA, gloo on CPU). ``L_SI`` scores
the whole batch's pairs on embeddings all-gathered with gradients, and each process's MLM term is
its tokens' share of the batch mean, so K processes with global batch B optimise the same loss
as one process with batch B (up to float rounding). Only rank 0 shows progress and writes.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm.auto import tqdm

from sipt_lab.core.config import config_to_dict, save_config
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_bytes_atomic, write_json_atomic
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models import CharInit, EncoderConfig, EncoderSource, Tokenizer, evaluating, save_encoder
from sipt_lab.models.buckets import length_buckets
from sipt_lab.objectives import Objective, ObjectiveInputs
from sipt_lab.training.allocator import retain_freed_memory
from sipt_lab.training.diagnostics import guard_step, stalled_structure_loss
from sipt_lab.training.sampler import (
    KEEP_TOKEN,
    REPLACE_WITH_MASK,
    PretrainBatch,
)
from sipt_lab.training.config import (
    PRECISIONS,
    TrainConfig,
    _RESUMABLE_CHANGES,
    check_structure_geometry,
    lr_factor,
)
from sipt_lab.training.recipe import GraphRecipe, Recipe, RunData

logger = logging.getLogger(__name__)

CHECKPOINT_NAME = "checkpoint.pt"
@dataclass
class PretrainResult:
    """A trained encoder (eval mode, on the training device) with its tokenizer.

    ``history`` maps ``"loss"`` (the weighted total), each computed term (``"mlm"``, ``"si"``) and
    ``"lr"`` to a ``(steps,)`` float64 array of per-step values; ``notes`` are what the encoder
    source reported (e.g. a newly added MLM head); ``objectives`` are the trained objectives by
    name (their own parameters, e.g. LinkBERT's relation head).
    """

    encoder: nn.Module
    tokenizer: Tokenizer
    history: dict[str, np.ndarray]
    config: TrainConfig
    source: dict
    notes: list[str] = field(default_factory=list)
    objectives: dict[str, Objective] = field(default_factory=dict)

    def save(self, directory: str | Path) -> Path:
        """The encoder in its own format (:func:`~sipt_lab.models.save_encoder`) plus
        ``train_config.json`` and ``history.json``."""
        out = save_encoder(self.encoder, self.tokenizer, directory)
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


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype for ``precision`` on ``device`` (None: full fp32)."""
    if precision not in PRECISIONS:
        raise SiptError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    if precision == "fp16" and device.type != "cuda":
        raise SiptError("fp16 autocast needs a CUDA GPU; use --precision bf16 or fp32 on CPU")
    if precision == "auto":
        if device.type != "cuda":
            return None
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


@dataclass(frozen=True)
class Distributed:
    """This process's place in a data-parallel run: ``rank`` of ``world`` processes."""

    rank: int = 0
    world: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def distributed_context(device_type: str) -> Distributed:
    """Join the ``torchrun`` process group when ``WORLD_SIZE`` > 1 (NCCL on CUDA, gloo on CPU)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return Distributed()
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device_type == "cuda" else "gloo")
    return Distributed(dist.get_rank(), dist.get_world_size())


def pretrain(
    texts: list[str],
    graph: PretrainingGraph,
    config: TrainConfig,
    encoder: EncoderConfig | EncoderSource | None = None,
    *,
    checkpoint_dir: str | Path | None = None,
    progress: bool = True,
    method: Recipe | None = None,
) -> PretrainResult:
    """Pre-train an encoder on ``texts`` (node ``i`` of ``graph`` is ``texts[i]``); ``texts`` are the
    samples the source's tokenizer featurises (:func:`encoder_inputs`): texts, or graphs for a GIN.

    ``encoder`` is where the encoder comes from: an :class:`~sipt_lab.models.EncoderSource`
    (:func:`~sipt_lab.models.encoder_source` turns ``"char"``, ``"minilm"`` or a Hugging Face
    directory into one), or an :class:`EncoderConfig` for a fresh character transformer of that
    size (None: the ``default`` preset).

    With ``checkpoint_dir``, a checkpoint there from an earlier run of the same configuration
    (``steps`` may grow) is resumed, and one is written every ``checkpoint_every`` steps and at the end.
    A non-finite loss stops the run with a SiptError naming the step. Under ``torchrun`` the run
    is data parallel (see the module docstring). ``method`` is the pre-training method's
    :class:`~sipt_lab.training.recipe.Recipe` (None: LM / SIPT by ``config.lambda_si``;
    :func:`sipt_lab.training.methods.method_recipe` gives the others).
    """
    recipe = method or GraphRecipe()
    source = recipe.encoder_source(CharInit(encoder) if isinstance(encoder, EncoderConfig) else encoder or CharInit())
    check_structure_geometry(config, source)
    device = resolve_device(config.device)
    retain_freed_memory()
    place = distributed_context(device.type)
    if place.world > 1 and device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    if config.batch_size < place.world:
        raise SiptError(f"batch_size {config.batch_size} is smaller than the {place.world} processes; give each at least one sample")
    amp_dtype = autocast_dtype(config.precision, device)
    tokenizer = source.tokenizer(list(texts), config.max_len)
    inputs = encoder_inputs(tokenizer, list(texts), device)
    ids = inputs.ids.numpy() if isinstance(inputs, TokenRows) else None  # recipes that build their own rows read them
    plan = recipe.plan(RunData(list(texts), graph, tokenizer, ids, inputs.lengths, config, device, source))
    sampler, objectives = plan.sampler, plan.objectives
    described = source.describe() if method is None else {**source.describe(), "method": recipe.describe()}
    names = ["loss"] + [objective.name for _, objective in objectives] + ["lr"]
    step_fn = _Step(inputs, None, objectives, device, amp_dtype, place=place, normalize=source.normalizes)

    cuda_devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda_devices):
        torch.manual_seed(config.seed)
        model, notes = source.encoder(tokenizer)
        model = model.to(device)
        if place.rank:  # identical init everywhere; dropout differs by process
            torch.manual_seed(config.seed * 7919 + place.rank)
        replica = _Replica(model, step_fn).to(device)
        optimizer = _make_optimizer(replica.parameters(), config.lr, config.weight_decay, fused=device.type == "cuda")
        if place.world > 1:
            replica = DistributedDataParallel(replica, broadcast_buffers=False, find_unused_parameters=not step_fn.needs_mlm)
        scaler = torch.amp.GradScaler(device.type, enabled=amp_dtype == torch.float16)
        history = torch.full((config.steps, len(names)), float("nan"), device=device)
        checkpoint = None if checkpoint_dir is None else Path(checkpoint_dir) / CHECKPOINT_NAME
        state = _State(replica, optimizer, scaler, history, config, described, tokenizer, cuda_devices)
        start = state.load(checkpoint) if checkpoint is not None and checkpoint.is_file() else 0
        if start == 0 and config.head_warmup and getattr(model, "fresh_head", False):
            mlm = [(1.0, objective) for _, objective in objectives if objective.needs_mlm and not objective.needs_pairs]
            if mlm:
                notes.append(warm_up_head(model, _Replica(model, _Step(inputs, None, mlm, device, amp_dtype)), sampler, config))

        replica.train()
        checked = start
        show = progress and place.is_main
        with tqdm(total=config.steps, initial=start, disable=not show, desc="pretrain", unit="step") as bar:
            for step in range(start, config.steps):
                rate = config.lr * lr_factor(config, step)
                for group in optimizer.param_groups:
                    group["lr"] = rate
                micro = [sampler.batch(step * config.grad_accum + k) for k in range(config.grad_accum)]
                history[step, :-1] = train_step(replica, optimizer, scaler, micro)
                history[step, -1] = rate
                bar.update()
                done = step + 1
                save_now = checkpoint is not None and (done == config.steps or (config.checkpoint_every and done % config.checkpoint_every == 0))
                if save_now or done % config.log_every == 0 or done == config.steps:
                    values = _check_finite(history, checked, done, names)
                    checked = done
                    bar.set_postfix({name: f"{value:.4g}" for name, value in zip(names, values[-1])}, refresh=False)
                if done == guard_step(config.steps) and "si" in names and place.is_main:
                    warning = stalled_structure_loss(history[:done, names.index("si")].cpu().double().numpy(), config)
                    if warning:
                        logger.warning(warning)
                if save_now and place.is_main:
                    state.save(checkpoint, done)
    model.eval()
    table = history.cpu().double().numpy()
    return PretrainResult(model, tokenizer, {name: table[:, k] for k, name in enumerate(names)}, config, described, notes,
                          {objective.name: objective.eval() for _, objective in objectives})


def warm_up_head(encoder: nn.Module, replica: nn.Module, sampler, config: TrainConfig) -> str:
    """Fit ``encoder``'s new MLM head (``encoder.new_head_parameters()``) for ``config.head_warmup``
    steps at the constant ``config.head_lr`` with every other parameter frozen, on the sampler's
    first batches (their seeds' masks: the same for every λ, so LM and SIPT arms start from the
    same state). ``replica`` computes the MLM loss of a batch. Returns a note for the log."""
    head = encoder.new_head_parameters()
    head_ids = {id(p) for p in head}
    frozen = [p for p in replica.parameters() if p.requires_grad and id(p) not in head_ids]
    for parameter in frozen:
        parameter.requires_grad_(False)
    optimizer = _make_optimizer(head, config.head_lr, config.weight_decay, fused=False)
    scaler = torch.amp.GradScaler(enabled=False)
    try:
        replica.train()
        losses = [float(train_step(replica, optimizer, scaler, [sampler.batch(k)])[0]) for k in range(config.head_warmup)]
    finally:
        for parameter in frozen:
            parameter.requires_grad_(True)
    steps = f"{config.head_warmup} step{'s' if config.head_warmup > 1 else ''}"
    return (f"new MLM head fitted for {steps} with the encoder frozen: "
            f"MLM loss {losses[0]:.3g} -> {losses[-1]:.3g} nats")


def train_step(replica: nn.Module, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler, batches: list[PretrainBatch]) -> torch.Tensor:
    """One optimiser step over the micro-batches ``batches`` (gradients averaged over them, and
    over processes under DDP, which synchronises on the last one only).

    Returns:
        ``(1 + terms,)`` detached losses (weighted total, then each term), averaged over the micro-batches.
    """
    optimizer.zero_grad(set_to_none=True)
    reported = None
    for k, batch in enumerate(batches):
        last = k == len(batches) - 1
        syncing = contextlib.nullcontext() if last or not isinstance(replica, DistributedDataParallel) else replica.no_sync()
        with syncing:
            loss, values = replica(batch)
            scaler.scale(loss / len(batches)).backward()
        reported = values / len(batches) if reported is None else reported + values / len(batches)
    scaler.step(optimizer)
    scaler.update()
    return reported


class _Replica(nn.Module):
    """The encoder and the objectives' own parameters, whose ``forward(batch)`` is one
    micro-batch's loss (so ``DistributedDataParallel`` can wrap the whole differentiable step)."""

    def __init__(self, encoder: nn.Module, step: _Step) -> None:
        super().__init__()
        self.encoder = encoder
        self.objectives = nn.ModuleList(objective for _, objective in step.objectives)
        self.step = step

    def forward(self, batch: PretrainBatch) -> tuple[torch.Tensor, torch.Tensor]:
        return self.step.losses(self.encoder, batch)


class _Step:
    """The loss of one micro-batch (:class:`PretrainBatch`) on this process's share of its rows.

    Turning the share's rows into encoder inputs, masked positions and their targets is the
    featurisation seam, an :class:`~sipt_lab.models.EncoderInputs` (``inputs``). Token-id rows
    (:class:`TokenRows`, text encoders) are encoded here, in up to ``max_buckets`` sub-batches of
    similar length (see :func:`~sipt_lab.models.buckets.length_buckets`), each padded only to its own longest member; every
    sample is encoded alone in its row, so the result is that of one pass over the whole batch padded
    to its longest (bar dropout draws and float rounding), at a fraction of the padding. Any other
    inputs (a PyG ``Batch`` of masked graphs for a GIN) encode themselves (``inputs.encode``).
    ``inputs`` may also be the text encoders' ``(n, T)`` token id tensor, with ``lengths`` ``(n,)``
    and ``mask_id``, which make its :class:`TokenRows`. With ``normalize`` the objectives see the
    L2-normalised embeddings: the vector an encoder whose output is normalised writes.
    """

    def __init__(self, inputs, lengths: np.ndarray | None, objectives: list[tuple[float, Objective]], device: torch.device,
                 amp_dtype: torch.dtype | None = None, mask_id: int = 1, place: Distributed = Distributed(), max_buckets: int = 4,
                 normalize: bool = False) -> None:
        self.inputs = TokenRows(inputs, lengths, mask_id) if isinstance(inputs, torch.Tensor) else inputs
        self.tokens = isinstance(self.inputs, TokenRows)
        self.lengths = self.inputs.lengths
        self.mask_id = self.inputs.mask_id if self.tokens else mask_id
        self.max_buckets = max_buckets
        self.objectives = objectives
        self.device = device
        self.amp_dtype = amp_dtype
        self.place = place
        self.normalize = normalize
        self.needs_pairs = any(objective.needs_pairs for _, objective in objectives)
        self.needs_mlm = any(objective.needs_mlm for _, objective in objectives)

    def losses(self, encoder: nn.Module, batch: PretrainBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """``(loss to back-propagate, (1 + terms,) detached batch losses)``.

        The back-propagated loss is this process's: sharded terms count ``world`` times, because
        DDP averages gradients over the processes.
        """
        n_rows, rows, nodes, mask, replacement = self.layout(batch)
        if not self.tokens:  # samples that featurise themselves (graphs): no replacement codes or sites
            with self.autocast():
                embeddings, logits, targets = self.inputs.encode(encoder, nodes, mask, self.needs_mlm)
                return self.combine(batch, self._gather(embeddings, n_rows) if self.needs_pairs else embeddings, logits, targets)
        own = batch.inputs  # the seeds' own rows (segment pairs) instead of their samples' tokens
        all_ids, index = (self.inputs.ids, nodes) if own is None else (torch.as_tensor(own.ids), rows)
        lengths = self.row_lengths(batch, rows, nodes)
        buckets = length_buckets(lengths, self.max_buckets)
        with self.autocast():
            embeddings, logits, targets, sites = [], [], [], []
            for bucket in buckets:
                width = int(lengths[bucket].max())
                inputs = all_ids[torch.as_tensor(index[bucket], device=all_ids.device), :width].to(self.device)
                types = {} if own is None else {"token_types": self._tensor(own.token_types[index[bucket], :width])}
                if self.needs_mlm:
                    positions, original = self.mask_inputs(inputs, mask[bucket, :width], replacement[bucket, :width])
                    targets.append(original)
                    masked_rows, masked_cols = np.nonzero(mask[bucket, :width])
                    sites.append(np.column_stack([nodes[bucket][masked_rows], masked_cols]))
                    bucket_embeddings, bucket_logits = encoder.embed_and_masked_logits(inputs, positions, **types)
                    logits.append(bucket_logits)
                else:
                    bucket_embeddings = encoder.embed(inputs, **types)
                embeddings.append(bucket_embeddings)
            embeddings = torch.cat(embeddings)
            if len(buckets) > 1:
                embeddings = embeddings[self._tensor(np.argsort(np.concatenate(buckets)))]
            relations = None if own is None or own.relations is None else self._tensor(own.relations[rows])
            return self.combine(batch, self._gather(embeddings, n_rows) if self.needs_pairs else embeddings,
                                torch.cat(logits) if self.needs_mlm else None, torch.cat(targets) if self.needs_mlm else None,
                                np.concatenate(sites) if self.needs_mlm else None, relations)

    def autocast(self) -> contextlib.AbstractContextManager:
        """The step's autocast context (a no-op in fp32)."""
        return torch.autocast(self.device.type, dtype=self.amp_dtype, enabled=self.amp_dtype is not None)

    def layout(self, batch: PretrainBatch) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """This process's rows of ``batch``: ``(n_rows, rows, nodes, mask, replacement)``.

        ``n_rows`` is the rows the step encodes over all processes (every sample when ``L_SI`` needs
        pairs, else the seeds); ``rows`` ``(R,)`` this process's share of them and ``nodes`` their
        samples; ``mask`` ``(R, L)`` bool MLM mask and ``replacement`` ``(R, L)`` int64 replacement
        codes (only seeds are masked). A batch with its own input rows (``batch.inputs``: segment
        pairs) encodes its seeds only.
        """
        if batch.inputs is not None and self.needs_pairs:
            raise SiptError("a batch with its own input rows encodes only its seeds; its method cannot use L_SI pairs")
        n_rows = len(batch.nodes) if self.needs_pairs else batch.n_seeds
        rows = np.arange(self.place.rank, n_rows, self.place.world)
        nodes = batch.nodes[rows]
        mask = np.zeros((len(rows), max(self.row_lengths(batch, rows, nodes).max(), batch.mask.shape[1])), dtype=bool)
        replacement = np.full(mask.shape, REPLACE_WITH_MASK, dtype=np.int64)
        seeds = rows < batch.n_seeds
        mask[np.flatnonzero(seeds), : batch.mask.shape[1]] = batch.mask[rows[seeds]]
        if batch.replacement is not None:
            replacement[np.flatnonzero(seeds), : batch.mask.shape[1]] = batch.replacement[rows[seeds]]
        return n_rows, rows, nodes, mask, replacement

    def row_lengths(self, batch: PretrainBatch, rows: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """``(R,)`` tokens of each encoded row: its sample's, or its own row's (``batch.inputs``)."""
        return self.lengths[nodes] if batch.inputs is None else batch.inputs.lengths[rows]

    def mask_inputs(self, inputs: torch.Tensor, mask: np.ndarray, replacement: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Apply the MLM mask to ``(R, W)`` ``inputs`` in place.

        Args:
            mask: ``(R, W)`` bool, the positions to predict; replacement: ``(R, W)`` their codes.

        Returns:
            ``(M,)`` flat positions into ``R * W`` (row-major) and ``(M,)`` the original ids there.
        """
        width = inputs.shape[1]
        masked_rows, masked_cols = np.nonzero(mask)
        positions = self._tensor(masked_rows * width + masked_cols)
        return positions, replace_masked(inputs, positions, self._tensor(replacement[masked_rows, masked_cols]), self.mask_id)

    def combine(self, batch: PretrainBatch, embeddings: torch.Tensor, logits: torch.Tensor | None,
                targets: torch.Tensor | None, sites: np.ndarray | None = None,
                relations: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The objectives on one step's ``(n_rows, H)`` embeddings and ``(M, V)`` MLM logits at the
        ``(M,)`` targets (``(M, 2)`` ``sites``: sample and column of each; ``relations``: the seeds'
        pair relations): ``(loss to back-propagate, (1 + terms,) detached batch losses)``."""
        if self.normalize:
            embeddings = F.normalize(embeddings.float(), dim=-1)
        inputs = ObjectiveInputs(embeddings, self._tensor(batch.positive_pairs), self._tensor(batch.negative_pairs),
                                 logits, targets, int(batch.mask.sum()), sites, relations, batch.n_seeds)
        with self.autocast():
            terms = [objective(inputs) for _, objective in self.objectives]
        world = self.place.world
        backward = sum(w * (world * t if o.sharded else t) for (w, o), t in zip(self.objectives, terms))
        values = torch.stack([t.detach().float() for t in terms])
        if world > 1:
            sharded = torch.tensor([o.sharded for _, o in self.objectives], device=values.device)
            summed = values * sharded
            dist.all_reduce(summed)
            values = torch.where(sharded, summed, values)
        weights = torch.tensor([w for w, _ in self.objectives], device=values.device)
        return backward, torch.cat([(weights * values).sum().view(1), values])

    def _gather(self, local: torch.Tensor, n_rows: int) -> torch.Tensor:
        """``(n_rows, H)`` embeddings of the whole batch from every process's ``(share, H)``,
        with gradients flowing back to each share."""
        world = self.place.world
        if world == 1:
            return local
        from torch.distributed.nn.functional import all_gather

        size = -(-n_rows // world)
        parts = all_gather(torch.nn.functional.pad(local, (0, 0, 0, size - len(local))))
        shares = [np.arange(rank, n_rows, world) for rank in range(world)]
        stacked = torch.cat([part[: len(share)] for part, share in zip(parts, shares)])
        return stacked[self._tensor(np.argsort(np.concatenate(shares)))]

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(array, device=self.device)


def replace_masked(inputs: torch.Tensor, positions: torch.Tensor, codes: torch.Tensor, mask_id: int | torch.Tensor) -> torch.Tensor:
    """Replace the tokens of ``inputs`` at its ``(M,)`` flat ``positions`` in place, as their ``(M,)``
    replacement ``codes`` say (:data:`~sipt_lab.training.sampler.REPLACE_WITH_MASK`: ``mask_id``, an
    int or ``(M,)`` ids; :data:`~sipt_lab.training.sampler.KEEP_TOKEN`: unchanged; else that token
    id); returns the ``(M,)`` original ids there (the MLM targets)."""
    flat = inputs.view(-1)
    original = flat[positions]
    flat[positions] = torch.where(codes == REPLACE_WITH_MASK, mask_id, torch.where(codes == KEEP_TOKEN, original, codes))
    return original


class TokenRows:
    """Text encoders' :class:`~sipt_lab.models.EncoderInputs`: every sample's token ids in one padded
    ``(n, T)`` tensor, ``lengths`` ``(n,)`` tokens each (special tokens included); each batch is
    gathered where ``ids`` lives and moved to ``device`` (default: ``ids``'s). The trainer's
    :class:`_Step` encodes them (masking, replacement, length buckets).
    """

    def __init__(self, ids: torch.Tensor, lengths: np.ndarray, mask_id: int, device: torch.device | None = None) -> None:
        self.ids = ids
        self.lengths = np.asarray(lengths)
        self.mask_id = mask_id
        self.device = ids.device if device is None else torch.device(device)

    def batch(self, nodes: np.ndarray) -> torch.Tensor:
        """``(k, T_k)`` unmasked ids of the samples ``nodes`` ``(k,)`` on ``device``, cut to their longest."""
        rows = torch.as_tensor(nodes, device=self.ids.device)
        return self.ids[rows, : int(self.lengths[nodes].max())].to(self.device)


def encoder_inputs(tokenizer: Tokenizer, samples: list, device: torch.device):
    """The featurisation seam: ``samples`` as the :class:`~sipt_lab.models.EncoderInputs` that
    ``tokenizer`` makes (``tokenizer.inputs(samples, device)``, e.g. graphs for a GIN), or, for a
    text tokenizer without that method, its token-id rows (:class:`TokenRows`, kept on the CPU,
    each batch moved to ``device``)."""
    make = getattr(tokenizer, "inputs", None)
    if make is not None:
        return make(samples, device)
    ids, lengths = tokenizer.encode(list(samples))
    return TokenRows(torch.as_tensor(ids), lengths, tokenizer.mask_id, device=device)


def _make_optimizer(params, lr: float, weight_decay: float, fused: bool, foreach: bool | None = None) -> torch.optim.AdamW:
    """AdamW; ``fused`` updates all parameters in one kernel, ``foreach`` in one op per step of the
    update over all of them. The trainer fuses on CUDA only: on CPU the per-parameter loop measured
    3-14 % faster for the small presets (benchmarks/bench_training.py --ablation); a batched
    training's few stacked parameters update faster ``foreach`` (benchmarks/RESULTS.md)."""
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, fused=fused, foreach=foreach)


@dataclass
class _State:
    """Everything a checkpoint holds, and the checks that a checkpoint fits the current run."""

    trainable: nn.Module
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    history: torch.Tensor
    config: TrainConfig
    source: dict
    tokenizer: Tokenizer
    cuda_devices: list

    def identity(self) -> dict:
        run = {k: v for k, v in config_to_dict(self.config).items() if k not in _RESUMABLE_CHANGES}
        return {"train": run, "encoder": self.source, "tokenizer": self.tokenizer.to_dict()}

    def save(self, path: Path, step: int) -> None:
        module = self.trainable.module if isinstance(self.trainable, DistributedDataParallel) else self.trainable
        payload = {
            "step": step,
            "identity": json.dumps(self.identity(), sort_keys=True),
            "modules": module.state_dict(),
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
        try:
            payload = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as error:  # a truncated or foreign file: say which, never a traceback
            raise SiptError(f"checkpoint {path} cannot be read ({type(error).__name__}); delete it to start afresh") from None
        stored = json.loads(payload["identity"])
        differences = _differences(stored, self.identity())
        if differences:
            raise SiptError(
                f"checkpoint {path} was made by another configuration (differs in {', '.join(differences)}); "
                "use the same settings, or start afresh in another output directory"
            )
        step = int(payload["step"])
        if step > self.config.steps:
            raise SiptError(f"checkpoint {path} is at step {step}, beyond steps={self.config.steps}; raise steps")
        module = self.trainable.module if isinstance(self.trainable, DistributedDataParallel) else self.trainable
        module.load_state_dict(payload["modules"])
        self.optimizer.load_state_dict(payload["optimizer"])
        self.scaler.load_state_dict(payload["scaler"])
        self.history[:step] = payload["history"].to(self.history.device)
        torch.set_rng_state(payload["torch_rng"])
        for device, rng in zip(self.cuda_devices, payload["cuda_rng"]):
            torch.cuda.set_rng_state(rng, device)
        return step


def _differences(stored: dict, current: dict, prefix: str = "") -> list[str]:
    """Dotted names of the fields whose values differ between two nested dicts."""
    names = []
    for key in sorted(set(stored) | set(current)):
        a, b = stored.get(key), current.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            names += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            names.append(f"{prefix}{key}")
    return names


def _check_finite(history: torch.Tensor, start: int, stop: int, names: list[str]) -> np.ndarray:
    """History rows ``start..stop-1`` as numpy; SiptError at the first non-finite one."""
    values = history[start:stop].cpu().numpy()
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        terms = ", ".join(f"{name}={value:.4g}" for name, value in zip(names, values[row]))
        raise SiptError(f"non-finite loss at step {start + row} ({terms}); lower lr, check the inputs, or use precision fp32")
    return values


def embed(
    encoder: nn.Module,
    tokenizer: Tokenizer,
    texts: list[str],
    batch_size: int = 256,
    device: str | torch.device | None = None,
) -> np.ndarray:
    """``(n, H)`` float32 embeddings of ``texts`` (eval mode, no gradients, unmasked); ``texts`` are
    whatever samples ``tokenizer`` featurises (:func:`encoder_inputs`: texts, or graphs for a GIN).

    The vector is the encoder's ``output_embeddings`` when it has one (a sentence-transformers
    checkpoint's normalised pooling), else ``embed``. Samples are batched by length so each batch
    is padded only to its own longest member. ``device`` defaults to the encoder's.
    """
    device = next(encoder.parameters()).device if device is None else resolve_device(device)
    encoder = encoder.to(device)
    vectors = getattr(encoder, "output_embeddings", encoder.embed)
    inputs = encoder_inputs(tokenizer, list(texts), device)
    order = np.argsort(inputs.lengths, kind="stable")
    out = np.empty((len(texts), encoder.hidden_size), dtype=np.float32)
    with evaluating(encoder), torch.inference_mode():
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            out[rows] = vectors(inputs.batch(rows)).float().cpu().numpy()
    return out
