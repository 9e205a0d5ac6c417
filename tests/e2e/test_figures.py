"""Every paper figure on a tiny grid (fake corpus, a few training steps), the shared grid's
resumption, the ``figures`` command and the per-figure scripts."""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json
import logging
import math
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

from sipt_lab.cli.main import main
from sipt_lab.core.config_io import config_from_dict, config_hash, config_to_dict
from sipt_lab.data.corpus import Corpus
from sipt_lab.data.topics import TopicAssignment
from sipt_lab.studies.paper.figure5 import figure5_configs, run_figure5_grid
from sipt_lab.studies.paper.figure_options import FigureOptions, experiment_config
from sipt_lab.studies.paper.figures import FIGURES
from sipt_lab.studies.paper.heldout_scale import (
    HELDOUT_SCALE_NODES,
    HELDOUT_SCALE_STEPS,
    heldout_probe,
    heldout_scale_configs,
    paired_gain_columns,
    passes_per_sample,
)
from sipt_lab.studies.simulation.stacked_cells import arm_record, plan_trainings, train_batched_cells
from sipt_lab.synthetic import builder
from sipt_lab.training.train_config import CHAR_LOSS_PARAMS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TINY = FigureOptions(
    seeds=1,
    executor="serial",
    steps=5,
    n_nodes=30,
    families=("cliques", "torus", "motif"),
    noise_rates=(0.0, 0.5),
)


def _figure_corpus(n_topics: int = 10, per_triple: int = 45, per_topic: int = 40, seed: int = 0):
    """Random short strings with hand-made topics that every family can use: ``per_triple``
    sentences on every topic triple (the manifolds' triangles) and ``per_topic`` confident (0.95)
    sentences per topic (CLIQUES and the mechanistic families)."""
    rng = np.random.default_rng(seed)
    blocks = []
    for triple in itertools.combinations(range(n_topics), 3):
        block = np.full((per_triple, n_topics), 0.1 / (n_topics - 3))
        block[:, list(triple)] = 0.9 * rng.dirichlet([2, 2, 2], per_triple)
        blocks.append(block)
    confident = np.full((n_topics * per_topic, n_topics), 0.05 / (n_topics - 1))
    confident[np.arange(n_topics * per_topic), np.repeat(np.arange(n_topics), per_topic)] = 0.95
    doc_topic = np.vstack([*blocks, confident])
    alphabet = np.array(list("abcdefgh "))
    sentences = ["".join(rng.choice(alphabet, 16)) for _ in range(len(doc_topic))]
    return Corpus(sentences, None, None, "fake"), TopicAssignment.from_doc_topic(doc_topic)


@pytest.fixture(scope="module")
def corpus_and_topics():
    return _figure_corpus()


@pytest.fixture(autouse=True)
def fake_corpus(monkeypatch, corpus_and_topics):
    corpus, topics = corpus_and_topics
    monkeypatch.setattr(builder, "load_corpus", lambda path=None: corpus)
    monkeypatch.setattr(builder, "fit_topics", lambda corpus, config: topics)


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames), list(reader)


def assert_written(out: Path, name: str, columns: list[str]) -> list[dict[str, str]]:
    for suffix in (".png", ".pdf"):
        assert (out / f"{name}{suffix}").stat().st_size > 1000
    assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / f"{name}.pdf").read_bytes()[:4] == b"%PDF"
    header, rows = read_csv(out / f"{name}.csv")
    assert header == columns
    assert rows
    return rows


def unit(value: str) -> bool:
    return 0.0 <= float(value) <= 1.0


def test_options_round_trip_through_config():
    assert config_from_dict(FigureOptions, config_to_dict(TINY)) == TINY
    assert config_from_dict(FigureOptions, config_to_dict(FigureOptions())) == FigureOptions()


def test_shared_grid_feeds_fig5a_fig5b_theorem1_and_is_computed_once(tmp_path):
    out = tmp_path / "out"
    assert set(FIGURES) == {
        "fig5a",
        "fig5b",
        "fig5cd",
        "theorem1",
        "corollary1",
        "corollary2",
        "topology",
        "heldout_scale",
        "methods",
    }
    summary = ["n_seeds", "local_consistency_mean", "local_consistency_sd"] + [
        f"{arm}_{metric}_{stat}"
        for arm in ("lm", "sipt")
        for metric in ("auroc", "heldout_auroc", "accuracy")
        for stat in ("mean", "sd")
    ]

    paths = FIGURES["fig5a"](out, TINY)
    assert out / "fig5a.png" in paths and out / "fig5a.csv" in paths
    rows = assert_written(out, "fig5a", ["graph", *summary, "paper_lm_auroc", "paper_sipt_auroc"])
    assert [row["graph"] for row in rows] == ["cliques", "torus", "motif"]
    for row in rows:
        assert row["n_seeds"] == "1" and unit(row["local_consistency_mean"])
        assert (
            unit(row["lm_auroc_mean"]) and unit(row["sipt_auroc_mean"]) and math.isnan(float(row["sipt_auroc_sd"]))
        )  # one seed: sample sd undefined
    assert float(rows[0]["local_consistency_mean"]) == 1.0  # clean cliques
    assert float(rows[0]["paper_sipt_auroc"]) == 0.941 and math.isnan(float(rows[2]["paper_lm_auroc"]))
    cells_header, cells = read_csv(out / "fig5_cells.csv")
    assert len(cells) == 3 and "config.graph.noise" in cells_header and "metrics.methods.sipt.auroc" in cells_header

    alone = tmp_path / "fig5b_alone"  # fig5b runs CLIQUES at its noise rates, not every family of the grid
    FIGURES["fig5b"](alone, TINY)
    assert sorted(row["config.graph.noise"] for row in read_csv(alone / "fig5_cells.csv")[1]) == ["0.0", "0.5"]
    assert {row["config.graph.family"] for row in read_csv(alone / "fig5_cells.csv")[1]} == {"cliques"}

    FIGURES["fig5b"](out, TINY)
    hashes = sorted(p.name for p in (out / "cells").iterdir())
    stamps = {p: p.stat().st_mtime_ns for p in (out / "cells").glob("*/result.json")}
    again = run_figure5_grid(out, TINY)
    assert [cell.status for cell in again] == ["skipped"] * 4

    rows = assert_written(out, "fig5b", ["noise", "noise_percent", *summary, "paper_lm_auroc", "paper_sipt_auroc"])
    assert [float(row["noise"]) for row in rows] == [0.0, 0.5]
    assert float(rows[1]["local_consistency_mean"]) < 1.0 and float(rows[1]["paper_lm_auroc"]) == 0.648

    FIGURES["theorem1"](out, TINY)
    rows = assert_written(
        out,
        "theorem1",
        [
            "graph",
            "noise",
            "seed",
            "embedder",
            "local_consistency",
            "accuracy",
            "auroc",
            "accuracy_minus_lc",
            "radius_f1",
            "radius_nn_accuracy",
            "radius_nn_coverage",
            "radius_nn_minus_lc",
        ],
    )
    assert sorted(row["embedder"] for row in rows) == ["oracle"] * 4 + ["sipt"] * 4
    assert all(unit(row["accuracy"]) and unit(row["local_consistency"]) for row in rows)
    oracle = {(r["graph"], r["noise"]): r for r in rows if r["embedder"] == "oracle"}
    sipt = {(r["graph"], r["noise"]): r for r in rows if r["embedder"] == "sipt"}
    lc = {k: r["local_consistency"] for k, r in sipt.items()}
    assert {k: r["local_consistency"] for k, r in oracle.items()} == lc
    assert float(oracle["cliques", "0.0"]["accuracy"]) == 1.0  # the oracle reaches LC = 1 on clean cliques
    assert float(oracle["cliques", "0.0"]["radius_f1"]) == 1.0 == float(oracle["cliques", "0.0"]["radius_nn_accuracy"])
    assert all(unit(row["radius_f1"]) and unit(row["radius_nn_accuracy"]) for row in rows)
    oracle_configs = [json.loads(p.read_text()) for p in (out / "cells" / "oracle").glob("*/config.json")]
    assert len(oracle_configs) == 4  # each optimised the SIPT arm's loss, margins included
    assert all((c["loss"], c["loss_params"]) == ("contrastive", CHAR_LOSS_PARAMS) for c in oracle_configs)

    # nothing of the shared grid was recomputed by theorem1
    assert {p.name for p in (out / "cells").iterdir()} == {*hashes, "oracle"}
    assert {p: p.stat().st_mtime_ns for p in (out / "cells").glob("*/result.json")} == stamps


def test_fig5cd_umap_of_both_arms(tmp_path):
    FIGURES["fig5cd"](tmp_path, TINY)
    rows = assert_written(tmp_path, "fig5cd", ["arm", "node", "umap_x", "umap_y", "topic", "arm_loo_auroc"])
    assert [row["arm"] for row in rows] == ["lm"] * 30 + ["sipt"] * 30
    assert all(math.isfinite(float(row["umap_x"])) and unit(row["arm_loo_auroc"]) for row in rows)
    assert len({row["topic"] for row in rows}) == 5  # MOBIUS has 5 topic vertices


def test_topology_counts_bars_and_compares_with_betti_numbers(tmp_path):
    FIGURES["topology"](tmp_path, TINY)
    rows = assert_written(
        tmp_path,
        "topology",
        [
            "surface",
            "embedder",
            "n_points",
            "rips_quantile",
            "max_edge_length",
            "long_bar_fraction",
            "b0",
            "b1",
            "b2",
            "true_b0",
            "true_b1",
            "true_b2",
            "matches",
            "points",
            "n_input",
            "knn_k",
            "knn_scale",
            "positions_b0",
            "positions_b1",
            "positions_b2",
        ],
    )
    assert [(r["surface"], r["embedder"]) for r in rows] == [
        (s, e) for s in ("torus", "sphere") for e in ("surface (geodesic)", "LM", "SIPT")
    ]
    truth = {r["surface"]: (r["true_b0"], r["true_b1"], r["true_b2"]) for r in rows}
    assert truth == {"torus": ("1", "2", "1"), "sphere": ("1", "0", "1")}
    assert all(int(r["b0"]) >= 1 and float(r["max_edge_length"]) > 0 for r in rows)
    _, bars = read_csv(tmp_path / "topology_bars.csv")
    long_lived = sum(r["long_lived"] == "True" for r in bars if r["embedder"] == "LM" and r["surface"] == "torus")
    lm = rows[1]
    assert long_lived == int(lm["b0"]) + int(lm["b1"]) + int(lm["b2"])


def test_corollary1_accuracy_against_the_bound(tmp_path):
    FIGURES["corollary1"](tmp_path, TINY)
    rows = assert_written(
        tmp_path, "corollary1", ["agreement", "seed", "bound", "nn_accuracy", "nn_auroc", "accuracy_minus_bound"]
    )
    assert len(rows) == 11
    bounds = [float(r["bound"]) for r in rows]
    assert bounds[-1] == 1.0 and bounds[0] < 0.5
    assert all(float(r["accuracy_minus_bound"]) <= 0.05 for r in rows)  # Corollary 1 holds (up to noise)
    assert (tmp_path / "cells" / "corollary1").is_dir()


def test_corollary2_lc_grows_towards_one(tmp_path):
    FIGURES["corollary2"](tmp_path, TINY)
    rows = assert_written(tmp_path, "corollary2", ["surface", "n", "seed", "r", "lc", "mean_degree"])
    for surface in ("plane", "mobius", "sphere", "torus"):
        curve = [r for r in rows if r["surface"] == surface]
        assert int(curve[0]["n"]) == 100 and int(curve[-1]["n"]) == 30000
        assert float(curve[-1]["lc"]) > 0.97 and float(curve[-1]["lc"]) > float(curve[0]["lc"])
        assert float(curve[-1]["r"]) < float(curve[0]["r"])


def test_heldout_scale_trains_equal_steps_at_every_size_unless_asked_for_passes():
    configs = heldout_scale_configs(FigureOptions(seeds=2))
    sizes = [(c.simulation.graph.family, c.simulation.graph.n_nodes, c.simulation.graph.seed) for c in configs]
    assert sizes == [(f, n, s) for f, nodes in HELDOUT_SCALE_NODES.items() for n in nodes for s in (0, 1)]
    for config in configs:
        train, graph = config.simulation.train, config.simulation.graph
        assert train.steps == HELDOUT_SCALE_STEPS and train.seed == graph.seed and graph.n_heldout == 200
    passes = {
        (c.simulation.graph.family, c.simulation.graph.n_nodes): passes_per_sample(
            c.simulation.train.steps, c.simulation.graph.n_nodes, c.simulation.train.batch_size
        )
        for c in configs
    }
    assert passes[("cliques", 50)] == HELDOUT_SCALE_STEPS  # batch 50: one pass per step
    assert passes[("cliques", 1000)] == HELDOUT_SCALE_STEPS * 50 / 1000
    assert passes[("torus", 300)] == HELDOUT_SCALE_STEPS * 32 / 300
    equal = heldout_scale_configs(FigureOptions(seeds=1, steps=30, scale_nodes=(20, 40)))
    assert [c.simulation.train.steps for c in equal] == [30] * 4
    tiny = heldout_scale_configs(FigureOptions(seeds=1, steps=30, passes=2.0, scale_nodes=(20, 40)))
    assert [c.simulation.train.steps for c in tiny] == [2, 2, 2, 3]  # batch capped at n; ceil(2 * 40 / 32)


def test_heldout_scale_gains_are_paired_by_seed():
    """A gain of 0.1 ± 0.01 on seeds whose levels differ by 0.2: a paired interval excludes 0, an
    unpaired comparison of the arms' means would not."""
    lm, noise = (0.5, 0.7, 0.9), (-0.01, 0.0, 0.01)
    cells = [{"methods": {"lm": {"m": a}, "sipt": {"m": a + 0.1 + e}}} for a, e in zip(lm, noise)]
    row = paired_gain_columns(cells, ("m",))
    assert list(row) == ["gain_m_mean", "gain_m_ci_low", "gain_m_ci_high"]
    half = 4.302653 * 0.01 / math.sqrt(3)  # t(0.975, 2) x sd / sqrt(n)
    assert [row["gain_m_mean"], row["gain_m_ci_low"], row["gain_m_ci_high"]] == pytest.approx(
        [0.1, 0.1 - half, 0.1 + half]
    )
    assert math.isnan(paired_gain_columns(cells[:1], ("m",))["gain_m_ci_low"])


def test_heldout_probe_trains_on_pretraining_samples_and_tests_on_heldout():
    rng = np.random.default_rng(0)
    labels, heldout_labels = np.arange(60) % 3, np.arange(30) % 3
    separable = lambda y: np.eye(3)[y] * 5 + rng.normal(0, 0.1, (len(y), 3))  # noqa: E731
    probe = heldout_probe(separable(labels), labels, separable(heldout_labels), heldout_labels, 0.2, seed=0)
    assert probe.test == {"accuracy": 1.0, "macro_f1": 1.0}
    noise = heldout_probe(rng.normal(size=(60, 3)), labels, rng.normal(size=(30, 3)), heldout_labels, 0.2, seed=0)
    assert noise.test["macro_f1"] < 0.7


def test_heldout_scale_figure_scores_both_arms_at_every_size(tmp_path):
    options = FigureOptions(seeds=2, executor="serial", steps=3, scale_nodes=(40, 80))
    FIGURES["heldout_scale"](tmp_path, options)
    metrics = ("auroc", "heldout_auroc", "probe_macro_f1")
    rows = assert_written(
        tmp_path,
        "heldout_scale",
        [
            "graph",
            "n_nodes",
            "steps",
            "passes",
            "batch_size",
            "n_heldout",
            "n_seeds",
            "local_consistency_mean",
            "local_consistency_sd",
            *(f"{arm}_{m}_{stat}" for arm in ("lm", "sipt") for m in metrics for stat in ("mean", "sd")),
            *(f"gain_{m}_{stat}" for m in metrics for stat in ("mean", "ci_low", "ci_high")),
        ],
    )
    assert [(r["graph"], r["n_nodes"], r["steps"], float(r["passes"])) for r in rows] == [
        ("cliques", "40", "3", 3.0),
        ("cliques", "80", "3", 3 * 50 / 80),
        ("torus", "40", "3", 3 * 32 / 40),
        ("torus", "80", "3", 3 * 32 / 80),
    ]
    assert all(unit(r[f"{arm}_{m}_mean"]) for r in rows for arm in ("lm", "sipt") for m in metrics)
    _, cells = read_csv(tmp_path / "heldout_scale_cells.csv")
    assert len(cells) == 8 and all(int(c["metrics.n_heldout"]) == 200 for c in cells)
    assert all(float(c[f"metrics.methods.{arm}.probe_strength"]) > 0 for c in cells for arm in ("lm", "sipt"))
    for row in rows:
        gains = [
            float(c["metrics.methods.sipt.heldout_auroc"]) - float(c["metrics.methods.lm.heldout_auroc"])
            for c in cells
            if (c["metrics.graph"], c["metrics.n_nodes"]) == (row["graph"], row["n_nodes"])
        ]
        low, mean, high = (float(row[f"gain_heldout_auroc_{stat}"]) for stat in ("ci_low", "mean", "ci_high"))
        assert mean == pytest.approx(np.mean(gains)) and low <= mean <= high


def test_cli_and_script(tmp_path, capsys, monkeypatch):
    assert (
        main(
            ["figures", "--only", "corollary1", "--seeds", "1", "--executor", "serial", "--out", str(tmp_path / "cli")]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "corollary1.png" in out and "total wall time" in out
    assert (tmp_path / "cli" / "corollary1.pdf").exists()

    monkeypatch.setattr(
        sys, "argv", ["corollary1.py", "--seeds", "1", "--executor", "serial", "--out", str(tmp_path / "script")]
    )
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(ROOT / "paper_figures" / "corollary1.py"), run_name="__main__")
    assert exit_info.value.code == 0
    assert (tmp_path / "script" / "corollary1.csv").exists()
    for name in FIGURES:
        assert f'script_main("{name}", __file__)' in (ROOT / "paper_figures" / f"{name}.py").read_text()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--only", "fig9", "corollary2"], "unknown figure(s) fig9; choose from: fig5a, fig5b, fig5cd, theorem1"),
        (["--seeds", "0"], "--seeds must be in [1, 1,000], got 0"),
        (["--executor", "cloud"], "unknown executor 'cloud'"),
        (["--families", "nope"], "unknown graph 'nope'"),
    ],
)
def test_cli_errors_exit_2_with_one_line(tmp_path, capsys, args, message):
    assert main(["figures", *args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not any(tmp_path.iterdir())  # nothing ran


def test_preset_encoder_and_batched_reach_the_grid(tmp_path, monkeypatch):
    from sipt_lab.studies.paper import figures

    seen = {}
    monkeypatch.setattr(figures, "make_figures", lambda names, out, options: seen.setdefault("options", options) and {})
    assert (
        main(
            [
                "figures",
                "--only",
                "fig5b",
                "--preset",
                "paper",
                "--encoder",
                "paper-small",
                "--batched",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    options = seen["options"]
    assert (options.preset, options.encoder, options.batched) == ("paper", "paper-small", True)
    config = figure5_configs(dataclasses.replace(options, families=("cliques", "torus")))[0]
    assert (
        config.encoder.hidden == 10 and config.train.steps == 8000 and config.train.batch_size == config.graph.n_nodes
    )
    torus = experiment_config("torus", dataclasses.replace(options, encoder=None))
    assert torus.encoder.hidden == 256


def test_batched_grid_stores_the_same_cells_as_the_unbatched_one(tmp_path, fake_corpus):
    # every noise rate's and seed's arms in one training (serial), each seed's LM arm shared by its rates
    options = dataclasses.replace(TINY, families=("cliques",), noise_rates=(0.0, 0.5), seeds=2, steps=3, preset="paper")
    assert [len(jobs) for jobs in plan_trainings(figure5_configs(options), "serial", {})] == [6]
    separate = run_figure5_grid(tmp_path / "a", options)
    batched = run_figure5_grid(tmp_path / "b", dataclasses.replace(options, batched=True))
    assert [c.hash for c in separate] == [c.hash for c in batched] and all(c.status == "skipped" for c in batched)
    for a, b in zip(separate, batched):
        for arm in ("lm", "sipt"):
            assert abs(a.result["methods"][arm]["final_loss"] - b.result["methods"][arm]["final_loss"]) < 1e-4


def test_batched_trainings_are_grid_cells_that_a_rerun_skips(tmp_path, fake_corpus, capfd, caplog):
    caplog.set_level(logging.INFO, logger="sipt_lab")  # bars show where the sipt_lab logger logs INFO
    options = dataclasses.replace(TINY, families=("cliques",), noise_rates=(0.0, 0.5), seeds=2, steps=2, preset="paper")
    configs = figure5_configs(options)
    assert train_batched_cells(configs, tmp_path, executor="serial") == 4
    assert "pretrain x6" in capfd.readouterr().err  # the training's own step bar (2 seeds' LM arms + 4 SIPT arms)
    trainings = [json.loads((d / "result.json").read_text()) for d in (tmp_path / "batched").iterdir()]
    # one training; each seed's LM model evaluated on both its noise rates' cells
    assert [sorted(t["arms"]) for t in trainings] == [
        sorted(str(arm_record(tmp_path, c, arm)) for c in configs for arm in ("lm", "sipt"))
    ]
    assert all((tmp_path / config_hash(c) / "result.json").is_file() for c in configs)
    assert train_batched_cells(configs, tmp_path, executor="serial") == 0


def test_a_cell_whose_arms_train_in_two_trainings_is_stored_once_both_are_recorded(tmp_path, fake_corpus, monkeypatch):
    import sipt_lab.studies.simulation.stacked_cells as batched

    options = dataclasses.replace(TINY, families=("cliques",), noise_rates=(0.0, 0.5), seeds=1, steps=3, preset="paper")
    configs = figure5_configs(options)
    monkeypatch.setitem(batched.CONCURRENT_TRAININGS, "serial", lambda options: 2)  # two trainings, one after the other
    plan = plan_trainings(configs, "serial", {})
    assert [[(job.arm, len(job.cells)) for job in jobs] for jobs in plan] == [[("lm", 2)], [("sipt", 1), ("sipt", 1)]]
    assert train_batched_cells(configs, tmp_path, executor="serial") == 2
    alone = run_figure5_grid(tmp_path / "alone", options)
    for config, cell in zip(configs, alone):
        stored = json.loads((tmp_path / config_hash(config) / "result.json").read_text())
        assert stored["noise"] == config.graph.noise and stored["local_consistency"] == cell.result["local_consistency"]
        for arm in ("lm", "sipt"):
            assert abs(stored["methods"][arm]["final_loss"] - cell.result["methods"][arm]["final_loss"]) < 1e-4
    # a run stopped after its trainings recorded the arms stores the cells without training again
    (tmp_path / config_hash(configs[0]) / "result.json").unlink()
    monkeypatch.setattr(batched, "pretrain_batched", lambda *args, **kwargs: pytest.fail("trained again"))
    assert train_batched_cells(configs, tmp_path, executor="serial") == 1
    assert (tmp_path / config_hash(configs[0]) / "result.json").is_file()


def test_batched_trainings_fill_the_local_workers_and_keep_conditions_apart_elsewhere(fake_corpus):
    options = dataclasses.replace(TINY, families=("cliques",), noise_rates=(0.0, 0.5, 0.2), seeds=3, preset="paper")
    configs = figure5_configs(options)
    local = plan_trainings(configs, "local", {"max_workers": 2})
    # 3 LM models (one per seed, serving its 3 noise rates) + 9 SIPT models, each trained once, 6 per core
    assert [len(jobs) for jobs in local] == [6, 6]
    served = sorted((config_hash(cell), job.arm) for jobs in local for job in jobs for cell in job.cells)
    assert served == sorted((config_hash(c), arm) for c in configs for arm in ("lm", "sipt"))
    assert sorted(len(job.cells) for jobs in local for job in jobs if job.arm == "lm") == [3, 3, 3]
    slurm = plan_trainings(configs, "slurm", {})
    assert sorted(sorted({cell.graph.noise for job in jobs for cell in job.cells}) for jobs in slurm) == [
        [0.0],
        [0.2],
        [0.5],
    ]
    assert all(len(jobs) == 6 and all(len(job.cells) == 1 for job in jobs) for jobs in slurm)


def test_cells_on_a_gpu_train_as_one_batched_training_under_any_local_executor(fake_corpus):
    options = dataclasses.replace(TINY, families=("cliques",), noise_rates=(0.0, 0.5, 0.2), seeds=3, preset="paper")
    configs = [
        dataclasses.replace(c, train=dataclasses.replace(c.train, device="cuda")) for c in figure5_configs(options)
    ]
    for executor in ("serial", "local"):
        (jobs,) = plan_trainings(configs, executor, {"max_workers": 4})
        # 3 LM models (one per seed, serving its 3 noise rates) + 9 SIPT models in one training
        assert sorted((job.arm, len(job.cells)) for job in jobs) == [("lm", 3)] * 3 + [("sipt", 1)] * 9
    assert len(plan_trainings(configs, "slurm", {})) == 3  # a job per condition, each with its own GPU


def test_figures_help_states_the_figure_options_defaults():
    import argparse

    from sipt_lab.cli.figures import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    actions = {a.dest: a for sub in parser._subparsers._group_actions[0].choices.values() for a in sub._actions}
    assert f"(default: {FigureOptions().seeds})" in actions["seeds"].help
    assert f"(default: {FigureOptions().executor})" in actions["executor"].help
