"""The one grid runner: a list of frozen configs mapped over one idempotent cell function.

:func:`run_grid` hashes each config once (:class:`~sipt_lab.grid.cells.Cell`), skips the cells
whose ``result.json`` validates (a damaged one is recomputed), and runs the others on an executor
(:mod:`sipt_lab.grid.executors`), so a grid killed half-way resumes without recomputing anything
finished. A cell whose lock belongs to a live process (another run on the same root) is waited
for, not computed twice; the lock of a dead process is taken over. Ctrl-C stops the grid at
once, raising :class:`~sipt_lab.grid.cells.GridInterrupted` with the cells that finished; a serial
grid given a ``deadline`` starts no cell past it and raises :class:`~sipt_lab.grid.cells.GridStopped`.
:mod:`sipt_lab.grid.results_table` turns the finished cells into one tidy table.
"""

from __future__ import annotations

import logging
import pickle
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sipt_lab.core.errors import SiptError
from sipt_lab.core.progress import progress_bar
from sipt_lab.grid.cells import (
    CellFn,
    CellResult,
    GridInterrupted,
    GridStopped,
    as_cells,
    failed,
    one_line,
    read_result,
    summarize,
)
from sipt_lab.grid.executors import EXECUTORS, check_executor

logger = logging.getLogger(__name__)


def run_grid(
    fn: CellFn,
    configs: Sequence[Any],
    root: str | Path,
    executor: str = "serial",
    raise_on_error: bool = True,
    required_keys: Sequence[str] = (),
    **executor_options: Any,
) -> list[CellResult]:
    """Run ``fn`` on every config without a valid ``<root>/<hash>/result.json``.

    ``configs`` are dataclass configs or :class:`~sipt_lab.grid.cells.Cell` (a config with the hash
    the caller already computed). A result is valid when it is a JSON object holding every key of
    ``required_keys``; anything else (empty, truncated, missing keys) is recomputed. ``fn`` must be
    picklable (a module-level function) so that any executor can ship it. ``executor_options`` go
    to the executor (see :data:`~sipt_lab.grid.executors.EXECUTORS`). Returns one CellResult per
    config, in the order of ``configs``. A failing cell leaves ``error.txt`` and does not stop the
    others; at the end, ``raise_on_error`` raises SiptError naming the failed cells and the first
    one's error. Ctrl-C stops every worker and raises :class:`~sipt_lab.grid.cells.GridInterrupted`;
    a serial grid stopped by its ``deadline`` option raises :class:`~sipt_lab.grid.cells.GridStopped`.
    """
    _check_picklable(fn)
    check_executor(executor, executor_options)
    root = Path(root).resolve()
    cells = as_cells(configs)

    results: list[CellResult | None] = [None] * len(cells)
    pending = []
    for position, cell in enumerate(cells):
        result = read_result(root / cell.hash, required_keys)
        if result is not None:
            results[position] = CellResult(cell.config, cell.hash, "skipped", result, None, 0.0)
        else:
            pending.append(position)

    bar = progress_bar(total=len(cells), initial=len(cells) - len(pending), desc="cells", unit="cell")
    work = [(cells[position].config, root / cells[position].hash) for position in pending]
    n_failed = 0
    outcomes = EXECUTORS[executor](fn, work, root, **executor_options)
    try:
        with bar:
            for index, outcome in outcomes:
                config, cell_dir = work[index]
                try:
                    cell = outcome()
                except Exception as error:  # the machinery failed (dead worker, cancelled job), not fn itself
                    cell = failed(config, cell_dir, traceback.format_exc(), one_line(error), 0.0)
                results[pending[index]] = cell
                n_failed += cell.status == "failed"
                logger.debug("cell %s: %s in %.1f s", cell.hash, cell.status, cell.seconds)
                bar.set_postfix(failed=n_failed, refresh=False)
                bar.update()
    except KeyboardInterrupt:
        outcomes.close()  # stops the executor's workers
        raise GridInterrupted([cell for cell in results if cell is not None and cell.result is not None]) from None

    finished = [cell for cell in results if cell is not None]
    if len(finished) < len(results):  # the executor stopped at its deadline
        raise GridStopped([cell for cell in finished if cell.result is not None], len(results))
    failures = [cell for cell in results if cell.status == "failed"]
    logger.info(summarize(results))
    if failures and raise_on_error:
        raise SiptError(
            f"{summarize(results)}; failed cell(s) {', '.join(cell.hash for cell in failures)}; "
            f"the first says: {failures[0].message} (traceback in {root / failures[0].hash / 'error.txt'}); "
            "fix the cause and re-run (finished cells are skipped)"
        )
    return results


def _check_picklable(fn: Any) -> None:
    try:
        pickle.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError) as error:
        raise SiptError(
            f"cell function {getattr(fn, '__qualname__', fn)!r} cannot be pickled ({error}); "
            "define it at module level (not a lambda or nested function)"
        ) from None
