"""Masked language modelling ``L_M``: cross-entropy of the original token at each masked position."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def masked_lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over masked positions; 0 (with a graph) when nothing is masked.

    Args:
        logits: ``(M, V)`` MLM logits at the masked positions.
        targets: ``(M,)`` int64 original token ids there.
    """
    if len(targets) == 0:
        return logits.sum() * 0.0
    return F.cross_entropy(logits.float(), targets)
