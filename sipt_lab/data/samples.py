"""A researcher's own samples, the pre-training graph over them, and optional labels.

Samples files come in three formats, chosen by the name (a trailing ``.gz`` is decompressed):

* ``.tsv``: ``id<TAB>text`` per line (the text is everything after the first tab; a header line
  such as ``ID<TAB>Text`` is skipped by the rule every TSV reader uses,
  :func:`~sipt_lab.graphs.tsv.is_header`, and so are ``#`` comment lines);
* ``.jsonl`` / ``.json``: JSON Lines, each an object with string-able ``"id"`` and string ``"text"``;
* anything else: plain text, one sample per line, whose id is its 1-based line number.

Ids are strings everywhere (``"01"`` and ``"1"`` are two samples) and hold no tab or line break
(they are written one per line into ``ids.tsv`` files); inside the library sample ``i`` is node ``i``
of the graph, in file order. Edges reuse ``sipt-lab consistency``'s TSV (``u<TAB>v`` per line);
labels its ``node<TAB>label`` TSV; both through the same readers, which skip the same header
line. Every file is read by :func:`~sipt_lab.core.fileio.read_text_lines`: a UTF-8 byte-order mark
dropped, lines split on ``\n`` and ``\r\n`` only. An id may not start with ``#``, which an edges or
labels file reads as a comment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import is_comment, read_text_lines, shorten
from sipt_lab.graphs.arrays import factorize
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.graphs.tsv import is_header, read_edges_tsv, read_labels_tsv

SAMPLE_FORMATS = ("tsv", "jsonl", "txt")


@dataclass(frozen=True)
class Samples:
    """Texts with their ids, in file order.

    Attributes:
        ids: ``n`` distinct non-empty id strings.
        texts: ``n`` non-empty texts; ``texts[i]`` belongs to ``ids[i]`` and is node ``i``.
        source: where they were read from.
    """

    ids: tuple[str, ...]
    texts: tuple[str, ...]
    source: str = ""

    def __len__(self) -> int:
        return len(self.ids)

    def index(self) -> dict[str, int]:
        """``id -> node`` (position in the file)."""
        return {sample_id: i for i, sample_id in enumerate(self.ids)}


def sample_format(path: str | Path) -> str:
    """The format name of ``path`` (see the module docstring), judged by its suffix."""
    name = Path(path).name.lower().removesuffix(".gz")
    if name.endswith(".tsv"):
        return "tsv"
    if name.endswith((".jsonl", ".json")):
        return "jsonl"
    return "txt"


def read_samples(path: str | Path) -> Samples:
    """Read a samples file; bad content is a :class:`SiptError` naming the file and line."""
    path = Path(path)
    lines = read_text_lines(path, "samples file")
    records = _PARSERS[sample_format(path)](path, lines)
    if not records:
        raise SiptError(f"samples file {path} holds no samples; put one sample per line")
    seen: dict[str, int] = {}
    for lineno, sample_id, text in records:
        if not sample_id:
            raise SiptError(f"samples file {path} line {lineno}: empty id; give every sample an id")
        if sample_id.startswith("#"):
            raise SiptError(
                f"samples file {path} line {lineno}: id {shorten(sample_id)} starts with '#', which edges and "
                "labels files read as a comment; rename the id"
            )
        if any(char in sample_id for char in "\t\n\r"):
            raise SiptError(
                f"samples file {path} line {lineno}: id {shorten(sample_id)} holds a tab or line break; "
                "ids are written one per line, so remove them from the id"
            )
        if not text.strip():
            raise SiptError(
                f"samples file {path} line {lineno}: sample {shorten(sample_id)} has an empty text; remove it or add its text"
            )
        if sample_id in seen:
            raise SiptError(
                f"samples file {path} line {lineno}: id {shorten(sample_id)} repeats line {seen[sample_id]}; make ids unique"
            )
        seen[sample_id] = lineno
    return Samples(tuple(r[1] for r in records), tuple(r[2] for r in records), str(path))


def read_sample_graph(edges_path: str | Path, samples: Samples) -> PretrainingGraph:
    """``G_PT`` over ``samples`` from an ``u<TAB>v`` edges TSV of sample ids.

    Self-loops and duplicate edges are dropped (the graph counts them); an id absent from the
    samples is an error naming it and how many edges do so.
    """
    u_names, v_names, _ = read_edges_tsv(edges_path)
    u, v = _nodes_of(u_names, samples, edges_path), _nodes_of(v_names, samples, edges_path)
    return PretrainingGraph.from_edges(u, v, len(samples))


def read_sample_labels(labels_path: str | Path, samples: Samples) -> tuple[np.ndarray, list[str]]:
    """Labels of every sample from a ``node<TAB>label`` TSV, as strings mapped to codes.

    Returns:
        ``(n,)`` int64 codes in sample order and the label names (``names[code]``), sorted.
        A sample without a label, or a label for an unknown id, is an error.
    """
    uniques, codes = factorize(read_sample_label_strings(labels_path, samples))
    return codes.astype(np.int64), [str(x) for x in uniques.tolist()]


def read_sample_label_strings(labels_path: str | Path, samples: Samples) -> np.ndarray:
    """``(n,)`` label strings of every sample, in sample order, from a ``node<TAB>label`` TSV (a
    task kind codes them: classes, numbers or label sets). A sample without a label, or a label
    for an unknown id, is an error."""
    names, label_strings = read_labels_tsv(labels_path)
    nodes = _nodes_of(names, samples, labels_path)
    if len(nodes) != len(samples):
        labelled = set(names)
        missing = [sample_id for sample_id in samples.ids if sample_id not in labelled]
        raise SiptError(
            f"{labels_path} gives no label to {len(missing)} sample(s), e.g. {shorten(missing[0])}; label every sample"
        )
    ordered = np.empty(len(samples), dtype=label_strings.dtype)
    ordered[nodes] = label_strings
    return ordered


def read_labelled_subset(labels_path: str | Path, samples: Samples) -> tuple[np.ndarray, np.ndarray]:
    """``(nodes, labels)``: the ``(m,)`` indices of the samples a ``node<TAB>label`` TSV labels (any
    subset of them, in file order) and their ``(m,)`` label strings; an id that is not a sample is an error."""
    names, label_strings = read_labels_tsv(labels_path)
    return _nodes_of(names, samples, labels_path), label_strings


def read_labelled_in_order(labels_path: str | Path, samples: Samples) -> tuple[np.ndarray, np.ndarray]:
    """:func:`read_labelled_subset` in sample order: ``(m,)`` strictly increasing indices of the
    labelled samples and their ``(m,)`` label strings."""
    nodes, label_strings = read_labelled_subset(labels_path, samples)
    order = np.argsort(nodes, kind="stable")
    return nodes[order], label_strings[order]


def read_labelled_codes(labels_path: str | Path, samples: Samples) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """:func:`read_labelled_in_order` with the labels as codes: ``(nodes, codes, names)``, ``(m,)``
    increasing sample indices, their ``(m,)`` int64 codes and the sorted label names (``names[code]``)."""
    nodes, label_strings = read_labelled_in_order(labels_path, samples)
    uniques, codes = factorize(label_strings)
    return nodes, codes.astype(np.int64), [str(x) for x in uniques.tolist()]


def _nodes_of(names: list[str], samples: Samples, path) -> np.ndarray:
    index = samples.index()
    nodes = np.fromiter((index.get(name, -1) for name in names), dtype=np.int64, count=len(names))
    unknown = np.flatnonzero(nodes < 0)
    if unknown.size:
        raise SiptError(
            f"{path} names id {shorten(names[unknown[0]])}, which is not in the samples file {samples.source} "
            f"({unknown.size} such line(s)); use the samples' ids or add the sample"
        )
    return nodes


def _parse_tsv(path: Path, lines: list[str]) -> list[tuple[int, str, str]]:
    records = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip() or is_comment(line):
            continue
        if "\t" not in line:
            raise SiptError(
                f"samples file {path} line {lineno} has no tab; a .tsv holds id<TAB>text (or use a .txt for one text per line)"
            )
        sample_id, text = line.split("\t", 1)
        if not records and is_header(f"{sample_id}\t{text}", "samples"):
            continue
        records.append((lineno, sample_id.strip(), text.strip()))
    return records


def _parse_jsonl(path: Path, lines: list[str]) -> list[tuple[int, str, str]]:
    records = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise SiptError(f"samples file {path} line {lineno} is not valid JSON; fix or remove that line") from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str) or record.get("id") is None:
            raise SiptError(f'samples file {path} line {lineno} needs an "id" and a string "text" field; add them')
        records.append((lineno, str(record["id"]).strip(), record["text"].strip()))
    return records


def _parse_txt(path: Path, lines: list[str]) -> list[tuple[int, str, str]]:
    return [(lineno, str(lineno), line.strip()) for lineno, line in enumerate(lines, start=1)]


_PARSERS = {"tsv": _parse_tsv, "jsonl": _parse_jsonl, "txt": _parse_txt}
