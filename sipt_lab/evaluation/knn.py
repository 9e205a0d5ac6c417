"""The paper's evaluation: distance-weighted k-nearest-neighbour classification of embeddings.

``loo_knn`` is leave-one-out over the pre-training samples (the paper's protocol: for each sample,
3-NN fitted on all the others); ``heldout_knn`` classifies held-out samples against the
pre-training embeddings. Both reproduce scikit-learn's ``KNeighborsClassifier(k,
weights="distance")`` (Euclidean; weight 1/d; a query with exact-duplicate neighbours at distance 0
gives those all the weight) from one blocked distance computation instead of one fit per sample.
Scores are macro one-vs-rest AUROC (``roc_auc_score(..., multi_class="ovr")``) and accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.metrics import roc_auc_score

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import shorten

_BLOCK = 1024  # query rows per distance block: memory O(_BLOCK * n)


@dataclass
class KnnScores:
    """Attributes:
    auroc: macro one-vs-rest AUROC over the classes present among the queries.
    accuracy: fraction of queries whose most probable class is their label.
    probabilities: ``(q, C)`` class probabilities, columns in the order of ``classes``.
    classes: ``(C,)`` the reference set's classes, sorted.
    """

    auroc: float
    accuracy: float
    probabilities: np.ndarray
    classes: np.ndarray


def knn_probabilities(
    reference: np.ndarray,
    reference_labels: np.ndarray,
    queries: np.ndarray,
    k: int = 3,
    leave_one_out: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Distance-weighted k-NN class probabilities, as sklearn's ``weights="distance"``.

    Args:
        reference: ``(n, H)`` embeddings with labels ``reference_labels`` ``(n,)``.
        queries: ``(q, H)``; with ``leave_one_out`` they must be ``reference`` itself and query ``i``
            never sees reference ``i``.
        k: neighbours (at most the number of usable reference points).

    Returns:
        ``(q, C)`` float64 probabilities and the ``(C,)`` sorted classes of ``reference_labels``.
    """
    reference = np.asarray(reference, dtype=np.float64)
    queries = np.asarray(queries, dtype=np.float64)
    reference_labels = np.asarray(reference_labels)
    if reference_labels.shape != (len(reference),) or queries.shape[1:] != reference.shape[1:]:
        raise SiptError(
            f"{len(reference_labels)} labels for {len(reference)} embeddings of shape {reference.shape[1:]} "
            f"and queries of shape {queries.shape[1:]}; give one label per embedding, all of one width"
        )
    classes, codes = np.unique(reference_labels, return_inverse=True)
    usable = len(reference) - int(leave_one_out)
    if not 1 <= k <= usable:
        raise SiptError(f"k={k} neighbours requested but only {usable} reference samples exist; lower k")
    ref = torch.from_numpy(reference)
    neighbours = np.empty((len(queries), k), dtype=np.int64)
    distances = np.empty((len(queries), k), dtype=np.float64)
    for start in range(0, len(queries), _BLOCK):
        block = torch.from_numpy(queries[start : start + _BLOCK])
        # Direct differences (not the Gram trick), so exact duplicates are at distance exactly 0.
        d = torch.cdist(block, ref, compute_mode="donot_use_mm_for_euclid_dist")
        if leave_one_out:
            rows = torch.arange(len(block))
            d[rows, rows + start] = float("inf")
        top = torch.topk(d, k, dim=1, largest=False, sorted=True)
        neighbours[start : start + len(block)] = top.indices.numpy()
        distances[start : start + len(block)] = top.values.numpy()

    with np.errstate(divide="ignore"):
        weights = 1.0 / distances
    exact = np.isinf(weights)
    has_exact = exact.any(axis=1)
    weights[has_exact] = exact[has_exact]
    probabilities = np.zeros((len(queries), len(classes)))
    np.add.at(probabilities, (np.repeat(np.arange(len(queries)), k), codes[neighbours].ravel()), weights.ravel())
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    return probabilities, classes


def macro_ovr_auroc(labels: np.ndarray, probabilities: np.ndarray, classes: np.ndarray) -> float:
    """Mean over the classes present in ``labels`` of the binary AUROC of ``probabilities[:, c]``.

    Equals ``roc_auc_score(labels, probabilities, multi_class="ovr", labels=classes)`` when every
    class occurs in ``labels``; classes absent from ``labels`` are skipped instead of failing.
    """
    labels = np.asarray(labels)
    present = np.unique(labels)
    if len(present) < 2:
        raise SiptError(
            f"AUROC needs samples of at least two classes, but all {labels.size} evaluated sample(s) have the "
            f"label {shorten(present[0] if present.size else None)}; give labels of at least two classes (or, when "
            "the labels have them, evaluate more samples)"
        )
    columns = np.searchsorted(classes, present)
    if np.any(columns >= len(classes)) or np.any(classes[columns.clip(max=len(classes) - 1)] != present):
        missing = sorted(set(present.tolist()) - set(classes.tolist()))
        raise SiptError(
            f"evaluated classes {missing} never occur among the reference samples; give the reference set every class"
        )
    return float(np.mean([roc_auc_score(labels == c, probabilities[:, j]) for c, j in zip(present, columns)]))


def loo_knn(embeddings: np.ndarray, labels: np.ndarray, k: int = 3) -> KnnScores:
    """Leave-one-out ``k``-NN over ``(n, H)`` embeddings with ``(n,)`` labels (the paper's protocol).

    Probabilities cover every class of ``labels`` (a class with a single member gets probability 0
    when that member is left out, rather than losing its column).
    """
    labels = np.asarray(labels)
    probabilities, classes = knn_probabilities(embeddings, labels, embeddings, k, leave_one_out=True)
    return _scores(labels, probabilities, classes)


def heldout_knn(
    train_embeddings: np.ndarray,
    train_labels: np.ndarray,
    test_embeddings: np.ndarray,
    test_labels: np.ndarray,
    k: int = 3,
) -> KnnScores:
    """Classify held-out ``(q, H)`` embeddings by ``k``-NN among the pre-training ``(n, H)`` ones.

    AUROC is macro over the classes present in ``test_labels`` (pre-training classes absent from
    the test set are skipped; a test class absent from the pre-training set is a SiptError).
    """
    test_labels = np.asarray(test_labels)
    probabilities, classes = knn_probabilities(train_embeddings, train_labels, test_embeddings, k)
    return _scores(test_labels, probabilities, classes)


def loo_knn_auroc(embeddings: np.ndarray, labels: np.ndarray, k: int = 3) -> float:
    """:func:`loo_knn`'s macro one-vs-rest AUROC."""
    return loo_knn(embeddings, labels, k).auroc


def heldout_knn_auroc(
    train_embeddings: np.ndarray,
    train_labels: np.ndarray,
    test_embeddings: np.ndarray,
    test_labels: np.ndarray,
    k: int = 3,
) -> float:
    """:func:`heldout_knn`'s macro one-vs-rest AUROC."""
    return heldout_knn(train_embeddings, train_labels, test_embeddings, test_labels, k).auroc


def _scores(labels: np.ndarray, probabilities: np.ndarray, classes: np.ndarray) -> KnnScores:
    auroc = macro_ovr_auroc(labels, probabilities, classes)
    accuracy = float(np.mean(classes[probabilities.argmax(axis=1)] == labels))
    return KnnScores(auroc, accuracy, probabilities, classes)
