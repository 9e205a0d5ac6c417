"""The atlas's material: crawled draws that keep the sides apart, tasks and graphs that never read
each other."""

import numpy as np
import pytest

from sipt_lab.core.errors import SiptError
from sipt_lab.domains.wiki import description_heads, first_word_head
from sipt_lab.studies.lc.atlas_pairs import GRAPH_BUILDERS, TASK_LABELS, crawl, draw_articles, never_seen_positions


def test_head_rules_per_language():
    assert description_heads(["American singer (1942–2016)", "Capital of France", "Concepts in logic", "concept"]) == [
        "singer",
        "capital",
        "concept",
        "concept",
    ]
    assert first_word_head("actrice américaine") == "actrice"
    assert first_word_head("(née) ville de France") == "ville"
    assert first_word_head("") is None
    assert description_heads(["ville de France", "villes du monde"], "fr") == ["ville", "ville"]


@pytest.fixture(scope="module")
def draw():
    return draw_articles("en", ("category", "head-5", "head-20"), n_pretrain=300, n_never_seen=60, split_seed=3)


def test_draw_keeps_pretraining_and_never_seen_apart(draw):
    never_seen = [draw.never_seen[task] for task in ("category", "head-5", "head-20")]
    assert all(rows.size == 60 for rows in never_seen)
    every = np.concatenate([draw.pretrain, *never_seen])
    assert np.unique(every).size == every.size  # no article on two sides, none under two tasks
    for task, rows in draw.never_seen.items():
        assert all(label is not None for label in draw.articles.labels[task][rows])
    positions, labels = draw.pretrain_labels("head-5")
    assert 0 < positions.size < draw.pretrain.size  # the head task labels a subset
    assert len(set(labels)) <= 5


def test_draw_is_the_same_for_a_seed_and_differs_between_seeds(draw):
    again = draw_articles("en", ("category", "head-5", "head-20"), n_pretrain=300, n_never_seen=60, split_seed=3)
    other = draw_articles("en", ("category", "head-5", "head-20"), n_pretrain=300, n_never_seen=60, split_seed=4)
    assert np.array_equal(again.pretrain, draw.pretrain)
    assert not np.array_equal(other.pretrain, draw.pretrain)


def test_too_few_never_seen_articles_is_one_clear_error():
    with pytest.raises(SiptError, match="fewer than the 9000 never-seen articles"):
        draw_articles("en", ("head-5",), n_pretrain=100, n_never_seen=9000, split_seed=0)


def test_graphs_are_built_without_labels(draw):
    """Every builder sees the draw's texts and mentions; scrambling every task's labels changes no graph."""
    from dataclasses import replace

    scrambled = replace(
        draw,
        articles=replace(
            draw.articles,
            labels={task: np.random.default_rng(0).permutation(y) for task, y in draw.articles.labels.items()},
        ),
    )
    vectors = np.random.default_rng(1).normal(size=(draw.pretrain.size, 8))
    for name, build in GRAPH_BUILDERS.items():
        one, two = build(draw, lambda: vectors, 0), build(scrambled, lambda: vectors, 0)
        assert one.n_nodes == draw.pretrain.size
        assert np.array_equal(one.edges(), two.edges()), name
    assert (
        GRAPH_BUILDERS["random"](draw, lambda: vectors, 0).n_edges
        == GRAPH_BUILDERS["co-mentions"](draw, lambda: vectors, 0).n_edges
    )


def test_never_seen_positions_drop_test_classes_without_references():
    labels = np.array(["a", "b"] * 5 + ["c"] * 10)
    references, validation, test = never_seen_positions(labels)
    assert (references.size, validation.size) == (10, 2)
    assert set(labels[test]) <= set(labels[references])
    assert "c" not in set(labels[test])


def test_era_and_nationality_read_the_text_not_a_graph():
    articles = [
        {"extract": "Born in 1879 in Ulm, he moved in 1933.", "description": "German physicist", "topic": "People"},
        {"extract": "A city of 2,500,000 people.", "description": "Capital of France", "topic": "Geography"},
        {"extract": "Founded in 2004.", "description": "American company", "topic": "Society"},
    ]
    assert list(TASK_LABELS["era"](articles, "en")) == ["1800-1899", None, "2000-2029"]
    assert list(TASK_LABELS["nationality"](articles, "en")) == ["German", None, "American"]
    french = [
        {"description": "actrice américaine"},
        {"description": "homme politique français"},
        {"description": "ville"},
    ]
    assert list(TASK_LABELS["nationality"](french, "fr")) == ["américain", "français", None]


def test_a_crawl_takes_an_article_then_what_it_names():
    import scipy.sparse as sp

    n = 10  # article i names i + 1 and i + 2
    rows = np.repeat(np.arange(n), 2)
    mentions = sp.csr_array((np.ones(2 * n), (rows, (rows + np.tile([1, 2], n)) % n)), shape=(n, n))
    for seed in range(5):
        chosen = crawl(mentions, 3, np.random.default_rng(seed)).tolist()
        assert any(chosen == sorted({s, (s + 1) % n, (s + 2) % n}) for s in range(n)), chosen
    assert crawl(mentions, n, np.random.default_rng(0)).tolist() == list(range(n))


def test_a_crawl_keeps_more_mentions_than_a_uniform_draw():
    crawled = draw_articles("en", ("category",), n_pretrain=300, n_never_seen=60, split_seed=0)
    links = lambda positions: crawled.articles.mentions[positions][:, positions].nnz  # noqa: E731
    uniform = np.sort(np.random.default_rng(0).choice(len(crawled.articles.texts), 300, replace=False))
    assert links(crawled.pretrain) > 5 * max(links(uniform), 1)
