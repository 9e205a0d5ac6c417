"""Fitted MLM heads shared by runs that start alike (:class:`HeadWarmups`).

An init without an MLM head of its own (MiniLM) gets a fresh head fitted with the encoder frozen
before training (:func:`~sipt_lab.training.loop.fit_heads`). The fit reads the batches' seeds and
masks, which do not depend on the graph or on λ_SI (:mod:`sipt_lab.training.sampler`), so the arms
of a study that differ only in those fit the same head: the first run fits it, the others copy it.
Given a directory, the heads are kept there too, so a later process that starts the same way (the
same init weights, by their SHA-256, the same warm-up settings and samples) loads the head instead
of fitting it again, with the same result.

``pretrain`` fits its runs' heads more cheaply (``on_states=True``, the cache's ``heads/``): on the
frozen token states of its samples, encoded once (:mod:`~sipt_lab.training.own_head`), so that the
head reads the samples' own language.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import nn

from sipt_lab.core.fileio import atomic_writer

logger = logging.getLogger(__name__)

#: The cache's subdirectory (:func:`~sipt_lab.core.fileio.cache_dir`) where ``pretrain`` keeps fitted heads.
HEAD_CACHE = "heads"
#: TrainConfig fields a head warm-up reads: its batches' seeds and masks, its optimiser, and where
#: and in which precision it runs.
HEAD_WARMUP_FIELDS = (
    "seed",
    "batch_size",
    "max_len",
    "mask_prob",
    "mask_replacement",
    "mask_unit",
    "weight_decay",
    "head_warmup",
    "head_lr",
    "precision",
    "device",
)


def head_warmup_key(config, described: dict, texts: Sequence) -> str:
    """What determines a warm-up's head: ``config``'s :data:`HEAD_WARMUP_FIELDS`, the init's
    description (a checkpoint's includes its weights' SHA-256) and the pre-training samples (by digest)."""
    digest = hashlib.sha256("\x00".join(map(str, texts)).encode()).hexdigest()
    fields = {name: getattr(config, name) for name in HEAD_WARMUP_FIELDS}
    return json.dumps([fields, described, digest, torch.__version__], sort_keys=True, default=str)


class HeadWarmups:
    """Heads fitted by earlier runs of this process, by key (:func:`head_warmup_key`), with
    ``directory`` by earlier processes (one file per key; an unreadable or damaged one is fitted
    again and replaced, an unwritable directory only logged).

    A head whose fit drew from the run's random state (``draws_run_rng``) is kept with the state the
    fit left behind (its dropout draws), and a run that copies it takes that state too, so it trains
    exactly as if it had fitted the head itself. ``on_states``: the runs that can (a plain LM / SIPT
    run) fit their new MLM head on their samples' frozen token states, encoded once, which draws
    nothing from their random state (:mod:`~sipt_lab.training.own_head`).
    """

    def __init__(self, directory: str | Path | None = None, on_states: bool = False) -> None:
        self._fitted: dict[str, tuple[list[torch.Tensor], list[torch.Tensor] | None, str]] = {}
        self.directory = None if directory is None else Path(directory)
        self.on_states = on_states

    def __len__(self) -> int:
        return len(self._fitted)

    def has(self, key: str, cuda_devices: list) -> bool:
        """Whether a head fitted under ``key`` is at hand (in this process or the directory)."""
        return self._lookup(key, cuda_devices) is not None

    def warm_up(
        self,
        key: str,
        head: list[nn.Parameter],
        fit: Callable[[], str],
        cuda_devices: list,
        draws_run_rng: bool = True,
    ) -> str:
        """Fit ``head`` (the new head's parameters) with ``fit`` (which returns the log note) or copy
        the head fitted under ``key``; returns the note."""
        found = self._lookup(key, cuda_devices)
        if found is None:
            note = fit()
            state = _random_state(cuda_devices) if draws_run_rng else None
            self._fitted[key] = ([p.detach().cpu().clone() for p in head], state, note)
            self._store(key)
            return note
        values, state, note = found
        with torch.no_grad():
            for parameter, value in zip(head, values, strict=True):
                parameter.copy_(value)
        if state is not None:
            torch.set_rng_state(state[0])
            for device, device_state in zip(cuda_devices, state[1:], strict=True):
                torch.cuda.set_rng_state(device_state, device)
        return f"{note} (the head an earlier run with the same start fitted)"

    def _path(self, key: str) -> Path:
        return self.directory / head_file(key)

    def _lookup(self, key: str, cuda_devices: list):
        if key not in self._fitted and self.directory is not None:
            saved = load_head(self._path(key), key)
            state = None if saved is None else saved["random_state"]
            if saved is not None and (state is None or len(state) == 1 + len(cuda_devices)):
                self._fitted[key] = (saved["head"], state, saved["note"])
                logger.debug("head warm-up: loaded the fitted head from %s", self._path(key))
        return self._fitted.get(key)

    def _store(self, key: str) -> None:
        if self.directory is None:
            return
        values, state, note = self._fitted[key]
        path = self._path(key)
        try:
            save_head(path, key, values, state, note)
        except OSError as error:
            logger.warning(f"could not keep the fitted head in {path} ({error.strerror}); the next run fits it again")
        else:
            logger.debug("head warm-up: kept the fitted head in %s", path)


def head_file(key: str) -> str:
    """The file name of the head kept under ``key``."""
    return f"head-{hashlib.sha256(key.encode()).hexdigest()[:24]}.pt"


def load_head(path: Path, key: str) -> dict | None:
    """The head kept at ``path`` (``key``, ``head``: its tensors, ``random_state``: the state its fit
    left or None, ``note``, ``torch``: the version that fitted it) when it is there, readable and
    kept under ``key``; else None."""
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        return None
    except Exception as error:  # a damaged entry is a miss: fitted again and replaced
        logger.debug("head cache entry %s unreadable (%s); fitting the head", path, error)
        return None
    return saved if isinstance(saved, dict) and saved.get("key") == key else None


def save_head(path: Path, key: str, head: list[torch.Tensor], random_state, note: str) -> None:
    """Keep ``head`` (its tensors, on the CPU) at ``path`` under ``key``, atomically (:func:`load_head` reads it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(path) as handle:
        record = {"key": key, "head": head, "random_state": random_state, "note": note, "torch": str(torch.__version__)}
        torch.save(record, handle)


def _random_state(cuda_devices: list) -> list[torch.Tensor]:
    return [torch.get_rng_state(), *(torch.cuda.get_rng_state(device) for device in cuda_devices)]
