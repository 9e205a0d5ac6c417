"""Logging and progress bars: library code logs, the command configures where the records go.

Every module logs to ``logging.getLogger(__name__)`` (a child of the ``sipt_lab`` logger): what it
used to print besides a command's own output is a record at INFO, warnings at WARNING. A progress
bar is :func:`progress_bar`, shown only when the ``sipt_lab`` logger is enabled for INFO and this
process is rank 0, so that ``-q`` (WARNING) silences bars and lines alike and a library call that
configured no logging stays silent. :func:`configure_logging` is what the CLI calls once (``-v``:
DEBUG, ``-q``: WARNING); its handler writes through ``tqdm.write``, as
``tqdm.contrib.logging.logging_redirect_tqdm`` does, so that log lines do not break bars. Under
``torchrun`` (``RANK`` > 0) a process logs errors only.

```python
>>> from sipt_lab.core.progress import progress_bar
>>> sum(progress_bar(range(3), desc="steps"))  # a bar on stderr where the CLI asked for INFO
3

```
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

from tqdm.auto import tqdm

#: The package's root logger; every module's logger is a child of it.
ROOT = logging.getLogger("sipt_lab")


def rank() -> int:
    """This process's rank: torch.distributed's when it is initialised, else ``$RANK`` (0 without)."""
    torch = sys.modules.get("torch")  # never imported here: a process without torch is rank $RANK
    if torch is not None and torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank()
    try:
        return int(os.environ.get("RANK") or 0)
    except ValueError:
        return 0


#: Set in a worker process of a ``local`` grid pool (:func:`configure_worker_logging`): there a bar
#: shows only on a terminal line of its own (tqdm's ``position``), so that workers' bars do not overwrite each other.
_worker = False


def bars_enabled() -> bool:
    """Whether progress bars show: the ``sipt_lab`` logger is enabled for INFO and this is rank 0."""
    return ROOT.isEnabledFor(logging.INFO) and rank() == 0


def progress_bar(iterable: Iterable | None = None, **kwargs: Any) -> tqdm:
    """A tqdm bar over ``iterable`` (or a manual one with ``total=``), disabled unless
    :func:`bars_enabled`; ``disable=True`` disables it regardless, and so does a worker process of a
    ``local`` pool without ``position=`` (a line of its own). Other keywords go to tqdm."""
    disable = bool(kwargs.pop("disable", False)) or not bars_enabled()
    disable = disable or (_worker and kwargs.get("position") is None)
    return tqdm(iterable, disable=disable, **kwargs)


@contextlib.contextmanager
def phase(logger: logging.Logger, name: str, sizes: str = "", *, announce: bool = True) -> Iterator[list[str]]:
    """A phase of a command: logged at INFO as it starts (``announce``; the progress of a phase
    that has no steps to count), and at DEBUG as it ends with ``sizes``, what the block appended to
    the list it gets (sizes known only at the end) and its seconds."""
    if announce:
        logger.info(f"{name}{f' ({sizes})' if sizes else ''}...")
    began, found = time.perf_counter(), []
    yield found
    logger.debug(f"{name}: {', '.join([*filter(None, [sizes]), *found])} in {time.perf_counter() - began:.2f} s")


class _Formatter(logging.Formatter):
    """``sipt-lab: message`` at INFO, ``sipt-lab: warning: message`` above, the logger's name at DEBUG."""

    def format(self, record: logging.LogRecord) -> str:
        message = super().format(record)
        if record.levelno == logging.INFO:
            return f"sipt-lab: {message}"
        if record.levelno < logging.INFO:
            return f"sipt-lab: debug: {record.name}: {message}"
        return f"sipt-lab: {record.levelname.lower()}: {message}"


class TqdmHandler(logging.Handler):
    """Writes records to stderr through ``tqdm.write`` (looked up at each record, so that a
    redirected ``sys.stderr`` is honoured) so that they print above any open progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:  # as logging.StreamHandler does
            self.handleError(record)


def configure_logging(level: int = logging.INFO) -> None:
    """Send the ``sipt_lab`` logger's records of ``level`` and above to stderr (replacing a handler
    an earlier call installed). A process of rank > 0 logs errors only."""
    if rank() != 0:
        level = max(level, logging.ERROR)
    for handler in [h for h in ROOT.handlers if isinstance(h, TqdmHandler)]:
        ROOT.removeHandler(handler)
    handler = TqdmHandler(level)
    handler.setFormatter(_Formatter())
    ROOT.addHandler(handler)
    ROOT.setLevel(level)


def configured_level() -> int | None:
    """The level :func:`configure_logging` set in this process (None when it was not called): what
    a worker process passes on to its own :func:`configure_logging`."""
    return ROOT.level if any(isinstance(h, TqdmHandler) for h in ROOT.handlers) else None


def level_from_flags(verbose: bool, quiet: bool) -> int:
    """The level of the CLI's ``-v`` / ``-q`` (``-q`` wins): DEBUG, WARNING, else INFO."""
    return logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO


def configure_worker_logging(level: int | None) -> None:
    """In a worker process: log as its parent does (``level``: the parent's :func:`configured_level`,
    None for a parent that configured nothing), bars only on lines of their own."""
    global _worker
    _worker = True
    if level is not None:
        configure_logging(level)
