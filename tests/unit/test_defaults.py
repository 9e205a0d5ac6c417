"""Defaults per init kind, the loss geometry, the head warm-up and the stalled-L_SI guard."""

import dataclasses
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hf_fakes import WORDS, write_tiny_bert

from sipt_lab.cli.main import main
from sipt_lab.data.samples import read_sample_graph, read_samples
from sipt_lab.jobs.pretrain import PretrainJob, run_pretraining
from sipt_lab.models import encoder_source
from sipt_lab.models.hf_checkpoints import is_untrained
from sipt_lab.objectives import Objective, ObjectiveInputs
from sipt_lab.studies.domain.presets import PRESETS
from sipt_lab.studies.simulation.config import simulation_config
from sipt_lab.training import TrainConfig, pretrain
from sipt_lab.training.defaults import PAPER_LAMBDA_SI, init_kind, train_config
from sipt_lab.training.diagnostics import stalled_structure_loss
from sipt_lab.training.step import RunLoss as _Step


# ---------------------------------------------------------------- one table, every command
@pytest.mark.slow
def test_init_kinds_follow_the_weights(tiny_bert, tmp_path):
    assert init_kind("char") == "char" and init_kind("minilm") == "checkpoint"
    assert init_kind(str(tiny_bert)) == "fresh" and is_untrained(tiny_bert)
    trained = write_tiny_bert(tmp_path / "trained", WORDS)
    from transformers import BertForMaskedLM

    model = BertForMaskedLM.from_pretrained(trained)
    with torch.no_grad():
        model.bert.embeddings.LayerNorm.weight.mul_(1.01)
    model.save_pretrained(trained)
    assert init_kind(str(trained)) == "checkpoint"


@pytest.mark.slow
def test_commands_take_their_defaults_from_the_table():
    char = train_config("char")
    train = simulation_config("torus").train
    assert (train.lr, train.loss, train.mask_replacement) == (char.lr, char.loss, char.mask_replacement)
    assert train.lambda_si == PAPER_LAMBDA_SI  # the semi-synthetic protocol's, not a short own-data run's
    assert train.loss_params["pos_margin"] == char.loss_params["pos_margin"]
    checkpoint = train_config("checkpoint")
    for preset in PRESETS.values():
        assert (preset.pretrain.loss, preset.pretrain.loss_params, preset.pretrain.head_warmup) == (
            checkpoint.loss,
            checkpoint.loss_params,
            checkpoint.head_warmup,
        )
    assert (
        train_config("checkpoint", loss="contrastive").loss_params == {}
    )  # another loss drops the default's parameters
    help_text = subprocess.run(
        [sys.executable, "-m", "sipt_lab.cli.main", "pretrain", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "1000"},
    ).stdout
    assert f"{checkpoint.lr} for a checkpoint" in help_text and f"{char.lr} for --init char" in help_text


# ---------------------------------------------------------------- geometry
def test_structure_loss_sees_the_normalised_vector_the_encoder_outputs():
    seen = []

    class Capture(Objective):
        name, needs_pairs = "si", True

        def forward(self, inputs: ObjectiveInputs) -> torch.Tensor:
            seen.append(inputs.embeddings)
            return inputs.embeddings.sum() * 0

    from sipt_lab.training.sampler import PretrainBatch

    batch = PretrainBatch(
        np.arange(2),
        2,
        np.array([1, 0]),
        np.array([-1, -1]),
        np.zeros((2, 1), bool),
        np.array([[0, 1]]),
        np.empty((0, 2), np.int64),
        None,
    )
    for normalize in (False, True):
        step = _Step(
            torch.zeros(2, 3, dtype=torch.long),
            np.array([3, 3]),
            [(1.0, Capture())],
            torch.device("cpu"),
            normalize=normalize,
        )
        step.combine(batch, torch.tensor([[3.0, 4.0], [0.0, 2.0]]), None, None)
    np.testing.assert_allclose(seen[0].norm(dim=1).numpy(), [5.0, 2.0])
    np.testing.assert_allclose(seen[1].norm(dim=1).numpy(), [1.0, 1.0], rtol=1e-6)


def test_an_unreachable_margin_on_normalised_embeddings_is_refused_before_training(
    clique_files, tiny_st, tmp_path, capsys
):
    out = tmp_path / "run"
    code = main(
        [
            "pretrain",
            "--samples",
            str(clique_files / "samples.tsv"),
            "--edges",
            str(clique_files / "edges.tsv"),
            "--init",
            str(tiny_st),
            "--loss",
            "contrastive",
            "--loss-param",
            "neg_margin=3",
            "--steps",
            "2",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    error = capsys.readouterr().err.strip()
    assert code == 2 and len(error.splitlines()) == 1 and "neg_margin 3 cannot be met" in error and "[0, 2]" in error
    assert not out.exists()


# ---------------------------------------------------------------- head warm-up
def test_head_warm_up_fits_the_new_head_and_leaves_the_encoder(clique_files, tiny_st):
    samples = read_samples(clique_files / "samples.tsv")
    graph = read_sample_graph(clique_files / "edges.tsv", samples)
    source = encoder_source(str(tiny_st))
    config = train_config("checkpoint", steps=1, lr=1e-12, batch_size=8, head_warmup=6, device="cpu")
    result = pretrain(list(samples.texts), graph, config, source)
    assert any("new MLM head fitted for 6 steps with the encoder frozen" in note for note in result.notes)
    with torch.random.fork_rng():
        torch.manual_seed(config.seed)
        initial, _ = source.encoder(source.tokenizer([], None))
    trained_base, initial_base = (
        dict(result.encoder.model.base_model.named_parameters()),
        dict(initial.model.base_model.named_parameters()),
    )
    for name, parameter in initial_base.items():
        torch.testing.assert_close(trained_base[name], parameter, atol=1e-8, rtol=0, msg=name)
    head = {id(p) for p in result.encoder.new_head_parameters()}
    moved = [
        name
        for name, p in result.encoder.model.named_parameters()
        if id(p) in head and not torch.equal(p, dict(initial.model.named_parameters())[name])
    ]
    assert moved, "the warm-up left the new head untouched"


# ---------------------------------------------------------------- the guard
def test_guard_compares_the_first_and_last_tenth():
    config = TrainConfig(loss="contrastive", lr=5e-5)
    assert stalled_structure_loss(np.linspace(10.0, 5.0, 40), config) is None
    warning = stalled_structure_loss(np.full(40, 9.9), config)
    assert (
        "L_SI did not fall over the first 40 steps" in warning and "neg_margin=10" in warning and "lr 5e-05" in warning
    )
    assert stalled_structure_loss(np.full(10, 9.9), config) is None  # too short to judge


def test_guard_fires_on_a_saturated_margin_in_the_log_and_the_report(clique_files, tmp_path, caplog):
    train = train_config("char", steps=20, batch_size=8, device="cpu", loss_params={"neg_margin": 1e4}, max_len=24)
    job = PretrainJob(
        samples=str(clique_files / "samples.tsv"),
        edges=str(clique_files / "edges.tsv"),
        labels=str(clique_files / "labels.tsv"),
        init="char",
        train=train,
    )
    with caplog.at_level(logging.WARNING, logger="sipt_lab"):
        outcome = run_pretraining(job, tmp_path / "run", log=lambda _: None)
    assert any("L_SI did not fall" in record.getMessage() for record in caplog.records)
    assert len(outcome.report["warnings"]) == 1 and "margins may not fit" in outcome.report["warnings"][0]
    assert json.loads((tmp_path / "run" / "result.json").read_text())["warnings"] == outcome.report["warnings"]
    from sipt_lab.cli.pretrain import theorem1_message

    assert theorem1_message(outcome.report).endswith(outcome.report["warnings"][0])


# ---------------------------------------------------------------- output
@pytest.mark.slow
def test_quiet_pretrain_prints_no_progress_and_ends_its_lines(clique_files, tiny_st, tmp_path):
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "sipt_lab.cli.main",
            "pretrain",
            "--samples",
            str(clique_files / "samples.tsv"),
            "--edges",
            str(clique_files / "edges.tsv"),
            "--init",
            str(tiny_st),
            "--steps",
            "2",
            "--batch-size",
            "8",
            "--head-warmup",
            "2",
            "--out",
            str(tmp_path / "run"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    assert run.returncode == 0, run.stderr
    assert "Writing" not in run.stderr and "Loading" not in run.stderr and "%|" not in run.stderr, run.stderr
    assert run.stdout.endswith("\n") and "model:" in run.stdout.splitlines()[-1]


def test_a_checkpoint_without_a_pooling_of_its_own_is_mean_pooled(tiny_bert):
    source = encoder_source(str(tiny_bert))
    encoder, _ = source.encoder(source.tokenizer([], None))
    assert encoder.pooling == "mean" and not encoder.normalize


def test_full_preset_fine_tunes_each_task_as_the_papers_methods(tmp_path):
    from domain_fixtures import write_proteins

    from sipt_lab.studies.domain.cells import domain_run_cells
    from sipt_lab.studies.domain.presets import DOMAIN_PRESETS, preset_for
    from sipt_lab.studies.domain.run_config import DomainRunConfig

    def budget(finetune):
        return finetune.lrs, finetune.epochs, finetune.batch_size, finetune.patience

    # Table 5: 200 epochs, stop after 25 without improvement; Table 6: batch 32, no early stopping
    assert budget(preset_for("proteins", "full", "stability").finetune) == ((1e-4,), 200, 512, 24)
    assert budget(preset_for("abstracts", "full", "mag").finetune) == ((5e-5,), 2, 32, 2)
    assert preset_for("networks", "full", "go") == DOMAIN_PRESETS[("networks", "full")]  # the paper gives none
    assert preset_for("proteins", "cpu", "stability") == preset_for("proteins", "cpu")
    config = DomainRunConfig(
        domain="proteins", task="fluorescence", preset="full", seeds=1, data_dir=str(write_proteins(tmp_path / "p"))
    )
    assert {budget(cell.finetune) for cell in domain_run_cells(config)} == {((5e-5,), 200, 128, 24)}
    # --precision replaces the preset's pre-training autocast only when given
    assert {cell.pretrain.precision for cell in domain_run_cells(config)} == {"auto"}
    fp32 = dataclasses.replace(config, precision="fp32")
    assert {cell.pretrain.precision for cell in domain_run_cells(fp32)} == {"fp32"}
