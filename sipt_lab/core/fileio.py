"""Atomic file writes (a result file is either complete or absent, never half-written), strict JSON
(NaN as null), reading a user's text files (the one reader every file the project reads goes
through: UTF-8, ``.gz`` allowed, a byte-order mark dropped, lines split on ``\n`` and ``\r\n`` only,
``#`` comments by one rule), values cut for messages, and where the cache lies. Output directories (the
rule every writing command follows) live in :mod:`sipt_lab.core.outputs`."""

from __future__ import annotations

import contextlib
import errno
import gzip
import json
import math
import os
import tempfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sipt_lab.core.errors import SiptError

#: Longest value an error message quotes whole (see :func:`shorten`).
SHOWN_CHARS = 60
#: Errors of a write the disk refuses (full, over quota, file too large), which name no file themselves.
WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
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
    file written in pieces (a stream) appears whole or not at all. A write that the disk refuses
    (:data:`WRITE_ERRNOS`) raises an OSError naming ``path``."""
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
    except BaseException as error:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(error, OSError) and error.errno in WRITE_ERRNOS and error.filename is None:
            raise OSError(error.errno, error.strerror, str(path)) from None  # say which file could not be written
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
    with reading_errors(path, what), (gzip.open if str(path).endswith(".gz") else open)(path, "rb") as handle:
        data = handle.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _not_utf8(path, what, data.count(b"\n", 0, error.start) + 1) from None
    return text.removeprefix("\ufeff")


@contextlib.contextmanager
def reading_errors(path: str | Path, what: str):
    """Turn the errors of reading ``path`` into one-line SiptErrors naming it as ``what``."""
    try:
        yield
    except FileNotFoundError:
        raise SiptError(f"{what} {path} does not exist; check the path") from None
    except IsADirectoryError:
        raise SiptError(f"{what} {path} is a directory; pass a file") from None
    except (OSError, EOFError, zlib.error) as error:  # zlib.error: corrupt compressed data
        raise SiptError(
            f"cannot read {what} {path} ({getattr(error, 'strerror', None) or error}); "
            "check its permissions and that it is intact"
        ) from None


def _not_utf8(path: str | Path, what: str, line: int) -> SiptError:
    return SiptError(f"{what} {path} is not UTF-8 text (bad byte on line {line}); re-encode it as UTF-8")


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, split on ``\n`` with a ``\r`` before it dropped (CRLF files), and no
    empty last line for a final line break. Never ``str.splitlines``, which also splits on U+2028,
    form feed, NEL and ``\x1c``-``\x1e`` (characters a text or JSON string may hold), shifting every
    later line; the streamed engines' Arrow reader does not split on them either."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def read_text_lines(path: str | Path, what: str) -> list[str]:
    """:func:`split_lines` of :func:`read_text_file`: the lines of a user's text file. A file of
    several lines ended by a lone ``\r`` each (old Mac line endings), which would read as one line,
    is a one-line SiptError saying so."""
    text = read_text_file(path, what)
    if "\n" not in text and "\r" in text.rstrip("\r"):
        raise SiptError(
            f"{what} {path} ends its lines with a lone carriage return (\\r, old Mac line endings), which reads "
            "as one line; convert them to \\n (e.g. tr '\\r' '\\n')"
        )
    return split_lines(text)


def is_comment(line: str) -> bool:
    """Whether ``line`` of a tab-separated file (samples, labels, edges, splits) is a comment: its
    first non-blank character is ``#``. Every reader and engine skips the same lines."""
    return line.lstrip().startswith("#")


def stream_text_lines(path: str | Path, what: str, wrap: Callable[[Iterable[bytes]], Iterable[bytes]] = iter):
    """``(line number, line)`` of the text file ``path``, read lazily by the rules of
    :func:`read_text_lines` (``.gz`` allowed, byte-order mark dropped, lines split on ``\n`` and
    ``\r\n`` only); ``wrap`` wraps the raw lines (a progress bar). The same one-line SiptErrors."""
    with reading_errors(path, what), (gzip.open if str(path).endswith(".gz") else open)(path, "rb") as handle:
        for number, raw in enumerate(wrap(handle), start=1):
            try:
                line = raw.decode("utf-8").removesuffix("\n").removesuffix("\r")
            except UnicodeDecodeError:
                raise _not_utf8(path, what, number) from None
            yield number, line.removeprefix("\ufeff") if number == 1 else line
