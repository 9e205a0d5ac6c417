"""Evaluation of pre-trained embeddings: k-NN AUROC (the paper's protocol) and link retrieval."""

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

__all__ = [
    "KnnScores",
    "heldout_knn",
    "heldout_knn_auroc",
    "knn_probabilities",
    "link_retrieval_metrics",
    "loo_knn",
    "loo_knn_auroc",
    "macro_ovr_auroc",
]
