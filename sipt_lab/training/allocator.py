"""Keep freed host memory in the process instead of handing it back to the OS after every step.

A CPU training step allocates and frees the same large tensors (MLM logits and their gradients:
megabytes each) every step. glibc serves blocks above its mmap threshold with fresh ``mmap`` calls
and trims freed memory at the top of the heap back to the OS, so each step pays again for first-touch
page faults on every such block, which are costly in a virtual machine (a sizeable share of a
stacked CPU step; the figure is in the benchmark results, "Batched training").
:func:`retain_freed_memory` raises both thresholds (what PyTorch's CPU performance guide reaches by
preloading jemalloc or tcmalloc), so freed blocks are reused. It changes no number a run computes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
#: glibc caps the mmap threshold at 32 MiB on 64-bit systems; larger blocks are still mmapped.
MMAP_THRESHOLD = 32 * 2**20
TRIM_THRESHOLD = 2**30


@functools.cache
def retain_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds for this process (once); False where the C library
    is not glibc (macOS, musl, Windows), where nothing changes."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
