"""Figure 5b at the paper's CLIQUES settings on a GPU: the step of one tiny model, the batched
training of the whole figure, eager against ``torch.compile`` and CUDA graphs, and (``--full``) the
figure itself.

Run as ``python benchmarks/bench_fig5b_gpu.py --device cuda --out DIR [--full]`` (or ``--device cpu
--steps 5 --warmup 2`` to try it on a CPU).

The models are the Figure 5b grid's (``paper`` preset: hidden 10 x 2 layers, 8,000 steps; CLIQUES at
every noise rate, ``--seeds`` seeds): each seed's LM arm (one model for all its noise rates) and
one SIPT arm per noise rate, K = 18 for 3 seeds, in one batched training as ``figures --batched``
plans it on a GPU. Every measurement drives the steps of
:func:`sipt_lab.training.trainer.stacked_training` (or :func:`sipt_lab.training.pretrain`) itself:
``--warmup`` steps first (compilation and CUDA-graph recording happen there), then up to
``--steps`` timed steps, stopped early after ``--budget-s`` seconds, with the device synchronised
around them. The rows:

* (b) ``fig5b``: the K-model training on ``--device`` and on the CPU (one core, ``--threads``);
* (a) ``one model``: one SIPT model (seed 0, the first noise rate) trained alone, through
  :func:`~sipt_lab.training.pretrain` (marginal step: ``(run of warmup + steps) - (run of warmup)``,
  per step) and as a stack of one, on ``--device`` and on the CPU;

each eager and with each ``--compile`` mode on ``--device`` (``cudagraphs``, whole steps recorded as
CUDA graphs: CUDA only), in order of importance, ``torch.compile``'s inductor rows last (their
compilation is the longest warm-up).

Each row gives the wall ms per step and per model-step and the training's 8,000 steps at that rate
(set-up and evaluation not included). A row that fails prints its error and the run goes on; rows
not started before ``--total-budget-s`` are skipped (a row started before may overrun by its
compilation). The table is also written to ``<out>/timings.csv`` after every row. With ``--full``
the whole Figure 5b then runs (``sipt-lab figures --only fig5b --preset paper --families cliques
--batched --executor serial --compile MODE``, the fastest mode of the (b) rows on ``--device`` or
``--full-compile``) into ``<out>/fig5b``; its wall time and AUROC per noise rate and arm are printed
(skipped when the (b) estimate is over ``--full-budget-s``).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import sys
import time
import traceback
from pathlib import Path

import torch
import torch._dynamo

from sipt_lab.core.fileio import write_text_atomic
from sipt_lab.models import CharInit
from sipt_lab.studies.paper.figure5 import figure5_configs
from sipt_lab.studies.paper.figure_options import FigureOptions
from sipt_lab.studies.simulation.stacked_cells import batched_runs, plan_trainings
from sipt_lab.training import pretrain
from sipt_lab.training.loop import optimiser_steps
from sipt_lab.training.step import set_learning_rate
from sipt_lab.training.train_config import lr_factor
from sipt_lab.training.trainer import stacked_training

COLUMNS = (
    "part",
    "what",
    "device",
    "compile",
    "models",
    "steps_timed",
    "warmup_s",
    "step_ms",
    "model_step_ms",
    "steps_8000_s",
    "last_loss",
    "error",
)


def say(message: str) -> None:
    print(message, flush=True)


def figure_runs(seeds: int, device: str) -> tuple[list, CharInit, int]:
    """The batched runs of the Figure 5b grid (paper preset, CLIQUES, every noise rate) on ``device``,
    their encoder source and the preset's steps."""
    options = FigureOptions(seeds=seeds, families=("cliques",), preset="paper", batched=True, executor="serial")
    configs = [
        dataclasses.replace(config, train=dataclasses.replace(config.train, device=device))
        for config in figure5_configs(options)
    ]
    plan = plan_trainings(configs, "serial", {})
    if len(plan) != 1:
        say(f"note: the grid plans {len(plan)} trainings; timing the first")
    _, _, runs = batched_runs(plan[0])
    return runs, CharInit(configs[0].encoder, configs[0].tokenizer), configs[0].train.steps


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_stack(runs: list, source: CharInit, compile: str, args: argparse.Namespace) -> dict:
    """Warm-up, then timed steps of the stacked training of ``runs``: the row's measured fields."""
    stack = stacked_training(runs, source, compile)
    step, config, device = stack.step, runs[0].config, stack.step.device
    step.train()
    scaler = torch.amp.GradScaler(device.type, enabled=False)
    steps = optimiser_steps(step, stack.samplers, config, stack.optimizer, scaler)
    values = None

    def one(index: int) -> list:
        set_learning_rate(stack.optimizer, config.lr * lr_factor(config, index))
        return next(steps)

    began = time.perf_counter()
    for index in range(args.warmup):
        values = one(index)
    synchronize(device)
    warmup_s = time.perf_counter() - began
    began, done = time.perf_counter(), 0
    while done < args.steps and time.perf_counter() - began < args.budget_s:
        values = one(args.warmup + done)
        done += 1
    synchronize(device)
    seconds = time.perf_counter() - began
    steps.close()  # stops a recorded stack's batch workers
    last = float(torch.stack([run[0] for run in values]).mean()) if values else float("nan")
    return {
        "models": len(stack.models),
        "steps_timed": done,
        "warmup_s": warmup_s,
        "seconds": seconds,
        "last_loss": last,
    }


def time_pretrain(run, source: CharInit, device: str, args: argparse.Namespace) -> dict:
    """One model through :func:`pretrain`: the marginal step of ``warmup + steps`` over ``warmup`` steps."""
    config = dataclasses.replace(run.config, device=device, log_every=10**6)
    timings = {}
    for steps in (args.warmup, args.warmup + args.steps):
        began = time.perf_counter()
        result = pretrain(run.texts, run.graph, dataclasses.replace(config, steps=max(steps, 1)), source)
        synchronize(torch.device(device))
        timings[steps] = time.perf_counter() - began
        if timings[steps] > args.budget_s:
            say(f"  pretrain of {steps} steps took {timings[steps]:.1f} s, over --budget-s; stopping this row")
            break
    done = args.steps if len(timings) == 2 else 0
    seconds = timings.get(args.warmup + args.steps, float("nan")) - timings[args.warmup]
    return {
        "models": 1,
        "steps_timed": done,
        "warmup_s": timings[args.warmup],
        "seconds": seconds,
        "last_loss": float(result.history["loss"][-1]),
    }


class Table:
    """The rows so far, printed and written to ``<out>/timings.csv`` after each."""

    def __init__(self, out: Path, train_steps: int) -> None:
        self.rows, self.path, self.train_steps = [], out / "timings.csv", train_steps

    def add(self, part: str, what: str, device: str, compile: str, measure) -> None:
        row = dict.fromkeys(COLUMNS, "")
        row.update(part=part, what=what, device=device, compile=compile)
        say(f"[{time.strftime('%H:%M:%S')}] {part}: {what} on {device}, compile {compile} ...")
        try:
            measured = measure()
            step_ms = 1000 * measured["seconds"] / measured["steps_timed"] if measured["steps_timed"] else float("nan")
            row.update(
                models=measured["models"],
                steps_timed=measured["steps_timed"],
                warmup_s=round(measured["warmup_s"], 2),
                step_ms=round(step_ms, 3),
                model_step_ms=round(step_ms / measured["models"], 3),
                steps_8000_s=round(step_ms * self.train_steps / 1000, 1),
                last_loss=round(measured["last_loss"], 5),
            )
        except Exception as error:  # noqa: BLE001 - one failed variant must not stop the benchmark
            traceback.print_exc()
            row["error"] = f"{type(error).__name__}: {error}".replace("\n", " ")[:300]
        finally:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            torch._dynamo.reset()
        self.rows.append(row)
        say("  " + ", ".join(f"{k}={row[k]}" for k in COLUMNS[4:] if row[k] != ""))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(self.rows)
        write_text_atomic(self.path, buffer.getvalue())

    def print(self) -> None:
        say(
            f"\n{'part':<5} {'what':<28} {'device':<6} {'compile':<10} {'K':>3} {'steps':>5} {'warm-up s':>9} "
            f"{'step ms':>9} {'model-step ms':>13} {'8000 steps s':>12}  error"
        )
        for row in self.rows:
            say(
                f"{row['part']:<5} {row['what']:<28} {row['device']:<6} {row['compile']:<10} {row['models']!s:>3} "
                f"{row['steps_timed']!s:>5} {row['warmup_s']!s:>9} {row['step_ms']!s:>9} {row['model_step_ms']!s:>13} "
                f"{row['steps_8000_s']!s:>12}  {row['error']}"
            )

    def step_ms(self, part: str, what: str, device: str, compile: str) -> float:
        for row in self.rows:
            if (row["part"], row["what"], row["device"], row["compile"]) == (part, what, device, compile):
                return float(row["step_ms"]) if row["step_ms"] != "" else float("nan")
        return float("nan")


def ratios(table: Table, device: str, modes: list[str]) -> None:
    """Side-by-side ratios: the device against the CPU, compiled against eager."""
    say("\nratios (wall step, same process):")
    one_cpu = table.step_ms("a", "one model, pretrain", "cpu", "none")
    for what, what_modes in (("one model, pretrain", ["none"]), ("one model, stack of 1", modes)):
        for mode in what_modes:
            mine = table.step_ms("a", what, device, mode)
            say(f"  {what} on {device} ({mode}) / one model, pretrain on cpu: {mine / one_cpu:.2f}x the CPU's step")
    eager = table.step_ms("b", "fig5b", device, "none")
    for mode in modes[1:]:
        say(f"  fig5b on {device}: eager / {mode} = {eager / table.step_ms('b', 'fig5b', device, mode):.2f}x")
    if device != "cpu":
        say(f"  fig5b: cpu eager / {device} eager = {table.step_ms('b', 'fig5b', 'cpu', 'none') / eager:.2f}x")


def fastest(table: Table, device: str) -> str | None:
    measured = [
        (float(r["step_ms"]), r["compile"])
        for r in table.rows
        if r["part"] == "b" and r["device"] == device and r["step_ms"] != ""
    ]
    return min(measured)[1] if measured else None


def run_full(args: argparse.Namespace, table: Table, device: str) -> None:
    """The whole Figure 5b at the paper's settings with the fastest measured mode, timed."""
    from sipt_lab.studies.paper.figures import make_figures

    mode = args.full_compile or fastest(table, device) or "none"
    estimate = table.step_ms("b", "fig5b", device, mode) * (args.full_steps or table.train_steps) / 1000
    if estimate > args.full_budget_s:
        say(f"\n--full skipped: {mode} would train about {estimate:.0f} s, over --full-budget-s {args.full_budget_s}")
        return
    if device == "cpu" and torch.cuda.is_available():
        say("note: --full trains where the figure's configs say (auto: this machine's GPU)")
    options = FigureOptions(
        seeds=args.seeds,
        families=("cliques",),
        preset="paper",
        batched=True,
        executor="serial",
        compile=mode,
        steps=args.full_steps,
    )
    say(f"\n[{time.strftime('%H:%M:%S')}] --full: Figure 5b, compile {mode}, steps {args.full_steps or 'paper (8000)'}")
    began = time.perf_counter()
    try:
        written = make_figures(["fig5b"], args.out / "fig5b", options)
    except Exception:  # noqa: BLE001 - report and end
        traceback.print_exc()
        return
    say(
        f"Figure 5b wall time: {time.perf_counter() - began:.1f} s (compile {mode}, device {device}); wrote "
        + ", ".join(str(path) for paths in written.values() for path in paths)
    )
    with open(args.out / "fig5b" / "fig5b.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            say(
                f"  noise {float(row['noise']):.2f}: LM AUROC {float(row['lm_auroc_mean']):.3f} ± {float(row['lm_auroc_sd']):.3f}, "
                f"SIPT {float(row['sipt_auroc_mean']):.3f} ± {float(row['sipt_auroc_sd']):.3f} "
                f"(paper LM {row['paper_lm_auroc']}, SIPT {row['paper_sipt_auroc']})"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda or cpu (the CPU rows always run too)")
    parser.add_argument("--out", type=Path, required=True, help="directory of timings.csv (and fig5b/ with --full)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps first (compilation, graph recording)")
    parser.add_argument("--steps", type=int, default=200, help="timed steps per row (at most)")
    parser.add_argument("--budget-s", type=float, default=20.0, help="seconds of timed steps per row (at most)")
    parser.add_argument("--total-budget-s", type=float, default=110.0, help="start no row after this many seconds")
    parser.add_argument("--compile", nargs="+", default=["none", "cudagraphs", "compile"], help="modes to time")
    parser.add_argument(
        "--recompile-limit", type=int, default=4, help="torch.compile recompilations per function before eager"
    )
    parser.add_argument("--parts", nargs="+", default=["a", "b"], choices=["a", "b"], help="which rows (default both)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (the CPU rows: one core)")
    parser.add_argument("--full", action="store_true", help="then run the whole Figure 5b at the paper's settings")
    parser.add_argument("--full-compile", default=None, help="--full's mode (default: the fastest (b) row's)")
    parser.add_argument("--full-steps", type=int, default=None, help="--full's steps per arm (default: the paper's)")
    parser.add_argument("--full-budget-s", type=float, default=420.0, help="skip --full if its estimate is longer")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    torch._dynamo.config.recompile_limit = args.recompile_limit  # bounds a compiled row's warm-up
    device = args.device
    modes = ["none"] + [
        mode for mode in args.compile if mode not in ("none", "auto") and (mode != "cudagraphs" or device != "cpu")
    ]
    say(
        f"torch {torch.__version__}, device {device}"
        + (f" ({torch.cuda.get_device_name(0)})" if device != "cpu" and torch.cuda.is_available() else "")
        + f", python {sys.version.split()[0]}, modes {' '.join(modes)}"
    )
    began = time.perf_counter()
    runs, source, train_steps = {}, None, 8000
    for where in dict.fromkeys([device, "cpu"]):
        runs[where], source, train_steps = figure_runs(args.seeds, where)
    say(
        f"Figure 5b grid: {len(runs[device])} models (hidden {source.config.hidden} x {source.config.n_layers} layers), "
        f"{train_steps} steps each; set-up {time.perf_counter() - began:.1f} s"
    )
    table = Table(args.out, train_steps)
    sipt = {where: [next(run for run in group if run.config.lambda_si > 0)] for where, group in runs.items()}
    # the rows in order of importance (a tight --total-budget-s skips the last); inductor compiles last
    compiled = [mode for mode in modes if mode == "compile"]
    fast = [mode for mode in modes if mode not in compiled]
    rows = [("b", "fig5b", device, mode) for mode in fast]
    rows += [("a", "one model, pretrain", "cpu", "none")]
    rows += [("a", "one model, stack of 1", device, mode) for mode in fast]
    rows += [("a", "one model, pretrain", device, "none"), ("a", "one model, stack of 1", "cpu", "none")]
    rows += [("b", "fig5b", "cpu", "none")]
    rows += [
        (part, what, device, mode)
        for mode in compiled
        for part, what in (("b", "fig5b"), ("a", "one model, stack of 1"))
    ]

    def measure(part: str, what: str, where: str, mode: str):
        if what == "one model, pretrain":
            return lambda: time_pretrain(sipt[where][0], source, where, args)
        return lambda: time_stack(runs[where] if part == "b" else sipt[where], source, mode, args)

    plan = [(*row, measure(*row)) for row in dict.fromkeys(rows) if row[0] in args.parts]
    for part, what, where, mode, measure in plan:
        if time.perf_counter() - began > args.total_budget_s:
            say(f"skipped (over --total-budget-s): {part} {what} on {where}, compile {mode}")
            continue
        table.add(part, what, where, mode, measure)
    table.print()
    try:
        ratios(table, device, modes)
    except ZeroDivisionError:
        say("a step measured 0 ms: no ratios")
    say(f"benchmark wall time: {time.perf_counter() - began:.1f} s; table in {table.path}")
    if args.full:
        run_full(args, table, device)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
