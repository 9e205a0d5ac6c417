"""Encoders trained once and read by several grid cells: a store of model directories keyed by config hash.

A store is a :func:`~sipt_lab.grid.runner.run_grid` root whose cells train an encoder and
save it next to their result::

    <root>/<config_hash(config)>/model/        the encoder (save_encoder: char format or a Hugging Face directory)
                                /result.json   {"digest": sha256 of model/'s files, ...}, written last

so the grid machinery gives what sharing needs: a stored model is trained once (a finished cell is
skipped on every later run), two processes asking for the same one wait on its lock instead of
training it twice, and a run killed half-way resumes. :func:`load_model` refuses a model whose
files no longer match the digest recorded when it was saved (one line naming the directory), and
:func:`drop_damaged` forgets such entries before a grid runs, so that they are rebuilt rather than
read silently wrong.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from sipt_lab.core.config import config_hash
from sipt_lab.core.errors import SiptError
from sipt_lab.grid.runner import read_result

MODEL_DIR = "model"
STORE_KEYS = ("digest",)


def model_dir(root: str | Path, config: Any) -> Path:
    """Where the store ``root`` keeps the model that ``config`` trains."""
    return Path(root).resolve() / config_hash(config) / MODEL_DIR


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


def save_model(encoder, tokenizer, directory: str | Path) -> dict:
    """Save ``encoder`` and ``tokenizer`` into ``directory`` (replaced); returns ``{"digest": ...}``
    for the cell's result."""
    from sipt_lab.models import save_encoder

    save_encoder(encoder, tokenizer, directory)
    return {"digest": directory_digest(directory)}


def stored_digest(root: str | Path, config: Any) -> str | None:
    """The digest recorded for ``config``'s model in the store, None when it is not (validly) stored."""
    result = read_result(Path(root).resolve() / config_hash(config), STORE_KEYS)
    return None if result is None else str(result["digest"])


def load_model(directory: str | Path, digest: str | None, device: str | torch.device = "cpu"):
    """``(encoder, tokenizer)`` of a saved model, in eval mode on ``device``, after checking that its
    files still have ``digest`` (None: no check); a missing, changed or unreadable model is a
    one-line :class:`SiptError` naming the directory."""
    from sipt_lab.models import load_encoder

    directory = Path(directory)
    if not directory.is_dir():
        raise SiptError(f"model {directory} is missing; re-run the command to rebuild it, or pass an existing model directory")
    if digest is not None and directory_digest(directory) != digest:
        raise SiptError(f"model {directory} changed since it was saved (its files no longer match their digest); "
                        "remove its cell directory to rebuild it, or restore the files")
    try:
        return load_encoder(directory, device)
    except SiptError:
        raise
    except Exception as error:  # a damaged file: torch / safetensors / json errors
        raise SiptError(f"model {directory} cannot be loaded ({type(error).__name__}); remove it to rebuild it") from None


def drop_damaged(root: str | Path, configs: Sequence[Any]) -> list[Any]:
    """Forget (remove ``result.json`` of) every stored model of ``configs`` whose files are missing
    or no longer match their digest, so that the next grid over ``root`` rebuilds it; returns those configs."""
    dropped = []
    for config in configs:
        digest = stored_digest(root, config)
        directory = model_dir(root, config)
        if digest is not None and (not directory.is_dir() or directory_digest(directory) != digest):
            (directory.parent / "result.json").unlink(missing_ok=True)
            dropped.append(config)
    return dropped
