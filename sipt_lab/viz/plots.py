"""Paper-style figures from plain data (matplotlib, Agg): one function per kind of figure.

Every function takes lists / arrays / dicts and a path *stem*, writes ``<stem>.png`` (150 dpi) and
``<stem>.pdf`` atomically, and returns those two paths. Nothing here computes an experiment; the
figures of :mod:`sipt_lab.studies.paper.figures` compute their numbers and call these.

Kinds:

* :func:`grouped_bars`: bars with error bars, one group per category (e.g. LM vs SIPT per graph
  family), optional per-group marks (local consistency as a tick, the paper's values as crosses),
  one or more panels side by side.
* :func:`lines_with_bands`: mean lines with ±sd bands over a numeric x (AUROC vs noise %, LC vs n
  on a log axis); :func:`line_panels` a grid of such panels, each with its own x.
* :func:`scatter_vs_diagonal`: y against x with the diagonal ``y = x``, points coloured by one
  category (or a continuous value with a colour bar) and shaped by another.
Named points with error bars (a method's gain against local consistency) are in
:mod:`sipt_lab.viz.labelled_points`; pictures of embeddings (UMAP panels, persistence diagrams) are in :mod:`sipt_lab.viz.embedding_plots`;
the shared style and :func:`~sipt_lab.viz.style.save` in :mod:`sipt_lab.viz.style`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize

from sipt_lab.viz.style import ARM_COLOURS, MARKERS, STYLE, as_floats, dedup_legend, plt, qualitative_colours, save


@dataclass(frozen=True)
class BarPanel:
    """One panel of :func:`grouped_bars`.

    Attributes:
        title, ylabel: the panel's title and y-axis label (with units).
        series: bar label -> ``(means, sds)``, one value per group each (``nan`` draws no bar).
        marks: mark label -> one value per group (``nan``: no mark), drawn as a short horizontal
            tick across the group; a label ``"<series> (paper)"`` is drawn instead as a black cross
            on that series' bar (legend entry "paper's value").
        ylim: y-axis limits.
    """

    title: str
    ylabel: str
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]]
    marks: Mapping[str, Sequence[float]] = field(default_factory=dict)
    ylim: tuple[float, float] = (0.0, 1.05)


def grouped_bars(
    stem: str | Path, groups: Sequence[str], panels: Sequence[BarPanel], *, title: str, xlabel: str = ""
) -> list[Path]:
    """Panels of grouped bars with ±sd error bars; ``groups`` are the x categories."""
    groups = list(groups)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(
            1, len(panels), figsize=(max(6.0, 0.95 * len(groups) + 2) * len(panels) * 0.8, 4.4), squeeze=False
        )
        for ax, panel in zip(axes[0], panels):
            x = np.arange(len(groups))
            width = 0.8 / max(len(panel.series), 1)
            centres = {}
            for i, (label, (means, sds)) in enumerate(panel.series.items()):
                offset = (i - (len(panel.series) - 1) / 2) * width
                centres[label] = x + offset
                ax.bar(
                    x + offset,
                    as_floats(means),
                    width * 0.92,
                    yerr=as_floats(sds),
                    capsize=3,
                    label=label,
                    color=ARM_COLOURS.get(label, f"C{i}"),
                    error_kw={"elinewidth": 1, "ecolor": "0.15"},
                )
            for label, values in panel.marks.items():
                values = as_floats(values)
                base = label.removesuffix(" (paper)")
                if base in centres:
                    ax.scatter(centres[base], values, marker="x", s=36, color="black", zorder=4, label="paper's value")
                else:
                    ax.hlines(values, x - 0.45, x + 0.45, colors="#ff7f0e", linewidth=2.2, zorder=5, label=label)
            ax.set_xticks(x, groups, rotation=30, ha="right")
            ax.set_ylim(*panel.ylim)
            ax.axhline(0.5, color="0.6", linewidth=0.8, linestyle=":", zorder=0, label="chance (0.5)")
            ax.set_ylabel(panel.ylabel)
            ax.set_title(panel.title)
            if xlabel:
                ax.set_xlabel(xlabel)
        dedup_legend(axes[0][-1], sources=axes[0], loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.suptitle(title)
        return save(fig, stem)


def lines_with_bands(
    stem: str | Path,
    x: Sequence[float],
    series: Mapping[str, tuple[Sequence[float], Sequence[float] | None]],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logx: bool = False,
    percent_x: bool = False,
    markers: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    hline: float | None = None,
    hline_label: str = "",
    ylim: tuple[float, float] | None = None,
    styles: Mapping[str, dict] | None = None,
) -> list[Path]:
    """Mean lines over ``x`` with ±sd bands (``sd=None``: no band).

    ``markers``: label -> ``(x, y)`` extra points without lines (e.g. reference values);
    ``percent_x`` writes x ticks as percentages; ``hline`` draws a dashed reference level;
    ``styles``: label -> extra ``plot`` keywords (e.g. ``{"linestyle": "--"}``).
    """
    x = as_floats(x)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 4.3))
        _draw_lines(ax, x, series, styles)
        for label, (mx, my) in (markers or {}).items():
            colour = ARM_COLOURS.get(label.split(" ")[0], "black")
            ax.scatter(as_floats(mx), as_floats(my), marker="x", s=45, color=colour, zorder=4, label=label)
        if hline is not None:
            ax.axhline(hline, color="0.4", linestyle="--", linewidth=1, label=hline_label or None)
        if logx:
            ax.set_xscale("log")
        if percent_x:
            ax.set_xticks(x, [f"{100 * v:g}%" for v in x])
        if ylim is not None:
            ax.set_ylim(*ylim)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        dedup_legend(ax, loc="best")
        return save(fig, stem)


def _draw_lines(
    ax,
    x: np.ndarray,
    series: Mapping[str, tuple[Sequence[float], Sequence[float] | None]],
    styles: Mapping[str, dict] | None,
) -> None:
    """Mean lines over ``x`` ``(m,)`` with ±sd bands on ``ax``; arms take their :data:`ARM_COLOURS`."""
    for i, (label, (mean, sd)) in enumerate(series.items()):
        colour = ARM_COLOURS.get(label, f"C{i}")
        style = {"marker": "o", "markersize": 4, "linewidth": 1.8, **(styles or {}).get(label, {})}
        ax.plot(x, as_floats(mean), color=colour, label=label, **style)
        if sd is not None:
            mean_, sd_ = as_floats(mean), as_floats(sd)
            ax.fill_between(x, mean_ - sd_, mean_ + sd_, color=colour, alpha=0.2, linewidth=0)


@dataclass(frozen=True)
class LinePanel:
    """One panel of :func:`line_panels`.

    Attributes:
        title, xlabel, ylabel: the panel's title and axis labels (with units).
        x: ``(m,)`` the panel's own x values.
        series: line label -> ``(means (m,), sds (m,) or None)``, as in :func:`lines_with_bands`.
        hline: a dashed reference level (e.g. chance), labelled ``hline_label``; None: none.
    """

    title: str
    xlabel: str
    ylabel: str
    x: Sequence[float]
    series: Mapping[str, tuple[Sequence[float], Sequence[float] | None]]
    hline: float | None = None
    hline_label: str = ""


def line_panels(
    stem: str | Path,
    rows: Sequence[Sequence[LinePanel]],
    *,
    title: str,
    logx: bool = False,
    ylim: tuple[float, float] | None = None,
    xticks: bool = True,
) -> list[Path]:
    """A grid of :func:`lines_with_bands`-style panels, ``rows[r][c]`` at row ``r``, column ``c``
    (every row as long as the first), sharing the log-x choice and y limits; a tick at every x
    value, or matplotlib's own ticks with ``xticks`` False (long series)."""
    n_rows, n_cols = len(rows), len(rows[0])
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(n_rows, n_cols, figsize=(4.2 * n_cols, 3.4 * n_rows), squeeze=False)
        for ax_row, panel_row in zip(axes, rows):
            for ax, panel in zip(ax_row, panel_row):
                _draw_lines(ax, as_floats(panel.x), panel.series, None)
                if panel.hline is not None:
                    ax.axhline(panel.hline, color="0.4", linestyle="--", linewidth=1, label=panel.hline_label or None)
                if logx:
                    ax.set_xscale("log")
                if xticks:
                    ax.set_xticks(as_floats(panel.x), [f"{v:g}" for v in panel.x])
                    ax.minorticks_off()
                if ylim is not None:
                    ax.set_ylim(*ylim)
                ax.set_xlabel(panel.xlabel)
                ax.set_ylabel(panel.ylabel)
                ax.set_title(panel.title)
                ax.grid(True, alpha=0.3)
        dedup_legend(axes[0][-1], sources=axes.ravel(), loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.suptitle(title)
        fig.tight_layout()
        return save(fig, stem)


@dataclass(frozen=True)
class ScatterPanel:
    """One panel of :func:`scatter_panels`: ``y`` against ``x`` with the diagonal ``y = x``.

    ``groups`` colour the points by category, ``shapes`` give them a marker by category (two
    legends); ``values`` instead colour them on a continuous [0, 1] scale with a colour bar labelled
    ``value_label``. ``note`` is a line of text under the x axis. Non-finite points are not drawn.
    """

    x: Sequence[float]
    y: Sequence[float]
    xlabel: str
    ylabel: str
    title: str = ""
    groups: Sequence[str] | None = None
    shapes: Sequence[str] | None = None
    values: Sequence[float] | None = None
    value_label: str = ""
    note: str = ""


def scatter_vs_diagonal(
    stem: str | Path,
    x: Sequence[float],
    y: Sequence[float],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    groups: Sequence[str] | None = None,
    shapes: Sequence[str] | None = None,
    values: Sequence[float] | None = None,
    value_label: str = "",
    lims: tuple[float, float] = (0.0, 1.02),
    note: str = "",
) -> list[Path]:
    """One :class:`ScatterPanel` (arguments as its fields) drawn alone."""
    panel = ScatterPanel(x, y, xlabel, ylabel, title, groups, shapes, values, value_label, note)
    return scatter_panels(stem, [panel], lims=lims)


def scatter_panels(
    stem: str | Path, panels: Sequence[ScatterPanel], *, title: str = "", lims: tuple[float, float] = (0.0, 1.02)
) -> list[Path]:
    """Side-by-side :class:`ScatterPanel` s sharing ``lims`` on both axes, under ``title``."""
    with plt.rc_context(STYLE):
        width = sum(6.8 if panel.values is None else 6.0 for panel in panels)
        fig, axes = plt.subplots(1, len(panels), figsize=(width, 5.0), squeeze=False)
        for ax, panel in zip(axes[0], panels):
            _scatter(fig, ax, panel, lims)
        if title:
            fig.suptitle(title)
        fig.tight_layout()
        return save(fig, stem)


def _count_coinciding(ax, x: np.ndarray, y: np.ndarray, within: float = 0.005) -> None:
    """Write ``×k`` beside every place where ``k > 1`` points fall within ``within`` of each other."""
    places, counts = np.unique(np.round(np.column_stack([x, y]) / within).astype(np.int64), axis=0, return_counts=True)
    for (px, py), count in zip(places[counts > 1] * within, counts[counts > 1]):
        ax.annotate(
            f"×{count}", (px, py), xytext=(-7, -13), textcoords="offset points", ha="right", fontsize=8, color="0.2"
        )


def _scatter(fig, ax, panel: ScatterPanel, lims: tuple[float, float]) -> None:
    x, y = as_floats(panel.x), as_floats(panel.y)
    groups = list(panel.groups) if panel.groups is not None else [""] * len(x)
    shapes = list(panel.shapes) if panel.shapes is not None else [""] * len(x)
    values = None if panel.values is None else as_floats(panel.values)
    finite = np.isfinite(x) & np.isfinite(y)
    group_names, shape_names = list(dict.fromkeys(groups)), list(dict.fromkeys(shapes))
    cmap = qualitative_colours(len(group_names))
    ax.plot(lims, lims, color="0.3", linestyle="--", linewidth=1, label="y = x", zorder=1)
    for s, shape in enumerate(shape_names):
        for g, group in enumerate(group_names):
            keep = finite & np.array([a == group and b == shape for a, b in zip(groups, shapes)])
            if not keep.any():
                continue
            colour = plt.get_cmap("viridis")(values[keep]) if values is not None else [cmap(g % cmap.N)]
            # hollow markers, each shape smaller than the one before: points that coincide (many runs
            # sit at LC = 1, accuracy = 1) stay visible inside one another instead of hiding
            ax.scatter(
                x[keep],
                y[keep],
                marker=MARKERS[s % len(MARKERS)],
                s=70 / (1 + s),
                facecolors="none",
                edgecolors=colour,
                linewidths=1.2,
                zorder=3 + s,
            )
    _count_coinciding(ax, x[finite], y[finite])
    if values is not None:
        fig.colorbar(ScalarMappable(Normalize(0, 1), "viridis"), ax=ax, label=panel.value_label)
    handles = [ax.get_legend_handles_labels()[0][0]]
    handles += [
        plt.Line2D([], [], ls="", marker="o", color=cmap(g % cmap.N), label=group)
        for g, group in enumerate(group_names)
        if group and values is None
    ]
    handles += [
        plt.Line2D([], [], ls="", marker=MARKERS[s % len(MARKERS)], color="0.2", markerfacecolor="none", label=shape)
        for s, shape in enumerate(shape_names)
        if shape
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0) if values is None else None, frameon=False)
    if panel.note:
        ax.annotate(
            panel.note, xy=(0.0, -0.13), xycoords="axes fraction", ha="left", va="top", fontsize=8.5, color="0.25"
        )
    ax.set_xlim(*lims)
    ax.set_ylim(*lims)
    ax.set_aspect("equal")
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    ax.set_title(panel.title)
    ax.grid(True, alpha=0.3)
