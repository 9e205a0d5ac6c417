"""Small hand-made corpora and topic assignments for the graph-family tests (no LDA needed)."""

from __future__ import annotations

import numpy as np

from sipt_lab.data.corpus import Corpus
from sipt_lab.data.topics import TopicAssignment


def fake_corpus_and_topics(
    n_topics: int = 20, per_topic: int = 60, confident: float = 0.95, n_vague: int = 0
) -> tuple[Corpus, TopicAssignment]:
    """``n_topics * per_topic`` sentences ``"topic T sentence I"`` whose top topic is ``T`` with
    probability ``confident``, then ``n_vague`` sentences with a flat topic distribution."""
    owner = np.repeat(np.arange(n_topics), per_topic)
    doc_topic = np.full((owner.size, n_topics), (1 - confident) / (n_topics - 1))
    doc_topic[np.arange(owner.size), owner] = confident
    doc_topic = np.vstack([doc_topic, np.full((n_vague, n_topics), 1 / n_topics)])
    sentences = [f"topic {t} sentence {i}" for i, t in enumerate(owner)]
    sentences += [f"vague sentence {i}" for i in range(n_vague)]
    return Corpus(sentences, None, None, "fake"), TopicAssignment.from_doc_topic(doc_topic)


def with_articles(corpus: Corpus, article_size: int) -> Corpus:
    """``corpus`` with titles: every ``article_size`` consecutive sentences come from one article
    (``"article A"``), as the default corpus's sentences come from Wikipedia summaries."""
    titles = [f"article {i // article_size}" for i in range(len(corpus))]
    return Corpus(list(corpus.sentences), titles, None, corpus.source)


def shared_articles(corpus: Corpus, sentences: list[str], heldout_sentences: list[str]) -> set[str]:
    """The articles (``corpus.titles``) that hold both a pre-training and a held-out sentence."""
    title = dict(zip(corpus.sentences, corpus.titles))
    return {title[s] for s in sentences} & {title[s] for s in heldout_sentences}
