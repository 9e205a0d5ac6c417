"""The natural-graph atlas and `sipt-lab advise`, end to end on a tiny random BERT."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from hf_fakes import WORDS

from sipt_lab.cli.main import main
from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.consistency import local_consistency
from sipt_lab.jobs.advise import AdviseConfig, advise, load_fit
from sipt_lab.jobs.gain_predictor import fit_atlas


def atlas_flags(tiny_bert, out, *extra):
    return [
        "study",
        "atlas",
        "--languages",
        "en",
        "--tasks",
        "category",
        "head-5",
        "head-20",
        "--graphs",
        "tfidf-knn-3",
        "random",
        "co-mentions",
        "title-knn-5",
        "--dial-tasks",
        "en:category",
        "--dial-levels",
        "1",
        "--n-pretrain",
        "200",
        "--n-never-seen",
        "30",
        "--split-seeds",
        "0",
        "1",
        "2",
        "--init",
        str(tiny_bert),
        "--budgets",
        "1",
        "2",
        "--batch-size",
        "4",
        "--max-length",
        "12",
        "--device",
        "cpu",
        "--out",
        str(out),
        *extra,
    ]


def test_atlas_writes_its_table_fit_and_figure_and_resumes_without_training(tiny_bert, tmp_path, capsys):
    out = tmp_path / "atlas"
    assert main(atlas_flags(tiny_bert, out)) == 0
    printed = capsys.readouterr().out
    assert "leave-one-graph-out" in printed and "leave-one-task-out" in printed and "atlas time: graph" in printed
    with (out / "atlas.csv").open() as f:
        table = list(csv.DictReader(f))
    assert len(table) == 2 * (3 * 4 + 1)  # 2 budgets x (3 tasks x 4 graphs + the dial)
    assert {(row["task"], row["graph"], row["kind"]) for row in table} >= {
        ("category", "tfidf-knn-3", "natural"),
        ("head-20", "random", "control"),
        ("category", "dial q=1", "dial"),
    }
    dial = next(row for row in table if row["kind"] == "dial")
    assert float(dial["lc"]) == 1.0  # the task's own label cliques
    for row in table:
        assert row["n_pretrain"] == "200" and row["steps"] in ("1", "2") and row["replicates"] == "3"
        assert 0.0 <= float(row["encoder_consistency"]) <= 1.0
        assert float(row["gain_low"]) <= float(row["gain"]) <= float(row["gain_high"])
    with (out / "runs.csv").open() as f:
        runs = list(csv.DictReader(f))
    assert len(runs) == 3 * 3 * 2 * 3  # natural graphs x tasks x budgets x draws; no control, no dial
    assert {row["graph"] for row in runs} == {"tfidf-knn-3", "co-mentions", "title-knn-5"}
    with (out / "results.csv").open() as f:
        results = {
            (r["task"], r["arm"], r["steps"], r["split_seed"], r["metric"]): float(r["value"])
            for r in csv.DictReader(f)
        }
    for run in runs:  # each run's gain is SIPT's score minus LM-only's in that draw and budget
        key = (run["task"], run["steps"], run["split_seed"], "knn_accuracy")
        sipt, lm = results[(key[0], run["graph"], *key[1:])], results[(key[0], "lm", *key[1:])]
        assert float(run["gain"]) == pytest.approx(sipt - lm, abs=1e-5)
    fit = json.loads((out / "fit.json").read_text())
    assert fit["format"] == 2 and fit["model"] in fit["selection"] and set(fit["budgets"]) == {"1", "2"}
    assert {key: fit["regime"][key] for key in ("batch_size", "max_len", "budgets", "k")} == {
        "batch_size": 4,
        "max_len": 12,
        "budgets": [1, 2],
        "k": 3,
    }
    assert {row["scheme"] for row in fit["validation"]} == {"pair", "graph", "task"}  # one language: none to leave out
    with (out / "losses.csv").open() as f:
        losses = list(csv.DictReader(f))
    assert len(losses) == 3 * 6 * 2  # draws x trained arms (LM-only, 4 graphs, the dial) x steps
    with (out / "budgets.csv").open() as f:
        assert [row["steps"] for row in csv.DictReader(f)] == ["1", "2"]
    assert (out / "atlas.png").stat().st_size > 0
    cells = sorted(path.name for path in (out / "cells").iterdir())
    assert len(cells) == 21  # 3 draws x (init, LM-only, 4 graphs, the dial)
    before = (out / "atlas.csv").read_text()
    assert main(atlas_flags(tiny_bert, out, "--resume")) == 0
    assert (out / "atlas.csv").read_text() == before  # nothing retrained, the same table
    # one more graph keeps every finished arm: only its three cells are trained
    grown = atlas_flags(tiny_bert, out, "--resume")
    grown.insert(grown.index("co-mentions") + 1, "description-knn-5")
    assert main(grown) == 0
    assert len(list((out / "cells").iterdir())) == 24
    with (out / "atlas.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 2 * (3 * 5 + 1)
    # an arm trained otherwise is not resumed into the same atlas
    longer = atlas_flags(tiny_bert, out, "--resume")
    longer[longer.index("--budgets") + 2] = "3"
    capsys.readouterr()
    assert main(longer) == 2
    assert "--budgets" in capsys.readouterr().err


def test_a_grown_atlas_reuses_the_finished_arms(tiny_bert, tmp_path):
    from sipt_lab.grid.cells import Cell
    from sipt_lab.studies.lc.atlas import atlas_arms
    from sipt_lab.studies.lc.atlas_config import AtlasConfig
    from sipt_lab.training.defaults import train_config

    train = train_config("checkpoint", batch_size=4, max_len=12, device="cpu")
    small = AtlasConfig(graphs=("tfidf-knn-3", "random"), init=str(tiny_bert), train=train)
    grown = AtlasConfig(
        graphs=("tfidf-knn-3", "random", "co-mentions"), languages=("en", "fr"), init=str(tiny_bert), train=train
    )
    kept = {Cell.of(cell).hash for cell in atlas_arms(small)}
    assert kept <= {Cell.of(cell).hash for cell in atlas_arms(grown)}


def test_atlas_config_refuses_what_cannot_make_an_atlas():
    from sipt_lab.core.errors import ConfigError
    from sipt_lab.studies.lc.atlas_config import AtlasConfig

    with pytest.raises(ConfigError, match="dial_tasks"):
        AtlasConfig(dial_tasks=("de:category",))
    with pytest.raises(ConfigError, match="needs at least 6"):
        AtlasConfig(languages=("en",), tasks=("category",), graphs=("random",), dial_tasks=())
    with pytest.raises(ConfigError, match="pre-trained init"):
        AtlasConfig(init="char")


# ---------------------------------------------------------------------- advise
def two_topics(tmp_path, n=60, seed=0):
    """Samples of two weakly separated topics (shared words, one topic word each), their labels
    (two thirds labelled) and a consistent and a random graph over them."""
    rng = np.random.default_rng(seed)
    words = list(WORDS)
    topic_words = {0: ["his", "her"], 1: ["one", "two"]}
    labels = np.arange(n) % 2
    texts = [" ".join([*rng.choice(words, 5), rng.choice(topic_words[y])]) for y in labels]
    (tmp_path / "samples.tsv").write_text("".join(f"s{i}\t{t}\n" for i, t in enumerate(texts)))
    labelled = [i for i in range(n) if i % 3]
    (tmp_path / "labels.tsv").write_text("".join(f"s{i}\t{'AB'[labels[i]]}\n" for i in labelled))
    same = [(i, j) for i in range(n) for j in range(i + 1, n) if labels[i] == labels[j] and rng.random() < 0.2]
    (tmp_path / "consistent.tsv").write_text("".join(f"s{i}\ts{j}\n" for i, j in same))
    pairs = rng.integers(0, n, size=(len(same), 2))
    (tmp_path / "random.tsv").write_text("".join(f"s{i}\ts{j}\n" for i, j in pairs if i != j))
    return labels, labelled


def write_fit(path, tiny_bert, slope=0.4, noise=0.005, lcs=(0.05, 1.0), seed=0):
    """A fit of runs whose single-run gain is ``slope * (LC - 0.8)``, LC spread over ``lcs``, at
    budgets 4 and 64, for the tiny BERT at 16 tokens and k 3."""
    from atlas_fakes import ATLAS_REGIME, synthetic_atlas_runs

    regime = ATLAS_REGIME | {"init": str(tiny_bert), "max_len": 16}
    runs = synthetic_atlas_runs(slope=slope, noise=noise, lcs=lcs, crossover=0.8, seed=seed)
    path.write_text(json.dumps(fit_atlas(runs, regime) | {"points": []}))
    return path


@pytest.fixture()
def rising_fit(tmp_path, tiny_bert):
    return write_fit(tmp_path / "fit.json", tiny_bert)


def test_advise_says_a_consistent_graph_helps_and_a_random_one_does_not(tiny_bert, tmp_path, rising_fit):
    labels, labelled = two_topics(tmp_path)
    common = dict(
        samples=str(tmp_path / "samples.tsv"),
        labels=str(tmp_path / "labels.tsv"),
        init=str(tiny_bert),
        fit=str(rising_fit),
        device="cpu",
        steps=64,
    )
    good = advise(edges=str(tmp_path / "consistent.tsv"), **common)
    bad = advise(AdviseConfig(edges=str(tmp_path / "random.tsv"), **common))
    assert good["lc"] == 1.0 and good["labelled"] == len(labelled) == 40
    assert good["verdict"] == "expected to help", good
    assert bad["verdict"] != "expected to help", bad
    assert bad["lc"] < good["lc"]
    assert good["encoder_consistency"] == bad["encoder_consistency"]  # the same labelled samples, embedded once each
    assert bad["lc_ci"][0] <= bad["lc"] <= bad["lc_ci"][1]
    assert good["lc_ci"][1] == 1.0 and 0.0 < good["lc_ci"][0] < 1.0  # Wilson: inside [0, 1] even at LC 1
    assert good["steps"] == 64 and good["regime"]["batch_size"] == 8 and good["k"] == 3
    assert not good["warnings"]


def test_advise_lc_is_over_the_labelled_subset(tiny_bert, tmp_path, rising_fit):
    labels, labelled = two_topics(tmp_path)
    report = advise(
        samples=str(tmp_path / "samples.tsv"),
        edges=str(tmp_path / "random.tsv"),
        labels=str(tmp_path / "labels.tsv"),
        init=str(tiny_bert),
        fit=str(rising_fit),
        device="cpu",
        steps=16,
    )
    from sipt_lab.data.samples import read_sample_graph, read_samples

    samples = read_samples(tmp_path / "samples.tsv")
    graph = read_sample_graph(tmp_path / "random.tsv", samples).subgraph(np.array(labelled))
    assert report["lc"] == pytest.approx(local_consistency(graph, labels[labelled]))


def advise_flags(tmp_path, tiny_bert, fit, edges="consistent.tsv", labels="labels.tsv"):
    return [
        "advise",
        "--samples",
        str(tmp_path / "samples.tsv"),
        "--edges",
        str(tmp_path / edges),
        "--labels",
        str(tmp_path / labels),
        "--init",
        str(tiny_bert),
        *(["--fit", str(fit)] if fit else []),
        "--device",
        "cpu",
    ]


def test_advise_cli_prints_a_verdict_the_regime_and_json(tiny_bert, tmp_path, rising_fit, capsys):
    two_topics(tmp_path)
    flags = advise_flags(tmp_path, tiny_bert, rising_fit)
    assert main([*flags, "--steps", "64"]) == 0
    out = capsys.readouterr().out
    assert "verdict: expected to help" in out and "LC of the labels over the graph: 1.000" in out
    assert "prediction for: init" in out and "64 optimiser steps (given) of batch 8 x 16 tokens" in out
    assert "single-run interval" in out and "3-NN accuracy" in out
    assert main([*flags, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "expected to help" and len(report["prediction_interval"]) == 2
    assert report["steps"] == 8  # default: one pass over the 60 samples at the atlas's batch of 8


def test_advise_names_the_settings_that_differ_from_the_atlas(tiny_bert, tmp_path, rising_fit, capsys):
    two_topics(tmp_path)
    flags = advise_flags(tmp_path, tiny_bert, rising_fit)
    assert main([*flags, "--k", "10", "--max-length", "8", "--steps", "1000"]) == 0
    out = capsys.readouterr().out
    assert "the init's own 10-NN consistency" in out and "3-NN" not in out.replace("atlas's 3", "")
    assert "warning: --k 10 differs from the atlas's 3" in out
    assert "warning: --max-length 8 differs from the atlas's 16" in out
    assert "warning: 1000 steps lie outside the atlas's budgets 4-64" in out


def test_advise_refuses_a_k_the_labelled_samples_cannot_hold(tiny_bert, tmp_path, rising_fit, capsys):
    two_topics(tmp_path)
    assert main([*advise_flags(tmp_path, tiny_bert, rising_fit), "--k", "40"]) == 2
    err = capsys.readouterr().err
    assert "needs more than 40 labelled samples" in err and err.count("\n") == 1


def test_advise_draws_the_graph_on_the_atlas(tiny_bert, tmp_path, rising_fit):
    two_topics(tmp_path)
    assert main([*advise_flags(tmp_path, tiny_bert, rising_fit), "--plot", str(tmp_path / "mine.png")]) == 0
    assert (tmp_path / "mine.png").stat().st_size > 0 and (tmp_path / "mine.pdf").is_file()


def test_advise_warns_outside_the_atlas(tiny_bert, tmp_path, capsys):
    two_topics(tmp_path)
    narrow = write_fit(tmp_path / "narrow.json", tiny_bert, lcs=(0.2, 0.4))
    assert main(advise_flags(tmp_path, tiny_bert, narrow)) == 0
    assert "warning: lc 1.000 outside the atlas's" in capsys.readouterr().out


def test_advise_help_says_percent_once(capsys):
    with pytest.raises(SystemExit):
        main(["advise", "--help"])
    out = capsys.readouterr().out
    assert "90%" in out and "%%" not in out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("unknown-id", "names id 'nobody'"),
        ("one-class", "gives one class only"),
        ("no-link", "links no two labelled samples"),
        ("bad-fit", "is not JSON"),
        ("nan-fit", "non-finite coefficient"),
        ("old-fit", "rerun `sipt-lab study atlas`"),
        ("missing", "does not exist"),
        ("no-edges", "--edges"),
    ],
)
def test_advise_bad_input_is_one_line_exit_2(tiny_bert, tmp_path, capsys, change, message):
    two_topics(tmp_path)
    labels, edges, fit = tmp_path / "labels.tsv", "consistent.tsv", None
    if change == "unknown-id":
        labels.write_text(labels.read_text() + "nobody\tA\n")
    elif change == "one-class":
        labels.write_text("s1\tA\ns2\tA\n")
    elif change == "no-link":
        (tmp_path / edges).write_text("s0\ts3\n")  # both unlabelled
    elif change == "bad-fit":
        fit = tmp_path / "fit.json"
        fit.write_text("{not json")
    elif change in ("nan-fit", "old-fit"):
        fit = write_fit(tmp_path / "fit.json", tiny_bert)
        broken = json.loads(fit.read_text())
        if change == "nan-fit":
            broken["budgets"]["4"]["params"]["coefficients"][0] = float("nan")
        else:
            broken["format"] = 1
        fit.write_text(json.dumps(broken))
    elif change == "missing":
        edges = "nothing.tsv"
    flags = advise_flags(tmp_path, tiny_bert, fit, edges)
    if change == "no-edges":
        del flags[flags.index("--edges") : flags.index("--edges") + 2]
    assert main(flags) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_the_shipped_fit_is_the_committed_atlas_fit():
    from pathlib import Path

    committed = Path(__file__).resolve().parents[2] / "results" / "lc_atlas_fit.json"
    assert load_fit() == json.loads(committed.read_text())


def test_load_fit_refuses_what_is_not_a_fit(tmp_path):
    (tmp_path / "other.json").write_text('{"a": 1}')
    with pytest.raises(SiptError, match="is not a predictor fit"):
        load_fit(tmp_path / "other.json")


def test_the_committed_validation_is_recomputed_from_the_committed_runs():
    """Every number of the atlas's validation table, and the shipped model's choice, follow from
    ``results/lc_atlas_runs.csv`` by the code."""
    from pathlib import Path

    from sipt_lab.jobs.gain_predictor import fit_atlas as refit

    results = Path(__file__).resolve().parents[2] / "results"
    committed = json.loads((results / "lc_atlas_fit.json").read_text())
    with (results / "lc_atlas_runs.csv").open() as f:
        runs = [
            {key: value if key in ("language", "task", "graph") else float(value) for key, value in row.items()}
            for row in csv.DictReader(f)
            if row["lc"] not in ("", "nan")
        ]
    again = refit(runs, committed["regime"])
    assert again["model"] == committed["model"]
    for mine, theirs in zip(again["validation"], committed["validation"], strict=True):
        assert mine.keys() == theirs.keys()
        for key, value in mine.items():
            if isinstance(value, str) or value is None:
                assert value == theirs[key], (mine["steps"], mine["scheme"], key)
            else:
                assert value == pytest.approx(theirs[key], rel=1e-9, abs=1e-12), (mine["steps"], mine["scheme"], key)


def _consistency_json(capsys, tmp_path, edges: str, *engine: str) -> dict:
    argv = ["consistency", "--edges", str(tmp_path / edges), "--labels", str(tmp_path / "labels.tsv"), "--json"]
    assert main([*argv, *engine]) == 0
    return json.loads(capsys.readouterr().out)


ENGINES = {
    "memory": (),
    "stream": ("--engine", "stream", "--chunk-size", "7"),
    "dask": ("--engine", "dask", "--workers", "1"),
}


@pytest.mark.parametrize("engine", list(ENGINES))
def test_consistency_gives_advises_lc_on_labels_for_some_samples(tiny_bert, tmp_path, rising_fit, capsys, engine):
    """One rule for labels that cover a subset: ``consistency`` leaves out the edges with an
    unlabelled end, counts them, and gives the LC that ``advise`` gives on the same files, with
    every engine."""
    if engine == "dask":
        pytest.importorskip("distributed")
    labels, labelled = two_topics(tmp_path)
    for edges in ("random.tsv", "consistent.tsv"):
        measured = _consistency_json(capsys, tmp_path, edges, *ENGINES[engine])
        advised = advise(
            samples=str(tmp_path / "samples.tsv"),
            edges=str(tmp_path / edges),
            labels=str(tmp_path / "labels.tsv"),
            init=str(tiny_bert),
            fit=str(rising_fit),
            device="cpu",
        )
        lines = [line.split("\t") for line in (tmp_path / edges).read_text().splitlines()]
        unlabelled = sum(int(u[1:]) not in labelled or int(v[1:]) not in labelled for u, v in lines)
        assert unlabelled > 0 and measured["unlabelled_edges"] == unlabelled
        assert measured["n_nodes"] == len(labelled)
        assert measured["local_consistency"] == pytest.approx(advised["lc"], abs=1e-12)
