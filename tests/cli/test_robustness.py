"""A hostile but realistic user: every case ends with exit 0, or exit 2 and ONE line
``sipt-lab: error: ...`` naming the problem, and never changes a file outside the output directory.

The CLI runs in-process through ``main([...])``; graph builds and simulations use the small fakes
of the other CLI tests (a hand-made topic assignment, a few training steps, one seed).
"""

import dataclasses
import gzip
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from synthetic_fakes import fake_corpus_and_topics
from test_simulate import SMALL

from sipt_lab.cli.main import main
from sipt_lab.core.config_io import config_hash
from sipt_lab.core.errors import SiptError
from sipt_lab.core.locks import _alive
from sipt_lab.core.outputs import MANIFEST, claim_output_dir, prepare_output_dir, write_manifest
from sipt_lab.data import topics as topics_module
from sipt_lab.data.corpus import Corpus
from sipt_lab.data.topics import TopicConfig, cache_path, fit_topics
from sipt_lab.graphs.tsv import load_graph_tsv
from sipt_lab.grid import collect_results, run_grid
from sipt_lab.synthetic import builder

ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0  # root writes into read-only directories


@pytest.fixture
def fake_lda(monkeypatch):
    """The corpus loader and the LDA fit replaced by a small hand-made topic assignment."""
    corpus, topics = fake_corpus_and_topics(n_topics=25, per_topic=80, n_vague=30)
    monkeypatch.setattr(builder, "load_corpus", lambda path=None: corpus)
    monkeypatch.setattr(builder, "fit_topics", lambda corpus, config: topics)


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
    argv = write_graph(tmp_path, f"a\t{10**30}\nb\t{10**30}\nc\t{-(10**30)}\n")
    report = consistency_json(capsys, argv)
    assert report["n_classes"] == 2


# --- output directories ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["graph", "build", "--graph", "cliques", "--quiet"],
        ["simulate", "--graph", "cliques", "--seeds", "1", "--steps", "1", "--executor", "serial"],
        ["figures", "--only", "corollary1", "--executor", "serial"],
    ],
)
def test_empty_out_is_an_error_and_the_current_directory_is_untouched(tmp_path, capsys, workdir, fake_lda, command):
    before = snapshot(tmp_path)
    fails(capsys, [*command, "--out", ""], "--out is empty")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("where", ["file", "under-file", "read-only"])
@pytest.mark.parametrize(
    "command",
    [
        ["graph", "build", "--graph", "cliques", "--quiet"],
        ["simulate", "--graph", "cliques", "--seeds", "2", "--steps", "1"],  # the default local executor
        ["figures", "--only", "corollary1"],
    ],
)
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


@pytest.mark.slow
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
    (tmp_path / MANIFEST).write_text('["../../etc/passwd", 3')
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


def test_unreadable_labels_file(tmp_path, capsys, monkeypatch):
    argv = write_graph(tmp_path, "a\tx\nb\tx\nc\ty\n")
    (tmp_path / "l.tsv").chmod(0)
    if ROOT_USER:  # root reads anything: fail the read as it fails for a user
        from sipt_lab.core import fileio

        def denied_open(path, *args, **kwargs):
            if Path(path).name == "l.tsv":
                raise PermissionError(13, "Permission denied")
            return open(path, *args, **kwargs)

        monkeypatch.setattr(fileio, "open", denied_open, raising=False)
    fails(capsys, ["consistency", *argv], "cannot read labels file")


def test_labels_path_is_a_directory(tmp_path, capsys):
    write_graph(tmp_path, "a\tx\n")
    fails(capsys, ["consistency", "--edges", str(tmp_path / "e.tsv"), "--labels", str(tmp_path)], "is a directory")


def test_not_utf8_names_the_line(tmp_path, capsys):
    argv = write_graph(tmp_path, "a\tx\n")
    (tmp_path / "l.tsv").write_bytes(b"a\tx\nb\t\xff\n")
    fails(capsys, ["consistency", *argv], "not UTF-8 text (bad byte on line 2)")


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\x1f\x8b\x08\x00garbage-not-deflate" * 3, "cannot read corpus file"),
        (
            gzip.compress(b"one two three four\n" * 50, mtime=0)[:-12],
            "cannot read corpus file",
        ),  # mtime 0: the same test id in every process
    ],
)
def test_corrupt_gzip_corpus(tmp_path, capsys, content, message):
    corpus = tmp_path / "c.txt.gz"
    corpus.write_bytes(content)
    fails(
        capsys,
        ["graph", "build", "--graph", "cliques", "--quiet", "--corpus", str(corpus), "--out", str(tmp_path / "out")],
        message,
    )


def test_corpus_path_is_a_directory(tmp_path, capsys):
    fails(
        capsys,
        ["simulate", "--graph", "cliques", "--corpus", str(tmp_path), "--out", str(tmp_path / "o")],
        "is a directory",
    )


# --- sweeps: damaged cells, errors on screen, locks, dead parents ---------------------------------


@dataclasses.dataclass(frozen=True)
class Cell:
    i: int = 0
    log: str = ""  # where the cell records its calls
    fail: bool = False


def counting_cell(config: Cell) -> dict:
    with open(Path(config.log) / f"calls-{config.i}", "a") as log:
        log.write("call\n")
    if config.fail:
        raise ValueError(f"cell {config.i} cannot cope")
    return {"i": config.i, "square": config.i**2}


def n_calls(config: Cell) -> int:
    path = Path(config.log) / f"calls-{config.i}"
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.parametrize("damage", ["", '{"i": ', "[1, 2]", "null", '{"i": 0}', "\x00\x00"])
def test_a_damaged_result_is_recomputed_and_not_collected(tmp_path, damage):
    config, root = Cell(log=str(tmp_path)), tmp_path / "cells"
    [first] = run_grid(counting_cell, [config], root)
    (root / first.hash / "result.json").write_text(damage)
    assert collect_results(root, required_keys=("i", "square")) == []
    [again] = run_grid(counting_cell, [config], root, required_keys=("i", "square"))
    assert again.status == "done" and again.result == {"i": 0, "square": 0} and n_calls(config) == 2
    assert [row["metrics.square"] for row in collect_results(root)] == [0]


@pytest.mark.slow
def test_a_simulate_cell_with_missing_keys_is_recomputed(tmp_path, capsys, signal_free_corpus):
    argv = ["simulate", *SMALL, "--steps", "2", "--json", "--out", str(tmp_path)]
    assert main(argv) == 0
    [cell_dir] = (tmp_path / "cells").iterdir()
    (cell_dir / "result.json").write_text('{"graph": "cliques"}')
    capsys.readouterr()
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["seeds"] == [0]
    assert set(json.loads((cell_dir / "result.json").read_text())) >= {"methods", "n_nodes"}


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["serial", "local", "slurm"])
def test_a_failed_cell_shows_its_error_the_same_way_under_every_executor(tmp_path, monkeypatch, executor):
    if executor == "slurm":
        pytest.importorskip("submitit")
        monkeypatch.setenv(
            "PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])
        )
    options = {"cluster": "local"} if executor == "slurm" else {}
    configs = [Cell(i=0, log=str(tmp_path)), Cell(i=1, log=str(tmp_path), fail=True)]
    with pytest.raises(SiptError) as error:
        run_grid(counting_cell, configs, tmp_path / "cells", executor=executor, **options)
    message = str(error.value)
    assert "\n" not in message and "ValueError: cell 1 cannot cope" in message and "error.txt" in message


def test_cli_prints_a_failed_cells_own_error(tmp_path, capsys, monkeypatch, signal_free_corpus):
    from sipt_lab.studies.simulation import arms as simulate_module

    def broken(dataset, config):
        raise RuntimeError("encoder exploded")

    monkeypatch.setattr(simulate_module, "run_arms", broken)
    fails(
        capsys, ["simulate", *SMALL, "--json", "--out", str(tmp_path)], "the first says: RuntimeError: encoder exploded"
    )


def test_a_stale_lock_of_a_dead_process_is_taken_over(tmp_path):
    config, root = Cell(log=str(tmp_path)), tmp_path / "cells"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    cell_dir = root / config_hash(config)
    cell_dir.mkdir(parents=True)
    (cell_dir / "lock").write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname()}))
    [cell] = run_grid(counting_cell, [config], root)
    assert cell.status == "done" and not (cell_dir / "lock").exists()


@pytest.mark.slow
def test_a_cell_locked_by_a_live_run_is_waited_for_not_computed_twice(tmp_path):
    config, root = Cell(log=str(tmp_path)), tmp_path / "cells"
    other_run = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    cell_dir = root / config_hash(config)
    cell_dir.mkdir(parents=True)
    (cell_dir / "lock").write_text(json.dumps({"pid": other_run.pid, "host": socket.gethostname()}))

    def other_run_finishes():
        (cell_dir / "result.json").write_text('{"i": 0, "square": 0, "by": "the other run"}')
        other_run.kill()
        other_run.wait()

    timer = threading.Timer(0.5, other_run_finishes)
    timer.start()
    try:
        [cell] = run_grid(counting_cell, [config], root)
    finally:
        timer.join()
    assert cell.status == "skipped" and cell.result["by"] == "the other run" and n_calls(config) == 0


def test_ctrl_c_keeps_the_finished_seeds_in_results_json(tmp_path, capsys, monkeypatch, signal_free_corpus):
    from sipt_lab.studies.simulation import arms as simulate_module

    real_run_arms = simulate_module.run_arms

    def interrupted_on_seed_1(dataset, config):
        if config.graph.seed == 1:
            raise KeyboardInterrupt
        return real_run_arms(dataset, config)

    monkeypatch.setattr(simulate_module, "run_arms", interrupted_on_seed_1)
    assert main(["simulate", *SMALL, "--steps", "2", "--seeds", "2", "--json", "--out", str(tmp_path)]) == 130
    err = capsys.readouterr().err
    assert err == "sipt-lab: interrupted; its finished cells are kept: run the same command again to resume\n"
    assert json.loads((tmp_path / "results.json").read_text())["seeds"] == [0]
    assert not list((tmp_path / "cells").glob("*/lock"))


GRID_SCRIPT = """
import dataclasses, os, sys, time
from pathlib import Path
from sipt_lab.grid import GridInterrupted, grid, run_grid

@dataclasses.dataclass(frozen=True)
class Slow:
    i: int = 0
    log: str = ""

def slow_cell(config):
    Path(config.log, f"pid-{config.i}").write_text(str(os.getpid()))
    if config.i > 0 and not os.environ.get("FAST"):
        time.sleep(300)
    return {"i": config.i}

if __name__ == "__main__":
    configs = grid(Slow(log=sys.argv[1]), i=[0, 1, 2])
    try:
        results = run_grid(slow_cell, configs, Path(sys.argv[1]) / "cells", executor="local", max_workers=3)
    except GridInterrupted as interrupt:
        Path(sys.argv[1], "finished").write_text(" ".join(str(c.result["i"]) for c in interrupt.results))
        raise SystemExit(130)
    Path(sys.argv[1], "finished").write_text(" ".join(str(c.result["i"]) for c in results))
"""


def start_grid(tmp_path: Path, **env) -> tuple[subprocess.Popen, list[int]]:
    """Start GRID_SCRIPT with the local executor; wait until cells 1 and 2 run and cell 0 is done."""
    script = tmp_path / "grid_script.py"
    script.write_text(GRID_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), **env}
    parent = subprocess.Popen([sys.executable, str(script), str(tmp_path)], env=env)
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"pid-{i}").exists() for i in range(3)) or not list(tmp_path.glob("cells/*/result.json")):
        assert time.monotonic() < deadline and parent.poll() is None, "the grid's workers did not start"
        time.sleep(0.2)
    return parent, [int((tmp_path / f"pid-{i}").read_text()) for i in range(3)]


def wait_dead(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGKILL, signal.SIGTERM])
def test_killing_the_main_process_kills_its_workers_and_a_rerun_resumes(tmp_path, signal_number):
    parent, workers = start_grid(tmp_path)
    parent.send_signal(signal_number)
    parent.wait(timeout=30)
    assert wait_dead(workers, 10), "a worker survived its parent"
    resumed = subprocess.run(
        [sys.executable, str(tmp_path / "grid_script.py"), str(tmp_path)],
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "FAST": "1"},
    )
    assert resumed.returncode == 0 and sorted((tmp_path / "finished").read_text().split()) == ["0", "1", "2"]
    assert not list(tmp_path.glob("cells/*/lock"))


@pytest.mark.slow
def test_ctrl_c_to_the_main_process_alone_stops_the_workers_at_once(tmp_path):
    parent, workers = start_grid(tmp_path)
    start = time.monotonic()
    parent.send_signal(signal.SIGINT)
    assert parent.wait(timeout=15) == 130 and time.monotonic() - start < 10
    assert wait_dead(workers[1:], 5)
    assert (tmp_path / "finished").read_text() == "0"


# --- the topic-model cache -------------------------------------------------------------------------


def tiny_corpus() -> Corpus:
    rng = np.random.default_rng(0)
    words = [f"{a}{b}word" for a in "abcdef" for b in "xyz"]
    return Corpus([" ".join(rng.choice(words, 8)) for _ in range(60)], None, None, "tiny")


TINY_TOPICS = TopicConfig(n_topics=3, max_iter=2, min_df=1)


@pytest.mark.slow
def test_a_cache_path_that_is_a_file_warns_before_the_fit_and_keeps_the_fit(tmp_path, caplog, monkeypatch):
    blocker = tmp_path / "cache-file"
    blocker.write_text("not a directory\n")
    monkeypatch.setenv("SIPT_LAB_CACHE", str(blocker))
    topics = fit_topics(tiny_corpus(), TINY_TOPICS)
    assert topics.doc_topic.shape == (60, 3)
    [warning] = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert warning.startswith("topic cache") and "SIPT_LAB_CACHE" in warning
    assert blocker.read_text() == "not a directory\n"


@pytest.mark.slow
def test_a_read_only_cache_warns_and_keeps_the_fit(tmp_path, caplog, monkeypatch):
    cache = tmp_path / "ro"
    cache.mkdir()
    monkeypatch.setenv("SIPT_LAB_CACHE", str(cache))
    (cache / "topics").mkdir(mode=0o500)
    if ROOT_USER:  # root may write anywhere: fail the write probe as it fails for a user

        def refuse(dir):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(topics_module.tempfile, "TemporaryFile", refuse)
    assert fit_topics(tiny_corpus(), TINY_TOPICS).doc_topic.shape == (60, 3)
    assert any(record.getMessage().startswith("topic cache") for record in caplog.records)
    assert not any((cache / "topics").iterdir())


@pytest.mark.parametrize("damage", [b"", b"PK\x03\x04 truncated", "first half"])
def test_a_damaged_cache_entry_is_a_miss_refitted_and_replaced(damage):
    corpus = tiny_corpus()
    fresh = fit_topics(corpus, TINY_TOPICS)
    path = cache_path(corpus, TINY_TOPICS)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2] if damage == "first half" else damage)
    again = fit_topics(corpus, TINY_TOPICS)
    np.testing.assert_array_equal(again.doc_topic, fresh.doc_topic)
    assert np.load(path)["doc_topic"].shape == (60, 3)  # replaced by a whole entry


# --- checked before any training -------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["--device", "tpu"], "unknown device 'tpu'"),
        (["--nodes", "3"], "--nodes must be above 3 for the 3-NN evaluation"),
        (["--nodes", str(10**12)], "--nodes must be in [2, 1,000,000]"),
        (["--seeds", str(10**9)], "--seeds must be in [1, 1,000]"),
        (["--steps", str(10**12)], "--steps must be in [1, 10,000,000]"),
        (["--seed", "-1"], "--seed must be in [0, 4,294,967,295]"),
        (["--seed", str(2**32 - 1), "--seeds", "2"], "--seed + --seeds - 1 must be at most"),
    ],
)
def test_simulate_refuses_before_training(tmp_path, capsys, monkeypatch, args, message):
    from sipt_lab.studies.simulation import arms as simulate_module

    monkeypatch.setattr(simulate_module, "run_arms", lambda *a, **k: pytest.fail("trained anyway"))
    fails(
        capsys, ["simulate", "--graph", "cliques", "--executor", "serial", *args, "--out", str(tmp_path / "o")], message
    )
    assert not (tmp_path / "o" / "cells").exists()


def test_cuda_without_a_gpu_is_refused_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    fails(
        capsys,
        ["simulate", "--graph", "cliques", "--device", "cuda", "--out", str(tmp_path / "o")],
        "torch sees no CUDA GPU; use --device cpu or auto",
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--nodes", str(10**12)], "--nodes must be in [2, 1,000,000]"),
        (["--seed", "-5"], "--seed must be in [0, 4,294,967,295]"),
        (["--topics", "100000"], "--topics must be in [2, 1,000]"),
        (["--heldout", "-1"], "--heldout must be in [0, 1,000,000]"),
    ],
)
def test_graph_build_refuses_absurd_sizes(tmp_path, capsys, fake_lda, args, message):
    fails(capsys, ["graph", "build", "--graph", "cliques", "--quiet", *args, "--out", str(tmp_path / "o")], message)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seeds", str(10**9)], "--seeds must be in [1, 1,000]"),
        (["--nodes", str(10**12)], "--nodes must be in [2, 1,000,000]"),
    ],
)
def test_figures_refuse_absurd_sizes(tmp_path, capsys, args, message):
    fails(capsys, ["figures", "--only", "fig5a", *args, "--out", str(tmp_path / "o")], message)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_loss_param_must_be_finite(tmp_path, capsys, value):
    fails(
        capsys,
        ["simulate", "--graph", "cliques", "--loss-param", f"pos_margin={value}", "--out", str(tmp_path)],
        "--loss-param needs a finite number",
    )


def test_gpu_out_of_memory_is_one_line_with_the_commands_fix(tmp_path, capsys, monkeypatch):
    import torch

    def no_memory(*args, **kwargs):
        raise torch.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 1.10 GiB. GPU 0 has a total capacity of 79.18 GiB\nmore"
        )

    monkeypatch.setattr("sipt_lab.jobs.pretrain.run_pretraining", no_memory)
    samples, edges = tmp_path / "s.tsv", tmp_path / "e.tsv"
    samples.write_text("id\ttext\na\tone two\nb\tthree four\n")
    edges.write_text("a\tb\n")
    assert main(["pretrain", "--samples", str(samples), "--edges", str(edges), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sipt-lab: error: the GPU ran out of memory (CUDA out of memory."), (
        err
    )
    assert "--grad-accum" in err and "Traceback" not in err

    monkeypatch.setattr(
        "sipt_lab.jobs.pretrain.run_pretraining",
        lambda *a, **k: (_ for _ in ()).throw(RuntimeError("other")),
    )
    with pytest.raises(RuntimeError, match="other"):  # any other runtime error is a bug: its traceback stays
        main(["pretrain", "--samples", str(samples), "--edges", str(edges), "--out", str(tmp_path / "p")])


def test_domain_run_grad_accum_splits_the_presets_batch(tmp_path, capsys, monkeypatch):
    captured = {}
    monkeypatch.setattr(
        "sipt_lab.studies.domain.run.run_domain",
        lambda cells, out, executor, preset, time_limit: captured.setdefault("cells", cells),
    )
    monkeypatch.setattr("sipt_lab.studies.domain.report.format_domain_summary", lambda summary: "")
    base = ["domain", "run", "wiki", "--init", "char", "--seeds", "1", "--device", "cpu"]
    assert main([*base, "--grad-accum", "4", "--out", str(tmp_path / "a")]) == 0
    assert {(cell.pretrain.batch_size, cell.pretrain.grad_accum) for cell in captured["cells"]} == {
        (4, 4)
    }  # the cpu preset's 16 seeds per step, in 4 micro-batches
    fails(
        capsys,
        [*base, "--grad-accum", "3", "--out", str(tmp_path / "b")],
        "--grad-accum must divide the 16 seeds of a step",
    )


def test_ctrl_c_in_a_command_that_keeps_nothing_does_not_say_it_keeps_results(capsys, monkeypatch):
    import sipt_lab.graphs.tsv as tsv

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tsv, "load_graph_tsv", interrupted)
    assert main(["consistency", "--example"]) == 130
    assert capsys.readouterr().err == "sipt-lab: interrupted; run the same command again\n"
