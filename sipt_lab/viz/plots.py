"""Paper-style figures from plain data (matplotlib, Agg): one function per kind of figure.

Every function takes lists / arrays / dicts and a path *stem*, writes ``<stem>.png`` (150 dpi) and
``<stem>.pdf`` atomically, and returns those two paths. Nothing here computes an experiment; the
figures of :mod:`sipt_lab.experiments.paper.figures` compute their numbers and call these.

Kinds:

* :func:`grouped_bars`: bars with error bars, one group per category (e.g. LM vs SIPT per graph
  family), optional per-group marks (local consistency as a tick, the paper's values as crosses),
  one or more panels side by side.
* :func:`lines_with_bands`: mean lines with ±sd bands over a numeric x (AUROC vs noise %, LC vs n
  on a log axis); :func:`line_panels` a grid of such panels, each with its own x.
* :func:`scatter_vs_diagonal`: y against x with the diagonal ``y = x``, points coloured by one
  category (or a continuous value with a colour bar) and shaped by another.
* :func:`labelled_errorbars`: named points with vertical error bars over a numeric x and a
  reference line (a method's relative error reduction against local consistency).
* :func:`embedding_panels`: 2-D embeddings (UMAP) side by side, points coloured by label.
* :func:`topology_panels`: persistence diagrams per (row, embedder) with the long-lived threshold
  drawn, next to Betti-number bars against the true surface's.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sipt_lab.core.fileio import write_bytes_atomic  # noqa: E402

DPI = 150
STYLE = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8.5,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "figure.titlesize": 12,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
#: Colours of the two arms (and the oracle / surface controls) wherever they appear.
ARM_COLOURS = {"LM": "#7f7f7f", "SIPT": "#1f77b4", "oracle": "#d62728", "true surface": "#2ca02c",
               "surface (geodesic)": "#bcbd22"}
_MARKERS = ("o", "^", "s", "D", "v", "P", "X", "*")


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


def grouped_bars(stem: str | Path, groups: Sequence[str], panels: Sequence[BarPanel], *, title: str,
                 xlabel: str = "") -> list[Path]:
    """Panels of grouped bars with ±sd error bars; ``groups`` are the x categories."""
    groups = list(groups)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(panels), figsize=(max(6.0, 0.95 * len(groups) + 2) * len(panels) * 0.8, 4.4),
                                 squeeze=False)
        for ax, panel in zip(axes[0], panels):
            x = np.arange(len(groups))
            width = 0.8 / max(len(panel.series), 1)
            centres = {}
            for i, (label, (means, sds)) in enumerate(panel.series.items()):
                offset = (i - (len(panel.series) - 1) / 2) * width
                centres[label] = x + offset
                ax.bar(x + offset, _floats(means), width * 0.92, yerr=_floats(sds), capsize=3, label=label,
                       color=ARM_COLOURS.get(label, f"C{i}"), error_kw={"elinewidth": 1, "ecolor": "0.15"})
            for label, values in panel.marks.items():
                values = _floats(values)
                base = label.removesuffix(" (paper)")
                if base in centres:
                    ax.scatter(centres[base], values, marker="x", s=36, color="black", zorder=4,
                               label="paper's value")
                else:
                    ax.hlines(values, x - 0.45, x + 0.45, colors="#ff7f0e", linewidth=2.2, zorder=5, label=label)
            ax.set_xticks(x, groups, rotation=30, ha="right")
            ax.set_ylim(*panel.ylim)
            ax.axhline(0.5, color="0.6", linewidth=0.8, linestyle=":", zorder=0, label="chance (0.5)")
            ax.set_ylabel(panel.ylabel)
            ax.set_title(panel.title)
            if xlabel:
                ax.set_xlabel(xlabel)
        _dedup_legend(axes[0][-1], sources=axes[0], loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.suptitle(title)
        return save(fig, stem)


def lines_with_bands(stem: str | Path, x: Sequence[float],
                     series: Mapping[str, tuple[Sequence[float], Sequence[float] | None]], *, xlabel: str,
                     ylabel: str, title: str, logx: bool = False, percent_x: bool = False,
                     markers: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
                     hline: float | None = None, hline_label: str = "", ylim: tuple[float, float] | None = None,
                     styles: Mapping[str, dict] | None = None) -> list[Path]:
    """Mean lines over ``x`` with ±sd bands (``sd=None``: no band).

    ``markers``: label -> ``(x, y)`` extra points without lines (e.g. reference values);
    ``percent_x`` writes x ticks as percentages; ``hline`` draws a dashed reference level;
    ``styles``: label -> extra ``plot`` keywords (e.g. ``{"linestyle": "--"}``).
    """
    x = _floats(x)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 4.3))
        _draw_lines(ax, x, series, styles)
        for i, (label, (mx, my)) in enumerate((markers or {}).items()):
            colour = ARM_COLOURS.get(label.split(" ")[0], "black")
            ax.scatter(_floats(mx), _floats(my), marker="x", s=45, color=colour, zorder=4, label=label)
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
        _dedup_legend(ax, loc="best")
        return save(fig, stem)


def _draw_lines(ax, x: np.ndarray, series: Mapping[str, tuple[Sequence[float], Sequence[float] | None]],
                styles: Mapping[str, dict] | None) -> None:
    """Mean lines over ``x`` ``(m,)`` with ±sd bands on ``ax``; arms take their :data:`ARM_COLOURS`."""
    for i, (label, (mean, sd)) in enumerate(series.items()):
        colour = ARM_COLOURS.get(label, f"C{i}")
        style = {"marker": "o", "markersize": 4, "linewidth": 1.8, **(styles or {}).get(label, {})}
        ax.plot(x, _floats(mean), color=colour, label=label, **style)
        if sd is not None:
            mean_, sd_ = _floats(mean), _floats(sd)
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


def line_panels(stem: str | Path, rows: Sequence[Sequence[LinePanel]], *, title: str, logx: bool = False,
                ylim: tuple[float, float] | None = None) -> list[Path]:
    """A grid of :func:`lines_with_bands`-style panels, ``rows[r][c]`` at row ``r``, column ``c``
    (every row as long as the first), sharing the log-x choice and y limits."""
    n_rows, n_cols = len(rows), len(rows[0])
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(n_rows, n_cols, figsize=(4.2 * n_cols, 3.4 * n_rows), squeeze=False)
        for ax_row, panel_row in zip(axes, rows):
            for ax, panel in zip(ax_row, panel_row):
                _draw_lines(ax, _floats(panel.x), panel.series, None)
                if panel.hline is not None:
                    ax.axhline(panel.hline, color="0.4", linestyle="--", linewidth=1, label=panel.hline_label or None)
                if logx:
                    ax.set_xscale("log")
                ax.set_xticks(_floats(panel.x), [f"{v:g}" for v in panel.x])
                ax.minorticks_off()
                if ylim is not None:
                    ax.set_ylim(*ylim)
                ax.set_xlabel(panel.xlabel)
                ax.set_ylabel(panel.ylabel)
                ax.set_title(panel.title)
                ax.grid(True, alpha=0.3)
        _dedup_legend(axes[0][-1], sources=axes.ravel(), loc="upper left", bbox_to_anchor=(1.01, 1.0))
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


def scatter_vs_diagonal(stem: str | Path, x: Sequence[float], y: Sequence[float], *, xlabel: str, ylabel: str,
                        title: str, groups: Sequence[str] | None = None, shapes: Sequence[str] | None = None,
                        values: Sequence[float] | None = None, value_label: str = "",
                        lims: tuple[float, float] = (0.0, 1.02), note: str = "") -> list[Path]:
    """One :class:`ScatterPanel` (arguments as its fields) drawn alone."""
    panel = ScatterPanel(x, y, xlabel, ylabel, title, groups, shapes, values, value_label, note)
    return scatter_panels(stem, [panel], lims=lims)


def scatter_panels(stem: str | Path, panels: Sequence[ScatterPanel], *, title: str = "",
                   lims: tuple[float, float] = (0.0, 1.02)) -> list[Path]:
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


def _scatter(fig, ax, panel: ScatterPanel, lims: tuple[float, float]) -> None:
    x, y = _floats(panel.x), _floats(panel.y)
    groups = list(panel.groups) if panel.groups is not None else [""] * len(x)
    shapes = list(panel.shapes) if panel.shapes is not None else [""] * len(x)
    values = None if panel.values is None else _floats(panel.values)
    finite = np.isfinite(x) & np.isfinite(y)
    group_names, shape_names = list(dict.fromkeys(groups)), list(dict.fromkeys(shapes))
    cmap = _qualitative(len(group_names))
    ax.plot(lims, lims, color="0.3", linestyle="--", linewidth=1, label="y = x", zorder=1)
    points = None
    for s, shape in enumerate(shape_names):
        for g, group in enumerate(group_names):
            keep = finite & np.array([a == group and b == shape for a, b in zip(groups, shapes)])
            if not keep.any():
                continue
            kwargs = {"c": values[keep], "cmap": "viridis", "vmin": 0, "vmax": 1} if values is not None else \
                {"color": cmap(g % cmap.N)}
            points = ax.scatter(x[keep], y[keep], marker=_MARKERS[s % len(_MARKERS)], s=34, alpha=0.85,
                                edgecolors="white", linewidths=0.4, zorder=3, **kwargs)
    if values is not None and points is not None:
        fig.colorbar(points, ax=ax, label=panel.value_label)
    handles = [ax.get_legend_handles_labels()[0][0]]
    handles += [plt.Line2D([], [], ls="", marker="o", color=cmap(g % cmap.N), label=group)
                for g, group in enumerate(group_names) if group and values is None]
    handles += [plt.Line2D([], [], ls="", marker=_MARKERS[s % len(_MARKERS)], color="0.2", markerfacecolor="none",
                           label=shape)
                for s, shape in enumerate(shape_names) if shape]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0) if values is None else None,
              frameon=False)
    if panel.note:
        ax.annotate(panel.note, xy=(0.0, -0.13), xycoords="axes fraction", ha="left", va="top", fontsize=8.5,
                    color="0.25")
    ax.set_xlim(*lims)
    ax.set_ylim(*lims)
    ax.set_aspect("equal")
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    ax.set_title(panel.title)
    ax.grid(True, alpha=0.3)


def labelled_errorbars(stem: str | Path, series: Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[float]]],
                       names: Sequence[str], *, xlabel: str, ylabel: str, title: str, reference: float = 0.0,
                       note: str = "", levels: Mapping[str, tuple[float, float]] | None = None) -> list[Path]:
    """One marker per point and series, ``series[label] = (x, y, y_sd)`` (one value per name),
    each point annotated with ``names[k]``, and a dashed horizontal line at ``reference``;
    ``levels[label] = (y, y_sd)``: values that do not depend on x, drawn as dotted lines with a ± sd band."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 4.6))
        ax.axhline(reference, color="0.3", linestyle="--", linewidth=1, zorder=1)
        for k, (label, (y, sd)) in enumerate((levels or {}).items()):
            color = f"C{(k + len(series)) % 10}"
            ax.axhline(y, color=color, linestyle=":", linewidth=1.2, label=label, zorder=2)
            if np.isfinite(sd):
                ax.axhspan(y - sd, y + sd, color=color, alpha=0.12, zorder=1)
        for s, (label, (x, y, sd)) in enumerate(series.items()):
            x, y, sd = _floats(x), _floats(y), np.nan_to_num(_floats(sd))
            ax.errorbar(x, y, yerr=sd, fmt=_MARKERS[s % len(_MARKERS)], capsize=3, label=label, zorder=3)
            for name, xi, yi in zip(names, x, y):
                ax.annotate(name, (xi, yi), textcoords="offset points", xytext=(6, 4), fontsize=8.5, color="0.25")
        if note:
            ax.annotate(note, xy=(0.0, -0.15), xycoords="axes fraction", ha="left", va="top", fontsize=8.5, color="0.25")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(frameon=False)
        return save(fig, stem)


def embedding_panels(stem: str | Path, panels: Mapping[str, np.ndarray], labels: Sequence[int], *, title: str,
                     label_name: str = "topic", axis_name: str = "UMAP") -> list[Path]:
    """2-D embeddings side by side (panel title -> ``(n, 2)`` coordinates), coloured by ``labels``."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    cmap = _qualitative(classes.size)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels) + 1.2, 4.6), squeeze=False)
        for ax, (name, xy) in zip(axes[0], panels.items()):
            xy = np.asarray(xy, dtype=float)
            for i, c in enumerate(classes):
                keep = labels == c
                ax.scatter(xy[keep, 0], xy[keep, 1], s=12, color=cmap(i % cmap.N), alpha=0.85, linewidths=0,
                           label=f"{label_name} {c}")
            ax.set_title(name)
            ax.set_xlabel(f"{axis_name} 1 (a.u.)")
            ax.set_ylabel(f"{axis_name} 2 (a.u.)")
            ax.set_xticks([])
            ax.set_yticks([])
        axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, markerscale=1.5,
                           title="colour: FT label")
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


def topology_panels(stem: str | Path, rows: Sequence[TopologyRow], *, threshold: float, title: str,
                    scale_name: str = "L") -> list[Path]:
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
                    ax.scatter(bars[:, 1], death, s=10, color=dim_colours[dim], alpha=0.7, linewidths=0,
                               label=f"H{dim}")
                ax.plot([0, 1], [0, 1], color="0.3", linewidth=0.8)
                ax.plot([0, 1 - threshold], [threshold, 1], color="0.3", linestyle="--", linewidth=0.8,
                        label=f"lifetime = {threshold:.3g} {scale_name}")
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
                bars = ax.bar(np.arange(3) + (i - (len(names) - 1) / 2) * width, list(counts), width * 0.92,
                              color=ARM_COLOURS.get(name, f"C{i + 4}"), label=name)
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


def save(fig, stem: str | Path) -> list[Path]:
    """Write ``fig`` as ``<stem>.png`` (150 dpi) and ``<stem>.pdf`` atomically, close it, return the paths."""
    stem = Path(stem)
    paths = []
    for suffix in (".png", ".pdf"):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=suffix[1:], dpi=DPI, bbox_inches="tight")
        path = stem.with_name(stem.name + suffix)
        write_bytes_atomic(path, buffer.getvalue())
        paths.append(path)
    plt.close(fig)
    return paths


def _qualitative(n: int):
    """A colour map of ``n`` well separated colours (tab10, then five more; tab20 beyond fifteen)."""
    from matplotlib.colors import ListedColormap

    colours = list(plt.get_cmap("tab10").colors) + ["#000000", "#1b9e77", "#a6cee3", "#fb9a99", "#e6ab02"]
    return ListedColormap(colours[: max(n, 1)] if n <= len(colours) else plt.get_cmap("tab20").colors)


def _floats(values) -> np.ndarray:
    return np.asarray([np.nan if v is None else v for v in values], dtype=float)


def _dedup_legend(ax, *, sources=None, **kwargs) -> None:
    """One legend on ``ax`` with every distinct label of ``sources`` (default: ``ax`` itself)."""
    unique = {}
    for source in sources if sources is not None else [ax]:
        handles, labels = source.get_legend_handles_labels()
        unique.update({label: handle for label, handle in zip(labels, handles) if label not in unique})
    if unique:
        ax.legend(unique.values(), unique.keys(), frameon=False, **kwargs)
