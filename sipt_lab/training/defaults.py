"""What a pre-training run does when its caller does not say: one row per kind of init.

An init is *fresh* (a new character transformer or GIN, every weight random) or a *checkpoint*
(a Hugging Face directory, e.g. all-MiniLM-L6-v2: a warm start). The two want different learning
rates, and a checkpoint without an MLM head (a sentence-transformers directory has none) first fits
the new head with the encoder frozen, so that the head's early, large gradients never reach the
encoder it is meant to read. ``pretrain``, ``lambda-sweep``, ``simulate`` and ``domain run`` all take
their defaults from :data:`INIT_DEFAULTS`; the README's "Defaults, and what they trade" gives the
measurements behind each value (``benchmarks/bench_defaults.py``).

``L_SI`` always trains the vector the encoder outputs (the one ``embed`` writes and a k-NN reads):
the pooled vector, L2-normalised when the checkpoint's sentence-transformers pipeline normalises.
The loss is chosen to fit that geometry: the character encoder keeps the contrastive loss on its raw
``[CLS]`` vector (margins µ+ = 5 and the loss's µ− = 10, which its scale reaches: the semi-synthetic
experiments' setting, which ``simulate`` takes from here, λ aside: the semi-synthetic protocol is the
paper's λ = 0.1 over hundreds of steps, where a user's short run of a fresh char encoder needs the
structure term's larger share, λ = 0.5), a Hugging Face checkpoint gets InfoNCE,
which compares directions and so fits any checkpoint's scale. A checkpoint whose weights were never
trained (:func:`~sipt_lab.models.hf_checkpoints.is_untrained`) is a fresh init and trains at a fresh init's rate.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from sipt_lab.core import names
from sipt_lab.core.errors import SiptError

#: λ_SI of the paper's semi-synthetic SIPT arm (its Methods), which ``simulate`` and the figures keep.
PAPER_LAMBDA_SI = 0.1
#: Kinds of init, each a row of :data:`INIT_DEFAULTS`.
INIT_KINDS = ("char", "fresh", "checkpoint", "graph")


@dataclass(frozen=True)
class InitDefaults:
    """The settings a run of one init kind uses unless told otherwise (fields of
    :class:`~sipt_lab.training.TrainConfig`).

    Attributes:
        lr: peak AdamW learning rate.
        schedule, warmup: learning-rate schedule and warm-up fraction of the steps.
        lambda_si: weight of ``L_SI``.
        loss, loss_params: the structure-inducing loss and its parameters.
        pairs: which pairs ``L_SI`` scores.
        mask_replacement: what a masked token becomes.
        head_warmup: steps that fit a new MLM head with the encoder frozen before training
            (only when the init has no MLM head of its own).
        head_lr: the head warm-up's constant learning rate.
    """

    lr: float
    schedule: str
    warmup: float
    lambda_si: float
    loss: str
    loss_params: dict[str, float] = field(default_factory=dict)
    pairs: str = "batch"
    mask_replacement: str = "bert"
    head_warmup: int = 0
    head_lr: float = 1e-2

    def train_options(self) -> dict:
        """These settings as keyword arguments of :class:`~sipt_lab.training.TrainConfig`."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


#: The defaults per init kind (see the module docstring; measured in ``benchmarks/bench_defaults.py``).
INIT_DEFAULTS: dict[str, InitDefaults] = dict(zip(INIT_KINDS, (
    InitDefaults(lr=5e-4, schedule="linear", warmup=0.0, lambda_si=0.5, loss="contrastive", loss_params={"pos_margin": 5.0},
                 mask_replacement="mask"),
    InitDefaults(lr=1e-3, schedule="linear", warmup=0.1, lambda_si=0.1, loss="infonce", loss_params={"temperature": 0.05}),
    InitDefaults(lr=5e-5, schedule="linear", warmup=0.1, lambda_si=0.1, loss="infonce",
                 loss_params={"temperature": 0.05}, head_warmup=100),
    InitDefaults(lr=1e-3, schedule="constant", warmup=0.0, lambda_si=0.1, loss="contrastive",
                 pairs="sampled", mask_replacement="mask"),
), strict=True))


def init_defaults(kind: str) -> InitDefaults:
    """The row of :data:`INIT_DEFAULTS` for ``kind``."""
    if kind not in INIT_DEFAULTS:
        raise SiptError(f"unknown init kind {kind!r}; choose one of {', '.join(INIT_KINDS)}")
    return INIT_DEFAULTS[kind]


def init_kind(init: str) -> str:
    """The kind of an ``--init`` value: ``char``; ``fresh`` for a Hugging Face checkpoint directory
    whose weights were never trained (:func:`~sipt_lab.models.hf_checkpoints.is_untrained`); else ``checkpoint``
    (a named or local checkpoint to warm-start from)."""
    if init == names.CHAR_INIT:
        return "char"
    from sipt_lab.models.hf_checkpoints import NAMED_CHECKPOINTS, is_untrained

    return "fresh" if init not in NAMED_CHECKPOINTS and is_untrained(init) else "checkpoint"


def train_config(kind: str, **given):
    """A :class:`~sipt_lab.training.TrainConfig` with ``kind``'s defaults for every field ``given``
    leaves out or sets to None. ``loss_params`` are the default loss's only when the loss is the
    default one, with any given parameters over them."""
    from sipt_lab.training.config import TrainConfig

    defaults = init_defaults(kind).train_options()
    chosen = {name: value for name, value in given.items() if value is not None}
    if chosen.get("loss", defaults["loss"]) != defaults["loss"]:
        defaults["loss_params"] = {}
    chosen["loss_params"] = {**defaults["loss_params"], **chosen.get("loss_params", {})}
    return TrainConfig(**{**defaults, **chosen})


def default_help(name: str) -> str:
    """``"(default: 0.0005 for --init char, ...)"``: field ``name``'s default per
    init kind that ``pretrain`` offers, for ``--help``."""
    kinds = {"char": "--init char", "fresh": "an untrained checkpoint", "checkpoint": "a checkpoint"}
    values = {label: getattr(INIT_DEFAULTS[kind], name) for kind, label in kinds.items()}
    if len(set(map(str, values.values()))) == 1:
        return f"(default: {next(iter(values.values()))})"
    return "(default: " + ", ".join(f"{value} for {label}" for label, value in values.items()) + ")"
