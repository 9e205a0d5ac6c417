"""Every default of a pre-training run, in one table, and the one function that reads it.

:func:`resolve_train_config` builds the :class:`~sipt_lab.training.train_config.TrainConfig` of a run
from layers, each over the one before:

1. the init kind's row of :data:`INIT_DEFAULTS` (``char``: :class:`TrainConfig`'s own defaults;
   every other row states only how it differs);
2. a preset (:class:`TrainOverrides`: ``simulate``'s per-family training, a study's scale, a
   domain's budget);
3. a config file, then the flags (the CLI merges these two: a flag beats the file);
4. the method's fixed settings (:data:`METHOD_SETTINGS`: ``lm`` is λ_SI = 0, LinkBERT its masking);
5. ``epochs`` turned into ``steps`` once the number of samples is known.

It returns a config validated once (in its ``__post_init__``); lower layers trust it. Every command
and the Python API build their training configs here, so a default changed in this table changes
every run that does not set it, and a run's saved ``config.toml`` (which holds every resolved value)
reproduces that run whatever the table later says. This module imports no torch: the CLI's parser
reads it for ``--help``.

An init is *fresh* (a new character transformer or GIN, every weight random) or a *checkpoint*
(a Hugging Face directory, e.g. all-MiniLM-L6-v2: a warm start). The two want different learning
rates, and a checkpoint without an MLM head (a sentence-transformers directory has none) first fits
the new head with the encoder frozen, so that the head's early, large gradients never reach the
encoder it is meant to read. The README's "Defaults, and what they trade" gives the measurements
behind each value (``benchmarks/bench_defaults.py``).

``L_SI`` always trains the vector the encoder outputs (the one ``embed`` writes and a k-NN reads):
the pooled vector, L2-normalised when the checkpoint's sentence-transformers pipeline normalises.
The loss is chosen to fit that geometry: the character encoder keeps the contrastive loss on its raw
``[CLS]`` vector (margins µ+ = 5 and the loss's µ− = 10, which its scale reaches; the semi-synthetic
experiments keep them, with the paper's λ = 0.1 over hundreds of steps, where a user's short run of a
fresh char encoder needs the structure term's larger share, λ = 0.5), a Hugging Face checkpoint gets
InfoNCE, which compares directions and so fits any checkpoint's scale. A checkpoint whose weights
were never trained (:func:`~sipt_lab.models.hf_checkpoints.is_untrained`) is a fresh init and trains
at a fresh init's rate. The length of a run is the one difference in kind: ``TrainConfig.steps`` is
1000, while ``pretrain`` without ``--steps`` makes one pass over the samples (``--epochs 1``). The
loss's own parameters (its margins) live in :data:`~sipt_lab.objectives.names.LOSS_PARAMETERS`; the rows
hold only their changes to them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.core.options import Overrides
from sipt_lab.models import names as model_names
from sipt_lab.objectives import names as objective_names
from sipt_lab.training import names as training_names
from sipt_lab.training.train_config import MAX_STEPS, TrainConfig, steps_for_epochs

#: λ_SI of the paper's semi-synthetic SIPT arm (its Methods), which ``simulate`` and the figures keep.
PAPER_LAMBDA_SI = 0.1
#: Kinds of init, each a row of :data:`INIT_DEFAULTS`.
INIT_KINDS = ("char", "fresh", "checkpoint", "graph")
#: :class:`TrainConfig`'s fields, in declaration order.
TRAIN_FIELDS = tuple(field.name for field in dataclasses.fields(TrainConfig))
#: :class:`TrainConfig`'s declared defaults: the ``char`` row.
_BASE = TrainConfig()


class TrainOverrides(Overrides):
    """:class:`~sipt_lab.core.options.Overrides` of :class:`TrainConfig` fields: a layer of
    :func:`resolve_train_config` over the ones below it (an init kind's row, a preset, a method's
    fixed settings), checked where it is declared.

    ```pycon
    >>> TrainOverrides(lr=1e-3, pairs="sampled")
    TrainOverrides(lr=0.001, pairs='sampled')
    >>> TrainOverrides(where="preset x", lr=-1.0)
    Traceback (most recent call last):
    ...
    sipt_lab.core.errors.ConfigError: TrainConfig.lr (preset x) must be > 0, got -1.0

    ```
    """

    def __init__(self, where: str = "", **values: Any) -> None:
        super().__init__(TrainConfig, where, **values)

    def __repr__(self) -> str:
        return f"TrainOverrides({', '.join(f'{name}={value!r}' for name, value in self.items())})"

    def __or__(self, other: Mapping[str, Any]) -> TrainOverrides:
        return TrainOverrides(**{**self, **other})


_INFONCE = dict(objective_names.LOSS_PARAMETERS["infonce"])
#: The defaults per init kind (see the module docstring; measured in ``benchmarks/bench_defaults.py``):
#: ``char`` is :class:`TrainConfig`'s own defaults, the other rows say how they differ.
INIT_DEFAULTS: dict[str, TrainOverrides] = dict(
    zip(
        INIT_KINDS,
        (
            TrainOverrides(),
            TrainOverrides(
                lr=1e-3, warmup=0.1, lambda_si=0.1, loss="infonce", loss_params=_INFONCE, mask_replacement="bert"
            ),
            TrainOverrides(
                lr=5e-5,
                warmup=0.1,
                lambda_si=0.1,
                loss="infonce",
                loss_params=_INFONCE,
                mask_replacement="bert",
                head_warmup=100,
            ),
            TrainOverrides(lr=1e-3, schedule="constant", lambda_si=0.1, loss_params={}, pairs="sampled"),
        ),
        strict=True,
    )
)
#: The fields every init kind may set differently: ``pretrain``'s flags of these default to the
#: init kind's value, and ``--help`` names each (:func:`default_help`).
PER_KIND_FIELDS = tuple(
    name for name in TRAIN_FIELDS if name != "loss_params" and any(name in row for row in INIT_DEFAULTS.values())
)

#: What each pre-training method fixes (:data:`~sipt_lab.training.methods.METHODS`), over every
#: other layer: ``lm`` and the MLSM family train no ``L_SI``, LinkBERT masks as BERT did, the
#: same-family baseline scores sampled pairs.
METHOD_SETTINGS: dict[str, TrainOverrides] = dict(
    zip(
        training_names.METHODS,
        (
            TrainOverrides(lambda_si=0.0),
            TrainOverrides(),
            TrainOverrides(lambda_si=0.0, mask_replacement="bert", mask_prob=0.15),
            TrainOverrides(lambda_si=0.0, mask_replacement="mask", mask_prob=0.15),
            TrainOverrides(lambda_si=0.0, mask_replacement="keep", mask_prob=0.15),
            TrainOverrides(lambda_si=0.0, mask_replacement="keep", mask_prob=1.0),
            TrainOverrides(),
            TrainOverrides(pairs="sampled", negatives="uniform"),
        ),
        strict=True,
    )
)
#: Methods whose term is weighted by λ_SI, which must then be > 0 (``L_SI``, or the per-sample term).
WEIGHTED_METHODS = ("sipt", *training_names.PER_SAMPLE_METHODS)


def resolved_train_options(kind: str, *layers: Mapping[str, Any] | None, method: str | None = None) -> dict:
    """Every :class:`TrainConfig` field's value for an init of ``kind`` under ``layers`` (each over
    the ones before; a None layer or a None value sets nothing) and ``method``'s fixed settings
    over them all: the table's part of :func:`resolve_train_config`, without building a config
    (``--print-config`` shows it).

    ``loss_params`` of a layer are merged over those before it, one parameter at a time; an empty
    mapping, or a layer that changes the loss, starts the loss from its own parameters
    (:data:`~sipt_lab.objectives.names.LOSS_PARAMETERS`).
    """
    if kind not in INIT_DEFAULTS:
        raise SiptError(f"unknown init kind {kind!r}; choose one of {', '.join(INIT_KINDS)}")
    base = {name: getattr(_BASE, name) for name in TRAIN_FIELDS} | {"loss_params": dict(_BASE.loss_params)}
    values = _over(base, INIT_DEFAULTS[kind])
    for layer in layers:
        values = _over(values, layer or {})
    return values if method is None else _over(values, _method_settings(method, values["lambda_si"]))


def resolve_train_config(
    kind: str,
    *layers: Mapping[str, Any] | None,
    method: str | None = None,
    epochs: float | None = None,
    n_samples: int | None = None,
) -> TrainConfig:
    """The one :class:`TrainConfig` of a run: :func:`resolved_train_options` of ``kind``,
    ``layers`` and ``method``, with ``steps`` made from ``epochs`` passes over ``n_samples`` when
    ``epochs`` is given (over any layer's ``steps``; see the module docstring).

    ```pycon
    >>> config = resolve_train_config("checkpoint", {"steps": 200, "lambda_si": None})
    >>> config.steps, config.lr, config.lambda_si, config.loss, config.head_warmup
    (200, 5e-05, 0.1, 'infonce', 100)
    >>> resolve_train_config("char", method="lm").lambda_si
    0.0
    >>> resolve_train_config("char", {"batch_size": 32}, epochs=2, n_samples=100).steps
    6

    ```
    """
    values = resolved_train_options(kind, *layers, method=method)
    if epochs is not None:
        if n_samples is None:
            raise SiptError("epochs need the number of samples to become steps; pass n_samples")
        values["steps"] = steps_for_epochs(epochs, n_samples, values["batch_size"], values["grad_accum"])
        if values["steps"] > MAX_STEPS:
            raise ConfigError(
                "PretrainJob.epochs",
                f"{epochs:g} gives {values['steps']:,} steps, more than the {MAX_STEPS:,} a run takes; lower it",
            )
    return TrainConfig(**values)


def layered(config: TrainConfig, *layers: Mapping[str, Any] | None) -> TrainConfig:
    """A resolved ``config`` with more ``layers`` over it, by :func:`resolved_train_options`' rules
    (a None value sets nothing; a new loss starts from its own parameters): a run's changes to a
    preset's config, or another arm of a grid; ``config`` itself when they change nothing."""
    values = {name: getattr(config, name) for name in TRAIN_FIELDS} | {"loss_params": dict(config.loss_params)}
    for layer in layers:
        values = _over(values, layer or {})
    changes = {name: value for name, value in values.items() if getattr(config, name) != value}
    return dataclasses.replace(config, **changes) if changes else config


def method_train_config(method: str, config: TrainConfig) -> TrainConfig:
    """``config`` with ``method``'s fixed settings (:data:`METHOD_SETTINGS`): another arm of a grid
    made from one resolved config; ``config`` itself when it already holds them."""
    return layered(config, _method_settings(method, config.lambda_si))


def train_config(kind: str, **given: Any) -> TrainConfig:
    """:func:`resolve_train_config` of ``kind`` with one layer, the keyword arguments ``given``
    (a None value: the kind's default).

    ```pycon
    >>> from sipt_lab import TrainConfig, train_config
    >>> train_config("char") == TrainConfig()
    True
    >>> train_config("char", loss="multisim").loss_params
    {}

    ```
    """
    return resolve_train_config(kind, given)


def init_kind(init: str) -> str:
    """The kind of an ``--init`` value: ``char``; ``fresh`` for a Hugging Face checkpoint directory
    whose weights were never trained (:func:`~sipt_lab.models.hf_checkpoints.is_untrained`); else ``checkpoint``
    (a named or local checkpoint to warm-start from)."""
    if init == model_names.CHAR_INIT:
        return "char"
    from sipt_lab.models.hf_checkpoints import NAMED_CHECKPOINTS, is_untrained

    return "fresh" if init not in NAMED_CHECKPOINTS and is_untrained(init) else "checkpoint"


def kind_default(kind: str, name: str) -> Any:
    """Field ``name``'s value for an init of ``kind`` when nothing else sets it."""
    return resolved_train_options(kind)[name]


#: How ``--help`` names each init kind, and a group of kinds that share a default.
KIND_HELP = {"char": "--init char", "fresh": "an untrained checkpoint", "checkpoint": "a checkpoint"}
KIND_GROUP_HELP = {("fresh", "checkpoint"): "any checkpoint"}


def default_help(name: str) -> str:
    """``"(default: 0.0005 for --init char, ...)"``: field ``name``'s default per init kind that
    ``pretrain`` offers, for ``--help``; kinds that share a value are named once, together."""
    groups: dict[str, list[str]] = {}
    values = {}
    for kind in KIND_HELP:
        value = kind_default(kind, name)
        groups.setdefault(str(value), []).append(kind)
        values[str(value)] = value
    if len(groups) == 1:
        return f"(default: {next(iter(values.values()))})"
    named = (
        KIND_GROUP_HELP.get(tuple(kinds)) or " or ".join(KIND_HELP[kind] for kind in kinds) for kinds in groups.values()
    )
    return "(default: " + ", ".join(f"{values[key]} for {label}" for key, label in zip(groups, named)) + ")"


def _method_settings(method: str, lambda_si: float) -> TrainOverrides:
    """``method``'s row of :data:`METHOD_SETTINGS`; ConfigError for an unknown method, or one
    weighted by a λ_SI of 0."""
    if method not in METHOD_SETTINGS:
        raise ConfigError(
            "PretrainJob.method", f"{method!r} is unknown; choose one of {', '.join(training_names.METHODS)}"
        )
    if method in WEIGHTED_METHODS and lambda_si == 0:
        raise ConfigError(
            "TrainConfig.lambda_si",
            f"is 0, but method {method} weights its {'L_SI' if method == 'sipt' else 'per-sample'} term by it "
            "(0 is the lm method); set it above 0, e.g. 0.1",
        )
    return METHOD_SETTINGS[method]


def _over(values: dict, layer: Mapping[str, Any]) -> dict:
    """``values`` with ``layer``'s non-None values over them (see :func:`resolved_train_options`)."""
    values = dict(values)
    if layer.get("loss") is not None and layer["loss"] != values["loss"]:
        values["loss_params"] = {}
    for name, value in layer.items():
        if value is None:
            continue
        if name not in values:
            raise ConfigError(f"TrainConfig.{name}", f"is not a field; choose from {', '.join(TRAIN_FIELDS)}")
        values[name] = {**values["loss_params"], **value} if name == "loss_params" and value else value
    return values
