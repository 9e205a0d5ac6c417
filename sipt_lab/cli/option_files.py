"""Config files of the command line: ``--config FILE`` and ``--print-config`` on every command, and
the ``config.toml`` a run leaves in its directory.

A config file (TOML, or YAML when PyYAML is installed) holds a command's options under their flag
names without the dashes (``max-length = 128`` or ``max_length = 128`` for ``--max-length 128``;
tables such as ``[train]`` may group them and are read as if flat). A command that trains also
reads a ``[train-config]`` table of :class:`~sipt_lab.training.train_config.TrainConfig` fields
that have no flag of their own (``weight_decay = 0.01``), a layer under the flags. Its values become the
parser's defaults, so a flag given on the command line wins; each value is checked with the type
the flag parses with, and an unknown key or a value of the wrong type is one line naming it
(exit status 2, before any work). ``--print-config`` prints the command's resolved options as
TOML (every option, defaults filled in) and exits; fed back with ``--config`` it gives the same
options. A command that writes a run directory saves the same text there as ``config.toml``; for
a command that trains, both hold every resolved training value (its ``[train-config]`` table the
fields without a flag), so a rerun from them does not depend on a later version's defaults.

Only the standard library is imported here (tomli before Python 3.11, PyYAML when a YAML file is
read): building the parser stays light.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import SHOWN_CHARS, shorten, write_text_atomic
from sipt_lab.core.options import check_unchecked_fields
from sipt_lab.core.outputs import MANIFEST, record_files

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before it joined the standard library
    import tomli as tomllib

#: The file in which a run directory keeps the options of the command that made it.
CONFIG_NAME = "config.toml"
#: Destinations of the options no config file sets or shows (``--help``, these two, and ``-v`` /
#: ``-q``, which are about the terminal, not the run).
FILE_OPTIONS = ("help", "config", "print_config", "verbose", "log_quiet")
#: The config-file table of TrainConfig fields without a flag of their own (commands that train).
TRAIN_TABLE = "train-config"
#: Options that steer one invocation rather than define the run: not saved in ``config.toml``.
NOT_SAVED = ("resume", "overwrite")


def add_config_file_arguments(parser: argparse.ArgumentParser, run_commands: tuple[str, ...] = ()) -> None:
    """Add ``--config`` and ``--print-config`` to every command of ``parser`` (the parsers without
    subcommands); a command named in ``run_commands`` (``"study lc-transfer"``) also saves its
    options as ``config.toml`` in its ``--out`` directory after a run that succeeds."""
    for path, command in command_parsers(parser):
        group = command.add_argument_group("config files")
        group.add_argument(
            "--config",
            metavar="FILE",
            help="read options from a TOML or YAML file (keys: these flags without the dashes); "
            "flags given here override the file",
        )
        group.add_argument(
            "--print-config",
            action="store_true",
            help="print the resolved options (defaults filled in) as TOML and exit",
        )
        command.set_defaults(save_run_config=" ".join(path) in run_commands)


def command_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple, Any]]:
    """``(("study", "lc-transfer"), parser)`` for every command of ``parser`` without subcommands."""
    subcommands = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    if not subcommands:
        yield path, parser
        return
    for name, sub in subcommands[0].choices.items():
        yield from command_parsers(sub, (*path, name))


def parse_arguments(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)`` with the command's ``--config`` file read first (its values are
    the defaults) and ``--print-config`` (the namespace's ``func`` prints the options instead of
    running). A bad file raises a one-line :class:`SiptError`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command, rest = _command_of(parser, argv)
    if command is not None:
        early = argparse.ArgumentParser(add_help=False, exit_on_error=False, allow_abbrev=False)
        early.add_argument("--config")
        early.add_argument("--print-config", action="store_true")
        early.add_argument("--preset")
        try:
            given, _ = early.parse_known_args(rest)
        except argparse.ArgumentError:  # e.g. --config without a file: the command's parser says so
            given = argparse.Namespace(config=None, print_config=False, preset=None)
        presets = getattr(command, "option_presets", {})
        from_file = read_config_file(given.config) if given.config else {}
        file_settings = _train_table(command, from_file, f"config file {given.config}")
        preset = given.preset or _flat(from_file, f"config file {given.config}").get("preset")  # a flag beats the file
        sources = [
            *([(presets[preset], f"preset {preset}")] if isinstance(preset, str) and preset in presets else []),
            *([(from_file, f"config file {given.config}")] if given.config else []),
        ]
        for values, where in sources:  # the preset, then the file over it, then the flags over both
            replaced = apply_options(command, values, where)
            for group in command._mutually_exclusive_groups:  # a flag beats the file's other choice
                if any(_given(action, rest) for action in group._group_actions):
                    for action in set(group._group_actions) & set(replaced):
                        action.default = replaced[action]
        required = [action.dest for action in _option_actions(command) if _required(action)]
        if given.print_config:  # no option is required to print them
            for action in _option_actions(command):
                action.required = False
                if not action.option_strings and action.nargs is None:
                    action.nargs = "?"
    args = parser.parse_args(argv)
    if command is None:
        return args
    if hasattr(args, "train_settings"):
        args.train_settings = file_settings
    if args.print_config:
        args.func = lambda namespace: _print_options(command, namespace, required)
    elif args.save_run_config:
        args.func = _saving_options(args.func, command)
    return args


def _print_options(command: argparse.ArgumentParser, namespace: argparse.Namespace, required: list[str]) -> int:
    """``--print-config``: the options as TOML, once their values pass the checks the run makes first."""
    check_unchecked_fields(namespace)
    print(options_toml(command, namespace, required=required), end="")
    return 0


def apply_options(command: argparse.ArgumentParser, values: dict[str, Any], where: str) -> dict[argparse.Action, Any]:
    """Make ``values`` (a config file's, or a preset's: options by config-file key) the defaults of
    ``command``'s flags; returns the actions it set, each with the default it had. ``where`` names
    the source in errors."""
    actions = {option_name(action): action for action in _option_actions(command)}
    replaced = {}
    for key, value in _flat(values, where).items():
        action = actions.get(key.replace("_", "-"))
        if action is None:
            near = difflib.get_close_matches(key.replace("_", "-"), list(actions), n=1)
            hint = f"did you mean {near[0]!r}?" if near else f"see {command.prog} --print-config for its keys"
            raise SiptError(f"{where}: unknown key {key!r} for {command.prog}; {hint}")
        replaced[action] = action.default
        action.default = _converted(action, key, value, where)
        action.required = False
        if not action.option_strings and action.nargs is None:  # a positional argument the file gives
            action.nargs = "?"
    for group in command._mutually_exclusive_groups:
        both = [option_name(action) for action in group._group_actions if action in replaced]
        if len(both) > 1:
            raise SiptError(f"{where}: {' and '.join(both)} exclude each other; keep one")
    return replaced


def read_config_file(path: str) -> dict[str, Any]:
    """The mapping in a TOML file (``.yaml`` / ``.yml``: YAML) at ``path``; one-line errors."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # an editor's byte-order mark is no statement
    except FileNotFoundError:
        raise SiptError(f"--config {path} does not exist; pass a TOML or YAML file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise SiptError(f"--config {path} cannot be read ({getattr(error, 'strerror', None) or error})") from None
    if Path(path).suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise SiptError(f"--config {path}: reading YAML needs PyYAML (pip install pyyaml)") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise SiptError(f"--config {path} is not valid YAML ({' '.join(str(error).split())})") from None
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise SiptError(f"--config {path} must hold a mapping of options, not a {type(data).__name__}")
        return data
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SiptError(f"--config {path} is not valid TOML ({error})") from None


def option_name(action: argparse.Action) -> str:
    """A flag's key in a config file: its long flag without the dashes (a positional: its name)."""
    long = [flag for flag in action.option_strings if flag.startswith("--")]
    return long[0][2:] if long else action.dest.replace("_", "-")


def resolved_options(command: argparse.ArgumentParser, namespace: argparse.Namespace) -> dict[str, Any]:
    """Every option of ``command`` by its config-file key, with the value ``namespace`` holds
    (None left out), in ``--help`` order."""
    options = {}
    for action in _option_actions(command):
        value = getattr(namespace, action.dest, None)
        if value is not None:
            options[option_name(action)] = list(value) if isinstance(value, tuple) else value
    return options


def options_toml(
    command: argparse.ArgumentParser, namespace: argparse.Namespace, *, saved: bool = False, required=()
) -> str:
    """The resolved options of ``command`` as TOML; ``saved``: as a run keeps them (without
    :data:`NOT_SAVED`). An option in ``required`` (destinations) without a value is a comment, and
    so is one left unset, which the command resolves when it runs (with ``--help``'s default)."""
    options = resolved_options(command, namespace)
    lines = [f"# {command.prog}: resolved options; `{command.prog} --config FILE` runs with them"]
    for action in _option_actions(command):
        key = option_name(action)
        if saved and action.dest in NOT_SAVED:
            continue
        if key in options:
            lines.append(f"{_toml_key(key)} = {toml_value(options[key])}")
        elif action.dest in required:
            lines.append(f"# {_toml_key(key)} = ...  (required)")
        elif action.option_strings and not isinstance(action, argparse._StoreTrueAction):
            lines.append(f"# {_toml_key(key)} = ...  ({_unset_default(action)})")
    settings = getattr(namespace, "train_settings", None)
    if settings:
        lines += ["", "# TrainConfig fields without a flag of their own, as this run resolves them", f"[{TRAIN_TABLE}]"]
        lines += [f"{name} = {toml_value(value)}" for name, value in settings.items()]
    return "\n".join(lines) + "\n"


def _unset_default(action: argparse.Action) -> str:
    """What ``--help`` says an option left unset becomes (its ``default: ...``), else ``unset``."""
    said = re.search(r"\(default: (.*)\)\s*$", action.help or "", re.S)
    return "unset" if said is None else "default: " + " ".join(said[1].split()).replace("%%", "%")


def toml_value(value: Any) -> str:
    """``value`` (a bool, number, string, list of them, or a mapping of them: an inline table) as a
    TOML value."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(str(key))} = {toml_value(item)}" for key, item in value.items()) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return ("-inf" if value < 0 else "inf") if math.isinf(value) else "nan" if math.isnan(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    text = str(value)
    escaped = "".join(
        "\\" + char if char in '"\\' else f"\\u{ord(char):04x}" if ord(char) < 32 or ord(char) == 127 else char
        for char in text
    )
    return f'"{escaped}"'


def _toml_key(key: str) -> str:
    return key if key and all(char.isascii() and (char.isalnum() or char in "-_") for char in key) else toml_value(key)


def _saving_options(func: Callable[[argparse.Namespace], int], command) -> Callable[[argparse.Namespace], int]:
    """``func``, then (after a run that succeeded, in the launching process) ``config.toml`` in the
    run's ``--out`` directory, recorded in its manifest where it has one."""

    def run(namespace: argparse.Namespace) -> int:
        status = func(namespace)
        out = getattr(namespace, "out", None)
        if status or out is None or not Path(out).is_dir() or int(os.environ.get("RANK", "0")) != 0:
            return status
        if (Path(out) / MANIFEST).is_file():
            record_files(out, [CONFIG_NAME])
        write_text_atomic(Path(out) / CONFIG_NAME, options_toml(command, namespace, saved=True))
        return status

    return run


def _train_table(command: argparse.ArgumentParser, values: dict[str, Any], where: str) -> dict[str, Any]:
    """The ``[train-config]`` table of a config file's ``values``, taken out of them and checked
    (:class:`~sipt_lab.core.options.Overrides` of TrainConfig): fields without a flag of their own
    on a command that trains; ``{}`` without one."""
    table = next((values.pop(key) for key in (TRAIN_TABLE, TRAIN_TABLE.replace("-", "_")) if key in values), None)
    if table is None:
        return {}
    if command.get_default("train_settings") is None:
        raise SiptError(f"{where}: {command.prog} trains nothing; remove its [{TRAIN_TABLE}] table")
    if not isinstance(table, dict):
        raise SiptError(f"{where}: [{TRAIN_TABLE}] must be a table of TrainConfig fields")
    from sipt_lab.core.options import Overrides
    from sipt_lab.training.train_config import TrainConfig

    flagged = {
        name.partition(".")[2] for name in command.get_default("field_flags") or {} if name.startswith("TrainConfig.")
    }
    for name in table:
        if name in flagged:
            raise SiptError(f"{where}: [{TRAIN_TABLE}] {name} has a flag of its own; set it outside the table")
    return dict(Overrides(TrainConfig, f"{where} [{TRAIN_TABLE}]", **table))


def _command_of(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[Any, list[str]]:
    """The command parser ``argv`` names and the arguments after its name (None: it names none)."""
    rest = argv
    while True:
        subcommands = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
        if not subcommands:
            return parser, rest
        index = next((i for i, token in enumerate(rest) if not token.startswith("-")), None)
        if index is None or rest[index] not in subcommands[0].choices:
            return None, rest
        parser, rest = subcommands[0].choices[rest[index]], rest[index + 1 :]


def _given(action: argparse.Action, argv: list[str]) -> bool:
    """Whether ``argv`` passes ``action``'s flag (``--steps 5`` or ``--steps=5``)."""
    return any(token == flag or token.startswith(flag + "=") for flag in action.option_strings for token in argv)


def _required(action: argparse.Action) -> bool:
    return action.required or (not action.option_strings and action.nargs is None)


def _option_actions(command: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        action for action in command._actions if action.dest not in FILE_OPTIONS and action.dest != argparse.SUPPRESS
    ]


def _flat(data: dict[str, Any], where: str, into: dict[str, Any] | None = None) -> dict[str, Any]:
    """The options of a config file with its tables (``[train]``) read as if flat."""
    into = {} if into is None else into
    for key, value in data.items():
        key = str(key)
        if isinstance(value, dict):
            _flat(value, where, into)
            continue
        if key.replace("_", "-") in {known.replace("_", "-") for known in into}:
            raise SiptError(f"{where}: key {key!r} is given twice; keep one")
        into[key] = value
    return into


def _converted(action: argparse.Action, key: str, value: Any, where: str) -> Any:
    """``value`` of ``key`` parsed as its flag would parse it; a one-line SiptError when it cannot be."""
    if value is None:
        return None
    if action.nargs == 0:  # a switch
        if not isinstance(value, bool):
            raise SiptError(f"{where}: {key} = {_shown(value)} is not true or false")
        return value
    if isinstance(action, argparse._AppendAction) or action.nargs in ("+", "*"):
        if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, (list, dict)) for v in value)):
            raise SiptError(f"{where}: {key} = {_shown(value)} is not a list of {_expected(action, plural=True)}")
        return [_scalar(action, key, item, where, value) for item in (value if isinstance(value, list) else [value])]
    return _scalar(action, key, value, where, value)


def _scalar(action: argparse.Action, key: str, item: Any, where: str, value: Any) -> Any:
    expected = _expected(action)
    if isinstance(item, (bool, list, dict)) or not isinstance(item, (str, int, float)):
        raise SiptError(f"{where}: {key} = {_shown(value)} is not {expected}")
    text = repr(item) if isinstance(item, float) else str(item)
    parsed = text
    if callable(action.type):
        try:
            parsed = action.type(text)
        except (argparse.ArgumentTypeError, TypeError, ValueError) as error:
            reason = str(error) if isinstance(error, argparse.ArgumentTypeError) else f"is not {expected}"
            if reason.startswith("expected "):
                reason = f"is not {expected}"
            raise SiptError(f"{where}: {key} = {_shown(value)} {reason}") from None
    if action.choices is not None and parsed not in action.choices:
        raise SiptError(f"{where}: {key} = {_shown(value)} is not {expected}")
    return parsed


def _expected(action: argparse.Action, plural: bool = False) -> str:
    if action.choices is not None:
        return f"one of {', '.join(map(str, action.choices))}"
    name = getattr(action.type, "__name__", "")
    if action.type is int or name == "integer":
        return "whole numbers" if plural else "a whole number"
    if action.type is float or name == "number":
        return "numbers" if plural else "a number"
    return "strings" if plural else "a string"


def _shown(value: Any) -> str:
    """``value`` as the file wrote it (TOML), cut for a one-line message."""
    text = toml_value(value) if isinstance(value, (bool, int, float, str, list, tuple)) else shorten(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text):,} characters)"
