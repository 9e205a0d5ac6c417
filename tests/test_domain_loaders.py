"""The raw-file readers of sipt_lab.domains.loaders, good files and bad ones."""

import gzip
import json

import pytest

from sipt_lab.domains.loaders import LOADERS, get_loader, read_fasta, read_interactions, read_papers
from sipt_lab.errors import SiptError


def edges(graph) -> set[tuple[int, int]]:
    return set(map(tuple, graph.edges().tolist()))


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def assert_one_line_error(match: str, fn, *args):
    with pytest.raises(SiptError, match=match) as error:
        fn(*args)
    assert "\n" not in str(error.value)


def test_registry_names_each_reader():
    assert get_loader("fasta") is read_fasta and set(LOADERS) == {"fasta", "interactions", "papers"}
    assert_one_line_error("unknown loader 'fastq'; choose one of: fasta, interactions, papers", get_loader, "fastq")


# ---------------------------------------------------------------------- FASTA
def test_fasta_joins_sequence_lines_and_keeps_the_first_word_as_id(tmp_path):
    path = write(tmp_path, "p.fa", ">P1 kinase, human\nMKT\nAY \n\n>P2\nGG\n>P3 x\nW\n")
    records = read_fasta(path)
    assert records.ids == ["P1", "P2", "P3"] and records.sequences == ["MKTAY", "GG", "W"]


def test_fasta_reads_gzip(tmp_path):
    path = tmp_path / "p.fa.gz"
    path.write_bytes(gzip.compress(b">A\nMK\n"))
    assert read_fasta(path).sequences == ["MK"]


@pytest.mark.parametrize(("text", "match"), [
    (">A\nMK\n>B\n>C\nW\n", r"line 3: record 'B' has an empty sequence"),
    (">A\nMK\n\n>B\n", r"line 4: record 'B' has an empty sequence"),
    (">A\nMK\n>B\nW\n>A dup\nG\n", r"line 5: id 'A' repeats line 1"),
    ("MK\n>A\nW\n", r"line 1: sequence before the first '>' header"),
    (">A\nMK\n> \nW\n", r"line 3: header without an id"),
    ("\n\n", r"has no records"),
])
def test_fasta_bad_input(tmp_path, text, match):
    assert_one_line_error(match, read_fasta, write(tmp_path, "bad.fa", text))


def test_missing_file_is_named(tmp_path):
    assert_one_line_error(r"FASTA file .*nope.fa does not exist", read_fasta, tmp_path / "nope.fa")


# ---------------------------------------------------------------------- interactions
IDS = ["A", "B", "C", "D"]


@pytest.mark.parametrize("text", [
    "A\tB\nC\tB\nB\tA\n",
    "protein_a,protein_b\nA,B\nC, B\n",
    "\nsource\ttarget\nA\tB\n\nB\tC\nC\tC\n",
])
def test_interactions_tab_or_comma_with_optional_header(tmp_path, text):
    graph = read_interactions(write(tmp_path, "ppi.tsv", text), IDS)
    assert graph.n_nodes == 4 and edges(graph) == {(0, 1), (1, 2)}


@pytest.mark.parametrize(("text", "match"), [
    ("A\tB\nA\tE\n", r"line 2: 'E' is not a known id"),
    ("A\tB\tC\n", r"line 1 has 3 fields"),
    ("A\tB\nC\n", r"line 2 has 1 fields"),
])
def test_interactions_bad_input(tmp_path, text, match):
    assert_one_line_error(match, read_interactions, write(tmp_path, "ppi.tsv", text), IDS)


# ---------------------------------------------------------------------- papers
def paper(id_, citations, title="T", abstract="abs"):
    return json.dumps({"id": id_, "title": title, "abstract": abstract, "citations": citations})


def test_papers_symmetrise_citations_and_count_unknown_ones(tmp_path):
    lines = [paper("p1", ["p2", "x9"], "Graphs", "We study graphs."), paper("p2", ["p1"]),
             paper("p3", ["p1", "y", "z"]), "", paper("p4", [])]
    papers = read_papers(write(tmp_path, "papers.jsonl", "\n".join(lines) + "\n"))
    assert papers.ids == ["p1", "p2", "p3", "p4"]
    assert papers.texts[0] == "Graphs We study graphs."
    assert edges(papers.graph) == {(0, 1), (0, 2)}
    assert papers.unknown_citations == 3


@pytest.mark.parametrize(("line", "match"), [
    ('{"id": "p2", "title": "T"', r"line 2 is not JSON"),
    ('["p2"]', r"line 2 needs a non-empty string 'id'"),
    ('{"id": "p2", "title": "T", "abstract": "a", "citations": "p1"}', r"line 2 needs"),
    ('{"id": "p2", "title": "T", "abstract": "a", "citations": [3]}', r"line 2 needs"),
    ('{"id": "", "title": "T", "abstract": "a", "citations": []}', r"line 2 needs"),
    (paper("p1", []), r"line 2: id 'p1' repeats line 1"),
])
def test_papers_bad_input(tmp_path, line, match):
    path = write(tmp_path, "papers.jsonl", paper("p1", []) + "\n" + line + "\n")
    assert_one_line_error(match, read_papers, path)
