"""Graph builders that scale out (the Hamming graph as Dask joins, radius graphs by blocked
neighbour search) give exactly the single-machine builders' graphs."""

import logging

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import LocalCluster

from sipt_lab.core.errors import SiptError
from sipt_lab.domains.hamming_dask import dask_hamming_graph, label_rows
from sipt_lab.domains.networks import hamming_graph
from sipt_lab.evaluation.radius_blocks import blocked_radius_graph, dask_radius_graph
from sipt_lab.evaluation.radius_recovery import radius_graph


def random_labels(rng, n=70, n_labels=30):
    """Clustered 0/1 label rows of varied sizes, with a repeated row and two empty rows."""
    prototypes = rng.random((5, n_labels)) < rng.uniform(0.05, 0.5, (5, 1))
    labels = prototypes[rng.integers(0, 5, n)] ^ (rng.random((n, n_labels)) < 0.06)
    labels[3] = labels[4]
    labels[[5, 6]] = False
    return labels.astype(np.int8)


def random_points(rng, n=150):
    """``(n, 3)`` points in clumps, so that radius graphs have hubs and isolated points."""
    return rng.normal(size=(n, 3)) * 0.3 + rng.integers(0, 4, (n, 1))


def test_blocked_radius_graph_equals_the_tree_pairs():
    rng = np.random.default_rng(1)
    z = random_points(rng)
    for radius in (0.0, 0.15, 0.4, 5.0):
        expected = radius_graph(z, radius).edges().tolist()
        for block_rows in (1, 7, 64, 10_000):
            assert blocked_radius_graph(z, radius, block_rows=block_rows).edges().tolist() == expected
    with pytest.raises(SiptError, match="block_rows must be a positive"):
        blocked_radius_graph(z, 0.1, block_rows=0)


@pytest.mark.slow
def test_dask_builders_equal_the_single_machine_ones_on_a_local_cluster():
    rng = np.random.default_rng(2)
    labels, z = random_labels(rng), random_points(rng)
    rows = dd.from_pandas(label_rows(labels).sample(frac=1.0, random_state=0), npartitions=3)
    with LocalCluster(n_workers=2, processes=False, dashboard_address=None, silence_logs=logging.ERROR) as cluster:
        address = cluster.scheduler_address
        for max_distance in (0, 3, 9):
            expected = hamming_graph(labels, max_distance)
            got = dask_hamming_graph(rows, len(labels), max_distance, scheduler=address)
            assert got.edges().tolist() == expected.edges().tolist() and expected.n_edges > 10
        expected = radius_graph(z, 0.3)
        got = dask_radius_graph(z, 0.3, block_rows=40, scheduler=address)
        assert got.edges().tolist() == expected.edges().tolist() and expected.n_edges > len(z)


def test_dask_hamming_graph_refuses_bad_rows():
    rows = pd.DataFrame({"sample": [0, 1, 5], "label": ["GO:1", "GO:1", "GO:2"]})
    with pytest.raises(SiptError, match=r"sample ids must be in \[0, 3\)"):
        dask_hamming_graph(rows, 3, 1, workers=1)
    with pytest.raises(SiptError, match="no column label"):
        dask_hamming_graph(rows.rename(columns={"label": "term"}), 3, 1, workers=1)
