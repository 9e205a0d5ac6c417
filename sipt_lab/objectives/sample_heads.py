"""The per-sample baselines' objectives: supervised terms on each sample's own pre-training labels.

* :class:`MultiLabel` is Hu et al.'s supervised graph-level multi-task pre-training (the SIPT
  paper's NETWORKS baseline): a linear head predicts each of the ``L`` pre-training labels (the
  ego-networks' GO terms) from a seed's per-sample embedding, scored by binary cross-entropy.
* :class:`SameFamily` is PLUS's same-family prediction (the paper's PROTEINS baseline): a head over
  a pair of per-sample embeddings predicts whether the two samples share a pre-training label (a
  family), on the batch's balanced positive and negative pairs.

Neither reads ``G_PT``: the labels stand where the graph stands for SIPT.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F

from sipt_lab.objectives.combined import Objective, ObjectiveInputs, seeded_head


class MultiLabel(Objective):
    """``L_MT``: the binary cross-entropy of every label of every seed whose labels are known,
    averaged over those (seed, label) entries of the whole batch.

    Args:
        hidden: the encoder's hidden size ``H``.
        labels: ``(n, L)`` 0/1 sparse matrix, row ``i`` sample ``i``'s labels.
        known: ``(n,)`` bool, samples whose labels are known; the others add nothing to the term.
        seed: seeds the head's initialisation (:func:`~sipt_lab.objectives.seeded_head`).

    The rows of ``ObjectiveInputs.embeddings`` are seeds (the term reads no pairs), their samples
    ``ObjectiveInputs.samples``; ``seed_samples`` (the whole batch's seeds) counts the known ones.
    """

    name = "multitask"
    sharded = True

    def __init__(self, hidden: int, labels: sp.csr_array, known: np.ndarray, seed: int = 0) -> None:
        super().__init__()
        self.labels = sp.csr_array(labels)
        self.known = np.asarray(known, dtype=bool)
        self.head = seeded_head(hidden, self.labels.shape[1], seed)

    def forward(self, inputs: ObjectiveInputs) -> torch.Tensor:
        device = inputs.embeddings.device
        keep = np.flatnonzero(self.known[inputs.samples])
        targets = torch.as_tensor(self.labels[inputs.samples[keep]].toarray(), dtype=torch.float32, device=device)
        logits = self.head(inputs.embeddings[torch.as_tensor(keep, device=device)]).float()
        total = F.binary_cross_entropy_with_logits(logits, targets, reduction="sum")
        seeds = inputs.samples if inputs.seed_samples is None else inputs.seed_samples
        return total / max(int(self.known[seeds].sum()) * self.labels.shape[1], 1)


class SameFamily(Objective):
    """``L_SF``: whether two samples share a pre-training label, ``p = σ(w·[a ⊙ b, |a − b|] + c)``
    (symmetric in the pair), scored by binary cross-entropy averaged over the batch's positive
    pairs (target 1) and negative pairs (target 0).

    Args:
        hidden: the encoder's hidden size ``H`` (the head reads ``2H`` features).
        seed: seeds the head's initialisation.
    """

    name = "same_family"
    needs_pairs = True

    def __init__(self, hidden: int, seed: int = 0) -> None:
        super().__init__()
        self.head = seeded_head(2 * hidden, 1, seed)

    def logits(self, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        """``(P, H)`` and ``(P, H)`` embeddings -> ``(P,)`` logits that each pair shares a label."""
        return self.head(torch.cat([first * second, (first - second).abs()], dim=-1)).squeeze(-1)

    def forward(self, inputs: ObjectiveInputs) -> torch.Tensor:
        pairs = torch.cat([inputs.positive_pairs, inputs.negative_pairs])
        embeddings = inputs.embeddings.float()
        logits = self.logits(embeddings[pairs[:, 0]], embeddings[pairs[:, 1]]).float()
        if not len(pairs):  # a batch without pairs: a zero that still reaches the graph
            return logits.sum()
        targets = torch.zeros(len(pairs), device=logits.device)
        targets[: len(inputs.positive_pairs)] = 1.0
        return F.binary_cross_entropy_with_logits(logits, targets)
