"""The streamed (out-of-core) and Dask engines of `consistency` give the in-memory path's numbers."""

import gzip
import json
import logging
import re
import threading
import time
import tracemalloc

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from distributed import LocalCluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sipt_lab.cli.main import main
from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.consistency import (
    TIE_POLICIES,
    consistency_from_files,
    consistency_report,
)
from sipt_lab.graphs.consistency_stream import FileConsistency
from sipt_lab.graphs.tsv import load_graph_tsv

FORMATS = ("tsv", "csv", "tsv.gz", "parquet")


def write_graph(directory, u, v, labels, fmt="tsv", prefix="n", name="edges"):
    """Edge file (format ``fmt``, node ``k`` named ``f"{prefix}{k}"``) and a TSV labels file."""
    u_names = [f"{prefix}{a}" for a in u]
    v_names = [f"{prefix}{b}" for b in v]
    edges = directory / f"{name}.{fmt}"
    if fmt == "parquet":
        column = (lambda names: np.array(names, np.int64)) if prefix == "" else (lambda names: names)
        pq.write_table(pa.table({"u": column(u_names), "v": column(v_names)}), edges)
    else:
        sep = "," if fmt == "csv" else "\t"
        text = "# an edge list\n" + "".join(f"{a}{sep}{b}\n" for a, b in zip(u_names, v_names))
        edges.write_bytes(gzip.compress(text.encode(), mtime=0) if fmt.endswith(".gz") else text.encode())
    labels_file = directory / f"{name}-labels.tsv"
    labels_file.write_text("".join(f"{prefix}{k}\tc{c}\n" for k, c in enumerate(labels)))
    return edges, labels_file


def in_memory(directory, u, v, labels, ties, prefix="n") -> FileConsistency:
    edges, labels_file = write_graph(directory, u, v, labels, "tsv", prefix, name="reference")
    read = load_graph_tsv(edges, labels_file)
    return FileConsistency(
        consistency_report(read.graph, read.labels, ties), read.dropped_self_loops, read.dropped_duplicates
    )


def random_graph(rng, n, m, n_classes):
    """Edges with repeats in both orientations and self-loops; few classes, so ties are common."""
    u, v = rng.integers(0, n, m), rng.integers(0, n, m)
    repeat = rng.integers(0, m, m // 4)
    return np.concatenate([u, v[repeat]]), np.concatenate([v, u[repeat]]), rng.integers(0, n_classes, n)


def random_case(directory, seed, n, m, n_classes, fmt="tsv"):
    """``(u, v, labels, in-memory result, edges file, labels file)`` of a :func:`random_graph`."""
    u, v, labels = random_graph(np.random.default_rng(seed), n, m, n_classes)
    return (u, v, labels, in_memory(directory, u, v, labels, "split"), *write_graph(directory, u, v, labels, fmt))


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 40),
    m=st.integers(1, 120),
    n_classes=st.integers(1, 4),
    chunk=st.integers(1, 50),
    fmt=st.sampled_from(FORMATS),
    int_ids=st.booleans(),
    ties=st.sampled_from(TIE_POLICIES),
)
def test_streamed_equals_in_memory_on_random_graphs(tmp_path, seed, n, m, n_classes, chunk, fmt, int_ids, ties):
    u, v, labels = random_graph(np.random.default_rng(seed), n, m, n_classes)
    prefix = "" if int_ids else "n"
    edges, labels_file = write_graph(tmp_path, u, v, labels, fmt, prefix)
    if np.all(u == v):  # every node isolated: both paths refuse
        for compute in (
            lambda: in_memory(tmp_path, u, v, labels, ties, prefix),
            lambda: consistency_from_files(edges, labels_file, ties, chunk_edges=chunk),
        ):
            with pytest.raises(SiptError, match="every node is isolated"):
                compute()
        return
    assert consistency_from_files(edges, labels_file, ties, chunk_edges=chunk) == in_memory(
        tmp_path, u, v, labels, ties, prefix
    )


def test_ties_and_counts_of_a_hand_graph(tmp_path):
    # n1: cat | n2: cat, dog tie -> 1/2 | n3: dog, cat tie -> 1/2 | n4: dog; one loop, one repeat
    (tmp_path / "labels.tsv").write_text("n1\tcat\nn2\tcat\nn3\tdog\nn4\tdog\nn5\tdog\n")
    (tmp_path / "edges.csv").write_text("n1,n2\nn3,n3\nn3,n4\nn2,n3\nn2,n1\n")
    for ties, lc in (("split", 3 / 4), ("strict", 2 / 4), ("lenient", 4 / 4)):
        got = consistency_from_files(tmp_path / "edges.csv", tmp_path / "labels.tsv", ties, chunk_edges=1)
        assert got.report.local_consistency == pytest.approx(lc)
        assert (got.report.n_nodes, got.report.n_edges, got.report.n_isolated) == (5, 3, 1)
        assert (got.dropped_self_loops, got.dropped_duplicates) == (1, 1)


def test_chunks_that_split_a_node_and_repeats_across_chunks(tmp_path):
    # A hub whose edges span many chunks of two; every edge comes again, reversed, chunks later.
    hub_edges = [(0, k) for k in range(1, 30)]
    u, v = np.array(hub_edges + [(b, a) for a, b in hub_edges] + [(5, 6), (6, 5), (5, 5)]).T
    labels = np.arange(30) % 3
    expected = in_memory(tmp_path, u, v, labels, "split")
    assert expected.dropped_duplicates == 30
    for chunk in (1, 2, 7, 1000):
        edges, labels_file = write_graph(tmp_path, u, v, labels, "tsv")
        assert consistency_from_files(edges, labels_file, chunk_edges=chunk) == expected


def test_oversized_partitions_are_re_split_and_spill_files_removed(tmp_path):
    u, v, labels, expected, edges, labels_file = random_case(tmp_path, 3, 200, 3000, 3, "parquet")
    spill = tmp_path / "spill"
    spill.mkdir()
    # Parquet knows its row count, so the partitions are sized right; a text file's estimate is
    # too low when its lines are long, and its partitions are re-split before they are loaded.
    (tmp_path / "long.tsv").write_text("".join(f"{'x' * 40}{a}\t{'x' * 40}{b}\n" for a, b in zip(u, v)))
    (tmp_path / "long-labels.tsv").write_text("".join(f"{'x' * 40}{k}\tc{c}\n" for k, c in enumerate(labels)))
    for source, labels_source in ((edges, labels_file), (tmp_path / "long.tsv", tmp_path / "long-labels.tsv")):
        assert consistency_from_files(source, labels_source, chunk_edges=5, spill_dir=spill) == expected
        assert list(spill.iterdir()) == []


def test_parallel_counting_equals_in_memory_with_ties(tmp_path, monkeypatch):
    # Few classes (many ties), chunks of 40 edges: about 50 partitions, counted by 1-3 threads;
    # the first `workers` partitions meet at a barrier, so they must be counted at once.
    import sipt_lab.graphs.consistency_stream as stream

    u, v, labels, _, edges, labels_file = random_case(tmp_path, 11, 300, 2000, 2, "parquet")
    count, calls = stream.count_partition, []

    def meeting(path, index):
        calls.append(path)
        if len(calls) <= barrier.parties:
            barrier.wait()
        return count(path, index)

    monkeypatch.setattr(stream, "count_partition", meeting)
    for ties in TIE_POLICIES:
        reference = in_memory(tmp_path, u, v, labels, ties)
        for workers in (1, 2, 3):
            calls.clear()
            barrier = threading.Barrier(workers, timeout=10)
            assert consistency_from_files(edges, labels_file, ties, chunk_edges=40, workers=workers) == reference
            assert len(calls) > 3 * workers


def test_parallel_reading_leaves_out_and_counts_the_unlabelled_edges_as_in_memory(tmp_path):
    # Chunks are mapped by several threads; edges with an unlabelled end are left out and counted.
    (tmp_path / "labels.tsv").write_text("".join(f"{k}\tc{k % 2}\n" for k in range(20)))
    (tmp_path / "edges.tsv").write_text(
        "".join(f"{k % 20}\t{(k + 1) % 20}\n" for k in range(50)) + "0\t77\n5\t99\n77\t77\n"
    )
    read = load_graph_tsv(tmp_path / "edges.tsv", tmp_path / "labels.tsv")
    expected = FileConsistency(
        consistency_report(read.graph, read.labels), read.dropped_self_loops, read.dropped_duplicates, 3
    )
    assert read.unlabelled_edges == 3 and read.dropped_self_loops == 0 and read.dropped_duplicates == 30
    for workers in (1, 2):
        got = consistency_from_files(tmp_path / "edges.tsv", tmp_path / "labels.tsv", chunk_edges=3, workers=workers)
        assert got == expected
    with pytest.raises(SiptError, match="ConsistencyJob.workers must be a positive number"):
        consistency_from_files(tmp_path / "edges.tsv", tmp_path / "labels.tsv", workers=0)


def test_ids_are_matched_as_strings(tmp_path):
    # "01" and "1" are two nodes, as in memory; all-integer ids take the integer path
    (tmp_path / "labels.tsv").write_text("1\ta\n01\tb\n2\ta\n3\tb\n")
    (tmp_path / "edges.tsv").write_text("1\t2\n01\t2\n 3 \t 1\n3\t01\n")
    read = load_graph_tsv(tmp_path / "edges.tsv", tmp_path / "labels.tsv")
    expected = consistency_report(read.graph, read.labels)
    assert consistency_from_files(tmp_path / "edges.tsv", tmp_path / "labels.tsv", chunk_edges=1).report == expected
    (tmp_path / "int-labels.tsv").write_text("1\ta\n2\ta\n3\tb\n")  # '01' has no label: its 2 edges are left out
    partial = consistency_from_files(tmp_path / "edges.tsv", tmp_path / "int-labels.tsv")
    read = load_graph_tsv(tmp_path / "edges.tsv", tmp_path / "int-labels.tsv")
    assert partial.unlabelled_edges == read.unlabelled_edges == 2
    assert partial.report == consistency_report(read.graph, read.labels) and partial.report.n_edges == 2


@pytest.mark.parametrize("base", [0, 10**15, "x"])  # lookup table, integer hash join, string hash join
def test_repeated_label_rows(tmp_path, base):
    name = (lambda k: f"x{k}") if base == "x" else (lambda k: str(base + k))
    (tmp_path / "labels.tsv").write_text(
        "".join(f"{name(k)}\t{c}\n" for k, c in [(1, "a"), (2, "b"), (1, "a"), (3, "b"), (2, "b")])
    )
    (tmp_path / "edges.tsv").write_text(f"{name(1)}\t{name(2)}\n{name(2)}\t{name(3)}\n{name(3)}\t{name(1)}\n")
    read = load_graph_tsv(tmp_path / "edges.tsv", tmp_path / "labels.tsv")
    got = consistency_from_files(tmp_path / "edges.tsv", tmp_path / "labels.tsv")
    assert got.report == consistency_report(read.graph, read.labels) and got.report.n_nodes == 3
    with open(tmp_path / "labels.tsv", "a") as labels:
        labels.write(f"{name(3)}\ta\n")
    with pytest.raises(SiptError, match=f"node '{name(3)}' has labels '[ab]' and '[ab]'"):
        consistency_from_files(tmp_path / "edges.tsv", tmp_path / "labels.tsv")


def test_text_conventions_of_the_in_memory_reader(tmp_path):
    # byte-order mark, CRLF, blank and space-only lines, comments (one holding a tab), padded fields
    (tmp_path / "labels.tsv").write_bytes(b"\xef\xbb\xbfa\tx\r\nb\ty\r\n c \t x \r\nd\ty\n")
    (tmp_path / "edges.tsv").write_bytes(b"\xef\xbb\xbfa\tb\r\n# a\tc\r\n\r\n  \r\n b\t c\n  # x\nc\ta\nd\tc\n")
    read = load_graph_tsv(tmp_path / "edges.tsv", tmp_path / "labels.tsv")
    expected = FileConsistency(consistency_report(read.graph, read.labels), 0, 0)
    assert read.graph.n_edges == 4
    assert consistency_from_files(tmp_path / "edges.tsv", tmp_path / "labels.tsv", chunk_edges=2) == expected


def test_a_lone_cr_is_data_as_in_memory(tmp_path):
    # Lines split on \n and \r\n only: a lone \r inside a field is part of the id in both readers,
    # also where the stream's 64 KiB blocks end between a \r and its \n, or on a lone \r.
    block = 1 << 16

    def padded(text: bytes, size: int) -> bytes:
        return text + b"#" + b"." * (size - len(text) - 2) + b"\n"

    edges = padded(b"a\rz\tb\n\r\n \r \n", block - 5) + b"c\x00\td\r\n"
    edges = padded(edges, 2 * block - 4) + b"d\ta\rz\n\rc\x00\t b\r"
    assert edges[block - 1 : block + 1] == b"\r\n" and edges[2 * block - 1 : 2 * block + 1] == b"\rz"
    (tmp_path / "edges.tsv").write_bytes(edges)
    (tmp_path / "labels.tsv").write_bytes(b"a\rz\tx\r\nb\ty\nc\x00\tx\nd\ty\r\n")
    read = load_graph_tsv(tmp_path / "edges.tsv", tmp_path / "labels.tsv")
    assert read.node_names == ["a\rz", "b", "c\x00", "d"] and read.graph.n_edges == 4
    expected = FileConsistency(consistency_report(read.graph, read.labels), 0, 0)
    assert consistency_from_files(tmp_path / "edges.tsv", tmp_path / "labels.tsv", chunk_edges=2) == expected
    (tmp_path / "edges.tsv").write_bytes(b"a\rz\tb\rc\x00\td\n")  # a \r between two edges joins them
    with pytest.raises(SiptError, match="expected two"):
        load_graph_tsv(tmp_path / "edges.tsv", tmp_path / "labels.tsv")
    with pytest.raises(SiptError, match="expected two"):
        consistency_from_files(tmp_path / "edges.tsv", tmp_path / "labels.tsv")


HEADERS = {  # (edges, labels) first data lines: none, tab-separated after a comment, space-separated
    "none": ("", ""),
    "tab": ("# made by hand\n\nSource\tTarget\n", "ID\tlabel\n"),
    "space": ("u v\n", "node  class\n"),
}


@pytest.mark.parametrize("fmt", ["tsv", "csv", "tsv.gz"])
@pytest.mark.parametrize("header", HEADERS)
def test_header_lines_are_skipped_as_in_memory(tmp_path, fmt, header):
    # Nodes named "source" and "target": their edge, on a later line, is data in both readers.
    u, v, labels = random_graph(np.random.default_rng(12), 30, 80, 3)
    names = [f"n{k}" for k in range(30)] + ["source", "target"]
    labels = np.append(labels, [0, 1])
    edges_text = "".join(f"{names[a]}\t{names[b]}\n" for a, b in zip(u, v)) + "source\ttarget\nn1\tsource\n"
    labels_text = "".join(f"{name}\tc{c}\n" for name, c in zip(names, labels))
    edge_header, label_header = HEADERS[header]
    (tmp_path / "e.tsv").write_text(edge_header + edges_text)
    (tmp_path / "l.tsv").write_text(label_header + labels_text)
    read = load_graph_tsv(tmp_path / "e.tsv", tmp_path / "l.tsv")
    expected = FileConsistency(consistency_report(read.graph, read.labels), read.dropped_self_loops, 0)
    assert expected.report.n_nodes == 32 and expected.report.n_classes == 3
    sep = "," if fmt == "csv" else "\t"
    if fmt == "csv":  # a CSV header separates its names with a comma
        edge_header, label_header = (re.sub(r"(?<=\w)[ \t]+(?=\w)", sep, text) for text in HEADERS[header])
    for name, text in (("e", edge_header + edges_text), ("l", label_header + labels_text)):
        data = text.replace("\t", sep).encode()
        (tmp_path / f"{name}.{fmt}").write_bytes(gzip.compress(data) if fmt.endswith(".gz") else data)
    got = consistency_from_files(tmp_path / f"e.{fmt}", tmp_path / f"l.{fmt}", chunk_edges=7)
    assert got == FileConsistency(expected.report, expected.dropped_self_loops, read.dropped_duplicates)


def test_byte_ranges_skip_the_header_once(tmp_path):
    # Dask's byte ranges of a text file: however they fall, the header line is in none of the rows.
    from sipt_lab.graphs.edge_tables import read_text_range

    text = "# edges\n\nsrc\tdst\n" + "".join(f"{k}\t{k + 1}\n" for k in range(40))
    (tmp_path / "e.tsv").write_text(text)
    (tmp_path / "plain.tsv").write_text(text.replace("src\tdst\n", "0\t9\n"))
    size = len(text)
    for step in (1, 3, 10, 17, size):
        rows = [read_text_range(tmp_path / "e.tsv", a, a + step).to_pylist() for a in range(0, size, step)]
        assert [row["u"] for part in rows for row in part] == [str(k) for k in range(40)], step
    plain = read_text_range(tmp_path / "plain.tsv", 0, size + 10).to_pylist()
    assert plain[0] == {"u": "0", "v": "9"} and len(plain) == 41


def test_parquet_labels_and_named_columns(tmp_path):
    u, v, labels = random_graph(np.random.default_rng(4), 50, 200, 2)
    expected = in_memory(tmp_path, u, v, labels, "strict", prefix="")
    pq.write_table(pa.table({"src": u, "dst": v, "w": np.ones(u.size)}), tmp_path / "e.parquet")
    pq.write_table(pa.table({"id": np.arange(50), "y": [f"c{c}" for c in labels]}), tmp_path / "l.parquet")
    got = consistency_from_files(
        tmp_path / "e.parquet",
        tmp_path / "l.parquet",
        "strict",
        chunk_edges=16,
        edge_columns=("src", "dst"),
        label_columns=("id", "y"),
    )
    assert got == expected


@pytest.mark.slow
def test_streamed_memory_is_bounded_by_the_chunk(tmp_path):
    # 800k edges over 2,000 nodes read in chunks of 10k edges: numpy's peak stays a few chunks'
    # worth, far below the 12.8 MB that the edges' int64 endpoints alone would take.
    rng = np.random.default_rng(6)
    n, m, chunk = 2_000, 800_000, 10_000
    pq.write_table(
        pa.table({"u": rng.integers(0, n, m), "v": rng.integers(0, n, m)}), tmp_path / "e.parquet", row_group_size=chunk
    )
    (tmp_path / "l.tsv").write_text("".join(f"{k}\t{k % 5}\n" for k in range(n)))
    consistency_from_files(tmp_path / "e.parquet", tmp_path / "l.tsv", chunk_edges=chunk)  # compile, warm up
    tracemalloc.start()
    try:
        consistency_from_files(tmp_path / "e.parquet", tmp_path / "l.tsv", chunk_edges=chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * 8 * chunk + 100 * n < 16 * m / 3


def test_cli_stream_engine_equals_memory(tmp_path, capsys):
    *_, edges, labels_file = random_case(tmp_path, 7, 60, 300, 3)
    runs = []
    for extra in ([], ["--chunk-size", "7"], ["--engine", "stream"]):
        assert main(["consistency", "--edges", str(edges), "--labels", str(labels_file), "--json", *extra]) == 0
        runs.append(json.loads(capsys.readouterr().out))
    assert runs[0] == runs[1] == runs[2]


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1 and lines[0].startswith("sipt-lab: error: ")
    return lines[0]


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    edges, labels_file = write_graph(tmp_path, [0, 1], [1, 2], [0, 1, 0], "parquet")
    files = ["--edges", str(edges), "--labels", str(labels_file)]
    cases = {
        "has no column 'a', 'b' (its columns: u, v)": [*files, "--edge-columns", "a,b"],
        "--chunk-size must be in [1, ": [*files, "--chunk-size", "0"],
        "--engine memory reads TSV files only": [*files, "--engine", "memory"],
        "--scheduler applies to --engine dask": [*files, "--scheduler", "tcp://127.0.0.1:9"],
        "two column names": [*files, "--edge-columns", "u"],
    }
    for expected, argv in cases.items():
        assert main(["consistency", *argv]) == 2, expected
        assert expected in one_error_line(capsys)
    bad_lines = {
        "n0 n1\n": "expected two tab-separated fields, got 'n0 n1'",
        "n0\t\n": "empty field",
        "n0\tzz\nn0\tyy\n": "no edge joins two labelled nodes (all 2 have an end without a label)",
        "": "is empty",
    }
    for content, expected in bad_lines.items():
        (tmp_path / "bad.tsv").write_text(content)
        assert (
            main(
                [
                    "consistency",
                    "--edges",
                    str(tmp_path / "bad.tsv"),
                    "--labels",
                    str(labels_file),
                    "--engine",
                    "stream",
                ]
            )
            == 2
        ), content
        assert expected in one_error_line(capsys)
    (tmp_path / "clash.tsv").write_text("n0\ta\nn1\tb\nn0\tb\n")
    assert main(["consistency", "--edges", str(edges), "--labels", str(tmp_path / "clash.tsv")]) == 2
    assert "node 'n0' has labels 'a' and 'b'" in one_error_line(capsys)
    with pytest.raises(SiptError, match="chunk size"):
        consistency_from_files(edges, labels_file, chunk_edges=0)


# ---------------------------------------------------------------------- Dask (the test extra installs it)
@pytest.mark.slow
def test_dask_engine_equals_local_path_on_a_local_cluster(tmp_path):
    u, v, labels, expected, edges, labels_file = random_case(tmp_path, 8, 80, 600, 3)
    parts = tmp_path / "parts"
    parts.mkdir()
    for k, rows in enumerate(np.array_split(np.arange(u.size), 3)):
        pq.write_table(
            pa.table({"u": [f"n{a}" for a in u[rows]], "v": [f"n{b}" for b in v[rows]]}), parts / f"part-{k}.parquet"
        )
    int_edges, int_labels = write_graph(tmp_path, u, v, labels, "parquet", prefix="", name="int")
    # a text file in 8 byte ranges; a directory of 3 Parquet files; integer ids
    for source, labels_source in ((edges, labels_file), (parts, labels_file), (int_edges, int_labels)):
        got = consistency_from_files(source, labels_source, engine="dask", workers=2, chunk_edges=100)
        assert got == expected
    with LocalCluster(n_workers=2, processes=False, dashboard_address=None, silence_logs=logging.ERROR) as cluster:
        got = consistency_from_files(parts, labels_file, engine="dask", scheduler=cluster.scheduler_address)
    assert got == expected


def test_dask_engine_leaves_out_and_counts_unlabelled_nodes(tmp_path, capsys):
    (tmp_path / "labels.tsv").write_text("a\tx\nb\ty\nc\tx\n")
    (tmp_path / "edges.tsv").write_text("a\tb\nb\tzz\nzz\ta\nb\tc\n")
    argv = ["consistency", "--edges", str(tmp_path / "edges.tsv"), "--labels", str(tmp_path / "labels.tsv"), "--json"]
    assert main([*argv, "--engine", "dask", "--workers", "1"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert main(argv) == 0
    assert got == json.loads(capsys.readouterr().out)  # the in-memory numbers
    assert got["unlabelled_edges"] == 2 and got["n_edges"] == 2 and got["local_consistency"] == 0.0
    (tmp_path / "apart.tsv").write_text("a\tzz\nzz\tb\n")
    assert (
        main(
            [
                "consistency",
                "--edges",
                str(tmp_path / "apart.tsv"),
                "--labels",
                str(tmp_path / "labels.tsv"),
                "--engine",
                "dask",
            ]
        )
        == 2
    )
    assert "no edge joins two labelled nodes" in one_error_line(capsys)


@pytest.mark.slow
def test_unreachable_scheduler_is_one_line_within_the_timeout(tmp_path, capsys):
    edges, labels_file = write_graph(tmp_path, [0], [1], [0, 1], "tsv")
    start = time.monotonic()
    assert (
        main(
            [
                "consistency",
                "--edges",
                str(edges),
                "--labels",
                str(labels_file),
                "--engine",
                "dask",
                "--scheduler",
                "tcp://127.0.0.1:9",
                "--scheduler-timeout",
                "1",
            ]
        )
        == 2
    )
    assert time.monotonic() - start < 10
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in one_error_line(capsys)


def test_integer_ids_are_canonical_decimals():
    from sipt_lab.graphs.edge_tables import int_keys

    ints, valid = int_keys(pa.array(["1", "01", "-3", "+4", "x", "-0", "123456789012345678", "1234567890123456789"]))
    assert valid.tolist() == [True, False, True, False, False, False, True, False]
    assert ints[valid].tolist() == [1, -3, 123456789012345678]
    ints, valid = int_keys(pa.array([1, 2**64 - 1, None], pa.uint64()))
    assert valid.tolist() == [True, False, False] and ints[0] == 1
