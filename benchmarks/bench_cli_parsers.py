"""The hand-written option layer against jsonargparse, on the same config: :class:`TrainConfig`.

Two parsers of every ``TrainConfig`` field, each in a fresh interpreter:

* ``sipt_lab``: ``OneLineParser`` with ``add_config_arguments`` (``sipt_lab.core.options``), what
  the CLI uses;
* ``jsonargparse``: ``jsonargparse.ArgumentParser`` with ``add_class_arguments(TrainConfig)`` and a
  TOML ``--config`` / ``--print-config`` (the library as it comes: flags, types and help from the
  dataclass's annotations and docstring; the fields' ``option`` metadata is not read by it).

Timing rows: the interpreter alone, ``import argparse`` / ``import jsonargparse``, ``--help`` of each
parser, and ``sipt-lab pretrain --help`` (the real command, every subcommand's parser built), each
the median of ``--rounds`` runs taken in turn so background load hits all alike. The conformance
rows count what the house rules ask (``tests/cli/test_golden.py``, ``test_clean_errors.py``,
``test_cli_imports.py``): each field's flag named as the CLI names it today (``--max-length``), an
out-of-range value and an unknown choice refused while parsing (exit 2, one line on stderr), an
abbreviation refused, ``--print-config`` output that feeds back through ``--config`` (ours through
``sipt-lab pretrain``), and a parser built without torch. jsonargparse resolves the annotations of
``TrainConfig``'s module, its ``TYPE_CHECKING`` import included, which imports ``sipt_lab.models``
and with it torch: most of its ``--help`` time.

jsonargparse is not a dependency of sipt-lab: run with it importable, e.g.
``pip install --target /tmp/jsonarg-lib jsonargparse[toml]`` then
``PYTHONPATH=/tmp/jsonarg-lib python benchmarks/bench_cli_parsers.py [--rounds 7]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIPT = """
import sys
from sipt_lab.cli.arguments import OneLineParser
from sipt_lab.core.errors import SiptError
from sipt_lab.core.options import add_config_arguments, options_of
from sipt_lab.training.train_config import TrainConfig
parser = OneLineParser(prog="bench")
add_config_arguments(parser, TrainConfig, list(options_of(TrainConfig)))
try:
    if sys.argv[1:]:
        parser.parse_args(sys.argv[1:])
except SiptError as error:
    print(f"bench: error: {error}", file=sys.stderr)
    raise SystemExit(2)
"""
JSONARGPARSE = """
import sys
from jsonargparse import ActionConfigFile, ArgumentParser
from sipt_lab.training.train_config import TrainConfig
parser = ArgumentParser(prog="bench", parser_mode="toml", print_config="--print-config", allow_abbrev=False)
parser.add_argument("--config", action=ActionConfigFile)
parser.add_class_arguments(TrainConfig, None, as_group=False)
parser.parse_args(sys.argv[1:])
"""
#: Appended to a parser script: prints the heavy libraries that building it imported.
HEAVY = """
print(" ".join(name for name in ("torch", "sklearn", "transformers") if name in sys.modules))
"""
TIMED = {
    "interpreter alone (`python -c pass`)": ["-c", "pass"],
    "`import argparse`": ["-c", "import argparse"],
    "`import jsonargparse`": ["-c", "import jsonargparse"],
    "`import torch` (jsonargparse's parser pulls it in: see the conformance table)": ["-c", "import torch"],
    "sipt_lab parser of TrainConfig, `--help`": ["-c", SIPT, "--help"],
    "jsonargparse parser of TrainConfig, `--help`": ["-c", JSONARGPARSE, "--help"],
    "`sipt-lab pretrain --help` (the real CLI)": ["-m", "sipt_lab.cli.main", "pretrain", "--help"],
}


def run(arguments: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *arguments], capture_output=True, text=True, timeout=120)


def timings(rounds: int) -> dict[str, float]:
    seconds: dict[str, list[float]] = {name: [] for name in TIMED}
    for _ in range(rounds):
        for name, arguments in TIMED.items():
            start = time.perf_counter()
            done = run(arguments)
            seconds[name].append(time.perf_counter() - start)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed: {done.stderr[-500:]}")
    return {name: statistics.median(values) for name, values in seconds.items()}


def out_of_range(option) -> str | None:
    """A value just outside a field's range, as the command line would give it (None: no range)."""
    if option.low is not None:
        return str(option.low if option.low_open else option.low - 1)
    if option.high is not None:
        return str(option.high if option.high_open else option.high + 1)
    return None


def refused_in_one_line(done: subprocess.CompletedProcess) -> bool:
    return done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def round_trip(command: list[str], directory: Path) -> bool:
    """``--print-config`` of ``command --steps 7``, fed back with ``--config``, prints the same."""
    printed = run([*command, "--steps", "7", "--print-config"]).stdout
    (directory / "printed.toml").write_text(printed)
    again = run([*command, "--config", str(directory / "printed.toml"), "--print-config"]).stdout
    return "steps = 7" in printed and again == printed


def conformance() -> list[tuple[str, int, int, int]]:
    """``(house rule, sipt_lab count, jsonargparse count, out of how many)``."""
    from sipt_lab.core.options import flag_of, options_of
    from sipt_lab.training.train_config import TrainConfig

    fields = options_of(TrainConfig)
    parsers = {  # each library's flag of a field: jsonargparse's is the field's name
        "sipt_lab": (SIPT, lambda name: flag_of(TrainConfig, name)),
        "jsonargparse": (JSONARGPARSE, lambda name: f"--{name}"),
    }
    ranged = {name: value for name, option in fields.items() if (value := out_of_range(option)) is not None}
    chosen = [name for name, option in fields.items() if option.choices is not None]
    counts: dict[str, list[int]] = {}
    for library, (script, flag) in parsers.items():
        text = run(["-c", script, "--help"]).stdout
        with tempfile.TemporaryDirectory() as directory:
            trip = ["-m", "sipt_lab.cli.main", "pretrain"] if library == "sipt_lab" else ["-c", script]
            counts[library] = [
                sum(f"{flag_of(TrainConfig, name)} " in text for name in fields),
                sum(
                    refused_in_one_line(run(["-c", script, f"{flag(name)}={value}"])) for name, value in ranged.items()
                ),
                sum(refused_in_one_line(run(["-c", script, flag(name), "no-such-choice"])) for name in chosen),
                int(refused_in_one_line(run(["-c", script, "--step", "5"]))),
                int(round_trip(trip, Path(directory))),
                int(run(["-c", script + HEAVY]).stdout.strip() == ""),
            ]
    rules = [
        ("flag named as the CLI names it (`--max-length`, `--lambda-si`)", len(fields)),
        ("out-of-range value refused while parsing: one line, exit 2", len(ranged)),
        ("unknown choice refused while parsing: one line, exit 2", len(chosen)),
        ("abbreviation refused (`--step 5`): one line, exit 2", 1),
        ("`--print-config` output fed back with `--config` prints the same", 1),
        ("building the parser imports no torch, scikit-learn or transformers", 1),
    ]
    return [(rule, ours, theirs, total) for (rule, total), ours, theirs in zip(rules, *counts.values())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="runs of each case (median)")
    args = parser.parse_args()
    if run(["-c", "import jsonargparse"]).returncode != 0:
        raise SystemExit("jsonargparse is not importable: see this script's docstring")
    version = run(["-c", "import jsonargparse; print(jsonargparse.__version__)"]).stdout.strip()
    seconds = timings(args.rounds)
    alone = seconds["interpreter alone (`python -c pass`)"]
    print(f"jsonargparse {version}, Python {sys.version.split()[0]}, median of {args.rounds} rounds\n")
    print("| case | seconds | over the interpreter alone |")
    print("|---|---|---|")
    for name, value in seconds.items():
        print(f"| {name} | {value:.3f} | {value - alone:+.3f} |")
    sipt = seconds["sipt_lab parser of TrainConfig, `--help`"] - alone
    other = seconds["jsonargparse parser of TrainConfig, `--help`"] - alone
    print(f"\njsonargparse / sipt_lab, `--help` of TrainConfig over the interpreter: {other / sipt:.2f}x\n")
    print("| house rule, over TrainConfig's fields | sipt_lab | jsonargparse | fields |")
    print("|---|---|---|---|")
    for what, ours, theirs, total in conformance():
        print(f"| {what} | {ours} | {theirs} | {total} |")


if __name__ == "__main__":
    main()
