"""Triangulated surfaces: the simplicial tilings the manifold graph families live on.

A :class:`Tiling` is a list of triangles over vertex ids ``0..V-1``; every triangle is read as an
equilateral triangle of side 1 (so all geometry is intrinsic: distances are lengths on the glued
triangles, see :mod:`sipt_lab.manifolds.geodesic`). Each vertex carries one topic in the graph
families, so small tilings need few topics; the ones here are the smallest natural ones:

============  =========  ========  ==============================================================
surface       vertices   triangles  construction
============  =========  ========  ==============================================================
plane         4          2          a rhombus of two triangles (a disk; the original code's PLANE)
mobius        5          5          the cyclic strip ``(i, i+1, i+2) mod 5`` (the original: mod 7)
annulus       6          6          the cyclic strip mod 6 (same Betti numbers as the Möbius band)
sphere        6          8          the octahedron
torus         7          14         the 7-vertex (Möbius) torus: the triangular lattice mod a
                                    sublattice of index 7 (every vertex pair is an edge)
klein         9          18         the triangular lattice mod a translation and a glide reflection
projective    6          10         the 6-vertex real projective plane (half an icosahedron)
============  =========  ========  ==============================================================

All of them have vertex angle sums <= 2*pi inside and <= pi on the boundary, so shortest paths
never bend at a vertex (see :func:`Tiling.vertex_degrees`); :mod:`~sipt_lab.manifolds.geodesic`
relies on that for exactness. :mod:`sipt_lab.manifolds.homology` proves each tiling's topology.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, partial

import numpy as np

from sipt_lab.core.errors import SiptError

#: Height of the unit equilateral triangle.
HEIGHT = float(np.sqrt(3.0) / 2.0)
#: Area of the unit equilateral triangle.
TRIANGLE_AREA = float(np.sqrt(3.0) / 4.0)


@dataclass(frozen=True, eq=False)
class Tiling:
    """A pure 2-dimensional simplicial complex whose triangles are unit equilateral triangles.

    Attributes:
        name: the surface's name (``"torus"``, ...).
        triangles: ``(F, 3)`` int64 vertex ids ``0..V-1``; the column order is the triangle's
            vertex order (barycentric coordinate ``k`` belongs to ``triangles[t, k]``).
    """

    name: str
    triangles: np.ndarray

    def __post_init__(self):
        triangles = np.ascontiguousarray(self.triangles, dtype=np.int64)
        if triangles.ndim != 2 or triangles.shape[1] != 3 or triangles.shape[0] == 0:
            raise ValueError(f"triangles must be (F, 3) with F >= 1, got shape {triangles.shape}")
        if (np.sort(triangles, axis=1)[:, 1:] == np.sort(triangles, axis=1)[:, :-1]).any():
            raise ValueError("a triangle repeats a vertex")
        if np.unique(triangles).size != triangles.max() + 1 or triangles.min() != 0:
            raise ValueError("vertex ids must be exactly 0..V-1")
        triangles.flags.writeable = False
        object.__setattr__(self, "triangles", triangles)

    @property
    def n_vertices(self) -> int:
        return int(self.triangles.max()) + 1

    @property
    def n_triangles(self) -> int:
        return self.triangles.shape[0]

    @property
    def area(self) -> float:
        """Total area (unit triangles)."""
        return self.n_triangles * TRIANGLE_AREA

    @cached_property
    def edges(self) -> np.ndarray:
        """``(E, 2)`` int64 sorted vertex pairs of every edge, lexicographically sorted."""
        return np.unique(np.sort(self._triangle_edges.reshape(-1, 2), axis=1), axis=0)

    @cached_property
    def edge_triangle_counts(self) -> np.ndarray:
        """``(E,)`` number of triangles containing each edge of :attr:`edges`."""
        return np.bincount(self._edge_ids.ravel(), minlength=len(self.edges))

    @cached_property
    def neighbors(self) -> np.ndarray:
        """``(F, 3)`` int64: the triangle across the edge *opposite* vertex slot ``k`` (-1 on the boundary).

        Raises ValueError if an edge is in more than two triangles (not a surface).
        """
        if (self.edge_triangle_counts > 2).any():
            raise ValueError(f"{self.name}: an edge lies in more than two triangles")
        flat = self._edge_ids.ravel()
        order = np.argsort(flat, kind="stable")
        first = np.full(len(self.edges), -1)
        second = np.full(len(self.edges), -1)
        sorted_edges = flat[order]
        is_first = np.r_[True, sorted_edges[1:] != sorted_edges[:-1]]
        first[sorted_edges[is_first]] = order[is_first]
        second[sorted_edges[~is_first]] = order[~is_first]
        # slot index s = 3 * t + k; the partner of s is the other occurrence of its edge
        partner = np.where(first[flat] == np.arange(flat.size), second[flat], first[flat])
        return np.where(partner >= 0, partner // 3, -1).reshape(-1, 3)

    def vertex_degrees(self) -> np.ndarray:
        """``(V,)`` number of triangles at each vertex (its angle sum is ``degree * pi / 3``)."""
        return np.bincount(self.triangles.ravel(), minlength=self.n_vertices)

    @cached_property
    def _triangle_edges(self) -> np.ndarray:
        """``(F, 3, 2)``: the edge opposite each vertex slot (slots ``k+1`` and ``k+2``)."""
        t = self.triangles
        return np.stack([t[:, [1, 2]], t[:, [2, 0]], t[:, [0, 1]]], axis=1)

    @cached_property
    def _edge_ids(self) -> np.ndarray:
        """``(F, 3)`` index into :attr:`edges` of the edge opposite each slot."""
        keys = np.sort(self._triangle_edges, axis=2)
        n = self.n_vertices
        flat = keys[..., 0] * n + keys[..., 1]
        return np.searchsorted(self.edges[:, 0] * n + self.edges[:, 1], flat)


def plane() -> Tiling:
    """Two triangles sharing an edge (a rhombus; 4 vertices): a disk."""
    return Tiling("plane", np.array([[0, 1, 2], [1, 3, 2]]))


def cyclic_strip(n: int, name: str | None = None) -> Tiling:
    """Triangles ``(i, i+1, i+2) mod n``: a Möbius band for odd ``n >= 5``, an annulus for even ``n >= 6``."""
    if n < 5:
        raise ValueError(f"a cyclic strip needs n >= 5 vertices, got {n}")
    i = np.arange(n)
    default = "mobius" if n % 2 else "annulus"
    return Tiling(name or default, np.stack([i, (i + 1) % n, (i + 2) % n], axis=1))


def octahedron() -> Tiling:
    """The octahedron (6 vertices, 8 triangles): a sphere."""
    ring = np.arange(1, 5)
    nxt = ring % 4 + 1
    top = np.stack([np.zeros(4, int), ring, nxt], axis=1)
    bottom = np.stack([np.full(4, 5), nxt, ring], axis=1)
    return Tiling("sphere", np.vstack([top, bottom]))


def lattice_quotient(m: int, n: int, shift: int = 0, glide: bool = False, name: str = "torus") -> Tiling:
    """The triangular lattice modulo ``(i, j) ~ (i + m, j)`` and a second generator ``g``.

    Lattice point ``(i, j)`` sits at ``i * (1, 0) + j * (1/2, sqrt(3)/2)``; the fundamental domain
    ``0 <= i < m, 0 <= j < n`` holds ``2 m n`` triangles. ``g(i, j) = (i + shift, j + n)`` gives a
    torus; with ``glide`` it is the glide reflection ``(i, j) -> (shift - i - j, j + n)`` (reflection
    in a vertical line, which maps the lattice's triangles onto triangles) and gives a Klein bottle.
    The result is a valid simplicial complex only when ``m, n`` are big enough; the topology tests
    check it. Triangle order and vertex order follow :func:`lattice_positions`.
    """
    corners = _lattice_corners(m, n)
    i, j = corners[..., 0], corners[..., 1]
    wrapped = j == n  # the fundamental domain's top row: bring it back with g^-1
    j = np.where(wrapped, 0, j)
    i = np.where(wrapped, shift - i if glide else i - shift, i)
    labels = np.mod(i, m) + m * j
    _, dense = np.unique(labels, return_inverse=True)
    return Tiling(name, dense.reshape(-1, 3))


def lattice_positions(m: int, n: int) -> np.ndarray:
    """``(2 m n, 3, 2)`` float plane positions of the triangles of :func:`lattice_quotient` (same order)."""
    corners = _lattice_corners(m, n).astype(np.float64)
    return np.stack([corners[..., 0] + corners[..., 1] / 2, corners[..., 1] * HEIGHT], axis=-1)


def _lattice_corners(m: int, n: int) -> np.ndarray:
    """``(2 m n, 3, 2)`` int lattice coordinates of the up and down triangle of every cell."""
    jj, ii = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    ii, jj = ii.ravel(), jj.ravel()
    up = np.stack([np.stack([ii, jj], -1), np.stack([ii + 1, jj], -1), np.stack([ii, jj + 1], -1)], axis=1)
    down = np.stack([np.stack([ii + 1, jj], -1), np.stack([ii + 1, jj + 1], -1), np.stack([ii, jj + 1], -1)], axis=1)
    return np.stack([up, down], axis=1).reshape(-1, 3, 2)


def projective_plane() -> Tiling:
    """The 6-vertex real projective plane (10 triangles; the icosahedron modulo the antipodal map)."""
    return Tiling(
        "projective",
        np.array(
            [
                [0, 1, 2],
                [0, 2, 3],
                [0, 3, 4],
                [0, 4, 5],
                [0, 5, 1],
                [1, 2, 4],
                [2, 3, 5],
                [3, 4, 1],
                [4, 5, 2],
                [5, 1, 3],
            ]
        ),
    )


#: The tiling of every named surface (the manifold graph families use these).
SURFACES: dict[str, Callable[[], Tiling]] = {
    "plane": plane,
    "mobius": partial(cyclic_strip, 5),
    "annulus": partial(cyclic_strip, 6),
    "sphere": octahedron,
    "torus": partial(lattice_quotient, 7, 1, shift=4),
    "klein": partial(lattice_quotient, 3, 3, glide=True, name="klein"),
    "projective": projective_plane,
}


def get_surface(name: str) -> Tiling:
    """The tiling of surface ``name`` (one of :data:`SURFACES`)."""
    try:
        return SURFACES[name]()
    except KeyError:
        raise SiptError(f"unknown surface {name!r}; choose one of: {', '.join(SURFACES)}") from None
