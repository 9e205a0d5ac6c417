"""The cells of a domain run: one arm on one seed (:class:`DomainCell`, :class:`ConceptCell` for the
MLSM family), and :func:`domain_cells`, which lists a run's cells and checks its inputs before any training."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.core.options import option
from sipt_lab.grid.model_store import directory_digest
from sipt_lab.jobs.finetune import check_mode
from sipt_lab.jobs.per_sample_labels import method_labels
from sipt_lab.models import encoder_source
from sipt_lab.models.hf import check_checkpoint_dir
from sipt_lab.models.hf_checkpoints import NAMED_CHECKPOINTS, named_checkpoint
from sipt_lab.models.sources import CHAR_INIT, layer_count
from sipt_lab.studies.domain.presets import DomainPreset
from sipt_lab.studies.domain.run_config import DomainRunConfig
from sipt_lab.studies.domain.view import domain_view
from sipt_lab.training import TrainConfig, names
from sipt_lab.training.defaults import PAPER_LAMBDA_SI, layered
from sipt_lab.training.finetune import FinetuneConfig
from sipt_lab.training.methods import ConceptOptions, get_method

BASELINE_ARM = "lm"
RESULT_KEYS = ("arm", "graph", "lambda_si", "seed", "kind", "scores")
#: No MLSM / LSM settings given: the methods' defaults.
DEFAULT_CONCEPTS = ConceptOptions()


@dataclass(frozen=True)
class DomainCell:
    """One arm on one seed: what :func:`domain_cell` computes (hashed by the sweep)."""

    domain: str
    task: str
    arm: str
    graph: str | None
    lambda_si: float
    seed: int
    init: str
    n_samples: int | None
    pretrain: TrainConfig = field(default_factory=TrainConfig)
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)
    mode: str = "both"
    data: str | None = None
    epochs: float | None = None
    protocol: str = option(
        "transductive", omit_default=True, help="inductive or transductive (DomainRunConfig.protocol)"
    )


@dataclass(frozen=True)
class ConceptCell(DomainCell):
    """An arm of the MLSM family (``arm`` mlsm / lsm15 / lsm; no graph): a :class:`DomainCell`
    with its teacher and concept settings.

    Attributes:
        teacher: the model directory (absolute path) that teaches every seed; None: each seed's ``lm`` arm.
        teacher_digest: :func:`~sipt_lab.grid.model_store.directory_digest` of ``teacher``
            when the run was set up (a changed teacher is refused, not used).
        concepts: the dictionary's layer, size and sparsity, and the MLM weight.
    """

    teacher: str | None = None
    teacher_digest: str | None = None
    concepts: ConceptOptions = field(default_factory=ConceptOptions)


#: Further pre-training methods a domain run can add: one arm per graph (``linkbert[graph]``), and
#: the MLSM family, one arm per seed (they do not read ``G_PT``), taught by the seed's lm arm; the
#: per-sample baselines, one arm per seed at the paper's λ, learning from ``TrainConfig.pt_labels``.
GRAPH_METHODS = ("linkbert",)
CONCEPT_METHODS = tuple(name for name in names.METHODS if get_method(name).needs_teacher)
PER_SAMPLE_METHODS = names.PER_SAMPLE_METHODS


def domain_cells(
    domain: str,
    graphs: list[str] | None,
    seeds: int,
    preset: DomainPreset,
    *,
    init: str | None = None,
    task: str | None = None,
    device: str = "auto",
    data_dir: str | Path | None = None,
    methods: tuple[str, ...] = (),
    teacher: str | Path | None = None,
    concepts: ConceptOptions = DEFAULT_CONCEPTS,
    protocol: str = "transductive",
) -> list[DomainCell]:
    """Every cell of a run: per seed, off-the-shelf, LM-only, SIPT for each graph × λ, each of
    ``methods`` in :data:`GRAPH_METHODS` for each graph and each in :data:`CONCEPT_METHODS` once
    (:class:`ConceptCell`, taught by ``teacher``, a model directory, or the seed's lm arm when
    None). ``init`` None is the domain's default warm start; ``data_dir`` the domain's data
    directory (domains with a ``layout``); ``protocol`` whether the fine-tuning train split may be
    pre-trained on (:func:`~sipt_lab.studies.domain.view.domain_view`)."""
    known = GRAPH_METHODS + CONCEPT_METHODS + PER_SAMPLE_METHODS
    unknown_methods = [m for m in methods if m not in known]
    if unknown_methods:
        raise SiptError(
            f"domain runs add the methods {', '.join(known)} (lm and sipt are always run), not {unknown_methods[0]!r}"
        )
    concept_methods = [m for m in dict.fromkeys(methods) if m in CONCEPT_METHODS]
    if teacher is not None and not concept_methods:
        raise SiptError(
            f"a teacher is for the methods {', '.join(CONCEPT_METHODS)}; add one with DomainRunConfig.methods or drop DomainRunConfig.teacher"
        )
    per_sample = [m for m in dict.fromkeys(methods) if m in PER_SAMPLE_METHODS]
    if bool(per_sample) != (preset.pretrain.pt_labels is not None):
        raise ConfigError(
            "TrainConfig.pt_labels",
            f"labels the per-sample baselines ({', '.join(PER_SAMPLE_METHODS)}): give it with one of them in "
            "DomainRunConfig.methods, and neither without the other",
        )
    teacher_ref = {} if teacher is None else _teacher_reference(teacher)
    from sipt_lab.domains import get_domain

    spec = get_domain(domain)
    if concept_methods and concepts.layer is not None:  # refused now, not after the teachers have trained
        # the default teacher, a seed's lm arm, has the warm start's layers (a domain's own builder: unknown)
        if teacher is not None:
            depth = layer_count(teacher)
        else:
            depth = layer_count(encoder_source(init or spec.default_init)) if spec.encoder_source is None else None
        if depth is not None:
            concepts.check_layer(depth)
    if init is not None and spec.encoder_source is None and init != CHAR_INIT:  # a missing checkpoint is refused now
        check_checkpoint_dir(named_checkpoint(init) if init in NAMED_CHECKPOINTS else init)
    if bool(spec.layout) != (data_dir is not None):
        spec.read(data_dir)  # the one-line error: a needed directory missing, or one the domain does not read
    data = None if data_dir is None else str(Path(data_dir).resolve())
    graphs = list(spec.graphs) if not graphs else graphs
    unknown = [g for g in graphs if g not in spec.graphs]
    if unknown:
        raise SiptError(f"domain {domain} has no graph {unknown[0]!r}; choose from {', '.join(spec.graphs)}")
    if seeds < 1:
        raise ConfigError("DomainRunConfig.seeds", f"is {seeds}; use at least 1 (2 or more for t-tests)")
    check_mode(preset.mode, "DomainRunConfig.mode")
    if preset.n_samples is not None and preset.n_samples < 1:
        raise ConfigError("DomainPreset.n_samples", f"must be >= 1 sample per seed, got {preset.n_samples}")
    pretrain_config = dataclasses.replace(preset.pretrain, device=device)
    for lam in preset.lambdas:  # each SIPT arm's config, refused now rather than after the other arms have trained
        dataclasses.replace(pretrain_config, lambda_si=lam)
    finetune_config = dataclasses.replace(preset.finetune, device=device)
    base = dict(
        domain=domain,
        task=task or spec.default_task,
        init=init or spec.default_init,
        n_samples=preset.n_samples,
        pretrain=pretrain_config,
        finetune=finetune_config,
        mode=preset.mode,
        data=data,
        epochs=preset.epochs,
        protocol=protocol,
    )
    for seed in range(seeds) if per_sample else ():  # the labels' file and coverage, refused now, not after hours
        view = domain_view(domain, base["task"], preset.n_samples, seed, data, protocol)
        method_labels(per_sample[0], pretrain_config, view.data.ids, view.pretraining_samples, skip_unknown=True)
    cells = []
    for seed in range(seeds):
        cells.append(DomainCell(arm="off-the-shelf", graph=None, lambda_si=0.0, seed=seed, **base))
        cells.append(DomainCell(arm="lm", graph=None, lambda_si=0.0, seed=seed, **base))
        cells += [
            DomainCell(arm="sipt", graph=g, lambda_si=lam, seed=seed, **base) for g in graphs for lam in preset.lambdas
        ]
        cells += [
            DomainCell(arm=m, graph=g, lambda_si=0.0, seed=seed, **base)
            for m in methods
            if m in GRAPH_METHODS
            for g in graphs
        ]
        cells += [
            ConceptCell(arm=m, graph=None, lambda_si=0.0, seed=seed, concepts=concepts, **teacher_ref, **base)
            for m in concept_methods
        ]
        cells += [DomainCell(arm=m, graph=None, lambda_si=PAPER_LAMBDA_SI, seed=seed, **base) for m in per_sample]
    return cells


def _teacher_reference(teacher: str | Path) -> dict:
    """``teacher`` and ``teacher_digest`` of a :class:`ConceptCell` for a model directory, checked to be one."""
    path = Path(teacher).resolve()
    if not path.is_dir():
        raise SiptError(
            f"teacher {teacher} is not a directory; pass a model directory written by `sipt-lab pretrain` (its model/ folder)"
        )
    if not any((path / name).is_file() for name in ("encoder.pt", "config.json")):
        raise SiptError(
            f"teacher {teacher} is not an encoder (no encoder.pt or config.json); pass a model directory "
            "written by `sipt-lab pretrain` (its model/ folder) or a Hugging Face checkpoint"
        )
    return {"teacher": str(path), "teacher_digest": directory_digest(path)}


def domain_run_cells(config: DomainRunConfig) -> list[DomainCell]:
    """The cells of one ``domain run``: the domain's preset under ``config.preset`` (for its task)
    with the values ``config`` replaces (samples, lambdas, mode; steps, precision and the objective
    layered over its training config as the resolver layers flags,
    :func:`~sipt_lab.training.defaults.layered`; micro-batches), then :func:`domain_cells`."""
    from sipt_lab.domains import get_domain
    from sipt_lab.studies.domain.presets import preset_for
    from sipt_lab.training.train_config import split_batch

    preset = preset_for(config.domain, config.preset, config.task or get_domain(config.domain).default_task)
    changes = {"n_samples": config.samples, "lambdas": config.lambdas, "mode": config.mode}
    preset = dataclasses.replace(preset, **{k: v for k, v in changes.items() if v is not None})
    if config.steps is not None:
        preset = dataclasses.replace(preset, epochs=None)
    objective = dict(config.objective)
    if objective.get("pt_labels") is not None:
        objective["pt_labels"] = str(Path(objective["pt_labels"]).resolve())
    run = {"steps": config.steps, "precision": config.precision, **objective}
    preset = dataclasses.replace(preset, pretrain=layered(preset.pretrain, run))
    if config.grad_accum is not None:
        preset = dataclasses.replace(preset, pretrain=split_batch(preset.pretrain, config.grad_accum))
    check_mode(preset.mode, "DomainRunConfig.mode")
    return domain_cells(
        config.domain,
        list(config.graphs) if config.graphs else None,
        config.seeds,
        preset,
        init=config.init,
        task=config.task,
        device=config.device,
        methods=config.methods,
        data_dir=config.data_dir,
        teacher=config.teacher,
        concepts=ConceptOptions(layer=config.teacher_layer),
        protocol=config.protocol,
    )
