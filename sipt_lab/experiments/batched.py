"""Grid cells of :func:`~sipt_lab.experiments.simulate.simulate_seed`, trained in batches.

A condition (one :class:`SimulationConfig` up to its seed) trains 2 arms x its seeds of one
shape; :func:`train_batched_cells` trains all of them at once with
:func:`~sipt_lab.training.batched.pretrain_batched` (the same numbers as separate runs, up to float
rounding) and records each seed's result as its own grid cell (:func:`~sipt_lab.experiments.sweep.store_cell`),
so the cells stay what :func:`~sipt_lab.experiments.sweep.run_grid` would have written: finished
cells are skipped, a re-run resumes per cell, and ``run_grid`` over the same configs afterwards
only loads them. Each condition's training is itself a grid cell (:class:`BatchedCondition`), so
the grid's executors run conditions side by side (``local``: one per core) or as Slurm jobs. An
interrupted condition is trained again from its first step.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sipt_lab.config import config_hash
from sipt_lab.errors import SiptError
from sipt_lab.experiments.simulate import (
    ARMS,
    SEED_RESULT_KEYS,
    ArmOutput,
    SimulationConfig,
    arm_config,
    evaluate_arm,
    seed_result,
    with_seed,
)
from sipt_lab.experiments.sweep import read_result, run_grid, store_cell
from sipt_lab.models import CharInit
from sipt_lab.synthetic import SyntheticDataset, build_dataset
from sipt_lab.training.batched import BatchedRun, pretrain_batched


def run_arms_batched(datasets: Sequence[SyntheticDataset], configs: Sequence[SimulationConfig], *,
                     progress: bool = False) -> list[dict[str, ArmOutput]]:
    """:func:`~sipt_lab.experiments.simulate.run_arms` of every ``(dataset, config)`` pair (one
    condition: configs equal up to the seed), all arms trained as one batched model. Each arm's
    ``seconds`` is its share of the batched training time plus its own embedding time."""
    others = sorted({name for config in configs for name in config.methods} - set(ARMS))
    if others:
        raise SiptError(f"batched training runs the {' and '.join(ARMS)} methods only, not {', '.join(others)}; "
                        "drop --batched to train them")
    runs = [BatchedRun(dataset.sentences, dataset.graph, arm_config(config, arm))
            for dataset, config in zip(datasets, configs) for arm in config.methods]
    start = time.perf_counter()
    results = iter(pretrain_batched(runs, CharInit(configs[0].encoder, configs[0].tokenizer), progress=progress))
    share = (time.perf_counter() - start) / len(runs)
    return [{arm: evaluate_arm(dataset, config, next(results), share) for arm in config.methods}
            for dataset, config in zip(datasets, configs)]


@dataclass(frozen=True)
class BatchedCondition:
    """One batched training, itself a grid cell: the unfinished seed cells of one condition
    (configs equal up to the seed), each recorded under ``cells_root`` when the training ends."""

    configs: tuple[SimulationConfig, ...]
    cells_root: str


def train_condition(condition: BatchedCondition) -> dict:
    """Train ``condition``'s seeds x arms as one batched model and store each seed's cell; the
    result names the cells it wrote (their config hashes)."""
    datasets = [build_dataset(config.graph, progress=False) for config in condition.configs]
    for config, dataset, arms in zip(condition.configs, datasets, run_arms_batched(datasets, condition.configs)):
        store_cell(config, condition.cells_root, seed_result(config, dataset, arms))
    return {"cells": [config_hash(config) for config in condition.configs]}


def train_batched_cells(configs: Sequence[SimulationConfig], root: str | Path, *, executor: str = "serial",
                        progress: bool = True, **executor_options) -> int:
    """Train the unfinished cells of ``configs`` under ``root``, one batched training per condition;
    the conditions are cells of a grid under ``root/batched`` run by ``executor`` (the ``local``
    executor trains as many conditions at once as the machine has cores). Returns how many cells."""
    root = Path(root).resolve()
    pending = [c for c in configs if read_result(root / config_hash(c), SEED_RESULT_KEYS) is None]
    conditions: dict[str, list[SimulationConfig]] = {}
    for config in pending:
        conditions.setdefault(config_hash(with_seed(config, 0)), []).append(config)
    run_grid(train_condition, [BatchedCondition(tuple(group), str(root)) for group in conditions.values()],
             root / "batched", executor=executor, progress=progress, required_keys=("cells",), **executor_options)
    return len(pending)
