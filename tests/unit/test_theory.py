import numpy as np

from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.studies.paper.theory import (
    corollary1_experiment,
    correlated_labels,
    oracle_embeddings,
    theorem1_check,
)


def test_oracle_collapses_cliques_and_separates_them():
    groups = np.repeat(np.arange(4), 10)
    z = oracle_embeddings(PretrainingGraph.from_groups(groups), dim=8, steps=200)
    distances = np.linalg.norm(z[:, None] - z[None], axis=-1)
    same = groups[:, None] == groups[None]
    assert distances[same].max() < 1.0 < 5.0 < distances[~same].min()


def test_theorem1_oracle_reaches_local_consistency_on_a_clean_graph():
    check = theorem1_check(
        PretrainingGraph.from_groups(np.repeat(np.arange(5), 8)), np.repeat(np.arange(5), 8), steps=200
    )
    assert check.bound == 1.0 and check.nn_accuracy == 1.0
    assert check.radius_f1 == 1.0 and check.radius_nn_accuracy == 1.0 and check.radius_nn_coverage == 1.0


def test_theorem1_equality_case_r_nn_accuracy_is_lc_where_a_radius_recovers_the_graph():
    groups = np.repeat(np.arange(5), 8)
    labels = groups.copy()
    labels[[0, 9, 10, 20]] = [4, 3, 3, 0]  # a few nodes disagree with their clique: LC < 1
    check = theorem1_check(PretrainingGraph.from_groups(groups), labels, steps=200)
    assert check.radius_f1 == 1.0  # the oracle's optimum is valid on cliques
    assert check.bound < 1.0 and check.radius_nn_accuracy == check.bound


def test_corollary1_accuracy_stays_below_the_bound_and_tracks_it():
    rng = np.random.default_rng(0)
    pt = np.repeat(np.arange(6), 30)
    checks = [corollary1_experiment(pt, correlated_labels(pt, 6, a, rng), steps=200) for a in (0.0, 0.6, 1.0)]
    bounds = [c.bound for c in checks]
    assert bounds == sorted(bounds) and bounds[-1] == 1.0
    assert checks[1].nn_accuracy <= checks[1].bound + 0.02
    assert checks[-1].nn_accuracy == 1.0
    assert checks[0].nn_accuracy < 0.3 and checks[0].bound < 0.3  # unrelated tasks: both near chance (1/6)


def test_correlated_labels_agreement():
    rng = np.random.default_rng(1)
    pt = rng.integers(0, 4, 5000)
    assert np.array_equal(correlated_labels(pt, 4, 1.0, rng), pt)
    agreement = np.mean(correlated_labels(pt, 4, 0.5, rng) == pt)
    assert 0.6 < agreement < 0.65  # 0.5 + 0.5 * 1/4 by chance
