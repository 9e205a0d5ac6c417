"""Nothing lost across commands: every command that writes follows the output rule of
:mod:`sipt_lab.core.outputs` (a directory belongs to the command and settings that made it, a
user's file is never replaced, ``--overwrite`` puts the old run back when the new one has nothing
to put in its place), one test per case the fuzzing found."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sipt_lab.cli.main import main
from sipt_lab.core import outputs
from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_json_atomic

ROOT = Path(__file__).resolve().parents[2]


class Reached(Exception):
    """Raised by a stub where a long command would start its work: its checks passed."""


def _reached(*args, **kwargs):
    raise Reached


def tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def refused(capsys, argv: list[str]) -> str:
    """The one-line error of a command that must refuse ``argv`` (exit status 2)."""
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("sipt-lab: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.fixture()
def study_dir(tmp_path) -> Path:
    """A finished study's directory as ``study lc-transfer`` leaves it (its manifest, cells, summary)."""
    out = tmp_path / "study"
    (out / "cells" / "abc").mkdir(parents=True)
    (out / "cells" / "abc" / "result.json").write_text("{}")
    (out / "summary.json").write_text('{"study": true}')
    (out / "config.toml").write_text("seeds = 3\n")
    outputs.write_json_atomic(
        out / outputs.MANIFEST, {"command": "study lc-transfer", "files": ["summary.json", "config.toml"]}
    )
    return out


SIMULATE = ["simulate", "--graph", "cliques", "--seeds", "1", "--executor", "serial"]


def test_simulate_refuses_a_study_directory(study_dir, capsys, monkeypatch):
    import sipt_lab.studies.simulation.simulate as simulate

    monkeypatch.setattr(simulate, "run_grid", _reached)
    before = tree(study_dir)
    assert "holds the output of study lc-transfer" in refused(capsys, [*SIMULATE, "--out", str(study_dir)])
    assert tree(study_dir) == before


def test_domain_run_refuses_a_study_directory(study_dir, capsys, monkeypatch):
    import sipt_lab.studies.domain.run as domain_run

    monkeypatch.setattr(domain_run, "run_domain", _reached)
    before = tree(study_dir)
    argv = ["domain", "run", "wiki", "--init", "char", "--seeds", "1", "--executor", "serial", "--out", str(study_dir)]
    assert "holds the output of study lc-transfer" in refused(capsys, argv)
    assert tree(study_dir) == before


def test_simulate_refuses_a_run_of_other_settings_and_resumes_its_own(tmp_path, capsys, monkeypatch):
    import sipt_lab.studies.simulation.simulate as simulate

    monkeypatch.setattr(simulate, "run_grid", _reached)
    out = tmp_path / "sim"
    with pytest.raises(Reached):
        main([*SIMULATE, "--out", str(out)])
    (out / "results.json").write_text('{"noise": 0}')
    before = tree(out)
    assert "run of other settings" in refused(capsys, [*SIMULATE, "--noise", "0.5", "--out", str(out)])
    assert tree(out) == before
    with pytest.raises(Reached):  # the same settings with more seeds: the same run, resumed
        main([*SIMULATE[:4], "3", *SIMULATE[5:], "--out", str(out)])


def test_a_grid_directory_without_a_record_is_refused(tmp_path):
    out = tmp_path / "legacy"
    (out / "cells").mkdir(parents=True)
    (out / "results.json").write_text("{}")
    with pytest.raises(SiptError, match="no simulate run sipt-lab recorded"):
        outputs.prepare_grid_dir(out, "simulate", "abc")


def test_figures_refuses_a_folder_of_the_users_files(tmp_path, capsys, monkeypatch):
    import sipt_lab.studies.paper.figures as figures

    monkeypatch.setitem(figures.FIGURES, "corollary2", _reached)
    out = tmp_path / "figs"
    out.mkdir()
    (out / "corollary2.csv").write_text("my own numbers\n")
    refused(capsys, ["figures", "--only", "corollary2", "--out", str(out)])
    assert (out / "corollary2.csv").read_text() == "my own numbers\n"


def test_figures_runs_again_into_its_own_folder(tmp_path, monkeypatch):
    import sipt_lab.studies.paper.figures as figures

    def corollary2(out, options):
        (out / "corollary2.csv").write_text("x\n")
        return [out / "corollary2.csv"]

    monkeypatch.setitem(figures.FIGURES, "corollary2", corollary2)
    argv = ["figures", "--only", "corollary2", "--out", str(tmp_path / "figs")]
    assert main(argv) == 0 and main(argv) == 0


def string_inputs(root: Path) -> tuple[Path, Path]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "9606.links.txt").write_text("protein1 protein2 combined_score\n9606.A 9606.B 900\n")
    (root / "seq.fasta").write_text(">9606.A\nMKV\n>9606.B\nMLL\n")
    return root / "9606.links.txt", root / "seq.fasta"


def test_data_convert_string_refuses_existing_outputs_without_overwrite(tmp_path, capsys):
    links, fasta = string_inputs(tmp_path / "in")
    out = tmp_path / "out"
    out.mkdir()
    (out / "interactions.tsv").write_text("mine\n")
    argv = ["data", "convert", "string", "--links", str(links), "--fasta", str(fasta), "--out", str(out)]
    assert "--overwrite" in refused(capsys, argv)
    assert (out / "interactions.tsv").read_text() == "mine\n" and not (out / "sequences.fasta").exists()
    assert main([*argv, "--overwrite"]) == 0
    assert (out / "sequences.fasta").read_text() == ">9606.A\nMKV\n>9606.B\nMLL\n"


def test_data_convert_string_never_replaces_its_own_input(tmp_path, capsys):
    links, _ = string_inputs(tmp_path)
    fasta = tmp_path / "sequences.fasta"
    fasta.write_text(">9606.A\nMKV\n>9606.B\nMLL\n>9606.C\nMMM\n")
    argv = ["data", "convert", "string", "--links", str(links), "--fasta", str(fasta), "--out", str(tmp_path)]
    assert "input" in refused(capsys, [*argv, "--overwrite"])
    assert fasta.read_text().count(">") == 3


def test_data_convert_pyg_bio_and_wiki_descriptions_refuse_existing_outputs(tmp_path, capsys):
    (tmp_path / "go_finetune.tsv").write_text("mine\n")
    (tmp_path / "data.pt").write_bytes(b"not read: the outputs are checked first")
    assert "go_finetune.tsv" in refused(
        capsys, ["data", "convert", "pyg-bio", str(tmp_path / "data.pt"), "--out", str(tmp_path)]
    )
    (tmp_path / "heads.tsv").write_text("mine\n")
    refused(capsys, ["data", "convert", "wiki-descriptions", "--out", str(tmp_path / "heads.tsv")])
    assert (tmp_path / "heads.tsv").read_text() == (tmp_path / "go_finetune.tsv").read_text() == "mine\n"


def test_an_overwrite_interrupted_before_its_first_checkpoint_puts_the_old_run_back(tmp_path, capsys, monkeypatch):
    from test_output_safety import pretrain

    import sipt_lab.jobs.pretrain as pretraining

    samples = [f"s{i}" for i in range(8)]
    (tmp_path / "samples.tsv").write_text("".join(f"{s}\tword{i} alpha beta\n" for i, s in enumerate(samples)))
    (tmp_path / "edges.tsv").write_text("s0\ts1\ns2\ts3\ns4\ts5\ns6\ts7\n")
    out = tmp_path / "run"
    assert main(pretrain(tmp_path, out)) == 0
    before = tree(out)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pretraining, "pretrain", interrupted)
    capsys.readouterr()
    assert main(pretrain(tmp_path, out, "--overwrite")) == 130
    said = capsys.readouterr()
    assert tree(out) == before, "the earlier run must be back, byte for byte"
    assert "is back" in said.out and "leaves --out as it was" in said.err
    assert json.loads((out / "result.json").read_text())["n_samples"] == 8


#: A ``--overwrite`` run of a stand-in command, killed (SIGKILL) while it moves the earlier run
#: aside (``moving``), after it wrote a first file (``started``), or after it finished (``finished``).
KILLED_OVERWRITE = """
import os, signal, sys
from pathlib import Path
from sipt_lab.core.outputs import record_files, run_output

out, stage = Path(sys.argv[1]), sys.argv[2]
if stage == "moving":
    rename = Path.rename

    def killed_after_one(self, target):
        rename(self, target)
        os.kill(os.getpid(), signal.SIGKILL)

    Path.rename = killed_after_one
with run_output(out, "demo", finished="result.json", overwrite=True) as run:
    record_files(run, ["log.txt", "result.json"])
    (run / "log.txt").write_text("new")
    if stage == "finished":
        (run / "result.json").write_text("new")
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("stage", ["moving", "started", "finished"])
def test_the_next_run_sorts_out_what_a_killed_overwrite_kept_aside(tmp_path, stage):
    out = tmp_path / "run"
    with outputs.run_output(out, "demo", finished="result.json") as run:
        outputs.record_files(run, ["result.json", "sub/a.txt", "old.txt"])
        for name in ("result.json", "sub/a.txt", "old.txt"):
            (run / name).parent.mkdir(exist_ok=True)
            (run / name).write_text("earlier")
    (out / "notes.txt").write_text("mine")
    earlier = tree(out)
    (tmp_path / "killed.py").write_text(KILLED_OVERWRITE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = subprocess.run([sys.executable, str(tmp_path / "killed.py"), str(out), stage], env=env, check=False)
    assert killed.returncode == -signal.SIGKILL and (out / outputs.REPLACED_DIR).is_dir()

    said = []
    with (
        pytest.raises(SiptError, match="holds a finished run"),
        outputs.run_output(out, "demo", finished="result.json", log=said.append),
    ):
        pass
    assert not (out / outputs.REPLACED_DIR).exists() and len(said) == 1
    if stage == "finished":  # the new run is kept, the earlier one (old.txt too) deleted
        assert "is deleted" in said[0]
        new = {name: data for name, data in tree(out).items() if name != outputs.MANIFEST}
        assert new == {"log.txt": b"new", "notes.txt": b"mine", "result.json": b"new"}
    else:
        assert "is back" in said[0] and tree(out) == earlier, "the earlier run must be back, byte for byte"


def test_a_killed_overwrite_never_moves_its_earlier_run_over_a_users_file(tmp_path):
    out = tmp_path / "run"
    aside = out / outputs.REPLACED_DIR
    aside.mkdir(parents=True)
    (aside / "result.json").write_text("earlier")  # a move cut short: the manifest is still in run/
    write_json_atomic(out / outputs.MANIFEST, {"command": "demo", "files": ["result.json"]})
    (out / "result.json").write_text("mine")
    with (
        pytest.raises(SiptError, match=r"result.json exist\(s\) there and in .*; move them out"),
        outputs.run_output(out, "demo", finished="result.json", overwrite=True),
    ):
        pass
    assert (out / "result.json").read_text() == "mine" and (aside / "result.json").read_text() == "earlier"
