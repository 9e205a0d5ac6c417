import json

import pytest

from sipt_lab.cli.main import main
from sipt_lab.studies.simulation.config import simulation_config
from sipt_lab.training.train_config import CHAR_LOSS_PARAMS


def run_json(capsys, *args):
    assert main(["simulate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


SMALL = [
    "--graph",
    "cliques",
    "--nodes",
    "30",
    "--steps",
    "150",
    "--seeds",
    "1",
    "--lambda-si",
    "0.5",
    "--device",
    "cpu",
    "--executor",
    "serial",
]  # serial: worker processes would not see the monkeypatched corpus


@pytest.mark.slow
def test_sipt_beats_lm_end_to_end(tmp_path, capsys, signal_free_corpus):
    result = run_json(capsys, *SMALL, "--out", str(tmp_path / "a"))
    lm, sipt = result["methods"]["lm"], result["methods"]["sipt"]
    assert result["graph"] == "cliques" and result["local_consistency"] == 1.0
    assert len(lm["auroc"]) == len(sipt["auroc"]) == 1
    assert sipt["auroc"][0] > lm["auroc"][0] + 0.2
    assert sipt["link.mrr"][0] > lm["link.mrr"][0]
    saved = json.loads((tmp_path / "a" / "results.json").read_text())
    assert saved["methods"] == result["methods"]
    assert json.loads((tmp_path / "a" / "config.json").read_text())["train"]["lambda_si"] == 0.5


@pytest.mark.slow
def test_same_seed_same_numbers_and_rerun_skips(tmp_path, capsys, signal_free_corpus):
    first = run_json(capsys, *SMALL, "--steps", "20", "--out", str(tmp_path / "a"))
    again = run_json(capsys, *SMALL, "--steps", "20", "--out", str(tmp_path / "a"))
    fresh = run_json(capsys, *SMALL, "--steps", "20", "--out", str(tmp_path / "b"))
    for arm in ("lm", "sipt"):
        assert first["methods"][arm]["auroc"] == fresh["methods"][arm]["auroc"]
        assert first["methods"][arm]["seconds"] == again["methods"][arm]["seconds"]  # loaded, not rerun


def test_table_output(tmp_path, capsys, signal_free_corpus):
    assert main(["simulate", *SMALL, "--steps", "5", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "LOO 3-NN AUROC" in out and "SIPT" in out and "local consistency" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--graph", "nope"], "unknown graph 'nope'"),
        (["--graph", "torus", "--noise", "1.5"], "--noise must be in [0, 1]"),
        (["--graph", "torus", "--lambda-si", "2"], "--lambda-si must be in [0, 1]"),
        (["--graph", "torus", "--steps", "0"], "--steps must be in [1, 10,000,000], got 0"),
        (["--graph", "torus", "--loss", "hinge"], "--loss 'hinge' is unknown; choose one of contrastive, multisim"),
        (["--graph", "torus", "--pairs", "all"], "--pairs 'all' is unknown; choose one of sampled, batch"),
        (["--graph", "torus", "--seeds", "0"], "--seeds must be in [1, 1,000], got 0"),
        (["--graph", "torus", "--executor", "mpi"], "unknown executor 'mpi'"),
        (["--graph", "torus", "--loss-param", "pos_margin"], "--loss-param takes NAME=NUMBER"),
        (["--graph", "torus", "--loss-param", "pos_margin=big"], "--loss-param takes NAME=NUMBER"),
        (
            ["--graph", "torus", "--loss", "multisim", "--loss-param", "pos_margin=1"],
            "loss 'multisim' has no parameter(s) pos_margin",
        ),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys, args, message):
    assert main(["simulate", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_loss_params_default_per_loss_and_override_by_key(tmp_path, capsys, signal_free_corpus):
    assert simulation_config("torus").train.loss_params == CHAR_LOSS_PARAMS == {"pos_margin": 5.0}
    assert simulation_config("torus", train_options={"loss": "multisim"}).train.loss_params == {}
    tuned = simulation_config("torus", train_options={"loss_params": {"neg_margin": 4.0}})
    assert tuned.train.loss_params == {"pos_margin": 5.0, "neg_margin": 4.0}

    run_json(
        capsys,
        *SMALL,
        "--steps",
        "3",
        "--loss-param",
        "pos_margin=1",
        "--loss-param",
        "neg_margin=2",
        "--out",
        str(tmp_path),
    )
    saved = json.loads((tmp_path / "config.json").read_text())["train"]["loss_params"]
    assert saved == {"pos_margin": 1.0, "neg_margin": 2.0}


def test_presets_resolve_per_family_and_change_the_hash():
    from sipt_lab.core.config_io import config_hash
    from sipt_lab.models import ENCODER_PRESETS
    from sipt_lab.training.train_config import steps_for_epochs

    cliques = simulation_config("cliques", preset="paper")
    assert cliques.encoder == ENCODER_PRESETS["paper-small"]
    train = cliques.train
    assert (train.steps, train.batch_size, train.lr, train.schedule, train.warmup, train.pairs) == (
        8000,
        cliques.graph.n_nodes,
        3e-4,
        "constant",
        0.0,
        "sampled",
    )
    assert train.loss_params == {}  # the paper's µ+ = 0
    torus = simulation_config("torus", preset="paper")
    assert torus.encoder == ENCODER_PRESETS["paper-manifolds"] and torus.train.batch_size == 16
    assert torus.train.steps == steps_for_epochs(1500, torus.graph.n_nodes, 16)
    assert simulation_config("cliques", preset="paper", encoder="default").encoder == ENCODER_PRESETS["default"]
    hashes = {
        config_hash(simulation_config("cliques", **kw)) for kw in ({}, {"preset": "paper"}, {"encoder": "paper-small"})
    }
    assert len(hashes) == 3
    assert simulation_config("cliques", preset="default") == simulation_config("cliques")


def test_preset_encoder_and_batched_flags_reach_the_config_and_the_cells(tmp_path, capsys, signal_free_corpus):
    args = [*SMALL, "--steps", "4", "--seeds", "2", "--preset", "paper", "--encoder", "paper-small"]
    batched = run_json(capsys, *args, "--batched", "--out", str(tmp_path / "b"))
    config = batched["config"]
    assert config["encoder"]["hidden"] == 10 and config["train"]["pairs"] == "sampled"
    assert config["train"]["batch_size"] == 30 and config["train"]["steps"] == 4
    assert len(list((tmp_path / "b" / "cells").glob("*/result.json"))) == 2  # one cell per seed
    again = run_json(capsys, *args, "--batched", "--out", str(tmp_path / "b"))
    assert again["methods"]["sipt"]["seconds"] == batched["methods"]["sipt"]["seconds"]  # cells loaded, not retrained


@pytest.mark.parametrize(
    "command, args, message",
    [
        (
            "simulate",
            ["--graph", "cliques", "--preset", "fast"],
            "--preset 'fast' is unknown; choose one of default, paper",
        ),
        (
            "simulate",
            ["--graph", "cliques", "--encoder", "huge"],
            "--encoder 'huge' is unknown; choose one of default, paper-small",
        ),
        (
            "figures",
            ["--only", "fig5b", "--preset", "fast"],
            "--preset 'fast' is unknown; choose one of default, paper",
        ),
        (
            "figures",
            ["--only", "fig5b", "--encoder", "huge"],
            "--encoder 'huge' is unknown; choose one of default, paper-small",
        ),
    ],
)
def test_bad_preset_or_encoder_exit_2_with_one_line(tmp_path, capsys, command, args, message):
    assert main([command, *args, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
