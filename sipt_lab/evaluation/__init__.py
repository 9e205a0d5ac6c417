"""Evaluation of pre-trained embeddings: k-NN AUROC (the paper's protocol), link retrieval and the
shape of the embedding (Rips persistence on k-NN graph geodesics, :mod:`~sipt_lab.evaluation.topology`)."""

from sipt_lab.evaluation.knn import (
    KnnScores,
    heldout_knn,
    heldout_knn_auroc,
    knn_probabilities,
    loo_knn,
    loo_knn_auroc,
    macro_ovr_auroc,
)
from sipt_lab.evaluation.retrieval import link_retrieval_metrics
from sipt_lab.evaluation.topology import RipsBetti, farthest_points, knn_geodesic_distances, rips_betti

__all__ = [
    "KnnScores",
    "RipsBetti",
    "farthest_points",
    "heldout_knn",
    "heldout_knn_auroc",
    "knn_geodesic_distances",
    "knn_probabilities",
    "link_retrieval_metrics",
    "loo_knn",
    "loo_knn_auroc",
    "macro_ovr_auroc",
    "rips_betti",
]
