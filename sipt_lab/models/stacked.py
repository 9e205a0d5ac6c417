"""K same-shaped character transformers as one module: their weights stacked on a leading model axis.

:class:`StackedEncoders` holds K :class:`~sipt_lab.models.encoder.TransformerEncoder` of one
:class:`EncoderConfig` (vocabularies may differ: each token table is zero-padded to the largest)
and computes all K forward passes at once with batched matmuls (``baddbmm`` on ``(K, N, H)``
activations against ``(K, H, H')`` weights) and one attention call over ``K * B`` sequences. On a
CPU a tiny model is overhead-bound (one small kernel per op), so K models cost about as many kernel
launches as one. Model ``k`` computes exactly what encoder ``k`` computes (up to float rounding),
including its last layer's shortcut: queries, output projection and FFN only at the positions read
([CLS] and the masked tokens).

``torch.func.vmap`` over ``functional_call`` was measured as the alternative: PyTorch has no
batching rule for the CPU flash-attention kernel and falls back to a per-model loop, and
``stack_module_state`` drops the tied MLM decoder weight, so this module stacks by hand.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from sipt_lab.errors import SiptError
from sipt_lab.models.encoder import TransformerEncoder, _Queries
from sipt_lab.models.tokenizer import PAD_ID

#: Parameters whose first axis is the vocabulary (zero-padded to the largest vocabulary).
_VOCAB_PARAMETERS = ("tokens.weight", "mlm_decoder.weight", "mlm_decoder.bias")


class StackedEncoders(nn.Module):
    """The parameters of K encoders as ``(K, ...)`` tensors; :meth:`forward` runs all K at once.

    Build it with :meth:`stack`, train it, and copy the weights back with :meth:`unstack`.
    """

    def __init__(self, encoders: Sequence[TransformerEncoder]) -> None:
        super().__init__()
        configs = {_shared_config(encoder) for encoder in encoders}
        if len(configs) != 1:
            raise SiptError("stacked encoders must share one EncoderConfig (up to vocab_size); train them separately")
        config = encoders[0].config
        if config.dropout or config.attention_dropout:
            raise SiptError("batched training needs dropout 0 and attention_dropout 0 (models would share dropout draws); "
                            "use an encoder preset without dropout or train the models separately")
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

    @classmethod
    def stack(cls, encoders: Sequence[TransformerEncoder]) -> StackedEncoders:
        """A stacked copy of ``encoders`` (on their device); the encoders themselves are not changed."""
        return cls(encoders)

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
        return torch.baddbmm(self._w(f"{prefix}.bias").unsqueeze(1), x, self._w(f"{prefix}.weight").transpose(1, 2))

    def _norm(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        """LayerNorm over the last axis of ``(K, N, H)`` with model k's affine ``prefix``."""
        normed = F.layer_norm(x, x.shape[-1:], eps=self.eps)
        return normed * self._w(f"{prefix}.weight").unsqueeze(1) + self._w(f"{prefix}.bias").unsqueeze(1)

    def _feed_forward(self, x: torch.Tensor, attended: torch.Tensor, block: str) -> torch.Tensor:
        """The rest of a pre-LN block after attention: ``x + out(attended)``, then ``+ FFN(LN(.))``;
        both ``(K, N, H)``."""
        x = x + self._linear(attended, f"{block}.out")
        return x + self._linear(F.gelu(self._linear(self._norm(x, f"{block}.norm2"), f"{block}.ffn.0")), f"{block}.ffn.2")

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """All K models' pre-training pass.

        Args:
            input_ids: ``(K, B, L)`` ids (already masked); model k reads ``input_ids[k]``; every
                row must hold at least one real token.
            positions: ``(K, M)`` int64 flat indices into ``B * L`` where MLM logits are wanted
                (pad a model's short list with other rows' [CLS] slots, ``r * L``, spread over the
                rows: the last layer's query grid is as wide as the most positions any row holds).

        Returns:
            ``(K, B, H)`` [CLS] embeddings and ``(K, M, V)`` MLM logits (``V`` the largest vocabulary;
            model k's logits beyond its own vocabulary are meaningless).
        """
        n_models, batch, length = input_ids.shape
        hidden, heads = self.config.hidden, self.config.n_heads
        if length > self.config.max_len:
            raise SiptError(f"inputs have {length} tokens but the encoders have {self.config.max_len} positions; "
                            "truncate with the tokenizer's max_len")
        tokens = self._w("tokens.weight")
        offsets = torch.arange(n_models, device=input_ids.device).view(-1, 1, 1) * tokens.shape[1]
        x = tokens.reshape(-1, hidden)[input_ids + offsets] + self._w("positions.weight")[:, None, :length]
        x = x.reshape(n_models, batch * length, hidden)
        key_mask = (input_ids != PAD_ID).reshape(n_models * batch, 1, 1, length)
        split = (heads, hidden // heads)
        for b in range(self.config.n_layers - 1):
            block = f"blocks.{b}"
            qkv = self._linear(self._norm(x, f"{block}.norm1"), f"{block}.qkv")
            q, k, v = qkv.view(n_models * batch, length, 3, *split).permute(2, 0, 3, 1, 4)
            attended = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask)
            x = self._feed_forward(x, attended.transpose(1, 2).reshape(n_models, batch * length, hidden), f"blocks.{b}")
        # the last block only where it is read: each row's [CLS], then the masked positions
        block = f"blocks.{self.config.n_layers - 1}"
        reads = torch.cat([torch.arange(batch, device=x.device).expand(n_models, -1) * length, positions], dim=1)
        normed = self._norm(x, f"{block}.norm1")
        weight, bias = self._w(f"{block}.qkv.weight"), self._w(f"{block}.qkv.bias")
        kv = torch.baddbmm(bias[:, hidden:].unsqueeze(1), normed, weight[:, hidden:].transpose(1, 2))
        k, v = kv.view(n_models * batch, length, 2, *split).permute(2, 0, 3, 1, 4)
        wanted = torch.baddbmm(bias[:, :hidden].unsqueeze(1), _rows(normed, reads), weight[:, :hidden].transpose(1, 2))
        offsets = torch.arange(n_models, device=x.device).unsqueeze(1) * (batch * length)
        queries = _Queries.build((reads + offsets).reshape(-1), n_models * batch, length)
        grid = wanted.new_zeros(n_models * batch * queries.width, hidden).index_copy(0, queries.slots, wanted.reshape(-1, hidden))
        q = grid.view(n_models * batch, queries.width, *split).transpose(1, 2)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask).transpose(1, 2).reshape(-1, hidden)
        x = self._norm(self._feed_forward(_rows(x, reads), attended[queries.slots].view(n_models, -1, hidden), block), "norm")
        embeddings, masked = x[:, :batch], x[:, batch:]
        transformed = self._norm(F.gelu(self._linear(masked, "mlm_transform.0")), "mlm_transform.2")
        decoder = tokens if self.config.tie_mlm_head else self._w("mlm_decoder.weight")
        logits = torch.baddbmm(self._w("mlm_decoder.bias").unsqueeze(1), transformed, decoder.transpose(1, 2))
        return embeddings, logits


def _rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``(K, N, H)`` gathered at ``(K, S)`` row indices -> ``(K, S, H)``."""
    return torch.gather(x, 1, index.unsqueeze(-1).expand(-1, -1, x.shape[-1]))


def _shared_config(encoder: TransformerEncoder):
    """The encoder's config with ``vocab_size`` zeroed (what stacked models must share)."""
    if not isinstance(encoder, TransformerEncoder):
        raise SiptError(f"batched training stacks sipt-lab's char encoders only, got {type(encoder).__name__}")
    return dataclasses.replace(encoder.config, vocab_size=0)
