"""The per-sample baselines in ``simulate`` (a sample's id is its node number) and as the
LC-transfer study's per-sample arm."""

import json

import numpy as np
import pytest
from test_study import topic_study_argv

from sipt_lab.cli.main import main


@pytest.mark.slow
def test_simulate_trains_the_per_sample_baselines_on_node_number_labels(tmp_path, signal_free_corpus, capsys):
    labels = tmp_path / "labels.tsv"
    labels.write_text("".join(f"{node}\tf{node % 3}\n" for node in range(500)))  # more ids than nodes: ignored
    argv = ["simulate", "--graph", "cliques", "--nodes", "24", "--steps", "2", "--seeds", "1", "--executor", "serial"]
    argv += ["--methods", "lm", "multitask", "same-family", "--pt-labels", str(labels), "--json"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary["methods"]) == {"lm", "multitask", "same-family"}
    assert all(0 <= summary["methods"][m]["auroc"][0] <= 1 for m in summary["methods"])
    labels.write_text("0\tf0\n")
    assert main([*argv, "--out", str(tmp_path / "missing")]) == 2
    assert "--allow-missing" in capsys.readouterr().err


@pytest.mark.slow
def test_study_sets_the_per_sample_arms_gain_beside_sipts(tmp_path, capsys):
    classes = np.arange(60) % 3  # the topics of topic_study_argv's samples
    (tmp_path / "pt.tsv").write_text("".join(f"s{i}\tfam{y};f{i % 2}\n" for i, y in enumerate(classes)))
    argv = [*topic_study_argv(tmp_path), "--per-sample-arm", "same-family"]
    assert main([*argv, "--out", str(tmp_path / "refused")]) == 2
    assert "--pt-labels" in capsys.readouterr().err
    assert main([*argv, "--pt-labels", str(tmp_path / "pt.tsv"), "--out", str(tmp_path / "run")]) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["per_sample"]["arm"] == "same-family" and "same-family" in summary["arms"]
    lm, own = summary["arms"]["lm"][summary["metric"]], summary["arms"]["same-family"][summary["metric"]]
    assert summary["per_sample"]["gain"] == pytest.approx(own - lm)
    assert "the per-sample baseline same-family" in capsys.readouterr().out
