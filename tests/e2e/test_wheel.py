"""The release: a wheel built from the checkout carries every subpackage and the package data, installs
into a fresh environment and runs from there, not from the checkout."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import sipt_lab

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _run(argv: list, cwd: Path, timeout: int = 300, **env) -> subprocess.CompletedProcess:
    # no PYTHONPATH: the checkout (and the tests' fakes) must not be importable from the fresh environment
    clean = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    run = subprocess.run(
        [str(arg) for arg in argv], cwd=cwd, env={**clean, **env}, capture_output=True, text=True, timeout=timeout
    )
    assert run.returncode == 0, f"{argv}\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    return run


def running_site_packages() -> list[str]:
    """The site-packages folders the running interpreter imports from, in its order."""
    return [path for path in sys.path if Path(path).name in ("site-packages", "dist-packages") and Path(path).is_dir()]


def test_the_wheel_carries_the_package_installs_into_a_fresh_venv_and_runs_from_there(tmp_path):
    # build from a copy of what a release ships: the checkout stays clean (no build/, no egg-info)
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "sipt_lab", source / "sipt_lab", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    )
    # --no-isolation: build with the setuptools installed here (a test cannot download one)
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", tmp_path / "dist", source], tmp_path)
    [wheel] = (tmp_path / "dist").glob("sipt_lab-*.whl")
    assert wheel.name.startswith(f"sipt_lab-{sipt_lab.__version__}-")

    names = set(zipfile.ZipFile(wheel).namelist())
    packages = sorted(path.parent.relative_to(ROOT).as_posix() for path in (ROOT / "sipt_lab").rglob("__init__.py"))
    assert {
        "sipt_lab",
        "sipt_lab/core",
        "sipt_lab/data",
        "sipt_lab/graphs",
        "sipt_lab/grid",
        "sipt_lab/viz",
        "sipt_lab/jobs",
        "sipt_lab/studies",
    } <= set(packages)
    missing = [package for package in packages if f"{package}/__init__.py" not in names]
    assert not missing, f"subpackages missing from the wheel: {missing}"
    modules = {path.relative_to(ROOT).as_posix() for path in (ROOT / "sipt_lab").rglob("*.py")}
    assert modules <= names, f"modules missing from the wheel: {sorted(modules - names)}"
    data = {path.relative_to(ROOT).as_posix() for path in (ROOT / "sipt_lab" / "data").glob("*.tsv")}
    data |= {path.relative_to(ROOT).as_posix() for path in (ROOT / "sipt_lab" / "training" / "heads").glob("*.pt")}
    assert data and data <= names, f"package data missing from the wheel: {sorted(data - names)}"
    assert not [name for name in names if name.startswith("tests/") or "__pycache__" in name]
    [metadata] = [name for name in names if name.endswith(".dist-info/METADATA")]
    assert f"Version: {sipt_lab.__version__}\n" in zipfile.ZipFile(wheel).read(metadata).decode()

    # a fresh environment; the package comes from the wheel alone, the dependencies (torch, pip, ...) from
    # the site-packages of the environment running this test, wherever they live: a virtual environment's
    # own, the base interpreter's, a user site (--system-site-packages would give only the base
    # interpreter's). Named by a .pth file, they come after the fresh environment's own site-packages.
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path)
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / "python"
    fresh_site = Path(
        _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path).stdout.strip()
    )
    (fresh_site / "running_environment.pth").write_text("".join(f"{path}\n" for path in running_site_packages()))
    _run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--force-reinstall",
            "--no-warn-script-location",
            "--disable-pip-version-check",
            wheel,
        ],
        tmp_path,
    )

    help_text = _run([bin_dir / "sipt-lab", "--help"], tmp_path).stdout
    assert help_text.startswith("usage: sipt-lab") and "simulate" in help_text

    probe = (
        "import importlib, importlib.metadata, importlib.resources, json, sys; import sipt_lab, sipt_lab.data; "
        f"subpackages = [importlib.import_module(name).__file__ for name in {[p.replace('/', '.') for p in packages]!r}]; "
        "print(json.dumps({'file': sipt_lab.__file__, 'version': sipt_lab.__version__, "
        "'metadata': importlib.metadata.version('sipt-lab'), 'files': subpackages, "
        "'edges': importlib.resources.files('sipt_lab.data').joinpath('example_edges.tsv').is_file()}))"
    )
    found = json.loads(_run([python, "-c", probe], tmp_path).stdout.splitlines()[-1])
    site = venv.resolve()
    assert Path(found["file"]).resolve().is_relative_to(site), f"sipt_lab imported from {found['file']}, not the wheel"
    assert all(Path(file).resolve().is_relative_to(site) for file in found["files"]), found["files"]
    assert found["version"] == found["metadata"] == sipt_lab.__version__
    assert found["edges"]
