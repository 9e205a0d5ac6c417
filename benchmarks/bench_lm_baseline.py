"""A faithful LM baseline on CLIQUES: does the masked LM learn, and what does its embedding score?

Run as ``python benchmarks/bench_lm_baseline.py [--steps 8000] [--seeds 3] [--options ...] [--base paper|default] [--executor local] [--batched]``.

Every row is the paper's CLIQUES setting (``paper-small`` encoder: hidden 10, 2 layers; the whole
graph of 50 sentences per step; AdamW lr 3e-4, constant; the paper's sampled pairs and µ+ = 0;
untruncated sentences; 8,000 steps by default) with one baseline option changed (:data:`OPTIONS`):
BERT's 80/10/10 replacement, whole-word masking, a BPE vocabulary (1,000 or 300 tokens) learnt on the
pre-training sentences, or a combination. Both arms (LM: λ = 0, SIPT: λ = 0.1) train from the same
init on the same batches. Printed per option, mean ± sd over seeds (sample sd): the LM arm's final
MLM loss next to the unigram entropy of the same tokens (nats; the loss of a predictor that ignores
the context, so ``MLM − H`` below 0 means the LM uses the context), and the LOO 3-NN AUROC of both
arms, against the paper's 0.620 (LM) and 0.941 (SIPT). Each seed of each option is a
``run_grid`` cell under ``--cells``, so a run resumes and a longer ``--steps`` reuses nothing
stale (the steps are part of the cell's hash). ``--base default`` measures the same options on
sipt-lab's own CLIQUES defaults (hidden 64, 600 steps, in-batch pairs, µ+ = 5, 63 characters),
what ``sipt-lab simulate`` and the figures run.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
from bench_simulate import grid_parser  # noqa: E402  (run as a script: benchmarks/ is on sys.path)

from sipt_lab.core.stats import format_mean_sd
from sipt_lab.grid import run_grid
from sipt_lab.models.encoder import ENCODER_PRESETS
from sipt_lab.models.subword import TokenizerConfig
from sipt_lab.studies.paper.values import FAMILY_AUROC
from sipt_lab.studies.simulation.arms import simulate_seed
from sipt_lab.studies.simulation.config import SimulationConfig, simulation_config
from sipt_lab.studies.simulation.simulate import aggregate
from sipt_lab.studies.simulation.stacked_cells import train_batched_cells
from sipt_lab.synthetic import GraphSpec
from sipt_lab.synthetic.builder import resolve_spec

FAMILY = "cliques"
#: The paper's CLIQUES training (original code: synthetic_runner.py defaults, µ+ = 0, no schedule,
#: sentences cut at 349 characters, i.e. 350 tokens with [CLS]).
PAPER_TRAIN: dict[str, Any] = {
    "lr": 3e-4,
    "schedule": "constant",
    "warmup": 0.0,
    "pairs": "sampled",
    "max_len": 350,
    "loss_params": {"pos_margin": 0.0},
}
PAPER_STEPS = 8000
#: Option name -> what differs from the paper's setting: ``train`` (TrainConfig fields), ``tokenizer``.
OPTIONS: dict[str, dict[str, Any]] = {
    "char (as is)": {},
    "bert 80/10/10": {"train": {"mask_replacement": "bert"}},
    "whole-word": {"train": {"mask_unit": "word"}},
    "bpe": {"tokenizer": TokenizerConfig("bpe")},
    "bpe-300": {"tokenizer": TokenizerConfig("bpe", vocab_size=300)},
    "bpe+ww+bert": {"tokenizer": TokenizerConfig("bpe"), "train": {"mask_unit": "word", "mask_replacement": "bert"}},
}


def option_config(option: str, seed: int, steps: int | None, base: str = "paper") -> SimulationConfig:
    """The CLIQUES cell for ``seed`` with ``option`` applied, on the paper's settings (``base``
    ``"paper"``) or on sipt-lab's CLIQUES defaults (``"default"``: :data:`TRAINING_DEFAULTS`)."""
    changes = OPTIONS[option]
    paper = base == "paper"
    return simulation_config(
        FAMILY,
        seed=seed,
        steps=steps,
        batch_size=resolve_spec(GraphSpec(FAMILY)).n_nodes if paper else None,
        encoder=ENCODER_PRESETS["paper-small"] if paper else None,
        tokenizer=changes.get("tokenizer", TokenizerConfig()),
        train_options={**(PAPER_TRAIN if paper else {}), **changes.get("train", {})},
    )


def main() -> None:
    parser = grid_parser(__doc__.splitlines()[0], families=False)
    parser.add_argument(
        "--steps", type=int, default=None, help=f"default: {PAPER_STEPS} (paper), the family's (default)"
    )
    parser.add_argument(
        "--base",
        choices=("paper", "default"),
        default="paper",
        help="the paper's CLIQUES settings, or sipt-lab's CLIQUES defaults (what simulate and figures run)",
    )
    parser.add_argument("--options", nargs="+", default=list(OPTIONS), choices=list(OPTIONS))
    parser.add_argument(
        "--batched",
        action="store_true",
        help="train each option's seeds x arms as one batched model (same numbers up to float rounding)",
    )
    args = parser.parse_args()

    # seed-major order: a partial run has every option's first seed
    steps = PAPER_STEPS if args.steps is None and args.base == "paper" else args.steps
    configs = {
        (option, seed): option_config(option, seed, steps, args.base)
        for seed in range(args.seeds)
        for option in args.options
    }
    start = time.perf_counter()
    if args.batched:  # trains the cells that run_grid below then only loads
        train_batched_cells(list(configs.values()), args.cells, executor=args.executor)
    results = dict(zip(configs, run_grid(simulate_seed, list(configs.values()), args.cells, executor=args.executor)))
    seconds = time.perf_counter() - start
    failed = [key for key, cell in results.items() if cell.status == "failed"]
    if failed:
        raise SystemExit(f"cells failed: {failed}; see error.txt under {args.cells}")

    paper_lm, paper_sipt = FAMILY_AUROC[FAMILY]
    setting = (
        "the paper's settings (paper-small, whole graph per step, lr 3e-4 constant)"
        if args.base == "paper"
        else "sipt-lab's defaults"
    )
    print(
        f"CLIQUES at {setting}, {next(iter(configs.values())).train.steps} steps; "
        f"mean ± sd over {args.seeds} seeds ({args.executor} executor, {seconds:.0f} s)"
    )
    print(
        f"{'option':<19} {'LM MLM (nats)':>15} {'unigram H':>15} {'MLM − H':>8} {'LM LOO AUROC':>15} {'SIPT LOO AUROC':>15}"
        f" {'SIPT MLM':>15}  LM ±0.05 of {paper_lm:.3f} / SIPT ≥ {paper_sipt:.3f}"
    )
    print("-" * 150)
    for option in args.options:
        methods = aggregate([results[option, seed].result for seed in range(args.seeds)])["methods"]
        lm, sipt = methods["lm"], methods["sipt"]
        gap = np.mean(lm["final_terms.mlm"]) - np.mean(lm["unigram_entropy"])
        verdict = (
            ("yes" if abs(np.mean(lm["auroc"]) - paper_lm) <= 0.05 else "no")
            + " / "
            + ("yes" if np.mean(sipt["auroc"]) >= paper_sipt else "no")
        )
        print(
            f"{option:<19} {format_mean_sd(lm['final_terms.mlm']):>15} {format_mean_sd(lm['unigram_entropy']):>15} {gap:>+8.3f}"
            f" {format_mean_sd(lm['auroc']):>15} {format_mean_sd(sipt['auroc']):>15} {format_mean_sd(sipt['final_terms.mlm']):>15}  {verdict}"
        )


if __name__ == "__main__":
    sys.exit(main())
