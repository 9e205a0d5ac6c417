"""Fine-tuning tasks: what kind of labels a task has, how it is scored, and its linear probe.

A :class:`TaskKind` is a registry entry (:data:`TASK_KINDS`), so a new kind of task is an entry,
never a branch in the code that fine-tunes or compares. Each kind knows

* its metrics, all "higher is better", and the ``primary`` one, whose ``1 - value`` is the error
  that relative error reductions (:mod:`~sipt_lab.evaluation.comparison`) compare;
* its linear-probe estimator (scikit-learn, standardised features) and the log grid of
  regularisation strengths the probe picks from on the validation split;
* what makes its training labels unusable (one class only, a constant target ...).

Kinds: ``classification`` (labels ``(n,)`` ints; accuracy, macro-F1; logistic regression over
``C``), ``classification-f1`` (the same, with macro-F1 primary: SciBERT's tasks), ``regression`` (targets ``(n,)`` floats; Spearman's rho; ridge over ``alpha``),
``multilabel`` (``(n, L)`` 0/1; macro AUROC over the labels with both values present; one-vs-rest
logistic regression over ``C``) and ``token-classification`` (per-token classes, e.g. TAPE's
secondary structure: a task's labels are ``(n,)`` object arrays of ``(len_i,)`` int codes, one per
residue; the kind's metrics, probe and label checks read them flattened over the scored tokens,
:func:`flatten_tokens`, so its accuracy is per-token accuracy over real residues) and
``contact-prediction`` (TAPE's contact maps, one :class:`~sipt_lab.data.contacts.ContactMap` per
protein, read per residue pair; precision at L/5 of medium- and long-range contacts,
:mod:`~sipt_lab.data.contacts`).

A :class:`Task` names its kind and labels a subset of a domain's samples; :func:`~sipt_lab.evaluation.probe.linear_probe`
fits a probe on frozen embeddings and scores it on the test split.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import shorten
from sipt_lab.data.contacts import CONTACT_RANGES, code_contact_maps, no_contacts, precision_at_l5

_MAX_ITER = 2000


def _code_classes(raw: list) -> tuple[np.ndarray, tuple[str, ...]]:
    """Class labels (any values, compared as strings) -> ``(m,)`` int64 codes of the sorted names."""
    classes, coded = np.unique(np.asarray(raw, dtype=str), return_inverse=True)
    return coded.ravel().astype(np.int64), tuple(classes.tolist())


@dataclass(frozen=True)
class TaskKind:
    """One kind of fine-tuning task.

    Attributes:
        name: registry key.
        metrics: ``(y_true, output) -> {metric: value}``; ``output`` is what ``predict`` returns.
        primary: the metric used to choose the probe's strength and whose ``1 - value`` is the error.
        make_probe: ``strength -> unfitted scikit-learn estimator``.
        predict: ``(fitted estimator, X (n, H)) -> output`` (labels, values or ``(n, L)`` scores).
        train_problem: ``(train labels, label names) -> None``, or what makes them unusable (a
            phrase naming a class by its name, not its code).
        code: ``raw labels (m,) -> (labels, label names)``: how a loader's raw labels (strings,
            numbers, per-token lists) become :attr:`Task.labels`.
        per_token: labels are per-sample sequences of per-token classes; ``metrics``, ``make_probe``,
            ``predict`` and ``train_problem`` then read ``(N_tokens,)`` flattened labels
            (:func:`flatten_tokens`) and ``(N_tokens, H)`` per-token states.
        pairwise: (with ``per_token``) labels are per-sample residue contact maps, read per pair of
            residues: ``(N_pairs, 4)`` rows of :func:`~sipt_lab.data.contacts.flatten_pairs` and
            ``(N_pairs, 2H)`` pair features; ``metrics`` gets ``(N_pairs,)`` contact probabilities.
    """

    name: str
    metrics: Callable[[np.ndarray, np.ndarray], dict[str, float]]
    primary: str
    make_probe: Callable[[float], object]
    predict: Callable[[object, np.ndarray], np.ndarray]
    train_problem: Callable[[np.ndarray, tuple[str, ...]], str | None]
    code: Callable[[list], tuple[np.ndarray, tuple[str, ...]]] = _code_classes
    per_token: bool = False
    pairwise: bool = False

    def error(self, metrics: dict[str, float]) -> float:
        """The error relative error reductions compare: ``1 - metrics[primary]``."""
        return 1.0 - metrics[self.primary]


@dataclass(frozen=True)
class Task:
    """A labelled fine-tuning task over some of a domain's samples.

    Attributes:
        name: the task's name within its domain.
        kind: a :data:`TASK_KINDS` key.
        samples: ``(m,)`` int64 strictly increasing indices of the labelled samples among the domain's ``n``.
        labels: ``(m,)`` (classification ints, regression floats), ``(m, L)`` 0/1 (multi-label) or
            ``(m,)`` object array of ``(len_k,)`` int64 codes (per-token), row ``k`` labelling sample ``samples[k]``.
        label_names: the class (or label column) names, code ``c`` is ``label_names[c]``; may be empty.
    """

    name: str
    kind: str
    samples: np.ndarray
    labels: np.ndarray
    label_names: tuple[str, ...] = ()

    def __post_init__(self):
        if np.any(np.diff(self.samples) <= 0) or len(self.labels) != self.samples.size:
            raise ValueError("Task.samples must be strictly increasing with one row of labels each")

    def is_labelled(self, indices) -> np.ndarray:
        """``(k,)`` bool: which of the sample indices ``indices`` ``(k,)`` carry a label."""
        indices = np.asarray(indices, dtype=np.int64)
        if not self.samples.size:
            return np.zeros(indices.shape, bool)
        pos = np.searchsorted(self.samples, indices).clip(max=self.samples.size - 1)
        return self.samples[pos] == indices

    def labels_of(self, indices) -> np.ndarray:
        """Labels of the samples ``indices`` ``(k,)``; SiptError if some of them are unlabelled."""
        indices = np.asarray(indices, dtype=np.int64)
        missing = indices[~self.is_labelled(indices)]
        if missing.size:
            raise SiptError(
                f"task {self.name!r} has no label for {missing.size} of the samples asked "
                f"for (sample index {missing[0]} first); label them or leave them out"
            )
        return self.labels[np.searchsorted(self.samples, indices)]


def _classification_metrics(y_true: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    return {
        "accuracy": float(accuracy_score(y_true, predicted)),
        "macro_f1": float(f1_score(y_true, predicted, average="macro", zero_division=0)),
    }


def _regression_metrics(y_true: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    # A constant side has no ranking, so no rank correlation: score it 0 rather than NaN.
    if np.ptp(y_true) == 0 or np.ptp(predicted) == 0:
        return {"spearman": 0.0}
    return {"spearman": float(spearmanr(y_true, predicted).statistic)}


def _multilabel_metrics(y_true: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    both = (y_true.min(axis=0) == 0) & (y_true.max(axis=0) == 1)
    if not both.any():
        raise SiptError(
            "no label of the multi-label task has both values among the scored samples, so "
            "AUROC is undefined; use a larger test split"
        )
    return {"macro_auroc": float(roc_auc_score(y_true[:, both], scores[:, both], average="macro"))}


def _one_class(labels: np.ndarray, names: tuple[str, ...]) -> str | None:
    classes = np.unique(labels)
    return f"has one class only ({_class_name(classes[0], names)})" if classes.size < 2 else None


def _class_name(code, names: tuple[str, ...]) -> str:
    """The name of class ``code`` (a numpy integer) for a message: its label string when known."""
    code = code.item() if hasattr(code, "item") else code
    return shorten(names[code]) if isinstance(code, int) and 0 <= code < len(names) else shorten(code)


def _constant_target(targets: np.ndarray, names: tuple[str, ...]) -> str | None:
    return "has a constant target" if np.ptp(targets) == 0 else None


def _constant_label_column(labels: np.ndarray, names: tuple[str, ...]) -> str | None:
    constant = np.flatnonzero(labels.min(axis=0) == labels.max(axis=0))
    return f"has label {_class_name(constant[0], names)} constant" if constant.size else None


def _code_values(raw: list) -> tuple[np.ndarray, tuple[str, ...]]:
    """Regression targets (numbers, or strings such as ``"2.5"``) -> ``(m,)`` float64; SiptError
    naming the first value that is not a finite number (a string is never compared as text)."""
    values = np.empty(len(raw), dtype=np.float64)
    for k, value in enumerate(raw):
        try:
            values[k] = float(value)
        except (TypeError, ValueError):
            values[k] = np.nan
        if not np.isfinite(values[k]):
            raise SiptError(
                f"regression target {shorten(value)} (label {k + 1} of {len(raw)}) is not a finite number; "
                "give every sample a number"
            )
    return values, ()


#: Separator of the labels of one sample in a multi-label labels file (``id<TAB>a,b,c``).
MULTILABEL_SEPARATOR = ","


def _code_label_sets(raw: list) -> tuple[np.ndarray, tuple[str, ...]]:
    """Multi-label labels: per sample a string of label names joined by :data:`MULTILABEL_SEPARATOR`
    (or a list of names) -> ``(m, L)`` int64 0/1 over the ``L`` sorted names."""
    sets = [
        {name.strip() for name in (row.split(MULTILABEL_SEPARATOR) if isinstance(row, str) else row)} - {""}
        for row in raw
    ]
    names = tuple(sorted(set().union(*sets)))
    column = {name: j for j, name in enumerate(names)}
    matrix = np.zeros((len(sets), len(names)), dtype=np.int64)
    for k, row in enumerate(sets):
        matrix[k, [column[name] for name in row]] = 1
    return matrix, names


def _code_token_classes(raw: list) -> tuple[np.ndarray, tuple[str, ...]]:
    """Per-token integer classes, ``(m,)`` lists -> ``(m,)`` object array of ``(len_k,)`` int64 codes of
    the sorted distinct values (named by their decimal strings)."""
    rows = [np.asarray(row, dtype=np.int64) for row in raw]
    classes = np.unique(np.concatenate(rows)) if rows else np.empty(0, np.int64)
    labels = np.empty(len(rows), dtype=object)
    labels[:] = [np.searchsorted(classes, row) for row in rows]
    return labels, tuple(str(c) for c in classes.tolist())


def flatten_tokens(labels: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``(sum counts,)`` int64: the first ``counts[k]`` token labels of each row of the per-token
    ``labels`` ``(m,)`` in row order (the tokens an encoder scored; the rest were truncated away)."""
    if not len(labels):
        return np.empty(0, np.int64)
    return np.concatenate([row[:count] for row, count in zip(labels, np.asarray(counts).tolist())]).astype(np.int64)


def _logistic(c: float):
    return LogisticRegression(C=c, max_iter=_MAX_ITER)


TASK_KINDS: dict[str, TaskKind] = {
    kind.name: kind
    for kind in (
        TaskKind(
            "classification",
            _classification_metrics,
            "accuracy",
            lambda c: make_pipeline(StandardScaler(), _logistic(c)),
            lambda model, X: model.predict(X),
            _one_class,
        ),
        TaskKind(
            "classification-f1",
            _classification_metrics,
            "macro_f1",
            lambda c: make_pipeline(StandardScaler(), _logistic(c)),
            lambda model, X: model.predict(X),
            _one_class,
        ),
        TaskKind(
            "regression",
            _regression_metrics,
            "spearman",
            lambda alpha: make_pipeline(StandardScaler(), Ridge(alpha=alpha)),
            lambda model, X: model.predict(X),
            _constant_target,
            _code_values,
        ),
        TaskKind(
            "multilabel",
            _multilabel_metrics,
            "macro_auroc",
            lambda c: make_pipeline(StandardScaler(), OneVsRestClassifier(_logistic(c))),
            lambda model, X: model.predict_proba(X),
            _constant_label_column,
            _code_label_sets,
        ),
        TaskKind(
            "token-classification",
            _classification_metrics,
            "accuracy",
            lambda c: make_pipeline(StandardScaler(), _logistic(c)),
            lambda model, X: model.predict(X),
            _one_class,
            _code_token_classes,
            per_token=True,
        ),
        TaskKind(
            "contact-prediction",
            precision_at_l5,
            next(iter(CONTACT_RANGES)),
            lambda c: make_pipeline(StandardScaler(), _logistic(c)),
            lambda model, X: model.predict_proba(X)[:, 1],
            no_contacts,
            code_contact_maps,
            per_token=True,
            pairwise=True,
        ),
    )
}


def get_task_kind(name: str) -> TaskKind:
    """The kind ``name`` of :data:`TASK_KINDS`; SiptError naming the choices otherwise."""
    try:
        return TASK_KINDS[name]
    except KeyError:
        raise SiptError(f"unknown task kind {name!r}; choose one of: {', '.join(TASK_KINDS)}") from None


def check_train_labels(task_name: str, kind: str, train_labels: np.ndarray, label_names: tuple[str, ...] = ()) -> None:
    """SiptError if the training labels of ``task_name`` cannot train its kind's probe or head;
    ``label_names[code]`` names a class in the message."""
    problem = get_task_kind(kind).train_problem(np.asarray(train_labels), tuple(label_names))
    if problem:
        raise SiptError(
            f"task {task_name!r} {problem} in its train split; "
            "split so that train holds every class (or varied targets)"
        )
