"""models.matmul: a @ b + bias and its gradients, whichever layout computes them."""

from __future__ import annotations

import pytest
import torch

from sipt_lab.models.matmul import NARROW, matmul


@pytest.mark.parametrize(
    "a_shape, b_shape, bias_shape, transposed",
    [
        ((3, 40, 7), (3, 7, 5), (3, 1, 5), True),  # narrow result: computed as (b^T a^T)^T
        ((3, 5, 7), (3, 7, 40), (3, 5, 1), False),  # wide result: as it is
        ((40, 7), (7, 5), (5,), True),
        ((6, 7), (7, NARROW + 1), None, False),
    ],
)
def test_matmul_equals_torch_in_value_and_gradients(a_shape, b_shape, bias_shape, transposed):
    torch.manual_seed(0)
    a, b = (
        torch.randn(a_shape, dtype=torch.float64, requires_grad=True),
        torch.randn(b_shape, dtype=torch.float64, requires_grad=True),
    )
    bias = None if bias_shape is None else torch.randn(bias_shape, dtype=torch.float64, requires_grad=True)
    inputs = [t for t in (a, b, bias) if t is not None]
    out = matmul(a, b, bias)
    assert out.is_contiguous() != transposed  # the transposed layout returns a transposed view
    want = a @ b + (0 if bias is None else bias)
    torch.testing.assert_close(out, want)
    grad = torch.randn(out.shape, dtype=torch.float64)
    for mine, theirs in zip(torch.autograd.grad(out, inputs, grad), torch.autograd.grad(want, inputs, grad)):
        torch.testing.assert_close(mine, theirs)
    assert torch.autograd.gradcheck(lambda *xs: matmul(*xs[:2], *xs[2:]), inputs)


def test_matmul_under_autocast_computes_in_its_dtype_and_returns_gradients_in_the_inputs():
    torch.manual_seed(0)
    a, b, bias = (torch.randn(shape, requires_grad=True) for shape in ((2, 30, 6), (2, 6, 4), (2, 1, 4)))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = matmul(a, b, bias)
    assert out.dtype == torch.bfloat16
    grads = torch.autograd.grad(out.float().square().sum(), (a, b, bias))
    want = torch.autograd.grad((a @ b + bias).square().sum(), (a, b, bias))
    for mine, theirs in zip(grads, want):
        assert mine.dtype == torch.float32
        torch.testing.assert_close(mine, theirs, rtol=0.05, atol=0.2)
