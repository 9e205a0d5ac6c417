"""Readers of the real domains' raw files, by name (:data:`LOADERS`): a domain's ``load()`` calls them.

* ``fasta``: protein sequences, ``>id description`` then sequence lines -> :class:`Sequences`;
* ``interactions``: an interaction list, ``a<TAB>b`` or ``a,b`` a line, an optional header line ->
  a :class:`~sipt_lab.graph.PretrainingGraph` over given ids;
* ``papers``: JSON Lines, ``{"id", "title", "abstract", "citations": [ids]}`` a line -> :class:`Papers`
  (texts and the citation graph, symmetrised).

Every file goes through :func:`~sipt_lab.fileio.read_text_file` (``.gz`` allowed, UTF-8); a missing
or malformed file is a one-line :class:`SiptError` naming the file, the line and the fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from sipt_lab.errors import SiptError
from sipt_lab.fileio import read_text_file
from sipt_lab.graph import PretrainingGraph


@dataclass(frozen=True)
class Sequences:
    """Attributes: ``ids`` ``(n,)`` distinct record ids, ``sequences`` ``(n,)`` their residues (no whitespace)."""

    ids: list[str]
    sequences: list[str]


@dataclass(frozen=True)
class Papers:
    """Attributes:
    ids: ``(n,)`` distinct paper ids, file order.
    texts: ``(n,)`` ``title + " " + abstract``.
    graph: citations over ``0..n-1``, undirected (``a`` cites ``b`` or ``b`` cites ``a``).
    unknown_citations: citations to ids not in the file, dropped (a crawl's edge cases, reported here).
    """

    ids: list[str]
    texts: list[str]
    graph: PretrainingGraph
    unknown_citations: int


def read_fasta(path: str | Path) -> Sequences:
    """The records of the FASTA file ``path``: id = the header's first word, sequence = the following
    lines joined. SiptError for text before the first header, an empty id or sequence, or a repeated id."""
    ids, sequences, seen = [], [], {}
    chunks: list[str] = []
    for number, line in _lines(path, "FASTA file"):
        if line.startswith(">"):
            _close_record(path, ids, sequences, chunks, seen)
            words = line[1:].split()
            if not words:
                raise SiptError(f"FASTA file {path} line {number}: header without an id; write '>ID description'")
            if words[0] in seen:
                raise SiptError(f"FASTA file {path} line {number}: id {words[0]!r} repeats line {seen[words[0]]}; "
                                "give every record its own id")
            seen[words[0]] = number
            ids.append(words[0])
            chunks = []
        elif not ids:
            raise SiptError(f"FASTA file {path} line {number}: sequence before the first '>' header; "
                            "start the file with '>ID'")
        else:
            chunks.append("".join(line.split()))
    _close_record(path, ids, sequences, chunks, seen)
    if not ids:
        raise SiptError(f"FASTA file {path} has no records; pass a file of '>ID' headers and sequences")
    return Sequences(ids, sequences)


def _close_record(path, ids: list[str], sequences: list[str], chunks: list[str], header_line: dict[str, int]) -> None:
    """Append the open record's sequence (``chunks`` joined), if a record is open."""
    if len(sequences) < len(ids):
        sequence = "".join(chunks)
        if not sequence:
            raise SiptError(f"FASTA file {path} line {header_line[ids[-1]]}: record {ids[-1]!r} has an empty "
                            "sequence; remove it or add its residues")
        sequences.append(sequence)


def read_interactions(path: str | Path, ids: list[str]) -> PretrainingGraph:
    """The interaction list ``path`` as a graph over ``ids`` ``(n,)`` (node ``k`` = ``ids[k]``).

    One pair a line, tab- or comma-separated (each line's own separator: tab if it has one); blank
    lines skipped; the first non-blank line is a header when one of its names is not in ``ids``. Repeats and
    both orders of a pair are one edge; self-interactions are dropped (counted by the graph).
    SiptError for a line without exactly two names or a name not in ``ids``.
    """
    index = {name: k for k, name in enumerate(ids)}
    pairs = []
    for position, (number, line) in enumerate(_lines(path, "interaction list")):
        fields = [field.strip() for field in line.split("\t" if "\t" in line else ",")]
        if len(fields) != 2:
            raise SiptError(f"interaction list {path} line {number} has {len(fields)} fields; "
                            "write two names a line, tab- or comma-separated")
        unknown = [name for name in fields if name not in index]
        if unknown and position == 0:
            continue  # a header
        if unknown:
            raise SiptError(f"interaction list {path} line {number}: {unknown[0]!r} is not a known id; "
                            "list interactions between the domain's samples only")
        pairs.append((index[fields[0]], index[fields[1]]))
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return PretrainingGraph.from_edges(edges[:, 0], edges[:, 1], len(ids))


def read_papers(path: str | Path) -> Papers:
    """The JSON Lines file ``path``, one paper a line; see :class:`Papers`. SiptError for a line that
    is not a JSON object with string ``id``, ``title``, ``abstract`` and a list of string ``citations``,
    or for a repeated id."""
    records, first_line = [], {}
    for number, line in _lines(path, "papers file"):
        record = _paper(path, number, line)
        if record["id"] in first_line:
            raise SiptError(f"papers file {path} line {number}: id {record['id']!r} repeats line "
                            f"{first_line[record['id']]}; give every paper its own id")
        first_line[record["id"]] = number
        records.append(record)
    index = {record["id"]: k for k, record in enumerate(records)}
    citing, cited, unknown = [], [], 0
    for k, record in enumerate(records):
        known = [index[c] for c in record["citations"] if c in index]
        unknown += len(record["citations"]) - len(known)
        citing += [k] * len(known)
        cited += known
    return Papers(
        ids=[record["id"] for record in records],
        texts=[f"{record['title']} {record['abstract']}".strip() for record in records],
        graph=PretrainingGraph.from_edges(np.array(citing, dtype=np.int64), np.array(cited, dtype=np.int64),
                                          len(records)),
        unknown_citations=unknown,
    )


def _paper(path, number: int, line: str) -> dict:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise SiptError(f"papers file {path} line {number} is not JSON ({error.msg}); write one object a line") from None
    fields = {"id": str, "title": str, "abstract": str, "citations": list}
    if not isinstance(record, dict) or any(not isinstance(record.get(k), t) for k, t in fields.items()) \
            or not all(isinstance(c, str) for c in record["citations"]) or not record["id"]:
        raise SiptError(f"papers file {path} line {number} needs a non-empty string 'id', string 'title' and "
                        "'abstract', and a list of string 'citations'; fix that line")
    return record


def _lines(path, what: str):
    """``(line number, line)`` for the non-blank lines of ``path``, right-stripped."""
    for number, line in enumerate(read_text_file(path, what).splitlines(), start=1):
        if line.strip():
            yield number, line.rstrip()


#: Reader name -> reader; a new raw format is an entry here.
LOADERS: dict[str, Callable] = {"fasta": read_fasta, "interactions": read_interactions, "papers": read_papers}


def get_loader(name: str) -> Callable:
    """The reader :data:`LOADERS` ``[name]``; SiptError naming the choices otherwise."""
    try:
        return LOADERS[name]
    except KeyError:
        raise SiptError(f"unknown loader {name!r}; choose one of: {', '.join(LOADERS)}") from None
