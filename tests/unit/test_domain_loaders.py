"""The raw-file readers of sipt_lab.domains.loaders, good files and bad ones."""

import gzip
import json

import pytest

from sipt_lab.core.errors import SiptError
from sipt_lab.domains.loaders import LOADERS, get_loader, read_fasta, read_interactions, read_papers


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
    assert get_loader("fasta") is read_fasta
    assert set(LOADERS) == {"fasta", "interactions", "papers", "tape-task", "scibert-task", "tu-graphs", "term-sets"}
    assert_one_line_error(
        "unknown loader 'fastq'; choose one of: fasta, interactions, papers, tape-task", get_loader, "fastq"
    )


# ---------------------------------------------------------------------- FASTA
def test_fasta_joins_sequence_lines_and_keeps_the_first_word_as_id(tmp_path):
    path = write(tmp_path, "p.fa", ">P1 kinase, human\nMKT\nAY \n\n>P2\nGG\n>P3 x\nW\n")
    records = read_fasta(path)
    assert records.ids == ["P1", "P2", "P3"] and records.sequences == ["MKTAY", "GG", "W"]


def test_fasta_reads_gzip(tmp_path):
    path = tmp_path / "p.fa.gz"
    path.write_bytes(gzip.compress(b">A\nMK\n"))
    assert read_fasta(path).sequences == ["MK"]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (">A\nMK\n>B\n>C\nW\n", r"line 3: record 'B' has an empty sequence"),
        (">A\nMK\n\n>B\n", r"line 4: record 'B' has an empty sequence"),
        (">A\nMK\n>B\nW\n>A dup\nG\n", r"line 5: id 'A' repeats line 1"),
        ("MK\n>A\nW\n", r"line 1: sequence before the first '>' header"),
        (">A\nMK\n> \nW\n", r"line 3: header without an id"),
        ("\n\n", r"has no records"),
    ],
)
def test_fasta_bad_input(tmp_path, text, match):
    assert_one_line_error(match, read_fasta, write(tmp_path, "bad.fa", text))


def test_missing_file_is_named(tmp_path):
    assert_one_line_error(r"FASTA file .*nope.fa does not exist", read_fasta, tmp_path / "nope.fa")


# ---------------------------------------------------------------------- interactions
IDS = ["A", "B", "C", "D"]


@pytest.mark.parametrize(
    "text",
    [
        "A\tB\nC\tB\nB\tA\n",
        "protein_a,protein_b\nA,B\nC, B\n",
        "\nsource\ttarget\nA\tB\n\nB\tC\nC\tC\n",
    ],
)
def test_interactions_tab_or_comma_with_optional_header(tmp_path, text):
    graph = read_interactions(write(tmp_path, "ppi.tsv", text), IDS)
    assert graph.n_nodes == 4 and edges(graph) == {(0, 1), (1, 2)}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("A\tB\nA\tE\n", r"line 2: 'E' is not a known id"),
        ("A\tB\tC\n", r"line 1 has 3 fields"),
        ("A\tB\nC\n", r"line 2 has 1 fields"),
    ],
)
def test_interactions_bad_input(tmp_path, text, match):
    assert_one_line_error(match, read_interactions, write(tmp_path, "ppi.tsv", text), IDS)


# ---------------------------------------------------------------------- papers
def paper(id_, citations, title="T", abstract="abs"):
    return json.dumps({"id": id_, "title": title, "abstract": abstract, "citations": citations})


def test_papers_symmetrise_citations_and_count_unknown_ones(tmp_path):
    lines = [
        paper("p1", ["p2", "x9"], "Graphs", "We study graphs."),
        paper("p2", ["p1"]),
        paper("p3", ["p1", "y", "z"]),
        "",
        paper("p4", []),
    ]
    papers = read_papers(write(tmp_path, "papers.jsonl", "\n".join(lines) + "\n"))
    assert papers.ids == ["p1", "p2", "p3", "p4"]
    assert papers.texts[0] == "Graphs We study graphs."
    assert edges(papers.graph) == {(0, 1), (0, 2)}
    assert papers.unknown_citations == 3


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ('{"id": "p2", "title": "T"', r"line 2 is not JSON"),
        ('["p2"]', r"line 2 needs a non-empty string 'id'"),
        ('{"id": "p2", "title": "T", "abstract": "a", "citations": "p1"}', r"line 2 needs"),
        ('{"id": "p2", "title": "T", "abstract": "a", "citations": [3]}', r"line 2 needs"),
        ('{"id": "", "title": "T", "abstract": "a", "citations": []}', r"line 2 needs"),
        (paper("p1", []), r"line 2: id 'p1' repeats line 1"),
    ],
)
def test_papers_bad_input(tmp_path, line, match):
    path = write(tmp_path, "papers.jsonl", paper("p1", []) + "\n" + line + "\n")
    assert_one_line_error(match, read_papers, path)


# ---------------------------------------------------------------------- TAPE, SciBERT, TUDataset, term sets
from sipt_lab.domains.loaders import read_scibert_task, read_tape_task, read_term_sets, read_tu_graphs  # noqa: E402


def write_tape(directory, records_by_suffix):
    directory.mkdir(exist_ok=True)
    for suffix, records in records_by_suffix.items():
        (directory / f"fluorescence_{suffix}.json").write_text(
            json.dumps(records) if not isinstance(records, str) else records
        )
    return directory


GOOD_TAPE = {
    "train": [{"primary": "MKV", "log_fluorescence": [3.5]}],
    "valid": [{"primary": "GG", "log_fluorescence": 1}],
    "test": [{"primary": "W", "log_fluorescence": [2.0]}],
}


def test_tape_task_reads_list_or_scalar_targets(tmp_path):
    records = read_tape_task(write_tape(tmp_path / "fl", GOOD_TAPE), "fluorescence")
    assert records.texts == {"train": ["MKV"], "validation": ["GG"], "test": ["W"]}
    assert records.labels == {"train": [3.5], "validation": [1.0], "test": [2.0]}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"test": None}, r"fluorescence_test.json does not exist"),
        ({"valid": "[{"}, r"is not JSON"),
        ({"valid": []}, r"non-empty JSON list"),
        (
            {"train": [{"primary": "MK"}]},
            r"record 0 needs a non-empty string 'primary' and a number 'log_fluorescence'",
        ),
        ({"train": [{"primary": "", "log_fluorescence": 1}]}, r"record 0 needs"),
        ({"train": [{"primary": "MK", "log_fluorescence": "high"}]}, r"record 0 needs"),
    ],
)
def test_tape_task_bad_input(tmp_path, change, match):
    files = {k: v for k, v in {**GOOD_TAPE, **change}.items() if v is not None}
    assert_one_line_error(match, read_tape_task, write_tape(tmp_path / "fl", files), "fluorescence")


def test_tape_task_unknown_name(tmp_path):
    assert_one_line_error("unknown TAPE task 'contact'", read_tape_task, tmp_path, "contact")


def write_scibert(directory, train='{"text": "a b", "label": "x"}\n'):
    directory.mkdir(exist_ok=True)
    (directory / "train.txt").write_text(train)
    (directory / "dev.txt").write_text('{"text": "c", "label": "y", "metadata": 1}\n')
    (directory / "test.txt").write_text('{"text": "d", "label": "x"}\n')
    return directory


def test_scibert_task(tmp_path):
    records = read_scibert_task(write_scibert(tmp_path / "t"))
    assert records.texts["validation"] == ["c"] and records.labels["test"] == ["x"]


@pytest.mark.parametrize(
    ("train", "match"),
    [
        ("{oops\n", r"train.txt line 1 is not JSON"),
        ('{"text": "a"}\n', r"line 1 needs a string 'text' and 'label'"),
        ("\n", r"train.txt has no records"),
    ],
)
def test_scibert_task_bad_input(tmp_path, train, match):
    assert_one_line_error(match, read_scibert_task, write_scibert(tmp_path / "t", train))


def write_tu(directory, edges="1, 2\n2, 1\n3, 4\n", indicator="1\n1\n2\n2\n2\n", labels="C\nN\nC\nO\nC\n"):
    directory.mkdir(exist_ok=True)
    (directory / "ppi_A.txt").write_text(edges)
    (directory / "ppi_graph_indicator.txt").write_text(indicator)
    if labels is not None:
        (directory / "ppi_node_labels.txt").write_text(labels)
    return directory


def test_tu_graphs_split_nodes_and_edges_by_graph(tmp_path):
    data = read_tu_graphs(write_tu(tmp_path / "tu"))
    assert data.ids == ["1", "2"] and data.code_names == ("C", "N", "O")
    first, second = data.graphs
    assert first.x.tolist() == [0, 1] and first.edge_index.T.tolist() == [[0, 1], [1, 0]]
    assert second.x.tolist() == [0, 2, 0] and sorted(second.edge_index.T.tolist()) == [[0, 1], [1, 0]]
    assert read_tu_graphs(write_tu(tmp_path / "plain", labels=None)).code_names == ("",)


@pytest.mark.parametrize(
    ("files", "match"),
    [
        ({"edges": "1, 3\n"}, r"links nodes of two different graphs"),
        ({"edges": "1, 9\n"}, r"names node 9 but the graph indicator has 5 nodes"),
        ({"edges": "1, x\n"}, r"holds something other than integers"),
        ({"edges": "1, 2, 3\n"}, r"must hold 2 integers a line"),
        ({"indicator": "1\n1\n3\n3\n3\n"}, r"must number the graphs 1..n"),
        ({"labels": "C\nN\n"}, r"has 2 labels for 5 nodes"),
    ],
)
def test_tu_graphs_bad_input(tmp_path, files, match):
    assert_one_line_error(match, read_tu_graphs, write_tu(tmp_path / "tu", **files))


def test_tu_graphs_needs_exactly_one_dataset(tmp_path):
    assert_one_line_error(r"holds 0 TUDataset adjacency files", read_tu_graphs, tmp_path)


def test_term_sets(tmp_path):
    terms = read_term_sets(write(tmp_path, "go.tsv", "b\tGO:2;GO:1\na\t\n"), ["a", "b", "c"])
    assert terms.terms == ("GO:1", "GO:2") and terms.listed.tolist() == [True, True, False]
    assert terms.matrix.toarray().tolist() == [[0, 0], [1, 1], [0, 0]]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("a GO:1\n", r"line 1 has no tab"),
        ("a\tGO:1\nz\tGO:2\n", r"line 2: 'z' is not a known sample id"),
        ("a\tGO:1\na\tGO:2\n", r"line 2: id 'a' is listed twice"),
    ],
)
def test_term_sets_bad_input(tmp_path, text, match):
    assert_one_line_error(match, read_term_sets, write(tmp_path, "go.tsv", text), ["a", "b"])
