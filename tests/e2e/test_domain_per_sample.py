"""The per-sample baselines as domain-run arms: NETWORKS with its go_pretrain.tsv as the labels,
through ``domain run``'s flags (the objective's flags of ``pretrain`` included)."""

import json

import pytest
from domain_fixtures import write_networks
from test_real_domains import small_gin  # noqa: F401 (a fixture)

from sipt_lab.cli.main import main


def _argv(data, out, *extra):
    return [
        "domain",
        "run",
        "networks",
        *("--data", str(data), "--out", str(out), "--seeds", "1", "--steps", "3", "--lambdas", "0.1"),
        *("--mode", "probe", "--device", "cpu", *extra),
    ]


@pytest.mark.slow
def test_domain_run_adds_per_sample_baseline_arms(tmp_path, small_gin, capsys):  # noqa: F811
    data = write_networks(tmp_path / "networks", n_graphs=40)
    labels = str(data / "go_pretrain.tsv")
    assert main(_argv(data, tmp_path / "refused", "--methods", "multitask")) == 2
    assert "--pt-labels" in capsys.readouterr().err
    out = tmp_path / "run"
    argv = _argv(data, out, "--methods", "multitask", "same-family", "--pt-labels", labels)
    assert main([*argv, "--negatives", "two-hop", "--loss", "multisim", "--loss-param", "w_pos=1.5"]) == 0
    cells = [json.loads(path.read_text()) for path in (out / "cells").glob("*/result.json")]
    arms = {cell["arm"]: cell for cell in cells}
    assert set(arms) == {"off-the-shelf", "lm", "sipt", "multitask", "same-family"}
    assert arms["multitask"]["lambda_si"] == 0.1 and arms["multitask"]["graph"] is None
    assert set(arms["multitask"]["pretrain_final"]) == {"loss", "mlm", "multitask", "lr"}
    assert set(arms["same-family"]["pretrain_final"]) == {"loss", "mlm", "same_family", "lr"}
    configs = [json.loads(path.read_text()) for path in (out / "cells").glob("*/config.json")]
    sipt = next(config for config in configs if config["arm"] == "sipt")["pretrain"]
    assert (sipt["loss"], sipt["negatives"], sipt["loss_params"]["w_pos"]) == ("multisim", "two-hop", 1.5)
    summary = json.loads((out / "summary.json").read_text())
    assert {"multitask", "same-family"} <= set(summary["arms"])


@pytest.mark.slow
def test_domain_run_refuses_unlisted_samples_before_training(tmp_path, capsys):
    data = write_networks(tmp_path / "networks", n_graphs=40)
    lines = (data / "go_pretrain.tsv").read_text().splitlines()
    partial = tmp_path / "partial.tsv"
    partial.write_text("\n".join(lines[10:]) + "\n")  # graphs 1..10 unlisted
    out = tmp_path / "run"
    assert main(_argv(data, out, "--methods", "same-family", "--pt-labels", str(partial))) == 2
    error = capsys.readouterr().err.strip()
    assert "pre-training samples have no per-sample labels" in error and "--allow-missing" in error
    assert "\n" not in error and not (out / "cells").exists()
