import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sipt_lab.cli.main import main

EXAMPLE = {
    # 31 nodes, 49 edges, b16 isolated; p15 disagrees with its neighbours, p04 ties 2-2
    "n_nodes": 31,
    "n_edges": 49,
    "n_isolated": 1,
    "n_classes": 2,
    "dropped_self_loops": 0,
    "dropped_duplicates": 0,
}


def run_json(capsys, *argv):
    assert main(["consistency", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("ties, lc", [("split", 28.5 / 30), ("strict", 28 / 30), ("lenient", 29 / 30)])
def test_example_json(capsys, ties, lc):
    result = run_json(capsys, "--example", "--ties", ties)
    assert {k: result[k] for k in EXAMPLE} == EXAMPLE
    assert result["tie_policy"] == ties
    assert result["local_consistency"] == pytest.approx(lc)
    assert result["edge_homophily"] == pytest.approx(41 / 49)
    assert 0 < result["node_homophily"] < 1
    assert Path(result["edges_file"]).name == "example_edges.tsv"
    assert Path(result["labels_file"]).name == "example_labels.tsv"


def test_example_table(capsys):
    assert main(["consistency", "--example"]) == 0
    rows = {line[:30].strip(): line[30:].strip() for line in capsys.readouterr().out.splitlines()}
    assert rows["local consistency"] == "0.9500"
    assert rows["edge homophily"] == "0.8367"
    assert rows["isolated nodes (not averaged)"] == "1"
    assert rows["tie policy"] == "split"


def test_user_files_report_dropped_edges(tmp_path, capsys):
    (tmp_path / "labels.tsv").write_text("n1\tcat\nn2\tcat\nn3\tdog\nn4\tdog\n")
    (tmp_path / "edges.tsv").write_text("# my graph\nn1\tn2\nn2\tn1\nn3\tn3\nn3\tn4\nn2\tn3\n")
    result = run_json(capsys, "--edges", str(tmp_path / "edges.tsv"), "--labels", str(tmp_path / "labels.tsv"))
    assert (result["dropped_self_loops"], result["dropped_duplicates"]) == (1, 1)
    assert (result["n_nodes"], result["n_edges"], result["n_isolated"]) == (4, 3, 0)
    # n1: cat | n2: cat, dog tie -> 1/2 | n3: dog, cat tie -> 1/2 | n4: dog
    assert result["local_consistency"] == pytest.approx(3 / 4)
    assert result["edge_homophily"] == pytest.approx(2 / 3)
    assert result["edges_file"] == str(tmp_path / "edges.tsv")


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sipt-lab: error: ")
    return lines[0]


def test_missing_arguments_are_a_usage_error(capsys):
    assert main(["consistency"]) == 2
    assert "--edges and --labels" in one_error_line(capsys)
    assert main(["consistency", "--edges", "x.tsv"]) == 2
    one_error_line(capsys)
    assert main(["consistency", "--example", "--labels", "x.tsv"]) == 2
    assert "--example" in one_error_line(capsys)


def test_bad_files_give_one_line_naming_the_file(tmp_path, capsys):
    labels = tmp_path / "labels.tsv"
    labels.write_text("a\tx\nb\ty\n")
    edges = tmp_path / "edges.tsv"
    cases = {
        "missing": None,
        "empty": b"",
        "binary": b"a\tb\n\xff\xfe\n",
    }
    for case, content in cases.items():
        edges.unlink(missing_ok=True)
        if content is not None:
            edges.write_bytes(content)
        assert main(["consistency", "--edges", str(edges), "--labels", str(labels)]) == 2, case
        line = one_error_line(capsys)
        assert str(edges) in line, case


def test_an_edge_to_an_unlabelled_node_is_left_out_and_counted(tmp_path, capsys):
    """Labels may cover a subset of the nodes: the edge to 'zz' is not an error but a count."""
    (tmp_path / "labels.tsv").write_text("a\tx\nb\tx\n")
    (tmp_path / "edges.tsv").write_text("a\tb\nb\tzz\nzz\tzz\n")
    argv = ["consistency", "--edges", str(tmp_path / "edges.tsv"), "--labels", str(tmp_path / "labels.tsv")]
    assert main(argv) == 0
    table = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in capsys.readouterr().out.splitlines())
    assert table["edges left out (an end without a label)"] == "2"
    assert table["local consistency"] == "1.0000" and table["edges"] == "1" and table["nodes"] == "2"


def test_invalid_tie_policy_is_rejected_by_argparse_in_one_line(capsys):
    assert main(["consistency", "--example", "--ties", "coin"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sipt-lab: error: --ties invalid choice") and err.count("\n") == 1


def test_help_explains_the_options(capsys):
    with pytest.raises(SystemExit):
        main(["consistency", "--help"])
    out = capsys.readouterr().out
    for option in ("--edges", "--labels", "--example", "--ties", "--json"):
        assert option in out
    assert "split = 1/k" in out


@pytest.mark.slow
def test_installed_console_script():
    # the README's install command (pip install -e .) puts the entry point on PATH; tests never install
    exe = shutil.which("sipt-lab")
    assert exe is not None, "sipt-lab is not on PATH: install the package first (pip install -e .)"
    done = subprocess.run([exe, "consistency", "--example", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["local_consistency"] == pytest.approx(0.95)
    assert result["n_nodes"] == 31
