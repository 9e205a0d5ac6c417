"""Embedding samples with a (trained) encoder: :func:`embed`, :func:`embed_inputs`."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from sipt_lab.core.progress import progress_bar
from sipt_lab.models import Tokenizer, evaluating
from sipt_lab.training.inputs import encoder_inputs
from sipt_lab.training.runtime import resolve_device


def embed(
    encoder: nn.Module,
    tokenizer: Tokenizer,
    texts: list[str],
    batch_size: int = 256,
    device: str | torch.device | None = None,
) -> np.ndarray:
    """``(n, H)`` float32 embeddings of ``texts`` (eval mode, no gradients, unmasked); ``texts`` are
    whatever samples ``tokenizer`` featurises (:func:`~sipt_lab.training.inputs.encoder_inputs`:
    texts, or graphs for a GIN).

    The vector is the encoder's ``output_embeddings`` when it has one (a sentence-transformers
    checkpoint's normalised pooling), else ``embed``. Samples are batched by length so each batch
    is padded only to its own longest member. ``device`` defaults to the encoder's.
    """
    device = next(encoder.parameters()).device if device is None else resolve_device(device)
    encoder = encoder.to(device)
    return embed_inputs(encoder, encoder_inputs(tokenizer, list(texts), device), batch_size)


def embed_inputs(encoder: nn.Module, inputs, batch_size: int = 256) -> np.ndarray:
    """:func:`embed` of samples already featurised (:func:`~sipt_lab.training.inputs.encoder_inputs`
    on the encoder's device): for embedding the same samples again and again, tokenised once."""
    vectors = getattr(encoder, "output_embeddings", encoder.embed)
    order = np.argsort(inputs.lengths, kind="stable")
    out = np.empty((len(order), encoder.hidden_size), dtype=np.float32)
    batches = range(0, len(order), batch_size)
    with evaluating(encoder), torch.inference_mode():
        for start in progress_bar(batches, desc="embedding", unit="batch", leave=False, disable=len(batches) < 2):
            rows = order[start : start + batch_size]
            out[rows] = vectors(inputs.batch(rows)).float().cpu().numpy()
    return out
