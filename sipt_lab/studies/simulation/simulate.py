"""``sipt-lab simulate``: one semi-synthetic experiment, LM vs SIPT on a graph family, over seeds.

Each seed is one cell of :func:`sipt_lab.grid.run_grid` (:func:`~sipt_lab.studies.simulation.arms.simulate_seed`),
so an interrupted run resumes with finished seeds loaded from disk, and the same cell function
serves the paper's figures. The seeds' configs are hashed once (:class:`~sipt_lab.grid.Cell`): the
first names the default output directory, and the batched trainings and the grid reuse them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from sipt_lab.core.config_io import config_to_dict, save_config
from sipt_lab.core.fileio import write_json_atomic
from sipt_lab.core.outputs import prepare_grid_dir
from sipt_lab.grid import CellResult, GridInterrupted, as_cells, check_executor, run_grid
from sipt_lab.grid.results_table import flatten
from sipt_lab.studies.simulation.arms import SEED_RESULT_KEYS, simulate_seed
from sipt_lab.studies.simulation.config import SimulationConfig, with_seed
from sipt_lab.studies.simulation.simulate_job import check_seeds
from sipt_lab.studies.simulation.stacked_cells import train_batched_cells
from sipt_lab.synthetic.builder import prepare_topics
from sipt_lab.training import resolve_device

logger = logging.getLogger(__name__)


def simulate(
    config: SimulationConfig,
    n_seeds: int = 3,
    out_dir: str | Path | None = None,
    *,
    executor: str = "serial",
    batched: bool = False,
) -> dict[str, Any]:
    r"""Run seeds ``config.graph.seed .. + n_seeds - 1`` and aggregate them.

    ``batched`` trains every seed's two arms as one batched model, a cell run by ``executor``
    (:func:`sipt_lab.studies.simulation.stacked_cells.train_batched_cells`; same cells, same numbers up to float
    rounding); otherwise each seed is a cell run by ``executor``.

    Results land in ``out_dir`` (default ``runs/simulate-<hash>``): one cell directory per seed
    under ``cells/``, plus ``results.json`` and ``config.json``. Re-running skips finished seeds.

    Returns ``{"graph", "noise", "local_consistency", "local_consistency_per_seed", "seeds",
    "methods": {"lm"|"sipt": {metric: [one value per seed]}}, "out_dir", "config"}``.

    A tiny run: two steps of each arm on 8 sentences of a 48-sentence corpus in four topics (the
    default corpus needs a 100-topic fit first):

    ```pycon
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from sipt_lab import simulate, simulation_config
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> rng = np.random.default_rng(0)
    >>> topics = ["apple pear plum fig lime", "cloud rain snow storm wind", "river lake sea pond creek", "oak pine elm birch maple"]
    >>> corpus = [f"The {' '.join(rng.choice(words.split(), 4))} here." for _ in range(12) for words in topics]
    >>> _ = (tmp / "corpus.txt").write_text("\n".join(corpus))
    >>> config = simulation_config("cliques", steps=2, encoder="paper-small", link_queries=8, train_options={"device": "cpu"},
    ...                            graph_options={"n_nodes": 8, "n_heldout": 4, "n_topics": 4, "corpus": str(tmp / "corpus.txt")})
    >>> summary = simulate(config, n_seeds=1, out_dir=tmp / "run")
    >>> summary["local_consistency"], sorted(summary["methods"]), len(summary["methods"]["sipt"]["auroc"])
    (1.0, ['lm', 'sipt'], 1)
    >>> sorted(path.name for path in (tmp / "run").iterdir())
    ['.sipt-lab-files.json', 'cells', 'config.json', 'results.json']

    ```
    """
    resolve_device(config.train.device)  # cuda without a GPU fails here, before any work
    check_seeds(n_seeds, config.graph.seed)
    check_executor(executor)
    cells = as_cells([with_seed(config, config.graph.seed + i) for i in range(n_seeds)])
    # the first seed's cell names the run: more seeds resume it, other settings are another run
    out = prepare_grid_dir(
        Path("runs") / f"simulate-{cells[0].hash}" if out_dir is None else out_dir, "simulate", cells[0].hash
    )
    if executor != "serial":
        prepare_topics(config.graph)
    logger.info("%d seed(s) x %d methods on %s; results in %s", n_seeds, len(config.methods), config.graph.family, out)
    try:
        if batched:
            train_batched_cells(cells, out / "cells", executor=executor)
        results = run_grid(simulate_seed, cells, out / "cells", executor=executor, required_keys=SEED_RESULT_KEYS)
    except GridInterrupted as interrupt:  # keep what finished, then stop
        if interrupt.results:
            _write_summary(config, interrupt.results, n_seeds, out)
        raise
    return _write_summary(config, results, n_seeds, out)


def _write_summary(config: SimulationConfig, results: list[CellResult], n_seeds: int, out: Path) -> dict[str, Any]:
    """Aggregate the finished seeds into ``out/results.json`` (and ``out/config.json``); returns the summary."""
    summary = aggregate([cell.result for cell in results])
    summary.update(out_dir=str(out), config=config_to_dict(config), n_seeds=n_seeds)
    save_config(config, out / "config.json")
    write_json_atomic(out / "results.json", summary)
    return summary


def aggregate(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-seed cell results -> lists per metric (dotted names for nested ones, e.g. ``link.mrr``)."""
    first = cells[0]
    methods = {arm: _collect([flatten(cell["methods"][arm]) for cell in cells]) for arm in first["methods"]}
    lc = [cell["local_consistency"] for cell in cells]
    return {
        "graph": first["graph"],
        "noise": first["noise"],
        "seeds": [cell["seed"] for cell in cells],
        "local_consistency": float(np.mean(lc)),
        "local_consistency_per_seed": lc,
        "n_nodes": [cell["n_nodes"] for cell in cells],
        "n_edges": [cell["n_edges"] for cell in cells],
        "methods": methods,
    }


def _collect(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    keys = [key for key in rows[0] if all(key in row for row in rows)]
    return {key: [row[key] for row in rows] for key in keys}
