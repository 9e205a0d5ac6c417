"""One arm of a domain run on one seed: pre-train it (unless off the shelf), then score it (:func:`domain_cell`)."""

from __future__ import annotations

import dataclasses
import time

import torch

from sipt_lab.evaluation import link_retrieval_metrics
from sipt_lab.grid import read_result
from sipt_lab.grid.model_store import STORE_KEYS, model_dir, stored_digest
from sipt_lab.jobs.finetune import check_mode, probe_encoder
from sipt_lab.jobs.per_sample_labels import method_labels
from sipt_lab.models import encoder_source
from sipt_lab.studies.domain.cells import (
    CONCEPT_METHODS,
    DEFAULT_CONCEPTS,
    GRAPH_METHODS,
    PER_SAMPLE_METHODS,
    ConceptCell,
    DomainCell,
)
from sipt_lab.studies.domain.teachers import is_stored, load_teacher, save_model, teacher_cell
from sipt_lab.studies.domain.view import domain_view
from sipt_lab.training import embed, pretrain, steps_for_epochs
from sipt_lab.training.defaults import method_train_config
from sipt_lab.training.finetune import copies_of, finetune
from sipt_lab.training.methods import Teacher, method_recipe


def domain_cell(cell: DomainCell, teachers: str | None = None) -> dict:
    """Pre-train one arm (unless off the shelf), then score it: probe / full fine-tuning on the
    test split (full fine-tuning also keeps its chosen learning rate, ``finetune_lr``, and
    ``finetune_history``: the validation and test metrics of every learning rate after each pass,
    rows of :data:`~sipt_lab.training.finetune.HISTORY_COLUMNS` without model, part and seed), and
    for SIPT the validation samples' link retrieval and the graph's summary (LC over the graph it
    was pre-trained on, and over the whole graph as ``local_consistency_all_splits``).
    ``teachers``: the run's store of lm arms (:data:`TEACHERS_DIR`) when it has MLSM arms: the
    ``lm`` cell then loads its stored encoder, an MLSM cell its teacher, from there."""
    from sipt_lab.domains import summarize_graph

    start = time.perf_counter()
    view = domain_view(cell.domain, cell.task, cell.n_samples, cell.seed, cell.data, cell.protocol)
    texts = list(view.data.samples)
    result = {
        "arm": cell.arm,
        "graph": cell.graph,
        "lambda_si": cell.lambda_si,
        "seed": cell.seed,
        "kind": view.task.kind,
        "n_samples": len(texts),
        "sizes": {n: int(len(getattr(view.splits, n))) for n in ("train", "validation", "test")},
    }
    graph = None
    if cell.arm == "off-the-shelf":
        source = _encoder_source(cell, view.data)
        tokenizer = source.tokenizer([texts[i] for i in view.pretraining_samples], cell.pretrain.max_len)
        with torch.random.fork_rng(
            devices=[]
        ):  # the warm start pre-training begins from (a random init is seeded as there)
            torch.manual_seed(cell.seed)
            encoder = source.encoder(tokenizer)[0]
    elif is_stored(cell, teachers):
        stored = read_result(model_dir(teachers, cell).parent, STORE_KEYS)
        encoder, tokenizer = load_teacher(cell, teachers)
        result |= {"pretrain_final": stored["pretrain_final"], "teacher_digest": stored["digest"]}
    else:
        teacher = load_teacher(cell, teachers) if isinstance(cell, ConceptCell) else None
        graph, trained = pretrain_arm(cell, None if teacher is None else Teacher(*teacher))
        encoder, tokenizer = trained.encoder, trained.tokenizer
        result["pretrain_final"] = {name: float(values[-1]) for name, values in trained.history.items()}
        if "concepts" in trained.objectives:
            result["concepts"] = dict(trained.objectives["concepts"].targets.stats)
            result["teacher_digest"] = cell.teacher_digest or stored_digest(teachers, teacher_cell(cell))
    vectors = embed(encoder, tokenizer, texts, device=cell.finetune.device)
    parts = check_mode(cell.mode, "DomainRunConfig.mode")
    scores = {}
    if "probe" in parts:
        scores["probe"] = probe_encoder(
            encoder,
            tokenizer,
            texts,
            view.task,
            view.splits,
            cell.finetune.device,
            vectors,
            pair_memory_gib=cell.finetune.pair_memory_gib,
        )
    if "full" in parts:
        history: list[dict] = []
        tuned = finetune(
            copies_of(encoder, tokenizer),
            texts,
            view.task,
            view.splits,
            cell.finetune,
            cell.seed,
            _scores_only(history),
        )
        scores["full"] = tuned.test
        result |= {"finetune_lr": tuned.lr, "finetune_history": history}
    result["scores"] = scores
    if cell.graph is not None:
        pretrained_on = (view.seen_graph(graph), view.pretraining_samples)
        result["graph_summary"] = dataclasses.asdict(summarize_graph(graph, view.task, pretrained_on))
        result["validation_links"] = link_retrieval_metrics(vectors, graph, queries=view.link_queries)
    result["seconds"] = time.perf_counter() - start
    return result


def _scores_only(rows: list[dict]):
    """A fine-tuning ``record`` that keeps the validation and test rows (every learning rate's metrics
    after each pass and every ``eval_every`` steps) in ``rows`` and drops the per-step train loss."""

    def record(row: dict) -> None:
        if row["split"] != "train":
            rows.append(row)

    return record


def train_teacher(cell: DomainCell, teachers: str) -> dict:
    """A cell of the teacher store: pre-train the lm arm ``cell`` and save it beside its result."""
    _, trained = pretrain_arm(cell)
    saved = save_model(trained.encoder, trained.tokenizer, model_dir(teachers, cell))
    return {**saved, "pretrain_final": {name: float(values[-1]) for name, values in trained.history.items()}}


def pretrain_arm(cell: DomainCell, teacher: Teacher | None = None):
    """``(G_PT, PretrainResult)``: the LM-only, SIPT or further method's pre-training of ``cell``
    (not off the shelf); ``teacher`` the MLSM family's."""
    from sipt_lab.domains import build_graph, get_domain

    view = domain_view(cell.domain, cell.task, cell.n_samples, cell.seed, cell.data, cell.protocol)
    spec = get_domain(cell.domain)
    source = _encoder_source(cell, view.data)
    graph = build_graph(
        spec, cell.graph or next(iter(spec.graphs)), view.data, cell.seed, fit_on=view.pretraining_samples
    )
    seen = view.seen_graph(graph)
    train = dataclasses.replace(cell.pretrain, lambda_si=cell.lambda_si, seed=cell.seed)
    if cell.epochs is not None:
        train = dataclasses.replace(
            train,
            steps=steps_for_epochs(cell.epochs, len(view.pretraining_samples), train.batch_size, train.grad_accum),
        )
    method = cell.arm if cell.arm in GRAPH_METHODS + CONCEPT_METHODS + PER_SAMPLE_METHODS else None
    recipe = None
    if method is not None:
        train = method_train_config(method, train)
        labels = method_labels(method, train, view.data.ids, view.pretraining_samples, skip_unknown=True)
        concepts = cell.concepts if isinstance(cell, ConceptCell) else DEFAULT_CONCEPTS
        recipe = method_recipe(method, teacher, concepts, labels)
    samples = view.data.samples
    return graph, pretrain([samples[i] for i in view.pretraining_samples], seen, train, source, method=recipe)


def _encoder_source(cell: DomainCell, data):
    """The cell's warm start: the domain's own source builder when it has one (the GIN), else ``--init``'s."""
    from sipt_lab.domains import get_domain

    spec = get_domain(cell.domain)
    return spec.encoder_source(cell.init, data) if spec.encoder_source is not None else encoder_source(cell.init)
