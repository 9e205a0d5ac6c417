"""Grid cells of :func:`~sipt_lab.experiments.simulate.simulate_seed`, trained in batches.

A condition (one :class:`SimulationConfig` up to its seed) trains 2 arms x its seeds of one
shape; :func:`train_batched_cells` trains all of them at once with
:func:`~sipt_lab.training.batched.pretrain_batched` (the same numbers as separate runs, up to float
rounding) and records each seed's result as its own grid cell (:func:`~sipt_lab.experiments.sweep.store_cell`),
so the cells stay what :func:`~sipt_lab.experiments.sweep.run_grid` would have written: finished
cells are skipped, a re-run resumes per cell, and ``run_grid`` over the same configs afterwards
only loads them. An interrupted condition is trained again from its first step.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from tqdm.auto import tqdm

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
from sipt_lab.experiments.sweep import read_result, store_cell
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


def train_batched_cells(configs: Sequence[SimulationConfig], root: str | Path, *, progress: bool = True) -> int:
    """Train the unfinished cells of ``configs`` under ``root``, a condition at a time; returns how many."""
    pending = [c for c in configs if read_result(Path(root).resolve() / config_hash(c), SEED_RESULT_KEYS) is None]
    conditions: dict[str, list[SimulationConfig]] = {}
    for config in pending:
        conditions.setdefault(config_hash(with_seed(config, 0)), []).append(config)
    for group in tqdm(list(conditions.values()), desc="batched conditions", unit="condition", disable=not progress):
        datasets = [build_dataset(config.graph, progress=False) for config in group]
        for config, dataset, arms in zip(group, datasets, run_arms_batched(datasets, group, progress=progress)):
            store_cell(config, root, seed_result(config, dataset, arms))
    return len(pending)
