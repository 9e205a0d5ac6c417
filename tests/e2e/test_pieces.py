"""Runs continued in pieces: a study and a Table 2 run stopped at a time limit or after some seeds,
their finished pieces kept (metrics only) and continued from them in fresh directories, equal the
same runs made in one go."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sipt_lab.cli.main import main
from sipt_lab.core.errors import SiptError
from sipt_lab.grid import GridStopped, keep_finished, run_grid
from sipt_lab.grid import executors as grid_executors
from sipt_lab.grid.cells import grid

STUDY_OUTPUTS = ("results.csv", "summary.json", "splits.tsv", "config.json")


class TickingClock:
    """A monotonic clock that moves one second each time it is read: every cell "takes" the same
    time whatever the machine's load, so where a time limit stops a grid is deterministic."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now


def _double(config) -> dict:
    return {"value": 2 * config.x}


@dataclasses.dataclass(frozen=True)
class Point:
    x: int


def test_a_time_limit_starts_no_cell_that_would_end_past_it(tmp_path, monkeypatch):
    monkeypatch.setattr(grid_executors, "time", TickingClock())
    cells = grid(Point(0), x=[1, 2, 3, 4])
    # the deadline is read at 1 (limit 6: 7); cell 1 is checked at 2 and runs 3..4 (1 s); checked at
    # 5 (5 + 1.1 <= 7), cell 2 runs 6..7; checked at 8: stop
    with pytest.raises(GridStopped, match="2 of 4 cells finished and kept, 2 not started") as stopped:
        run_grid(_double, cells, tmp_path, **grid_executors.deadline_options("serial", 6))
    assert [cell.result for cell in stopped.value.results] == [{"value": 2}, {"value": 4}]
    assert len(run_grid(_double, cells, tmp_path)) == 4  # the rest, without a limit
    with pytest.raises(SiptError, match="needs the executor serial"):
        grid_executors.deadline_options("local", 6)


def test_a_time_limit_on_a_parallel_domain_run_is_one_line_before_anything_is_written(tmp_path, capsys):
    argv = ["domain", "run", "wiki", "--init", "char", "--executor", "local", "--time-limit", "60"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    assert "--time-limit needs --executor serial (one cell after another), not 'local'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def _study_argv(tmp_path) -> list[str]:
    """A two-seed toy study's command line, without ``--out`` (its data written into ``tmp_path``)."""
    rng = np.random.default_rng(0)
    words = {"fruit": "apple pear plum fig lime kiwi".split(), "sky": "cloud rain sun star moon wind".split()}
    labels = ["fruit", "sky"] * 16
    samples, label_file = tmp_path / "samples.tsv", tmp_path / "labels.tsv"
    if not samples.exists():
        samples.write_text("".join(f"s{i}\t{' '.join(rng.choice(words[y], 4))}\n" for i, y in enumerate(labels)))
        label_file.write_text("".join(f"s{i}\t{y}\n" for i, y in enumerate(labels)))
    sizes = ("--n-pretrain", "12", "--n-train", "8", "--n-validation", "4", "--n-test", "8")
    training = ("--steps", "2", "--batch-size", "4", "--max-length", "16", "--device", "cpu")
    argv = ["study", "lc-transfer", "--init", "char", "--encoder", "paper-small", "--levels", "0", "1"]
    argv += ["--samples", str(samples), "--labels", str(label_file), *sizes, *training, "--seeds", "2"]
    return [*argv, "--split-seeds", "0"]


def _study(tmp_path, out, *extra) -> int:
    return main([*_study_argv(tmp_path), "--out", str(out), *extra])


def _continued(pieces, work, run) -> int:
    """One call of a window: the pieces so far copied into a fresh directory, the run resumed there,
    its finished pieces kept; returns the run's exit status."""
    if work.exists():
        shutil.rmtree(work)
    if pieces.exists():
        shutil.copytree(pieces, work)
    status = run(work)
    keep_finished(work, pieces)
    shutil.rmtree(work)  # the machine is given back: nothing but the pieces is left
    return status


@pytest.mark.slow
def test_a_study_continued_from_its_pieces_equals_one_run(tmp_path, monkeypatch, capsys):
    assert _study(tmp_path, tmp_path / "one-go") == 0
    pieces = tmp_path / "pieces"
    monkeypatch.setattr(grid_executors, "time", TickingClock())
    # the deadline is 1 + 3.5; the first seed runs 3..4 (1 s), the second would end past it
    assert (
        _continued(pieces, tmp_path / "work", lambda out: _study(tmp_path, out, "--resume", "--time-limit", "3.5")) == 3
    )
    assert "1 of 2 cells finished and kept, 1 not started; its finished seeds are kept" in capsys.readouterr().err
    cells = sorted(path.relative_to(pieces).as_posix() for path in (pieces / "cells").rglob("*") if path.is_file())
    assert len(cells) == 2 and {name.split("/")[-1] for name in cells} == {"config.json", "result.json"}
    assert not (pieces / "summary.json").exists()
    monkeypatch.undo()
    assert _continued(pieces, tmp_path / "work", lambda out: _study(tmp_path, out, "--resume")) == 0
    assert len(list((pieces / "cells").glob("*/result.json"))) == 2
    # the result files regenerated from the committed pieces alone: no cell is trained again
    monkeypatch.setattr("sipt_lab.studies.lc.arms.train_arm", lambda *args, **kwargs: pytest.fail("trained again"))
    shutil.copytree(pieces, tmp_path / "regenerated")
    assert _study(tmp_path, tmp_path / "regenerated", "--resume") == 0
    for name in STUDY_OUTPUTS:
        assert (tmp_path / "regenerated" / name).read_bytes() == (tmp_path / "one-go" / name).read_bytes(), name


def test_pieces_hold_finished_cells_metrics_only_and_refuse_another_run(tmp_path):
    run = tmp_path / "run"
    for name, files in {
        "aaaaaaaaaaaa": ("config.json", "result.json", "model.pt", "lock"),
        "bbbbbbbbbbbb": ("config.json", "lock", "error.txt"),
    }.items():
        (run / "cells" / name).mkdir(parents=True)
        for file in files:
            (run / "cells" / name / file).write_text("{}")
    (run / "config.json").write_text('{"seeds": 2}')
    (run / "lock").write_text("{}")
    (run / ".sipt-lab-files.json").write_text(json.dumps({"command": "study lc-transfer", "run": None, "files": []}))
    copied = keep_finished(run, tmp_path / "pieces")
    assert copied == ["cells/aaaaaaaaaaaa/config.json", "cells/aaaaaaaaaaaa/result.json", "config.json"]
    manifest = json.loads((tmp_path / "pieces" / ".sipt-lab-files.json").read_text())
    assert manifest["command"] == "study lc-transfer" and manifest["files"] == copied
    (run / "config.json").write_text('{"seeds": 3}')
    with pytest.raises(SiptError, match="pieces of another run"):
        keep_finished(run, tmp_path / "pieces")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(SiptError, match="no pieces of a sipt-lab run"):
        keep_finished(run, tmp_path / "mine")


def _domain(out, labels, seeds: int) -> int:
    argv = ["domain", "run", "wiki", "--graphs", "mentions", "--task", "category", "--preset", "cpu"]
    argv += ["--samples", "60", "--steps", "2", "--lambdas", "0.1", "--mode", "probe", "--methods", "multitask"]
    argv += ["--pt-labels", str(labels), "--allow-missing", "--init", "char", "--executor", "serial"]
    return main([*argv, "--seeds", str(seeds), "--out", str(out)])


@pytest.mark.slow
def test_table2_assembled_from_seeds_run_in_pieces_equals_one_run(tmp_path, monkeypatch):
    labels = tmp_path / "heads.tsv"
    assert main(["data", "convert", "wiki-descriptions", "--out", str(labels)]) == 0
    assert _domain(tmp_path / "one-go", labels, 2) == 0
    pieces = tmp_path / "pieces"
    for seeds in (1, 2):  # one seed a window, as benchmarks/table2_gpu.sh runs them
        assert _continued(pieces, tmp_path / "work", lambda out, seeds=seeds: _domain(out, labels, seeds)) == 0
    monkeypatch.setattr("sipt_lab.studies.domain.arms.pretrain_arm", lambda *args, **kwargs: pytest.fail("trained"))
    shutil.copytree(pieces, tmp_path / "regenerated")
    assert _domain(tmp_path / "regenerated", labels, 2) == 0
    for run in ("one-go", "regenerated"):
        assert main(["domain", "table", str(tmp_path / run), "--out", str(tmp_path / f"{run}-table")]) == 0
    for name in ("table2.csv", "table2.md"):
        assert (tmp_path / "regenerated-table" / name).read_text() == (tmp_path / "one-go-table" / name).read_text()
    one_go, regenerated = (
        json.loads((tmp_path / run / "summary.json").read_text()) for run in ("one-go", "regenerated")
    )
    assert regenerated == one_go


def test_the_window_script_continues_a_run_from_its_pieces_and_keeps_them(tmp_path):
    script = Path(__file__).parents[2] / "benchmarks" / "continue_in_pieces.py"
    pieces = tmp_path / "pieces"
    command = [sys.executable, str(script), str(pieces), "--into", str(pieces), "--time-limit", "600", "--"]
    for before in (0, 2):  # the second window finds the run complete and trains nothing
        done = subprocess.run([*command, *_study_argv(tmp_path), "--resume"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert f"pieces: {before} finished cells before, 2 after; command exit status 0" in done.stdout
    held = {path.relative_to(pieces).as_posix() for path in pieces.rglob("*") if path.is_file()}
    assert {"results.csv", "summary.json", "config.json"} <= held
    assert {name.rsplit("/", 1)[-1] for name in held if name.startswith("cells/")} == {"config.json", "result.json"}
