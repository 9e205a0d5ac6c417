"""Helpers of the golden tests (``tests/cli/test_golden.py``): normalise a result, compare it with its
golden file under ``tests/golden/``, and rewrite the golden files on request.

A golden file holds what a command printed or wrote today, before the package is restructured; a
restructuring changes where code lives, not what it computes, so the golden files should keep
passing unchanged. Set ``SIPT_LAB_UPDATE_GOLDEN=1`` to rewrite them when a change of behaviour is
intended (then review the diff of ``tests/golden/`` like any other change)::

    SIPT_LAB_UPDATE_GOLDEN=1 python -m pytest tests/cli/test_golden.py

What normalising does, so that only the numbers and structure of a result are compared:

* volatile fields are dropped: timings, durations, throughput, dates, versions, host names and
  process ids (:data:`VOLATILE_KEYS`, :data:`VOLATILE_SUFFIXES`);
* paths lose their machine-specific part: a path under the test's temporary directory becomes
  ``<tmp>/...`` (or another label the test gives that directory), and any other absolute path
  becomes ``<abs>/<its file name>``;
* floats are rounded to :data:`SIGNIFICANT_DIGITS` significant digits (NaN and infinities become
  the strings ``"nan"``, ``"inf"``, ``"-inf"``, which JSON can hold); tuples become lists.

What is compared exactly and what within a tolerance:

* the deterministic, data-only parts (graphs, LC, splits, configs, counts, file listings, every
  key, string, integer and list length) must equal the golden file's, floats at their
  :data:`SIGNIFICANT_DIGITS` significant digits;
* the values a trained run computes (:data:`TRAINED_VALUES`: metrics, losses, scores) move with the
  CPU's math-library path (instruction set, MKL / oneDNN code path, threads), and over a run's steps
  that grows to about 1 % in a ranking metric. They are compared within a tolerance of
  :data:`SPREAD_MULTIPLE` times the spread measured for their kind across math-library paths
  (``golden/tolerance.json``, written by ``benchmarks/golden_spread.py``), and no less than
  :data:`REL_FLOOR` relative / :data:`ABS_FLOOR` absolute.

Differences are listed by their place in the JSON (``/sipt/result.json/after/link_mrr``).

The versions of every installed distribution when the golden files were written are kept beside
them (:data:`ENVIRONMENT_FILE`, ``name==version`` lines as ``pip freeze`` prints them); a failing
comparison lists the installed versions that differ from it, so that a difference a library
release made is told apart from one our change made at a glance.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

#: Where the golden files live.
GOLDEN_DIR = Path(__file__).resolve().parents[1] / "cli" / "golden"
#: The environment variable that turns comparing into rewriting.
UPDATE_ENV = "SIPT_LAB_UPDATE_GOLDEN"
#: How to (re)create the golden files; every failure message ends with it.
UPDATE_HINT = (
    f"if the change is intended, rewrite the golden files with `{UPDATE_ENV}=1 python -m pytest "
    "tests/cli/test_golden.py` and review the diff of tests/golden/"
)

#: ``name==version`` of every installed distribution when the golden files were last written.
ENVIRONMENT_FILE = GOLDEN_DIR / "environment.txt"

SIGNIFICANT_DIGITS = 6

#: The spread of trained values across math-library paths, by golden file and kind of value
#: (:func:`kind_of`): ``{"rel": largest |value - golden| / |golden|, "abs": largest |value| where the
#: golden value is 0}``, written by ``benchmarks/golden_spread.py``.
TOLERANCE_FILE = GOLDEN_DIR / "tolerance.json"
#: A trained value's tolerance is this multiple of its kind's measured spread: the paths measured
#: on one machine (and the golden files' own) do not cover every CPU's.
SPREAD_MULTIPLE = 2
#: The least relative tolerance of a trained value (float noise of a kind that did not move).
REL_FLOOR = 1e-4
#: The least absolute tolerance of a trained value at (or within float noise of) zero.
ABS_FLOOR = 1e-9
#: Where the values of trained runs are in each golden file: a regular expression matched at the
#: start of a value's JSON place. Every other value is compared exactly.
TRAINED_VALUES = {
    "results/simulate.json": r"/results\.json/methods/",
    "results/pretrain.json": r"/[^/]+/(history\.csv|result\.json/(before|after|final))\b",
    "results/finetune.json": r"/results\.json/(results|comparisons)\b",
    "results/domain_run.json": (
        r"/(comparison\.csv|summary\.json/comparisons"
        r"|cells/[^/]+/result\.json/(finetune_history|pretrain_final|scores|validation_links)"
        r"|summary\.json/arms/[^/]+/(scores|full\.|probe\.))"
    ),
}
#: The environment variable that makes :func:`check_golden_json` write what a test computed into
#: the folder it names, in place of comparing (``benchmarks/golden_spread.py`` reads it from there).
RECORD_ENV = "SIPT_LAB_GOLDEN_RECORD"
#: The environment variable that sets torch's intra-op threads in a test (1 when unset).
THREADS_ENV = "SIPT_LAB_TEST_THREADS"
#: Math-library paths the golden results are measured under, by label: environment variables,
#: and torch's threads as :data:`THREADS_ENV`. Labels are ``,``-free so that they can be chosen
#: on a command line.
MATH_PATHS = {
    "nothing set": {},
    "MKL_CBWR=COMPATIBLE": {"MKL_CBWR": "COMPATIBLE"},
    "MKL_CBWR=AVX": {"MKL_CBWR": "AVX"},
    "MKL_CBWR=AVX2": {"MKL_CBWR": "AVX2"},
    "ONEDNN_MAX_CPU_ISA=AVX2 MKL_CBWR=AVX2": {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"},
    "ONEDNN_MAX_CPU_ISA=SSE41": {"ONEDNN_MAX_CPU_ISA": "SSE41"},
    "ATEN_CPU_CAPABILITY=default": {"ATEN_CPU_CAPABILITY": "default"},
    "ATEN_CPU_CAPABILITY=avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2": {
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "ATEN_CPU_CAPABILITY": "avx2",
    },
    "OPENBLAS_CORETYPE=Prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "2 threads": {THREADS_ENV: "2", "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"},
    "2 threads MKL_CBWR=COMPATIBLE": {
        THREADS_ENV: "2",
        "OMP_NUM_THREADS": "2",
        "MKL_NUM_THREADS": "2",
        "MKL_CBWR": "COMPATIBLE",
    },
}

#: Keys whose values change from run to run (or machine to machine) without the result changing.
VOLATILE_KEYS = frozenset(
    {
        "seconds",
        "elapsed",
        "duration",
        "wall_time",
        "time",
        "timestamp",
        "date",
        "created",
        "started",
        "finished",
        "throughput",
        "version",
        "versions",
        "hostname",
        "host",
        "pid",
        "python",
        "platform",
    }
)
#: Key endings of the same kind (``train_seconds``, ``samples_per_second``, ``torch_version`` ...).
VOLATILE_SUFFIXES = ("_seconds", "_time", "_at", "_per_second", "_per_sec", "_version", "_date", "_hostname")

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?")


def updating() -> bool:
    """Whether this run rewrites the golden files (``SIPT_LAB_UPDATE_GOLDEN`` set to 1/true/yes)."""
    return os.environ.get(UPDATE_ENV, "").strip().lower() in {"1", "true", "yes"}


def is_volatile(key: str) -> bool:
    key = key.lower()
    return key in VOLATILE_KEYS or key.endswith(VOLATILE_SUFFIXES)


def round_significant(value: float, digits: int = SIGNIFICANT_DIGITS) -> float | str:
    """``value`` rounded to ``digits`` significant digits; NaN and infinities as strings."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    rounded = float(f"{value:.{digits}g}")
    return 0.0 if rounded == 0 else rounded  # no -0.0


def normalise(value, roots=None):
    """A JSON-ready copy of ``value`` with volatile fields dropped, paths made machine-independent
    and floats rounded (see the module docstring). ``roots``: the test's temporary directory
    (shown as ``<tmp>``), or a mapping of directories to the labels that replace them."""
    if roots is not None and not isinstance(roots, dict):
        roots = {roots: "<tmp>"}
    return _normalise(value, _root_labels(roots or {}))


def _root_labels(roots: dict) -> list[tuple[str, str]]:
    """(directory as text, label) pairs, resolved forms too, longest first (a nested one wins)."""
    pairs = {(str(root), label) for root, label in roots.items()}
    pairs |= {(str(Path(root).resolve()), label) for root, label in roots.items()}
    return sorted(pairs, key=lambda pair: -len(pair[0]))


def _normalise(value, roots: list[tuple[str, str]]):
    if isinstance(value, dict):
        return {str(k): _normalise(v, roots) for k, v in value.items() if not is_volatile(str(k))}
    if isinstance(value, (list, tuple)):
        return [_normalise(v, roots) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return round_significant(value)
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, str):
        return _normalise_text(value, roots)
    if hasattr(value, "item"):  # a numpy scalar
        return _normalise(value.item(), roots)
    raise TypeError(f"cannot normalise a {type(value).__name__}: {value!r}")


def _normalise_text(text: str, roots: list[tuple[str, str]]) -> str:
    for root, label in roots:
        text = text.replace(root, label)
    if os.path.isabs(text) and "\n" not in text:
        text = f"<abs>/{Path(text).name}"
    return _DATE.sub("<date>", text)


def read_csv_rows(path: Path) -> list[dict]:
    """A CSV file's rows as dicts, with number-looking cells as numbers (so they are rounded and
    compared with the tolerance like JSON numbers)."""
    import csv

    with open(path, newline="") as handle:
        return [{key: _number(cell) for key, cell in row.items()} for row in csv.DictReader(handle)]


def _number(cell: str):
    try:
        return int(cell)
    except ValueError:
        pass
    try:
        return float(cell)
    except ValueError:
        return cell


def torch_threads() -> int:
    """Torch's intra-op threads for a test: :data:`THREADS_ENV`, else 1."""
    return int(os.environ.get(THREADS_ENV) or 1)


def kind_of(place: str) -> str:
    """The kind of value at a JSON place, its last key: ``/results.json/methods/lm/link.ap[0]`` ->
    ``link.ap``; ``/lm/history.csv[3]/loss`` -> ``loss``."""
    return re.sub(r"\[\d+\]", "", place).rsplit("/", 1)[-1]


def read_spread() -> dict:
    """``golden/tolerance.json``'s measured spread (``{golden file: {kind: {"rel", "abs"}}}``); empty
    when the file is missing, so that every trained value gets the floor."""
    if not TOLERANCE_FILE.is_file():
        return {}
    return json.loads(TOLERANCE_FILE.read_text(encoding="utf-8"))["spread"]


def tolerance_rule(name: str, spread: dict):
    """For golden file ``name``: a function of a JSON place giving ``(relative, absolute)`` tolerance
    for a trained value (:data:`SPREAD_MULTIPLE` times its kind's spread, at least the floors), or
    None for a value compared exactly."""
    pattern = re.compile(TRAINED_VALUES[name]) if name in TRAINED_VALUES else None
    measured = spread.get(name, {})

    def tolerance(place: str) -> tuple[float, float] | None:
        if pattern is None or not pattern.match(place):
            return None
        kind = measured.get(kind_of(place), {})
        return (
            max(SPREAD_MULTIPLE * kind.get("rel", 0.0), REL_FLOOR),
            max(SPREAD_MULTIPLE * kind.get("abs", 0.0), ABS_FLOOR),
        )

    return tolerance


def differences(actual, expected, where: str = "", tolerance=lambda place: None) -> list[str]:
    """Where ``actual`` differs from ``expected`` (both normalised), one line per difference.
    ``tolerance``: place -> ``(relative, absolute)`` tolerance of a float there, or None to compare
    it exactly (:func:`tolerance_rule`); integers are counts and always exact."""
    here = where or "<top>"
    if isinstance(expected, dict) and isinstance(actual, dict):
        lines = [f"{here}: key {k!r} is missing" for k in expected if k not in actual]
        lines += [f"{here}: key {k!r} is new" for k in actual if k not in expected]
        for key in expected:
            if key in actual:
                lines += differences(actual[key], expected[key], f"{where}/{key}", tolerance)
        return lines
    if isinstance(expected, list) and isinstance(actual, list):
        if len(actual) != len(expected):
            return [f"{here}: {len(actual)} items, expected {len(expected)}: {_short(actual)} vs {_short(expected)}"]
        return [
            line
            for k, (a, e) in enumerate(zip(actual, expected))
            for line in differences(a, e, f"{where}[{k}]", tolerance)
        ]
    if _is_number(expected) and _is_number(actual):
        allowed = None if isinstance(expected, int) and isinstance(actual, int) else tolerance(where)
        if allowed is None:
            return [] if actual == expected else [f"{here}: {actual!r}, expected {expected!r} (compared exactly)"]
        rel, abs_ = allowed
        if math.isclose(actual, expected, rel_tol=rel, abs_tol=abs_):
            return []
        return [
            f"{here}: {actual!r}, expected {expected!r} (trained value: tolerance {rel:.3g} relative, {abs_:.3g} absolute)"
        ]
    if type(actual) is not type(expected) or actual != expected:
        return [f"{here}: {_short(actual)}, expected {_short(expected)}"]
    return []


def trained_deviations(actual, expected, name: str, where: str = "") -> dict[str, dict[str, float]]:
    """How far ``actual``'s trained values (:data:`TRAINED_VALUES` of golden file ``name``) lie from
    ``expected``'s, by kind: ``{kind: {"rel": largest |a - e| / |e|, "abs": largest |a| where e is 0}}``.
    Places that differ in structure are left to :func:`differences`."""
    pattern = re.compile(TRAINED_VALUES[name])
    found: dict[str, dict[str, float]] = {}

    def visit(a, e, place):
        if isinstance(e, dict) and isinstance(a, dict):
            for key in e.keys() & a.keys():
                visit(a[key], e[key], f"{place}/{key}")
        elif isinstance(e, list) and isinstance(a, list) and len(a) == len(e):
            for k, (x, y) in enumerate(zip(a, e)):
                visit(x, y, f"{place}[{k}]")
        elif _is_number(a) and _is_number(e) and pattern.match(place):
            kind = found.setdefault(kind_of(place), {"rel": 0.0, "abs": 0.0})
            if e == 0:
                kind["abs"] = max(kind["abs"], abs(a))
            else:
                kind["rel"] = max(kind["rel"], abs(a - e) / abs(e))

    visit(actual, expected, where)
    return found


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _short(value, limit: int = 160) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def golden_json_text(data) -> str:
    return json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"


def installed_versions() -> dict[str, str]:
    """``{distribution name (normalised as pip does): version}`` of the running environment, sipt-lab aside."""
    from importlib import metadata

    found = {}
    for distribution in metadata.distributions():
        name = re.sub(r"[-_.]+", "-", distribution.metadata["Name"] or "").lower()
        if name and name != "sipt-lab":
            found[name] = distribution.version
    return found


def freeze_text(versions: dict[str, str]) -> str:
    """``versions`` as ``pip freeze`` lines, sorted by name."""
    return "".join(f"{name}=={version}\n" for name, version in sorted(versions.items()))


def read_freeze(text: str) -> dict[str, str]:
    """``name==version`` lines (as :func:`freeze_text` writes them) as ``{name: version}``."""
    return dict(line.strip().split("==", 1) for line in text.splitlines() if "==" in line)


def environment_differences(recorded: dict[str, str], installed: dict[str, str]) -> list[str]:
    """The distributions whose installed version differs from the recorded one, one line each
    (``numpy 2.3.1, golden files made with 2.2.0``), then one line of those installed but not
    recorded. Versions are compared whole, as pip reports them: a local label counts, so
    ``2.13.0+cpu`` against ``2.13.0`` or ``2.13.0+cu130`` differs (another build of the same
    release, whose binaries may take other float paths), and its line says so."""
    lines = []
    for name, version in sorted(recorded.items()):
        now = installed.get(name)
        if now is None:
            lines.append(f"{name} not installed, golden files made with {version}")
        elif now != version:
            same_release = now.split("+", 1)[0] == version.split("+", 1)[0]
            note = f" (same release {now.split('+', 1)[0]}, another build)" if same_release else ""
            lines.append(f"{name} {now}, golden files made with {version}{note}")
    new = sorted(set(installed) - set(recorded))
    if new:
        lines.append("not installed when the golden files were made: " + ", ".join(f"{n} {installed[n]}" for n in new))
    return lines


def environment_note() -> str:
    """What a failure message adds about the versions: those that differ from
    :data:`ENVIRONMENT_FILE`'s, or that none do (nothing when the file is missing)."""
    if not ENVIRONMENT_FILE.is_file():
        return f"installed versions: {ENVIRONMENT_FILE.name} is missing"
    found = environment_differences(read_freeze(ENVIRONMENT_FILE.read_text(encoding="utf-8")), installed_versions())
    if not found:
        return f"installed versions: as when the golden files were made ({ENVIRONMENT_FILE.name})"
    return f"installed versions that differ from {ENVIRONMENT_FILE.name} ({len(found)}):\n  " + "\n  ".join(found[:40])


def check_golden_json(name: str, data) -> None:
    """Compare ``data`` (already normalised) with ``tests/golden/<name>`` (or write it, and the
    environment's versions beside it, when updating)."""
    path = GOLDEN_DIR / name
    if updating():
        _write(path, golden_json_text(data))
        _write(ENVIRONMENT_FILE, freeze_text(installed_versions()))
        return
    if os.environ.get(RECORD_ENV):
        _write(Path(os.environ[RECORD_ENV]) / name, golden_json_text(data))
        return
    expected = json.loads(_read(path))
    found = differences(json.loads(golden_json_text(data)), expected, tolerance=tolerance_rule(name, read_spread()))
    if found:
        shown = "\n  ".join(found[:40]) + (f"\n  ... and {len(found) - 40} more" if len(found) > 40 else "")
        pytest.fail(
            f"{name} differs from its golden file in {len(found)} place(s):\n  {shown}\n{environment_note()}\n"
            f"{UPDATE_HINT}",
            pytrace=False,
        )


def text_mismatch(name: str, text: str) -> str | None:
    """Compare ``text`` with ``tests/golden/<name>`` exactly (or write it when updating): a unified
    diff, or a note that the file is missing, else None. Returned rather than failed, so that one
    test can report every mismatching file at once."""
    path = GOLDEN_DIR / name
    if updating():
        _write(path, text)
        _write(ENVIRONMENT_FILE, freeze_text(installed_versions()))
        return None
    if not path.is_file():
        return (
            f"{name}: golden file is missing; create it with `{UPDATE_ENV}=1 python -m pytest tests/cli/test_golden.py`"
        )
    expected = path.read_text(encoding="utf-8")
    if text == expected:
        return None
    return "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), f"golden/{name}", "now"))


def _read(path: Path) -> str:
    if not path.is_file():
        pytest.fail(
            f"golden file {path.relative_to(GOLDEN_DIR.parent.parent)} is missing; create it with "
            f"`{UPDATE_ENV}=1 python -m pytest tests/cli/test_golden.py`, review it and commit it",
            pytrace=False,
        )
    return path.read_text(encoding="utf-8")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def run_golden_tests(
    path: str, select: str, record: Path | None = None, timeout: float | None = 900
) -> subprocess.CompletedProcess:
    """Run the golden tests ``-k select`` in a fresh interpreter under math-library path ``path``
    (a label of :data:`MATH_PATHS`): the variables of every other path unset, this one's set, the
    package imported from this checkout. With ``record``, the tests write what they computed into
    that folder instead of comparing it (:data:`RECORD_ENV`)."""
    root = GOLDEN_DIR.parents[2]
    env = {k: v for k, v in os.environ.items() if k not in {UPDATE_ENV, RECORD_ENV, *_math_path_variables()}}
    env.update(MATH_PATHS[path])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    if record is not None:
        env[RECORD_ENV] = str(record)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/cli/test_golden.py", "-k", select]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)


def _math_path_variables() -> set[str]:
    return {name for variables in MATH_PATHS.values() for name in variables}
