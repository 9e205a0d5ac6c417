"""Which pairs ``L_SI`` scores: the paper's one sampled pair per seed vs every pair in the batch.

Run as ``python benchmarks/bench_pairs.py [--seeds 3] [--executor local] [--families ...]``.

Both arms of the default ``simulate`` cell for each family, once with ``pairs="sampled"`` (each
seed with one neighbour and one non-neighbour, the paper's) and once with ``pairs="batch"`` (every
ordered pair of the encoded samples, labelled by the graph; the default); nothing else differs, so
the LM arm must score the same in both (it never sees the pairs) and the SIPT columns isolate the
pair choice. Cells are shared with ``sipt-lab figures`` (``--cells``), so the batch-mode cells are
reused when the figures have run. Prints LOO 3-NN AUROC (mean ± sd over seeds), then the cost:
one SIPT pre-training run (TORUS seed 0, defaults) in each mode, interleaved in this process
(cells may come from runs on a differently loaded machine, so their seconds are not compared).
"""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np
from bench_simulate import grid_parser  # noqa: E402  (run as a script: benchmarks/ is on sys.path)

from sipt_lab.core.stats import format_mean_sd
from sipt_lab.grid import run_grid
from sipt_lab.studies.paper.values import FAMILY_AUROC
from sipt_lab.studies.simulation.arms import simulate_seed
from sipt_lab.studies.simulation.config import simulation_config
from sipt_lab.synthetic import build_dataset
from sipt_lab.training import pretrain

MODES = ("sampled", "batch")


def main() -> None:
    parser = grid_parser(__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds per pair mode")
    args = parser.parse_args()

    configs = []
    for family in args.families:
        for seed in range(args.seeds):
            config = simulation_config(family, seed=seed)
            configs += [
                dataclasses.replace(config, train=dataclasses.replace(config.train, pairs=mode)) for mode in MODES
            ]
    results = run_grid(simulate_seed, configs, args.cells, executor=args.executor)

    def scores(family: str, mode: str, arm: str, metric: str) -> np.ndarray:
        return np.array(
            [
                cell.result["methods"][arm][metric]
                for cell in results
                if cell.config.graph.family == family and cell.config.train.pairs == mode
            ]
        )

    print(f"LOO 3-NN AUROC, mean ± sd over {args.seeds} seeds; only TrainConfig.pairs differs between columns")
    print(
        f"{'graph':<13} {'LM':>15} {'SIPT sampled':>15} {'SIPT batch':>15} {'batch - sampled':>16} {'paper SIPT':>11}"
    )
    print("-" * 90)
    for family in args.families:
        lm_sampled, lm_batch = scores(family, "sampled", "lm", "auroc"), scores(family, "batch", "lm", "auroc")
        if not np.allclose(lm_sampled, lm_batch):
            raise SystemExit(
                f"{family}: the LM arm differs between pair modes ({lm_sampled} vs {lm_batch}); the arms are not paired"
            )
        sampled, batch = scores(family, "sampled", "sipt", "auroc"), scores(family, "batch", "sipt", "auroc")
        paper = FAMILY_AUROC.get(family)
        print(
            f"{family:<13} {format_mean_sd(lm_batch):>15} {format_mean_sd(sampled):>15} {format_mean_sd(batch):>15} {batch.mean() - sampled.mean():>+16.3f}"
            f" {'' if paper is None else f'{paper[1]:.3f}':>11}"
        )
    print()
    print(cost_table(args.rounds))


def cost_table(rounds: int) -> str:
    """Seconds of one SIPT pre-training run per pair mode (median of ``rounds`` interleaved runs)."""
    config = simulation_config("torus", seed=0, train_options={"device": "cpu"})
    dataset = build_dataset(config.graph)
    seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(rounds):
        for mode in MODES:
            train = dataclasses.replace(config.train, pairs=mode)
            start = time.perf_counter()
            pretrain(dataset.sentences, dataset.graph, train, config.encoder)
            seconds[mode].append(time.perf_counter() - start)
    sampled, batch = (float(np.median(seconds[mode])) for mode in MODES)
    return (
        f"one SIPT run, torus seed 0, {config.train.steps} steps (median of {rounds}): "
        f"sampled {sampled:.1f} s, batch {batch:.1f} s, batch / sampled = {batch / sampled:.2f}x"
    )


if __name__ == "__main__":
    sys.exit(main())
