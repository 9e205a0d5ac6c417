"""Proving a tiling's topology: homology with gudhi, plus the combinatorial checks homology misses.

:func:`verify_tiling` returns a :class:`TopologyReport`; :data:`EXPECTED` holds the invariants each
named surface must have, and :func:`check_tiling` raises when a tiling does not match its name.

Notes on the measurements (see ``docs`` of gudhi and the ecosystem survey):

* gudhi drops the top dimension unless ``persistence_dim_max=True``; we always set it.
* Over a field of characteristic 2 every closed surface has ``b2 = 1``; over ``Z/3`` a closed
  surface has ``b2 = 1`` iff it is orientable, and ``b1`` drops by one for the non-orientable ones
  (Klein bottle: ``[1, 2, 1]`` over Z/2 but ``[1, 1, 0]`` over Z/3; projective plane: ``[1, 1, 1]``
  vs ``[1, 0, 0]``). The report carries both, so a test can pin both.
* Betti numbers cannot tell a Möbius band from an annulus (both ``[1, 1, 0]``): the number of
  boundary components (1 vs 2) and orientability do.
"""

from __future__ import annotations

from dataclasses import dataclass

import gudhi
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from sipt_lab.manifolds.tilings import Tiling


@dataclass(frozen=True)
class SurfaceInvariants:
    """What a surface must satisfy: Euler characteristic, Betti numbers over Z/2 and Z/3, number of
    boundary components, orientability."""

    euler_characteristic: int
    betti_z2: tuple[int, int, int]
    betti_z3: tuple[int, int, int]
    boundary_components: int
    orientable: bool


#: The invariants of every named surface.
EXPECTED: dict[str, SurfaceInvariants] = {
    "plane": SurfaceInvariants(1, (1, 0, 0), (1, 0, 0), 1, True),
    "mobius": SurfaceInvariants(0, (1, 1, 0), (1, 1, 0), 1, False),
    "annulus": SurfaceInvariants(0, (1, 1, 0), (1, 1, 0), 2, True),
    "sphere": SurfaceInvariants(2, (1, 0, 1), (1, 0, 1), 0, True),
    "torus": SurfaceInvariants(0, (1, 2, 1), (1, 2, 1), 0, True),
    "klein": SurfaceInvariants(0, (1, 2, 1), (1, 1, 0), 0, False),
    "projective": SurfaceInvariants(1, (1, 1, 1), (1, 0, 0), 0, False),
}


@dataclass(frozen=True)
class TopologyReport:
    """Measured invariants of a tiling.

    Attributes:
        n_vertices, n_edges, n_triangles: the f-vector.
        euler_characteristic: ``V - E + F``.
        betti_z2, betti_z3: ``(b0, b1, b2)`` from gudhi over Z/2 and Z/3 (``persistence_dim_max=True``).
        edge_triangle_counts: sorted distinct numbers of triangles per edge (a surface: within {1, 2}).
        boundary_components: connected components of the edges that lie in exactly one triangle.
        orientable: whether the triangles can be oriented so every interior edge is traversed both ways.
        links_ok: every vertex link is one path (boundary vertex) or one cycle (interior vertex),
            i.e. the complex is a 2-manifold with boundary, not just edge-wise.
        connected: the triangles form one piece.
    """

    n_vertices: int
    n_edges: int
    n_triangles: int
    euler_characteristic: int
    betti_z2: tuple[int, ...]
    betti_z3: tuple[int, ...]
    edge_triangle_counts: tuple[int, ...]
    boundary_components: int
    orientable: bool
    links_ok: bool
    connected: bool

    @property
    def is_surface(self) -> bool:
        """A connected 2-manifold (with or without boundary)."""
        return self.connected and self.links_ok and set(self.edge_triangle_counts) <= {1, 2}

    def mismatches(self, expected: SurfaceInvariants) -> list[str]:
        """Human-readable differences from ``expected`` (empty when the tiling is that surface)."""
        problems = [] if self.is_surface else ["not a connected 2-manifold"]
        for name in ("euler_characteristic", "betti_z2", "betti_z3", "boundary_components", "orientable"):
            got, want = getattr(self, name), getattr(expected, name)
            if tuple(np.atleast_1d(got)) != tuple(np.atleast_1d(want)):
                problems.append(f"{name} is {got}, expected {want}")
        return problems


def verify_tiling(tiling: Tiling) -> TopologyReport:
    """Measure every invariant of ``tiling`` (see :class:`TopologyReport`)."""
    counts = tiling.edge_triangle_counts
    return TopologyReport(
        n_vertices=tiling.n_vertices,
        n_edges=len(tiling.edges),
        n_triangles=tiling.n_triangles,
        euler_characteristic=tiling.n_vertices - len(tiling.edges) + tiling.n_triangles,
        betti_z2=betti_numbers(tiling, 2),
        betti_z3=betti_numbers(tiling, 3),
        edge_triangle_counts=tuple(int(c) for c in np.unique(counts)),
        boundary_components=_boundary_components(tiling),
        orientable=_orientable(tiling) if counts.max() <= 2 else False,
        links_ok=_links_ok(tiling),
        connected=_n_components(tiling.n_vertices, tiling.edges) == 1,
    )


def check_tiling(tiling: Tiling) -> TopologyReport:
    """:func:`verify_tiling`, raising ValueError if ``tiling`` is not the surface its name says."""
    report = verify_tiling(tiling)
    problems = report.mismatches(EXPECTED[tiling.name])
    if problems:
        raise ValueError(f"tiling {tiling.name!r} is not a valid {tiling.name}: {'; '.join(problems)}")
    return report


def betti_numbers(tiling: Tiling, field: int) -> tuple[int, int, int]:
    """``(b0, b1, b2)`` of the complex over ``Z/field`` (gudhi, with the top dimension kept)."""
    tree = gudhi.SimplexTree()
    for triangle in tiling.triangles.tolist():
        tree.insert(triangle)
    tree.compute_persistence(homology_coeff_field=field, persistence_dim_max=True)
    betti = list(tree.betti_numbers()) + [0, 0, 0]
    return int(betti[0]), int(betti[1]), int(betti[2])


def _n_components(n_vertices: int, edges: np.ndarray) -> int:
    A = sp.coo_array((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n_vertices, n_vertices))
    return connected_components(A, directed=False)[0]


def _boundary_components(tiling: Tiling) -> int:
    boundary = tiling.edges[tiling.edge_triangle_counts == 1]
    if len(boundary) == 0:
        return 0
    on_boundary = np.unique(boundary)
    _, local = np.unique(boundary, return_inverse=True)
    return _n_components(on_boundary.size, local.reshape(-1, 2))


def _orientable(tiling: Tiling) -> bool:
    """Propagate an orientation over the dual graph; a conflict means non-orientable.

    Triangle ``t`` with sign ``s`` traverses its edge opposite slot ``k`` as ``(v[k+1], v[k+2])``
    (reversed if ``s = -1``); a neighbour must traverse the shared edge the other way.
    """
    sign = np.zeros(tiling.n_triangles, dtype=int)
    sign[0] = 1
    stack = [0]
    tri = tiling.triangles
    while stack:
        t = stack.pop()
        for k, u in enumerate(tiling.neighbors[t]):
            if u < 0:
                continue
            a, b = tri[t, (k + 1) % 3], tri[t, (k + 2) % 3]
            ia, ib = list(tri[u]).index(a), list(tri[u]).index(b)
            # in u, (a, b) is in cyclic order iff ib == ia + 1 mod 3
            same_direction = (ib - ia) % 3 == 1
            wanted = -sign[t] if same_direction else sign[t]
            if sign[u] == 0:
                sign[u] = wanted
                stack.append(u)
            elif sign[u] != wanted:
                return False
    return True


def _links_ok(tiling: Tiling) -> bool:
    """Every vertex link (opposite edges of its triangles) is a single path or a single cycle."""
    for v in range(tiling.n_vertices):
        rows = tiling.triangles[(tiling.triangles == v).any(axis=1)]
        link = rows[rows != v].reshape(-1, 2)
        nodes, local = np.unique(link, return_inverse=True)
        local = local.reshape(-1, 2)
        degree = np.bincount(local.ravel(), minlength=nodes.size)
        if degree.max() > 2 or _n_components(nodes.size, local) != 1:
            return False
        if len(np.unique(np.sort(link, axis=1), axis=0)) != len(link):
            return False  # two triangles on the same three vertices
    return True
