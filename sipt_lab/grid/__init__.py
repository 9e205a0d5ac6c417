"""Resumable grids of frozen configs: one runner (:func:`run_grid`), one hash per cell (:class:`Cell`).

Rooms: :mod:`~sipt_lab.grid.cells` (a cell, its hash and files), :mod:`~sipt_lab.grid.executors`
(where cells run), :mod:`~sipt_lab.grid.runner` (:func:`run_grid`), :mod:`~sipt_lab.grid.results_table`
(the finished cells as a CSV), :mod:`~sipt_lab.grid.model_store` (model directories kept as cells),
:mod:`~sipt_lab.grid.pieces` (a run's finished pieces, to continue it elsewhere).
The package imports nothing above :mod:`sipt_lab.core`: it knows nothing of what a cell computes.
"""

from sipt_lab.grid.cells import (
    Cell,
    CellResult,
    GridInterrupted,
    GridStopped,
    as_cells,
    grid,
    read_result,
    store_cell,
    summarize,
    unfinished,
)
from sipt_lab.grid.executors import EXECUTORS, check_executor, deadline_options
from sipt_lab.grid.pieces import keep_finished
from sipt_lab.grid.results_table import collect_results, result_rows, write_results_csv
from sipt_lab.grid.runner import run_grid

__all__ = [
    "EXECUTORS",
    "Cell",
    "CellResult",
    "GridInterrupted",
    "GridStopped",
    "as_cells",
    "check_executor",
    "deadline_options",
    "collect_results",
    "grid",
    "keep_finished",
    "read_result",
    "result_rows",
    "run_grid",
    "store_cell",
    "summarize",
    "unfinished",
    "write_results_csv",
]
