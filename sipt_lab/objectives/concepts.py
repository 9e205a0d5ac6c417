"""MLSM / LSM (Berend 2023, szegedai/MLSM): predict a teacher's sparse "concept" codes of each token.

A teacher encoder (LM-trained) reads the *unmasked* samples; its hidden state ``h`` of every token
at a chosen layer is L2-normalised and sparse-coded over a non-negative dictionary ``D`` (``k``
atoms of unit norm, :func:`learn_dictionary`: scikit-learn's ``MiniBatchDictionaryLearning`` with
``positive_code=True``); the codes solve ``min_α ½‖x − αD‖² + λ‖α‖₁, α ≥ 0`` (:func:`fista_nonneg`,
the non-negative FISTA of MLSM's ``sparser.py``) and, normalised to sum 1, are the token's target
distribution ``q`` over the ``k`` concepts (:class:`ConceptTargets`, computed once per run). The
student's concept logits ``z`` are ``k`` extra rows of its tied MLM decoder (MLSM's ``[MASK-j]``
tokens), and its loss (:class:`ConceptKL`) is ``KL(q ‖ softmax z)`` averaged over the selected
positions (``batchmean``), plus an optional MLM term. Tokens whose code is all zero have no target.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sipt_lab.core.errors import SiptError
from sipt_lab.models import evaluating
from sipt_lab.objectives.combined import Objective, ObjectiveInputs


def fista_nonneg(x: torch.Tensor, dictionary: torch.Tensor, alpha: float, iterations: int = 100) -> torch.Tensor:
    """Non-negative sparse codes by FISTA.

    Args:
        x: ``(N, d)`` vectors; dictionary: ``(k, d)`` atoms as rows; alpha: the L1 weight ``λ``.

    Returns:
        ``(N, k)`` codes ``α >= 0`` approximately minimising ``½‖x − αD‖² + λ‖α‖₁`` per row.
    """
    gram = dictionary @ dictionary.T
    step = 1.0 / float(torch.linalg.eigvalsh(gram.double())[-1])
    target = x @ dictionary.T
    codes = momentum = x.new_zeros(len(x), len(dictionary))
    t = 1.0
    for _ in range(iterations):
        updated = torch.relu(momentum - step * (momentum @ gram - target) - step * alpha)
        t_next = (1.0 + math.sqrt(1.0 + 4.0 * t * t)) / 2.0
        momentum = updated + ((t - 1.0) / t_next) * (updated - codes)
        codes, t = updated, t_next
    return codes


def normalise_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)


def learn_dictionary(
    states: np.ndarray, n_atoms: int, alpha: float, seed: int = 0, max_vectors: int = 5_000, epochs: int = 1
) -> np.ndarray:
    """A non-negative-code dictionary of L2-normalised ``states``.

    Args:
        states: ``(N, d)`` hidden states; at most ``max_vectors`` of them (a seeded random subset) are used.
        n_atoms: ``k``; alpha: the sparsity weight ``λ``; epochs: passes over the vectors.

    Returns:
        ``(k, d)`` float32 unit-norm atoms.
    """
    from sklearn.decomposition import MiniBatchDictionaryLearning
    from sklearn.exceptions import ConvergenceWarning

    rng = np.random.default_rng(seed)
    if len(states) > max_vectors:
        states = states[rng.choice(len(states), max_vectors, replace=False)]
    learner = MiniBatchDictionaryLearning(
        n_components=n_atoms,
        alpha=alpha,
        positive_code=True,
        batch_size=256,
        max_iter=epochs,
        random_state=seed,
        fit_algorithm="cd",
    )
    with warnings.catch_warnings():  # its inner coordinate descent warns about every loose batch
        warnings.simplefilter("ignore", ConvergenceWarning)
        learner.fit(normalise_rows(states.astype(np.float64)))
    return normalise_rows(learner.components_).astype(np.float32)


@dataclass
class ConceptTargets:
    """Every token's target concept distribution, its ``m`` largest codes kept.

    Attributes:
        offsets: ``(n,)`` int64 flat token index of each sample's column 0 (token ``(i, c)`` is
            ``offsets[i] + c``).
        atoms: ``(T, m)`` int64 concept ids; weights: ``(T, m)`` float32, each row summing to 1
            (all 0: no target).
        n_atoms: ``k``.
        stats: ``nonzero_median`` / ``nonzero_mean`` non-zero codes per token, ``zero_fraction``
            tokens without a target, ``kept_mass`` the share of code mass the top ``m`` keep.
    """

    offsets: np.ndarray
    atoms: np.ndarray
    weights: np.ndarray
    n_atoms: int
    stats: dict

    def dense(self, sites: np.ndarray, device: torch.device) -> torch.Tensor:
        """``(M, k)`` targets of the ``(M, 2)`` ``(sample, column)`` sites."""
        flat = self.offsets[sites[:, 0]] + sites[:, 1]
        out = torch.zeros(len(flat), self.n_atoms, device=device)
        out.scatter_add_(
            1, torch.as_tensor(self.atoms[flat], device=device), torch.as_tensor(self.weights[flat], device=device)
        )
        return out


def concept_targets(
    states: np.ndarray,
    lengths: np.ndarray,
    dictionary: np.ndarray,
    alpha: float,
    *,
    max_codes: int = 32,
    iterations: int = 50,
    chunk: int = 8192,
) -> ConceptTargets:
    """Sparse codes of every token, as :class:`ConceptTargets`.

    Args:
        states: ``(T, d)`` the teacher's states of every token, sample by sample (sample ``i``'s
            ``lengths[i]`` tokens in column order).
        lengths: ``(n,)`` tokens per sample; dictionary: ``(k, d)`` atoms; alpha: ``λ``.
        max_codes: ``m``, the largest codes kept per token.
    """
    if len(states) != int(lengths.sum()):
        raise SiptError(f"{len(states)} token states for {int(lengths.sum())} tokens; give one state per token")
    atoms_t = torch.as_tensor(dictionary, dtype=torch.float32)
    m = min(max_codes, len(dictionary))
    atoms = np.zeros((len(states), m), dtype=np.int64)
    weights = np.zeros((len(states), m), dtype=np.float32)
    nonzero = np.zeros(len(states), dtype=np.int64)
    kept = total = 0.0
    for start in range(0, len(states), chunk):
        x = torch.as_tensor(normalise_rows(states[start : start + chunk]), dtype=torch.float32)
        codes = fista_nonneg(x, atoms_t, alpha, iterations)
        top = torch.topk(codes, m, dim=1)
        mass = top.values.sum(1, keepdim=True)
        atoms[start : start + len(x)] = top.indices.numpy()
        weights[start : start + len(x)] = torch.where(mass > 0, top.values / mass.clamp_min(1e-12), 0.0).numpy()
        nonzero[start : start + len(x)] = (codes > 0).sum(1).numpy()
        kept, total = kept + float(mass.sum()), total + float(codes.sum())
    stats = {
        "nonzero_median": float(np.median(nonzero)),
        "nonzero_mean": float(nonzero.mean()),
        "zero_fraction": float(np.mean(nonzero == 0)),
        "kept_mass": kept / total if total else 0.0,
    }
    return ConceptTargets(np.cumsum(lengths) - lengths, atoms, weights, len(dictionary), stats)


@torch.inference_mode()
def teacher_states(
    teacher: nn.Module, ids: np.ndarray, lengths: np.ndarray, layer: int | None = None, batch_size: int = 256
) -> np.ndarray:
    """``(T, d)`` float32 states of every real token (sample by sample, column order) of the
    unmasked ``ids`` (``(n, L)``) at ``layer`` (0: embeddings, None: the last; the char
    :class:`TransformerEncoder` and a Hugging Face :class:`HFEncoder` number layers alike)."""
    device = next(teacher.parameters()).device
    parts = []
    with evaluating(teacher):
        for start in range(0, len(ids), batch_size):
            width = int(lengths[start : start + batch_size].max())
            states = teacher.hidden_states(
                torch.as_tensor(ids[start : start + batch_size, :width], device=device), layer=layer
            )
            real = torch.as_tensor(np.arange(width)[None, :] < lengths[start : start + batch_size, None], device=device)
            parts.append(states[real].float().cpu().numpy())
    return np.concatenate(parts)


def concept_kl(concept_logits: torch.Tensor, targets: torch.Tensor, count: int | None = None) -> torch.Tensor:
    """``Σ_n Σ_j q_nj (log q_nj − log softmax(z_n)_j) / count`` (default: rows with a target).

    Args:
        concept_logits: ``(M, k)`` ``z``; targets: ``(M, k)`` ``q`` (rows summing to 1, or all 0:
            no target, no term).
    """
    log_p = F.log_softmax(concept_logits.float(), dim=1)
    total = (torch.xlogy(targets, targets) - targets * log_p).sum()
    return total / (max(int((targets.sum(1) > 0).sum()), 1) if count is None else max(count, 1))


class ConceptKL(Objective):
    """MLSM's loss over the selected positions; the concept logits are the decoder's last
    ``targets.n_atoms`` outputs (the extra rows :mod:`sipt_lab.training.methods` appends to the encoder's
    decoder, after the vocabulary and any padding rows a checkpoint has)."""

    name = "concepts"
    needs_mlm = True
    sharded = True

    def __init__(self, targets: ConceptTargets) -> None:
        super().__init__()
        self.targets = targets

    def forward(self, inputs: ObjectiveInputs) -> torch.Tensor:
        logits = inputs.mlm_logits[:, -self.targets.n_atoms :]
        return concept_kl(logits, self.targets.dense(inputs.mlm_sites, logits.device), inputs.mlm_count)
