"""Readers of the fine-tuning tasks' published split files: TAPE's JSON splits (``tape-task``) and
SciBERT's JSON Lines classification splits (``scibert-task``; its relation-extraction task's
sentences checked for both entity markers), each -> :class:`SplitRecords` (listed with the other
raw-file readers in :data:`~sipt_lab.domains.loaders.LOADERS`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import read_text_file, read_text_lines, split_lines
from sipt_lab.data.contacts import contact_map, coordinate_contacts


def text_lines(path, what: str):
    """``(line number, line)`` for the non-blank lines of ``path``, right-stripped."""
    for number, line in enumerate(read_text_lines(path, what), start=1):
        if line.strip():
            yield number, line.rstrip()


SPLIT_FILE_NAMES = ("train", "validation", "test")


@dataclass(frozen=True)
class SplitRecords:
    """A task's published splits. Attributes: ``texts`` and ``labels``, each split name
    (``train``, ``validation``, ``test``) -> ``(m_s,)`` texts and their raw labels (strings, floats,
    or per-residue lists of ints)."""

    texts: dict[str, list[str]]
    labels: dict[str, list]


#: TAPE's tasks: name -> (target field, value type (:data:`TAPE_VALUES`), test split file suffix).
#: Secondary structure is tested on CB513 (TAPE also ships ``casp12`` and ``ts115``), its target is
#: ``ss3``, one 3-state class per residue; contact prediction reads ProteinNet's ``tertiary``
#: coordinates (or a ``contact_map``) and ``valid_mask``.
TAPE_TARGETS = {
    "remote_homology": ("fold_label", "class", "test_fold_holdout"),
    "fluorescence": ("log_fluorescence", "value", "test"),
    "stability": ("stability_score", "value", "test"),
    "secondary_structure": ("ss3", "per-residue", "cb513"),
    "contact_prediction": ("tertiary", "contacts", "test"),
}
#: TAPE task -> its directory and file stem where they are not the task's name.
TAPE_STEMS = {"contact_prediction": "proteinnet"}


def tape_stem(task: str) -> str:
    """The directory and file stem of TAPE's ``task`` files (``proteinnet`` for contact prediction)."""
    return TAPE_STEMS.get(task, task)


def _tape_number(value, sequence: str):
    """A number, or a one-element list of one, as TAPE writes scalar targets; None otherwise."""
    value = value[0] if isinstance(value, list) and len(value) == 1 else value
    return None if isinstance(value, bool) or not isinstance(value, (int, float)) else value


def _tape_per_residue(value, sequence: str):
    """A list of non-negative ints, one per residue of ``sequence``; None otherwise."""
    if (
        not isinstance(value, list)
        or len(value) != len(sequence)
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
    ):
        return None
    return value


def _residue_array(record: dict, key: str, sequence: str, shape: tuple, dtype) -> np.ndarray:
    """``record[key]`` as an array of ``(len(sequence), *shape)``; ValueError naming the field and
    its length when it is not one entry per residue."""
    try:
        value = np.asarray(record[key], dtype=dtype)
    except (TypeError, ValueError):
        raise ValueError(f"'{key}' is not an array of numbers") from None
    if value.ndim != 1 + len(shape) or value.shape[0] != len(sequence) or value.shape[1:] != shape:
        raise ValueError(
            f"'{key}' has shape {value.shape} but 'primary' has {len(sequence)} residues "
            f"(expected {(len(sequence), *shape)})"
        )
    return value


def _tape_contacts(record: dict, target: str, sequence: str):
    """A :class:`~sipt_lab.data.contacts.ContactMap` from ``record``'s ``valid_mask`` (all residues
    when absent) and its coordinates ``target`` ``(L, 3)`` or ``contact_map`` ``(L, L)`` 0/1; None
    when it has neither; ValueError when one's length disagrees with the sequence."""
    valid = (
        _residue_array(record, "valid_mask", sequence, (), np.float64) > 0
        if "valid_mask" in record
        else np.ones(len(sequence), dtype=bool)
    )
    if "contact_map" in record:
        return contact_map(_residue_array(record, "contact_map", sequence, (len(sequence),), np.float64), valid)
    if target in record:
        return coordinate_contacts(_residue_array(record, target, sequence, (3,), np.float64), valid)
    return None


#: TAPE value type -> (parser ``(record, target field, sequence) -> label or None`` (ValueError for a
#: target whose residues disagree with the sequence), what the target must be, a template of ``{target}``).
TAPE_VALUES = {
    "class": (
        lambda record, target, sequence: (
            None if (n := _tape_number(record.get(target), sequence)) is None else str(int(n))
        ),
        "a number '{target}'",
    ),
    "value": (
        lambda record, target, sequence: (
            None if (n := _tape_number(record.get(target), sequence)) is None else float(n)
        ),
        "a number '{target}'",
    ),
    "per-residue": (
        lambda record, target, sequence: _tape_per_residue(record.get(target), sequence),
        "a list '{target}' of one non-negative int per residue",
    ),
    "contacts": (_tape_contacts, "coordinates '{target}' (L x 3) or a 'contact_map' (L x L)"),
}


def _tape_records(path: Path, task: str) -> list:
    """The records of ``path`` (a JSON list, TAPE's release) or, when only it exists, of
    ``path`` with suffix ``.jsonl`` (one record a line, a small form for fixtures)."""
    lines = path.with_suffix(".jsonl")
    if not path.is_file() and lines.is_file():
        path = lines
    text = read_text_file(path, f"TAPE {task} file")
    try:
        records = (
            [json.loads(line) for line in split_lines(text) if line.strip()]
            if path.suffix == ".jsonl"
            else json.loads(text)
        )
    except json.JSONDecodeError as error:
        raise SiptError(f"TAPE {task} file {path} is not JSON ({error.msg}); use TAPE's JSON release") from None
    if not isinstance(records, list) or not records:
        raise SiptError(f"TAPE {task} file {path} must be a non-empty JSON list of records; use TAPE's JSON release")
    return records


def read_tape_task(directory: str | Path, task: str) -> SplitRecords:
    """TAPE's JSON files of ``task`` (a :data:`TAPE_TARGETS` name) in ``directory``
    (``{stem}_{split}.json``, :func:`tape_stem`; a ``.jsonl`` file of one record a line is read where
    the ``.json`` is missing): sequences from ``primary``, labels from the task's target: class
    targets as strings, values as floats (a number, or a one-element list of one), per-residue
    targets as lists of ints, contacts as :class:`~sipt_lab.data.contacts.ContactMap`. SiptError for
    a missing file, a file that is not a JSON list of objects, or a record without a string
    ``primary``, with a target that is not of its type, or (naming the record) with coordinates,
    contact map or valid mask whose length disagrees with the sequence."""
    if task not in TAPE_TARGETS:
        raise SiptError(f"unknown TAPE task {task!r}; choose one of: {', '.join(TAPE_TARGETS)}")
    target, value_type, test = TAPE_TARGETS[task]
    parse, expected = TAPE_VALUES[value_type]
    texts, labels = {}, {}
    for split, suffix in zip(SPLIT_FILE_NAMES, ("train", "valid", test)):
        path = Path(directory) / f"{tape_stem(task)}_{suffix}.json"
        records = _tape_records(path, task)
        texts[split], labels[split] = [], []
        for k, record in enumerate(records):
            sequence = record.get("primary") if isinstance(record, dict) else None
            try:
                label = parse(record, target, sequence) if isinstance(sequence, str) and sequence else None
            except ValueError as problem:
                name = f" (id {record['id']!r})" if isinstance(record.get("id"), str) else ""
                raise SiptError(
                    f"TAPE {task} file {path} record {k}{name}: {problem}; give one entry per residue "
                    "or drop that record"
                ) from None
            if label is None:
                raise SiptError(
                    f"TAPE {task} file {path} record {k} needs a non-empty string 'primary' and "
                    f"{expected.format(target=target)}; fix or drop that record"
                )
            texts[split].append(sequence)
            labels[split].append(label)
    return SplitRecords(texts, labels)


#: SciBERT's entity markers of its relation-extraction sentences: the two entities of a relation
#: are written ``<< entity >>`` and ``[[ entity ]]``.
ENTITY_MARKERS = (("<<", ">>"), ("[[", "]]"))


def entity_marker_problem(text: str) -> str | None:
    """What ``text`` lacks of :data:`ENTITY_MARKERS` (each opening marker followed by its closing
    one), or None when both entities are marked."""
    for opening, closing in ENTITY_MARKERS:
        start = text.find(opening)
        if start < 0 or text.find(closing, start + len(opening)) < 0:
            return f"has no '{opening} ... {closing}' entity marker"
    return None


#: SciBERT task -> what each of its texts must hold, ``text -> problem or None``: the relation
#: extraction task (SciERC) classifies the relation between two marked entities.
SCIBERT_TEXT_CHECKS = {"sciie-relation-extraction": entity_marker_problem}


def read_scibert_task(directory: str | Path, task: str | None = None) -> SplitRecords:
    """A SciBERT text-classification task: ``train.txt``, ``dev.txt``, ``test.txt`` in ``directory``,
    JSON Lines with a string ``text`` and ``label`` (other keys ignored). ``task``: its name (default:
    the directory's), whose :data:`SCIBERT_TEXT_CHECKS` entry, if any, every text must pass. SiptError
    for a missing file, a line without them, or a text that fails its task's check (naming the line)."""
    check = SCIBERT_TEXT_CHECKS.get(task or Path(directory).name)
    texts, labels = {}, {}
    for split, name in zip(SPLIT_FILE_NAMES, ("train", "dev", "test")):
        path = Path(directory) / f"{name}.txt"
        texts[split], labels[split] = [], []
        for number, line in text_lines(path, "SciBERT task file"):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise SiptError(
                    f"SciBERT task file {path} line {number} is not JSON ({error.msg}); write one object a line"
                ) from None
            if (
                not isinstance(record, dict)
                or not isinstance(record.get("text"), str)
                or not isinstance(record.get("label"), str)
            ):
                raise SiptError(
                    f"SciBERT task file {path} line {number} needs a string 'text' and 'label'; fix that line"
                )
            problem = check(record["text"]) if check is not None else None
            if problem:
                raise SiptError(
                    f"SciBERT task file {path} line {number}: the sentence {problem}; a relation needs both "
                    "entities marked, '<< first >>' and '[[ second ]]', as SciBERT's files write them"
                )
            texts[split].append(record["text"])
            labels[split].append(record["label"])
        if not texts[split]:
            raise SiptError(f"SciBERT task file {path} has no records; every split needs samples")
    return SplitRecords(texts, labels)
