"""Where grid cells run: ``serial`` (this process), ``local`` (a process pool, one torch thread per
worker), ``slurm`` (a submitit job array, optional extra ``sipt-lab[slurm]``).

An executor is a function ``(fn, cells=[(config, cell_dir)], root, **options) -> Iterator[Outcome]``
whose options are keyword-only; :data:`EXECUTORS` names them and :func:`check_executor` is the
one check of a name and its options. Worker processes die with the main process, and Ctrl-C
stops a ``local`` pool at once.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import functools
import inspect
import math
import multiprocessing
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sipt_lab.core.errors import SiptError
from sipt_lab.core.progress import configure_worker_logging, configured_level
from sipt_lab.grid.cells import CellFn, CellResult, run_cell

#: What an executor yields per cell: the cell's position in its list, and a call that returns the
#: cell's CellResult (or raises when the machinery itself failed, e.g. a worker process died).
Outcome = tuple[int, Callable[[], CellResult]]


def _serial(
    fn: CellFn, cells: list[tuple[Any, Path]], root: Path, *, deadline: float | None = None
) -> Iterator[Outcome]:
    """Every cell in this process, in order. With a ``deadline`` (:func:`time.monotonic` seconds),
    no cell starts after it, nor when the longest cell so far, with a tenth more, would end after
    it: a stop between cells wastes no work, a kill inside one wastes the cell."""
    longest = 0.0
    for index, (config, cell_dir) in enumerate(cells):
        if deadline is not None and time.monotonic() + 1.1 * longest > deadline:
            return
        started = time.monotonic()
        yield index, functools.partial(run_cell, fn, config, cell_dir)
        longest = max(longest, time.monotonic() - started)


def _local(
    fn: CellFn, cells: list[tuple[Any, Path]], root: Path, *, max_workers: int | None = None
) -> Iterator[Outcome]:
    """A spawn-started process pool of ``max_workers`` (default: one per core), one thread each."""
    if not cells:
        return
    workers = max_workers or min(len(cells), os.cpu_count() or 1)
    others = set(multiprocessing.active_children())
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_setup,
        initargs=(os.getpid(), configured_level()),
    )
    finished, pool_workers = False, []
    with _deferred_ctrl_c() as interrupted:
        try:
            # Every worker starts during these submits (spawned pools start one per submit, up to max_workers).
            futures = {pool.submit(run_cell, fn, config, cell_dir): i for i, (config, cell_dir) in enumerate(cells)}
            pool_workers = [p for p in multiprocessing.active_children() if p not in others]
            waiting = set(futures)
            while waiting:
                done, waiting = concurrent.futures.wait(
                    waiting, timeout=0.2, return_when=concurrent.futures.FIRST_COMPLETED
                )
                for future in done:
                    yield futures[future], future.result
                if interrupted.is_set():
                    raise KeyboardInterrupt
            finished = True
        finally:
            if not finished:  # interrupted or abandoned: stop the running cells now instead of waiting for them
                for process in pool_workers:
                    process.kill()
            pool.shutdown(wait=finished, cancel_futures=True)


@contextlib.contextmanager
def _deferred_ctrl_c() -> Iterator[threading.Event]:
    """While a process pool runs, Ctrl-C only sets the yielded event, and the pool's loop raises
    KeyboardInterrupt itself between waits: a KeyboardInterrupt raised at an arbitrary point can
    land inside concurrent.futures' lock handling and leave a lock held, so that the pool's exit
    hook waits forever for the workers. Outside the main thread signals cannot be handled, and
    the event is never set."""
    interrupted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.set())
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


def _worker_setup(parent_pid: int, log_level: int | None) -> None:
    """Initializer of a ``local`` worker: die with the parent, log as the parent does, and run torch
    on one thread."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before the death signal was armed
        os._exit(1)
    configure_worker_logging(log_level)
    # The env vars must be set before torch (and its OpenMP runtime) is first imported in the worker.
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = "1"
    import torch

    torch.set_num_threads(1)


def _slurm(
    fn: CellFn,
    cells: list[tuple[Any, Path]],
    root: Path,
    *,
    parameters: dict[str, Any] | None = None,
    array_parallelism: int | None = None,
    cluster: str | None = None,
) -> Iterator[Outcome]:
    """One submitit job array (logs in ``<root>/_submitit``).

    ``parameters`` are submitit's: ``partition``, ``timeout_min``, ``gpus_per_node``,
    ``cpus_per_task``, ``mem_gb`` (or any ``slurm_*``); ``array_parallelism`` caps the array's
    concurrently running jobs; ``cluster`` is None (Slurm when ``srun`` exists) or ``"local"``
    (subprocesses on this machine, all started at once).
    """
    check_slurm(cluster)
    import submitit

    if not cells:
        return
    executor = submitit.AutoExecutor(folder=root / "_submitit", cluster=cluster)
    renamed = {"partition": "slurm_partition"}
    options = {renamed.get(key, key): value for key, value in (parameters or {}).items()}
    if array_parallelism is not None:
        options["slurm_array_parallelism"] = array_parallelism
    executor.update_parameters(**options)
    configs, cell_dirs = zip(*cells)
    jobs = executor.map_array(run_cell, [fn] * len(cells), configs, cell_dirs)
    for index, job in enumerate(jobs):
        yield index, job.result


#: Executor name -> function ``(fn, cells, root, **options)``; options are keyword-only.
EXECUTORS: dict[str, Callable[..., Iterator[Outcome]]] = {"serial": _serial, "local": _local, "slurm": _slurm}


def check_executor(executor: str, options: dict[str, Any] | None = None) -> None:
    """SiptError unless ``executor`` names one of :data:`EXECUTORS` that takes every key of ``options``."""
    if executor not in EXECUTORS:
        raise SiptError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    accepted = [p.name for p in inspect.signature(EXECUTORS[executor]).parameters.values() if p.kind is p.KEYWORD_ONLY]
    unknown = sorted(set(options or {}) - set(accepted))
    if unknown:
        raise SiptError(
            f"executor {executor!r} takes no option(s) {', '.join(unknown)}; it takes: {', '.join(accepted) or 'none'}"
        )
    if executor == "slurm":
        check_slurm((options or {}).get("cluster"))


def deadline_options(executor: str, time_limit: float | None, executor_field: str = "the executor") -> dict[str, float]:
    """The executor options that stop a grid started within ``time_limit`` seconds from now (None:
    no limit, no options): the ``serial`` executor's ``deadline`` (:func:`check_time_limit`)."""
    check_time_limit(executor, time_limit, executor_field)
    return {} if time_limit is None else {"deadline": time.monotonic() + time_limit}


def check_time_limit(executor: str, time_limit: float | None, executor_field: str = "the executor") -> None:
    """SiptError unless ``time_limit`` is None or a positive number of seconds for the ``serial``
    executor, the one that runs cells one after another and can stop between them;
    ``executor_field`` names the setting that chose ``executor`` (a config field) in the message."""
    if time_limit is None:
        return
    if not (math.isfinite(time_limit) and time_limit > 0):
        raise SiptError(f"the time limit must be a positive number of seconds, got {time_limit!r}")
    if executor != "serial":
        raise SiptError(
            f"--time-limit needs {executor_field} serial (one cell after another), not {executor!r}; "
            "set it to serial or drop the time limit"
        )


def check_slurm(cluster: str | None) -> None:
    """SiptError when the slurm executor cannot run: submitit is missing, or Slurm is (submitit
    quietly runs the jobs on this machine when ``srun`` is missing, which only ``cluster="local"``
    asks for)."""
    try:
        import submitit  # noqa: F401
    except ImportError:
        raise SiptError('the slurm executor needs submitit; run: pip install "sipt-lab[slurm]"') from None
    if cluster is None and shutil.which("srun") is None:
        raise SiptError(
            "the slurm executor needs Slurm, and this machine has no srun on its PATH; run from a Slurm "
            "login node, or choose the local executor to run the cells here"
        )
