"""K models' token rows packed tight for :class:`~sipt_lab.models.stacked.StackedEncoders`:
:func:`pack` plans it on the host, :class:`Packing` runs its attention on the device.

Model k's real tokens, row after row, fill the first ``count[k]`` of its ``T`` packed slots (``T``
the most any model has; the rest is filler that nothing reads), so every per-token layer runs on
``(K, T, H)`` instead of ``(K, B * L, H)``. Attention alone needs sequences: the K * B sequences
are split by length into a few buckets (:func:`~sipt_lab.models.buckets.length_buckets`, quadratic
cost), each padded to its own longest, with gathers from and to the packed slots.

With ``fixed`` every row takes ``L`` slots, in row order, and all sequences share one bucket of
width ``L``: the shapes depend on ``(K, B, L)`` and the number of reads only, not on the rows'
lengths (padding keys are hidden by the key bias), which a CUDA graph recorded once and replayed
needs, and a compiled stack too (one graph per shape; a number of buckets that varies from step to
step would exhaust ``torch.compile``'s recompilations); the slots are then the tokens' own
positions, so nothing is gathered or scattered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from sipt_lab.core.errors import SiptError
from sipt_lab.models.buckets import length_buckets
from sipt_lab.models.matmul import matmul

#: The host arrays of a packing (:func:`pack`), all int64 but the key bias (float32):
#: ``tokens`` ``(K, T)`` index into ``B * L`` of each packed slot's token (filler: 0);
#: ``offsets`` ``(K, T)`` its position in its row; ``gather`` ``(S,)`` packed slot (into ``K * T``)
#: of every padded bucket slot, bucket after bucket (a padding slot repeats its sequence's first
#: token; the key bias hides it); ``scatter`` ``(K * T,)`` padded bucket slot of each packed slot;
#: ``reads`` ``(K, R)`` packed slots (into ``T``) of each model's read positions; ``read_slots``
#: ``(K * R,)`` slot of each read in the buckets' concatenated query grids; ``key_bias`` the
#: buckets' ``(sequences * heads, 1, width)`` biases (0 at real tokens, -inf at padding), flat.
PACKING_ARRAYS = ("tokens", "offsets", "gather", "scatter", "reads", "read_slots", "key_bias")


@dataclass(frozen=True)
class BucketShape:
    """Sequences of similar length, padded to the longest: where they sit in the gathered rows."""

    sequences: int
    width: int  # padded length
    query_width: int  # most reads of any of its sequences (its query grid's width, last layer)


@dataclass(frozen=True)
class PackingSpec:
    """How a stack of encoders packs its rows (host data only, picklable): their positions
    ``max_len``, attention buckets ``max_buckets`` and ``heads`` (:func:`pack`)."""

    max_len: int
    max_buckets: int
    heads: int

    def pack(
        self, lengths: np.ndarray, length: int, positions: np.ndarray, fixed: bool = False
    ) -> tuple[dict[str, np.ndarray], tuple[BucketShape, ...]]:
        """:func:`pack` of ``(K, B)`` row ``lengths`` padded to ``length``, reading each row's [CLS]
        and the ``(K, M)`` ``positions`` (flat indices into ``B * L``)."""
        if length > self.max_len:
            raise SiptError(
                f"inputs have {length} tokens but the encoders have {self.max_len} positions; "
                "truncate with the tokenizer's max_len"
            )
        n_models, batch = lengths.shape
        reads = np.concatenate([np.tile(np.arange(batch) * length, (n_models, 1)), np.asarray(positions)], axis=1)
        return pack(lengths, length, reads, self.max_buckets, self.heads, fixed)


def pack(
    lengths: np.ndarray,
    length: int,
    reads: np.ndarray,
    max_buckets: int,
    heads: int,
    fixed: bool = False,
) -> tuple[dict[str, np.ndarray], tuple[BucketShape, ...]]:
    """The packing of ``(K, B)`` tokens per row (at least 1), padded row length ``L``, ``(K, R)``
    read positions (flat indices into ``B * L``, the first ``B`` of each model its rows' [CLS]) and
    the attention heads: its :data:`PACKING_ARRAYS` and bucket shapes (each bucket's query grid as
    wide as the most reads of its sequences). ``fixed``: shapes independent of ``lengths``
    (:func:`_pack_fixed`), for a compiled or recorded stack."""
    if fixed:
        return _pack_fixed(lengths, length, reads, heads)
    n_models, batch = lengths.shape
    sequence_length = lengths.ravel()
    width = int(lengths.sum(1).max())
    first = (np.arange(n_models)[:, None] * width + np.cumsum(lengths, axis=1) - lengths).ravel()  # slot of token 0
    sequence = np.repeat(np.arange(n_models * batch), sequence_length)  # of every real token
    within = np.arange(len(sequence)) - np.repeat(np.cumsum(sequence_length) - sequence_length, sequence_length)
    slots = first[sequence] + within
    tokens, offsets = np.zeros(n_models * width, np.int64), np.zeros(n_models * width, np.int64)
    tokens[slots], offsets[slots] = sequence % batch * length + within, within
    read_sequence = np.arange(n_models)[:, None] * batch + reads // length
    read_packed = first[read_sequence] + reads % length
    reads_per_sequence, read_rank = _read_ranks(read_sequence, n_models * batch)
    gather, biases, shapes = [], [], []
    padded_slot, query_slot = np.zeros(n_models * batch, np.int64), np.zeros(n_models * batch, np.int64)
    start = query_start = 0
    for members in length_buckets(sequence_length, max_buckets, power=2):
        member_lengths = sequence_length[members]
        longest, query_width = int(member_lengths.max()), int(reads_per_sequence[members].max())
        columns = np.arange(longest)
        gather.append((first[members, None] + np.minimum(columns, member_lengths[:, None] - 1)).ravel())
        padded_slot[members] = start + np.arange(len(members)) * longest
        query_slot[members] = query_start + np.arange(len(members)) * query_width
        biases.append(_key_bias(member_lengths, longest, heads))
        shapes.append(BucketShape(len(members), longest, query_width))
        start += len(members) * longest
        query_start += len(members) * query_width
    scatter = np.zeros(n_models * width, np.int64)
    scatter[slots] = padded_slot[sequence] + within
    arrays = {
        "tokens": tokens.reshape(n_models, width),
        "offsets": offsets.reshape(n_models, width),
        "gather": np.concatenate(gather),
        "scatter": scatter,
        "reads": read_packed - np.arange(n_models)[:, None] * width,
        "read_slots": query_slot[read_sequence.ravel()] + read_rank,
        "key_bias": np.concatenate(biases),
    }
    return arrays, tuple(shapes)


def _pack_fixed(
    lengths: np.ndarray, length: int, reads: np.ndarray, heads: int
) -> tuple[dict[str, np.ndarray], tuple[BucketShape, ...]]:
    """:func:`pack` with every row in ``L`` slots, in row order, all in one bucket: a slot is its
    token's own flat position, so the packing has no ``tokens``, ``offsets``, ``gather`` or
    ``scatter`` (:class:`Packing` reads the rows as they are). A row's query grid holds its [CLS], at
    most ``L - 1`` masked tokens and its share of the padding reads (spread over the rows)."""
    n_models, batch = lengths.shape
    read_sequence = np.arange(n_models)[:, None] * batch + reads // length
    _, read_rank = _read_ranks(read_sequence, n_models * batch)
    query_width = length + -(-(reads.shape[1] - batch) // batch)
    arrays = {
        "reads": np.asarray(reads, dtype=np.int64),
        "read_slots": read_sequence.ravel() * query_width + read_rank,
        "key_bias": _key_bias(lengths.ravel(), length, heads),
    }
    return arrays, (BucketShape(n_models * batch, length, query_width),)


def _read_ranks(read_sequence: np.ndarray, n_sequences: int) -> tuple[np.ndarray, np.ndarray]:
    """``(reads per sequence, each read's rank among its sequence's reads)`` for the ``(K, R)``
    sequence of every read."""
    counts = np.bincount(read_sequence.ravel(), minlength=n_sequences)
    order = np.argsort(read_sequence.ravel(), kind="stable")
    rank = np.empty(read_sequence.size, np.int64)
    rank[order] = np.arange(read_sequence.size) - np.repeat(np.cumsum(counts) - counts, counts)
    return counts, rank


def _key_bias(lengths: np.ndarray, width: int, heads: int) -> np.ndarray:
    """Flat ``(len(lengths) * heads, 1, width)`` float32 attention bias of sequences padded to
    ``width``: 0 at their tokens, -inf at the padding."""
    padding = np.repeat(np.arange(width) >= lengths[:, None], heads, axis=0)
    return np.where(padding, np.float32(-np.inf), np.float32(0)).ravel()


class Packing:
    """A packing on the device: ``tensors`` holds :data:`PACKING_ARRAYS` (as :func:`pack` made them;
    a fixed packing only ``reads``, ``read_slots`` and ``key_bias``, its slots being the rows'
    own positions) and ``buckets`` their shapes; :meth:`attend` and :meth:`attend_reads` are the
    encoders' attention."""

    def __init__(self, tensors: Mapping[str, torch.Tensor], buckets: tuple[BucketShape, ...], heads: int) -> None:
        self.fixed = "gather" not in tensors
        self.tokens, self.offsets, self.gather, self.scatter = (tensors.get(name) for name in PACKING_ARRAYS[:4])
        self.reads, self.read_slots = tensors["reads"], tensors["read_slots"]
        self.buckets = buckets
        sizes = [bucket.sequences * heads * bucket.width for bucket in buckets]
        self.key_biases = [
            bias.view(bucket.sequences * heads, 1, bucket.width)
            for bias, bucket in zip(tensors["key_bias"].split(sizes), buckets)
        ]

    def slots(self, input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(K, T)`` token ids of every packed slot of ``(K, B, L)`` ``input_ids`` and their
        positions in their rows."""
        n_models, _, length = input_ids.shape
        if self.fixed:
            ids = input_ids.reshape(n_models, -1)
            return ids, torch.arange(ids.shape[1], device=ids.device).remainder(length).expand(n_models, -1)
        return torch.gather(input_ids.reshape(n_models, -1), 1, self.tokens), self.offsets

    def attend(self, qkv: torch.Tensor, heads: int) -> torch.Tensor:
        """Self-attention within each sequence: ``(K * T, 3H)`` packed queries, keys and values ->
        ``(K * T, H)`` outputs (filler slots: arbitrary)."""
        outputs = []
        for bucket, bias, rows in zip(self.buckets, self.key_biases, self._bucket_rows(self._gathered(qkv))):
            q, k, v = _heads(rows, bucket.sequences, 3, heads)
            outputs.append(_merge_heads(_attention(q, k, v, bias), bucket.sequences, heads))
        attended = torch.cat(outputs)
        return attended if self.scatter is None else attended.index_select(0, self.scatter)

    def attend_reads(self, queries: torch.Tensor, kv: torch.Tensor, heads: int) -> torch.Tensor:
        """Attention at the read positions only: ``(K * R, H)`` queries against ``(K * T, 2H)``
        packed keys and values -> ``(K * R, H)``."""
        hidden = queries.shape[1]
        grid = queries.new_zeros(sum(b.sequences * b.query_width for b in self.buckets), hidden).index_copy(
            0, self.read_slots, queries
        )
        outputs = []
        query_rows = grid.split([bucket.sequences * bucket.query_width for bucket in self.buckets])
        for bucket, bias, rows, bucket_queries in zip(
            self.buckets, self.key_biases, self._bucket_rows(self._gathered(kv)), query_rows
        ):
            k, v = _heads(rows, bucket.sequences, 2, heads)
            (q,) = _heads(bucket_queries, bucket.sequences, 1, heads)
            outputs.append(_merge_heads(_attention(q, k, v, bias), bucket.sequences, heads))
        return torch.cat(outputs).index_select(0, self.read_slots)

    def _gathered(self, packed: torch.Tensor) -> torch.Tensor:
        """``(K * T, ...)`` packed rows in the buckets' padded slots (a fixed packing's are the same)."""
        return packed if self.gather is None else packed.index_select(0, self.gather)

    def _bucket_rows(self, padded: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The gathered ``(S, ...)`` padded rows cut into each bucket's: a split, whose backward is
        one concatenation (slices would each back-propagate a zero-filled full-size gradient)."""
        return padded.split([bucket.sequences * bucket.width for bucket in self.buckets])


def _heads(rows: torch.Tensor, sequences: int, parts: int, heads: int) -> torch.Tensor:
    """``(S * W, parts * H)`` rows of S sequences of width W -> ``(parts, S * heads, W, H / heads)``
    (one copy), sequence-major, as :func:`_attention` takes them."""
    width = len(rows) // sequences
    size = rows.shape[1] // (parts * heads)
    return (
        rows.view(sequences, width, parts, heads, size)
        .permute(2, 0, 3, 1, 4)
        .reshape(parts, sequences * heads, width, size)
    )


def _merge_heads(outputs: torch.Tensor, sequences: int, heads: int) -> torch.Tensor:
    """``(S * heads, W, size)`` -> ``(S * W, heads * size)``, the inverse of :func:`_heads`."""
    _, width, size = outputs.shape
    return outputs.view(sequences, heads, width, size).transpose(1, 2).reshape(-1, heads * size)


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_bias: torch.Tensor) -> torch.Tensor:
    """``softmax(q k^T / sqrt(d) + key_bias) v`` of ``(N, Q, d)`` queries against ``(N, W, d)`` keys
    and values, with a ``(N, 1, W)`` additive key bias (-inf hides a key) -> ``(N, Q, d)``."""
    scores = matmul(q * q.shape[-1] ** -0.5, k.transpose(1, 2), key_bias)
    return matmul(scores.softmax(-1), v)
