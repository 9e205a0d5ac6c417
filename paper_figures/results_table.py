"""Print the README's results table: the paper's numbers next to ours, with the verdicts.

Reads ``fig5a.csv`` and ``fig5b.csv`` from ``paper_figures/out`` (make them first with
``sipt-lab figures --only fig5a fig5b``) and prints Markdown. Run:
``python paper_figures/results_table.py [--out DIR]``.
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

from sipt_lab.studies.paper.values import STRUCTURAL_AUROC

HIGH_LC = 0.8  # "the topic task has high LC over G_PT"
NOISE_GONE = 0.5  # the rate at which the paper's SIPT advantage is gone


def read(path: Path) -> list[dict[str, float | str]]:
    with open(path, newline="") as handle:
        return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(handle)]


def _number(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def _cell(row: dict, arm: str) -> str:
    return f"{row[f'{arm}_auroc_mean']:.3f} ± {row[f'{arm}_auroc_sd']:.3f}"


def _paper(row: dict) -> str:
    if math.isnan(row["paper_lm_auroc"]):
        return "—"
    return f"{row['paper_lm_auroc']:.3f} → {row['paper_sipt_auroc']:.3f}"


def family_table(rows: list[dict]) -> list[str]:
    lines = [
        "| graph | LC | paper LM → SIPT | ours LM | ours SIPT | SIPT − LM | ours held-out LM / SIPT |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        gain = row["sipt_auroc_mean"] - row["lm_auroc_mean"]
        lines.append(
            f"| {row['graph'].upper()} | {row['local_consistency_mean']:.3f} | {_paper(row)} | {_cell(row, 'lm')} "
            f"| {_cell(row, 'sipt')} | {gain:+.3f} | {row['lm_heldout_auroc_mean']:.3f} / {row['sipt_heldout_auroc_mean']:.3f} |"
        )
    return lines


def noise_table(rows: list[dict]) -> list[str]:
    lines = [
        "| noise (added edges) | LC | paper LM → SIPT | ours LM | ours SIPT | SIPT − LM |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['noise_percent']:.0f} % | {row['local_consistency_mean']:.3f} | {_paper(row)} | {_cell(row, 'lm')} "
            f"| {_cell(row, 'sipt')} | {row['sipt_auroc_mean'] - row['lm_auroc_mean']:+.3f} |"
        )
    return lines


def verdicts(families: list[dict], noise: list[dict]) -> list[str]:
    gain = {row["graph"]: row["sipt_auroc_mean"] - row["lm_auroc_mean"] for row in families}
    high = [row["graph"] for row in families if row["local_consistency_mean"] >= HIGH_LC]
    beaten = [g for g in high if gain[g] > 0]
    lines = [
        f"- SIPT beats LM on every graph where the topic task has high LC (≥ {HIGH_LC}): "
        f"**{'holds' if beaten == high else 'does not hold'}** ({len(beaten)} of {len(high)}: "
        + ", ".join(f"{g.upper()} {gain[g]:+.3f}" for g in high)
        + ")."
    ]
    if "structural" in gain:
        lines.append(
            f"- SIPT does not beat LM on STRUCTURAL (paper, with structure-following features: "
            f"LM {STRUCTURAL_AUROC[0]:.3f} → SIPT {STRUCTURAL_AUROC[1]:.3f}): "
            f"**{'holds' if gain['structural'] <= 0.02 else 'does not hold'}** (SIPT − LM {gain['structural']:+.3f})."
        )
    by_rate = {row["noise"]: row["sipt_auroc_mean"] - row["lm_auroc_mean"] for row in noise}
    if by_rate:
        rates = sorted(by_rate)
        shrinks = by_rate[rates[-1]] < by_rate[rates[0]]
        gone = by_rate.get(NOISE_GONE, math.nan) <= 0.02
        lines.append(
            f"- SIPT's advantage shrinks with noise and is gone near {NOISE_GONE:.0%}: "
            f"**{'holds' if shrinks and gone else 'does not hold'}** ("
            + ", ".join(f"{100 * r:.0f} % {by_rate[r]:+.3f}" for r in rates)
            + ")."
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args()
    families, noise = read(args.out / "fig5a.csv"), read(args.out / "fig5b.csv")
    print("\n".join(family_table(families) + [""] + noise_table(noise) + [""] + verdicts(families, noise)))


if __name__ == "__main__":
    main()
