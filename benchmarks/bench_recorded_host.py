"""The host half of a recorded training step, with and without worker processes drawing the batches.

A recorded step (``--compile cudagraphs``, :mod:`sipt_lab.training.recorded_steps`) replays one
CUDA graph; everything else is host work: every run's batch drawn (the samplers), prepared
(:class:`~sipt_lab.training.stacked_step.StackPreparer`) and copied into the recording's buffers.
On a GPU the step cannot be faster than this host work, so this benchmark times it on any machine
(no GPU needed: the buffers are on the CPU), for the Figure 5b grid (K = 18 tiny models, the paper's
CLIQUES settings): batches drawn in this process (``workers 0``) against drawn ahead by
``--workers`` processes (:func:`~sipt_lab.training.batch_stream.batch_stream`), rounds alternating,
same process, with torch's default threads (as a training runs). Prints host ms per step, its
8,000-step total and the ratio.

Run as ``python benchmarks/bench_recorded_host.py [--steps 300] [--rounds 3] [--workers N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_fig5b_gpu import figure_runs  # noqa: E402

from sipt_lab.training.batch_stream import batch_stream  # noqa: E402
from sipt_lab.training.loop import draw_workers  # noqa: E402
from sipt_lab.training.trainer import stacked_training  # noqa: E402


def host_ms_per_step(stack, steps: int, workers: int) -> float:
    """Median-free mean host ms of ``steps`` steps: draw, prepare, refill (buffers per layout)."""
    preparer, buffers = stack.step.preparer, {}
    stream = batch_stream(stack.samplers, 1, 0, steps, workers)
    first = next(stream)  # workers start (or the first draw) before the clock
    began = time.perf_counter()
    for micro in stream:
        for batch in [preparer(batches) for batches in micro]:
            if batch.layout not in buffers:
                buffers[batch.layout] = batch.to(torch.device("cpu"))
            buffers[batch.layout].tensors.refill(batch.arrays)
    del first
    return 1000 * (time.perf_counter() - began) / (steps - 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="steps per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of each way")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: the loop's)")
    args = parser.parse_args(argv)
    workers = draw_workers() if args.workers is None else args.workers
    runs, source, train_steps = figure_runs(3, "cpu")
    stack = stacked_training(runs, source, "none")
    stack.step.preparer.fixed = True  # the recorded stack's host half (its shapes fixed)
    times = {0: [], workers: []}
    for _ in range(args.rounds):
        for way in times:
            times[way].append(host_ms_per_step(stack, args.steps, way))
    print(f"Figure 5b grid: K = {len(stack.models)} models, {args.steps} steps x {args.rounds} rounds per way")
    print(f"{'drawn by':<22} {'host ms/step (median)':>22} {'rounds':>24} {'8000 steps s':>13}")
    for way, values in times.items():
        label = "this process" if way == 0 else f"{way} worker process{'es' if way > 1 else ''}"
        rounds = " ".join(f"{v:.2f}" for v in values)
        median = statistics.median(values)
        print(f"{label:<22} {median:>22.2f} {rounds:>24} {median * train_steps / 1000:>13.1f}")
    if workers:
        print(f"ratio (this process / workers): {statistics.median(times[0]) / statistics.median(times[workers]):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
