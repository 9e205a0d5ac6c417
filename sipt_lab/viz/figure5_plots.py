"""Figure 5a and 5b drawn from their tables: the rows ``sipt-lab figures`` writes as ``fig5a.csv``
and ``fig5b.csv`` (so the docs draw them again from the committed CSVs)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sipt_lab.core.stats import spread_phrase
from sipt_lab.viz import plots


def _columns(rows: Sequence[dict]) -> dict[str, list]:
    return {key: [row[key] for row in rows] for key in rows[0]}


def _seeds(rows: Sequence[dict]) -> int:
    return int(max(float(row["n_seeds"]) for row in rows))


def draw_fig5a(rows: Sequence[dict], stem: str | Path) -> list[Path]:
    """LOO and held-out 3-NN AUROC of LM vs SIPT per graph family (one row each: ``graph``, the
    arms' ``*_mean`` / ``*_sd``, ``local_consistency_mean``, the paper's values), LC marked."""
    column = _columns(rows)
    lc = {"local consistency (LC)": column["local_consistency_mean"]}
    panels = [
        plots.BarPanel(
            "leave-one-out (pre-training samples)",
            "3-NN AUROC (topic task)",
            {
                "LM": (column["lm_auroc_mean"], column["lm_auroc_sd"]),
                "SIPT": (column["sipt_auroc_mean"], column["sipt_auroc_sd"]),
            },
            {**lc, "LM (paper)": column["paper_lm_auroc"], "SIPT (paper)": column["paper_sipt_auroc"]},
        ),
        plots.BarPanel(
            "held-out samples (never pre-trained on)",
            "3-NN AUROC (topic task)",
            {
                "LM": (column["lm_heldout_auroc_mean"], column["lm_heldout_auroc_sd"]),
                "SIPT": (column["sipt_heldout_auroc_mean"], column["sipt_heldout_auroc_sd"]),
            },
            lc,
        ),
    ]
    title = f"Figure 5a: 3-NN AUROC of the topic task, LM vs SIPT per graph family ({spread_phrase(_seeds(rows))})"
    families = [str(graph).upper() for graph in column["graph"]]
    return plots.grouped_bars(stem, families, panels, title=title, xlabel="graph family")


def draw_fig5b(rows: Sequence[dict], stem: str | Path) -> list[Path]:
    """LOO 3-NN AUROC of LM and SIPT on CLIQUES against the edge-noise rate (one row per ``noise``),
    with the task's LC over the graph and the paper's values."""
    column = _columns(rows)
    rates = column["noise"]
    return plots.lines_with_bands(
        stem,
        rates,
        {
            "LM": (column["lm_auroc_mean"], column["lm_auroc_sd"]),
            "SIPT": (column["sipt_auroc_mean"], column["sipt_auroc_sd"]),
            "LC of the task over G_PT": (column["local_consistency_mean"], None),
        },
        markers={"LM (paper)": (rates, column["paper_lm_auroc"]), "SIPT (paper)": (rates, column["paper_sipt_auroc"])},
        styles={"LC of the task over G_PT": {"linestyle": "--", "marker": None, "linewidth": 1.2}},
        xlabel="edge noise rate (each non-adjacent pair gains an edge with this probability)",
        ylabel="LOO 3-NN AUROC  /  local consistency",
        title=f"Figure 5b: LOO 3-NN AUROC of the topic task on CLIQUES with edge noise ({spread_phrase(_seeds(rows))})",
        percent_x=True,
        hline=0.5,
        hline_label="chance (AUROC 0.5)",
        ylim=(0.0, 1.05),
    )
