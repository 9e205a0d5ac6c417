"""SIPT's held-out gain in one run, predicted from what is known before training, chosen and
calibrated on the atlas's runs by grouped validation.

A *run* is one pre-training of a (graph, task) pair at one budget, by one seed on one draw of the
articles: its gain is SIPT's score minus LM-only's on never-seen articles, the single number a
user's own run would give. :data:`MODELS` are the candidate predictors, the trivial ones among them
(predict no gain, predict the atlas's mean, ``sign(LC - 0.5)``) beside the ones fitted on LC and
the init's own consistency; each is fitted per budget on the runs.

:func:`grouped_predictions` holds out one group of runs at a time (:data:`SCHEMES`: a pair, a
graph, a task, a language) and predicts it from a fit on the others; the mean absolute error of
those held-out single-run predictions is the model's measured accuracy. The interval of a
prediction is the prediction plus or minus the ``level`` quantile of the absolute held-out
errors, so it is an interval for *one run*; its coverage is checked by nesting, each held-out
group's width taken from the other groups' own held-out errors (:func:`validation_table`).
:func:`fit_atlas` ships the model with the lowest grouped error, and says which.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.core.stats import wilson_interval

#: Two-sided level of the prediction intervals: the quantile of the absolute held-out errors.
PREDICTION_LEVEL = 0.9
#: Version of the ``fit.json`` layout this module writes and reads.
FIT_FORMAT = 2
#: Validation schemes: name -> the run fields whose values form the groups held out together.
SCHEMES = {
    "pair": ("language", "task", "graph"),
    "graph": ("graph",),
    "task": ("task",),
    "language": ("language",),
}
#: The schemes that hold out a whole graph, task or language: what a user's new graph, task or
#: corpus is to the atlas. The shipped model is chosen, and its interval sized, on these.
GROUPED_SCHEMES = ("graph", "task", "language")


def _design(runs: dict[str, np.ndarray], features: tuple[str, ...]) -> np.ndarray:
    n = runs["gain"].size
    return np.column_stack([np.ones(n), *(runs[name] for name in features)])


def _ols(features: tuple[str, ...]) -> tuple[Callable, Callable]:
    def fit(runs: dict[str, np.ndarray]) -> dict:
        design = _design(runs, features)
        coefficients = np.linalg.pinv(design.T @ design) @ (design.T @ runs["gain"])
        return {"coefficients": coefficients.tolist()}

    def predict(params: dict, runs: dict[str, np.ndarray]) -> np.ndarray:
        return _design(runs, features) @ np.asarray(params["coefficients"])

    return fit, predict


def _sign_fit(runs: dict[str, np.ndarray]) -> dict:
    return {"magnitude": float(np.mean(np.abs(runs["gain"])))}


def _sign_predict(params: dict, runs: dict[str, np.ndarray]) -> np.ndarray:
    return np.sign(runs["lc"] - 0.5) * params["magnitude"]


@dataclass(frozen=True)
class Model:
    """A candidate predictor of a run's gain.

    Attributes:
        words: what it predicts, for tables and ``advise``.
        features: the run fields it reads (``lc``, ``encoder_consistency``).
        fit: ``runs -> params`` (JSON-ready) from columns of runs (``gain`` and the features).
        predict: ``(params, runs) -> (n,)`` predicted gains.
        baseline: a trivial predictor, there to be beaten.
    """

    words: str
    features: tuple[str, ...]
    fit: Callable[[dict], dict]
    predict: Callable[[dict, dict], np.ndarray]
    baseline: bool = False


#: The candidate predictors, trivial baselines first.
MODELS: dict[str, Model] = {
    "zero": Model("no gain", (), lambda runs: {}, lambda params, runs: np.zeros(runs["gain"].size), True),
    "mean": Model("the atlas's mean gain", (), *_ols(()), True),
    "lc-sign": Model("sign(LC - 0.5) times the atlas's mean absolute gain", ("lc",), _sign_fit, _sign_predict, True),
    "lc": Model("a line in LC", ("lc",), *_ols(("lc",))),
    "lc+encoder": Model(
        "a plane in LC and the init's own consistency",
        ("lc", "encoder_consistency"),
        *_ols(("lc", "encoder_consistency")),
    ),
}
#: The model every added feature must beat under grouped validation to be kept.
REFERENCE_MODEL = "lc"


def run_columns(runs: list[dict]) -> dict[str, np.ndarray]:
    """Column arrays of ``runs`` (dicts with ``language``, ``task``, ``graph``, ``steps``, ``lc``,
    ``encoder_consistency`` and ``gain``): numbers as float, names as str, and per scheme of
    :data:`SCHEMES` the int group of each run as ``group:<scheme>``."""
    if not runs:
        raise SiptError("no runs to fit; the atlas has no natural pair with an LC")
    columns = {}
    for key in runs[0]:
        values = [run[key] for run in runs]
        columns[key] = np.array(values, dtype=float if isinstance(values[0], float | int) else str)
    for scheme, fields in SCHEMES.items():
        keys = ["\t".join(parts) for parts in zip(*(columns[name] for name in fields))]
        columns[f"group:{scheme}"] = np.unique(keys, return_inverse=True)[1]
    return columns


def _take(runs: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, np.ndarray]:
    return {key: values[mask] for key, values in runs.items()}


def group_ids(runs: dict[str, np.ndarray], scheme: str) -> np.ndarray:
    """``(n,)`` int group ``0..G-1`` of each run under ``scheme`` (:data:`SCHEMES`)."""
    return np.unique(runs[f"group:{scheme}"], return_inverse=True)[1]


def grouped_predictions(runs: dict[str, np.ndarray], model: str, scheme: str) -> np.ndarray:
    """``(n,)`` each run's gain predicted by ``model`` fitted on the runs of the other groups of
    ``scheme`` (NaN where one group holds every run)."""
    groups = group_ids(runs, scheme)
    predicted = np.full(groups.size, math.nan)
    if groups.max() == 0:
        return predicted
    chosen = MODELS[model]
    for group in range(groups.max() + 1):
        held = groups == group
        predicted[held] = chosen.predict(chosen.fit(_take(runs, ~held)), _take(runs, held))
    return predicted


def error_quantile(errors: np.ndarray, level: float = PREDICTION_LEVEL) -> float:
    """The ``level`` quantile of absolute errors (the half-width of a single-run interval)."""
    errors = np.abs(errors[np.isfinite(errors)])
    return float(np.quantile(errors, level, method="higher")) if errors.size else math.nan


def interval_half_width(runs: dict[str, np.ndarray], model: str, level: float = PREDICTION_LEVEL) -> float:
    """The half-width of ``model``'s single-run interval fitted on ``runs``: the largest, over the
    :data:`GROUPED_SCHEMES` that hold out something, of the ``level`` quantile of its held-out
    absolute errors (NaN when no scheme can hold out a group)."""
    widths = [
        error_quantile(grouped_predictions(runs, model, scheme) - runs["gain"], level)
        for scheme in GROUPED_SCHEMES
        if group_ids(runs, scheme).max() > 0
    ]
    return max(widths) if widths else math.nan


def nested_widths(runs: dict[str, np.ndarray], model: str, scheme: str) -> np.ndarray:
    """``(n,)`` the half-width of each run's held-out interval under ``scheme``: the
    :func:`interval_half_width` of the runs outside its group, so a held-out group never sizes its
    own interval."""
    groups = group_ids(runs, scheme)
    widths = np.full(groups.size, math.nan)
    for group in range(groups.max() + 1):
        held = groups == group
        widths[held] = interval_half_width(_take(runs, ~held), model)
    return widths


def validation_row(runs: dict[str, np.ndarray], model: str, scheme: str) -> dict:
    """One row of the validation table: ``model`` under ``scheme`` on ``runs`` (one budget).

    Keys: ``runs`` and ``groups``; ``mae``, the mean absolute error of the held-out single-run
    predictions; ``sign_accuracy``, the share of runs with a non-zero gain whose held-out
    prediction has its sign (None for a model that predicts 0); ``decided`` and ``decided_right``,
    the runs whose nested interval excludes 0 and those of them with the predicted sign;
    ``coverage`` of the nested intervals with its 95 % Wilson interval (``coverage_low``,
    ``coverage_high``; runs of one group are not independent, so it is narrower than it should be)."""
    predicted = grouped_predictions(runs, model, scheme)
    widths = nested_widths(runs, model, scheme)
    gain = runs["gain"]
    usable = np.isfinite(predicted) & np.isfinite(widths)
    inside = np.abs(predicted - gain) <= widths
    signed = usable & (gain != 0)
    sign_accuracy = (
        None
        if model == "zero" or not signed.any()
        else float(np.mean(np.sign(predicted[signed]) == np.sign(gain[signed])))
    )
    decided = usable & ((predicted - widths > 0) | (predicted + widths < 0))
    covered = int(inside[usable].sum())
    low, high = wilson_interval(covered / max(usable.sum(), 1), int(usable.sum()))
    return {
        "model": model,
        "scheme": scheme,
        "runs": int(usable.sum()),
        "groups": int(group_ids(runs, scheme).max() + 1),
        "mae": float(np.mean(np.abs(predicted[usable] - gain[usable]))) if usable.any() else math.nan,
        "sign_accuracy": sign_accuracy,
        "decided": int(decided.sum()),
        "decided_right": int(np.sum(decided & (np.sign(predicted) == np.sign(gain)))),
        "coverage": covered / usable.sum() if usable.any() else math.nan,
        "coverage_low": low,
        "coverage_high": high,
    }


def validation_table(runs: list[dict]) -> list[dict]:
    """:func:`validation_row` of every model of :data:`MODELS` under every scheme of
    :data:`SCHEMES` at every budget (``steps``) of ``runs``; each row holds its ``steps``."""
    columns = run_columns(runs)
    table = []
    for steps in np.unique(columns["steps"]):
        budget = _take(columns, columns["steps"] == steps)
        for scheme in SCHEMES:
            if group_ids(budget, scheme).max() == 0:
                continue  # one language (or graph, task): nothing to hold out
            for model in MODELS:
                table.append({"steps": int(steps)} | validation_row(budget, model, scheme))
    return table


def grouped_error(table: list[dict], model: str) -> float:
    """``model``'s mean absolute error averaged over budgets and :data:`GROUPED_SCHEMES` (the
    selection score; lower is better)."""
    errors = [row["mae"] for row in table if row["model"] == model and row["scheme"] in GROUPED_SCHEMES]
    return float(np.mean(errors)) if errors else math.nan


def fit_atlas(runs: list[dict], regime: dict, level: float = PREDICTION_LEVEL) -> dict:
    """The predictor ``advise`` reads, as a JSON-ready dict.

    ``runs``: one dict per natural run (``language``, ``task``, ``graph``, ``steps``, ``lc``,
    ``encoder_consistency``, ``gain`` and ``labelled``); ``regime``: the settings the atlas trained
    and scored with (init, pooling, max_len, k, batch, λ, loss, languages, corpus...), stored so
    that ``advise`` can say what it predicts and check the user's settings against them.

    The shipped model is the one of :data:`MODELS` with the lowest :func:`grouped_error`; per
    budget it holds its parameters fitted on every run of the budget and the half-width of its
    single-run interval: the largest, over :data:`GROUPED_SCHEMES`, of the ``level`` quantile of
    its held-out absolute errors. Also per budget: LC alone's fit and crossover (the LC at which it
    predicts no gain)."""
    columns = run_columns(runs)
    table = validation_table(runs)
    scores = {model: grouped_error(table, model) for model in MODELS}
    shipped = min((model for model in MODELS if math.isfinite(scores[model])), key=scores.get)
    budgets = {}
    for steps in np.unique(columns["steps"]):
        budget = _take(columns, columns["steps"] == steps)
        lc_line = MODELS["lc"].fit(budget)["coefficients"]
        budgets[str(int(steps))] = {
            "params": MODELS[shipped].fit(budget),
            "half_width": interval_half_width(budget, shipped, level),
            "runs": int(budget["gain"].size),
            "lc_line": lc_line,
            "lc_crossover": -lc_line[0] / lc_line[1] if lc_line[1] else None,
        }
    return {
        "format": FIT_FORMAT,
        "model": shipped,
        "model_words": MODELS[shipped].words,
        "features": list(MODELS[shipped].features),
        "selection": scores,
        "beats_lc": scores[shipped] < scores[REFERENCE_MODEL],
        "level": level,
        "regime": regime,
        "budgets": budgets,
        "ranges": {
            name: [float(columns[name].min()), float(columns[name].max())]
            for name in ("lc", "encoder_consistency", "labelled")
        },
        "validation": table,
    }


def budget_prediction(fit: dict, steps: int, **features: float) -> tuple[float, float, float, list[str]]:
    """``(gain, low, high, warnings)``: the fit's single-run prediction at ``steps`` optimiser steps
    for a pair with ``features`` (``lc``, ``encoder_consistency``). Between two of the atlas's
    budgets the prediction and half-width are interpolated linearly in log(steps); outside them the
    nearest budget's are used, with a warning."""
    budgets = sorted(int(steps) for steps in fit["budgets"])
    warnings = []
    if not budgets[0] <= steps <= budgets[-1]:
        nearest = budgets[0] if steps < budgets[0] else budgets[-1]
        warnings.append(
            f"{steps} steps lie outside the atlas's budgets {budgets[0]}-{budgets[-1]}; predicting for {nearest}"
        )
        steps = nearest
    upper = next(b for b in budgets if b >= steps)
    lower = max(b for b in budgets if b <= steps)
    weight = 0.0 if upper == lower else (math.log(steps) - math.log(lower)) / (math.log(upper) - math.log(lower))
    columns = {name: np.array([float(value)]) for name, value in features.items()} | {"gain": np.zeros(1)}
    model = MODELS[fit["model"]]
    gains, widths = [], []
    for budget in (lower, upper):
        entry = fit["budgets"][str(budget)]
        gains.append(float(model.predict(entry["params"], columns)[0]))
        widths.append(entry["half_width"])
    gain = (1 - weight) * gains[0] + weight * gains[1]
    half = (1 - weight) * widths[0] + weight * widths[1]
    return gain, gain - half, gain + half, warnings


def figure_budgets(fit: dict) -> dict[str, dict]:
    """Per budget of ``fit``, what :func:`~sipt_lab.viz.atlas_plots.atlas_panels` draws: LC alone's
    line, the centre of the shipped model's single-run band at LC ``0, 0.01, ..., 1`` (its
    prediction when it reads LC alone or nothing; LC alone's line when it reads more) and the
    band's half-width."""
    grid = np.linspace(0.0, 1.0, 101)
    model = MODELS[fit["model"]]
    out = {}
    for steps, entry in fit["budgets"].items():
        line = entry["lc_line"][0] + entry["lc_line"][1] * grid
        if set(model.features) <= {"lc"}:
            line = model.predict(entry["params"], {"lc": grid, "gain": np.zeros_like(grid)})
        out[steps] = {"lc_line": entry["lc_line"], "band": line.tolist(), "half_width": entry["half_width"]}
    return out


def draw_fit(stem, fit: dict, user: dict | None = None) -> list:
    """``<stem>.png`` / ``.pdf``: the atlas's pairs (``fit["points"]``) with LC alone's line and the
    shipped model's single-run band per budget (:func:`figure_budgets`); ``user``: a user's graph
    to mark (``lc``, ``steps``, ``gain``, ``low``, ``high``)."""
    from sipt_lab.viz.atlas_plots import atlas_panels

    regime = fit["regime"]
    return atlas_panels(
        stem,
        budgets=figure_budgets(fit),
        points=fit["points"],
        title=f"Natural-graph atlas: SIPT - LM-only in {regime['k']}-NN accuracy on never-seen articles\n"
        f"{Path(regime['init']).name}, batch {regime['batch_size']} x {regime['max_len']} tokens, "
        f"{', '.join(regime['languages'])}; band: one run of the shipped predictor ({fit['model']})",
        user=user,
    )


def outside_range(fit: dict, **features: float) -> list[str]:
    """The features (by name) whose value lies outside the range ``fit`` was fitted on, in words."""
    return [
        f"{name} {features[name]:.3f} outside the atlas's [{low:.3f}, {high:.3f}]"
        for name, (low, high) in fit["ranges"].items()
        if name in features and not low <= features[name] <= high
    ]
