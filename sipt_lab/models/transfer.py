"""Host arrays onto the training device in one copy: :func:`to_device` and :class:`DeviceArrays`.

A copy from pageable host memory to a CUDA GPU waits for the GPU's queued work first, so a step
that moves each small index array on its own waits for the GPU once per array and cannot queue the
next kernels while the GPU runs. :func:`to_device` moves a step's arrays of one dtype as one pinned,
asynchronous copy instead; on a CPU it only wraps them. :class:`DeviceArrays` does the same for
named arrays of several dtypes and can be refilled in place, which a recorded CUDA graph needs (it
reads its inputs from fixed addresses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch


def to_device(arrays: Sequence[np.ndarray | torch.Tensor], device: torch.device) -> list[torch.Tensor]:
    """``arrays`` (numpy arrays or CPU tensors, all of one dtype) as tensors of the same shapes on
    ``device``; on CUDA one pinned, non-blocking host-to-device copy for all of them (views of it)."""
    tensors = [torch.as_tensor(array) for array in arrays]
    if device.type != "cuda" or not tensors:
        return [tensor.to(device) for tensor in tensors]
    moved = _pinned_flat(tensors).to(device, non_blocking=True).split([tensor.numel() for tensor in tensors])
    return [part.view(tensor.shape) for part, tensor in zip(moved, tensors)]


class DeviceArrays(Mapping[str, torch.Tensor]):
    """Named host arrays on ``device``: one flat buffer per dtype, each array a view of its buffer
    (a mapping from name to tensor). :meth:`refill` copies new arrays of the same names, shapes and
    dtypes into the same buffers, so the views keep their addresses: on CUDA through one pinned
    staging buffer per dtype, reused (one non-blocking copy per dtype, no allocation), on a CPU
    directly; numpy writes only, no torch CPU op."""

    def __init__(self, arrays: Mapping[str, np.ndarray], device: torch.device) -> None:
        self._names = {dtype: [name for name in arrays if arrays[name].dtype == dtype] for dtype in _dtypes(arrays)}
        self._layout = _layout(arrays)
        self._buffers, self._views = {}, {}
        for dtype, names in self._names.items():
            host = [torch.as_tensor(arrays[name]) for name in names]
            flat = _pinned_flat(host) if device.type == "cuda" else torch.cat([h.reshape(-1) for h in host])
            self._buffers[dtype] = buffer = flat.to(device, non_blocking=True)
            parts = buffer.split([h.numel() for h in host])
            self._views.update((name, part.view(h.shape)) for name, part, h in zip(names, parts, host))
        self._staging, self._copied = None, None  # made at the first refill (the staging buffers' last copy)

    def refill(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Copy ``arrays`` (the names, shapes and dtypes this was made with) into the buffers."""
        if _layout(arrays) != self._layout:
            raise ValueError("refill needs the arrays' names, shapes and dtypes unchanged")
        if self._staging is None:
            on_cuda = next(iter(self._buffers.values())).device.type == "cuda"
            self._staging = {
                dtype: torch.empty(buffer.numel(), dtype=buffer.dtype, pin_memory=True) if on_cuda else buffer
                for dtype, buffer in self._buffers.items()
            }
            self._copied = torch.cuda.Event() if on_cuda else None
        if self._copied is not None:
            self._copied.synchronize()  # the previous copy out of the staging buffers is done
        for dtype, names in self._names.items():
            staging, start = self._staging[dtype].numpy(), 0
            for name in names:
                array = np.asarray(arrays[name])
                staging[start : start + array.size] = array.ravel()
                start += array.size
            if self._copied is not None:
                self._buffers[dtype].copy_(self._staging[dtype], non_blocking=True)
        if self._copied is not None:
            self._copied.record()

    def __getitem__(self, name: str) -> torch.Tensor:
        return self._views[name]

    def __iter__(self):
        return iter(self._views)

    def __len__(self) -> int:
        return len(self._views)


def _dtypes(arrays: Mapping[str, np.ndarray]) -> list[np.dtype]:
    return list(dict.fromkeys(np.asarray(array).dtype for array in arrays.values()))


def _layout(arrays: Mapping[str, np.ndarray]) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    return {name: (np.shape(array), np.asarray(array).dtype) for name, array in arrays.items()}


def _pinned_flat(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """The tensors concatenated into one flat pinned host tensor."""
    return torch.cat([tensor.reshape(-1) for tensor in tensors]).pin_memory()
