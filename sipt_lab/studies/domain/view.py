"""One seed's slice of a domain, shared by every arm of that seed (:func:`domain_view`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.data.splits import link_queries, pretraining_graph, random_splits
from sipt_lab.graphs.sampling import snowball_sample


@dataclass(frozen=True)
class DomainView:
    """One seed's slice of a domain: ``data`` (renumbered samples), its task, splits, the samples
    pre-training may see (``(m,)`` sorted: all but validation and test, or for published splits the
    corpus less the link queries) and ``link_queries`` ``(q,)``, the samples whose ``G_PT`` links
    (unseen in pre-training) choose ``λ``."""

    data: Any
    task: Any
    splits: Any
    pretraining_samples: np.ndarray
    link_queries: np.ndarray

    def seen_graph(self, graph):
        """The graph pre-training trains on: ``graph`` less every edge touching a validation or test
        sample, induced on :attr:`pretraining_samples` (node ``i`` is sample ``pretraining_samples[i]``)."""
        return pretraining_graph(graph, self.splits).subgraph(self.pretraining_samples)


#: Share of a corpus's linked samples held out of pre-training to choose λ when the task has published splits.
LINK_QUERY_SHARE = 0.1
#: Share of a task's labelled samples pre-trained on under the inductive protocol (the fine-tuning
#: splits are drawn from the others).
INDUCTIVE_PRETRAIN_SHARE = 0.5


@functools.lru_cache(maxsize=4)
def domain_view(
    domain: str,
    task: str,
    n_samples: int | None,
    seed: int,
    data_dir: str | None = None,
    protocol: str = "transductive",
) -> DomainView:
    """The slice of ``domain`` that every arm of ``seed`` shares (cached per process). For a task
    without published splits, ``transductive`` pre-trains on every sample but the validation and
    test splits; ``inductive`` on :data:`INDUCTIVE_PRETRAIN_SHARE` of the labelled samples and the
    unlabelled ones, with random splits of the other labelled samples, never pre-trained on."""
    from sipt_lab.domains import get_domain, subset

    spec = get_domain(domain)
    data = spec.read(data_dir)
    if task not in data.tasks:
        raise SiptError(f"domain {domain} has no task {task!r}; choose one of {', '.join(data.tasks)}")
    if n_samples is not None and n_samples < len(data.ids):
        data = subset(data, _slice(data, next(iter(spec.graphs.values()))(data, 0), task, n_samples, seed))
    everything = np.arange(len(data.ids))
    if task not in data.splits:
        labelled = data.tasks[task].samples
        if protocol == "inductive":
            order = np.random.default_rng([seed, 2]).permutation(labelled)
            labelled = np.sort(order[int(round(INDUCTIVE_PRETRAIN_SHARE * labelled.size)) :])
        splits = random_splits(labelled, seed=seed)
        unseen = labelled if protocol == "inductive" else splits.held_out
        return DomainView(data, data.tasks[task], splits, np.setdiff1d(everything, unseen), splits.validation)
    corpus = np.setdiff1d(everything, _published_samples(data))
    queries = link_queries(spec.graphs[next(iter(spec.graphs))](data, 0), LINK_QUERY_SHARE, seed, among=corpus)
    return DomainView(data, data.tasks[task], data.splits[task], np.setdiff1d(corpus, queries), queries)


def _published_samples(data) -> np.ndarray:
    """``(k,)`` sorted samples of every task with published splits (not pre-training samples)."""
    parts = [part for splits in data.splits.values() for part in (splits.train, splits.validation, splits.test)]
    return np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)


def _slice(data, graph, task: str, n_samples: int, seed: int) -> np.ndarray:
    """``(k,)`` sorted samples of a seed's slice: a snowball sample of ``n_samples`` over ``graph``, or
    for a task with published splits a snowball of the corpus plus up to ``n_samples`` of the task's samples."""
    if task not in data.splits:
        return snowball_sample(graph, n_samples, seed)
    published = _published_samples(data)
    corpus = np.setdiff1d(np.arange(len(data.ids)), published)
    kept = corpus[snowball_sample(graph.subgraph(corpus), min(n_samples, corpus.size), seed)]
    labelled = data.tasks[task].samples
    chosen = np.random.default_rng([seed, 1]).choice(labelled, min(n_samples, labelled.size), replace=False)
    return np.union1d(kept, chosen)
