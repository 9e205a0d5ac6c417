"""The graph file format: ``u<TAB>v`` edge lines and ``node<TAB>label`` lines.

Node names in files are strings; the library maps them to ``0..n-1`` at this boundary.
"""

from __future__ import annotations

import codecs
import gzip
from dataclasses import dataclass

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import is_comment, read_text_lines, reading_errors, shorten, write_text_atomic
from sipt_lab.graphs.graph import PretrainingGraph


@dataclass(frozen=True)
class LabelledGraph:
    """A graph read from TSV files with its node labels.

    ``labels``: ``(n,)`` int64 codes; ``label_names[code]`` is the label string from the file;
    ``node_names[node]`` is the node's name in the files; ``unlabelled_edges``: edge lines left out
    because they name a node without a label (their self-loops and repeats are not counted apart).
    """

    graph: PretrainingGraph
    labels: np.ndarray
    label_names: list[str]
    node_names: list[str]
    dropped_self_loops: int
    dropped_duplicates: int
    unlabelled_edges: int = 0


def read_labels_tsv(path) -> tuple[list[str], np.ndarray]:
    """``node<TAB>label`` lines -> ``(node names in file order, (n,) array of label strings)``.

    ``#`` comments, blank lines and a header line (:func:`is_header`) are skipped; lines
    without a tab may separate the two fields with spaces. A node listed twice with the same label is kept once; with different labels it
    is an error naming the node and both lines.
    """
    lines, _ = _read_data_lines(path, "labels")
    names: list[str] = []
    labels: list[str] = []
    seen: dict[str, tuple[int, int]] = {}  # node -> (index, line number)
    for lineno, line in lines:
        node, label = _two_fields(line, path, lineno, "node<TAB>label")
        if node not in seen:
            seen[node] = (len(names), lineno)
            names.append(node)
            labels.append(label)
        elif labels[seen[node][0]] != label:
            raise SiptError(
                f"{path}: line {lineno}: node {shorten(node)} has label {shorten(label)} but line {seen[node][1]} "
                f"gave it {shorten(labels[seen[node][0]])}; give each node one label"
            )
    return names, np.array(labels, dtype=str)


def read_edges_tsv(path) -> tuple[list[str], list[str], int]:
    """``u<TAB>v`` lines (or whitespace-separated) -> ``(u names, v names, n comment/blank/header lines)``."""
    return _read_edges(path)


def load_graph_tsv(edges_path, labels_path) -> LabelledGraph:
    """Read a labelled graph: nodes are those of the labels file (in its order), edges from the edges file.

    The labels may cover a subset of the nodes the edges name: an edge line naming a node without
    a label is left out and counted (``unlabelled_edges``), so the graph is the one induced on the
    labelled nodes, the rule of :func:`~sipt_lab.graphs.consistency.labelled_subgraph`. Self-loops
    and duplicate edges among the rest are dropped and counted. Labels are strings (``01`` and ``1``
    are two classes); their codes follow the sorted label strings.
    """
    node_names, label_strings = read_labels_tsv(labels_path)
    index = {name: i for i, name in enumerate(node_names)}
    u_names, v_names, _ = _read_edges(edges_path)
    u = np.fromiter((index.get(x, -1) for x in u_names), dtype=np.int64, count=len(u_names))
    v = np.fromiter((index.get(x, -1) for x in v_names), dtype=np.int64, count=len(v_names))
    labelled = (u >= 0) & (v >= 0)
    graph = PretrainingGraph.from_edges(u[labelled], v[labelled], len(node_names))
    label_names, codes = _factorize_label_strings(label_strings)
    return LabelledGraph(
        graph,
        codes,
        label_names,
        node_names,
        graph.dropped_self_loops,
        graph.dropped_duplicates,
        int(labelled.size - np.count_nonzero(labelled)),
    )


def write_edges_tsv(path, graph: PretrainingGraph, node_names=None) -> None:
    """Write one ``u<TAB>v`` line per undirected edge (``u < v`` by node id), atomically."""
    names = _node_name_list(graph.n_nodes, node_names)
    text = "".join(f"{names[a]}\t{names[b]}\n" for a, b in graph.edges().tolist())
    write_text_atomic(path, text)


def write_labels_tsv(path, labels, node_names=None) -> None:
    """Write one ``node<TAB>label`` line per node, atomically; ``labels`` is ``(n,)`` of anything str()-able."""
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-D (n,), got shape {labels.shape}")
    names = _node_name_list(labels.size, node_names)
    label_strings = [str(x) for x in labels.tolist()]
    for label in label_strings:
        _check_field(label, "label")
    write_text_atomic(path, "".join(f"{a}\t{b}\n" for a, b in zip(names, label_strings)))


def _read_data_lines(path, what: str) -> tuple[list[tuple[int, str]], int]:
    """Non-comment, non-blank ``(line number, stripped line)`` pairs and the number skipped."""
    lines = []
    skipped = 0
    for lineno, raw in enumerate(read_text_lines(path, f"{what} file"), start=1):
        line = raw.strip()
        if not line and "\t" in raw and what == "edges":  # two empty fields, as the streamed engines see it
            raise SiptError(f"{path}: line {lineno} has an empty field ('', ''); give both fields of every line")
        if not line or is_comment(line):
            skipped += 1
        else:
            lines.append((lineno, line))
    if lines and is_header(lines[0][1], what):
        lines = lines[1:]
        skipped += 1
    if not lines:
        raise SiptError(
            f"{what} file {path} is empty (no data lines); expected one "
            f"{'node<TAB>label' if what == 'labels' else 'u<TAB>v'} pair per line"
        )
    return lines, skipped


#: Column names of a header line, per TSV kind: the first data line is skipped when its two fields
#: are one name of each set (any case), e.g. ``id<TAB>label`` or ``source<TAB>target``. Every
#: command reads labels and edges through these readers, so all of them skip the same header.
HEADER_NAMES = {
    "labels": (
        {"id", "node", "sample", "sample_id", "node_id", "name"},
        {"label", "labels", "class", "category", "target", "y"},
    ),
    "edges": ({"u", "source", "src", "from", "node1", "id1"}, {"v", "target", "dst", "to", "node2", "id2"}),
    "samples": ({"id", "node", "sample", "sample_id", "node_id", "name"}, {"text", "texts", "sentence", "sequence"}),
    "splits": ({"id", "node", "sample", "sample_id", "node_id", "name"}, {"split", "set", "fold"}),
}


def is_header(line: str, what: str, delimiter: str | None = None) -> bool:
    """Whether ``line``, the first data line of a ``what`` (``labels`` / ``edges`` / ``samples``) file, is its
    header: two fields, split on ``delimiter`` (None: on tabs, or on spaces in a line without a
    tab; ``","``: CSV, whose fields may be quoted), that are one name of each set of
    :data:`HEADER_NAMES` in any case."""
    if delimiter is None:
        fields = line.split("\t") if "\t" in line else line.split()
    else:
        fields = line.split(delimiter)
    fields = [f.strip().removeprefix('"').removesuffix('"') if delimiter == "," else f for f in fields]
    fields = [f.strip().lower() for f in fields]
    firsts, seconds = HEADER_NAMES.get(what, (set(), set()))
    return len(fields) == 2 and fields[0] in firsts and fields[1] in seconds


def header_end(path, what: str, delimiter: str = "\t") -> int:
    """Bytes (uncompressed) from the start of the text file ``path`` (``.gz``: gzip) to the end of
    its header line by :func:`is_header` (fields split on ``delimiter``, or as the in-memory reader
    splits them when it is a tab); 0 when its first data line is not a header."""
    offset = 0
    with reading_errors(path, f"{what} file"), (gzip.open if str(path).endswith(".gz") else open)(path, "rb") as handle:
        for raw in handle:
            line = raw.removeprefix(codecs.BOM_UTF8) if offset == 0 else raw
            offset += len(raw)
            line = line.decode("utf-8", "replace").strip()
            if line and not is_comment(line):
                return offset if is_header(line, what, None if delimiter == "\t" else delimiter) else 0
    return 0


def _read_edges(path) -> tuple[list[str], list[str], int]:
    lines, skipped = _read_data_lines(path, "edges")
    u, v = [], []
    for lineno, line in lines:
        a, b = _two_fields(line, path, lineno, "u<TAB>v")
        u.append(a)
        v.append(b)
    return u, v, skipped


def _two_fields(line: str, path, lineno: int, expected: str) -> tuple[str, str]:
    fields = [f.strip() for f in line.split("\t")] if "\t" in line else line.split()
    if len(fields) != 2 or not all(fields):
        raise SiptError(f"{path}: line {lineno}: expected two fields {expected}, got {shorten(line)}")
    return fields[0], fields[1]


def _factorize_label_strings(labels: np.ndarray) -> tuple[list[str], np.ndarray]:
    """``(n,)`` label strings -> (sorted distinct strings, ``(n,)`` int64 codes into them).

    Labels are compared as strings: ``01`` and ``1`` are two classes, never one number.
    """
    uniques, codes = np.unique(labels.astype(str), return_inverse=True)
    return uniques.tolist(), codes.astype(np.int64).reshape(-1)


def _node_name_list(n: int, node_names) -> list[str]:
    if node_names is None:
        return [str(i) for i in range(n)]
    names = [str(x) for x in node_names]
    if len(names) != n:
        raise SiptError(f"got {len(names)} node names for {n} nodes; pass one name per node")
    if len(set(names)) != n:
        raise SiptError("node names must be distinct; rename the repeated nodes")
    for name in names:
        _check_field(name, "node name")
    return names


def _check_field(value: str, what: str) -> None:
    if not value or value != value.strip() or "\t" in value or "\n" in value or value.startswith("#"):
        raise SiptError(
            f"{what} {shorten(value)} cannot be written to TSV (empty, tab/newline, surrounding "
            "space or leading '#'); rename it"
        )
