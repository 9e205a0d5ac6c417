"""The paper's figures and the theory checks, each a function ``(out_dir, options) -> paths``.

:data:`FIGURES` maps a name to a function that gets the figure's numbers from
the modules beside this one (:mod:`~sipt_lab.studies.paper.figure5`, ``topology_tables``,
``corollary_cells``, ``heldout_scale``: configs, grid cells, tables), writes them as
``<out_dir>/<name>.csv`` (atomically) and draws ``<name>.png`` / ``<name>.pdf`` with
:mod:`sipt_lab.viz.plots`. :func:`make_figures` runs a list of them; ``sipt-lab figures`` and the
scripts in ``paper_figures/`` call it. A new figure is one function here (or in its own module)
and one line of :data:`FIGURES`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.core.outputs import prepare_grid_dir, prepare_output_dir
from sipt_lab.core.stats import spread_phrase
from sipt_lab.evaluation.embedding_topology import KNN_NEIGHBOURS, LONG_BAR_FRACTION, RIPS_CUTOFF
from sipt_lab.grid import result_rows, write_results_csv
from sipt_lab.studies.paper.corollary_cells import (
    COROLLARY2_N,
    COROLLARY2_SURFACES,
    corollary1_rows,
    corollary2_rows,
)
from sipt_lab.studies.paper.figure5 import (
    fig5a_rows,
    fig5b_rows,
    run_figure5_grid,
    theorem1_rows,
    trained_arms,
    umap_2d,
)
from sipt_lab.studies.paper.figure_options import FigureOptions, check_options, mean_sd_columns, say
from sipt_lab.studies.paper.heldout_scale import (
    HELDOUT_SCALE_NODES,
    SCALE_METRICS,
    heldout_scale_tables,
    training_budget,
)
from sipt_lab.studies.paper.methods_figure import methods_figure
from sipt_lab.studies.paper.topology_tables import CHECK_ROW, TOPOLOGY_CHECK_POINTS, topology_tables
from sipt_lab.studies.simulation.config import ARMS
from sipt_lab.viz import embedding_plots, plots
from sipt_lab.viz.figure5_plots import draw_fig5a, draw_fig5b

# --- Figure 5 (the shared grid) -------------------------------------------------------------------


def fig5a(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """LOO and held-out 3-NN AUROC of LM vs SIPT per graph family (noise 0), LC marked."""
    out = Path(out_dir)
    results = run_figure5_grid(out, options, ("families",))
    rows = fig5a_rows(results, options)
    write_results_csv(rows, out / "fig5a.csv", list(rows[0]))
    figure = draw_fig5a(rows, out / "fig5a")
    return [out / "fig5a.csv", out / "fig5_cells.csv", *figure]


def fig5b(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """LOO 3-NN AUROC of LM and SIPT on CLIQUES as edge noise grows (mean ± sd bands)."""
    out = Path(out_dir)
    results = run_figure5_grid(out, options, ("noise",))
    rows = fig5b_rows(results, options)
    write_results_csv(rows, out / "fig5b.csv", list(rows[0]))
    figure = draw_fig5b(rows, out / "fig5b")
    return [out / "fig5b.csv", out / "fig5_cells.csv", *figure]


# --- Theorem 1: SIPT and the oracle embedder against LC -------------------------------------------


def theorem1(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """Theorem 1 checked two ways, one point per (graph, noise, seed) for SIPT and the oracle: LOO 3-NN
    accuracy against LC, and the theorem's own predictor, the r-NN accuracy at the radius that best
    recovers ``G_PT`` from the embeddings, coloured by that recovery's F1 (1: the validity condition)."""
    out = Path(out_dir)
    results = run_figure5_grid(out, options)
    rows = theorem1_rows(out, results, options)
    write_results_csv(rows, out / "theorem1.csv", list(rows[0]))
    names = {"sipt": "SIPT encoder", "oracle": "oracle (free vectors, L_SI only)"}
    above = {e: np.mean([r["accuracy_minus_lc"] >= -0.02 for r in rows if r["embedder"] == e]) for e in names}
    valid = [r for r in rows if r["radius_f1"] == 1.0]
    lc = [r["local_consistency"] for r in rows]
    shapes = [names[r["embedder"]] for r in rows]
    panels = [
        plots.ScatterPanel(
            lc,
            [r["accuracy"] for r in rows],
            "local consistency of the topic task over G_PT",
            "LOO 3-NN accuracy (fraction correct)",
            "3-NN predictor",
            groups=[condition_label(r["graph"], r["noise"]) for r in rows],
            shapes=shapes,
            note=f"on/above y = x (within 0.02): SIPT {above['sipt']:.0%}, oracle {above['oracle']:.0%}",
        ),
        plots.ScatterPanel(
            lc,
            [r["radius_nn_accuracy"] for r in rows],
            "local consistency of the topic task over G_PT",
            "LOO r-NN accuracy at the best radius",
            "r-NN predictor at the radius best recovering G_PT",
            shapes=shapes,
            values=[r["radius_f1"] for r in rows],
            value_label="F1 of that radius graph vs G_PT",
            note=f"radius recovers G_PT exactly (F1 = 1) in {len(valid)} of {len(rows)} runs; "
            f"there r-NN = LC within 0.01 in {sum(abs(r['radius_nn_minus_lc']) <= 0.01 for r in valid)}",
        ),
    ]
    figure = plots.scatter_panels(
        out / "theorem1", panels, title="Theorem 1: nearest-neighbour accuracy vs local consistency"
    )
    return [out / "theorem1.csv", out / "fig5_cells.csv", *figure]


def condition_label(graph: str, noise: float) -> str:
    """``CLIQUES`` at noise 0, else ``CLIQUES +50% noise``."""
    return graph.upper() if noise == 0 else f"{graph.upper()} +{100 * noise:g}% noise"


# --- Figure 5c/d: UMAP of LM and SIPT embeddings on MOBIUS ----------------------------------------


def fig5cd(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """UMAP (random_state 0) of the LM and SIPT embeddings of MOBIUS (seed 0), coloured by topic."""
    out = Path(out_dir)
    _, dataset, arms = trained_arms("mobius", options)
    coordinates = {arm: umap_2d(arms[arm].embeddings) for arm in ARMS}
    rows = [
        {
            "arm": arm,
            "node": node,
            "umap_x": xy[0],
            "umap_y": xy[1],
            "topic": int(dataset.labels[node]),
            "arm_loo_auroc": arms[arm].metrics["auroc"],
        }
        for arm in ARMS
        for node, xy in enumerate(coordinates[arm].tolist())
    ]
    write_results_csv(rows, out / "fig5cd.csv", list(rows[0]))
    panels = {f"{arm.upper()} (LOO 3-NN AUROC {arms[arm].metrics['auroc']:.3f})": coordinates[arm] for arm in ARMS}
    figure = embedding_plots.embedding_panels(
        out / "fig5cd",
        panels,
        dataset.labels,
        title=f"Figure 5c/d: MÖBIUS, UMAP of pre-training embeddings ({dataset.n_nodes} sentences, seed 0, "
        f"LC {dataset.local_consistency:.3f})",
    )
    return [out / "fig5cd.csv", *figure]


# --- Corollaries ----------------------------------------------------------------------------------


def corollary1(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """Label-clique PT graph from one labelling, FT on a correlated one: accuracy vs the bound."""
    check_options(options)
    out = Path(out_dir)
    first, rows = corollary1_rows(out, options)
    write_results_csv(rows, out / "corollary1.csv", list(rows[0]))
    below = np.mean([r["accuracy_minus_bound"] <= 0.02 for r in rows])
    figure = plots.scatter_vs_diagonal(
        out / "corollary1",
        [r["bound"] for r in rows],
        [r["nn_accuracy"] for r in rows],
        values=[r["agreement"] for r in rows],
        value_label="P(FT label follows the PT class)",
        xlabel="Corollary 1 bound (P[FT label = its PT clique's majority])",
        ylabel="oracle LOO 3-NN accuracy on the FT task",
        lims=(0.0, 1.02),
        title=f"Corollary 1: {first.n_pt_classes} PT cliques of {first.per_class}, {first.n_ft_classes} FT classes",
        note=f"on/below y = x (within 0.02): {below:.0%} of {len(rows)} runs",
    )
    return [out / "corollary1.csv", *figure]


def corollary2(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """LC of the nearest-vertex task over radius graphs (mean degree 10) as n grows, per surface."""
    check_options(options)
    out = Path(out_dir)
    rows = corollary2_rows(options)
    write_results_csv(rows, out / "corollary2.csv", list(rows[0]))
    series = {}
    for surface in COROLLARY2_SURFACES:
        stats = [
            mean_sd_columns("lc", [r["lc"] for r in rows if (r["surface"], r["n"]) == (surface, n)])
            for n in COROLLARY2_N
        ]
        series[surface.upper()] = ([s["lc_mean"] for s in stats], [s["lc_sd"] for s in stats])
    figure = plots.lines_with_bands(
        out / "corollary2",
        COROLLARY2_N,
        series,
        logx=True,
        hline=1.0,
        hline_label="LC = 1",
        xlabel=r"points on the surface $n$ (log scale); radius $r \propto n^{-1/2}$ (mean degree 10)",
        ylabel="local consistency of the nearest-vertex task",
        title=f"Corollary 2: LC over radius graphs tends to 1 ({spread_phrase(options.seeds)})",
    )
    return [out / "corollary2.csv", *figure]


# --- topology -------------------------------------------------------------------------------------


def topology(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """Betti numbers read off LM and SIPT embeddings on TORUS and SPHERE, and the rule's check on
    evenly spread true positions (:func:`~sipt_lab.studies.paper.topology_tables.topology_tables`)."""
    check_options(options)
    out = Path(out_dir)
    tables = topology_tables(options)
    panel_rows = []
    for surface, (results, positions, true_betti) in tables.surfaces.items():
        counts = {embedder: result.counts for embedder, result in results.items()}
        counts = {CHECK_ROW: counts.pop(CHECK_ROW), "sentences' positions": positions, **counts}
        panel_rows.append(
            embedding_plots.TopologyRow(
                surface.upper(), {embedder: result.diagram for embedder, result in results.items()}, counts, true_betti
            )
        )
    write_results_csv(tables.rows, out / "topology.csv", list(tables.rows[0]))
    write_results_csv(tables.bars, out / "topology_bars.csv", list(tables.bars[0]))
    figure = embedding_plots.topology_panels(
        out / "topology",
        panel_rows,
        threshold=LONG_BAR_FRACTION,
        scale_name="L",
        title=f"Topology: Rips persistence of {KNN_NEIGHBOURS}-NN graph geodesics up to L = {RIPS_CUTOFF:g} eps "
        f"(eps = median distance to the {KNN_NEIGHBOURS}th neighbour); long-lived = lifetime >= eps; "
        f"surface row: {TOPOLOGY_CHECK_POINTS} evenly spread true positions",
    )
    return [out / "topology.csv", out / "topology_bars.csv", *figure]


# --- held-out gain against the size of G_PT ------------------------------------------------------


def heldout_scale(out_dir: str | Path, options: FigureOptions) -> list[Path]:
    """LM vs SIPT on CLIQUES and TORUS as G_PT grows, at equal steps per size (or a fixed number of
    passes per sample): LOO and held-out 3-NN AUROC and the held-out probe's macro-F1 (mean ± sd over
    seeds; the CSV adds each metric's paired SIPT − LM gain with its 95 % interval)."""
    check_options(options)
    out = Path(out_dir)
    _, results, rows = heldout_scale_tables(out, options)
    write_results_csv(result_rows(results), out / "heldout_scale_cells.csv")
    write_results_csv(rows, out / "heldout_scale.csv", list(rows[0]))
    panels = [
        [
            plots.LinePanel(
                f"{family.upper()}: {label}",
                "pre-training nodes (log scale)",
                label.split(" (")[0],
                [r["n_nodes"] for r in rows if r["graph"] == family],
                {
                    arm.upper(): (
                        [r[f"{arm}_{metric}_mean"] for r in rows if r["graph"] == family],
                        [r[f"{arm}_{metric}_sd"] for r in rows if r["graph"] == family],
                    )
                    for arm in ARMS
                },
                hline=chance,
                hline_label="chance AUROC (0.5)",
            )
            for metric, (label, chance) in SCALE_METRICS.items()
        ]
        for family in HELDOUT_SCALE_NODES
    ]
    figure = plots.line_panels(
        out / "heldout_scale",
        panels,
        logx=True,
        ylim=(0.0, 1.05),
        title=f"Held-out gain vs size of G_PT, {training_budget(options)} ({spread_phrase(options.seeds)})",
    )
    return [out / "heldout_scale.csv", out / "heldout_scale_cells.csv", *figure]


# --- registry ------------------------------------------------------------------------------------------

FigureFn = Callable[[Path, FigureOptions], list[Path]]

#: Figure name -> function ``(out_dir, options) -> paths written``.
FIGURES: dict[str, FigureFn] = {
    "fig5a": fig5a,
    "fig5b": fig5b,
    "fig5cd": fig5cd,
    "theorem1": theorem1,
    "corollary1": corollary1,
    "corollary2": corollary2,
    "topology": topology,
    "heldout_scale": heldout_scale,
    "methods": methods_figure,
}


def make_figures(names: Sequence[str] | None, out_dir: str | Path, options: FigureOptions) -> dict[str, list[Path]]:
    """Make the named figures (None: all, in :data:`FIGURES` order) into ``out_dir``.

    Returns name -> paths written. Unknown names raise SiptError before anything runs.
    """
    names = list(FIGURES) if not names else list(dict.fromkeys(names))
    unknown = [name for name in names if name not in FIGURES]
    if unknown:
        raise SiptError(f"unknown figure(s) {', '.join(unknown)}; choose from: {', '.join(FIGURES)}")
    check_options(options)
    out = prepare_grid_dir(out_dir, "figures")
    if options.cells_dir is not None:
        prepare_output_dir(options.cells_dir, "cells directory")
    written = {}
    for name in names:
        start = time.perf_counter()
        say(f"figure {name} ...")
        written[name] = FIGURES[name](out, options)
        say(f"figure {name} done in {time.perf_counter() - start:.1f} s")
    return written
