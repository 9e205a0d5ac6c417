import numpy as np
import pytest
from synthetic_fakes import fake_corpus_and_topics, shared_articles, with_articles

from sipt_lab.core.errors import SiptError
from sipt_lab.data.topics import TopicAssignment
from sipt_lab.graphs.consistency import local_consistency
from sipt_lab.synthetic import builder
from sipt_lab.synthetic.cliques import build_cliques
from sipt_lab.synthetic.sentences import assign_sentences, confident_pools, proportional_counts
from sipt_lab.synthetic.spec import GraphSpec


def build(n_nodes=50, seed=0, n_heldout=20, **kwargs):
    corpus, topics = fake_corpus_and_topics(n_topics=20, per_topic=10, n_vague=100)
    spec = GraphSpec("cliques", n_nodes=n_nodes, n_heldout=n_heldout, n_topics=20, seed=seed)
    return corpus, topics, build_cliques(spec, corpus, topics, np.random.default_rng(seed), **kwargs)


def test_cliques_are_implicit_topic_cliques_with_lc_one():
    corpus, topics, dataset = build()
    assert dataset.graph.is_implicit
    assert dataset.n_nodes == 50
    assert np.unique(dataset.labels).size == 10
    assert np.bincount(dataset.labels)[np.unique(dataset.labels)].tolist() == [5] * 10
    assert dataset.graph.n_edges == 10 * 10  # ten 5-cliques
    assert dataset.local_consistency == 1.0
    A = dataset.graph.adjacency()
    assert (A != A.T).nnz == 0 and not A.diagonal().any()
    assert len(set(dataset.params["class_topics"])) == 10


def test_every_sentence_is_confident_and_its_top_topic_is_its_label():
    corpus, topics, dataset = build()
    index = {s: i for i, s in enumerate(corpus.sentences)}
    pt = np.array([index[s] for s in dataset.sentences])
    heldout = np.array([index[s] for s in dataset.heldout_sentences])
    assert np.array_equal(topics.labels[pt], dataset.labels)
    assert np.array_equal(topics.labels[heldout], dataset.heldout_labels)
    assert topics.doc_topic[np.concatenate([pt, heldout])].max(axis=1).min() >= 0.8  # no vague sentence
    assert len(set(pt)) == 50 and len(heldout) == 20 and not set(pt) & set(heldout)
    assert set(dataset.heldout_labels) <= set(dataset.labels)


def test_heldout_sentences_come_from_articles_with_no_sentence_on_a_node():
    corpus, topics = fake_corpus_and_topics(n_topics=20, per_topic=60)
    corpus = with_articles(corpus, 4)  # four sentences of one topic per article
    for seed in range(3):
        spec = GraphSpec("cliques", n_nodes=50, n_heldout=20, n_topics=20, seed=seed)
        dataset = build_cliques(spec, corpus, topics, np.random.default_rng(seed))
        assert len(dataset.heldout_sentences) == 20 and np.bincount(dataset.heldout_labels).max() == 2
        assert not shared_articles(corpus, dataset.sentences, dataset.heldout_sentences)
        # the articles move only held-out sentences: the nodes and every later draw are as without them
        plain_corpus = fake_corpus_and_topics(n_topics=20, per_topic=60)[0]
        rng, plain_rng = np.random.default_rng(seed), np.random.default_rng(seed)
        grouped, plain = build_cliques(spec, corpus, topics, rng), build_cliques(spec, plain_corpus, topics, plain_rng)
        assert grouped.sentences == plain.sentences and rng.integers(1 << 30) == plain_rng.integers(1 << 30)


def test_too_few_sentences_outside_the_nodes_articles_is_a_one_line_error():
    corpus, topics = fake_corpus_and_topics(n_topics=20, per_topic=60)
    corpus = with_articles(corpus, 60)  # one article per topic: a clique's nodes use its topic's only article
    spec = GraphSpec("cliques", n_nodes=50, n_heldout=20, n_topics=20)
    with pytest.raises(SiptError, match="from articles with no sentence on a node") as error:
        build_cliques(spec, corpus, topics, np.random.default_rng(0))
    assert "\n" not in str(error.value) and "fewer GraphSpec.n_heldout" in str(error.value)


def test_uneven_sizes_differ_by_at_most_one_and_tiny_graphs_keep_two_nodes_per_clique():
    _, _, dataset = build(n_nodes=53)
    sizes = np.bincount(dataset.labels)[np.unique(dataset.labels)]
    assert sorted(sizes.tolist()) == [5] * 7 + [6] * 3
    _, _, tiny = build(n_nodes=5, n_heldout=0)
    assert sorted(np.bincount(tiny.labels)[np.unique(tiny.labels)].tolist()) == [2, 3]
    assert tiny.params["n_classes"] == 2 and tiny.local_consistency == 1.0


def test_too_few_confident_sentences_is_a_clear_error():
    # 20 topics x 10 sentences: 10 cliques of 30 nodes (+2 held-out each) cannot be filled
    with pytest.raises(SiptError, match="fewer GraphSpec.n_nodes") as error:
        build(n_nodes=300)
    assert "\n" not in str(error.value) and "32 sentences" in str(error.value)
    # a threshold above every sentence's probability leaves no pool at all
    with pytest.raises(SiptError, match="probability >= 0.99"):
        build(min_confidence=0.99)


def test_same_seed_same_dataset_and_other_seed_other_topics():
    _, _, a = build(seed=3)
    _, _, b = build(seed=3)
    _, _, c = build(seed=4)
    assert a.sentences == b.sentences and np.array_equal(a.labels, b.labels)
    assert a.heldout_sentences == b.heldout_sentences
    assert a.sentences != c.sentences


def test_noise_is_added_by_build_dataset(monkeypatch):
    corpus, topics = fake_corpus_and_topics(n_topics=20, per_topic=10)
    monkeypatch.setattr(builder, "load_corpus", lambda path=None: corpus)
    monkeypatch.setattr(builder, "fit_topics", lambda corpus, config: topics)
    clean = builder.build_dataset(GraphSpec("cliques", seed=1))
    noisy = builder.build_dataset(GraphSpec("cliques", seed=1, noise=0.5))
    assert clean.graph.n_edges == 100 and clean.local_consistency == 1.0
    assert noisy.sentences == clean.sentences
    assert noisy.graph.n_edges > 400  # ~0.5 of the 1125 non-edges added
    assert noisy.local_consistency == local_consistency(noisy.graph, noisy.labels) < 1.0
    assert noisy.params["noise"] == 0.5 and noisy.params["n_classes"] == 10


def test_assign_sentences_matches_largest_classes_first():
    # topic 0 has 30 confident sentences, topics 1..4 have 5: the 25-node class must get topic 0
    owner = np.concatenate([np.zeros(30, int), np.repeat(np.arange(1, 5), 5)])
    doc_topic = np.full((owner.size, 5), 0.01)
    doc_topic[np.arange(owner.size), owner] = 0.96
    topics = TopicAssignment.from_doc_topic(doc_topic)
    classes = np.array([0] * 3 + [1] * 25 + [2] * 4)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        result = assign_sentences(topics, classes, 0, 0.9, rng, groups=np.arange(owner.size), family="t")
        assert result.class_topics[1] == 0
        assert len(set(result.class_topics.tolist())) == 3
    assert [pool.size for pool in confident_pools(topics, 0.9)] == [30, 5, 5, 5, 5]


def test_proportional_counts():
    assert proportional_counts(20, np.array([5, 5, 5, 5])).tolist() == [5, 5, 5, 5]
    assert proportional_counts(7, np.array([45, 24, 21])).tolist() == [3, 2, 2]
    assert proportional_counts(0, np.array([3, 1])).tolist() == [0, 0]
