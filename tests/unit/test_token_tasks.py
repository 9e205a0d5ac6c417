"""Per-token tasks (TAPE's secondary structure): loader, alignment of residues to tokens, the
per-token head and probe, and ``sipt-lab domain run proteins --task secondary_structure``."""

import copy
import json

import numpy as np
import pytest
import torch
from domain_fixtures import SS3_OF, write_proteins

from sipt_lab.cli.main import main
from sipt_lab.core.errors import SiptError
from sipt_lab.data.tasks import flatten_tokens
from sipt_lab.domains.datasets import get_dataset
from sipt_lab.domains.loaders import read_tape_task
from sipt_lab.jobs.finetune import probe_encoder
from sipt_lab.models import encoder_source
from sipt_lab.studies.domain.view import domain_view
from sipt_lab.training.finetune import FinetuneConfig, Readout, finetune, read_out, token_counts
from sipt_lab.training.inputs import encoder_inputs


@pytest.fixture(scope="module")
def proteins(tmp_path_factory):
    return write_proteins(tmp_path_factory.mktemp("ss") / "proteins")


@pytest.fixture(scope="module")
def view(proteins):
    return domain_view("proteins", "secondary_structure", None, 0, str(proteins))


def char_encoder(view, max_len=32):
    texts = list(view.data.samples)
    source = encoder_source("char")
    tokenizer = source.tokenizer([texts[i] for i in view.pretraining_samples], max_len)
    return source.encoder(tokenizer)[0], tokenizer, texts


def test_loader_reads_per_residue_classes_and_the_fetch_entry(view):
    task = view.task
    assert task.kind == "token-classification" and task.label_names == ("0", "1", "2")
    assert [len(view.splits.train), len(view.splits.validation), len(view.splits.test)] == [16, 6, 6]
    texts = view.data.samples
    for k in view.splits.test:  # one label per residue, mostly the planted class of its letter
        labels = task.labels_of([k])[0]
        assert len(labels) == len(texts[k])
        assert np.mean(labels == [SS3_OF[c] for c in texts[k]]) > 0.6
    assert get_dataset("tape-secondary-structure").files[0].url.endswith("/secondary_structure.tar.gz")


def _write_ss(directory, train_records):
    directory.mkdir(exist_ok=True)
    good = [{"primary": "MKV", "ss3": [0, 1, 2]}]
    for suffix, records in (("train", train_records), ("valid", good), ("cb513", good)):
        (directory / f"secondary_structure_{suffix}.json").write_text(json.dumps(records))
    return directory


@pytest.mark.parametrize(
    "record",
    [
        {"primary": "MKV", "ss3": [0, 1]},  # one label short
        {"primary": "MKV", "ss3": [0, 1, -1]},
        {"primary": "MKV", "ss3": [0, 1, True]},
        {"primary": "MKV", "ss3": 2},
        {"primary": "MKV"},
    ],
)
def test_bad_secondary_structure_records_are_one_line_errors(tmp_path, record):
    with pytest.raises(
        SiptError,
        match="record 0 needs a non-empty string 'primary' and a list 'ss3' of one non-negative int per residue",
    ) as error:
        read_tape_task(_write_ss(tmp_path / "ss", [record]), "secondary_structure")
    assert "\n" not in str(error.value)


def test_read_out_gives_each_residue_its_own_state_in_sample_order(view):
    encoder, tokenizer, texts = char_encoder(view, max_len=20)  # truncates the longer sequences (16-21 residues)
    rows = view.splits.train
    split_texts = [texts[i] for i in rows]
    inputs = encoder_inputs(tokenizer, split_texts, torch.device("cpu"))
    counts = token_counts(tokenizer, split_texts, inputs)
    assert counts.tolist() == [min(len(t), 19) for t in split_texts] and counts.min() < counts.max()
    together = read_out(encoder, inputs, Readout(True, counts), batch_size=3).numpy()
    encoder.eval()
    with torch.inference_mode():
        alone = [
            encoder.hidden_states(torch.as_tensor(tokenizer.encode([t])[0]))[0, 1 : 1 + c].numpy()
            for t, c in zip(split_texts, counts)
        ]
    np.testing.assert_allclose(together, np.concatenate(alone), atol=1e-5)
    assert flatten_tokens(view.task.labels_of(rows), counts).size == together.shape[0]


@pytest.mark.slow
def test_finetuning_and_probe_learn_the_planted_per_residue_classes(view):
    encoder, tokenizer, texts = char_encoder(view)
    config = FinetuneConfig(lrs=(1e-3,), epochs=6, patience=6, batch_size=8, device="cpu")
    result = finetune(
        lambda: (copy.deepcopy(encoder).train(), tokenizer), texts, view.task, view.splits, config, seed=0
    )
    chance = max(np.mean(np.concatenate(list(view.task.labels_of(view.splits.test))) == c) for c in range(3))
    assert chance < 0.5 and result.test["accuracy"] > 0.7  # 0.9 of the labels follow the residue's letter
    probe = probe_encoder(encoder, tokenizer, texts, view.task, view.splits, "cpu")
    assert probe["accuracy"] > 0.7 and set(probe) == {"accuracy", "macro_f1"}


def test_residues_must_be_single_tokens(view, tmp_path):
    from hf_fakes import write_tiny_bert

    from sipt_lab.models.graph_encoder import GraphFeaturizer

    texts = [view.data.samples[i] for i in view.splits.train[:4]]
    letters = sorted({c.lower() for text in texts for c in text})
    for words, aligned in (
        (letters, False),
        (letters + [f"##{c}" for c in letters], True),
    ):  # words vs one piece per residue
        tokenizer = encoder_source(str(write_tiny_bert(tmp_path / str(aligned), words))).tokenizer([], 16)
        inputs = encoder_inputs(tokenizer, texts, torch.device("cpu"))
        if aligned:
            assert token_counts(tokenizer, texts, inputs).tolist() == [min(len(t), 14) for t in texts]
        else:
            with pytest.raises(
                SiptError, match="residue labels cannot be aligned; per-token tasks need one token per residue"
            ):
                token_counts(tokenizer, texts, inputs)
    with pytest.raises(SiptError, match="per-token tasks need a text encoder"):
        token_counts(GraphFeaturizer(2), texts, GraphFeaturizer(2).inputs([], torch.device("cpu")))


@pytest.mark.slow
def test_domain_run_secondary_structure_end_to_end(proteins, tmp_path, capsys):
    out = tmp_path / "run"
    argv = [
        "domain",
        "run",
        "proteins",
        "--data",
        str(proteins),
        "--task",
        "secondary_structure",
        "--seeds",
        "1",
        "--steps",
        "2",
        "--init",
        "char",
        "--device",
        "cpu",
        "--executor",
        "serial",
        "--out",
        str(out),
    ]
    assert main(argv) == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kind"] == "token-classification" and summary["primary"] == "accuracy"
    for arm in ("off-the-shelf", "lm", "sipt[interactions]"):
        for part in ("probe", "full"):
            assert 0.0 < summary["arms"][arm][f"{part}.accuracy"]["mean"] <= 1.0
    # per-sample label files cannot hold per-token labels
    assert (
        main(
            [
                "finetune",
                "--model",
                "char",
                "--samples",
                "s",
                "--labels",
                "l",
                "--kind",
                "token-classification",
                "--out",
                str(tmp_path / "f"),
            ]
        )
        == 2
    )
    assert "invalid choice: 'token-classification'" in capsys.readouterr().err


@pytest.mark.slow
def test_an_esm_checkpoint_reads_residues_and_runs_secondary_structure(proteins, tmp_path, capsys):
    from hf_fakes import write_esm

    esm = write_esm(tmp_path / "esm")
    texts = ["MKTAYIAKQR", "GAVL"]
    tokenizer = encoder_source(str(esm)).tokenizer([], 16)
    assert token_counts(tokenizer, texts, encoder_inputs(tokenizer, texts, torch.device("cpu"))).tolist() == [10, 4]
    out = tmp_path / "run"
    argv = [
        "domain",
        "run",
        "proteins",
        "--data",
        str(proteins),
        "--task",
        "secondary_structure",
        "--seeds",
        "1",
        "--steps",
        "2",
        "--init",
        str(esm),
        "--device",
        "cpu",
        "--executor",
        "serial",
        "--out",
        str(out),
    ]
    assert main(argv) == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert 0.0 < summary["arms"]["sipt[interactions]"]["full.accuracy"]["mean"] <= 1.0
