import numpy as np
import pytest

from sipt_lab.core.errors import SiptError
from sipt_lab.data.splits import check_task_splits, pretraining_graph, random_splits
from sipt_lab.domains import build_graph, get_domain, summarize_graph
from sipt_lab.domains.wiki import (
    MENTION_RULES,
    UNCATEGORIZED,
    MentionRule,
    WikiArticles,
    description_head,
    description_labels,
    load_wiki,
    mention_edges,
    mentions_graph,
    rewired,
    tfidf_features,
    tfidf_knn_graph,
)
from sipt_lab.graphs.graph import PretrainingGraph

TITLES = [
    "Water",
    "New York",
    "New York City",
    "Dune (novel)",
    "Paris",
    "Earth",
    "Mechanical engineering",
    "Georges Seurat",
    "1",
]
SUMMARIES = [
    "Water covers most of Earth. Water is drunk in Paris.",  # 0: Earth, Paris; not itself
    "New York is a state. Its capital is not New York City.",  # 1: New York City only
    "New York City is in New York. It has water and Parisian cafes.",  # 2: New York; "water" common, "Parisian" no
    "Dune is a novel by Frank Herbert about a desert planet.",  # 3: nothing
    "Paris hosts mechanical engineering schools and studies of the earth.",  # 4: Mechanical engineering, Earth
    "Earth orbits the Sun and the Moon orbits Earth. Earthquakes shake it. A 1 in 10 chance.",  # 5: itself only
    "Mechanical engineering builds engines. NEW YORK is loud.",  # 6: nothing (wrong case)
    "Seurat painted dots.",  # 7: nothing
    "One is a number, unlike water, rivers, the water cycle and more water.",  # 8: nothing
]
DESCRIPTIONS = [""] * 7 + ["French painter", "Painting by Georges Seurat"]


def _names(edges):
    return {(TITLES[a], TITLES[b]) for a, b in edges.tolist()}


def test_mentions_whole_words_case_and_longest_title():
    edges = mention_edges(TITLES, SUMMARIES, MentionRule())
    assert _names(edges) == {
        ("Water", "Earth"),
        ("Water", "Paris"),
        ("New York", "New York City"),
        ("New York City", "New York"),
        ("Paris", "Mechanical engineering"),
        ("Paris", "Earth"),
    }


def test_mention_rule_options():
    # Common words ("water" more often lower case than capitalised mid-sentence) are kept on request.
    with_common = _names(mention_edges(TITLES, SUMMARIES, MentionRule(common_words=True)))
    assert {("New York City", "Water"), ("1", "Water")} <= with_common
    # Exact case drops "the earth" and a sentence-case title in lower case.
    exact = _names(mention_edges(TITLES, SUMMARIES, MentionRule(case="exact")))
    assert ("Paris", "Earth") not in exact and ("Water", "Earth") in exact
    assert ("Paris", "Mechanical engineering") not in exact
    ignore = _names(mention_edges(TITLES, SUMMARIES, MentionRule(case="ignore")))
    assert ("Mechanical engineering", "New York") in ignore
    # Descriptions are searched only when the rule says so.
    described = _names(mention_edges(TITLES, SUMMARIES, MentionRule(descriptions=True), DESCRIPTIONS))
    plain = _names(mention_edges(TITLES, SUMMARIES, MentionRule(), DESCRIPTIONS))
    assert described - plain == {("1", "Georges Seurat")}


def test_disambiguated_title_named_by_its_bare_name_only_when_asked():
    titles = ["Dune (novel)", "Frank Herbert", "Casablanca", "Casablanca (film)"]
    summaries = [
        "Dune was written by Frank Herbert.",
        "Frank Herbert wrote Dune.",
        "Casablanca is a city.",
        "A film set in Casablanca.",
    ]
    plain = mention_edges(titles, summaries, MentionRule())
    asked = mention_edges(titles, summaries, MentionRule(disambiguated=True))
    assert {tuple(e) for e in plain.tolist()} == {(0, 1), (3, 2)}
    # The bare "Casablanca" still names the city, never the film: the undisambiguated title wins.
    assert {tuple(e) for e in asked.tolist()} == {(0, 1), (1, 0), (3, 2)}


def _toy_articles():
    return WikiArticles(TITLES, SUMMARIES, {}, DESCRIPTIONS, [UNCATEGORIZED] * len(TITLES))


def test_mentions_graph_is_undirected_and_rejects_unknown_rules():
    graph = mentions_graph(_toy_articles(), rule="first-letter-names-bare")
    assert graph.n_nodes == len(TITLES) and graph.n_edges == 5  # New York <-> New York City is one edge
    assert graph.has_edge(TITLES.index("Earth"), TITLES.index("Water"))
    with pytest.raises(SiptError, match="unknown mention rule 'loose'"):
        mentions_graph(_toy_articles(), rule="loose")


def test_tfidf_knn_links_similar_texts_symmetrically():
    texts = [
        "cats purr and cats meow",
        "a cat purrs, cats meow",
        "stocks and bonds fell",
        "bonds and stocks rose",
        "rivers flow to the sea",
        "the sea takes the rivers",
    ]
    data = WikiArticles([str(i) for i in range(6)], texts, {}, [""] * 6, [""] * 6)
    graph = tfidf_knn_graph(data, k=1)
    np.testing.assert_array_equal(graph.edges(), [[0, 1], [2, 3], [4, 5]])
    assert tfidf_knn_graph(data, k=2).degrees().min() >= 2


def test_tfidf_idf_sees_pretraining_texts_only():
    """The pre-training rows' weights do not move when the held-out texts change (they would if the
    IDF counted documents there), and build_graph hands the pre-training samples to tfidf-knn."""
    pretraining = [
        "cats purr and cats meow",
        "a cat purrs, cats meow",
        "stocks and bonds fell",
        "bonds and stocks rose",
    ]
    before = tfidf_features(pretraining + ["cats and bonds", "cats meow"], fit_on=[0, 1, 2, 3])
    after = tfidf_features(pretraining + ["cats cats stocks", "cats stocks bonds purr"], fit_on=[0, 1, 2, 3])
    np.testing.assert_allclose(before[:4].toarray(), after[:4].toarray())
    leaky = tfidf_features(pretraining + ["cats and bonds", "cats meow"])
    assert not np.allclose(before[:4].toarray(), leaky[:4].toarray())
    texts = [
        *pretraining,
        "rivers flow to the sea",
        "the sea takes the rivers",
        "kings rule the land",
        "the land of old kings",
        "cats stocks rivers",
        "cats stocks kings",
        "cats sea land",
        "cats cats cats bonds",
    ]
    data = WikiArticles([str(i) for i in range(12)], texts, {}, [""] * 12, [""] * 12)
    fitted = build_graph(get_domain("wiki"), "tfidf-knn", data, fit_on=np.arange(8))
    assert fitted == tfidf_knn_graph(data, fit_on=np.arange(8)) != tfidf_knn_graph(data)


def test_rewiring_keeps_degrees_and_moves_edges():
    rng = np.random.default_rng(0)
    graph = PretrainingGraph.from_edges(rng.integers(0, 60, 150), rng.integers(0, 60, 150), 60)
    random = rewired(graph, seed=3)
    np.testing.assert_array_equal(random.degrees(), graph.degrees())
    assert graph.has_edge(random.edges()[:, 0], random.edges()[:, 1]).mean() < 0.3
    assert rewired(graph, seed=3) == random


@pytest.fixture(scope="module")
def wiki():
    return load_wiki()


def test_wiki_samples_and_category_task(wiki):
    task = wiki.tasks["category"]
    assert len(wiki.ids) == len(wiki.texts) == 10_033
    assert task.samples.size == 10_033 - wiki.categories.count(UNCATEGORIZED) == 9_033
    assert len(task.label_names) == 11 and UNCATEGORIZED not in task.label_names
    first = int(task.samples[0])
    assert task.label_names[task.labels[0]] == wiki.categories[first]


@pytest.mark.slow
def test_held_out_articles_have_no_edge_in_the_pretraining_graph(wiki):
    domain = get_domain("wiki")
    task = wiki.tasks[domain.default_task]
    graph = build_graph(domain, "mentions", wiki)
    splits = random_splits(task.samples, seed=0)
    check_task_splits(task, splits, wiki.ids)
    pt = pretraining_graph(graph, splits)
    edges = pt.edges()
    assert not np.isin(edges, splits.held_out).any()
    assert graph.degrees()[splits.test].sum() > 1000  # there were test links to remove
    assert pt.n_edges == graph.n_edges - np.isin(graph.edges(), splits.held_out).any(axis=1).sum()
    assert not np.isin(splits.held_out, np.flatnonzero(np.array(wiki.categories) == UNCATEGORIZED)).any()


@pytest.mark.slow
def test_wiki_graphs_summaries(wiki):
    domain = get_domain("wiki")
    assert list(domain.graphs) == ["mentions", "tfidf-knn", "random"]
    task = wiki.tasks["category"]
    mentions = summarize_graph(build_graph(domain, "mentions", wiki), task)
    random = summarize_graph(build_graph(domain, "random", wiki, seed=0), task)
    assert mentions.n_edges == random.n_edges > 15_000
    assert mentions.local_consistency > 0.45 > 0.25 > random.local_consistency
    with pytest.raises(SiptError, match="has no graph 'links'"):
        build_graph(domain, "links", wiki)
    with pytest.raises(SiptError, match="unknown domain 'pubmed'"):
        get_domain("pubmed")
    assert set(MENTION_RULES) >= {"naive", "reader"}


@pytest.mark.parametrize(
    ("description", "head"),
    [
        ("American singer (1942–2016)", "singer"),  # parentheses dropped
        ("1968 film directed by Stanley Kubrick", "film"),  # a participle opening the qualifier goes with it
        ("Device used to detect, track, and/or identify ionising particles", "device"),
        ("Capital and largest city of the Netherlands", "city"),
        ("Medium consisting of pages of text", "medium"),
        ("Religion originating in Punjab, India", "religion"),
        ("1889 painting by Vincent van Gogh", "painting"),  # a noun in -ing before "by" stays
        ("Top covering of a building", "covering"),
        ("Sixth king of Babylon", "king"),
        ("American breed of cattle", "breed"),  # not a participle
        ("Intense armed conflict", "conflict"),  # a participle inside the phrase is no qualifier
        ("Legal, social, or ethical principles", "principles"),
        ("Of the people", "people"),  # the first word never ends the phrase
        ("", None),
        ("(1990)", None),
    ],
)
def test_description_head_is_the_last_word_of_the_leading_noun_phrase(description, head):
    assert description_head(description) == head


def test_description_labels_merge_plurals_and_leave_out_rare_heads_and_empty_descriptions():
    descriptions = ["Country in Africa", "Countrys of old", "Country in Asia", "German poet", "", "Poets' group"]
    data = WikiArticles(
        ids=[f"a{i}" for i in range(6)],
        texts=["t"] * 6,
        tasks={},
        descriptions=descriptions,
        categories=["c"] * 6,
    )
    assert description_labels(data, min_count=1) == {
        "a0": "country",
        "a1": "country",  # the plural of another article's head
        "a2": "country",
        "a3": "poet",
        "a5": "group",
    }
    assert description_labels(data, min_count=2) == {"a0": "country", "a1": "country", "a2": "country"}
    with pytest.raises(SiptError, match=r"min_count must be at least 1, got 0; pass 1"):
        description_labels(data, min_count=0)
