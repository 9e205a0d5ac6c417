"""Full fine-tuning, ``sipt-lab finetune`` and ``sipt-lab domain run`` on tiny models and slices."""

import csv
import dataclasses
import json
import re

import numpy as np
import pytest
from hf_fakes import WORDS

from sipt_lab.cli.main import main
from sipt_lab.data.splits import random_splits
from sipt_lab.data.tasks import Task
from sipt_lab.domains import subset
from sipt_lab.domains.wiki import load_wiki, mentions_graph
from sipt_lab.graphs.sampling import snowball_sample
from sipt_lab.jobs.finetune import encoder_loader
from sipt_lab.studies.domain.cells import domain_cells
from sipt_lab.studies.domain.presets import PRESETS
from sipt_lab.studies.domain.report import choose_lambdas
from sipt_lab.studies.domain.run import run_domain
from sipt_lab.studies.domain.view import domain_view
from sipt_lab.training.finetune import FinetuneConfig, finetune

pytestmark = pytest.mark.slow

CLASS_WORDS = ("one", "two", "three")


def _toy(seed=0, n=90):
    """Texts of filler words plus one class word each: a separable 3-class task."""
    rng = np.random.default_rng(seed)
    filler = [w for w in WORDS if w not in CLASS_WORDS]
    labels = np.arange(n) % 3
    texts = [" ".join([*rng.choice(filler, 5), CLASS_WORDS[y], *rng.choice(filler, 2)]) for y in labels]
    return texts, labels


@pytest.mark.parametrize("shuffled", [False, True])
def test_full_finetuning_learns_a_separable_task_and_not_shuffled_labels(tiny_bert, shuffled):
    texts, labels = _toy()
    if shuffled:
        labels = np.random.default_rng(1).permutation(labels)
    task = Task("toy", "classification", np.arange(len(texts)), labels)
    splits = random_splits(task.samples, (0.6, 0.2, 0.2), seed=0)
    config = FinetuneConfig(lrs=(3e-3,), epochs=10, patience=10, batch_size=8, device="cpu")
    result = finetune(encoder_loader(tiny_bert), texts, task, splits, config, seed=0)
    if shuffled:
        assert result.test["accuracy"] < 0.6, result
    else:
        assert result.test["accuracy"] > 0.9, result
    assert result.lr == 3e-3 and 1 <= result.epochs <= 10


def test_finetune_is_reproducible_and_regression_heads_train(tiny_bert):
    texts, labels = _toy(n=60)
    values = labels.astype(float) + np.random.default_rng(0).normal(0, 0.1, len(labels))
    task = Task("toy-value", "regression", np.arange(len(texts)), values)
    splits = random_splits(task.samples, (0.6, 0.2, 0.2), seed=0)
    config = FinetuneConfig(lrs=(3e-3,), epochs=10, patience=10, batch_size=8, device="cpu")
    first = finetune(encoder_loader(tiny_bert), texts, task, splits, config, seed=2)
    again = finetune(encoder_loader(tiny_bert), texts, task, splits, config, seed=2)
    assert first == again and first.test["spearman"] > 0.8, first


def _finetune_files(tmp_path, n=60):
    texts, labels = _toy(n=n)
    ids = [f"t{i}" for i in range(n)]
    (tmp_path / "samples.tsv").write_text("".join(f"{i}\t{t}\n" for i, t in zip(ids, texts)))
    (tmp_path / "labels.tsv").write_text("".join(f"{i}\tc{y}\n" for i, y in zip(ids, labels)))
    names = ["train"] * (n - 20) + ["validation"] * 10 + ["test"] * 10
    (tmp_path / "splits.tsv").write_text("".join(f"{i}\t{s}\n" for i, s in zip(ids, names)))
    return ids


def test_finetune_command_compares_with_a_baseline(tiny_bert, tmp_path, capsys):
    _finetune_files(tmp_path)
    argv = [
        "finetune",
        "--model",
        str(tiny_bert),
        "--baseline",
        str(tiny_bert),
        "--samples",
        str(tmp_path / "samples.tsv"),
        "--labels",
        str(tmp_path / "labels.tsv"),
        "--splits",
        str(tmp_path / "splits.tsv"),
        "--seeds",
        "2",
        "--lr",
        "3e-3",
        "--epochs",
        "2",
        "--batch-size",
        "8",
        "--device",
        "cpu",
        "--out",
        str(tmp_path / "out"),
        "-q",
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    # -q silences progress, not the one line that says what lies ahead and how long it should take
    ahead = re.search(
        r"^a linear probe and full fine-tuning \(2 seed\(s\) x 1 learning rate\(s\) x at most 2 "
        r"pass\(es\)\) of model and baseline on 60 labelled samples \(train 40, validation 10, "
        r"test 10\): estimated time (\d+) s on cpu$",
        printed,
        re.MULTILINE,
    )
    assert ahead, printed
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    assert report["sizes"] == {"train": 40, "validation": 10, "test": 10}
    assert len(report["results"]["model"]["full"]) == 2 and len(report["results"]["model"]["probe"]) == 1
    # the same encoder against itself: identical errors, RRE 0 on every part (undefined where the error is 0)
    assert [c["model_error"] for c in report["comparisons"]] == [c["baseline_error"] for c in report["comparisons"]]
    assert [c["rre_mean"] for c in report["comparisons"]] == [
        None if c["baseline_error"] == 0 else 0.0 for c in report["comparisons"]
    ]
    assert "model (probe)" in printed and (tmp_path / "out" / "comparison.csv").is_file()


def test_finetune_splits_the_labelled_samples_and_warns_on_a_test_split_that_detects_nothing(
    tiny_bert, tmp_path, capsys
):
    """Labels for 30 of 60 samples: the random splits hold labelled samples only; their 3-sample
    test split is too small to detect any difference, and the report says so beside the RRE."""
    _finetune_files(tmp_path)
    labels = (tmp_path / "labels.tsv").read_text().splitlines()
    (tmp_path / "some.tsv").write_text("".join(f"{line}\n" for line in labels[::2]))
    argv = [
        "finetune",
        *("--model", str(tiny_bert), "--baseline", str(tiny_bert), "--mode", "probe"),
        *("--samples", str(tmp_path / "samples.tsv"), "--labels", str(tmp_path / "some.tsv")),
        *("--device", "cpu", "--out", str(tmp_path / "out")),
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    assert report["labelled"] == 30 and report["sizes"] == {"train": 24, "validation": 3, "test": 3}
    assert len(report["warnings"]) == 1 and "test split holds 3 sample(s)" in report["warnings"][0]
    assert "warning: the test split holds 3 sample(s)" in printed


def test_a_test_split_that_can_detect_a_difference_gets_no_warning():
    from sipt_lab.evaluation.comparison import test_size_warning

    assert test_size_warning(3) and test_size_warning(9) and test_size_warning(0)
    assert test_size_warning(10) is None and test_size_warning(300) is None


def _one_error_line(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sipt-lab: error: ") and "\n" not in err
    return err


def test_finetune_bad_input_is_one_line(tiny_bert, tmp_path, capsys):
    ids = _finetune_files(tmp_path)
    base = [
        "finetune",
        "--model",
        str(tiny_bert),
        "--samples",
        str(tmp_path / "samples.tsv"),
        "--labels",
        str(tmp_path / "labels.tsv"),
        "--device",
        "cpu",
        "--out",
        str(tmp_path / "out"),
    ]
    assert "unknown --mode 'fast'" in _one_error_line(capsys, base + ["--mode", "fast"])
    missing_model = [str(tmp_path / "nowhere") if a == str(tiny_bert) else a for a in base]
    assert "is neither a model directory nor an init name" in _one_error_line(capsys, missing_model)
    (tmp_path / "overlap.tsv").write_text(f"{ids[0]}\ttrain\n{ids[1]}\tvalidation\n{ids[2]}\ttest\n{ids[0]}\ttest\n")
    assert "must not overlap" in _one_error_line(capsys, base + ["--splits", str(tmp_path / "overlap.tsv")])
    (tmp_path / "unknown.tsv").write_text(f"{ids[0]}\ttrain\nnobody\tvalidation\n")
    assert "'nobody' is not a sample id" in _one_error_line(capsys, base + ["--splits", str(tmp_path / "unknown.tsv")])
    (tmp_path / "one_class.tsv").write_text(f"{ids[0]}\ttrain\n{ids[3]}\ttrain\n{ids[1]}\tvalidation\n{ids[2]}\ttest\n")
    assert "has one class only" in _one_error_line(capsys, base + ["--splits", str(tmp_path / "one_class.tsv")])
    (tmp_path / "partial.tsv").write_text("".join(f"{i}\tc0\n" for i in ids[:10]))
    partial = [a if a != str(tmp_path / "labels.tsv") else str(tmp_path / "partial.tsv") for a in base]
    assert "one class only" in _one_error_line(capsys, partial)
    assert not (tmp_path / "out" / "results.json").exists()


def test_snowball_slices_keep_tasks_and_density():
    data = load_wiki()
    graph = mentions_graph(data)
    nodes = snowball_sample(graph, 300, seed=0)
    assert len(nodes) == 300 and np.all(np.diff(nodes) > 0)
    sliced = subset(data, nodes)
    assert sliced.ids == [data.ids[i] for i in nodes] and len(sliced.descriptions) == 300
    task, full_task = sliced.tasks["category"], data.tasks["category"]
    np.testing.assert_array_equal(task.labels, full_task.labels_of(nodes[task.samples]))
    uniform = np.sort(np.random.default_rng(0).choice(len(data.ids), 300, replace=False))
    assert graph.subgraph(nodes).n_edges > 5 * graph.subgraph(uniform).n_edges


def test_lambda_is_chosen_by_validation_link_retrieval_not_labels():
    rows = [
        {
            "arm": "sipt",
            "graph": "g",
            "seed": 0,
            "lambda_si": lam,
            "validation_links": {"mrr": mrr},
            "scores": {"probe": {"accuracy": acc}},
        }
        for lam, mrr, acc in [(0.05, 0.2, 0.9), (0.1, 0.5, 0.1), (0.3, 0.4, 0.5)]
    ]
    rows.append({"arm": "lm", "graph": None, "seed": 0, "lambda_si": 0.0, "scores": {}})
    chosen = choose_lambdas(rows)
    # the paper's λ = 0.1 as its own arm, and the λ with the best validation MRR (here also 0.1)
    assert [(r["arm"], r["lambda_si"], r.get("selection")) for r in chosen] == [
        ("lm", 0.0, None),
        ("sipt", 0.1, None),
        ("sipt", 0.1, "chosen λ"),
    ]
    rows[1]["validation_links"]["mrr"] = 0.1  # now λ = 0.3 retrieves the validation links best
    assert [r["lambda_si"] for r in choose_lambdas(rows) if r.get("selection")] == [0.3]


def test_domain_run_end_to_end_on_a_small_wiki_slice(tmp_path):
    preset = dataclasses.replace(
        PRESETS["cpu"],
        n_samples=60,
        lambdas=(0.1, 0.5),
        pretrain=dataclasses.replace(PRESETS["cpu"].pretrain, steps=2, batch_size=8, max_len=24),
        finetune=dataclasses.replace(PRESETS["cpu"].finetune, max_len=24, batch_size=8),
    )
    cells = domain_cells("wiki", ["mentions", "random"], 2, preset, init="char", device="cpu", methods=("linkbert",))
    assert len(cells) == 2 * (2 + 2 * 2 + 2)
    summary = run_domain(cells, tmp_path / "run", executor="serial")
    assert set(summary["arms"]) == {
        "off-the-shelf",
        "lm",
        "sipt[mentions]",
        "sipt[random]",
        "sipt[mentions, chosen λ]",
        "sipt[random, chosen λ]",
        "linkbert[mentions]",
        "linkbert[random]",
    }
    assert 0 <= summary["arms"]["linkbert[random]"]["local_consistency"] <= 1
    assert ("linkbert[mentions]", "lm") in {(c["method"], c["baseline"]) for c in summary["comparisons"]}
    assert summary["arms"]["sipt[mentions]"]["lambda_si"] == [0.1, 0.1]
    mentions = summary["arms"]["sipt[mentions, chosen λ]"]
    assert 0.0 <= mentions["local_consistency"] <= 1.0 and set(mentions["lambda_si"]) <= {0.1, 0.5}
    assert {"probe.accuracy", "probe.macro_f1", "full.accuracy", "full.macro_f1"} <= set(mentions)
    methods = {(c["method"], c["baseline"]) for c in summary["comparisons"]}
    assert ("sipt[random]", "lm") in methods and ("sipt[mentions]", "off-the-shelf") in methods
    assert (tmp_path / "run" / "comparison.csv").is_file()
    with open(tmp_path / "run" / "arms.csv", newline="") as handle:
        arms = {row["arm"]: row for row in csv.DictReader(handle)}
    assert set(arms) == set(summary["arms"])
    against_lm = {(c["method"], c["task"]): c for c in summary["comparisons"] if c["baseline"] == "lm"}
    for name, row in arms.items():
        entry = summary["arms"][name]
        assert float(row["probe_accuracy_mean"]) == entry["probe.accuracy"]["mean"]
        assert row["lc"] == ("" if entry.get("local_consistency") is None else repr(entry["local_consistency"]))
        found = against_lm.get((name, "wiki:category (full)"))
        assert row["rre_full_mean"] == ("" if found is None else repr(found["rre_mean"]))
    assert arms["sipt[mentions]"]["lambda"] == "0.1" and arms["lm"]["rre_probe_mean"] == ""
    assert all(row["rre_full_mean"] and row["rre_probe_mean"] for name, row in arms.items() if name != "lm")
    # pre-training sees neither the text nor the links of a validation or test article
    view = domain_view("wiki", "category", 60, 0)
    assert not np.isin(view.pretraining_samples, view.splits.held_out).any()
    assert len(view.pretraining_samples) + len(view.splits.held_out) == 60


def test_inductive_domain_view_pretrains_on_no_split_of_the_task():
    transductive = domain_view("wiki", "category", 60, 0)
    view = domain_view("wiki", "category", 60, 0, None, "inductive")
    splits = np.concatenate([view.splits.train, view.splits.validation, view.splits.test])
    assert not np.isin(view.pretraining_samples, splits).any()
    labelled = view.task.samples.size
    assert len(view.pretraining_samples) + splits.size == 60 and splits.size == labelled - round(labelled / 2)
    assert np.isin(transductive.splits.train, transductive.pretraining_samples).all()  # the paper's protocol
    cells = domain_cells("wiki", ["random"], 1, PRESETS["cpu"], protocol="inductive")
    assert {cell.protocol for cell in cells} == {"inductive"}


def test_finetune_leaves_out_what_the_model_was_pretrained_on(tiny_bert, tmp_path, capsys):
    ids = _finetune_files(tmp_path)
    (tmp_path / "pretrained.tsv").write_text("id\ttext\n" + "".join(f"{i}\tx\n" for i in ids[:20]))
    argv = ["finetune", "--model", str(tiny_bert), "--mode", "probe", "--device", "cpu"]
    argv += ["--samples", str(tmp_path / "samples.tsv"), "--labels", str(tmp_path / "labels.tsv")]
    assert main([*argv, "--pretrained-on", str(tmp_path / "pretrained.tsv"), "--out", str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    assert report["pretrained_left_out"] == 20 and sum(report["sizes"].values()) == 40
    err = _one_error_line(
        capsys,
        [*argv, "--pretrained-on", str(tmp_path / "pretrained.tsv"), "--splits", str(tmp_path / "splits.tsv")]
        + ["--out", str(tmp_path / "o2")],
    )
    assert "20 samples of" in err and "were pre-trained on (first: 't0'" in err
    (tmp_path / "other.tsv").write_text("z1\nz2\n")
    err = _one_error_line(
        capsys, [*argv, "--pretrained-on", str(tmp_path / "other.tsv"), "--out", str(tmp_path / "o3")]
    )
    assert "lists none of the task's sample ids" in err
