"""Link retrieval on ``G_PT``: do a node's graph neighbours rank first by embedding distance?

Each query node ``i`` (a node with at least one neighbour) scores every other node ``j`` by
``s_ij = −‖z_i − z_j‖``; ``i`` itself is left out of its list. The metrics, as in the original
SIPT code, pick λ_SI without looking at the fine-tuning task:

* ``lrap``: sklearn ``label_ranking_average_precision_score`` (mean over queries of the mean, over
  true neighbours, of the precision at that neighbour's rank);
* ``ndcg``: sklearn ``ndcg_score`` with binary gains over the full list (ties averaged);
* ``ap``: sklearn ``average_precision_score`` over all (query, candidate) pairs pooled (micro);
* ``mrr``: mean of ``1 / rank`` of the best-ranked neighbour (rank 1 + the number of non-neighbours
  scoring strictly higher).
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import average_precision_score, label_ranking_average_precision_score, ndcg_score

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.graph import PretrainingGraph


def link_retrieval_metrics(
    embeddings: np.ndarray,
    graph: PretrainingGraph,
    max_queries: int | None = None,
    rng: np.random.Generator | int | None = 0,
    queries: np.ndarray | None = None,
) -> dict[str, float]:
    """LRAP, nDCG, micro AP and MRR of retrieving ``graph``'s neighbours from ``(n, H)`` embeddings.

    Args:
        embeddings: ``(n, H)``; row ``i`` is node ``i``.
        graph: ``G_PT`` with ``n`` nodes.
        max_queries: evaluate a uniformly random subset of this many query nodes (for big graphs;
            memory and time are ``O(max_queries * n)``); None uses every node with a neighbour.
        rng: generator or seed for that subset.
        queries: ``(q,)`` the only nodes to query (those with a neighbour), e.g. held-out samples
            whose links pre-training never saw; None: every node.

    Returns:
        ``{"lrap", "ndcg", "ap", "mrr", "n_queries"}``.
    """
    z = np.asarray(embeddings, dtype=np.float64)
    n = graph.n_nodes
    if z.shape[0] != n:
        raise SiptError(f"{z.shape[0]} embeddings for a graph of {n} nodes; embed every node")
    linked = graph.degrees() > 0
    queries = (
        np.flatnonzero(linked) if queries is None else np.unique(np.asarray(queries, dtype=np.int64)[linked[queries]])
    )
    if len(queries) == 0 or n < 3:
        raise SiptError("link retrieval needs a graph with at least 3 nodes and one edge")
    if max_queries is not None and max_queries < len(queries):
        queries = np.sort(np.random.default_rng(rng).choice(queries, size=max_queries, replace=False))

    distances = torch.cdist(torch.from_numpy(z[queries]), torch.from_numpy(z)).numpy()
    others = np.arange(n)[None, :] != queries[:, None]  # drop each query from its own list
    candidates = np.broadcast_to(np.arange(n), others.shape)[others].reshape(len(queries), n - 1)
    scores = -distances[others].reshape(len(queries), n - 1)
    truth = graph.has_edge(queries[:, None], candidates)

    best = np.where(truth, scores, -np.inf).max(axis=1)
    rank = 1 + (np.where(truth, -np.inf, scores) > best[:, None]).sum(axis=1)
    return {
        "lrap": float(label_ranking_average_precision_score(truth, scores)),
        "ndcg": float(ndcg_score(truth, scores)),
        "ap": float(average_precision_score(truth.ravel(), scores.ravel())),
        "mrr": float(np.mean(1.0 / rank)),
        "n_queries": int(len(queries)),
    }
