"""``sipt-lab simulate``: one semi-synthetic experiment, LM vs SIPT, end to end."""

from __future__ import annotations

import argparse
import math

from sipt_lab.cli.arguments import nonempty
from sipt_lab.cli.graph import GRAPH_FLAGS
from sipt_lab.training.defaults import INIT_DEFAULTS, PAPER_LAMBDA_SI
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import json_text
from sipt_lab.graphs.noise import NOISE_MODES
from sipt_lab.core.options import add_config_arguments, record_field_flags
from sipt_lab.training.train_config import TrainConfig
from sipt_lab.core.names import LOSS_PARAMETERS, ENCODER_PRESETS, METHODS, NEGATIVE_SAMPLERS, PAIR_MODES, SIMULATION_PRESETS, STRUCTURE_LOSSES
from sipt_lab.grid import EXECUTORS
from sipt_lab.core.stats import format_mean_sd


#: Fields -> the hand-written ``simulate`` flags that set them (errors name the flag; the flags of
#: TrainConfig fields are generated and record their own).
FIELD_FLAGS = {
    **{field: flag for field, flag in GRAPH_FLAGS.items() if flag in ("--nodes", "--noise", "--noise-mode", "--seed")},
    "simulation_config.preset": "--preset", "simulation_config.encoder": "--encoder", "SimulationConfig.methods": "--methods",
}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="build a semi-synthetic dataset, pre-train LM and SIPT, compare their embeddings",
        description="Build a graph family's dataset (topic-modelled sentences + a pre-training "
        "graph), pre-train a small character-level transformer with the LM objective alone and "
        "with LM + the structure-inducing loss (SIPT), and report leave-one-out 3-NN AUROC of "
        "the topic task, held-out 3-NN AUROC and link retrieval for each, next to the task's "
        "local consistency over the graph (Theorem 1's bound). Finished seeds are kept in --out "
        "and skipped when the same command runs again.",
    )
    parser.add_argument("--graph", required=True, metavar="NAME",
                        help="graph family (see `sipt-lab graph list`), e.g. torus, cliques")
    parser.add_argument("--noise", type=float, default=0.0, metavar="P",
                        help="edge-noise rate in [0, 1] (default: %(default)s)")
    parser.add_argument("--noise-mode", default="add", metavar="MODE",
                        help=f"noise model: {' or '.join(NOISE_MODES)} (default: %(default)s)")
    parser.add_argument("--nodes", type=int, metavar="N", help="pre-training samples (default: the family's)")
    parser.add_argument("--seeds", type=int, default=3, metavar="K",
                        help="independent repetitions, seeds 0..K-1 from --seed (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default: %(default)s)")
    parser.add_argument("--methods", nargs="+", default=["lm", "sipt"], metavar="NAME",
                        help=f"pre-training methods to compare, each on the same seeds and steps: {', '.join(METHODS)} "
                        "(default: lm sipt; mlsm/lsm15/lsm learn from the lm arm as teacher)")
    _train_arguments(parser, ("lambda_si", "loss"))
    parser.add_argument("--loss-param", action="append", default=[], metavar="NAME=VALUE",
                        help="a parameter of the structure-inducing loss, repeatable (contrastive: "
                        f"pos_margin, neg_margin, default {_margins()}; multisim: w_pos, w_neg, t)")
    record_field_flags(parser, {"TrainConfig.loss_params": "--loss-param"})
    _train_arguments(parser, ("pairs", "negatives"))
    _train_arguments(parser, ("steps",))
    add_preset_flags(parser)
    parser.add_argument("--corpus", type=nonempty, metavar="PATH",
                        help="sentence file (one per line, or JSONL with 'text'; .gz ok); default: embedded corpus")
    _train_arguments(parser, ("device",))
    parser.add_argument("--executor", default="local", metavar="NAME",
                        help=f"how seeds run: {', '.join(EXECUTORS)} (default: %(default)s)")
    parser.add_argument("--out", metavar="DIR", help="result directory (default: runs/simulate-<config hash>)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    record_field_flags(parser, FIELD_FLAGS)
    parser.set_defaults(func=run)


def _train_arguments(parser: argparse.ArgumentParser, fields: tuple[str, ...]) -> None:
    """Flags of :class:`TrainConfig` fields, parsed by type alone: the config checks their values
    (its errors name these flags)."""
    add_config_arguments(
        parser, TrainConfig, fields, check=False,
        defaults={"lambda_si": PAPER_LAMBDA_SI, "pairs": None, "negatives": None, "steps": None},
        help={"lambda_si": "weight of the structure-inducing loss in SIPT, in [0, 1] (default: %(default)s)",
              "loss": f"structure-inducing loss: {' or '.join(STRUCTURE_LOSSES)} (default: %(default)s)",
              "pairs": f"pairs the structure loss scores: {' or '.join(PAIR_MODES)} (sampled: each seed with one neighbour "
              "and one non-neighbour, the paper's; batch: every pair of samples in the batch; default: "
              f"{INIT_DEFAULTS['char'].pairs})",
              "negatives": f"each seed's non-neighbour: {', '.join(NEGATIVE_SAMPLERS)} (default: {TrainConfig.negatives})",
              "steps": "optimiser steps per arm (default: the family's)",
              "device": "auto (CUDA when present), cpu or cuda (default: %(default)s)"},
        argparse_options={"loss": {"metavar": "LOSS"}, "pairs": {"metavar": "MODE"}, "negatives": {"metavar": "NAME"},
                          "device": {"metavar": "DEV", "type": None}})


def _margins() -> str:
    """``"5 and 10"``: the contrastive margins a simulate run uses (the char row over the loss's own)."""
    margins = {**LOSS_PARAMETERS["contrastive"], **INIT_DEFAULTS["char"].loss_params}
    return f"{margins['pos_margin']:g} and {margins['neg_margin']:g}"


def run(args: argparse.Namespace) -> int:
    from sipt_lab.experiments.simulation.simulate import simulate
    from sipt_lab.experiments.simulation.simulation_config import simulation_config

    graph_options = {"noise": args.noise, "noise_mode": args.noise_mode, "corpus": args.corpus}
    if args.nodes is not None:
        graph_options["n_nodes"] = args.nodes
    train_options = {"lambda_si": args.lambda_si, "loss": args.loss, "device": args.device,
                     "loss_params": parse_loss_params(args.loss_param)}
    if args.pairs is not None:
        train_options["pairs"] = args.pairs
    if args.negatives is not None:
        train_options["negatives"] = args.negatives
    config = simulation_config(
        args.graph,
        seed=args.seed,
        steps=args.steps,
        preset=args.preset,
        encoder=args.encoder,
        graph_options=graph_options,
        train_options=train_options,
        methods=tuple(args.methods),
    )
    summary = simulate(config, args.seeds, args.out, executor=args.executor, progress=not args.json, batched=args.batched)
    print(json_text(summary, sort_keys=False) if args.json else format_summary(summary))
    return 0


def add_preset_flags(parser: argparse.ArgumentParser) -> None:
    """``--preset``, ``--encoder`` and ``--batched`` (shared with ``sipt-lab figures``)."""
    parser.add_argument("--preset", default="default", metavar="NAME",
                        help=f"training settings per family: {' or '.join(SIMULATION_PRESETS)} (paper: the paper's "
                        "encoder sizes, whole graph per step, 8,000 steps or 1,500 epochs, lr 3e-4 constant, "
                        "sampled pairs; default: %(default)s)")
    parser.add_argument("--encoder", metavar="NAME",
                        help=f"char encoder sizes: {', '.join(ENCODER_PRESETS)} (default: the preset's)")
    parser.add_argument("--batched", action="store_true",
                        help="train all seeds x arms of a condition as one batched model, conditions side by side "
                        "under --executor (same numbers up to float rounding; faster for small encoders on a CPU)")


def parse_loss_params(items: list[str]) -> dict[str, float]:
    """``["pos_margin=2", ...]`` -> ``{"pos_margin": 2.0}``; the loss checks the names."""
    params = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            params[name.strip()] = float(value)
        except ValueError:
            raise SiptError(f"--loss-param takes NAME=NUMBER (e.g. pos_margin=5), got {item!r}") from None
        if not math.isfinite(params[name.strip()]):
            raise SiptError(f"--loss-param needs a finite number, got {item!r}")
    return params


def format_summary(summary: dict) -> str:
    """A readable table of one simulate summary (mean ± sample sd over seeds)."""
    lines = [
        f"graph {summary['graph']}   noise {summary['noise']}   seeds {len(summary['seeds'])}   "
        f"nodes {format_mean_sd(summary['n_nodes'], 0)}   edges {format_mean_sd(summary['n_edges'], 0)}",
        f"local consistency of the topic task over G_PT: {format_mean_sd(summary['local_consistency_per_seed'])}",
        "",
        f"{'method':<8} {'LOO 3-NN AUROC':>16} {'held-out AUROC':>16} {'LOO 3-NN acc':>14} {'link MRR':>14} {'link LRAP':>14}",
    ]
    for arm, metrics in summary["methods"].items():
        lines.append(
            f"{arm.upper():<8} {format_mean_sd(metrics['auroc']):>16} {format_mean_sd(metrics.get('heldout_auroc')):>16} "
            f"{format_mean_sd(metrics['accuracy']):>14} {format_mean_sd(metrics['link.mrr']):>14} {format_mean_sd(metrics['link.lrap']):>14}"
        )
    lines += ["", f"results: {summary['out_dir']}/results.json"]
    return "\n".join(lines)

