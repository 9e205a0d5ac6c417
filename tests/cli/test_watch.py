"""Watching a pre-training run: evaluations during training, the best model, TensorBoard, the
model card, fine-tuning's history, and the bad inputs refused before anything trains."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from test_golden import write_inputs

from sipt_lab.cli.main import main
from sipt_lab.core.config_io import config_hash, config_to_dict
from sipt_lab.training.train_config import EVAL_EVERY_DEFAULT, FinetuneConfig, TrainConfig

#: Metrics both an evaluation and the report compute.
SHARED = ("link_mrr", "link_lrap", "loo_3nn_auroc", "loo_3nn_accuracy")


def front_matter(text: str) -> dict:
    """The YAML front matter of a model card (``---`` ... ``---`` at the top)."""
    yaml = pytest.importorskip("yaml")
    assert text.startswith("---\n")
    head, _, _ = text[4:].partition("\n---\n")
    return yaml.safe_load(head)


def pretrain_args(inputs: Path, out: Path, *extra: str, labels: bool = True) -> list[str]:
    return [
        "pretrain",
        "--samples",
        str(inputs / "samples.tsv"),
        "--edges",
        str(inputs / "edges.tsv"),
        *(["--labels", str(inputs / "labels.tsv")] if labels else []),
        "--init",
        "char",
        "--encoder",
        "paper-small",
        "--steps",
        "6",
        "--batch-size",
        "8",
        "--device",
        "cpu",
        "--quiet",
        *extra,
        "--out",
        str(out),
    ]


def test_watch_fields_leave_saved_configs_and_hashes_alone():
    """A TrainConfig whose watch fields hold their defaults saves and hashes as before they existed."""
    saved = config_to_dict(TrainConfig())
    assert not {"eval_every", "keep_best", "patience", "report_to"} & set(saved)
    assert config_hash(TrainConfig()) == config_hash(TrainConfig(report_to="tensorboard"))
    assert "eval_every" not in config_to_dict(FinetuneConfig())
    watched = TrainConfig(keep_best="link_mrr")
    assert watched.eval_every == EVAL_EVERY_DEFAULT and config_to_dict(watched)["keep_best"] == "link_mrr"


@pytest.mark.parametrize(
    "extra, labels, flag",
    [
        (("--eval-every", "0"), True, "--eval-every"),
        (("--keep-best", "loo_3nn_auroc"), False, "--keep-best"),
        (("--keep-best", "knn_lc"), False, "--keep-best"),
        (("--patience", "2"), True, "--patience"),
        (("--keep-best", "nope"), True, "--keep-best"),
    ],
)
def test_bad_watch_inputs_are_one_line_before_training(tmp_path, capsys, extra, labels, flag):
    inputs = write_inputs(tmp_path / "in")
    out = tmp_path / "run"
    assert main(pretrain_args(inputs, out, *extra, labels=labels)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err, err
    assert not out.exists()


def test_loop_tracks_the_best_and_the_patience():
    from sipt_lab.training.loop import _progress

    assert _progress({"m": 0.5}, "m", None, 0) == (0.5, 0)
    assert _progress({"m": 0.4}, "m", 0.5, 0) == (None, 1)
    assert _progress({"m": 0.5}, "m", 0.5, 1) == (None, 2)  # equal is no better
    assert _progress({"m": 0.6}, None, 0.5, 1) == (None, 1)


def test_model_card_front_matter_names_the_base_model(tmp_path):
    from sipt_lab.graphs.graph import PretrainingGraph
    from sipt_lab.jobs.configs import PretrainJob
    from sipt_lab.jobs.model_card import base_model, model_card

    inputs = write_inputs(tmp_path / "in")
    job = PretrainJob(
        samples=str(inputs / "samples.tsv"),
        edges=str(inputs / "edges.tsv"),
        labels=str(inputs / "labels.tsv"),
        init="minilm",
        train=TrainConfig(lambda_si=0.1, loss="infonce"),
    )
    graph = PretrainingGraph.from_edges([0, 1], [1, 2], 3)
    report = {
        "local_consistency": 0.75,
        "before": {"loo_3nn_auroc": 0.6, "link_mrr": 0.2},
        "after": {"loo_3nn_auroc": 0.7, "link_mrr": 0.3},
    }
    text = model_card(job, report, graph)
    meta = front_matter(text)
    assert meta["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert meta["library_name"] == "sentence-transformers" and meta["pipeline_tag"] == "sentence-similarity"
    assert "sipt" in meta["tags"]
    assert "λ_SI | 0.1" in text and "0.750" in text and "| LOO 3-NN AUROC | 0.600 | 0.700 |" in text
    assert "3 samples, 2 edges" in text
    assert "SHA-256 of samples" in text and "SHA-256 of labels" in text
    assert base_model("/home/u/.cache/huggingface/hub/models--org--tiny-bert/snapshots/abc") == "org/tiny-bert"
    assert front_matter(model_card(job, report, graph, library="transformers"))["pipeline_tag"] == "feature-extraction"


def test_scalar_log_is_readable_by_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from sipt_lab.training.watch import ScalarLog

    log = ScalarLog(tmp_path / "tb")
    for step in range(1, 4):
        log(step, {"loss/loss": 1.0 / step, "lr": 0.1})
    log.close()
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    assert [round(e.value, 4) for e in events.Scalars("loss/loss")] == [1.0, 0.5, 0.3333]


def read_rows(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
def test_evaluations_match_the_report_and_are_logged(tmp_path):
    """--eval-every 3 --keep-best: the evaluation at the last step equals the report's "after" (the
    validation slice is the report's at this size), best/ holds a model, TensorBoard has the loss
    terms, lr, throughput and evaluations, and the losses are those of a run without watching."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    inputs = write_inputs(tmp_path / "in")
    watched, plain = tmp_path / "watched", tmp_path / "plain"
    assert main(pretrain_args(inputs, watched, "--eval-every", "3", "--keep-best", "loo_3nn_auroc")) == 0
    assert main(pretrain_args(inputs, plain, "--report-to", "none")) == 0
    report = json.loads((watched / "result.json").read_text())
    rows = read_rows(watched / "evaluations.csv")
    assert [int(row["step"]) for row in rows] == [3, 6]
    for name in SHARED:
        assert float(rows[-1][name]) == pytest.approx(report["after"][name], rel=1e-5), name
        assert report["evaluation"]["last"][name] == pytest.approx(report["after"][name])
    assert 0 <= report["evaluation"]["last"]["knn_lc"] <= 1
    assert report["evaluation"]["best"]["step"] in (3, 6)
    assert (watched / "best" / "encoder.pt").is_file()
    assert int((watched / "best" / "step.txt").read_text()) == report["evaluation"]["best"]["step"]
    assert (watched / "history.csv").read_text() == (plain / "history.csv").read_text()
    assert not (plain / "tensorboard").exists() and not (plain / "evaluations.csv").exists()
    owned = json.loads((watched / ".sipt-lab-files.json").read_text())["files"]
    assert "best/encoder.pt" in owned and any(name.startswith("tensorboard/events.out") for name in owned)
    events = EventAccumulator(str(watched / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {
        "loss/loss",
        "loss/mlm",
        "loss/si",
        "lr",
        "throughput/steps_per_second",
        "eval/loo_3nn_auroc",
        "eval/link_mrr",
        "eval/knn_lc",
    } <= tags
    assert len(events.Scalars("loss/loss")) == 6
    assert events.Scalars("eval/link_mrr")[-1].value == pytest.approx(report["after"]["link_mrr"], rel=1e-5)


@pytest.mark.slow
def test_hf_export_gets_a_model_card_and_finetune_a_history(tmp_path):
    from hf_fakes import WORDS, write_tiny_bert

    inputs = write_inputs(tmp_path / "in")
    base = write_tiny_bert(
        tmp_path / "models--org--tiny-bert" / "snapshots" / "abc", WORDS + ["alpha", "beta"], st_pooling="mean"
    )
    out = tmp_path / "run"
    args = pretrain_args(inputs, out, "--report-to", "csv")
    args[args.index("char")] = str(base)
    args[args.index("--encoder") : args.index("--encoder") + 2] = []
    assert main(args) == 0
    meta = front_matter((out / "model" / "README.md").read_text())
    assert meta["base_model"] == "org/tiny-bert" and meta["library_name"] == "sentence-transformers"
    assert "model/README.md" in json.loads((out / ".sipt-lab-files.json").read_text())["files"]

    ft = tmp_path / "ft"
    assert (
        main(
            [
                "finetune",
                "--model",
                str(out),
                "--samples",
                str(inputs / "samples.tsv"),
                "--labels",
                str(inputs / "labels.tsv"),
                "--splits",
                str(inputs / "splits.tsv"),
                "--mode",
                "full",
                "--epochs",
                "2",
                "--batch-size",
                "8",
                "--eval-every",
                "2",
                "--device",
                "cpu",
                "--out",
                str(ft),
            ]
        )
        == 0
    )
    rows = read_rows(ft / "history.csv")
    losses = [row for row in rows if row["split"] == "train"]
    assert [int(row["step"]) for row in losses] == list(range(1, 7)) * (len(losses) // 6)
    scored = {
        (int(row["step"]), int(row["epoch"]))
        for row in rows
        if row["split"] == "validation" and row["metric"] == "accuracy"
    }
    assert {(2, 1), (3, 1), (4, 2), (6, 2)} <= scored
    assert np.isfinite([float(row["value"]) for row in rows]).all()


@pytest.mark.slow
def test_an_extended_run_keeps_its_earlier_evaluations_and_best(tmp_path):
    """pretrain --resume with more steps: evaluations.csv and the report count the evaluations of
    both parts, and best/ holds the best of all of them."""
    inputs = write_inputs(tmp_path / "in")
    out = tmp_path / "run"
    watched = ("--eval-every", "2", "--keep-best", "link_mrr", "--report-to", "csv", "--schedule", "constant")
    first = pretrain_args(inputs, out, *watched)
    first[first.index("--steps") + 1] = "4"
    assert main(first) == 0
    assert main(pretrain_args(inputs, out, *watched, "--steps", "8", "--resume")) == 0
    rows = read_rows(out / "evaluations.csv")
    assert [int(row["step"]) for row in rows] == [2, 4, 6, 8]
    report = json.loads((out / "result.json").read_text())
    assert report["evaluation"]["evaluations"] == 4 and report["extended_from_steps"] == 4
    best = max(rows, key=lambda row: float(row["link_mrr"]))
    assert report["evaluation"]["best"]["step"] == int(best["step"])
    assert int((out / "best" / "step.txt").read_text()) == int(best["step"])


def test_a_char_export_gets_a_card_that_loads_it(tmp_path):
    """pretrain --init char: model/README.md says it was trained from scratch (no base model), in
    sipt-lab's format, with the data's hashes, and its usage code loads the export."""
    inputs = write_inputs(tmp_path / "in")
    out = tmp_path / "run"
    assert main(pretrain_args(inputs, out)) == 0
    text = (out / "model" / "README.md").read_text()
    meta = front_matter(text)
    assert "base_model" not in meta and meta["library_name"] == "sipt-lab"
    assert "# a paper-small character transformer + SIPT" in text and "pre-trained from scratch" in text
    assert "SHA-256 of samples" in text and "| LOO 3-NN AUROC |" in text
    usage = text.split("```python\n")[1].split("```")[0].replace("path/to/this/directory", str(out / "model"))
    scope: dict = {}
    exec(usage, scope)
    assert scope["embeddings"].shape[0] == 2
    owned = json.loads((out / ".sipt-lab-files.json").read_text())["files"]
    assert "model/README.md" in owned
