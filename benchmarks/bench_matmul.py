"""The two layouts of a batched matrix product, side by side: why ``sipt_lab.models.matmul`` exists.

Run as ``python benchmarks/bench_matmul.py [--repeats 100] [--threads 1]``.

``A @ B`` equals ``(Bᵀ @ Aᵀ)ᵀ``; BLAS may compute one much faster than the other. For the products
of a ``paper-small`` batched step (5-wide attention heads over length buckets, 10-wide hidden states
of 10 models x 1,870 packed tokens, the gradients of each) this prints the median time of ``A @ B``
as written (``direct``), computed transposed (``transposed``), and by :func:`sipt_lab.models.matmul.matmul`
(which picks one by the result's shape), in microseconds, and the ratio direct / matmul.
"""

from __future__ import annotations

import argparse
import time

import torch

from sipt_lab.models.matmul import matmul

#: (what, A's shape, B's shape): forward products and gradients of one batched paper-small step.
PRODUCTS = [
    ("attention p @ v", (172, 64, 64), (172, 64, 5)),
    ("attention p @ v", (364, 27, 27), (364, 27, 5)),
    ("attention q @ k^T", (172, 64, 5), (172, 5, 64)),
    ("attention grad p^T @ g", (172, 64, 64), (172, 64, 5)),
    ("linear 10 -> 30", (10, 1870, 10), (10, 10, 30)),
    ("linear 10 -> 10", (10, 1870, 10), (10, 10, 10)),
    ("linear grad input 30 -> 10", (10, 1870, 30), (10, 30, 10)),
    ("linear grad weight", (10, 10, 1870), (10, 1870, 30)),
    ("MLM head grad input", (1, 280, 1000), (1, 1000, 10)),
]


def _median_us(function, repeats: int) -> float:
    for _ in range(5):
        function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(
        f"median of {args.repeats} calls, torch threads {torch.get_num_threads()}, {torch.backends.cpu.get_cpu_capability()}"
    )
    print(
        f"{'product':<28} {'A':>15} {'B':>15} {'direct us':>10} {'transposed us':>14} {'matmul us':>10} {'direct/matmul':>14}"
    )
    for what, a_shape, b_shape in PRODUCTS:
        a, b = torch.randn(a_shape), torch.randn(b_shape)
        direct = _median_us(lambda a=a, b=b: a @ b, args.repeats)
        transposed = _median_us(lambda a=a, b=b: (b.mT @ a.mT).mT, args.repeats)
        chosen = _median_us(lambda a=a, b=b: matmul(a, b), args.repeats)
        print(
            f"{what:<28} {str(a_shape):>15} {str(b_shape):>15} {direct:10.0f} {transposed:14.0f} {chosen:10.0f} {direct / chosen:14.2f}"
        )


if __name__ == "__main__":
    main()
