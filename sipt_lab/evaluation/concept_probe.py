"""MLSM's missing final phase: a linear map from frozen concept logits to the vocabulary.

The student's backbone and concept head are frozen; a linear layer ``W ∈ R^{V×k}`` plus bias is
trained by cross-entropy from the concept logits ``z`` at masked positions to the masked token, and
its masked-token accuracy on held-out samples is compared with an MLM model's own prediction at the
same positions (:func:`concept_probe`).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sipt_lab.models import evaluating


@torch.inference_mode()
def masked_logits(
    encoder: nn.Module, ids: np.ndarray, lengths: np.ndarray, mask: np.ndarray, mask_id: int, batch_size: int = 256
) -> torch.Tensor:
    """``(M, V')`` decoder logits at the ``True`` places of ``mask`` (``(n, L)``, row-major order),
    each replaced by ``mask_id`` in the input."""
    device = next(encoder.parameters()).device
    parts = []
    with evaluating(encoder):
        for start in range(0, len(ids), batch_size):
            width = int(lengths[start : start + batch_size].max())
            rows, cols = np.nonzero(mask[start : start + batch_size, :width])
            batch = torch.as_tensor(ids[start : start + batch_size, :width].copy(), device=device)
            positions = torch.as_tensor(rows * width + cols, device=device)
            batch.view(-1)[positions] = mask_id
            parts.append(encoder.embed_and_masked_logits(batch, positions)[1].float().cpu())
    return torch.cat(parts)


def fit_linear_probe(
    x: torch.Tensor, y: torch.Tensor, n_classes: int, steps: int = 300, lr: float = 0.05, seed: int = 0
) -> nn.Linear:
    """A ``Linear(k, n_classes)`` trained full-batch with Adam on cross-entropy of ``(M, k)`` ``x``
    against ``(M,)`` int64 ``y``."""
    generator = torch.Generator().manual_seed(seed)
    probe = nn.Linear(x.shape[1], n_classes)
    with torch.no_grad():
        probe.weight.copy_(torch.randn(probe.weight.shape, generator=generator) * 0.01)
        probe.bias.zero_()
    optimizer = torch.optim.Adam(probe.parameters(), lr=lr)
    scale = x.std().clamp_min(1e-6)
    for _ in range(steps):
        optimizer.zero_grad()
        F.cross_entropy(probe(x / scale), y).backward()
        optimizer.step()
    with torch.no_grad():
        probe.weight /= scale
    return probe.eval()


def concept_probe(
    student: nn.Module,
    mlm_model: nn.Module,
    ids: np.ndarray,
    lengths: np.ndarray,
    vocab_size: int,
    mask_id: int,
    *,
    mask_prob: float = 0.15,
    test_fraction: float = 0.2,
    repeats: int = 1,
    seed: int = 0,
) -> dict[str, float]:
    """Masked-token accuracy of the concept -> vocabulary probe and of ``mlm_model`` on the same
    held-out masked positions.

    Args:
        student: an encoder whose decoder's outputs after the first ``vocab_size`` are concept logits.
        mlm_model: an MLM-trained encoder with the same tokenizer (``ids`` ``(n, L)``, ``lengths`` ``(n,)``).
        mask_prob: the share of characters masked; test_fraction: samples held out from the probe's training.
        repeats: independent masks drawn over every sample (more probe tokens from few samples).

    Returns:
        ``probe_accuracy``, ``mlm_accuracy``, ``majority_accuracy`` (the most frequent training token),
        ``test_tokens``.
    """
    rng = np.random.default_rng([seed, 17])
    test_samples = np.tile(rng.random(len(ids)) < test_fraction, repeats)
    ids, lengths = np.tile(ids, (repeats, 1)), np.tile(lengths, repeats)
    columns = np.arange(ids.shape[1])
    mask = (rng.random(ids.shape) < mask_prob) & (columns >= 1) & (columns < lengths[:, None])
    test = torch.as_tensor(test_samples[np.nonzero(mask)[0]])
    targets = torch.as_tensor(ids[mask])
    concepts = masked_logits(student, ids, lengths, mask, mask_id)[:, vocab_size:]
    probe = fit_linear_probe(concepts[~test], targets[~test], vocab_size, seed=seed)
    with torch.no_grad():
        probe_hits = (probe(concepts[test]).argmax(1) == targets[test]).float().mean()
    mlm_hits = (
        (masked_logits(mlm_model, ids, lengths, mask, mask_id)[:, :vocab_size][test].argmax(1) == targets[test])
        .float()
        .mean()
    )
    majority = torch.bincount(targets[~test], minlength=vocab_size).argmax()
    return {
        "probe_accuracy": float(probe_hits),
        "mlm_accuracy": float(mlm_hits),
        "majority_accuracy": float((targets[test] == majority).float().mean()),
        "test_tokens": int(test.sum()),
    }
