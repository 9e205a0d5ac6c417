"""Readers of the fine-tuning tasks' published split files: TAPE's JSON splits (``tape-task``) and
SciBERT's JSON Lines classification splits (``scibert-task``), each -> :class:`SplitRecords`
(listed with the other raw-file readers in :data:`~sipt_lab.domains.loaders.LOADERS`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import read_text_file


def text_lines(path, what: str):
    """``(line number, line)`` for the non-blank lines of ``path``, right-stripped."""
    for number, line in enumerate(read_text_file(path, what).splitlines(), start=1):
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
#: ``ss3``, one 3-state class per residue.
TAPE_TARGETS = {
    "remote_homology": ("fold_label", "class", "test_fold_holdout"),
    "fluorescence": ("log_fluorescence", "value", "test"),
    "stability": ("stability_score", "value", "test"),
    "secondary_structure": ("ss3", "per-residue", "cb513"),
}


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


#: TAPE value type -> (parser ``(raw target, sequence) -> label or None``, what the target must be,
#: a template of ``{target}``).
TAPE_VALUES = {
    "class": (
        lambda value, sequence: None if (n := _tape_number(value, sequence)) is None else str(int(n)),
        "a number '{target}'",
    ),
    "value": (
        lambda value, sequence: None if (n := _tape_number(value, sequence)) is None else float(n),
        "a number '{target}'",
    ),
    "per-residue": (_tape_per_residue, "a list '{target}' of one non-negative int per residue"),
}


def read_tape_task(directory: str | Path, task: str) -> SplitRecords:
    """TAPE's JSON files of ``task`` (a :data:`TAPE_TARGETS` name) in ``directory``: sequences from
    ``primary``, labels from the task's target: class targets as strings, values as floats (a
    number, or a one-element list of one), per-residue targets as lists of ints. SiptError for a
    missing file, a file that is not a JSON list of objects, or a record without a string
    ``primary`` or with a target that is not of its type."""
    if task not in TAPE_TARGETS:
        raise SiptError(f"unknown TAPE task {task!r}; choose one of: {', '.join(TAPE_TARGETS)}")
    target, value_type, test = TAPE_TARGETS[task]
    parse, expected = TAPE_VALUES[value_type]
    texts, labels = {}, {}
    for split, suffix in zip(SPLIT_FILE_NAMES, ("train", "valid", test)):
        path = Path(directory) / f"{task}_{suffix}.json"
        try:
            records = json.loads(read_text_file(path, f"TAPE {task} file"))
        except json.JSONDecodeError as error:
            raise SiptError(f"TAPE {task} file {path} is not JSON ({error.msg}); use TAPE's JSON release") from None
        if not isinstance(records, list) or not records:
            raise SiptError(
                f"TAPE {task} file {path} must be a non-empty JSON list of records; use TAPE's JSON release"
            )
        texts[split], labels[split] = [], []
        for k, record in enumerate(records):
            sequence = record.get("primary") if isinstance(record, dict) else None
            label = parse(record.get(target), sequence) if isinstance(sequence, str) and sequence else None
            if label is None:
                raise SiptError(
                    f"TAPE {task} file {path} record {k} needs a non-empty string 'primary' and "
                    f"{expected.format(target=target)}; fix or drop that record"
                )
            texts[split].append(sequence)
            labels[split].append(label)
    return SplitRecords(texts, labels)


def read_scibert_task(directory: str | Path) -> SplitRecords:
    """A SciBERT text-classification task: ``train.txt``, ``dev.txt``, ``test.txt`` in ``directory``,
    JSON Lines with a string ``text`` and ``label`` (other keys ignored). SiptError for a missing file
    or a line without them."""
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
            texts[split].append(record["text"])
            labels[split].append(record["label"])
        if not texts[split]:
            raise SiptError(f"SciBERT task file {path} has no records; every split needs samples")
    return SplitRecords(texts, labels)
