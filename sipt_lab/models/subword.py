"""Learned subword vocabularies, and the registry of the tokenizers a fresh encoder can read.

:class:`SubwordTokenizer` is a byte-pair-encoding (BPE) vocabulary trained on the run's own
pre-training texts with Hugging Face ``tokenizers`` (lower-cased and split at whitespace and
punctuation as BERT's tokenizer does, then into learned pieces), so a sentence of ~130 characters becomes ~25 tokens.
It keeps sipt-lab's id layout (``0 = [PAD]``, ``1 = [MASK]``, ``2 = [CLS]``, ``3 = [UNK]``) and
row layout (``[CLS]`` first, no closing token, right-padded), so :class:`TransformerEncoder` and
the trainer treat it exactly like :class:`CharTokenizer`.

:class:`TokenizerConfig` names the vocabulary of a fresh encoder (``kind`` in
:data:`TOKENIZER_KINDS`); :func:`build_tokenizer` trains it on texts, :func:`load_tokenizer` reads
back whichever kind a ``tokenizer.json`` holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer as Backend
from tokenizers import models, normalizers, pre_tokenizers, trainers

from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.core.fileio import write_json_atomic
from sipt_lab.models import names
from sipt_lab.models.tokenizer import (
    CLS_ID,
    MASK_ID,
    PAD_ID,
    SPECIAL_TOKENS,
    CharTokenizer,
    Tokenizer,
    read_tokenizer_json,
)

#: Subword models: kind -> (``tokenizers`` model, its trainer). Only models whose training is
#: deterministic belong here (a run must be reproducible from its seed): ``tokenizers`` 0.23's BPE
#: trainer gives the same vocabulary in every process; its WordPiece trainer (and BPE with a
#: ``##`` continuation prefix) does not (ties broken in hash order: 6 different vocabularies in
#: 6 trainings on one CLIQUES corpus), so WordPiece is not offered.
SUBWORD_MODELS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "bpe": (models.BPE, trainers.BpeTrainer),
}


@dataclass(frozen=True)
class TokenizerConfig:
    """Which vocabulary a fresh encoder reads.

    Attributes:
        kind: a name in :data:`TOKENIZER_KINDS`: ``"char"`` (every character of the corpus, the
            paper's) or a subword model learned on the corpus (``"bpe"``).
        vocab_size: the most tokens a subword vocabulary may hold (special tokens and the
            corpus' alphabet included; a small corpus may yield fewer); unused by ``"char"``.
    """

    kind: str = "char"
    vocab_size: int = 1000

    def __post_init__(self) -> None:
        if self.kind not in names.TOKENIZERS:
            raise ConfigError(
                "TokenizerConfig.kind", f"{self.kind!r} is unknown; choose one of {', '.join(names.TOKENIZERS)}"
            )
        if self.vocab_size <= len(SPECIAL_TOKENS):
            raise ConfigError(
                "TokenizerConfig.vocab_size",
                f"must exceed the {len(SPECIAL_TOKENS)} special tokens, got {self.vocab_size}",
            )


@dataclass(frozen=True)
class SubwordTokenizer:
    """A trained ``tokenizers`` subword model behind sipt-lab's :class:`Tokenizer` protocol.

    Attributes:
        kind: a key of :data:`SUBWORD_MODELS` (``"bpe"``).
        model: the trained ``tokenizers.Tokenizer`` as its JSON string (what is saved).
        max_len: tokens per sample including ``[CLS]``; longer samples are truncated.
    """

    kind: str
    model: str
    max_len: int = 512
    _backend: Backend = field(init=False, repr=False, compare=False)

    pad_id = PAD_ID
    mask_id = MASK_ID
    suffix_tokens = 0

    def __post_init__(self) -> None:
        if self.kind not in SUBWORD_MODELS:
            raise SiptError(f"unknown subword model {self.kind!r}; choose one of {', '.join(SUBWORD_MODELS)}")
        if self.max_len < 2:
            raise SiptError(f"tokenizer max_len is {self.max_len}; use at least 2 ([CLS] plus one token)")
        backend = Backend.from_str(self.model)
        if [backend.token_to_id(token) for token in SPECIAL_TOKENS] != list(range(len(SPECIAL_TOKENS))):
            raise SiptError(
                f"the subword model does not give {list(SPECIAL_TOKENS)} ids 0..{len(SPECIAL_TOKENS) - 1}; rebuild it with SubwordTokenizer.build"
            )
        object.__setattr__(self, "_backend", backend)

    @classmethod
    def build(
        cls, texts: list[str], max_len: int = 512, kind: str = "bpe", vocab_size: int = 1000, sep: bool = False
    ) -> SubwordTokenizer:
        """Train a ``kind`` vocabulary of at most ``vocab_size`` tokens on ``texts`` (deterministic);
        ``sep`` adds ``[SEP]`` (id :attr:`sep_id`, right after the special tokens) for segment pairs."""
        if kind not in SUBWORD_MODELS:
            raise SiptError(f"unknown subword model {kind!r}; choose one of {', '.join(SUBWORD_MODELS)}")
        model, trainer = SUBWORD_MODELS[kind]
        backend = Backend(model(unk_token=SPECIAL_TOKENS[3]))
        backend.normalizer = normalizers.Lowercase()
        backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        backend.train_from_iterator(
            list(texts),
            trainer(
                vocab_size=vocab_size,
                special_tokens=[*SPECIAL_TOKENS, *([SEP_TOKEN] if sep else [])],
                show_progress=False,
            ),
        )
        return cls(kind=kind, model=backend.to_str(), max_len=max_len)

    @property
    def vocab_size(self) -> int:
        return self._backend.get_vocab_size()

    @property
    def sep_id(self) -> int:
        """The id of ``[SEP]`` (segment-pair inputs); SiptError when the vocabulary was built without it."""
        sep = self._backend.token_to_id(SEP_TOKEN)
        if sep is None:
            raise SiptError("this subword vocabulary has no [SEP]; build it with sep=True for segment-pair inputs")
        return sep

    def encode(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(n, L)`` int64 ids (``[CLS]``, the first ``max_len - 1`` pieces, ``[PAD]``) and ``(n,)``
        int64 tokens per row before padding (``[CLS]`` included)."""
        pieces = [encoding.ids[: self.max_len - 1] for encoding in self._encodings(texts)]
        return _grid([[CLS_ID, *row] for row in pieces], PAD_ID)

    def word_ids(self, texts: list[str]) -> np.ndarray:
        """``(n, L)`` int64, aligned with :meth:`encode`: the word (a whitespace/punctuation-delimited
        unit of the pre-tokenizer) each piece belongs to, counted from 0 in every row; -1 at
        ``[CLS]`` and padding."""
        words = [encoding.word_ids[: self.max_len - 1] for encoding in self._encodings(texts)]
        return _grid([[-1, *row] for row in words], -1)[0]

    def _encodings(self, texts: list[str]) -> list:
        return self._backend.encode_batch(list(texts), add_special_tokens=False)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "model": json.loads(self.model), "max_len": self.max_len}

    @classmethod
    def from_dict(cls, data: dict) -> SubwordTokenizer:
        return cls(kind=data["kind"], model=json.dumps(data["model"]), max_len=int(data["max_len"]))

    def save(self, path: str | Path) -> None:
        """Write the tokenizer as JSON, atomically."""
        write_json_atomic(path, self.to_dict())


def _grid(rows: list[list[int]], fill: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad ragged int rows with ``fill``: ``(n, L)`` int64 and ``(n,)`` int64 row lengths."""
    lengths = np.fromiter((len(row) for row in rows), dtype=np.int64, count=len(rows))
    out = np.full((len(rows), int(lengths.max(initial=1))), fill, dtype=np.int64)
    out[np.arange(out.shape[1]) < lengths[:, None]] = np.fromiter(
        (i for row in rows for i in row), dtype=np.int64, count=int(lengths.sum())
    )
    return out, lengths


def _char_tokenizer(texts: list[str], max_len: int, config: TokenizerConfig, sep: bool) -> CharTokenizer:
    return CharTokenizer.build(texts, max_len=max_len, sep=sep)


def _subword_tokenizer(texts: list[str], max_len: int, config: TokenizerConfig, sep: bool) -> SubwordTokenizer:
    return SubwordTokenizer.build(texts, max_len=max_len, kind=config.kind, vocab_size=config.vocab_size, sep=sep)


SEP_TOKEN = "[SEP]"

#: How each kind of vocabulary is built: name -> ``(texts, max_len, config, sep) -> Tokenizer``.
TOKENIZER_KINDS: dict[str, Callable[[list[str], int, TokenizerConfig, bool], Tokenizer]] = dict(
    zip(names.TOKENIZERS, (_char_tokenizer, _subword_tokenizer), strict=True)
)


def build_tokenizer(config: TokenizerConfig, texts: list[str], max_len: int, sep: bool = False) -> Tokenizer:
    """The ``config.kind`` vocabulary of ``texts``, truncating samples to ``max_len`` tokens; ``sep``
    adds ``[SEP]`` (segment pairs)."""
    return TOKENIZER_KINDS[config.kind](list(texts), max_len, config, sep)


def load_tokenizer(path: str | Path) -> CharTokenizer | SubwordTokenizer:
    """Read a ``tokenizer.json`` written by either tokenizer's ``save`` (no ``kind``: characters)."""
    data = read_tokenizer_json(path)
    return SubwordTokenizer.from_dict(data) if "kind" in data else CharTokenizer.from_dict(data)
