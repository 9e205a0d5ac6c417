"""What every figure shares: the style, the arms' colours, markers, helpers, and :func:`save`."""

from __future__ import annotations

import io
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
ARM_COLOURS = {
    "LM": "#7f7f7f",
    "SIPT": "#1f77b4",
    "oracle": "#d62728",
    "true surface": "#2ca02c",
    "surface (geodesic)": "#bcbd22",
}
#: Marker shapes, cycled per series.
MARKERS = ("o", "^", "s", "D", "v", "P", "X", "*")


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


def qualitative_colours(n: int):
    """A colour map of ``n`` well separated colours (tab10, then five more; tab20 beyond fifteen)."""
    from matplotlib.colors import ListedColormap

    colours = list(plt.get_cmap("tab10").colors) + ["#000000", "#1b9e77", "#a6cee3", "#fb9a99", "#e6ab02"]
    return ListedColormap(colours[: max(n, 1)] if n <= len(colours) else plt.get_cmap("tab20").colors)


def as_floats(values) -> np.ndarray:
    """``values`` as a float array, None as NaN."""
    return np.asarray([np.nan if v is None else v for v in values], dtype=float)


def dedup_legend(ax, *, sources=None, **kwargs) -> None:
    """One legend on ``ax`` with every distinct label of ``sources`` (default: ``ax`` itself)."""
    unique = {}
    for source in sources if sources is not None else [ax]:
        handles, labels = source.get_legend_handles_labels()
        unique.update({label: handle for label, handle in zip(labels, handles) if label not in unique})
    if unique:
        ax.legend(unique.values(), unique.keys(), frameon=False, **kwargs)
