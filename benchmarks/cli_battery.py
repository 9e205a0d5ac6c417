"""The CLI's hostile-input battery, counted: how many cases it tries and how each ended.

Run as ``python benchmarks/cli_battery.py``. Runs the battery's test files
(:data:`BATTERY_FILES`) in one pytest process, reads the tally ``test_cli_battery.py`` prints at the
end of the session and pytest's pass count, prints them as a table and writes
``benchmarks/results/cli_battery.json``, from which the README's reliability paragraph is rendered.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BATTERY_FILES = (
    "tests/cli/test_cli_battery.py",
    "tests/cli/test_every_writer.py",
    "tests/cli/test_one_reader.py",
    "tests/cli/test_clean_errors.py",
    "tests/cli/test_output_safety.py",
)
TALLY = re.compile(
    r"CLI battery: (\d+) cases: (\d+) exit 0 with a correct output, (\d+) one-line errors \(exit 2\), "
    r"(\d+) valid up to the work of a long command"
)
SUMMARY = re.compile(r"(\d+) passed(?:, (\d+) failed)?")


def main() -> int:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *BATTERY_FILES],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    tally, summary = TALLY.search(done.stdout), SUMMARY.findall(done.stdout)
    if tally is None or not summary:
        print(done.stdout[-3000:], done.stderr[-2000:])
        return 1
    cases, ok, errors, reached = map(int, tally.groups())
    passed, failed = int(summary[-1][0]), int(summary[-1][1] or 0)
    result = {
        "battery_cases": cases,
        "exit_0_correct": ok,
        "one_line_errors": errors,
        "valid_up_to_long_work": reached,
        "tests": passed + failed,
        "tests_passed": passed,
        "files": list(BATTERY_FILES),
    }
    print("| what | count |")
    print("|---|---|")
    for key, value in result.items():
        if key != "files":
            print(f"| {key} | {value} |")
    (ROOT / "benchmarks" / "results" / "cli_battery.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
