"""Clean errors and honest output from every command: bad input is one line naming the problem
and its fix (exit status 2), never a traceback or a silent wrong answer; one test per case the
fuzzing found."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from test_domain_table import write_run
from test_every_writer import refused
from test_robustness import fake_lda  # noqa: F401 (a fixture)

from sipt_lab.cli.main import main
from sipt_lab.core import outputs
from sipt_lab.core.errors import SiptError
from sipt_lab.evaluation.comparison import compare_errors, format_comparison_table
from sipt_lab.evaluation.knn import macro_ovr_auroc
from sipt_lab.studies.lc.gain_stats import format_ci


def graph(tmp_path: Path) -> list[str]:
    (tmp_path / "l.tsv").write_text("a\tx\nb\ty\nc\tx\n")
    (tmp_path / "e.tsv").write_text("a\tb\nb\tc\n")
    return ["consistency", "--edges", str(tmp_path / "e.tsv"), "--labels", str(tmp_path / "l.tsv")]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--chunk-size", "99999999999999999999999"], "--chunk-size must be in [1, "),
        (["--engine", "dask", "--scheduler", "tcp://127.0.0.1:9", "--scheduler-timeout", "nan"], "finite number"),
    ],
)
def test_consistency_flags_out_of_range(tmp_path, capsys, extra, message):
    assert message in refused(capsys, [*graph(tmp_path), *extra])


@pytest.mark.parametrize("engine", ["stream", "dask"])
@pytest.mark.parametrize("which", ["edges", "labels"])
def test_a_binary_file_is_one_line_in_the_streamed_engines(tmp_path, capsys, engine, which):
    if engine == "dask":
        pytest.importorskip("distributed")
    argv = graph(tmp_path)
    binary = tmp_path / f"{which}.bin.tsv"
    binary.write_bytes(np.random.default_rng(0).integers(0, 256, 3000, dtype=np.uint8).tobytes())
    argv[argv.index(f"--{which}") + 1] = str(binary)
    assert "is not UTF-8 text" in refused(capsys, [*argv, "--engine", engine, "--workers", "1"])


@pytest.mark.parametrize("engine", ["stream", "dask"])
def test_a_gz_file_that_is_not_gzip(tmp_path, capsys, engine):
    if engine == "dask":
        pytest.importorskip("distributed")
    argv = graph(tmp_path)
    (tmp_path / "e.tsv.gz").write_bytes(b"not gzip at all\n")
    argv[argv.index("--edges") + 1] = str(tmp_path / "e.tsv.gz")
    assert "cannot read edges file" in refused(capsys, [*argv, "--engine", engine, "--workers", "1"])


def serve(answer: bytes | None) -> int:
    """A TCP server on a free port that sends ``answer`` to each connection (None: nothing, as an
    HTTP server waiting for its request); returns the port."""
    server = socket.create_server(("127.0.0.1", 0))

    def accept():
        while True:
            conn, _ = server.accept()
            if answer is not None:
                conn.sendall(answer)
            threading.Timer(5, conn.close).start()

    threading.Thread(target=accept, daemon=True).start()
    return server.getsockname()[1]


@pytest.mark.parametrize("answer", [None, b"SSH-2.0-OpenSSH_9.6\r\n", b"HTTP/1.1 400 Bad Request\r\n\r\n"])
def test_a_scheduler_address_where_something_else_listens(tmp_path, capsys, answer):
    pytest.importorskip("distributed")
    port = serve(answer)
    argv = [*graph(tmp_path), "--engine", "dask", "--scheduler", f"tcp://127.0.0.1:{port}", "--scheduler-timeout", "1"]
    start = time.perf_counter()
    assert "not as a Dask scheduler" in refused(capsys, argv)
    assert time.perf_counter() - start < 5


def test_a_closed_pipe_ends_a_printing_command_quietly(tmp_path):
    command = f"{sys.executable} -m sipt_lab.cli.main consistency --example | head -2"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.stdout.count("\n") == 2 and done.stderr == ""


def test_study_seeds_that_are_not_ascii_digits(tmp_path, capsys):
    assert "--seeds takes a number" in refused(capsys, ["study", "lc-transfer", "--seeds", "²", "--out", str(tmp_path)])


def test_study_refuses_a_test_split_of_one_sample_before_training(tmp_path, capsys):
    assert "--n-test" in refused(capsys, ["study", "lc-transfer", "--n-test", "1", "--out", str(tmp_path / "s")])


def test_abbreviated_flags_are_refused(tmp_path, capsys):
    argv = ["pretrain", "--samples", "s.tsv", "--edges", "e.tsv", "--steps", "3", "--epoch", "1", "--out", "o"]
    assert "abbreviations are refused" in refused(capsys, argv)


def test_a_preset_in_a_config_file_is_applied(tmp_path, capsys):
    (tmp_path / "study.toml").write_text('preset = "cpu"\n')
    argv = ["study", "lc-transfer", "--config", str(tmp_path / "study.toml"), "--out", str(tmp_path / "s")]
    assert main([*argv, "--print-config"]) == 0
    printed = capsys.readouterr().out
    assert "n-pretrain = 640" in printed and 'preset = "cpu"' in printed
    assert main([*argv, "--n-pretrain", "700", "--print-config"]) == 0  # a flag still wins
    assert "n-pretrain = 700" in capsys.readouterr().out


def test_the_slurm_executor_without_slurm_is_refused(tmp_path, capsys, monkeypatch):
    pytest.importorskip("submitit")
    import sipt_lab.grid.executors as executors

    monkeypatch.setattr(executors.shutil, "which", lambda name: None)
    argv = ["simulate", "--graph", "cliques", "--executor", "slurm", "--out", str(tmp_path / "sim")]
    assert "needs Slurm" in refused(capsys, argv)
    assert not (tmp_path / "sim").exists()


def test_one_seed_shows_no_nan():
    one = format_comparison_table([compare_errors([0.4], [0.3], task="t", method="m", baseline="b")])
    assert "nan" not in one and "n/a (one seed)" in one


def test_an_interval_of_no_width_carries_a_warning():
    assert "warning" in format_ci([0.117, 0.117]) and "warning" not in format_ci([0.1, 0.2])


def test_auroc_of_one_class_names_the_label_not_the_sample_count():
    with pytest.raises(SiptError, match="labels of at least two classes"):
        macro_ovr_auroc(np.array(["same"] * 4), np.ones((4, 1)), np.array(["same"]))


def test_pretrain_reports_the_self_loops_and_repeated_edges_it_dropped(tmp_path, capsys):
    from test_output_safety import pretrain

    (tmp_path / "samples.tsv").write_text("".join(f"s{i}\tword{i} alpha beta\n" for i in range(6)))
    (tmp_path / "edges.tsv").write_text("s0\ts1\ns1\ts0\ns2\ts2\ns3\ts4\ns4\ts5\n")
    assert main(pretrain(tmp_path, tmp_path / "run")) == 0
    assert "dropped 1 self-loop(s) and 1 repeated edge(s)" in capsys.readouterr().out
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert (result["dropped_self_loops"], result["dropped_duplicates"], result["n_edges"]) == (1, 1, 3)


def test_a_directory_of_other_files_is_refused_without_walking_it(tmp_path, monkeypatch):
    (tmp_path / "deep" / "deeper").mkdir(parents=True)
    (tmp_path / "deep" / "deeper" / "file").write_text("x")
    monkeypatch.setattr(Path, "rglob", lambda *args: pytest.fail("walked the directory"))
    with pytest.raises(SiptError, match="holds files sipt-lab did not write \\(deep\\)"):
        with outputs.run_output(tmp_path, "pretrain", finished="result.json"):
            pass


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda s: s.update(arms=[1, 2]), "arms is not a mapping"),
        (lambda s: s.update(setting=["x"]), "setting is not a mapping"),
        (lambda s: s["arms"]["lm"].pop("seeds"), "has no list of seeds"),
        (lambda s: s["arms"]["lm"].update(scores="oops"), "scores of arm 'lm'"),
        (lambda s: s.update(kind="table"), "unknown task kind"),
    ],
)
@pytest.mark.parametrize("command", ["table", "curves"])
def test_a_damaged_summary_is_one_line_in_domain_table_and_curves(tmp_path, capsys, damage, message, command):
    run = write_run(tmp_path / "run", {"lm": {"full": [0.6, 0.7]}, "sipt[g]": {"full": [0.7, 0.8]}})
    summary = json.loads((run / "summary.json").read_text())
    damage(summary)
    (run / "summary.json").write_text(json.dumps(summary))
    err = refused(capsys, ["domain", command, str(run), "--out", str(tmp_path / "out")])
    assert message in err and "is damaged" in err
    assert not (tmp_path / "out").exists()


def test_domain_table_says_a_file_is_not_a_run_directory(tmp_path, capsys):
    run = write_run(tmp_path / "run", {"lm": {"full": [0.6, 0.7]}})
    err = refused(capsys, ["domain", "table", str(run / "summary.json"), "--out", str(tmp_path / "out")])
    assert "is a file, not a run directory" in err


def convert_string(directory, links: str) -> list[str]:
    """``data convert string`` (without ``--out``) over a STRING links file holding ``links`` and a
    FASTA of proteins 9606.A and 9606.B, both written into ``directory``."""
    (directory / "links.txt").write_text(links)
    (directory / "seq.fasta").write_text(">9606.A\nMKV\n>9606.B\nMLL\n")
    return [
        "data",
        "convert",
        "string",
        "--links",
        str(directory / "links.txt"),
        "--fasta",
        str(directory / "seq.fasta"),
    ]


@pytest.mark.parametrize(
    "links, extra, message",
    [
        ("", [], "hold no interaction"),
        ("A B 900\n", ["--min-score", "1001"], "--min-score must be"),
        ("A B 900\n", ["--min-score", "-1"], "--min-score must be"),
        ("A B 900\n", ["--min-score", "950"], "scored at least 950"),
    ],
)
def test_convert_string_blames_the_links_not_the_fasta(tmp_path, capsys, links, extra, message):
    argv = ["-q", *convert_string(tmp_path, links)]
    err = refused(capsys, [*argv, "--out", str(tmp_path / "out"), *extra])
    assert message in err and "FASTA" not in err


def test_convert_string_drops_self_loops_and_reversed_pairs_as_the_graph_readers_do(tmp_path, capsys):
    argv = convert_string(
        tmp_path, "protein1 protein2 combined_score\n9606.A 9606.B 900\n9606.B 9606.A 900\n9606.A 9606.A 900\n"
    )
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "1 interactions in interactions.tsv" in out and "dropped 1 self-loop(s) and 1 repeated edge(s)" in out
    assert (tmp_path / "out" / "interactions.tsv").read_text() == "protein_a\tprotein_b\n9606.A\t9606.B\n"


def sipt_lab_shell(command: str) -> subprocess.CompletedProcess:
    """``command`` run by bash with ``sipt-lab`` meaning this Python's entry point."""
    entry = f"{sys.executable} -c 'from sipt_lab.cli import entry_point; entry_point()'"
    return subprocess.run(
        ["bash", "-c", command.replace("sipt-lab", entry)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("redirect", [">&-", "> /dev/full"])
def test_standard_output_closed_or_full_is_never_a_traceback(redirect):
    done = sipt_lab_shell(f"sipt-lab graph list {redirect}")
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    if redirect == ">&-":  # nowhere to print, as print() has then
        assert (done.returncode, done.stderr) == (0, "")
    else:
        assert done.returncode == 2 and done.stderr.count("\n") == 1
        assert "cannot write to standard output (No space left on device)" in done.stderr


def test_ctrl_c_while_the_modules_load_is_one_line():
    """Ctrl-C as the entry point imports the CLI, and as the parser imports a command's module."""
    patches = {
        "entry": "import builtins; real = builtins.__import__\n"
        "builtins.__import__ = lambda name, *a, **k: interrupt() if name == 'sipt_lab.cli.main' else real(name, *a, **k)\n",
        "parser": "import importlib; real = importlib.import_module\n"
        "importlib.import_module = lambda name, *a: interrupt() if name == 'sipt_lab.cli.graph' else real(name, *a)\n",
    }
    for where, patch in patches.items():
        code = (
            "def interrupt():\n    raise KeyboardInterrupt\n"
            + patch
            + "import sys; sys.argv = ['sipt-lab', 'graph', 'list']\n"
            "from sipt_lab.cli import entry_point; entry_point()"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stderr) == (130, "sipt-lab: interrupted\n"), (where, done.stderr)


def test_a_config_file_may_start_with_a_byte_order_mark(tmp_path, capsys):
    (tmp_path / "c.toml").write_bytes("\ufeffnodes = 30\n".encode())
    assert main(["graph", "build", "--graph", "cliques", "--config", str(tmp_path / "c.toml"), "--print-config"]) == 0
    assert "nodes = 30" in capsys.readouterr().out


@pytest.mark.parametrize("link", ["loop", "missing"])
def test_an_out_symlink_that_leads_nowhere_says_so(tmp_path, capsys, link):
    out = tmp_path / "link"
    out.symlink_to(out if link == "loop" else tmp_path / "gone")
    message = (
        "a symlink loop" if link == "loop" else "a symlink to " + str(tmp_path / "gone") + ", which does not exist"
    )
    assert message in refused(capsys, ["figures", "--only", "corollary1", "--out", str(out)])


def full_disk(monkeypatch) -> None:
    """Every atomic write from now on fails as on a full disk."""

    def refuse(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", refuse)


def test_a_full_disk_in_convert_string_and_domain_table_leaves_no_output(tmp_path, capsys, monkeypatch):
    argv = ["-q", *convert_string(tmp_path, "9606.A 9606.B 900\n")]
    out = tmp_path / "out"
    full_disk(monkeypatch)
    assert "the disk is full: cannot write " + str(out / "sequences.fasta") in refused(
        capsys, [*argv, "--out", str(out)]
    )
    assert not out.exists() or not any(out.iterdir())
    write_run(tmp_path / "run", {"lm": {"full": [0.6, 0.7]}, "sipt[g]": {"full": [0.7, 0.8]}})
    table = tmp_path / "table"
    assert "the disk is full" in refused(capsys, ["domain", "table", str(tmp_path / "run"), "--out", str(table)])
    assert not table.exists()


@pytest.mark.usefixtures("fake_lda")
def test_a_full_disk_in_graph_build_leaves_no_build_that_looks_finished(tmp_path, capsys, monkeypatch):
    import sipt_lab.synthetic.dataset as dataset

    def meta_fails(path, obj):  # the last file of a build: the others are written by then
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(dataset, "write_json_atomic", meta_fails)
    out = tmp_path / "built"
    err = refused(capsys, ["graph", "build", "--graph", "cliques", "--nodes", "30", "--quiet", "--out", str(out)])
    assert "the disk is full: cannot write " + str(out / "meta.json") in err
    assert sorted(p.name for p in out.iterdir()) == []


def test_the_stream_engine_never_echoes_a_huge_unknown_id_and_names_a_null_one(tmp_path, capsys):
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    argv = graph(tmp_path)
    (tmp_path / "e.tsv").write_text("a\tb\n" + "x" * 2_000_000 + "\tc\n")
    assert main([*argv, "--engine", "stream"]) == 0  # an unlabelled end is left out and counted, never echoed
    out, err = capsys.readouterr()
    assert len(out) + len(err) < 2000
    (tmp_path / "l.tsv").write_text("a\tx\nb\ty\nc\tx\nNone\ty\n")  # a node named None: not the null
    table = pyarrow.table({"u": ["a", None], "v": ["b", "None"]})
    parquet.write_table(table, tmp_path / "e.parquet")
    argv[argv.index("--edges") + 1] = str(tmp_path / "e.parquet")
    assert "edge 2: a node id is null (an empty cell)" in refused(capsys, [*argv, "--engine", "stream"])


@pytest.mark.parametrize("engine", ["memory", "stream"])
def test_a_tab_only_edges_line_is_refused_by_every_engine_naming_the_line(tmp_path, capsys, engine):
    argv = graph(tmp_path)
    (tmp_path / "e.tsv").write_text("a\tb\n\t\nb\tc\n")
    assert "e.tsv: line 2 has an empty field ('', '')" in refused(capsys, [*argv, "--engine", engine])


@pytest.mark.parametrize("engine", ["memory", "stream"])
def test_a_directory_given_as_edges_is_called_a_directory(tmp_path, capsys, engine):
    argv = graph(tmp_path)
    (tmp_path / "edir").mkdir()
    argv[argv.index("--edges") + 1] = str(tmp_path / "edir")
    assert "is a directory" in refused(capsys, [*argv, "--engine", engine])


def test_a_samples_file_with_lone_cr_line_endings_says_so(tmp_path, capsys):
    (tmp_path / "s.tsv").write_bytes(b"s0\tred apple\rs1\tgreen apple\rs2\tripe pear\r")
    argv = ["embed", "--model", "char", "--samples", str(tmp_path / "s.tsv"), "--out", str(tmp_path / "e.npy")]
    assert "lone carriage return" in refused(capsys, [*argv, "--device", "cpu"])
