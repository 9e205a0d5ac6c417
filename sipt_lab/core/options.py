"""Config fields that carry their own range, choices and help, and the command-line flags made from them.

A config is a frozen dataclass whose fields are declared with :func:`option`::

    @dataclass(frozen=True)
    class TrainConfig:
        steps: int = option(1000, help="optimiser steps", range=(1, MAX_STEPS), metavar="N")
        loss: str = option("contrastive", help="structure-inducing loss", choices=objective_names.STRUCTURE_LOSSES)

        def __post_init__(self) -> None:
            validate(self)  # ranges and choices from the fields; cross-field rules after it

:func:`validate` checks every field's range and choices once, raising a
:class:`~sipt_lab.core.errors.ConfigError` that names the field (``TrainConfig.steps``).
:func:`add_config_arguments` makes argparse flags from the same fields, as transformers'
``HfArgumentParser`` does from ``TrainingArguments``: the flag is ``--field-name`` (or the field's
``flag``), its type comes from the annotation and parses with the field's range, its default and
choices are the field's, its help ends with ``(default: ...)``. It records which flag sets which
field in the parser's ``field_flags`` default, through which the CLI shows a ``ConfigError`` with
the flag in place of the field. :func:`config_from_args` builds the config back from the parsed
namespace. So ``--help``, the library and the docs read one declaration.

This module imports only the standard library: building the CLI's parser stays light.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from sipt_lab.core.errors import ConfigError
from sipt_lab.core.fileio import shorten

#: Key of a field's :class:`Option` in its ``dataclasses.field`` metadata.
OPTION_KEY = "sipt_lab.option"
#: Largest value of a signed 64-bit integer: the bound of every integer flag (seeds included).
INT64_MAX = 2**63 - 1


@dataclasses.dataclass(frozen=True)
class Option:
    """What a config field says about its values (see :func:`option`)."""

    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[Any, ...] | None = None
    flag: str | None = None
    metavar: str | None = None
    nonempty: bool = False
    default_help: str | None = None
    omit_default: bool = False

    def bounds(self) -> str:
        """``"in [0, 1)"``, ``">= 1"``, ``"> 0"`` ... ('' when unbounded)."""
        return _interval(self.low, self.high, self.low_open, self.high_open)

    def problem(self, value: Any) -> str | None:
        """Why ``value`` (not None) is outside this field's range or choices, else None."""
        if self.choices is not None:
            for item in value if isinstance(value, (tuple, list)) else (value,):
                if item not in self.choices:
                    return f"{item!r} is unknown; choose one of {', '.join(map(str, self.choices))}"
        if self.nonempty and isinstance(value, str) and not value.strip():
            return "is empty; pass a value"
        if self.low is None and self.high is None:
            return None
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, bool) or not isinstance(item, (int, float)):
                continue
            finite = not isinstance(item, float) or math.isfinite(item)
            too_low = self.low is not None and (item <= self.low if self.low_open else item < self.low)
            too_high = self.high is not None and (item >= self.high if self.high_open else item > self.high)
            if not finite or too_low or too_high:
                shown = f"{item:,}" if isinstance(item, int) else f"{item}"
                got = f"{list(value)}" if isinstance(value, (tuple, list)) else shown
                return f"must be {self.bounds()}, got {got}"
        return None


def option(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    range: tuple[float | None, float | None] | None = None,
    open: str | None = None,
    choices: Iterable[Any] | None = None,
    flag: str | None = None,
    metavar: str | None = None,
    nonempty: bool = False,
    default_help: str | None = None,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    omit_default: bool = False,
) -> Any:
    """A dataclass field carrying its help, range (``range=(low, high)``, None: unbounded;
    ``open="low"|"high"|"both"`` excludes that end), ``choices``, command-line ``flag`` (default
    ``--field-name``) and ``metavar``; ``nonempty``: a string that must not be blank (a path);
    ``default_help``: what ``--help`` says the default is, in place of the value (e.g. "the
    checkpoint's" for a field whose None is resolved later); ``omit_default``: the field is left out of
    the config's saved form and hash while it holds its default (a field added later, or one that
    only watches a run, so that configs saved before it keep their hash)."""
    low, high = range if range is not None else (None, None)
    if open not in (None, "low", "high", "both"):
        raise ValueError(f"open must be 'low', 'high' or 'both', got {open!r}")
    meta = Option(
        help=help,
        low=low,
        high=high,
        low_open=open in ("low", "both"),
        high_open=open in ("high", "both"),
        choices=None if choices is None else tuple(choices),
        flag=flag,
        metavar=metavar,
        nonempty=nonempty,
        default_help=default_help,
        omit_default=omit_default,
    )
    return dataclasses.field(default=default, default_factory=default_factory, metadata={OPTION_KEY: meta})


def field_option(field: dataclasses.Field) -> Option | None:
    """The :class:`Option` of a dataclass field, or None for a field declared without :func:`option`."""
    return field.metadata.get(OPTION_KEY)


def options_of(cls: type) -> dict[str, Option]:
    """Field name -> :class:`Option` of every field of ``cls`` declared with :func:`option`."""
    return {f.name: field_option(f) for f in dataclasses.fields(cls) if field_option(f) is not None}


def validate(config: Any) -> None:
    """Check every field of ``config`` against its range and choices (a None value passes: a field
    that may be None says so in its type); raise :class:`ConfigError` naming ``Class.field``."""
    for name, meta in options_of(type(config)).items():
        value = getattr(config, name)
        if value is None:
            continue
        problem = meta.problem(value)
        if problem is not None:
            raise ConfigError(f"{type(config).__name__}.{name}", problem)


class Overrides(Mapping[str, Any]):
    """Values of some fields of the config class ``cls`` over what lies below them: a preset's, a
    method's, an init kind's. Checked on construction: a misspelt field or a value outside its
    field's range or choices fails where the overrides are declared, naming ``where`` (``"preset cpu"``).
    A field without :func:`option` metadata (a nested config) is checked by name only."""

    def __init__(self, cls: type, where: str = "", **values: Any) -> None:
        fields = {field.name for field in dataclasses.fields(cls)}
        checks = options_of(cls)
        for name, value in values.items():
            label = f"{cls.__name__}.{name}" + (f" ({where})" if where else "")
            if name not in fields:
                raise ConfigError(label, f"is not a field; choose from {', '.join(sorted(fields))}")
            problem = None if value is None or name not in checks else checks[name].problem(value)
            if problem is not None:
                raise ConfigError(label, problem)
        self.config_class = cls
        self._values = dict(values)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self._values.items())
        return f"{type(self).__name__}({self.config_class.__name__}{', ' if shown else ''}{shown})"

    def __hash__(self) -> int:
        return hash(repr(self))

    def __or__(self, other: Mapping[str, Any]) -> Overrides:
        return Overrides(self.config_class, **{**self._values, **other})


def flag_of(cls: type, name: str) -> str:
    """The command-line flag of field ``name`` of ``cls``: its ``flag``, else ``--name-with-dashes``."""
    meta = options_of(cls).get(name)
    return (meta.flag if meta is not None and meta.flag else None) or "--" + name.replace("_", "-")


def add_config_arguments(
    parser: argparse.ArgumentParser | Any,
    cls: type,
    fields: Iterable[str],
    *,
    defaults: dict[str, Any] | None = None,
    default_help: dict[str, str] | None = None,
    help: dict[str, str] | None = None,
    flags: dict[str, str] | None = None,
    required: Iterable[str] = (),
    argparse_options: dict[str, dict[str, Any]] | None = None,
    container: Any = None,
    containers: dict[str, Any] | None = None,
    check: bool = True,
) -> dict[str, str]:
    """Add one flag per field of ``cls`` in ``fields`` (in that order) to ``parser``, generated from
    the field (see the module docstring); return field -> flag.

    ``defaults`` replaces a field's default on the command line (e.g. None for a field whose default
    the command resolves later), ``default_help`` what ``--help`` says about that default,
    ``help`` a field's help text, ``flags`` its flag; ``required`` fields have no default;
    ``argparse_options`` adds or replaces keyword arguments of ``add_argument`` per field. A field
    whose ``flag`` is its own name without dashes becomes a positional argument.
    ``check`` False parses each value by its type alone (a ``nonempty`` string still refuses a
    blank one) and leaves ranges and choices to the config's :func:`validate` (its error then
    names the flag through ``field_flags``), or to :func:`check_unchecked_fields` (the parser's
    ``unchecked_fields`` default records them).
    Arguments go to ``container`` (an argument group) or, per field, ``containers[field]``, else to
    ``parser``. The mapping ``"Class.field" -> flag`` is merged into the parser's ``field_flags``
    default, which the CLI reads to name flags in config errors.
    """
    hints = typing.get_type_hints(cls)
    declared = {f.name: f for f in dataclasses.fields(cls)}
    defaults, default_help, help = defaults or {}, default_help or {}, help or {}
    flags, argparse_options, containers = flags or {}, argparse_options or {}, containers or {}
    required = set(required)
    made: dict[str, str] = {}
    for name in fields:
        field = declared[name]
        meta = field_option(field) or Option(help="")
        flag = flags.get(name) or flag_of(cls, name)
        kwargs = _argparse_kwargs(hints[name], meta if check else Option(help=meta.help, nonempty=meta.nonempty))
        if name in required:
            kwargs["required"] = True
            default = None
        else:
            default = defaults[name] if name in defaults else _field_default(field)
            kwargs["default"] = list(default) if isinstance(default, tuple) else default
        text = help[name] if name in help else meta.help.replace("%", "%%")
        if name not in required and kwargs.get("action") != "store_true" and "(default" not in text:
            shown = default_help.get(name, meta.default_help if name not in defaults else None)
            if shown is None and default is not None and default != ():  # an empty list: nothing to show
                shown = "%(default)s"
            if shown is not None:
                text = f"{text} {shown}" if shown.startswith("(default") else f"{text} (default: {shown})"
        kwargs["help"] = text
        if meta.metavar is not None:
            kwargs["metavar"] = meta.metavar
        kwargs.update(argparse_options.get(name, {}))
        target = containers.get(name, container if container is not None else parser)
        if flag.startswith("-"):
            target.add_argument(flag, dest=name, **kwargs)
            made[name] = flag
        else:  # a positional argument: its flag is its name (the field's), errors show its metavar
            kwargs.pop("required", None)
            kwargs.pop("default", None)
            target.add_argument(name, **kwargs)
            made[name] = kwargs.get("metavar") or name.upper()
    record_field_flags(parser, {f"{cls.__name__}.{name}": flag for name, flag in made.items()})
    if not check:
        unchecked = {name: (f"{cls.__name__}.{name}", options_of(cls).get(name)) for name in made}
        parser.set_defaults(unchecked_fields={**(parser.get_default("unchecked_fields") or {}), **unchecked})
    return made


def check_unchecked_fields(namespace: argparse.Namespace) -> None:
    """The range and choice checks :func:`validate` makes on the fields whose flags parse by type
    alone (``check`` False in :func:`add_config_arguments`), on the parsed values: for a command that
    stops before it builds its configs (``--print-config``). ConfigError naming ``Class.field``."""
    for dest, (field, meta) in (getattr(namespace, "unchecked_fields", None) or {}).items():
        value = getattr(namespace, dest, None)
        problem = None if value is None or meta is None else meta.problem(value)
        if problem is not None:
            raise ConfigError(field, problem)


def record_field_flags(parser: argparse.ArgumentParser, flags: dict[str, str]) -> None:
    """Merge ``flags`` (``"Class.field"`` -> flag) into the parser's ``field_flags`` default: for a
    flag written by hand that sets a config field, so that the CLI names it in that field's errors."""
    parser.set_defaults(field_flags={**(parser.get_default("field_flags") or {}), **flags})


def config_from_args(
    namespace: argparse.Namespace, cls: type, fields: Iterable[str] | None = None, **given: Any
) -> Any:
    """``cls`` built from the parsed flags of its ``fields`` (None: every field the namespace holds)
    and the keyword arguments ``given`` (over the flags); lists become tuples."""
    names = [f.name for f in dataclasses.fields(cls)] if fields is None else list(fields)
    values = {name: getattr(namespace, name) for name in names if hasattr(namespace, name)}
    values.update(given)
    return cls(**{name: tuple(value) if isinstance(value, list) else value for name, value in values.items()})


def _field_default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def _argparse_kwargs(hint: Any, meta: Option) -> dict[str, Any]:
    """``type``, ``nargs``, ``choices`` or ``action`` of a field's flag from its type hint and range."""
    base, many = _base_type(hint)
    kwargs: dict[str, Any] = {}
    if base is bool and not many:
        return {"action": "store_true"}
    if many:
        kwargs["nargs"] = "+"
    if meta.choices is not None:
        kwargs["choices"] = list(meta.choices)
        if base in (int, float):
            kwargs["type"] = base
    elif base is int and meta.low is None and meta.high is None:
        kwargs["type"] = int
    elif base is float and meta.low is None and meta.high is None:
        kwargs["type"] = float
    elif base is int:
        kwargs["type"] = integer(
            int(meta.low) if meta.low is not None else None, int(meta.high) if meta.high is not None else INT64_MAX
        )
    elif base is float:
        kwargs["type"] = number(meta.low, meta.high, low_open=meta.low_open, high_open=meta.high_open)
    elif base is str and meta.nonempty:
        kwargs["type"] = nonempty
    return kwargs


def _base_type(hint: Any) -> tuple[Any, bool]:
    """``(element type, is a sequence)`` of a hint: ``int | None`` -> (int, False), ``tuple[float, ...]`` -> (float, True)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        members = [member for member in typing.get_args(hint) if member is not type(None)]
        return _base_type(members[0]) if len(members) == 1 else (str, False)
    if origin in (tuple, list):
        args = [arg for arg in typing.get_args(hint) if arg is not Ellipsis]
        return (args[0] if args else str), True
    return hint, False


# --- argparse types: every numeric flag parses with its range, every path refuses an empty string ---


def integer(low: int | None = None, high: int = INT64_MAX) -> Callable[[str], int]:
    """An argparse type: an integer in ``[low, high]`` (``low`` None: no lower bound beyond int64)."""
    low_bound = -INT64_MAX - 1 if low is None else low

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {shorten(text)}") from None
        if not low_bound <= value <= high:
            if high != INT64_MAX:
                bound = _interval(low, high, False, False)
            else:
                bound = f">= {low:,}" if value < low_bound else f"<= {high:,} (a 64-bit integer)"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {shorten(value, 40) if value > high else value}")
        return value

    parse.__name__ = "integer"
    return parse


def number(
    low: float | None = None, high: float | None = None, *, low_open: bool = False, high_open: bool = False
) -> Callable[[str], float]:
    """An argparse type: a finite float in the interval from ``low`` to ``high`` (None: unbounded;
    ``low_open`` / ``high_open`` exclude that end)."""

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {shorten(text)}") from None
        too_low = low is not None and (value <= low if low_open else value < low)
        too_high = high is not None and (value >= high if high_open else value > high)
        if not math.isfinite(value) or too_low or too_high:
            raise argparse.ArgumentTypeError(
                f"must be a finite number {_interval(low, high, low_open, high_open)}, got {shorten(text)}"
            )
        return value

    parse.__name__ = "number"
    return parse


def nonempty(text: str) -> str:
    """An argparse type for a path or name: anything but an empty or blank string (an unset shell
    variable would otherwise mean the current directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty; pass a value (an unset shell variable?)")
    return text


def _interval(low, high, low_open: bool, high_open: bool) -> str:
    def show(value) -> str:
        return f"{value:,}" if isinstance(value, int) else f"{value:g}"

    if low is not None and high is not None and high != INT64_MAX:
        return f"in {'(' if low_open else '['}{show(low)}, {show(high)}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {show(low)}" + ("" if high is None else f" and <= {show(high)}")
    return "" if high is None else f"{'<' if high_open else '<='} {show(high)}"
