"""PLANE's ceiling: how SIPT's LOO AUROC moves with graph size and encoder width.

Run as ``python benchmarks/bench_plane.py [--seeds 3] [--executor local]``.

PLANE is the one family where the default SIPT run stays below the paper (0.954). For each setting
(nodes, encoder hidden size, steps) it prints the topic task's local consistency, the LOO 3-NN
AUROC of the Theorem 1 oracle (free vectors trained on ``L_SI`` alone over the same graphs: what a
perfect SIPT encoder could reach) and of the LM and SIPT arms of ``simulate_seed``. Corollary 2 says
local consistency grows with ``n``; the question is whether the encoder can follow it in CPU time.
Cells are shared with ``sipt-lab figures`` (``--cells``), so the default row is free after them.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from sipt_lab.experiments.paper_values import FAMILY_AUROC
from sipt_lab.experiments.simulate import simulate_seed, simulation_config
from sipt_lab.experiments.sweep import run_grid
from sipt_lab.synthetic import build_dataset
from sipt_lab.theory import theorem1_check

from bench_simulate import _mean_sd, grid_parser  # noqa: E402  (run as a script: benchmarks/ is on sys.path)

#: (nodes, encoder hidden size, steps); the first row is the default.
SETTINGS = ((100, 64, 1000), (200, 64, 1000), (200, 128, 1000))


def plane_config(n_nodes: int, hidden: int, steps: int, seed: int):
    config = simulation_config("plane", seed=seed, steps=steps, graph_options={"n_nodes": n_nodes})
    return dataclasses.replace(config, encoder=dataclasses.replace(config.encoder, hidden=hidden, ffn=2 * hidden))


def main() -> None:
    args = grid_parser(__doc__.splitlines()[0], families=False).parse_args()

    rows = [
        f"{'nodes':>5} {'hidden':>6} {'steps':>5} {'LC':>5} {'oracle':>15} {'LM LOO':>15} {'SIPT LOO':>15} {'s/cell':>7}",
        "-" * 82,
    ]
    for n_nodes, hidden, steps in SETTINGS:
        configs = [plane_config(n_nodes, hidden, steps, seed) for seed in range(args.seeds)]
        start = time.perf_counter()
        cells = run_grid(simulate_seed, configs, args.cells, executor=args.executor)
        seconds = (time.perf_counter() - start) / len(configs)
        oracle = [
            theorem1_check((dataset := build_dataset(config.graph, progress=False)).graph, dataset.labels, seed=config.graph.seed)
            for config in configs
        ]
        methods = [cell.result["methods"] for cell in cells]
        rows.append(
            f"{n_nodes:>5} {hidden:>6} {steps:>5} {np.mean([check.local_consistency for check in oracle]):5.3f}"
            f" {_mean_sd([check.nn_auroc for check in oracle]):>15}"
            f" {_mean_sd([m['lm']['auroc'] for m in methods]):>15} {_mean_sd([m['sipt']['auroc'] for m in methods]):>15}"
            f" {seconds:7.0f}"
        )
        print(rows[-1] if len(rows) > 3 else "\n".join(rows), flush=True)
    paper = FAMILY_AUROC["plane"]
    print(f"LOO 3-NN AUROC, mean ± sd over {args.seeds} seeds; paper PLANE LM -> SIPT {paper[0]:.3f} -> {paper[1]:.3f}"
          " (s/cell: wall seconds per seed, both arms; 0 when the cell was cached)")


if __name__ == "__main__":
    main()
