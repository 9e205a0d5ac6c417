"""Character-level tokenizer built from the pre-training corpus.

Token ids: ``0 = [PAD]``, ``1 = [MASK]``, ``2 = [CLS]``, ``3 = [UNK]``, then one id per distinct
character of the corpus in code-point order, then, for a tokenizer built with ``sep=True`` (segment
pairs, LinkBERT), ``[SEP]`` as the last id (so the ids of every other tokenizer are unchanged).
Every sample becomes ``[CLS] c_1 ... c_m`` (the [CLS] slot carries the per-sample embedding),
truncated to ``max_len`` tokens and right-padded with ``[PAD]``
(:func:`sipt_lab.training.segment_pairs.join_segments` makes ``[CLS] A [SEP] B [SEP]`` rows). Characters never seen while building map to ``[UNK]``, so
evaluation text never fails.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_json_atomic

SPECIAL_TOKENS = ("[PAD]", "[MASK]", "[CLS]", "[UNK]")
PAD_ID, MASK_ID, CLS_ID, UNK_ID = range(len(SPECIAL_TOKENS))


@runtime_checkable
class Tokenizer(Protocol):
    """What the trainer and ``embed`` need from a tokenizer.

    Rows are ``[CLS]``-first (one special token before the text, the per-sample slot),
    ``suffix_tokens`` special tokens after it (``[SEP]`` for BERT-style tokenizers, none for
    characters), right-padded with ``pad_id``; MLM masks only the tokens in between.
    """

    max_len: int
    vocab_size: int
    pad_id: int
    mask_id: int
    suffix_tokens: int

    def encode(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(n, L)`` int64 padded ids and ``(n,)`` int64 tokens per row before padding."""

    def to_dict(self) -> dict:
        """A JSON description that identifies the tokenizer (checkpoints compare it)."""


@dataclass(frozen=True)
class CharTokenizer:
    """Maps sentences to padded ``[CLS]``-first id arrays.

    Attributes:
        chars: the known characters, sorted by code point; ``chars[k]`` has id ``len(SPECIAL_TOKENS) + k``.
        max_len: tokens per sample including ``[CLS]``; longer sentences are truncated.
        sep: the vocabulary ends with ``[SEP]`` (id :attr:`sep_id`), for segment-pair inputs.
    """

    chars: tuple[str, ...]
    max_len: int = 512
    sep: bool = False
    _codes: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_len < 2:
            raise SiptError(f"tokenizer max_len is {self.max_len}; use at least 2 ([CLS] plus one character)")
        codes = np.array([ord(c) for c in self.chars], dtype=np.uint32)
        if np.any(np.diff(codes.astype(np.int64)) <= 0):
            raise ValueError("chars must be distinct single characters sorted by code point")
        object.__setattr__(self, "_codes", codes)

    @classmethod
    def build(cls, sentences: list[str], max_len: int = 512, sep: bool = False) -> CharTokenizer:
        """The tokenizer whose vocabulary is every character occurring in ``sentences`` (plus ``[SEP]``)."""
        codes = np.unique(_code_points("".join(sentences)))
        return cls(chars=tuple(chr(c) for c in codes), max_len=max_len, sep=sep)

    pad_id = PAD_ID
    mask_id = MASK_ID
    suffix_tokens = 0

    @property
    def vocab_size(self) -> int:
        return len(SPECIAL_TOKENS) + len(self.chars) + int(self.sep)

    @property
    def sep_id(self) -> int:
        """The id of ``[SEP]``; SiptError for a tokenizer built without it."""
        if not self.sep:
            raise SiptError("this character tokenizer has no [SEP]; build it with sep=True for segment-pair inputs")
        return len(SPECIAL_TOKENS) + len(self.chars)

    def encode(self, sentences: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Token ids of ``n`` sentences.

        Returns:
            ids: ``(n, L)`` int64, ``L = max(lengths)``; row ``i`` is ``[CLS]``, the first
                ``max_len - 1`` characters of sentence ``i`` (unknown ones as ``[UNK]``), then ``[PAD]``.
            lengths: ``(n,)`` int64 tokens per row before padding (``[CLS]`` included, so ``>= 1``).
        """
        codes = _code_points("".join(sentences))
        slot = np.searchsorted(self._codes, codes).clip(max=max(len(self._codes) - 1, 0))
        known = self._codes[slot] == codes if len(self._codes) else np.zeros(len(codes), dtype=bool)
        return self._grid(sentences, np.where(known, slot + len(SPECIAL_TOKENS), UNK_ID), CLS_ID, PAD_ID)

    def word_ids(self, sentences: list[str]) -> np.ndarray:
        """``(n, L)`` int64, aligned with :meth:`encode`: the word each character belongs to,
        counted from 0 in every row (a word is a maximal run of non-whitespace characters; each
        whitespace character is a unit of its own); -1 at ``[CLS]`` and padding."""
        n_chars = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
        text = "".join(sentences)
        space = np.fromiter((c.isspace() for c in text), dtype=bool, count=len(text))
        starts = np.cumsum(n_chars) - n_chars
        begins = space | np.concatenate([[True], space[:-1]])
        begins[starts[n_chars > 0]] = True
        count = np.cumsum(begins)
        before_row = np.concatenate([[0], count])[starts]
        return self._grid(sentences, count - 1 - np.repeat(before_row, n_chars), -1, -1)[0]

    def _grid(self, sentences: list[str], values: np.ndarray, first: int, fill: int) -> tuple[np.ndarray, np.ndarray]:
        """Lay out one value per character of the concatenated ``sentences`` as rows: ``first``
        in column 0, the first ``max_len - 1`` values of each sentence, then ``fill``.

        Returns ``(n, L)`` int64 rows and ``(n,)`` int64 lengths before padding (column 0 included).
        """
        n_chars = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
        row = np.repeat(np.arange(len(sentences)), n_chars)
        starts = np.cumsum(n_chars) - n_chars
        col = np.arange(len(values)) - np.repeat(starts, n_chars) + 1
        keep = col < self.max_len
        lengths = np.minimum(n_chars, self.max_len - 1) + 1
        grid = np.full((len(sentences), int(lengths.max(initial=1))), fill, dtype=np.int64)
        grid[:, 0] = first
        grid[row[keep], col[keep]] = values[keep]
        return grid, lengths

    def decode(self, ids: np.ndarray) -> str:
        """The text of one id row: characters as themselves, special tokens by name, padding dropped."""
        vocab = SPECIAL_TOKENS + self.chars + (("[SEP]",) if self.sep else ())
        return "".join(vocab[i] for i in np.asarray(ids).tolist() if i != PAD_ID)

    def to_dict(self) -> dict:
        data = {"chars": "".join(self.chars), "max_len": self.max_len, "special_tokens": list(SPECIAL_TOKENS)}
        return {**data, "sep": True} if self.sep else data  # tokenizers without [SEP] describe themselves as before

    @classmethod
    def from_dict(cls, data: dict) -> CharTokenizer:
        if tuple(data.get("special_tokens", ())) != SPECIAL_TOKENS:
            raise SiptError(
                f"tokenizer special tokens {data.get('special_tokens')} are not {list(SPECIAL_TOKENS)}; rebuild it"
            )
        return cls(chars=tuple(data["chars"]), max_len=int(data["max_len"]), sep=bool(data.get("sep", False)))

    def save(self, path: str | Path) -> None:
        """Write the tokenizer as JSON, atomically."""
        write_json_atomic(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> CharTokenizer:
        return cls.from_dict(read_tokenizer_json(path))


def read_tokenizer_json(path: str | Path) -> dict:
    """The dict a tokenizer's ``save`` wrote to ``path``."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SiptError(f"tokenizer file {path} does not exist; pass a directory written by save_pretrained") from None


def _code_points(text: str) -> np.ndarray:
    """``(len(text),)`` uint32 code points (lone surrogates kept as they are)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def unigram_entropy(ids: np.ndarray, lengths: np.ndarray, suffix_tokens: int = 0) -> float:
    """Entropy in nats of the token distribution over the maskable tokens of a tokenised corpus
    (every token after ``[CLS]`` and before the ``suffix_tokens`` closing ones; padding excluded).

    It is the MLM cross-entropy of the best predictor that ignores context (the corpus' unigram
    frequencies): a masked LM whose loss sits at this value has learnt nothing from the context.

    Args:
        ids: ``(n, L)`` token ids from a tokenizer's ``encode``.
        lengths: ``(n,)`` tokens per row before padding.
    """
    columns = np.arange(ids.shape[1])
    maskable = (columns >= 1) & (columns < np.asarray(lengths)[:, None] - suffix_tokens)
    counts = np.unique(ids[maskable], return_counts=True)[1]
    if not counts.size:
        raise SiptError("the corpus has no maskable tokens; its unigram entropy is undefined")
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())
