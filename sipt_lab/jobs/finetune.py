"""Fine-tuning evaluation of an encoder on a labelled task: linear probe and full fine-tuning.

:func:`evaluate_encoder` scores one encoder on one task's splits in the chosen modes
(:data:`MODES`); :func:`run_finetuning` is ``sipt-lab finetune``: it reads the samples, labels and
splits (or takes a registered domain task), evaluates ``--model`` (and ``--baseline`` when given,
with the paper's relative error reduction and paired t-test over seeds) and writes
``results.json`` and ``comparison.csv``.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sipt_lab.core import outputs
from sipt_lab.core.config_io import save_config
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.core.fileio import read_text_lines, write_json_atomic, write_text_atomic
from sipt_lab.core.stats import format_mean_sd
from sipt_lab.data.samples import read_labelled_in_order, read_samples
from sipt_lab.data.splits import Splits, check_task_splits, random_splits, read_splits
from sipt_lab.data.tasks import Task, get_task_kind
from sipt_lab.evaluation.comparison import (
    Comparison,
    compare_errors,
    format_comparison_table,
    test_size_warning,
    write_comparison_csv,
)
from sipt_lab.evaluation.probe import linear_probe
from sipt_lab.jobs import names
from sipt_lab.jobs.configs import FinetuneJob
from sipt_lab.models.sources import model_loader
from sipt_lab.training import embed
from sipt_lab.training.finetune import (
    HISTORY_COLUMNS,
    SPLIT_NAMES,
    EncoderLoader,
    FinetuneConfig,
    finetune,
    read_out,
    readout,
)
from sipt_lab.training.inputs import encoder_inputs
from sipt_lab.training.runtime import resolve_device
from sipt_lab.training.time_estimate import TIMED_SAMPLES, TRAIN_COST, duration_text, forward_seconds

logger = logging.getLogger(__name__)

#: Evaluation modes: name -> the parts it runs.
MODES: dict[str, tuple[str, ...]] = dict(
    zip(names.FINETUNE_MODES, (("probe",), ("full",), ("probe", "full")), strict=True)
)


def check_mode(mode: str, field: str = "FinetuneJob.mode") -> tuple[str, ...]:
    """The parts of ``mode``; SiptError naming ``field`` (where the mode came from) and the choices otherwise."""
    if mode not in MODES:
        raise SiptError(f"unknown {field} {mode!r}; choose one of {', '.join(MODES)}")
    return MODES[mode]


def encoder_loader(model: str | Path, max_len: int | None = None, texts: Sequence[str] = ()) -> EncoderLoader:
    """A loader of fresh copies of ``model`` in train mode: a directory written by ``sipt-lab
    pretrain`` (the run directory or its ``model/``), any Hugging Face checkpoint directory, or an
    ``--init`` name such as ``minilm`` (off the shelf); see :func:`~sipt_lab.models.sources.model_loader`."""
    load_eval = model_loader(model, max_len=max_len, texts=texts)

    def load():
        encoder, tokenizer = load_eval()
        return encoder.train(), tokenizer

    return load


def probe(
    load: EncoderLoader,
    texts: list[str],
    task: Task,
    splits: Splits,
    device: str = "auto",
    max_len: int | None = None,
    pair_memory_gib: float = FinetuneConfig.pair_memory_gib,
) -> dict[str, float]:
    """Test metrics of a linear probe on the frozen encoder's output embeddings (per-token states,
    or residue pairs, for a per-token task, :func:`token_probe`), the strength chosen on validation."""
    encoder, tokenizer = load()
    if max_len is not None:
        tokenizer = dataclasses.replace(tokenizer, max_len=max_len)
    return probe_encoder(encoder, tokenizer, texts, task, splits, device, pair_memory_gib=pair_memory_gib)


def probe_encoder(
    encoder,
    tokenizer,
    texts: list[str],
    task: Task,
    splits: Splits,
    device: str = "auto",
    vectors: np.ndarray | None = None,
    pair_memory_gib: float = FinetuneConfig.pair_memory_gib,
) -> dict[str, float]:
    """:func:`probe` of a loaded encoder: :func:`token_probe` for a per-token task, else
    :func:`probe_embeddings` on ``vectors`` ``(n, H)`` (the split samples are embedded when None)."""
    if get_task_kind(task.kind).per_token:
        return token_probe(encoder, tokenizer, texts, task, splits, device, pair_memory_gib=pair_memory_gib)
    if vectors is None:
        rows = np.concatenate([splits.train, splits.validation, splits.test])
        vectors = np.zeros((len(texts), encoder.hidden_size), dtype=np.float32)
        vectors[rows] = embed(encoder, tokenizer, [texts[i] for i in rows], device=device)
    return probe_embeddings(vectors, task, splits)


def probe_embeddings(vectors: np.ndarray, task: Task, splits: Splits) -> dict[str, float]:
    """:func:`probe` on precomputed ``(n, H)`` embeddings of all samples (only split rows are read),
    with :func:`nn_embeddings`' nearest-neighbour metrics beside the probe's."""
    X = {name: vectors[getattr(splits, name)] for name in ("train", "validation", "test")}
    y = {name: task.labels_of(getattr(splits, name)) for name in X}
    probe_metrics = linear_probe(
        X["train"], y["train"], X["validation"], y["validation"], X["test"], y["test"], task.kind
    ).test
    return probe_metrics | nn_embeddings(vectors, task, splits)


#: Task kinds with one class per sample: the ones :func:`nn_embeddings` scores.
NN_TASK_KINDS = ("classification", "classification-f1")
#: Neighbours of the nearest-neighbour metric (the paper's 3-NN).
NN_K = 3


def nn_embeddings(vectors: np.ndarray, task: Task, splits: Splits, k: int = NN_K) -> dict[str, float]:
    """Theorem 1's quantity on held-out samples: ``{"knn3_accuracy", "knn3_auroc"}`` (for ``k`` = 3)
    of ``k``-NN over ``(n, H)`` ``vectors``, test samples classified by their neighbours among the
    train split. Test samples of a class the train split lacks are left out; ``{}`` for task kinds
    without one class per sample (regression, multi-label, per-token)."""
    from sipt_lab.evaluation import heldout_knn

    if task.kind not in NN_TASK_KINDS:
        return {}
    train_y, test_y = task.labels_of(splits.train), task.labels_of(splits.test)
    known = np.isin(test_y, train_y)
    if not known.any() or np.unique(test_y[known]).size < 2:
        return {}
    scores = heldout_knn(vectors[splits.train], train_y, vectors[splits.test][known], test_y[known], k)
    return {f"knn{k}_accuracy": float(scores.accuracy), f"knn{k}_auroc": float(scores.auroc)}


#: Most train residues (or valid residue pairs) the per-token probe fits on (a seeded random subset):
#: TAPE's secondary structure has about 2M, too many for scikit-learn's logistic regression at seven
#: strengths.
PROBE_MAX_TOKENS = 50_000


def token_probe(
    encoder,
    tokenizer,
    texts: list[str],
    task: Task,
    splits: Splits,
    device: str = "auto",
    max_tokens: int = PROBE_MAX_TOKENS,
    seed: int = 0,
    pair_memory_gib: float = FinetuneConfig.pair_memory_gib,
) -> dict[str, float]:
    """Per-token linear probe: logistic regression from the frozen encoder's last-layer state of each
    residue it reads (:func:`~sipt_lab.training.finetune.token_states`; for a pairwise kind, each
    scored residue pair's features, :mod:`~sipt_lab.training.pair_features`) to its class, fit on at
    most ``max_tokens`` train residues or valid pairs (drawn with ``seed``), strength chosen on
    validation; returns the test metrics. SiptError when the tokenizer is not one token per residue,
    or when a sequence's pair features pass ``pair_memory_gib``."""
    device = resolve_device(device, "FinetuneConfig.device")
    encoder = encoder.to(device)
    kind = get_task_kind(task.kind)
    X, y = {}, {}
    for name in SPLIT_NAMES:
        rows = getattr(splits, name)
        split_texts = [texts[i] for i in rows]
        inputs = encoder_inputs(tokenizer, split_texts, device)
        split = readout(kind, tokenizer, split_texts, inputs, encoder.hidden_size, pair_memory_gib, name)
        X[name] = read_out(encoder, inputs, split, batch_size=64).numpy()
        y[name] = split.labels(task.labels_of(rows), train=name == "train")
    if kind.pairwise:  # fit on the valid train pairs (their contact column); validation and test keep their rows
        valid = y["train"] >= 0
        X["train"], y["train"] = X["train"][valid], y["train"][valid]
    if len(y["train"]) > max_tokens:
        keep = np.sort(np.random.default_rng(seed).choice(len(y["train"]), max_tokens, replace=False))
        X["train"], y["train"] = X["train"][keep], y["train"][keep]
    return linear_probe(X["train"], y["train"], X["validation"], y["validation"], X["test"], y["test"], task.kind).test


def evaluate_encoder(
    load: EncoderLoader,
    texts: list[str],
    task: Task,
    splits: Splits,
    mode: str,
    config: FinetuneConfig,
    seeds: int = 1,
    record=None,
) -> dict[str, list[dict[str, float]]]:
    """``{"probe": [test metrics], "full": [test metrics per seed 0..seeds-1]}`` for the parts of ``mode``
    (the probe is deterministic, so it runs once). ``record`` receives full fine-tuning's history
    rows (:func:`~sipt_lab.training.finetune.finetune`'s, with ``part`` and ``seed``)."""
    parts = check_mode(mode)
    results: dict[str, list[dict[str, float]]] = {}
    if "probe" in parts:
        results["probe"] = [probe(load, texts, task, splits, config.device, config.max_len, config.pair_memory_gib)]
    if "full" in parts:
        results["full"] = [
            finetune(
                load,
                texts,
                task,
                splits,
                config,
                seed,
                None if record is None else _tagged(record, part="full", seed=seed),
            ).test
            for seed in range(seeds)
        ]
    return results


def load_task(job: FinetuneJob) -> tuple[list[str], list[str], Task]:
    """``(ids, texts, task)`` of a job: from files or from a registered domain."""
    if (job.task is None) == (job.labels is None):
        raise SiptError(
            "give either FinetuneJob.task DOMAIN:TASK or FinetuneJob.samples S with FinetuneJob.labels L.tsv"
        )
    if job.task is not None:
        from sipt_lab.domains import get_domain

        domain_name, _, task_name = job.task.partition(":")
        domain = get_domain(domain_name)
        data = domain.read()
        task_name = task_name or domain.default_task
        if task_name not in data.tasks:
            raise SiptError(f"domain {domain_name} has no task {task_name!r}; choose one of {', '.join(data.tasks)}")
        return list(data.ids), list(data.texts), data.tasks[task_name]
    if job.samples is None:
        raise SiptError("FinetuneJob.labels needs FinetuneJob.samples S (the texts the labels belong to)")
    kind = get_task_kind(job.kind)
    samples = read_samples(job.samples)
    labelled, label_strings = read_labelled_in_order(job.labels, samples)
    try:
        labels, names = kind.code(label_strings.tolist())
    except SiptError as error:
        raise SiptError(f"labels file {job.labels}: {error}") from None
    return list(samples.ids), list(samples.texts), Task("labels", job.kind, labelled, labels, tuple(names))


def work_ahead(job: FinetuneJob, loaders: dict[str, EncoderLoader], texts: list[str], splits: Splits) -> str:
    """One line: what a run of ``job`` will do and its estimated time, priced by
    :func:`~sipt_lab.training.time_estimate.forward_seconds` of each of ``loaders``' encoders on
    :data:`~sipt_lab.training.time_estimate.TIMED_SAMPLES` split samples spread through them. Full
    fine-tuning counts every pass (``epochs``, as if early stopping never ended one sooner): its
    train samples forwards and backwards, its validation and test samples forwards."""
    device = resolve_device(job.finetune.device, "FinetuneConfig.device")
    sizes = {name: len(getattr(splits, name)) for name in SPLIT_NAMES}
    rows = np.concatenate([getattr(splits, name) for name in SPLIT_NAMES])
    timed = [texts[i] for i in rows[np.linspace(0, len(rows) - 1, TIMED_SAMPLES).astype(np.int64)]]
    parts, config = check_mode(job.mode), job.finetune
    forwards, work = 0.0, []
    if "probe" in parts:
        forwards += len(rows)
        work.append("a linear probe")
    if "full" in parts:
        passes = job.seeds * len(config.lrs) * config.epochs
        forwards += passes * (TRAIN_COST * sizes["train"] + sizes["validation"] + sizes["test"])
        work.append(
            f"full fine-tuning ({job.seeds} seed(s) x {len(config.lrs)} learning rate(s) x at most {config.epochs} "
            "pass(es))"
        )
    seconds = 0.0
    for load in loaders.values():
        encoder, tokenizer = load()
        if config.max_len is not None:
            tokenizer = dataclasses.replace(tokenizer, max_len=config.max_len)
        seconds += forwards * forward_seconds(encoder.to(device), encoder_inputs(tokenizer, timed, device), device)
    return (
        f"{' and '.join(work)} of {' and '.join(loaders)} on {sum(sizes.values()):,} labelled samples "
        f"(train {sizes['train']:,}, validation {sizes['validation']:,}, test {sizes['test']:,}): "
        f"estimated time {duration_text(seconds)} on {device.type}"
    )


def pretrained_indices(path: str, ids: list[str]) -> np.ndarray:
    """``(k,)`` sorted indices into ``ids`` of the samples a file lists in its first column
    (tab-separated; ids that are not samples, such as a header, are skipped); SiptError when it
    names none of them."""
    listed = {line.split("\t", 1)[0].strip() for line in read_text_lines(path, "pre-training samples file")}
    found = np.array(sorted(i for i, sample in enumerate(ids) if sample in listed), dtype=np.int64)
    if not found.size:
        raise SiptError(
            f"{path} lists none of the task's sample ids in its first column; give the samples file the model was pre-trained on"
        )
    return found


def job_splits(job: FinetuneJob, ids: list[str], task: Task, seen: np.ndarray) -> Splits:
    """The job's splits: its splits file (refused when it holds one of the ``seen`` samples, which
    were pre-trained on), or random ones of the task's samples less ``seen``."""
    if not job.splits:
        return random_splits(np.setdiff1d(task.samples, seen), seed=job.split_seed)
    splits = read_splits(job.splits, ids)
    overlap = np.intersect1d(np.concatenate([splits.train, splits.validation, splits.test]), seen)
    if overlap.size:
        raise SiptError(
            f"{overlap.size} samples of {job.splits} were pre-trained on (first: {ids[overlap[0]]!r}, listed in "
            f"{job.pretrained_on}); drop them from the splits, or leave out FinetuneJob.pretrained_on"
        )
    return splits


def _tagged(record, **tags):
    return lambda row: record({**tags, **row})


def history_csv(rows: list[dict]) -> str:
    """``history.csv`` of a finetune run: one row per logged value (:data:`HISTORY_COLUMNS`; a name
    with a comma, such as a domain run's ``sipt[graph, chosen λ]``, is quoted)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(HISTORY_COLUMNS)
    for row in rows:
        writer.writerow(f"{row[name]:.6g}" if isinstance(row[name], float) else row[name] for name in HISTORY_COLUMNS)
    return buffer.getvalue()


#: Files a finetune run writes into its output directory (recorded in its manifest); ``history.csv``
#: (full fine-tuning's loss per step and validation and test metrics per pass) only when it fine-tunes.
FINETUNE_FILES = ("config.json", "results.json", "comparison.csv")
HISTORY_CSV = "history.csv"


def run_finetuning(job: FinetuneJob, out: str | Path, *, overwrite: bool = False, log=None) -> dict:
    r"""Evaluate ``job.model`` (and ``job.baseline``) and write ``results.json`` (+ ``comparison.csv``
    with a baseline) into ``out``, under the output rule of :func:`sipt_lab.core.outputs.run_output`
    (an earlier run there is replaced only with ``overwrite``); returns the results.

    A linear probe of the ``char`` init (a fresh character encoder; pass a
    :func:`~sipt_lab.jobs.pretrain.run_pretraining` directory to score a pre-trained one)
    on random 80/10/10 splits:

    ```pycon
    >>> import pathlib, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> texts = ["red apple", "green apple", "ripe pear", "sour pear", "blue sky", "grey sky", "clear night", "dark night"]
    >>> _ = (tmp / "samples.tsv").write_text("".join(f"s{i}\t{text}\n" for i, text in enumerate(texts)))
    >>> _ = (tmp / "labels.tsv").write_text("".join(f"s{i}\t{'fruit' if i < 4 else 'sky'}\n" for i in range(8)))
    >>> from sipt_lab import FinetuneConfig, FinetuneJob, run_finetuning
    >>> job = FinetuneJob(model="char", samples=str(tmp / "samples.tsv"), labels=str(tmp / "labels.tsv"), mode="probe",
    ...                   finetune=FinetuneConfig(device="cpu"))
    >>> report = run_finetuning(job, tmp / "finetune")
    >>> report["task"], report["kind"], report["sizes"]
    ('labels', 'classification', {'train': 6, 'validation': 1, 'test': 1})
    >>> sorted(report["results"]["model"]["probe"][0])
    ['accuracy', 'macro_f1']
    >>> sorted(path.name for path in (tmp / "finetune").iterdir())
    ['.sipt-lab-files.json', 'config.json', 'results.json']

    ```
    """
    log = logger.info if log is None else log  # the CLI passes print: its lines are the command's output
    outputs.check_output_dir(out)
    parts = check_mode(job.mode)
    if job.seeds < 1:
        raise ConfigError("FinetuneJob.seeds", f"is {job.seeds}; use at least 1")
    ids, texts, task = load_task(job)
    seen = pretrained_indices(job.pretrained_on, ids) if job.pretrained_on else np.empty(0, np.int64)
    splits = job_splits(job, ids, task, seen)
    check_task_splits(task, splits, ids)
    models = {"model": job.model} | ({"baseline": job.baseline} if job.baseline else {})
    loaders = {name: encoder_loader(path, job.finetune.max_len, texts) for name, path in models.items()}
    with outputs.run_output(
        out,
        "finetune",
        finished="results.json",
        overwrite=overwrite,
        resumable=False,
        log=log,
        inputs=[path for path in (job.model, job.baseline, job.samples, job.labels, job.splits) if path],
    ) as out_dir:
        log(work_ahead(job, loaders, texts, splits))
        history: list[dict] = []
        results = {
            name: evaluate_encoder(
                load, texts, task, splits, job.mode, job.finetune, job.seeds, _tagged(history.append, model=name)
            )
            for name, load in loaders.items()
        }
        kind = get_task_kind(task.kind)
        comparisons = []
        outputs.record_files(out_dir, list(FINETUNE_FILES))
        if job.baseline:
            for part in parts:
                comparisons.append(
                    compare_errors(
                        [kind.error(m) for m in results["baseline"][part]],
                        [kind.error(m) for m in results["model"][part]],
                        task=task.name,
                        method=f"model ({part})",
                        baseline=f"baseline ({part})",
                    )
                )
            write_comparison_csv(out_dir / "comparison.csv", comparisons)
        warning = test_size_warning(len(splits.test)) if job.baseline else None
        report = {
            "task": task.name,
            "kind": task.kind,
            "labelled": int(task.samples.size),
            "sizes": {n: int(len(getattr(splits, n))) for n in ("train", "validation", "test")},
            **({"pretrained_left_out": int(np.intersect1d(seen, task.samples).size)} if job.pretrained_on else {}),
            "results": results,
            "comparisons": [c.__dict__ for c in comparisons],
            "warnings": [] if warning is None else [warning],
        }
        save_config(job, out_dir / "config.json")
        if history:
            outputs.record_files(out_dir, [HISTORY_CSV])
            write_text_atomic(out_dir / HISTORY_CSV, history_csv(history))
        write_json_atomic(out_dir / "results.json", report)
    return report


def format_finetune_report(report: dict) -> str:
    """The per-model mean ± sd table, and the comparison table when there is a baseline."""
    lines = [
        f"task {report['task']} ({report['kind']}); train/validation/test: "
        + "/".join(str(v) for v in report["sizes"].values())
    ]
    for name, parts in report["results"].items():
        for part, runs in parts.items():
            shown = ", ".join(f"{key} {format_mean_sd([run[key] for run in runs])}" for key in runs[0])
            lines.append(f"{name:<9} {part:<6} {shown}")
    if report["comparisons"]:
        lines += ["", format_comparison_table([Comparison(**c) for c in report["comparisons"]])]
    lines += [f"warning: {warning}" for warning in report.get("warnings", [])]
    return "\n".join(lines)
