"""The topic model that defines the fine-tuning task: LDA over a bag of words, cached on disk.

As in the paper, scikit-learn's :class:`~sklearn.decomposition.LatentDirichletAllocation` runs
over word counts with 100 topics and batch variational EM, and the FT label of a sentence is its
most probable topic. Unlike the original code, the vocabulary drops English stop words, tokens with
digits and words of fewer than three letters, and words in fewer than ``min_df`` sentences or more
than ``max_df`` of them, so topics are about content ("species, genus, family") rather than
function words ("in, of, and, was").

Fits are cached under ``$SIPT_LAB_CACHE`` (default ``~/.cache/sipt-lab``), keyed by the corpus
content hash, every :class:`TopicConfig` field and the numpy/scikit-learn versions. A second run
loads the result in well under a second. The cache never costs a fit: an unusable cache directory
is logged as a warning before the fit, which then runs without it, and a damaged entry counts as a
miss whose refit replaces it atomically.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import logging
import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import sklearn
from sklearn.decomposition import LatentDirichletAllocation
from sklearn.feature_extraction.text import CountVectorizer

from sipt_lab.core.config_io import config_to_dict
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import CACHE_ENV, cache_dir, write_bytes_atomic
from sipt_lab.core.progress import progress_bar
from sipt_lab.data.corpus import Corpus

logger = logging.getLogger(__name__)

TOP_WORDS = 10
CACHE_FORMAT = 2  # bump when the cached arrays change meaning (2: float32-rounded fits, stable top-3)


@dataclass(frozen=True)
class TopicConfig:
    """LDA and vocabulary settings. Every field is part of the cache key.

    Attributes:
        n_topics: number of LDA topics ``K`` (the paper: 100).
        max_iter: batch EM iterations (scikit-learn's default, used by the paper: 10).
        seed: LDA ``random_state``.
        stop_words: ``"english"`` (scikit-learn's list) or ``"none"``.
        min_word_length: shortest kept word, in letters; tokens with digits are never kept.
        min_df: a word must occur in at least this many sentences.
        max_df: ... and in at most this fraction of them.
        max_doc_update_iter: cap on per-sentence variational iterations per E-step.
        mean_change_tol: per-sentence convergence tolerance of the E-step.
        n_jobs: processes for the E-step. scikit-learn draws each chunk's initial topic weights
            separately, so the chunk count changes the numbers: it is part of the config (and the
            cache key), with a fixed default so a seed gives the same topics on every machine.
    """

    n_topics: int = 100
    max_iter: int = 10
    seed: int = 0
    stop_words: str = "english"
    min_word_length: int = 3
    min_df: int = 5
    max_df: float = 0.5
    max_doc_update_iter: int = 100
    mean_change_tol: float = 1e-3
    n_jobs: int = 2


@dataclass
class TopicAssignment:
    """One LDA fit over a corpus.

    Attributes:
        doc_topic: ``(n, K)`` topic distribution per sentence, rows sum to 1.
        topic_words: ``K`` lists of the most probable words per topic.
        quality: ``{"npmi_coherence": ..., "perplexity": ..., "n_words": ...}`` (see :func:`topic_quality`).
    """

    doc_topic: np.ndarray
    topic_words: list[list[str]] = dataclasses.field(default_factory=list)
    quality: dict[str, float] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_doc_topic(cls, doc_topic: np.ndarray, topic_words: list[list[str]] | None = None) -> TopicAssignment:
        """Wrap any ``(n, K)`` non-negative matrix (rows are renormalised to sum to 1)."""
        doc_topic = np.asarray(doc_topic, dtype=np.float64)
        if doc_topic.ndim != 2 or doc_topic.shape[1] < 3:
            raise ValueError(f"doc_topic must be (n, K) with K >= 3, got shape {doc_topic.shape}")
        doc_topic = doc_topic / doc_topic.sum(axis=1, keepdims=True)
        return cls(doc_topic, topic_words or [])

    @property
    def n_topics(self) -> int:
        return self.doc_topic.shape[1]

    @property
    def labels(self) -> np.ndarray:
        """``(n,)`` int64: the most probable topic of each sentence (the FT label)."""
        return self.doc_topic.argmax(axis=1).astype(np.int64)

    @property
    def top3_topics(self) -> np.ndarray:
        """``(n, 3)`` int64: the three most probable topics, most probable first.

        Ties go to the lower topic index, so the result does not depend on the sort's internals.
        """
        return np.argsort(-self.doc_topic, axis=1, kind="stable")[:, :3].astype(np.int64)

    @property
    def top3_mass(self) -> np.ndarray:
        """``(n,)``: the total probability of the top three topics."""
        return np.take_along_axis(self.doc_topic, self.top3_topics, axis=1).sum(axis=1)

    @property
    def top3_probs(self) -> np.ndarray:
        """``(n, 3)``: top-3 probabilities renormalised to sum to 1 (barycentric coordinates)."""
        probs = np.take_along_axis(self.doc_topic, self.top3_topics, axis=1)
        return probs / probs.sum(axis=1, keepdims=True)


def fit_topics(
    corpus: Corpus,
    config: TopicConfig = TopicConfig(),
    *,
    use_cache: bool = True,
    fit_rows: np.ndarray | None = None,
) -> TopicAssignment:
    """Fit (or load from the cache) LDA topics for every sentence of ``corpus``.

    ``fit_rows``: ``(m,)`` indices of the only sentences the vocabulary and the model are fitted on
    (e.g. none of the samples a study keeps unseen); every sentence's topics are then the fitted
    model's transform of it. None: fitted on every sentence.
    """
    _validate(corpus, config)
    if fit_rows is not None:
        fit_rows = np.unique(np.asarray(fit_rows, dtype=np.int64))
        if fit_rows.size < max(config.n_topics, 20) or fit_rows[-1] >= len(corpus):
            raise SiptError(
                f"the topic model is fitted on {fit_rows.size} sentences of a corpus of {len(corpus)}; give at least "
                f"{max(config.n_topics, 20)} indices into the corpus"
            )
    path = cache_path(corpus, config, fit_rows)
    if use_cache:
        cached = _load(path, len(corpus), config.n_topics)
        if cached is not None:
            return cached
        use_cache = _cache_usable(path.parent)
    fitted = slice(None) if fit_rows is None else fit_rows
    counts, vocabulary = _count_words(corpus, config, fitted)
    lda = LatentDirichletAllocation(
        n_components=config.n_topics,
        learning_method="batch",
        max_iter=config.max_iter,
        random_state=config.seed,
        max_doc_update_iter=config.max_doc_update_iter,
        mean_change_tol=config.mean_change_tol,
        n_jobs=config.n_jobs,
        verbose=1,
    )
    with _iteration_progress(config.max_iter, f"LDA {config.n_topics} topics"):
        lda.fit(counts[fitted])
    # Rounded to float32 precision, as stored in the cache, so a fresh fit and a cached load agree
    # to the bit (ties between topics included).
    doc_topic = lda.transform(counts).astype(np.float32).astype(np.float64)
    topic_word = lda.components_ / lda.components_.sum(axis=1, keepdims=True)
    words = np.asarray(vocabulary)
    result = TopicAssignment(
        doc_topic=doc_topic,
        topic_words=[words[np.argsort(-row)[:TOP_WORDS]].tolist() for row in topic_word],
        quality=topic_quality(counts[fitted], doc_topic[fitted], topic_word),
    )
    if use_cache:
        try:
            _save(path, result)
        except OSError as error:
            logger.warning(f"could not save the topic fit to {path} ({error.strerror}); it is not cached")
    return result


def topic_quality(counts: sp.csr_matrix, doc_topic: np.ndarray, topic_word: np.ndarray) -> dict[str, float]:
    """Two quality measures that do not depend on how fast the fit was.

    ``npmi_coherence``: mean normalised pointwise mutual information of the top-10 word pairs of
    each topic, from sentence co-occurrence (range [-1, 1], higher is better; Bouma 2009).
    ``perplexity``: ``exp(-sum_dw x_dw log p(w|d) / sum x)`` with ``p(w|d) = theta_d . beta_w``,
    the per-word predictive perplexity of the fitted model on its corpus (lower is better).
    """
    counts = sp.csr_matrix(counts)
    rows = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
    word_prob = np.einsum("ik,ik->i", doc_topic[rows], topic_word.T[counts.indices])
    perplexity = float(np.exp(-(counts.data * np.log(word_prob)).sum() / counts.data.sum()))
    present = (counts > 0).astype(np.float64).tocsc()
    n_docs = counts.shape[0]
    scores = []
    for row in topic_word:
        top = np.argsort(-row)[:TOP_WORDS]
        occurrence = present[:, top]
        joint = (occurrence.T @ occurrence).toarray() / n_docs
        marginal = np.diag(joint)
        i, j = np.triu_indices(len(top), k=1)
        p_ij = joint[i, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            npmi = np.where(p_ij > 0, np.log(p_ij / (marginal[i] * marginal[j])) / -np.log(p_ij), -1.0)
        scores.append(npmi.mean())
    return {"npmi_coherence": float(np.mean(scores)), "perplexity": perplexity, "n_words": float(counts.shape[1])}


def cache_path(corpus: Corpus, config: TopicConfig, fit_rows: np.ndarray | None = None) -> Path:
    """Where the fit of ``config`` over ``corpus`` (on its sorted ``fit_rows``, or every sentence) is cached."""
    fields = {
        "format": CACHE_FORMAT,
        "corpus": corpus.content_hash,
        "config": config_to_dict(config),
        "numpy": np.__version__,
        "sklearn": sklearn.__version__,
    }
    if fit_rows is not None:
        fields["fit_rows"] = hashlib.sha256(np.asarray(fit_rows, dtype="<i8").tobytes()).hexdigest()
    key = json.dumps(fields, sort_keys=True)
    return cache_dir() / "topics" / f"lda-{hashlib.sha256(key.encode()).hexdigest()[:20]}.npz"


def _validate(corpus: Corpus, config: TopicConfig) -> None:
    if config.n_topics < 3:
        raise SiptError(f"the topic model needs at least 3 topics, got {config.n_topics}")
    if config.n_jobs < 1:
        raise SiptError(f"the topic model's n_jobs must be >= 1, got {config.n_jobs}")
    if config.stop_words not in ("english", "none"):
        raise SiptError(f"stop_words must be 'english' or 'none', got {config.stop_words!r}")
    corpus.require(max(config.n_topics, 20), f"a {config.n_topics}-topic model")


def _count_words(corpus: Corpus, config: TopicConfig, fitted=slice(None)) -> tuple[sp.csr_matrix, list[str]]:
    """``(n, V)`` word counts of every sentence over the vocabulary of the ``fitted`` ones, and that vocabulary."""
    fit_sentences = np.asarray(corpus.sentences, dtype=object)[fitted].tolist()
    min_df = min(config.min_df, max(1, len(fit_sentences) // 100))
    vectorizer = CountVectorizer(
        stop_words="english" if config.stop_words == "english" else None,
        token_pattern=rf"(?u)\b[^\W\d_]{{{config.min_word_length},}}\b",
        min_df=min_df,
        max_df=config.max_df,
        dtype=np.float64,
    )
    try:
        vectorizer.fit(fit_sentences)
    except ValueError:
        raise SiptError(
            f"corpus {corpus.source} leaves no words after stop-word and frequency filtering; "
            "use a bigger corpus of natural-language sentences"
        ) from None
    return vectorizer.transform(corpus.sentences).tocsr(), vectorizer.get_feature_names_out().tolist()


@contextlib.contextmanager
def _iteration_progress(total: int, description: str):
    """Turn scikit-learn's ``verbose`` iteration lines into a progress bar (silent where bars are off)."""
    bar = progress_bar(total=total, desc=description, unit="iter", leave=False)

    class _Lines(io.TextIOBase):
        def write(self, text: str) -> int:
            bar.update(len(re.findall(r"iteration: \d+", text)))
            return len(text)

    try:
        with contextlib.redirect_stdout(_Lines()):
            yield
    finally:
        bar.close()


def _save(path: Path, result: TopicAssignment) -> None:
    buffer = io.BytesIO()
    np.savez(
        buffer,
        doc_topic=result.doc_topic.astype(np.float32),
        meta=np.frombuffer(
            json.dumps({"topic_words": result.topic_words, "quality": result.quality}).encode(), np.uint8
        ),
    )
    write_bytes_atomic(path, buffer.getvalue())


def _load(path: Path, n_docs: int, n_topics: int) -> TopicAssignment | None:
    """The cached fit at ``path`` (``doc_topic`` of shape ``(n_docs, n_topics)``); None when it is
    missing or damaged (truncated, empty, wrong arrays), so that the caller refits and replaces it."""
    try:
        with np.load(path) as data:
            meta = json.loads(data["meta"].tobytes().decode())
            doc_topic = data["doc_topic"].astype(np.float64)
        result = TopicAssignment(doc_topic, meta["topic_words"], meta["quality"])
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
        return None
    return result if doc_topic.shape == (n_docs, n_topics) else None


def _cache_usable(directory: Path) -> bool:
    """Whether fits can be saved in ``directory`` (created if missing); if not, log a warning."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        logger.warning(
            f"topic cache {directory} is unusable ({error.strerror}); fitting without a cache "
            f"(point ${CACHE_ENV} at a writable directory to keep fits)"
        )
        return False
    return True
