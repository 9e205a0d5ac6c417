"""Theorem 1's radius view: recovering G_PT by a radius, and the r-NN predictor at that radius."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from sipt_lab.core.errors import SiptError
from sipt_lab.evaluation import MAX_RECOVERY_NODES, radius_graph, radius_nn_accuracy, radius_recovery
from sipt_lab.graphs.consistency import local_consistency
from sipt_lab.graphs.graph import PretrainingGraph


def _clusters(rng):
    """Three clusters of 5 points in 2-D, jitter < 1, centres 100 apart; ``(15, 2)`` and ``(15,)``."""
    clusters = np.repeat(np.arange(3), 5)
    z = np.column_stack([100.0 * clusters, np.zeros(15)]) + rng.uniform(-0.5, 0.5, (15, 2))
    return z, clusters


def test_planted_clusters_are_recovered_exactly_between_intra_and_inter_cluster_distances():
    z, clusters = _clusters(np.random.default_rng(0))
    graph = PretrainingGraph.from_groups(clusters)
    recovery = radius_recovery(z, graph)
    assert recovery.exact and (recovery.precision, recovery.recall, recovery.f1) == (1.0, 1.0, 1.0)
    d = cdist(z, z)
    same = clusters[:, None] == clusters[None, :]
    assert d[same].max() < recovery.radius < d[~same].min()
    assert (recovery.n_edges, recovery.n_pairs) == (30, 105)
    assert radius_graph(z, recovery.radius) == graph


def test_rnn_accuracy_at_the_recovering_radius_equals_local_consistency():
    """Theorem 1's equality case, with LC worked by hand: in cluster 0 labels 0,0,0,1,1 (each 0 ties
    1/2, each 1 loses), in cluster 1 labels 0,0,0,0,1 (each 0 wins, the 1 loses), cluster 2 all 2."""
    z, clusters = _clusters(np.random.default_rng(1))
    graph = PretrainingGraph.from_groups(clusters)
    labels = np.array([0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 2, 2, 2, 2, 2])
    scores = radius_nn_accuracy(z, labels, radius_recovery(z, graph).radius)
    assert scores.coverage == 1.0
    assert scores.accuracy == pytest.approx((3 * 0.5 + 4 + 5) / 15)
    assert scores.accuracy == pytest.approx(local_consistency(graph, labels))


def test_a_graph_no_radius_recovers_has_f1_below_one_hand_computed():
    """Points 0..5 on a line; G_PT is the path plus the long edge 0-5. Distance 1 links the 5 path
    edges (precision 1, recall 5/6); reaching distance 5 links all 15 pairs for only 6 true edges."""
    z = np.arange(6.0)[:, None]
    graph = PretrainingGraph.from_edges([0, 1, 2, 3, 4, 0], [1, 2, 3, 4, 5, 5], 6)
    recovery = radius_recovery(z, graph)
    assert not recovery.exact
    assert recovery.radius == 1.5
    assert (recovery.precision, recovery.recall) == (1.0, pytest.approx(5 / 6))
    assert recovery.f1 == pytest.approx(10 / 11)

    wide = radius_recovery(z, graph, radii=[2.5])  # 9 pairs within 2.5, 5 of them edges
    assert (wide.radius, wide.precision, wide.recall, wide.f1) == (
        2.5,
        pytest.approx(5 / 9),
        pytest.approx(5 / 6),
        pytest.approx(2 / 3),
    )
    assert radius_recovery(z, graph, radii=[0.5, 5.0, 1.0]).radius == 1.0  # the best of the given candidates
    assert radius_recovery(z, graph, radii=[0.5]).f1 == 0.0


def test_rnn_accuracy_splits_ties_and_leaves_out_samples_with_no_neighbour():
    """Points 0, 1, 2, 10 labelled a, a, b, b at radius 1.5: sample 0 sees a (right), sample 1 sees
    a and b (tie, 1/2), sample 2 sees a (wrong), sample 3 sees nobody (left out)."""
    scores = radius_nn_accuracy(np.array([[0.0], [1.0], [2.0], [10.0]]), np.array(["a", "a", "b", "b"]), 1.5)
    assert scores.accuracy == pytest.approx(0.5)
    assert scores.coverage == 0.75


def test_bad_inputs_are_refused():
    graph = PretrainingGraph.from_edges([0], [1], 3)
    with pytest.raises(SiptError, match="3 nodes"):
        radius_recovery(np.zeros((4, 2)), graph)
    with pytest.raises(SiptError, match="no edges"):
        radius_recovery(np.zeros((3, 2)), PretrainingGraph.from_edges([], [], 3))
    with pytest.raises(SiptError, match=str(MAX_RECOVERY_NODES)):
        radius_recovery(
            np.zeros((MAX_RECOVERY_NODES + 1, 1)), PretrainingGraph.from_edges([0], [1], MAX_RECOVERY_NODES + 1)
        )
    with pytest.raises(SiptError, match="radii"):
        radius_recovery(np.zeros((3, 2)), graph, radii=[np.nan])
    with pytest.raises(SiptError, match="one label per embedding"):
        radius_nn_accuracy(np.zeros((3, 2)), [0, 1], 1.0)
    with pytest.raises(SiptError, match="radius must be"):
        radius_nn_accuracy(np.zeros((3, 2)), [0, 1, 1], -1.0)
    with pytest.raises(SiptError, match="larger radius"):
        radius_nn_accuracy(np.array([[0.0], [5.0]]), [0, 1], 1.0)
