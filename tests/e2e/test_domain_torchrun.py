"""``sipt-lab domain run`` under ``torchrun``: two gloo processes on CPU give the one-process run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from domain_fixtures import write_proteins

from sipt_lab.cli.main import main
from sipt_lab.core import outputs

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _cells(out: Path) -> dict[str, dict]:
    """Cell directory name (its config hash) -> its result."""
    return {cell.name: json.loads((cell / "result.json").read_text()) for cell in sorted((out / "cells").iterdir())}


def test_two_gloo_processes_run_the_cells_once_and_match_one_process(tmp_path, capsys):
    data = write_proteins(tmp_path / "proteins")
    args = [
        "domain",
        "run",
        "proteins",
        "--data",
        str(data),
        "--init",
        "char",
        "--seeds",
        "1",
        "--steps",
        "3",
        "--mode",
        "probe",
        "--device",
        "cpu",
        "--methods",
        "lsm",
    ]
    assert main([*args, "--executor", "serial", "--out", str(tmp_path / "one")]) == 0
    capsys.readouterr()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    two = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            "-m",
            "sipt_lab.cli.main",
            *args,
            "--out",
            str(tmp_path / "two"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert two.returncode == 0, two.stderr[-2000:]
    assert two.stdout.count("summary: ") == 1  # rank 0 alone reports; the other rank returns quietly

    one, both = _cells(tmp_path / "one"), _cells(tmp_path / "two")
    assert sorted(both) == sorted(one) and len(one) == 4  # the same cells (config hashes): off-the-shelf, lm, sipt, lsm
    # the lm arm, trained by both ranks together, stored once by rank 0 and read by the lm and lsm cells
    assert len(list((tmp_path / "two" / "teachers").glob("*/model"))) == 1
    stray = [p for p in (tmp_path / "two").rglob("*") if p.name.startswith(".") and p.name != outputs.MANIFEST]
    assert not stray  # no temporary files left (the manifest is the run's record)
    for name, result in one.items():
        other = both[name]
        assert other["arm"] == result["arm"] and other["sizes"] == result["sizes"]
        if result["arm"] == "off-the-shelf":  # the same seeded warm start, no training: identical scores
            assert other["scores"] == result["scores"]
        else:  # data-parallel pre-training: the same losses up to float reduction order
            for key, value in result["pretrain_final"].items():
                assert other["pretrain_final"][key] == pytest.approx(value, rel=2e-4, abs=1e-5), key
            assert set(other["scores"]["probe"]) == {"accuracy", "macro_f1", "knn3_accuracy", "knn3_auroc"}
            assert all(0.0 <= v <= 1.0 for v in other["scores"]["probe"].values())
    summary = json.loads((tmp_path / "two" / "summary.json").read_text())
    assert set(summary["arms"]) == {"off-the-shelf", "lm", "sipt[interactions]", "lsm"}
    assert (tmp_path / "two" / "comparison.csv").read_text().count("\n") == 1 + len(summary["comparisons"])
