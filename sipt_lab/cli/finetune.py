"""``sipt-lab finetune`` and ``sipt-lab domain``: fine-tuning evaluation, and real domains end to end."""

from __future__ import annotations

import argparse
from pathlib import Path

from sipt_lab.cli.arguments import (
    GRID_INTERRUPT_HINT,
    PER_SAMPLE_FIELDS,
    add_objective_arguments,
    add_time_limit_argument,
    add_train_arguments,
    nonempty,
    objective_changes,
)
from sipt_lab.core.options import add_config_arguments, config_from_args, record_field_flags
from sipt_lab.jobs.configs import FILE_TASK_KINDS, FinetuneJob
from sipt_lab.studies.domain.report_options import DomainCurvesConfig, DomainTableConfig
from sipt_lab.studies.domain.run_config import DomainRunConfig
from sipt_lab.training.train_config import FinetuneConfig

#: FinetuneJob / FinetuneConfig fields that ``finetune`` flags set.
FINETUNE_JOB_FIELDS = (
    "model",
    "baseline",
    "task",
    "samples",
    "labels",
    "kind",
    "splits",
    "pretrained_on",
    "mode",
    "seeds",
)
FINETUNE_FIELDS = ("lrs", "epochs", "batch_size", "max_len", "device", "eval_every", "pair_memory_gib")
#: DomainRunConfig fields that ``domain run`` flags set, in the order ``--help`` lists them.
DOMAIN_RUN_FIELDS = (
    "domain",
    "graphs",
    "task",
    "seeds",
    "preset",
    "samples",
    "steps",
    "lambdas",
    "mode",
    "methods",
    "teacher",
    "teacher_layer",
    "init",
    "data_dir",
    "device",
    "grad_accum",
    "precision",
    "executor",
    "protocol",
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "finetune",
        help="evaluate an encoder by a linear probe and full fine-tuning on a labelled task",
        description="Score an encoder (a `sipt-lab pretrain` model directory, any Hugging Face checkpoint, or "
        "an init name such as minilm) on a labelled task with train/validation/test splits: a linear probe on "
        "frozen embeddings and full fine-tuning of a linear head with the encoder (AdamW, early stopping on "
        "validation, a learning-rate grid, several seeds). The labels may cover a subset of the samples: the "
        "splits are drawn from the labelled ones and only split samples are embedded. With --baseline, the "
        "relative error reduction of the model over the baseline and a paired t-test over seeds, as the SIPT "
        "paper reports; it compares exactly the two encoders given, so to measure what the graph adds pass "
        "as --baseline an LM-only run (`pretrain --lambda-si 0`, same samples and steps), not the untouched "
        "init, which mixes the graph's effect with that of training on your text. A test split too small "
        "to detect any difference is warned about.",
    )
    add_config_arguments(
        parser,
        FinetuneJob,
        FINETUNE_JOB_FIELDS,
        required=("model",),
        argparse_options={"kind": {"choices": sorted(FILE_TASK_KINDS)}},
    )
    add_config_arguments(parser, FinetuneConfig, FINETUNE_FIELDS)
    parser.add_argument("--out", required=True, type=nonempty, metavar="DIR", help="output directory")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the finetune run in --out, removing only the files sipt-lab wrote there",
    )
    parser.set_defaults(
        func=run_finetune,
        memory_hint="lower --batch-size or --max-length",
        interrupt_hint="a finetune run writes its results at the end, so run the same command again",
    )

    domain = subparsers.add_parser(
        "domain",
        help="real domains: list them, run LM-only vs SIPT with fine-tuning evaluation, report finished runs",
        description="`domain list` names the registered domains with their graphs and tasks; `domain run NAME` "
        "pre-trains LM-only and SIPT (one arm per graph) from the same warm start on a slice of the domain, "
        "scores every arm by probe and full fine-tuning on held-out samples, and reports relative error "
        "reductions with paired t-tests next to the task's local consistency over each graph. Cells are "
        "resumable: run the same command again to finish an interrupted run. `domain table RUN_DIR...` and "
        "`domain curves RUN_DIR...` report finished runs as the paper's Table 2 and Figure 3.",
    )
    actions = domain.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="the registered domains").set_defaults(func=run_domain_list)
    run = actions.add_parser("run", help="LM-only vs SIPT on a domain, judged by fine-tuning")
    add_config_arguments(run, DomainRunConfig, DOMAIN_RUN_FIELDS)
    add_objective_arguments(run, preset=True)
    add_train_arguments(run, PER_SAMPLE_FIELDS)
    run.add_argument(
        "--out", required=True, type=nonempty, metavar="DIR", help="output directory (cells are kept and resumed)"
    )
    add_time_limit_argument(run, "cells")
    # the fields of the configs the run resolves, by the flag that sets each
    record_field_flags(
        run,
        {
            "ConceptOptions.layer": "--teacher-layer",
            "TrainConfig.grad_accum": "--grad-accum",
            "TrainConfig.steps": "--steps",
            "TrainConfig.lambda_si": "--lambdas",
            "DomainPreset.n_samples": "--samples",
            "PretrainJob.init": "--init",  # the warm start, checked by the model layer
            "PretrainJob.teacher": "--teacher",
        },
    )
    run.set_defaults(
        func=run_domain,
        interrupt_hint=GRID_INTERRUPT_HINT,
        memory_hint="pass --grad-accum K to split each pre-training step's batch into K micro-batches, "
        "or run under torchrun on more GPUs",
    )
    table = actions.add_parser(
        "table",
        help="the paper's Table 2 over finished runs: SIPT's RRE vs the per-token and per-sample baselines",
        description="Reads the output directories of `domain run` (runs of one task are merged by seed: a run "
        "with a per-sample baseline beside one without) and writes the paper's Table 2 as table2.md, table2.csv "
        "and table2.tex: per task and evaluation, SIPT's relative error reduction (mean ± sd over paired seeds) "
        "against the domain's per-token and per-sample baseline arms, marked ↑ / ∼ / ↓ by a paired t-test. "
        "Comparisons that were not run are marked, never left out. Runs of different presets, or runs of one "
        "task made with different options, are refused.",
    )
    add_config_arguments(table, DomainTableConfig, ("runs", "significance"))
    add_report_output(table, "table2.md, table2.csv, table2.tex")
    table.set_defaults(func=run_domain_table)
    curves = actions.add_parser(
        "curves",
        help="the paper's Figure 3 over finished runs: fine-tuning score against fine-tuning step",
        description="Reads the output directories of `domain run` (their history.csv: every fully fine-tuned "
        "arm's scores after each pass) and draws, per task, the validation score at each seed's chosen learning "
        "rate against the fine-tuning step for SIPT and the domain's per-token and per-sample baselines, mean ± "
        "sd over seeds (curves.png, curves.pdf, and the points as curves.csv).",
    )
    add_config_arguments(curves, DomainCurvesConfig, ("runs", "split", "metric"))
    add_report_output(curves, "curves.png, curves.pdf, curves.csv")
    curves.set_defaults(func=run_domain_curves)


def add_report_output(parser: argparse.ArgumentParser, files: str) -> None:
    """``--out`` and ``--overwrite`` of a report over finished runs, which writes ``files``."""
    parser.add_argument(
        "--out", required=True, type=nonempty, metavar="DIR", help=f"output directory, new or empty ({files})"
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an earlier report in --out, removing only its files"
    )


def run_finetune(args: argparse.Namespace) -> int:
    from sipt_lab.jobs.finetune import format_finetune_report, run_finetuning

    job = config_from_args(
        args, FinetuneJob, FINETUNE_JOB_FIELDS, finetune=config_from_args(args, FinetuneConfig, FINETUNE_FIELDS)
    )
    print(format_finetune_report(run_finetuning(job, args.out, overwrite=args.overwrite, log=print)))
    return 0


def run_domain_list(args: argparse.Namespace) -> int:
    from sipt_lab.domains import DOMAINS, domain_names

    for name in domain_names():
        domain = DOMAINS[name]
        data = f"; --data: {domain.layout}" if domain.layout else ""
        print(f"{name}: {domain.description}; graphs: {', '.join(domain.graphs)}; task: {domain.default_task}{data}")
    return 0


def run_domain(args: argparse.Namespace) -> int:
    import dataclasses

    from sipt_lab.core import outputs
    from sipt_lab.core.config_io import config_hash
    from sipt_lab.grid.executors import check_time_limit
    from sipt_lab.jobs.pretrain import launched_rank
    from sipt_lab.studies.domain.cells import domain_run_cells
    from sipt_lab.studies.domain.report import format_domain_summary
    from sipt_lab.studies.domain.run import run_domain

    outputs.check_output_dir(args.out)
    config = config_from_args(args, DomainRunConfig, DOMAIN_RUN_FIELDS, objective=objective_changes(args))
    check_time_limit(config.executor, args.time_limit, "DomainRunConfig.executor")
    cells = domain_run_cells(config)
    if launched_rank() == 0:  # one run at a time writes into --out (its cells have their own locks too)
        outputs.check_output_dir(args.out)
        with outputs.locked_dir(Path(args.out)) as out:
            # the settings name the run: more seeds or another executor resume it
            settings = config_hash(dataclasses.replace(config, seeds=1, executor="serial"))
            outputs.prepare_grid_dir(out, "domain run", settings)
            summary = run_domain(cells, out, executor=config.executor, preset=config.preset, time_limit=args.time_limit)
    else:  # a torchrun process other than rank 0: rank 0 writes and reports
        run_domain(cells, Path(args.out), executor=config.executor)
        return 0
    print(format_domain_summary(summary))
    print(f"\nsummary: {out / 'summary.json'}   comparisons: {out / 'comparison.csv'}")
    return 0


def run_domain_table(args: argparse.Namespace) -> int:
    from sipt_lab.studies.domain.table2 import run_domain_table as write_table
    from sipt_lab.studies.domain.table2 import table2_markdown

    config = config_from_args(args, DomainTableConfig)
    rows = write_table(config, args.out, overwrite=args.overwrite, log=print)
    print(table2_markdown(rows, config.significance))
    print(f"table: {Path(args.out) / 'table2.md'} (also .csv, .tex)")
    return 0


def run_domain_curves(args: argparse.Namespace) -> int:
    from sipt_lab.studies.domain.curves import run_domain_curves as draw_curves

    _, notes = draw_curves(config_from_args(args, DomainCurvesConfig), args.out, overwrite=args.overwrite, log=print)
    for note in notes:
        print(note)
    print(f"figure: {Path(args.out) / 'curves.png'} (also .pdf; points in curves.csv)")
    return 0
