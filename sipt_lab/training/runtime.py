"""Where a training runs: the device, the autocast dtype and this process's place in a data-parallel run."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from sipt_lab.core.errors import SiptError
from sipt_lab.training.train_config import PRECISIONS


def resolve_device(name: str | torch.device, field: str = "TrainConfig.device") -> torch.device:
    """``"auto"`` -> CUDA when available else CPU; ``"cpu"``, ``"cuda"``, ``"cuda:N"`` as given;
    CUDA without a GPU is a SiptError naming ``field``, the config field the device came from."""
    name = str(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name != "cpu" and name.split(":")[0] != "cuda":
        raise SiptError(f"unknown device {name!r}; use auto, cpu or cuda")
    if name != "cpu" and not torch.cuda.is_available():
        raise SiptError(f"device cuda requested but torch sees no CUDA GPU; use {field} cpu or auto")
    return torch.device(name)


def autocast_dtype(precision: str, device: torch.device, *, small: bool = False) -> torch.dtype | None:
    """The autocast dtype for ``precision`` on ``device`` (None: full fp32). ``small``: the model is
    one of the lab's char encoders, whose GPU step is bound by kernel launches, not arithmetic, so
    autocast's casts only add launches: ``auto`` is fp32 for it."""
    if precision not in PRECISIONS:
        raise SiptError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    if precision == "fp16" and device.type != "cuda":
        raise SiptError("fp16 autocast needs a CUDA GPU; use TrainConfig.precision bf16 or fp32 on CPU")
    if precision == "auto":
        if device.type != "cuda" or small:
            return None
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


@dataclass(frozen=True)
class Distributed:
    """This process's place in a data-parallel run: ``rank`` of ``world`` processes."""

    rank: int = 0
    world: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


#: A run of one process (no data parallelism).
SINGLE_PROCESS = Distributed()


def distributed_context(device_type: str) -> Distributed:
    """Join the ``torchrun`` process group when ``WORLD_SIZE`` > 1 (NCCL on CUDA, gloo on CPU)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return SINGLE_PROCESS
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device_type == "cuda" else "gloo")
    return Distributed(dist.get_rank(), dist.get_world_size())


def local_device(device: torch.device, place: Distributed) -> torch.device:
    """The device this process trains on: under ``torchrun`` on CUDA its ``LOCAL_RANK``'s GPU
    (made the current one), else ``device``."""
    if place.world > 1 and device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    return device
