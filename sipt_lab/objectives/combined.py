"""The pre-training objective ``L_PT = (1 − λ_SI)·L_M + λ_SI·L_SI``: what an objective is, its
two terms, and how they are weighed.

:class:`ObjectiveInputs` is what one training step computed, :class:`Objective` the base of every
term; :class:`MaskedLM` is ``L_M`` and :class:`StructureInducing` ``L_SI`` (also per run of a
stacked model); :func:`build_objectives` weighs them by ``λ_SI`` and :func:`combine` sums the
weighted terms. :func:`seeded_head` is the reproducible linear head that the objectives owning
parameters (:mod:`sipt_lab.objectives.relation`, :mod:`sipt_lab.objectives.sample_heads`) start from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from sipt_lab.core.errors import SiptError
from sipt_lab.objectives.mlm import masked_lm_loss
from sipt_lab.objectives.structure import GROUPED_STRUCTURE_LOSSES, check_loss_params, get_structure_loss


@dataclass
class ObjectiveInputs:
    """What one training step computed, in the form objectives consume.

    Attributes:
        embeddings: ``(U, H)`` [CLS] embeddings of the encoded samples; rows ``0..B-1`` are the seeds.
        positive_pairs: ``(P, 2)`` int64 rows of ``embeddings`` linked in ``G_PT``.
        negative_pairs: ``(N, 2)`` int64 rows not linked.
        mlm_logits: ``(M, V)`` MLM logits at the seeds' masked positions (None when no objective needs them).
        mlm_targets: ``(M,)`` int64 original ids there.
        mlm_count: masked positions in the whole batch; differs from ``M`` when each of several
            processes holds a shard of the batch's tokens (None: ``M``).
        mlm_sites: ``(M, 2)`` int64 numpy ``(sample id, token column)`` of each masked position
            (what per-token targets such as MLSM's concept codes are looked up by).
        relations: ``(R,)`` int64 class of each of this process's seed rows for a sequence-level
            objective (LinkBERT's document relation), None when the batch has none.
        seed_count: seeds in the whole batch (the denominator of sharded per-seed terms).
        samples: ``(U,)`` int64 numpy sample id of each row of ``embeddings`` (what per-sample
            targets, such as the multitask baseline's labels, are looked up by).
        seed_samples: ``(B,)`` int64 numpy sample ids of the whole batch's seeds.
    """

    embeddings: torch.Tensor
    positive_pairs: torch.Tensor
    negative_pairs: torch.Tensor
    mlm_logits: torch.Tensor | None = None
    mlm_targets: torch.Tensor | None = None
    mlm_count: int | None = None
    mlm_sites: np.ndarray | None = None
    relations: torch.Tensor | None = None
    seed_count: int | None = None
    samples: np.ndarray | None = None
    seed_samples: np.ndarray | None = None


class Objective(nn.Module):
    """Base of all objectives. ``needs_pairs``: the seeds' positives/negatives must be encoded too;
    ``needs_mlm``: the seeds must be masked and MLM logits computed. ``sharded``: under data
    parallelism the term is this process's share of a sum over the processes (MLM over its own
    tokens); otherwise every process computes the whole-batch term (``L_SI`` over gathered embeddings)."""

    name: str = ""
    needs_pairs: bool = False
    needs_mlm: bool = False
    sharded: bool = False

    def forward(self, inputs: ObjectiveInputs) -> torch.Tensor:
        raise NotImplementedError


class MaskedLM(Objective):
    """``L_M`` over the seeds' masked characters; ``vocab_size`` (None: every logit) keeps the
    first that many logits, for an encoder whose decoder also scores other outputs (MLSM's concepts)."""

    name = "mlm"
    needs_mlm = True
    sharded = True

    def __init__(self, vocab_size: int | None = None) -> None:
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, inputs: ObjectiveInputs) -> torch.Tensor:
        logits = inputs.mlm_logits if self.vocab_size is None else inputs.mlm_logits[:, : self.vocab_size]
        return masked_lm_loss(logits, inputs.mlm_targets, inputs.mlm_count)


class StructureInducing(Objective):
    """``L_SI``: a pair loss of :data:`~sipt_lab.objectives.structure.STRUCTURE_LOSSES` over the batch's edge pairs and non-edge pairs."""

    name = "si"
    needs_pairs = True

    def __init__(self, loss: str = "contrastive", **params: float) -> None:
        super().__init__()
        self.loss = get_structure_loss(loss)
        self.grouped_loss = GROUPED_STRUCTURE_LOSSES.get(loss)
        check_loss_params(loss, params)
        self.params = params

    def forward(self, inputs: ObjectiveInputs) -> torch.Tensor:
        positive, negative = inputs.positive_pairs, inputs.negative_pairs
        return self.loss(
            inputs.embeddings, positive[:, 0], positive[:, 1], negative[:, 0], negative[:, 1], **self.params
        )

    @staticmethod
    def pair_arrays(
        positive_pairs: Sequence[np.ndarray], negative_pairs: Sequence[np.ndarray], rows: int, pad: int | None = None
    ) -> dict[str, np.ndarray]:
        """K runs' ``(P_k, 2)`` / ``(N_k, 2)`` pairs of their rows, as :meth:`per_run` reads them from
        their ``(K, rows, H)`` stacked embeddings: ``positive`` ``(P, 2)`` int64 pairs of flat rows
        (into ``K * rows``) and ``positive_groups`` ``(P,)`` each pair's run, the same for ``negative``.
        ``pad`` n: each list padded to a multiple of n with pairs of row 0 in group ``K``, which
        :meth:`per_run` drops (shapes that change less from step to step)."""
        runs = len(positive_pairs)
        arrays = {}
        for name, pairs in (("positive", positive_pairs), ("negative", negative_pairs)):
            sizes = [len(p) for p in pairs]
            flat = (
                np.concatenate(pairs).reshape(-1, 2).astype(np.int64)
                + np.repeat(np.arange(runs) * rows, sizes)[:, None]
            )
            groups = np.repeat(np.arange(runs, dtype=np.int64), sizes)
            extra = 0 if pad is None else -len(flat) % pad + pad * (len(flat) == 0)
            arrays[name] = np.concatenate([flat, np.zeros((extra, 2), np.int64)])
            arrays[f"{name}_groups"] = np.concatenate([groups, np.full(extra, runs, np.int64)])
        return arrays

    def per_run(
        self,
        embeddings: torch.Tensor,
        pairs: Mapping[str, torch.Tensor],
        sizes: Sequence[tuple[int, int]] | None = None,
    ) -> torch.Tensor:
        """The term of each of K runs from their stacked ``(K, R, H)`` embeddings and their pairs
        (:meth:`pair_arrays`, on the device): ``(K,)``, in one pass where the loss has a grouped
        form (the contrastive loss), else one call per run, which needs each run's ``sizes``
        ``(P_k, N_k)`` (unpadded pairs)."""
        runs, rows = embeddings.shape[:2]
        positive, negative = pairs["positive"], pairs["negative"]
        if self.grouped_loss is not None:
            return self.grouped_loss(
                embeddings.reshape(runs * rows, -1),
                positive[:, 0],
                positive[:, 1],
                negative[:, 0],
                negative[:, 1],
                pairs["positive_groups"],
                pairs["negative_groups"],
                runs + 1,  # the last group holds the padding pairs
                **self.params,
            )[:runs]
        if sizes is None:
            raise SiptError(f"the {self.loss.__name__} has no grouped form: give each run's pair counts")
        values, ends = [], np.cumsum(sizes, axis=0)
        for k, (run, (positives, negatives), (p_end, n_end)) in enumerate(zip(embeddings.unbind(0), sizes, ends)):
            pos, neg = positive[p_end - positives : p_end] - k * rows, negative[n_end - negatives : n_end] - k * rows
            values.append(self(ObjectiveInputs(run, pos, neg)))
        return torch.stack(values)


def seeded_head(in_features: int, out_features: int, seed: int = 0) -> nn.Linear:
    """A linear head ``(…, in_features) -> (…, out_features)`` with N(0, 0.02) weights and zero bias
    drawn from ``seed`` (BERT's head initialisation), so a run is reproducible whatever the global
    torch RNG holds."""
    head = nn.Linear(in_features, out_features)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        head.weight.copy_(torch.randn(head.weight.shape, generator=generator) * 0.02)
        head.bias.zero_()
    return head


def build_objectives(
    lambda_si: float, loss: str = "contrastive", loss_params: dict | None = None
) -> list[tuple[float, Objective]]:
    """``[(weight, objective)]`` for ``L_PT = (1 − λ)·L_M + λ·L_SI``, without weight-0 terms
    (λ = 0 is the LM baseline: ``L_SI`` is never computed); ``lambda_si`` in [0, 1], as a
    validated :class:`~sipt_lab.training.train_config.TrainConfig` holds it."""
    terms = [(1.0 - lambda_si, MaskedLM()), (lambda_si, StructureInducing(loss, **(loss_params or {})))]
    return [(weight, objective) for weight, objective in terms if weight > 0]


def combine(
    objectives: list[tuple[float, Objective]], inputs: ObjectiveInputs
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The weighted total and the unweighted terms by name."""
    terms = {objective.name: objective(inputs) for _, objective in objectives}
    total = sum(weight * terms[objective.name] for weight, objective in objectives)
    return total, terms
