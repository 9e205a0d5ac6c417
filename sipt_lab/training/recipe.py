"""What a pre-training method gives the one trainer: its encoder, its batches and its objectives.

:func:`~sipt_lab.training.pretrain` asks a :class:`Recipe` (``method=``) for three things after
the run's tokenizer exists: the encoder source (a method may need segment embeddings or extra
output rows), a batch sampler (``batch(step) -> PretrainBatch``, a pure function of the step) and
the weighted objectives. :class:`GraphRecipe` is LM / SIPT (``L_PT = (1 − λ)·L_M + λ·L_SI`` over
graph-aware batches), the trainer's default; :mod:`sipt_lab.training.methods` names the others.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models import CheckpointInit, EncoderSource, Tokenizer
from sipt_lab.objectives import Objective, build_objectives
from sipt_lab.training.sampler import MASK_UNITS, GraphBatchSampler, PretrainBatch
from sipt_lab.training.train_config import TrainConfig


class BatchSampler(Protocol):
    def batch(self, step: int) -> PretrainBatch:
        """Micro-batch ``step`` (deterministic in the step)."""


@dataclass
class Plan:
    """A run's batches and ``[(weight, objective)]`` (weight-0 terms left out)."""

    sampler: BatchSampler
    objectives: list[tuple[float, Objective]]


@dataclass(frozen=True)
class RunData:
    """What a recipe may read to plan a run.

    Attributes:
        texts: the ``n`` samples; graph: ``G_PT`` over them.
        tokenizer: the run's tokenizer; ids ``(n, L)`` and lengths ``(n,)`` its encoding of ``texts``.
        config: the run's TrainConfig; device: where training runs; source: the encoder source.
    """

    texts: list[str]
    graph: PretrainingGraph
    tokenizer: Tokenizer
    ids: np.ndarray
    lengths: np.ndarray
    config: TrainConfig
    device: torch.device
    source: EncoderSource


class Recipe(Protocol):
    def encoder_source(self, source: EncoderSource) -> EncoderSource:
        """The source this method trains (e.g. with segment embeddings); SiptError if unsupported."""

    def plan(self, data: RunData) -> Plan:
        """Batches and objectives for the run."""

    def describe(self) -> dict:
        """JSON identifying the method's settings (checkpoints compare it)."""


@dataclass(frozen=True)
class GraphRecipe:
    """LM (``lambda_si = 0``) and SIPT: :class:`GraphBatchSampler` batches, ``build_objectives``."""

    def encoder_source(self, source: EncoderSource) -> EncoderSource:
        return source

    def plan(self, data: RunData) -> Plan:
        config = data.config
        objectives = build_objectives(config.lambda_si, config.loss, config.loss_params)
        return Plan(graph_sampler(data, objectives), objectives)

    def describe(self) -> dict:
        return {"recipe": "graph"}


def graph_sampler(data: RunData, objectives: list[tuple[float, Objective]]) -> GraphBatchSampler:
    """The run's :class:`GraphBatchSampler` (its config's batches and masking), sampling graph
    partners and pairs only when one of ``objectives`` reads them."""
    config, tokenizer = data.config, data.tokenizer
    return GraphBatchSampler(
        data.graph,
        data.lengths,
        config.batch_size,
        config.mask_prob,
        config.seed,
        config.pairs,
        suffix_tokens=tokenizer.suffix_tokens,
        negatives=config.negatives,
        mask_replacement=config.mask_replacement,
        vocab_size=tokenizer.vocab_size,
        units=MASK_UNITS[config.mask_unit](tokenizer, data.texts),
        reads_pairs=any(objective.needs_pairs for _, objective in objectives),
    )


def checkpoint_config(source: CheckpointInit) -> dict:
    """The ``config.json`` of a Hugging Face checkpoint source; SiptError when it is unreadable."""
    try:
        return json.loads((Path(source.path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise SiptError(
            f"{source.path} has no readable config.json; pass a Hugging Face checkpoint directory"
        ) from None


def hidden_size(source: EncoderSource) -> int:
    """The hidden size ``H`` of the encoder ``source`` will build: a fresh encoder's config (char, GIN),
    a checkpoint's ``config.json``; a source that wraps another (``base``) has its base's."""
    source = getattr(source, "base", source)
    return int(checkpoint_config(source)["hidden_size"]) if isinstance(source, CheckpointInit) else source.config.hidden
