"""Locks of output directories and grid cells (a live holder is refused or waited for, a dead
one's lock taken over) and the creation of a directory with a one-line error; the output rule
that uses them lives in :mod:`sipt_lab.core.outputs`."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from sipt_lab.core.errors import SiptError

#: Name of the lock file of a run's output directory (see :func:`hold_lock`).
RUN_LOCK = ".sipt-lab.lock"


def make_dir(path: Path, option: str = "--out") -> None:
    """``path.mkdir(parents=True, exist_ok=True)``; a one-line SiptError naming ``option`` when the
    system refuses (a read-only or special file system, a full disk)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SiptError(
            f"{option} {path} cannot be created ({error.strerror or error}); pass a directory you can write to"
        ) from None


@contextlib.contextmanager
def locked_dir(out: Path, option: str = "--out") -> Iterator[Path]:
    """``out`` created if missing and locked (:func:`hold_lock`, a live holder refused) for the
    block; afterwards, a directory the block created and left empty is removed again."""
    created = not out.exists()
    make_dir(out, option)
    try:
        with hold_lock(out, RUN_LOCK, wait=False, option=option):
            yield out
    finally:
        if created:
            with contextlib.suppress(OSError):  # not empty: the run (or someone) wrote there
                out.rmdir()


def holds_files(directory: Path) -> bool:
    """Whether ``directory`` holds anything besides a run lock (and its temporary file)."""
    return any(not is_lock(p.name) for p in directory.iterdir())


def is_lock(name: str) -> bool:
    """Whether ``name`` is a run lock or the temporary file it is made from."""
    return name == RUN_LOCK or name.startswith(f".{RUN_LOCK}.")


@contextlib.contextmanager
def hold_lock(
    directory: Path, name: str = RUN_LOCK, *, wait: bool, option: str = "--out", poll_seconds: float = 1.0
) -> Iterator[bool]:
    """Hold ``directory/name`` (``{"pid", "host"}``) for the block; yields whether it had to wait.

    The lock is created atomically (a complete temporary file hard-linked into place). A lock whose
    process is dead on this host is stale and taken over; a live one is waited for (``wait``) or is
    a SiptError naming ``option`` and the holder's process id.
    """
    directory.mkdir(parents=True, exist_ok=True)
    lock = directory / name
    owner = {"pid": os.getpid(), "host": socket.gethostname()}
    tmp = directory / f".{name}.{owner['pid']}.tmp"
    tmp.write_text(json.dumps(owner), encoding="utf-8")
    waited = False
    try:
        while True:
            try:
                os.link(tmp, lock)
                break
            except FileExistsError:
                holder = _lock_holder(lock)
                if holder is not None and holder["host"] == owner["host"] and not _alive(holder["pid"]):
                    lock.unlink(missing_ok=True)  # stale: its process was killed
                    continue
                if not wait:
                    who = "another process" if holder is None else f"process {holder['pid']} on {holder['host']}"
                    raise SiptError(
                        f"{option} {directory} is in use by {who} (lock {lock}); wait for that run "
                        f"to finish or pass another {option}"
                    ) from None
                waited = True
                time.sleep(poll_seconds)
    finally:
        tmp.unlink(missing_ok=True)
    try:
        yield waited
    finally:
        lock.unlink(missing_ok=True)


def _lock_holder(lock: Path) -> dict | None:
    """The ``{"pid", "host"}`` in a lock file, or None when it vanished or is unreadable."""
    try:
        holder = json.loads(lock.read_text(encoding="utf-8"))
        return {"pid": int(holder["pid"]), "host": str(holder["host"])}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
