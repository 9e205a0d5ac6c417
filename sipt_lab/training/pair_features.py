"""Residue-pair features for a pairwise head (TAPE's contact prediction).

A pair ``(i, j)`` of one protein's residue states ``h_i, h_j`` (``H`` wide) is read as
``[h_i * h_j, |h_i - h_j|]`` (``2H``, symmetric in ``i`` and ``j``, TAPE's product and difference
features); a linear head maps it to contact / no-contact logits. Only the pairs of
:func:`~sipt_lab.data.contacts.pair_index` are formed, ``(L - 6)(L - 5) / 2`` for ``L`` residues, so
memory grows with ``L^2``: :func:`check_pair_memory` refuses a sequence whose pair features would
pass a budget.
"""

from __future__ import annotations

import numpy as np
import torch

from sipt_lab.core.errors import SiptError
from sipt_lab.data.contacts import pair_count, pair_index

_FLOAT32_BYTES = 4


def pair_features(states: torch.Tensor, counts: np.ndarray) -> torch.Tensor:
    """``(sum pair_count(counts), 2H)`` features of the scored pairs of each sample, sample after
    sample, :func:`~sipt_lab.data.contacts.pair_index` order within one. ``states`` ``(sum counts, H)``:
    the residue states of ``counts`` ``(B,)`` residues per sample, sample after sample."""
    chunks, start = [], 0
    for count in np.asarray(counts).tolist():
        i, j = (torch.as_tensor(index, device=states.device) for index in pair_index(count))
        residues = states[start : start + count]
        chunks.append(torch.cat([residues[i] * residues[j], (residues[i] - residues[j]).abs()], dim=1))
        start += count
    return torch.cat(chunks) if chunks else states.new_zeros((0, 2 * states.shape[1]))


def pair_bytes(residues, hidden: int) -> np.ndarray:
    """Bytes of the float32 pair features of sequences of ``residues`` residues at hidden size ``hidden``."""
    return pair_count(residues) * 2 * hidden * _FLOAT32_BYTES


def check_pair_memory(counts: np.ndarray, hidden: int, budget_gib: float, split: str) -> None:
    """SiptError (one line) naming the longest sample of ``split`` when its pair features
    (:func:`pair_bytes`) pass ``budget_gib`` GiB; ``counts`` ``(n,)`` residues read per sample."""
    counts = np.asarray(counts)
    if not counts.size:
        return
    k = int(np.argmax(counts))
    needed = float(pair_bytes(counts[k], hidden)) / 2**30
    if needed > budget_gib:
        raise SiptError(
            f"sample {k} of the {split} split has {counts[k]} residues: {int(pair_count(counts[k])):,} residue "
            f"pairs, {needed:.2f} GiB of pair features at hidden size {hidden} (4 * 2H bytes a pair, pairs grow "
            f"with L^2) over FinetuneConfig.pair_memory_gib {budget_gib:g}; lower FinetuneConfig.max_len or raise "
            "FinetuneConfig.pair_memory_gib"
        )
