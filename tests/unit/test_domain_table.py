"""``domain table`` (the paper's Table 2) and ``domain curves`` (its Figure 3) on run directories
written here with known per-seed scores; RRE and p-values computed by hand."""

import csv
import json
import math

import pytest

from sipt_lab.cli.main import main
from sipt_lab.core.errors import SiptError
from sipt_lab.jobs.finetune import history_csv
from sipt_lab.studies.domain.report_options import DomainTableConfig
from sipt_lab.studies.domain.saved_runs import merge_runs
from sipt_lab.studies.domain.table2 import change_mark, run_domain_table, table2_latex, table2_markdown, table2_rows

SETTING = {"domain": "networks", "task": "go", "init": "gin", "n_samples": 600, "pretrain": {"steps": 60}}


def write_run(path, arms, *, domain="networks", task="go", preset="cpu", setting=None, history=None):
    """A finished run directory: ``arms`` maps an arm name to ``{part: [primary metric per seed]}``
    (seeds 0, 1, ...); ``history`` the rows of its history.csv."""
    path.mkdir(parents=True)
    entries = {}
    for name, parts in arms.items():
        seeds = list(range(len(next(iter(parts.values())))))
        entries[name] = {
            "seeds": seeds,
            "scores": {part: [{"macro_auroc": value} for value in values] for part, values in parts.items()},
            "finetune_lr": [1e-3] * len(seeds),
        }
    summary = {
        "domain": domain,
        "task": task,
        "kind": "multilabel",
        "primary": "macro_auroc",
        "preset": preset,
        "setting": {**SETTING, "domain": domain, "task": task, **(setting or {})},
        "arms": entries,
        "comparisons": [],
    }
    (path / "summary.json").write_text(json.dumps(summary))
    if history is not None:
        names = ("model", "part", "seed", "lr", "epoch", "step", "split", "metric", "value")
        (path / "history.csv").write_text(history_csv([dict(zip(names, row, strict=True)) for row in history]))
    return path


# errors 0.40, 0.30, 0.20 (lm); 0.30, 0.21, 0.16 (sipt); 0.28, 0.26, 0.24 (multitask)
LM, SIPT, MULTITASK = [0.60, 0.70, 0.80], [0.70, 0.79, 0.84], [0.72, 0.74, 0.76]


def t_test_df2(differences):
    """Two-sided paired t-test over three seeds by hand: t = mean / (sd / sqrt 3), and for 2 degrees
    of freedom P(|T| > t) = 1 - t / sqrt(2 + t^2)."""
    mean = sum(differences) / 3
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / 2)
    t = abs(mean / (sd / math.sqrt(3)))
    return 1 - t / math.sqrt(2 + t * t)


@pytest.fixture
def runs(tmp_path):
    return {
        "main": write_run(tmp_path / "a", {"lm": {"full": LM}, "sipt[go-hamming]": {"full": SIPT}}),
        "per_sample": write_run(tmp_path / "b", {"multitask": {"full": MULTITASK}}),
        "abstracts": write_run(
            tmp_path / "c",
            {"lm": {"probe": [0.5]}, "sipt[citations]": {"probe": [0.6]}},
            domain="abstracts",
            task="mag",
        ),
    }


def by_key(rows):
    return {(r["task"], r["evaluation"], r["comparison"]): r for r in rows}


def test_rre_and_p_against_both_baselines_are_the_hand_computed_ones(runs):
    rows = by_key(table2_rows(merge_runs([runs["main"], runs["per_sample"], runs["abstracts"]])))
    token = rows[("go", "full", "per-token")]
    # per-seed RRE (0.4-0.3)/0.4, (0.3-0.21)/0.3, (0.2-0.16)/0.2 = 0.25, 0.30, 0.20: mean 0.25, sd 0.05
    assert token["baseline"] == "lm" and token["n_seeds"] == 3
    assert token["rre_mean"] == pytest.approx(0.25) and token["rre_sd"] == pytest.approx(0.05)
    assert token["p_value"] == pytest.approx(t_test_df2([0.10, 0.09, 0.04])) and token["p_value"] < 0.1
    assert token["mark"] == "↑"
    # what 3 seeds at that sd detect: (t_0.975,2 + t_0.8,2) * 0.05 / sqrt(3)
    assert token["detectable_rre"] == pytest.approx((4.302653 + 1.060660) * 0.05 / 3**0.5, rel=1e-5)
    sample = rows[("go", "full", "per-sample")]
    rre = [(0.28 - 0.30) / 0.28, (0.26 - 0.21) / 0.26, (0.24 - 0.16) / 0.24]
    assert sample["baseline"] == "multitask" and sample["rre_mean"] == pytest.approx(sum(rre) / 3)
    assert sample["p_value"] == pytest.approx(t_test_df2([-0.02, 0.05, 0.08])) and sample["mark"] == "∼"
    # abstracts: one seed (no test) and no per-sample baseline in the paper
    assert rows[("mag", "probe", "per-token")]["mark"] == "n/a" and math.isnan(
        rows[("mag", "probe", "per-token")]["detectable_rre"]
    )
    assert rows[("mag", "probe", "per-token")]["rre_mean"] == pytest.approx(0.2)
    assert rows[("mag", "probe", "per-sample")]["status"] == "no baseline"


def test_marks():
    assert change_mark(3, 0.05, 0.4, 0.3, 0.1) == "↑"
    assert change_mark(3, 0.05, 0.3, 0.4, 0.1) == "↓"
    assert change_mark(3, 0.2, 0.3, 0.4, 0.1) == "∼"
    assert change_mark(3, 0.05, 0.3, 0.4, 0.01) == "∼"
    assert change_mark(3, math.nan, 0.3, 0.3, 0.1) == "∼"  # identical errors on every seed
    assert change_mark(1, math.nan, 0.4, 0.3, 0.1) == "n/a"


def test_missing_comparisons_are_marked_not_dropped(runs):
    rows = by_key(table2_rows(merge_runs([runs["main"]])))
    assert rows[("go", "full", "per-sample")]["status"] == "not run"
    assert rows[("go", "full", "per-sample")]["rre_mean"] is None
    markdown = table2_markdown(list(rows.values()))
    assert "| networks | go | full | sipt[go-hamming] | +25.0% ± 5.0 | ↑ |" in markdown
    assert "| not run | - | - |" in markdown


def test_an_evaluation_one_arm_lacks_is_not_run(tmp_path):
    probe_only = write_run(tmp_path / "b", {"multitask": {"probe": MULTITASK}})
    both = write_run(tmp_path / "a", {"lm": {"full": LM, "probe": LM}, "sipt[g]": {"full": SIPT, "probe": SIPT}})
    rows = by_key(table2_rows(merge_runs([both, probe_only])))
    assert rows[("go", "full", "per-sample")]["status"] == "not run"
    assert rows[("go", "probe", "per-sample")]["status"] == "ok"


def test_the_three_formats(runs, tmp_path):
    config = DomainTableConfig(runs=(str(runs["main"]), str(runs["per_sample"]), str(runs["abstracts"])))
    rows = run_domain_table(config, tmp_path / "t")
    latex = table2_latex(rows)
    assert r"+25.0\% $\pm$ 5.0 & $\uparrow$" in latex and r"\begin{tabular}" in latex and "N/A" in latex
    assert (tmp_path / "t" / "table2.tex").read_text() == latex
    parsed = list(csv.DictReader((tmp_path / "t" / "table2.csv").open()))
    assert len(parsed) == 4 and {r["status"] for r in parsed} == {"ok", "no baseline"}
    assert float(parsed[0]["rre_mean"]) == pytest.approx(0.25) and parsed[0]["mark"] == "↑"
    assert parsed[-1]["rre_mean"] == "" and parsed[-1]["status"] == "no baseline"


def test_runs_that_cannot_be_merged_are_refused(tmp_path, runs):
    other_budget = write_run(tmp_path / "d", {"multitask": {"full": MULTITASK}}, setting={"pretrain": {"steps": 5}})
    with pytest.raises(SiptError, match=r"differ in pretrain\.steps \(60 vs 5\)"):
        merge_runs([runs["main"], other_budget])
    full = write_run(tmp_path / "e", {"lm": {"full": LM}}, domain="proteins", task="fluorescence", preset="full")
    with pytest.raises(SiptError, match=r"\(preset cpu\) and .*e \(preset full\)"):
        merge_runs([runs["main"], full])
    again = write_run(tmp_path / "f", {"lm": {"full": LM}})
    with pytest.raises(SiptError, match="arm lm of networks:go is in both"):
        merge_runs([runs["main"], again])
    old = tmp_path / "old"
    old.mkdir()
    (old / "summary.json").write_text(json.dumps({"domain": "networks", "task": "go", "primary": "x", "arms": {}}))
    with pytest.raises(SiptError, match="older sipt-lab"):
        merge_runs([old])


def test_cli_writes_the_table_and_refuses_mismatches_in_one_line(tmp_path, runs, capsys):
    out = tmp_path / "table"
    assert main(["domain", "table", str(runs["main"]), str(runs["per_sample"]), "--out", str(out)]) == 0
    assert {p.name for p in out.iterdir()} >= {"table2.md", "table2.csv", "table2.tex"}
    assert "+25.0% ± 5.0" in (out / "table2.md").read_text()
    full = write_run(tmp_path / "e", {"lm": {"full": LM}}, preset="full", domain="proteins", task="stability")
    capsys.readouterr()
    assert main(["domain", "table", str(runs["main"]), str(full), "--out", str(tmp_path / "t2")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "preset full" in error and not (tmp_path / "t2").exists()


def history_rows(arm, seed, values, lr=0.001, every=4):
    return [
        (arm, "full", seed, lr, k + 1, every * (k + 1), "validation", "macro_auroc", v) for k, v in enumerate(values)
    ]


def test_curves_follow_each_seeds_chosen_rate_and_average_over_seeds(tmp_path, capsys):
    history = (
        history_rows("lm", 0, [0.5, 0.6, 0.7])
        + history_rows("lm", 1, [0.7, 0.8, 0.9])
        + history_rows("lm", 0, [0.1, 0.1, 0.1], lr=0.0001)  # a rate fine-tuning did not choose
        + history_rows("sipt[g, chosen λ]", 0, [0.6, 0.8, 0.9])
        + history_rows("sipt[g, chosen λ]", 1, [0.8, 0.9])  # stopped early
        + [("lm", "full", 0, 0.001, 1, 4, "test", "macro_auroc", 0.0)]  # another split
    )
    arms = {"lm": {"full": LM[:2]}, "sipt[g]": {"full": LM[:2]}, "sipt[g, chosen λ]": {"full": SIPT[:2]}}
    run = write_run(tmp_path / "a", arms, history=history)
    out = tmp_path / "curves"
    assert main(["domain", "curves", str(run), "--out", str(out)]) == 0
    assert "per-sample baseline multitask not run" in capsys.readouterr().out
    assert {"curves.png", "curves.pdf", "curves.csv"} <= {p.name for p in out.iterdir()}
    points = {(r["arm"], int(r["point"])): r for r in csv.DictReader((out / "curves.csv").open())}
    assert float(points[("lm", 1)]["mean"]) == pytest.approx(0.6)
    assert float(points[("lm", 1)]["sd"]) == pytest.approx(math.sqrt(0.02))  # 0.5 and 0.7
    assert float(points[("lm", 3)]["step"]) == 12.0 and points[("lm", 3)]["role"] == "per-token"
    chosen = "sipt[g, chosen λ]"  # the arm the graph reports, its name quoted in history.csv
    assert float(points[(chosen, 3)]["mean"]) == pytest.approx(0.9) and points[(chosen, 3)]["n_seeds"] == "1"
    assert ("sipt[g]", 1) not in points


def test_curves_without_histories_say_why(tmp_path, capsys):
    run = write_run(tmp_path / "a", {"lm": {"probe": LM}, "sipt[g]": {"probe": SIPT}})
    assert main(["domain", "curves", str(run), "--out", str(tmp_path / "c")]) == 2
    assert "has no history.csv" in capsys.readouterr().err
