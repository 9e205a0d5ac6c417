"""The names of the structure-inducing losses, their parameters and LinkBERT's document relations,
importable without torch.

The CLI's parsers list them (``sipt-lab --help`` stays fast), and the registries of
:mod:`sipt_lab.objectives` are built on them (``dict(zip(NAMES, entries, strict=True))``), so each
list is written once.
"""

#: Structure-inducing losses (:data:`sipt_lab.objectives.structure.STRUCTURE_LOSSES`).
STRUCTURE_LOSSES = ("contrastive", "multisim", "infonce")
#: Each structure-inducing loss's parameters with their defaults: the one place the margins are set
#: (the loss functions of :mod:`sipt_lab.objectives.structure` take their defaults from here; a
#: run's ``loss_params`` override them one key at a time). The original code's: contrastive
#: µ+ = 0, µ− = 10; multi-similarity w+ = w− = 1, t = 0.1; InfoNCE τ = 0.05.
LOSS_PARAMETERS: dict[str, dict[str, float]] = dict(
    zip(
        STRUCTURE_LOSSES,
        (
            {"pos_margin": 0.0, "neg_margin": 10.0},
            {"w_pos": 1.0, "w_neg": 1.0, "t": 0.1},
            {"temperature": 0.05},
        ),
        strict=True,
    )
)
#: LinkBERT's document relations, in the order of its DRP head's classes
#: (:data:`sipt_lab.training.segment_pairs.RELATIONS`).
RELATIONS = ("contiguous", "random", "linked")
