"""The spread of the golden tests' trained values across math-library paths: the golden tolerance.

The golden result tests (``tests/cli/test_golden.py``) compare the deterministic, data-only parts of
a result exactly, and the values of trained runs (``golden_support.TRAINED_VALUES``) within a
tolerance, because those move with the CPU's math-library path: instruction set, MKL's and oneDNN's
code path, torch's threads. This script measures how far: it runs the golden result tests once
under each path of ``golden_support.MATH_PATHS`` (``MKL_CBWR``, ``ONEDNN_MAX_CPU_ISA``,
``ATEN_CPU_CAPABILITY``, ``OPENBLAS_CORETYPE``, one and two threads), each in a fresh interpreter
with the tests writing what they computed instead of comparing it, and takes for every golden file
and kind of trained value (``link.ap``, ``final_loss``, ...) the largest distance from the golden
file's value: relative, and absolute where the golden value is 0. The golden values themselves were
computed on another machine, so the spread covers that machine's path too.

It prints, path by path, the LM arm's ``link.ap`` of the golden ``simulate`` run beside the golden
value, the largest relative distance of any trained value and the count of differences in the
exactly compared parts (which must be 0); then the spread by kind beside the tolerance the tests
derive from it (``SPREAD_MULTIPLE`` times the spread, at least the floors), and writes the spread of the golden files it ran to
``tests/cli/golden/tolerance.json`` (the others keep theirs).

Run as ``python benchmarks/golden_spread.py [--paths LABEL ...] [--tests EXPRESSION] [--out FILE] [--keep DIR]``
(all paths: a dozen runs of the golden result tests, about a minute each on one core).
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fakes"))

from golden_support import (  # noqa: E402
    ABS_FLOOR,
    GOLDEN_DIR,
    MATH_PATHS,
    REL_FLOOR,
    SPREAD_MULTIPLE,
    TOLERANCE_FILE,
    TRAINED_VALUES,
    differences,
    run_golden_tests,
    tolerance_rule,
    trained_deviations,
)

#: The golden result tests, as ``pytest -k`` selects them.
RESULT_TESTS = " or ".join(
    f"test_{command}_results" for command in ("simulate", "pretrain", "finetune", "domain_run", "consistency")
)
#: The value the table shows path by path: the LM arm's link AP of seed 0 in the golden simulate run.
SHOWN_FILE, SHOWN_METHOD, SHOWN_KEY = "results/simulate.json", "lm", "link.ap"


def measure(path: str, select: str, folder: Path) -> dict:
    """Run the golden tests under ``path``; what each golden file's test computed, by file name
    (read back from ``folder`` without running when a run of the same selection left it there)."""
    done = folder / "selection.txt"
    if done.is_file() and done.read_text() == select:
        return _recorded(folder)
    finished = run_golden_tests(path, select, record=folder, timeout=None)
    if finished.returncode != 0:
        sys.exit(f"the golden tests failed to run under {path!r}:\n{finished.stdout[-4000:]}{finished.stderr[-2000:]}")
    done.write_text(select)
    return _recorded(folder)


def _recorded(folder: Path) -> dict:
    return {name: json.loads((folder / name).read_text()) for name in TRAINED_VALUES if (folder / name).is_file()}


def merge(into: dict, found: dict) -> None:
    """Keep, kind by kind, the larger of two spreads."""
    for kind, spread in found.items():
        kept = into.setdefault(kind, {"rel": 0.0, "abs": 0.0})
        kept["rel"], kept["abs"] = max(kept["rel"], spread["rel"]), max(kept["abs"], spread["abs"])


def shown_value(results: dict) -> float | None:
    computed = results.get(SHOWN_FILE)
    return computed["results.json"]["methods"][SHOWN_METHOD][SHOWN_KEY][0] if computed else None


def cpu_name() -> str:
    """The CPU's model name as Linux reports it, else the machine's architecture."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", nargs="+", choices=list(MATH_PATHS), default=list(MATH_PATHS))
    parser.add_argument(
        "--tests", default=RESULT_TESTS, help="the golden tests to run (pytest -k; default: every result test)"
    )
    parser.add_argument("--out", type=Path, default=TOLERANCE_FILE, help="where the spread is written")
    parser.add_argument(
        "--keep", type=Path, help="keep each path's computed results here, and reuse them in a later call"
    )
    args = parser.parse_args()

    golden = {name: json.loads((GOLDEN_DIR / name).read_text()) for name in TRAINED_VALUES}
    spread: dict[str, dict] = {}
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for path in args.paths:
            results = measure(path, args.tests, (args.keep or Path(scratch)) / re.sub(r"\W+", "_", path))
            largest, exact = 0.0, 0
            for name, computed in results.items():
                found = trained_deviations(computed, golden[name], name)
                merge(spread.setdefault(name, {}), found)
                largest = max([largest, *(kind["rel"] for kind in found.values())])
                exact += len(differences(computed, golden[name], tolerance=_anything_if_trained(name)))
            rows.append((path, shown_value(results), largest, exact))
            print(f"measured {path}", file=sys.stderr, flush=True)

    reference = golden[SHOWN_FILE]["results.json"]["methods"][SHOWN_METHOD][SHOWN_KEY][0]
    print(f"torch {torch.__version__}, {cpu_name()}, {len(rows)} math-library paths\n")
    print(
        f"| path | {SHOWN_METHOD} {SHOWN_KEY}[0] | golden | largest relative distance of a trained value | exact-part differences |"
    )
    print("|---|---|---|---|---|")
    for path, value, largest, exact in rows:
        shown = "-" if value is None else f"{value:.6g}"
        print(f"| {path} | {shown} | {reference:.6g} | {largest:.4f} | {exact} |")
    print(
        f"\n| golden file | kind | spread (relative) | spread (absolute, at 0) | tolerance ({SPREAD_MULTIPLE}x, floored) |"
    )
    print("|---|---|---|---|---|")
    for name, kinds in sorted(spread.items()):
        for kind, measured in sorted(kinds.items()):
            rel = max(SPREAD_MULTIPLE * measured["rel"], REL_FLOOR)
            abs_ = max(SPREAD_MULTIPLE * measured["abs"], ABS_FLOOR)
            print(
                f"| {name} | {kind} | {measured['rel']:.4g} | {measured['abs']:.4g} | {rel:.3g} rel, {abs_:.3g} abs |"
            )

    kept = json.loads(args.out.read_text()) if args.out.is_file() else {"spread": {}, "paths": {}}
    kept["spread"].update(spread)  # golden files not run this time keep their measured spread
    kept["paths"].update({name: {path: MATH_PATHS[path] for path in args.paths} for name in spread})
    kept["measured_with"] = {"torch": torch.__version__, "cpu": cpu_name()}
    kept["about"] = (
        "Largest distance of each kind of trained value from the golden files' value across the "
        "math-library paths listed for that file; written by benchmarks/golden_spread.py. The golden "
        "tests allow golden_support.SPREAD_MULTIPLE times it."
    )
    args.out.write_text(json.dumps(kept, indent=2, sort_keys=True) + "\n")
    print(f"\nwrote {args.out}")


def _anything_if_trained(name: str):
    """A tolerance rule that lets every trained value pass: what is left are the exact parts."""
    rule = tolerance_rule(name, {})
    return lambda place: (float("inf"), float("inf")) if rule(place) is not None else None


if __name__ == "__main__":
    main()
