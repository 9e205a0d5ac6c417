"""The config of one ``domain run`` (:class:`DomainRunConfig`), validated on construction; its
preset's budget is :mod:`~sipt_lab.studies.domain.presets`. Imports no torch: the CLI's parser
generates ``domain run``'s flags from its fields."""

from __future__ import annotations

from dataclasses import dataclass, field

from sipt_lab.core.options import option, validate
from sipt_lab.grid import EXECUTORS
from sipt_lab.jobs import names as job_names
from sipt_lab.studies import names as study_names
from sipt_lab.training import names as training_names


@dataclass(frozen=True)
class DomainRunConfig:
    """One ``sipt-lab domain run``: LM-only vs SIPT on a registered domain, judged by fine-tuning.
    Fields left None take the domain's or the preset's value
    (:func:`~sipt_lab.studies.domain.cells.domain_run_cells` resolves them).

    Attributes:
        domain: a registered domain (:data:`sipt_lab.domains.DOMAINS`).
        graphs: its pre-training graphs to compare; task: its fine-tuning task.
        seeds: repetitions; preset: the budget (:data:`~sipt_lab.studies.names.DOMAIN_PRESETS`).
        samples, steps, lambdas, mode, grad_accum, precision: the preset's values, replaced
            (``precision``: pre-training's autocast, :data:`~sipt_lab.training.names.PRECISIONS`).
        methods: further pre-training methods; teacher, teacher_layer: the MLSM / LSM teacher.
        init: the warm start; data_dir: the domain's data directory; device: where to train;
        executor: how cells run (:data:`~sipt_lab.grid.EXECUTORS`).
        protocol: for a task without published splits, ``transductive`` (the fine-tuning train
            split is pre-trained on, validation and test are not) or ``inductive``
            (:data:`~sipt_lab.studies.domain.view.INDUCTIVE_PRETRAIN_SHARE` of the labelled
            samples, with the unlabelled ones, are pre-trained on; the splits are drawn from the
            rest, never seen). A task with published splits is inductive either way. Left out of
            the saved config while transductive.
        objective: :class:`TrainConfig` fields that define the objective (loss, its parameters,
            pairs, negatives, masking, the per-sample baselines' labels), over the preset's.
    """

    domain: str = option(help="domain, e.g. wiki", flag="domain", metavar="NAME", nonempty=True)
    graphs: tuple[str, ...] | None = option(
        None, help="pre-training graphs", metavar="G", default_help="all of the domain's"
    )
    task: str | None = option(None, help="fine-tuning task", default_help="the domain's")
    seeds: int = option(3, help="repetitions", range=(1, None), metavar="K")
    preset: str = option(
        "cpu", choices=study_names.DOMAIN_PRESETS, help="budget: cpu (a CPU run) or full (the paper's scale, for a GPU)"
    )
    samples: int | None = option(
        None, help="samples per seed", range=(1, None), metavar="N", default_help="the preset's"
    )
    steps: int | None = option(
        None, help="pre-training steps", range=(1, None), metavar="N", default_help="the preset's"
    )
    lambdas: tuple[float, ...] | None = option(
        None,
        help="SIPT lambda grid, chosen by validation link retrieval",
        range=(0.0, 1.0),
        metavar="L",
        default_help="the preset's",
    )
    mode: str | None = option(None, help=" | ".join(job_names.FINETUNE_MODES), default_help="the preset's")
    methods: tuple[str, ...] = option(
        (),
        metavar="NAME",
        help="further pre-training methods (lm and sipt always run): linkbert, one arm per "
        "graph; mlsm, lsm15, lsm, one arm per seed, taught by that seed's lm arm or --teacher; "
        "the per-sample baselines multitask, same-family, one arm per seed at lambda 0.1, on --pt-labels",
    )
    teacher: str | None = option(
        None,
        nonempty=True,
        metavar="DIR",
        help="MLSM / LSM teacher for every seed: a model directory with the run's tokenizer",
        default_help="each seed's lm arm",
    )
    teacher_layer: int | None = option(
        None,
        range=(0, None),
        metavar="L",
        help="teacher layer whose hidden states are coded (0 = embeddings; default: the last)",
    )
    init: str | None = option(
        None, nonempty=True, help="warm start: char, minilm, gin or a model directory", default_help="the domain's"
    )
    data_dir: str | None = option(
        None,
        flag="--data",
        nonempty=True,
        metavar="DIR",
        help="the domain's data directory (proteins, abstracts, networks; layouts in "
        "docs/domains.md, `sipt-lab data fetch` downloads them)",
    )
    device: str = option("auto", help="auto, cpu or cuda")
    grad_accum: int | None = option(
        None,
        range=(1, None),
        metavar="K",
        help="split each pre-training step's batch into K micro-batches (the same effective "
        "batch in less GPU memory; default: the preset's)",
    )
    precision: str | None = option(
        None,
        choices=training_names.PRECISIONS,
        help="pre-training autocast: auto (bf16 on a GPU that has it, else fp32), fp32, bf16, fp16; "
        "fp32 is faster for small encoders such as MiniLM on a GPU",
        default_help="the preset's",
    )
    executor: str = option("local", help=f"how cells run: {', '.join(EXECUTORS)}")
    protocol: str = option(
        "transductive",
        choices=study_names.STUDY_PROTOCOLS,
        omit_default=True,
        help="for a task without published splits: transductive = the fine-tuning train split is pre-training "
        "text too (validation and test never are); inductive = no fine-tuning split is pre-trained on",
    )
    objective: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate(self)
