import json

import pytest
from synthetic_fakes import fake_corpus_and_topics

from sipt_lab.cli.main import main
from sipt_lab.synthetic import builder

OUR_FAMILIES = {"cliques": (50, 100), "neighborhood": (90, 100), "motif": (90, 100), "structural": (90, 100)}
FILES = ("edges.tsv", "labels.tsv", "sentences.tsv", "heldout.tsv", "nodes.tsv", "meta.json")


@pytest.fixture
def fake_lda(monkeypatch):
    """Replace the corpus loader and the LDA fit with a small hand-made topic assignment."""
    corpus, topics = fake_corpus_and_topics(n_topics=25, per_topic=80, n_vague=30)
    monkeypatch.setattr(builder, "load_corpus", lambda path=None: corpus)
    monkeypatch.setattr(builder, "fit_topics", lambda corpus, config: topics)
    return corpus, topics


def build(tmp_path, name, *extra, out="out"):
    return main(["graph", "build", "--graph", name, "--out", str(tmp_path / out), "--quiet", *extra])


def test_list_shows_the_registry(capsys):
    assert main(["graph", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["name", "nodes", "topics"]
    rows = {line.split()[0]: line.split()[1:3] for line in lines[1:]}
    for name, (nodes, topics) in OUR_FAMILIES.items():
        assert rows[name] == [str(nodes), str(topics)]


@pytest.mark.parametrize("name", list(OUR_FAMILIES))
def test_build_writes_files_that_consistency_reads(tmp_path, capsys, fake_lda, name):
    assert build(tmp_path, name, "--nodes", "40", "--seed", "3") == 0
    summary = capsys.readouterr().out
    assert summary.startswith(f"graph {name}: 40 nodes") and "local consistency" in summary
    out = tmp_path / "out"
    assert all((out / f).is_file() for f in FILES)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["graph"] == name and meta["n_nodes"] == 40 and meta["seed"] == 3 and meta["noise"] == 0.0
    assert len((out / "labels.tsv").read_text().splitlines()) == 40
    assert len((out / "sentences.tsv").read_text().splitlines()) == 40
    assert len((out / "edges.tsv").read_text().splitlines()) == meta["n_edges"]

    assert main(["consistency", "--edges", str(out / "edges.tsv"), "--labels", str(out / "labels.tsv"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n_nodes"] == 40 and report["n_edges"] == meta["n_edges"]
    assert report["local_consistency"] == pytest.approx(meta["local_consistency"])
    assert report["dropped_self_loops"] == 0 and report["dropped_duplicates"] == 0


def test_same_seed_gives_identical_files(tmp_path, fake_lda):
    for out in ("a", "b"):
        assert build(tmp_path, "structural", "--seed", "7", "--noise", "0.05", out=out) == 0
    assert build(tmp_path, "structural", "--seed", "8", "--noise", "0.05", out="c") == 0
    for f in FILES:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    assert (tmp_path / "a" / "edges.tsv").read_bytes() != (tmp_path / "c" / "edges.tsv").read_bytes()


def test_noise_flip_is_recorded(tmp_path, capsys, fake_lda):
    assert build(tmp_path, "cliques", "--noise", "0.1", "--noise-mode", "flip", "--heldout", "5") == 0
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    assert meta["noise"] == 0.1 and meta["noise_mode"] == "flip" and meta["n_heldout"] == 5
    assert meta["n_edges"] != 100


@pytest.mark.parametrize(
    "args, message",
    [
        (["--graph", "nope"], "unknown graph 'nope'; choose one of: "),
        (["--graph", "cliques", "--noise", "1.5"], "--noise must be in [0, 1]"),
        (["--graph", "cliques", "--noise", "-0.1"], "--noise must be in [0, 1]"),
        (["--graph", "motif", "--nodes", "1"], "--nodes must be in [2, 1,000,000], got 1"),
        (["--graph", "motif", "--nodes", "5"], "--nodes >= 8"),
        (["--graph", "cliques", "--noise-mode", "swap"], "--noise-mode 'swap' is unknown"),
        (["--graph", "motif", "--nodes", "250"], "fewer --nodes"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys, fake_lda, args, message):
    assert main(["graph", "build", *args, "--out", str(tmp_path / "x"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sipt-lab: error: ") and message in err
    assert not (tmp_path / "x").exists()
