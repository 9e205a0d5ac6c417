"""The atlas's material and its predictor: draws that keep the sides apart, tasks and graphs that
never read each other, and a gain fit validated leave-one-pair-out."""

import numpy as np
import pytest

from sipt_lab.core.errors import SiptError
from sipt_lab.domains.wiki import description_heads, first_word_head
from sipt_lab.jobs.gain_predictor import fit_gain, leave_one_pair_out, outside_range, predict_gain
from sipt_lab.studies.lc.atlas_pairs import GRAPH_BUILDERS, draw_articles, never_seen_positions


def test_head_rules_per_language():
    assert description_heads(["American singer (1942–2016)", "Capital of France", "Concepts in logic", "concept"]) == [
        "singer",
        "capital",
        "concept",
        "concept",
    ]
    assert first_word_head("actrice américaine") == "actrice"
    assert first_word_head("(née) ville de France") == "ville"
    assert first_word_head("") is None
    assert description_heads(["ville de France", "villes du monde"], "fr") == ["ville", "ville"]


@pytest.fixture(scope="module")
def draw():
    return draw_articles("en", ("category", "head-5", "head-20"), n_pretrain=300, n_never_seen=60, split_seed=3)


def test_draw_keeps_pretraining_and_never_seen_apart(draw):
    never_seen = [draw.never_seen[task] for task in ("category", "head-5", "head-20")]
    assert all(rows.size == 60 for rows in never_seen)
    every = np.concatenate([draw.pretrain, *never_seen])
    assert np.unique(every).size == every.size  # no article on two sides, none under two tasks
    for task, rows in draw.never_seen.items():
        assert all(label is not None for label in draw.articles.labels[task][rows])
    positions, labels = draw.pretrain_labels("head-5")
    assert 0 < positions.size < draw.pretrain.size  # the head task labels a subset
    assert len(set(labels)) <= 5


def test_draw_is_the_same_for_a_seed_and_differs_between_seeds(draw):
    again = draw_articles("en", ("category", "head-5", "head-20"), n_pretrain=300, n_never_seen=60, split_seed=3)
    other = draw_articles("en", ("category", "head-5", "head-20"), n_pretrain=300, n_never_seen=60, split_seed=4)
    assert np.array_equal(again.pretrain, draw.pretrain)
    assert not np.array_equal(other.pretrain, draw.pretrain)


def test_too_few_never_seen_articles_is_one_clear_error():
    with pytest.raises(SiptError, match="fewer than the 9000 never-seen articles"):
        draw_articles("en", ("head-5",), n_pretrain=100, n_never_seen=9000, split_seed=0)


def test_graphs_are_built_without_labels(draw):
    """Every builder sees the draw's texts and mentions; scrambling every task's labels changes no graph."""
    from dataclasses import replace

    scrambled = replace(
        draw,
        articles=replace(
            draw.articles,
            labels={task: np.random.default_rng(0).permutation(y) for task, y in draw.articles.labels.items()},
        ),
    )
    vectors = np.random.default_rng(1).normal(size=(draw.pretrain.size, 8))
    for name, build in GRAPH_BUILDERS.items():
        one, two = build(draw, lambda: vectors, 0), build(scrambled, lambda: vectors, 0)
        assert one.n_nodes == draw.pretrain.size
        assert np.array_equal(one.edges(), two.edges()), name
    assert (
        GRAPH_BUILDERS["random"](draw, lambda: vectors, 0).n_edges
        == GRAPH_BUILDERS["co-mentions"](draw, lambda: vectors, 0).n_edges
    )


def test_never_seen_positions_drop_test_classes_without_references():
    labels = np.array(["a", "b"] * 5 + ["c"] * 10)
    references, validation, test = never_seen_positions(labels)
    assert (references.size, validation.size) == (10, 2)
    assert set(labels[test]) <= set(labels[references])
    assert "c" not in set(labels[test])


def synthetic_pairs(n=24, slope=0.5, noise=0.01, seed=0):
    rng = np.random.default_rng(seed)
    lc, own = rng.uniform(0.1, 0.95, n), rng.uniform(0.3, 0.8, n)
    gain = slope * (lc - own) + rng.normal(0, noise, n)
    return [{"lc": a, "encoder_consistency": b, "gain": g} for a, b, g in zip(lc, own, gain)]


def test_fit_recovers_the_coefficients_and_its_interval_covers():
    pairs = synthetic_pairs()
    fit = fit_gain(pairs)
    assert np.allclose(fit["coefficients"], [0.0, 0.5, -0.5], atol=0.03)
    mean, low, high = predict_gain(fit, lc=0.9, encoder_consistency=0.4)
    assert low < mean < high and low > 0  # a graph far above the encoder: help
    inside = predict_gain(fit, lc=0.5, encoder_consistency=0.5)
    far = predict_gain(fit, lc=3.0, encoder_consistency=0.5)
    assert far[2] - far[1] > inside[2] - inside[1]  # wider where the fit saw nothing
    assert outside_range(fit, lc=3.0, encoder_consistency=0.5) == [
        f"lc 3.000 outside the atlas's [{fit['ranges']['lc'][0]:.3f}, {fit['ranges']['lc'][1]:.3f}]"
    ]


def test_leave_one_pair_out_scores_held_out_predictions():
    validation = leave_one_pair_out(synthetic_pairs(n=40, seed=2))
    assert validation["pairs"] == 40
    assert validation["coverage"] >= 0.75  # a 90% interval on data the model describes
    assert validation["mae"] < 0.02
    assert validation["decided"] > 20 and validation["sign_accuracy"] >= 0.95
    assert validation["rule_sign_accuracy"] >= 0.9
    noise = leave_one_pair_out(synthetic_pairs(n=30, slope=0.0, noise=0.05, seed=3))
    assert noise["decided"] <= 6  # pure noise: hardly any interval excludes zero


def test_a_fit_needs_enough_pairs():
    with pytest.raises(SiptError, match="at least 5 pairs"):
        fit_gain(synthetic_pairs(n=4))
