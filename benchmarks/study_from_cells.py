"""Summarise an LC-transfer study from the seeds its cells finished, when the run itself stopped
before its last replicate (a device's time ran out): the same rows, TF-IDF reference and summary
:func:`~sipt_lab.studies.lc.transfer.run_lc_transfer` writes, over the finished replicates
only (seeds ``0..k-1`` on every finished split seed).

Run as ``python benchmarks/study_from_cells.py STUDY_DIR --out DIR``: ``STUDY_DIR`` holds the study's
``config.json`` and ``cells/``; ``DIR`` gets ``results.csv``, ``summary.json`` and ``gain_vs_lc.png``
/ ``.pdf``, with ``config.json`` saying how many seeds and split seeds they hold.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from sipt_lab.core.config_io import load_config, save_config
from sipt_lab.studies.lc.config import LcTransferConfig
from sipt_lab.studies.lc.gain_stats import format_ci
from sipt_lab.studies.lc.transfer import write_summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    planned = load_config(LcTransferConfig, args.study / "config.json")
    results = [json.loads(path.read_text()) for path in sorted(args.study.glob("cells/*/result.json"))]
    replicates = sorted((row["split_seed"], row["seed"]) for result in results for row in result["rows"][:1])
    results.sort(key=lambda result: (result["rows"][0]["split_seed"], result["rows"][0]["seed"]))
    seeds = sorted({seed for _, seed in replicates})
    split_seeds = sorted({split_seed for split_seed, _ in replicates})
    if replicates != [(split_seed, seed) for split_seed in split_seeds for seed in range(len(seeds))]:
        raise SystemExit(
            f"the finished replicates (split seed, seed) are {replicates}; a summary needs seeds 0..k-1 on every split"
        )
    config = dataclasses.replace(planned, seeds=len(seeds), split_seeds=tuple(split_seeds))
    args.out.mkdir(parents=True, exist_ok=True)
    save_config(config, args.out / "config.json")
    summary = write_summary(args.out, config, results)
    print(f"{len(replicates)} of {planned.seeds * len(planned.split_seeds)} planned replicates; {summary['verdict']}")
    for level in summary["levels"]:
        print(f"q={level['q']:g} LC {level['lc']:.3f}: gain {level['gain']:+.3f} {format_ci(level['gain_ci'])}")


if __name__ == "__main__":
    main()
