import numpy as np
import pytest
from sklearn.metrics import average_precision_score, label_ranking_average_precision_score, roc_auc_score
from sklearn.neighbors import KNeighborsClassifier

from sipt_lab.core.errors import SiptError
from sipt_lab.evaluation import heldout_knn, link_retrieval_metrics, loo_knn, loo_knn_auroc
from sipt_lab.graphs.graph import PretrainingGraph


def _sklearn_loo(x, y, k=3):
    classes = np.unique(y)
    out = np.zeros((len(x), len(classes)))
    for i in range(len(x)):
        rest = np.arange(len(x)) != i
        model = KNeighborsClassifier(k, weights="distance").fit(x[rest], y[rest])
        out[i, np.searchsorted(classes, model.classes_)] = model.predict_proba(x[i : i + 1])[0]
    return out


def test_loo_equals_sklearn_refit_per_node():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(50, 4)), rng.integers(0, 4, 50)
    expected = _sklearn_loo(x, y)
    scores = loo_knn(x, y)
    np.testing.assert_allclose(scores.probabilities, expected, rtol=0, atol=1e-12)
    assert scores.auroc == pytest.approx(roc_auc_score(y, expected, multi_class="ovr"), abs=1e-12)
    assert scores.accuracy == pytest.approx(np.mean(expected.argmax(1) == y))
    assert loo_knn_auroc(x, y) == scores.auroc


def test_exact_duplicates_take_all_the_weight_like_sklearn():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(30, 3)), np.arange(30) % 3
    x[4] = x[7]  # exact duplicates with different labels
    y[4], y[7] = 0, 2
    got = loo_knn(x, y).probabilities
    expected = _sklearn_loo(x, y)
    np.testing.assert_allclose(got[[4, 7]], expected[[4, 7]], atol=1e-12)
    np.testing.assert_array_equal(got[4], [0.0, 0.0, 1.0])


def test_binary_labels():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(25, 2)), rng.integers(0, 2, 25)
    expected = _sklearn_loo(x, y)
    assert loo_knn(x, y).auroc == pytest.approx(roc_auc_score(y, expected[:, 1]), abs=1e-12)


def test_heldout_equals_sklearn_and_tolerates_missing_classes():
    rng = np.random.default_rng(3)
    train, train_y = rng.normal(size=(40, 3)), np.arange(40) % 5
    test, test_y = rng.normal(size=(15, 3)), rng.integers(0, 3, 15)  # classes 3, 4 absent
    model = KNeighborsClassifier(3, weights="distance").fit(train, train_y)
    expected = model.predict_proba(test)
    scores = heldout_knn(train, train_y, test, test_y)
    np.testing.assert_allclose(scores.probabilities, expected, atol=1e-12)
    per_class = [roc_auc_score(test_y == c, expected[:, c]) for c in range(3)]
    assert scores.auroc == pytest.approx(np.mean(per_class), abs=1e-12)
    assert scores.accuracy == pytest.approx(model.score(test, test_y))


def test_heldout_class_unknown_to_the_reference_is_an_error():
    rng = np.random.default_rng(4)
    with pytest.raises(SiptError, match="never occur among the reference"):
        heldout_knn(rng.normal(size=(10, 2)), np.arange(10) % 2, rng.normal(size=(4, 2)), np.array([0, 1, 2, 2]))


def test_single_class_and_too_few_samples_are_errors():
    rng = np.random.default_rng(5)
    with pytest.raises(SiptError, match="two classes"):
        loo_knn(rng.normal(size=(6, 2)), np.zeros(6, dtype=int))
    with pytest.raises(SiptError, match="k=3"):
        loo_knn(rng.normal(size=(3, 2)), np.array([0, 1, 1]))


def test_retrieval_hand_computed_path():
    # path 0-1-2-3 on a line: 0 at 0, 1 at 1, 2 at 3, 3 at 7
    graph = PretrainingGraph.from_edges([0, 1, 2], [1, 2, 3], 4)
    z = np.array([[0.0], [1.0], [3.0], [7.0]])
    m = link_retrieval_metrics(z, graph)
    # rankings (others, nearest first): 0: 1,2,3   1: 0,2,3   2: 1,0,3   3: 2,1,0
    # neighbours: 0:{1} rank1; 1:{0,2} ranks 1,2; 2:{1,3} ranks 1,3; 3:{2} rank 1
    assert m["mrr"] == pytest.approx(1.0)
    assert m["lrap"] == pytest.approx((1 + 1 + (1 + 2 / 3) / 2 + 1) / 4)
    truth = np.array([[1, 0, 0], [1, 1, 0], [1, 0, 1], [1, 0, 0]])
    scores = -np.array([[1, 3, 7], [1, 2, 6], [2, 3, 4], [4, 6, 7]], dtype=float)
    assert m["lrap"] == pytest.approx(label_ranking_average_precision_score(truth, scores))
    assert m["ap"] == pytest.approx(average_precision_score(truth.ravel(), scores.ravel()))
    assert m["n_queries"] == 4


def test_retrieval_on_separated_cliques_is_perfect_and_subsets_are_seeded():
    graph = PretrainingGraph.from_groups(np.repeat(np.arange(5), 6))
    rng = np.random.default_rng(0)
    z = np.repeat(rng.normal(size=(5, 4)) * 100, 6, axis=0) + rng.normal(size=(30, 4))
    m = link_retrieval_metrics(z, graph)
    assert m["lrap"] == pytest.approx(1.0) and m["ndcg"] == pytest.approx(1.0) and m["mrr"] == 1.0
    noise = rng.normal(size=(30, 4))
    sub = link_retrieval_metrics(noise, graph, max_queries=10, rng=7)
    assert sub["n_queries"] == 10
    assert sub == link_retrieval_metrics(noise, graph, max_queries=10, rng=7)
    assert sub != link_retrieval_metrics(noise, graph, max_queries=10, rng=8)


def test_retrieval_skips_isolated_nodes():
    graph = PretrainingGraph.from_edges([0, 1], [1, 2], 5)
    m = link_retrieval_metrics(np.random.default_rng(0).normal(size=(5, 2)), graph)
    assert m["n_queries"] == 3
