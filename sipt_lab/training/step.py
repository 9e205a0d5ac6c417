"""The step abstraction: one micro-batch of every run through its model(s) to ``(loss, per-run values)``.

The training loop (:mod:`sipt_lab.training.loop`) drives a :class:`Step` and never asks how many
models it holds:

* :class:`RunLoss` is one run's loss of one micro-batch (:class:`PretrainBatch`) on an encoder:
  its rows (this process's share under data parallelism), their masking and replacement, length
  buckets, the objectives and their weighted sum. Every step below uses one per run.
* :class:`ModelStep` is one encoder and its objectives' parameters, whose ``forward`` is its
  :class:`RunLoss` (so ``DistributedDataParallel`` can wrap the whole differentiable step).
* :class:`~sipt_lab.training.stacked_step.StackedStep` is K same-shaped character encoders
  stacked on a model axis, each run with its own :class:`RunLoss`, all in one forward pass.

A step's ``forward(batches)`` takes one :class:`PretrainBatch` per run and returns the loss to
back-propagate (the sum over runs) and, per run, its ``(1 + terms,)`` detached losses (weighted
total, then each term). ``frozen()`` guards parameter slices the optimiser step must not move.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from sipt_lab.core.errors import SiptError
from sipt_lab.models.buckets import length_buckets
from sipt_lab.objectives import Objective, ObjectiveInputs
from sipt_lab.training.inputs import TokenRows
from sipt_lab.training.runtime import SINGLE_PROCESS, Distributed
from sipt_lab.training.sampler import KEEP_TOKEN, REPLACE_WITH_MASK, PretrainBatch


class Step(nn.Module):
    """One or several models and their objectives, trained together by one optimiser.

    ``runs`` holds each run's :class:`RunLoss` (its objectives, masking, device and autocast dtype);
    subclasses hold the parameters and implement :meth:`forward`.
    """

    #: True when the loop records each step as a CUDA graph and replays it (every step's shapes
    #: come from a few fixed ones; :class:`~sipt_lab.training.recorded_steps.RecordedSteps`).
    records_steps: bool = False

    def __init__(self, runs: Sequence[RunLoss]) -> None:
        super().__init__()
        self.runs = list(runs)

    @property
    def names(self) -> list[list[str]]:
        """Per run, its loss history's columns: ``["loss", *terms, "lr"]``."""
        return [["loss"] + [objective.name for _, objective in run.objectives] + ["lr"] for run in self.runs]

    @property
    def device(self) -> torch.device:
        return self.runs[0].device

    @property
    def amp_dtype(self) -> torch.dtype | None:
        return self.runs[0].amp_dtype

    def forward(self, batches: Sequence[PretrainBatch]) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """One micro-batch of each run (``batches[k]`` is run ``k``'s): ``(loss to back-propagate,
        per run (1 + terms,) detached losses)``."""
        raise NotImplementedError

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """Around the optimiser step: restores any parameter slices it must leave unchanged (none here)."""
        yield


class ModelStep(Step):
    """One encoder and the objectives' own parameters (e.g. LinkBERT's relation head), whose
    ``forward([batch])`` is the run's :class:`RunLoss` of that micro-batch."""

    def __init__(self, encoder: nn.Module, loss: RunLoss) -> None:
        super().__init__([loss])
        self.encoder = encoder
        self.objectives = nn.ModuleList(objective for _, objective in loss.objectives)

    def forward(self, batches: Sequence[PretrainBatch]) -> tuple[torch.Tensor, list[torch.Tensor]]:
        (batch,) = batches
        loss, values = self.runs[0].losses(self.encoder, batch)
        return loss, [values]


class RunLoss:
    """The loss of one micro-batch (:class:`PretrainBatch`) on this process's share of its rows.

    Turning the share's rows into encoder inputs, masked positions and their targets is the
    featurisation seam, an :class:`~sipt_lab.models.EncoderInputs` (``inputs``). Token-id rows
    (:class:`~sipt_lab.training.inputs.TokenRows`, text encoders) are encoded here, in up to
    ``max_buckets`` sub-batches of similar length (:func:`~sipt_lab.models.buckets.length_buckets`),
    each padded only to its own longest member; every sample is encoded alone in its row, so the
    result is that of one pass over the whole batch padded to its longest (bar dropout draws and
    float rounding), at a fraction of the padding. Any other inputs (a PyG ``Batch`` of masked
    graphs for a GIN) encode themselves (``inputs.encode``). ``inputs`` may also be the text
    encoders' ``(n, T)`` token id tensor, with ``lengths`` ``(n,)`` and ``mask_id``, which make its
    ``TokenRows``. With ``normalize`` the objectives see the L2-normalised embeddings: the vector an
    encoder whose output is normalised writes. ``place``: this process's share of the rows under
    data parallelism; sharded terms are scaled so that DDP's gradient mean is the batch's gradient.
    """

    def __init__(
        self,
        inputs,
        lengths: np.ndarray | None,
        objectives: list[tuple[float, Objective]],
        device: torch.device,
        amp_dtype: torch.dtype | None = None,
        mask_id: int = 1,
        place: Distributed = SINGLE_PROCESS,
        max_buckets: int = 4,
        normalize: bool = False,
    ) -> None:
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
                return self.combine(
                    batch,
                    self._gather(embeddings, n_rows) if self.needs_pairs else embeddings,
                    logits,
                    targets,
                    samples=batch.nodes[:n_rows] if self.needs_pairs else nodes,
                )
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
            return self.combine(
                batch,
                self._gather(embeddings, n_rows) if self.needs_pairs else embeddings,
                torch.cat(logits) if self.needs_mlm else None,
                torch.cat(targets) if self.needs_mlm else None,
                np.concatenate(sites) if self.needs_mlm else None,
                relations,
                batch.nodes[:n_rows] if self.needs_pairs else nodes,
            )

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

    def mask_inputs(
        self, inputs: torch.Tensor, mask: np.ndarray, replacement: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Apply the MLM mask to ``(R, W)`` ``inputs`` in place.

        Args:
            mask: ``(R, W)`` bool, the positions to predict; replacement: ``(R, W)`` their codes.

        Returns:
            ``(M,)`` flat positions into ``R * W`` (row-major) and ``(M,)`` the original ids there.
        """
        width = inputs.shape[1]
        masked_rows, masked_cols = np.nonzero(mask)
        positions = self._tensor(masked_rows * width + masked_cols)
        return positions, replace_masked(
            inputs, positions, self._tensor(replacement[masked_rows, masked_cols]), self.mask_id
        )

    def combine(
        self,
        batch: PretrainBatch,
        embeddings: torch.Tensor,
        logits: torch.Tensor | None,
        targets: torch.Tensor | None,
        sites: np.ndarray | None = None,
        relations: torch.Tensor | None = None,
        samples: np.ndarray | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The objectives on one step's ``(n_rows, H)`` embeddings and ``(M, V)`` MLM logits at the
        ``(M,)`` targets (``(M, 2)`` ``sites``: sample and column of each; ``relations``: the seeds'
        pair relations; ``samples``: the sample of each embedding row): ``(loss to back-propagate,
        (1 + terms,) detached batch losses)``."""
        if self.normalize:
            embeddings = F.normalize(embeddings.float(), dim=-1)
        inputs = ObjectiveInputs(
            embeddings,
            self._tensor(batch.positive_pairs),
            self._tensor(batch.negative_pairs),
            logits,
            targets,
            int(batch.mask.sum()),
            sites,
            relations,
            batch.n_seeds,
            samples,
            batch.nodes[: batch.n_seeds],
        )
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


def replace_masked(
    inputs: torch.Tensor | np.ndarray,
    positions: torch.Tensor | np.ndarray,
    codes: torch.Tensor | np.ndarray,
    mask_id: int | torch.Tensor | np.ndarray,
) -> torch.Tensor | np.ndarray:
    """Replace the tokens of ``inputs`` at its ``(M,)`` flat ``positions`` in place, as their ``(M,)``
    replacement ``codes`` say (:data:`~sipt_lab.training.sampler.REPLACE_WITH_MASK`: ``mask_id``, an
    int or ``(M,)`` ids; :data:`~sipt_lab.training.sampler.KEEP_TOKEN`: unchanged; else that token
    id); returns the ``(M,)`` original ids there (the MLM targets). All torch tensors, or all numpy
    arrays (a stacked step's host half), ``inputs`` contiguous."""
    where = np.where if isinstance(inputs, np.ndarray) else torch.where
    flat = inputs.reshape(-1)  # a view: the replacement writes into inputs
    original = flat[positions]
    flat[positions] = where(codes == REPLACE_WITH_MASK, mask_id, where(codes == KEEP_TOKEN, original, codes))
    return original


def train_step(
    trainable: nn.Module,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    micro: Sequence[Sequence[PretrainBatch]],
) -> list[torch.Tensor]:
    """One optimiser step over the micro-batches ``micro`` (``micro[j][k]``: micro-batch ``j`` of
    run ``k``; gradients averaged over them, and over processes under DDP, which synchronises on
    the last one only). ``trainable`` is a :class:`Step`, or one wrapped in ``DistributedDataParallel``.

    Returns:
        per run, its ``(1 + terms,)`` detached losses (weighted total, then each term), averaged
        over the micro-batches.
    """
    step = trainable.module if isinstance(trainable, DistributedDataParallel) else trainable
    optimizer.zero_grad(set_to_none=True)
    reported = None
    for k, batches in enumerate(micro):
        last = k == len(micro) - 1
        syncing = contextlib.nullcontext() if last or step is trainable else trainable.no_sync()
        with syncing:
            loss, values = trainable(batches)
            scaler.scale(loss / len(micro)).backward()
        shares = [run_values / len(micro) for run_values in values]
        reported = shares if reported is None else [total + share for total, share in zip(reported, shares)]
    with step.frozen():
        scaler.step(optimizer)
    scaler.update()
    return reported


def make_optimizer(
    params, lr: float, weight_decay: float, fused: bool, foreach: bool | None = None, capturable: bool = False
) -> torch.optim.AdamW:
    """AdamW; ``fused`` updates all parameters in one kernel, ``foreach`` in one op per step of the
    update over all of them. A single model fuses on CUDA only (on a CPU the per-parameter loop is
    faster for the small presets); a stacked training's few large parameters update ``foreach``
    on a CPU (benchmarks/RESULTS.md). ``capturable`` (CUDA): an update a CUDA graph can record
    (:class:`~sipt_lab.training.recorded_steps.RecordedSteps`)."""
    return torch.optim.AdamW(
        params, lr=lr, weight_decay=weight_decay, fused=fused, foreach=foreach, capturable=capturable
    )


def set_learning_rate(optimizer: torch.optim.Optimizer, rate: float) -> None:
    """Set every parameter group's rate to ``rate``: in place where it is a tensor (a recorded step reads it there)."""
    for group in optimizer.param_groups:
        if isinstance(group["lr"], torch.Tensor):
            group["lr"].fill_(rate)
        else:
            group["lr"] = rate
