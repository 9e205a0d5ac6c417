"""Host arrays onto the training device in one copy: :func:`to_device`.

A copy from pageable host memory to a CUDA GPU waits for the GPU's queued work first, so a step
that moves each small index array on its own waits for the GPU once per array and cannot queue the
next kernels while the GPU runs. :func:`to_device` moves a step's arrays of one dtype as one pinned,
asynchronous copy instead; on a CPU it only wraps them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def to_device(arrays: Sequence[np.ndarray | torch.Tensor], device: torch.device) -> list[torch.Tensor]:
    """``arrays`` (numpy arrays or CPU tensors, all of one dtype) as tensors of the same shapes on
    ``device``; on CUDA one pinned, non-blocking host-to-device copy for all of them (views of it)."""
    tensors = [torch.as_tensor(array) for array in arrays]
    if device.type != "cuda" or not tensors:
        return [tensor.to(device) for tensor in tensors]
    host = torch.cat([tensor.reshape(-1) for tensor in tensors]).pin_memory()
    moved = host.to(device, non_blocking=True).split([tensor.numel() for tensor in tensors])
    return [part.view(tensor.shape) for part, tensor in zip(moved, tensors)]
