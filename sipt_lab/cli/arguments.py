"""Typed command-line values: every numeric flag is parsed with its range, every path flag refuses
an empty string, and a bad value is one line (``sipt-lab: error: argument --lr: ...``), exit 2.

``integer`` and ``number`` (from :mod:`sipt_lab.core.options`, where config fields make flags) build
argparse ``type=`` callables; :class:`OneLineParser` is the parser
class of ``sipt-lab`` and all its subcommands (argparse's own usage block is left out of errors,
``--help`` still shows it).
"""

from __future__ import annotations

import argparse
import re

from sipt_lab.core.errors import SiptError
from sipt_lab.core.options import INT64_MAX, integer, nonempty, number

__all__ = [
    "FRACTION",
    "INT64_MAX",
    "POSITIVE",
    "POSITIVE_INT",
    "SEED",
    "OneLineParser",
    "integer",
    "nonempty",
    "number",
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


def add_logging_arguments(parser: argparse.ArgumentParser, subcommand: bool = False) -> None:
    """``-v`` / ``-q`` (:func:`setup_logging` reads them): of ``sipt-lab`` itself, and with
    ``subcommand`` the same flags after a subcommand's name, which leave the values given before it
    alone when absent (argparse copies a subparser's defaults over its parent's). A subcommand with
    a ``--quiet`` of its own keeps it, and gets ``-q`` only."""
    default = argparse.SUPPRESS if subcommand else False
    parser.add_argument("-v", "--verbose", action="store_true", default=default, help="debug messages too")
    quiet = ("-q",) if "--quiet" in parser._option_string_actions else ("-q", "--quiet")
    parser.add_argument(
        *quiet,
        dest="log_quiet",
        action="store_true",
        default=default,
        help="warnings and errors only, no progress bars",
    )


def setup_logging(args: argparse.Namespace) -> None:
    """Configure the ``sipt_lab`` logger once per command: ``-v`` DEBUG, ``-q`` (or a subcommand's
    own ``--quiet``, or ``--json``: machine-read output, as before without progress) WARNING, else
    INFO (:func:`sipt_lab.core.progress.configure_logging`)."""
    from sipt_lab.core.progress import configure_logging, level_from_flags

    quiet = any(getattr(args, name, False) for name in ("log_quiet", "quiet", "json"))
    configure_logging(level_from_flags(getattr(args, "verbose", False), quiet))
