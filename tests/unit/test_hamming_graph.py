"""hamming_graph against an all-pairs reference on small random label matrices."""

import numpy as np
import pytest
import scipy.sparse as sp

from sipt_lab.core.errors import SiptError
from sipt_lab.domains import networks
from sipt_lab.domains.networks import hamming_graph


def brute_force_edges(labels: np.ndarray, max_distance: int) -> set[tuple[int, int]]:
    distance = (labels[:, None, :] != labels[None, :, :]).sum(axis=2)
    i, j = np.nonzero(np.triu(distance <= max_distance, k=1))
    return set(zip(i.tolist(), j.tolist()))


def graph_edges(graph) -> set[tuple[int, int]]:
    return set(map(tuple, graph.edges().tolist()))


@pytest.mark.parametrize("density", [0.02, 0.1, 0.3, 0.7])
@pytest.mark.parametrize("max_distance", [0, 1, 3, 9])
def test_matches_brute_force(density, max_distance):
    rng = np.random.default_rng(int(density * 100) + max_distance)
    prototypes = rng.random((6, 40)) < density
    labels = prototypes[rng.integers(0, 6, 120)] ^ (rng.random((120, 40)) < 0.05)  # clustered, so edges exist
    expected = brute_force_edges(labels, max_distance)
    graph = hamming_graph(labels.astype(np.int8), max_distance)
    assert graph.n_nodes == 120
    assert graph_edges(graph) == expected
    assert graph.dropped_duplicates == 0 and graph.dropped_self_loops == 0
    assert graph_edges(hamming_graph(sp.csr_matrix(labels), max_distance)) == expected


def test_blocks_and_chunks_do_not_change_the_edges(monkeypatch):
    rng = np.random.default_rng(7)
    labels = rng.random((300, 70)) < 0.08  # counts spread around 5.6: small pairs and shared-label pairs
    expected = brute_force_edges(labels, 6)
    monkeypatch.setattr(networks, "_ROW_BLOCK", 17)
    monkeypatch.setattr(networks, "_PAIR_CHUNK", 5)
    assert graph_edges(hamming_graph(labels, 6)) == expected


def test_popcount_fallback_matches_numpy(monkeypatch):
    words = np.random.default_rng(0).integers(0, 2**63, size=(50, 3), dtype=np.uint64)
    expected = np.array([sum(bin(int(w)).count("1") for w in row) for row in words])
    assert np.array_equal(networks._popcount_rows(words), expected)
    monkeypatch.delattr(np, "bitwise_count", raising=False)
    assert np.array_equal(networks._popcount_rows(words), expected)


def test_empty_rows_are_linked_to_rows_within_the_distance():
    labels = np.array([[0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]])
    assert graph_edges(hamming_graph(labels, 2)) == {(0, 1), (0, 2), (1, 2), (2, 3)}


@pytest.mark.parametrize(
    ("labels", "max_distance", "message"),
    [
        (np.array([[0, 2], [1, 0]]), 1, "must be 0/1"),
        (np.zeros(5), 1, "must be an .n, L. 0/1 matrix"),
        (np.array([["a", "b"]]), 1, "must be an .n, L. 0/1 matrix"),
        (np.zeros((3, 4)), -1, "max_distance must be an integer >= 0"),
        (np.zeros((3, 4)), 2.5, "max_distance must be an integer >= 0"),
    ],
)
def test_bad_input_is_a_one_line_error(labels, max_distance, message):
    with pytest.raises(SiptError, match=message) as error:
        hamming_graph(labels, max_distance)
    assert "\n" not in str(error.value)


def test_int64_indexed_sparse_input_matches_brute_force_and_is_left_unchanged():
    # scipy shares int64 index arrays instead of copying them; compacting the prefixes once corrupted A
    labels = (np.random.default_rng(3).random((40, 30)) < 0.3).astype(np.int8)
    labels[::2, :10] = 1
    A = sp.csr_array(labels)
    A = sp.csr_array((A.data.astype(np.int32), A.indices.astype(np.int64), A.indptr.astype(np.int64)), shape=A.shape)
    before = A.toarray().copy()
    assert graph_edges(hamming_graph(A, 9)) == brute_force_edges(labels, 9)
    assert np.array_equal(A.toarray(), before)


@pytest.mark.parametrize("shared", [1, 3, 6])
def test_any_prefix_overlap_gives_the_same_edges(monkeypatch, shared):
    rng = np.random.default_rng(11)
    labels = rng.random((6, 60)) < 0.25
    labels = labels[rng.integers(0, 6, 200)] ^ (rng.random((200, 60)) < 0.04)  # counts ~15: o* reaches 6
    monkeypatch.setattr(networks, "PREFIX_SHARED", shared)
    assert graph_edges(hamming_graph(labels, 9)) == brute_force_edges(labels, 9)
