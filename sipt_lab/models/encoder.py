"""A small pre-LN transformer encoder over character ids, with an MLM head.

The per-sample embedding ``f(x)`` is the last layer's (final-LayerNorm'd) vector at the ``[CLS]``
slot. Attention runs through ``F.scaled_dot_product_attention`` (fused kernels on CUDA, a fused
flash kernel on CPU when attention dropout is 0) with a key-padding mask, so padded positions never
influence real ones. :meth:`TransformerEncoder.embed` and
:meth:`~TransformerEncoder.embed_and_masked_logits` compute the last layer only at the positions
they read ([CLS] and the masked tokens); the other layers run over every token.
"""

from __future__ import annotations

import dataclasses
import io
import json
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from sipt_lab.core.config_io import config_from_dict, config_to_dict
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.core.fileio import write_bytes_atomic, write_json_atomic
from sipt_lab.models import names
from sipt_lab.models.subword import SubwordTokenizer, load_tokenizer
from sipt_lab.models.tokenizer import PAD_ID, CharTokenizer


@dataclass(frozen=True)
class EncoderConfig:
    """Sizes of :class:`TransformerEncoder`; ``EncoderConfig()`` is the ``default`` preset.

    ``vocab_size = 0`` means "take it from the tokenizer" (the trainer fills it in). ``max_len`` is
    the number of learned positions (tokens per sample, ``[CLS]`` included). ``dropout`` applies to
    the residual branches, ``attention_dropout`` to the attention weights (the paper's HF BERT
    used 0 and 0.1). ``token_types`` > 0 adds that many segment (token-type) embeddings, as BERT's
    ``[CLS] A [SEP] B [SEP]`` inputs need (LinkBERT); 0, the default, builds none, so the other
    methods' models and checkpoints are unchanged. Invalid sizes raise
    :class:`~sipt_lab.core.errors.ConfigError` on construction.
    """

    vocab_size: int = 0
    hidden: int = 64
    n_layers: int = 2
    n_heads: int = 4
    ffn: int = 128
    dropout: float = 0.0
    attention_dropout: float = 0.0
    max_len: int = 512
    tie_mlm_head: bool = True
    token_types: int = 0

    def __post_init__(self) -> None:
        if self.token_types < 0:
            raise ConfigError(
                "EncoderConfig.token_types", f"must be >= 0 (0: no segment embeddings), got {self.token_types}"
            )
        if self.vocab_size < 0:
            raise ConfigError("EncoderConfig.vocab_size", f"must be >= 0 (0: the tokenizer's), got {self.vocab_size}")
        for name in ("hidden", "n_layers", "n_heads", "ffn", "max_len"):
            if getattr(self, name) < 1:
                raise ConfigError(f"EncoderConfig.{name}", f"must be >= 1, got {getattr(self, name)}")
        if self.hidden % self.n_heads:
            raise ConfigError(
                "EncoderConfig.hidden", f"{self.hidden} is not divisible by n_heads {self.n_heads}; change one"
            )
        for name in ("dropout", "attention_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"EncoderConfig.{name}", f"must be in [0, 1), got {getattr(self, name)}")


#: Named encoder sizes. ``paper-small`` and ``paper-manifolds`` are the paper's (CLIQUES and the
#: mechanistic graphs: 2 layers, hidden 10; manifolds: 3 layers, hidden 256). ``default`` (2 layers,
#: hidden 64, the :class:`EncoderConfig` defaults) is what sipt-lab's experiments use: on CLIQUES it
#: beats the paper's SIPT AUROC in 300 steps, where hidden 10 needs thousands
#: (benchmarks/bench_simulate.py). Attention dropout is 0 rather than the original HF BERT's 0.1:
#: with dropout PyTorch's CPU attention falls back to its slower unfused path
#: (benchmarks/bench_training.py), and these short runs do not need the regulariser.
ENCODER_PRESETS: dict[str, EncoderConfig] = dict(
    zip(
        names.ENCODER_PRESETS,
        (
            EncoderConfig(),
            EncoderConfig(hidden=10, n_layers=2, n_heads=2, ffn=8),
            EncoderConfig(hidden=256, n_layers=3, n_heads=4, ffn=256),
        ),
        strict=True,
    )
)


def encoder_preset(name: str, **overrides) -> EncoderConfig:
    """The named preset of :data:`ENCODER_PRESETS` with ``overrides`` applied."""
    if name not in ENCODER_PRESETS:
        raise SiptError(f"unknown encoder preset {name!r}; choose one of {', '.join(ENCODER_PRESETS)}")
    return dataclasses.replace(ENCODER_PRESETS[name], **overrides)


@dataclass(frozen=True)
class _Queries:
    """Where the last block computes its outputs: ``M`` flat positions into ``B * L``, each given a
    slot in a ``(B, width)`` grid of padded per-row query lists.

    Attributes:
        flat: ``(M,)`` int64 indices into ``B * L``.
        slots: ``(M,)`` int64 indices into ``B * width``: row ``flat // L``, a distinct column there.
        width: the most positions any one row holds.
    """

    flat: torch.Tensor
    slots: torch.Tensor
    width: int

    @classmethod
    def build(cls, flat: torch.Tensor, batch: int, length: int) -> _Queries:
        rows = flat // length
        counts = torch.bincount(rows, minlength=batch)
        rank = torch.empty_like(flat)
        rank[torch.argsort(rows, stable=True)] = torch.arange(len(flat), device=flat.device)
        width = int(counts.max())
        return cls(flat, rows * width + rank - (counts.cumsum(0) - counts)[rows], width)


class _Block(nn.Module):
    """Pre-LN block: ``x + Attn(LN(x))`` then ``x + FFN(LN(x))``."""

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.attention_dropout = config.attention_dropout
        self.norm1 = nn.LayerNorm(config.hidden)
        self.qkv = nn.Linear(config.hidden, 3 * config.hidden)
        self.out = nn.Linear(config.hidden, config.hidden)
        self.norm2 = nn.LayerNorm(config.hidden)
        self.ffn = nn.Sequential(nn.Linear(config.hidden, config.ffn), nn.GELU(), nn.Linear(config.ffn, config.hidden))
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor, queries: _Queries | None = None) -> torch.Tensor:
        """New states at every position, or only at ``queries``.

        Args:
            x: ``(B, L, H)``.
            key_mask: ``(B, 1, 1, L)`` bool, True where a key is a real token.
            queries: None, or the positions whose outputs are wanted; keys and values still come
                from every position, but queries, attention rows, the output projection and the FFN
                are computed for those positions only (what a last layer read at a few positions needs).

        Returns:
            ``(B, L, H)``, or ``(M, H)`` at ``queries.flat`` in that order.
        """
        batch, length, hidden = x.shape
        split = (self.n_heads, hidden // self.n_heads)
        normed = self.norm1(x)
        if queries is None:
            q, k, v = self.qkv(normed).view(batch, length, 3, *split).permute(2, 0, 3, 1, 4)
        else:
            weight, bias = self.qkv.weight, self.qkv.bias
            k, v = (
                F.linear(normed, weight[hidden:], bias[hidden:]).view(batch, length, 2, *split).permute(2, 0, 3, 1, 4)
            )
            x = x.reshape(-1, hidden)[queries.flat]
            wanted = F.linear(normed.reshape(-1, hidden)[queries.flat], weight[:hidden], bias[:hidden])
            grid = wanted.new_zeros(batch * queries.width, hidden).index_copy(0, queries.slots, wanted)
            q = grid.view(batch, queries.width, *split).transpose(1, 2)
        attended = F.scaled_dot_product_attention(
            q, k, v, attn_mask=key_mask, dropout_p=self.attention_dropout if self.training else 0.0
        )
        attended = attended.transpose(1, 2).reshape(-1, hidden)
        if queries is None:
            attended = attended.view(batch, length, hidden)
        else:
            attended = attended[queries.slots]
        x = x + self.dropout(self.out(attended))
        return x + self.dropout(self.ffn(self.norm2(x)))


class TransformerEncoder(nn.Module):
    """Character transformer satisfying :class:`sipt_lab.models.SequenceEncoder`.

    Inputs everywhere are ``input_ids``: ``(B, L)`` integer token ids, ``[CLS]`` first, padded with
    ``PAD_ID`` (0) on the right, ``L <= config.max_len``; with ``config.token_types`` > 0 every
    method also takes ``token_types``: ``(B, L)`` segment ids (None: all 0, a sample alone).
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        if config.vocab_size < 1:
            raise ConfigError(
                "EncoderConfig.vocab_size", "is 0; build the tokenizer first and set it to its vocab_size"
            )
        self.config = config
        self.hidden_size = config.hidden
        self.tokens = nn.Embedding(config.vocab_size, config.hidden)
        self.positions = nn.Embedding(config.max_len, config.hidden)
        self.dropout = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.hidden)
        self.mlm_transform = nn.Sequential(
            nn.Linear(config.hidden, config.hidden), nn.GELU(), nn.LayerNorm(config.hidden)
        )
        self.mlm_decoder = nn.Linear(config.hidden, config.vocab_size)
        self.apply(_init_weights)
        if config.token_types:  # made after the others' init, so they draw the same values as without it
            self.segments = nn.Embedding(config.token_types, config.hidden)
            _init_weights(self.segments)
        if config.tie_mlm_head:
            self.mlm_decoder.weight = self.tokens.weight

    def save(self, directory: str | Path, tokenizer: CharTokenizer | SubwordTokenizer) -> Path:
        """:func:`save_pretrained` of this encoder and ``tokenizer``."""
        return save_pretrained(self, tokenizer, directory)

    def output_rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The MLM decoder's ``(V, H)`` weight and ``(V,)`` bias (one row per output token)."""
        return self.mlm_decoder.weight, self.mlm_decoder.bias

    def set_output_rows(self, weight: torch.Tensor, bias: torch.Tensor) -> None:
        """Give the MLM head an untied decoder of ``weight`` ``(V, H)`` and ``bias`` ``(V,)`` and keep
        the first ``V`` input token rows (rows after them are outputs no input uses)."""
        vocab = weight.shape[0]
        self.config = dataclasses.replace(self.config, vocab_size=vocab, tie_mlm_head=False)
        tokens = nn.Embedding(vocab, self.config.hidden).to(self.tokens.weight.device)
        decoder = nn.Linear(self.config.hidden, vocab).to(self.tokens.weight.device)
        with torch.no_grad():
            tokens.weight.copy_(self.tokens.weight[:vocab])
            decoder.weight.copy_(weight)
            decoder.bias.copy_(bias)
        self.tokens, self.mlm_decoder = tokens, decoder

    def hidden_states(
        self, input_ids: torch.Tensor, layer: int | None = None, token_types: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``(B, L)`` ids -> ``(B, L, H)`` states after block ``layer`` (Hugging Face's numbering:
        0 is the embeddings' output, ``n_layers`` or None the last layer, after the final LayerNorm)."""
        layer = self.config.n_layers if layer is None else layer
        if not 0 <= layer <= self.config.n_layers:
            raise SiptError(f"layer {layer} does not exist; this encoder has layers 0..{self.config.n_layers}")
        x, key_mask = self._inputs(input_ids, token_types)
        for block in self.blocks[:layer]:
            x = block(x, key_mask)
        return self.norm(x) if layer == self.config.n_layers else x

    def embed(self, input_ids: torch.Tensor, token_types: torch.Tensor | None = None) -> torch.Tensor:
        """``(B, L)`` ids -> ``(B, H)`` [CLS] embeddings."""
        return self._states_at(input_ids, input_ids.new_empty(0), token_types)

    def token_logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        """``(B, L)`` ids -> ``(B, L, V)`` MLM logits at every position."""
        return self.mlm_decoder(self.mlm_transform(self.hidden_states(input_ids)))

    def embed_and_masked_logits(
        self, input_ids: torch.Tensor, positions: torch.Tensor, token_types: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One forward pass for pre-training.

        Args:
            input_ids: ``(B, L)`` ids (already masked).
            positions: ``(M,)`` int64 flat indices into ``B * L`` where MLM logits are wanted.
            token_types: ``(B, L)`` segment ids (None: all 0).

        Returns:
            ``(B, H)`` [CLS] embeddings and ``(M, V)`` MLM logits at ``positions``.
        """
        states = self._states_at(input_ids, positions, token_types)
        batch = input_ids.shape[0]
        return states[:batch], self.mlm_decoder(self.mlm_transform(states[batch:]))

    def _inputs(
        self, input_ids: torch.Tensor, token_types: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, L, H)`` token + position (+ segment) embeddings and the ``(B, 1, 1, L)`` key-padding mask."""
        length = input_ids.shape[1]
        if length > self.config.max_len:
            raise SiptError(
                f"inputs have {length} tokens but the encoder has {self.config.max_len} positions; "
                "truncate with the tokenizer's max_len or raise EncoderConfig.max_len"
            )
        key_mask = (input_ids != PAD_ID)[:, None, None, :]
        x = self.tokens(input_ids) + self.positions.weight[:length]
        if self.config.token_types:
            x = x + (self.segments.weight[0] if token_types is None else self.segments(token_types))
        elif token_types is not None:
            raise SiptError(
                "token_types given to an encoder without segment embeddings; build it with EncoderConfig(token_types=2)"
            )
        return self.dropout(x), key_mask

    def _states_at(
        self, input_ids: torch.Tensor, positions: torch.Tensor, token_types: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``(B + M, H)`` last-layer states at each row's [CLS], then at the ``(M,)`` flat ``positions``.

        Equals ``hidden_states(input_ids)`` at those places, but the last block only computes
        them (its keys and values still see every token): when M is ~15% of the tokens, that
        layer's attention and FFN shrink about five-fold.
        """
        batch, length = input_ids.shape
        x, key_mask = self._inputs(input_ids, token_types)
        for block in self.blocks[:-1]:
            x = block(x, key_mask)
        flat = torch.cat([torch.arange(batch, device=positions.device) * length, positions])
        return self.norm(self.blocks[-1](x, key_mask, _Queries.build(flat, batch, length)))


def _init_weights(module: nn.Module) -> None:
    """BERT's initialisation: N(0, 0.02) weights, zero biases."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def save_pretrained(
    encoder: TransformerEncoder, tokenizer: CharTokenizer | SubwordTokenizer, directory: str | Path
) -> Path:
    """Write ``encoder_config.json``, ``tokenizer.json`` and ``encoder.pt`` (CPU state_dict) into
    ``directory``, each atomically; returns the directory."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "encoder_config.json", config_to_dict(encoder.config))
    tokenizer.save(out / "tokenizer.json")
    buffer = io.BytesIO()
    torch.save({k: v.detach().cpu() for k, v in encoder.state_dict().items()}, buffer)
    write_bytes_atomic(out / "encoder.pt", buffer.getvalue())
    return out


def load_pretrained(
    directory: str | Path, device: str | torch.device = "cpu"
) -> tuple[TransformerEncoder, CharTokenizer | SubwordTokenizer]:
    """Read what :func:`save_pretrained` wrote; the encoder comes back in eval mode on ``device``."""
    source = Path(directory)
    if not (source / "encoder.pt").is_file():
        raise SiptError(f"{source} holds no encoder.pt; pass a directory written by save_pretrained")
    config = config_from_dict(EncoderConfig, json.loads((source / "encoder_config.json").read_text(encoding="utf-8")))
    encoder = TransformerEncoder(config)
    encoder.load_state_dict(torch.load(source / "encoder.pt", map_location="cpu", weights_only=True))
    return encoder.to(device).eval(), load_tokenizer(source / "tokenizer.json")
