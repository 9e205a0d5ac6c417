"""K same-shaped character transformers as one module: their weights stacked on a leading model axis.

:class:`StackedEncoders` holds K :class:`~sipt_lab.models.encoder.TransformerEncoder` of one
:class:`EncoderConfig` (vocabularies may differ: each token table is zero-padded to the largest)
and computes all K forward passes at once with batched matmuls (:func:`~sipt_lab.models.matmul.matmul`
on ``(K, T, H)`` activations against ``(K, H, H')`` weights, over each model's real tokens packed
without padding) and one attention per length bucket of all ``K * B`` sequences (:mod:`~sipt_lab.models.packing`).
On a CPU a tiny model is overhead-bound (one small kernel per op), so K models cost about as many
kernel launches as one. Model ``k`` computes exactly what encoder ``k`` computes (up to float rounding),
including its last layer's shortcut: queries, output projection and FFN only at the positions read
([CLS] and the masked tokens), and its MLM decoder over its own vocabulary at its own masked tokens
(as a :class:`MaskedHead`, whose logits the loss makes and drops itself).

Attention is written out (:mod:`~sipt_lab.models.packing`: two batched matmuls and a softmax) rather than
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
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sipt_lab.core.errors import SiptError
from sipt_lab.models.encoder import TransformerEncoder
from sipt_lab.models.matmul import matmul
from sipt_lab.models.packing import BucketShape, Packing, PackingSpec
from sipt_lab.models.transfer import DeviceArrays

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
        self.encode = self._encode  # the device half, or its torch.compile wrapper

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
        arrays, buckets = self.pack(lengths, input_ids.shape[2], positions)
        return self.encode(input_ids, self.packing(DeviceArrays(arrays, input_ids.device), buckets), list(counts))

    def pack(
        self, lengths: np.ndarray, length: int, positions: np.ndarray, fixed: bool = False
    ) -> tuple[dict[str, np.ndarray], tuple[BucketShape, ...]]:
        """The host half of :meth:`forward` (its ``lengths``, padded row length ``L`` and ``positions``):
        the packing's arrays and bucket shapes (:meth:`PackingSpec.pack`; ``fixed``: shapes that do
        not depend on the rows' lengths)."""
        return self.packing_spec.pack(lengths, length, positions, fixed)

    @property
    def packing_spec(self) -> PackingSpec:
        """How these encoders pack their rows (:meth:`pack`), as host data."""
        return PackingSpec(self.config.max_len, self.max_buckets, self.config.n_heads)

    def packing(self, tensors: Mapping[str, torch.Tensor], buckets: tuple[BucketShape, ...]) -> Packing:
        """The device half: :meth:`pack`'s arrays, on the device, as the :class:`Packing` :meth:`encode` reads."""
        return Packing(tensors, buckets, self.config.n_heads)

    def _encode(
        self, input_ids: torch.Tensor, packing: Packing, counts: list[int]
    ) -> tuple[torch.Tensor, list[MaskedHead]]:
        """:meth:`forward` after the packing, all on the device: what ``compile`` compiles."""
        n_models, batch, _ = input_ids.shape
        hidden = self.config.hidden
        tokens, table = self._w("tokens.weight"), self._w("positions.weight")
        ids, offsets = packing.slots(input_ids)
        x = _lookup(tokens, ids) + _lookup(table, offsets)
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
