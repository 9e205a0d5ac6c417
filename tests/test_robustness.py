"""A hostile but realistic user (issue 18): every case ends with exit 0, or exit 2 and ONE line
``sipt-lab: error: ...`` naming the problem, and never changes a file outside the output directory.

The CLI runs in-process through ``main([...])``; graph builds and simulations use the small fakes
of the other CLI tests (a hand-made topic assignment, a few training steps, one seed).
"""

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest
from synthetic_fakes import fake_corpus_and_topics

from sipt_lab.cli.main import main
from sipt_lab.errors import SiptError
from sipt_lab.fileio import MANIFEST, claim_output_dir, prepare_output_dir, write_manifest
from sipt_lab.graph import load_graph_tsv
from sipt_lab.synthetic import registry

ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0  # root writes into read-only directories


@pytest.fixture
def fake_lda(monkeypatch):
    """The corpus loader and the LDA fit replaced by a small hand-made topic assignment."""
    corpus, topics = fake_corpus_and_topics(n_topics=25, per_topic=80, n_vague=30)
    monkeypatch.setattr(registry, "load_corpus", lambda path=None: corpus)
    monkeypatch.setattr(registry, "fit_topics", lambda corpus, config, progress=True: topics)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """The current directory, holding files of an earlier run that no command may touch."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for name in ("results.json", "config.json", "edges.tsv"):
        (cwd / name).write_text(f"precious {name}\n")
    monkeypatch.chdir(cwd)
    return cwd


def snapshot(root: Path, skip: Path | None = None) -> dict[str, bytes]:
    """Path -> content of every file under ``root`` except those under ``skip``."""
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and (skip is None or skip not in path.parents):
            files[str(path.relative_to(root))] = path.read_bytes()
    return files


def fails(capsys, argv: list[str], message: str) -> str:
    """Run the CLI, expect exit 2 and one error line containing ``message``; return that line."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sipt-lab: error: "), err
    assert message in err, err
    return err


def write_graph(tmp_path: Path, labels: str, edges: str = "a\tb\nb\tc\n", bom: bool = False) -> list[str]:
    prefix = "\ufeff" if bom else ""
    (tmp_path / "l.tsv").write_text(prefix + labels, encoding="utf-8")
    (tmp_path / "e.tsv").write_text(prefix + edges, encoding="utf-8")
    return ["--edges", str(tmp_path / "e.tsv"), "--labels", str(tmp_path / "l.tsv")]


def consistency_json(capsys, argv: list[str]) -> dict:
    assert main(["consistency", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# --- silently wrong results ------------------------------------------------------------------------


def test_bom_and_header_comment_are_not_a_node(tmp_path, capsys):
    argv = write_graph(tmp_path, "#node\tlabel\na\tx\nb\tx\nc\ty\n", "#u\tv\na\tb\nb\tc\n", bom=True)
    report = consistency_json(capsys, argv)
    assert report["n_nodes"] == 3 and report["n_edges"] == 2


@pytest.mark.parametrize("first, second", [("01", "1"), ("1_000", "1000"), ("1.0", "1"), ("+1", "1")])
def test_labels_that_are_equal_as_numbers_are_two_classes(tmp_path, capsys, first, second):
    argv = write_graph(tmp_path, f"a\t{first}\nb\t{first}\nc\t{second}\n")
    assert consistency_json(capsys, argv)["n_classes"] == 2
    labelled = load_graph_tsv(tmp_path / "e.tsv", tmp_path / "l.tsv")
    assert labelled.labels.tolist() == [0, 0, 1] or labelled.labels.tolist() == [1, 1, 0]
    assert sorted(labelled.label_names) == sorted([first, second])


def test_labels_too_large_for_an_integer_are_just_strings(tmp_path, capsys):
    argv = write_graph(tmp_path, f"a\t{10**30}\nb\t{10**30}\nc\t{-10**30}\n")
    report = consistency_json(capsys, argv)
    assert report["n_classes"] == 2


# --- output directories ----------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["graph", "build", "--graph", "cliques", "--quiet"],
    ["simulate", "--graph", "cliques", "--seeds", "1", "--steps", "1", "--executor", "serial"],
    ["figures", "--only", "corollary1", "--executor", "serial"],
])
def test_empty_out_is_an_error_and_the_current_directory_is_untouched(tmp_path, capsys, workdir, fake_lda, command):
    before = snapshot(tmp_path)
    fails(capsys, [*command, "--out", ""], "--out is empty")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("where", ["file", "under-file", "read-only"])
@pytest.mark.parametrize("command", [
    ["graph", "build", "--graph", "cliques", "--quiet"],
    ["simulate", "--graph", "cliques", "--seeds", "2", "--steps", "1"],  # the default local executor
    ["figures", "--only", "corollary1"],
])
def test_unusable_out_is_one_line(tmp_path, capsys, monkeypatch, workdir, fake_lda, where, command):
    blocker = tmp_path / "blocker"
    blocker.write_text("keep me\n")
    out = {"file": blocker, "under-file": blocker / "out", "read-only": tmp_path / "ro" / "out"}[where]
    if where == "read-only":
        out.parent.mkdir()
        out.parent.chmod(0o500)
        if ROOT_USER:  # root may write anywhere: let the check see what a user would
            monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != out.parent)
    before = snapshot(tmp_path)
    try:
        message = {"file": "is a file", "under-file": "lies under the file", "read-only": "is not writable"}[where]
        fails(capsys, [*command, "--out", str(out)], message)
    finally:
        out.parent.chmod(0o700) if where == "read-only" else None
    assert snapshot(tmp_path) == before


def test_build_refuses_a_directory_with_foreign_files(tmp_path, capsys, fake_lda):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    fails(capsys, ["graph", "build", "--graph", "cliques", "--quiet", "--out", str(out)], "notes.txt")
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_build_replaces_an_earlier_build_of_another_family(tmp_path, capsys, fake_lda):
    out = tmp_path / "out"
    out.mkdir()
    for name in ("points.tsv", "triangles.tsv", "surface.png", "edges.tsv"):
        (out / name).write_text("old\n")
    write_manifest(out, ["points.tsv", "triangles.tsv", "surface.png", "edges.tsv"])
    assert main(["graph", "build", "--graph", "cliques", "--quiet", "--out", str(out)]) == 0
    names = {p.name for p in out.iterdir()}
    assert not names & {"points.tsv", "triangles.tsv", "surface.png"}
    assert set(json.loads((out / MANIFEST).read_text())) == names - {MANIFEST}
    assert (out / "edges.tsv").read_text() != "old\n"
    assert main(["graph", "build", "--graph", "motif", "--quiet", "--out", str(out)]) == 0  # again: owned
    assert "nodes.tsv" in {p.name for p in out.iterdir()}


def test_a_damaged_manifest_owns_nothing(tmp_path):
    (tmp_path / MANIFEST).write_text("[\"../../etc/passwd\", 3")
    (tmp_path / "edges.tsv").write_text("x\n")
    with pytest.raises(SiptError, match="edges.tsv"):
        claim_output_dir(tmp_path)
    assert (tmp_path / "edges.tsv").exists()


def test_prepare_output_dir_creates_and_returns_the_directory(tmp_path):
    assert prepare_output_dir(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert (tmp_path / "a" / "b").is_dir() and not list((tmp_path / "a" / "b").iterdir())
    with pytest.raises(SiptError, match="--out is empty"):
        prepare_output_dir(None)


# --- unreadable input ------------------------------------------------------------------------------


def test_unreadable_labels_file(tmp_path, capsys):
    if ROOT_USER:
        pytest.skip("root reads unreadable files")
    argv = write_graph(tmp_path, "a\tx\nb\tx\nc\ty\n")
    (tmp_path / "l.tsv").chmod(0)
    fails(capsys, ["consistency", *argv], "cannot read labels file")


def test_labels_path_is_a_directory(tmp_path, capsys):
    argv = write_graph(tmp_path, "a\tx\n")
    fails(capsys, ["consistency", "--edges", str(tmp_path / "e.tsv"), "--labels", str(tmp_path)], "is a directory")


def test_not_utf8_names_the_line(tmp_path, capsys):
    argv = write_graph(tmp_path, "a\tx\n")
    (tmp_path / "l.tsv").write_bytes(b"a\tx\nb\t\xff\n")
    fails(capsys, ["consistency", *argv], "not UTF-8 text (bad byte on line 2)")


@pytest.mark.parametrize("content, message", [
    (b"\x1f\x8b\x08\x00garbage-not-deflate" * 3, "cannot read corpus file"),
    (gzip.compress(b"one two three four\n" * 50)[:-12], "cannot read corpus file"),
])
def test_corrupt_gzip_corpus(tmp_path, capsys, content, message):
    corpus = tmp_path / "c.txt.gz"
    corpus.write_bytes(content)
    fails(capsys, ["graph", "build", "--graph", "cliques", "--quiet", "--corpus", str(corpus),
                   "--out", str(tmp_path / "out")], message)


def test_corpus_path_is_a_directory(tmp_path, capsys):
    fails(capsys, ["simulate", "--graph", "cliques", "--corpus", str(tmp_path), "--out", str(tmp_path / "o")],
          "is a directory")
