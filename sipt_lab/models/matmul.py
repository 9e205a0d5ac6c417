"""Batched matrix products in whichever of two equivalent layouts BLAS computes faster.

``A @ B`` equals ``(Bᵀ @ Aᵀ)ᵀ``. With MKL on one thread, a product whose result has few columns is
several times slower than the same product computed transposed, as a result with few rows: compare
``(364, 27, 27) @ (364, 27, 5)`` with ``(364, 5, 27) @ (364, 27, 27)``, or a linear layer's input
gradient ``(10, 1870, 30) @ (10, 30, 10)`` with its transpose (``python benchmarks/bench_matmul.py``;
numbers in benchmarks/RESULTS.md, "Batched training"). Tiny models are full of such products: 5-wide attention
heads, 10-wide hidden states, and the gradients of every linear layer. :func:`matmul` computes the
forward product and both gradients each in its faster layout; the result is the same up to float
rounding, and may be a transposed (non-contiguous) view.
"""

from __future__ import annotations

import torch

#: A result at most this many columns wide (and with more rows than columns) is computed transposed.
#: The narrower the result, the larger the gain; in a batched training step 16 beat both 8 and 32 (the
#: transposed result is a non-contiguous view, which costs a copy where it is reshaped;
#: benchmarks/RESULTS.md).
NARROW = 16


def product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for ``(..., M, K)`` and ``(..., K, N)``, computed transposed when the result is narrow
    (no autograd of its own: for gradients computed by hand; :func:`matmul` differentiates)."""
    rows, columns = a.shape[-2], b.shape[-1]
    if columns <= NARROW and columns < rows:
        return _multiply(b.mT, a.mT).mT
    return _multiply(a, b)


def _multiply(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b``, by ``torch.mm`` / ``torch.bmm`` for 2-D / 3-D operands: ``@`` first expands and
    reshapes its operands for broadcasting: a few view ops per call, which a tiny model's step makes
    hundreds of (benchmarks/RESULTS.md, "Batched training")."""
    if a.dim() == b.dim() == 3:
        return torch.bmm(a, b)
    if a.dim() == b.dim() == 2:
        return torch.mm(a, b)
    return a @ b


class _Matmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        # under autocast the product runs in its dtype, as torch.matmul's would, and so do the
        # gradients (autocast is off in the backward pass); each gradient leaves in its input's dtype
        device = a.device.type
        ctx.dtypes = (a.dtype, b.dtype, None if bias is None else bias.dtype)
        ctx.bias_shape = None if bias is None else bias.shape
        if torch.is_autocast_enabled(device):
            dtype = torch.get_autocast_dtype(device)
            a, b = a.to(dtype), b.to(dtype)
        ctx.save_for_backward(a, b)
        out = product(a, b)
        return out if bias is None else out.add_(bias)  # in place: the product is ours, a fresh tensor

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        a, b = ctx.saved_tensors
        a_dtype, b_dtype, bias_dtype = ctx.dtypes
        grad = grad.to(a.dtype)
        grad_a = product(grad, b.mT).to(a_dtype) if ctx.needs_input_grad[0] else None
        grad_b = product(a.mT, grad).to(b_dtype) if ctx.needs_input_grad[1] else None
        grad_bias = grad.sum_to_size(ctx.bias_shape).to(bias_dtype) if ctx.needs_input_grad[2] else None
        return grad_a, grad_b, grad_bias


def matmul(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``a @ b + bias`` (``(..., M, K)`` by ``(..., K, N)``, equal batch shapes; ``bias`` broadcast to
    the ``(..., M, N)`` result and added in place, without a second result-sized tensor) with the
    product and both gradients each computed in the faster of its two layouts."""
    return _Matmul.apply(a, b, bias)
