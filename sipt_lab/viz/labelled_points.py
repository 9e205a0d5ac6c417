"""Labelled points with error bars: one marker per named point and series, a reference line, and
side-by-side panels of the same points against different x (the gain figures of the studies)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from sipt_lab.viz.style import MARKERS, STYLE, as_floats, plt, save


def labelled_errorbars(
    stem: str | Path,
    series: Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[float]]],
    names: Sequence[str],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    reference: float = 0.0,
    note: str = "",
    levels: Mapping[str, tuple[float, float]] | None = None,
    marks: Mapping[str, float] | None = None,
) -> list[Path]:
    """One marker per point and series, ``series[label] = (x, y, y_sd)`` (one value per name),
    each point annotated with ``names[k]``, and a dashed horizontal line at ``reference``;
    ``levels[label] = (y, y_sd)``: values that do not depend on x, drawn as dotted lines with a ± sd band;
    ``marks[label] = x``: vertical dash-dotted lines at those x."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 4.6))
        _labelled_errorbars_on(ax, series, names, xlabel, ylabel, reference, levels, marks)
        if note:
            ax.annotate(
                note, xy=(0.0, -0.15), xycoords="axes fraction", ha="left", va="top", fontsize=8.5, color="0.25"
            )
        ax.set_title(title)
        return save(fig, stem)


def labelled_errorbar_panels(
    stem: str | Path,
    panels: Sequence[tuple[str, Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[float]]]]],
    names: Sequence[str],
    *,
    ylabel: str,
    title: str,
    note: str = "",
    reference: float = 0.0,
) -> list[Path]:
    """:func:`labelled_errorbars` side by side, one panel per ``(xlabel, series)`` of ``panels`` (shared
    y axis, point names and ``reference`` line), ``note`` under the figure."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(panels), figsize=(7.2 * len(panels), 6.2), sharey=True, squeeze=False)
        for ax, (xlabel, series) in zip(axes[0], panels):
            _labelled_errorbars_on(ax, series, names, xlabel, ylabel if ax is axes[0][0] else "", reference)
        if note:
            fig.text(0.01, 0.005, note, ha="left", va="bottom", fontsize=8.5, color="0.25")
        fig.suptitle(title)
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        return save(fig, stem)


def _labelled_errorbars_on(ax, series, names, xlabel, ylabel, reference=0.0, levels=None, marks=None) -> None:
    """The axes of :func:`labelled_errorbars`: every series, its point names, the reference, levels and marks."""
    ax.axhline(reference, color="0.3", linestyle="--", linewidth=1, zorder=1)
    for label, x in (marks or {}).items():
        ax.axvline(x, color="0.45", linestyle="-.", linewidth=1.1, label=label, zorder=1)
    for k, (label, (y, sd)) in enumerate((levels or {}).items()):
        color = f"C{(k + len(series)) % 10}"
        ax.axhline(y, color=color, linestyle=":", linewidth=1.2, label=label, zorder=2)
        if np.isfinite(sd):
            ax.axhspan(y - sd, y + sd, color=color, alpha=0.12, zorder=1)
    for s, (label, (x, y, sd)) in enumerate(series.items()):
        x, y, sd = as_floats(x), as_floats(y), np.nan_to_num(as_floats(sd))
        ax.errorbar(x, y, yerr=sd, fmt=MARKERS[s % len(MARKERS)], capsize=3, label=label, zorder=3)
        for name, xi, yi in zip(names, x, y):
            if np.isfinite(xi) and np.isfinite(yi):
                ax.annotate(name, (xi, yi), textcoords="offset points", xytext=(6, 4), fontsize=8.5, color="0.25")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(frameon=False)
