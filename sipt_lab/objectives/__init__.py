"""Pre-training objectives and how they combine: ``L_PT = (1 − λ_SI)·L_M + λ_SI·L_SI``.

An objective is an ``nn.Module`` with a ``name`` and two flags saying what the trainer must compute
for it, whose ``forward(ObjectiveInputs)`` returns one scalar loss term. The trainer sums the terms
with weights from :func:`build_objectives` (terms of weight 0 are never computed), and optimises any
parameters the objectives own, so a further objective is one more module in that list: LinkBERT's
document-relation prediction (:mod:`sipt_lab.objectives.relation`), MLSM's concept KL
(:mod:`sipt_lab.objectives.concepts`) and the per-sample baselines' heads
(:mod:`sipt_lab.objectives.sample_heads`) are.

The names below load on first use (PEP 562), so that reading :mod:`sipt_lab.objectives.names`
(which the CLI's parser does) imports no torch.
"""

from sipt_lab.core.exports import lazy_getattr

#: Exported name -> the module of this package that defines it.
_EXPORTS = {
    "MaskedLM": "combined",
    "Objective": "combined",
    "ObjectiveInputs": "combined",
    "StructureInducing": "combined",
    "build_objectives": "combined",
    "combine": "combined",
    "seeded_head": "combined",
    "linear_masked_lm_loss": "mlm",
    "masked_lm_loss": "mlm",
    "STRUCTURE_LOSSES": "structure",
    "check_loss_params": "structure",
    "contrastive_loss": "structure",
    "get_structure_loss": "structure",
    "loss_parameters": "structure",
    "multi_similarity_loss": "structure",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
