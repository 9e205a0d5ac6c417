"""The LC-transfer study: the LC dial, inductive splits, the fair start of the arms, end to end."""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json

import numpy as np
import pytest
import torch
from hf_fakes import WORDS, write_tiny_bert

from sipt_lab.cli.main import main
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.core.stats import mean_ci, minimum_detectable_effect, seeds_for_effect
from sipt_lab.evaluation.heldout import encoder_consistency
from sipt_lab.graphs.consistency import local_consistency
from sipt_lab.studies.lc.arms import arm_configs, study_source, train_arm
from sipt_lab.studies.lc.config import LcTransferConfig
from sipt_lab.studies.lc.dial import dial_graph, dial_target_lc, grouped_splits, pretraining_nodes
from sipt_lab.studies.lc.transfer import run_lc_transfer
from sipt_lab.training.defaults import train_config

#: How far the measured LC of a 400-node, 4-class dial graph may lie from its target.
DIAL_TOLERANCE = 0.06
SIZES = {"pretrain": 40, "train": 24, "validation": 8, "test": 16}


def test_dial_lc_rises_with_q_and_lands_near_its_target():
    labels = np.random.default_rng(0).integers(0, 4, 400)
    qs = (0.0, 0.25, 0.5, 0.75, 1.0)
    measured = [local_consistency(dial_graph(labels, q, np.random.default_rng(1)), labels) for q in qs]
    assert all(a < b for a, b in itertools.pairwise(measured))
    assert measured[-1] == 1.0
    for q, lc in zip(qs, measured):
        assert abs(lc - dial_target_lc(labels, q)) < DIAL_TOLERANCE, (q, lc)
    assert dial_target_lc(np.repeat([0, 1], 50), 0.5) == pytest.approx(0.75)  # q + (1 - q) / C


def test_grouped_splits_are_disjoint_keep_groups_whole_and_are_checked_before_training():
    labels = np.arange(100) % 4
    splits = grouped_splits(labels, np.arange(100), SIZES, np.random.default_rng(0))
    assert {name: len(index) for name, index in splits.items()} == SIZES
    everything = np.concatenate(list(splits.values()))
    assert len(np.unique(everything)) == len(everything)
    # groups of 5 (say, the sentences of one article): no group on two sides, wherever its cut falls
    groups = np.arange(200) // 5
    for seed in range(5):
        splits = grouped_splits(np.arange(200) % 4, groups, SIZES, np.random.default_rng(seed))
        sides = [set(groups[index]) for index in splits.values()]
        assert all(not a & b for a, b in itertools.combinations(sides, 2)), seed
        assert {name: len(index) for name, index in splits.items()} == SIZES
    # a task that fixes its pre-training samples: the other splits take none of their groups
    fixed = np.arange(40)
    splits = grouped_splits(np.arange(200) % 4, groups, SIZES, np.random.default_rng(0), pretrain=fixed)
    assert np.array_equal(splits["pretrain"], fixed) and not set(
        groups[np.concatenate(list(splits.values())[1:])]
    ) & set(groups[fixed])
    with pytest.raises(SiptError, match=r"whole groups only to \d+ of the 128 samples they need"):
        grouped_splits(labels, np.arange(100) // 10, {**SIZES, "train": 64}, np.random.default_rng(0))
    with pytest.raises(SiptError, match="one class"):
        grouped_splits(np.zeros(100, dtype=int), np.arange(100), SIZES, np.random.default_rng(0))


@pytest.mark.parametrize(
    "field, value, problem", [("levels", (0.0, 1.5), r"\[0, 1\]"), ("levels", (0.5, 0.5), "one gives no slope")]
)
def test_config_refuses_levels_that_cannot_give_a_slope(field, value, problem):
    with pytest.raises(ConfigError, match=problem):
        LcTransferConfig(init="char", **{field: value})


@pytest.mark.slow
def test_both_trained_arms_start_from_the_same_weights(tmp_path):
    """A new MLM head is warmed up first (frozen encoder); at a vanishing lr one step leaves the start
    in place, so LM-only and SIPT must agree weight for weight, and another seed must not."""
    model = write_tiny_bert(tmp_path / "st", WORDS, with_head=False, st_pooling="mean")
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, 6)) for _ in range(24)]
    labels = np.arange(24) % 3
    train = train_config("checkpoint", steps=1, batch_size=8, max_len=16, lr=1e-12, head_warmup=3, device="cpu")
    config = LcTransferConfig(init=str(model), train=train, n_pretrain=24)
    graph = dial_graph(labels, 1.0, rng)
    source = study_source(config)

    def weights(seed):
        results = {arm: train_arm(texts, graph, cfg, source) for arm, cfg in arm_configs(config, seed).items()}
        assert all(any("head fitted for 3 steps" in note for note in result.notes) for result in results.values())
        return {arm: result.encoder.state_dict() for arm, result in results.items()}

    first, other = weights(0), weights(1)
    assert first["lm"].keys() == first["sipt"].keys()
    for name, value in first["lm"].items():
        torch.testing.assert_close(value, first["sipt"][name], atol=1e-6, rtol=0)
    head = [
        name for name in first["lm"] if name not in other["lm"] or not torch.equal(first["lm"][name], other["lm"][name])
    ]
    assert head, "another seed's warm-up should give another head"


def test_encoder_consistency_is_lc_over_its_knn_graph():
    clustered = np.repeat(np.eye(3) * 10, 5, axis=0) + np.random.default_rng(0).normal(0, 0.1, (15, 3))
    labels = np.repeat(np.arange(3), 5)
    assert encoder_consistency(clustered, labels, 3) == 1.0
    assert encoder_consistency(clustered, np.arange(15) % 3, 3) < 0.6


def test_paired_statistics():
    mean, low, high = mean_ci([0.1, 0.2, 0.3])
    assert (low, mean, high) == pytest.approx((0.2 - 4.303 * 0.1 / 3**0.5, 0.2, 0.2 + 4.303 * 0.1 / 3**0.5), abs=1e-3)
    assert minimum_detectable_effect(0.1, 5) > minimum_detectable_effect(0.1, 20)
    assert (
        minimum_detectable_effect(0.1, seeds_for_effect(0.1, 0.05))
        <= 0.05
        < minimum_detectable_effect(0.1, seeds_for_effect(0.1, 0.05) - 1)
    )


@pytest.mark.slow
def test_tiny_study_writes_csv_figure_and_summary(tmp_path):
    train = train_config("char", steps=2, batch_size=8, max_len=32, device="cpu")
    config = LcTransferConfig(
        init="char",
        train=train,
        n_pretrain=40,
        n_train=24,
        n_validation=8,
        n_test=16,
        levels=(0.0, 1.0),
        seeds=2,
        split_seeds=(0, 1),
        pilot_sd=0.05,
    )
    lines = []
    summary = run_lc_transfer(config, tmp_path / "run", log=lines.append)
    assert lines[0].startswith("with 4 replicates (2 seeds x 2 split seeds) and a paired sd of 0.0500")
    assert lines[-1] == summary["verdict"]
    out = tmp_path / "run"
    for name in ("config.json", "splits.tsv", "results.csv", "summary.json", "gain_vs_lc.png", "gain_vs_lc.pdf"):
        assert (out / name).is_file(), name
    written = json.loads((out / "summary.json").read_text())
    for key in (
        "slope",
        "slope_ci",
        "crossover_lc",
        "crossover_ci",
        "crossover_undefined_share",
        "control_gain",
        "control_gain_ci",
        "encoder_consistency",
        "mde",
        "planned_mde",
        "levels",
        "metrics",
        "multiplicity",
        "by_split",
        "verdict",
    ):
        assert key in written, key
    assert written["slope"] == pytest.approx(summary["slope"]) and written["metric"] == "knn_accuracy"
    assert set(written["metrics"]) == {"knn_accuracy", "knn_auroc", "probe_accuracy", "probe_macro_f1"}
    assert written["multiplicity"]["comparisons"] == 2 * 4 and written["replicates"] == 4
    assert [split["split_seed"] for split in written["by_split"]] == [0, 1]
    assert {"gain_over_labels_direct", "gain_over_init_labels"} <= set(written["levels"][0])
    rows = list(csv.DictReader((out / "results.csv").open()))
    # per replicate and metric: init, lm, one SIPT per level and the two labels-direct arms per level;
    # tfidf once per split seed and metric
    assert len(rows) == 4 * (4 * (2 + 2 * 3) + 2)
    assert {row["arm"] for row in rows} == {"init", "lm", "sipt", "tfidf", "init+labels", "lm+labels"}
    assert {float(row["lc"]) for row in rows if row["arm"] == "sipt" and row["level"] == "1"} == {1.0}
    with pytest.raises(SiptError, match="--overwrite"):
        run_lc_transfer(config, out, log=lambda _: None)
    lines = [line.split("\t") for line in (out / "splits.tsv").read_text().splitlines()]
    for split_seed in ("0", "1"):
        split_of = {sample: split for seed, sample, split in lines if seed == split_seed}
        assert list(split_of.values()).count("pretrain") == 40 and len(split_of) == 88
    assert {s for seed, s, split in lines if seed == "0" and split == "test"} != {
        s for seed, s, split in lines if seed == "1" and split == "test"
    }


@pytest.mark.slow
def test_transductive_protocol_pretrains_on_every_split_and_says_so(tmp_path):
    train = train_config("char", steps=1, batch_size=8, max_len=16, device="cpu")
    config = LcTransferConfig(
        init="char",
        train=train,
        n_pretrain=8,
        n_train=16,
        n_validation=8,
        n_test=8,
        levels=(0.0, 1.0),
        seeds=1,
        protocol="transductive",
    )
    summary = run_lc_transfer(config, tmp_path / "run", log=lambda _: None)
    assert summary["protocol"] == "transductive" and "pre-trained-on (transductive)" in summary["verdict"]
    splits = grouped_splits(np.arange(100) % 4, np.arange(100), SIZES, np.random.default_rng(0))
    assert set(pretraining_nodes(splits, "transductive")) == set(np.concatenate(list(splits.values())))
    assert set(pretraining_nodes(splits, "inductive")) == set(splits["pretrain"])
    with pytest.raises(ConfigError, match="protocol"):
        LcTransferConfig(init="char", protocol="both")


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--levels", "0", "1.5"], "--levels"),
        (["--levels", "0.5"], "one gives no slope"),
        (["--n-pretrain", "5000"], "fill the splits with whole groups only to"),
        (["--seeds", "auto"], "--seeds auto needs a pilot"),
    ],
)
def test_cli_refuses_bad_input_in_one_line(tmp_path, capsys, flags, message):
    assert main(["study", "lc-transfer", "--init", "char", "--out", str(tmp_path / "run"), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_cli_refuses_a_one_class_task(tmp_path, capsys):
    (tmp_path / "s.tsv").write_text("".join(f"s{i}\tsome text {i}\n" for i in range(20)))
    (tmp_path / "l.tsv").write_text("".join(f"s{i}\tonly\n" for i in range(20)))
    assert (
        main(
            [
                "study",
                "lc-transfer",
                "--init",
                "char",
                "--samples",
                str(tmp_path / "s.tsv"),
                "--labels",
                str(tmp_path / "l.tsv"),
                "--n-pretrain",
                "5",
                "--n-train",
                "5",
                "--n-validation",
                "2",
                "--n-test",
                "2",
                "--out",
                str(tmp_path / "run"),
            ]
        )
        == 2
    )
    assert "one class" in capsys.readouterr().err


def test_seeds_auto_takes_the_fewest_seeds_the_pilot_says_detect_the_target(tmp_path):
    from sipt_lab.cli.main import build_parser
    from sipt_lab.cli.study import lc_transfer_config

    (tmp_path / "pilot.json").write_text(json.dumps({"paired_sd": 0.05}))
    args_list = [
        *("study", "lc-transfer", "--init", "char", "--seeds", "auto", "--pilot", str(tmp_path / "pilot.json")),
        *("--target-effect", "0.05", "--out", str(tmp_path / "run")),
    ]
    args = build_parser().parse_args(args_list)
    config = lc_transfer_config(args)
    # the replicates (seeds x the two default split seeds) are what the pilot's sd is divided by
    assert config.seeds * len(config.split_seeds) >= seeds_for_effect(0.05, 0.05) > 2 and config.pilot_sd == 0.05
    assert (config.seeds - 1) * len(config.split_seeds) < seeds_for_effect(0.05, 0.05)
    one_split = lc_transfer_config(build_parser().parse_args([*args_list, "--split-seeds", "7"]))
    assert one_split.seeds == seeds_for_effect(0.05, 0.05) and one_split.split_seeds == (7,)


@pytest.mark.slow
def topic_study_argv(tmp_path) -> list[str]:
    """``study lc-transfer`` at seconds scale on 60 samples in 3 word topics written into ``tmp_path``
    (``s.tsv``, labels ``l.tsv``), without ``--out``."""
    rng = np.random.default_rng(0)
    topics = [["cat", "dog", "mouse"], ["stock", "bond", "price"], ["river", "sea", "lake"]]
    labels = np.arange(60) % 3
    (tmp_path / "s.tsv").write_text(
        "".join(f"s{i}\t{' '.join(rng.choice(topics[y], 5))}\n" for i, y in enumerate(labels))
    )
    (tmp_path / "l.tsv").write_text("".join(f"s{i}\tt{y}\n" for i, y in enumerate(labels)))
    return [
        *("study", "lc-transfer", "--init", "char"),
        *("--samples", str(tmp_path / "s.tsv"), "--labels", str(tmp_path / "l.tsv")),
        *("--n-pretrain", "30", "--n-train", "15", "--n-validation", "6", "--n-test", "9", "--levels", "0", "1"),
        *("--seeds", "2", "--steps", "1", "--batch-size", "8", "--max-length", "32"),
        *("--device", "cpu"),
    ]


def test_cli_study_with_the_tasks_own_graph(tmp_path, capsys):
    """Samples, labels and edges from files: the natural arm's gain sits beside what the dial's line
    predicts at its measured LC (here 1: each sample linked to the next of its class)."""
    (tmp_path / "e.tsv").write_text("".join(f"s{i}\ts{i + 3}\n" for i in range(57)))
    argv = [*topic_study_argv(tmp_path), "--edges", str(tmp_path / "e.tsv"), "--out", str(tmp_path / "run")]
    assert main(argv) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    own = summary["natural"]
    assert (
        own["lc"] == 1.0
    )  # every edge links one class, so every linked pre-training sample agrees with its neighbours
    assert own["predicted_gain"] == pytest.approx(summary["intercept"] + summary["slope"] * own["lc"])
    assert "the task's own graph" in capsys.readouterr().out
    rows = list(csv.DictReader((tmp_path / "run" / "results.csv").open()))
    assert len([row for row in rows if row["arm"] == "natural"]) == 2 * 2 * 4  # seeds x split seeds x metrics
    (tmp_path / "e.tsv").write_text("s0\tnobody\n")
    assert main([*argv[:-1], str(tmp_path / "other")]) == 2
    assert "nobody" in capsys.readouterr().err


def test_arms_are_evaluated_on_the_validation_split_while_they_train(tmp_path):
    """``eval_every``: every trained arm's validation metrics every N steps and at the last step,
    in ``evaluations.csv``; the results (scored on the test split) are those of an unwatched study."""
    common = dict(
        init="char", n_pretrain=40, n_train=24, n_validation=8, n_test=16, levels=(0.0, 1.0), seeds=1, split_seeds=(0,)
    )
    train = train_config("char", steps=4, batch_size=8, max_len=32, device="cpu")
    watched = LcTransferConfig(train=dataclasses.replace(train, eval_every=2), **common)
    run_lc_transfer(watched, tmp_path / "watched", log=lambda _: None)
    run_lc_transfer(LcTransferConfig(train=train, **common), tmp_path / "plain", log=lambda _: None)
    trace = list(csv.DictReader((tmp_path / "watched" / "evaluations.csv").open()))
    assert {(row["arm"], row["level"]) for row in trace} == {("lm", ""), ("sipt", "0"), ("sipt", "1")}
    assert {row["step"] for row in trace} == {"2", "4"}
    assert {row["metric"] for row in trace} == {"knn_accuracy", "knn_auroc", "probe_accuracy", "probe_macro_f1"}
    assert all(0.0 <= float(row["value"]) <= 1.0 for row in trace)
    assert (tmp_path / "watched" / "results.csv").read_text() == (tmp_path / "plain" / "results.csv").read_text()
    assert not (tmp_path / "plain" / "evaluations.csv").exists()


@pytest.mark.slow
def test_an_interrupted_study_keeps_its_finished_seeds_and_resumes(tmp_path, monkeypatch):
    """Ctrl-C in the second seed keeps the first seed's cell; --resume trains only the second seed
    and writes what an uninterrupted study writes; another config is refused on resume."""
    from sipt_lab.studies.lc import arms as study_arms

    train = train_config("char", steps=2, batch_size=8, max_len=32, device="cpu")
    config = LcTransferConfig(
        init="char", train=train, levels=(0.0, 1.0), seeds=2, split_seeds=(0,),
        **{f"n_{name}": size for name, size in SIZES.items()},
    )  # fmt: skip
    whole = tmp_path / "whole"
    run_lc_transfer(config, whole, log=lambda _: None)

    trained_arms = []
    original = study_arms.train_arm

    def interrupt_in_the_second_seed(*args, **kwargs):
        trained_arms.append(args[2].seed)
        if len(trained_arms) == 4:  # lm and two SIPT levels per seed: the second seed's first arm
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(study_arms, "train_arm", interrupt_in_the_second_seed)
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_lc_transfer(config, out, log=lambda _: None)
    assert len(list((out / "cells").glob("*/result.json"))) == 1 and not (out / "summary.json").exists()
    with pytest.raises(SiptError, match=r"holds an unfinished run; pass --resume"):
        run_lc_transfer(config, out, log=lambda _: None)
    with pytest.raises(SiptError, match=r"another configuration \(differs in LcTransferConfig.k\)"):
        run_lc_transfer(dataclasses.replace(config, k=2), out, resume=True, log=lambda _: None)

    trained_arms.clear()
    monkeypatch.setattr(study_arms, "train_arm", original)
    monkeypatch.setattr(study_arms, "train_arm", lambda *a, **k: trained_arms.append(a[2].seed) or original(*a, **k))
    run_lc_transfer(config, out, resume=True, log=lambda _: None)
    assert len(trained_arms) == 3 and len(set(trained_arms)) == 1 and trained_arms[0] != train.seed
    assert (out / "results.csv").read_text() == (whole / "results.csv").read_text()
    assert json.loads((out / "summary.json").read_text()) == json.loads((whole / "summary.json").read_text())


def test_own_data_groups_never_span_pretraining_and_the_never_seen_splits(tmp_path, capsys):
    """``--groups``: samples of one group (say, the sentences of one document) stay on one side."""
    from sipt_lab.studies.lc.arms import study_inputs

    labels = np.arange(120) % 3
    (tmp_path / "s.tsv").write_text("".join(f"s{i}\tsome text {i}\n" for i in range(120)))
    (tmp_path / "l.tsv").write_text("".join(f"s{i}\tt{y}\n" for i, y in enumerate(labels)))
    (tmp_path / "g.tsv").write_text("".join(f"s{i}\tdocument{i // 6}\n" for i in range(120)))
    files = {"samples": str(tmp_path / "s.tsv"), "labels": str(tmp_path / "l.tsv"), "groups": str(tmp_path / "g.tsv")}
    config = LcTransferConfig(init="char", **files, **{f"n_{name}": size for name, size in SIZES.items()})
    for split_seed in (0, 1):
        task, splits, _ = study_inputs(config, split_seed)
        sides = [set(task.groups[index]) for index in splits.values()]
        assert all(not a & b for a, b in itertools.combinations(sides, 2))
    (tmp_path / "g.tsv").write_text("".join(f"s{i}\tdocument{i // 6}\n" for i in range(119)))
    argv = ["study", "lc-transfer", "--init", "char", "--out", str(tmp_path / "run")]
    for name, path in files.items():
        argv += [f"--{name}", path]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "g.tsv" in err and "s119" in err and len(err.splitlines()) == 1
    with pytest.raises(ConfigError, match="groups"):
        LcTransferConfig(init="char", groups=files["groups"])
