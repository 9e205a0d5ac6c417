"""``sipt-lab simulate``: wall time of the main job, and LM vs SIPT AUROC against the paper.

Run as ``python benchmarks/bench_simulate.py [--seeds 3] [--executor local] [--families ...]``.

1. Timing: ``sipt-lab simulate --graph torus --noise 0.1`` with default settings, run as a
   subprocess twice: cold (an empty topic cache, so the LDA is fitted) and warm (the topic model
   cached; a fresh result directory, so nothing else is reused). Targets: cold <= 180 s, warm <= 60 s.
2. Quality: the default simulate cell for each family (seeds 0..K-1, noise 0) through the sweep
   machinery, so finished cells in ``--cells`` are reused (the same cells as ``sipt-lab figures``),
   and a table of LOO and held-out 3-NN AUROC (mean ± sd over seeds) next to the paper's
   LM -> SIPT numbers. Goal: SIPT at or above the paper's value, LM near it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sipt_lab.core.stats import format_mean_sd
from sipt_lab.data.topics import CACHE_ENV
from sipt_lab.grid import run_grid
from sipt_lab.studies.paper.values import FAMILY_AUROC
from sipt_lab.studies.simulation.arms import simulate_seed
from sipt_lab.studies.simulation.config import simulation_config
from sipt_lab.studies.simulation.simulate import aggregate

MAIN_JOB = ["sipt-lab", "simulate", "--graph", "torus", "--noise", "0.1"]
TARGETS = {"cold": 180.0, "warm": 60.0}


def time_main_job(topic_cache: Path, out: Path) -> float:
    env = {**os.environ, CACHE_ENV: str(topic_cache)}
    start = time.perf_counter()
    subprocess.run([*MAIN_JOB, "--out", str(out)], env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def timing_table() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        cold = time_main_job(Path(tmp) / "cache", Path(tmp) / "cold")
        warm = time_main_job(Path(tmp) / "cache", Path(tmp) / "warm")
    rows = [f"{'run':<6} {'seconds':>8} {'target':>8}  met", "-" * 32]
    for name, seconds in (("cold", cold), ("warm", warm)):
        rows.append(f"{name:<6} {seconds:8.1f} {TARGETS[name]:8.0f}  {'yes' if seconds <= TARGETS[name] else 'NO'}")
    return f"`{' '.join(MAIN_JOB)}` (defaults, {os.cpu_count()} cores)\n" + "\n".join(rows)


def quality_table(families: list[str], seeds: int, executor: str, cells: Path) -> str:
    configs = [simulation_config(family, seed=seed) for family in families for seed in range(seeds)]
    start = time.perf_counter()
    results = run_grid(simulate_seed, configs, cells, executor=executor)
    seconds = time.perf_counter() - start
    rows = [
        f"{'graph':<13} {'LC':>5} {'LM LOO':>15} {'SIPT LOO':>15} {'LM held-out':>15} {'SIPT held-out':>15}"
        f" {'paper LM->SIPT':>15}  SIPT >= paper",
        "-" * 120,
    ]
    for family in families:
        summary = aggregate([cell.result for cell in results if cell.config.graph.family == family])
        lm, sipt = summary["methods"]["lm"], summary["methods"]["sipt"]
        paper = FAMILY_AUROC.get(family)
        verdict = "" if paper is None else ("yes" if np.mean(sipt["auroc"]) >= paper[1] else "NO")
        rows.append(
            f"{family:<13} {summary['local_consistency']:5.3f} {format_mean_sd(lm['auroc']):>15} {format_mean_sd(sipt['auroc']):>15}"
            f" {format_mean_sd(lm['heldout_auroc']):>15} {format_mean_sd(sipt['heldout_auroc']):>15}"
            f" {'' if paper is None else f'{paper[0]:.3f} -> {paper[1]:.3f}':>15}  {verdict}"
        )
    header = f"LOO / held-out 3-NN AUROC, mean ± sd over {seeds} seeds ({executor} executor, {seconds:.0f} s)"
    return header + "\n" + "\n".join(rows)


def grid_parser(description: str, *, families: bool = True) -> argparse.ArgumentParser:
    """The options of every benchmark over ``simulate`` cells: ``--seeds``, ``--executor``, ``--cells``
    (shared with ``sipt-lab figures``) and, with ``families``, ``--families``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--executor", default="local")
    parser.add_argument("--cells", type=Path, default=Path("paper_figures/out/cells"))
    if families:
        parser.add_argument("--families", nargs="+", default=list(FAMILY_AUROC))
    return parser


def main() -> None:
    parser = grid_parser(__doc__.splitlines()[0])
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--skip-quality", action="store_true")
    args = parser.parse_args()
    if not args.skip_timing:
        print(timing_table(), "\n", flush=True)
    if not args.skip_quality:
        print(quality_table(args.families, args.seeds, args.executor, args.cells), flush=True)


if __name__ == "__main__":
    sys.exit(main())
