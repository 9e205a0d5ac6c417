"""Cold topic model on the default corpus: ours vs the original SIPT code's settings, side by side.

Reference: what the paper's code ran (CountVectorizer defaults, so no stop-word list, and
scikit-learn LDA with 100 topics, batch EM, 10 iterations) on one core. Middle row: sipt-lab's
vocabulary on one core (isolates the vocabulary from the parallelism). Ours: sipt-lab's default
TopicConfig (pruned vocabulary, E-step on 2 processes). Every row reports the same quality
measures so speed is not bought with worse topics: NPMI coherence of the top-10 words (higher is
better), predictive per-word perplexity (lower is better; only comparable between rows with the
same vocabulary) and the share of stop words among the top-10 words (function-word "topics"
co-occur everywhere, which flatters NPMI and perplexity while telling nothing about content).
Goal: ours <= 30 s cold, cached load about 1 s.

Run: python benchmarks/bench_topics.py
"""

from __future__ import annotations

import tempfile
import time

import numpy as np
from sklearn.decomposition import LatentDirichletAllocation
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

from sipt_lab.data.corpus import load_corpus
from sipt_lab.data.topics import TopicConfig, fit_topics, topic_quality


def stop_word_share(topic_words: list[list[str]]) -> float:
    words = [w for top in topic_words for w in top]
    return sum(w in ENGLISH_STOP_WORDS for w in words) / len(words)


def single_core_fit(sentences: list[str], vectorizer: CountVectorizer) -> tuple[float, dict[str, float]]:
    start = time.perf_counter()
    counts = vectorizer.fit_transform(sentences).astype(np.float64)
    lda = LatentDirichletAllocation(n_components=100, learning_method="batch", max_iter=10, random_state=1)
    doc_topic = lda.fit_transform(counts)
    seconds = time.perf_counter() - start
    topic_word = lda.components_ / lda.components_.sum(axis=1, keepdims=True)
    words = vectorizer.get_feature_names_out()
    quality = topic_quality(counts.tocsr(), doc_topic, topic_word)
    quality["stop_word_share"] = stop_word_share([words[np.argsort(-r)[:10]].tolist() for r in topic_word])
    return seconds, quality


def main() -> None:
    corpus = load_corpus()
    with tempfile.TemporaryDirectory() as cache:
        import os

        os.environ["SIPT_LAB_CACHE"] = cache
        start = time.perf_counter()
        ours = fit_topics(corpus, TopicConfig())
        ours_seconds = time.perf_counter() - start
        start = time.perf_counter()
        fit_topics(corpus, TopicConfig())
        cached_seconds = time.perf_counter() - start
    ours.quality["stop_word_share"] = stop_word_share(ours.topic_words)
    ref_seconds, ref_quality = single_core_fit(corpus.sentences, CountVectorizer(min_df=5, max_df=0.7))
    config = TopicConfig()
    same_vocab = CountVectorizer(
        stop_words="english", token_pattern=r"(?u)\b[^\W\d_]{3,}\b", min_df=config.min_df, max_df=config.max_df
    )
    vocab_seconds, vocab_quality = single_core_fit(corpus.sentences, same_vocab)
    print(f"default corpus: {len(corpus)} sentences, 100 topics, 10 batch EM iterations\n")
    print(f"{'setting':<42} {'seconds':>8} {'NPMI':>7} {'perplexity':>11} {'vocab':>6} {'stop words':>10}")
    rows = [
        ("original settings, 1 core (reference)", ref_seconds, ref_quality),
        ("sipt-lab vocabulary, 1 core", vocab_seconds, vocab_quality),
        ("sipt-lab default, 2 processes", ours_seconds, ours.quality),
    ]
    for name, seconds, quality in rows:
        print(
            f"{name:<42} {seconds:8.1f} {quality['npmi_coherence']:7.3f} "
            f"{quality['perplexity']:11.1f} {int(quality['n_words']):6d} {quality['stop_word_share']:10.0%}"
        )
    print(f"{'sipt-lab, cached (second run)':<42} {cached_seconds:8.2f}")
    print(f"\nspeed-up vs reference: {ref_seconds / ours_seconds:.1f}x   (goal: ours <= 30 s cold)")
    print("top words of the first 5 topics (ours):")
    for words in ours.topic_words[:5]:
        print("  " + ", ".join(words))


if __name__ == "__main__":
    main()
