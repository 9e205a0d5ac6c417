"""The Markdown tables of the README and the results pages, computed from the CSVs in this folder.

One function per table; :func:`markdown_table` looks them up by name. The docs build (``docs/hooks.py``)
writes each ``<!-- results-table: NAME -->`` with it, and ``tests/test_docs.py`` checks that the
README's headline table equals ``markdown_table("headline")``, so no number is typed by hand.
Standard library only: this file is read by path, not installed.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NOISE_ROW = 50.0  # the headline table's one noisy CLIQUES row (% of added edges)


def read(name: str) -> list[dict]:
    """Rows of ``name`` (a path under the repository root), numbers as floats, empty cells as NaN."""
    with open(ROOT / name, newline="", encoding="utf-8") as handle:
        return [{key: _number(value) for key, value in row.items()} for row in csv.DictReader(handle)]


def _number(text: str):
    if text == "":
        return math.nan
    try:
        return float(text)
    except ValueError:
        return text


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _ms(row: dict, name: str) -> str:
    return f"{row[f'{name}_mean']:.3f} ± {row[f'{name}_sd']:.3f}"


def _paper(row: dict) -> str:
    if math.isnan(row["paper_lm_auroc"]):
        return "—"
    return f"{row['paper_lm_auroc']:.3f} → {row['paper_sipt_auroc']:.3f}"


def _name(graph: str) -> str:
    return "MÖBIUS" if graph == "mobius" else graph.upper()


def _gain(row: dict) -> str:
    return f"{row['sipt_auroc_mean'] - row['lm_auroc_mean']:+.3f}"


def headline() -> str:
    """README: LM vs SIPT LOO 3-NN AUROC per graph family, and CLIQUES with half its edges noise."""
    rows = []
    for row in read("results/fig5a.csv"):
        rows.append(
            [
                _name(row["graph"]),
                f"{row['local_consistency_mean']:.2f}",
                _paper(row),
                _ms(row, "lm_auroc"),
                _ms(row, "sipt_auroc"),
                _gain(row),
            ]
        )
    noisy = next(row for row in read("results/fig5b.csv") if row["noise_percent"] == NOISE_ROW)
    rows.append(
        [
            f"CLIQUES, {NOISE_ROW:.0f} % noise",
            f"{noisy['local_consistency_mean']:.2f}",
            _paper(noisy),
            _ms(noisy, "lm_auroc"),
            _ms(noisy, "sipt_auroc"),
            _gain(noisy),
        ]
    )
    return _table(["graph", "LC", "paper LM → SIPT", "LM", "SIPT", "SIPT − LM"], rows)


def families() -> str:
    """Figure 5a: per family, LOO and held-out AUROC of both arms next to the paper's."""
    rows = [
        [
            _name(row["graph"]),
            f"{row['local_consistency_mean']:.3f}",
            _paper(row),
            _ms(row, "lm_auroc"),
            _ms(row, "sipt_auroc"),
            _gain(row),
            f"{row['lm_heldout_auroc_mean']:.3f} / {row['sipt_heldout_auroc_mean']:.3f}",
        ]
        for row in read("results/fig5a.csv")
    ]
    return _table(["graph", "LC", "paper LM → SIPT", "LM", "SIPT", "SIPT − LM", "held-out LM / SIPT"], rows)


def noise() -> str:
    """Figure 5b: CLIQUES at each rate of added edges."""
    rows = [
        [
            f"{row['noise_percent']:.0f} %",
            f"{row['local_consistency_mean']:.3f}",
            _paper(row),
            _ms(row, "lm_auroc"),
            _ms(row, "sipt_auroc"),
            _gain(row),
        ]
        for row in read("results/fig5b.csv")
    ]
    return _table(["noise (added edges)", "LC", "paper LM → SIPT", "LM", "SIPT", "SIPT − LM"], rows)


def lc_transfer(path: str = "benchmarks/results/lc_transfer_reduced_4seeds.csv") -> str:
    """An LC-transfer study's CSV at ``path``: per dial level, mean LC over seeds, SIPT's held-out 3-NN
    AUROC, and its paired gains over LM-only in 3-NN AUROC and in probe macro-F1."""
    rows = read(path)
    by_arm = defaultdict(dict)
    for row in rows:
        if row["arm"] in ("lm", "init"):
            by_arm[row["arm"]][(row["seed"], row["metric"])] = row["value"]
    levels = defaultdict(list)
    for row in rows:
        if row["arm"] == "sipt":
            levels[row["q"]].append(row)
    out = []
    for q, cells in sorted(levels.items()):
        auroc = [cell for cell in cells if cell["metric"] == "knn_auroc"]
        gains = {
            metric: [c["value"] - by_arm["lm"][(c["seed"], metric)] for c in cells if c["metric"] == metric]
            for metric in ("knn_auroc", "probe_macro_f1")
        }
        out.append(
            [
                f"{q:.2f}",
                f"{statistics.mean(c['lc'] for c in auroc):.3f}",
                f"{statistics.mean(c['value'] for c in auroc):.3f}",
                f"{statistics.mean(gains['knn_auroc']):+.3f}",
                f"{statistics.mean(gains['probe_macro_f1']):+.3f}",
                str(len(auroc)),
            ]
        )
    for arm, name in (("lm", "LM-only"), ("init", "init (MiniLM)")):
        auroc = [value for (_, metric), value in by_arm[arm].items() if metric == "knn_auroc"]
        out.append([name, "—", f"{statistics.mean(auroc):.3f}", "—", "—", str(len(auroc))])
    header = ["q (dial)", "LC", "held-out 3-NN AUROC", "SIPT − LM-only (3-NN AUROC)", "(probe macro-F1)", "seeds"]
    return _table(header, out)


def noise_paper_preset() -> str:
    """Figure 5b at the paper's own settings (``--preset paper``)."""
    rows = [
        [
            f"{row['noise_percent']:.0f} %",
            f"{row['local_consistency_mean']:.3f}",
            _paper(row),
            _ms(row, "lm_auroc"),
            _ms(row, "sipt_auroc"),
            _gain(row),
        ]
        for row in read("results/fig5b_paper_preset.csv")
    ]
    return _table(["noise (added edges)", "LC", "paper LM → SIPT", "LM", "SIPT", "SIPT − LM"], rows)


HIGH_LC = 0.8  # "the topic task has high LC over G_PT"


def verdicts() -> str:
    """The paper's three semi-synthetic claims, each checked against ``fig5a.csv`` / ``fig5b.csv``."""
    fams = read("results/fig5a.csv")
    gain = {row["graph"]: row["sipt_auroc_mean"] - row["lm_auroc_mean"] for row in fams}
    high = [row["graph"] for row in fams if row["local_consistency_mean"] >= HIGH_LC]
    beaten = [graph for graph in high if gain[graph] > 0]
    noisy = read("results/fig5b.csv")
    gains = [row["sipt_auroc_mean"] - row["lm_auroc_mean"] for row in noisy]
    gone = gains[-1] <= 0 and all(a >= b for a, b in zip(gains, gains[1:]))
    lines = [
        f"- SIPT beats LM on every graph where the topic task has high LC (≥ {HIGH_LC}): "
        f"**{'holds' if beaten == high else 'does not hold'}** ({len(beaten)} of {len(high)}: "
        + ", ".join(f"{_name(g)} {gain[g]:+.3f}" for g in high)
        + ").",
        f"- SIPT does not beat LM on STRUCTURAL (LC {next(r for r in fams if r['graph'] == 'structural')['local_consistency_mean']:.2f}): "
        f"**{'holds' if gain['structural'] <= 0 else 'does not hold'}** (SIPT − LM {gain['structural']:+.3f}).",
        "- SIPT's advantage shrinks with noise and is gone at 50 %: "
        f"**{'holds' if gone else 'does not hold'}** ("
        + ", ".join(f"{row['noise_percent']:.0f} % {g:+.3f}" for row, g in zip(noisy, gains))
        + ").",
    ]
    return "\n".join(lines)


def _format(value, column: str) -> str:
    if isinstance(value, str):
        return value
    if math.isnan(value):
        return "—"
    if column in {"nodes", "n_nodes", "steps", "n_seeds", "seeds", "n_heldout", "batch_size", "passes"}:
        return f"{value:,.0f}"
    if column.endswith("_p") or column == "p_value":
        return f"{value:.2f}" if value >= 0.01 else f"{value:.1e}"
    return f"{value:+.3f}" if column.startswith("rre") else f"{value:.3f}"


def csv_table(name: str) -> str:
    """Any CSV under the repository as a table: ``X_mean`` + ``X_sd`` become one ``mean ± sd`` column."""
    rows = read(name)
    columns = list(rows[0])
    shown = [c for c in columns if not (c.endswith("_sd") and c[:-3] + "_mean" in columns)]
    header = [c[:-5] if c.endswith("_mean") else c for c in shown]
    body = []
    for row in rows:
        cells = []
        for column in shown:
            text = _format(row[column], column)
            sd = column[:-5] + "_sd"
            if column.endswith("_mean") and sd in row and not math.isnan(row[sd]):
                text += f" ± {row[sd]:.3f}"
            cells.append(text.replace("|", "\\|"))
        body.append(cells)
    return _table(header, body)


TABLES = {
    "headline": headline,
    "families": families,
    "noise": noise,
    "noise-paper-preset": noise_paper_preset,
    "verdicts": verdicts,
    "lc-transfer": lc_transfer,
    "lc-transfer-gpu-wiki": lambda: lc_transfer("results/lc_transfer_gpu_wiki.csv"),
    "lc-transfer-cpu": lambda: lc_transfer("results/lc_transfer_cpu.csv"),
}


def markdown_table(name: str) -> str:
    """The table ``name`` of :data:`TABLES` as Markdown; ``csv:PATH`` renders the CSV at ``PATH`` as it is."""
    if name.startswith("csv:"):
        return csv_table(name[4:])
    return TABLES[name]()


if __name__ == "__main__":
    import sys

    unknown = [name for name in sys.argv[1:] if name not in TABLES and not name.startswith("csv:")]
    if unknown:
        sys.exit(f"tables.py: unknown table {unknown[0]!r}; choose from {', '.join(TABLES)} or csv:PATH")
    for name in sys.argv[1:] or TABLES:
        print(f"{name}:\n{markdown_table(name)}\n")
