"""Figure ``methods``: every pre-training method on the same graph families, data, batches and budget.

LOO 3-NN AUROC of the topic task per family × method (mean ± sd over seeds), with the task's local
consistency over ``G_PT`` marked; beside it, each method's pre-trained encoder (the MLSM family's
concept-trained student too) fully fine-tuned on the topic task under :data:`METHODS_FINETUNE`, on
the same splits for every method (test accuracy). Theorem 1 predicts that the methods inducing
``G_PT`` structure in the per-sample space (SIPT; LinkBERT through its linked pairs, if at all)
track LC, while the intra-sample ones (LM, MLSM, LSM15, LSM) do not. Cells are :func:`simulate_seed` cells of one
:class:`SimulationConfig` per (family, seed) holding all methods, under ``<cells_dir>/methods``.

Budget: :data:`METHODS_FAMILIES` at :data:`METHODS_STEPS` steps per method (``--steps`` overrides),
sized for a CPU (measured in benchmarks/RESULTS.md).
"""

from __future__ import annotations

from pathlib import Path

from sipt_lab.core.stats import spread_phrase
from sipt_lab.grid import GridInterrupted, result_rows, run_grid, write_results_csv
from sipt_lab.studies.paper.figure_options import (
    FigureOptions,
    cells_root,
    check_options,
    mean_sd_columns,
    prepare_grid_topics,
)
from sipt_lab.studies.simulation.arms import SEED_RESULT_KEYS, simulate_seed
from sipt_lab.studies.simulation.config import simulation_config
from sipt_lab.training import names
from sipt_lab.training.train_config import FinetuneConfig
from sipt_lab.viz import plots

#: Families of the figure: high LC (CLIQUES), a manifold (TORUS) and a mechanistic graph of low LC.
METHODS_FAMILIES = ("cliques", "torus", "structural")
#: The methods the figure compares: every method but the per-sample baselines (the synthetic
#: families have no per-sample pre-training labels).
METHODS = tuple(m for m in names.METHODS if m not in names.PER_SAMPLE_METHODS)
#: Steps per method and seed (each family's default batch size).
METHODS_STEPS = 200
#: Full fine-tuning of every method's encoder on the topic task (random 80/10/10 splits of the
#: pre-training samples per seed): the char encoder's rates, a CPU's budget.
METHODS_FINETUNE = FinetuneConfig(lrs=(1e-4, 1e-3), epochs=3, patience=1, batch_size=16)


def methods_configs(options: FigureOptions) -> list:
    """One config per (family, seed), every method in it."""
    families = [f for f in options.families if f in METHODS_FAMILIES] or list(METHODS_FAMILIES)
    graph_options = {} if options.n_nodes is None else {"n_nodes": options.n_nodes}
    return [
        simulation_config(
            family,
            seed=seed,
            steps=options.steps or METHODS_STEPS,
            preset=options.preset,
            encoder=options.encoder,
            graph_options=graph_options,
            methods=METHODS,
            finetune=METHODS_FINETUNE,
        )
        for family in families
        for seed in range(options.seeds)
    ]


def methods_figure(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """Run (or load) the grid; write ``methods.csv`` (one row per family: LC and each method's
    LOO 3-NN AUROC and fine-tuning test accuracy, mean/sd), ``methods_cells.csv`` and
    ``methods.png`` / ``.pdf``."""
    check_options(options)
    out = Path(out_dir)
    configs = methods_configs(options)
    prepare_grid_topics([c.graph for c in configs], options)
    try:
        results = run_grid(
            simulate_seed,
            configs,
            cells_root(out, options) / "methods",
            executor=options.executor,
            required_keys=SEED_RESULT_KEYS,
        )
    except GridInterrupted as interrupt:
        write_results_csv(result_rows(interrupt.results), out / "methods_cells.csv")
        raise
    write_results_csv(result_rows(results), out / "methods_cells.csv")
    families = list(dict.fromkeys(c.graph.family for c in configs))
    rows = []
    for family in families:
        cells = [cell.result for cell in results if cell.result["graph"] == family]
        row = {
            "graph": family,
            "n_seeds": len(cells),
            **mean_sd_columns("local_consistency", [c["local_consistency"] for c in cells]),
        }
        for method in METHODS:
            row.update(mean_sd_columns(f"{method}_auroc", [c["methods"][method]["auroc"] for c in cells]))
        for method in METHODS:
            tuned = [c["methods"][method]["finetune"]["accuracy"] for c in cells]
            row.update(mean_sd_columns(f"{method}_finetune_accuracy", tuned))
        rows.append(row)
    write_results_csv(rows, out / "methods.csv", list(rows[0]))
    column = {key: [row[key] for row in rows] for key in rows[0]}
    label = {name: ("SIPT" if name == "sipt" else "LM" if name == "lm" else name) for name in METHODS}
    panel = plots.BarPanel(
        "leave-one-out (pre-training samples)",
        "3-NN AUROC (topic task)",
        {label[m]: (column[f"{m}_auroc_mean"], column[f"{m}_auroc_sd"]) for m in METHODS},
        {"local consistency (LC)": column["local_consistency_mean"]},
    )
    tuned = plots.BarPanel(
        "full fine-tuning (held-out split)",
        "test accuracy (topic task)",
        {label[m]: (column[f"{m}_finetune_accuracy_mean"], column[f"{m}_finetune_accuracy_sd"]) for m in METHODS},
    )
    title = (
        f"LOO 3-NN AUROC of the topic task per pre-training method and graph family ({spread_phrase(options.seeds)})"
    )
    figure = plots.grouped_bars(
        out / "methods", [f.upper() for f in families], [panel, tuned], title=title, xlabel="graph family"
    )
    return [out / "methods.csv", out / "methods_cells.csv", *figure]
