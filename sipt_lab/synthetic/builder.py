"""Building any family's dataset from a :class:`~sipt_lab.synthetic.graph_spec.GraphSpec`.

:func:`build_dataset` does the parts every family shares: validating the request, loading the
corpus, fitting (or loading) the topic model with the family's topic count, calling the family's
builder and adding edge noise.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from sipt_lab.data.corpus import Corpus, check_corpus_path, load_corpus
from sipt_lab.data.topics import TopicConfig, fit_topics
from sipt_lab.graphs.noise import add_noise
from sipt_lab.synthetic.dataset import SyntheticDataset
from sipt_lab.synthetic.families import get_family
from sipt_lab.synthetic.spec import GraphSpec


def resolve_spec(spec: GraphSpec) -> GraphSpec:
    """``spec`` with the family's default sizes filled in (what a build actually uses); the family
    name and the corpus path are checked here, every other field on construction."""
    family = get_family(spec.family)
    if spec.corpus is not None:
        check_corpus_path(spec.corpus)
    return dataclasses.replace(
        spec,
        n_nodes=family.default_nodes if spec.n_nodes is None else spec.n_nodes,
        n_topics=family.default_topics if spec.n_topics is None else spec.n_topics,
    )


def prepare_topics(spec: GraphSpec) -> None:
    """Fit (or find cached) the topic model ``spec`` needs, so that parallel workers building
    datasets from it load it instead of each fitting it at once."""
    spec = resolve_spec(spec)
    fit_topics(load_corpus(spec.corpus), TopicConfig(n_topics=spec.n_topics))


def build_dataset(spec: GraphSpec, *, corpus: Corpus | None = None) -> SyntheticDataset:
    """Build the dataset ``spec`` asks for, end to end, reproducibly from ``spec.seed``.

    ``corpus`` overrides ``spec.corpus`` (useful when the caller already loaded it).
    """
    spec = resolve_spec(spec)
    family = get_family(spec.family)
    corpus = load_corpus(spec.corpus) if corpus is None else corpus
    topics = fit_topics(corpus, TopicConfig(n_topics=spec.n_topics))
    rng = np.random.default_rng(spec.seed)
    dataset = family.builder(spec, corpus, topics, rng)
    if spec.noise > 0:
        dataset.graph = add_noise(dataset.graph, spec.noise, spec.noise_mode, rng)
    dataset.params = {
        "seed": spec.seed,
        "noise": spec.noise,
        "noise_mode": spec.noise_mode,
        "n_topics": spec.n_topics,
        "corpus": corpus.source,
        **dataset.params,
    }
    return dataset
