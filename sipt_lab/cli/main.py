"""Entry point of the ``sipt-lab`` command.

Each subcommand lives in its own module of this package and exposes ``register(subparsers)``,
which adds its parser and sets ``func`` (a callable taking the parsed namespace and returning an
exit status). Flags that set config fields are generated from the fields
(:func:`sipt_lab.core.options.add_config_arguments`), which records ``field_flags`` (config field ->
the flag that sets it, e.g. ``{"TrainConfig.steps": "--steps"}``) on the parser. This module is the only place that turns a
:class:`~sipt_lab.core.errors.SiptError` into a one-line message and exit status 2; a
:class:`~sipt_lab.core.errors.ConfigError`, and any config field (``Class.field``) another error's
message names, is shown with the command's flag in place of the field. A GPU
that runs out of memory is one line too (exit status 1), with the command's ``memory_hint`` (how
to make a step smaller) where it sets one. A failing file operation (a
read-only file system, a full disk) is one line naming the path (exit status 2). Ctrl-C is one line too (exit status 130) with the
command's ``interrupt_hint`` (what it kept and how to continue) where it sets one; so is a run stopped
by its ``--time-limit`` with work left (:class:`~sipt_lab.grid.GridStopped`, exit status 3). Usage errors of argparse itself
are one line as well (:class:`~sipt_lab.cli.arguments.OneLineParser`).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import sys

from sipt_lab import __version__
from sipt_lab.cli.arguments import STOPPED_AT_TIME_LIMIT, OneLineParser, add_logging_arguments, setup_logging
from sipt_lab.cli.option_files import add_config_file_arguments, command_parsers, parse_arguments
from sipt_lab.core.errors import ConfigError, SiptError, with_flags
from sipt_lab.grid.cells import GridStopped

#: Subcommand modules of :mod:`sipt_lab.cli`, in the order ``--help`` lists them.
COMMAND_MODULES = ("consistency", "advise", "graph", "simulate", "figures", "pretrain", "finetune", "study", "data")
#: Commands that save their resolved options as ``config.toml`` in the run directory they write.
RUN_COMMANDS = (
    "pretrain",
    "lambda-sweep",
    "finetune",
    "simulate",
    "figures",
    "study lc-transfer",
    "study atlas",
    "domain run",
    "domain table",
    "domain curves",
)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="sipt-lab",
        description="Structure-inducing pre-training lab: local consistency of tasks over "
        "pre-training graphs, semi-synthetic graph families, and LM vs SIPT pre-training.",
    )
    parser.add_argument("--version", action="version", version=f"sipt-lab {__version__}")
    add_logging_arguments(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(f"sipt_lab.cli.{name}").register(subparsers)
    add_config_file_arguments(parser, RUN_COMMANDS)  # --config and --print-config on every command
    for _, command in command_parsers(parser):  # -v / -q after the command's name too
        add_logging_arguments(command, subcommand=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``sipt-lab`` with ``argv`` (None: ``sys.argv[1:]``); returns the exit status. A reader
    that closes the pipe early (``sipt-lab ... | head -2``) ends the command quietly, status 141
    (a shell's for SIGPIPE), as it would end a shell tool. Standard output that was closed before
    the start (``>&-``) takes nothing, as Python's ``print`` does then; one that fails (``> /dev/full``)
    is one line, status 2. Ctrl-C while the commands' modules load is one line too (status 130)."""
    stdout = sys.stdout
    if stdout is not None:
        sys.stdout = CheckedStdout(stdout)
    try:
        status = run_command(argv)
        if sys.stdout is not None:
            sys.stdout.flush()  # a closed pipe shows here, not as a message at exit
        return status
    except BrokenPipeError:
        _discard_stdout(stdout)
        return 141
    except StdoutFailed as failed:
        print(f"sipt-lab: error: cannot write to standard output ({failed}); redirect it elsewhere", file=sys.stderr)
        _discard_stdout(stdout)
        return 2
    except KeyboardInterrupt:  # while the parser imports the commands' modules: nothing started yet
        print("sipt-lab: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout = stdout


class StdoutFailed(Exception):
    """Standard output refused a write (its OSError's message): not an error of the command's files."""


class CheckedStdout:
    """``sys.stdout`` for one command whose failed writes raise :class:`StdoutFailed` (a closed
    pipe stays a BrokenPipeError), so that a full disk behind it is one line, not a traceback."""

    def __init__(self, stream):
        self._stream = stream

    def __getattr__(self, name: str):
        return getattr(self._stream, name)

    def write(self, text: str) -> int:
        return self._checked(self._stream.write, text)

    def flush(self) -> None:
        self._checked(self._stream.flush)

    @staticmethod
    def _checked(call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise StdoutFailed(error.strerror or str(error)) from None


def _discard_stdout(stdout) -> None:
    """Point the process's standard output at ``/dev/null``: what is left in its buffer has nowhere
    to go, and Python would otherwise report it at exit."""
    if stdout is not None:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())


def run_command(argv: list[str] | None) -> int:
    """:func:`main` without its handling of a closed pipe."""
    parser = build_parser()
    try:
        args = parse_arguments(parser, argv)  # a --config file's options first
    except SiptError as error:  # a usage error (OneLineParser)
        print(f"sipt-lab: error: {error}", file=sys.stderr)
        return 2
    setup_logging(args)
    try:
        if getattr(args, "fill_defaults", None) is not None:  # the resolver's values of the flags left out
            args.fill_defaults(args)
        return int(args.func(args) or 0)
    except SiptError as error:
        flags = getattr(args, "field_flags", {})
        message = error.for_flags(flags) if isinstance(error, ConfigError) else with_flags(str(error), flags)
        print(f"sipt-lab: error: {message}", file=sys.stderr)
        return 2
    except RuntimeError as error:
        torch = sys.modules.get("torch")  # imported by every command that can run out of GPU memory
        if torch is None or not isinstance(error, torch.OutOfMemoryError):
            raise
        hint = getattr(args, "memory_hint", "use smaller batches or shorter samples")
        print(
            f"sipt-lab: error: the GPU ran out of memory ({str(error).splitlines()[0][:120]}); {hint}; "
            "finished results are kept",
            file=sys.stderr,
        )
        return 1
    except OSError as error:
        if error.filename is None:  # not about a file: a bug or the system, shown in full
            raise
        print(f"sipt-lab: error: {file_error_message(error)}", file=sys.stderr)
        return 2
    except GridStopped as stopped:
        hint = getattr(args, "interrupt_hint", "run the same command again")
        print(f"sipt-lab: {stopped}; {hint}", file=sys.stderr)
        return STOPPED_AT_TIME_LIMIT
    except KeyboardInterrupt:
        hint = getattr(args, "interrupt_hint", "run the same command again")
        print(f"sipt-lab: interrupted; {hint}", file=sys.stderr)
        return 130


def file_error_message(error: OSError) -> str:
    """One line for a failing file operation on ``error.filename``: a full disk says so and where."""
    where = error.filename
    if error.errno == errno.ENOSPC:
        return f"the disk is full: cannot write {where}; free some space there, or write elsewhere"
    return f"{error.strerror or error}: {where}; check that path, its permissions and the free space"


if __name__ == "__main__":
    sys.exit(main())
