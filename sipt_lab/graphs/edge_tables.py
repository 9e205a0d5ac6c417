"""Columnar (pyarrow) readers of a labelled edge list too large for Python lists.

Formats follow the file name: Parquet (``.parquet``/``.pq``, or a directory of Parquet files), and
text, ``.csv`` (comma-separated, ``"``-quoted fields allowed) or anything else tab-separated
(``.tsv``, ``.txt``), each optionally ``.gz``. Text files keep the TSV conventions of
:mod:`sipt_lab.graphs.tsv`: two fields per line, surrounding spaces stripped, blank lines and lines
starting with ``#`` skipped, and the first data line skipped when it is a header by the in-memory
reader's rule (:func:`sipt_lab.graphs.tsv.header_end`; in a CSV file split on commas); unlike the
in-memory reader the fields of other lines must be separated by the delimiter, not by spaces.
Parquet files name their columns (``u``/``v`` for edges and ``node``/``label`` for labels unless
the caller names others).

Node ids are matched as the in-memory reader matches names: text fields are strings, so ``01`` and
``1`` are two nodes. When every labelled node's id is a canonical decimal integer (``12``, not
``012``, ``+12`` or ``12.0``; at most 18 digits) the ids are handled as int64 instead, which is
the same matching (a canonical string and its integer determine each other) but far faster;
Parquet integer columns are integers. Every id is mapped to its node number ``0..n-1`` (the
labels file's order) by one vectorised lookup per chunk: a gather through a table when the
integer ids are small and non-negative, otherwise an Arrow hash join (``index_in``), whose hash
table of the ``n`` labelled ids is rebuilt per chunk, so chunks should not be much smaller than
``n`` there.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import is_comment, shorten, stream_text_lines
from sipt_lab.graphs.arrow_arrays import as_arrow, fill, fill_bool, int_keys, is_string, to_numpy
from sipt_lab.graphs.consistency_job import MAX_CHUNK_EDGES
from sipt_lab.graphs.tsv import header_end

#: Bytes per text line assumed when estimating a text file's number of edges (gzip: ×4).
TEXT_BYTES_PER_EDGE = 12
#: Text block size bounds of the CSV reader, in bytes.
MIN_BLOCK_BYTES, MAX_BLOCK_BYTES = 1 << 16, 1 << 26
#: Rows per block when reading a labels file.
LABEL_BLOCK_ROWS = 1 << 20


@dataclass(frozen=True)
class NodeIndex:
    """The labelled nodes and their label codes, with a vectorised id -> node number lookup.

    ``codes``: ``(n,)`` label codes into ``label_names`` (the sorted distinct label strings), in the
    smallest unsigned dtype that holds them (the counting kernel's dtype, so it never converts them);
    ``table``: for small non-negative integer ids, the ``(max id + 1,)`` int32 (int64 past 2^31
    nodes) array of node numbers, -1 where no node, that :meth:`lookup` gathers through; None
    otherwise, and then ``ids``: the ``(n,)`` int64 or string Arrow array of node ids (each once).
    """

    codes: np.ndarray
    label_names: list[str]
    table: np.ndarray | None
    ids: pa.Array | None = None

    @property
    def n_nodes(self) -> int:
        return int(self.codes.size)

    @property
    def n_classes(self) -> int:
        return len(self.label_names)

    def lookup(self, values) -> np.ndarray:
        """``(m,)`` int64 node numbers of the Arrow (or numpy/pandas) ids ``values``; -1 where an id
        is not a labelled node."""
        values = as_arrow(values)
        if self.table is None and not pa.types.is_integer(self.ids.type):
            keys = values if is_string(values.type) else pc.cast(values, pa.string())
            return fill(pc.index_in(keys, value_set=self.ids))
        ints, valid = int_keys(values)
        if self.table is None:
            return np.where(valid, fill(pc.index_in(pa.array(ints), value_set=self.ids)), -1)
        if valid.all() and ints.size and ints.min() >= 0 and ints.max() < self.table.size:
            return self.table[ints].astype(np.int64)  # the common case: every id is in the table's range
        inside = valid & (ints >= 0) & (ints < self.table.size)
        return np.where(inside, self.table[np.where(inside, ints, 0)], -1).astype(np.int64, copy=False)


def read_node_index(path, columns=("node", "label")) -> NodeIndex:
    """:class:`NodeIndex` of a labels file (``node``, ``label`` per row, formats as in the module doc).

    A node listed twice with the same label is kept once; with two labels it is an error naming the
    node. Labels are compared as strings (an integer Parquet column as its decimal strings). The
    file is read block by block, each block's ids turned into integers and its labels into codes at
    once, so memory is about 25 bytes per node (a second pass keeps the ids as strings when they are
    not all integers).
    """
    return _read_labels(path, columns, int_ids=True) or _read_labels(path, columns, int_ids=False)


def edge_chunks(path, chunk_edges: int, columns=("u", "v")) -> Iterator[tuple[pa.Array, pa.Array]]:
    """The edges of ``path`` as ``(u, v)`` id arrays of at most ``chunk_edges`` rows each, read
    lazily (memory: one chunk plus one reader block); raises SiptError if there are none."""
    check_chunk_edges(chunk_edges)
    n_rows = 0
    for batch in column_batches(path, "edges", columns, chunk_edges):
        for start in range(0, batch.num_rows, chunk_edges):
            part = batch.slice(start, chunk_edges)
            n_rows += part.num_rows
            yield part.column(0), part.column(1)
    if n_rows == 0:
        raise SiptError(f"edges file {path} is empty (no data lines); expected one u<TAB>v pair per line")


def column_batches(path, what: str, columns, rows: int) -> Iterator[pa.RecordBatch]:
    """The two ``columns`` of a Parquet file, or the two fields of a text file, in batches of about
    ``rows`` rows (text: blocks of :func:`block_bytes`), read lazily."""
    if not is_parquet(path):
        return _text_batches(path, what, block_bytes(rows))
    return _parquet_batches(parquet_dataset(path, what, columns).files, columns, rows)


def check_chunk_edges(chunk_edges) -> int:
    """``chunk_edges`` as an int if it is a positive whole number, else a one-line SiptError."""
    if (
        isinstance(chunk_edges, bool)
        or not isinstance(chunk_edges, (int, np.integer))
        or not 1 <= chunk_edges <= MAX_CHUNK_EDGES
    ):
        raise SiptError(
            f"the chunk size must be a number of edges from 1 to {MAX_CHUNK_EDGES:,}, got {chunk_edges!r}; "
            "pass e.g. 2000000"
        )
    return int(chunk_edges)


def estimate_edges(path) -> int:
    """Number of edges in ``path``: exact for Parquet (its metadata), estimated from the size for text."""
    if is_parquet(path):
        return int(parquet_dataset(path, "edges", None).count_rows())
    size = os.path.getsize(path)
    return max(1, size * (4 if str(path).endswith(".gz") else 1) // TEXT_BYTES_PER_EDGE)


def block_bytes(chunk_edges: int) -> int:
    """Text reader block size (bytes) for chunks of ``chunk_edges`` edges."""
    return int(min(max(chunk_edges * TEXT_BYTES_PER_EDGE, MIN_BLOCK_BYTES), MAX_BLOCK_BYTES))


def read_table(path, what: str, columns) -> pa.Table:
    """The whole two-column table of a labels or edges file (``what`` names it in errors)."""
    if is_parquet(path):
        return parquet_dataset(path, what, columns).to_table(columns=list(columns))
    return pa.Table.from_batches(list(_text_batches(path, what, MAX_BLOCK_BYTES)), schema=_TEXT_SCHEMA)


def read_text_range(path, start: int, end: int) -> pa.Table:
    """The ``(u, v)`` rows of the lines of an uncompressed text file that start in bytes ``[start, end)``.

    Ranges that tile a file give each line exactly once (how Dask partitions a text file).
    """
    skip = header_end(path, "edges", _delimiter(path))
    with open(path, "rb") as handle:
        handle.seek(max(start - 1, 0))
        if start > 0:
            handle.readline()  # the line that holds byte start-1 belongs to the previous range
        begin = handle.tell()
        if begin < skip:  # the range holds the header: start after it
            begin = handle.seek(skip)
        data = handle.read(max(end - begin, 0))
        if data and not data.endswith(b"\n"):
            data += handle.readline()
    if not data:
        return _TEXT_SCHEMA.empty_table()
    return pa.Table.from_batches(
        list(_text_batches(pa.BufferReader(data), "edges", MAX_BLOCK_BYTES, name=path)), schema=_TEXT_SCHEMA
    )


def is_parquet(path) -> bool:
    path = Path(path)
    return path.is_dir() or path.suffix.lower() in (".parquet", ".pq")


# ---------------------------------------------------------------------- internals
_TEXT_SCHEMA = pa.schema([("u", pa.string()), ("v", pa.string())])


def _text_batches(source, what: str, block: int, name=None) -> Iterator[pa.RecordBatch]:
    """Cleaned ``(u, v)`` string batches of a text file (path or Arrow stream ``source``)."""
    name = name or source
    csv = _delimiter(name) == ","
    bad: list[str] = []

    def invalid(row) -> str:
        text = _restore_text(row.text or "").strip()
        if not text or is_comment(text):
            return "skip"
        bad.append(text)
        return "error"

    invalid.undecodable = bad  # a row that is not UTF-8 never reaches it: see _undecodable_row
    _quiet_undecodable_rows()

    parse = pacsv.ParseOptions(
        delimiter="," if csv else "\t", quote_char='"' if csv else False, invalid_row_handler=invalid
    )
    read = pacsv.ReadOptions(column_names=["u", "v"], block_size=block)
    convert = pacsv.ConvertOptions(
        column_types=_TEXT_SCHEMA, strings_can_be_null=False, quoted_strings_can_be_null=False
    )
    try:
        if isinstance(source, (str, os.PathLike)) and not os.path.isfile(source):
            raise SiptError(f"{what} file {source} does not exist or is not a file; check the path")
        if isinstance(source, (str, os.PathLike)):
            skip = header_end(source, what, _delimiter(name))
            source = pa.input_stream(str(source))  # decompresses .gz
            source.read(skip)
        hider = _lone_cr_hider()
        try:
            reader = pacsv.open_csv(
                pa.TransformInputStream(source, hider), read_options=read, parse_options=parse, convert_options=convert
            )
        except pa.ArrowInvalid as error:
            if "Empty CSV file" in str(error):
                return  # the caller says the file has no data lines
            raise
        for batch in reader:
            if batch.num_rows:
                yield _clean_text_batch(batch, name, hider.hid)
    except (pa.ArrowInvalid, UnicodeDecodeError, EOFError, OSError) as error:
        if None in bad[:1] or isinstance(error, UnicodeDecodeError) or "UTF8" in str(error):
            raise SiptError(f"{what} file {name} is not UTF-8 text; re-encode it as UTF-8") from None
        if bad:
            sep = "comma" if csv else "tab"
            raise SiptError(
                f"{name}: expected two {sep}-separated fields, got {bad[0]!r}; separate the "
                f"two fields with one {sep} (the streamed reader does not split on spaces)"
            ) from None
        raise SiptError(
            f"cannot read {what} file {name} ({ascii(str(error).splitlines()[0][:160])[1:-1]}); check that it is "
            "intact text with two fields per line"
        ) from None


def _quiet_undecodable_rows() -> None:
    """Install :func:`_undecodable_row` as ``sys.unraisablehook`` (once; others' go to the hook it replaced)."""
    if sys.unraisablehook is not _undecodable_row:
        _undecodable_row.previous = sys.unraisablehook
        sys.unraisablehook = _undecodable_row


def _undecodable_row(unraisable) -> None:
    """Arrow decodes an invalid row as UTF-8 before it calls a reader's handler and prints the
    ``UnicodeDecodeError`` ("Exception ignored ..."): record it as a ``None`` row for the reader,
    whose one-line error says the file is not UTF-8, and print nothing."""
    rows = getattr(unraisable.object, "undecodable", None)
    if isinstance(unraisable.exc_value, UnicodeDecodeError) and rows is not None:
        rows.append(None)
        return
    _undecodable_row.previous(unraisable)


def _delimiter(path) -> str:
    return "," if str(path).lower().removesuffix(".gz").endswith(".csv") else "\t"


#: What a lone ``\r`` and a NUL byte become in the bytes :func:`_lone_cr_hider` hands to Arrow.
_HIDDEN_CR, _HIDDEN_NUL = "\x00\x02", "\x00\x01"


def _lone_cr_hider():
    """A ``pa.TransformInputStream`` function that writes every ``\r`` not followed by ``\n`` as
    :data:`_HIDDEN_CR` (a NUL as :data:`_HIDDEN_NUL`, so that the two stay apart) and drops the
    ``\r`` of ``\r\n``; its ``hid`` attribute turns True once it has hidden something.

    Arrow's CSV parser ends a line at a lone ``\r`` too, where the in-memory reader keeps it as
    data (lines split on ``\n`` and ``\r\n`` only); :func:`_restore` puts it back. A ``\r\n``
    split between two buffers is hidden as data, at the end of a line, where the fields' trim
    drops it as the in-memory reader's does."""

    def transform(buffer: pa.Buffer) -> pa.Buffer:
        data = buffer.to_pybytes()
        if b"\r" not in data and b"\x00" not in data:
            return buffer
        cr, nul = _HIDDEN_CR.encode(), _HIDDEN_NUL.encode()
        data = data.replace(b"\x00", nul).replace(b"\r", cr).replace(cr + b"\n", b"\n")
        transform.hid = transform.hid or b"\x00" in data
        return pa.py_buffer(data)

    transform.hid = False
    return transform


def _restore_text(text: str) -> str:
    """A row's text as the file holds it (:func:`_lone_cr_hider` undone)."""
    return text.replace(_HIDDEN_CR, "\r").replace(_HIDDEN_NUL, "\x00")


def _restore(values: pa.Array) -> pa.Array:
    """:func:`_restore_text` of every string of ``values``."""
    return pc.replace_substring(pc.replace_substring(values, _HIDDEN_CR, "\r"), _HIDDEN_NUL, "\x00")


def _clean_text_batch(batch: pa.RecordBatch, name, hidden: bool) -> pa.RecordBatch:
    """Put back what :func:`_lone_cr_hider` hid (when ``hidden``), strip surrounding whitespace,
    drop ``#`` comment rows that happen to hold the delimiter, and refuse empty fields."""
    u, v = (_restore(column) if hidden else column for column in batch.columns)
    u, v = pc.utf8_trim_whitespace(u), pc.utf8_trim_whitespace(v)
    comment = pc.starts_with(u, "#")
    if pc.any(comment).as_py():
        keep = pc.invert(comment)
        u, v = u.filter(keep), v.filter(keep)
    empty = pc.or_(pc.equal(pc.binary_length(u), 0), pc.equal(pc.binary_length(v), 0))
    if pc.any(empty).as_py():
        k = int(np.flatnonzero(fill_bool(empty))[0])
        raise SiptError(
            f"{name}: {_empty_field_line(name)} has an empty field ({shorten(u[k].as_py())}, {shorten(v[k].as_py())}); "
            "give both fields of every line"
        )
    return pa.RecordBatch.from_arrays([u, v], schema=_TEXT_SCHEMA)


def _empty_field_line(path) -> str:
    """``"line N"`` of the first data line of the text file ``path`` with an empty field (the
    error path only: it reads the file again), or ``"a line"`` when ``path`` is not a file."""
    if not os.path.isfile(path):
        return "a line"
    separator = _delimiter(path)
    for number, line in stream_text_lines(path, "edges file"):
        fields = line.split(separator)
        if separator in line and not is_comment(line) and not all(field.strip() for field in fields[:2]):
            return f"line {number}"
    return "a line"


def _parquet_batches(files, columns, rows: int) -> Iterator[pa.RecordBatch]:
    # One file at a time, without pre-buffering: Arrow's dataset scanner reads ahead, and a
    # pre-buffering reader keeps every column chunk it read until it is closed.
    for file in files:
        with pq.ParquetFile(file, pre_buffer=False) as reader:
            yield from reader.iter_batches(batch_size=rows, columns=list(columns))


def parquet_dataset(path, what: str, columns) -> pads.Dataset:
    """The Parquet file or directory ``path`` as an Arrow dataset; a one-line SiptError when it
    cannot be read or lacks one of ``columns`` (naming the columns it has)."""
    if not os.path.exists(path):
        raise SiptError(f"{what} file {path} does not exist; check the path")
    try:
        dataset = pads.dataset(str(path), format="parquet")
    except (pa.ArrowInvalid, OSError) as error:
        raise SiptError(
            f"cannot read {what} file {path} as Parquet ({str(error).splitlines()[0][:160]}); "
            "check that it is an intact Parquet file"
        ) from None
    if columns is not None:
        missing = [c for c in columns if c not in dataset.schema.names]
        if missing:
            field = "ConsistencyJob.edge_columns" if what == "edges" else "ConsistencyJob.label_columns"
            raise SiptError(
                f"{what} file {path} has no column {', '.join(map(repr, missing))} (its columns: "
                f"{', '.join(dataset.schema.names) or 'none'}); name the two columns with {field}"
            )
    return dataset


def _read_labels(path, columns, int_ids: bool) -> NodeIndex | None:
    """:func:`read_node_index` keeping the ids as integers (None at the first id that is not one)
    or as strings."""
    ids, codes, names = [], [], {}  # names: label -> provisional code, in order of appearance
    for batch in column_batches(path, "labels", columns, LABEL_BLOCK_ROWS):
        node, label = batch.column(0), batch.column(1)
        if node.null_count or label.null_count:
            raise SiptError(f"labels file {path} has empty node ids or labels; give every node an id and a label")
        if not is_string(node.type) and not pa.types.is_integer(node.type):
            raise SiptError(f"labels file {path}: node ids are {node.type}; use integer or string ids")
        if int_ids:
            ints, valid = int_keys(node)
            if not valid.all():
                return None
            ids.append(ints)
        else:
            ids.append(node if is_string(node.type) else pc.cast(node, pa.string()))
        encoded = pc.dictionary_encode(label if is_string(label.type) else pc.cast(label, pa.string()))
        provisional = np.array([names.setdefault(x, len(names)) for x in encoded.dictionary.to_pylist()], np.uint32)
        codes.append(provisional[to_numpy(encoded.indices)])
    if not ids:
        raise SiptError(f"labels file {path} is empty (no data lines); expected one node<TAB>label pair per line")
    label_names = sorted(names)  # code point order, as the in-memory reader's np.unique
    rank = np.empty(len(names), np.min_scalar_type(max(len(names) - 1, 0)))
    rank[[names[name] for name in label_names]] = np.arange(len(names))
    codes = rank[np.concatenate(codes)]
    if int_ids:
        ints = np.concatenate(ids)
        del ids
        if ints.min() >= 0 and ints.max() < 4 * ints.size + 1024:
            return _dense_index(ints, codes, label_names, path)
        ids = pa.array(ints)
    else:
        ids = pa.chunked_array(ids).combine_chunks()
    ids, codes = _drop_repeated_nodes(ids, codes, label_names, path)
    return NodeIndex(codes, label_names, None, ids)


def _drop_repeated_nodes(ids: pa.Array, codes: np.ndarray, label_names, path) -> tuple[pa.Array, np.ndarray]:
    """Keep each node's first row (by a stable sort of the ids); two labels for a node is a SiptError."""
    order = pc.sort_indices(ids)  # stable: repeats stay in file order
    sorted_ids = ids.take(order)
    order = to_numpy(order)
    repeat = fill_bool(pc.equal(sorted_ids.slice(1), sorted_ids.slice(0, len(ids) - 1)))
    if not repeat.any():
        return ids, codes
    first = np.flatnonzero(~np.concatenate([[False], repeat]))  # first row of each run of equal ids
    winner = order[first[np.searchsorted(first, np.arange(len(ids)), side="right") - 1]]
    _check_one_label(order, winner, codes, label_names, lambda k: sorted_ids[k].as_py(), path)
    keep = np.zeros(len(ids), bool)
    keep[order[first]] = True
    return ids.filter(pa.array(keep)), codes[keep]


def _dense_index(ints: np.ndarray, codes: np.ndarray, label_names, path) -> NodeIndex:
    """:class:`NodeIndex` of small non-negative integer ids through a lookup table; a node listed
    on several rows is kept once (from one of them), and they must give it one label."""
    n = ints.size
    dtype = np.int32 if n < 2**31 else np.int64
    rows = np.arange(n, dtype=dtype)
    table = np.full(int(ints.max()) + 1, -1, dtype)
    table[ints] = rows  # of an id's rows, one is written last: its winner
    winner = table[ints]
    if (winner != rows).any():
        _check_one_label(rows, winner, codes, label_names, lambda k: int(ints[k]), path)
        keep = winner == rows
        codes = codes[keep]
        table[ints[keep]] = np.arange(int(keep.sum()), dtype=dtype)
    return NodeIndex(codes, label_names, table)


def _check_one_label(rows, winner, codes, label_names, name_of, path) -> None:
    """SiptError if a row's label differs from its node's kept row ``winner`` (both ``(n,)``, as
    positions of ``rows``; ``name_of(k)`` names the node of position ``k``)."""
    clash = codes[rows] != codes[winner]
    if clash.any():
        k = int(np.flatnonzero(clash)[0])
        first, second = label_names[codes[winner[k]]], label_names[codes[rows[k]]]
        raise SiptError(
            f"{path}: node {str(name_of(k))!r} has labels {first!r} and {second!r}; give each node one label"
        )
