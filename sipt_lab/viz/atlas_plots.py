"""The natural-graph atlas's figure: per training budget, each pair's gain against its LC, LC
alone's line and the shipped predictor's single-run band, and a user's graph on it (``advise --plot``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from sipt_lab.viz.style import STYLE, plt, save

#: Marker and label of each kind of pair.
KINDS = {"natural": ("o", "natural graph (pair mean)"), "control": ("x", "random control (pair mean)")}


def atlas_panels(
    stem: str | Path,
    *,
    budgets: Mapping[str, Mapping],
    points: Sequence[Mapping],
    title: str,
    user: Mapping | None = None,
) -> list[Path]:
    """``<stem>.png`` / ``.pdf``: one panel per budget (``budgets``: steps as text -> ``lc_line``,
    ``(intercept, slope)`` of LC alone's fit, ``band``, the ``(101,)`` centre of the shipped
    predictor's single-run band at LC ``0, 0.01, ..., 1``, and its ``half_width``), with the
    ``points`` of that budget (``steps``, ``lc``, ``gain``, ``kind``, ``language``) by kind and
    language. ``user``: ``lc``, ``steps``, ``gain``, ``low``, ``high``, drawn as a star with its
    interval in the panel of the nearest budget."""
    steps = sorted(budgets, key=int)
    nearest = None if user is None else min(steps, key=lambda s: abs(np.log(int(s)) - np.log(user["steps"])))
    grid = np.linspace(0.0, 1.0, 101)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(steps), figsize=(5.2 * len(steps), 4.8), sharey=True, squeeze=False)
        for ax, budget in zip(axes[0], steps):
            entry = budgets[budget]
            ax.axhline(0.0, color="0.3", linestyle="--", linewidth=1)
            for k, language in enumerate(sorted({p["language"] for p in points})):
                for kind, (marker, label) in KINDS.items():
                    chosen = [
                        p
                        for p in points
                        if p["steps"] == int(budget) and p["kind"] == kind and p["language"] == language
                    ]
                    if chosen:
                        ax.scatter(
                            [p["lc"] for p in chosen],
                            [p["gain"] for p in chosen],
                            marker=marker,
                            color=f"C{k}",
                            alpha=0.75,
                            label=f"{language}: {label}",
                        )
            line = entry["lc_line"][0] + entry["lc_line"][1] * grid
            ax.plot(grid, line, color="0.2", linewidth=1.2, label="LC alone (fit)")
            centre, half = np.asarray(entry["band"]), entry["half_width"]
            ax.fill_between(grid, centre - half, centre + half, color="0.6", alpha=0.25, label="single-run 90% band")
            if user is not None and budget == nearest:
                ax.errorbar(
                    [user["lc"]],
                    [user["gain"]],
                    yerr=[[user["gain"] - user["low"]], [user["high"] - user["gain"]]],
                    marker="*",
                    markersize=14,
                    color="crimson",
                    capsize=4,
                    label=f"your graph ({user['steps']} steps)",
                )
            ax.set_title(f"after {budget} step{'s' * (int(budget) > 1)}")
            ax.set_xlabel("LC of the graph over the labelled pre-training articles")
            ax.set_xlim(0, 1)
        axes[0][0].set_ylabel("SIPT - LM-only on never-seen articles")
        axes[0][-1].legend(fontsize=7.5, loc="best")
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        return save(fig, stem)
