"""Atomic file writes: a result file is either complete or absent, never half-written."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def _default_mode() -> int:
    """The permissions ``open()`` would give a new file (0o666 minus the umask); mkstemp's are 0o600."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _default_mode())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    """UTF-8 text version of :func:`write_bytes_atomic`."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Indented JSON version of :func:`write_bytes_atomic`."""
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")
