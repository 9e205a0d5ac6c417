"""LinkBERT's document relation prediction (DRP): a 3-way classifier on the pair row's ``[CLS]``."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sipt_lab.objectives import names
from sipt_lab.objectives.combined import Objective, ObjectiveInputs, seeded_head


class DocumentRelation(Objective):
    """``L_DRP = −log p(r | h_[CLS])`` averaged over the batch's seeds, ``r`` in :data:`names.RELATIONS`.

    Args:
        hidden: the encoder's hidden size ``H``.
        seed: seeds the head's initialisation (N(0, 0.02) weights, zero bias), so a run is
            reproducible whatever the global torch RNG holds.
    """

    name = "drp"
    sharded = True

    def __init__(self, hidden: int, seed: int = 0) -> None:
        super().__init__()
        self.head = seeded_head(hidden, len(names.RELATIONS), seed)

    def logits(self, embeddings: torch.Tensor) -> torch.Tensor:
        """``(R, H)`` [CLS] states -> ``(R, 3)`` relation logits."""
        return self.head(embeddings)

    def forward(self, inputs: ObjectiveInputs) -> torch.Tensor:
        logits = self.logits(inputs.embeddings).float()
        total = F.cross_entropy(logits, inputs.relations, reduction="sum")
        return total / (len(inputs.relations) if inputs.seed_count is None else inputs.seed_count)
