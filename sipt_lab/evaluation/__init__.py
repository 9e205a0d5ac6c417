"""Evaluation of pre-trained embeddings: k-NN AUROC (the paper's protocol), link retrieval, the
shape of the embedding (Rips persistence on k-NN graph geodesics, :mod:`~sipt_lab.evaluation.embedding_topology`),
the radius that recovers ``G_PT`` and the r-NN accuracy there (Theorem 1's validity condition,
:mod:`~sipt_lab.evaluation.radius_recovery`), method-vs-baseline comparisons (:mod:`~sipt_lab.evaluation.comparison`)."""

from sipt_lab.evaluation.comparison import (
    Comparison,
    compare_errors,
    format_comparison_table,
    relative_error_reduction,
    write_comparison_csv,
)
from sipt_lab.evaluation.embedding_topology import RipsBetti, farthest_points, knn_geodesic_distances, rips_betti
from sipt_lab.evaluation.knn import (
    KnnScores,
    heldout_knn,
    heldout_knn_auroc,
    knn_probabilities,
    loo_knn,
    loo_knn_auroc,
    macro_ovr_auroc,
)
from sipt_lab.evaluation.radius_recovery import (
    MAX_RECOVERY_NODES,
    RadiusNn,
    RadiusRecovery,
    radius_graph,
    radius_nn_accuracy,
    radius_recovery,
    radius_terms,
)
from sipt_lab.evaluation.retrieval import link_retrieval_metrics

__all__ = [
    "MAX_RECOVERY_NODES",
    "Comparison",
    "KnnScores",
    "RadiusNn",
    "RadiusRecovery",
    "RipsBetti",
    "compare_errors",
    "farthest_points",
    "format_comparison_table",
    "heldout_knn",
    "heldout_knn_auroc",
    "knn_geodesic_distances",
    "knn_probabilities",
    "link_retrieval_metrics",
    "loo_knn",
    "loo_knn_auroc",
    "macro_ovr_auroc",
    "radius_graph",
    "radius_nn_accuracy",
    "radius_recovery",
    "radius_terms",
    "relative_error_reduction",
    "rips_betti",
    "write_comparison_csv",
]
