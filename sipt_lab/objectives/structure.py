"""Structure-inducing losses ``L_SI`` over graph pairs.

Both losses take the pair convention of pytorch-metric-learning's ``indices_tuple``: positive pairs
``(a1[i], p[i])`` are edges of ``G_PT``, negative pairs ``(a2[j], n[j])`` are non-edges, all indices
being rows of ``embeddings``. They are written here in plain torch (tests check them against that
library's ``ContrastiveLoss`` / ``MultiSimilarityLoss``); :data:`STRUCTURE_LOSSES` names them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from sipt_lab.core.errors import SiptError
from sipt_lab.objectives import names

PairLoss = Callable[..., torch.Tensor]


def contrastive_loss(
    embeddings: torch.Tensor,
    a1: torch.Tensor,
    p: torch.Tensor,
    a2: torch.Tensor,
    n: torch.Tensor,
    pos_margin: float = names.LOSS_PARAMETERS["contrastive"]["pos_margin"],
    neg_margin: float = names.LOSS_PARAMETERS["contrastive"]["neg_margin"],
) -> torch.Tensor:
    """The paper's contrastive loss on Euclidean distances ``d`` of raw (unnormalised) embeddings.

    ``mean_pos max(d(a1, p) - pos_margin, 0) + mean_neg max(neg_margin - d(a2, n), 0)``; an empty
    pair set contributes 0. Defaults are the original code's (µ+ = 0, µ− = 10).

    Args:
        embeddings: ``(U, H)``.
        a1, p: ``(P,)`` int64 rows of the positive pairs; a2, n: ``(N,)`` rows of the negative pairs.
    """
    pos, neg = _contrastive_hinges(embeddings, a1, p, a2, n, pos_margin, neg_margin)
    return pos.sum() / max(len(pos), 1) + neg.sum() / max(len(neg), 1)


def grouped_contrastive_loss(
    embeddings: torch.Tensor,
    a1: torch.Tensor,
    p: torch.Tensor,
    a2: torch.Tensor,
    n: torch.Tensor,
    positive_groups: torch.Tensor,
    negative_groups: torch.Tensor,
    n_groups: int,
    pos_margin: float = names.LOSS_PARAMETERS["contrastive"]["pos_margin"],
    neg_margin: float = names.LOSS_PARAMETERS["contrastive"]["neg_margin"],
) -> torch.Tensor:
    """:func:`contrastive_loss` of ``n_groups`` pair sets at once (the runs of a batched training,
    their rows side by side in ``embeddings``): ``(n_groups,)``, entry ``g`` the loss of the pairs
    whose ``positive_groups`` / ``negative_groups`` entry is ``g``; one pass instead of one per group.

    Args:
        positive_groups: ``(P,)`` int64 group of each positive pair; negative_groups: ``(N,)``.
    """
    pos, neg = _contrastive_hinges(embeddings, a1, p, a2, n, pos_margin, neg_margin)
    return _group_mean(pos, positive_groups, n_groups) + _group_mean(neg, negative_groups, n_groups)


def _contrastive_hinges(
    embeddings, a1, p, a2, n, pos_margin: float, neg_margin: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(P,)`` positive and ``(N,)`` negative hinge terms of the contrastive loss."""
    z = _at_least_float32(embeddings)
    pos = F.relu(torch.linalg.vector_norm(z[a1] - z[p], dim=1) - pos_margin)
    neg = F.relu(neg_margin - torch.linalg.vector_norm(z[a2] - z[n], dim=1))
    return pos, neg


def _group_mean(values: torch.Tensor, groups: torch.Tensor, n_groups: int) -> torch.Tensor:
    """``(n_groups,)`` mean of ``values`` per group (0 for an empty group)."""
    sums = values.new_zeros(n_groups).index_add(0, groups, values)
    # counted by index_add, not bincount, whose output length reads the largest group off the device
    counts = values.new_zeros(n_groups).index_add(0, groups, torch.ones_like(values))
    return sums / counts.clamp(min=1)


def multi_similarity_loss(
    embeddings: torch.Tensor,
    a1: torch.Tensor,
    p: torch.Tensor,
    a2: torch.Tensor,
    n: torch.Tensor,
    w_pos: float = names.LOSS_PARAMETERS["multisim"]["w_pos"],
    w_neg: float = names.LOSS_PARAMETERS["multisim"]["w_neg"],
    t: float = names.LOSS_PARAMETERS["multisim"]["t"],
) -> torch.Tensor:
    """Multi-similarity loss on cosine similarities ``S`` of L2-normalised embeddings.

    Per anchor ``a``: ``(1/w_pos) log(1 + sum_{p in P(a)} exp(-w_pos (S_ap - t)))
    + (1/w_neg) log(1 + sum_{n in N(a)} exp(w_neg (S_an - t)))``, averaged over the anchors that
    have at least one pair. Defaults are the original code's (w+ = w− = 1, t = 0.1); this equals
    pytorch-metric-learning's ``MultiSimilarityLoss(alpha=w_pos, beta=w_neg, base=t)`` with its
    ``AvgNonZeroReducer``.

    Args: as :func:`contrastive_loss`.
    """
    z = F.normalize(_at_least_float32(embeddings), dim=1)
    rows = len(z)
    pos = _log1p_sum_exp(-w_pos * ((z[a1] * z[p]).sum(1) - t), a1, rows) / w_pos
    neg = _log1p_sum_exp(w_neg * ((z[a2] * z[n]).sum(1) - t), a2, rows) / w_neg
    anchors = torch.zeros(rows, dtype=torch.bool, device=z.device)
    anchors[a1] = True
    anchors[a2] = True
    return (pos + neg)[anchors].sum() / max(int(anchors.sum()), 1)


def infonce_loss(
    embeddings: torch.Tensor,
    a1: torch.Tensor,
    p: torch.Tensor,
    a2: torch.Tensor,
    n: torch.Tensor,
    temperature: float = names.LOSS_PARAMETERS["infonce"]["temperature"],
) -> torch.Tensor:
    """InfoNCE (MultipleNegativesRanking / NT-Xent) on cosine similarities, where the negatives of
    an anchor are only its *non-linked* pairs: a sample linked to the anchor in ``G_PT`` is never
    pushed away as a negative (the false-negative problem of in-batch softmax).

    For each positive pair ``(a, p)``: ``-log(exp(S_ap/τ) / (exp(S_ap/τ) + sum_{(a, n) negative}
    exp(S_an/τ)))``, averaged over the positive pairs; 0 when there are none. Equals
    pytorch-metric-learning's ``NTXentLoss(temperature)`` given the same ``indices_tuple``
    (tests check it). With ``pairs="batch"`` every other sample of the batch is a candidate.

    Args: as :func:`contrastive_loss`; ``temperature`` τ > 0.
    """
    if temperature <= 0:
        raise SiptError(f"infonce temperature is {temperature}; use a positive number such as 0.05")
    if len(a1) == 0:
        return embeddings.sum() * 0.0
    z = F.normalize(_at_least_float32(embeddings), dim=1)
    positive = (z[a1] * z[p]).sum(1) / temperature
    negative = (z[a2] * z[n]).sum(1) / temperature
    # log(sum_n exp(S_an/τ)) per anchor: -inf for an anchor without negatives
    top = torch.full((len(z),), -torch.inf, dtype=z.dtype, device=z.device)
    top = top.scatter_reduce(0, a2, negative.detach(), "amax", include_self=True)
    safe_top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    log_negatives = safe_top + torch.log(torch.zeros_like(top).index_add(0, a2, torch.exp(negative - safe_top[a2])))
    return F.softplus(log_negatives[a1] - positive).mean()


def _at_least_float32(x: torch.Tensor) -> torch.Tensor:
    """Half-precision (autocast) embeddings are promoted; float64 stays float64."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


def _log1p_sum_exp(values: torch.Tensor, groups: torch.Tensor, n_groups: int) -> torch.Tensor:
    """``(n_groups,)``: ``log(1 + sum_{j: groups[j] = g} exp(values[j]))``, stably (0 for empty groups)."""
    top = torch.zeros(n_groups, dtype=values.dtype, device=values.device)
    top = top.scatter_reduce(0, groups, values.detach(), "amax", include_self=True)
    total = torch.exp(-top).index_add(0, groups, torch.exp(values - top[groups]))
    return top + torch.log(total)


#: Registry of structure-inducing losses: name -> pair loss taking ``(embeddings, a1, p, a2, n, **params)``.
STRUCTURE_LOSSES: dict[str, PairLoss] = dict(
    zip(names.STRUCTURE_LOSSES, (contrastive_loss, multi_similarity_loss, infonce_loss), strict=True)
)
#: Losses with a one-pass form over several pair sets (:func:`grouped_contrastive_loss`'s signature);
#: the others are computed once per pair set.
GROUPED_STRUCTURE_LOSSES: dict[str, PairLoss] = {"contrastive": grouped_contrastive_loss}


def loss_parameters(name: str) -> dict[str, float]:
    """The tunable parameters of loss ``name`` with their defaults (:data:`~sipt_lab.objectives.names.LOSS_PARAMETERS`)."""
    get_structure_loss(name)
    return dict(names.LOSS_PARAMETERS[name])


def get_structure_loss(name: str) -> PairLoss:
    if name not in STRUCTURE_LOSSES:
        raise SiptError(f"unknown structure loss {name!r}; choose one of {', '.join(STRUCTURE_LOSSES)}")
    return STRUCTURE_LOSSES[name]


#: Largest Euclidean distance between two L2-normalised vectors.
UNIT_SPHERE_DIAMETER = 2.0


def check_geometry(name: str, params: dict[str, float], normalized: bool) -> None:
    """Raise SiptError when loss ``name`` with ``params`` (over its defaults) cannot be satisfied on
    the embeddings it will see: on L2-normalised vectors distances lie in [0, 2], so a contrastive
    negative margin above 2 keeps every negative pair's hinge active whatever the encoder does."""
    if name != "contrastive" or not normalized:
        return
    margin = {**loss_parameters(name), **params}["neg_margin"]
    if margin > UNIT_SPHERE_DIAMETER:
        raise SiptError(
            f"contrastive neg_margin {margin:g} cannot be met: this encoder's output vectors are L2-normalised, so distances "
            f"lie in [0, {UNIT_SPHERE_DIAMETER:g}]; use a margin in (0, 2] (e.g. neg_margin=1) or the infonce loss"
        )


def check_loss_params(name: str, params: dict[str, float]) -> None:
    """Raise SiptError naming any key of ``params`` that loss ``name`` does not take."""
    known = loss_parameters(name)
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise SiptError(f"loss {name!r} has no parameter(s) {', '.join(unknown)}; it takes {', '.join(known)}")
