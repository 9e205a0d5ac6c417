"""The linear probe: a task's linear model fitted on frozen embeddings, its strength chosen on
validation (the kinds' models and metrics are :data:`~sipt_lab.data.tasks.TASK_KINDS`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sipt_lab.data.tasks import check_train_labels, get_task_kind

#: The probe's regularisation grid: C (inverse strength) or alpha (strength), 1e-3 .. 1e3.
PROBE_GRID = tuple(10.0 ** np.arange(-3, 4))


@dataclass(frozen=True)
class ProbeResult:
    """Attributes:
    test: the kind's metrics on the test split.
    validation: the metrics on the validation split at the chosen strength.
    strength: the chosen C (logistic) or alpha (ridge).
    """

    test: dict[str, float]
    validation: dict[str, float]
    strength: float


def linear_probe(
    train_X, train_y, val_X, val_y, test_X, test_y, kind: str, grid: tuple[float, ...] = PROBE_GRID
) -> ProbeResult:
    """Linear probe on frozen embeddings: fit on train for each strength in ``grid``, keep the one
    with the best primary metric on validation (the smaller strength value on ties), score on test.

    Args:
        train_X, val_X, test_X: ``(n_split, H)`` embeddings.
        train_y, val_y, test_y: labels as the kind expects (``(n_split,)`` or ``(n_split, L)``).
        kind: a :data:`~sipt_lab.data.tasks.TASK_KINDS` name.
    """
    task_kind = get_task_kind(kind)
    check_train_labels("probe", kind, train_y)
    best = None
    for strength in grid:
        model = task_kind.make_probe(strength).fit(train_X, train_y)
        scores = task_kind.metrics(val_y, task_kind.predict(model, val_X))
        if best is None or scores[task_kind.primary] > best[1][task_kind.primary]:
            best = (model, scores, strength)
    model, validation, strength = best
    test = task_kind.metrics(test_y, task_kind.predict(model, test_X))
    return ProbeResult(test, validation, float(strength))
