"""The ``wiki`` domain: the default corpus's 10,033 vital articles over their mention graph.

Samples: one article = one sample, its summary (``extract``) as text, its title as id.

Task ``category``: the article's topic category. The JSON has 12 values, one of them
``"Uncategorized"`` (1,000 articles). Those are not a topic: they are the broadest articles
(*France*, *Moon*, *Jazz*, *Algorithm*), which the source left without a category. So the task
labels the other 9,033 articles with 11 classes; the uncategorised ones stay samples and graph
nodes (their text and links are pre-training data) but are in no fine-tuning split, and local
consistency is measured over the labelled articles only.

Pre-training graphs (``G_PT`` choices):

* ``mentions``: ``A ~ B`` when A's summary (by default also its short description) names B's
  title; the rule is a :class:`MentionRule`,
  measured against alternatives in ``docs/wiki_mentions.md`` (default :data:`DEFAULT_MENTION_RULE`).
  Matching is one Aho-Corasick pass per text (pyahocorasick) with whole-word boundaries and
  leftmost-longest selection, so *New York City* hides *New York* inside it.
* ``tfidf-knn``: each article linked to its ``k`` nearest articles by TF-IDF cosine, symmetrised
  (LinkBERT's fallback when there are no hyperlinks); the IDF is fitted on the pre-training
  articles only when the caller names them (``build_graph(..., fit_on=)``, as ``domain run`` does).
* ``random``: ``mentions`` rewired by degree-preserving double edge swaps, a control whose local
  consistency sits near chance.

Splits: ``data.splits.random_splits(task.samples, seed=...)`` holds out categorised articles only,
and ``data.splits.pretraining_graph(graph, splits)`` drops every edge touching a held-out article.
Texts are whole summaries; truncating them to an encoder's length is the encoder's tokenizer's job.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import ahocorasick
import networkx as nx
import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.neighbors import NearestNeighbors

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_text_atomic
from sipt_lab.core.outputs import check_new_files
from sipt_lab.data.corpus import default_articles
from sipt_lab.data.tasks import Task
from sipt_lab.domains.base import Domain, DomainData
from sipt_lab.graphs.arrays import factorize
from sipt_lab.graphs.graph import PretrainingGraph

UNCATEGORIZED = "Uncategorized"
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)$")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class WikiArticles(DomainData):
    """:class:`DomainData` plus, per article ``(n,)``: ``descriptions`` (Wikidata's short
    description) and ``categories`` (the JSON's topic, ``"Uncategorized"`` included)."""

    descriptions: list[str]
    categories: list[str]


def load_wiki() -> WikiArticles:
    """The default corpus's articles in file order, with the ``category`` task."""
    articles = default_articles()
    categories = [a["topic"] for a in articles]
    labelled = np.array([i for i, c in enumerate(categories) if c != UNCATEGORIZED], dtype=np.int64)
    names, codes = factorize(np.array([categories[i] for i in labelled]))
    task = Task("category", "classification", labelled, codes, tuple(names.tolist()))
    return WikiArticles(
        ids=[a["title"] for a in articles],
        texts=[a["extract"] for a in articles],
        tasks={"category": task},
        descriptions=[a["description"] for a in articles],
        categories=categories,
    )


# ---------------------------------------------------------------------- mentions
@dataclass(frozen=True)
class MentionRule:
    """When does a text name an article's title.

    Attributes:
        case: ``"exact"`` (case-sensitive), ``"first-letter"`` (case-sensitive except the first
            letter, Wikipedia's own rule for link targets: *water* names *Water*) or ``"ignore"``.
        min_chars: titles shorter than this (after dropping the disambiguation) are never matched.
        common_words: also match one-word titles that the summaries write in lower case more often
            than capitalised after a lower-case word (*Water*, *River*, *War*; not *Earth*, *Moon*).
        disambiguated: also match titles with a parenthesised disambiguation by their bare name
            (*Dune (novel)* by *Dune*; but also *Western (genre)* by *Western*).
        descriptions: also search each article's short description (*Painting by Georges Seurat*).

    Always: a name without a letter (*1*, *0*) is never matched; when several titles give the same
    name, the one without disambiguation wins and a name still shared is dropped; a text never
    names its own article.
    """

    case: str = "first-letter"
    min_chars: int = 1
    common_words: bool = False
    disambiguated: bool = False
    descriptions: bool = False


#: Named rules, each measured in ``docs/wiki_mentions.md``; ``reader`` is the default.
MENTION_RULES: dict[str, MentionRule] = {
    "naive": MentionRule(case="ignore", min_chars=4, common_words=True, disambiguated=True),
    "exact": MentionRule(case="exact", common_words=True, disambiguated=True),
    "first-letter": MentionRule(common_words=True, disambiguated=True),
    "first-letter-names": MentionRule(disambiguated=True),
    "first-letter-names-bare": MentionRule(),
    "exact-names-bare": MentionRule(case="exact"),
    "reader": MentionRule(descriptions=True),
}
DEFAULT_MENTION_RULE = "reader"


def mention_edges(
    titles: list[str], summaries: list[str], rule: MentionRule, descriptions: list[str] | None = None
) -> np.ndarray:
    """``(m, 2)`` int64 directed mentions ``(a, b)``: article ``a`` names title ``b``.

    Args:
        titles, summaries: ``(n,)`` each; the summaries are searched, and their word counts decide
            which titles are common words.
        rule: the :class:`MentionRule`.
        descriptions: ``(n,)`` also searched when ``rule.descriptions``.
    Returns unique pairs, sorted, without self-mentions.
    """
    automaton = _title_automaton(titles, summaries, rule)
    sources = [summaries, descriptions] if rule.descriptions else [summaries]
    pairs = set()
    for texts in sources:
        for a, text in enumerate(texts):
            haystack = text.lower() if rule.case == "ignore" else text
            pairs.update((a, b) for b in _whole_word_matches(automaton, haystack) if b != a)
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)


def _title_automaton(titles: list[str], summaries: list[str], rule: MentionRule) -> ahocorasick.Automaton:
    """Automaton mapping each name form to ``(length, article)``, ambiguous names dropped."""
    names = [_DISAMBIGUATION.sub("", title) for title in titles]
    common = set() if rule.common_words else _common_words(set(names), summaries)
    claims: dict[str, list[tuple[bool, int]]] = {}  # form -> [(title is disambiguated, article)]
    for article, (name, title) in enumerate(zip(names, titles)):
        disambiguated = name != title
        if (
            len(name) < rule.min_chars
            or name in common
            or not any(ch.isalpha() for ch in name)
            or (disambiguated and not rule.disambiguated)
        ):
            continue
        for form in _forms(name, rule.case):
            claims.setdefault(form, []).append((disambiguated, article))
    automaton = ahocorasick.Automaton()
    for form, owners in claims.items():
        owners.sort()
        if len(owners) == 1 or owners[0][0] < owners[1][0]:
            automaton.add_word(form, (len(form), owners[0][1]))
    automaton.make_automaton()
    return automaton


def _forms(name: str, case: str) -> set[str]:
    if case == "ignore":
        return {name.lower()}
    if case == "first-letter":
        return {name, name[0].swapcase() + name[1:]}
    return {name}


def _common_words(names: set[str], summaries: list[str]) -> set[str]:
    """The capitalised one-word ``names`` the summaries write in lower case more often than
    capitalised after a lower-case word (a capital there is a name's, not a sentence's)."""
    lower, capitalised = Counter(), Counter()
    for text in summaries:
        words = _WORD.findall(text)
        lower.update(w for w in words if w.islower())
        capitalised.update(b for a, b in zip(words, words[1:]) if a[:1].islower() and b[:1].isupper())
    return {name for name in names if name[:1].isupper() and name.isalpha() and lower[name.lower()] > capitalised[name]}


def _whole_word_matches(automaton: ahocorasick.Automaton, text: str) -> list[int]:
    """Articles named in ``text``: whole-word matches, leftmost-longest, non-overlapping."""
    if not len(automaton):
        return []
    found = []
    for end, (length, article) in automaton.iter(text):
        start = end - length + 1
        if (start == 0 or not text[start - 1].isalnum()) and (end + 1 == len(text) or not text[end + 1].isalnum()):
            found.append((start, -length, article))
    found.sort()
    articles, covered = [], 0
    for start, negative_length, article in found:
        if start >= covered:
            articles.append(article)
            covered = start - negative_length
    return articles


def mentions_graph(data: WikiArticles, seed: int = 0, rule: str = DEFAULT_MENTION_RULE) -> PretrainingGraph:
    """``A ~ B`` when A names B under the :data:`MENTION_RULES` entry ``rule`` (``seed`` unused)."""
    if rule not in MENTION_RULES:
        raise SiptError(f"unknown mention rule {rule!r}; choose one of: {', '.join(MENTION_RULES)}")
    edges = mention_edges(data.ids, data.texts, MENTION_RULES[rule], data.descriptions)
    return PretrainingGraph.from_edges(edges[:, 0], edges[:, 1], len(data.ids))


# ---------------------------------------------------------------------- other graphs
def tfidf_features(texts: list[str], fit_on=None, max_features: int | None = None, stop_words: str | None = "english"):
    """``(n, V)`` sparse L2-normalised word TF-IDF rows of ``texts``, vocabulary and IDF fitted on the
    texts at the indices ``fit_on`` only (None: all of them), so held-out texts never shape the
    weights. ``stop_words`` dropped (scikit-learn's English ones by default; None: none), sublinear
    term frequency; ``max_features``: the most frequent words kept (None: all)."""
    fitted = texts if fit_on is None else [texts[i] for i in np.asarray(fit_on)]
    vectorizer = TfidfVectorizer(stop_words=stop_words, sublinear_tf=True, max_features=max_features).fit(fitted)
    return vectorizer.transform(texts)


def tfidf_knn_graph(data: DomainData, seed: int = 0, k: int = 5, fit_on=None) -> PretrainingGraph:
    """Each sample linked to its ``k`` most TF-IDF-cosine-similar samples, symmetrised (``seed`` unused).

    TF-IDF: :func:`tfidf_features`, fitted on the samples ``fit_on`` (the pre-training samples: the
    IDF never sees held-out texts; None: all samples).
    """
    features = tfidf_features(list(data.texts), fit_on)
    n = features.shape[0]
    _, neighbours = (
        NearestNeighbors(n_neighbors=min(k + 1, n), metric="cosine", algorithm="brute")
        .fit(features)
        .kneighbors(features)
    )
    rows = np.repeat(np.arange(n), neighbours.shape[1])
    return PretrainingGraph.from_edges(rows, neighbours.ravel(), n)  # the self-matches are dropped


def rewired(graph: PretrainingGraph, seed: int = 0, swaps_per_edge: int = 10) -> PretrainingGraph:
    """``graph`` with every degree kept and the edges rewired by ``swaps_per_edge * m`` seeded
    double edge swaps (networkx): the degree-preserving random control."""
    G = graph.to_networkx()
    if graph.n_edges >= 2:
        nx.double_edge_swap(
            G, nswap=swaps_per_edge * graph.n_edges, max_tries=100 * swaps_per_edge * graph.n_edges, seed=seed
        )
    return PretrainingGraph.from_networkx(G, nodelist=range(graph.n_nodes))


def random_graph(data: WikiArticles, seed: int = 0) -> PretrainingGraph:
    """The default ``mentions`` graph, degree-preservingly rewired with ``seed``."""
    return rewired(mentions_graph(data), seed)


# ---------------------------------------------------------------------- per-sample labels
#: Words that end the noun phrase a short description starts with (its head is the word before):
#: prepositions, relative words and participles that take an object (*City in Mali*, *Device that
#: ...*, *Medium consisting of ...*).
_QUALIFIERS = frozenset(
    "of in by for from to that which who whose with on at as between about against during under where "
    "consisting containing including according".split()
)
#: Qualifiers after which a word in -ing is a participle (*originating in*), not a noun (*painting by*).
_ING_QUALIFIERS = frozenset("to in from with on at as".split())
_PARENTHESES = re.compile(r"\([^()]*\)")
_PAST_PARTICIPLE = re.compile(r"[a-z]+(?<!e)ed")  # used, directed; not breed, seed
_PRESENT_PARTICIPLE = re.compile(r"[a-z]{2,}ing")  # originating; not king
_NOT_WORD = re.compile(r"[^\w-]")


def _opens_qualifier(word: str, qualifier: str) -> bool:
    """Whether ``word``, just before ``qualifier``, is a participle that belongs to the qualifier."""
    if _PAST_PARTICIPLE.fullmatch(word):
        return True
    return word != "being" and qualifier.lower() in _ING_QUALIFIERS and bool(_PRESENT_PARTICIPLE.fullmatch(word))


def description_head(description: str) -> str | None:
    """The head noun of a Wikidata short description, lower-cased: the last word of its leading noun
    phrase, which ends at the first preposition or relative word after the first word; parentheses
    are dropped, and so is a participle that opened the qualifier (*American singer (1942–2016)* ->
    ``singer``, *1968 film directed by Stanley Kubrick* -> ``film``, *Device used to detect ...* ->
    ``device``, *Capital and largest city of the Netherlands* -> ``city``). None for a description
    without a word."""
    words = _PARENTHESES.sub(" ", description).split()
    end = next((i for i, word in enumerate(words) if i and word.lower() in _QUALIFIERS), len(words))
    phrase = words[:end]
    while end < len(words) and len(phrase) > 1 and _opens_qualifier(phrase[-1], words[end]):
        phrase.pop()
    heads = [_NOT_WORD.sub("", word.lower()) for word in reversed(phrase)]
    return next((head for head in heads if head), None)


def description_labels(data: WikiArticles, min_count: int = 5) -> dict[str, str]:
    """Article id -> the :func:`description_head` of its short description, a per-sample
    pre-training label of the ``multitask`` and ``same-family`` baselines (Wikidata's *what is it*,
    not the ``category`` task's topic). A plural head whose singular is another article's head takes
    the singular (*concepts* -> ``concept``); heads shared by fewer than ``min_count`` articles, and
    articles without a description, are left out (unknown: ``--allow-missing``)."""
    if min_count < 1:
        raise SiptError(f"min_count must be at least 1, got {min_count}; pass 1 to keep every head")
    heads = dict(zip(data.ids, description_heads(data.descriptions)))
    counts = Counter(heads.values())
    return {i: h for i, h in heads.items() if h is not None and counts[h] >= min_count}


def first_word_head(description: str) -> str | None:
    """The head noun of a French short description: its first word, lower-cased (*actrice
    américaine* -> ``actrice``, *ville de France* -> ``ville``); None without a word."""
    words = [_NOT_WORD.sub("", word.lower()) for word in _PARENTHESES.sub(" ", description).split()]
    return next((word for word in words if word), None)


#: The head-noun rule of a short description per language: English heads end the leading noun
#: phrase, French ones open it.
HEAD_RULES = {"en": description_head, "fr": first_word_head}


def description_heads(descriptions: list[str], language: str = "en") -> list[str | None]:
    """The head noun of each short description (:data:`HEAD_RULES`), a plural whose singular is
    another description's head folded into it (*concepts* -> ``concept``); None without one."""
    heads = [HEAD_RULES[language](d or "") for d in descriptions]
    known = set(heads)
    return [h[:-1] if h and h.endswith("s") and h[:-1] in known else h for h in heads]


def write_description_labels(path, min_count: int = 5, *, overwrite: bool = False) -> dict[str, str]:
    """Write the default corpus's :func:`description_labels` to ``path`` as ``id<TAB>label`` lines,
    the layout of ``TrainConfig.pt_labels`` (``--pt-labels``), in article order; returns them. An
    existing ``path`` is replaced only with ``overwrite``."""
    check_new_files([Path(path)], overwrite=overwrite)
    data = load_wiki()
    labels = description_labels(data, min_count)
    write_text_atomic(path, "".join(f"{i}\t{labels[i]}\n" for i in data.ids if i in labels))
    return labels


WIKI = Domain(
    name="wiki",
    description="10,033 Wikipedia vital-article summaries, their category (11 classes), mention graph",
    load=load_wiki,
    graphs={"mentions": mentions_graph, "tfidf-knn": tfidf_knn_graph, "random": random_graph},
    default_task="category",
)
