"""Masked language modelling ``L_M``: cross-entropy of the original token at each masked position."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from sipt_lab.models.matmul import product


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


def linear_masked_lm_loss(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    targets: torch.Tensor,
    count: int | torch.Tensor | None = None,
    padded: bool = False,
) -> torch.Tensor:
    """:func:`masked_lm_loss` of the decoder's logits ``hidden @ weight.T + bias``, without keeping them.

    The ``(M, V)`` logits (a megabyte per model at 250 masked tokens and a 1,000-token vocabulary)
    are made, turned into the loss *and its gradients*, and freed within the forward pass, so the
    backward pass only scales three small saved gradients (Liger Kernel's fused linear
    cross-entropy does the same on GPUs). Separate logits, log-probabilities and their gradients
    travel through memory several times, and in a batched step of many models they no longer fit in
    cache (benchmarks/RESULTS.md, "Batched training"). Same value and gradients up to float
    rounding; differentiable once.

    Args:
        hidden: ``(M, H)`` the MLM transform's output at the masked positions.
        weight: ``(V, H)`` decoder weight; bias: ``(V,)`` decoder bias.
        targets: ``(M,)`` int64 original token ids.
        count: as in :func:`masked_lm_loss`, or a scalar tensor.
        padded: rows whose target is negative are padding and add nothing (shapes fixed from step
            to step); give ``count``, the real rows.
    """
    if len(targets) == 0:
        return (hidden.sum() + weight.sum() + bias.sum()) * 0.0
    loss = _LinearCrossEntropy.apply(hidden, weight, bias, targets, padded)
    return loss / (len(targets) if count is None else count)


class _LinearCrossEntropy(torch.autograd.Function):
    """Summed cross-entropy of ``hidden @ weight.T + bias`` with gradients computed in the forward pass."""

    @staticmethod
    def forward(
        ctx, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, targets: torch.Tensor, padded: bool
    ) -> torch.Tensor:
        device = hidden.device.type
        # under autocast the products run in its dtype (as the decoder's Linear would) and the softmax in fp32
        dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else hidden.dtype
        x, w = hidden.to(dtype), weight.to(dtype)
        logits = torch.addmm(bias.to(dtype), x, w.T).float()
        probabilities = logits.softmax(-1)
        rows = torch.arange(len(targets), device=targets.device)
        real = targets >= 0 if padded else None
        targets = targets.clamp(min=0) if padded else targets
        # log-sum-exp = max logit - log(largest probability); that probability is >= 1/V, so it never underflows
        per_row = logits.amax(-1) - probabilities.amax(-1).log() - logits[rows, targets]
        loss = (per_row * real).sum() if padded else per_row.sum()
        probabilities[rows, targets] -= 1  # now d loss / d logits
        if padded:
            probabilities.mul_(real.unsqueeze(1))
        grad_logits = probabilities.to(dtype)
        ctx.save_for_backward(
            product(grad_logits, w).to(hidden.dtype),
            product(x.T, grad_logits).T.to(weight.dtype),
            probabilities.sum(0).to(bias.dtype),
        )
        return loss

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None, None]:
        grad_hidden, grad_weight, grad_bias = ctx.saved_tensors
        return grad_hidden * grad, grad_weight * grad, grad_bias * grad, None, None
