"""The LC-transfer study (``sipt-lab study lc-transfer``) at a chosen scale, its table printed.

Run as ``python benchmarks/bench_study.py [--scale reduced|cpu] [--out DIR] [--csv FILE]``.

``cpu`` is the issue's default CPU scale (vital-article summaries, 1,000 pre-training and 1,000
never-seen articles, 5 LC levels × 5 seeds, MiniLM, the checkpoint defaults); ``reduced`` is what
2 shared cores finish in about 20 minutes (fewer samples, steps, head warm-up steps and seeds), so
its detectable effect is large: it is printed next to the result. ``--csv`` copies the study's
``results.csv`` (one row per LC level × arm × seed × metric) there, with the summary beside it.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from sipt_lab.core.fileio import write_json_atomic
from sipt_lab.experiments.study.lc_transfer import run_lc_transfer
from sipt_lab.experiments.study.study_config import LcTransferConfig
from sipt_lab.training.defaults import train_config

#: Scale name -> (LcTransferConfig fields, TrainConfig fields).
SCALES = {
    "cpu": ({"n_pretrain": 1000, "n_train": 500, "n_validation": 100, "n_test": 400, "seeds": 5}, {"steps": 100}),
    "reduced": (
        {"n_pretrain": 128, "n_train": 96, "n_validation": 32, "n_test": 96, "seeds": 2},
        {"steps": 20, "head_warmup": 20},
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=SCALES, default="reduced")
    parser.add_argument("--init", default="minilm")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", help="the study's directory (default: a temporary one)")
    parser.add_argument("--csv", help="copy results.csv here (and the summary as <stem>.summary.json)")
    parser.add_argument("--seeds", type=int, help="seeds instead of the scale's")
    args = parser.parse_args()
    fields, train = SCALES[args.scale]
    fields = fields | ({} if args.seeds is None else {"seeds": args.seeds})
    config = LcTransferConfig(
        init=args.init,
        train=train_config(
            "checkpoint" if args.init != "char" else "char", batch_size=16, max_len=64, device=args.device, **train
        ),
        **fields,
    )
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(args.out or Path(scratch) / "study")
        start = time.perf_counter()
        summary = run_lc_transfer(config, out)
        minutes = (time.perf_counter() - start) / 60
        print(f"\n{args.scale} scale, init {args.init}: {fields} steps {config.train.steps}, {minutes:.1f} min")
        print(
            f"| q | LC (measured) | SIPT - LM-only {summary['metric']} | 95% CI | SIPT - init |\n|---|---|---|---|---|"
        )
        for level in summary["levels"]:
            low, high = level["gain_ci"]
            print(
                f"| {level['q']:g} | {level['lc']:.3f} | {level['gain']:+.3f} | [{low:+.3f}, {high:+.3f}] | {level['gain_over_init']:+.3f} |"
            )
        print("\n| arm | " + " | ".join(next(iter(summary["arms"].values()))) + " |")
        for arm, metrics in summary["arms"].items():
            print(
                f"| {arm if arm != 'sipt' else 'sipt (mean over levels)'} | "
                + " | ".join(f"{value:.3f}" for value in metrics.values())
                + " |"
            )
        print(f"\n{summary['verdict']}")
        if args.csv:
            shutil.copyfile(out / "results.csv", args.csv)
            write_json_atomic(Path(args.csv).with_suffix(".summary.json"), summary)


if __name__ == "__main__":
    main()
