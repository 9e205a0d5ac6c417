"""``sipt-lab pretrain`` / ``embed``: own samples, Hugging Face warm start, export, resume, DDP, bad input."""

import dataclasses
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import GROUP_SIZE, N_GROUPS
from hf_fakes import WORDS, write_tiny_distilbert, write_tiny_roberta

from sipt_lab.cli.main import main
from sipt_lab.core.errors import SiptError
from sipt_lab.data.samples import read_sample_graph, read_sample_labels, read_samples
from sipt_lab.jobs.configs import resolve_pretrain_job
from sipt_lab.jobs.pretrain import PretrainJob, run_pretraining
from sipt_lab.models import HFEncoder, encoder_source, load_encoder
from sipt_lab.models.hf_checkpoints import named_checkpoint
from sipt_lab.training import embed
from sipt_lab.training.defaults import init_kind, train_config


@pytest.fixture()
def topical_files(tmp_path):
    """40 texts in 4 label cliques whose words lean to their label: half of each text from the
    group's own 5 words, half from all of them (a task the text carries, as real categories are)."""
    rng = np.random.default_rng(0)
    ids = [f"s{i}" for i in range(N_GROUPS * GROUP_SIZE)]
    group = {i: k % N_GROUPS for k, i in enumerate(ids)}
    own = [WORDS[5 * g : 5 * g + 5] for g in range(N_GROUPS)]
    texts = {i: " ".join([*rng.choice(own[group[i]], 4), *rng.choice(WORDS, 4)]) for i in ids}
    (tmp_path / "samples.tsv").write_text("".join(f"{i}\t{texts[i]}\n" for i in ids))
    (tmp_path / "labels.tsv").write_text("".join(f"{i}\tg{group[i]}\n" for i in ids))
    (tmp_path / "edges.tsv").write_text(
        "".join(f"{a}\t{b}\n" for a in ids for b in ids if a < b and group[a] == group[b])
    )
    return tmp_path


def _args(files: Path, out: Path, *extra: str) -> list[str]:
    return [
        "pretrain",
        "--samples",
        str(files / "samples.tsv"),
        "--edges",
        str(files / "edges.tsv"),
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


def _texts(files: Path) -> list[str]:
    return list(read_samples(files / "samples.tsv").texts)


# ---------------------------------------------------------------- samples files
def test_samples_formats_agree_and_edges_map_by_id(tmp_path):
    texts = ["first text", "second one", "third"]
    (tmp_path / "a.tsv").write_text("\ufeffid\ttext\n" + "".join(f"x{i}\t{t}\n" for i, t in enumerate(texts)))
    with gzip.open(tmp_path / "a.jsonl.gz", "wt") as handle:
        handle.write("".join(json.dumps({"id": f"x{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    (tmp_path / "a.txt").write_text("\n".join(texts) + "\n")
    tsv, jsonl, txt = (read_samples(tmp_path / name) for name in ("a.tsv", "a.jsonl.gz", "a.txt"))
    assert tsv.ids == jsonl.ids == ("x0", "x1", "x2") and tsv.texts == jsonl.texts == txt.texts == tuple(texts)
    assert txt.ids == ("1", "2", "3")
    (tmp_path / "e.tsv").write_text("x2\tx0\nx0\tx2\n")
    graph = read_sample_graph(tmp_path / "e.tsv", tsv)
    assert graph.n_nodes == 3 and graph.n_edges == 1 and bool(graph.has_edge(np.array([0]), np.array([2]))[0])
    (tmp_path / "l.tsv").write_text("x0\t01\nx1\t1\nx2\t01\n")
    labels, names = read_sample_labels(tmp_path / "l.tsv", tsv)
    assert names == ["01", "1"] and labels.tolist() == [0, 1, 0]  # strings: "01" and "1" are two classes


# ---------------------------------------------------------------- export and round trips
@pytest.mark.slow
def test_hf_round_trip_autoModel_and_sentence_transformers_match_embed(clique_files, tiny_bert, tmp_path):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    out = tmp_path / "run"
    assert (
        main(
            _args(clique_files, out, "--init", str(tiny_bert), "--steps", "3", "--batch-size", "8", "--pooling", "cls")
        )
        == 0
    )
    assert {"config.json", "checkpoint.pt", "model", "history.csv", "result.json"} <= {p.name for p in out.iterdir()}
    history = (out / "history.csv").read_text().splitlines()
    assert history[0] == "step,loss,mlm,si,lr" and len(history) == 4
    assert (
        main(
            [
                "embed",
                "--model",
                str(out / "model"),
                "--samples",
                str(clique_files / "samples.tsv"),
                "--out",
                str(tmp_path / "emb.npy"),
            ]
        )
        == 0
    )
    ours = np.load(tmp_path / "emb.npy")
    assert ours.dtype == np.float32 and ours.shape == (40, 32)
    assert (tmp_path / "emb.ids.tsv").read_text().split() == [f"s{i}" for i in range(40)]

    texts = _texts(clique_files)
    model, tokenizer = AutoModel.from_pretrained(out / "model"), AutoTokenizer.from_pretrained(out / "model")
    with torch.no_grad():
        cls = model(**tokenizer(texts, padding=True, return_tensors="pt")).last_hidden_state[:, 0].numpy()
    np.testing.assert_allclose(cls, ours, atol=1e-5)
    st = SentenceTransformer(str(out / "model"), device="cpu").encode(texts, convert_to_numpy=True)
    np.testing.assert_allclose(st, ours, atol=1e-5)


def test_sentence_transformers_init_gets_a_tied_head_and_keeps_its_pooling(clique_files, tiny_st, tmp_path):
    from sentence_transformers import SentenceTransformer

    source = encoder_source(str(tiny_st))
    tokenizer = source.tokenizer([], None)
    encoder, notes = source.encoder(tokenizer)
    assert isinstance(encoder, HFEncoder) and encoder.pooling == "mean" and encoder.normalize
    assert any("no MLM head" in note for note in notes)
    assert encoder.model.get_output_embeddings().weight is encoder.model.get_input_embeddings().weight
    texts = _texts(clique_files)
    before = SentenceTransformer(str(tiny_st), device="cpu").encode(texts, convert_to_numpy=True)
    np.testing.assert_allclose(embed(encoder, tokenizer, texts), before, atol=1e-5)  # same pooling + normalisation

    job = PretrainJob(
        samples=str(clique_files / "samples.tsv"),
        edges=str(clique_files / "edges.tsv"),
        init=str(tiny_st),
        train=train_config(init_kind(str(tiny_st)), steps=2, batch_size=8, device="cpu", head_warmup=2),
    )
    outcome = run_pretraining(job, tmp_path / "run", log=lambda _: None)
    assert any("no MLM head" in note for note in outcome.report["notes"])
    reloaded, reloaded_tokenizer = load_encoder(tmp_path / "run" / "model")
    ours = embed(reloaded, reloaded_tokenizer, texts)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, rtol=1e-5)
    st = SentenceTransformer(str(tmp_path / "run" / "model"), device="cpu").encode(texts, convert_to_numpy=True)
    np.testing.assert_allclose(st, ours, atol=1e-5)


@pytest.mark.parametrize("write", [write_tiny_distilbert, write_tiny_roberta], ids=["distilbert", "roberta"])
def test_other_architectures_train_export_and_match_sentence_transformers(write, clique_files, tmp_path):
    """DistilBERT's multi-module MLM head (whole-model logits) and RoBERTa's pad id 1."""
    from sentence_transformers import SentenceTransformer

    checkpoint = write(tmp_path / "checkpoint", WORDS)
    out = tmp_path / "run"
    assert (
        main(
            _args(
                clique_files, out, "--init", str(checkpoint), "--steps", "2", "--batch-size", "8", "--pooling", "mean"
            )
        )
        == 0
    )
    history = (out / "history.csv").read_text().splitlines()
    assert len(history) == 3 and all(np.isfinite(float(v)) for v in history[-1].split(",")[1:])
    encoder, tokenizer = load_encoder(out / "model")
    texts = _texts(clique_files)
    ours = embed(encoder, tokenizer, texts)
    st = SentenceTransformer(str(out / "model"), device="cpu").encode(texts, convert_to_numpy=True)
    np.testing.assert_allclose(st, ours, atol=1e-5)


def test_char_init_exports_sipt_format_that_embed_loads(clique_files, tmp_path):
    out = tmp_path / "run"
    assert (
        main(
            _args(clique_files, out, "--init", "char", "--encoder", "paper-small", "--steps", "2", "--batch-size", "8")
        )
        == 0
    )
    assert (out / "model" / "encoder.pt").is_file()
    encoder, tokenizer = load_encoder(out / "model")
    assert embed(encoder, tokenizer, _texts(clique_files)).shape == (40, 10)


def test_labels_for_some_samples_give_the_report_on_the_labelled_ones(clique_files, tmp_path, capsys):
    """Labels for 30 of the 40 samples: the report is measured on them and the edges between them
    (the rule of ``consistency`` and ``advise``), and says how many edges it left out."""
    lines = (clique_files / "labels.tsv").read_text().splitlines()
    (clique_files / "some.tsv").write_text("".join(f"{line}\n" for line in lines[:30]))
    labelled = {line.split("\t")[0] for line in lines[:30]}
    edges = [line.split("\t") for line in (clique_files / "edges.tsv").read_text().splitlines()]
    between = sum(u in labelled and v in labelled for u, v in edges)
    out = tmp_path / "run"
    argv = _args(clique_files, out, "--init", "char", "--encoder", "paper-small", "--steps", "2", "--batch-size", "8")
    assert main([*argv, "--labels", str(clique_files / "some.tsv")]) == 0
    assert "labels 30 of the 40 samples" in capsys.readouterr().out
    report = json.loads((out / "result.json").read_text())
    assert report["labelled_samples"] == report["report_samples"] == 30
    assert report["unlabelled_edges"] == len(edges) - between > 0
    assert report["local_consistency"] == 1.0  # the label cliques, restricted to the labelled samples
    assert 0 <= report["after"]["loo_3nn_accuracy"] <= 1


def test_labels_that_link_no_two_samples_are_one_line(clique_files, tmp_path, capsys):
    (clique_files / "apart.tsv").write_text("s0\tg0\ns1\tg1\n")  # s0 and s1 sit in different cliques
    argv = _args(
        clique_files, tmp_path / "run", "--init", "char", "--steps", "2", "--labels", str(clique_files / "apart.tsv")
    )
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "links no two of the 2 samples" in err and "\n" not in err
    assert not (tmp_path / "run").exists()


def test_minilm_is_found_offline_and_matches_sentence_transformers():
    from sentence_transformers import SentenceTransformer

    path = named_checkpoint("minilm")
    source = encoder_source("minilm")
    tokenizer = source.tokenizer([], None)
    encoder, notes = source.encoder(tokenizer)
    assert tokenizer.max_len == 256 and encoder.pooling == "mean" and encoder.normalize and notes
    texts = ["Paris is the capital of France.", "Photosynthesis turns light into chemical energy in plants."]
    reference = SentenceTransformer(str(path), device="cpu").encode(texts, convert_to_numpy=True)
    np.testing.assert_allclose(embed(encoder.eval(), tokenizer, texts), reference, atol=1e-5)


# ---------------------------------------------------------------- training guarantees
@pytest.mark.slow
def test_default_sipt_raises_knn_auroc_and_link_mrr_over_the_init(topical_files, tiny_bert, tmp_path):
    """Nothing but the data and the budget: the defaults must induce the graph's structure."""
    out = tmp_path / "run"
    assert (
        main(
            _args(
                topical_files,
                out,
                "--init",
                str(tiny_bert),
                "--labels",
                str(topical_files / "labels.tsv"),
                "--steps",
                "40",
                "--batch-size",
                "20",
            )
        )
        == 0
    )
    report = json.loads((out / "result.json").read_text())
    assert report["local_consistency"] == 1.0 and report["warnings"] == [], report
    before, after = report["before"], report["after"]
    assert after["loo_3nn_auroc"] > max(before["loo_3nn_auroc"], 0.99), report
    assert after["link_mrr"] > before["link_mrr"] + 0.1, report
    for stage in ("before", "after"):
        assert {"radius", "radius_f1", "radius_nn_accuracy", "radius_nn_coverage"} <= report[stage].keys(), report
    assert report["after"]["radius_f1"] > report["before"]["radius_f1"], report


@pytest.mark.slow
def test_interrupted_run_resumes_to_the_uninterrupted_numbers(clique_files, tiny_bert, tmp_path, monkeypatch):
    import sipt_lab.training.loop as trainer

    extra = ("--init", str(tiny_bert), "--steps", "6", "--batch-size", "8", "--save-every", "2", "--grad-accum", "2")
    assert main(_args(clique_files, tmp_path / "whole", *extra)) == 0
    calls, real_step = {"n": 0}, trainer.train_step

    def dies_at_step_5(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real_step(*args, **kwargs)

    monkeypatch.setattr(trainer, "train_step", dies_at_step_5)
    assert main(_args(clique_files, tmp_path / "cut", *extra)) == 130
    assert (tmp_path / "cut" / "checkpoint.pt").is_file() and not (tmp_path / "cut" / "result.json").exists()
    monkeypatch.setattr(trainer, "train_step", real_step)
    assert main(_args(clique_files, tmp_path / "cut", *extra)) == 2  # unfinished: needs --resume
    assert main(_args(clique_files, tmp_path / "cut", *extra, "--resume")) == 0
    assert (tmp_path / "cut" / "history.csv").read_text() == (tmp_path / "whole" / "history.csv").read_text()


@pytest.mark.slow
def test_two_gloo_processes_give_the_one_process_losses(clique_files, tmp_path):
    common = [
        "--init",
        "char",
        "--encoder",
        "paper-small",
        "--steps",
        "4",
        "--batch-size",
        "12",
        "--lr",
        "1e-3",
        "--device",
        "cpu",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    one = subprocess.run(
        [sys.executable, "-m", "sipt_lab.cli.main", *_args(clique_files, tmp_path / "one", *common)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert one.returncode == 0, one.stderr
    two = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_port",
            "29517",
            "-m",
            "sipt_lab.cli.main",
            *_args(clique_files, tmp_path / "two", *common),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert two.returncode == 0, two.stderr[-2000:]
    assert two.stdout.count("model: ") == 1  # only rank 0 speaks

    def table(run):
        lines = (tmp_path / run / "history.csv").read_text().splitlines()[1:]
        return np.array([[float(x) for x in line.split(",")] for line in lines])

    # float reduction order differs between one and two processes; everything else is the same
    np.testing.assert_allclose(table("two"), table("one"), rtol=2e-4, atol=1e-5)


# ---------------------------------------------------------------- bad input: one line, exit 2
def _finetune_args(files: Path, model: Path, out: Path) -> list[str]:
    return [
        "finetune",
        "--model",
        str(model),
        "--samples",
        str(files / "samples.tsv"),
        "--labels",
        str(files / "labels.tsv"),
        "--device",
        "cpu",
        "--out",
        str(out),
    ]


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sipt-lab: error: ") and "\n" not in err and "Traceback" not in err
    return err


def test_bad_samples_and_edges_are_one_line_errors(clique_files, tmp_path, capsys):
    out = tmp_path / "out"
    (tmp_path / "bad_edges.tsv").write_text("s0\ts1\ns0\tnobody\n")
    argv = [
        "pretrain",
        "--samples",
        str(clique_files / "samples.tsv"),
        "--edges",
        str(tmp_path / "bad_edges.tsv"),
        "--out",
        str(out),
        "--init",
        "char",
    ]
    assert "'nobody', which is not in the samples file" in _error(capsys, argv)
    cases = {
        "dup.tsv": ("a\tone text\nb\ttwo\na\tthree\n", "id 'a' repeats line 1"),
        "empty.tsv": ("a\tone text\nb\t  \n", "'b' has an empty text"),
        "notab.tsv": ("a one text\n", "has no tab"),
        "empty.txt": ("one\n\nthree\n", "sample '2' has an empty text"),
    }
    for name, (content, message) in cases.items():
        (tmp_path / name).write_text(content)
        argv = [
            "pretrain",
            "--samples",
            str(tmp_path / name),
            "--edges",
            str(clique_files / "edges.tsv"),
            "--out",
            str(out),
            "--init",
            "char",
        ]
        assert message in _error(capsys, argv)
    assert not out.exists()  # nothing half-written


def test_bad_checkpoints_are_one_line_errors(clique_files, tiny_bert, tmp_path, capsys):
    base = _args(clique_files, tmp_path / "out")
    assert "is not a local directory; sipt-lab never downloads" in _error(
        capsys, base + ["--init", str(tmp_path / "missing")]
    )
    (tmp_path / "file.bin").write_bytes(b"x")
    assert "is a file" in _error(capsys, base + ["--init", str(tmp_path / "file.bin")])
    no_tokenizer = tmp_path / "no-tokenizer"
    no_tokenizer.mkdir()
    for name in ("config.json", "model.safetensors"):
        (no_tokenizer / name).write_bytes((tiny_bert / name).read_bytes())
    assert "has no tokenizer files" in _error(capsys, base + ["--init", str(no_tokenizer)])
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    for name in ("config.json", "tokenizer.json", "vocab.txt"):
        (no_weights / name).write_bytes((tiny_bert / name).read_bytes())
    assert "has no weights" in _error(capsys, base + ["--init", str(no_weights)])
    assert not (tmp_path / "out").exists()


def test_output_directory_and_resume_are_guarded(clique_files, tmp_path, capsys):
    out = tmp_path / "run"
    common = ["--init", "char", "--encoder", "paper-small", "--steps", "2", "--batch-size", "8"]
    assert main(_args(clique_files, out, *common)) == 0
    capsys.readouterr()
    assert "holds a finished run; pass --resume" in _error(capsys, _args(clique_files, out, *common))
    assert "differs in train.lr" in _error(capsys, _args(clique_files, out, *common, "--lr", "1e-3", "--resume"))
    assert main(_args(clique_files, out, *common, "--overwrite", "--lr", "1e-3")) == 0
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("keep me")
    assert "holds files sipt-lab did not write (notes.txt)" in _error(
        capsys, _args(clique_files, tmp_path / "foreign", *common, "--overwrite")
    )
    assert (tmp_path / "foreign" / "notes.txt").read_text() == "keep me"
    unset_out = [
        "pretrain",
        "--samples",
        str(clique_files / "samples.tsv"),
        "--edges",
        str(clique_files / "edges.tsv"),
        "--out",
        "",
        *common,
    ]
    assert "--out is empty" in _error(capsys, unset_out)
    if not torch.cuda.is_available():
        assert "fp16 autocast needs a CUDA GPU" in _error(
            capsys, _args(clique_files, tmp_path / "x", *common, "--precision", "fp16", "--device", "cpu")
        )


def test_lambda_zero_is_continued_lm_pretraining(clique_files, tmp_path):
    out = tmp_path / "lm"
    assert (
        main(
            _args(
                clique_files,
                out,
                "--init",
                "char",
                "--encoder",
                "paper-small",
                "--steps",
                "2",
                "--batch-size",
                "8",
                "--lambda-si",
                "0",
            )
        )
        == 0
    )
    assert (out / "history.csv").read_text().splitlines()[0] == "step,loss,mlm,lr"
    config = json.loads((out / "config.json").read_text())
    assert config["train"]["lambda_si"] == 0.0 and config["init"] == "char"


def test_epochs_resolve_to_steps(clique_files, tmp_path):
    files = {"samples": str(clique_files / "samples.tsv"), "edges": str(clique_files / "edges.tsv")}
    settings = {"batch_size": 8, "grad_accum": 2, "device": "cpu"}
    job = resolve_pretrain_job(settings, **files, init="char", encoder="paper-small", epochs=2)
    unresolved = PretrainJob(
        **files, init="char", encoder="paper-small", epochs=2, train=train_config("char", **settings)
    )
    with pytest.raises(
        SiptError, match="PretrainJob.epochs 2 passes over these 40 samples are 5 steps, but TrainConfig"
    ):
        run_pretraining(unresolved, tmp_path / "unresolved")  # a hand-built job whose steps are not its epochs'
    outcome = run_pretraining(job, tmp_path / "run")
    assert outcome.result.config.steps == 5  # 40 // 8 = 5 micro-batches per epoch, 10 micro-batches in 2 per step
    assert json.loads((tmp_path / "run" / "config.json").read_text())["train"]["steps"] == 5
    with pytest.raises(SiptError, match="PretrainJob.epochs must be a positive number"):
        dataclasses.replace(job, epochs=0)


@pytest.mark.slow
def test_method_flag_runs_linkbert_and_mlsm_with_a_teacher(clique_files, tmp_path, capsys):
    common = ["--init", "char", "--encoder", "paper-small", "--steps", "2", "--batch-size", "8", "--device", "cpu"]
    assert main(_args(clique_files, tmp_path / "link", *common, "--method", "linkbert")) == 0
    assert (tmp_path / "link" / "history.csv").read_text().splitlines()[0] == "step,loss,mlm,drp,lr"
    assert json.loads((tmp_path / "link" / "config.json").read_text())["train"]["mask_replacement"] == "bert"
    assert main(_args(clique_files, tmp_path / "lm", *common, "--method", "lm")) == 0
    assert (
        main(
            _args(
                clique_files, tmp_path / "lsm", *common, "--method", "lsm", "--teacher", str(tmp_path / "lm" / "model")
            )
        )
        == 0
    )
    assert (tmp_path / "lsm" / "history.csv").read_text().splitlines()[0] == "step,loss,concepts,lr"
    # the student started from the teacher, and model/ is the final phase's: the teacher's vocabulary, untied
    result = json.loads((tmp_path / "lsm" / "result.json").read_text())
    assert any("student initialised from the teacher" in note for note in result["notes"])
    assert result["final_phase"]["tokens"] > 0
    saved = json.loads((tmp_path / "lsm" / "model" / "encoder_config.json").read_text())
    teacher_config = json.loads((tmp_path / "lm" / "model" / "encoder_config.json").read_text())
    assert saved["vocab_size"] == teacher_config["vocab_size"] and saved["tie_mlm_head"] is False
    for run in ("lsm", "link"):  # each method's model goes through finetune like any pretrain output
        tuned = [*_finetune_args(clique_files, tmp_path / run, tmp_path / f"{run}-tuned"), "--mode", "full"]
        assert main([*tuned, "--epochs", "1", "--lr", "1e-3"]) == 0
        scores = json.loads((tmp_path / f"{run}-tuned" / "results.json").read_text())["results"]["model"]
        assert 0 <= scores["full"][0]["accuracy"] <= 1
    assert "--teacher" in _error(capsys, _args(clique_files, tmp_path / "x", *common, "--method", "mlsm"))
    teacher = str(tmp_path / "lm" / "model")
    # MiniLM (the default --init) can learn from a teacher that reads its token ids, not from a char model
    assert "teacher's tokenizer differs" in _error(
        capsys, _args(clique_files, tmp_path / "y", "--method", "lsm", "--teacher", teacher, "--steps", "1")
    )
