"""``sipt-lab advise``: before pre-training, will SIPT on this graph help this task on new samples?"""

from __future__ import annotations

import argparse

from sipt_lab.core.options import add_config_arguments, config_from_args
from sipt_lab.jobs.advise import AdviseConfig


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "advise",
        help="predict, before any training, whether SIPT on a graph helps a task on new samples",
        description="Measures the local consistency (LC) of your labels over your graph and the init's own "
        "k-NN consistency on the same labelled samples (one embedding pass, no training), and turns them into "
        "SIPT's predicted gain over LM-only on never-seen samples for one run at a training budget (--steps), with "
        "the 90% interval one run falls in, from the predictor chosen and calibrated on the natural-graph atlas "
        "(`sipt-lab study atlas`) by leaving out whole graphs, tasks and languages. Labels may cover a subset of "
        "the samples. Prints the regime the prediction is for, a verdict and its reason, the predictor's "
        "validation beside trivial baselines, and warns where your settings or numbers lie outside the atlas.",
    )
    add_config_arguments(parser, AdviseConfig, ("samples", "edges", "labels"), required=("samples", "edges", "labels"))
    add_config_arguments(parser, AdviseConfig, ("init", "pooling", "max_len", "k", "steps", "device", "fit", "plot"))
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of lines")
    parser.set_defaults(func=run_advise, memory_hint="lower --max-length")


def run_advise(args: argparse.Namespace) -> int:
    from sipt_lab.core.fileio import json_text
    from sipt_lab.jobs.advise import advice_lines, advise

    report = advise(config_from_args(args, AdviseConfig))
    print(json_text(report) if args.json else "\n".join(advice_lines(report)))
    return 0
