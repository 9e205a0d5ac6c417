"""The LC-transfer study's statistics on known gains: paired replicates, the slope's t-interval over
the replicates' own lines, Fieller's crossover interval, no interval under three replicates, every
metric summarised, the labels-direct baseline, the spread over split seeds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import bootstrap

from sipt_lab.core.stats import MIN_REPLICATES_FOR_INTERVAL, fieller_interval, interval, mean_ci
from sipt_lab.studies.lc.config import LcTransferConfig
from sipt_lab.studies.lc.gain_stats import gain_line, summarise

LCS = (0.0, 0.5, 1.0)


def known_rows(split_seeds=(0, 1), seeds=3, slope_noise=0.02, metrics=("knn_accuracy", "knn_auroc")) -> list[dict]:
    """Rows of a study whose SIPT gain over LM-only is ``0.2 * (LC - 0.5)`` on ``knn_accuracy`` (and
    ``0.1 * (LC - 0.8)`` on ``knn_auroc``), each replicate's slope off by seeded noise; the LM-only arm
    given the dial's labels sits 0.05 above LM-only at every level."""
    rng = np.random.default_rng(0)
    truth = {"knn_accuracy": (0.2, 0.5), "knn_auroc": (0.1, 0.8)}
    rows = []

    def row(arm, split_seed, seed, metric, value, level=None, lc=None):
        q = None if level is None else LCS[level]
        rows.append(
            {"arm": arm, "split_seed": split_seed, "seed": seed, "metric": metric, "value": value, "level": level,
             "q": q, "target_lc": lc, "lc": lc}
        )  # fmt: skip

    for split_seed in split_seeds:
        for seed in range(seeds):
            wobble = rng.normal(0, slope_noise)
            for metric in metrics:
                slope, crossing = truth[metric]
                row("lm", split_seed, seed, metric, 0.6)
                row("init", split_seed, seed, metric, 0.55)
                for level, lc in enumerate(LCS):
                    row("sipt", split_seed, seed, metric, 0.6 + (slope + wobble) * (lc - crossing), level, lc)
                    row("lm+labels", split_seed, seed, metric, 0.65, level, lc)
                    row("init+labels", split_seed, seed, metric, 0.6, level, lc)
    return rows


def config(**fields) -> LcTransferConfig:
    return LcTransferConfig(init="char", levels=LCS, **fields)


def test_the_summary_pairs_replicates_and_summarises_every_metric():
    summary = summarise(known_rows(), config(seeds=3), 0.7)
    assert summary["metric"] == "knn_accuracy" and summary["metric_name"] == "3-NN accuracy"
    assert summary["replicates"] == 6 and summary["split_seeds"] == [0, 1]
    assert summary["slope"] == pytest.approx(0.2, abs=0.03)
    assert summary["slope_ci"][0] < summary["slope"] < summary["slope_ci"][1]
    assert summary["crossover_lc"] == pytest.approx(0.5, abs=1e-9)  # every replicate's line crosses at 0.5
    assert summary["crossover_ci"] == pytest.approx([0.5, 0.5], abs=1e-6) and summary["crossover_ci_bounded"]
    assert summary["crossover_undefined_share"] == 0.0
    assert summary["crossover_minus_encoder"] == pytest.approx(0.5 - 0.7)
    auroc = summary["metrics"]["knn_auroc"]
    assert auroc["crossover_lc"] == pytest.approx(0.8) and auroc["slope"] == pytest.approx(0.1, abs=0.03)
    assert summary["multiplicity"]["comparisons"] == 3 * 2 and summary["multiplicity"]["primary"] == "knn_accuracy"
    top = summary["levels"][-1]
    assert top["gain"] == pytest.approx(0.1, abs=0.03)
    assert top["gain_over_labels_direct"] == pytest.approx(top["gain"] - 0.05)
    assert top["gain_over_init_labels"] == pytest.approx(top["gain"])
    assert top["gain_over_init"] == pytest.approx(top["gain"] + 0.05)
    assert [split["split_seed"] for split in summary["by_split"]] == [0, 1]
    assert summary["split_slope_sd"] is not None and summary["warnings"] == []
    assert "3-NN accuracy, primary" in summary["verdict"] and "knn_auroc 0.800" in summary["verdict"]
    assert "SIPT - (LM-only + the dial's labels)" in summary["verdict"]


def test_the_slope_interval_is_student_t_over_the_replicates_own_slopes():
    """A percentile bootstrap over few seeds is narrower than the t-interval; the study reports the latter."""
    rows = known_rows(split_seeds=(0,), seeds=4, slope_noise=0.05)
    summary = summarise(rows, config(seeds=4, split_seeds=(0,)), 0.7)
    slopes = np.array(summary["replicate_slopes"])
    assert summary["slope_ci"] == pytest.approx(list(mean_ci(slopes)[1:]))
    boot = bootstrap((slopes,), np.mean, method="percentile", n_resamples=2000, random_state=0).confidence_interval
    assert boot.high - boot.low < summary["slope_ci"][1] - summary["slope_ci"][0]


def test_fieller_interval_covers_a_known_crossing_and_is_unbounded_for_a_flat_slope():
    rng = np.random.default_rng(1)
    covered = 0
    for _ in range(400):
        slopes, intercepts = 0.2 + rng.normal(0, 0.05, 10), -0.1 + rng.normal(0, 0.03, 10)
        (low, high), bounded = fieller_interval(-intercepts, slopes)
        covered += bounded and low <= 0.5 <= high
    assert 0.92 <= covered / 400 <= 0.98
    flat, bounded = fieller_interval(rng.normal(0, 0.1, 6), rng.normal(0, 0.1, 6))
    assert flat is None and not bounded
    assert fieller_interval([0.1, 0.2], [0.3, 0.4]) == (None, False)


def test_fewer_than_three_replicates_report_no_interval_and_say_what_they_detect():
    assert MIN_REPLICATES_FOR_INTERVAL == 3 and interval([0.1, 0.2]) is None and interval([0.1, 0.2, 0.3])
    summary = summarise(known_rows(split_seeds=(0,), seeds=2), config(seeds=2, split_seeds=(0,)), 0.7)
    assert summary["slope_ci"] is None and summary["crossover_ci"] is None
    assert all(level["gain_ci"] is None for level in summary["levels"])
    [warning] = summary["warnings"]
    assert "2 replicate(s)" in warning and "no interval" in warning and "detect only gains above" in warning
    assert "95% CI n/a" in summary["verdict"]


def test_a_replicate_whose_line_does_not_cross_in_the_unit_interval_is_counted():
    rows = known_rows(split_seeds=(0,), seeds=3, slope_noise=0.0)
    for row in rows:  # replicate 2: a gain that never crosses zero
        if row["seed"] == 2 and row["arm"] == "sipt":
            row["value"] = 0.7 + 0.01 * row["lc"]
    summary = summarise(rows, config(seeds=3, split_seeds=(0,)), 0.7)
    assert summary["crossover_undefined_share"] == pytest.approx(1 / 3)


def test_gain_line_fits_each_replicate_then_averages():
    lcs = np.array([[0.1, 0.2], [0.5, 0.6], [0.9, 1.0]])
    gains = np.array([[-0.1, -0.2], [0.0, 0.0], [0.1, 0.2]])
    line = gain_line(lcs, gains)
    per_replicate = [np.polyfit(lcs[:, r], gains[:, r], 1)[0] for r in range(2)]
    assert line["replicate_slopes"] == pytest.approx(per_replicate)
    assert line["slope"] == pytest.approx(np.mean(per_replicate)) and line["slope_ci"] is None


def test_topics_fitted_on_some_rows_label_every_row_by_their_transform(tmp_path, monkeypatch):
    from sipt_lab.data.corpus import Corpus
    from sipt_lab.data.topics import TopicConfig, cache_path, fit_topics

    monkeypatch.setenv("SIPT_LAB_CACHE", str(tmp_path))
    rng = np.random.default_rng(0)
    words = [[name + letter for letter in "bcdfghkl"] for name in ("alpha", "beta", "gamma", "delta")]
    sentences = [" ".join(rng.choice(words[i % 4], 6)) + f" filler{i}" for i in range(200)]
    sentences += [" ".join(rng.choice(["zeta", "theta"], 6)) + " kappa" for _ in range(20)]  # unseen words
    corpus = Corpus(sentences, None, None, "test")
    settings = TopicConfig(n_topics=4, min_df=2)
    fitted = fit_topics(corpus, settings, fit_rows=np.arange(200))
    assert fitted.doc_topic.shape == (220, 4)
    assert not {"zeta", "theta", "kappa"} & {word for topic in fitted.topic_words for word in topic}
    assert cache_path(corpus, settings, np.arange(200)) != cache_path(corpus, settings)
    assert cache_path(corpus, settings, np.arange(200)).is_file()
    again = fit_topics(corpus, settings, fit_rows=np.arange(200))
    assert np.array_equal(again.doc_topic, fitted.doc_topic)


def with_split_offsets(rows: list[dict], offsets: dict[int, float]) -> list[dict]:
    """``rows`` with every SIPT value of split seed ``s`` moved by ``offsets[s]`` per unit LC: splits
    that disagree on the slope while their seeds agree with each other."""
    return [
        {**row, "value": row["value"] + offsets[row["split_seed"]] * row["lc"]} if row["arm"] == "sipt" else row
        for row in rows
    ]


def test_intervals_over_two_split_seeds_or_more_allow_for_the_split_seed():
    """Seeds that agree within a split but splits that disagree: intervals over the 10 replicates as
    if independent would be narrow; the split-clustered ones are the t-interval over the split seeds'
    means, and say so."""
    split_seeds = (0, 1, 2)
    rows = with_split_offsets(
        known_rows(split_seeds=split_seeds, seeds=4, slope_noise=0.002), {0: -0.1, 1: 0.0, 2: 0.1}
    )
    summary = summarise(rows, config(seeds=4, split_seeds=split_seeds), 0.7)
    slopes = np.array(summary["replicate_slopes"]).reshape(3, 4)  # replicates sorted by (split seed, seed)
    assert summary["slope_ci"] == pytest.approx(list(mean_ci(slopes.mean(axis=1))[1:]))
    naive = mean_ci(slopes.ravel())
    assert summary["slope_ci"][1] - summary["slope_ci"][0] > 3 * (naive[2] - naive[1])
    top = summary["levels"][-1]
    assert top["gain_ci"] == pytest.approx(interval([0.0, 0.1, 0.2]), abs=0.01)  # the split seeds' mean gains
    assert summary["interval_basis"] == "split-clustered over 3 split seeds, 2 degrees of freedom"
    assert "95% CIs split-clustered over 3 split seeds" in summary["verdict"]
    two = summarise(rows[: len(rows) * 2 // 3], config(seeds=4, split_seeds=(0, 1)), 0.7)
    assert two["interval_basis"] == "split-clustered over 2 split seeds, 1 degree of freedom"
    assert two["slope_ci"] is not None  # one degree of freedom: wide, and reported


def test_one_split_seed_gives_intervals_over_its_seeds_labelled_one_split():
    rows = known_rows(split_seeds=(0,), seeds=4, slope_noise=0.05)
    summary = summarise(rows, config(seeds=4, split_seeds=(0,)), 0.7)
    assert summary["interval_basis"] == "one split"
    assert summary["slope_ci"] == pytest.approx(list(mean_ci(summary["replicate_slopes"])[1:]))
    assert "95% CIs one split" in summary["verdict"]


def test_clustered_interval_and_fieller_reduce_to_the_cluster_means():
    values, clusters = [1.0, 1.2, 2.0, 2.2, 3.0, 3.2], [0, 0, 1, 1, 2, 2]
    assert interval(values, clusters=clusters) == pytest.approx(list(mean_ci([1.1, 2.1, 3.1])[1:]))
    assert interval([1.0, 2.0, 3.0], clusters=[0, 0, 0]) is None  # one cluster tells nothing of their spread
    slopes, intercepts = np.array([0.2, 0.22, 0.18, 0.2, 0.25, 0.27]), np.array([-0.1, -0.12, -0.08, -0.1, -0.1, -0.14])
    clustered, bounded = fieller_interval(-intercepts, slopes, clusters=[0, 0, 1, 1, 2, 2])
    expected, _ = fieller_interval([0.11, 0.09, 0.12], [0.21, 0.19, 0.26])
    assert bounded and clustered == pytest.approx(expected)


def test_fieller_interval_is_reported_when_the_point_crossover_lies_outside_the_unit_interval():
    rows = known_rows(split_seeds=(0,), seeds=5, slope_noise=0.01)
    for row in rows:  # every replicate's line crosses zero at LC 1.5 instead of 0.5
        if row["arm"] == "sipt" and row["metric"] == "knn_accuracy":
            row["value"] -= 0.2
    summary = summarise(rows, config(seeds=5, split_seeds=(0,)), 0.7)
    assert summary["crossover_lc"] is None and summary["crossover_ci_bounded"]
    low, high = summary["crossover_ci"]
    assert low < 1.5 < high and low > 1
    assert (
        f"does not cross zero for LC in [0, 1] (point estimate outside [0, 1]; Fieller 95% CI [{low:.3f}, {high:.3f}])"
        in summary["verdict"]
    )
