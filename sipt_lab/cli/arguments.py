"""What the commands share: typed command-line values (every numeric flag is parsed with its
range, every path flag refuses an empty string, and a bad value is one line, ``sipt-lab: error:
--lr ...``, exit 2), the training flags generated from :class:`TrainConfig`'s fields with the
values the resolver fills in for those left out, the loss-parameter and preset flags, and logging.
No command imports another: what two commands share lives here.

``integer`` and ``number`` (from :mod:`sipt_lab.core.options`, where config fields make flags) build
argparse ``type=`` callables; :class:`OneLineParser` is the parser
class of ``sipt-lab`` and all its subcommands (argparse's own usage block is left out of errors,
``--help`` still shows it).
"""

from __future__ import annotations

import argparse
import math
import re

from sipt_lab.core.errors import SiptError
from sipt_lab.core.options import add_config_arguments, integer, nonempty, number, options_of, record_field_flags
from sipt_lab.objectives.names import STRUCTURE_LOSSES
from sipt_lab.studies.simulation.simulate_job import PRESET_HELP, SimulateJob
from sipt_lab.training.defaults import default_help, kind_default
from sipt_lab.training.names import LR_SCHEDULES, NEGATIVE_SAMPLERS, PAIR_MODES
from sipt_lab.training.train_config import EVAL_EVERY_DEFAULT, TrainConfig

__all__ = [
    "FRACTION",
    "GRID_INTERRUPT_HINT",
    "OBJECTIVE_FIELDS",
    "PER_SAMPLE_FIELDS",
    "POSITIVE",
    "POSITIVE_INT",
    "PRESET_DEFAULT",
    "SEED",
    "WATCH_FIELDS",
    "OneLineParser",
    "add_logging_arguments",
    "add_objective_arguments",
    "add_preset_flags",
    "add_train_arguments",
    "fill_training_defaults",
    "integer",
    "nonempty",
    "number",
    "objective_changes",
    "parse_loss_params",
    "setup_logging",
    "training_settings",
]


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors raise a :class:`SiptError` naming the problem and
    ``--help`` (so the CLI prints them as one line, exit status 2, like every other bad input).
    Abbreviated flags are refused (``--epoch`` is not ``--epochs``): an abbreviation would slip past
    the checks that name whole flags (``--steps`` excludes ``--epochs``) and change meaning when a
    flag is added. Subcommands' parsers are of this class too."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{"allow_abbrev": False, **kwargs})

    def error(self, message: str):  # argparse's hook
        flag = re.match(r"argument ([^:/ ]+)(?:/\S+)?: (.*)", message, re.S)
        if flag:  # "argument --lr: must be ..." -> "--lr must be ...", as library errors name flags
            message = f"{flag[1]} {flag[2]}"
        elif message.startswith("unrecognized arguments"):
            message += " (flags are written in full: abbreviations are refused)"
        raise SiptError(f"{' '.join(message.split())} (see {self.prog} --help)")


#: Shared ranges: seeds and counts that must be at least one.
SEED = integer(0)
#: What Ctrl-C leaves of a run made of resumable grid cells (``interrupt_hint``).
GRID_INTERRUPT_HINT = "its finished cells are kept: run the same command again to resume"
POSITIVE_INT = integer(1)
FRACTION = number(0.0, 1.0)
POSITIVE = number(0.0, low_open=True)


#: Exit status of a run stopped by ``--time-limit`` with work left: neither success nor an error.
STOPPED_AT_TIME_LIMIT = 3


def add_time_limit_argument(parser: argparse.ArgumentParser, units: str) -> None:
    """``--time-limit SECONDS``: start no more of the run's ``units`` (seeds, arms, cells) that would
    likely end after that many seconds from the command's start."""
    parser.add_argument(
        "--time-limit",
        type=POSITIVE,
        metavar="SECONDS",
        help=f"start no {units} that would likely end after SECONDS from now (the longest so far, plus a "
        f"tenth); the run then stops with exit status {STOPPED_AT_TIME_LIMIT}, its finished {units} kept for "
        "the next call (serial executor)",
    )


#: What ``-q`` / ``--quiet`` does, in every command.
QUIET_HELP = "warnings and errors only, no progress bars"


def add_logging_arguments(parser: argparse.ArgumentParser, subcommand: bool = False) -> None:
    """``-v`` / ``-q`` (:func:`setup_logging` reads them): of ``sipt-lab`` itself, and with
    ``subcommand`` the same flags after a subcommand's name, which leave the values given before it
    alone when absent (argparse copies a subparser's defaults over its parent's). A subcommand with
    a ``-q`` / ``--quiet`` of its own (a switch its option files may set) keeps it, with the same meaning."""
    default = argparse.SUPPRESS if subcommand else False
    parser.add_argument("-v", "--verbose", action="store_true", default=default, help="debug messages too")
    if "--quiet" not in parser._option_string_actions:
        parser.add_argument("-q", "--quiet", dest="log_quiet", action="store_true", default=default, help=QUIET_HELP)


def setup_logging(args: argparse.Namespace) -> None:
    """Configure the ``sipt_lab`` logger once per command: ``-v`` DEBUG, ``-q`` (or a subcommand's
    own ``--quiet``, or ``--json``: machine-read output, as before without progress) WARNING, else
    INFO (:func:`sipt_lab.core.progress.configure_logging`)."""
    from sipt_lab.core.progress import configure_logging, level_from_flags

    quiet = any(getattr(args, name, False) for name in ("log_quiet", "quiet", "json"))
    configure_logging(level_from_flags(getattr(args, "verbose", False), quiet))


# --- training flags: generated from TrainConfig's fields, filled in by the resolver ---

#: TrainConfig fields that define the objective besides the method and λ (flags of ``pretrain`` and ``domain run``).
OBJECTIVE_FIELDS = ("loss", "pairs", "negatives", "mask_replacement")
#: What ``domain run``'s objective flags say of their default.
PRESET_DEFAULT = "(default: the preset's)"
#: TrainConfig fields of the per-sample baselines' labels (``pretrain``, ``domain run``, ``simulate``, ``study``).
PER_SAMPLE_FIELDS = ("pt_labels", "allow_missing")


#: TrainConfig fields whose flag is a switch (off unless given).
SWITCHES = ("allow_missing",)
#: TrainConfig fields that watch a run (evaluations, best model, logging): ``pretrain``'s flags only.
WATCH_FIELDS = ("eval_every", "keep_best", "patience", "report_to")


def add_objective_arguments(parser, preset: bool = False) -> None:
    """The flags of the :class:`TrainConfig` fields that define the objective besides the method and
    ``λ`` (:data:`OBJECTIVE_FIELDS`, ``--loss-param``), shared by ``pretrain`` and ``domain run``;
    ``preset``: every flag defaults to None, the preset's value (``domain run``)."""
    add_train_arguments(parser, ("loss",), preset=preset)
    parser.add_argument(
        "--loss-param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"a parameter of that loss, repeatable {PRESET_DEFAULT if preset else default_help('loss_params')}",
    )
    record_field_flags(parser, {"TrainConfig.loss_params": "--loss-param"})
    add_train_arguments(parser, OBJECTIVE_FIELDS[1:], preset=preset)


def objective_changes(args: argparse.Namespace) -> dict:
    """The :data:`OBJECTIVE_FIELDS`, ``loss_params`` and :data:`PER_SAMPLE_FIELDS` values the flags
    of :func:`add_objective_arguments` gave (those left out absent)."""
    given = {name: getattr(args, name) for name in OBJECTIVE_FIELDS + PER_SAMPLE_FIELDS}
    changes = {name: value for name, value in given.items() if value not in (None, False)}
    return changes | ({"loss_params": parse_loss_params(args.loss_param)} if args.loss_param else {})


def add_train_arguments(parser, fields, container=None, preset: bool = False) -> None:
    """Flags of ``fields`` of :class:`TrainConfig`, each defaulting to None, the value the resolver
    gives it (:func:`fill_training_defaults` fills it in; ``--help`` names each init kind's, or with
    ``preset`` says it is the preset's); a switch defaults to off, ``--steps`` to one pass."""
    options = options_of(TrainConfig)
    settable = [name for name in fields if name not in SWITCHES]
    add_config_arguments(
        parser,
        TrainConfig,
        fields,
        container=container,
        defaults={name: None for name in settable},
        default_help={
            name: "the preset's" if preset else options[name].default_help or default_help(name)
            for name in settable
            if name != "steps" and (preset or options[name].default_help or kind_default("char", name) is not None)
        }
        | ({} if preset else {"max_len": "the checkpoint's, 256 for minilm"}),
        argparse_options={
            **{
                name: {"choices": sorted(choices)}
                for name, choices in (
                    ("loss", STRUCTURE_LOSSES),
                    ("pairs", PAIR_MODES),
                    ("negatives", NEGATIVE_SAMPLERS),
                    ("schedule", LR_SCHEDULES),
                )
                if name in fields
            },
            "eval_every": {"nargs": "?", "const": EVAL_EVERY_DEFAULT},
        },
    )


def training_settings(args: argparse.Namespace, fields: tuple[str, ...]) -> dict:
    """The values of the :class:`TrainConfig` ``fields`` whose flags (or config file) gave one,
    ``--loss-param``'s, and the config file's ``[train-config]`` fields under them: the layer over
    the init kind's defaults in :func:`~sipt_lab.training.defaults.resolve_train_config`."""
    given = {name: getattr(args, name, None) for name in fields}
    loss_params = parse_loss_params(getattr(args, "loss_param", None) or [])
    return (
        dict(getattr(args, "train_settings", None) or {})
        | {name: value for name, value in given.items() if value is not None}
        | ({"loss_params": loss_params} if loss_params else {})
    )


def fill_training_defaults(args: argparse.Namespace, fields: tuple[str, ...], inputs: bool = True) -> None:
    """Set the flags of the :class:`TrainConfig` ``fields`` left out (``steps`` aside, which one
    pass makes) and ``--loss-param`` to the values the run will use, the resolver's (the init
    kind's, then the method's), and with ``inputs`` ``--max-length`` and ``--pooling`` to the init's
    own input length and pooling. So ``--print-config`` and the run's ``config.toml`` hold every
    value, and a rerun from them does not depend on a later version's defaults. (A study keeps
    ``--pooling`` unset, the init's own, so that its committed cells keep their hashes.)"""
    from sipt_lab.training.defaults import init_kind, resolved_train_options

    values = resolved_train_options(
        init_kind(args.init), training_settings(args, fields), method=getattr(args, "method", None)
    )
    for name in fields:
        if name != "steps" and getattr(args, name, False) is None:
            setattr(args, name, values[name])
    args.train_settings = unflagged_settings(args, values)
    if hasattr(args, "loss_param"):
        args.loss_param = loss_param_flags(values["loss_params"])
    if inputs and (args.max_len is None or args.pooling is None):  # the init's own, from its files
        from sipt_lab.models.sources import init_source

        inputs = init_source(args.init, getattr(args, "encoder", "default"), args.pooling).input_defaults()
        args.max_len = args.max_len or inputs["max_len"]
        args.pooling = args.pooling or inputs["pooling"]


def unflagged_settings(args: argparse.Namespace, values: dict, leave_out: tuple[str, ...] = ("steps", "seed")) -> dict:
    """The resolved TrainConfig ``values`` of the fields that have no flag on this command (but
    ``leave_out``: the run's length, and the seed a study or simulation sets per seed): what a
    run's ``config.toml`` keeps in its ``[train-config]`` table."""
    flagged = {name.partition(".")[2] for name in args.field_flags if name.startswith("TrainConfig.")}
    return {
        name: value
        for name, value in values.items()
        if name not in flagged and name not in leave_out and value is not None  # None: unset, as by default
    }


def add_preset_flags(parser: argparse.ArgumentParser, cls: type = SimulateJob, **options) -> None:
    """``--preset``, ``--encoder`` and ``--batched`` from the fields of ``cls`` (``SimulateJob``, or
    ``FigureOptions`` for ``sipt-lab figures``)."""
    preset_help = f"{PRESET_HELP.removesuffix(')')}; default: %(default)s)"  # the default inside the parenthesis
    add_config_arguments(
        parser, cls, ("preset", "encoder", "batched"), check=False, help={"preset": preset_help}, **options
    )


def loss_param_flags(params: dict[str, float]) -> list[str]:
    """``{"pos_margin": 2.0}`` -> ``["pos_margin=2"]``: loss parameters as ``--loss-param`` takes
    them back (:func:`parse_loss_params`), each number in its shortest exact form."""
    return [
        f"{name}={format(value, 'g') if float(format(value, 'g')) == value else repr(value)}"
        for name, value in params.items()
    ]


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
