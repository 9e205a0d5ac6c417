"""Checkpoints of a training: what they hold, and the check that one fits the run resuming from it.

A checkpoint holds the step's parameters (one model and its objectives, or a stack of models), the
optimiser and gradient-scaler state, every run's loss history so far, the evaluations made so far
(so a resumed run keeps its best model and its patience), the torch RNG states and the JSON
identity of the run(s), :func:`run_identity`: the one identity a run resumes by. A run resumes
only from a checkpoint of the same identity: its
:class:`~sipt_lab.training.train_config.TrainConfig` up to the fields that may change on resume
(``steps`` may grow, unless the learning-rate schedule depends on them), its encoder source and
its tokenizer.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from sipt_lab.core.config_io import config_to_dict, field_differences
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_bytes_atomic
from sipt_lab.models import Tokenizer
from sipt_lab.training.train_config import _RESUMABLE_CHANGES, TrainConfig

#: The checkpoint's file name in a run's checkpoint directory.
CHECKPOINT_NAME = "checkpoint.pt"


def run_identity(config: TrainConfig, source: dict, tokenizer: Tokenizer) -> dict:
    """What a checkpoint must match to be resumed: ``config`` without the resumable fields, the
    encoder source's description and the tokenizer. ``steps`` may grow only under a constant
    schedule without warm-up: otherwise the rate at every step depends on them, and a resumed run
    would splice two schedules."""
    resumable = set(_RESUMABLE_CHANGES) - (set() if schedule_ignores_steps(config) else {"steps"})
    run = {k: v for k, v in config_to_dict(config).items() if k not in resumable}
    return {"train": run, "encoder": source, "tokenizer": tokenizer.to_dict()}


def schedule_ignores_steps(config: TrainConfig) -> bool:
    """Whether ``config``'s learning rate at a step is the same whatever its ``steps``."""
    return config.schedule == "constant" and config.warmup == 0


@dataclass
class Checkpoint:
    """The checkpoint file ``path`` of a training whose identity is ``identity``
    (:func:`run_identity`, or a dict of several runs' identities) and which runs ``steps`` steps;
    ``cuda_devices``: the devices whose RNG states it keeps."""

    path: Path
    identity: dict
    steps: int
    cuda_devices: Sequence[torch.device] = ()

    def exists(self) -> bool:
        return self.path.is_file()

    def save(
        self,
        module: nn.Module,
        optimizer: torch.optim.Optimizer,
        scaler: torch.amp.GradScaler,
        histories: Sequence[torch.Tensor],
        step: int,
        evaluations: Sequence[dict] = (),
    ) -> None:
        """Write the state after ``step`` steps (``histories``: per run ``(steps, columns)``; a
        single run's is stored as its tensor, several as a list; ``evaluations``: the loop's
        records so far, JSON-able dicts)."""
        kept = [history[:step].cpu() for history in histories]
        payload = {
            "step": step,
            "identity": json.dumps(self.identity, sort_keys=True),
            "modules": module.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scaler": scaler.state_dict(),
            "history": kept[0] if len(kept) == 1 else kept,
            "evaluations": json.dumps(list(evaluations)),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": [torch.cuda.get_rng_state(d) for d in self.cuda_devices],
        }
        buffer = io.BytesIO()
        torch.save(payload, buffer)
        write_bytes_atomic(self.path, buffer.getvalue())

    def load(
        self,
        module: nn.Module,
        optimizer: torch.optim.Optimizer,
        scaler: torch.amp.GradScaler,
        histories: Sequence[torch.Tensor],
    ) -> tuple[int, list[dict]]:
        """Restore the state into the given objects; returns the step to continue from and the
        evaluations made before it. SiptError when the file cannot be read, was made by another
        configuration, or is beyond ``steps``."""
        path = self.path
        try:
            payload = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as error:  # a truncated or foreign file: say which, never a traceback
            raise SiptError(
                f"checkpoint {path} cannot be read ({type(error).__name__}); delete it to start afresh"
            ) from None
        saved = json.loads(payload["identity"])
        differences = field_differences(saved, self.identity)
        if differences == ["train.steps"] and "steps" in saved["train"]:
            planned, train = saved["train"]["steps"], self.identity["train"]
            raise SiptError(
                f"checkpoint {path} is of a run planned for {planned:,} steps; resuming it with {train['steps']:,} "
                f"would splice two learning-rate schedules ({train['schedule']}, warm-up {train['warmup']:g}); "
                f"resume with TrainConfig.steps {planned}, or start afresh in another output directory"
            )
        if differences:
            raise SiptError(
                f"checkpoint {path} was made by another configuration (differs in {', '.join(differences)}); "
                "use the same settings, or start afresh in another output directory"
            )
        step = int(payload["step"])
        if step > self.steps:
            raise SiptError(f"checkpoint {path} is at step {step}, beyond steps={self.steps}; raise steps")
        module.load_state_dict(payload["modules"])
        optimizer.load_state_dict(payload["optimizer"])
        scaler.load_state_dict(payload["scaler"])
        stored = payload["history"]
        for history, values in zip(histories, [stored] if isinstance(stored, torch.Tensor) else stored):
            history[:step] = values.to(history.device)
        torch.set_rng_state(payload["torch_rng"])
        for device, rng in zip(self.cuda_devices, payload["cuda_rng"]):
            torch.cuda.set_rng_state(rng, device)
        return step, json.loads(payload.get("evaluations", "[]"))
