"""``sipt-lab simulate``: one semi-synthetic experiment, LM vs SIPT, end to end."""

from __future__ import annotations

import argparse
from pathlib import Path

from sipt_lab.cli.arguments import (
    GRID_INTERRUPT_HINT,
    add_preset_flags,
    loss_param_flags,
    parse_loss_params,
    unflagged_settings,
)
from sipt_lab.core.fileio import json_text
from sipt_lab.core.options import add_config_arguments, config_from_args, record_field_flags
from sipt_lab.core.stats import format_mean_sd
from sipt_lab.graphs.noise import NOISE_MODES
from sipt_lab.studies.simulation.simulate_job import SimulateJob
from sipt_lab.synthetic.graph_spec import GraphSpec
from sipt_lab.training.defaults import TRAIN_FIELDS
from sipt_lab.training.train_config import TrainConfig

#: TrainConfig fields of ``simulate``'s flags besides ``steps`` and the per-sample labels' file.
SIMULATE_TRAIN_FIELDS = ("lambda_si", "loss", "pairs", "negatives", "device", "allow_missing")
#: Those whose default is the family's training under the preset.
FAMILY_FIELDS = ("steps", "lambda_si", "loss", "pairs", "negatives")
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
        "pos_margin, neg_margin; multisim: w_pos, w_neg, t; infonce: temperature; default: the family's under the preset)",
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
    parser.set_defaults(
        func=run, fill_defaults=fill_simulation_defaults, train_settings={}, interrupt_hint=GRID_INTERRUPT_HINT
    )


def _train_arguments(parser: argparse.ArgumentParser, fields: tuple[str, ...]) -> None:
    """Flags of :class:`TrainConfig` fields, parsed by type alone: the config checks their values
    (its errors name these flags). Those left out take the family's training under the preset
    (:func:`~sipt_lab.studies.simulation.config.simulation_config`), which
    :func:`fill_simulation_defaults` writes back for ``--print-config`` and ``config.toml``."""
    add_config_arguments(
        parser,
        TrainConfig,
        fields,
        check=False,
        defaults={name: None for name in fields if name in FAMILY_FIELDS},
        default_help={name: "the family's under the preset" for name in fields if name in FAMILY_FIELDS},
        help={
            "pt_labels": "per-sample pre-training labels of the multitask and same-family methods: "
            "id<TAB>label;label... a line, a sample's id its node number 0..n-1",
        },
        argparse_options={
            "loss": {"metavar": "LOSS"},
            "pairs": {"metavar": "MODE"},
            "negatives": {"metavar": "NAME"},
            "device": {"metavar": "DEV", "type": None},
        },
    )


def simulation_from_args(args: argparse.Namespace):
    """The :class:`SimulateJob` and the first seed's
    :class:`~sipt_lab.studies.simulation.config.SimulationConfig` the flags describe."""
    from sipt_lab.studies.simulation.config import simulation_config

    job = config_from_args(args, SimulateJob, graph=config_from_args(args, GraphSpec, GRAPH_FIELDS + ("corpus",)))
    graph_options = {"noise": job.graph.noise, "noise_mode": job.graph.noise_mode, "corpus": job.graph.corpus}
    if job.graph.n_nodes is not None:
        graph_options["n_nodes"] = job.graph.n_nodes
    train_options = {**args.train_settings, **{name: getattr(args, name) for name in SIMULATE_TRAIN_FIELDS}}
    train_options["loss_params"] = parse_loss_params(args.loss_param) or None
    if args.pt_labels is not None:
        train_options["pt_labels"] = str(Path(args.pt_labels).resolve())
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
    return job, config


def fill_simulation_defaults(args: argparse.Namespace) -> None:
    """Set the training flags and ``--n-nodes`` left out to the values the family's training under
    the preset gives them, so that ``--print-config`` and ``config.toml`` hold every value the run
    uses (nothing to fill before a family is named)."""
    if args.family is None:
        return
    _, config = simulation_from_args(args)
    for name in FAMILY_FIELDS:
        if getattr(args, name) is None:
            setattr(args, name, getattr(config.train, name))
    args.loss_param = loss_param_flags(config.train.loss_params)
    resolved = {name: getattr(config.train, name) for name in TRAIN_FIELDS}
    args.train_settings = unflagged_settings(args, resolved)
    if args.n_nodes is None:
        args.n_nodes = config.graph.n_nodes


def run(args: argparse.Namespace) -> int:
    from sipt_lab.studies.simulation.simulate import simulate

    job, config = simulation_from_args(args)
    summary = simulate(config, job.seeds, args.out, executor=job.executor, batched=job.batched)
    args.out = args.out or summary["out_dir"]  # where main saves the resolved options (config.toml)
    print(json_text(summary, sort_keys=False) if args.json else format_summary(summary))
    return 0


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
