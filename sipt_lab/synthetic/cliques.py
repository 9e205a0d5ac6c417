"""CLIQUES: sentences are linked iff they share their most probable topic (disjoint cliques).

As in the paper (Methods, "CLIQUES Graph Setup") and the original code: ``n_classes`` = 10 topics,
each drawn at random among the topics with enough confident sentences, 50 pre-training nodes and
20 held-out sentences by default, from articles none of whose sentences is a node. Unlike the original, the topics get equal shares of the nodes
(sizes differ by at most one; the original's count equalisation kept one sentence too many per
topic) and the graph is the implicit label-clique graph, so nothing quadratic is stored. Local
consistency is 1 before noise. Noise is added afterwards by :func:`~sipt_lab.synthetic.build_dataset`.

Default confidence threshold: the original kept sentences whose top topic has ``p >= 0.9``. With
the default corpus and 100 LDA topics (short sentences, stop words removed) only 298 of 36,226
sentences reach 0.9 and only 5 topics have the 7 such sentences a 70-sentence, 10-topic draw
needs. At ``p >= 0.8``, 1,364 sentences qualify and 87 topics have at least 7, so the 10 topics can
still be drawn at random from a wide pool: 0.8 is the default.
"""

from __future__ import annotations

import numpy as np

from sipt_lab.data.corpus import Corpus, sentence_groups
from sipt_lab.data.topics import TopicAssignment
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.synthetic.dataset import SyntheticDataset
from sipt_lab.synthetic.sentences import assign_sentences, balanced_classes, node_table
from sipt_lab.synthetic.spec import Family, GraphSpec

N_CLASSES = 10
MIN_CONFIDENCE = 0.8


def build_cliques(
    spec: GraphSpec,
    corpus: Corpus,
    topics: TopicAssignment,
    rng: np.random.Generator,
    *,
    n_classes: int = N_CLASSES,
    min_confidence: float = MIN_CONFIDENCE,
) -> SyntheticDataset:
    """Build a CLIQUES dataset of ``spec.n_nodes`` nodes and ``spec.n_heldout`` held-out sentences.

    Uses ``min(n_classes, n_nodes // 2)`` topics so that every clique has at least two nodes.
    """
    n_cliques = max(1, min(n_classes, spec.n_nodes // 2))
    assignment = assign_sentences(
        topics,
        balanced_classes(spec.n_nodes, n_cliques, rng),
        spec.n_heldout,
        min_confidence,
        rng,
        groups=sentence_groups(corpus),
        family="cliques",
    )
    return SyntheticDataset(
        family="cliques",
        sentences=[corpus.sentences[i] for i in assignment.node_sentences],
        graph=PretrainingGraph.from_groups(assignment.labels),
        labels=assignment.labels,
        heldout_sentences=[corpus.sentences[i] for i in assignment.heldout_sentences],
        heldout_labels=assignment.heldout_labels,
        params={
            "n_classes": n_cliques,
            "min_confidence": min_confidence,
            "class_topics": assignment.class_topics.tolist(),
        },
        tables={"nodes": node_table(assignment, topics)},
    )


FAMILY = Family(
    "cliques",
    build_cliques,
    default_nodes=50,
    default_topics=100,
    description="disjoint cliques: sentences linked iff they share their top LDA topic (10 topics)",
)
