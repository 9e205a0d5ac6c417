"""Print the `methods` figure's numbers as Markdown: per family, LC and each method's LOO 3-NN
AUROC (mean ± sd over seeds), its gain over LM, each method's full fine-tuning test accuracy,
LinkBERT's relation accuracy and the MLSM family's code sparsity and concept -> vocabulary probe
against the LM teacher's MLM.

Reads ``methods_cells.csv`` from ``paper_figures/out`` (make it with ``python paper_figures/methods.py``).
Run: ``python paper_figures/methods_table.py [--out DIR]``.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from sipt_lab.studies.paper.methods_figure import METHODS  # the methods the figure ran


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).parent / "out"), help="directory holding methods_cells.csv")
    cells = list(csv.DictReader(open(Path(parser.parse_args().out) / "methods_cells.csv", newline="")))
    families = list(dict.fromkeys(cell["metrics.graph"] for cell in cells))

    def values(family: str, key: str) -> np.ndarray:
        return np.array([float(c[key]) for c in cells if c["metrics.graph"] == family and c.get(key, "") != ""])

    def fmt(array: np.ndarray) -> str:
        return f"{array.mean():.3f} ± {array.std(ddof=1):.3f}" if len(array) > 1 else f"{array.mean():.3f}"

    print("| family | seeds | LC | " + " | ".join(METHODS) + " |")
    print("|---|---|---|" + "---|" * len(METHODS))
    for family in families:
        lc = values(family, "metrics.local_consistency")
        row = [fmt(values(family, f"metrics.methods.{m}.auroc")) for m in METHODS]
        print(f"| {family} | {len(lc)} | {lc.mean():.3f} | " + " | ".join(row) + " |")
    print("\ngain over LM (LOO 3-NN AUROC, mean over seeds of the paired difference):\n")
    print("| family | LC | " + " | ".join(m for m in METHODS if m != "lm") + " |")
    print("|---|---|" + "---|" * (len(METHODS) - 1))
    for family in families:
        lm = values(family, "metrics.methods.lm.auroc")
        gains = [f"{(values(family, f'metrics.methods.{m}.auroc') - lm).mean():+.3f}" for m in METHODS if m != "lm"]
        print(f"| {family} | {values(family, 'metrics.local_consistency').mean():.3f} | " + " | ".join(gains) + " |")
    print("\nfull fine-tuning, test accuracy (topic task, the same 80/10/10 splits for every method):\n")
    print("| family | " + " | ".join(METHODS) + " |")
    print("|---|" + "---|" * len(METHODS))
    for family in families:
        row = [fmt(values(family, f"metrics.methods.{m}.finetune.accuracy")) for m in METHODS]
        print(f"| {family} | " + " | ".join(row) + " |")
    print(
        "\n| family | linkbert DRP acc (chance 1/3) | linked-vs-random (chance 1/2) | codes non-zero (median) | "
        "probe acc mlsm / lsm15 / lsm | teacher MLM acc | majority token |"
    )
    print("|---|---|---|---|---|---|---|")
    for family in families:
        probes = " / ".join(
            f"{values(family, f'metrics.methods.{m}.probe.probe_accuracy').mean():.3f}"
            for m in ("mlsm", "lsm15", "lsm")
        )
        print(
            f"| {family} | {fmt(values(family, 'metrics.methods.linkbert.drp.accuracy'))} | "
            f"{fmt(values(family, 'metrics.methods.linkbert.drp.linked_vs_random'))} | "
            f"{values(family, 'metrics.methods.mlsm.concepts.nonzero_median').mean():.1f} | {probes} | "
            f"{values(family, 'metrics.methods.mlsm.probe.mlm_accuracy').mean():.3f} | "
            f"{values(family, 'metrics.methods.mlsm.probe.majority_accuracy').mean():.3f} |"
        )


if __name__ == "__main__":
    main()
