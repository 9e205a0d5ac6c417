"""Masked language modelling ``L_M``: cross-entropy of the original token at each masked position."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def masked_lm_loss(logits: torch.Tensor, targets: torch.Tensor, count: int | None = None) -> torch.Tensor:
    """Cross-entropy summed over masked positions and divided by ``count`` (default ``M``: the
    mean); 0 (with a graph) when nothing is masked.

    Args:
        logits: ``(M, V)`` MLM logits at the masked positions.
        targets: ``(M,)`` int64 original token ids there.
        count: the batch's masked positions when these are one process's share of them.
    """
    if len(targets) == 0:
        return logits.sum() * 0.0
    return F.cross_entropy(logits.float(), targets, reduction="sum") / (len(targets) if count is None else count)
