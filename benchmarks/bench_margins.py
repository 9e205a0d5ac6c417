"""The contrastive loss's positive margin: µ+ = 0 (the original code's) vs µ+ = 5 (sipt-lab's).

Run as ``python benchmarks/bench_margins.py [--seeds 3] [--executor local] [--families ...]``.

Both arms of the default ``simulate`` cell for each family, once with the loss's own parameters
(µ+ = 0, µ− = 10: linked samples pulled onto one point) and once with the experiments' default
(:data:`sipt_lab.training.train_config.CHAR_LOSS_PARAMS`: µ+ = 5, linked samples may sit up to 5 apart);
nothing else differs, so the LM arm must score the same in both and the SIPT columns isolate the
margin. Next to them, the LOO 3-NN AUROC of the Theorem 1 oracle (free node vectors trained on the
same ``L_SI`` alone) shows whether the margin moves the ceiling or only the encoder. The margin
does not change the compute, so there is no cost table. Cells are shared with ``sipt-lab figures``
(``--cells``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from bench_simulate import grid_parser  # noqa: E402  (run as a script: benchmarks/ is on sys.path)

from sipt_lab.core.stats import format_mean_sd
from sipt_lab.grid import run_grid
from sipt_lab.studies.paper.theory import theorem1_check
from sipt_lab.studies.paper.values import FAMILY_AUROC
from sipt_lab.studies.simulation.arms import simulate_seed
from sipt_lab.studies.simulation.config import simulation_config
from sipt_lab.synthetic import build_dataset
from sipt_lab.training.train_config import CHAR_LOSS_PARAMS

#: Column name -> contrastive loss parameters of the SIPT arm: the loss's own, the experiments' default.
MARGINS = {"µ+=0": {}, "µ+=5": CHAR_LOSS_PARAMS}


def main() -> None:
    args = grid_parser(__doc__.splitlines()[0]).parse_args()

    configs, oracle = {}, {}
    for family in args.families:
        for seed in range(args.seeds):
            config = simulation_config(family, seed=seed)
            dataset = build_dataset(config.graph)
            for name, params in MARGINS.items():
                train = dataclasses.replace(config.train, loss_params=params)
                configs[family, seed, name] = dataclasses.replace(config, train=train)
                check = theorem1_check(dataset.graph, dataset.labels, seed=seed, loss=train.loss, **train.loss_params)
                oracle[family, seed, name] = check.nn_auroc
    results = dict(zip(configs, run_grid(simulate_seed, list(configs.values()), args.cells, executor=args.executor)))

    def scores(family: str, name: str, arm: str) -> np.ndarray:
        return np.array([results[family, seed, name].result["methods"][arm]["auroc"] for seed in range(args.seeds)])

    print(f"LOO 3-NN AUROC, mean ± sd over {args.seeds} seeds; only the contrastive loss's µ+ differs (µ− = 10)")
    columns = [f"oracle {name}" for name in MARGINS] + [f"SIPT {name}" for name in MARGINS]
    print(
        f"{'graph':<13} {'LM':>15} "
        + " ".join(f"{column:>15}" for column in columns)
        + f" {'gain':>7} {'paper SIPT':>11}"
    )
    print("-" * 113)
    for family in args.families:
        lm = [scores(family, name, "lm") for name in MARGINS]
        if not np.allclose(*lm):
            raise SystemExit(f"{family}: the LM arm differs between margins ({lm}); the arms are not paired")
        ceiling = [[oracle[family, seed, name] for seed in range(args.seeds)] for name in MARGINS]
        sipt = [scores(family, name, "sipt") for name in MARGINS]
        paper = FAMILY_AUROC.get(family)
        print(
            f"{family:<13} {format_mean_sd(lm[1]):>15} {format_mean_sd(ceiling[0]):>15} {format_mean_sd(ceiling[1]):>15}"
            f" {format_mean_sd(sipt[0]):>15} {format_mean_sd(sipt[1]):>15} {sipt[1].mean() - sipt[0].mean():>+7.3f}"
            f" {'' if paper is None else f'{paper[1]:.3f}':>11}"
        )


if __name__ == "__main__":
    main()
