"""Model directories trained once and read by several grid cells: a store keyed by cell hash.

A store is a :func:`~sipt_lab.grid.runner.run_grid` root whose cells save a model next to
their result::

    <root>/<hash>/model/        the model's files (whatever the cell saved)
                 /result.json   {"digest": sha256 of model/'s files, ...}, written last

so the grid machinery gives what sharing needs: a stored model is made once (a finished cell is
skipped on every later run), two processes asking for the same one wait on its lock instead of
making it twice, and a run killed half-way resumes. :func:`check_model` refuses a model whose
files no longer match the digest recorded when it was saved (one line naming the directory),
and :func:`drop_damaged` forgets such entries before a grid runs, so that they are rebuilt rather
than read silently wrong. What a model is (and how it is saved or loaded) is the caller's business.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sipt_lab.core.errors import SiptError
from sipt_lab.grid.cells import Cell, read_result

MODEL_DIR = "model"
STORE_KEYS = ("digest",)


def model_dir(root: str | Path, cell: Any) -> Path:
    """Where the store ``root`` keeps the model of ``cell`` (a :class:`~sipt_lab.grid.cells.Cell` or a config)."""
    return Cell.of(cell).dir(root) / MODEL_DIR


def directory_digest(directory: str | Path) -> str:
    """SHA-256 over the relative paths and bytes of every file under ``directory`` (sorted)."""
    directory = Path(directory)
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        digest.update(path.relative_to(directory).as_posix().encode() + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def stored_digest(root: str | Path, cell: Any) -> str | None:
    """The digest recorded for ``cell``'s model in the store, None when it is not (validly) stored."""
    result = read_result(Cell.of(cell).dir(root), STORE_KEYS)
    return None if result is None else str(result["digest"])


def check_model(directory: str | Path, digest: str | None) -> Path:
    """``directory`` after checking that it exists and its files still have ``digest`` (None: no
    check); otherwise a one-line :class:`SiptError` naming the directory."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SiptError(
            f"model {directory} is missing; re-run the command to rebuild it, or pass an existing model directory"
        )
    if digest is not None and directory_digest(directory) != digest:
        raise SiptError(
            f"model {directory} changed since it was saved (its files no longer match their digest); "
            "remove its cell directory to rebuild it, or restore the files"
        )
    return directory


def drop_damaged(root: str | Path, cells: Sequence[Any]) -> list[Any]:
    """Forget (remove ``result.json`` of) every stored model of ``cells`` (Cells or configs) whose
    files are missing or no longer match their digest, so that the next grid over ``root`` rebuilds
    it; returns those cells as given."""
    dropped = []
    for given in cells:
        cell = Cell.of(given)
        digest = stored_digest(root, cell)
        directory = model_dir(root, cell)
        if digest is not None and (not directory.is_dir() or directory_digest(directory) != digest):
            (directory.parent / "result.json").unlink(missing_ok=True)
            dropped.append(given)
    return dropped
