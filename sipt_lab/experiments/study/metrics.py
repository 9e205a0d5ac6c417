"""What the study measures: held-out metrics of a set of vectors, the encoder's own neighbourhood
consistency, and the TF-IDF reference vectors."""

from __future__ import annotations

import numpy as np

from sipt_lab.graphs.graph import PretrainingGraph


def knn_graph(embeddings: np.ndarray, k: int) -> PretrainingGraph:
    """Each of the ``(n, H)`` rows linked to its ``k`` nearest other rows (Euclidean), symmetrised."""
    from sklearn.neighbors import NearestNeighbors

    n = embeddings.shape[0]
    _, neighbours = NearestNeighbors(n_neighbors=min(k + 1, n)).fit(embeddings).kneighbors(embeddings)
    rows = np.repeat(np.arange(n), neighbours.shape[1])
    return PretrainingGraph.from_edges(rows, neighbours.ravel(), n)  # self-matches are dropped


def encoder_consistency(embeddings: np.ndarray, labels: np.ndarray, k: int) -> float:
    """The encoder's own neighbourhood consistency: LC of ``labels`` over the ``k``-NN graph of its
    ``(n, H)`` embeddings (the LC a pre-training graph must beat to add structure)."""
    from sipt_lab.graphs.consistency import local_consistency

    return float(local_consistency(knn_graph(embeddings, k), labels))


def heldout_metrics(
    vectors: np.ndarray, labels: np.ndarray, train: np.ndarray, validation: np.ndarray, test: np.ndarray, k: int
) -> dict[str, float]:
    """:data:`STUDY_METRICS` on the ``test`` rows of ``(n, H)`` ``vectors``: ``k``-NN with neighbours
    from the ``train`` rows, and a linear probe fitted on ``train`` with its strength chosen on
    ``validation`` (index arrays into ``vectors`` and the ``(n,)`` ``labels``)."""
    from sipt_lab.data.tasks import linear_probe
    from sipt_lab.evaluation import heldout_knn

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


def tfidf_vectors(pretrain_texts: list[str], texts: list[str]) -> np.ndarray:
    """``(n, V)`` dense word TF-IDF rows of ``texts`` (at most 8192 words), vocabulary and IDF fitted
    on ``pretrain_texts`` only (:func:`sipt_lab.domains.wiki.tfidf_features`)."""
    from sipt_lab.domains.wiki import tfidf_features

    return (
        tfidf_features([*pretrain_texts, *texts], np.arange(len(pretrain_texts)), 8192)[len(pretrain_texts) :]
        .toarray()
        .astype(np.float32)
    )
