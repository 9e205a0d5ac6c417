"""The finished cells of a grid as one tidy table: one flat row per cell, written as CSV."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sipt_lab.core.config_io import config_to_dict
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_text_atomic
from sipt_lab.grid.cells import CellResult, read_json_object, read_result


def collect_results(root: str | Path, required_keys: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One flat row per finished cell under ``root``, sorted by hash.

    A cell is finished when its ``result.json`` validates (see :func:`~sipt_lab.grid.cells.read_result`)
    and its ``config.json`` is a JSON object; other cells are left out (a re-run recomputes them).
    Keys: ``hash``, then ``config.<field>`` and ``metrics.<name>``, nested dicts flattened with
    dotted names (``config.graph.noise``); list values (e.g. per-seed metrics) stay lists.
    """
    root = Path(root)
    if not root.is_dir():
        raise SiptError(f"results directory {root} does not exist; run the grid first or pass its root")
    rows = []
    for cell_dir in sorted(path for path in root.iterdir() if path.is_dir()):
        metrics = read_result(cell_dir, required_keys)
        config = read_json_object(cell_dir / "config.json")
        if metrics is not None and config is not None:
            rows.append({"hash": cell_dir.name, **flatten(config, "config."), **flatten(metrics, "metrics.")})
    return rows


def result_rows(results: Sequence[CellResult]) -> list[dict[str, Any]]:
    """Rows like :func:`collect_results`'s for exactly these cells (those with a result), in order:
    a table of one grid even when its root holds other grids' cells too."""
    return [
        {"hash": cell.hash, **flatten(config_to_dict(cell.config), "config."), **flatten(cell.result, "metrics.")}
        for cell in results
        if cell.result is not None
    ]


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``data`` with nested dicts flattened into dotted keys, each prefixed with ``prefix``."""
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
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
