"""The Markdown tables of the README and the results pages, computed from the CSVs in this folder.

One function per table; :func:`markdown_table` looks them up by name, and ``tests/unit/test_docs.py``
checks that the README's headline table equals ``markdown_table("headline")``, so no number is typed
by hand. The README's results prose sits in ``<!-- results-text: NAME -->`` blocks and the docs
pages' tables in ``<!-- results-table: NAME -->`` blocks, both committed rendered (GitHub shows
them) and re-rendered by ``python results/tables.py --write FILE...`` and by the docs build
(``docs/hooks.py``); ``tests/unit/test_docs.py`` checks that every block holds what it renders now. Standard library only: this file is read by path, not installed.
"""

from __future__ import annotations

import csv
import json
import math
import re
import textwrap
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


def _paired(row: dict, metric: str) -> str:
    """A metric's mean paired SIPT − LM gain over seeds and its 95 % interval (``heldout_scale.csv``)."""
    low, high = row[f"gain_{metric}_ci_low"], row[f"gain_{metric}_ci_high"]
    interval = "" if math.isnan(low) else f" [{low:+.3f}, {high:+.3f}]"
    return f"{row[f'gain_{metric}_mean']:+.3f}{interval}"


def heldout_scale() -> str:
    """Held-out gain vs the size of G_PT: per family and size, the training budget, LOO AUROC, and the
    held-out 3-NN AUROC and probe macro-F1 of both arms with their paired gains (95 % CI over seeds)."""
    rows = [
        [
            _name(row["graph"]),
            f"{row['n_nodes']:,.0f}",
            f"{row['steps']:,.0f}",
            f"{row['passes']:.3g}",
            f"{row['lm_auroc_mean']:.3f} / {row['sipt_auroc_mean']:.3f}",
            _ms(row, "lm_heldout_auroc"),
            _ms(row, "sipt_heldout_auroc"),
            _paired(row, "heldout_auroc"),
            _ms(row, "lm_probe_macro_f1"),
            _ms(row, "sipt_probe_macro_f1"),
            _paired(row, "probe_macro_f1"),
        ]
        for row in read("results/heldout_scale.csv")
    ]
    header = [
        "graph",
        "nodes",
        "steps",
        "passes per sample",
        "LOO AUROC LM / SIPT",
        "held-out AUROC LM",
        "SIPT",
        "SIPT − LM [95 % CI]",
        "probe macro-F1 LM",
        "SIPT",
        "SIPT − LM [95 % CI]",
    ]
    return _table(header, rows)


def heldout_scale_reading() -> str:
    """What ``heldout_scale.csv`` says per family: the paired held-out AUROC gain at every size and the
    probe's at the largest, with their intervals and the training budget."""
    rows = read("results/heldout_scale.csv")
    parts = []
    for graph in dict.fromkeys(row["graph"] for row in rows):
        family = sorted((row for row in rows if row["graph"] == graph), key=lambda row: row["n_nodes"])
        largest = family[-1]
        gains = ", ".join(f"{_paired(row, 'heldout_auroc')} at {row['n_nodes']:,.0f} nodes" for row in family)
        parts.append(
            f"On {_name(graph)} SIPT − LM in held-out 3-NN AUROC is {gains}; at {largest['n_nodes']:,.0f} nodes the "
            f"held-out probe's macro-F1 gains {_paired(largest, 'probe_macro_f1')} ({largest['steps']:,.0f} steps, "
            f"{largest['passes']:.3g} passes per pre-training sample)."
        )
    return " ".join(parts) + " Each gain is paired by seed, with a Student-t 95 % interval over the seeds."


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


def _summary(path: str) -> dict:
    """The JSON at ``path`` (under the repository root)."""
    return json.loads((ROOT / path).read_text(encoding="utf-8"))


def _ci(ci) -> str:
    return "n/a" if ci is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def _significance(ci) -> str:
    """Whether a 95 % interval excludes 0, in words."""
    if ci is None:
        return "no interval"
    return "includes 0" if ci[0] <= 0 <= ci[1] else "excludes 0"


def _crossing(entry: dict) -> str:
    """Where a metric's line crosses zero, with Fieller's interval wherever the point lies."""
    ci = entry["crossover_ci"]
    point = "point estimate outside [0, 1]" if entry["crossover_lc"] is None else f"{entry['crossover_lc']:.3f}"
    if ci is None:
        return f"{point} (CI unbounded)"
    return (
        f"{point} (CI [{ci[0]:.3f}, {ci[1]:.3f}])"
        if entry["crossover_lc"] is None
        else f"{point} [{ci[0]:.3f}, {ci[1]:.3f}]"
    )


def lc_transfer_levels(path: str) -> str:
    """An LC-transfer study's ``summary.json`` at ``path``: per dial level, the measured LC and SIPT's
    paired gains in the study's primary metric over LM-only, the init and LM-only given the dial's
    labels (labels-direct), with 95 % Student-t intervals over replicates (their basis in the header:
    split-clustered, or one split)."""
    summary = _summary(path)
    direct = "gain_over_labels_direct" in summary["levels"][0]
    ci = f"95 % CI ({summary['interval_basis']})"
    header = ["q (dial)", "LC", f"SIPT − LM-only ({summary['metric_name']})", ci, "SIPT − init"]
    header += ["SIPT − (LM-only + dial labels)", ci] if direct else []
    rows = []
    for level in summary["levels"]:
        row = [f"{level['q']:.2f}", f"{level['lc']:.3f}", f"{level['gain']:+.3f}", _ci(level["gain_ci"])]
        row.append(f"{level['gain_over_init']:+.3f}")
        if direct:
            row += [f"{level['gain_over_labels_direct']:+.3f}", _ci(level["gain_over_labels_direct_ci"])]
        rows.append(row)
    return _table(header, rows)


def lc_transfer_metrics(path: str) -> str:
    """An LC-transfer study's ``summary.json`` at ``path``: per metric (the primary first), the slope
    of the gain against LC with its t-interval, where the line crosses zero with Fieller's interval,
    the share of replicates whose own line does not cross in [0, 1], the random control's gain and
    the gain at the top dial level, each with its 95 % interval (their basis in the header)."""
    summary = _summary(path)
    order = [summary["metric"]] + [name for name in summary["metrics"] if name != summary["metric"]]
    rows = []
    for name in order:
        entry = summary["metrics"][name]
        top = entry["levels"][max(range(len(entry["levels"])), key=lambda i: entry["levels"][i]["q"])]
        rows.append(
            [
                entry["metric_name"] + (" (primary)" if name == summary["metric"] else ""),
                f"{entry['slope']:+.3f} {_ci(entry['slope_ci'])}",
                _crossing(entry),
                f"{entry['crossover_undefined_share']:.0%}",
                f"{entry['control_gain']:+.3f} {_ci(entry['control_gain_ci'])}",
                f"{top['gain']:+.3f} {_ci(top['gain_ci'])}",
            ]
        )
    basis = summary["interval_basis"]
    header = [
        "metric",
        f"slope per unit LC [95 % CI, {basis}]",
        "crossover LC [Fieller 95 % CI, the same basis]",
        "replicate lines without one",
    ]
    return _table(header + ["random control (q = 0)", "gain at q = 1"], rows)


def _trend(entry: dict) -> str:
    ci = entry["slope_ci"]
    if ci is None:
        return "has no interval at this number of replicates"
    if ci[0] > 0:
        return "rises with the graph's LC"
    return "falls with the graph's LC" if ci[1] < 0 else "shows no trend the replicates can tell from none"


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _answer(s: dict, top: dict) -> str:
    """The study's answer at LC 1 in one sentence, from the primary metric's intervals."""
    ci = top["gain_ci"]
    if ci is None:
        answer = "With too few replicates for an interval, the study answers nothing yet"
    elif ci[0] > 0:
        answer = "SIPT helps never-seen samples over a graph consistent with the task"
    elif ci[1] < 0:
        answer = "SIPT costs never-seen samples even over the task's own cliques"
    else:
        answer = (
            f"At this scale SIPT does not measurably help never-seen samples even over the task's own cliques "
            f"(a measured no: the replicates detect {s['mde']:.3f})"
        )
    direct = top.get("gain_over_labels_direct_ci")
    if "gain_over_labels_direct" not in top:
        answer += " (this run has no labels-direct arm: whether the graph's labels used directly do as well is open)"
    elif direct is not None and direct[1] < 0:
        answer += ", and a user who holds the graph's labels does better using them directly"
    return answer + "."


def lc_transfer_reading(path: str) -> str:
    """What an LC-transfer study's ``summary.json`` at ``path`` says, in words and its own numbers:
    the primary metric's trend, crossover against the encoder's own consistency, the gain at LC 1
    over LM-only and over the labels-direct baseline, the control per metric, every metric's
    crossover, the detectable effect and the multiplicity."""
    s = _summary(path)
    top = max(s["levels"], key=lambda level: level["q"])
    crossing = (
        (
            "does not cross zero for LC in [0, 1] (point estimate outside [0, 1]; "
            if s["crossover_lc"] is None
            else f"crosses zero at LC {s['crossover_lc']:.3f} ("
        )
        + (
            "its Fieller interval unbounded"
            if s["crossover_ci"] is None
            else f"Fieller 95 % CI [{s['crossover_ci'][0]:.3f}, {s['crossover_ci'][1]:.3f}]"
        )
        + f"; {s['crossover_undefined_share']:.0%} of the replicates' own lines do not cross in [0, 1])"
    )
    text = (
        f"On never-seen samples ({s['dataset']}; {_count(s['seeds'], 'seed')} × {_count(len(s['split_seeds']), 'split seed')} "
        f"= {s['replicates']} replicates; 95 % CIs: {s['interval_basis']}), SIPT's gain over LM-only in {s['metric_name']}, the pre-registered metric, "
        f"{_trend(s)}: slope {s['slope']:+.3f} per unit LC, 95 % CI {_ci(s['slope_ci'])}. Its line {crossing}; the "
        f"encoder's own {s['k']}-NN consistency over the same pre-training samples is {s['encoder_consistency']:.3f}. "
        f"At LC {top['lc']:.2f} (q = 1) the gain is {top['gain']:+.3f} {_ci(top['gain_ci'])} "
        f"({_significance(top['gain_ci'])})"
    )
    if "gain_over_labels_direct" in top:
        text += (
            f", and over LM-only given the dial's labels directly {top['gain_over_labels_direct']:+.3f} "
            f"{_ci(top['gain_over_labels_direct_ci'])} ({_significance(top['gain_over_labels_direct_ci'])})"
        )
    controls = ", ".join(
        f"{entry['metric_name']} {entry['control_gain']:+.3f} {_ci(entry['control_gain_ci'])}"
        for entry in s["metrics"].values()
    )
    crossovers = ", ".join(f"{entry['metric_name']} {_crossing(entry)}" for entry in s["metrics"].values())
    multiplicity = s["multiplicity"]
    text += ". " + _answer(s, top)
    text += (
        f" The random control (q = 0) gains {controls}. Crossovers by metric: {crossovers}. The replicates detect "
        f"a gain of {s['mde']:.3f} in the primary metric (paired t-test, power 0.8); the study makes "
        f"{multiplicity['comparisons']} comparisons ({multiplicity['levels']} levels × {multiplicity['metrics']} "
        "metrics), whose intervals are not adjusted: only the primary metric's are confirmatory."
    )
    return text


def table2_reading(path: str = "results/table2_wiki_gpu.csv") -> str:
    """What Table 2's wiki row at ``path`` says: each evaluation's RRE against LM-only, its p and what
    its seeds could detect."""
    parts = []
    for row in read(path):
        if row["status"] != "ok":
            continue
        verdict = "significant" if row["p_value"] < 0.05 else "not significant"
        parts.append(
            f"{row['evaluation']} {100 * row['rre_mean']:+.1f} % ± {100 * row['rre_sd']:.1f} RRE against {row['baseline']} "
            f"(p = {row['p_value']:.2f}, {verdict}; {row['n_seeds']:.0f} seeds detect only a mean RRE beyond "
            f"±{100 * row['detectable_rre']:.0f} %)"
        )
    return (
        "SIPT over `mentions`: "
        + "; ".join(parts)
        + ". Underpowered: a measured no-difference, not a measured no-effect."
    )


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


def headline_reading() -> str:
    """README: what the headline table, the held-out scale, both LC-transfer studies and Table 2's
    wiki row say, each number read from its committed file."""
    fams = read("results/fig5a.csv")
    gain = {row["graph"]: row["sipt_auroc_mean"] - row["lm_auroc_mean"] for row in fams}
    high = [row["graph"] for row in fams if row["local_consistency_mean"] >= HIGH_LC]
    structural = next(row for row in fams if row["graph"] == "structural")
    noisy = read("results/fig5b.csv")[-1]
    paper = read("results/fig5b_paper_preset.csv")[-1]
    scale = {(row["graph"], row["n_nodes"]): row for row in read("results/heldout_scale.csv")}
    cliques = scale[max(key for key in scale if key[0] == "cliques")]
    torus = scale[max(key for key in scale if key[0] == "torus")]
    cpu, gpu = _summary("results/lc_transfer_cpu.summary.json"), _summary("results/lc_transfer_gpu_wiki.summary.json")
    cpu_top = max(cpu["levels"], key=lambda level: level["q"])
    gpu_top = max(gpu["levels"], key=lambda level: level["q"])
    controls = ", ".join(
        f"{entry['metric_name']} {entry['control_gain']:+.3f} {_ci(entry['control_gain_ci'])}"
        for name, entry in gpu["metrics"].items()
        if entry["control_gain_ci"] is not None and not entry["control_gain_ci"][0] <= 0 <= entry["control_gain_ci"][1]
    )
    t2 = next(
        row for row in read("results/table2_wiki_gpu.csv") if row["evaluation"] == "full" and row["status"] == "ok"
    )

    def crossovers(summary: dict) -> str:
        return ", ".join(f"{entry['metric_name']} {_crossing(entry)}" for entry in summary["metrics"].values())

    def held_out(row: dict) -> str:
        return (
            f"{row['lm_heldout_auroc_mean']:.3f} → {row['sipt_heldout_auroc_mean']:.3f} (paired gain "
            f"{_paired(row, 'heldout_auroc')}, {row['steps']:,.0f} steps)"
        )

    return (
        f"On the pre-training samples (the paper's setting) SIPT beats LM on {sum(gain[g] > 0 for g in high)} of the "
        f"{len(high)} graphs where the topic task's LC is at least {HIGH_LC} and not on STRUCTURAL (LC "
        f"{structural['local_consistency_mean']:.2f}, {gain['structural']:+.3f}), as Theorem 1 predicts; on CLIQUES its "
        f"advantage shrinks with edge noise to {noisy['sipt_auroc_mean'] - noisy['lm_auroc_mean']:+.3f} at "
        f"{noisy['noise_percent']:.0f} % at sipt-lab's defaults and {paper['sipt_auroc_mean'] - paper['lm_auroc_mean']:+.3f} "
        f"at the paper's settings. On sentences of articles it never pre-trained on, held-out 3-NN AUROC LM → SIPT is "
        f"{held_out(cliques)} on CLIQUES at {cliques['n_nodes']:,.0f} nodes and {held_out(torus)} on TORUS at "
        f"{torus['n_nodes']:,.0f} (`results/heldout_scale.csv`).\n\n"
        f"**Will SIPT help samples it never saw?** The LC-transfer study (`sipt-lab study lc-transfer`, grouped "
        f"splits, {cpu['metric_name']} pre-registered) at the CPU scale ({cpu['replicates']} replicates: "
        f"{cpu['seeds']} seeds × {len(cpu['split_seeds'])} splits; 95 % CIs: {cpu['interval_basis']}; "
        f"`results/lc_transfer_cpu.summary.json`): slope "
        f"{cpu['slope']:+.3f} per unit LC {_ci(cpu['slope_ci'])}; at LC 1 the gain over LM-only is {cpu_top['gain']:+.3f} "
        f"{_ci(cpu_top['gain_ci'])} ({_significance(cpu_top['gain_ci'])}) and over LM-only given the graph's labels "
        f"directly {cpu_top['gain_over_labels_direct']:+.3f} {_ci(cpu_top['gain_over_labels_direct_ci'])}; the "
        f"encoder's own 3-NN consistency is {cpu['encoder_consistency']:.3f} and the crossovers are {crossovers(cpu)}. "
        f"On the full wiki corpus on a GPU ({gpu['replicates']} seeds; 95 % CIs: {gpu['interval_basis']}; before the "
        "labels-direct arm; "
        f"`results/lc_transfer_gpu_wiki.summary.json`): at LC 1 {gpu['metric_name']} {gpu_top['gain']:+.3f} "
        f"{_ci(gpu_top['gain_ci'])}; crossovers {crossovers(gpu)}, against the encoder's own consistency "
        f"{gpu['encoder_consistency']:.3f}; the random graph costs {controls}. The crossovers differ by metric, so no "
        f"single LC threshold is claimed. Table 2's wiki row on one H100 ({t2['n_seeds']:.0f} seeds, "
        f"`results/table2_wiki_gpu.csv`): SIPT over `mentions` changes the error after full fine-tuning by "
        f"{100 * t2['rre_mean']:+.1f} % RRE (p = {t2['p_value']:.2f}): not significant and underpowered, as "
        f"{t2['n_seeds']:.0f} seeds detect only |RRE| above {100 * t2['detectable_rre']:.0f} %.\n\n"
        f"{atlas_line()}"
    )


def atlas_line() -> str:
    """README: the atlas and `advise` in one paragraph, at the atlas's longest budget (one pass)."""
    rows, fit = _atlas()
    regime = fit["regime"]
    budget = max(regime["budgets"])
    natural = [row for row in rows if row["kind"] == "natural" and _known(row["lc"]) and row["steps"] == budget]
    raw = sum(_known(row["gain_p"]) and row["gain_p"] < 0.05 for row in natural)
    holm = sum(row["holm_significant"] == "True" for row in natural)
    errors = _grouped_errors(fit, budget)
    coverage = _coverage(fit, budget, "graph")
    return (
        f"**Can LC tell beforehand?** The atlas (`results/lc_atlas.csv`) pre-trained {regime['init']} on "
        f"{_languages(regime)} vital-article summaries, {regime['n_pretrain']} crawled articles per draw, at "
        f"{_budgets(regime)} steps of {regime['batch_size']} samples x {regime['max_len']} tokens ({budget} steps is "
        f"one pass), and scored {len(natural)} natural (graph, task) pairs with LC "
        f"{min(row['lc'] for row in natural):.2f} to {max(row['lc'] for row in natural):.2f} on never-seen articles. "
        f"At {budget} steps SIPT's gain over LM-only is distinguishable from zero on {raw} pairs ({holm} after Holm's "
        f"adjustment). Left out by whole graph, task and language, "
        + (
            f"no predictor that reads LC beats predicting {fit['model_words']}: one run's gain is missed by {errors[fit['model']]:.3f} "
            f"on average predicting {fit['model_words']} and by {errors['lc']:.3f} with LC alone, so `sipt-lab advise` "
            "says that LC does not tell in this regime; "
            if fit["model"] in ("zero", "mean", "lc-sign")
            else f"the shipped predictor ({fit['model']}: {fit['model_words']}) errs on one run by "
            f"{errors[fit['model']]:.3f} on average, against {errors['zero']:.3f} for predicting no gain and "
            f"{errors['lc']:.3f} for LC alone; "
        )
        + f"its {fit['level']:.0%} single-run intervals hold {coverage[0]:.0%} [{coverage[1]:.0%}, {coverage[2]:.0%}] of the "
        f"runs of a left-out graph (the atlas's {regime['replicates']} draws per language leave each pair's test "
        f"{regime['replicates'] - 1} degree(s) of freedom). "
        "`sipt-lab advise` prints this regime with every prediction."
    )


#: The atlas's metrics in words.
METRIC_NAMES = {"knn_accuracy": "3-NN accuracy", "knn_auroc": "3-NN macro AUROC"}
#: Validation schemes in words.
SCHEME_WORDS = {"pair": "pair", "graph": "graph", "task": "task", "language": "language"}


def _atlas() -> tuple[list[dict], dict]:
    return read("results/lc_atlas.csv"), json.loads((ROOT / "results/lc_atlas_fit.json").read_text(encoding="utf-8"))


def _languages(regime: dict) -> str:
    names = {"en": "English", "fr": "French"}
    return " and ".join(names.get(language, language) for language in regime["languages"])


def _budgets(regime: dict) -> str:
    budgets = [str(b) for b in regime["budgets"]]
    return ", ".join(budgets[:-1]) + f" and {budgets[-1]}" if len(budgets) > 1 else budgets[0]


def _grouped_errors(fit: dict, budget: int) -> dict[str, float]:
    """Model -> its single-run error at ``budget``, averaged over the whole-group schemes."""
    rows = [row for row in fit["validation"] if row["steps"] == budget and row["scheme"] != "pair"]
    models = dict.fromkeys(row["model"] for row in rows)
    return {m: sum(r["mae"] for r in rows if r["model"] == m) / sum(r["model"] == m for r in rows) for m in models}


def _coverage(fit: dict, budget: int, scheme: str) -> tuple[float, float, float]:
    row = next(r for r in fit["validation"] if (r["steps"], r["scheme"], r["model"]) == (budget, scheme, fit["model"]))
    return row["coverage"], row["coverage_low"], row["coverage_high"]


def _known(value) -> bool:
    return isinstance(value, float) and not math.isnan(value)


def _bounds(low, high, digits: int = 3) -> str:
    return f"[{low:+.{digits}f}, {high:+.{digits}f}]" if _known(low) else "n/a"


def lc_atlas() -> str:
    """docs: every natural and control pair of the atlas at its longest budget: LC, the encoder's
    own consistency, the measured gain over LM-only with its interval, p-value and Holm's verdict."""
    rows, fit = _atlas()
    budget = max(fit["regime"]["budgets"])
    chosen = [row for row in rows if row["steps"] == budget and row["kind"] != "dial"]
    body = [
        [
            f"{row['language']} {row['task']}",
            row["graph"] + (" (control)" if row["kind"] == "control" else ""),
            f"{row['lc']:.3f}" if _known(row["lc"]) else "n/a",
            f"{row['encoder_consistency']:.3f}",
            f"{row['gain']:+.3f} {_bounds(row['gain_low'], row['gain_high'])}",
            f"{row['gain_p']:.2f}" if _known(row["gain_p"]) else "n/a",
            {"True": "yes", "False": "no"}.get(row["holm_significant"], "n/a"),
        ]
        for row in sorted(chosen, key=lambda row: (row["kind"] != "natural", -row["lc"] if _known(row["lc"]) else 1))
    ]
    header = ["task", "graph", "LC", "encoder's own 3-NN consistency", f"gain over LM-only at {budget} steps, 95% CI"]
    return _table([*header, "p", "Holm at 0.05"], body)


def lc_atlas_validation() -> str:
    """docs: the grouped validation: per budget and scheme, each model's single-run error and the
    coverage of its single-run intervals, trivial baselines beside the fitted models."""
    _, fit = _atlas()
    body = [
        [
            f"{row['steps']}",
            f"leave one {SCHEME_WORDS[row['scheme']]} out ({row['groups']})",
            row["model"] + (" (shipped)" if row["model"] == fit["model"] else ""),
            f"{row['mae']:.4f}",
            "n/a" if row["sign_accuracy"] is None else f"{row['sign_accuracy']:.2f}",
            f"{row['decided_right']}/{row['decided']}",
            f"{row['coverage']:.2f} [{row['coverage_low']:.2f}, {row['coverage_high']:.2f}]",
        ]
        for row in fit["validation"]
    ]
    header = ["steps", "validation (groups)", "predictor", "single-run error", "sign right", "decided right"]
    return _table([*header, f"{fit['level']:.0%} interval coverage [95% Wilson]"], body)


def lc_atlas_budgets() -> str:
    """docs: the budget curve: LM-only minus the init, and the natural pairs' gains against their noise."""
    body = [
        [
            f"{row['steps']:.0f}",
            row["language"],
            f"{row['lm_minus_init']:+.3f} {_bounds(row['lm_minus_init_low'], row['lm_minus_init_high'])}",
            f"{row['pairs']:.0f}",
            f"{row['gain_mean']:+.4f}",
            f"{row['pair_se_median']:.4f}",
            f"{row['pair_spread']:.4f}",
            f"{row['distinguishable']:.0f} ({row['distinguishable_holm']:.0f})",
        ]
        for row in read("results/lc_atlas_budgets.csv")
    ]
    header = ["steps", "language", "LM-only - init, 95% CI", "natural pairs", "mean gain", "median per-pair se"]
    return _table([*header, "spread of pair means (sd)", "gain distinguishable from 0 (after Holm)"], body)


def lc_atlas_reading() -> str:
    """docs: what the atlas, its budgets and its predictor's grouped validation say."""
    rows, fit = _atlas()
    regime = fit["regime"]
    natural = [row for row in rows if row["kind"] == "natural" and _known(row["lc"])]
    pairs = {(row["language"], row["task"], row["graph"]) for row in natural}
    encoders = {round(row["encoder_consistency"], 6) for row in natural}
    budgets = read("results/lc_atlas_budgets.csv")
    longest = max(regime["budgets"])
    errors = {budget: _grouped_errors(fit, budget) for budget in regime["budgets"]}
    best = fit["model"]
    crossover = fit["budgets"][str(longest)]["lc_crossover"]
    verdict = (
        f"No predictor that reads LC beats predicting {fit['model_words']} under grouped validation, so LC alone does not tell "
        "SIPT's gain on new samples in this regime."
        if best in ("zero", "mean", "lc-sign")
        else f"The shipped predictor is {best} ({fit['model_words']}); "
        + ("it beats LC alone" if fit["beats_lc"] else "no feature beat LC alone, so LC alone is shipped")
        + (
            f", and at {longest} steps LC alone's line crosses zero at LC {crossover:.2f}"
            if crossover is not None
            else ""
        )
        + "."
    )
    return (
        f"The atlas (`sipt-lab study atlas --preset cpu`, `results/lc_atlas.csv`) pre-trained {regime['init']} "
        f"(batch {regime['batch_size']} x {regime['max_len']} tokens, lr {regime['lr']}, lambda_SI {regime['lambda_si']}, "
        f"{regime['loss']} loss) on {regime['n_pretrain']} crawled articles per draw of the {_languages(regime)} "
        f"vital-article summaries, {regime['replicates']} draws per language, and read each arm after "
        f"{_budgets(regime)} optimiser steps of one run whose learning rate decays over the longest. It holds "
        f"{len(pairs)} natural (graph, task) pairs with LC from {min(row['lc'] for row in natural):.2f} to "
        f"{max(row['lc'] for row in natural):.2f} and {len(encoders)} distinct encoder-consistency values. "
        + " ".join(
            f"At {row['steps']:.0f} steps in {row['language']}, LM-only moves the init by {row['lm_minus_init']:+.3f}; the "
            f"pairs' mean gain is {row['gain_mean']:+.4f}, a pair's standard error {row['pair_se_median']:.4f} against a "
            f"spread of {row['pair_spread']:.4f} between pairs, and {row['distinguishable']:.0f} pairs differ from zero "
            f"({row['distinguishable_holm']:.0f} after Holm)."
            for row in budgets
        )
        + " Single-run error under whole-group validation, averaged over graph, task and language: "
        + "; ".join(
            f"{budget} steps: " + ", ".join(f"{model} {error:.4f}" for model, error in errors[budget].items())
            for budget in regime["budgets"]
        )
        + f". {verdict}"
    )


def cli_reliability() -> str:
    """README: the hostile-input battery's size and outcome (``benchmarks/results/cli_battery.json``)."""
    b = json.loads((ROOT / "benchmarks/results/cli_battery.json").read_text(encoding="utf-8"))
    return (
        f"The hostile-input battery (`python benchmarks/cli_battery.py`: {b['tests_passed']:,} of {b['tests']:,} "
        "tests pass) tries every subcommand, engine and converter, refused resumes, outputs naming an input, "
        f"full disks and closed standard output; its {b['battery_cases']:,} flag-and-file cases end "
        f"{b['exit_0_correct']} times in exit 0 with a correct output, {b['one_line_errors']} in a one-line error "
        f"(exit 2) and {b['valid_up_to_long_work']} valid up to a long command's work, never in a traceback or a "
        "changed byte outside its output ([reliability](docs/guides/reliability.md))."
    )


#: ``bench_defaults.py --json`` runs on the wiki-categories graphs, by size (``--per-category`` 60, 250):
#: 60 steps at max length 64, two more seeds of the French MiniLM row at 1,000 samples, then MiniLM at
#: max length 128 with four passes over the samples and with one (``--epochs 4 --max-length 128``,
#: ``--epochs 1``), and with every default of ``pretrain``.
DEFAULTS_RUNS = (
    "benchmarks/results/defaults_240.json",
    "benchmarks/results/defaults_1000.json",
    "benchmarks/results/defaults_1000_fr_seeds.json",
    "benchmarks/results/defaults_epochs4_240.json",
    "benchmarks/results/defaults_epochs4_1000.json",
    "benchmarks/results/defaults_epochs1_1000.json",
    "benchmarks/results/defaults_every_default_1000.json",
)


def defaults_languages() -> str:
    """docs/reference/defaults.md: a default ``pretrain`` from each init on the LC-1 wiki-categories
    graph of each language, before -> after, from :data:`DEFAULTS_RUNS` (each seed's run)."""
    rows = []
    for path in DEFAULTS_RUNS:
        run = json.loads((ROOT / path).read_text(encoding="utf-8"))
        settings = run["settings"]
        for row in run["rows"]:
            if not row["graph"].startswith("wiki-categories"):
                continue
            language = row["graph"].partition("(")[2].rstrip(")") or "en"
            rises = all(row[f"{m}_after"] > row[f"{m}_before"] for m in ("loo_3nn_auroc", "link_mrr"))
            steps = row.get("steps", settings.get("steps"))
            passes = steps / (settings["samples"] // settings["batch_size"])  # as pretrain --epochs counts them
            rows.append(
                [
                    f"{settings['samples']:,}",
                    language,
                    row["init"],
                    f"{steps} steps of {settings['batch_size']} ({passes:.2g} pass{'' if passes == 1 else 'es'}), "
                    f"max length {settings['max_length']}",
                    str(row["seed"]),
                    f"{row['loo_3nn_auroc_before']:.3f} → {row['loo_3nn_auroc_after']:.3f}",
                    f"{row['link_mrr_before']:.3f} → {row['link_mrr_after']:.3f}",
                    "yes" if rises else "**no**",
                ]
            )
    header = ["samples", "language", "init", "training", "seed", "LOO 3-NN AUROC", "link MRR", "both rise"]
    return _table(header, rows)


def head_languages() -> str:
    """docs/reference/defaults.md: the MLM loss of each head on each language's held-out sentences
    (``benchmarks/results/reference_head.json``, ``bench_reference_head.py --json``)."""
    run = json.loads((ROOT / "benchmarks/results/reference_head.json").read_text(encoding="utf-8"))
    rows = [[row["language"], row["head"], f"{row['mlm_loss']:.3f}"] for row in run["rows"]]
    header = [
        "language",
        f"head (MiniLM, encoder frozen, fitted on {run['samples']} sentences, max length {run['max_length']})",
        f"MLM loss on {run['samples']} held-out sentences (nats per masked token)",
    ]
    return _table(header, rows)


def figure_times() -> str:
    """Each figure's measured wall time at the defaults (``sipt_lab/studies/paper/figure_times.json``,
    the file ``sipt-lab figures --help`` reads too), fastest first; a run on shared cores with its
    CPU time and load average."""
    times = json.loads((ROOT / "sipt_lab" / "studies" / "paper" / "figure_times.json").read_text(encoding="utf-8"))

    def wall(row: dict) -> str:
        shared = f"; {row['cpu_seconds']:.0f} s of CPU, at load {row['load']:.0f}" if "load" in row else ""
        return f"{row['seconds']:.0f} s ({row['seconds'] / 60:.1f} min{shared})"

    rows = [
        [
            " + ".join(f"`{name}`" for name in row["figures"]),
            wall(row),
            f"`{row['command']}`",
            f"{row['date']}, {row['record']}",
        ]
        for row in sorted(times["measurements"], key=lambda row: row["seconds"])
    ]
    rows += [
        [f"`{name}`", "not measured yet", f"`sipt-lab figures --only {name}`", ""]
        for name in times.get("not_measured", [])
    ]
    return _table(["figures (one command)", f"wall time on {times['cores']} CPU cores", "command", "measured"], rows)


#: README blocks this file renders: ``<!-- results-text: NAME -->``, the text, ``<!-- /results-text -->``,
#: each on its own lines; an empty block (no text line) has an empty text.
README_BLOCK = re.compile(r"(<!-- results-text: ([\w.:/-]+) -->\n)(.*?)\n?(<!-- /results-text -->)", re.S)
#: The docs pages' blocks: ``<!-- results-table: NAME -->``, the table as :func:`markdown_table`
#: renders it (unwrapped), ``<!-- /results-table -->``; committed rendered, so GitHub shows them too.
TABLE_BLOCK = re.compile(r"(<!-- results-table: ([\w.:/-]+) -->\n)(.*?)\n?(<!-- /results-table -->)", re.S)


def render_blocks(text: str) -> str:
    """``text`` with every :data:`README_BLOCK` holding what its table renders now, each paragraph
    wrapped at 100 columns as the README's own prose is, and every :data:`TABLE_BLOCK` its table."""

    def wrapped(name: str) -> str:
        return "\n\n".join(
            textwrap.fill(paragraph, 100, break_long_words=False, break_on_hyphens=False)
            for paragraph in markdown_table(name).split("\n\n")
        )

    text = README_BLOCK.sub(lambda m: m.group(1) + wrapped(m.group(2)) + "\n" + m.group(4), text)
    return TABLE_BLOCK.sub(lambda m: m.group(1) + markdown_table(m.group(2)).strip("\n") + "\n" + m.group(4), text)


TABLES = {
    "headline": headline,
    "families": families,
    "noise": noise,
    "noise-paper-preset": noise_paper_preset,
    "heldout-scale": heldout_scale,
    "heldout-scale-reading": heldout_scale_reading,
    "verdicts": verdicts,
    "lc-transfer-cpu": lambda: lc_transfer_levels("results/lc_transfer_cpu.summary.json"),
    "lc-transfer-cpu-metrics": lambda: lc_transfer_metrics("results/lc_transfer_cpu.summary.json"),
    "lc-transfer-cpu-reading": lambda: lc_transfer_reading("results/lc_transfer_cpu.summary.json"),
    "lc-transfer-gpu-wiki": lambda: lc_transfer_levels("results/lc_transfer_gpu_wiki.summary.json"),
    "lc-transfer-gpu-wiki-metrics": lambda: lc_transfer_metrics("results/lc_transfer_gpu_wiki.summary.json"),
    "lc-transfer-gpu-wiki-reading": lambda: lc_transfer_reading("results/lc_transfer_gpu_wiki.summary.json"),
    "table2-wiki-reading": table2_reading,
    "headline-reading": headline_reading,
    "lc-atlas": lc_atlas,
    "cli-reliability": cli_reliability,
    "figure-times": figure_times,
    "defaults-languages": defaults_languages,
    "head-languages": head_languages,
    "lc-atlas-reading": lc_atlas_reading,
    "lc-atlas-validation": lc_atlas_validation,
    "lc-atlas-budgets": lc_atlas_budgets,
}


def markdown_table(name: str) -> str:
    """The table ``name`` of :data:`TABLES` as Markdown; ``csv:PATH`` renders the CSV at ``PATH`` as it is."""
    if name.startswith("csv:"):
        return csv_table(name[4:])
    return TABLES[name]()


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--write"]:  # re-render the results blocks of the files named
        for path in sys.argv[2:]:
            Path(path).write_text(render_blocks(Path(path).read_text(encoding="utf-8")), encoding="utf-8")
        sys.exit(0)
    unknown = [name for name in sys.argv[1:] if name not in TABLES and not name.startswith("csv:")]
    if unknown:
        sys.exit(f"tables.py: unknown table {unknown[0]!r}; choose from {', '.join(TABLES)} or csv:PATH")
    for name in sys.argv[1:] or TABLES:
        print(f"{name}:\n{markdown_table(name)}\n")
