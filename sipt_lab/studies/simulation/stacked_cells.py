"""Grid cells of :func:`~sipt_lab.studies.simulation.arms.simulate_seed`, trained in batches.

A condition (one :class:`SimulationConfig` up to its seed) trains 2 arms x its seeds of one
shape, and a grid's conditions that differ only in edge noise share that shape too;
:func:`train_batched_cells` trains such cells together with
:func:`~sipt_lab.training.trainer.pretrain_batched` (the same numbers as separate runs, up to float
rounding) and records each seed's result as its own grid cell (:func:`~sipt_lab.grid.cells.store_cell`),
so the cells stay what :func:`~sipt_lab.grid.runner.run_grid` would have written: finished
cells are skipped, a re-run resumes per cell, and ``run_grid`` over the same configs afterwards
only loads them. The unit a training holds is a model (:class:`ModelJob`), not a cell: a seed's LM
arm is one model for all its noise rates, so a cell's two arms may train in two trainings, and each
arm's evaluation is recorded beside its cell until the cell is complete. Each batched training is
itself a grid cell (:class:`BatchedTraining`), so the grid's executors run trainings side by side
(``local``: one per core) or as Slurm jobs. An interrupted training is trained again from its
first step."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from sipt_lab.core.config_io import config_hash
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_json_atomic
from sipt_lab.grid import Cell, as_cells, run_grid, store_cell, unfinished
from sipt_lab.models import CharInit
from sipt_lab.studies.simulation.arms import (
    SEED_RESULT_KEYS,
    ArmOutput,
    arm_config,
    evaluate_arm,
    seed_fields,
)
from sipt_lab.studies.simulation.config import ARMS, SimulationConfig, with_seed
from sipt_lab.synthetic import SyntheticDataset, build_dataset
from sipt_lab.training.trainer import BatchedRun, pretrain_batched


def run_arms_batched(
    datasets: Sequence[SyntheticDataset],
    configs: Sequence[SimulationConfig],
    *,
    position: int | None = None,
) -> list[dict[str, ArmOutput]]:
    """:func:`~sipt_lab.studies.simulation.arms.run_arms` of every ``(dataset, config)`` pair (configs
    equal up to seed and edge noise, :func:`batch_key`), all arms trained as one batched model (its step
    bar on terminal line ``position``). Each arm's ``seconds`` is its share of the
    batched training time plus its own embedding time."""
    _check_methods(name for config in configs for name in config.methods)
    runs = [
        BatchedRun(dataset.sentences, dataset.graph, arm_config(config, arm))
        for dataset, config in zip(datasets, configs)
        for arm in config.methods
    ]
    results, share = _train(runs, configs[0], position)
    results = iter(results)
    return [
        {arm: evaluate_arm(dataset, config, next(results), share) for arm in config.methods}
        for dataset, config in zip(datasets, configs)
    ]


def _check_methods(arms) -> None:
    """SiptError naming the methods a batched training cannot run (all but :data:`ARMS`)."""
    others = sorted(set(arms) - set(ARMS))
    if others:
        raise SiptError(
            f"batched training runs the {' and '.join(ARMS)} methods only, not {', '.join(others)}; "
            "drop SimulateJob.batched to train them"
        )


def _train(
    runs: list[BatchedRun], config: SimulationConfig, position: int | None, compile: str = "auto"
) -> tuple[list, float]:
    """:func:`pretrain_batched` of ``runs`` with ``config``'s encoder (run as ``compile`` says): the
    results and each run's share of the training time (seconds)."""
    start = time.perf_counter()
    results = pretrain_batched(runs, CharInit(config.encoder, config.tokenizer), position=position, compile=compile)
    return results, (time.perf_counter() - start) / len(runs)


@dataclass(frozen=True)
class ModelJob:
    """One model of a batched training: method ``arm`` trained on the dataset of cell ``source`` and
    evaluated on each of ``cells``, the cells whose ``arm`` it is. An arm that reads no graph (the LM
    arm, λ_SI = 0) is one model for every cell of its seed that differs only in edge noise (their
    sentences are one corpus), so it serves all of them; any other arm serves its own cell."""

    source: SimulationConfig
    arm: str
    cells: tuple[SimulationConfig, ...]


@dataclass(frozen=True)
class BatchedTraining:
    """One batched training, itself a grid cell: models of one shape (:func:`batch_key`), each
    evaluated on the cells it serves, each evaluation recorded under ``cells_root`` (a cell is
    complete when every arm it runs is; :func:`train_batched_cells` then stores it); its steps show
    on line ``progress_line`` of the terminal (trainings run side by side in ``local`` workers, each
    on its own line below the grid's bar)."""

    jobs: tuple[ModelJob, ...]
    cells_root: str
    progress_line: int | None = None  # terminal line of its step bar (None: no bar)
    compile: str = "auto"  # how the stack runs (pretrain_batched's compile)


def train_batch(training: BatchedTraining) -> dict:
    """Train ``training``'s models as one batched model and record each model's evaluation on each
    cell it serves (``<cells_root>/<cell hash>/arms/<arm>.json``); the result names those records."""
    jobs, datasets, runs = batched_runs(training.jobs)
    results, share = _train(runs, training.jobs[0].source, training.progress_line, training.compile)
    written = []
    for (job, _, served), result in zip(jobs, results):
        for cell in served:
            dataset = datasets[cell.hash]
            path = arm_record(training.cells_root, cell, job.arm)
            write_json_atomic(
                path,
                {
                    "seed": seed_fields(cell.config, dataset),
                    "metrics": evaluate_arm(dataset, cell.config, result, share).metrics,
                },
            )
            written.append(str(path))
    return {"arms": written}


def batched_runs(
    model_jobs: Sequence[ModelJob],
) -> tuple[list[tuple[ModelJob, Cell, list[Cell]]], dict[str, SyntheticDataset], list[BatchedRun]]:
    """The :class:`BatchedRun` of each of ``model_jobs`` (one per model, in order), each job with its
    source cell and the cells it serves, and every dataset they read by cell hash."""
    _check_methods(job.arm for job in model_jobs)
    jobs = [(job, Cell.of(job.source), [Cell.of(cell) for cell in job.cells]) for job in model_jobs]
    datasets = {}
    for _, source, served in jobs:
        for cell in (source, *served):
            if cell.hash not in datasets:
                datasets[cell.hash] = build_dataset(cell.config.graph)
    runs = []
    for job, source, served in jobs:
        sentences = datasets[source.hash].sentences
        if any(datasets[cell.hash].sentences != sentences for cell in served):
            raise SiptError(
                f"the {job.arm} arm of seed {job.source.train.seed} serves cells whose sentences differ; "
                "train them without SimulateJob.batched"
            )
        runs.append(BatchedRun(sentences, datasets[source.hash].graph, arm_config(job.source, job.arm)))
    return jobs, datasets, runs


def arm_record(cells_root: str | Path, cell: Any, arm: str) -> Path:
    """Where a batched training records ``arm`` of ``cell`` (a :class:`~sipt_lab.grid.Cell` or its config)."""
    return Path(cells_root) / Cell.of(cell).hash / "arms" / f"{arm}.json"


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


def plan_trainings(
    cells: Sequence[SimulationConfig], executor: str, executor_options: dict
) -> list[tuple[ModelJob, ...]]:
    """Deal the models of ``cells`` (:class:`ModelJob`) into batched trainings: models that can share
    a training (:func:`batch_key`) into as many trainings as ``executor`` runs at once
    (:data:`CONCURRENT_TRAININGS`; ``local`` keeps every core busy to the end, where a training per
    condition would leave cores idle in the last round, and the step cost per model hardly depends
    on how many models share it, benchmarks/RESULTS.md), or one training per condition for other
    executors. Cells that train on a CUDA GPU (:func:`trains_on_cuda`) under those executors share
    ONE training per key: a GPU step costs its kernel launches, about as many for all the models as
    for one, and trainings side by side would split one GPU.

    A seed's LM arm is one model for all its noise rates' cells, wherever their other arms train,
    so every model is trained once and the trainings differ by at most one model; models are dealt
    in seed order."""
    concurrent = CONCURRENT_TRAININGS.get(executor)
    key = batch_key if concurrent else (lambda config: config_hash(with_seed(config, 0)))
    groups: dict[str, list[SimulationConfig]] = {}
    for config in cells:
        groups.setdefault(key(config), []).append(config)
    trainings = []
    for group in groups.values():
        share = concurrent(executor_options) if concurrent and not trains_on_cuda(group[0]) else 1
        jobs, by_seed = [], {}
        for config in sorted(group, key=lambda config: config.train.seed):
            by_seed.setdefault(config.train.seed, []).append(config)
        for seed_cells in by_seed.values():
            for arm in seed_cells[0].methods:
                if arm_config(seed_cells[0], arm).lambda_si == 0:  # reads no graph: one model for the seed
                    jobs.append(ModelJob(seed_cells[0], arm, tuple(seed_cells)))
                else:
                    jobs += [ModelJob(cell, arm, (cell,)) for cell in seed_cells]
        parts = min(share, len(jobs))
        bounds = [len(jobs) * i // parts for i in range(parts + 1)]
        trainings += [tuple(jobs[start:stop]) for start, stop in zip(bounds, bounds[1:])]
    return trainings


def trains_on_cuda(config: SimulationConfig) -> bool:
    """Whether ``config`` trains on a CUDA GPU: its ``train.device`` names one, or is ``auto`` where
    torch sees one."""
    device = str(config.train.device)
    return device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())


def train_batched_cells(
    configs: Sequence[SimulationConfig | Cell],
    root: str | Path,
    *,
    executor: str = "serial",
    compile: str = "auto",
    **executor_options,
) -> int:
    """Train the unfinished cells of ``configs`` (configs, or Cells hashed by the caller) under
    ``root`` in batched trainings (:func:`plan_trainings`), cells of a grid under ``root/batched``
    run by ``executor``, and store each cell whose arms all finished (also when the grid stops
    early; a re-run first stores the cells whose arms a stopped run recorded, then trains the
    rest); returns how many cells were unfinished. Each training shows its steps on a line of its
    own (where bars show, :func:`~sipt_lab.core.progress.progress_bar`); ``compile``: how each runs
    its stack (:func:`~sipt_lab.training.trainer.pretrain_batched`)."""
    root = Path(root).resolve()
    waiting = unfinished(as_cells(configs), root, SEED_RESULT_KEYS)
    pending = _store_recorded(waiting, root)
    plan = plan_trainings([cell.config for cell in pending], executor, executor_options)
    trainings = [BatchedTraining(jobs, str(root), 1 + index, compile) for index, jobs in enumerate(plan)]
    try:
        run_grid(
            train_batch,
            trainings,
            root / "batched",
            executor=executor,
            required_keys=("arms",),
            **executor_options,
        )
    finally:
        _store_recorded(pending, root)
    return len(waiting)


def _store_recorded(cells: Sequence[Cell], root: Path) -> list[Cell]:
    """Store each of ``cells`` whose every arm has its record (:func:`arm_record`) as a finished grid
    cell; returns the others."""
    missing = []
    for cell in cells:
        records = [arm_record(root, cell, arm) for arm in cell.config.methods]
        if not all(path.is_file() for path in records):
            missing.append(cell)
            continue
        arms = [json.loads(path.read_text(encoding="utf-8")) for path in records]
        store_cell(
            cell,
            root,
            {**arms[0]["seed"], "methods": {arm: record["metrics"] for arm, record in zip(cell.config.methods, arms)}},
        )
    return missing
