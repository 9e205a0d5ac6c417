"""``heldout_scale``: does what SIPT learnt on ``G_PT`` carry over to unseen sentences as ``G_PT`` grows?

``heldout_scale`` runs :func:`heldout_scale_cell` cells under ``<cells_dir>/heldout_scale``:
CLIQUES and TORUS at growing sizes (:data:`HELDOUT_SCALE_NODES`), the same number of optimiser
steps per arm at every size (:data:`HELDOUT_SCALE_STEPS`; or, with ``FigureOptions.passes``, a fixed
number of passes per pre-training sample, ``steps = passes * n / batch``, :func:`passes_to_steps`),
200 held-out sentences each, from articles none of whose sentences is a node
(:func:`~sipt_lab.synthetic.sentences.assign_sentences`). Per arm: LOO and held-out 3-NN AUROC, and a linear probe (:func:`heldout_probe`)
trained on the pre-training sentences' frozen embeddings and topic labels (strength chosen on a
random 20 % of them) and scored on every held-out sentence: the held-out 3-NN's reference set is
the pre-training samples too, so both ask the same question (does what SIPT learnt on ``G_PT``
carry over to unseen sentences), and the whole held-out set stays the test set. Per size, every
metric's SIPT − LM gain is taken per seed (both arms of a seed share its dataset, init and batches:
:func:`~sipt_lab.studies.simulation.arms.run_arms`) and summarised as the mean paired
gain with a Student-t 95 % interval over seeds (:func:`paired_gain_columns`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sipt_lab.core.stats import mean_ci
from sipt_lab.evaluation.probe import ProbeResult, linear_probe
from sipt_lab.grid import CellResult, run_grid
from sipt_lab.studies.paper.figure5 import seed_summary
from sipt_lab.studies.paper.figure_options import FigureOptions, cells_root, prepare_grid_topics
from sipt_lab.studies.simulation.arms import run_arms, seed_result
from sipt_lab.studies.simulation.config import SimulationConfig, simulation_config
from sipt_lab.synthetic import build_dataset

#: ``heldout_scale``'s families and, per family, its pre-training sizes: about the largest the
#: embedded corpus can build with :data:`HELDOUT_SCALE_HELDOUT` held-out sentences from articles
#: with no sentence on a node, on every seed (CLIQUES needs ``n / 10 + 20`` confident sentences on
#: each of 10 topics; the limits found are in benchmarks/RESULTS.md, "Held-out gain vs size of G_PT").
HELDOUT_SCALE_NODES: dict[str, tuple[int, ...]] = {"cliques": (50, 200, 1000), "torus": (50, 200, 300)}
#: Optimiser steps per arm, the same at every size (the default budget): LM and SIPT are compared
#: across sizes at one training length. 800 keeps the whole grid (3 seeds) near 10 minutes on 2 CPU
#: cores and still gives the largest graphs 40 (CLIQUES, batch 50) and 85 (TORUS, batch 32) passes
#: per pre-training sample.
HELDOUT_SCALE_STEPS = 800
#: Held-out sentences per dataset, the same at every size (the default 20 is too few to score a probe).
HELDOUT_SCALE_HELDOUT = 200
#: One topic model for both families (the surfaces' default): at CLIQUES' 100 topics only 9 topics
#: hold >= 22 confident sentences, so CLIQUES could not reach even 200 nodes.
HELDOUT_SCALE_TOPICS = 20
#: Fraction of the pre-training samples that choose the probe's regularisation (the rest train it).
PROBE_VALIDATION = 0.2
#: ``heldout_scale``'s metrics per arm: name -> (panel label, chance level drawn or None).
SCALE_METRICS = {
    "auroc": ("LOO 3-NN AUROC (pre-training samples)", 0.5),
    "heldout_auroc": ("held-out 3-NN AUROC", 0.5),
    "probe_macro_f1": ("held-out linear-probe macro-F1", None),
}


@dataclass(frozen=True)
class HeldoutScaleConfig:
    """One ``heldout_scale`` cell: a seed of LM vs SIPT, and its probe.

    Attributes:
        simulation: the experiment (``simulation.train.steps``: :func:`heldout_scale_steps`).
        probe_validation: fraction of the pre-training samples that choose the probe's strength.
    """

    simulation: SimulationConfig
    probe_validation: float = PROBE_VALIDATION


def passes_to_steps(passes: float, n_nodes: int, batch_size: int) -> int:
    """Optimiser steps for ``passes`` passes over ``n_nodes`` samples at ``batch_size`` seeds per step
    (the batch is capped at ``n_nodes``, as the trainer does): ``ceil(passes * n / min(batch, n))``."""
    return max(1, math.ceil(passes * n_nodes / min(batch_size, n_nodes)))


def passes_per_sample(steps: int, n_nodes: int, batch_size: int) -> float:
    """Passes over each of ``n_nodes`` samples that ``steps`` steps of ``min(batch_size, n_nodes)``
    seeds make (the inverse of :func:`passes_to_steps`, before its rounding up)."""
    return steps * min(batch_size, n_nodes) / n_nodes


def heldout_scale_steps(options: FigureOptions, n_nodes: int, batch_size: int) -> int:
    """Steps per arm at ``n_nodes``: the passes rule with ``options.passes``, else ``options.steps``
    (default :data:`HELDOUT_SCALE_STEPS`) at every size."""
    if options.passes is not None:
        return passes_to_steps(options.passes, n_nodes, batch_size)
    return equal_steps(options)


def equal_steps(options: FigureOptions) -> int:
    """Steps per arm at every size without the passes rule: ``options.steps`` or :data:`HELDOUT_SCALE_STEPS`."""
    return HELDOUT_SCALE_STEPS if options.steps is None else options.steps


def training_budget(options: FigureOptions) -> str:
    """The training budget ``options`` give ``heldout_scale`` in words (a figure title's)."""
    if options.passes is not None:
        return f"{options.passes:g} passes per sample"
    return f"{equal_steps(options):,} steps per arm at every size"


def heldout_scale_configs(options: FigureOptions) -> list[HeldoutScaleConfig]:
    """Every family at every size and seed (seeds vary fastest), each with :func:`heldout_scale_steps`."""
    configs = []
    for family, sizes in HELDOUT_SCALE_NODES.items():
        for n_nodes in options.scale_nodes or sizes:
            graph = {"n_nodes": n_nodes, "n_heldout": HELDOUT_SCALE_HELDOUT, "n_topics": HELDOUT_SCALE_TOPICS}
            training = {"preset": options.preset, "encoder": options.encoder, "graph_options": graph}
            base = simulation_config(family, **training)
            steps = heldout_scale_steps(options, n_nodes, base.train.batch_size)
            configs += [
                HeldoutScaleConfig(simulation_config(family, seed=seed, steps=steps, **training))
                for seed in range(options.seeds)
            ]
    return configs


def heldout_probe(
    embeddings: np.ndarray,
    labels: np.ndarray,
    heldout_embeddings: np.ndarray,
    heldout_labels: np.ndarray,
    validation: float,
    seed: int,
) -> ProbeResult:
    """Linear probe (:func:`~sipt_lab.evaluation.probe.linear_probe`, classification) trained on the frozen
    ``(n, H)`` pre-training embeddings and their ``(n,)`` topic labels, its strength chosen on a random
    ``validation`` fraction of them (seeded), tested on the ``(h, H)`` held-out embeddings ``(h,)``."""
    order = np.random.default_rng(seed).permutation(len(labels))
    val, train = np.split(order, [max(1, round(validation * len(labels)))])
    return linear_probe(
        embeddings[train],
        labels[train],
        embeddings[val],
        labels[val],
        heldout_embeddings,
        heldout_labels,
        "classification",
    )


def heldout_scale_cell(config: HeldoutScaleConfig) -> dict[str, Any]:
    """One seed of LM vs SIPT (:func:`~sipt_lab.studies.simulation.arms.run_arms`) plus,
    per arm, the held-out probe's ``probe_macro_f1``, ``probe_accuracy`` and ``probe_strength``."""
    simulation = config.simulation
    dataset = build_dataset(simulation.graph)
    arms = run_arms(dataset, simulation)
    result = seed_result(simulation, dataset, arms)
    for arm, output in arms.items():
        probe = heldout_probe(
            output.embeddings,
            dataset.labels,
            output.heldout_embeddings,
            dataset.heldout_labels,
            config.probe_validation,
            simulation.graph.seed,
        )
        result["methods"][arm].update(
            probe_macro_f1=probe.test["macro_f1"], probe_accuracy=probe.test["accuracy"], probe_strength=probe.strength
        )
    train = simulation.train
    result.update(
        n_heldout=len(dataset.heldout_sentences),
        passes=passes_per_sample(train.steps, dataset.n_nodes, train.batch_size),
        steps=train.steps,
        batch_size=train.batch_size,
    )
    return result


def paired_gain_columns(cells: list[dict[str, Any]], metrics: tuple[str, ...]) -> dict[str, float]:
    """Per metric, the SIPT − LM gain of every seed (one cell: both arms on its dataset, init and
    batches) summarised over seeds (:func:`~sipt_lab.core.stats.mean_ci`): ``gain_<metric>_mean``,
    ``gain_<metric>_ci_low`` and ``gain_<metric>_ci_high`` (Student-t 95 %; NaN for one seed)."""
    row = {}
    for metric in metrics:
        mean, low, high = mean_ci(cell["methods"]["sipt"][metric] - cell["methods"]["lm"][metric] for cell in cells)
        row.update({f"gain_{metric}_mean": mean, f"gain_{metric}_ci_low": low, f"gain_{metric}_ci_high": high})
    return row


def heldout_scale_tables(
    out_dir: str | Path, options: FigureOptions
) -> tuple[list[HeldoutScaleConfig], list[CellResult], list[dict[str, Any]]]:
    """Run (or load) the ``heldout_scale`` cells; returns the configs, the cells and one row per
    (family, size): steps, passes per sample, batch, held-out size, :func:`seed_summary` of
    :data:`SCALE_METRICS` and their paired gains (:func:`paired_gain_columns`)."""
    configs = heldout_scale_configs(options)
    prepare_grid_topics([c.simulation.graph for c in configs], options)
    results = run_grid(
        heldout_scale_cell,
        configs,
        cells_root(out_dir, options) / "heldout_scale",
        executor=options.executor,
    )
    rows = []
    for family in HELDOUT_SCALE_NODES:
        for n_nodes in dict.fromkeys(
            c.simulation.graph.n_nodes for c in configs if c.simulation.graph.family == family
        ):
            cells = [
                cell.result for cell in results if (cell.result["graph"], cell.result["n_nodes"]) == (family, n_nodes)
            ]
            rows.append(
                {
                    "graph": family,
                    "n_nodes": n_nodes,
                    "steps": cells[0]["steps"],
                    "passes": cells[0]["passes"],
                    "batch_size": cells[0]["batch_size"],
                    "n_heldout": cells[0]["n_heldout"],
                    **seed_summary(cells, tuple(SCALE_METRICS)),
                    **paired_gain_columns(cells, tuple(SCALE_METRICS)),
                }
            )
    return configs, results, rows
