"""``sipt-lab study lc-transfer``: the held-out gain of SIPT over LM-only as a function of LC."""

from __future__ import annotations

import argparse

from sipt_lab.cli.arguments import (
    FRACTION,
    POSITIVE,
    POSITIVE_INT,
    SEED,
    integer,
    nonempty,
)
from sipt_lab.core.names import (
    ENCODER_PRESETS,
    POOLINGS,
    STRUCTURE_LOSSES,
    STUDY_METRICS,
    STUDY_PROTOCOLS,
)

#: LcTransferConfig / TrainConfig field -> the flag that sets it (for one-line config errors).
FIELD_FLAGS = {
    "LcTransferConfig.levels": "--levels", "LcTransferConfig.seeds": "--seeds", "LcTransferConfig.k": "--k",
    "LcTransferConfig.n_pretrain": "--n-pretrain", "LcTransferConfig.n_train": "--n-train",
    "LcTransferConfig.n_validation": "--n-validation", "LcTransferConfig.n_test": "--n-test",
    "LcTransferConfig.labels": "--labels", "LcTransferConfig.edges": "--edges", "LcTransferConfig.bootstrap": "--bootstrap",
    "TrainConfig.steps": "--steps", "TrainConfig.batch_size": "--batch-size", "TrainConfig.max_len": "--max-length",
    "TrainConfig.lr": "--lr", "TrainConfig.lambda_si": "--lambda-si",
}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "study", help="studies that answer one question with a figure, a CSV and a verdict line",
        description="`study lc-transfer`: does SIPT pre-training help on samples never pre-trained on, and does the "
        "pre-training graph's local consistency (LC) predict when? Pre-trains LM-only and SIPT arms from the same "
        "start over graphs whose LC is set by a dial q (cliques over labels that agree with the task with "
        "probability q), scores every arm and the untouched init on never-seen samples (3-NN with neighbours from "
        "the fine-tuning train split, a linear probe), and reports the paired gain per LC level with 95%% CIs, its "
        "slope against LC with a bootstrap CI, the LC where it crosses zero and the encoder's own neighbourhood "
        "consistency before pre-training.",
    )
    actions = parser.add_subparsers(dest="action", metavar="STUDY", required=True)
    run = actions.add_parser("lc-transfer", help="held-out gain of SIPT over LM-only against the graph's LC")
    run.add_argument("--samples", type=nonempty, metavar="S", help="samples file of the task (with --labels; default: vital-article summaries of 4 categories)")
    run.add_argument("--labels", type=nonempty, metavar="L.tsv", help="id<TAB>label of every sample")
    run.add_argument("--edges", type=nonempty, metavar="E.tsv",
                     help="the task's own graph (u<TAB>v sample ids): one more SIPT arm on it, its gain set beside what its LC predicts")
    run.add_argument("--n-pretrain", type=integer(2), default=600, metavar="N", help="pre-training samples (default: %(default)s)")
    run.add_argument("--n-train", type=integer(2), default=300, metavar="N", help="never-seen fine-tuning train samples: the k-NN references and probe data (default: %(default)s)")
    run.add_argument("--n-validation", type=POSITIVE_INT, default=100, metavar="N", help="never-seen validation samples (default: %(default)s)")
    run.add_argument("--n-test", type=POSITIVE_INT, default=300, metavar="N", help="never-seen test samples (default: %(default)s)")
    run.add_argument("--levels", type=FRACTION, nargs="+", default=[0.0, 0.25, 0.5, 0.75, 1.0], metavar="Q",
                     help="the dial's q grid, each in [0, 1] (q=0: the random control) (default: %(default)s)")
    run.add_argument("--seeds", default="3", metavar="K|auto",
                     help="seeds, each training every arm; auto: the fewest that detect --target-effect given --pilot (default: %(default)s)")
    run.add_argument("--pilot", type=nonempty, metavar="SUMMARY.json", help="an earlier (smaller) study's summary: its paired sd sets what the seeds can detect, printed before training")
    run.add_argument("--target-effect", type=POSITIVE, default=0.02, metavar="E", help="gain --seeds auto must detect (default: %(default)s)")
    run.add_argument("--init", type=nonempty, default="minilm", help="char, minilm or a Hugging Face directory (default: %(default)s)")
    run.add_argument("--pooling", choices=POOLINGS, help="pooling of a Hugging Face init (default: its own)")
    run.add_argument("--encoder", default="default", choices=ENCODER_PRESETS, help="size of the char encoder (default: %(default)s)")
    run.add_argument("--steps", type=POSITIVE_INT, default=100, metavar="N", help="pre-training steps of every trained arm (default: %(default)s)")
    run.add_argument("--batch-size", type=POSITIVE_INT, default=16, metavar="B", help="samples per step (default: %(default)s)")
    run.add_argument("--max-length", type=integer(2), default=64, metavar="T", help="tokens per sample (default: %(default)s)")
    run.add_argument("--lr", type=POSITIVE, help="peak learning rate (default: the init kind's)")
    run.add_argument("--lambda-si", type=FRACTION, help="SIPT arm's weight of L_SI (default: the init kind's)")
    run.add_argument("--loss", choices=STRUCTURE_LOSSES, help="structure-inducing loss (default: the init kind's)")
    run.add_argument("--protocol", default="inductive", choices=STUDY_PROTOCOLS,
                     help="inductive: fine-tuning splits never pre-trained on; transductive: every split pre-trained on too (default: %(default)s)")
    run.add_argument("--k", type=POSITIVE_INT, default=3, help="neighbours of the k-NN metric (default: %(default)s)")
    run.add_argument("--metric", default="knn_auroc", choices=STUDY_METRICS, help="metric of the gains and the slope (default: %(default)s)")
    run.add_argument("--split-seed", type=SEED, default=0, help="seed of the splits and the dial's graphs (default: %(default)s)")
    run.add_argument("--bootstrap", type=POSITIVE_INT, default=2000, metavar="B", help="bootstrap resamples of the slope's CI (default: %(default)s)")
    run.add_argument("--device", type=nonempty, default="auto", help="auto, cpu or cuda (default: %(default)s)")
    run.add_argument("--out", type=nonempty, required=True, metavar="DIR", help="output directory (new or empty; an earlier study's with --overwrite)")
    run.add_argument("--overwrite", action="store_true", help="replace the study in --out, removing only the files sipt-lab wrote there")
    run.set_defaults(func=run_lc_transfer, field_flags=FIELD_FLAGS, memory_hint="lower --batch-size or --max-length")


def lc_transfer_config(args: argparse.Namespace):
    """The :class:`~sipt_lab.experiments.study.lc_transfer.LcTransferConfig` the parsed flags describe."""
    from sipt_lab.training.defaults import init_kind, train_config
    from sipt_lab.core.errors import SiptError
    from sipt_lab.experiments.study.config import LcTransferConfig
    from sipt_lab.experiments.study.stats import pilot_sd
    from sipt_lab.core.stats import seeds_for_effect

    if args.seeds == "auto" and args.pilot is None:
        raise SiptError("--seeds auto needs a pilot's variance; pass --pilot SUMMARY.json of an earlier study with at least two seeds, or give --seeds K")
    if args.seeds != "auto" and not args.seeds.isdigit():
        raise SiptError(f"--seeds takes a number of seeds or auto, got {args.seeds!r}")
    sd = None if args.pilot is None else pilot_sd(args.pilot)
    seeds = seeds_for_effect(sd, args.target_effect) if args.seeds == "auto" else int(args.seeds)

    train = train_config(init_kind(args.init), steps=args.steps, batch_size=args.batch_size, max_len=args.max_length,
                         lr=args.lr, lambda_si=args.lambda_si, loss=args.loss, device=args.device)
    return LcTransferConfig(samples=args.samples, labels=args.labels, edges=args.edges, n_pretrain=args.n_pretrain, n_train=args.n_train,
                            n_validation=args.n_validation, n_test=args.n_test, levels=tuple(args.levels), seeds=seeds,
                            init=args.init, pooling=args.pooling, encoder=args.encoder, train=train, k=args.k,
                            metric=args.metric, split_seed=args.split_seed, bootstrap=args.bootstrap,
                            pilot_sd=sd, protocol=args.protocol)


def run_lc_transfer(args: argparse.Namespace) -> int:
    from sipt_lab.experiments.study.lc_transfer import run_lc_transfer as run_study

    run_study(lc_transfer_config(args), args.out, overwrite=args.overwrite)
    return 0
