"""Pictures of a tiling as a flat net of unit triangles, with its points coloured by label.

The net is built greedily: breadth-first over the dual graph, each triangle is unfolded next to an
already drawn neighbour whose far side is still free (every unfolding lands on the triangular
lattice, so "free" is a lattice-cell lookup); a triangle with no free spot starts a new piece to
the right. Every corner is labelled with its vertex id (and topic, when given), so the gluing of
the cut edges can be read off: edges with the same two vertex ids are glued. Boundary edges of the
surface are drawn thick, cut edges dashed.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sipt_lab.core.fileio import write_bytes_atomic  # noqa: E402
from sipt_lab.manifolds.geodesic import FRAME  # noqa: E402
from sipt_lab.manifolds.tilings import HEIGHT, Tiling, get_surface  # noqa: E402


def flat_net(tiling: Tiling) -> np.ndarray:
    """``(F, 3, 2)`` plane positions of every triangle's vertex slots in a non-overlapping net."""
    placed = np.full((tiling.n_triangles, 3, 2), np.nan)
    occupied: set[tuple[int, int]] = set()
    offset = 0.0
    for start in range(tiling.n_triangles):
        if not np.isnan(placed[start, 0, 0]):
            continue
        _place(placed, occupied, start, FRAME + [offset, 0.0])
        queue = deque([start])
        while queue:
            t = queue.popleft()
            for k, u in enumerate(tiling.neighbors[t]):
                if u < 0 or not np.isnan(placed[u, 0, 0]):
                    continue
                V = _unfold_neighbor(tiling, placed[t], t, k, u)
                if _cell(V) not in occupied:
                    _place(placed, occupied, u, V)
                    queue.append(u)
        offset = np.nanmax(placed[..., 0]) + 1.0
    return placed


def plot_tiling(
    tiling: Tiling,
    path: str | Path,
    tri: np.ndarray | None = None,
    bary: np.ndarray | None = None,
    labels: np.ndarray | None = None,
    vertex_topics: np.ndarray | None = None,
    title: str | None = None,
) -> Path:
    """Draw ``tiling``'s net and (optionally) points ``(tri (n,), bary (n, 3))`` coloured by
    ``labels (n,)`` (default: the vertex with the largest coordinate) into the PNG ``path``."""
    net = flat_net(tiling)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * np.ptp(net[..., 0]) + 2), max(4.0, 1.3 * np.ptp(net[..., 1]) + 2)))
    boundary = {tuple(e) for e in tiling.edges[tiling.edge_triangle_counts == 1]}
    drawn_pairs = _net_edges(tiling, net)
    for t in range(tiling.n_triangles):
        for k in range(3):
            a, b = tiling.triangles[t, (k + 1) % 3], tiling.triangles[t, (k + 2) % 3]
            P, Q = net[t, (k + 1) % 3], net[t, (k + 2) % 3]
            if tuple(sorted((a, b))) in boundary:
                style = dict(color="black", lw=2.5)
            elif (t, k) in drawn_pairs:
                style = dict(color="0.6", lw=0.8)
            else:
                style = dict(color="tab:red", lw=1.2, ls="--")
            ax.plot([P[0], Q[0]], [P[1], Q[1]], **style, zorder=1)
        ax.text(*net[t].mean(axis=0), f"t{t}", ha="center", va="center", fontsize=7, color="0.45", zorder=2)
    # one label per corner position of the net (several triangles meet at each)
    corners = {tuple(np.round(p, 6)): v for p, v in zip(net.reshape(-1, 2), tiling.triangles.ravel())}
    for (x, y), v in corners.items():
        name = f"{v}" if vertex_topics is None else f"{v}:T{vertex_topics[v]}"
        ax.text(
            x,
            y,
            name,
            ha="center",
            va="center",
            fontsize=7,
            fontweight="bold",
            zorder=4,
            bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="0.5", lw=0.5, alpha=0.9),
        )
    if tri is not None:
        tri = np.asarray(tri, dtype=np.int64)
        bary = np.asarray(bary, dtype=np.float64)
        labels = tiling.triangles[tri, bary.argmax(axis=1)] if labels is None else np.asarray(labels)
        xy = np.einsum("nk,nkd->nd", bary, net[tri])
        classes, codes = np.unique(labels, return_inverse=True)
        cmap = plt.get_cmap("tab10" if classes.size <= 10 else "tab20")
        ax.scatter(xy[:, 0], xy[:, 1], c=[cmap(c % cmap.N) for c in codes], s=8, zorder=3, linewidths=0)
        handles = [
            plt.Line2D([], [], ls="", marker="o", color=cmap(i % cmap.N), label=f"label {c}")
            for i, c in enumerate(classes)
        ]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    ax.set_title(
        title
        or f"{tiling.name}: {tiling.n_vertices} vertices, {tiling.n_triangles} triangles "
        "(same vertex ids = glued; dashed = cut, thick = boundary)",
        fontsize=9,
    )
    ax.set_aspect("equal")
    ax.axis("off")
    path = Path(path)
    fig.savefig(path.with_suffix(".tmp.png"), dpi=130, bbox_inches="tight")
    plt.close(fig)
    write_bytes_atomic(path, path.with_suffix(".tmp.png").read_bytes())
    path.with_suffix(".tmp.png").unlink()
    return path


def plot_dataset(dataset, path: str | Path) -> Path:
    """:func:`plot_tiling` of a manifold family's :class:`~sipt_lab.synthetic.SyntheticDataset`
    (its ``points`` table and ``params['surface']``, points coloured by FT label)."""
    columns, rows = dataset.tables["points"]
    col = {name: j for j, name in enumerate(columns)}
    tri = rows[:, col["triangle"]].astype(np.int64)
    bary = rows[:, [col["b0"], col["b1"], col["b2"]]].astype(np.float64)
    surface = dataset.params["surface"]
    return plot_tiling(
        get_surface(surface),
        path,
        tri,
        bary,
        dataset.labels,
        vertex_topics=np.asarray(dataset.params["vertex_topics"]),
        title=f"{surface}: {dataset.n_nodes} sentences, {dataset.graph.n_edges} edges, "
        f"r = {dataset.params['radius']:.3f}, LC = {dataset.local_consistency:.3f} (vertex:Topic)",
    )


def _unfold_neighbor(tiling: Tiling, V: np.ndarray, t: int, k: int, u: int) -> np.ndarray:
    slots = list(tiling.triangles[u])
    ia = slots.index(tiling.triangles[t, (k + 1) % 3])
    ib = slots.index(tiling.triangles[t, (k + 2) % 3])
    W = np.empty((3, 2))
    W[ia], W[ib], W[3 - ia - ib] = V[(k + 1) % 3], V[(k + 2) % 3], V[(k + 1) % 3] + V[(k + 2) % 3] - V[k]
    return W


def _cell(V: np.ndarray) -> tuple[int, int]:
    """Lattice cell of a unit triangle: its centroid, rounded on a grid finer than any two centroids."""
    c = V.mean(axis=0)
    return int(round(c[0] * 2)), int(round(c[1] / HEIGHT * 3))


def _place(placed, occupied, t, V) -> None:
    placed[t] = V
    occupied.add(_cell(V))


def _net_edges(tiling: Tiling, net: np.ndarray) -> set[tuple[int, int]]:
    """``(t, k)`` for every edge that is glued *inside* the net (both sides drawn against each other)."""
    inside = set()
    for t in range(tiling.n_triangles):
        for k, u in enumerate(tiling.neighbors[t]):
            if u >= 0 and np.allclose(_unfold_neighbor(tiling, net[t], t, k, u), net[u]):
                inside.add((t, k))
    return inside
