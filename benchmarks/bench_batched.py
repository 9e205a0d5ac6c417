"""Batched training (K models as one stacked model) against K separate runs, side by side.

Run as ``python benchmarks/bench_batched.py [--preset paper] [--family cliques] [--seeds 3] [--steps 200] [--repeats 3]``.

One condition of a figure grid: ``--seeds`` datasets of ``--family`` (noise ``--noise``) under
``--preset``, each trained as two arms (LM, λ = 0, and SIPT), so K = 2 x seeds models of one shape.
Each way trains every model for ``--steps`` steps, in this process, with the same torch threads
(``--threads``, default 1):

* ``per-model``: :func:`sipt_lab.training.pretrain` once per model (what a grid cell runs);
* ``batched``: :func:`sipt_lab.training.trainer.pretrain_batched` on all K at once;
* ``batched, K = n`` (``--sizes n ...``): :func:`pretrain_batched` on the first ``n`` of the runs
  (needs ``n`` <= 2 x seeds), to show how the cost per model-step depends on how many models share
  a step (what :func:`sipt_lab.studies.simulation.stacked_cells.plan_trainings` relies on);
* ``--profile N``: the torch profiler over N steps of the batched training, the ops taking the
  most CPU time, as shares of the step (where the remaining time goes);
* ``vmap`` (``--vmap N``): ``torch.func.vmap`` over ``functional_call`` of K stacked encoders, N
  forward and backward passes of the encoder trunk only (no MLM head, objectives or optimiser: a
  lower bound on a vmap trainer's step), at the batched trainer's shapes; its row is the time of
  one such pass per model (no set-up).

Prints a table of the time per model-step, as wall time and as this process's CPU time (on a
shared machine the wall clock measures the other jobs too; with one thread the CPU time is the work
done): the marginal cost of a step, ``(time of N steps - time of 1 step) / (N - 1)`` per model, which
leaves out the set-up that a run pays once (tokenizers, datasets, initialisation) and is what a run
of thousands of steps pays per step, and beside it the whole N-step run's time per model-step, set-up
included. ``--repeats R`` measures every way R times, interleaved, and reports the median (these
machines are noisy). Then the ratio per-model / batched of the marginal step (target for the
``paper`` preset: >= 3x), and the largest difference of the losses between the two ways over every step.
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

from sipt_lab.models import CharInit
from sipt_lab.models.encoder import TransformerEncoder
from sipt_lab.studies.simulation.config import ARMS, simulation_config
from sipt_lab.synthetic import build_dataset
from sipt_lab.training import pretrain
from sipt_lab.training.trainer import BatchedRun, pretrain_batched


def condition_runs(args: argparse.Namespace) -> tuple[list[BatchedRun], object]:
    """The K runs of one condition (seeds x arms) and their encoder source (sizes and vocabulary)."""
    runs, encoder = [], None
    for seed in range(args.seeds):
        config = simulation_config(
            args.family,
            seed=seed,
            steps=args.steps,
            preset=args.preset,
            graph_options={"noise": args.noise},
            train_options={"device": args.device},
        )
        dataset = build_dataset(config.graph)
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
        pretrain_batched(short, encoder)
    events = sorted(profiler.key_averages(), key=lambda event: event.self_cpu_time_total, reverse=True)
    total = sum(event.self_cpu_time_total for event in events)
    print(f"profile of {steps} batched steps (setup included), share of self CPU time:")
    for event in events[:top]:
        print(f"  {event.key[:60]:<60} {100 * event.self_cpu_time_total / total:5.1f} %")


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _timed(train, runs: list[BatchedRun], steps: int):
    """``train(runs with steps)``'s result and its (wall, CPU) seconds."""
    start = _clocks()
    result = train([dataclasses.replace(run, config=dataclasses.replace(run.config, steps=steps)) for run in runs])
    return result, tuple(now - then for now, then in zip(_clocks(), start))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="paper")
    parser.add_argument("--family", default="cliques")
    parser.add_argument("--noise", type=float, default=0.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument(
        "--repeats", type=int, default=1, help="measure every way this many times, interleaved; report medians"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads for every way (default 1: a grid's local workers use one each)",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help="cpu or cuda (default: cpu; on cuda the CPU-time columns count the host's share)",
    )
    parser.add_argument("--vmap", type=int, default=0, metavar="N", help="also time N steps of the vmap variant")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="also profile N batched steps")
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="*",
        default=[],
        metavar="K",
        help="also time batched trainings of the first K runs (K <= 2 x seeds)",
    )
    args = parser.parse_args()
    if args.steps < 2:
        parser.error("--steps must be at least 2 (the marginal step is measured against a 1-step run)")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    torch.set_num_threads(args.threads)
    runs, encoder = condition_runs(args)
    k = len(runs)
    for size in args.sizes:
        if not 1 <= size <= k:
            parser.error(f"--sizes {size}: use 1..{k} (2 x --seeds)")
    ways = {
        "per-model": (runs, lambda rs: [pretrain(r.texts, r.graph, r.config, encoder) for r in rs]),
        "batched": (runs, lambda rs: pretrain_batched(rs, encoder)),
    }
    ways.update({f"batched, K = {size}": (runs[:size], ways["batched"][1]) for size in args.sizes})
    pretrain_batched(runs[:1], encoder)  # one-off warm-up (kernels, thread pools) outside every timing
    times = {
        name: [] for name in ways
    }  # per repeat: (marginal wall, marginal CPU, whole wall, whole CPU) per model-step
    results = {}
    for _ in range(args.repeats):
        for name, (way_runs, train) in ways.items():
            _, one = _timed(train, way_runs, 1)
            results[name], whole = _timed(train, way_runs, args.steps)
            models = len(way_runs)
            times[name].append(
                [(w - o) / (models * (args.steps - 1)) for w, o in zip(whole, one)]
                + [t / (models * args.steps) for t in whole]
            )
    median = {name: np.median(np.array(values), axis=0) * 1000 for name, values in times.items()}
    if args.vmap:
        start = _clocks()
        vmap_seconds(runs, encoder, args.vmap)
        per_pass = [(now - then) / (k * args.vmap) * 1000 for now, then in zip(_clocks(), start)]
        median["vmap (trunk only)"] = np.array(per_pass + per_pass)  # no set-up: its step and run columns are alike
    difference = max(
        np.abs(a.history["loss"] - b.history["loss"]).max() for a, b in zip(results["per-model"], results["batched"])
    )
    print(
        f"{args.family}, preset {args.preset}, encoder hidden {encoder.config.hidden} x {encoder.config.n_layers} layers, "
        f"{encoder.vocabulary.kind} vocabulary, "
        f"batch {runs[0].config.batch_size}, pairs {runs[0].config.pairs}, K = {k} models "
        f"({args.seeds} seeds x {len(ARMS)} arms), {args.steps} steps each, torch threads {torch.get_num_threads()}, "
        f"{os.cpu_count()} cores, device {args.device}, median of {args.repeats} repeat(s)"
    )
    print(
        f"{'way':<20} {'step wall ms':>13} {'step CPU ms':>12} {'ratio (wall)':>13} {'ratio (CPU)':>12} "
        f"{'run wall ms':>12} {'run CPU ms':>11}"
    )
    base = median["per-model"]
    for name, (step_wall, step_cpu, run_wall, run_cpu) in median.items():
        print(
            f"{name:<20} {step_wall:13.2f} {step_cpu:12.2f} {base[0] / step_wall:13.2f} {base[1] / step_cpu:12.2f} "
            f"{run_wall:12.2f} {run_cpu:11.2f}"
        )
    print(
        f"per model-step; step = marginal cost of one more step ((N-step run - 1-step run) / (N - 1)); run = the "
        f"{args.steps}-step run / steps, set-up included; ratio = per-model step / this way's step; 'vmap' times "
        f"{args.vmap} trunk passes only; largest |loss, batched - per-model| over every step of the {k} models: {difference:.2e}"
    )
    if args.profile:
        print_profile(runs, encoder, args.profile)
    print(
        f"one condition at 8,000 steps (linear in steps), wall / CPU time: batched {median['batched'][0] * k * 8:.0f} / "
        f"{median['batched'][1] * k * 8:.0f} s, per-model {base[0] * k * 8:.0f} / {base[1] * k * 8:.0f} s"
    )


if __name__ == "__main__":
    main()
