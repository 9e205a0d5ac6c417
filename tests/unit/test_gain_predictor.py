"""The atlas's predictor: models beside trivial baselines, validated by whole groups, with an
interval for one run sized by held-out errors and checked by nesting."""

import math

import numpy as np
import pytest
from atlas_fakes import ATLAS_REGIME as REGIME
from atlas_fakes import synthetic_atlas_runs
from hypothesis import given
from hypothesis import strategies as st

from sipt_lab.core.stats import wilson_interval
from sipt_lab.jobs.gain_predictor import (
    MODELS,
    budget_prediction,
    fit_atlas,
    grouped_predictions,
    run_columns,
    validation_table,
)


@pytest.fixture(scope="module")
def rising():
    return fit_atlas(synthetic_atlas_runs(), REGIME)


def test_a_gain_that_follows_lc_ships_an_lc_model_that_beats_the_baselines(rising):
    assert rising["model"] in ("lc", "lc+encoder")
    scores = rising["selection"]
    for baseline in (name for name, model in MODELS.items() if model.baseline):
        assert scores[rising["model"]] < scores[baseline] / 3
    assert rising["beats_lc"] == (scores[rising["model"]] < scores["lc"])
    line = rising["budgets"]["64"]["lc_line"]
    assert line[1] == pytest.approx(0.4, abs=0.03) and rising["budgets"]["64"]["lc_crossover"] == pytest.approx(
        0.5, abs=0.05
    )


def test_every_scheme_holds_out_whole_groups(rising):
    schemes = {(row["scheme"], row["groups"]) for row in rising["validation"]}
    assert schemes == {("pair", 32), ("graph", 4), ("task", 4), ("language", 2)}
    columns = run_columns(synthetic_atlas_runs(noise=0.0))
    budget = {key: values[columns["steps"] == 4] for key, values in columns.items()}
    # a model fitted without a task's runs predicts that task from the others: exact on noiseless data
    assert np.allclose(grouped_predictions(budget, "lc", "task"), budget["gain"])
    # the mean left out by language is the other language's mean, not this one's
    left_out = grouped_predictions(budget, "mean", "language")
    assert left_out[budget["language"] == "en"][0] == pytest.approx(budget["gain"][budget["language"] == "fr"].mean())


def test_single_run_intervals_are_sized_by_held_out_errors_and_cover(rising):
    for row in rising["validation"]:
        if row["model"] == rising["model"] and row["scheme"] in ("graph", "task"):
            assert 0.75 <= row["coverage"] <= 1.0
            assert row["coverage_low"] <= row["coverage"] <= row["coverage_high"]
    noisier = fit_atlas(synthetic_atlas_runs(noise=0.05, seed=1), REGIME)
    assert noisier["budgets"]["4"]["half_width"] > 2 * rising["budgets"]["4"]["half_width"]


def test_pure_noise_ships_no_confident_prediction():
    fit = fit_atlas(synthetic_atlas_runs(slope=0.0, noise=0.03, seed=2), REGIME | {"budgets": [4, 64]})
    for lc in (0.05, 0.5, 0.95):
        gain, low, high, _ = budget_prediction(fit, 64, lc=lc, encoder_consistency=0.5)
        assert low < 0 < high


def test_budgets_between_are_interpolated_in_log_steps_and_outside_warned(rising):
    at_4 = budget_prediction(rising, 4, lc=0.9, encoder_consistency=0.5)
    at_64 = budget_prediction(rising, 64, lc=0.9, encoder_consistency=0.5)
    at_16 = budget_prediction(rising, 16, lc=0.9, encoder_consistency=0.5)
    assert at_16[0] == pytest.approx((at_4[0] + at_64[0]) / 2)  # 16 is halfway between 4 and 64 in log steps
    assert not at_16[3]
    beyond = budget_prediction(rising, 1000, lc=0.9, encoder_consistency=0.5)
    assert beyond[:3] == at_64[:3] and "outside the atlas's budgets 4-64" in beyond[3][0]


def test_the_table_names_each_budget_scheme_and_model_once():
    table = validation_table(synthetic_atlas_runs())
    keys = [(row["steps"], row["scheme"], row["model"]) for row in table]
    assert len(keys) == len(set(keys)) == 2 * 4 * len(MODELS)
    assert all(row["sign_accuracy"] is None for row in table if row["model"] == "zero")


@given(st.floats(0.0, 1.0), st.integers(1, 5000))
def test_the_wilson_interval_stays_in_the_unit_interval_and_holds_the_proportion(p, n):
    low, high = wilson_interval(p, n)
    assert 0.0 <= low <= p + 1e-12 and p - 1e-12 <= high <= 1.0
    assert not math.isnan(low)
