"""Frozen dataclass configs that round-trip to JSON and hash stably.

Every result records the config that made it: ``save_config`` writes it next to the result,
``load_config`` reads it back into the same dataclass, and ``config_hash`` names result
directories so that the same config always lands in the same place.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from pathlib import Path
from typing import Any, TypeVar

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_json_atomic
from sipt_lab.core.options import field_option

C = TypeVar("C")


def config_to_dict(config: Any) -> dict[str, Any]:
    """A JSON-ready dict of a (possibly nested) dataclass config; tuples become lists. A field
    declared with ``option(..., omit_default=True)`` is left out while it holds its default."""
    return json.loads(json.dumps(_as_dict(config), default=_json_default))


def _as_dict(value: Any) -> Any:
    """``dataclasses.asdict`` without the fields :func:`_omitted` leaves out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _as_dict(getattr(value, f.name)) for f in dataclasses.fields(value) if not _omitted(value, f)}
    if isinstance(value, (list, tuple)):
        return [_as_dict(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_dict(item) for key, item in value.items()}
    return value


def _omitted(config: Any, field: dataclasses.Field) -> bool:
    meta = field_option(field)
    if meta is None or not meta.omit_default:
        return False
    default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
    return getattr(config, field.name) == default


def config_from_dict(cls: type[C], data: dict[str, Any]) -> C:
    """Build ``cls`` from ``data``, recursing into nested dataclass fields.

    Unknown keys are an error that names them, so a typo in a config file is never ignored.
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise SiptError(f"unknown {cls.__name__} field(s) {', '.join(unknown)}; known: {', '.join(fields)}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, value in data.items():
        hint = _dataclass_in(hints.get(name))
        if hint is not None and isinstance(value, dict):
            value = config_from_dict(hint, value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    return cls(**kwargs)


def _dataclass_in(hint: Any) -> type | None:
    """The dataclass a field's type hint names, alone or in an optional (``Config | None``); else None."""
    if dataclasses.is_dataclass(hint):
        return hint
    members = [member for member in typing.get_args(hint) if dataclasses.is_dataclass(member)]
    return members[0] if len(members) == 1 else None


def config_hash(config: Any, length: int = 12) -> str:
    """A stable hex digest of the config's JSON form (key order does not matter)."""
    payload = json.dumps(config_to_dict(config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:length]


def save_config(config: Any, path: str | Path) -> None:
    """Write ``config`` as indented strict JSON (NaN as null), atomically."""
    write_json_atomic(path, config_to_dict(config))


def load_config(cls: type[C], path: str | Path) -> C:
    """Read a config written by :func:`save_config` back into ``cls``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SiptError(f"config file {path} does not exist; pass the path of a saved config") from None
    except json.JSONDecodeError as error:
        raise SiptError(f"config file {path} is not valid JSON ({error.msg}, line {error.lineno})") from None
    return config_from_dict(cls, data)


def field_differences(stored: dict, current: dict, prefix: str = "") -> list[str]:
    """Dotted names of the fields whose values differ between two nested config dicts
    (:func:`config_to_dict`'s, or a saved config read back)."""
    names = []
    for key in sorted(set(stored) | set(current)):
        a, b = stored.get(key), current.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            names += field_differences(a, b, f"{prefix}{key}.")
        elif a != b:
            names.append(f"{prefix}{key}")
    return names


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"cannot serialise {type(value).__name__} in a config")
