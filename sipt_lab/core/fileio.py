"""Atomic file writes (a result file is either complete or absent, never half-written), strict JSON
(NaN as null), reading a user's text files, values cut for messages, and where the cache lies. Output directories (the
rule every writing command follows) live in :mod:`sipt_lab.core.outputs`."""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from sipt_lab.core.errors import SiptError

#: Longest value an error message quotes whole (see :func:`shorten`).
SHOWN_CHARS = 60
#: The environment variable that moves sipt-lab's cache (topic fits, fitted MLM heads).
CACHE_ENV = "SIPT_LAB_CACHE"


def cache_dir() -> Path:
    """``$SIPT_LAB_CACHE`` if set, else ``~/.cache/sipt-lab``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "sipt-lab")


def shorten(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``repr`` of ``value`` (a numpy scalar as its Python value) cut to about ``limit`` characters,
    for error messages that quote user data (an id of megabytes must not flood the terminal)."""
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()
    shown = repr(value)
    return shown if len(shown) <= limit else f"{shown[:limit]}... ({len(shown):,} characters)"


def default_file_mode() -> int:
    """The permissions ``open()`` would give a new file (0o666 minus the umask); mkstemp's are 0o600."""
    return 0o666 & ~_umask()


def default_dir_mode() -> int:
    """The permissions ``mkdir()`` would give a new directory (0o777 minus the umask); mkdtemp's are 0o700."""
    return 0o777 & ~_umask()


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: str = "wb"):
    """A handle (``mode`` ``"wb"`` or ``"w"``, UTF-8) on a temporary file beside ``path`` that
    replaces ``path`` when the block ends without an error (and is removed when it raises), so a
    file written in pieces (a stream) appears whole or not at all."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, default_file_mode())
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory and ``os.replace``."""
    with atomic_writer(path) as handle:
        handle.write(data)


def write_text_atomic(path: str | Path, text: str) -> None:
    """UTF-8 text version of :func:`write_bytes_atomic`."""
    write_bytes_atomic(path, text.encode("utf-8"))


def json_safe(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float (numpy's included) replaced by None, so that
    ``json.dumps(..., allow_nan=False)`` writes ``null`` where Python would write bare ``NaN``."""
    if isinstance(obj, dict):
        return {key: json_safe(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(value) for value in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return json_safe(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def json_text(obj: Any, *, indent: int | None = 2, sort_keys: bool = True) -> str:
    """Strict JSON of ``obj`` (:func:`json_safe`: no bare ``NaN`` / ``Infinity``)."""
    return json.dumps(json_safe(obj), indent=indent, sort_keys=sort_keys, allow_nan=False)


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Indented strict JSON (:func:`json_text`) version of :func:`write_bytes_atomic`."""
    write_text_atomic(path, json_text(obj) + "\n")


def read_text_file(path: str | Path, what: str) -> str:
    """The UTF-8 text of ``path`` (gunzipped when it ends in ``.gz``) without a leading byte-order
    mark; ``what`` (e.g. ``"labels file"``) names the file in the one-line SiptError raised when it
    is missing, a directory, unreadable, corrupt or not UTF-8."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise SiptError(f"{what} {path} does not exist; check the path") from None
    except IsADirectoryError:
        raise SiptError(f"{what} {path} is a directory; pass a file") from None
    except (OSError, EOFError) as error:
        raise SiptError(
            f"cannot read {what} {path} ({getattr(error, 'strerror', None) or error}); "
            "check its permissions and that it is intact"
        ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise SiptError(f"{what} {path} is not UTF-8 text (bad byte on line {line}); re-encode it as UTF-8") from None
    return text.removeprefix("\ufeff")
