"""Theorem 1's radius view of an embedding: does a radius recover ``G_PT``, and how does the r-NN
predictor at that radius classify?

The paper calls a structure-inducing loss *valid* when, at its optimum, some radius ``r`` recovers
the PT graph from the embeddings: ``i ~ j`` in ``G_PT`` iff ``‖z_i − z_j‖ < r``. Its proof of
Theorem 1 then classifies with the r-NN predictor at that radius, which is right exactly as often as
a node's label agrees with the plurality of its ``G_PT`` neighbours: local consistency.

* :func:`radius_recovery` compares the radius graph ``{i ~ j : ‖z_i − z_j‖ <= r}`` (Euclidean) with
  ``G_PT``'s edges and finds the radius of best F1, exactly, from one sort of all pairwise distances
  (``O(n² log n)`` time, ``O(n²)`` memory, so at most ``MAX_RECOVERY_NODES`` nodes). F1 = 1 is the
  validity condition.
* :func:`radius_nn_accuracy` is the leave-one-out r-NN predictor: the plurality label of the other
  samples within ``r``. That is local consistency over the radius graph, so it is computed as such
  (ties split as ``sipt_lab.graphs.consistency``'s ``"split"`` policy: ``1/k`` credit among ``k`` tied
  labels), and a sample with no other sample within ``r`` is left out, as LC leaves out isolated
  nodes; the fraction of samples kept is reported as ``coverage``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree
from scipy.spatial.distance import pdist

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.consistency import local_consistency_per_node
from sipt_lab.graphs.graph import PretrainingGraph

MAX_RECOVERY_NODES = 4000  # n(n-1)/2 pairwise distances and edge labels, ~8e6 pairs, are held at once


@dataclass(frozen=True)
class RadiusRecovery:
    """How well the radius graph at the best radius recovers ``G_PT``.

    Attributes:
        radius: the radius of best F1 (distance units of the embeddings; pairs at distance ``<=
            radius`` are linked). Searched exactly, it is the midpoint of the gap after the last
            linked distance, so it sits strictly between the linked and unlinked pairs.
        precision, recall, f1: of the radius graph's edges against ``G_PT``'s.
        n_edges: edges of ``G_PT``; ``n_pairs``: node pairs, ``n(n-1)/2``.
    """

    radius: float
    precision: float
    recall: float
    f1: float
    n_edges: int
    n_pairs: int

    @property
    def exact(self) -> bool:
        """Whether the radius recovers ``G_PT`` exactly (F1 = 1): the paper's validity condition."""
        return self.f1 == 1.0


@dataclass(frozen=True)
class RadiusNn:
    """Leave-one-out r-NN classification.

    Attributes:
        accuracy: mean over covered samples of 1 (own label is the unique plurality of the others
            within ``r``), ``1/k`` (one of ``k`` tied plurality labels) or 0.
        coverage: fraction of samples with at least one other sample within ``r`` (the rest are
            left out of ``accuracy``).
    """

    accuracy: float
    coverage: float


def radius_recovery(embeddings: np.ndarray, graph: PretrainingGraph, radii=None) -> RadiusRecovery:
    """The radius whose radius graph best recovers ``graph`` (by F1) and its precision, recall, F1.

    Args:
        embeddings: ``(n, H)``; row ``i`` is node ``i`` of ``graph``, ``2 <= n <= MAX_RECOVERY_NODES``.
        graph: ``G_PT`` with ``n`` nodes and at least one edge.
        radii: ``(R,)`` candidate radii to choose from (the first of equal best F1 wins); None
            searches every threshold between consecutive distinct pairwise distances exactly.
    """
    z = np.asarray(embeddings, dtype=np.float64)
    n = graph.n_nodes
    if z.ndim != 2 or z.shape[0] != n:
        raise SiptError(f"embeddings of shape {z.shape} for a graph of {n} nodes; give one (n, H) row per node")
    if not 2 <= n <= MAX_RECOVERY_NODES:
        raise SiptError(
            f"radius recovery sorts all node pairs, so it takes 2 to {MAX_RECOVERY_NODES} nodes, "
            f"got {n}; evaluate a subgraph (PretrainingGraph.subgraph)"
        )
    if graph.n_edges == 0:
        raise SiptError("the graph has no edges, so there is nothing to recover; add edges to the graph")
    distances = pdist(z)  # condensed, pair order of np.triu_indices(n, 1)
    order = np.argsort(distances, kind="stable")
    distances = distances[order]
    u, v = np.triu_indices(n, 1)
    true_so_far = np.cumsum(graph.has_edge(u[order], v[order]))
    if radii is None:
        # the radius graph can only stop after the last of a run of equal distances
        last = np.flatnonzero(np.append(distances[1:] != distances[:-1], True))
        gap_end = np.append(distances[last[:-1] + 1], distances[-1])
        candidates = (distances[last] + gap_end) / 2
        linked = last + 1
    else:
        candidates = np.asarray(radii, dtype=np.float64).ravel()
        if candidates.size == 0 or not np.all(np.isfinite(candidates)):
            raise SiptError("radii must be a non-empty array of finite numbers; pass None to search them all")
        linked = np.searchsorted(distances, candidates, side="right")
    true_linked = np.where(linked > 0, true_so_far[np.maximum(linked - 1, 0)], 0)
    f1 = 2 * true_linked / (linked + graph.n_edges)
    best = int(np.argmax(f1))
    return RadiusRecovery(
        radius=float(candidates[best]),
        precision=float(true_linked[best] / linked[best]) if linked[best] else 0.0,
        recall=float(true_linked[best] / graph.n_edges),
        f1=float(f1[best]),
        n_edges=graph.n_edges,
        n_pairs=distances.size,
    )


def radius_graph(embeddings: np.ndarray, radius: float) -> PretrainingGraph:
    """Graph on the ``n`` rows of ``(n, H)`` embeddings linking pairs at Euclidean distance ``<= radius``."""
    z = check_radius_query(embeddings, radius)
    pairs = cKDTree(z).query_pairs(radius, output_type="ndarray")
    return PretrainingGraph.from_edges(pairs[:, 0], pairs[:, 1], len(z))


def check_radius_query(embeddings, radius: float) -> np.ndarray:
    """``(n, H)`` float64 ``embeddings`` if non-empty and ``radius`` finite and ``>= 0``, else a SiptError."""
    z = np.asarray(embeddings, dtype=np.float64)
    if z.ndim != 2 or len(z) == 0:
        raise SiptError(f"embeddings must be a non-empty (n, H) array, got shape {z.shape}")
    if not np.isfinite(radius) or radius < 0:
        raise SiptError(f"radius must be a finite number >= 0, got {radius}")
    return z


def radius_nn_accuracy(embeddings: np.ndarray, labels, radius: float) -> RadiusNn:
    """Leave-one-out r-NN accuracy of ``(n,)`` ``labels`` from ``(n, H)`` embeddings at ``radius``.

    Equals the local consistency (``ties="split"``) of ``labels`` over :func:`radius_graph`, so at a
    radius that recovers ``G_PT`` exactly it equals ``LC_{G_PT}(labels)``: Theorem 1's equality case.
    """
    labels = np.asarray(labels)
    if labels.shape != (len(embeddings),):
        raise SiptError(
            f"{labels.size} labels of shape {labels.shape} for {len(embeddings)} embeddings; "
            "give one label per embedding"
        )
    per_sample = local_consistency_per_node(radius_graph(embeddings, radius), labels, ties="split")
    covered = ~np.isnan(per_sample)
    if not covered.any():
        raise SiptError(f"no sample has another within radius {radius}; use a larger radius")
    return RadiusNn(accuracy=float(per_sample[covered].mean()), coverage=float(covered.mean()))


def radius_terms(embeddings: np.ndarray, graph: PretrainingGraph, labels=None) -> dict[str, float]:
    """Theorem 1's terms of an embedding, flat for result tables: ``radius``, ``radius_f1`` (how
    well the best radius recovers ``graph``) and, with ``(n,)`` ``labels``, the LOO r-NN
    ``radius_nn_accuracy`` and ``radius_nn_coverage`` at that radius (the best radius links at
    least one pair, so some sample is covered)."""
    recovery = radius_recovery(embeddings, graph)
    terms = {"radius": recovery.radius, "radius_f1": recovery.f1}
    if labels is not None:
        rnn = radius_nn_accuracy(embeddings, labels, recovery.radius)
        terms |= {"radius_nn_accuracy": rnn.accuracy, "radius_nn_coverage": rnn.coverage}
    return terms
