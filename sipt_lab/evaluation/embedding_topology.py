"""The shape of a point cloud: Rips persistence on k-nearest-neighbour graph geodesics.

In a 64-dimensional embedding Euclidean distances concentrate: a point's nearest neighbour is barely
closer than a typical point, so Rips persistence of the raw distances calls almost every point its
own component and sees nothing else. The standard remedy (Isomap, Tenenbaum et al. 2000; the usual
first step of topological data analysis on learned representations) measures distance *along the
data*, which only local neighbourhoods can be trusted for:

1. **k-NN graph**: every point joined to its :data:`KNN_NEIGHBOURS` nearest points (weight = their
   distance), symmetrised (an edge when either end is among the other's nearest).
2. **Graph geodesics** (:func:`knn_geodesic_distances`): shortest-path lengths along that graph
   (``scipy.sparse.csgraph``); pairs in different components get :data:`UNREACHABLE_FACTOR` x the
   largest finite length, far beyond any cutoff below, so a component never merges.
3. **At most** ``max_points`` points, by farthest-point sampling in that metric
   (:func:`farthest_points`, from point 0): an evenly spread subsample, since the holes of a clumpy
   one show up as spurious loops.
4. **Scale** ``eps``: the median, over the kept points, of the geodesic distance to the
   :data:`KNN_NEIGHBOURS`-th nearest other kept point (the graph's neighbourhood radius; capped at the
   largest finite distance).
5. **Rips persistence** (gudhi, flag complex to dimension 3 so that H0-H2 classes can die) up to the
   cutoff ``L = RIPS_CUTOFF * eps``.
6. **Rule**: a bar is *long-lived* when its lifetime, with death capped at ``L`` (a bar alive at ``L``
   lives ``L - birth``), is at least :data:`LONG_BAR_FRACTION` ``* L`` = ``eps``: it outlives the
   neighbourhood scale. The long-lived bars per dimension estimate the Betti numbers ``b0, b1, b2``.

The rule recovers (1, 1, 0) for a circle, (1, 2, 1) for a torus and (1, 0, 1) for a sphere from
evenly spread samples (``tests/unit/test_embedding_topology.py``: 60-100 points on a circle, a jittered
12 x 12 grid on a flat torus, 100 of 400 points on a sphere; the 300-point checks of
:func:`sipt_lab.studies.paper.figures.topology`). A torus's void is the weakest feature: it outlives
``eps`` by a margin only from about 150-200 evenly spread points. From 100 *independent uniform*
points on a surface the rule is not reliable: the sample's holes give loops that live about ``eps``
too. A cloud without low-dimensional shape (Gaussian noise in 64 dimensions) gives one big component
plus a few points farther than ``eps`` from all others, and no loops or voids.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

KNN_NEIGHBOURS = 10
UNREACHABLE_FACTOR = 10.0
RIPS_CUTOFF = 3.0
LONG_BAR_FRACTION = 1.0 / 3.0
MAX_POINTS = 300


@dataclass
class RipsBetti:
    """Attributes:
    diagram: ``(b, 3)`` rows ``(dimension, birth / L, death / L)`` for dimensions 0-2 (``inf`` for
        bars alive at ``L``).
    counts: long-lived bars per dimension ``(b0, b1, b2)``.
    cutoff: ``L``, in the units of the input distances.
    scale: ``eps`` (``L / RIPS_CUTOFF``).
    kept: ``(m,)`` indices of the points the Rips complex was built on.
    within_cutoff: fraction of the kept points' pairwise geodesic distances ``<= L``.
    """

    diagram: np.ndarray
    counts: tuple[int, int, int]
    cutoff: float
    scale: float
    kept: np.ndarray
    within_cutoff: float

    def long_lived(self) -> np.ndarray:
        """``(b,)`` bool, per row of :attr:`diagram`: lifetime (death capped at ``L``) >= the threshold."""
        return _long_lived(self.diagram)


def knn_geodesic_distances(distances: np.ndarray, k: int = KNN_NEIGHBOURS) -> np.ndarray:
    """``(n, n)`` shortest-path lengths along the symmetrised ``k``-NN graph of ``distances`` ``(n, n)``.

    Pairs in different components get :data:`UNREACHABLE_FACTOR` x the largest finite length.
    """
    geodesic = _graph_geodesics(distances, k)
    finite = np.isfinite(geodesic)
    geodesic[~finite] = UNREACHABLE_FACTOR * geodesic[finite].max()
    return geodesic


def _graph_geodesics(distances: np.ndarray, k: int) -> np.ndarray:
    """:func:`knn_geodesic_distances` with ``inf`` between components."""
    distances = np.asarray(distances, dtype=float)
    n = len(distances)
    if n < 2:
        return np.zeros((n, n))
    k = min(k, n - 1)
    others = distances + np.diag(np.full(n, np.inf))
    neighbours = np.argpartition(others, k - 1, axis=1)[:, :k]
    rows = np.repeat(np.arange(n), k)
    cols = neighbours.ravel()
    # coincident points must keep their edge in the sparse graph: make it tiny, not zero, then 0 again
    tiny = np.finfo(float).tiny
    graph = sp.csr_array((np.maximum(distances[rows, cols], tiny), (rows, cols)), shape=(n, n))
    geodesic = shortest_path(graph.maximum(graph.T), directed=False)
    geodesic[geodesic <= n * tiny] = 0.0
    return geodesic


def farthest_points(distances: np.ndarray, m: int) -> np.ndarray:
    """``(min(m, n),)`` indices: point 0, then repeatedly the point farthest from those chosen."""
    distances = np.asarray(distances, dtype=float)
    m = min(m, len(distances))
    chosen = [0]
    nearest = distances[0].copy()
    for _ in range(m - 1):
        chosen.append(int(np.argmax(nearest)))
        nearest = np.minimum(nearest, distances[chosen[-1]])
    return np.array(chosen, dtype=np.int64)


def rips_betti(distances: np.ndarray, *, k: int = KNN_NEIGHBOURS, max_points: int = MAX_POINTS) -> RipsBetti:
    """Long-lived Rips bars per dimension of the points with pairwise ``distances`` ``(n, n)``
    (Euclidean, on-surface, ...), by the module's rule on their ``k``-NN graph geodesics."""
    import gudhi

    geodesic = _graph_geodesics(distances, k)
    kept = np.arange(len(geodesic)) if len(geodesic) <= max_points else np.sort(farthest_points(geodesic, max_points))
    geodesic = geodesic[np.ix_(kept, kept)]
    finite = np.isfinite(geodesic)
    largest = float(geodesic[finite].max())
    scale = min(_neighbourhood_radius(geodesic, k), largest) or largest or 1.0  # 1.0: all points coincide
    cutoff = RIPS_CUTOFF * scale
    geodesic[~finite] = UNREACHABLE_FACTOR * max(largest, cutoff)
    tree = gudhi.RipsComplex(distance_matrix=geodesic, max_edge_length=cutoff).create_simplex_tree(max_dimension=1)
    tree.collapse_edges()  # same persistence, far fewer simplices
    tree.expansion(3)
    tree.compute_persistence(persistence_dim_max=True)
    rows = []
    for dim in range(3):
        bars = tree.persistence_intervals_in_dimension(dim).reshape(-1, 2) / cutoff
        bars[bars[:, 1] > 1.0, 1] = np.inf
        rows += [(dim, birth, death) for birth, death in bars]
    diagram = np.array(rows, dtype=float).reshape(-1, 3)
    long = _long_lived(diagram)
    counts = tuple(int(np.sum(long & (diagram[:, 0] == dim))) for dim in range(3))
    pairs = geodesic[np.triu_indices(len(geodesic), 1)]
    within = float(np.mean(pairs <= cutoff)) if pairs.size else 1.0
    return RipsBetti(diagram, counts, cutoff, scale, kept, within)


def _neighbourhood_radius(geodesic: np.ndarray, k: int) -> float:
    """Median distance to the ``k``-th nearest other point (``inf`` where that lies in another component)."""
    n = len(geodesic)
    return float(np.median(np.sort(geodesic, axis=1)[:, min(k, n - 1)])) if n > 1 else 0.0


def _long_lived(diagram: np.ndarray) -> np.ndarray:
    """``(b,)`` bool: lifetime in units of ``L``, death capped at ``L``, >= :data:`LONG_BAR_FRACTION`."""
    return np.minimum(diagram[:, 2], 1.0) - diagram[:, 1] >= LONG_BAR_FRACTION
