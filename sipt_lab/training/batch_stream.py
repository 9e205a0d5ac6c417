"""A training's batches, step after step, drawn ahead by worker processes: :func:`batch_stream`.

A recorded step (:class:`~sipt_lab.training.recorded_steps.RecordedSteps`) costs the GPU a few
milliseconds and the host more: drawing every run's batch (seeds, masks, pairs: numpy calls of
microseconds each, per run) is the larger part. Batches are a pure function of the step, so worker
processes can draw them ahead, in step order, while this process prepares and replays; what
crosses between processes is the samplers' small :class:`~sipt_lab.training.sampler.PretrainBatch`
arrays (tens of kilobytes per run), not the prepared step's megabytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from sipt_lab.training.recipe import BatchSampler
from sipt_lab.training.sampler import PretrainBatch

#: Steps each worker draws ahead of the training.
PREFETCH_STEPS = 16


def batch_stream(
    samplers: Sequence[BatchSampler], grad_accum: int, start: int, stop: int, workers: int = 0
) -> Iterator[list[list[PretrainBatch]]]:
    """Steps ``start..stop-1``'s micro-batches in order: per step ``grad_accum`` lists of one
    :class:`PretrainBatch` per sampler (micro-batch ``j`` of step ``i`` is each sampler's batch
    ``i * grad_accum + j``), drawn by ``workers`` processes ahead of the caller (0: here, when asked)."""
    draws = _Draws(list(samplers), grad_accum)
    if workers == 0:
        return (draws[index] for index in range(start, stop))
    loader = torch.utils.data.DataLoader(
        draws,
        batch_size=None,
        sampler=range(start, stop),
        num_workers=workers,
        collate_fn=_unchanged,
        prefetch_factor=PREFETCH_STEPS,
    )
    return iter(loader)


class _Draws(torch.utils.data.Dataset):
    """Step index -> its micro-batches (what :func:`batch_stream`'s workers draw)."""

    def __init__(self, samplers: list[BatchSampler], grad_accum: int) -> None:
        self.samplers, self.grad_accum = samplers, grad_accum

    def __getitem__(self, index: int) -> list[list[PretrainBatch]]:
        return [
            [sampler.batch(index * self.grad_accum + k) for sampler in self.samplers] for k in range(self.grad_accum)
        ]


def _unchanged(micro: list[list[PretrainBatch]]) -> list[list[PretrainBatch]]:
    """The loader's collate function: batches pass as they are (numpy arrays, not tensors)."""
    return micro
