"""``sipt-lab domain run``: LM-only vs SIPT on a real domain, judged by fine-tuning on held-out samples.

Per seed, the domain's samples (all, or a ``n_samples`` slice taken by snowball sampling over the
domain's first graph, which keeps its local density) are split 80/10/10 over the task's labelled
samples. Validation and test samples are dropped from pre-training altogether: neither their text
nor their links are seen. A task with published splits (TAPE's, SciBERT's: samples outside the
pre-training corpus) keeps them: pre-training then reads the corpus only, less a random 10 % of its
linked samples whose links choose ``λ`` (the slice keeps up to ``n_samples`` of the task's samples
besides the corpus snowball). From one warm start (``init``, default the domain's) the arms are

* ``off-the-shelf``: the warm start as it is;
* ``lm``: continued LM pre-training on the pre-training samples (``λ = 0``);
* ``sipt``: LM + ``λ·L_SI`` over each named graph, for every ``λ`` of a small grid, reported at
  the paper's ``λ = 0.1`` (arm ``sipt[graph]``) and, for a grid of several values, at the ``λ``
  whose embeddings best retrieve the validation samples' links (MRR), which pre-training never
  saw, so that ``λ`` is chosen without the fine-tuning labels as the paper chose it (arm
  ``sipt[graph, chosen λ]``);
* further methods (``methods``): ``linkbert`` once per graph (arm ``linkbert[graph]``: it reads
  ``G_PT``'s links), and the MLSM family ``mlsm``, ``lsm15``, ``lsm`` once per seed (arms named
  by the method: they never read ``G_PT``), each learning from a teacher.

The MLSM family's teacher is the same seed's ``lm`` arm, or one ``teacher`` model directory for
every seed. The ``lm`` arms are trained first, as cells of a model store in ``out/teachers``
(:mod:`~sipt_lab.grid.model_store`: one run_grid cell per lm configuration, the encoder
saved beside its result with a digest of its files); then the grid runs, and the ``lm`` cells
load their encoder from the store instead of training it while the MLSM cells load it as their
teacher. So a teacher is trained once, whichever executor runs the cells (serial, local processes,
slurm), before any cell that reads it; a resumed run skips it; and every arm of a seed reads the
same files (a store entry whose files changed is rebuilt, a changed ``teacher`` directory is an
error). Runs without the MLSM family train the ``lm`` arm inside its cell and store nothing.

Each arm is scored by a linear probe on frozen embeddings and/or full fine-tuning on the train
split, evaluated on the test split; SIPT is compared with LM-only (and off-the-shelf) as relative
error reduction with a paired t-test over seeds, next to the local consistency of the task over
each graph, Theorem 1's prediction of where SIPT can help. Every (arm, graph, λ, seed) is one
resumable :func:`~sipt_lab.grid.runner.run_grid` cell.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import torch
import torch.distributed as dist

from sipt_lab.core import names
from sipt_lab.core.config import config_hash
from sipt_lab.training.defaults import train_config
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.evaluation import link_retrieval_metrics
from sipt_lab.evaluation.comparison import Comparison, compare_errors, format_comparison_table, write_comparison_csv
from sipt_lab.data.splits import link_queries, pretraining_graph, random_splits
from sipt_lab.data.tasks import get_task_kind
from sipt_lab.experiments.finetune_job import check_mode, probe_encoder
from sipt_lab.grid.model_store import (STORE_KEYS, directory_digest, drop_damaged, load_model, model_dir, save_model,
                                              stored_digest)
from sipt_lab.grid.runner import read_result, run_grid
from sipt_lab.core.fileio import write_json_atomic
from sipt_lab.graphs.sampling import snowball_sample
from sipt_lab.training.methods import ConceptOptions, Teacher, get_method, method_recipe, method_train_config
from sipt_lab.models import encoder_source
from sipt_lab.models.hf_checkpoints import NAMED_CHECKPOINTS, check_checkpoint_dir, named_checkpoint
from sipt_lab.models.sources import CHAR_INIT, layer_count
from sipt_lab.viz.plots import labelled_errorbars
from sipt_lab.core.stats import mean_sd
from sipt_lab.training import TrainConfig, embed, pretrain, steps_for_epochs
from sipt_lab.training.runtime import resolve_device
from sipt_lab.training.finetune import FinetuneConfig, finetune

BASELINE_ARM = "lm"
RESULT_KEYS = ("arm", "graph", "lambda_si", "seed", "kind", "scores")


@dataclass(frozen=True)
class DomainPreset:
    """The budget of a domain run.

    Attributes:
        n_samples: samples per seed (a snowball slice), None for all.
        pretrain: the trainer's settings (``steps``, ``batch_size``, ``lr``, ``max_len`` ...).
        finetune: full fine-tuning's settings.
        lambdas: the SIPT ``λ`` grid.
        mode: a :data:`~sipt_lab.experiments.finetune_job.MODES` name.
        epochs: when set, pre-training runs this many passes over the pre-training samples
            (``pretrain.steps`` is then replaced, :func:`~sipt_lab.training.steps_for_epochs`).
    """

    n_samples: int | None
    pretrain: TrainConfig
    finetune: FinetuneConfig
    lambdas: tuple[float, ...]
    mode: str
    epochs: float | None = None


#: ``cpu``: what 2 CPU cores finish in about half an hour with MiniLM (benchmarks/RESULTS.md);
#: ``full``: the paper's scale for a GPU. The objective (loss, λ, head warm-up) is a checkpoint's
#: default (:data:`sipt_lab.training.defaults.INIT_DEFAULTS`); the presets set the budget.
PRESETS: dict[str, DomainPreset] = dict(zip(names.DOMAIN_PRESETS, (
    DomainPreset(
        n_samples=1000,
        pretrain=train_config("checkpoint", steps=40, batch_size=16, lr=1e-4, max_len=32, log_every=5),
        finetune=FinetuneConfig(lrs=(1e-4,), epochs=2, patience=1, batch_size=16, max_len=32),
        lambdas=(0.1,),
        mode="both",
    ),
    DomainPreset(
        n_samples=None,
        pretrain=train_config("checkpoint", steps=2000, batch_size=64, max_len=128, checkpoint_every=500),
        finetune=FinetuneConfig(lrs=(2e-5, 5e-5, 1e-4), epochs=3, patience=1, batch_size=32, max_len=128),
        lambdas=(0.05, 0.1, 0.3),
        mode="both",
    ),
), strict=True))


#: Per-domain presets that replace :data:`PRESETS` entries, keyed ``(domain, preset)``. ``full`` follows
#: the paper's Methods: PROTEINS and ABSTRACTS warm-start a 12-layer BERT (TAPE's, SciBERT's: pass it
#: as ``--init DIR``) and continue for 1 and 4 epochs at 512 tokens, λ chosen by link retrieval over
#: {0.05, 0.1, 0.3}; SciBERT's fine-tuning grid (lr 5e-6 .. 5e-5, batch 32, no early stopping);
#: NETWORKS trains the GIN from scratch with batch 1024 and lr 0.01 (Hu et al.'s attribute masking,
#: scaled), λ = 0.1, and fine-tunes as Hu et al. (lr 1e-3, batch 32). bf16 autocast on a GPU that has
#: it (precision ``auto``). Batch sizes are global: under torchrun each of K GPUs encodes 1/K of them.
DOMAIN_PRESETS: dict[tuple[str, str], DomainPreset] = {
    ("proteins", "full"): DomainPreset(
        n_samples=None,
        pretrain=train_config("checkpoint", batch_size=64, lr=2e-5, warmup=0.05, max_len=512, checkpoint_every=1000, log_every=100),
        finetune=FinetuneConfig(lrs=(1e-5, 5e-5, 1e-4), epochs=10, patience=2, batch_size=32, max_len=512),
        lambdas=(0.05, 0.1, 0.3), mode="both", epochs=1.0),
    ("abstracts", "full"): DomainPreset(
        n_samples=None,
        pretrain=train_config("checkpoint", batch_size=64, lr=2e-5, warmup=0.05, max_len=512, checkpoint_every=1000, log_every=100),
        finetune=FinetuneConfig(lrs=(5e-6, 1e-5, 2e-5, 5e-5), epochs=4, patience=4, batch_size=32, max_len=512),
        lambdas=(0.05, 0.1, 0.3), mode="both", epochs=4.0),
    ("networks", "cpu"): DomainPreset(
        n_samples=600,
        pretrain=train_config("graph", steps=60, batch_size=64, log_every=10),
        finetune=FinetuneConfig(lrs=(1e-3,), epochs=5, patience=2, batch_size=32),
        lambdas=(0.1,), mode="both"),
    ("networks", "full"): DomainPreset(
        n_samples=None,
        pretrain=train_config("graph", batch_size=1024, lr=1e-2, checkpoint_every=500, log_every=50),
        finetune=FinetuneConfig(lrs=(1e-3,), epochs=50, patience=10, batch_size=32),
        lambdas=(0.1,), mode="both", epochs=100.0),
}


def preset_for(domain: str, name: str) -> DomainPreset:
    """The preset ``name`` (a :data:`PRESETS` key) for ``domain``: its :data:`DOMAIN_PRESETS` entry if any."""
    if name not in PRESETS:
        raise SiptError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
    return DOMAIN_PRESETS.get((domain, name), PRESETS[name])


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
#: the MLSM family, one arm per seed (they do not read ``G_PT``), taught by the seed's lm arm.
GRAPH_METHODS = ("linkbert",)
CONCEPT_METHODS = tuple(name for name in names.METHODS if get_method(name).needs_teacher)
#: Where :func:`run_domain` keeps the lm arms that teach the MLSM family (a model store).
TEACHERS_DIR = "teachers"


def domain_cells(domain: str, graphs: list[str] | None, seeds: int, preset: DomainPreset, *, init: str | None = None,
                 task: str | None = None, device: str = "auto", data_dir: str | Path | None = None,
                 methods: tuple[str, ...] = (), teacher: str | Path | None = None,
                 concepts: ConceptOptions = ConceptOptions()) -> list[DomainCell]:
    """Every cell of a run: per seed, off-the-shelf, LM-only, SIPT for each graph × λ, each of
    ``methods`` in :data:`GRAPH_METHODS` for each graph and each in :data:`CONCEPT_METHODS` once
    (:class:`ConceptCell`, taught by ``teacher``, a model directory, or the seed's lm arm when
    None). ``init`` None is the domain's default warm start; ``data_dir`` the domain's data
    directory (domains with a ``layout``)."""
    known = GRAPH_METHODS + CONCEPT_METHODS
    unknown_methods = [m for m in methods if m not in known]
    if unknown_methods:
        raise SiptError(f"domain runs add the methods {', '.join(known)} (lm and sipt are always run), "
                        f"not {unknown_methods[0]!r}")
    concept_methods = [m for m in dict.fromkeys(methods) if m in CONCEPT_METHODS]
    if teacher is not None and not concept_methods:
        raise SiptError(f"a teacher is for the methods {', '.join(CONCEPT_METHODS)}; add one with --methods or drop --teacher")
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
        raise SiptError(f"--seeds is {seeds}; use at least 1 (2 or more for t-tests)")
    check_mode(preset.mode)
    if preset.n_samples is not None and preset.n_samples < 1:
        raise ConfigError("DomainPreset.n_samples", f"must be >= 1 sample per seed, got {preset.n_samples}")
    pretrain_config = dataclasses.replace(preset.pretrain, device=device)
    for lam in preset.lambdas:  # each SIPT arm's config, refused now rather than after the other arms have trained
        dataclasses.replace(pretrain_config, lambda_si=lam)
    finetune_config = dataclasses.replace(preset.finetune, device=device)
    base = dict(domain=domain, task=task or spec.default_task, init=init or spec.default_init, n_samples=preset.n_samples,
                pretrain=pretrain_config, finetune=finetune_config, mode=preset.mode, data=data, epochs=preset.epochs)
    cells = []
    for seed in range(seeds):
        cells.append(DomainCell(arm="off-the-shelf", graph=None, lambda_si=0.0, seed=seed, **base))
        cells.append(DomainCell(arm="lm", graph=None, lambda_si=0.0, seed=seed, **base))
        cells += [DomainCell(arm="sipt", graph=g, lambda_si=lam, seed=seed, **base) for g in graphs for lam in preset.lambdas]
        cells += [DomainCell(arm=m, graph=g, lambda_si=0.0, seed=seed, **base) for m in methods if m in GRAPH_METHODS for g in graphs]
        cells += [ConceptCell(arm=m, graph=None, lambda_si=0.0, seed=seed, concepts=concepts, **teacher_ref, **base)
                  for m in concept_methods]
    return cells


def _teacher_reference(teacher: str | Path) -> dict:
    """``teacher`` and ``teacher_digest`` of a :class:`ConceptCell` for a model directory, checked to be one."""
    path = Path(teacher).resolve()
    if not path.is_dir():
        raise SiptError(f"teacher {teacher} is not a directory; pass a model directory written by `sipt-lab pretrain` (its model/ folder)")
    if not any((path / name).is_file() for name in ("encoder.pt", "config.json")):
        raise SiptError(f"teacher {teacher} is not an encoder (no encoder.pt or config.json); pass a model directory "
                        "written by `sipt-lab pretrain` (its model/ folder) or a Hugging Face checkpoint")
    return {"teacher": str(path), "teacher_digest": directory_digest(path)}


def teacher_cell(cell: DomainCell) -> DomainCell:
    """The ``lm`` cell of ``cell``'s seed (same data, warm start and budget): the MLSM family's default teacher."""
    common = {f.name: getattr(cell, f.name) for f in dataclasses.fields(DomainCell)}
    return DomainCell(**{**common, "arm": "lm", "graph": None, "lambda_si": 0.0})


def stored_teachers(cells: list[DomainCell]) -> list[DomainCell]:
    """The lm cells whose encoders teach ``cells``' MLSM arms (those without an explicit teacher)."""
    teachers = {}
    for cell in cells:
        if isinstance(cell, ConceptCell) and cell.teacher is None:
            lm = teacher_cell(cell)
            teachers.setdefault(config_hash(lm), lm)
    return list(teachers.values())


@dataclass(frozen=True)
class DomainView:
    """One seed's slice of a domain: ``data`` (renumbered samples), its task, splits, the samples
    pre-training may see (``(m,)`` sorted: all but validation and test, or for published splits the
    corpus less the link queries) and ``link_queries`` ``(q,)``, the samples whose ``G_PT`` links
    (unseen in pre-training) choose ``λ``."""

    data: Any
    task: Any
    splits: Any
    pretraining_samples: np.ndarray
    link_queries: np.ndarray


#: Share of a corpus's linked samples held out of pre-training to choose λ when the task has published splits.
LINK_QUERY_SHARE = 0.1


@functools.lru_cache(maxsize=4)
def domain_view(domain: str, task: str, n_samples: int | None, seed: int, data_dir: str | None = None) -> DomainView:
    """The slice of ``domain`` that every arm of ``seed`` shares (cached per process)."""
    from sipt_lab.domains import get_domain, subset

    spec = get_domain(domain)
    data = spec.read(data_dir)
    if task not in data.tasks:
        raise SiptError(f"domain {domain} has no task {task!r}; choose one of {', '.join(data.tasks)}")
    if n_samples is not None and n_samples < len(data.ids):
        data = subset(data, _slice(data, next(iter(spec.graphs.values()))(data, 0), task, n_samples, seed))
    everything = np.arange(len(data.ids))
    if task not in data.splits:
        splits = random_splits(data.tasks[task].samples, seed=seed)
        return DomainView(data, data.tasks[task], splits, np.setdiff1d(everything, splits.held_out), splits.validation)
    corpus = np.setdiff1d(everything, _published_samples(data))
    queries = link_queries(spec.graphs[next(iter(spec.graphs))](data, 0), LINK_QUERY_SHARE, seed, among=corpus)
    return DomainView(data, data.tasks[task], data.splits[task], np.setdiff1d(corpus, queries), queries)


def _published_samples(data) -> np.ndarray:
    """``(k,)`` sorted samples of every task with published splits (not pre-training samples)."""
    parts = [part for splits in data.splits.values() for part in (splits.train, splits.validation, splits.test)]
    return np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)


def _slice(data, graph, task: str, n_samples: int, seed: int) -> np.ndarray:
    """``(k,)`` sorted samples of a seed's slice: a snowball sample of ``n_samples`` over ``graph``, or
    for a task with published splits a snowball of the corpus plus up to ``n_samples`` of the task's samples."""
    if task not in data.splits:
        return snowball_sample(graph, n_samples, seed)
    published = _published_samples(data)
    corpus = np.setdiff1d(np.arange(len(data.ids)), published)
    kept = corpus[snowball_sample(graph.subgraph(corpus), min(n_samples, corpus.size), seed)]
    labelled = data.tasks[task].samples
    chosen = np.random.default_rng([seed, 1]).choice(labelled, min(n_samples, labelled.size), replace=False)
    return np.union1d(kept, chosen)


def domain_cell(cell: DomainCell, teachers: str | None = None) -> dict:
    """Pre-train one arm (unless off the shelf), then score it: probe / full fine-tuning on the
    test split, and for SIPT the validation samples' link retrieval and the graph's summary.
    ``teachers``: the run's store of lm arms (:data:`TEACHERS_DIR`) when it has MLSM arms: the
    ``lm`` cell then loads its stored encoder, an MLSM cell its teacher, from there."""
    from sipt_lab.domains import summarize_graph

    start = time.perf_counter()
    view = domain_view(cell.domain, cell.task, cell.n_samples, cell.seed, cell.data)
    texts = list(view.data.samples)
    result = {"arm": cell.arm, "graph": cell.graph, "lambda_si": cell.lambda_si, "seed": cell.seed, "kind": view.task.kind,
              "n_samples": len(texts), "sizes": {n: int(len(getattr(view.splits, n))) for n in ("train", "validation", "test")}}
    graph = None
    if cell.arm == "off-the-shelf":
        source = _encoder_source(cell, view.data)
        tokenizer = source.tokenizer([texts[i] for i in view.pretraining_samples], cell.pretrain.max_len)
        with torch.random.fork_rng(devices=[]):  # the warm start pre-training begins from (a random init is seeded as there)
            torch.manual_seed(cell.seed)
            encoder = source.encoder(tokenizer)[0]
    elif _stored(cell, teachers):
        stored = read_result(model_dir(teachers, cell).parent, STORE_KEYS)
        encoder, tokenizer = _load_teacher(cell, teachers)
        result |= {"pretrain_final": stored["pretrain_final"], "teacher_digest": stored["digest"]}
    else:
        teacher = _load_teacher(cell, teachers) if isinstance(cell, ConceptCell) else None
        graph, trained = pretrain_arm(cell, None if teacher is None else Teacher(*teacher))
        encoder, tokenizer = trained.encoder, trained.tokenizer
        result["pretrain_final"] = {name: float(values[-1]) for name, values in trained.history.items()}
        if "concepts" in trained.objectives:
            result["concepts"] = dict(trained.objectives["concepts"].targets.stats)
            result["teacher_digest"] = cell.teacher_digest or stored_digest(teachers, teacher_cell(cell))
    vectors = embed(encoder, tokenizer, texts, device=cell.finetune.device)
    parts = check_mode(cell.mode)
    scores = {}
    if "probe" in parts:
        scores["probe"] = probe_encoder(encoder, tokenizer, texts, view.task, view.splits, cell.finetune.device, vectors)
    if "full" in parts:
        def load():
            return copy.deepcopy(encoder).train(), tokenizer
        scores["full"] = finetune(load, texts, view.task, view.splits, cell.finetune, cell.seed).test
    result["scores"] = scores
    if cell.graph is not None:
        result["graph_summary"] = dataclasses.asdict(summarize_graph(graph, view.task))
        result["validation_links"] = link_retrieval_metrics(vectors, graph, queries=view.link_queries)
    result["seconds"] = time.perf_counter() - start
    return result


def _stored(cell: DomainCell, teachers: str | None) -> bool:
    """Whether ``cell`` is an lm arm whose encoder the run's teacher store holds (trained there)."""
    return (teachers is not None and cell.arm == BASELINE_ARM and type(cell) is DomainCell
            and stored_digest(teachers, cell) is not None)


def _load_teacher(cell: DomainCell, teachers: str | None):
    """``(encoder, tokenizer)``: the stored lm arm ``cell`` is, or the teacher of the MLSM cell ``cell``,
    on the cell's device, its files checked against their digest."""
    device = resolve_device(cell.pretrain.device)
    if isinstance(cell, ConceptCell) and cell.teacher is not None:
        return load_model(cell.teacher, cell.teacher_digest, device)
    if teachers is None:
        raise SiptError(f"arm {cell.arm} needs the run's teacher store; run it through run_domain")
    lm = teacher_cell(cell)
    digest = stored_digest(teachers, lm)
    if digest is None:
        raise SiptError(f"the lm arm teaching {cell.arm} (seed {cell.seed}) is not in {teachers}; "
                        "re-run the command to train it")
    return load_model(model_dir(teachers, lm), digest, device)


def train_teacher(cell: DomainCell, teachers: str) -> dict:
    """A cell of the teacher store: pre-train the lm arm ``cell`` and save it beside its result."""
    _, trained = pretrain_arm(cell)
    saved = save_model(trained.encoder, trained.tokenizer, model_dir(teachers, cell))
    return {**saved, "pretrain_final": {name: float(values[-1]) for name, values in trained.history.items()}}


def pretrain_arm(cell: DomainCell, teacher: Teacher | None = None):
    """``(G_PT, PretrainResult)``: the LM-only, SIPT or further method's pre-training of ``cell``
    (not off the shelf); ``teacher`` the MLSM family's."""
    from sipt_lab.domains import build_graph, get_domain

    view = domain_view(cell.domain, cell.task, cell.n_samples, cell.seed, cell.data)
    spec = get_domain(cell.domain)
    source = _encoder_source(cell, view.data)
    graph = build_graph(spec, cell.graph or next(iter(spec.graphs)), view.data, cell.seed, fit_on=view.pretraining_samples)
    seen = pretraining_graph(graph, view.splits).subgraph(view.pretraining_samples)
    train = dataclasses.replace(cell.pretrain, lambda_si=cell.lambda_si, seed=cell.seed)
    if cell.epochs is not None:
        train = dataclasses.replace(train, steps=steps_for_epochs(cell.epochs, len(view.pretraining_samples),
                                                                  train.batch_size, train.grad_accum))
    method = cell.arm if cell.arm in GRAPH_METHODS + CONCEPT_METHODS else None
    recipe = None
    if method is not None:
        train = method_train_config(method, train)
        recipe = method_recipe(method, teacher, cell.concepts) if isinstance(cell, ConceptCell) else method_recipe(method)
    samples = view.data.samples
    return graph, pretrain([samples[i] for i in view.pretraining_samples], seen, train, source, progress=False, method=recipe)


def _encoder_source(cell: DomainCell, data):
    """The cell's warm start: the domain's own source builder when it has one (the GIN), else ``--init``'s."""
    from sipt_lab.domains import get_domain

    spec = get_domain(cell.domain)
    return spec.encoder_source(cell.init, data) if spec.encoder_source is not None else encoder_source(cell.init)


def run_domain(cells: list[DomainCell], out: str | Path, *, executor: str = "local", progress: bool = True) -> dict | None:
    """Run the cells (resumable, in ``out/cells``; when they include MLSM arms taught by their
    seed's lm arm, those lm arms first, into the store ``out/teachers``) and write ``summary.json``,
    ``comparison.csv`` and ``arms.csv``; returns the summary.

    Under ``torchrun`` (``WORLD_SIZE`` > 1) every process takes part in each cell's data-parallel
    pre-training, one cell after another (``executor`` is ignored): rank 0 runs the grid and writes
    everything, the other ranks pre-train the same cells with it and return None.
    """
    out = Path(out)
    lm_teachers = stored_teachers(cells)
    teachers = str((out / TEACHERS_DIR).resolve()) if lm_teachers else None
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        from sipt_lab.training.runtime import distributed_context

        place = distributed_context(resolve_device(cells[0].pretrain.device).type)
        if place.is_main and teachers:
            drop_damaged(teachers, lm_teachers)
        dist.barrier()
        pending_teachers = [c for c in lm_teachers if stored_digest(teachers, c) is None]
        pending = [cell for cell in cells if read_result(out / "cells" / config_hash(cell), RESULT_KEYS) is None]
        dist.barrier()  # every rank has read which cells are finished before rank 0 writes more
        if not place.is_main:
            for cell in pending_teachers:
                pretrain_arm(cell)
            dist.barrier()  # rank 0 has stored the teachers
            for cell in pending:
                if cell.arm != "off-the-shelf" and not _stored(cell, teachers):
                    teacher = _load_teacher(cell, teachers) if isinstance(cell, ConceptCell) else None
                    pretrain_arm(cell, None if teacher is None else Teacher(*teacher))
            return None
        executor = "serial"
    if teachers:
        if not distributed:
            drop_damaged(teachers, lm_teachers)
        run_grid(functools.partial(train_teacher, teachers=teachers), lm_teachers, teachers, executor=executor,
                 progress=progress, required_keys=STORE_KEYS)
    if distributed:
        dist.barrier()
    results = run_grid(functools.partial(domain_cell, teachers=teachers), cells, out / "cells", executor=executor,
                       progress=progress, required_keys=RESULT_KEYS)
    summary = summarize_domain([r.result for r in results], cells[0])
    write_json_atomic(out / "summary.json", summary)
    write_comparison_csv(out / "comparison.csv", [Comparison(**c) for c in summary["comparisons"]])
    plot_rre_vs_lc(summary, out / "rre_vs_lc")
    return summary


def plot_rre_vs_lc(summary: dict, stem: str | Path) -> list[Path]:
    """Theorem 1 in a real domain: SIPT's relative error reduction over LM-only (mean ± sd over
    seeds, one series per evaluation) against the task's local consistency over each graph, and the
    MLSM family's (which reads no graph) as levels across LC, from the first evaluation that has
    them; no figure (``[]``) when no graph has an LC for the task."""
    sipt_arms = [name for name, entry in summary["arms"].items() if entry.get("local_consistency") is not None]
    chosen = [name for name in sipt_arms if "chosen" in name]
    graphs = chosen or sipt_arms
    if not graphs:
        return []
    series, levels = {}, {}
    for part in ("probe", "full"):
        found = {c["method"]: c for c in summary["comparisons"]
                 if c["baseline"] == BASELINE_ARM and c["task"].endswith(f"({part})")}
        if all(name in found for name in graphs):
            series[part] = ([summary["arms"][g]["local_consistency"] for g in graphs],
                            [found[g]["rre_mean"] for g in graphs], [found[g]["rre_sd"] for g in graphs])
        flat = [name for name in CONCEPT_METHODS if name in found]
        if flat and not levels:
            levels = {f"{name} ({part})": (found[name]["rre_mean"], found[name]["rre_sd"]) for name in flat}
    return labelled_errorbars(stem, series, [g.removeprefix("sipt[").removesuffix("]").split(",")[0] for g in graphs],
                              xlabel=f"local consistency of {summary['task']} over G_PT",
                              ylabel="relative error reduction vs LM-only", title=f"SIPT on {summary['domain']}: gain vs LC",
                              note="Theorem 1: the gain should grow with LC and vanish near chance LC"
                              + ("; intra-sample methods (dotted) read no graph" if levels else ""), levels=levels)


#: The paper's λ_SI, reported as its own SIPT arm whenever the grid holds it.
PAPER_LAMBDA = 0.1


def choose_lambdas(rows: list[dict]) -> list[dict]:
    """The rows each arm reports: the non-SIPT rows; per (SIPT graph, seed) the row at the paper's
    λ when the grid holds it, and, when the grid has several values, the row at the λ with the best
    validation link MRR as arm ``sipt[graph, chosen λ]``."""
    chosen = [row for row in rows if row["arm"] != "sipt"]
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["arm"] == "sipt":
            groups.setdefault((row["graph"], row["seed"]), []).append(row)
    for group in groups.values():
        chosen += [row for row in group if row["lambda_si"] == PAPER_LAMBDA]
        if len(group) > 1:
            best = max(group, key=lambda row: (row["validation_links"]["mrr"], -row["lambda_si"]))
            chosen.append({**best, "selection": "chosen λ"})
    return chosen


def summarize_domain(rows: list[dict], cell: DomainCell) -> dict:
    """Per arm: mean ± sd of each score over seeds; comparisons (RRE, paired t-test) of every arm
    with LM-only and of SIPT with off-the-shelf; LC of the task over each SIPT graph."""
    kind = get_task_kind(rows[0]["kind"])
    chosen = choose_lambdas(rows)
    arms: dict[str, list[dict]] = {}
    for row in sorted(chosen, key=lambda r: r["seed"]):
        arms.setdefault(_arm_name(row), []).append(row)
    table = {}
    for name, runs in arms.items():
        entry = {"seeds": [r["seed"] for r in runs], "lambda_si": [r["lambda_si"] for r in runs]}
        for part in runs[0]["scores"]:
            for metric in runs[0]["scores"][part]:
                mean, sd = mean_sd(r["scores"][part].get(metric) for r in runs)  # cells stored before a metric existed lack it
                entry[f"{part}.{metric}"] = {"mean": mean, "sd": sd}
        if "concepts" in runs[0]:
            entry["concept_codes_nonzero_median"] = float(np.mean([r["concepts"]["nonzero_median"] for r in runs]))
        if "graph_summary" in runs[0]:
            lcs = [r["graph_summary"]["local_consistency"] for r in runs]
            entry["local_consistency"] = None if None in lcs else float(np.mean(lcs))
            entry["n_edges"] = float(np.mean([r["graph_summary"]["n_edges"] for r in runs]))
            entry["coverage"] = float(np.mean([r["graph_summary"]["coverage"] for r in runs]))
        table[name] = entry
    comparisons = []
    for baseline in (BASELINE_ARM, "off-the-shelf"):
        for name, runs in arms.items():
            if name == baseline or (baseline == "off-the-shelf" and name == BASELINE_ARM):
                continue  # LM-only vs off-the-shelf is already listed the other way round
            paired = {r["seed"]: r for r in arms[baseline]}
            for part in runs[0]["scores"]:
                pairs = [(paired[r["seed"]], r) for r in runs if r["seed"] in paired]
                comparisons.append(compare_errors([kind.error(b["scores"][part]) for b, _ in pairs],
                                                  [kind.error(m["scores"][part]) for _, m in pairs],
                                                  task=f"{cell.domain}:{cell.task} ({part})", method=name, baseline=baseline))
    return {"domain": cell.domain, "task": cell.task, "kind": kind.name, "primary": kind.primary, "arms": table,
            "comparisons": [dataclasses.asdict(c) for c in comparisons]}


def format_domain_summary(summary: dict) -> str:
    """The per-arm table (scores mean ± sd, LC) and the comparison table."""
    metrics = sorted({key for entry in summary["arms"].values() for key in entry if "." in key})
    lines = [f"{summary['domain']}:{summary['task']} ({summary['kind']}; errors are 1 - {summary['primary']})", "",
             "| arm | LC | " + " | ".join(metrics) + " |", "|---|---|" + "---|" * len(metrics)]
    for name, entry in summary["arms"].items():
        lc = f"{entry['local_consistency']:.3f}" if entry.get("local_consistency") is not None else "-"
        cells = [f"{entry[m]['mean']:.3f} ± {entry[m]['sd']:.3f}" if m in entry else "-" for m in metrics]
        lines.append(f"| {name} | {lc} | " + " | ".join(cells) + " |")
    lines += ["", format_comparison_table([Comparison(**c) for c in summary["comparisons"]])]
    return "\n".join(lines)


def _arm_name(row: dict) -> str:
    if row["arm"] != "sipt":
        return row["arm"] if row["graph"] is None else f"{row['arm']}[{row['graph']}]"
    return f"sipt[{row['graph']}, {row['selection']}]" if "selection" in row else f"sipt[{row['graph']}]"
