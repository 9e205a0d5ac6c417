"""NEIGHBORHOOD, MOTIF and STRUCTURAL: a cycle with small motifs attached, topics placed by structure.

The paper (Methods, "STRUCTURAL, NEIGHBORHOOD & MOTIFS Graphs") builds one kind of graph and three
ways of putting topics on it, so that the topic FT task follows graph structure to different
degrees:

* **Graph** (:func:`cycle_with_motifs`): a base cycle with ``M`` motifs attached at evenly spaced
  cycle nodes, each by one edge from the cycle node to a uniformly random node of the motif; every
  motif is drawn uniformly from the connected graphs with 2 to 5 nodes (30 of them, deduplicated by
  exact isomorphism). The original used ``C_36`` with 9 motifs at every 4th cycle node; here ``M``
  is ``round(n / (4 + mean motif size))`` and the cycle takes the remaining nodes, so the graph has
  exactly ``n`` nodes with motifs about every 4th cycle node.
* **Structure labels** (all three are computed for every graph and written to ``nodes.tsv``):

  - NEIGHBORHOOD (:func:`neighborhood_labels`): the 0/1 membership vector of the nodes within
    shortest-path distance 3 (the paper's radius; the original code used 4), clustered by k-means
    (k = 4).
  - MOTIF (:func:`cycle_with_motifs`'s ``part``): 0 on the cycle, ``j + 1`` on attached motif
    instance ``j``. This is *which instance* a node is in, not *which shape*: two instances of the
    same motif shape are different classes (as in the original code).
  - STRUCTURAL (:func:`structural_labels`): the order-4 graphlet degree vector (15 orbit counts,
    :func:`~sipt_lab.synthetic.graphlets.orbit_counts`), ``log1p``-transformed (counts span orders
    of magnitude) and standardised per orbit, clustered by k-means (k = 3). The original counted
    graphlet memberships, not orbits.

* **Sentences**: each class of the family's structure label gets a distinct topic and its nodes get
  confident sentences of that topic (:func:`~sipt_lab.synthetic.sentences.assign_sentences`), so the
  FT label (the topic) is a relabelling of the structure label. Local consistency is therefore high
  for NEIGHBORHOOD and MOTIF (labels follow locality) and low for STRUCTURAL (structurally similar
  nodes are far apart).

Node ids are randomly permuted so that id order says nothing about the structure. The same seed
gives the same graph (and the same three structure labels) in all three families. k-means runs
with ``n_init=10`` (the original: 50) seeded from the build's generator.

Measured on the default corpus (100 topics, 90 nodes, seeds 0-9): 113 +- 6 edges; local
consistency 0.944 +- 0.013 (NEIGHBORHOOD), 0.987 +- 0.008 (MOTIF), 0.547 +- 0.116 (STRUCTURAL).

Default confidence threshold 0.6 (the original used no threshold, taking each topic's sentences
in descending probability): on the default corpus with 100 topics, the MOTIF cycle class needs
about 50 sentences of one topic and the largest STRUCTURAL cluster about 60; at ``p >= 0.7`` only 8
topics have 50 confident sentences, at 0.6 38 do.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans

from sipt_lab.core.errors import SiptError
from sipt_lab.data.corpus import Corpus, sentence_groups
from sipt_lab.data.topics import TopicAssignment
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.synthetic.dataset import SyntheticDataset
from sipt_lab.synthetic.graphlets import connected_graphs, orbit_counts
from sipt_lab.synthetic.sentences import assign_sentences, node_table
from sipt_lab.synthetic.spec import Family, GraphSpec

MIN_MOTIF_NODES = 2
MAX_MOTIF_NODES = 5
MOTIF_SPACING = 4
NEIGHBORHOOD_RADIUS = 3
NEIGHBORHOOD_CLUSTERS = 4
STRUCTURAL_CLUSTERS = 3
KMEANS_N_INIT = 10
MIN_CONFIDENCE = 0.6
DEFAULT_NODES = 90


@dataclass(frozen=True)
class MotifGraph:
    """A cycle with attached motifs (node ids already permuted).

    Attributes:
        graph: the ``n``-node graph.
        part: ``(n,)`` int64, 0 for cycle nodes, ``j + 1`` for nodes of motif instance ``j``.
        cycle_length: number of cycle nodes.
        motif_atlas_ids: ``(M,)`` index of each motif in ``connected_graphs(2, 5)``.
        attachments: ``(M, 2)`` int64 ``(cycle node, motif node)`` of each attaching edge.
    """

    graph: PretrainingGraph
    part: np.ndarray
    cycle_length: int
    motif_atlas_ids: np.ndarray
    attachments: np.ndarray


def cycle_with_motifs(
    n_nodes: int,
    rng: np.random.Generator,
    *,
    min_motif_nodes: int = MIN_MOTIF_NODES,
    max_motif_nodes: int = MAX_MOTIF_NODES,
    spacing: int = MOTIF_SPACING,
) -> MotifGraph:
    """A cycle with ``round(n_nodes / (spacing + mean motif size))`` motifs, ``n_nodes`` nodes in all."""
    atlas = connected_graphs(min_motif_nodes, max_motif_nodes)
    smallest_cycle = 3
    if n_nodes < smallest_cycle + max_motif_nodes:
        raise SiptError(
            f"a cycle with motifs of up to {max_motif_nodes} nodes needs GraphSpec.n_nodes >= "
            f"{smallest_cycle + max_motif_nodes}, got {n_nodes}"
        )
    mean_size = np.mean([g.number_of_nodes() for g in atlas])
    n_motifs = max(1, round(n_nodes / (spacing + mean_size)))
    atlas_ids = rng.integers(len(atlas), size=n_motifs)
    motif_sizes = np.array([atlas[i].number_of_nodes() for i in atlas_ids])
    cycle_length = n_nodes - int(motif_sizes.sum())
    # Rare with n_nodes >= 8 (only if nearly every motif is large): no room for the cycle.
    if cycle_length < max(smallest_cycle, n_motifs):
        raise SiptError(
            f"the {n_motifs} sampled motifs leave {cycle_length} of {n_nodes} nodes for the cycle; "
            f"use another GraphSpec.seed or more GraphSpec.n_nodes"
        )

    offsets = cycle_length + np.concatenate([[0], np.cumsum(motif_sizes)[:-1]])
    cycle = np.arange(cycle_length)
    motif_edges = [
        np.asarray(atlas[i].edges(), dtype=np.int64).reshape(-1, 2) + off for i, off in zip(atlas_ids, offsets)
    ]
    anchors = (np.arange(n_motifs) * cycle_length) // n_motifs
    attachments = np.column_stack([anchors, offsets + (rng.random(n_motifs) * motif_sizes).astype(np.int64)])
    edges = np.concatenate([np.column_stack([cycle, np.roll(cycle, -1)]), *motif_edges, attachments])
    part = np.concatenate([np.zeros(cycle_length, dtype=np.int64), np.repeat(np.arange(1, n_motifs + 1), motif_sizes)])

    perm = rng.permutation(n_nodes)  # new id of old node i is perm[i]
    new_part = np.empty_like(part)
    new_part[perm] = part
    return MotifGraph(
        graph=PretrainingGraph.from_edges(perm[edges[:, 0]], perm[edges[:, 1]], n_nodes),
        part=new_part,
        cycle_length=cycle_length,
        motif_atlas_ids=atlas_ids.astype(np.int64),
        attachments=perm[attachments],
    )


def neighborhood_labels(
    graph: PretrainingGraph,
    rng: np.random.Generator,
    *,
    radius: int = NEIGHBORHOOD_RADIUS,
    n_clusters: int = NEIGHBORHOOD_CLUSTERS,
) -> np.ndarray:
    """``(n,)`` k-means clusters of the rows of the ``(n, n)`` 0/1 "within distance ``radius``" matrix."""
    step = sp.csr_array(graph.adjacency(), dtype=np.float64) + sp.eye_array(graph.n_nodes, format="csr")
    reach = sp.eye_array(graph.n_nodes, format="csr")
    for _ in range(radius):
        reach = sp.csr_array((reach @ step) > 0, dtype=np.float64)
    return _kmeans(reach.toarray(), n_clusters, rng)


def structural_labels(
    graph: PretrainingGraph, rng: np.random.Generator, *, n_clusters: int = STRUCTURAL_CLUSTERS
) -> np.ndarray:
    """``(n,)`` k-means clusters of standardised ``log1p`` order-4 graphlet degree vectors."""
    features = np.log1p(orbit_counts(graph.adjacency()).astype(np.float64))
    std = features.std(axis=0)
    features = (features - features.mean(axis=0)) / np.where(std > 0, std, 1.0)
    return _kmeans(features, n_clusters, rng)


def _kmeans(features: np.ndarray, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
    """Cluster ids ``0..k-1`` numbered by decreasing cluster size (ties: first appearance).

    ``k`` is at most the number of distinct rows; should k-means still leave a cluster empty, the
    ids stay contiguous.
    """
    k = min(n_clusters, np.unique(features, axis=0).shape[0])
    raw = KMeans(k, n_init=KMEANS_N_INIT, random_state=int(rng.integers(2**31))).fit_predict(features)
    _, first, raw = np.unique(raw, return_index=True, return_inverse=True)
    order = np.lexsort((first, -np.bincount(raw)))
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return rank[raw]


def build_mechanistic(
    spec: GraphSpec,
    corpus: Corpus,
    topics: TopicAssignment,
    rng: np.random.Generator,
    *,
    label: str,
    min_confidence: float = MIN_CONFIDENCE,
) -> SyntheticDataset:
    """One mechanistic dataset: the cycle-with-motifs graph, topics placed by the ``label`` classes.

    ``label``: ``"neighborhood"``, ``"motif"`` or ``"structural"`` (also the family name).
    """
    motif_graph = cycle_with_motifs(spec.n_nodes, rng)
    structure = {
        "neighborhood": neighborhood_labels(motif_graph.graph, rng),
        "motif": motif_graph.part,
        "structural": structural_labels(motif_graph.graph, rng),
    }
    assignment = assign_sentences(
        topics, structure[label], spec.n_heldout, min_confidence, rng, groups=sentence_groups(corpus), family=label
    )
    return SyntheticDataset(
        family=label,
        sentences=[corpus.sentences[i] for i in assignment.node_sentences],
        graph=motif_graph.graph,
        labels=assignment.labels,
        heldout_sentences=[corpus.sentences[i] for i in assignment.heldout_sentences],
        heldout_labels=assignment.heldout_labels,
        params={
            "structure_label": label,
            "n_classes": int(assignment.class_topics.size),
            "min_confidence": min_confidence,
            "class_topics": assignment.class_topics.tolist(),
            "cycle_length": motif_graph.cycle_length,
            "n_motifs": int(motif_graph.motif_atlas_ids.size),
            "motif_atlas_ids": motif_graph.motif_atlas_ids.tolist(),
            "motif_nodes": [MIN_MOTIF_NODES, MAX_MOTIF_NODES],
            "neighborhood_radius": NEIGHBORHOOD_RADIUS,
            "neighborhood_clusters": NEIGHBORHOOD_CLUSTERS,
            "structural_clusters": STRUCTURAL_CLUSTERS,
        },
        tables={"nodes": node_table(assignment, topics, structure)},
    )


_DESCRIPTIONS = {
    "neighborhood": "cycle with motifs; topic = k-means cluster of the radius-3 neighbourhood (high LC)",
    "motif": "cycle with motifs; topic = the cycle or the motif instance a node is in (high LC)",
    "structural": "cycle with motifs; topic = k-means cluster of graphlet degree vectors (low LC)",
}
FAMILIES = tuple(
    Family(
        name,
        partial(build_mechanistic, label=name),
        default_nodes=DEFAULT_NODES,
        default_topics=100,
        description=description,
    )
    for name, description in _DESCRIPTIONS.items()
)
