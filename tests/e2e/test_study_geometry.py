"""The LC-transfer study's geometry arm (``LcTransferConfig.geometry_arm``)."""

from __future__ import annotations

import csv
import dataclasses
import json

import numpy as np

from sipt_lab.studies.lc.config import LcTransferConfig
from sipt_lab.studies.lc.transfer import run_lc_transfer
from sipt_lab.training.defaults import train_config


def tiny_task(tmp_path):
    rng = np.random.default_rng(0)
    words = {"fruit": "apple pear plum fig lime kiwi".split(), "sky": "cloud rain sun star moon wind".split()}
    labels = ["fruit", "sky"] * 16
    samples, tags = tmp_path / "samples.tsv", tmp_path / "labels.tsv"
    samples.write_text("".join(f"s{i}\t{' '.join(rng.choice(words[y], 4))}\n" for i, y in enumerate(labels)))
    tags.write_text("".join(f"s{i}\t{y}\n" for i, y in enumerate(labels)))
    return str(samples), str(tags)


def test_the_geometry_arm_adds_its_rows_and_summary_entry_and_leaves_the_rest_alone(tmp_path):
    samples, labels = tiny_task(tmp_path)
    config = LcTransferConfig(
        samples=samples,
        labels=labels,
        n_pretrain=12,
        n_train=8,
        n_validation=4,
        n_test=8,
        levels=(1.0, 0.0),
        seeds=2,
        init="char",
        encoder="paper-small",
        train=train_config("char", steps=2, batch_size=4, max_len=16, device="cpu"),
    )
    plain = run_lc_transfer(config, tmp_path / "plain", log=lambda _: None)
    lines = []
    summary = run_lc_transfer(dataclasses.replace(config, geometry_arm=True), tmp_path / "geometry", log=lines.append)
    assert "geometry" not in plain and '"geometry_arm"' not in (tmp_path / "plain" / "config.json").read_text()

    plain_rows = (tmp_path / "plain" / "results.csv").read_text()
    rows = list(csv.DictReader((tmp_path / "geometry" / "results.csv").open()))
    extra = [row for row in rows if row["arm"] == "sipt-normalised"]
    assert len(extra) == 2 * 2 * 4  # per seed and split seed, every metric, at the top level only
    assert {(row["level"], row["q"], row["lc"]) for row in extra} == {("0", "1", "1")}
    # without the arm's rows, results.csv is byte for byte the run's without the arm
    text = (tmp_path / "geometry" / "results.csv").read_text()
    kept = "".join(line for line in text.splitlines(keepends=True) if ",sipt-normalised," not in line)
    assert kept == plain_rows and len(rows) == plain_rows.count("\n") - 1 + len(extra)

    written = json.loads((tmp_path / "geometry" / "summary.json").read_text())["geometry"]
    assert written["arm"] == "sipt-normalised" and written["si_geometry"] == "normalised"
    assert written["level"] == 0 and written["q"] == 1.0 and len(written["gain_ci"]) == 2
    assert written["default_gain"] == summary["levels"][0]["gain"]
    assert "L_SI on normalised vectors at q=1" in summary["verdict"] == lines[-1]
