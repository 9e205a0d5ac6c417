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

One rule keeps the defaults in one place: :class:`~sipt_lab.training.train_config.TrainConfig`'s own
defaults *are* the ``char`` row (a ``TrainConfig()`` trains a fresh character encoder the way
``pretrain --init char`` does), and every other row states only how it differs. The command-line
flags of these fields are generated from ``TrainConfig``'s fields and default to None where the
value depends on the init kind; their ``--help`` names each kind's value (:func:`default_help`).
The length of a run is the one difference in kind: ``TrainConfig.steps`` is 1000, while
``pretrain`` without ``--steps`` makes one pass over the samples (``--epochs 1``). The loss's own
parameters (its margins) live in :data:`~sipt_lab.core.names.LOSS_PARAMETERS`; the rows hold only
their changes to them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from sipt_lab.core import names
from sipt_lab.core.errors import SiptError
from sipt_lab.training.train_config import TrainConfig

#: λ_SI of the paper's semi-synthetic SIPT arm (its Methods), which ``simulate`` and the figures keep.
PAPER_LAMBDA_SI = 0.1
#: Kinds of init, each a row of :data:`INIT_DEFAULTS`.
INIT_KINDS = ("char", "fresh", "checkpoint", "graph")


def _default(name: str):
    """:class:`TrainConfig`'s default of field ``name``."""
    return getattr(TrainConfig(), name)


@dataclass(frozen=True)
class InitDefaults:
    """The settings a run of one init kind uses unless told otherwise (fields of
    :class:`~sipt_lab.training.TrainConfig`); a field left out is :class:`TrainConfig`'s default,
    which is the ``char`` row.

    Attributes:
        lr: peak AdamW learning rate.
        schedule, warmup: learning-rate schedule and warm-up fraction of the steps.
        lambda_si: weight of ``L_SI``.
        loss, loss_params: the structure-inducing loss and its parameters (over the loss's own,
            :data:`~sipt_lab.core.names.LOSS_PARAMETERS`).
        pairs: which pairs ``L_SI`` scores.
        mask_replacement: what a masked token becomes.
        head_warmup: steps that fit each new head with the encoder frozen before training (the
            MLM head an init lacks, a method's own head).
        head_lr: the head warm-up's constant learning rate.
    """

    lr: float = _default("lr")
    schedule: str = _default("schedule")
    warmup: float = _default("warmup")
    lambda_si: float = _default("lambda_si")
    loss: str = _default("loss")
    loss_params: dict[str, float] = field(default_factory=lambda: dict(_default("loss_params")))
    pairs: str = _default("pairs")
    mask_replacement: str = _default("mask_replacement")
    head_warmup: int = _default("head_warmup")
    head_lr: float = _default("head_lr")

    def train_options(self) -> dict:
        """These settings as keyword arguments of :class:`~sipt_lab.training.TrainConfig`."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


_INFONCE = dict(names.LOSS_PARAMETERS["infonce"])
#: The defaults per init kind (see the module docstring; measured in ``benchmarks/bench_defaults.py``):
#: ``char`` is :class:`TrainConfig`'s defaults, the other rows say how they differ.
INIT_DEFAULTS: dict[str, InitDefaults] = dict(
    zip(
        INIT_KINDS,
        (
            InitDefaults(),
            InitDefaults(
                lr=1e-3, warmup=0.1, lambda_si=0.1, loss="infonce", loss_params=_INFONCE, mask_replacement="bert"
            ),
            InitDefaults(
                lr=5e-5,
                warmup=0.1,
                lambda_si=0.1,
                loss="infonce",
                loss_params=_INFONCE,
                mask_replacement="bert",
                head_warmup=100,
            ),
            InitDefaults(lr=1e-3, schedule="constant", lambda_si=0.1, loss_params={}, pairs="sampled"),
        ),
        strict=True,
    )
)


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
    default one, with any given parameters over them.

    ```pycon
    >>> from sipt_lab import TrainConfig, train_config
    >>> config = train_config("checkpoint", steps=200, lambda_si=None)
    >>> config.steps, config.lr, config.lambda_si, config.loss, config.head_warmup
    (200, 5e-05, 0.1, 'infonce', 100)
    >>> train_config("char") == TrainConfig()
    True
    >>> train_config("char", loss="multisim").loss_params
    {}

    ```
    """
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
