"""PLANE, MOBIUS, SPHERE, TORUS (and KLEIN, PROJECTIVE): radius graphs over sentences on surfaces.

The paper's Methods ("PLANE, MÖBIUS, SPHERE, & TORUS Graphs"), step by step:

1. a triangulated surface (:data:`sipt_lab.manifolds.SURFACES`, topology proven by
   :func:`~sipt_lab.manifolds.check_tiling`);
2. a distinct topic per vertex such that every triangle's topic triple holds enough sentences whose
   top-3 topics are exactly that triple (:func:`~sipt_lab.manifolds.map_topics_to_vertices`);
3. the same number of sentences on every triangle (sizes differ by at most one), drawn so their
   entropies are as flat as the pool allows (:func:`~sipt_lab.manifolds.entropy_flat_sample`),
   each at its renormalised top-3 probabilities; the held-out sentences the same way from the
   sentences left over whose article has no sentence on a node;
4. an edge iff the geodesic distance on the surface (unit equilateral triangles) is below ``r``,
   never a self-loop (:func:`~sipt_lab.manifolds.radius_graph`).

The FT label is the sentence's most probable topic = the topic of the vertex with the largest
barycentric coordinate, so local consistency is high and grows toward 1 as ``n`` grows and ``r``
shrinks (Corollary 2; :func:`~sipt_lab.manifolds.corollary2_curve`).

Defaults, measured on the embedded corpus (36,226 sentences, English stop words dropped, batch LDA):

* **20 topics** (``default_topics``). Sentences per top-3 triple thin out fast as topics grow
  (top-3 mass > 2/3, cached fits): triples holding >= 25 sentences: 220 of 220 at 12 topics, 415 of
  1,140 at 20, 302 of 2,300 at 25, 253 at 30, 83 at 50 and 20 of 161,700 at 100 (the paper's
  setting: the default corpus cannot carry it). The highest threshold for which a vertex -> topic
  map exists (plane / mobius / sphere / torus / klein / projective) is
  150 / 100 / 60 / 40 / 40 / 60 sentences at 20 topics, 150 / 80 / 40 / 25 / 25 / 30 at 25,
  150 / 50 / 25 / 15 / 5 / 20 at 50 and 80 / 25 / 10 / 5 / 5 / 10 at 100. At 20 topics every
  family's default size fits with room for the entropy flattening, and all six families share one
  cached LDA fit.
* **min_per_triangle = 40**: a triangle's triple must hold at least
  ``max(40, its pre-training + held-out share)`` sentences, so the entropy-flat draw has choice.
* **top-3 mass > 2/3** (the original's filter): a sentence whose three best topics carry little of
  its mass is badly described by a point on their simplex. At 20 topics it keeps 98.4% of the
  sentences, so it costs nothing here.
* **nodes**: 100 on every surface. The original used 100 for the plane and about 300 for the
  others; a pre-training run fits a graph in a number of epochs, not steps, so 300 nodes need about
  3x the training of 100 for the same fit, which the CPU time targets of ``sipt-lab simulate`` do
  not allow (``--nodes 300`` restores the original's size).
* **r** from a mean degree of 10 (:func:`~sipt_lab.manifolds.radius_for_degree`:
  ``r = sqrt(10 * area / (pi * (n - 1)))``), so the default graphs are connected enough for the
  pre-training samplers and ``r`` shrinks with ``n`` as Corollary 2 asks.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from sipt_lab.data.corpus import Corpus, sentence_groups
from sipt_lab.data.topics import TopicAssignment
from sipt_lab.manifolds import (
    check_tiling,
    get_surface,
    map_topics_to_vertices,
    place_sentences,
    radius_for_degree,
    radius_graph,
    triangle_counts,
    triple_pools,
)
from sipt_lab.synthetic.dataset import SyntheticDataset
from sipt_lab.synthetic.spec import Family, GraphSpec

DEFAULT_TOPICS = 20
MIN_PER_TRIANGLE = 40
MIN_TOP3_MASS = 2 / 3
MEAN_DEGREE = 10.0


def build_manifold(
    surface: str,
    spec: GraphSpec,
    corpus: Corpus,
    topics: TopicAssignment,
    rng: np.random.Generator,
    *,
    min_per_triangle: int = MIN_PER_TRIANGLE,
    min_top3_mass: float = MIN_TOP3_MASS,
    mean_degree: float = MEAN_DEGREE,
    radius: float | None = None,
) -> SyntheticDataset:
    """Build the ``surface`` dataset: ``spec.n_nodes`` sentences on the surface's tiling and their
    radius graph, plus ``spec.n_heldout`` held-out sentences placed the same way.

    ``radius=None`` takes ``r`` from ``mean_degree`` (:func:`~sipt_lab.manifolds.radius_for_degree`).
    Raises :class:`~sipt_lab.core.errors.SiptError` when the corpus cannot fill the tiling.
    """
    tiling = get_surface(surface)
    report = check_tiling(tiling)
    counts = triangle_counts(spec.n_nodes, tiling.n_triangles, rng)
    heldout_counts = triangle_counts(spec.n_heldout, tiling.n_triangles, rng)
    min_count = max(int(min_per_triangle), int((counts + heldout_counts).max()))
    pools = triple_pools(topics, min_top3_mass)
    vertex_topics = map_topics_to_vertices(tiling, pools, min_count, rng, family=surface)
    placed = place_sentences(
        tiling,
        vertex_topics,
        pools,
        topics,
        counts,
        heldout_counts,
        rng,
        groups=sentence_groups(corpus),
        family=surface,
    )
    r = radius_for_degree(tiling, spec.n_nodes, mean_degree) if radius is None else float(radius)
    labels = topics.labels[placed.sentences]
    corner_topics = vertex_topics[tiling.triangles]
    return SyntheticDataset(
        family=surface,
        sentences=[corpus.sentences[i] for i in placed.sentences],
        graph=radius_graph(tiling, placed.triangles, placed.bary, r),
        labels=labels,
        heldout_sentences=[corpus.sentences[i] for i in placed.heldout_sentences],
        heldout_labels=topics.labels[placed.heldout_sentences],
        params={
            "surface": surface,
            "n_vertices": tiling.n_vertices,
            "n_triangles": tiling.n_triangles,
            "euler_characteristic": report.euler_characteristic,
            "betti_z2": list(report.betti_z2),
            "boundary_components": report.boundary_components,
            "orientable": report.orientable,
            "vertex_topics": vertex_topics.tolist(),
            "radius": r,
            "mean_degree_target": mean_degree if radius is None else None,
            "min_per_triangle": min_count,
            "min_top3_mass": min_top3_mass,
            "valid_triples": int((pools.counts >= min_count).sum()),
        },
        tables={
            "triangles": _table(
                triangle=np.arange(tiling.n_triangles),
                v0=tiling.triangles[:, 0],
                v1=tiling.triangles[:, 1],
                v2=tiling.triangles[:, 2],
                topic0=corner_topics[:, 0],
                topic1=corner_topics[:, 1],
                topic2=corner_topics[:, 2],
                pool_size=placed.pool_sizes,
            ),
            "points": _table(
                node=np.arange(placed.sentences.size),
                triangle=placed.triangles,
                b0=placed.bary[:, 0],
                b1=placed.bary[:, 1],
                b2=placed.bary[:, 2],
                corpus_index=placed.sentences,
                label=labels,
            ),
        },
    )


def _table(**columns: np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
    """``(names, rows)`` with rows an object array, so ints stay ints and floats stay floats."""
    rows = np.empty((len(next(iter(columns.values()))), len(columns)), dtype=object)
    for j, values in enumerate(columns.values()):
        rows[:, j] = np.asarray(values).tolist()
    return tuple(columns), rows


_SURFACES = {
    "plane": (100, "radius graph on a disk of 2 triangles (4 topic vertices)"),
    "mobius": (100, "radius graph on a Möbius band of 5 triangles (5 topic vertices)"),
    "sphere": (100, "radius graph on an octahedron, a sphere (6 topic vertices, 8 triangles)"),
    "torus": (100, "radius graph on the 7-vertex torus (7 topic vertices, 14 triangles)"),
    "klein": (100, "radius graph on a Klein bottle (9 topic vertices, 18 triangles)"),
    "projective": (100, "radius graph on the 6-vertex projective plane (6 topic vertices, 10 triangles)"),
}

FAMILIES = tuple(
    Family(
        name, partial(build_manifold, name), default_nodes=nodes, default_topics=DEFAULT_TOPICS, description=description
    )
    for name, (nodes, description) in _SURFACES.items()
)
