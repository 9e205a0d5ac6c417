"""Tokenizer and encoders.

The trainer and the evaluation talk to an encoder only through :class:`SequenceEncoder`, so a
Hugging Face model (wrap ``BertForMaskedLM``: embed = last hidden state at position 0, logits =
``.logits``) or a graph network can replace :class:`TransformerEncoder` without touching them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from sipt_lab.models.encoder import (
    ENCODER_PRESETS,
    EncoderConfig,
    TransformerEncoder,
    encoder_preset,
    load_pretrained,
    save_pretrained,
)
from sipt_lab.models.tokenizer import CLS_ID, MASK_ID, PAD_ID, SPECIAL_TOKENS, UNK_ID, CharTokenizer


@runtime_checkable
class SequenceEncoder(Protocol):
    """What the trainer needs from an encoder (besides being an ``nn.Module``).

    ``input_ids`` is always ``(B, L)`` integer token ids from :class:`CharTokenizer`: ``[CLS]``
    first, right-padded with ``PAD_ID``. ``H`` is ``hidden_size``, ``V`` the vocabulary size.
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


__all__ = [
    "CLS_ID",
    "ENCODER_PRESETS",
    "MASK_ID",
    "PAD_ID",
    "SPECIAL_TOKENS",
    "UNK_ID",
    "CharTokenizer",
    "EncoderConfig",
    "SequenceEncoder",
    "TransformerEncoder",
    "encoder_preset",
    "load_pretrained",
    "save_pretrained",
]
