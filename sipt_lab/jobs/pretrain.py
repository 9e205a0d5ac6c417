"""Pre-training on a researcher's own samples and graph, with export and a before/after report.

:func:`run_pretraining` is what ``sipt-lab pretrain`` runs: read the samples, ``G_PT`` and
optional labels, pre-train from ``init`` (``char``, ``minilm`` or a Hugging Face directory) with
``L_M + λ·L_SI``, and write into ``out``:

* ``config.json``: the :class:`PretrainJob` (resolved steps included), written first;
* ``checkpoint.pt``: the trainer's checkpoint (every ``checkpoint_every`` steps and at the end);
* ``model/``: the encoder (a Hugging Face + sentence-transformers directory for Hugging Face inits,
  sipt-lab's own format for ``char``); for the MLSM family, after its final phase (the method's
  ``final_phase``: an MLM encoder of the teacher's vocabulary, reported as ``final_phase``);
* ``history.csv``: step (1 for the first, as in TensorBoard), loss terms, lr;
* ``tensorboard/`` (``report_to`` ``tensorboard``, the default), ``evaluations.csv`` and ``best/``
  when the run evaluates and keeps its best model (:mod:`~sipt_lab.jobs.pretrain_watch`);
  ``model/README.md``, a model card, for Hugging Face inits (:mod:`~sipt_lab.jobs.model_card`);
* ``.sipt-lab-files.json``: the manifest of the files above (``--overwrite`` removes only those), and
  ``.sipt-lab.lock`` while the run writes (:func:`sipt_lab.core.outputs.run_output`);
* ``result.json``, written last (its presence marks a finished run): final losses, notes, timings
  and, when labels are given, the report before and after pre-training on the labelled samples
  (labels may cover a subset; ``G_PT`` restricted to them): the labels' local consistency over
  ``G_PT`` (Theorem 1's bound on an optimal SIPT embedder's nearest-neighbour accuracy), LOO 3-NN
  AUROC and accuracy, link retrieval (LRAP, MRR) on ``G_PT``, and the radius that best recovers
  ``G_PT`` with its F1 and r-NN accuracy (Theorem 1's validity condition and predictor) (on a snowball slice of at most :data:`REPORT_MAX_SAMPLES` samples).

:func:`embed_samples` is ``sipt-lab embed``: ``EMB.npy`` (float32, one row per sample in file
order) and ``EMB.ids.tsv``.
"""

from __future__ import annotations

import io
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from sipt_lab.core import outputs
from sipt_lab.core.config_io import save_config
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.core.fileio import cache_dir, write_bytes_atomic, write_json_atomic, write_text_atomic
from sipt_lab.core.progress import phase
from sipt_lab.data.samples import read_labelled_codes, read_sample_graph, read_samples
from sipt_lab.evaluation import link_retrieval_metrics, loo_knn, radius_terms
from sipt_lab.graphs.consistency import labelled_subgraph, local_consistency
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.graphs.sampling import snowball_sample
from sipt_lab.jobs.configs import PretrainJob
from sipt_lab.jobs.model_card import write_model_card
from sipt_lab.jobs.per_sample_labels import method_labels
from sipt_lab.jobs.pretrain_watch import BEST_DIR, TENSORBOARD_DIR, RunWatch, check_watch, kept_step
from sipt_lab.models.sources import init_source, model_loader
from sipt_lab.training import TrainConfig, embed, pretrain, steps_for_epochs
from sipt_lab.training.checkpoint import CHECKPOINT_NAME
from sipt_lab.training.diagnostics import guard_step, stalled_structure_loss
from sipt_lab.training.head_warmups import HEAD_CACHE, HeadWarmups
from sipt_lab.training.methods import Teacher, get_method, method_recipe
from sipt_lab.training.runtime import autocast_dtype, distributed_context, resolve_device
from sipt_lab.training.train_config import epoch_remainder_note

logger = logging.getLogger(__name__)

#: Files a pretrain run writes directly into its output directory (with those of ``model/``, they
#: are recorded in its manifest; ``--overwrite`` removes only recorded files).
RUN_FILES = ("config.json", CHECKPOINT_NAME, "history.csv", "result.json")
FINISHED_MARKER = "result.json"
#: The report embeds at most this many samples (a snowball slice of G_PT: embedding every sample
#: of a large set twice would cost more than a short pre-training run on a CPU).
REPORT_MAX_SAMPLES = 2000  # at most MAX_RECOVERY_NODES: the radius recovery sorts all pairs of the slice
REPORT_LINK_QUERIES = 1000
REPORT_K = 3


@dataclass
class PretrainOutcome:
    """What :func:`run_pretraining` produced: the trained result, its report and where it lies;
    ``main`` is False in a ``torchrun`` process other than rank 0 (which reports nothing)."""

    result: object
    report: dict
    out_dir: Path
    main: bool = True


def run_pretraining(
    job: PretrainJob,
    out: str | Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    log=None,
) -> PretrainOutcome:
    r"""Run ``job`` into ``out`` (see the module docstring) under the output rule of
    :func:`sipt_lab.core.outputs.run_output`: a run there is continued with ``resume`` or replaced with
    ``overwrite``. Under ``torchrun`` every process trains its shard and only rank 0 writes.

    Two steps of a small fresh character encoder on 8 samples in two linked topics:

    ```pycon
    >>> import pathlib, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> texts = ["red apple", "green apple", "ripe pear", "sour pear", "blue sky", "grey sky", "clear night", "dark night"]
    >>> _ = (tmp / "samples.tsv").write_text("".join(f"s{i}\t{text}\n" for i, text in enumerate(texts)))
    >>> _ = (tmp / "edges.tsv").write_text("s0\ts1\ns2\ts3\ns0\ts2\ns4\ts5\ns6\ts7\ns4\ts6\n")
    >>> _ = (tmp / "labels.tsv").write_text("".join(f"s{i}\t{'fruit' if i < 4 else 'sky'}\n" for i in range(8)))
    >>> from sipt_lab import PretrainJob, run_pretraining, train_config
    >>> job = PretrainJob(samples=str(tmp / "samples.tsv"), edges=str(tmp / "edges.tsv"), labels=str(tmp / "labels.tsv"),
    ...                   init="char", encoder="paper-small", train=train_config("char", steps=2, batch_size=4, device="cpu"))
    >>> outcome = run_pretraining(job, tmp / "run")
    >>> sorted(path.name for path in outcome.out_dir.iterdir())
    ['.sipt-lab-files.json', 'checkpoint.pt', 'config.json', 'history.csv', 'model', 'result.json', 'tensorboard']
    >>> outcome.report["n_samples"], outcome.report["n_edges"], outcome.report["local_consistency"]
    (8, 6, 1.0)
    >>> sorted(outcome.report["final"]), sorted(outcome.report["after"])[:3]
    (['loss', 'lr', 'mlm', 'si'], ['link_lrap', 'link_mrr', 'loo_3nn_accuracy'])

    ```
    """
    log = logger.info if log is None else log  # the CLI passes print: its lines are the command's output
    main = launched_rank() == 0
    outputs.check_output_dir(out)
    with phase(logger, "reading the samples and the graph", announce=False) as sizes:
        samples = read_samples(job.samples)
        graph = read_sample_graph(job.edges, samples)
        if graph.n_edges == 0:
            raise SiptError(f"{job.edges} links no two distinct samples; SIPT needs a graph with edges")
        labelled = None if job.labels is None else LabelledPart.read(job.labels, samples, graph)
        labels = None if labelled is None else labelled.labels
        sizes.append(f"{len(samples):,} samples, {graph.n_edges:,} edges")
    if main and (graph.dropped_self_loops or graph.dropped_duplicates):
        log(
            f"{job.edges}: dropped {graph.dropped_self_loops:,} self-loop(s) and {graph.dropped_duplicates:,} "
            f"repeated edge(s); {graph.n_edges:,} distinct edges remain"
        )
    if main and labelled is not None and labelled.nodes.size < len(samples):
        log(
            f"{job.labels} labels {labelled.nodes.size:,} of the {len(samples):,} samples: the report and "
            f"the evaluations use those and the {labelled.graph.n_edges:,} edges between them"
        )
    per_sample = method_labels(job.method, job.train, samples.ids)
    check_watch(job.train, labels is not None)
    source = job_source(job)
    check_epochs(job, len(samples))
    unseen = epoch_remainder_note(len(samples), job.train.batch_size)
    if unseen and main:
        log(f"note: {unseen}")
    device = resolve_device(job.train.device)
    autocast_dtype(job.train.precision, device)
    texts = list(samples.texts)
    tokenizer = source.tokenizer(texts, job.train.max_len)  # a broken checkpoint fails here, before anything is written
    with outputs.run_output(
        out,
        "pretrain",
        finished=FINISHED_MARKER,
        resume=resume,
        overwrite=overwrite,
        replaced_dirs=("model", BEST_DIR, TENSORBOARD_DIR),
        keep_on_failure=lambda out_dir: (out_dir / CHECKPOINT_NAME).is_file(),
        main_process=main,
        log=log,
        inputs=[path for path in (job.samples, job.edges, job.labels, job.init, job.teacher) if path],
    ) as out_dir:
        extended_from = _planned_steps(out_dir, job) if resume else None
        config_path = out_dir / "config.json"
        resumed_config = config_path.read_bytes() if resume and config_path.is_file() else None
        place = distributed_context(device.type)
        if labelled is not None:
            report_nodes = snowball_sample(labelled.graph, REPORT_MAX_SAMPLES, seed=job.train.seed)
            report_graph = labelled.graph.subgraph(report_nodes)
            report_texts = [texts[i] for i in labelled.nodes[report_nodes]]
            with phase(logger, "evaluating the encoder as initialised", f"{len(report_nodes):,} samples"):
                before = _report_before(report_texts, report_graph, labels[report_nodes], job.train, source, tokenizer)
        if place.is_main:
            outputs.record_files(out_dir, list(RUN_FILES))
            save_config(job, out_dir / "config.json")
        start = time.perf_counter()
        teacher = None if job.teacher is None else Teacher(*model_loader(job.teacher, device)())
        recipe = None if job.method is None else method_recipe(job.method, teacher, labels=per_sample)
        watching = (
            RunWatch(job.train, out_dir, graph, texts, None, place.is_main)
            if labelled is None
            else RunWatch(job.train, out_dir, labelled.graph, labelled.texts(texts), labels, place.is_main)
        )
        try:
            result = pretrain(
                texts,
                graph,
                job.train,
                source,
                checkpoint_dir=out_dir,
                method=recipe,
                watch=watching,
                head_warmups=HeadWarmups(cache_dir() / HEAD_CACHE, on_states=True),
                estimate_embedded=0 if labels is None else len(report_nodes),
            )
            seconds = time.perf_counter() - start
            if place.is_main:
                for note in result.notes:
                    log(f"note: {note}")
            report = {
                "n_samples": len(samples),
                "n_edges": graph.n_edges,
                "dropped_self_loops": graph.dropped_self_loops,
                "dropped_duplicates": graph.dropped_duplicates,
                "seconds": seconds,
                "notes": ([unseen] if unseen else []) + result.notes,
                "warnings": history_warnings(result.history, job.train),
                "final": {name: float(values[-1]) for name, values in result.history.items()},
            }
            if extended_from is not None:
                report["extended_from_steps"] = extended_from
            if labels is not None:
                with phase(logger, "evaluating the pre-trained encoder", f"{len(report_nodes):,} samples"):
                    after_vectors = embed(result.encoder, result.tokenizer, report_texts)
                after = evaluate_embeddings(after_vectors, report_graph, labels[report_nodes])
                report |= {
                    "local_consistency": float(local_consistency(labelled.graph, labels)),
                    "labelled_samples": int(labelled.nodes.size),
                    "unlabelled_edges": labelled.left_out_edges,
                    "report_samples": len(report_nodes),
                    "before": before,
                    "after": after,
                }
                watching.project(after_vectors, labels[report_nodes])
            report |= watching.finish(len(result.history["loss"]), seconds, log if place.is_main else None)
        except SiptError:  # a resume refused (another run's checkpoint): the run keeps the config it was made with
            if resumed_config is not None and place.is_main:
                write_bytes_atomic(out_dir / "config.json", resumed_config)
            raise
        finally:
            watching.close()
        if place.is_main:
            final_phase = None if job.method is None else get_method(job.method).final_phase
            if final_phase is not None:  # MLSM's concept -> vocabulary layer, folded into the saved model
                report["final_phase"] = final_phase(result.encoder, result.tokenizer, texts, job.train.seed)
                fitted = report["final_phase"]
                log(
                    f"final phase (concept -> vocabulary layer): masked-token accuracy {fitted['fit_accuracy']:.3f} "
                    f"on {fitted['tokens']:,} tokens (most frequent token: {fitted['majority_accuracy']:.3f})"
                )
            with phase(logger, "exporting the model", str(out_dir / "model")):
                result.encoder.save(out_dir / "model", result.tokenizer)
                write_model_card(out_dir / "model", job, report, graph)
                if (kept_at := kept_step(out_dir)) is not None:
                    write_model_card(out_dir / BEST_DIR, job, report, graph, kept_at)
                    outputs.record_tree(out_dir, BEST_DIR)
            outputs.record_tree(out_dir, "model")
            write_text_atomic(out_dir / "history.csv", _history_csv(result.history))
            write_json_atomic(out_dir / FINISHED_MARKER, report)
    return PretrainOutcome(result, report, out_dir, main and place.is_main)


def check_epochs(job: PretrainJob, n_samples: int) -> None:
    """ConfigError when ``job.epochs`` passes over ``n_samples`` samples are not the job's
    ``steps``: a job built by hand whose steps were never made from its epochs
    (:func:`~sipt_lab.jobs.configs.resolve_pretrain_job` makes them)."""
    if job.epochs is None:
        return
    steps = steps_for_epochs(job.epochs, n_samples, job.train.batch_size, job.train.grad_accum)
    if steps != job.train.steps:
        raise ConfigError(
            "PretrainJob.epochs",
            f"{job.epochs:g} passes over these {n_samples:,} samples are {steps:,} steps, but TrainConfig.steps is "
            f"{job.train.steps:,}; build the job with resolve_pretrain_job, or leave epochs out",
        )


def launched_rank() -> int:
    """This process's rank as ``torchrun`` launched it (0 outside torchrun), known before any process group."""
    return int(os.environ.get("RANK", "0"))


def _planned_steps(out_dir: Path, job: PretrainJob) -> int | None:
    """The steps the run in ``out_dir`` was planned for, when ``job`` (resuming it) plans another
    number (recorded in the report); None when they agree or nothing says. The checkpoint's
    identity decides whether the steps may change (:func:`~sipt_lab.training.checkpoint.run_identity`)."""
    try:
        planned = int(json.loads((out_dir / "config.json").read_text(encoding="utf-8"))["train"]["steps"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return None if planned == job.train.steps else planned


@dataclass(frozen=True)
class LabelledPart:
    """The samples a labels file labels (any subset) and ``G_PT`` on them, the rule of
    :func:`~sipt_lab.graphs.consistency.labelled_subgraph`: ``nodes`` ``(m,)`` increasing sample
    indices, ``labels`` their ``(m,)`` int64 codes, ``graph`` the subgraph on them (its node ``k``
    is sample ``nodes[k]``) and ``left_out_edges`` the edges of ``G_PT`` with an unlabelled end."""

    nodes: np.ndarray
    labels: np.ndarray
    graph: PretrainingGraph
    left_out_edges: int

    @classmethod
    def read(cls, path: str, samples, graph: PretrainingGraph) -> LabelledPart:
        """The labels file ``path`` over ``samples`` and their graph; SiptError when no edge joins two labelled samples."""
        nodes, codes, _ = read_labelled_codes(path, samples)
        part, left_out = labelled_subgraph(graph, nodes)
        if part.n_edges == 0:
            raise SiptError(
                f"the graph links no two of the {nodes.size} samples {path} labels, so the report has nothing "
                "to measure; label samples that the graph links, or drop PretrainJob.labels"
            )
        return cls(nodes, codes, part, left_out)

    def texts(self, texts: list[str]) -> list[str]:
        """The labelled samples' texts, in node order."""
        return [texts[i] for i in self.nodes]


def evaluate_embeddings(embeddings: np.ndarray, graph: PretrainingGraph, labels: np.ndarray | None) -> dict:
    """From ``(n, H)`` embeddings: link retrieval (LRAP, MRR) of ``G_PT``, the radius best recovering
    ``G_PT`` and its F1, and with ``labels`` their LOO 3-NN AUROC and accuracy and LOO r-NN accuracy
    and coverage at that radius."""
    link = link_retrieval_metrics(embeddings, graph, REPORT_LINK_QUERIES, rng=0)
    metrics = {"link_lrap": link["lrap"], "link_mrr": link["mrr"], **radius_terms(embeddings, graph, labels)}
    if labels is not None:
        scores = loo_knn(embeddings, labels, REPORT_K)
        metrics |= {"loo_3nn_auroc": scores.auroc, "loo_3nn_accuracy": scores.accuracy}
    return metrics


def history_warnings(history: dict[str, np.ndarray], config: TrainConfig) -> list[str]:
    """What :mod:`~sipt_lab.training.diagnostics` finds wrong with a run's loss history (the warnings
    the trainer logged), for the report."""
    checked = guard_step(config.steps)
    warning = stalled_structure_loss(history["si"][:checked], config) if "si" in history and checked else None
    return [warning] if warning else []


def embed_samples(
    model: str | Path,
    samples_path: str | Path,
    out: str | Path,
    *,
    batch_size: int = 256,
    device: str = "auto",
    overwrite: bool = False,
) -> tuple[Path, Path]:
    r"""Embed a samples file with an encoder (:func:`~sipt_lab.models.sources.model_loader`: a model
    or run directory, or an init name): ``out`` (``.npy`` added if missing) holds the ``(n, H)``
    float32 rows in file order, ``<stem>.ids.tsv`` the ids. An existing output is replaced only
    with ``overwrite``. Returns both paths.

    With the ``char`` init (a fresh character encoder; a :func:`run_pretraining` directory works
    the same way):

    ```pycon
    >>> import pathlib, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> texts = ["red apple", "green apple", "ripe pear", "sour pear", "blue sky", "grey sky", "clear night", "dark night"]
    >>> _ = (tmp / "samples.tsv").write_text("".join(f"s{i}\t{text}\n" for i, text in enumerate(texts)))
    >>> import numpy as np
    >>> from sipt_lab import embed_samples
    >>> vectors, ids = embed_samples("char", tmp / "samples.tsv", tmp / "embeddings", device="cpu")
    >>> vectors.name, ids.name
    ('embeddings.npy', 'embeddings.ids.tsv')
    >>> np.load(vectors).shape, np.load(vectors).dtype, ids.read_text().split()[:3]
    ((8, 64), dtype('float32'), ['s0', 's1', 's2'])

    ```
    """
    if batch_size < 1:
        raise ConfigError("batch_size", f"must be >= 1, got {batch_size}")
    vectors_path, ids_path = embedding_paths(out)
    for path in (vectors_path, ids_path):
        outputs.check_not_an_input(path, [samples_path, model])
        if path.is_dir():
            raise SiptError(
                f"{path} is a directory; pass an --out whose .npy and .ids.tsv names are free, "
                f"such as {path.parent / 'embeddings.npy'}"
            )
        if path.exists() and not overwrite:
            raise SiptError(f"{path} exists; pass --overwrite to replace it, or another --out")
    device = resolve_device(device, "EmbedJob.device")
    samples = read_samples(samples_path)
    encoder, tokenizer = model_loader(model, device, texts=samples.texts)()
    vectors = embed(encoder, tokenizer, list(samples.texts), batch_size=batch_size, device=device)
    with outputs.written_together(vectors_path.parent, [vectors_path.name, ids_path.name]):
        write_bytes_atomic(vectors_path, _npy_bytes(vectors))
        write_text_atomic(ids_path, "".join(f"{sample_id}\n" for sample_id in samples.ids))
    return vectors_path, ids_path


def embedding_paths(out: str | Path | None) -> tuple[Path, Path]:
    """``(EMB.npy, EMB.ids.tsv)`` of ``embed --out``, checked to lie in a writable directory."""
    if out is None or not str(out).strip():
        raise SiptError("--out is empty; pass the embeddings file to write, e.g. EMB.npy")
    out = Path(out)
    out = out if out.suffix == ".npy" else out.with_name(out.name + ".npy")
    outputs.check_output_dir(out.parent)
    return out, out.with_name(out.name.removesuffix(".npy") + ".ids.tsv")


def job_source(job: PretrainJob):
    """The :class:`~sipt_lab.models.EncoderSource` of ``job.init`` (char size, pooling applied)."""
    return init_source(job.init, job.encoder, job.pooling)


def initial_embeddings(texts: list[str], config: TrainConfig, source, tokenizer) -> np.ndarray:
    """``(n, H)`` embeddings of ``texts`` by the encoder as a run with ``config`` initialises it
    (same seed and tokenizer), before any training."""
    with torch.random.fork_rng():
        torch.manual_seed(config.seed)
        encoder, _ = source.encoder(tokenizer)
    return embed(encoder, tokenizer, texts, device=config.device)


def _report_before(
    texts: list[str], graph: PretrainingGraph, labels: np.ndarray, config: TrainConfig, source, tokenizer
) -> dict:
    """:func:`evaluate_embeddings` of the encoder as initialised."""
    return evaluate_embeddings(initial_embeddings(texts, config, source, tokenizer), graph, labels)


def _history_csv(history: dict[str, np.ndarray]) -> str:
    """One row per optimiser step, ``step`` counted from 1 (as TensorBoard and ``evaluations.csv``)."""
    names = list(history)
    rows = zip(*(history[name].tolist() for name in names))
    return (
        "step,"
        + ",".join(names)
        + "\n"
        + "".join(f"{step}," + ",".join(f"{v:.6g}" for v in row) + "\n" for step, row in enumerate(rows, start=1))
    )


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()
