"""Triangulated surfaces, sentence placement on them, on-surface distances and radius graphs.

* :mod:`~sipt_lab.manifolds.tilings`: :class:`Tiling` (unit equilateral triangles), the named
  surfaces :data:`SURFACES` / :func:`get_surface`;
* :mod:`~sipt_lab.manifolds.homology`: :func:`verify_tiling` -> :class:`TopologyReport` (gudhi
  Betti numbers over Z/2 and Z/3, Euler characteristic, edge-triangle incidences, boundary
  components, orientability, vertex links), :data:`EXPECTED`, :func:`check_tiling`;
* :mod:`~sipt_lab.manifolds.placement`: topic triples, the vertex -> topic search, entropy-flat
  sampling, :func:`place_sentences`;
* :mod:`~sipt_lab.manifolds.geodesic`: unfolding, exact distances below a radius
  (:func:`pairs_within`, k-d tree per patch), :func:`geodesic_matrix` beyond;
* :mod:`~sipt_lab.manifolds.radius_graphs`: :func:`radius_graph`, :func:`radius_for_degree`,
  :func:`corollary2_curve`;
* :mod:`~sipt_lab.viz.tiling_net`: :func:`plot_tiling`, :func:`plot_dataset` (flat nets, PNG).
"""

from sipt_lab.manifolds.geodesic import brute_force_pairs, geodesic_matrix, pairs_within, unfold_patch
from sipt_lab.manifolds.homology import EXPECTED, SurfaceInvariants, TopologyReport, check_tiling, verify_tiling
from sipt_lab.manifolds.placement import (
    Placement,
    TriplePools,
    entropy,
    entropy_buckets,
    entropy_flat_sample,
    map_topics_to_vertices,
    place_sentences,
    triangle_counts,
    triple_pools,
)
from sipt_lab.manifolds.radius_graphs import (
    corollary2_curve,
    radius_for_degree,
    radius_graph,
    uniform_points,
    vertex_labels,
)
from sipt_lab.manifolds.tilings import SURFACES, Tiling, get_surface

__all__ = [
    "EXPECTED",
    "SURFACES",
    "Placement",
    "SurfaceInvariants",
    "Tiling",
    "TopologyReport",
    "TriplePools",
    "brute_force_pairs",
    "check_tiling",
    "corollary2_curve",
    "entropy",
    "entropy_buckets",
    "entropy_flat_sample",
    "geodesic_matrix",
    "get_surface",
    "map_topics_to_vertices",
    "pairs_within",
    "place_sentences",
    "radius_for_degree",
    "radius_graph",
    "triangle_counts",
    "triple_pools",
    "unfold_patch",
    "uniform_points",
    "vertex_labels",
    "verify_tiling",
]
