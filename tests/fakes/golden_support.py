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

Floats are then compared with a relative tolerance of :data:`REL_TOL` (and :data:`ABS_TOL` for
values at zero), so that float noise from threads or BLAS does not fail a test while a changed
result does. Everything else (keys, strings, integers, booleans, list lengths) must be equal.
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
REL_TOL = 1e-4
#: Absolute tolerance for floats at (or within float noise of) zero, where a relative one cannot hold.
ABS_TOL = 1e-9

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


def differences(actual, expected, where: str = "") -> list[str]:
    """Where ``actual`` differs from ``expected`` (both normalised), one line per difference."""
    here = where or "<top>"
    if isinstance(expected, dict) and isinstance(actual, dict):
        lines = [f"{here}: key {k!r} is missing" for k in expected if k not in actual]
        lines += [f"{here}: key {k!r} is new" for k in actual if k not in expected]
        for key in expected:
            if key in actual:
                lines += differences(actual[key], expected[key], f"{where}/{key}")
        return lines
    if isinstance(expected, list) and isinstance(actual, list):
        if len(actual) != len(expected):
            return [f"{here}: {len(actual)} items, expected {len(expected)}: {_short(actual)} vs {_short(expected)}"]
        return [line for k, (a, e) in enumerate(zip(actual, expected)) for line in differences(a, e, f"{where}[{k}]")]
    if _is_number(expected) and _is_number(actual):
        if isinstance(expected, int) and isinstance(actual, int):  # counts are exact
            return [] if actual == expected else [f"{here}: {actual!r}, expected {expected!r}"]
        if math.isclose(actual, expected, rel_tol=REL_TOL, abs_tol=ABS_TOL):
            return []
        return [f"{here}: {actual!r}, expected {expected!r}"]
    if type(actual) is not type(expected) or actual != expected:
        return [f"{here}: {_short(actual)}, expected {_short(expected)}"]
    return []


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


def environment_differences() -> list[str]:
    """The installed distributions whose version differs from :data:`ENVIRONMENT_FILE`'s, one line each
    (``torch 2.13.0+cpu, golden files made with 2.12.0``); empty when none do or the file is missing."""
    if not ENVIRONMENT_FILE.is_file():
        return []
    recorded = dict(
        line.split("==", 1) for line in ENVIRONMENT_FILE.read_text(encoding="utf-8").splitlines() if "==" in line
    )
    installed = installed_versions()
    lines = [
        f"{name} {installed.get(name, 'not installed')}, golden files made with {version}"
        for name, version in sorted(recorded.items())
        if installed.get(name) != version
    ]
    new = sorted(set(installed) - set(recorded))
    if new:
        lines.append("not installed when the golden files were made: " + ", ".join(f"{n} {installed[n]}" for n in new))
    return lines


def environment_note() -> str:
    """What a failure message adds about the versions: the differing ones, or that none differ."""
    found = environment_differences()
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
    expected = json.loads(_read(path))
    found = differences(json.loads(golden_json_text(data)), expected)
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
