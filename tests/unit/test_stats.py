import math

import numpy as np
import pytest

from sipt_lab.cli.simulate import format_summary
from sipt_lab.core.stats import format_mean_sd, mean_sd


def test_mean_sd_is_the_sample_sd():
    assert mean_sd([1.0, 2.0, 3.0, None]) == (2.0, 1.0)
    assert mean_sd(np.array([0.0, 1.0]))[1] == pytest.approx(np.std([0.0, 1.0], ddof=1))
    mean, sd = mean_sd([0.4])
    assert mean == 0.4 and math.isnan(sd)
    assert all(math.isnan(x) for x in mean_sd([None]))


def test_format_mean_sd():
    assert format_mean_sd(np.array([0.0, 1.0])) == "0.500 ± 0.707"
    assert format_mean_sd([0.25]) == "0.250" and format_mean_sd(None) == "-" and format_mean_sd([]) == "-"
    assert format_mean_sd([10, 12], 0) == "11 ± 1"


def test_cli_table_shows_the_sample_sd():
    metrics = {
        "auroc": [0.0, 1.0],
        "heldout_auroc": [0.5, 0.5],
        "accuracy": [0.0, 1.0],
        "link.mrr": [1.0, 1.0],
        "link.lrap": [1.0, 1.0],
    }
    summary = {
        "graph": "torus",
        "noise": 0.0,
        "seeds": [0, 1],
        "n_nodes": [10, 10],
        "n_edges": [20, 22],
        "local_consistency_per_seed": [0.9, 0.9],
        "methods": {"lm": metrics},
        "out_dir": "runs/x",
    }
    table = format_summary(summary)
    assert "0.500 ± 0.707" in table and "21 ± 1" in table
