"""MLSM's final phase as a probe: a linear map from frozen concept logits to the vocabulary, scored held out.

The student's backbone and concept head are frozen; a linear layer ``W ∈ R^{V×k}`` plus bias is
trained by cross-entropy from the concept logits ``z`` at masked positions to the masked token, and
its masked-token accuracy on held-out samples is compared with an MLM model's own prediction at the
same positions (:func:`concept_probe`). ``sipt-lab pretrain`` runs the phase itself and saves its
model (:func:`~sipt_lab.training.concept_student.final_phase`); this probe scores it on held-out samples.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from sipt_lab.training.concept_student import fit_linear_probe, masked_logits, masked_places


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
    mask = masked_places(lengths, ids.shape[1], mask_prob, rng)
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
