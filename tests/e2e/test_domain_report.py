"""``domain table`` and ``domain curves`` over a real (tiny) ``domain run`` of the networks domain."""

import csv
import json

import pytest
from domain_fixtures import use_small_gin, write_networks

from sipt_lab.cli.main import main


@pytest.mark.slow
def test_table_and_curves_over_a_real_run(tmp_path, monkeypatch):
    use_small_gin(monkeypatch)
    run, data = tmp_path / "run", write_networks(tmp_path / "net")
    command = ["domain", "run", "networks", "--data", str(data), "--seeds", "2", "--methods", "multitask"]
    command += ["--pt-labels", str(data / "go_pretrain.tsv"), "--steps", "3", "--device", "cpu"]
    assert main([*command, "--executor", "serial", "--out", str(run)]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["preset"] == "cpu" and summary["setting"]["task"] == "go"
    sipt = summary["arms"]["sipt[go-hamming]"]
    assert len(sipt["scores"]["full"]) == 2 and sipt["finetune_lr"] == [1e-3, 1e-3]
    history = list(csv.DictReader((run / "history.csv").open()))
    passes = [r for r in history if r["model"] == "lm" and r["seed"] == "0" and r["split"] == "validation"]
    assert passes and [int(r["epoch"]) for r in passes] == list(range(1, len(passes) + 1))
    assert {r["split"] for r in history} == {"validation", "test"}  # the per-step train loss is not kept

    assert main(["domain", "table", str(run), "--out", str(tmp_path / "table")]) == 0
    rows = list(csv.DictReader((tmp_path / "table" / "table2.csv").open()))
    token = next(r for r in rows if r["evaluation"] == "full" and r["comparison"] == "per-token")
    same = next(
        c
        for c in summary["comparisons"]
        if c["method"] == "sipt[go-hamming]" and c["baseline"] == "lm" and c["task"].endswith("(full)")
    )
    assert float(token["rre_mean"]) == pytest.approx(same["rre_mean"])
    assert float(token["p_value"]) == pytest.approx(same["p_value"])
    sample = [r for r in rows if r["comparison"] == "per-sample"]
    assert [(r["baseline"], r["status"], r["n_seeds"]) for r in sample] == [("multitask", "ok", "2")] * 2

    assert main(["domain", "curves", str(run), "--out", str(tmp_path / "curves")]) == 0
    points = list(csv.DictReader((tmp_path / "curves" / "curves.csv").open()))
    assert {r["arm"] for r in points} == {"sipt[go-hamming]", "lm", "multitask"}
    assert (tmp_path / "curves" / "curves.pdf").stat().st_size > 0
