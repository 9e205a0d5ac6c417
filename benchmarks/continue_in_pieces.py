"""Continue a grid run (``study lc-transfer``, ``study atlas``, ``domain run``) from its committed
pieces within one window of device time, and keep what it finished as pieces again.

Run as ``python benchmarks/continue_in_pieces.py PIECES --into DIR --time-limit SECONDS -- COMMAND...``
from the repository root: the pieces so far (``PIECES``, a folder :func:`sipt_lab.grid.keep_finished`
wrote; absent on the first window) are copied into a fresh run directory, ``sipt-lab COMMAND... --out
RUN --time-limit SECONDS`` continues the run there (no cell starts that would likely end past the
limit, counted from the command's start; a study's ``COMMAND`` ends in ``--resume``), and the finished pieces (``PIECES``' and the new
ones: metrics, never weights) are written into ``DIR``, which replaces ``PIECES`` in the repository.
Prints one line: the cells finished before and after, and the command's exit status (3: stopped at
the time limit, pieces left to run; 0: the run is complete and its result files are among the pieces).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sipt_lab.grid import keep_finished


def finished_cells(folder: Path) -> int:
    """How many finished cells (a ``result.json``) the pieces or run in ``folder`` hold."""
    return sum(1 for _ in folder.glob("**/result.json")) if folder.is_dir() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pieces", type=Path, help="the committed pieces so far (absent on the first window)")
    parser.add_argument("--into", type=Path, required=True, help="where the pieces after this window go")
    parser.add_argument("--time-limit", type=float, required=True, help="seconds the command may take")
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        parser.error("give the sipt-lab command after --, without --out")
    args = parser.parse_args(argv[: argv.index("--")])
    command = argv[argv.index("--") + 1 :]
    before = finished_cells(args.pieces)
    with tempfile.TemporaryDirectory() as work:
        run = Path(work) / "run"
        if args.pieces.is_dir():
            shutil.copytree(args.pieces, run)
            if args.pieces.resolve() != args.into.resolve():
                keep_finished(run, args.into)  # the earlier pieces are kept even if this window finishes none
        argv = [sys.executable, "-m", "sipt_lab.cli.main", *command, "--out", str(run)]
        status = subprocess.call([*argv, "--time-limit", f"{args.time_limit:g}"])
        if run.is_dir():
            keep_finished(run, args.into)
    print(f"pieces: {before} finished cells before, {finished_cells(args.into)} after; command exit status {status}")
    return status


if __name__ == "__main__":
    sys.exit(main())
