"""The code's style is ruff's (configuration in ``pyproject.toml``): lint clean and formatted."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ["sipt_lab", "tests", "benchmarks", "paper_figures", "results", "docs"]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff(command):
    done = subprocess.run([sys.executable, "-m", "ruff", *command, *CHECKED], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
