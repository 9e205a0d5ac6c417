"""Scores of embeddings on samples they were never trained on, and the encoder's own neighbourhood
consistency: the metrics of the LC studies and of ``sipt-lab advise``."""

from __future__ import annotations

import numpy as np

from sipt_lab.evaluation.knn import heldout_knn
from sipt_lab.evaluation.probe import linear_probe
from sipt_lab.graphs.consistency import local_consistency
from sipt_lab.graphs.knn import knn_graph


def encoder_consistency(embeddings: np.ndarray, labels: np.ndarray, k: int) -> float:
    """The encoder's own neighbourhood consistency: LC of ``labels`` over the ``k``-NN graph of its
    ``(n, H)`` embeddings (the LC a pre-training graph must beat to add structure)."""
    return float(local_consistency(knn_graph(embeddings, k), labels))


def heldout_metrics(
    vectors: np.ndarray, labels: np.ndarray, train: np.ndarray, validation: np.ndarray, test: np.ndarray, k: int
) -> dict[str, float]:
    """:data:`~sipt_lab.studies.names.STUDY_METRICS` (but fine-tuning's) on the ``test`` rows of ``(n, H)`` ``vectors``: ``k``-NN with neighbours
    from the ``train`` rows, and a linear probe fitted on ``train`` with its strength chosen on
    ``validation`` (index arrays into ``vectors`` and the ``(n,)`` ``labels``)."""
    knn = heldout_knn(vectors[train], labels[train], vectors[test], labels[test], k)
    probe = linear_probe(
        vectors[train],
        labels[train],
        vectors[validation],
        labels[validation],
        vectors[test],
        labels[test],
        "classification",
    ).test
    return {
        "knn_accuracy": float(knn.accuracy),
        "knn_auroc": float(knn.auroc),
        "probe_accuracy": float(probe["accuracy"]),
        "probe_macro_f1": float(probe["macro_f1"]),
    }
