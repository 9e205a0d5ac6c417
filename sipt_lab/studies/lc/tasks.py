"""The study's tasks (:class:`StudyTask`): labelled samples with the groups no split may cut, from the
config's files or a built-in task, per split seed.

A group is what samples share that would leak a label across splits: the article a sentence comes
from (two sentences of one article mostly share a topic), a document, a patient. The splits keep
every group on one side (:func:`~sipt_lab.studies.lc.dial.grouped_splits`), so no never-seen
sample shares a group with a pre-training sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.studies.lc.config import ALL_CATEGORIES, CLIQUES_TOPICS, LcTransferConfig

#: The default corpus's category of articles without one.
UNCATEGORIZED = "Uncategorized"
#: Prefix of an article's id in the articles task (its index in the corpus follows).
ARTICLE_ID = "article"
#: Top-topic probability a sentence needs to be labelled by its topic in the cliques task (the
#: CLIQUES family asks 0.8 of a model fitted on every sentence; fitted on about half of the corpus,
#: too few sentences reach 0.8 on ten topics on each side).
CLIQUES_CONFIDENCE = 0.6
#: How many never-seen candidates per class the cliques task offers beyond what the splits need: whole
#: articles fill the splits, and an article cut at a split's end leaves its other sentences unused.
NEVER_SEEN_MARGIN = 1.5


@dataclass(frozen=True)
class StudyTask:
    """A study's labelled samples.

    Attributes:
        ids, texts: the ``n`` samples.
        labels: ``(n,)`` int64 classes ``0..C-1``.
        groups: ``(n,)`` int64 group of each sample: no group spans two splits.
        natural: the task's own graph over all ``n`` samples, or None.
        pretrain: ``(m,)`` indices the task fixes as the pre-training samples (its labels were defined
            without the others: the cliques task's topic model), or None to let the splits choose.
    """

    ids: list[str]
    texts: list[str]
    labels: np.ndarray
    groups: np.ndarray
    natural: PretrainingGraph | None = None
    pretrain: np.ndarray | None = None


def study_task(config: LcTransferConfig, split_seed: int) -> StudyTask:
    """The study's task for ``split_seed``: the config's files, or the built-in ``config.task``."""
    if config.samples is not None:
        return file_task(config)
    return BUILT_IN_TASKS[config.task](config, split_seed)


def file_task(config: LcTransferConfig) -> StudyTask:
    """The samples, labels, optional graph and optional groups files of ``config``. The labels may
    cover a subset of the samples: the study splits the labelled ones (the dial needs a label on
    every pre-training sample) and leaves the rest out, with the graph restricted to them by
    :func:`~sipt_lab.graphs.consistency.labelled_subgraph`."""
    from sipt_lab.data.samples import read_labelled_codes, read_sample_graph, read_sample_labels, read_samples
    from sipt_lab.graphs.consistency import labelled_subgraph

    samples = read_samples(config.samples)
    labelled, labels, _ = read_labelled_codes(config.labels, samples)
    natural = None if config.edges is None else labelled_subgraph(read_sample_graph(config.edges, samples), labelled)[0]
    groups = (
        np.arange(labelled.size)
        if config.groups is None
        else np.unique(read_sample_labels(config.groups, samples)[0][labelled], return_inverse=True)[1]
    )
    return StudyTask([samples.ids[i] for i in labelled], [samples.texts[i] for i in labelled], labels, groups, natural)


def article_task(config: LcTransferConfig, split_seed: int) -> StudyTask:
    """Vital-article summaries of ``config.categories`` labelled by category, each its own group."""
    from sipt_lab.data.corpus import default_articles

    articles = default_articles()
    known = sorted({a["topic"] for a in articles} - {UNCATEGORIZED})
    wanted = known if config.categories == ALL_CATEGORIES else list(config.categories)
    unknown = sorted(set(wanted) - set(known))
    if unknown:
        raise SiptError(f"unknown article categories {unknown}; choose among {known} or 'all'")
    chosen = [(i, a) for i, a in enumerate(articles) if a["topic"] in wanted]
    labels = np.unique([a["topic"] for _, a in chosen], return_inverse=True)[1]
    ids = [f"{ARTICLE_ID}{i}" for i, _ in chosen]
    return StudyTask(ids, [a["extract"] for _, a in chosen], labels, np.arange(len(chosen)))


def article_graph(name: str, article_ids: list[str]) -> PretrainingGraph:
    """The wiki domain's graph ``name`` (:data:`ARTICLE_GRAPHS`) over the articles ``article_ids``
    (ids of :func:`article_task`, node ``i`` is ``article_ids[i]``) and nothing else: TF-IDF is fitted
    on their texts only."""
    from sipt_lab.domains import subset
    from sipt_lab.domains.wiki import load_wiki, mentions_graph, tfidf_knn_graph

    articles = subset(load_wiki(), np.array([int(i.removeprefix(ARTICLE_ID)) for i in article_ids]))
    return {"mentions": mentions_graph, "tfidf-knn": tfidf_knn_graph}[name](articles)


def cliques_task(config: LcTransferConfig, split_seed: int) -> StudyTask:
    """Sentences of ``config.corpus`` labelled by their top topic, as the CLIQUES family labels them,
    with the topic model fitted on the pre-training side only.

    The corpus's articles (each sentence its own article in a corpus without titles) are parted at
    random (``split_seed``) into a pre-training side and a never-seen side holding about the shares
    of the split sizes. A :data:`CLIQUES_TOPICS`-topic LDA is fitted on the pre-training side's
    sentences alone and labels every sentence by its transform; ten topics with enough sentences of
    top-topic probability at least :data:`CLIQUES_CONFIDENCE` on both sides become the classes. The
    pre-training samples are ``n_pretrain`` such sentences of the pre-training side, balanced over the
    classes; the never-seen candidates are as many of each class (up to :data:`NEVER_SEEN_MARGIN`
    times what the splits need) from the never-seen side, which the splits then cut by article."""
    from sipt_lab.data.corpus import load_corpus
    from sipt_lab.data.topics import TopicConfig, fit_topics
    from sipt_lab.synthetic.cliques import N_CLASSES
    from sipt_lab.synthetic.sentences import confident_pools, proportional_counts

    corpus = load_corpus(config.corpus)
    groups = np.unique(corpus.titles, return_inverse=True)[1] if corpus.titles else np.arange(len(corpus))
    rng = np.random.default_rng([split_seed, len(corpus)])
    sizes = config.sizes
    n_never_seen = sizes["train"] + sizes["validation"] + sizes["test"]
    side_share = n_never_seen / (n_never_seen + sizes["pretrain"])
    group_rank = rng.permutation(groups.max() + 1)
    order = np.argsort(group_rank[groups], kind="stable")  # sentences, grouped, groups in random order
    never_seen = np.zeros(len(corpus), dtype=bool)
    never_seen[order[: int(round(side_share * len(corpus)))]] = True
    never_seen |= np.isin(groups, groups[never_seen])  # the whole of a group cut at the boundary
    topics = fit_topics(corpus, TopicConfig(n_topics=CLIQUES_TOPICS), fit_rows=np.flatnonzero(~never_seen))
    pools = confident_pools(topics, CLIQUES_CONFIDENCE)
    pt_pools = [pool[~never_seen[pool]] for pool in pools]
    new_pools = [pool[never_seen[pool]] for pool in pools]
    pt_counts = proportional_counts(sizes["pretrain"], np.ones(N_CLASSES))
    new_need = int(np.ceil(n_never_seen / N_CLASSES))
    eligible = [
        t for t in range(CLIQUES_TOPICS) if pt_pools[t].size >= pt_counts.max() and new_pools[t].size >= new_need
    ]
    if len(eligible) < N_CLASSES:
        raise SiptError(
            f"the cliques task needs {N_CLASSES} topics with {pt_counts.max()} confident sentences on the pre-training "
            f"side and {new_need} on the never-seen side, but {len(eligible)} of {CLIQUES_TOPICS} topics have that "
            "many; lower the split sizes or give a bigger corpus"
        )
    classes = rng.choice(eligible, size=N_CLASSES, replace=False)
    per_class_new = min(min(new_pools[t].size for t in classes), int(np.ceil(NEVER_SEEN_MARGIN * new_need)))
    pt_rows = [rng.choice(pt_pools[t], size=count, replace=False) for t, count in zip(classes, pt_counts)]
    new_rows = [rng.choice(new_pools[t], size=per_class_new, replace=False) for t in classes]
    rows = np.concatenate(pt_rows + new_rows)
    labels = np.concatenate(
        [np.full(part.size, i % N_CLASSES, dtype=np.int64) for i, part in enumerate(pt_rows + new_rows)]
    )
    return StudyTask(
        [f"sentence{i}" for i in rows],
        [corpus.sentences[i] for i in rows],
        labels,
        groups[rows],
        pretrain=np.arange(sizes["pretrain"]),
    )


#: Built-in tasks (:data:`STUDY_TASKS`): name -> ``(config, split_seed) -> StudyTask``.
BUILT_IN_TASKS = {"articles": article_task, "cliques": cliques_task}
