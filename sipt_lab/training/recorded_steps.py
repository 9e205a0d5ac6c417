"""Whole optimiser steps as CUDA graphs: :class:`RecordedSteps`.

A tiny model's step is hundreds of small kernels, and on a GPU launching them costs far more host
time than running them. A step of a fixed-shape stack (:class:`~sipt_lab.training.stacked_step.StackedStep`
with ``compile`` ``cudagraphs``) is recorded once per input shape as one CUDA graph: the forward
passes, backward passes and the fused AdamW update of :func:`~sipt_lab.training.step.train_step`,
on inputs held in fixed device buffers. Each later step with that shape only copies its host
arrays into the buffers (one copy per dtype) and replays the graph: one launch. This is PyTorch's
"whole network capture" (torch.cuda.graph): recording runs the step a few times on a side stream
first (to allocate the optimiser state and the autograd workspaces), so the parameters and the
optimiser state are put back afterwards, and the run trains exactly the steps it would eagerly.

The learning rate is a tensor on the GPU (the recorded update reads it there), set in place each
step by :func:`~sipt_lab.training.step.set_learning_rate`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import torch

from sipt_lab.core.errors import SiptError
from sipt_lab.training.stacked_step import StackBatch, StackedStep, StackLayout, StackTensors
from sipt_lab.training.step import train_step

logger = logging.getLogger(__name__)

#: Eager steps run on a side stream before a recording (they allocate what the graph then reuses).
WARMUP_STEPS = 3


class RecordedSteps:
    """``train_step(step, optimizer, scaler, micro)`` of a fixed-shape :class:`StackedStep` (on
    CUDA, fp32 or bf16) as replayed CUDA graphs, one per distinct tuple of micro-batch layouts.
    ``optimizer`` must be a capturable AdamW (``make_optimizer(..., capturable=True)``); call with a
    step's micro-batches as :meth:`StackedStep.prepare` made them."""

    def __init__(self, step: StackedStep, optimizer: torch.optim.Optimizer) -> None:
        if not step.records_steps or step.device.type != "cuda":
            raise SiptError("recorded steps need a fixed-shape stack on a CUDA GPU (compile cudagraphs)")
        if not all(group.get("capturable") for group in optimizer.param_groups):
            raise SiptError("recorded steps need a capturable optimiser: make_optimizer(..., capturable=True)")
        self.step, self.optimizer = step, optimizer
        for group in optimizer.param_groups:  # the recorded update reads the rate on the GPU
            group["lr"] = torch.as_tensor(float(group["lr"]), dtype=torch.float32, device=step.device)
        self._recorded: dict[tuple[StackLayout, ...], tuple[torch.cuda.CUDAGraph, list[StackTensors], list]] = {}

    def __call__(self, batches: Sequence[StackBatch]) -> list[torch.Tensor]:
        """One optimiser step over the prepared micro-batches ``batches``; returns per run its
        ``(1 + terms,)`` losses, buffers that the next call overwrites (copy them before)."""
        key = tuple(batch.layout for batch in batches)
        if key not in self._recorded:
            self._recorded[key] = self._record([batch.to(self.step.device) for batch in batches])
            logger.info("recorded a CUDA graph of the step for input shape %d", len(self._recorded))
        graph, inputs, outputs = self._recorded[key]
        for buffers, batch in zip(inputs, batches):
            buffers.tensors.refill(batch.arrays)
        graph.replay()
        return outputs

    def _record(self, inputs: list[StackTensors]) -> tuple[torch.cuda.CUDAGraph, list[StackTensors], list]:
        """Record the step on ``inputs`` (device buffers that later steps refill), leaving the
        parameters and optimiser state as they were."""
        scaler = torch.amp.GradScaler("cuda", enabled=False)
        parameters = [p for group in self.optimizer.param_groups for p in group["params"]]
        saved = [p.detach().clone() for p in parameters]
        state = {p: {name: value.clone() for name, value in self.optimizer.state[p].items()} for p in parameters}
        side = torch.cuda.Stream(self.step.device)
        side.wait_stream(torch.cuda.current_stream(self.step.device))
        with torch.cuda.stream(side):
            for _ in range(WARMUP_STEPS):
                train_step(self.step, self.optimizer, scaler, inputs)
        torch.cuda.current_stream(self.step.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        self.optimizer.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            outputs = train_step(self.step, self.optimizer, scaler, inputs)
        with torch.no_grad():
            for parameter, value in zip(parameters, saved):
                parameter.copy_(value)
            for parameter in parameters:  # a fresh state is zeros (AdamW's own initial state)
                for name, value in self.optimizer.state[parameter].items():
                    value.copy_(state[parameter][name]) if name in state[parameter] else value.zero_()
        return graph, inputs, outputs
