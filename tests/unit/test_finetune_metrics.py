import csv
import math

import numpy as np
import pytest

from sipt_lab.core.errors import SiptError
from sipt_lab.data.splits import Splits, check_task_splits, pretraining_graph, random_splits, read_splits, write_splits
from sipt_lab.data.tasks import TASK_KINDS, Task
from sipt_lab.evaluation import compare_errors, format_comparison_table, relative_error_reduction, write_comparison_csv
from sipt_lab.evaluation.probe import linear_probe
from sipt_lab.graphs.graph import PretrainingGraph

# ---------------------------------------------------------------- RRE and the paired t-test

BASELINE = [0.30, 0.20, 0.25]
MODEL = [0.20, 0.15, 0.20]


def test_relative_error_reduction_by_hand():
    assert relative_error_reduction(0.2, 0.15) == pytest.approx(0.25)
    assert relative_error_reduction(0.2, 0.3) == pytest.approx(-0.5)
    np.testing.assert_allclose(relative_error_reduction(BASELINE, MODEL), [1 / 3, 1 / 4, 1 / 5])
    rre = relative_error_reduction([0.1, 0.0], [0.1, 0.1])  # a perfect baseline: undefined there, not an abort
    assert rre[0] == 0.0 and np.isnan(rre[1])
    undefined = compare_errors([0.0, 0.0], [0.1, 0.0], task="t", method="sipt", baseline="lm")
    assert np.isnan(undefined.rre_mean) and "undefined (baseline error 0)" in format_comparison_table([undefined])


def test_comparison_by_hand():
    c = compare_errors(BASELINE, MODEL, task="t", method="sipt", baseline="lm")
    rre = np.array([1 / 3, 1 / 4, 1 / 5])
    assert c.rre_mean == pytest.approx(47 / 180)
    assert c.rre_sd == pytest.approx(math.sqrt(((rre - 47 / 180) ** 2).sum() / 2))
    # differences 0.10, 0.05, 0.05: mean 1/15, sample sd 0.05/sqrt(3), so t = 4 on 2 degrees of
    # freedom, whose two-sided p-value is 1 - t / sqrt(t^2 + 2) in closed form.
    assert c.p_value == pytest.approx(1 - 4 / math.sqrt(18), rel=1e-9)
    assert (c.n_seeds, c.baseline_error, c.model_error) == (3, pytest.approx(0.25), pytest.approx(0.55 / 3))


def test_one_seed_has_no_spread_and_unequal_seeds_are_refused():
    c = compare_errors([0.2], [0.1], task="t", method="m", baseline="b")
    assert c.rre_mean == pytest.approx(0.5) and math.isnan(c.rre_sd) and math.isnan(c.p_value)
    with pytest.raises(SiptError, match="same seeds"):
        compare_errors([0.2, 0.3], [0.1], task="t", method="m", baseline="b")


def test_table_and_csv(tmp_path):
    comparisons = [compare_errors(BASELINE, MODEL, task="topic", method="sipt", baseline="lm")]
    table = format_comparison_table(comparisons)
    assert "| topic | sipt | lm | 3 | 0.250 | 0.183 | +0.261 ± 0.067 | 0.0572 |" in table
    path = tmp_path / "out" / "comparison.csv"
    write_comparison_csv(path, comparisons)
    (row,) = csv.DictReader(path.open())
    assert row["task"] == "topic" and float(row["p_value"]) == pytest.approx(comparisons[0].p_value)
    assert list(tmp_path.joinpath("out").iterdir()) == [path]


# ---------------------------------------------------------------- linear probes


def _toy(kind, n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    classes = rng.integers(0, 3, n)
    X[:, 3] += 6 * classes  # three blobs along one axis, far apart
    y = {
        "classification": classes,
        "regression": np.tanh(X[:, 0]) + 0.5 * X[:, 2],
        "multilabel": (X[:, :3] > 0).astype(int),
    }[kind]
    return X, y


def _probe(X, y, kind):
    cut = [slice(0, 200), slice(200, 250), slice(250, None)]
    return linear_probe(*(a for part in cut for a in (X[part], y[part])), kind)


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, metric",
    [
        ("classification", "accuracy"),
        ("classification", "macro_f1"),
        ("regression", "spearman"),
        ("multilabel", "macro_auroc"),
    ],
)
def test_probe_learns_a_separable_task(kind, metric):
    X, y = _toy(kind)
    assert _probe(X, y, kind).test[metric] > 0.95


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, metric, chance, tolerance",
    [
        ("classification", "accuracy", 1 / 3, 0.15),
        ("regression", "spearman", 0.0, 0.3),
        ("multilabel", "macro_auroc", 0.5, 0.15),
    ],
)
def test_probe_stays_near_chance_on_shuffled_labels(kind, metric, chance, tolerance):
    X, y = _toy(kind)
    shuffled = np.random.default_rng(1).permutation(y)
    result = _probe(X, shuffled, kind)
    assert abs(result.test[metric] - chance) < tolerance
    assert TASK_KINDS[kind].error(result.test) == pytest.approx(1 - result.test[TASK_KINDS[kind].primary])


def test_probe_refuses_one_class_in_train():
    X = np.random.default_rng(0).normal(size=(30, 2))
    y = np.r_[np.zeros(20, int), np.arange(10) % 2]
    with pytest.raises(SiptError, match="one class only"):
        linear_probe(X[:20], y[:20], X[20:25], y[20:25], X[25:], y[25:], "classification")
    with pytest.raises(SiptError, match="unknown task kind 'ranking'"):
        linear_probe(X[:20], y[:20], X[20:25], y[20:25], X[25:], y[25:], "ranking")


# ---------------------------------------------------------------- splits

IDS = [f"s{i}" for i in range(8)] + ["Water (molecule)", "New York City"]


def _splits_file(tmp_path, text):
    path = tmp_path / "SPLITS.tsv"
    path.write_text(text, encoding="utf-8")
    return path


def test_read_splits_round_trip(tmp_path):
    splits = Splits(np.array([0, 1, 2, 3, 9]), np.array([4, 8]), np.array([5, 6]))
    write_splits(tmp_path / "SPLITS.tsv", splits, IDS)
    back = read_splits(tmp_path / "SPLITS.tsv", IDS)
    for name in ("train", "validation", "test"):
        np.testing.assert_array_equal(getattr(back, name), getattr(splits, name))
    np.testing.assert_array_equal(back.held_out, [4, 5, 6, 8])


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "s0\ttrain\ns1\tvalidation\ns0\ttest\n",
            r"line 3: 's0' is already in train \(line 1\), now in test; splits must not overlap",
        ),
        ("s0\ttrain\nWater\tvalidation\ns1\ttest\n", "line 2: 'Water' is not a sample id"),
        ("s0\ttrain\ns1\tdev\ns2\ttest\n", "line 2: unknown split 'dev'"),
        ("s0 train\n", r"line 1: expected id<TAB>split"),
        ("# comment\ns0\ttrain\ns1\ttest\n", "the validation split is empty"),
    ],
)
def test_read_splits_rejects_bad_files(tmp_path, text, message):
    with pytest.raises(SiptError, match=message) as error:
        read_splits(_splits_file(tmp_path, text), IDS)
    assert "\n" not in str(error.value)


def test_missing_splits_file_is_one_line(tmp_path):
    with pytest.raises(SiptError, match="splits file .*nope.tsv does not exist"):
        read_splits(tmp_path / "nope.tsv", IDS)


def _task():
    return Task("topic", "classification", np.arange(8), np.array([0, 1, 0, 1, 0, 1, 0, 1]))


def test_check_task_splits(tmp_path):
    good = read_splits(_splits_file(tmp_path, "s0\ttrain\ns1\ttrain\ns2\tvalidation\ns3\ttest\n"), IDS)
    check_task_splits(_task(), good, IDS)
    unlabelled = read_splits(_splits_file(tmp_path, "s0\ttrain\ns1\ttrain\nNew York City\tvalidation\ns3\ttest\n"), IDS)
    with pytest.raises(SiptError, match=r"labels of task 'topic' are missing for 1 sample\(s\).*'New York City'"):
        check_task_splits(_task(), unlabelled, IDS)
    one_class = read_splits(_splits_file(tmp_path, "s0\ttrain\ns2\ttrain\ns1\tvalidation\ns3\ttest\n"), IDS)
    with pytest.raises(SiptError, match="task 'topic' has one class only .* in its train split"):
        check_task_splits(_task(), one_class, IDS)


def test_random_splits_partition_and_are_seeded():
    samples = np.arange(3, 103)
    splits = random_splits(samples, seed=4)
    parts = [splits.train, splits.validation, splits.test]
    assert [p.size for p in parts] == [80, 10, 10]
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), samples)
    np.testing.assert_array_equal(random_splits(samples, seed=4).test, splits.test)
    assert not np.array_equal(random_splits(samples, seed=5).test, splits.test)
    with pytest.raises(SiptError, match="cannot be split"):
        random_splits(np.arange(5))


def test_pretraining_graph_drops_every_held_out_edge():
    rng = np.random.default_rng(0)
    graph = PretrainingGraph.from_edges(rng.integers(0, 40, 200), rng.integers(0, 40, 200), 40)
    splits = random_splits(np.arange(40), seed=1)
    pt = pretraining_graph(graph, splits)
    assert pt.n_nodes == 40
    assert (pt.degrees()[splits.held_out] == 0).all()
    kept = ~np.isin(graph.edges(), splits.held_out).any(axis=1)
    np.testing.assert_array_equal(pt.edges(), graph.edges()[kept])
    assert 0 < pt.n_edges < graph.n_edges


# ---------------------------------------------------------------- the nearest-neighbour metric of finetune / domain run
@pytest.mark.slow
def test_probe_reports_held_out_3nn_with_references_from_train():
    from sipt_lab.jobs.finetune import nn_embeddings, probe_embeddings

    rng = np.random.default_rng(0)
    labels = np.arange(60) % 3
    clustered = np.eye(3)[labels] * 5 + rng.normal(0, 0.3, (60, 3))
    splits = Splits(np.arange(0, 40), np.arange(40, 50), np.arange(50, 60))
    task = Task("toy", "classification", np.arange(60), labels)
    scores = probe_embeddings(clustered, task, splits)
    assert scores["knn3_accuracy"] == 1.0 and scores["knn3_auroc"] == 1.0 and "accuracy" in scores
    # the references are the train split: scrambling the train vectors ruins the metric, scrambling validation does not
    scrambled = clustered.copy()
    scrambled[splits.train] = rng.normal(0, 5, (40, 3))
    assert nn_embeddings(scrambled, task, splits)["knn3_accuracy"] < 0.7
    moved = clustered.copy()
    moved[splits.validation] = 0
    assert nn_embeddings(moved, task, splits) == nn_embeddings(clustered, task, splits)
    assert nn_embeddings(clustered, Task("toy", "regression", np.arange(60), labels.astype(float)), splits) == {}
