"""The featurisation seam: samples as the encoder inputs a training step and :func:`embed` read.

Text encoders' samples become :class:`TokenRows` (every sample's token ids in one padded tensor);
a tokenizer with an ``inputs`` method (a GIN's graphs) makes its own
:class:`~sipt_lab.models.EncoderInputs`.
"""

from __future__ import annotations

import numpy as np
import torch

from sipt_lab.models import Tokenizer


class TokenRows:
    """Text encoders' :class:`~sipt_lab.models.EncoderInputs`: every sample's token ids in one padded
    ``(n, T)`` tensor, ``lengths`` ``(n,)`` tokens each (special tokens included); each batch is
    gathered where ``ids`` lives and moved to ``device`` (default: ``ids``'s). A training step
    (:class:`~sipt_lab.training.step.RunLoss`) encodes them (masking, replacement, length buckets).
    """

    def __init__(
        self, ids: torch.Tensor, lengths: np.ndarray, mask_id: int, device: torch.device | None = None
    ) -> None:
        self.ids = ids
        self.lengths = np.asarray(lengths)
        self.mask_id = mask_id
        self.device = ids.device if device is None else torch.device(device)

    def batch(self, nodes: np.ndarray) -> torch.Tensor:
        """``(k, T_k)`` unmasked ids of the samples ``nodes`` ``(k,)`` on ``device``, cut to their longest."""
        rows = torch.as_tensor(nodes, device=self.ids.device)
        return self.ids[rows, : int(self.lengths[nodes].max())].to(self.device)


def encoder_inputs(tokenizer: Tokenizer, samples: list, device: torch.device):
    """``samples`` as the :class:`~sipt_lab.models.EncoderInputs` that ``tokenizer`` makes
    (``tokenizer.inputs(samples, device)``, e.g. graphs for a GIN), or, for a text tokenizer without
    that method, its token-id rows (:class:`TokenRows`, kept on the CPU, each batch moved to ``device``)."""
    make = getattr(tokenizer, "inputs", None)
    if make is not None:
        return make(samples, device)
    ids, lengths = tokenizer.encode(list(samples))
    return TokenRows(torch.as_tensor(ids), lengths, tokenizer.mask_id, device=device)
