"""``sipt-lab finetune`` and ``sipt-lab domain``: fine-tuning evaluation, and real domains end to end."""

from __future__ import annotations

import argparse
from pathlib import Path

from sipt_lab.cli.arguments import FRACTION, POSITIVE_INT, integer, nonempty
from sipt_lab.core.options import add_config_arguments, config_from_args
from sipt_lab.experiments.configs import FILE_TASK_KINDS, FinetuneJob
from sipt_lab.grid import EXECUTORS
from sipt_lab.training.train_config import FinetuneConfig
from sipt_lab.core.names import DOMAIN_PRESETS, FINETUNE_MODES


#: FinetuneJob / FinetuneConfig fields that ``finetune`` flags set.
FINETUNE_JOB_FIELDS = ("model", "baseline", "task", "samples", "labels", "kind", "splits", "mode", "seeds")
FINETUNE_FIELDS = ("lrs", "epochs", "batch_size", "max_len", "device", "eval_every")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "finetune",
        help="evaluate an encoder by a linear probe and full fine-tuning on a labelled task",
        description="Score an encoder (a `sipt-lab pretrain` model directory, any Hugging Face checkpoint, or "
        "an init name such as minilm) on a labelled task with train/validation/test splits: a linear probe on "
        "frozen embeddings and full fine-tuning of a linear head with the encoder (AdamW, early stopping on "
        "validation, a learning-rate grid, several seeds). With --baseline, the relative error reduction of "
        "the model over the baseline and a paired t-test over seeds, as the SIPT paper reports.",
    )
    add_config_arguments(parser, FinetuneJob, ("model", "baseline", "task", "samples", "labels", "kind", "splits", "mode",
                                               "seeds"),
                         required=("model",), argparse_options={"kind": {"choices": sorted(FILE_TASK_KINDS)}})
    add_config_arguments(parser, FinetuneConfig, FINETUNE_FIELDS)
    parser.add_argument("--out", required=True, type=nonempty, metavar="DIR", help="output directory")
    parser.add_argument("--overwrite", action="store_true", help="replace the finetune run in --out, removing only the files sipt-lab wrote there")
    parser.set_defaults(func=run_finetune, memory_hint="lower --batch-size or --max-length",
                        interrupt_hint="a finetune run writes its results at the end, so run the same command again")

    domain = subparsers.add_parser(
        "domain",
        help="real domains: list them, or run LM-only vs SIPT with fine-tuning evaluation",
        description="`domain list` names the registered domains with their graphs and tasks; `domain run NAME` "
        "pre-trains LM-only and SIPT (one arm per graph) from the same warm start on a slice of the domain, "
        "scores every arm by probe and full fine-tuning on held-out samples, and reports relative error "
        "reductions with paired t-tests next to the task's local consistency over each graph. Cells are "
        "resumable: run the same command again to finish an interrupted run.",
    )
    actions = domain.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="the registered domains").set_defaults(func=run_domain_list)
    run = actions.add_parser("run", help="LM-only vs SIPT on a domain, judged by fine-tuning")
    run.add_argument("name", type=nonempty, metavar="NAME", help="domain, e.g. wiki")
    run.add_argument("--graphs", nargs="+", metavar="G", help="pre-training graphs (default: all of the domain's)")
    run.add_argument("--task", help="fine-tuning task (default: the domain's)")
    run.add_argument("--seeds", type=POSITIVE_INT, default=3, metavar="K", help="repetitions (default: %(default)s)")
    run.add_argument("--preset", default="cpu", choices=DOMAIN_PRESETS, help="budget: cpu (~30 min on 2 cores) or full (a GPU) (default: %(default)s)")
    run.add_argument("--samples", type=POSITIVE_INT, metavar="N", help="samples per seed (default: the preset's)")
    run.add_argument("--steps", type=POSITIVE_INT, metavar="N", help="pre-training steps (default: the preset's)")
    run.add_argument("--lambdas", type=FRACTION, nargs="+", metavar="L", help="SIPT lambda grid, chosen by validation link retrieval (default: the preset's)")
    run.add_argument("--mode", help=f"{' | '.join(FINETUNE_MODES)} (default: the preset's)")
    run.add_argument("--methods", nargs="+", default=[], metavar="NAME",
                     help="further pre-training methods (lm and sipt always run): linkbert, one arm per graph; "
                     "mlsm, lsm15, lsm, one arm per seed, taught by that seed's lm arm or --teacher")
    run.add_argument("--teacher", type=nonempty, metavar="DIR", help="MLSM / LSM teacher for every seed: a model directory with the "
                     "run's tokenizer (default: each seed's lm arm)")
    run.add_argument("--teacher-layer", type=integer(0), metavar="L", help="teacher layer whose hidden states are coded "
                     "(0 = embeddings; default: the last)")
    run.add_argument("--init", type=nonempty, help="warm start: char, minilm, gin or a model directory (default: the domain's)")
    run.add_argument("--data", type=nonempty, metavar="DIR", help="the domain's data directory (proteins, abstracts, networks; "
                     "layouts in docs/domains.md, `sipt-lab data fetch` downloads them)")
    run.add_argument("--device", default="auto", help="auto, cpu or cuda (default: %(default)s)")
    run.add_argument("--grad-accum", type=POSITIVE_INT, metavar="K", help="split each pre-training step's batch into K micro-batches "
                     "(the same effective batch in less GPU memory; default: the preset's)")
    run.add_argument("--executor", default="local", help=f"how cells run: {', '.join(EXECUTORS)} (default: %(default)s)")
    run.add_argument("--out", required=True, type=nonempty, metavar="DIR", help="output directory (cells are kept and resumed)")
    run.set_defaults(func=run_domain, field_flags={"ConceptOptions.layer": "--teacher-layer", "TrainConfig.grad_accum": "--grad-accum",
                                                   "TrainConfig.steps": "--steps", "TrainConfig.lambda_si": "--lambdas",
                                                   "DomainPreset.n_samples": "--samples"},
                     memory_hint="pass --grad-accum K to split each pre-training step's batch into K micro-batches, "
                     "or run under torchrun on more GPUs")


def run_finetune(args: argparse.Namespace) -> int:
    from sipt_lab.experiments.finetune_job import format_finetune_report, run_finetuning

    job = config_from_args(args, FinetuneJob, FINETUNE_JOB_FIELDS, finetune=config_from_args(args, FinetuneConfig, FINETUNE_FIELDS))
    print(format_finetune_report(run_finetuning(job, args.out, overwrite=args.overwrite)))
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
    from sipt_lab.experiments.domain.domain_cells import domain_cells
    from sipt_lab.experiments.domain.report import format_domain_summary
    from sipt_lab.experiments.presets import preset_for
    from sipt_lab.experiments.domain.run import run_domain
    from sipt_lab.experiments.finetune_job import check_mode
    from sipt_lab.experiments.pretrain_job import launched_rank
    from sipt_lab.training.train_config import split_batch

    outputs.check_output_dir(args.out)
    preset = preset_for(args.name, args.preset)
    changes = {"n_samples": args.samples, "lambdas": tuple(args.lambdas) if args.lambdas else None, "mode": args.mode}
    preset = dataclasses.replace(preset, **{k: v for k, v in changes.items() if v is not None})
    if args.steps is not None:
        preset = dataclasses.replace(preset, pretrain=dataclasses.replace(preset.pretrain, steps=args.steps), epochs=None)
    if args.grad_accum is not None:
        preset = dataclasses.replace(preset, pretrain=split_batch(preset.pretrain, args.grad_accum))
    check_mode(preset.mode)
    from sipt_lab.training.methods import ConceptOptions

    concepts = ConceptOptions(layer=args.teacher_layer)
    cells = domain_cells(args.name, args.graphs, args.seeds, preset, init=args.init, task=args.task, device=args.device,
                         methods=tuple(args.methods), data_dir=args.data, teacher=args.teacher, concepts=concepts)
    if launched_rank() == 0:  # one run at a time writes into --out (its cells have their own locks too)
        outputs.check_output_dir(args.out)
        with outputs.locked_dir(Path(args.out)) as out:
            outputs.prepare_grid_dir(out)
            summary = run_domain(cells, out, executor=args.executor)
    else:  # a torchrun process other than rank 0: rank 0 writes and reports
        run_domain(cells, Path(args.out), executor=args.executor)
        return 0
    print(format_domain_summary(summary))
    print(f"\nsummary: {out / 'summary.json'}   comparisons: {out / 'comparison.csv'}")
    return 0
