"""Atomic file writes (a result file is either complete or absent, never half-written), the one
check of an output directory every subcommand uses, and the build manifest that lets a command
own a directory without deleting anything it did not write."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from sipt_lab.errors import SiptError

#: Name of the file in which a build records the files it wrote (see :func:`claim_output_dir`).
MANIFEST = ".sipt-lab-files.json"


def default_file_mode() -> int:
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
        os.fchmod(fd, default_file_mode())
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
        raise SiptError(f"cannot read {what} {path} ({getattr(error, 'strerror', None) or error}); "
                        "check its permissions and that it is intact") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise SiptError(f"{what} {path} is not UTF-8 text (bad byte on line {line}); re-encode it as UTF-8") from None
    return text.removeprefix("\ufeff")


def check_output_dir(path: str | Path | None, option: str = "--out", *, owned_only: bool = False) -> Path:
    """``path`` as a Path if it can be an output directory; changes nothing on disk.

    Raises a one-line :class:`SiptError` naming ``option`` when ``path`` is None or empty (an
    unset shell variable would otherwise mean the current directory), is an existing file, lies
    under a file, or is not writable. With ``owned_only``, an existing directory must also be
    empty or hold only files an earlier build listed in its :data:`MANIFEST` (see
    :func:`claim_output_dir`). Call it before any expensive work.
    """
    if path is None or not str(path).strip():
        raise SiptError(f"{option} is empty; pass the directory to write into (an unset shell variable?)")
    out = Path(path)
    existing = next(parent for parent in [out, *out.parents] if parent.exists() or parent == Path(parent.anchor))
    if not existing.is_dir():
        where = "is a file" if existing == out else f"lies under the file {existing}"
        raise SiptError(f"{option} {out} {where}; pass a directory path")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise SiptError(f"{option} {out} is not writable ({existing} is read-only); pass a directory you can write to")
    if owned_only and existing == out:
        owned = set(_manifest_files(out / MANIFEST)) | {MANIFEST}
        foreign = sorted(p.name for p in out.iterdir() if p.name not in owned)
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise SiptError(f"{option} {out} holds files sipt-lab did not write ({shown}); pass an empty or new directory")
    return out


def prepare_output_dir(path: str | Path | None, option: str = "--out") -> Path:
    """:func:`check_output_dir`, then create the directory; returns it."""
    out = check_output_dir(path, option)
    out.mkdir(parents=True, exist_ok=True)
    return out


def claim_output_dir(path: str | Path | None, option: str = "--out") -> Path:
    """Take ``path`` for a command that owns the whole directory (one build per directory).

    :func:`check_output_dir` with ``owned_only``, then create the directory and delete the files
    an earlier build's :data:`MANIFEST` lists, so none of them stays beside the new build's files.
    Any other file is the user's, and the call refuses to go on. Record what the new build wrote
    with :func:`write_manifest`.
    """
    out = check_output_dir(path, option, owned_only=True)
    out.mkdir(parents=True, exist_ok=True)
    for name in _manifest_files(out / MANIFEST):
        (out / name).unlink(missing_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)
    return out


def write_manifest(out_dir: str | Path, names: list[str]) -> None:
    """Record ``names`` (files directly in ``out_dir``) as written by this build, for :func:`claim_output_dir`."""
    write_json_atomic(Path(out_dir) / MANIFEST, sorted(names))


def _manifest_files(manifest: Path) -> list[str]:
    """The file names a manifest lists; [] when it is missing or damaged (nothing is then owned)."""
    try:
        names = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(names, list):
        return []
    return [name for name in names if isinstance(name, str) and name == Path(name).name and name not in ("", ".", "..")]
