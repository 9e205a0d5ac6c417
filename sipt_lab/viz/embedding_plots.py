"""Pictures of embeddings: 2-D projections coloured by label, and persistence diagrams next to the
true surface's Betti numbers. Each function writes ``<stem>.png`` and ``<stem>.pdf`` and returns the paths."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sipt_lab.viz.style import ARM_COLOURS, STYLE, plt, qualitative_colours, save


def embedding_panels(
    stem: str | Path,
    panels: Mapping[str, np.ndarray],
    labels: Sequence[int],
    *,
    title: str,
    label_name: str = "topic",
    axis_name: str = "UMAP",
) -> list[Path]:
    """2-D embeddings side by side (panel title -> ``(n, 2)`` coordinates), coloured by ``labels``."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    cmap = qualitative_colours(classes.size)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels) + 1.2, 4.6), squeeze=False)
        for ax, (name, xy) in zip(axes[0], panels.items()):
            xy = np.asarray(xy, dtype=float)
            for i, c in enumerate(classes):
                keep = labels == c
                ax.scatter(
                    xy[keep, 0],
                    xy[keep, 1],
                    s=12,
                    color=cmap(i % cmap.N),
                    alpha=0.85,
                    linewidths=0,
                    label=f"{label_name} {c}",
                )
            ax.set_title(name)
            ax.set_xlabel(f"{axis_name} 1 (a.u.)")
            ax.set_ylabel(f"{axis_name} 2 (a.u.)")
            ax.set_xticks([])
            ax.set_yticks([])
        axes[0][-1].legend(
            loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, markerscale=1.5, title="colour: FT label"
        )
        fig.suptitle(title)
        return save(fig, stem)


@dataclass(frozen=True)
class TopologyRow:
    """One row of :func:`topology_panels` (one surface).

    Attributes:
        name: the surface.
        diagrams: embedder -> ``(k, 3)`` rows ``(dimension, birth, death)`` in units of the
            filtration's scale (``inf`` deaths allowed).
        counts: embedder -> long-lived bars per dimension ``(b0, b1, b2)``.
        true_betti: the surface's Betti numbers.
    """

    name: str
    diagrams: Mapping[str, np.ndarray]
    counts: Mapping[str, Sequence[int]]
    true_betti: Sequence[int]


def topology_panels(
    stem: str | Path, rows: Sequence[TopologyRow], *, threshold: float, title: str, scale_name: str = "L"
) -> list[Path]:
    """Per row: one persistence diagram per embedder (birth and death in units of ``scale_name``,
    the dashed line ``death = birth + threshold`` separating long-lived bars), then grouped bars of
    long-lived bar counts per dimension next to the true Betti numbers."""
    dim_colours = ("#1f77b4", "#d62728", "#2ca02c")
    n_cols = max(len(row.diagrams) for row in rows) + 1
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(rows), n_cols, figsize=(3.5 * n_cols, 3.4 * len(rows)), squeeze=False)
        for r, row in enumerate(rows):
            for c, (embedder, diagram) in enumerate(row.diagrams.items()):
                ax = axes[r][c]
                diagram = np.asarray(diagram, dtype=float).reshape(-1, 3)
                top = 1.08
                for dim in range(3):
                    bars = diagram[diagram[:, 0] == dim]
                    death = np.where(np.isfinite(bars[:, 2]), np.minimum(bars[:, 2], 1.0), top)
                    ax.scatter(
                        bars[:, 1], death, s=10, color=dim_colours[dim], alpha=0.7, linewidths=0, label=f"H{dim}"
                    )
                ax.plot([0, 1], [0, 1], color="0.3", linewidth=0.8)
                ax.plot(
                    [0, 1 - threshold],
                    [threshold, 1],
                    color="0.3",
                    linestyle="--",
                    linewidth=0.8,
                    label=f"lifetime = {threshold:.3g} {scale_name}",
                )
                ax.axhline(top, color="0.6", linewidth=0.6, linestyle=":")
                ax.set_xlim(-0.02, 1.02)
                ax.set_ylim(-0.02, top + 0.04)
                ax.set_aspect("equal")
                ax.set_xlabel(f"birth (/ {scale_name})")
                ax.set_ylabel(f"death (/ {scale_name}; top = never)")
                counts = ", ".join(str(int(v)) for v in row.counts[embedder])
                ax.set_title(f"{row.name}: {embedder}\nlong-lived bars ({counts})", fontsize=9.5)
                if r == 0 and c == 0:
                    ax.legend(loc="lower right", fontsize=7.5, frameon=False)
            ax = axes[r][n_cols - 1]
            names = ["true surface", *row.counts]
            values = [row.true_betti, *row.counts.values()]
            width = 0.8 / len(names)
            for i, (name, counts) in enumerate(zip(names, values)):
                bars = ax.bar(
                    np.arange(3) + (i - (len(names) - 1) / 2) * width,
                    list(counts),
                    width * 0.92,
                    color=ARM_COLOURS.get(name, f"C{i + 4}"),
                    label=name,
                )
                ax.bar_label(bars, fontsize=7, padding=1)
            top = max(max(int(v) for v in counts) for counts in values)
            ticks = [t for t in (0, 1, 2, 3, 5, 10, 30, 100, 300, 1000) if t <= top * 1.5]
            ax.set_yscale("symlog", linthresh=3, linscale=1.5)
            ax.set_yticks(ticks, [str(t) for t in ticks])
            ax.set_ylim(0, max(4, top) * 6)
            ax.set_xticks(np.arange(3), ["b0", "b1", "b2"])
            ax.set_ylabel("count (symlog scale)")
            ax.set_title(f"{row.name}: Betti numbers vs long-lived bars", fontsize=9.5)
            ax.legend(fontsize=7, frameon=False, loc="upper right", ncol=2)
        fig.suptitle(title)
        fig.tight_layout()
        return save(fig, stem)
