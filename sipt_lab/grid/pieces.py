"""A grid run's finished pieces: what another machine, or a later window of device time, needs to
continue the run where it stopped, and nothing else.

A run that outlives one machine's time (a GPU lent for minutes) is continued in pieces: each call
runs the command with ``--resume`` (and ``--time-limit``) over a copy of the pieces so far, then
:func:`keep_finished` copies what it finished into a folder that is kept (committed to a
repository, say), and the next call starts from that folder. The pieces are the run's own files
(config, splits, summaries) and each finished cell's ``config.json`` and ``result.json``: metrics,
never weights, locks, tracebacks or half-written cells, so the folder is small, holds no other
host's lock, and a cell is either finished in it or absent.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_json_atomic
from sipt_lab.core.locks import RUN_LOCK
from sipt_lab.core.outputs import MANIFEST, REPLACED_DIR
from sipt_lab.grid.cells import CELL_LOCK

#: A grid cell's directory name: its config's hash (:func:`~sipt_lab.core.config_io.config_hash`).
CELL_NAME = re.compile(r"[0-9a-f]{12}")
#: The files of a finished cell worth keeping (a model store's cell also holds weights: not kept).
CELL_FILES = ("config.json", "result.json")
#: Files of a run directory that belong to the process that wrote them, never to its pieces.
TRANSIENT = (RUN_LOCK, CELL_LOCK, "error.txt")


def keep_finished(run_dir: str | Path, into: str | Path) -> list[str]:
    """Copy the pieces of the grid run in ``run_dir`` into ``into``; returns the copied paths
    (relative, ``/``-separated, sorted).

    ``into`` is created, or holds pieces of the same run (the same command, settings and
    ``config.json``), which it keeps: a cell finished there and not in ``run_dir`` stays. A cell
    directory (named by its config's hash, holding ``config.json``) is copied only when finished
    (``result.json`` present), and then only :data:`CELL_FILES`; every other file but the
    :data:`TRANSIENT` ones and ``--overwrite``'s kept-aside folder is copied as it is.
    The run's manifest is copied listing the files ``into`` holds.
    """
    run_dir, into = Path(run_dir), Path(into)
    if not (run_dir / MANIFEST).is_file():
        raise SiptError(f"{run_dir} holds no sipt-lab run (no {MANIFEST}); pass the --out of a grid run")
    manifest = _manifest(run_dir)
    if into.exists():
        _check_same_run(run_dir, manifest, into)
    copied = []
    for path in sorted(run_dir.rglob("*")):
        name = path.relative_to(run_dir).as_posix()
        if path.is_file() and name != MANIFEST and _is_piece(path, run_dir):
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = target.with_name(f".{target.name}.tmp")
            shutil.copyfile(path, temporary)
            temporary.replace(target)  # a piece is whole or absent, as its cell's result.json is
            copied.append(name)
    held = sorted(
        path.relative_to(into).as_posix() for path in into.rglob("*") if path.is_file() and path.name != MANIFEST
    )
    write_json_atomic(into / MANIFEST, {**manifest, "files": held})
    return copied


def _is_piece(path: Path, run_dir: Path) -> bool:
    """Whether the file ``path`` of ``run_dir`` is one of its pieces (see :func:`keep_finished`)."""
    relative = path.relative_to(run_dir)
    if path.name in TRANSIENT or path.name.startswith(".") or relative.parts[0] == REPLACED_DIR:
        return False
    cell = path.parent
    if cell != run_dir and CELL_NAME.fullmatch(cell.name) and (cell / "config.json").is_file():
        return path.name in CELL_FILES and (cell / "result.json").is_file()
    return True


def _manifest(run_dir: Path) -> dict:
    """``run_dir``'s manifest as a run's (``{"command", "run", "files"}``)."""
    try:
        manifest = json.loads((run_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SiptError(f"{run_dir / MANIFEST} cannot be read ({error}); pass the --out of a grid run") from None
    if not isinstance(manifest, dict) or not manifest.get("command"):
        raise SiptError(f"{run_dir} holds a build's files, not a command's run; pass the --out of a grid run")
    return manifest


def _check_same_run(run_dir: Path, manifest: dict, into: Path) -> None:
    """SiptError unless ``into`` is empty or holds pieces of the run in ``run_dir``."""
    if not into.is_dir():
        raise SiptError(f"{into} is a file; pass a folder for the pieces")
    if not any(into.iterdir()):
        return
    if not (into / MANIFEST).is_file():
        raise SiptError(f"{into} holds files but no pieces of a sipt-lab run; pass a new or empty folder")
    kept = _manifest(into)
    same = all(kept.get(key) == manifest.get(key) for key in ("command", "run"))
    configs = [folder / "config.json" for folder in (run_dir, into)]
    if same and all(path.is_file() for path in configs):
        same = configs[0].read_bytes() == configs[1].read_bytes()
    if not same:
        raise SiptError(
            f"{into} holds pieces of another run ({kept.get('command')}, other settings) than {run_dir}; "
            "pass that run's folder or a new one"
        )
