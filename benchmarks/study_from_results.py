"""Summarise a committed LC-transfer study's ``results.csv`` again with today's statistics.

A study's rows (one per level x arm x replicate x metric) are everything its summary is computed
from, besides the encoder's own consistency, which its earlier ``summary.json`` holds. So a study
run on a device that is not at hand is re-read, not re-run, when the statistics change: the same
rows give today's ``summary.json`` and ``gain_vs_lc.png`` / ``.pdf``. Rows written before split seeds
existed are split seed 0.

Run as ``python benchmarks/study_from_results.py RESULTS.csv --summary OLD.json --preset NAME
[--seeds K --split-seeds S ... --steps N --finetune-epochs E] --out DIR``; the preset and the flags
give the config the study ran with (the results CSV alone does not hold it).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
from pathlib import Path

from sipt_lab.core.config_io import save_config
from sipt_lab.core.fileio import write_json_atomic
from sipt_lab.studies.lc.config import study_preset
from sipt_lab.studies.lc.gain_stats import summarise
from sipt_lab.studies.lc.transfer import draw_gain_figure

#: Columns of ``results.csv`` that hold integers and floats (empty cells are None).
INTEGER_COLUMNS, FLOAT_COLUMNS = ("level", "split_seed", "seed"), ("q", "target_lc", "lc", "value")


def read_rows(path: Path) -> list[dict]:
    """The rows of a study's ``results.csv``, typed as the study wrote them (``split_seed`` 0 where absent)."""
    rows = []
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            typed = {key: (None if value == "" else value) for key, value in row.items()}
            for key in INTEGER_COLUMNS:
                typed[key] = None if typed.get(key) is None else int(typed[key])
            for key in FLOAT_COLUMNS:
                typed[key] = None if typed[key] is None else float(typed[key])
            if "split_seed" not in row:
                typed["split_seed"] = 0
            rows.append(typed)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--summary", type=Path, required=True, help="the study's earlier summary.json")
    parser.add_argument("--preset", required=True)
    parser.add_argument("--seeds", type=int)
    parser.add_argument("--split-seeds", type=int, nargs="+")
    parser.add_argument("--steps", type=int)
    parser.add_argument("--finetune-epochs", type=int)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    fields = {"seeds": args.seeds, "split_seeds": args.split_seeds, "finetune_epochs": args.finetune_epochs}
    config = study_preset(args.preset, **{key: value for key, value in fields.items() if value is not None})
    if args.steps is not None:
        config = dataclasses.replace(config, train=dataclasses.replace(config.train, steps=args.steps))
    rows = read_rows(args.results)
    own = json.loads(args.summary.read_text(encoding="utf-8"))["encoder_consistency"]
    summary = summarise(rows, config, own)
    args.out.mkdir(parents=True, exist_ok=True)
    save_config(config, args.out / "config.json")
    write_json_atomic(args.out / "summary.json", summary)
    draw_gain_figure(args.out / "gain_vs_lc", summary)
    print(summary["verdict"])


if __name__ == "__main__":
    main()
