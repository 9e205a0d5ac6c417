import time

import numpy as np
import pytest

from sipt_lab.core.errors import SiptError
from sipt_lab.data.corpus import load_corpus
from sipt_lab.data.topics import TopicAssignment, TopicConfig, cache_path, fit_topics


@pytest.fixture(scope="module")
def small_corpus():
    """400 real sentences from four article categories of the default corpus."""
    corpus = load_corpus()
    keep = [i for i, c in enumerate(corpus.categories) if c in ("Mathematics", "Geography", "Arts", "People")]
    rng = np.random.default_rng(0)
    corpus.sentences = [corpus.sentences[i] for i in rng.choice(keep, 400, replace=False)]
    corpus.titles = corpus.categories = None
    return corpus


@pytest.mark.slow
def test_fit_on_a_few_hundred_sentences(small_corpus):
    config = TopicConfig(n_topics=8, max_iter=5, min_df=2)
    topics = fit_topics(small_corpus, config)
    assert topics.doc_topic.shape == (400, 8)
    np.testing.assert_allclose(topics.doc_topic.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(topics.labels, topics.doc_topic.argmax(axis=1))
    assert len(topics.topic_words) == 8 and all(len(w) == 10 for w in topics.topic_words)
    stop_words = {"the", "and", "was", "which", "with"}
    assert not stop_words & {w for words in topics.topic_words for w in words}
    assert topics.quality["perplexity"] < topics.quality["n_words"]  # better than a uniform model
    assert -1 <= topics.quality["npmi_coherence"] <= 1


def test_cache_hit_returns_the_same_fit_quickly(small_corpus):
    config = TopicConfig(n_topics=5, max_iter=3, min_df=2)
    first = fit_topics(small_corpus, config)
    assert cache_path(small_corpus, config).is_file()
    start = time.perf_counter()
    second = fit_topics(small_corpus, config)
    assert time.perf_counter() - start < 1.0
    np.testing.assert_array_equal(first.doc_topic, second.doc_topic)  # bit for bit, so ties agree
    np.testing.assert_array_equal(first.top3_topics, second.top3_topics)
    assert first.topic_words == second.topic_words


def test_cache_key_covers_parameters_and_content(small_corpus):
    base = cache_path(small_corpus, TopicConfig())
    assert cache_path(small_corpus, TopicConfig(seed=1)) != base
    assert cache_path(small_corpus, TopicConfig(stop_words="none")) != base
    other = load_corpus()
    other.sentences = small_corpus.sentences[:-1]
    assert cache_path(other, TopicConfig()) != base


@pytest.mark.slow
def test_same_seed_same_topics(small_corpus):
    config = TopicConfig(n_topics=4, max_iter=3, min_df=2)
    a = fit_topics(small_corpus, config, use_cache=False)
    b = fit_topics(small_corpus, config, use_cache=False)
    np.testing.assert_allclose(a.doc_topic, b.doc_topic, atol=1e-10)
    c = fit_topics(small_corpus, TopicConfig(n_topics=4, max_iter=3, min_df=2, seed=1))
    assert np.abs(a.doc_topic - c.doc_topic).max() > 0.1


def test_top3_coordinates():
    doc_topic = np.array([[0.1, 0.5, 0.2, 0.15, 0.05], [0.3, 0.3, 0.2, 0.1, 0.1], [0.1, 0.3, 0.1, 0.1, 0.4]])
    topics = TopicAssignment.from_doc_topic(doc_topic)
    # ties go to the lower topic index
    np.testing.assert_array_equal(topics.top3_topics, [[1, 2, 3], [0, 1, 2], [4, 1, 0]])
    np.testing.assert_allclose(topics.top3_mass, [0.85, 0.8, 0.8])
    np.testing.assert_allclose(topics.top3_probs[:2], [[0.5 / 0.85, 0.2 / 0.85, 0.15 / 0.85], [0.375, 0.375, 0.25]])


def test_too_small_corpus_is_a_clear_error(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text("".join(f"sentence number {i} with words\n" for i in range(10)))
    with pytest.raises(SiptError, match="has 10 sentences but a 100-topic model needs at least 100"):
        fit_topics(load_corpus(path), TopicConfig())
