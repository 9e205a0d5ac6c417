"""Putting topic-confident sentences on graph nodes: shared by the CLIQUES and mechanistic families.

A family first gives every node a *class* (CLIQUES: its clique; NEIGHBORHOOD / MOTIF / STRUCTURAL:
its structure label). :func:`assign_sentences` then matches every class to a *distinct* topic (the
original code drew topics with replacement, so two classes could merge) and gives every node a
sentence of its class's topic, drawn at random without replacement among the topic's *confident*
sentences: those whose most probable topic is that topic with probability ``>= min_confidence``.
The node's FT label is its sentence's most probable topic, i.e. its class's topic, by construction.
Held-out sentences are further confident sentences of the same topics, drawn after every node's and
only from *groups* (:func:`~sipt_lab.data.corpus.sentence_groups`: the default corpus's articles) none of whose sentences
sits on a node, so a held-out sentence never shares an article with a pre-training sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.data.corpus import unseen_groups
from sipt_lab.data.topics import TopicAssignment


@dataclass(frozen=True)
class SentenceAssignment:
    """Which corpus sentence sits on which node.

    Attributes:
        class_topics: ``(k,)`` int64 distinct topic of each class.
        node_sentences: ``(n,)`` int64 corpus index of the sentence on each node.
        labels: ``(n,)`` int64 FT label of each node (``class_topics[node_classes]``).
        heldout_sentences: ``(h,)`` int64 corpus indices of the held-out sentences.
        heldout_labels: ``(h,)`` int64 their FT labels.
    """

    class_topics: np.ndarray
    node_sentences: np.ndarray
    labels: np.ndarray
    heldout_sentences: np.ndarray
    heldout_labels: np.ndarray


def confident_pools(topics: TopicAssignment, min_confidence: float) -> list[np.ndarray]:
    """Per topic ``t``: the int64 corpus indices whose most probable topic is ``t`` with
    probability ``>= min_confidence`` (ascending)."""
    confident = np.flatnonzero(topics.doc_topic.max(axis=1) >= min_confidence)
    owner = topics.labels[confident]
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(topics.n_topics + 1))
    return [confident[order[bounds[t] : bounds[t + 1]]] for t in range(topics.n_topics)]


def balanced_classes(n_nodes: int, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_nodes,)`` class ids ``0..n_classes-1`` in random order, class sizes differing by at most one."""
    return rng.permutation(np.arange(n_nodes) % n_classes).astype(np.int64)


def proportional_counts(total: int, weights: np.ndarray) -> np.ndarray:
    """``(k,)`` non-negative ints summing to ``total``, proportional to ``weights`` (largest remainder)."""
    weights = np.asarray(weights, dtype=np.float64)
    exact = total * weights / weights.sum()
    counts = np.floor(exact).astype(np.int64)
    counts[np.argsort(-(exact - counts), kind="stable")[: total - counts.sum()]] += 1
    return counts


def assign_sentences(
    topics: TopicAssignment,
    node_classes: np.ndarray,
    n_heldout: int,
    min_confidence: float,
    rng: np.random.Generator,
    *,
    groups: np.ndarray,
    family: str,
) -> SentenceAssignment:
    """Match classes to distinct topics and draw confident sentences for nodes and the held-out split.

    ``node_classes``: ``(n,)`` ints ``0..k-1``, every class non-empty. ``groups``: ``(N,)`` group of
    every corpus sentence (:func:`~sipt_lab.data.corpus.sentence_groups`). The ``n_heldout`` held-out sentences are split
    over the classes in proportion to their sizes. Classes are matched largest first, each to a
    uniformly random unused topic with enough confident sentences; because a larger class's
    eligible topics are a subset of a smaller one's, this finds a matching whenever one exists.

    Every class then draws its nodes' sentences and as many spare ones, uniformly from its topic's
    pool. Held-out sentences come only from groups that hold no node's sentence (of any class): a
    class keeps its spare sentences when all of them qualify (always so when every sentence is its
    own group), else draws its held-out sentences uniformly among the pool's qualifying ones, from a
    stream of its own, so that the nodes and every later draw of ``rng`` are as without groups.
    Raises :class:`SiptError` (naming the shortfall and the fixes) when no matching exists or a
    class's pool has too few qualifying sentences left.
    """
    node_classes = np.asarray(node_classes, dtype=np.int64)
    sizes = np.bincount(node_classes)
    if (sizes == 0).any():
        raise ValueError("every class must have at least one node")
    heldout_sizes = proportional_counts(n_heldout, sizes)
    needed = sizes + heldout_sizes
    pools = confident_pools(topics, min_confidence)
    available = np.array([pool.size for pool in pools])

    class_topics = np.empty(sizes.size, dtype=np.int64)
    unused = np.ones(topics.n_topics, dtype=bool)
    for rank, c in enumerate(np.argsort(-needed, kind="stable")):
        eligible = np.flatnonzero(unused & (available >= needed[c]))
        if eligible.size == 0:
            n_big = int((available >= needed[c]).sum())
            raise SiptError(
                f"{family}: the {rank + 1} largest of {sizes.size} classes each need their own topic with >= "
                f"{needed[c]} sentences of top-topic probability >= {min_confidence}, but only {n_big} of "
                f"{topics.n_topics} topics have that many (most: {available.max()}); ask for fewer GraphSpec.n_nodes or "
                f"fewer GraphSpec.n_topics, lower the confidence threshold, or use a bigger GraphSpec.corpus"
            )
        class_topics[c] = rng.choice(eligible)
        unused[class_topics[c]] = False

    node_sentences = np.empty(node_classes.size, dtype=np.int64)
    spares = []
    for c, topic in enumerate(class_topics):
        drawn = rng.choice(pools[topic], size=needed[c], replace=False)
        node_sentences[node_classes == c] = drawn[: sizes[c]]
        spares.append(drawn[sizes[c] :])
    redraw = rng.spawn(1)[0]  # its own stream: the draws after this one (the shuffle, edge noise) stay as they were
    heldout = [
        _heldout_draw(spare, pools[topic], groups, node_sentences, redraw, family=family, min_confidence=min_confidence)
        for spare, topic in zip(spares, class_topics)
    ]
    heldout_sentences = np.concatenate(heldout).astype(np.int64)
    heldout_labels = np.repeat(class_topics, heldout_sizes)
    shuffle = rng.permutation(heldout_sentences.size)
    return SentenceAssignment(
        class_topics=class_topics,
        node_sentences=node_sentences,
        labels=class_topics[node_classes],
        heldout_sentences=heldout_sentences[shuffle],
        heldout_labels=heldout_labels[shuffle],
    )


def _heldout_draw(
    spare: np.ndarray,
    pool: np.ndarray,
    groups: np.ndarray,
    node_sentences: np.ndarray,
    rng: np.random.Generator,
    *,
    family: str,
    min_confidence: float,
) -> np.ndarray:
    """``(h,)`` held-out corpus indices for one class: its ``(h,)`` ``spare`` draw when every spare
    sentence's group holds no node sentence, else ``h`` drawn uniformly among such sentences of
    ``pool`` (its topic's confident sentences, the nodes' own excluded since their groups hold them)."""
    if unseen_groups(groups, node_sentences, spare).all():
        return spare
    eligible = pool[unseen_groups(groups, node_sentences, pool)]
    if eligible.size < spare.size:
        raise SiptError(
            f"{family}: a class needs {spare.size} held-out sentences of top-topic probability >= {min_confidence} "
            f"from articles with no sentence on a node, but its topic has only {eligible.size}; ask for fewer "
            f"GraphSpec.n_heldout, fewer GraphSpec.n_nodes or GraphSpec.n_topics, or use a bigger GraphSpec.corpus"
        )
    return rng.choice(eligible, size=spare.size, replace=False)


def node_table(
    assignment: SentenceAssignment, topics: TopicAssignment, extra: dict[str, np.ndarray] | None = None
) -> tuple[tuple[str, ...], np.ndarray]:
    """The per-node provenance table (``nodes.tsv``): node, corpus index, topic, its probability,
    then the ``extra`` columns (each ``(n,)``). Rows are an object array so ints stay ints."""
    index = assignment.node_sentences
    columns = {
        "node": np.arange(index.size),
        "corpus_index": index,
        "topic": assignment.labels,
        "topic_prob": topics.doc_topic[index, assignment.labels],
        **(extra or {}),
    }
    rows = np.empty((index.size, len(columns)), dtype=object)
    for j, values in enumerate(columns.values()):
        rows[:, j] = list(np.asarray(values).tolist())
    return tuple(columns), rows
