"""What the trainer needs of an encoder and of its inputs: :class:`SequenceEncoder` (besides being an
``nn.Module``) and :class:`EncoderInputs` (the featurisation seam), with :func:`evaluating`, the
one way to run a module in eval mode for a block.

The tokenizer's own protocol is :class:`~sipt_lab.models.tokenizer.Tokenizer`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch


@contextlib.contextmanager
def evaluating(module: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """``module`` in eval mode for the block, its train/eval mode restored afterwards (also on error)."""
    was_training = module.training
    module.eval()
    try:
        yield module
    finally:
        module.train(was_training)


@runtime_checkable
class SequenceEncoder(Protocol):
    """What the trainer needs from an encoder (besides being an ``nn.Module``).

    ``input_ids`` is always ``(B, L)`` integer token ids from the run's :class:`Tokenizer`:
    ``[CLS]`` first, right-padded with its ``pad_id``. ``H`` is ``hidden_size``, ``V`` the
    vocabulary size. An encoder may also define ``output_embeddings(input_ids)`` (the vector users
    get, e.g. normalised) and ``save(directory, tokenizer)``.
    """

    hidden_size: int

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """``(B, H)`` per-sample embeddings ``f(x)``."""

    def token_logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        """``(B, L, V)`` MLM logits."""

    def embed_and_masked_logits(
        self, input_ids: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``embed(input_ids)`` and ``token_logits(input_ids).reshape(B * L, V)[positions]`` from one
        forward pass (``positions``: ``(M,)`` flat indices); the trainer's MLM path calls this."""


class EncoderInputs(Protocol):
    """The featurisation seam between samples and an encoder (what the trainer, ``embed`` and
    fine-tuning index by sample number): ``TokenRows`` (:mod:`sipt_lab.training.inputs`) for text
    tokenizers, :class:`~sipt_lab.models.graph_encoder.GraphInputs` for graphs.

    ``lengths`` ``(n,)``: maskable positions per sample, position 0 never masked (``[CLS]``, or a
    graph's own slot); batches draw their MLM masks over them.
    """

    lengths: np.ndarray

    def batch(self, nodes: np.ndarray) -> Any:
        """The encoder's input for the samples ``nodes`` ``(k,)``, unmasked, on the device."""

    def encode(
        self, encoder: torch.nn.Module, nodes: np.ndarray, mask: np.ndarray, with_logits: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """``(embeddings (k, H), logits (M, V), targets (M,))`` of ``nodes`` with the ``M`` positions
        marked in ``mask`` ``(k, W)`` masked; logits and targets None unless ``with_logits``."""
