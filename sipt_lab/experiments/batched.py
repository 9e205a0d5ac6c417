"""Grid cells of :func:`~sipt_lab.experiments.simulate.simulate_seed`, trained in batches.

A condition (one :class:`SimulationConfig` up to its seed) trains 2 arms x its seeds of one
shape, and a grid's conditions that differ only in edge noise share that shape too;
:func:`train_batched_cells` trains such cells together with
:func:`~sipt_lab.training.batched.pretrain_batched` (the same numbers as separate runs, up to float
rounding) and records each seed's result as its own grid cell (:func:`~sipt_lab.experiments.sweep.store_cell`),
so the cells stay what :func:`~sipt_lab.experiments.sweep.run_grid` would have written: finished
cells are skipped, a re-run resumes per cell, and ``run_grid`` over the same configs afterwards
only loads them. Each batched training is itself a grid cell (:class:`BatchedTraining`), so the
grid's executors run trainings side by side (``local``: one per core) or as Slurm jobs. An
interrupted training is trained again from its first step."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Sequence
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
                     progress: bool = False, position: int | None = None) -> list[dict[str, ArmOutput]]:
    """:func:`~sipt_lab.experiments.simulate.run_arms` of every ``(dataset, config)`` pair (configs
    equal up to seed and edge noise, :func:`batch_key`), all arms trained as one batched model (its step
    bar on terminal line ``position`` when ``progress``). Each arm's ``seconds`` is its share of the
    batched training time plus its own embedding time."""
    others = sorted({name for config in configs for name in config.methods} - set(ARMS))
    if others:
        raise SiptError(f"batched training runs the {' and '.join(ARMS)} methods only, not {', '.join(others)}; "
                        "drop --batched to train them")
    runs = [BatchedRun(dataset.sentences, dataset.graph, arm_config(config, arm))
            for dataset, config in zip(datasets, configs) for arm in config.methods]
    start = time.perf_counter()
    results = iter(pretrain_batched(runs, CharInit(configs[0].encoder, configs[0].tokenizer), progress=progress, position=position))
    share = (time.perf_counter() - start) / len(runs)
    return [{arm: evaluate_arm(dataset, config, next(results), share) for arm in config.methods}
            for dataset, config in zip(datasets, configs)]


@dataclass(frozen=True)
class BatchedTraining:
    """One batched training, itself a grid cell: unfinished seed cells that differ only in their
    dataset and seed (one condition's seeds, or several noise rates'), each recorded under
    ``cells_root`` when the training ends; its steps show on line ``progress_line`` of the terminal
    (trainings run side by side in ``local`` workers, each on its own line below the grid's bar)."""

    configs: tuple[SimulationConfig, ...]
    cells_root: str
    progress_line: int | None = None  # terminal line of its step bar (None: no bar)


def train_batch(training: BatchedTraining) -> dict:
    """Train ``training``'s cells x arms as one batched model and store each seed's cell; the
    result names the cells it wrote (their config hashes)."""
    datasets = [build_dataset(config.graph, progress=False) for config in training.configs]
    arms_per_cell = run_arms_batched(datasets, training.configs, progress=training.progress_line is not None,
                                     position=training.progress_line)
    for config, dataset, arms in zip(training.configs, datasets, arms_per_cell):
        store_cell(config, training.cells_root, seed_result(config, dataset, arms))
    return {"cells": [config_hash(config) for config in training.configs]}


def batch_key(config: SimulationConfig) -> str:
    """Cells with one key can train as one batched model: they differ only in seed and edge noise."""
    seedless = with_seed(config, 0)
    return config_hash(dataclasses.replace(seedless, graph=dataclasses.replace(seedless.graph, noise=0.0)))


#: How many batched trainings an executor runs at once (its options -> count); an executor not
#: listed (slurm: a job per training) gets one training per condition.
CONCURRENT_TRAININGS: dict[str, Callable[[dict], int]] = {
    "serial": lambda options: 1,
    "local": lambda options: options.get("max_workers") or os.cpu_count() or 1,
}


def plan_trainings(cells: Sequence[SimulationConfig], executor: str, executor_options: dict) -> list[tuple[SimulationConfig, ...]]:
    """Deal ``cells`` into batched trainings: cells that can share a model (:func:`batch_key`) into
    as many trainings as ``executor`` runs at once (:data:`CONCURRENT_TRAININGS`; ``local`` keeps
    every core busy to the end, where a training per condition would leave cores idle in the last
    round, and the step cost per model hardly depends on how many models share it,
    benchmarks/RESULTS.md), or one training per condition for other executors.

    A group is dealt in runs of consecutive seeds: one seed's cells (its noise rates) share one
    dataset's texts, so their LM arms are one model in a training (:func:`pretrain_batched`), a
    model that every training holding one of those cells trains again."""
    concurrent = CONCURRENT_TRAININGS.get(executor)
    key = batch_key if concurrent else (lambda config: config_hash(with_seed(config, 0)))
    groups: dict[str, list[SimulationConfig]] = {}
    for config in cells:
        groups.setdefault(key(config), []).append(config)
    share = concurrent(executor_options) if concurrent else 1
    trainings = []
    for group in groups.values():
        by_seed = sorted(group, key=lambda config: config.train.seed)
        parts = min(share, len(group))
        bounds = [len(group) * i // parts for i in range(parts + 1)]
        trainings += [tuple(by_seed[start:stop]) for start, stop in zip(bounds, bounds[1:])]
    return trainings


def train_batched_cells(configs: Sequence[SimulationConfig], root: str | Path, *, executor: str = "serial",
                        progress: bool = True, **executor_options) -> int:
    """Train the unfinished cells of ``configs`` under ``root`` in batched trainings
    (:func:`plan_trainings`), cells of a grid under ``root/batched`` run by ``executor``; returns
    how many cells. With ``progress``, each training shows its steps on a line of its own."""
    root = Path(root).resolve()
    pending = [c for c in configs if read_result(root / config_hash(c), SEED_RESULT_KEYS) is None]
    trainings = [BatchedTraining(cells, str(root), 1 + index if progress else None)
                 for index, cells in enumerate(plan_trainings(pending, executor, executor_options))]
    run_grid(train_batch, trainings, root / "batched", executor=executor, progress=progress, required_keys=("cells",), **executor_options)
    return len(pending)
