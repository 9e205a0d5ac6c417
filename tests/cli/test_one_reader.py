"""One text reader: every file the project reads splits lines on ``\\n`` and ``\\r\\n`` only, drops a
byte-order mark, skips one kind of header line (any case) and one kind of comment, in every engine
and converter, so an id means the same sample wherever it is read."""

from __future__ import annotations

import json

import pytest

from sipt_lab.cli.main import main
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import split_lines
from sipt_lab.data.corpus import load_corpus
from sipt_lab.data.samples import read_sample_graph, read_samples
from sipt_lab.data.splits import read_splits

#: Characters ``str.splitlines`` splits on that a text or an id may hold.
NOT_LINE_BREAKS = ["\u2028", "\u2029", "\x0c", "\x0b", "\x85", "\x1c", "\x1d", "\x1e"]


@pytest.mark.parametrize("char", NOT_LINE_BREAKS)
def test_lines_split_on_newline_only(char):
    assert split_lines(f"a{char}b\r\nc\n") == [f"a{char}b", "c"]


@pytest.mark.parametrize("char", NOT_LINE_BREAKS)
def test_a_text_holding_a_unicode_line_separator_keeps_every_later_id(tmp_path, char):
    (tmp_path / "s.txt").write_text(f"first{char}half\nsecond\nthird\n", encoding="utf-8")
    (tmp_path / "s.tsv").write_text(f"a\tfirst{char}half\nb\tsecond\nc\tthird\n", encoding="utf-8")
    (tmp_path / "s.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in [("a", f"x{char}y"), ("b", "z")]
        ),
        encoding="utf-8",
    )
    assert read_samples(tmp_path / "s.txt").texts == (f"first{char}half".strip(), "second", "third")
    assert read_samples(tmp_path / "s.tsv").ids == ("a", "b", "c")
    assert read_samples(tmp_path / "s.jsonl").ids == ("a", "b")
    (tmp_path / "e.tsv").write_text("2\t3\n")
    graph = read_sample_graph(tmp_path / "e.tsv", read_samples(tmp_path / "s.txt"))
    assert graph.edges().tolist() == [[1, 2]]  # lines 2 and 3, not shifted by the separator


def test_samples_header_is_any_case_and_comments_are_skipped(tmp_path):
    (tmp_path / "s.tsv").write_text("ID\tText\n# a comment\na\tone\n#5\tcommented out\nb\ttwo\n")
    samples = read_samples(tmp_path / "s.tsv")
    assert samples.ids == ("a", "b")


def test_an_id_starting_with_a_hash_is_refused_where_edges_would_read_a_comment(tmp_path):
    (tmp_path / "s.jsonl").write_text('{"id": "#5", "text": "x"}\n{"id": "6", "text": "y"}\n')
    with pytest.raises(SiptError, match="starts with '#'"):
        read_samples(tmp_path / "s.jsonl")


def test_a_bom_and_crlf_in_a_samples_file_and_a_corpus(tmp_path):
    (tmp_path / "s.tsv").write_bytes("\ufeffid\ttext\r\na\tone\r\nb\ttwo\r\n".encode())
    assert read_samples(tmp_path / "s.tsv").ids == ("a", "b")
    first, second = "The first sentence is about apples and pears.", "The second one\u2028has two halves in it."
    (tmp_path / "c.txt").write_bytes(f"\ufeff{first}\r\n{second}\r\n".encode())
    assert load_corpus(tmp_path / "c.txt").sentences == [first, "The second one has two halves in it."]


def test_splits_header_is_any_case(tmp_path):
    (tmp_path / "splits.tsv").write_text("ID\tSplit\na\ttrain\nb\tvalidation\nc\ttest\n")
    splits = read_splits(tmp_path / "splits.tsv", ["a", "b", "c"])
    assert splits.train.tolist() == [0] and splits.test.tolist() == [2]


def graph_files(tmp_path, char: str) -> list[str]:
    """Edges and labels with a BOM, CRLF, an upper-case header, comments and ids holding ``char``."""
    labels = "\ufeffID\tLABEL\r\n# comment\r\n" + "".join(f"n{char}{i}\tc{i % 2}\r\n" for i in range(6))
    edges = "\ufeffSOURCE\tTARGET\r\n  # indented comment\r\n" + "".join(
        f"n{char}{i}\tn{char}{j}\r\n" for i in range(6) for j in range(i + 1, 6) if (i + j) % 3
    )
    (tmp_path / "labels.tsv").write_text(labels, encoding="utf-8", newline="")
    (tmp_path / "edges.tsv").write_text(edges, encoding="utf-8", newline="")
    return ["consistency", "--edges", str(tmp_path / "edges.tsv"), "--labels", str(tmp_path / "labels.tsv"), "--json"]


def report(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    return {k: v for k, v in json.loads(capsys.readouterr().out).items() if not k.endswith("_file")}


@pytest.mark.parametrize("char", ["\u2028", "\x0c", "\x85", "\x1c"])
def test_memory_and_stream_engines_read_the_same_lines(tmp_path, capsys, char):
    argv = graph_files(tmp_path, char)
    memory = report(capsys, argv)
    assert memory["n_nodes"] == 6 and memory["n_edges"] == 10
    assert report(capsys, [*argv, "--engine", "stream"]) == memory


def test_the_dask_engine_reads_the_same_lines(tmp_path, capsys):
    pytest.importorskip("distributed")
    argv = graph_files(tmp_path, "\u2028")
    assert report(capsys, [*argv, "--engine", "dask", "--workers", "1"]) == report(capsys, argv)


def test_convert_string_reads_a_bom_in_the_links_and_the_fasta(tmp_path, capsys):
    (tmp_path / "9606.links.txt").write_bytes("\ufeffprotein1 protein2 combined_score\r\nA B 900\r\n".encode())
    (tmp_path / "seq.fasta").write_bytes("\ufeff>9606.A\r\nMKV\r\n>9606.B\r\nMLL\r\n".encode())
    out = tmp_path / "out"
    argv = ["data", "convert", "string", "--links", str(tmp_path / "9606.links.txt")]
    assert main([*argv, "--fasta", str(tmp_path / "seq.fasta"), "--out", str(out)]) == 0, capsys.readouterr().err
    assert (out / "interactions.tsv").read_text() == "protein_a\tprotein_b\n9606.A\t9606.B\n"
    assert (out / "sequences.fasta").read_text() == ">9606.A\nMKV\n>9606.B\nMLL\n"
