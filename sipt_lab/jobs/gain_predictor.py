"""SIPT's held-out gain predicted from what is known before training, fitted on the atlas's pairs.

The model is ordinary least squares of a pair's mean gain (SIPT minus LM-only, in the atlas's
metric) on :data:`FEATURES`: the pre-training graph's local consistency over the labelled
pre-training samples and the init's own k-NN consistency over the same samples. Theorem 1 says an
optimal SIPT embedder's neighbours agree with the labels at least as often as the graph's do, so
the graph adds structure where its LC exceeds what the encoder's neighbourhoods already hold; both
enter with their own coefficient rather than as one difference, so the fit says how far that holds.

A prediction comes with the 90 % OLS prediction interval for a new pair (the residual spread, which
holds the seeds' noise as well as what the features miss). :func:`leave_one_pair_out` refits
without each pair in turn and scores the held-out prediction: that is the predictor's measured
accuracy, reported whatever it is.
"""

from __future__ import annotations

import math

import numpy as np

from sipt_lab.core.errors import SiptError

#: Row fields the gain is predicted from, in the order of the coefficients after the intercept.
FEATURES = ("lc", "encoder_consistency")
#: Two-sided level of the prediction intervals.
PREDICTION_LEVEL = 0.9


def _design(rows: list[dict]) -> np.ndarray:
    return np.array([[1.0, *(float(row[name]) for name in FEATURES)] for row in rows])


def fit_gain(rows: list[dict], target: str = "gain") -> dict:
    """The OLS fit of ``row[target]`` on :data:`FEATURES` over ``rows`` (one per pair): a JSON-ready
    dict with ``features``, ``coefficients`` (intercept first), ``xtx_inverse``, ``residual_sd``,
    ``dof`` and the ``ranges`` (min, max) of each feature it saw. SiptError with fewer pairs than
    coefficients plus two."""
    X = _design(rows)
    y = np.array([float(row[target]) for row in rows])
    if len(rows) < X.shape[1] + 2:
        raise SiptError(f"a gain fit needs at least {X.shape[1] + 2} pairs, got {len(rows)}")
    xtx_inverse = np.linalg.pinv(X.T @ X)
    coefficients = xtx_inverse @ X.T @ y
    dof = len(rows) - X.shape[1]
    residual_sd = float(np.sqrt(np.sum((y - X @ coefficients) ** 2) / dof))
    return {
        "features": list(FEATURES),
        "target": target,
        "coefficients": coefficients.tolist(),
        "xtx_inverse": xtx_inverse.tolist(),
        "residual_sd": residual_sd,
        "dof": dof,
        "pairs": len(rows),
        "ranges": {name: [float(X[:, j + 1].min()), float(X[:, j + 1].max())] for j, name in enumerate(FEATURES)},
        "level": PREDICTION_LEVEL,
    }


def predict_gain(fit: dict, **features: float) -> tuple[float, float, float]:
    """``(gain, low, high)``: ``fit``'s prediction at ``features`` (:data:`FEATURES` by name) with its
    ``fit["level"]`` prediction interval for a new pair."""
    from scipy.stats import t

    x = np.array([1.0, *(float(features[name]) for name in fit["features"])])
    mean = float(x @ np.asarray(fit["coefficients"]))
    leverage = float(x @ np.asarray(fit["xtx_inverse"]) @ x)
    half = float(t.ppf(0.5 + fit["level"] / 2, fit["dof"])) * fit["residual_sd"] * math.sqrt(1 + leverage)
    return mean, mean - half, mean + half


def outside_range(fit: dict, **features: float) -> list[str]:
    """The features (by name) whose value lies outside the range ``fit`` was fitted on, in words."""
    return [
        f"{name} {features[name]:.3f} outside the atlas's [{low:.3f}, {high:.3f}]"
        for name, (low, high) in fit["ranges"].items()
        if not low <= features[name] <= high
    ]


def leave_one_pair_out(rows: list[dict], target: str = "gain") -> dict:
    """Each row predicted by :func:`fit_gain` on the others: ``predictions`` (per row: ``gain``,
    ``predicted``, ``low``, ``high``), ``sign_accuracy`` (over the rows whose interval excludes 0, the
    share whose measured gain has the predicted sign; None when no interval excludes 0), ``decided``
    (how many those are), ``mae`` (mean absolute error) and ``coverage`` (share of measured gains
    inside their interval); the same for the rule "sign of LC minus the encoder's consistency" as
    ``rule_sign_accuracy`` over every row with a non-zero measured gain."""
    predictions = []
    for held in range(len(rows)):
        fit = fit_gain(rows[:held] + rows[held + 1 :], target)
        mean, low, high = predict_gain(fit, **{name: rows[held][name] for name in FEATURES})
        predictions.append({"gain": float(rows[held][target]), "predicted": mean, "low": low, "high": high})
    decided = [p for p in predictions if p["low"] > 0 or p["high"] < 0]
    right = [p for p in decided if np.sign(p["gain"]) == np.sign(p["predicted"])]
    rule = [np.sign(row["lc"] - row["encoder_consistency"]) == np.sign(row[target]) for row in rows if row[target]]
    return {
        "predictions": predictions,
        "sign_accuracy": len(right) / len(decided) if decided else None,
        "decided": len(decided),
        "mae": float(np.mean([abs(p["gain"] - p["predicted"]) for p in predictions])),
        "coverage": float(np.mean([p["low"] <= p["gain"] <= p["high"] for p in predictions])),
        "rule_sign_accuracy": float(np.mean(rule)) if rule else None,
        "pairs": len(rows),
    }
