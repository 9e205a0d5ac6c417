"""The LC-transfer study (``sipt-lab study lc-transfer``) at a chosen scale, its table printed.

Run as ``python benchmarks/bench_study.py [--scale reduced|cpu|gpu-wiki] [--out DIR] [--csv FILE]``.

``cpu`` and ``gpu-wiki`` are the study's presets (:data:`~sipt_lab.studies.lc.config.STUDY_PRESETS`):
``cpu`` is the default CPU scale (CLIQUES over the embedded corpus, 800 pre-training and 800
never-seen sentences, 5 LC levels x 5 seeds x 2 split seeds, MiniLM, the checkpoint defaults), whose
goal is 35 minutes on 2 cores; ``reduced`` is vital-article summaries at what 2 shared cores finish in about
20 minutes, so its detectable effect is large: it is printed next to the result. The wall time is
printed beside the estimate the study made from its own timing before training (their ratio).
``--csv`` copies the study's ``results.csv`` (one row per LC level x arm x replicate x metric) there,
with the summary beside it.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import tempfile
import time
from pathlib import Path

from sipt_lab.core.fileio import write_json_atomic
from sipt_lab.studies.lc.config import STUDY_PRESETS, LcTransferConfig, metric_words, study_preset
from sipt_lab.studies.lc.gain_stats import crossover_words, format_ci
from sipt_lab.studies.lc.transfer import run_lc_transfer
from sipt_lab.training.defaults import train_config

#: The reduced scale: (LcTransferConfig fields, TrainConfig fields).
REDUCED = (
    {"n_pretrain": 128, "n_train": 96, "n_validation": 32, "n_test": 96, "seeds": 2},
    {"steps": 20, "head_warmup": 20},
)


def scale_config(scale: str, init: str, device: str, seeds: int | None) -> LcTransferConfig:
    """The study of ``scale`` (a preset name or ``reduced``) with ``init`` on ``device``."""
    extra = {} if seeds is None else {"seeds": seeds}
    if scale in STUDY_PRESETS:
        config = study_preset(scale, init=init, **extra)
        return dataclasses.replace(config, train=dataclasses.replace(config.train, device=device))
    fields, train = REDUCED
    kind = "checkpoint" if init != "char" else "char"
    return LcTransferConfig(
        init=init,
        train=train_config(kind, batch_size=16, max_len=64, device=device, **train),
        **(fields | extra),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=[*STUDY_PRESETS, "reduced"], default="reduced")
    parser.add_argument("--init", default="minilm")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", help="the study's directory (default: a temporary one)")
    parser.add_argument("--csv", help="copy results.csv here (and the summary as <stem>.summary.json)")
    parser.add_argument("--seeds", type=int, help="seeds instead of the scale's")
    args = parser.parse_args()
    config = scale_config(args.scale, args.init, args.device, args.seeds)
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(args.out or Path(scratch) / "study")
        start = time.perf_counter()
        summary = run_lc_transfer(config, out, log=lambda line: print(line) or lines.append(line))
        minutes = (time.perf_counter() - start) / 60
        estimate = next(float(m.group(1)) for line in lines if (m := re.match(r"estimated time: ([\d.]+) min", line)))
        print(
            f"\n{args.scale} scale, init {args.init}: {config.n_pretrain} pre-training + "
            f"{config.n_train}/{config.n_validation}/{config.n_test} never-seen samples, {len(config.levels)} levels x "
            f"{config.seeds} seeds x {len(config.split_seeds)} split seeds, {config.train.steps} steps: {minutes:.1f} min "
            f"(estimated {estimate:.1f}; ratio {minutes / estimate:.2f})"
        )
        for name, entry in summary["metrics"].items():
            primary = " (primary)" if name == summary["metric"] else ""
            print(
                f"\n{metric_words(name, config.k)}{primary}: slope {entry['slope']:+.4f} {format_ci(entry['slope_ci'])}, "
                f"crossover {crossover_words(entry)} (Fieller; 95% CIs {summary['interval_basis']}), "
                f"{entry['crossover_undefined_share']:.0%} of replicate lines without one, detectable {entry['mde']:.4f}"
            )
            print("| q | LC (measured) | SIPT - LM-only | 95% CI | SIPT - init | SIPT - (LM-only + labels) | 95% CI |")
            print("|---|---|---|---|---|---|---|")
            for level in entry["levels"]:
                print(
                    f"| {level['q']:g} | {level['lc']:.3f} | {level['gain']:+.4f} | {format_ci(level['gain_ci'])} | "
                    f"{level['gain_over_init']:+.4f} | {level['gain_over_labels_direct']:+.4f} | "
                    f"{format_ci(level['gain_over_labels_direct_ci'])} |"
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
