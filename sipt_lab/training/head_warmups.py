"""Fitted MLM heads shared by runs that start alike (:class:`HeadWarmups`).

An init without an MLM head of its own (MiniLM) gets a fresh head fitted with the encoder frozen
before training (:func:`~sipt_lab.training.loop.fit_heads`). The fit reads the batches' seeds and
masks, which do not depend on the graph or on λ_SI (:mod:`sipt_lab.training.sampler`), so the arms
of a study that differ only in those fit the same head: the first run fits it, the others copy it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence

import torch
from torch import nn

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
    description and the pre-training samples (by digest)."""
    digest = hashlib.sha256("\x00".join(map(str, texts)).encode()).hexdigest()
    fields = {name: getattr(config, name) for name in HEAD_WARMUP_FIELDS}
    return json.dumps([fields, described, digest], sort_keys=True, default=str)


class HeadWarmups:
    """Heads fitted by earlier runs of this process, by :func:`head_warmup_key`.

    A run whose key is here copies the head and the random state its fit left behind (the fit's
    dropout draws), so it trains exactly as if it had fitted the head itself.
    """

    def __init__(self) -> None:
        self._fitted: dict[str, tuple[list[torch.Tensor], list[torch.Tensor], str]] = {}

    def __len__(self) -> int:
        return len(self._fitted)

    def warm_up(self, key: str, head: list[nn.Parameter], fit: Callable[[], str], cuda_devices: list) -> str:
        """Fit ``head`` (the new head's parameters) with ``fit`` (which returns the log note) or copy
        the head fitted under ``key``; returns the note."""
        if key not in self._fitted:
            note = fit()
            self._fitted[key] = ([p.detach().clone() for p in head], _random_state(cuda_devices), note)
            return note
        values, state, note = self._fitted[key]
        with torch.no_grad():
            for parameter, value in zip(head, values, strict=True):
                parameter.copy_(value)
        torch.set_rng_state(state[0])
        for device, device_state in zip(cuda_devices, state[1:], strict=True):
            torch.cuda.set_rng_state(device_state, device)
        return f"{note} (the head an earlier run with the same start fitted)"


def _random_state(cuda_devices: list) -> list[torch.Tensor]:
    return [torch.get_rng_state(), *(torch.cuda.get_rng_state(device) for device in cuda_devices)]
