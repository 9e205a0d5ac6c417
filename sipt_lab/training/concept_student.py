"""The MLSM student's first and last steps: its weights start as the teacher's, and its final phase
maps the frozen concept logits to the vocabulary.

Berend's MLSM (and LSM / LSM15) student has the teacher's architecture, so it starts from the
teacher's weights (:func:`copy_teacher`; its concept output rows are new). After concept training,
the final phase freezes the model and fits one linear layer ``W ∈ R^{V×k}`` plus a bias from the
``k`` concept logits ``z`` at masked positions to the masked token (cross-entropy). Since
``z = D_c·t + b_c`` is linear in the head's transformed state ``t``, the layer folds into an
ordinary MLM decoder, ``W·D_c`` and ``W·b_c + b`` (:func:`final_phase`): the result is a plain
encoder of the teacher's vocabulary that loads, embeds and fine-tunes like any other.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sipt_lab.models import Tokenizer, evaluating

#: The final phase: the share of tokens masked (MLSM's 15 %), the most masked tokens it fits on
#: (a seeded subset), Adam steps and tokens per step of the linear layer.
FINAL_MASK_PROB = 0.15
FINAL_MAX_TOKENS = 20_000
FINAL_STEPS = 300
FINAL_BATCH = 1024


def copy_teacher(student: nn.Module, teacher: nn.Module) -> str:
    """Copy ``teacher``'s weights into ``student`` (in place) where the two match: every tensor of
    the student must be the teacher's of the same name and shape, or the teacher's with more
    leading rows (the concept outputs appended to the token embeddings and decoder, whose first
    rows take the teacher's). Another architecture leaves the student as initialised. Returns a note."""
    own, given = student.state_dict(), teacher.state_dict()
    for name, value in own.items():
        other = given.get(name)
        if other is None or other.shape[1:] != value.shape[1:] or other.shape[:1] > value.shape[:1]:
            shape = "absent" if other is None else tuple(other.shape)
            return f"student initialised at random: the teacher's {name} is {shape}, the student's {tuple(value.shape)}"
    with torch.no_grad():
        for name, value in own.items():
            (value[: given[name].shape[0]] if value.dim() else value).copy_(given[name])
    if hasattr(student, "fresh_head"):
        student.fresh_head = False  # its MLM head is the teacher's, trained
    return f"student initialised from the teacher ({len(own)} tensors; new concept rows at random)"


def masked_places(
    lengths: np.ndarray, width: int, mask_prob: float, rng: np.random.Generator, suffix_tokens: int = 0
) -> np.ndarray:
    """``(n, width)`` bool: each token after ``[CLS]`` and before the ``suffix_tokens`` closing ones
    of rows of ``lengths`` ``(n,)`` tokens, drawn with probability ``mask_prob``."""
    columns = np.arange(width)
    return (
        (rng.random((len(lengths), width)) < mask_prob)
        & (columns >= 1)
        & (columns < (np.asarray(lengths) - suffix_tokens)[:, None])
    )


@torch.inference_mode()
def masked_logits(
    encoder: nn.Module,
    ids: np.ndarray,
    lengths: np.ndarray,
    mask: np.ndarray,
    mask_id: int,
    batch_size: int = 256,
    first: int = 0,
) -> torch.Tensor:
    """``(M, V' - first)`` decoder logits from output ``first`` on, at the ``True`` places of ``mask``
    (``(n, L)``, row-major order), each replaced by ``mask_id`` in the input."""
    device = next(encoder.parameters()).device
    parts = []
    with evaluating(encoder):
        for start in range(0, len(ids), batch_size):
            width = int(lengths[start : start + batch_size].max())
            rows, cols = np.nonzero(mask[start : start + batch_size, :width])
            batch = torch.as_tensor(ids[start : start + batch_size, :width].copy(), device=device)
            positions = torch.as_tensor(rows * width + cols, device=device)
            batch.view(-1)[positions] = mask_id
            parts.append(encoder.embed_and_masked_logits(batch, positions)[1][:, first:].float().cpu())
    return torch.cat(parts)


def fit_linear_probe(
    x: torch.Tensor,
    y: torch.Tensor,
    n_classes: int,
    steps: int = 300,
    lr: float = 0.05,
    seed: int = 0,
    batch_size: int | None = None,
) -> nn.Linear:
    """A ``Linear(k, n_classes)`` on ``x``'s device, trained with Adam on cross-entropy of ``(M, k)``
    ``x`` against ``(M,)`` int64 ``y``: full-batch, or on ``batch_size`` rows drawn (seeded) per step."""
    generator = torch.Generator().manual_seed(seed)
    probe = nn.Linear(x.shape[1], n_classes).to(x.device)
    with torch.no_grad():
        probe.weight.copy_(torch.randn(probe.weight.shape, generator=generator) * 0.01)
        probe.bias.zero_()
    optimizer = torch.optim.Adam(probe.parameters(), lr=lr)
    scale = x.std().clamp_min(1e-6)
    for _ in range(steps):
        rows = (
            slice(None)
            if batch_size is None
            else torch.randint(len(x), (batch_size,), generator=generator).to(x.device)
        )
        optimizer.zero_grad()
        F.cross_entropy(probe(x[rows] / scale), y[rows]).backward()
        optimizer.step()
    with torch.no_grad():
        probe.weight /= scale
    return probe.eval()


def fold_concept_layer(encoder: nn.Module, layer: nn.Linear) -> None:
    """Fold ``layer`` (``Linear(k, V)``, concept logits -> vocabulary) into ``encoder``, whose decoder
    rows after the first ``V`` are its ``k`` concept outputs: the decoder becomes ``V`` untied rows
    ``W·D_c`` with bias ``W·b_c + b``, so its logits are ``layer``'s of the concept logits."""
    vocab = layer.out_features
    weight, bias = (tensor.detach().float().cpu() for tensor in encoder.output_rows())
    mapping, shift = layer.weight.detach().cpu(), layer.bias.detach().cpu()
    encoder.set_output_rows(mapping @ weight[vocab:], mapping @ bias[vocab:] + shift)


def final_phase(encoder: nn.Module, tokenizer: Tokenizer, texts: list[str], seed: int = 0) -> dict:
    """MLSM's final phase on a concept-trained ``encoder`` (decoder rows ``V..V+k`` are the concept
    outputs of ``tokenizer``'s ``V`` tokens), in place: fit the concept -> vocabulary layer on masked
    tokens of ``texts`` with everything else frozen, then fold it into the decoder
    (``set_output_rows``), leaving an MLM encoder of ``V`` outputs.

    Returns:
        ``tokens`` (masked tokens fitted on), ``steps``, ``fit_accuracy`` (the folded model's
        masked-token accuracy on them) and ``majority_accuracy`` (the most frequent of them).
    """
    vocab = tokenizer.vocab_size
    ids, lengths = tokenizer.encode(texts)
    rng = np.random.default_rng([seed, 31])
    mask = masked_places(lengths, ids.shape[1], FINAL_MASK_PROB, rng, tokenizer.suffix_tokens)
    rows, cols = np.nonzero(mask)
    if len(rows) > FINAL_MAX_TOKENS:
        keep = rng.choice(len(rows), FINAL_MAX_TOKENS, replace=False)
        mask = np.zeros_like(mask)
        mask[rows[keep], cols[keep]] = True
    device = next(encoder.parameters()).device
    targets = torch.as_tensor(ids[mask], dtype=torch.long)
    concepts = masked_logits(encoder, ids, lengths, mask, tokenizer.mask_id, batch_size=64, first=vocab)
    concepts, on_device = concepts.to(device), targets.to(device)
    fold_concept_layer(
        encoder, fit_linear_probe(concepts, on_device, vocab, FINAL_STEPS, seed=seed, batch_size=FINAL_BATCH)
    )
    predicted = masked_logits(encoder, ids, lengths, mask, tokenizer.mask_id, batch_size=64).argmax(1)
    return {
        "tokens": len(targets),
        "steps": FINAL_STEPS,
        "fit_accuracy": float((predicted == targets).float().mean()),
        "majority_accuracy": float((targets == torch.bincount(targets, minlength=vocab).argmax()).float().mean()),
    }
