"""Grid cells: a frozen config, its hash (computed once), and the files one cell leaves.

Each cell is one call ``fn(config) -> dict`` (JSON-able metrics). Its files live in a directory
named by the config's hash::

    <root>/<hash>/config.json   written first
                 /result.json   written last, atomically: present == finished
                 /error.txt     traceback of the last failed attempt
                 /lock          {"pid", "host"} of the process computing it

A :class:`Cell` carries a config with its hash, so that code which needs the cell directory
(a resume check, a batched training storing results, a model store) passes the hash along
instead of hashing the config again. This module knows nothing of what a cell computes.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import json
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from sipt_lab.core.config_io import config_hash, save_config
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_json_atomic
from sipt_lab.core.locks import hold_lock

CellFn = Callable[[Any], dict]
#: Name of a cell's lock file (see :func:`sipt_lab.core.locks.hold_lock`).
CELL_LOCK = "lock"


@dataclasses.dataclass(frozen=True)
class Cell:
    """A grid cell's config and its hash (:func:`~sipt_lab.core.config_io.config_hash`), the name of
    its directory under a grid root. Build it with :meth:`of` or :func:`as_cells`."""

    config: Any
    hash: str

    @classmethod
    def of(cls, config: Any) -> Cell:
        """``config`` as a cell (hashed here, once); a Cell is returned as it is."""
        if isinstance(config, Cell):
            return config
        if not dataclasses.is_dataclass(config) or isinstance(config, type):
            raise SiptError(f"grid cells must be dataclass config instances, got {type(config).__name__}")
        return cls(config, config_hash(config))

    def dir(self, root: str | Path) -> Path:
        """This cell's directory under the grid root ``root``."""
        return Path(root).resolve() / self.hash


def as_cells(configs: Sequence[Any]) -> list[Cell]:
    """``configs`` (configs or Cells) as Cells, refusing a grid that repeats a config."""
    cells = [Cell.of(config) for config in configs]
    duplicates = sorted(h for h, count in collections.Counter(c.hash for c in cells).items() if count > 1)
    if duplicates:
        raise SiptError(f"the grid repeats configs with hash(es) {', '.join(duplicates)}; remove the duplicates")
    return cells


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
    """Ctrl-C during a grid run; ``results`` are the CellResults of the cells that finished."""

    def __init__(self, results: list[CellResult]):
        super().__init__(f"{len(results)} cell(s) finished before the interrupt")
        self.results = results


class GridStopped(Exception):
    """A grid stopped at its deadline (the ``serial`` executor's ``deadline``) with cells not
    started; ``results`` are the CellResults of the cells that finished, of the grid's ``total``."""

    def __init__(self, results: list[CellResult], total: int):
        super().__init__(
            f"stopped at the time limit: {len(results)} of {total} cells finished and kept, "
            f"{total - len(results)} not started"
        )
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


def read_result(cell_dir: Path, required_keys: Sequence[str] = ()) -> dict | None:
    """The metrics in ``cell_dir/result.json`` if it is a JSON object with every required key, else None."""
    result = read_json_object(cell_dir / "result.json")
    if result is None or any(key not in result for key in required_keys):
        return None
    return result


def read_json_object(path: Path) -> dict | None:
    """The JSON object in ``path``, or None when it is missing, unreadable, damaged or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def unfinished(cells: Sequence[Cell], root: str | Path, required_keys: Sequence[str] = ()) -> list[Cell]:
    """The cells of ``cells`` without a valid result under ``root`` (:func:`read_result`)."""
    return [cell for cell in cells if read_result(cell.dir(root), required_keys) is None]


def run_cell(fn: CellFn, config: Any, cell_dir: Path) -> CellResult:
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
            return failed(config, cell_dir, traceback.format_exc(), one_line(error), time.perf_counter() - start)
        return CellResult(config, cell_dir.name, "done", result, None, time.perf_counter() - start)


def store_cell(cell: Any, root: str | Path, result: dict) -> CellResult:
    """Record ``result``, computed elsewhere (e.g. a batched training of several cells), as the
    cell ``cell`` (a :class:`Cell`, or a config) under ``root``, exactly as a grid run records one
    (lock, config.json, result.json atomically), so a later grid run over ``root`` finds it finished."""
    cell = Cell.of(cell)
    return run_cell(lambda _: result, cell.config, cell.dir(root))


def failed(config: Any, cell_dir: Path, error: str, message: str, seconds: float) -> CellResult:
    """The CellResult of a failed cell, its traceback written to ``cell_dir/error.txt``."""
    cell_dir.mkdir(parents=True, exist_ok=True)
    (cell_dir / "error.txt").write_text(error, encoding="utf-8")  # a diagnostic: need not be atomic
    return CellResult(config, cell_dir.name, "failed", None, error, seconds, message)


def one_line(error: BaseException) -> str:
    """A SiptError's own message, or ``"TypeName: message"`` for any other exception, on one line."""
    text = str(error) if isinstance(error, SiptError) else f"{type(error).__name__}: {error}"
    return " ".join(text.split())


def summarize(results: Sequence[CellResult]) -> str:
    """One line such as ``"4 cells: 2 done, 1 skipped, 1 failed"``."""
    counts = {status: sum(cell.status == status for cell in results) for status in ("done", "skipped", "failed")}
    return f"{len(results)} cells: " + ", ".join(f"{count} {status}" for status, count in counts.items())


def _to_jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy scalars and arrays, torch tensors
        return value.tolist()
    raise TypeError(f"metric of type {type(value).__name__} is not JSON-serialisable")
