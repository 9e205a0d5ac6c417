"""``sipt-lab pretrain``, ``lambda-sweep`` and ``embed``: SIPT on your own samples, graph and model."""

from __future__ import annotations

import argparse

from sipt_lab.cli.arguments import (
    GRID_INTERRUPT_HINT,
    PER_SAMPLE_FIELDS,
    QUIET_HELP,
    WATCH_FIELDS,
    add_objective_arguments,
    add_train_arguments,
    fill_training_defaults,
    nonempty,
    training_settings,
)
from sipt_lab.core.options import add_config_arguments, config_from_args, record_field_flags
from sipt_lab.jobs.configs import EmbedJob, LambdaSweep, PretrainJob
from sipt_lab.models.names import ENCODER_PRESETS

#: TrainConfig fields of a run's batch, optimiser, sample length, seed and device, in --help's order.
RUN_FIELDS = (
    "batch_size",
    "grad_accum",
    "lr",
    "warmup",
    "schedule",
    "head_warmup",
    "head_lr",
    "max_len",
    "seed",
    "device",
    "precision",
    "checkpoint_every",
)
#: TrainConfig fields set by the shared flags of ``pretrain`` and ``lambda-sweep`` (``lambda_si``
#: apart: ``pretrain`` takes it, ``lambda-sweep`` sweeps it).
TRAIN_FIELDS = ("steps", *RUN_FIELDS, "loss", "pairs", "negatives", "mask_replacement")
#: PretrainJob fields set by the shared flags.
JOB_FIELDS = ("samples", "edges", "labels", "init", "encoder", "pooling", "epochs")
#: What to do when a pre-training step does not fit in GPU memory (the CLI's out-of-memory message).
PRETRAIN_MEMORY_HINT = (
    "lower --batch-size and raise --grad-accum by the same factor (the same effective batch), "
    "lower --max-length, or use --precision bf16"
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "pretrain",
        help="pre-train an encoder on your samples and graph (L_M + lambda * L_SI) and export it",
        description="Pre-train an encoder on your own samples with the masked-LM objective plus the "
        "structure-inducing loss over your pre-training graph, warm-starting from a Hugging Face "
        "checkpoint or a fresh character transformer, and export it (Hugging Face + "
        "sentence-transformers directory). --lambda-si 0 is continued LM pre-training on the same "
        "samples (the 'same data, no structure' ablation). With --labels, a report before and after "
        "pre-training: the labels' local consistency over the graph (Theorem 1), LOO 3-NN AUROC and "
        "link retrieval. Runs under `torchrun --nproc_per_node K --no-python sipt-lab pretrain ...` "
        "with DistributedDataParallel.",
    )
    add_training_arguments(parser)
    add_config_arguments(parser, PretrainJob, ("method", "teacher"))
    add_train_arguments(parser, PER_SAMPLE_FIELDS)
    add_train_arguments(parser, ("lambda_si",))
    add_train_arguments(parser, WATCH_FIELDS)
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out from its checkpoint (the same settings; a larger --steps only with --schedule constant and no --warmup, so that no learning-rate schedule is spliced)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the run in --out, removing only the files sipt-lab wrote there",
    )
    parser.set_defaults(
        func=run_pretrain,
        fill_defaults=fill_pretrain_defaults,
        train_settings={},
        memory_hint=PRETRAIN_MEMORY_HINT,
        interrupt_hint="a checkpoint it wrote is kept (pass --resume to the same command to continue from it); "
        "stopped before its first one, it leaves --out as it was",
    )

    sweep = subparsers.add_parser(
        "lambda-sweep",
        help="pre-train one model per lambda_SI and choose lambda by link retrieval on G_PT (no FT labels)",
        description="Hold a random fraction of the linked samples out of pre-training, pre-train one "
        "model per --lambdas value (each an ordinary pretrain run in DIR/lambda-<L>), and choose lambda_SI "
        "by how well each model's embeddings retrieve the held-out samples' G_PT neighbours (links no run "
        "saw), as the paper chose it (Methods, Tables 9-10) but without scoring on fitted links. The "
        "paper's measure, retrieval on the pre-training graph, is reported beside it. Re-running the same "
        "command resumes.",
    )
    add_training_arguments(sweep)
    add_config_arguments(sweep, LambdaSweep, ("lambdas", "validation", "metric"))
    record_field_flags(sweep, {"TrainConfig.lambda_si": "--lambdas"})
    sweep.set_defaults(
        func=run_lambda_sweep,
        fill_defaults=fill_pretrain_defaults,
        train_settings={},
        memory_hint=PRETRAIN_MEMORY_HINT,
        interrupt_hint=GRID_INTERRUPT_HINT,
    )

    embed = subparsers.add_parser(
        "embed",
        help="embed a samples file with a pre-trained encoder",
        description="Write EMB.npy (float32, one row per sample, in file order) and EMB.ids.tsv with an "
        "encoder saved by `sipt-lab pretrain` (DIR/model) or any Hugging Face checkpoint directory.",
    )
    add_config_arguments(embed, EmbedJob, ("model", "samples"), required=("model", "samples"))
    embed.add_argument(
        "--out", required=True, type=nonempty, metavar="EMB", help="output .npy path (its ids go to EMB.ids.tsv)"
    )
    embed.add_argument("--overwrite", action="store_true", help="replace an existing EMB.npy and EMB.ids.tsv")
    add_config_arguments(embed, EmbedJob, ("batch_size", "device"), argparse_options={"device": {"type": None}})
    embed.set_defaults(func=run_embed, memory_hint="lower --batch-size")


def add_training_arguments(parser) -> None:
    """The flags of one pre-training run, shared by ``pretrain`` and ``lambda-sweep``: generated from
    :class:`PretrainJob`'s and :class:`TrainConfig`'s fields."""
    add_config_arguments(
        parser,
        PretrainJob,
        ("samples", "edges", "labels", "init", "encoder", "pooling"),
        required=("samples", "edges"),
        argparse_options={"encoder": {"choices": sorted(ENCODER_PRESETS)}},
    )
    add_objective_arguments(parser)
    length = parser.add_mutually_exclusive_group()
    add_config_arguments(parser, PretrainJob, ("epochs",), container=length)
    add_train_arguments(parser, ("steps",), container=length)
    add_train_arguments(parser, RUN_FIELDS)
    parser.add_argument("--out", required=True, type=nonempty, metavar="DIR", help="output directory")
    parser.add_argument("-q", "--quiet", action="store_true", help=QUIET_HELP)


#: TrainConfig fields of ``pretrain``'s flags (``lambda-sweep`` has all but ``lambda_si`` and the watch).
PRETRAIN_TRAIN_FIELDS = (*TRAIN_FIELDS, *WATCH_FIELDS, *PER_SAMPLE_FIELDS, "lambda_si")


def fill_pretrain_defaults(args: argparse.Namespace) -> None:
    """:func:`~sipt_lab.cli.arguments.fill_training_defaults` of the training flags, and one pass
    (``--epochs 1``) when neither ``--steps`` nor ``--epochs`` is given."""
    fill_training_defaults(args, PRETRAIN_TRAIN_FIELDS)
    if args.steps is None and args.epochs is None:
        args.epochs = 1.0


def training_job(args: argparse.Namespace, **job_options) -> PretrainJob:
    """The :class:`PretrainJob` the shared flags describe, with ``job_options`` (``method``,
    ``teacher``) set, through :func:`~sipt_lab.jobs.configs.resolve_pretrain_job`."""
    from sipt_lab.jobs.configs import resolve_pretrain_job

    job_fields = {name: getattr(args, name) for name in JOB_FIELDS}
    return resolve_pretrain_job(training_settings(args, PRETRAIN_TRAIN_FIELDS), **job_fields, **job_options)


def run_pretrain(args: argparse.Namespace) -> int:
    from sipt_lab.jobs.pretrain import run_pretraining

    job = training_job(args, method=args.method, teacher=args.teacher)
    try:
        outcome = run_pretraining(job, args.out, resume=args.resume, overwrite=args.overwrite, log=print)
    finally:  # under torchrun the trainer joined a process group: leave it cleanly
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
    if not outcome.main:  # a torchrun process other than rank 0: rank 0 reports
        return 0
    if outcome.report.get("before") is not None:
        print(theorem1_message(outcome.report))
    else:
        for warning in outcome.report["warnings"]:
            print(f"warning: {warning}")
    print(f"model: {outcome.out_dir / 'model'}   history: {outcome.out_dir / 'history.csv'}")
    return 0


def run_lambda_sweep(args: argparse.Namespace) -> int:
    from sipt_lab.jobs.lambda_sweep import format_sweep, run_lambda_sweep

    sweep = config_from_args(args, LambdaSweep, ("lambdas", "validation", "metric"), job=training_job(args))
    outcome = run_lambda_sweep(sweep, args.out, log=print)
    print(format_sweep(outcome, sweep.metric))
    return 0


def run_embed(args: argparse.Namespace) -> int:
    from sipt_lab.jobs.pretrain import embed_samples

    job = config_from_args(args, EmbedJob)
    vectors, ids = embed_samples(
        job.model, job.samples, args.out, batch_size=job.batch_size, device=job.device, overwrite=args.overwrite
    )
    print(f"embeddings: {vectors}   ids: {ids}")
    return 0


def theorem1_message(report: dict) -> str:
    """One paragraph reading a report with labels as Theorem 1 does (and its warnings, if any)."""
    lc, before, after = report["local_consistency"], report["before"], report["after"]
    warnings = "".join(f"\nwarning: {warning}" for warning in report.get("warnings", ()))
    return (
        f"local consistency of your labels over G_PT: {lc:.3f}. Theorem 1: an optimal SIPT embedder's "
        f"nearest-neighbour accuracy tends to at least {lc:.3f} as the graph grows, so SIPT on this graph can "
        f"help this task only as far as LC exceeds what the encoder already reaches.\n"
        f"LOO 3-NN accuracy {before['loo_3nn_accuracy']:.3f} -> {after['loo_3nn_accuracy']:.3f}, "
        f"r-NN accuracy at the radius best recovering G_PT {before['radius_nn_accuracy']:.3f} -> "
        f"{after['radius_nn_accuracy']:.3f} (recovery F1 {before['radius_f1']:.3f} -> {after['radius_f1']:.3f}), "
        f"AUROC {before['loo_3nn_auroc']:.3f} -> {after['loo_3nn_auroc']:.3f}; "
        f"link MRR {before['link_mrr']:.3f} -> {after['link_mrr']:.3f}"
    ) + warnings
