"""``sipt-lab simulate``: one semi-synthetic experiment, LM vs SIPT, end to end."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from sipt_lab.cli.arguments import GRID_INTERRUPT_HINT
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import json_text
from sipt_lab.core.names import LOSS_PARAMETERS, NEGATIVE_SAMPLERS, PAIR_MODES, STRUCTURE_LOSSES
from sipt_lab.core.options import add_config_arguments, config_from_args, record_field_flags
from sipt_lab.core.stats import format_mean_sd
from sipt_lab.experiments.simulation.simulate_job import PRESET_HELP, SimulateJob
from sipt_lab.graphs.noise import NOISE_MODES
from sipt_lab.synthetic.graph_spec import GraphSpec
from sipt_lab.training.defaults import INIT_DEFAULTS, PAPER_LAMBDA_SI
from sipt_lab.training.train_config import TrainConfig

#: GraphSpec fields set by ``simulate`` flags, and their help where it differs from ``graph build``'s.
GRAPH_FIELDS = ("family", "noise", "noise_mode", "n_nodes", "seed")
GRAPH_HELP = {
    "family": "graph family (see `sipt-lab graph list`), e.g. torus, cliques",
    "noise": "edge-noise rate in [0, 1] (default: %(default)s)",
    "noise_mode": f"noise model: {' or '.join(NOISE_MODES)} (default: %(default)s)",
    "n_nodes": "pre-training samples (default: the family's)",
    "seed": "first seed (default: %(default)s)",
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
    add_config_arguments(parser, GraphSpec, GRAPH_FIELDS[:4], check=False, required=("family",), help=GRAPH_HELP)
    add_config_arguments(parser, SimulateJob, ("seeds",), check=False)
    add_config_arguments(
        parser, GraphSpec, ("seed",), check=False, help=GRAPH_HELP, argparse_options={"seed": {"metavar": None}}
    )
    add_config_arguments(parser, SimulateJob, ("methods",), check=False)
    _train_arguments(parser, ("pt_labels", "allow_missing"))
    _train_arguments(parser, ("lambda_si", "loss"))
    parser.add_argument(
        "--loss-param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a parameter of the structure-inducing loss, repeatable (contrastive: "
        f"pos_margin, neg_margin, default {_margins()}; multisim: w_pos, w_neg, t)",
    )
    record_field_flags(parser, {"TrainConfig.loss_params": "--loss-param"})
    _train_arguments(parser, ("pairs", "negatives"))
    _train_arguments(parser, ("steps",))
    add_preset_flags(parser)
    add_config_arguments(
        parser,
        GraphSpec,
        ("corpus",),
        check=False,
        help={"corpus": "sentence file (one per line, or JSONL with 'text'; .gz ok); default: embedded corpus"},
    )
    _train_arguments(parser, ("device",))
    add_config_arguments(parser, SimulateJob, ("executor",), check=False)
    parser.add_argument("--out", metavar="DIR", help="result directory (default: runs/simulate-<config hash>)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    record_field_flags(parser, {"SimulationConfig.methods": "--methods"})  # checked again once resolved
    parser.set_defaults(func=run, interrupt_hint=GRID_INTERRUPT_HINT)


def _train_arguments(parser: argparse.ArgumentParser, fields: tuple[str, ...]) -> None:
    """Flags of :class:`TrainConfig` fields, parsed by type alone: the config checks their values
    (its errors name these flags)."""
    add_config_arguments(
        parser,
        TrainConfig,
        fields,
        check=False,
        defaults={"lambda_si": PAPER_LAMBDA_SI, "pairs": None, "negatives": None, "steps": None},
        help={
            "lambda_si": "weight of the structure-inducing loss in SIPT, in [0, 1] (default: %(default)s)",
            "loss": f"structure-inducing loss: {' or '.join(STRUCTURE_LOSSES)} (default: %(default)s)",
            "pairs": f"pairs the structure loss scores: {' or '.join(PAIR_MODES)} (sampled: each seed with one neighbour "
            "and one non-neighbour, the paper's; batch: every pair of samples in the batch; default: "
            f"{INIT_DEFAULTS['char'].pairs})",
            "negatives": f"each seed's non-neighbour: {', '.join(NEGATIVE_SAMPLERS)} (default: {TrainConfig.negatives})",
            "steps": "optimiser steps per arm (default: the family's)",
            "pt_labels": "per-sample pre-training labels of the multitask and same-family methods: "
            "id<TAB>label;label... a line, a sample's id its node number 0..n-1",
            "device": "auto (CUDA when present), cpu or cuda (default: %(default)s)",
        },
        argparse_options={
            "loss": {"metavar": "LOSS"},
            "pairs": {"metavar": "MODE"},
            "negatives": {"metavar": "NAME"},
            "device": {"metavar": "DEV", "type": None},
        },
    )


def _margins() -> str:
    """``"5 and 10"``: the contrastive margins a simulate run uses (the char row over the loss's own)."""
    margins = {**LOSS_PARAMETERS["contrastive"], **INIT_DEFAULTS["char"].loss_params}
    return f"{margins['pos_margin']:g} and {margins['neg_margin']:g}"


def run(args: argparse.Namespace) -> int:
    from sipt_lab.experiments.simulation.simulate import simulate
    from sipt_lab.experiments.simulation.simulation_config import simulation_config

    job = config_from_args(args, SimulateJob, graph=config_from_args(args, GraphSpec, GRAPH_FIELDS + ("corpus",)))
    graph_options = {"noise": job.graph.noise, "noise_mode": job.graph.noise_mode, "corpus": job.graph.corpus}
    if job.graph.n_nodes is not None:
        graph_options["n_nodes"] = job.graph.n_nodes
    train_options = {
        "lambda_si": args.lambda_si,
        "loss": args.loss,
        "device": args.device,
        "loss_params": parse_loss_params(args.loss_param),
    }
    if args.pairs is not None:
        train_options["pairs"] = args.pairs
    if args.negatives is not None:
        train_options["negatives"] = args.negatives
    if args.pt_labels is not None:
        train_options |= {"pt_labels": str(Path(args.pt_labels).resolve()), "allow_missing": args.allow_missing}
    config = simulation_config(
        job.graph.family,
        seed=job.graph.seed,
        steps=args.steps,
        preset=job.preset,
        encoder=job.encoder,
        graph_options=graph_options,
        train_options=train_options,
        methods=job.methods,
    )
    summary = simulate(config, job.seeds, args.out, executor=job.executor, batched=job.batched)
    args.out = args.out or summary["out_dir"]  # where main saves the resolved options (config.toml)
    print(json_text(summary, sort_keys=False) if args.json else format_summary(summary))
    return 0


def add_preset_flags(parser: argparse.ArgumentParser, cls: type = SimulateJob, **options) -> None:
    """``--preset``, ``--encoder`` and ``--batched`` from the fields of ``cls`` (``SimulateJob``, or
    ``FigureOptions`` for ``sipt-lab figures``)."""
    preset_help = f"{PRESET_HELP.removesuffix(')')}; default: %(default)s)"  # the default inside the parenthesis
    add_config_arguments(
        parser, cls, ("preset", "encoder", "batched"), check=False, help={"preset": preset_help}, **options
    )


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
