"""A small pre-LN transformer encoder over character ids, with an MLM head.

The per-sample embedding ``f(x)`` is the last layer's (final-LayerNorm'd) vector at the ``[CLS]``
slot. Attention runs through ``F.scaled_dot_product_attention`` (fused kernels on CUDA, one call on
CPU) with a key-padding mask, so padded positions never influence real ones.
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

from sipt_lab.config import config_from_dict, config_to_dict
from sipt_lab.errors import SiptError
from sipt_lab.fileio import write_bytes_atomic, write_json_atomic
from sipt_lab.models.tokenizer import PAD_ID, CharTokenizer


@dataclass(frozen=True)
class EncoderConfig:
    """Sizes of :class:`TransformerEncoder`.

    ``vocab_size = 0`` means "take it from the tokenizer" (the trainer fills it in). ``max_len`` is
    the number of learned positions (tokens per sample, ``[CLS]`` included). ``dropout`` applies to
    the residual branches, ``attention_dropout`` to the attention weights (the paper's HF BERT
    used 0 and 0.1).
    """

    vocab_size: int = 0
    hidden: int = 10
    n_layers: int = 2
    n_heads: int = 2
    ffn: int = 8
    dropout: float = 0.0
    attention_dropout: float = 0.1
    max_len: int = 512
    tie_mlm_head: bool = True

    def validate(self) -> None:
        if self.vocab_size < 1:
            raise SiptError(f"encoder vocab_size is {self.vocab_size}; build the tokenizer first and set it")
        if min(self.hidden, self.n_layers, self.n_heads, self.ffn, self.max_len) < 1:
            raise SiptError("encoder hidden, n_layers, n_heads, ffn and max_len must all be >= 1")
        if self.hidden % self.n_heads:
            raise SiptError(f"encoder hidden {self.hidden} is not divisible by n_heads {self.n_heads}; change one")


#: The paper's sizes: CLIQUES and the mechanistic (STRUCTURAL) graphs vs the simplicial manifolds.
ENCODER_PRESETS: dict[str, EncoderConfig] = {
    "cliques": EncoderConfig(hidden=10, n_layers=2, n_heads=2, ffn=8),
    "mechanistic": EncoderConfig(hidden=10, n_layers=2, n_heads=2, ffn=8),
    "manifolds": EncoderConfig(hidden=256, n_layers=3, n_heads=4, ffn=256),
}


def encoder_preset(name: str, **overrides) -> EncoderConfig:
    """The named preset of :data:`ENCODER_PRESETS` with ``overrides`` applied."""
    if name not in ENCODER_PRESETS:
        raise SiptError(f"unknown encoder preset {name!r}; choose one of {', '.join(ENCODER_PRESETS)}")
    return dataclasses.replace(ENCODER_PRESETS[name], **overrides)


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
        self.ffn = nn.Sequential(
            nn.Linear(config.hidden, config.ffn), nn.GELU(), nn.Linear(config.ffn, config.hidden)
        )
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        """``x``: ``(B, L, H)``; ``key_mask``: ``(B, 1, 1, L)`` bool, True where a key is a real token."""
        batch, length, hidden = x.shape
        q, k, v = (
            self.qkv(self.norm1(x)).view(batch, length, 3, self.n_heads, hidden // self.n_heads).permute(2, 0, 3, 1, 4)
        )
        attended = F.scaled_dot_product_attention(
            q, k, v, attn_mask=key_mask, dropout_p=self.attention_dropout if self.training else 0.0
        )
        x = x + self.dropout(self.out(attended.transpose(1, 2).reshape(batch, length, hidden)))
        return x + self.dropout(self.ffn(self.norm2(x)))


class TransformerEncoder(nn.Module):
    """Character transformer satisfying :class:`sipt_lab.models.SequenceEncoder`.

    Inputs everywhere are ``input_ids``: ``(B, L)`` integer token ids, ``[CLS]`` first, padded with
    ``PAD_ID`` (0) on the right, ``L <= config.max_len``.
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        config.validate()
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
        if config.tie_mlm_head:
            self.mlm_decoder.weight = self.tokens.weight

    def hidden_states(self, input_ids: torch.Tensor) -> torch.Tensor:
        """``(B, L)`` ids -> ``(B, L, H)`` last-layer states (after the final LayerNorm)."""
        length = input_ids.shape[1]
        if length > self.config.max_len:
            raise SiptError(
                f"inputs have {length} tokens but the encoder has {self.config.max_len} positions; "
                "truncate with the tokenizer's max_len or raise EncoderConfig.max_len"
            )
        key_mask = (input_ids != PAD_ID)[:, None, None, :]
        x = self.dropout(self.tokens(input_ids) + self.positions.weight[:length])
        for block in self.blocks:
            x = block(x, key_mask)
        return self.norm(x)

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """``(B, L)`` ids -> ``(B, H)`` [CLS] embeddings."""
        return self.hidden_states(input_ids)[:, 0]

    def token_logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        """``(B, L)`` ids -> ``(B, L, V)`` MLM logits at every position."""
        return self.mlm_decoder(self.mlm_transform(self.hidden_states(input_ids)))

    def embed_and_masked_logits(
        self, input_ids: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One forward pass for pre-training.

        Args:
            input_ids: ``(B, L)`` ids (already masked).
            positions: ``(M,)`` int64 flat indices into ``B * L`` where MLM logits are wanted.

        Returns:
            ``(B, H)`` [CLS] embeddings and ``(M, V)`` MLM logits at ``positions``.
        """
        states = self.hidden_states(input_ids)
        at = states.reshape(-1, states.shape[-1])[positions]
        return states[:, 0], self.mlm_decoder(self.mlm_transform(at))


def _init_weights(module: nn.Module) -> None:
    """BERT's initialisation: N(0, 0.02) weights, zero biases."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def save_pretrained(encoder: TransformerEncoder, tokenizer: CharTokenizer, directory: str | Path) -> Path:
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


def load_pretrained(directory: str | Path, device: str | torch.device = "cpu") -> tuple[TransformerEncoder, CharTokenizer]:
    """Read what :func:`save_pretrained` wrote; the encoder comes back in eval mode on ``device``."""
    source = Path(directory)
    if not (source / "encoder.pt").is_file():
        raise SiptError(f"{source} holds no encoder.pt; pass a directory written by save_pretrained")
    config = config_from_dict(EncoderConfig, json.loads((source / "encoder_config.json").read_text(encoding="utf-8")))
    encoder = TransformerEncoder(config)
    encoder.load_state_dict(torch.load(source / "encoder.pt", map_location="cpu", weights_only=True))
    return encoder.to(device).eval(), CharTokenizer.load(source / "tokenizer.json")
