"""K same-shaped character transformers as one module: their weights stacked on a leading model axis.

:class:`StackedEncoders` holds K :class:`~sipt_lab.models.encoder.TransformerEncoder` of one
:class:`EncoderConfig` (vocabularies may differ: each token table is zero-padded to the largest)
and computes all K forward passes at once with batched matmuls (:func:`~sipt_lab.models.matmul.matmul`
on ``(K, T, H)`` activations against ``(K, H, H')`` weights, over each model's real tokens packed
without padding) and one attention per length bucket of all ``K * B`` sequences (:class:`_Packing`).
On a CPU a tiny model is overhead-bound (one small kernel per op), so K models cost about as many
kernel launches as one. Model ``k`` computes exactly what encoder ``k`` computes (up to float rounding),
including its last layer's shortcut: queries, output projection and FFN only at the positions read
([CLS] and the masked tokens), and its MLM decoder over its own vocabulary at its own masked tokens
(as a :class:`MaskedHead`, whose logits the loss makes and drops itself).

Attention is written out (:func:`_attention`: two batched matmuls and a softmax) rather than
``F.scaled_dot_product_attention``: with 5-wide heads (``paper-small``) PyTorch's CPU flash kernel
pays per sequence and head, and on a bucket of a few hundred sequences two batched matmuls over all
of them are cheaper forward and backward, the more so with each product and gradient computed in
its faster layout (:mod:`sipt_lab.models.matmul`; benchmarks/RESULTS.md, "Batched training"). Row
gathers are ``index_select``: on a CPU it copies whole rows, where advanced indexing loops over elements.
``torch.func.vmap`` over ``functional_call`` was measured as the alternative: PyTorch has no
batching rule for the CPU flash-attention kernel and falls back to a per-model loop, and
``stack_module_state`` drops the tied MLM decoder weight, so this module stacks by hand.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sipt_lab.core.errors import SiptError
from sipt_lab.models.buckets import length_buckets
from sipt_lab.models.encoder import TransformerEncoder
from sipt_lab.models.matmul import matmul
from sipt_lab.models.transfer import to_device

#: Parameters whose first axis is the vocabulary (zero-padded to the largest vocabulary).
_VOCAB_PARAMETERS = ("tokens.weight", "mlm_decoder.weight", "mlm_decoder.bias")


class StackedEncoders(nn.Module):
    """The parameters of K encoders as ``(K, ...)`` tensors; :meth:`forward` runs all K at once.

    Build it with :meth:`stack`, train it, and copy the weights back with :meth:`unstack`.
    ``max_buckets``: attention length buckets per step; a bucket holds hundreds of sequences, so
    more buckets (less padding) cost little (benchmarks/RESULTS.md measures 8 against 4).
    """

    def __init__(self, encoders: Sequence[TransformerEncoder], max_buckets: int = 8) -> None:
        super().__init__()
        configs = {_shared_config(encoder) for encoder in encoders}
        if len(configs) != 1:
            raise SiptError("stacked encoders must share one EncoderConfig (up to vocab_size); train them separately")
        config = encoders[0].config
        if config.dropout or config.attention_dropout:
            raise SiptError(
                "batched training needs dropout 0 and attention_dropout 0 (models would share dropout draws); "
                "use an encoder preset without dropout or train the models separately"
            )
        self.config = config
        self.n_models = len(encoders)
        self.vocab_sizes = [encoder.config.vocab_size for encoder in encoders]
        vocab = max(self.vocab_sizes)
        self.names = [name for name, _ in encoders[0].named_parameters()]
        self.weights = nn.ParameterList()
        for name in self.names:
            tensors = [dict(encoder.named_parameters())[name].detach() for encoder in encoders]
            if name in _VOCAB_PARAMETERS:
                tensors = [F.pad(t, (0, 0) * (t.dim() - 1) + (0, vocab - len(t))) for t in tensors]
            self.weights.append(nn.Parameter(torch.stack(tensors)))
        self._index = {name: k for k, name in enumerate(self.names)}
        self.eps = encoders[0].norm.eps
        self.max_buckets = max_buckets
        # after the packing (compiled: a torch.compile wrapper, padded reads, one query width; fewer shapes)
        self.encode, self.read_multiple, self.query_multiple = self._encode, 1, 0

    @classmethod
    def stack(cls, encoders: Sequence[TransformerEncoder]) -> StackedEncoders:
        """A stacked copy of ``encoders`` (on their device); the encoders themselves are not changed."""
        return cls(encoders)

    def mlm_head_parameters(self) -> list[nn.Parameter]:
        """The stacked parameters that only the MLM head reads (its transform and decoder; a tied
        decoder weight is the token table, which the encoder reads too)."""
        return [self._w(name) for name in self.names if name.startswith(("mlm_transform.", "mlm_decoder."))]

    def unstack(self, encoders: Sequence[TransformerEncoder]) -> None:
        """Copy each model's trained weights back into ``encoders`` (the ones it was stacked from)."""
        with torch.no_grad():
            for k, encoder in enumerate(encoders):
                for name, parameter in encoder.named_parameters():
                    stacked = self.weights[self._index[name]][k]
                    parameter.copy_(stacked[tuple(slice(0, size) for size in parameter.shape)])

    def _w(self, name: str) -> torch.Tensor:
        return self.weights[self._index[name]]

    def _linear(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        """``(K, N, in)`` -> ``(K, N, out)`` with model k's ``prefix`` Linear."""
        return _affine(x, self._w(f"{prefix}.weight"), self._w(f"{prefix}.bias"))

    def _standardize(self, x: torch.Tensor) -> torch.Tensor:
        """LayerNorm over the last axis of ``(K, N, H)`` without its affine (see :meth:`_folded`)."""
        return F.layer_norm(x, x.shape[-1:], eps=self.eps)

    def _folded(self, norm: str, weight: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(K, out, H)`` weight and ``(K, out)`` bias of a linear map after LayerNorm ``norm``'s
        affine, folded into one: ``W (x * g + b) + c = (W g) x + (W b + c)``. On ``(K, N, H)``
        activations this spares two elementwise passes and their gradients per LayerNorm; the
        folding itself is on the weights (N-independent)."""
        gain, shift = self._w(f"{norm}.weight"), self._w(f"{norm}.bias")
        return weight * gain.unsqueeze(1), torch.baddbmm(bias.unsqueeze(-1), weight, shift.unsqueeze(-1)).squeeze(-1)

    def _normed_linear(self, x: torch.Tensor, norm: str, linear: str) -> torch.Tensor:
        """``linear(norm(x))`` on ``(K, N, H)``, the LayerNorm's affine folded into the linear map."""
        return _affine(
            self._standardize(x), *self._folded(norm, self._w(f"{linear}.weight"), self._w(f"{linear}.bias"))
        )

    def _norm(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        """LayerNorm over the last axis of ``(K, N, H)`` with model k's affine ``prefix``."""
        return self._standardize(x) * self._w(f"{prefix}.weight").unsqueeze(1) + self._w(f"{prefix}.bias").unsqueeze(1)

    def _feed_forward(self, x: torch.Tensor, attended: torch.Tensor, block: str) -> torch.Tensor:
        """The rest of a pre-LN block after attention: ``x + out(attended)``, then ``+ FFN(LN(.))``;
        both ``(K, N, H)``."""
        x = x + self._linear(attended, f"{block}.out")
        return x + self._linear(F.gelu(self._normed_linear(x, f"{block}.norm2", f"{block}.ffn.0")), f"{block}.ffn.2")

    def forward(
        self, input_ids: torch.Tensor, positions: np.ndarray, lengths: np.ndarray, counts: Sequence[int]
    ) -> tuple[torch.Tensor, list[MaskedHead]]:
        """All K models' pre-training pass.

        Args:
            input_ids: ``(K, B, L)`` ids (already masked), right-padded; model k reads
                ``input_ids[k]``.
            positions: ``(K, M)`` int64 flat indices into ``B * L`` where MLM logits are wanted
                (pad a model's short list with any real token's index, e.g. a row's [CLS], ``r * L``);
                on the host (numpy or a CPU tensor): they only shape the packing.
            lengths: ``(K, B)`` tokens of each row (at least 1: its [CLS]); the rest is padding
                (the ids there are not read).
            counts: model k's real positions, the first ``counts[k]`` of ``positions[k]``.

        Returns:
            ``(K, B, H)`` [CLS] embeddings and, per model, its :class:`MaskedHead` at its
            ``counts[k]`` masked positions over its own vocabulary of ``V_k`` tokens.
        """
        n_models, batch, length = input_ids.shape
        if length > self.config.max_len:
            raise SiptError(
                f"inputs have {length} tokens but the encoders have {self.config.max_len} positions; "
                "truncate with the tokenizer's max_len"
            )
        reads = np.concatenate([np.tile(np.arange(batch) * length, (n_models, 1)), np.asarray(positions)], axis=1)
        heads, device = self.config.n_heads, input_ids.device
        packing = _Packing.build(lengths, length, reads, self.max_buckets, heads, device, self.query_multiple)
        return self.encode(input_ids, packing, list(counts))

    def _encode(
        self, input_ids: torch.Tensor, packing: _Packing, counts: list[int]
    ) -> tuple[torch.Tensor, list[MaskedHead]]:
        """:meth:`forward` after the packing, all on the device: what ``compile`` compiles."""
        n_models, batch, _ = input_ids.shape
        hidden = self.config.hidden
        tokens, table = self._w("tokens.weight"), self._w("positions.weight")
        ids = torch.gather(input_ids.reshape(n_models, -1), 1, packing.tokens)
        x = _lookup(tokens, ids) + _lookup(table, packing.offsets)
        for b in range(self.config.n_layers - 1):
            block = f"blocks.{b}"
            qkv = self._normed_linear(x, f"{block}.norm1", f"{block}.qkv")
            attended = packing.attend(qkv.reshape(-1, 3 * hidden), self.config.n_heads)
            x = self._feed_forward(x, attended.view(n_models, -1, hidden), block)
        # the last block only where it is read: each row's [CLS], then the masked positions
        block = f"blocks.{self.config.n_layers - 1}"
        normed = self._standardize(x)
        weight, bias = self._folded(f"{block}.norm1", self._w(f"{block}.qkv.weight"), self._w(f"{block}.qkv.bias"))
        kv = _affine(normed, weight[:, hidden:], bias[:, hidden:])
        read = packing.reads
        queries = _affine(_rows(normed, read), weight[:, :hidden], bias[:, :hidden])
        attended = packing.attend_reads(queries.reshape(-1, hidden), kv.reshape(-1, 2 * hidden), self.config.n_heads)
        x = self._norm(self._feed_forward(_rows(x, read), attended.view(n_models, -1, hidden), block), "norm")
        embeddings, masked = x[:, :batch], x[:, batch:]
        transformed = self._standardize(F.gelu(self._linear(masked, "mlm_transform.0")))
        decoder = tokens if self.config.tie_mlm_head else self._w("mlm_decoder.weight")
        decoder, decoder_bias = self._folded("mlm_transform.2", decoder, self._w("mlm_decoder.bias"))
        # each model's own rows and vocabulary: no padded logits (unbind's backward stacks the K small gradients)
        heads = [
            MaskedHead(rows[:count], weight[:vocab], bias[:vocab])
            for rows, weight, bias, count, vocab in zip(
                transformed.unbind(0), decoder.unbind(0), decoder_bias.unbind(0), counts, self.vocab_sizes
            )
        ]
        return embeddings, heads


class MaskedHead(NamedTuple):
    """One model's MLM decoder at its masked positions, before the logits: those are
    ``hidden @ weight.T + bias``, ``(M, V)``, which :func:`~sipt_lab.objectives.mlm.linear_masked_lm_loss`
    turns into ``L_M`` without keeping them."""

    hidden: torch.Tensor  # (M, H) the MLM transform's output
    weight: torch.Tensor  # (V, H) decoder weight, with the MLM transform's LayerNorm affine folded in
    bias: torch.Tensor  # (V,)

    def logits(self) -> torch.Tensor:
        """``(M, V)`` MLM logits."""
        return torch.addmm(self.bias, self.hidden, self.weight.T)


@dataclass(frozen=True)
class _Bucket:
    """Sequences of similar length, padded to the longest: where they sit in the gathered rows."""

    sequences: int
    width: int  # padded length
    key_bias: torch.Tensor  # (sequences * heads, 1, width) float: 0 at real tokens, -inf at padding
    query_width: int  # most reads of any of its sequences (its query grid's width, last layer)


@dataclass(frozen=True)
class _Packing:
    """K models' rows packed tight, without padding, and the attention buckets that read them.

    Model k's real tokens, row after row, fill the first ``count[k]`` of its ``T`` packed slots
    (``T`` the most any model has; the rest is filler that nothing reads), so every per-token layer
    runs on ``(K, T, H)`` instead of ``(K, B * L, H)``. Attention alone needs sequences: the K * B
    sequences are split by length into a few buckets (:func:`~sipt_lab.models.buckets.length_buckets`,
    quadratic cost), each padded to its own longest, with gathers from and to the packed slots.

    Attributes:
        tokens: ``(K, T)`` int64 index into ``B * L`` of each packed slot's token (filler: 0).
        offsets: ``(K, T)`` int64 position of each packed slot's token in its row (filler: 0).
        gather: ``(S,)`` int64 packed slot (into ``K * T``) of every padded bucket slot, bucket after
            bucket (a padding slot repeats its sequence's first token; its key bias hides it).
        scatter: ``(K * T,)`` int64 padded bucket slot of each packed slot (filler: 0).
        reads: ``(K, R)`` int64 packed slots (into ``T``) of each model's read positions.
        read_slots: ``(K * R,)`` int64 slot of each read in the buckets' concatenated query grids.
        buckets: the attention buckets.
    """

    tokens: torch.Tensor
    offsets: torch.Tensor
    gather: torch.Tensor
    scatter: torch.Tensor
    reads: torch.Tensor
    read_slots: torch.Tensor
    buckets: tuple[_Bucket, ...]

    @classmethod
    def build(
        cls,
        lengths: np.ndarray,
        length: int,
        reads: np.ndarray,
        max_buckets: int,
        heads: int,
        device: torch.device,
        query_multiple: int = 0,
    ) -> _Packing:
        """From ``(K, B)`` tokens per row, the padded row length ``L``, ``(K, R)`` read positions
        (flat indices into ``B * L``) and the attention heads; ``query_multiple`` n > 0: every bucket's
        query grid as wide as the most reads of any sequence, rounded up to a multiple of n (0: its own most)."""
        n_models, batch = lengths.shape
        width = int(lengths.sum(1).max())
        sequence_length = lengths.ravel()
        first = (
            np.arange(n_models)[:, None] * width + np.cumsum(lengths, axis=1) - lengths
        ).ravel()  # packed slot of token 0
        sequence = np.repeat(np.arange(n_models * batch), sequence_length)  # of every real token
        within = np.arange(len(sequence)) - np.repeat(np.cumsum(sequence_length) - sequence_length, sequence_length)
        slots = first[sequence] + within
        tokens, offsets = np.zeros(n_models * width, np.int64), np.zeros(n_models * width, np.int64)
        tokens[slots], offsets[slots] = sequence % batch * length + within, within
        read_sequence = np.arange(n_models)[:, None] * batch + reads // length
        read_packed = first[read_sequence] + reads % length
        reads_per_sequence = np.bincount(read_sequence.ravel(), minlength=n_models * batch)
        read_order = np.argsort(read_sequence.ravel(), kind="stable")
        read_rank = np.empty(read_sequence.size, np.int64)
        read_rank[read_order] = np.arange(read_sequence.size) - np.repeat(
            np.cumsum(reads_per_sequence) - reads_per_sequence, reads_per_sequence
        )
        gather, biases, shapes = [], [], []
        padded_slot, query_slot = np.zeros(n_models * batch, np.int64), np.zeros(n_models * batch, np.int64)
        start = query_start = 0
        for members in length_buckets(sequence_length, max_buckets, power=2):
            member_lengths = sequence_length[members]
            longest, step = int(member_lengths.max()), query_multiple or 1
            most = reads_per_sequence[members if not query_multiple else slice(None)].max()
            query_width = int(-(-most // step) * step)
            columns = np.arange(longest)
            gather.append((first[members, None] + np.minimum(columns, member_lengths[:, None] - 1)).ravel())
            padded_slot[members] = start + np.arange(len(members)) * longest
            query_slot[members] = query_start + np.arange(len(members)) * query_width
            padding = np.repeat(columns >= member_lengths[:, None], heads, axis=0)[:, None]
            biases.append(np.where(padding, np.float32(-np.inf), np.float32(0)))
            shapes.append((len(members), longest, query_width))
            start += len(members) * longest
            query_start += len(members) * query_width
        scatter = np.zeros(n_models * width, np.int64)
        scatter[slots] = padded_slot[sequence] + within
        indices = to_device(
            [
                tokens.reshape(n_models, width),
                offsets.reshape(n_models, width),
                np.concatenate(gather),
                scatter,
                read_packed - np.arange(n_models)[:, None] * width,
                query_slot[read_sequence.ravel()] + read_rank,
            ],
            device,
        )
        key_biases = to_device(biases, device)
        return cls(*indices, tuple(_Bucket(n, w, bias, q) for (n, w, q), bias in zip(shapes, key_biases)))

    def attend(self, qkv: torch.Tensor, heads: int) -> torch.Tensor:
        """Self-attention within each sequence: ``(K * T, 3H)`` packed queries, keys and values ->
        ``(K * T, H)`` outputs (filler slots: arbitrary)."""
        outputs = []
        for bucket, rows in zip(self.buckets, self._bucket_rows(qkv.index_select(0, self.gather))):
            q, k, v = _heads(rows, bucket.sequences, 3, heads)
            outputs.append(_merge_heads(_attention(q, k, v, bucket.key_bias), bucket.sequences, heads))
        return torch.cat(outputs).index_select(0, self.scatter)

    def attend_reads(self, queries: torch.Tensor, kv: torch.Tensor, heads: int) -> torch.Tensor:
        """Attention at the read positions only: ``(K * R, H)`` queries against ``(K * T, 2H)``
        packed keys and values -> ``(K * R, H)``."""
        hidden = queries.shape[1]
        grid = queries.new_zeros(sum(b.sequences * b.query_width for b in self.buckets), hidden).index_copy(
            0, self.read_slots, queries
        )
        outputs = []
        query_rows = grid.split([bucket.sequences * bucket.query_width for bucket in self.buckets])
        for bucket, rows, bucket_queries in zip(
            self.buckets, self._bucket_rows(kv.index_select(0, self.gather)), query_rows
        ):
            k, v = _heads(rows, bucket.sequences, 2, heads)
            (q,) = _heads(bucket_queries, bucket.sequences, 1, heads)
            outputs.append(_merge_heads(_attention(q, k, v, bucket.key_bias), bucket.sequences, heads))
        return torch.cat(outputs).index_select(0, self.read_slots)

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


def _affine(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``(K, N, in)`` -> ``(K, N, out)``: ``x @ weight[k].T + bias[k]`` per model, for ``(K, out, in)``
    weights and ``(K, out)`` biases."""
    return matmul(x, weight.transpose(1, 2), bias.unsqueeze(1))


def _lookup(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Rows of K stacked ``(K, N, H)`` tables at ``(K, T)`` per-model indices -> ``(K, T, H)``."""
    offsets = torch.arange(table.shape[0], device=index.device).unsqueeze(1) * table.shape[1]
    return table.reshape(-1, table.shape[-1]).index_select(0, (index + offsets).ravel()).view(*index.shape, -1)


def _rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``(K, N, H)`` gathered at ``(K, S)`` row indices -> ``(K, S, H)``."""
    return torch.gather(x, 1, index.unsqueeze(-1).expand(-1, -1, x.shape[-1]))


def _shared_config(encoder: TransformerEncoder):
    """The encoder's config with ``vocab_size`` zeroed (what stacked models must share)."""
    if not isinstance(encoder, TransformerEncoder):
        raise SiptError(f"batched training stacks sipt-lab's char encoders only, got {type(encoder).__name__}")
    return dataclasses.replace(encoder.config, vocab_size=0)
