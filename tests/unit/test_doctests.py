"""The Python API's examples run: every ``>>>`` example in the docstrings of the modules behind
``from sipt_lab import ...`` is executed as a doctest, and each exported job carries one."""

from __future__ import annotations

import doctest
import importlib
import inspect
import io
import subprocess
import sys
import tempfile
from contextlib import redirect_stdout
from pathlib import Path

import pytest

import sipt_lab

#: Modules whose docstrings carry examples (each must hold at least one); the simulation's first
#: topic fit starts a process pool, which takes more than a few seconds.
DOCUMENTED_MODULES = (
    "sipt_lab",
    "sipt_lab.graphs.consistency",
    "sipt_lab.graphs.graph",
    "sipt_lab.studies.simulation.config",
    pytest.param("sipt_lab.studies.simulation.simulate", marks=pytest.mark.slow),
    "sipt_lab.training.defaults",
    "sipt_lab.jobs.pretrain",
    "sipt_lab.jobs.lambda_sweep",
    "sipt_lab.jobs.finetune",
    "sipt_lab.studies.lc.transfer",
)
#: Exported names whose own docstring must carry an example: the jobs and the config factories.
DOCUMENTED_NAMES = (
    "PretrainingGraph",
    "consistency_from_files",
    "consistency_report",
    "local_consistency",
    "simulate",
    "simulation_config",
    "train_config",
    "run_pretraining",
    "run_lambda_sweep",
    "embed_samples",
    "run_finetuning",
    "run_lc_transfer",
)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.fixture(autouse=True)
def _examples_write_under_tmp_path(tmp_path, monkeypatch):
    """The examples' ``tempfile.mkdtemp()`` directories land in pytest's own temporary directory."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@pytest.mark.parametrize("name", DOCUMENTED_MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    tests = [test for test in doctest.DocTestFinder().find(module) if test.examples]
    assert tests, f"{name} has no docstring examples"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = io.StringIO()
    with redirect_stdout(report):  # what an example prints outside its expected output lands here too
        failed = sum(runner.run(test, out=report.write).failed for test in tests)
    assert failed == 0, report.getvalue()[-6000:]


@pytest.mark.parametrize("name", DOCUMENTED_NAMES)
def test_exported_jobs_carry_an_example(name):
    assert ">>>" in (inspect.getdoc(getattr(sipt_lab, name)) or ""), f"sipt_lab.{name} has no example"


def test_every_export_resolves_to_its_home_module():
    for name in sipt_lab.__all__:
        obj = getattr(sipt_lab, name)
        if name != "__version__":
            home = importlib.import_module(sipt_lab._EXPORTS[name])
            assert getattr(home, name) is obj
    assert set(sipt_lab.__all__) <= set(dir(sipt_lab))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sipt_lab.nope  # noqa: B018


def test_importing_the_package_imports_no_heavy_library():
    code = (
        "import sys, sipt_lab; sipt_lab.__all__; dir(sipt_lab); "
        "print(' '.join(k for k in ('torch', 'sklearn', 'transformers') if k in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_api_page_quick_start_runs():
    """docs/reference/api.md's ``>>>`` examples (a copy of the docstrings' own) run as written."""
    page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "api.md"
    report = io.StringIO()
    with redirect_stdout(report):
        results = doctest.testfile(str(page), module_relative=False, optionflags=FLAGS, report=False)
    assert results.attempted > 0
    assert results.failed == 0, report.getvalue()[-6000:]
