"""Resumable sweeps: a grid of frozen configs mapped over one idempotent cell function.

Each cell is one call ``fn(config) -> dict`` (JSON-able metrics). Its files live in a directory
named by the config's hash::

    <root>/<config_hash(config)>/config.json   written first
                                /result.json   written last, atomically: present == finished
                                /error.txt     traceback of the last failed attempt
                                /lock          {"pid", "host"} of the process computing it

so re-running a grid skips finished cells (those whose result.json validates; a damaged one is
recomputed), and a grid killed half-way resumes without recomputing anything finished. A cell
whose lock belongs to a live process (another run on the same root) is waited for, not computed
twice; the lock of a dead process is taken over. Worker processes die with the main process, and
Ctrl-C stops the grid at once, raising :class:`GridInterrupted` with the cells that finished. Executors (``EXECUTORS``) decide where cells run: ``serial`` (this
process), ``local`` (a process pool, one torch thread per worker), ``slurm`` (a submitit job array,
optional extra ``sipt-lab[slurm]``). ``collect_results`` and ``write_results_csv`` turn the finished
cells into one tidy table.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import csv
import ctypes
import dataclasses
import functools
import inspect
import io
import itertools
import json
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from tqdm.auto import tqdm

from sipt_lab.core.config import config_hash, config_to_dict, save_config
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_json_atomic, write_text_atomic
from sipt_lab.core.outputs import hold_lock

CellFn = Callable[[Any], dict]
#: Name of a cell's lock file (see :func:`sipt_lab.core.outputs.hold_lock`).
CELL_LOCK = "lock"
#: What an executor yields per cell: the cell's position in its list, and a call that returns the
#: cell's CellResult (or raises when the machinery itself failed, e.g. a worker process died).
Outcome = tuple[int, Callable[[], "CellResult"]]


@dataclasses.dataclass(frozen=True)
class CellResult:
    """The outcome of one grid cell; ``seconds`` is the wall time of ``fn`` (0 when skipped)."""

    config: Any
    hash: str
    status: Literal["done", "skipped", "failed"]
    result: dict | None
    error: str | None
    seconds: float
    message: str | None = None  # one line naming the failure, e.g. "ValueError: ..."


class GridInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_grid`; ``results`` are the CellResults of the cells that finished."""

    def __init__(self, results: list[CellResult]):
        super().__init__(f"{len(results)} cell(s) finished before the interrupt")
        self.results = results


def grid(base_config: Any, **axes: Sequence[Any]) -> list[Any]:
    """The cartesian product of ``axes`` applied to ``base_config`` via ``dataclasses.replace``.

    Each axis maps a field name to a list of values; nested fields use dotted names, passed as
    ``**{"graph.noise": [0.0, 0.1]}``. The first axis varies slowest, values keep their order.
    """
    if not dataclasses.is_dataclass(base_config) or isinstance(base_config, type):
        raise SiptError(f"grid needs a dataclass config instance, got {type(base_config).__name__}")
    for name, values in axes.items():
        if not isinstance(values, (list, tuple)) or not values:
            raise SiptError(f"grid axis {name!r} must be a non-empty list of values; wrap a single value in [ ]")
    return [
        functools.reduce(lambda config, item: _replace(config, *item), zip(axes, values), base_config)
        for values in itertools.product(*axes.values())
    ]


def _replace(config: Any, dotted: str, value: Any) -> Any:
    head, _, rest = dotted.partition(".")
    names = [field.name for field in dataclasses.fields(config)] if dataclasses.is_dataclass(config) else []
    if head not in names:
        raise SiptError(f"{type(config).__name__} has no field {head!r} (axis {dotted!r}); known: {', '.join(names)}")
    return dataclasses.replace(config, **{head: _replace(getattr(config, head), rest, value) if rest else value})


def run_grid(
    fn: CellFn,
    configs: Sequence[Any],
    root: str | Path,
    executor: str = "serial",
    progress: bool = True,
    raise_on_error: bool = True,
    required_keys: Sequence[str] = (),
    **executor_options: Any,
) -> list[CellResult]:
    """Run ``fn`` on every config without a valid ``<root>/<hash>/result.json``.

    A result is valid when it is a JSON object holding every key of ``required_keys``; anything
    else (empty, truncated, missing keys) is recomputed. ``fn`` must be picklable (a module-level
    function) so that any executor can ship it. ``executor_options`` go to the executor (see
    ``EXECUTORS``). Returns one CellResult per config, in the order of ``configs``. A failing cell
    leaves ``error.txt`` and does not stop the others; at the end, ``raise_on_error`` raises
    SiptError naming the failed cells and the first one's error. Ctrl-C stops every worker and
    raises :class:`GridInterrupted`.
    """
    _check_picklable(fn)
    if executor not in EXECUTORS:
        raise SiptError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    _check_options(executor, executor_options)
    root = Path(root).resolve()
    hashes = [_hash_of(config) for config in configs]
    duplicates = sorted(h for h, count in collections.Counter(hashes).items() if count > 1)
    if duplicates:
        raise SiptError(f"the grid repeats configs with hash(es) {', '.join(duplicates)}; remove the duplicates")

    results: list[CellResult | None] = [None] * len(configs)
    pending = []
    for position, (config, digest) in enumerate(zip(configs, hashes)):
        result = read_result(root / digest, required_keys)
        if result is not None:
            results[position] = CellResult(config, digest, "skipped", result, None, 0.0)
        else:
            pending.append(position)

    bar = tqdm(total=len(configs), initial=len(configs) - len(pending), desc="cells", unit="cell", disable=not progress)
    cells = [(configs[position], root / hashes[position]) for position in pending]
    n_failed = 0
    outcomes = EXECUTORS[executor](fn, cells, root, **executor_options)
    try:
        with bar:
            for index, outcome in outcomes:
                config, cell_dir = cells[index]
                try:
                    cell = outcome()
                except Exception as error:  # the machinery failed (dead worker, cancelled job), not fn itself
                    cell = _failed(config, cell_dir, traceback.format_exc(), _one_line(error), 0.0)
                results[pending[index]] = cell
                n_failed += cell.status == "failed"
                bar.set_postfix(failed=n_failed, refresh=False)
                bar.update()
    except KeyboardInterrupt:
        outcomes.close()  # stops the executor's workers
        raise GridInterrupted([cell for cell in results if cell is not None and cell.result is not None]) from None

    failed = [cell for cell in results if cell.status == "failed"]
    if progress:
        tqdm.write(summarize(results), file=sys.stderr)
    if failed and raise_on_error:
        raise SiptError(
            f"{summarize(results)}; failed cell(s) {', '.join(cell.hash for cell in failed)}; "
            f"the first says: {failed[0].message} (traceback in {root / failed[0].hash / 'error.txt'}); "
            "fix the cause and re-run (finished cells are skipped)"
        )
    return results


def read_result(cell_dir: Path, required_keys: Sequence[str] = ()) -> dict | None:
    """The metrics in ``cell_dir/result.json`` if it is a JSON object with every required key, else None."""
    result = _read_json_object(cell_dir / "result.json")
    if result is None or any(key not in result for key in required_keys):
        return None
    return result


def _read_json_object(path: Path) -> dict | None:
    """The JSON object in ``path``, or None when it is missing, unreadable, damaged or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def summarize(results: Sequence[CellResult]) -> str:
    """One line such as ``"4 cells: 2 done, 1 skipped, 1 failed"``."""
    counts = {status: sum(cell.status == status for cell in results) for status in ("done", "skipped", "failed")}
    return f"{len(results)} cells: " + ", ".join(f"{count} {status}" for status, count in counts.items())


def _check_picklable(fn: Any) -> None:
    try:
        pickle.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError) as error:
        raise SiptError(
            f"cell function {getattr(fn, '__qualname__', fn)!r} cannot be pickled ({error}); "
            "define it at module level (not a lambda or nested function)"
        ) from None


def _check_options(executor: str, options: dict[str, Any]) -> None:
    accepted = [p.name for p in inspect.signature(EXECUTORS[executor]).parameters.values() if p.kind is p.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise SiptError(
            f"executor {executor!r} takes no option(s) {', '.join(unknown)}; it takes: {', '.join(accepted) or 'none'}"
        )


def _hash_of(config: Any) -> str:
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise SiptError(f"grid cells must be dataclass config instances, got {type(config).__name__}")
    return config_hash(config)


def _run_cell(fn: CellFn, config: Any, cell_dir: Path) -> CellResult:
    """Run one cell where the executor put it, holding its lock: config.json first, result.json last.

    When another live process holds the lock (a second run on the same root), wait for it and
    take its result instead of computing the cell twice.
    """
    with hold_lock(cell_dir, CELL_LOCK, wait=True) as waited:
        if waited and (result := read_result(cell_dir)) is not None:
            return CellResult(config, cell_dir.name, "skipped", result, None, 0.0)
        save_config(config, cell_dir / "config.json")
        (cell_dir / "error.txt").unlink(missing_ok=True)
        start = time.perf_counter()
        try:
            result = fn(config)
            if not isinstance(result, dict):
                raise TypeError(f"the cell function returned {type(result).__name__}; it must return a dict of metrics")
            result = json.loads(json.dumps(result, default=_to_jsonable))
            write_json_atomic(cell_dir / "result.json", result)
        except Exception as error:
            return _failed(config, cell_dir, traceback.format_exc(), _one_line(error), time.perf_counter() - start)
        return CellResult(config, cell_dir.name, "done", result, None, time.perf_counter() - start)


def store_cell(config: Any, root: str | Path, result: dict) -> CellResult:
    """Record ``result``, computed elsewhere (e.g. a batched training of several cells), as the
    cell of ``config`` under ``root``, exactly as :func:`run_grid` records one (lock, config.json,
    result.json atomically), so a later :func:`run_grid` over ``root`` finds it finished."""
    return _run_cell(lambda _: result, config, Path(root).resolve() / _hash_of(config))


def _failed(config: Any, cell_dir: Path, error: str, message: str, seconds: float) -> CellResult:
    cell_dir.mkdir(parents=True, exist_ok=True)
    (cell_dir / "error.txt").write_text(error, encoding="utf-8")  # a diagnostic: need not be atomic
    return CellResult(config, cell_dir.name, "failed", None, error, seconds, message)


def _one_line(error: BaseException) -> str:
    """A SiptError's own message, or ``"TypeName: message"`` for any other exception, on one line."""
    text = str(error) if isinstance(error, SiptError) else f"{type(error).__name__}: {error}"
    return " ".join(text.split())


def _to_jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy scalars and arrays, torch tensors
        return value.tolist()
    raise TypeError(f"metric of type {type(value).__name__} is not JSON-serialisable")


# --- executors: (fn, cells=[(config, cell_dir)], root, **options) -> Iterator[Outcome] -------------


def _serial(fn: CellFn, cells: list[tuple[Any, Path]], root: Path) -> Iterator[Outcome]:
    """Every cell in this process, in order."""
    for index, (config, cell_dir) in enumerate(cells):
        yield index, functools.partial(_run_cell, fn, config, cell_dir)


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
        initargs=(os.getpid(),),
    )
    finished, pool_workers = False, []
    with _deferred_ctrl_c() as interrupted:
        try:
            # Every worker starts during these submits (spawned pools start one per submit, up to max_workers).
            futures = {pool.submit(_run_cell, fn, config, cell_dir): i for i, (config, cell_dir) in enumerate(cells)}
            pool_workers = [p for p in multiprocessing.active_children() if p not in others]
            waiting = set(futures)
            while waiting:
                done, waiting = concurrent.futures.wait(waiting, timeout=0.2, return_when=concurrent.futures.FIRST_COMPLETED)
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
    hook waits forever for the workers (seen as an intermittent hang of the Ctrl-C test). Outside
    the main thread signals cannot be handled, and the event is never set."""
    interrupted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.set())
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


def _worker_setup(parent_pid: int) -> None:
    """Initializer of a ``local`` worker: die with the parent, and run torch on one thread."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before the death signal was armed
        os._exit(1)
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
    try:
        import submitit
    except ImportError:
        raise SiptError('the slurm executor needs submitit; run: pip install "sipt-lab[slurm]"') from None
    if not cells:
        return
    executor = submitit.AutoExecutor(folder=root / "_submitit", cluster=cluster)
    renamed = {"partition": "slurm_partition"}
    options = {renamed.get(key, key): value for key, value in (parameters or {}).items()}
    if array_parallelism is not None:
        options["slurm_array_parallelism"] = array_parallelism
    executor.update_parameters(**options)
    configs, cell_dirs = zip(*cells)
    jobs = executor.map_array(_run_cell, [fn] * len(cells), configs, cell_dirs)
    for index, job in enumerate(jobs):
        yield index, job.result


#: Executor name -> function ``(fn, cells, root, **options)``; options are keyword-only.
EXECUTORS: dict[str, Callable[..., Iterator[Outcome]]] = {"serial": _serial, "local": _local, "slurm": _slurm}


# --- results table ---------------------------------------------------------------------------------


def collect_results(root: str | Path, required_keys: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One flat row per finished cell under ``root``, sorted by hash.

    A cell is finished when its ``result.json`` validates (see :func:`read_result`) and its
    ``config.json`` is a JSON object; other cells are left out (a re-run recomputes them).
    Keys: ``hash``, then ``config.<field>`` and ``metrics.<name>``, nested dicts flattened with
    dotted names (``config.graph.noise``); list values (e.g. per-seed metrics) stay lists.
    """
    root = Path(root)
    if not root.is_dir():
        raise SiptError(f"results directory {root} does not exist; run the grid first or pass its root")
    rows = []
    for cell_dir in sorted(path for path in root.iterdir() if path.is_dir()):
        metrics = read_result(cell_dir, required_keys)
        config = _read_json_object(cell_dir / "config.json")
        if metrics is not None and config is not None:
            rows.append({"hash": cell_dir.name, **_flatten(config, "config."), **_flatten(metrics, "metrics.")})
    return rows


def result_rows(results: Sequence[CellResult]) -> list[dict[str, Any]]:
    """Rows like :func:`collect_results`'s for exactly these cells (those with a result), in order:
    a table of one grid even when its root holds other grids' cells too."""
    return [
        {"hash": cell.hash, **_flatten(config_to_dict(cell.config), "config."), **_flatten(cell.result, "metrics.")}
        for cell in results
        if cell.result is not None
    ]


def _flatten(data: dict[str, Any], prefix: str) -> dict[str, Any]:
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[prefix + key] = value
    return flat


def write_results_csv(rows: Sequence[dict[str, Any]], path: str | Path, columns: Sequence[str] | None = None) -> None:
    """Write ``rows`` as CSV, atomically: ``hash`` first, then every other key sorted (so config
    fields precede metrics), or ``columns`` in that order; lists and dicts as JSON, None and
    missing values as empty cells."""
    if columns is None:
        columns = ["hash"] + sorted({key for row in rows for key in row} - {"hash"})
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, restval="", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: json.dumps(v) if isinstance(v, (list, dict)) else v for key, v in row.items()})
    write_text_atomic(path, buffer.getvalue())
