"""Readers of the real domains' raw files, by name (:data:`LOADERS`): a domain's ``load()`` calls them.

* ``fasta``: protein sequences, ``>id description`` then sequence lines -> :class:`Sequences`;
* ``interactions``: an interaction list, ``a<TAB>b`` or ``a,b`` a line, an optional header line ->
  a :class:`~sipt_lab.graphs.graph.PretrainingGraph` over given ids;
* ``papers``: JSON Lines, ``{"id", "title", "abstract", "citations": [ids]}`` a line -> :class:`Papers`
  (texts and the citation graph, symmetrised);
* ``tape-task``: a TAPE task's JSON split files (``{task}_train.json``, ``{task}_valid.json``,
  ``{task}_{test}.json``, each a list of ``{"primary": sequence, <target>: value}``, the value a
  number or, for secondary structure's ``ss3``, one class per residue; contact prediction's
  ``proteinnet_*.json`` hold ``tertiary`` coordinates and ``valid_mask``) -> :class:`SplitRecords`;
* ``scibert-task``: a SciBERT text-classification task directory (``train.txt``, ``dev.txt``,
  ``test.txt``, JSON Lines ``{"text", "label"}``; relation extraction's sentences must mark both
  entities) -> :class:`SplitRecords`;
* ``tu-graphs``: a graph dataset in PyTorch Geometric's ``TUDataset`` raw format (``NAME_A.txt``,
  ``NAME_graph_indicator.txt``, optional ``NAME_node_labels.txt`` and ``NAME_edge_attributes.txt``)
  -> :class:`GraphSamples`;
* ``term-sets``: ``id<TAB>term;term;...`` a line (GO annotations) -> :class:`TermSets` (a sparse 0/1 matrix).

Every file goes through :func:`~sipt_lab.core.fileio.read_text_file` (``.gz`` allowed, UTF-8); a missing
or malformed file is a one-line :class:`SiptError` naming the file, the line and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import read_text_file, read_text_lines
from sipt_lab.domains.task_loaders import read_scibert_task, read_tape_task, text_lines
from sipt_lab.graphs.graph import PretrainingGraph


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
    for number, line in text_lines(path, "FASTA file"):
        if line.startswith(">"):
            _close_record(path, ids, sequences, chunks, seen)
            words = line[1:].split()
            if not words:
                raise SiptError(f"FASTA file {path} line {number}: header without an id; write '>ID description'")
            if words[0] in seen:
                raise SiptError(
                    f"FASTA file {path} line {number}: id {words[0]!r} repeats line {seen[words[0]]}; "
                    "give every record its own id"
                )
            seen[words[0]] = number
            ids.append(words[0])
            chunks = []
        elif not ids:
            raise SiptError(
                f"FASTA file {path} line {number}: sequence before the first '>' header; start the file with '>ID'"
            )
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
            raise SiptError(
                f"FASTA file {path} line {header_line[ids[-1]]}: record {ids[-1]!r} has an empty "
                "sequence; remove it or add its residues"
            )
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
    for position, (number, line) in enumerate(text_lines(path, "interaction list")):
        fields = [field.strip() for field in line.split("\t" if "\t" in line else ",")]
        if len(fields) != 2:
            raise SiptError(
                f"interaction list {path} line {number} has {len(fields)} fields; "
                "write two names a line, tab- or comma-separated"
            )
        unknown = [name for name in fields if name not in index]
        if unknown and position == 0:
            continue  # a header
        if unknown:
            raise SiptError(
                f"interaction list {path} line {number}: {unknown[0]!r} is not a known id; "
                "list interactions between the domain's samples only"
            )
        pairs.append((index[fields[0]], index[fields[1]]))
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return PretrainingGraph.from_edges(edges[:, 0], edges[:, 1], len(ids))


def read_papers(path: str | Path) -> Papers:
    """The JSON Lines file ``path``, one paper a line; see :class:`Papers`. SiptError for a line that
    is not a JSON object with string ``id``, ``title``, ``abstract`` and a list of string ``citations``,
    or for a repeated id."""
    records, first_line = [], {}
    for number, line in text_lines(path, "papers file"):
        record = _paper(path, number, line)
        if record["id"] in first_line:
            raise SiptError(
                f"papers file {path} line {number}: id {record['id']!r} repeats line "
                f"{first_line[record['id']]}; give every paper its own id"
            )
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
        graph=PretrainingGraph.from_edges(
            np.array(citing, dtype=np.int64), np.array(cited, dtype=np.int64), len(records)
        ),
        unknown_citations=unknown,
    )


def _paper(path, number: int, line: str) -> dict:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise SiptError(
            f"papers file {path} line {number} is not JSON ({error.msg}); write one object a line"
        ) from None
    fields = {"id": str, "title": str, "abstract": str, "citations": list}
    if (
        not isinstance(record, dict)
        or any(not isinstance(record.get(k), t) for k, t in fields.items())
        or not all(isinstance(c, str) for c in record["citations"])
        or not record["id"]
    ):
        raise SiptError(
            f"papers file {path} line {number} needs a non-empty string 'id', string 'title' and "
            "'abstract', and a list of string 'citations'; fix that line"
        )
    return record


@dataclass(frozen=True)
class GraphSamples:
    """Attributes:
    ids: ``(n,)`` graph ids, ``"1".."n"`` (TUDataset numbers graphs from 1).
    graphs: ``(n,)`` :class:`torch_geometric.data.Data`: ``x`` ``(n_i,)`` int64 node codes,
        ``edge_index`` ``(2, 2 e_i)``: the ``e_i`` undirected edges ``a < b`` (self-loops dropped),
        then the same edges reversed, nodes in file order; with an edge-attribute file,
        ``edge_attr`` ``(2 e_i,)`` int64 edge codes (an edge's first line's attributes, both directions).
    code_names: node code ``c`` is the label ``code_names[c]`` of the node-label file (one code ``0``
        named ``""`` when there is no such file).
    edge_code_names: edge code ``c`` is the attribute row ``edge_code_names[c]`` (values joined by
        ``,``); empty without an edge-attribute file.
    """

    ids: list[str]
    graphs: list
    code_names: tuple[str, ...]
    edge_code_names: tuple[str, ...] = ()


def read_tu_graphs(directory: str | Path) -> GraphSamples:
    """The one TUDataset (``NAME_A.txt`` + ``NAME_graph_indicator.txt`` [+ ``NAME_node_labels.txt``]
    [+ ``NAME_edge_attributes.txt``]) in ``directory``. ``NAME_A.txt``: ``i, j`` a line, 1-based node
    numbers over all graphs; ``graph_indicator``: line ``k`` is the graph (``1..n``, each used) of
    node ``k``; ``node_labels``: line ``k`` is node ``k``'s label; ``edge_attributes``: line ``k`` the
    attributes (comma-separated) of the edge on line ``k`` of ``NAME_A.txt`` (Hu et al.'s 7
    interaction types, :func:`~sipt_lab.domains.convert.convert_pyg_bio`). SiptError for a missing or
    second dataset, a line that is not integers, a node number out of range, an edge between two
    graphs, or an edge-attribute file of another length."""
    import torch
    from torch_geometric.data import Data

    directory = Path(directory)
    found = sorted(directory.glob("*_A.txt"))
    if len(found) != 1:
        raise SiptError(
            f"{directory} holds {len(found)} TUDataset adjacency files (NAME_A.txt); put exactly one dataset there"
        )
    name = found[0].name[: -len("_A.txt")]
    indicator = _integers(directory / f"{name}_graph_indicator.txt", 1)
    n_nodes, n_graphs = indicator.size, int(indicator.max()) if indicator.size else 0
    if indicator.min(initial=1) < 1 or np.unique(indicator).size != n_graphs:
        raise SiptError(
            f"{directory / f'{name}_graph_indicator.txt'} must number the graphs 1..n, each with a node; renumber them"
        )
    edges = _integers(found[0], 2) - 1
    if edges.size and (edges.min() < 0 or edges.max() >= n_nodes):
        raise SiptError(
            f"{found[0]} names node {int(edges.max()) + 1 if edges.max() >= n_nodes else int(edges.min()) + 1} "
            f"but the graph indicator has {n_nodes} nodes; fix the node numbers"
        )
    graph_of = indicator - 1
    if np.any(graph_of[edges[:, 0]] != graph_of[edges[:, 1]]):
        raise SiptError(f"{found[0]} links nodes of two different graphs; each edge must stay within one graph")
    code_names, codes = _row_codes(directory / f"{name}_node_labels.txt", "label", n_nodes, "node")
    edge_names, edge_codes = _row_codes(directory / f"{name}_edge_attributes.txt", "attribute row", len(edges), "edge")
    order = np.argsort(graph_of, kind="stable")
    starts = np.searchsorted(graph_of[order], np.arange(n_graphs + 1))
    local = np.empty(n_nodes, dtype=np.int64)
    local[order] = np.arange(n_nodes) - np.repeat(starts[:-1], np.diff(starts))
    edge_order = np.argsort(graph_of[edges[:, 0]], kind="stable")
    edges, edge_codes = edges[edge_order], edge_codes[edge_order]
    edge_starts = np.searchsorted(graph_of[edges[:, 0]], np.arange(n_graphs + 1))
    graphs = []
    for g in range(n_graphs):
        pairs = np.sort(local[edges[edge_starts[g] : edge_starts[g + 1]]], axis=1)
        kept = np.flatnonzero(pairs[:, 0] != pairs[:, 1])
        forward, first = np.unique(pairs[kept], axis=0, return_index=True)
        forward = forward.reshape(-1, 2)
        attributes = {}
        if edge_names:
            line_codes = edge_codes[edge_starts[g] : edge_starts[g + 1]][kept][first]
            attributes["edge_attr"] = torch.as_tensor(np.concatenate([line_codes, line_codes]), dtype=torch.long)
        graphs.append(
            Data(
                x=torch.as_tensor(codes[order[starts[g] : starts[g + 1]]], dtype=torch.long),
                edge_index=torch.as_tensor(np.concatenate([forward, forward[:, ::-1]]).T.copy(), dtype=torch.long),
                **attributes,
            )
        )
    return GraphSamples([str(g + 1) for g in range(n_graphs)], graphs, tuple(code_names), tuple(edge_names))


def _row_codes(path: Path, noun: str, rows: int, unit: str) -> tuple[list[str], np.ndarray]:
    """The distinct rows of ``path`` (one a line, values comma-separated, spaces dropped), sorted, and
    ``(rows,)`` each line's code; ``([""], zeros)`` for nodes and ``([], zeros)`` for edges when
    ``path`` does not exist. SiptError when its line count is not ``rows``."""
    if not path.is_file():
        return ([""] if unit == "node" else []), np.zeros(rows, dtype=np.int64)
    lines = read_text_lines(path, f"{unit} {noun} file")
    raw = [",".join(part.strip() for part in line.split(",")) for line in lines if line.strip()]
    if len(raw) != rows:
        raise SiptError(f"{path} has {len(raw)} {noun}s for {rows} {unit}s; give one {noun} a {unit}")
    names, codes = np.unique(np.array(raw, dtype=str), return_inverse=True)
    return names.tolist(), codes.ravel().astype(np.int64)


def _integers(path: Path, columns: int) -> np.ndarray:
    """The integers of ``path`` (commas or whitespace between them) as ``(m,)`` or ``(m, columns)`` int64."""
    text = read_text_file(path, "TUDataset file").replace(",", " ")
    try:
        values = np.array(text.split(), dtype=np.int64)
    except ValueError:
        raise SiptError(f"TUDataset file {path} holds something other than integers; fix it") from None
    if values.size % columns:
        raise SiptError(f"TUDataset file {path} must hold {columns} integers a line; fix the odd line")
    return values.reshape(-1, columns) if columns > 1 else values


@dataclass(frozen=True)
class TermSets:
    """Attributes:
    matrix: ``(n, T)`` 0/1 CSR, row ``k`` the terms of ``ids[k]`` (empty for an id the file does not list).
    terms: ``(T,)`` term names, sorted, column ``t`` is ``terms[t]``.
    listed: ``(n,)`` bool, ids that have a line.
    """

    matrix: sp.csr_array
    terms: tuple[str, ...]
    listed: np.ndarray


def read_term_sets(path: str | Path, ids: list[str], skip_unknown: bool = False) -> TermSets:
    """``id<TAB>term;term;...`` a line (an empty term list, or the id alone, allowed) over the samples ``ids`` ``(n,)``.
    SiptError for a line without a tab, an unknown (unless ``skip_unknown``: a file over more
    samples than ``ids``, read for a slice of them) or repeated id."""
    index = {name: k for k, name in enumerate(ids)}
    rows, names, listed = [], [], np.zeros(len(ids), dtype=bool)
    for number, line in text_lines(path, "term file"):
        name, tab, terms = line.partition("\t")
        if not tab and name not in index:  # a known id alone (its tab stripped) has no terms
            raise SiptError(f"term file {path} line {number} has no tab; write 'id<TAB>term;term'")
        if name not in index and skip_unknown:
            continue
        if name not in index:
            raise SiptError(
                f"term file {path} line {number}: {name!r} is not a known sample id; list the domain's samples only"
            )
        if listed[index[name]]:
            raise SiptError(f"term file {path} line {number}: id {name!r} is listed twice; give each id one line")
        listed[index[name]] = True
        for term in filter(None, (t.strip() for t in terms.split(";"))):
            rows.append(index[name])
            names.append(term)
    terms, columns = np.unique(np.array(names, dtype=str), return_inverse=True)
    matrix = sp.csr_array(
        (np.ones(len(rows), dtype=np.int8), (np.array(rows, dtype=np.int64), columns.ravel())),
        shape=(len(ids), terms.size),
    )
    matrix.sum_duplicates()
    matrix.data[:] = 1
    return TermSets(matrix, tuple(terms.tolist()), listed)


#: Reader name -> reader; a new raw format is an entry here.
LOADERS: dict[str, Callable] = {
    "fasta": read_fasta,
    "interactions": read_interactions,
    "papers": read_papers,
    "tape-task": read_tape_task,
    "scibert-task": read_scibert_task,
    "tu-graphs": read_tu_graphs,
    "term-sets": read_term_sets,
}


def get_loader(name: str) -> Callable:
    """The reader :data:`LOADERS` ``[name]``; SiptError naming the choices otherwise."""
    try:
        return LOADERS[name]
    except KeyError:
        raise SiptError(f"unknown loader {name!r}; choose one of: {', '.join(LOADERS)}") from None
