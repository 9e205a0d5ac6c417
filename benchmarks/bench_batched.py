"""Batched training (K models as one stacked model) against K separate runs, side by side.

Run as ``python benchmarks/bench_batched.py [--preset paper] [--family cliques] [--seeds 3] [--steps 200]``.

One condition of a figure grid: ``--seeds`` datasets of ``--family`` (noise ``--noise``) under
``--preset``, each trained as two arms (LM, λ = 0, and SIPT), so K = 2 x seeds models of one shape.
Each way trains every model for ``--steps`` steps, in this process, with the same torch threads
(``--threads``, default 1):

* ``per-model``: :func:`sipt_lab.training.pretrain` once per model (what a grid cell runs);
* ``batched``: :func:`sipt_lab.training.batched.pretrain_batched` on all K at once;
* ``batched, K = n`` (``--sizes n ...``): :func:`pretrain_batched` on the first ``n`` of the runs
  (needs ``n`` <= 2 x seeds), to show how the cost per model-step depends on how many models share
  a step (what :func:`sipt_lab.experiments.batched.plan_trainings` relies on);
* ``--profile N``: the torch profiler over N steps of the batched training, the ops taking the
  most CPU time, as shares of the step (where the remaining time goes);
* ``vmap`` (``--vmap N``): ``torch.func.vmap`` over ``functional_call`` of K stacked encoders, N
  forward and backward passes of the encoder trunk only (no MLM head, objectives or optimiser: a
  lower bound on a vmap trainer's step), at the batched trainer's shapes; its time per step is
  scaled to ``--steps`` in the table.

Prints a table of the time per model-step (time / (K x steps), setup included), as wall time and as
this process's CPU time (on a shared machine the wall clock measures the other jobs too; with one
thread the CPU time is the work done), and the ratio per-model / batched (target for the ``paper``
preset: >= 3x), and the largest difference of the losses between the two ways over every step.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import time
import warnings

import numpy as np
import torch

from sipt_lab.experiments.simulate import ARMS, simulation_config
from sipt_lab.models import CharInit
from sipt_lab.models.encoder import TransformerEncoder
from sipt_lab.synthetic import build_dataset
from sipt_lab.training import pretrain
from sipt_lab.training.batched import BatchedRun, pretrain_batched


def condition_runs(args: argparse.Namespace) -> tuple[list[BatchedRun], object]:
    """The K runs of one condition (seeds x arms) and their encoder source (sizes and vocabulary)."""
    runs, encoder = [], None
    for seed in range(args.seeds):
        config = simulation_config(args.family, seed=seed, steps=args.steps, preset=args.preset,
                                   graph_options={"noise": args.noise}, train_options={"device": "cpu"})
        dataset = build_dataset(config.graph, progress=False)
        for arm in ARMS:
            train = dataclasses.replace(config.train, lambda_si=0.0 if arm == "lm" else config.train.lambda_si)
            runs.append(BatchedRun(dataset.sentences, dataset.graph, train))
        encoder = CharInit(config.encoder, config.tokenizer)
    return runs, encoder


def vmap_seconds(runs: list[BatchedRun], encoder, steps: int) -> float:
    """Wall time of ``steps`` vmap forward + backward passes of the K encoder trunks (whole batch)."""
    from torch.func import functional_call, stack_module_state, vmap

    class Trunk(torch.nn.Module):
        def __init__(self, inner: TransformerEncoder) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.inner.hidden_states(ids)[:, 0]

    vocab = 128
    models = [Trunk(TransformerEncoder(dataclasses.replace(encoder.config, vocab_size=vocab))) for _ in runs]
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    rows = max(run.config.batch_size for run in runs)
    width = runs[0].config.max_len or 64
    ids = torch.randint(3, vocab, (len(runs), rows, width))
    ids[:, :, 0] = 2
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no batching rule for ... flash_attention ...: performance drop"
        for _ in range(steps):
            out = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)))(params, buffers, ids)
            out.square().mean().backward()
    return time.perf_counter() - start


def print_profile(runs: list[BatchedRun], encoder, steps: int, top: int = 10) -> None:
    """The ``top`` ops by self CPU time over a ``steps``-step batched training, as shares of it."""
    from torch.profiler import ProfilerActivity, profile

    short = [dataclasses.replace(run, config=dataclasses.replace(run.config, steps=steps)) for run in runs]
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        pretrain_batched(short, encoder, progress=False)
    events = sorted(profiler.key_averages(), key=lambda event: event.self_cpu_time_total, reverse=True)
    total = sum(event.self_cpu_time_total for event in events)
    print(f"profile of {steps} batched steps (setup included), share of self CPU time:")
    for event in events[:top]:
        print(f"  {event.key[:60]:<60} {100 * event.self_cpu_time_total / total:5.1f} %")


def _since(clocks: tuple[float, float]) -> tuple[float, float]:
    """(wall, CPU) seconds since ``clocks`` = (perf_counter, process_time)."""
    return time.perf_counter() - clocks[0], time.process_time() - clocks[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="paper")
    parser.add_argument("--family", default="cliques")
    parser.add_argument("--noise", type=float, default=0.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads for every way (default 1: a grid's local workers use one each)")
    parser.add_argument("--vmap", type=int, default=0, metavar="N", help="also time N steps of the vmap variant")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="also profile N batched steps")
    parser.add_argument("--sizes", type=int, nargs="*", default=[], metavar="K",
                        help="also time batched trainings of the first K runs (K <= 2 x seeds)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    runs, encoder = condition_runs(args)
    k = len(runs)
    clocks = time.perf_counter(), time.process_time()
    separate = [pretrain(run.texts, run.graph, run.config, encoder, progress=False) for run in runs]
    per_model = _since(clocks)
    clocks = time.perf_counter(), time.process_time()
    batched = pretrain_batched(runs, encoder, progress=False)
    rows = [("per-model", per_model), ("batched", _since(clocks))]
    for size in args.sizes:
        if not 1 <= size <= k:
            parser.error(f"--sizes {size}: use 1..{k} (2 x --seeds)")
        clocks = time.perf_counter(), time.process_time()
        pretrain_batched(runs[:size], encoder, progress=False)
        rows.append((f"batched, K = {size}", tuple(t * k / size for t in _since(clocks))))
    if args.vmap:
        clocks = time.perf_counter(), time.process_time()
        vmap_seconds(runs, encoder, args.vmap)
        rows.append(("vmap (trunk only)", tuple(t * args.steps / args.vmap for t in _since(clocks))))
    difference = max(np.abs(a.history["loss"] - b.history["loss"]).max() for a, b in zip(separate, batched))
    print(f"{args.family}, preset {args.preset}, encoder hidden {encoder.config.hidden} x {encoder.config.n_layers} layers, "
          f"{encoder.vocabulary.kind} vocabulary, "
          f"batch {runs[0].config.batch_size}, pairs {runs[0].config.pairs}, K = {k} models "
          f"({args.seeds} seeds x {len(ARMS)} arms), {args.steps} steps each, torch threads {torch.get_num_threads()}, "
          f"{os.cpu_count()} cores")
    print(f"{'way':<20} {'wall s':>8} {'CPU s':>8} {'wall ms / model-step':>21} {'CPU ms / model-step':>20} "
          f"{'ratio (wall)':>13} {'ratio (CPU)':>12}")
    for name, (wall, cpu) in rows:
        print(f"{name:<20} {wall:8.1f} {cpu:8.1f} {1000 * wall / (k * args.steps):21.2f} {1000 * cpu / (k * args.steps):20.2f} "
              f"{per_model[0] / wall:13.2f} {per_model[1] / cpu:12.2f}")
    print(f"'batched, K = n' rows are scaled to K = {k} models (time x {k} / n); "
          f"ratio = per-model time / this way's time; largest |loss, batched - per-model| over every step "
          f"of the {k} models: {difference:.2e}")
    if args.profile:
        print_profile(runs, encoder, args.profile)
    print(f"one condition at 8,000 steps (linear in steps), CPU time: batched {rows[1][1][1] / args.steps * 8000:.0f} s, "
          f"per-model {per_model[1] / args.steps * 8000:.0f} s")


if __name__ == "__main__":
    main()
