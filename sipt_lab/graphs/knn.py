"""The k-nearest-neighbour graph of a set of vectors: the graph an embedding itself draws, whose
local consistency a pre-training graph must beat (the encoder's own consistency), and the k-NN
graphs built from features (TF-IDF, a checkpoint's embeddings) as natural pre-training graphs."""

from __future__ import annotations

import numpy as np

from sipt_lab.graphs.graph import PretrainingGraph


def knn_graph(vectors, k: int, metric: str = "euclidean") -> PretrainingGraph:
    """Each of the ``(n, d)`` rows of ``vectors`` (dense, or scipy sparse with ``metric="cosine"``)
    linked to its ``k`` nearest other rows under ``metric`` (``"euclidean"`` or ``"cosine"``),
    undirected; exact search, so ties fall the same way on every run."""
    from sklearn.neighbors import NearestNeighbors

    n = vectors.shape[0]
    search = NearestNeighbors(n_neighbors=min(k + 1, n), metric=metric, algorithm="brute").fit(vectors)
    _, neighbours = search.kneighbors(vectors)
    return PretrainingGraph.from_edges(np.repeat(np.arange(n), neighbours.shape[1]), neighbours.ravel(), n)
