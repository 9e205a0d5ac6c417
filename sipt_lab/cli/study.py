"""``sipt-lab study lc-transfer``: the held-out gain of SIPT over LM-only as a function of LC."""

from __future__ import annotations

import argparse
import re

from sipt_lab.cli.arguments import (
    PER_SAMPLE_FIELDS,
    POSITIVE,
    add_time_limit_argument,
    fill_training_defaults,
    nonempty,
    training_settings,
)
from sipt_lab.core.options import add_config_arguments, config_from_args, flag_of, record_field_flags
from sipt_lab.studies.lc.config import STUDY_PRESETS, STUDY_TRAIN, LcTransferConfig
from sipt_lab.training.defaults import PER_KIND_FIELDS, default_help
from sipt_lab.training.train_config import TrainConfig

#: LcTransferConfig fields set by flags of the same name (``seeds`` aside: ``--seeds`` also takes ``auto``).
STUDY_FIELDS = (
    "samples",
    "labels",
    "edges",
    "groups",
    "n_pretrain",
    "n_train",
    "n_validation",
    "n_test",
    "levels",
    "init",
    "pooling",
    "encoder",
    "protocol",
    "k",
    "metric",
    "split_seeds",
    "geometry_arm",
    "task",
    "corpus",
    "categories",
    "finetune_epochs",
    "finetune_lr",
    "per_sample_arm",
    "natural_graph",
)
#: TrainConfig fields of the study's flags: the run's length and batch, and those the init kind sets.
TRAIN_FIELDS = (
    "steps",
    "batch_size",
    "max_len",
    "lr",
    "lambda_si",
    "loss",
    "head_warmup",
    "eval_every",
    *PER_SAMPLE_FIELDS,
)
#: Those and the device's.
STUDY_TRAIN_FIELDS = (*TRAIN_FIELDS, "precision", "device")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "study",
        help="studies that answer one question with a figure, a CSV and a verdict line",
        description="`study lc-transfer`: does SIPT pre-training help on samples never pre-trained on, and does the "
        "pre-training graph's local consistency (LC) predict when? Pre-trains LM-only and SIPT arms from the same "
        "start over graphs whose LC is set by a dial q (cliques over labels that agree with the task with "
        "probability q), on grouped splits (no article or --groups group on both sides) over several split seeds, "
        "scores every arm, the untouched init and the labels-direct baselines (init and LM-only given the dial's "
        "labels) on never-seen samples (3-NN with neighbours from the fine-tuning train split, a linear probe), and "
        "reports per metric the paired gain per LC level with Student-t 95%% CIs, its slope against LC (t over the "
        "replicates' own lines), the LC where it crosses zero (Fieller CI) and the encoder's own neighbourhood "
        "consistency before pre-training; the verdict is on the pre-registered --metric (3-NN accuracy).",
    )
    actions = parser.add_subparsers(dest="action", metavar="STUDY", required=True)
    run = actions.add_parser("lc-transfer", help="held-out gain of SIPT over LM-only against the graph's LC")
    run.add_argument(
        "--preset",
        choices=list(STUDY_PRESETS),
        help="a named scale: cpu = CLIQUES over the embedded corpus, 1,000 pre-training and 1,000 never-seen "
        "sentences, 5 levels x 5 seeds, MiniLM; gpu-wiki = every categorised vital article (900 never-seen test "
        "articles), 5 seeds, fine-tuning too, on CUDA. Flags and --config override it",
    )
    run.option_presets = {name: preset_options(preset) for name, preset in STUDY_PRESETS.items()}
    add_config_arguments(run, LcTransferConfig, ("task", "corpus", "categories", *STUDY_FIELDS[:4], "natural_graph"))
    add_config_arguments(run, LcTransferConfig, STUDY_FIELDS[4:9])
    run.add_argument(
        "--seeds",
        default="3",
        metavar="K|auto",
        help="seeds, each training every arm; auto: the fewest that detect --target-effect given --pilot (default: %(default)s)",
    )
    run.add_argument(
        "--pilot",
        type=nonempty,
        metavar="SUMMARY.json",
        help="an earlier (smaller) study's summary: its paired sd sets what the seeds can detect, printed before training",
    )
    run.add_argument(
        "--target-effect",
        type=POSITIVE,
        default=0.02,
        metavar="E",
        help="gain --seeds auto must detect (default: %(default)s)",
    )
    record_field_flags(run, {"LcTransferConfig.seeds": "--seeds", "LcTransferConfig.pilot_sd": "--pilot"})
    # the encoder's fields as the model layer names them
    record_field_flags(run, {"PretrainJob.init": "--init", "PretrainJob.pooling": "--pooling"})
    add_config_arguments(run, LcTransferConfig, ("init", "pooling", "encoder"))
    add_config_arguments(
        run,
        TrainConfig,
        TRAIN_FIELDS,
        defaults={name: None for name in PER_KIND_FIELDS} | dict(STUDY_TRAIN),
        default_help={name: default_help(name) for name in PER_KIND_FIELDS},
        help={
            "steps": "pre-training steps of every trained arm (default: %(default)s)",
            "batch_size": "samples per step (default: %(default)s)",
            "head_warmup": "steps that fit a new MLM head with the encoder frozen, once per seed for all arms "
            "(default: the init kind's)",
            "eval_every": "score every trained arm on the never-seen validation split every N steps and at its "
            "last step, into evaluations.csv (default: off)",
        },
        argparse_options={"lr": {"metavar": None}, "lambda_si": {"metavar": None}},
    )
    add_config_arguments(run, TrainConfig, ("precision",))
    add_config_arguments(
        run,
        LcTransferConfig,
        (
            *STUDY_FIELDS[STUDY_FIELDS.index("protocol") : STUDY_FIELDS.index("task")],
            "finetune_epochs",
            "finetune_lr",
            "per_sample_arm",
        ),
    )
    add_config_arguments(run, TrainConfig, ("device",), help={"device": "auto, cpu or cuda (default: %(default)s)"})
    add_run_arguments(run, run_lc_transfer, "study", "seeds", "with the same settings", STUDY_TRAIN_FIELDS)
    register_atlas(actions)


def add_run_arguments(parser, func, run: str, units: str, resumed: str, train_fields: tuple[str, ...]) -> None:
    """``--out``, ``--resume`` and ``--overwrite`` of a study whose finished ``units`` (seeds, arms)
    are kept, and the command's ``func`` with its hints; ``resumed``: what a resumed ``run`` may change;
    ``train_fields``: the TrainConfig fields of its flags, which the resolver fills in when left out."""
    parser.add_argument(
        "--out",
        type=nonempty,
        required=True,
        metavar="DIR",
        help=f"output directory (new or empty; an earlier {run}'s with --resume or --overwrite)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help=f"continue the {run} in --out {resumed}: its finished {units} are kept, the others trained",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help=f"replace the {run} in --out, removing only the files sipt-lab wrote there",
    )
    add_time_limit_argument(parser, units)
    parser.set_defaults(
        func=func,
        fill_defaults=lambda args: fill_training_defaults(args, train_fields, inputs=False),
        train_settings={},
        memory_hint="lower --batch-size or --max-length",
        interrupt_hint=f"its finished {units} are kept: pass --resume to the same command to train the others",
    )


def preset_options(preset: dict, cls: type = LcTransferConfig) -> dict:
    """A preset (:data:`~sipt_lab.studies.lc.config.STUDY_PRESETS` entry, or ``cls``'s
    presets) by config-file key (its flags without the dashes), as ``--preset`` applies it."""
    fields = [(cls, name, value) for name, value in preset.items() if name != "train"]
    fields += [(TrainConfig, name, value) for name, value in preset.get("train", {}).items()]
    options = {
        flag_of(cls, name).removeprefix("--"): list(value) if isinstance(value, tuple) else value
        for cls, name, value in fields
    }
    if "seeds" in options:
        options["seeds"] = str(options["seeds"])  # --seeds also takes auto
    return options


def lc_transfer_config(args: argparse.Namespace):
    """The :class:`~sipt_lab.studies.lc.config.LcTransferConfig` the parsed flags describe."""
    from sipt_lab.core.errors import SiptError
    from sipt_lab.core.stats import seeds_for_effect
    from sipt_lab.studies.lc.config import LcTransferConfig
    from sipt_lab.studies.lc.gain_stats import pilot_sd
    from sipt_lab.training.defaults import init_kind, resolve_train_config

    if args.seeds == "auto" and args.pilot is None:
        raise SiptError(
            "--seeds auto needs a pilot's variance; pass --pilot SUMMARY.json of an earlier study with at least two seeds, or give --seeds K"
        )
    if args.seeds != "auto" and not re.fullmatch(r"[0-9]+", args.seeds):
        raise SiptError(f"--seeds takes a number of seeds or auto, got {args.seeds!r}")
    sd = None if args.pilot is None else pilot_sd(args.pilot)
    splits = len(args.split_seeds or LcTransferConfig.split_seeds)
    # auto: the fewest seeds whose replicates (seeds x split seeds) detect the target
    seeds = -(-seeds_for_effect(sd, args.target_effect) // splits) if args.seeds == "auto" else int(args.seeds)

    train = resolve_train_config(init_kind(args.init), training_settings(args, STUDY_TRAIN_FIELDS))
    return config_from_args(args, LcTransferConfig, STUDY_FIELDS, seeds=seeds, train=train, pilot_sd=sd)


def run_lc_transfer(args: argparse.Namespace) -> int:
    from sipt_lab.studies.lc.transfer import run_lc_transfer as run_study

    run_study(
        lc_transfer_config(args),
        args.out,
        resume=args.resume,
        overwrite=args.overwrite,
        log=print,
        time_limit=args.time_limit,
    )
    return 0


#: AtlasConfig fields set by flags of the same name.
ATLAS_FIELDS = (
    "languages",
    "tasks",
    "graphs",
    "dial_tasks",
    "dial_levels",
    "n_pretrain",
    "n_never_seen",
    "split_seeds",
    "seeds",
    "budgets",
    "init",
    "pooling",
    "k",
    "metric",
)
#: TrainConfig fields of the atlas's flags (its steps are its budgets).
ATLAS_TRAIN_FIELDS = ("batch_size", "max_len", "lr", "lambda_si", "head_warmup")


def register_atlas(actions) -> None:
    """``sipt-lab study atlas``: SIPT's held-out gain over natural (graph, task) pairs and its predictor."""
    from sipt_lab.studies.lc.atlas_config import ATLAS_PRESETS, ATLAS_TRAIN, AtlasConfig

    atlas = actions.add_parser(
        "atlas",
        help="SIPT's held-out gain over natural (graph, task) pairs, and the predictor `advise` uses",
        description="`study atlas`: pre-trains LM-only and one SIPT arm per natural graph (mentions, k-NN "
        "graphs, the init's own neighbourhoods, a random control; none built from a task's labels) over vital "
        "articles in English and French, scores every arm on never-seen articles under every task (category, "
        "description head nouns, era, nationality) after each training budget, and chooses the predictor of "
        "one run's gain over LM-only (trivial baselines beside LC and the init's own consistency) by leaving "
        "out whole graphs, tasks and languages; writes atlas.csv, runs.csv, validation.csv, fit.json and atlas.png.",
    )
    atlas.add_argument(
        "--preset",
        choices=list(ATLAS_PRESETS),
        help="a named scale: cpu (2 cores, about an hour of two one-thread processes) or gpu-wiki (CUDA)",
    )
    atlas.option_presets = {name: preset_options(preset, AtlasConfig) for name, preset in ATLAS_PRESETS.items()}
    add_config_arguments(atlas, AtlasConfig, ATLAS_FIELDS)
    add_config_arguments(
        atlas,
        TrainConfig,
        ATLAS_TRAIN_FIELDS,
        defaults={name: None for name in PER_KIND_FIELDS} | dict(ATLAS_TRAIN),
        default_help={name: default_help(name) for name in PER_KIND_FIELDS},
        argparse_options={"lr": {"metavar": None}, "lambda_si": {"metavar": None}},
    )
    add_config_arguments(atlas, TrainConfig, ("precision", "device"))
    add_run_arguments(
        atlas,
        run_atlas,
        "atlas",
        "arms",
        "(it may grow by languages, graphs, dial tasks and seeds; the rest unchanged)",
        (*ATLAS_TRAIN_FIELDS, "precision", "device"),
    )


def run_atlas(args: argparse.Namespace) -> int:
    from sipt_lab.studies.lc.atlas import run_atlas as run
    from sipt_lab.studies.lc.atlas_config import AtlasConfig
    from sipt_lab.training.defaults import init_kind, resolve_train_config

    train = resolve_train_config(
        init_kind(args.init), training_settings(args, (*ATLAS_TRAIN_FIELDS, "device", "precision"))
    )
    run(
        config_from_args(args, AtlasConfig, ATLAS_FIELDS, train=train),
        args.out,
        resume=args.resume,
        overwrite=args.overwrite,
        log=print,
        time_limit=args.time_limit,
    )
    return 0
