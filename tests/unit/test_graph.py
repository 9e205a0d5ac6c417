import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs import graph as graph_module
from sipt_lab.graphs import noise as noise_module
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.graphs.noise import NOISE_MODES, add_noise
from sipt_lab.graphs.tsv import load_graph_tsv, read_edges_tsv, read_labels_tsv, write_edges_tsv, write_labels_tsv

# 0-1, 1-2, 1-3, 3-4; node 5 isolated
PATH_U = [0, 1, 1, 3]
PATH_V = [1, 2, 3, 4]


def small_graph():
    return PretrainingGraph.from_edges(PATH_U, PATH_V, 6)


def test_from_edges_symmetrises_and_reports_dropped():
    g = PretrainingGraph.from_edges([0, 1, 1, 2, 3, 3, 4], [1, 0, 2, 2, 4, 1, 3], 6)
    assert g.edges().tolist() == [[0, 1], [1, 2], [1, 3], [3, 4]]
    assert g.dropped_self_loops == 1  # 2-2
    assert g.dropped_duplicates == 2  # 1-0 repeats 0-1, 4-3 repeats 3-4
    assert (g.n_nodes, g.n_edges, g.is_implicit, g.groups) == (6, 4, False, None)
    assert g.degrees().tolist() == [1, 3, 1, 2, 1, 0]
    assert g.degrees().dtype == np.int64
    assert g.neighbors(1).tolist() == [0, 2, 3]
    assert g.neighbors(5).tolist() == []


def test_adjacency_is_symmetric_binary_sorted_without_diagonal():
    A = small_graph().adjacency()
    assert isinstance(A, sp.csr_array)
    assert A.dtype == np.int8 and A.has_sorted_indices
    dense = A.toarray()
    assert (dense == dense.T).all() and set(np.unique(dense)) == {0, 1}
    assert dense.diagonal().sum() == 0 and dense.sum() == 8
    assert not A.data.flags.writeable


def test_from_adjacency_symmetrises_binarises_and_drops_diagonal():
    dense = np.zeros((4, 4))
    dense[0, 1] = 2.5  # only one direction given
    dense[2, 3] = dense[3, 2] = 1
    dense[1, 1] = 7
    g = PretrainingGraph.from_adjacency(dense)
    assert g.edges().tolist() == [[0, 1], [2, 3]]
    assert (g.dropped_self_loops, g.dropped_duplicates) == (1, 0)
    assert PretrainingGraph.from_adjacency(sp.csr_array(dense)) == g


def test_networkx_round_trip_keeps_order_and_isolated_nodes():
    G = nx.Graph([("a", "b"), ("b", "c")])
    G.add_node("z")
    g = PretrainingGraph.from_networkx(G, nodelist=["c", "b", "a", "z"])
    assert g.edges().tolist() == [[0, 1], [1, 2]]
    H = g.to_networkx()
    assert sorted(H.nodes) == [0, 1, 2, 3] and H.number_of_edges() == 2


def test_has_edge_is_vectorised():
    g = small_graph()
    assert g.has_edge([0, 1, 2, 0, 5, 3], [1, 0, 1, 2, 5, 4]).tolist() == [True, True, True, False, False, True]
    assert g.has_edge(np.array([[1], [4]]), np.array([0, 3])).tolist() == [[True, True], [False, True]]
    with pytest.raises(ValueError):
        g.has_edge([0], [6])


def test_implicit_cliques_match_the_materialised_graph():
    groups = np.array([7, 3, 7, 7, 3, 9, 3, 7])
    g = PretrainingGraph.from_groups(groups)
    m = PretrainingGraph.from_adjacency(g.adjacency())
    assert g.is_implicit and not m.is_implicit and g == m
    assert g.groups.tolist() == groups.tolist()
    assert g.n_edges == m.n_edges == 6 + 3
    assert g.degrees().tolist() == m.degrees().tolist() == [3, 2, 3, 3, 2, 0, 2, 3]
    assert g.edges().tolist() == m.edges().tolist()
    assert g.neighbors(2).tolist() == m.neighbors(2).tolist() == [0, 3, 7]
    u, v = np.meshgrid(np.arange(8), np.arange(8))
    assert (g.has_edge(u, v) == m.has_edge(u, v)).all()
    assert g.subgraph([3, 1, 0]).edges().tolist() == [[0, 2]]


def test_implicit_materialisation_refuses_above_the_limit(monkeypatch):
    monkeypatch.setattr(graph_module, "MAX_MATERIALISED_EDGES", 5)
    g = PretrainingGraph.from_groups(np.zeros(4, dtype=int))  # 6 edges
    assert g.n_edges == 6 and g.degrees().tolist() == [3, 3, 3, 3]
    with pytest.raises(SiptError, match="limit of 5"):
        g.adjacency()


def test_subgraph_relabels_in_given_order():
    sub = small_graph().subgraph([3, 1, 4, 5])
    assert sub.n_nodes == 4 and sub.edges().tolist() == [[0, 1], [0, 2]]
    with pytest.raises(ValueError):
        small_graph().subgraph([1, 1])


@pytest.mark.parametrize("implicit", [False, True])
def test_sampling_returns_valid_positives_and_negatives(implicit):
    groups = np.array([0, 0, 0, 1, 1, 2, 3, 3, 3, 3])
    g = PretrainingGraph.from_groups(groups)
    if not implicit:
        g = PretrainingGraph.from_adjacency(g.adjacency())
    nodes = np.repeat(np.arange(10), 50)
    rng = np.random.default_rng(0)
    pos = g.sample_positives(nodes, rng)
    neg = g.sample_negatives(nodes, rng)
    isolated = nodes == 5
    assert (pos[isolated] == -1).all()
    assert (pos[~isolated] != nodes[~isolated]).all()
    assert g.has_edge(nodes[~isolated], pos[~isolated]).all()
    assert (neg != nodes).all() and (neg >= 0).all()
    assert not g.has_edge(nodes, neg).any()
    # every neighbour / non-neighbour of node 6 shows up
    assert set(pos[nodes == 6]) == {7, 8, 9}
    assert set(neg[nodes == 6]) == {0, 1, 2, 3, 4, 5}


@pytest.mark.parametrize("implicit", [False, True])
def test_negatives_are_minus_one_when_the_node_touches_everything(implicit):
    g = PretrainingGraph.from_groups([4, 4, 4])
    if not implicit:
        g = PretrainingGraph.from_adjacency(g.adjacency())
    assert g.sample_negatives([0, 1, 2], 0).tolist() == [-1, -1, -1]
    # single-node graph: neither positives nor negatives exist
    one = PretrainingGraph.from_edges([], [], 1)
    assert one.sample_positives([0], 0).tolist() == [-1] and one.sample_negatives([0], 0).tolist() == [-1]


def test_negatives_are_uniform_in_a_dense_row():
    # node 0 is adjacent to 1..6 of 0..9, so its non-neighbours are exactly 7, 8, 9
    g = PretrainingGraph.from_edges(np.zeros(6, int), np.arange(1, 7), 10)
    draws = g.sample_negatives(np.zeros(6000, dtype=int), np.random.default_rng(1))
    counts = np.bincount(draws, minlength=10)
    assert counts[:7].sum() == 0
    assert np.all(np.abs(counts[7:] - 2000) < 200)


def test_noise_add_rate_one_gives_the_complete_graph():
    g = add_noise(small_graph(), 1.0, "add", rng=0)
    assert g.n_edges == 15 and g.degrees().tolist() == [5] * 6


def test_noise_flip_rate_one_gives_the_complement():
    g = small_graph()
    flipped = add_noise(g, 1.0, "flip", rng=0)
    complement = nx.complement(g.to_networkx())
    assert flipped == PretrainingGraph.from_networkx(complement, nodelist=range(6))


def test_noise_rate_zero_and_bad_arguments():
    g = small_graph()
    assert add_noise(g, 0.0, "flip", rng=0) == g
    assert NOISE_MODES == ("add", "flip")
    with pytest.raises(SiptError, match="noise rate"):
        add_noise(g, 1.5)
    with pytest.raises(SiptError, match="noise rate"):
        add_noise(g, float("nan"))
    with pytest.raises(SiptError, match="unknown noise mode"):
        add_noise(g, 0.1, mode="remove")


def test_noise_add_count_matches_rate_times_non_edges():
    n = 400
    base = PretrainingGraph.from_groups(np.arange(n) // 20)  # 20 cliques of 20: 3800 edges
    non_edges = n * (n - 1) // 2 - base.n_edges
    rate = 0.05
    added = []
    for seed in range(5):
        noisy = add_noise(base, rate, "add", rng=seed)
        e = noisy.edges()
        assert noisy.has_edge(*base.edges().T).all()  # "add" never removes
        assert not (e[:, 0] == e[:, 1]).any()
        added.append(noisy.n_edges - base.n_edges)
    expected, sd = rate * non_edges, np.sqrt(non_edges * rate * (1 - rate))
    assert abs(np.mean(added) - expected) < 3 * sd
    flipped = add_noise(base, 0.3, "flip", rng=7)
    kept = flipped.has_edge(*base.edges().T).mean()
    assert 0.65 < kept < 0.75


def test_noise_pairs_cover_all_non_edges_uniformly():
    # a 5-node path has 6 non-edges; with rate 0.5 each should be added about half the time
    g = PretrainingGraph.from_edges([0, 1, 2, 3], [1, 2, 3, 4], 5)
    hits = np.zeros((5, 5))
    for seed in range(400):
        e = add_noise(g, 0.5, "add", rng=seed).edges()
        hits[e[:, 0], e[:, 1]] += 1
    non_edges = [(0, 2), (0, 3), (0, 4), (1, 3), (1, 4), (2, 4)]
    for a, b in non_edges:
        assert 150 < hits[a, b] < 250
    assert all(hits[a, a + 1] == 400 for a in range(4))


def test_pair_index_round_trip_for_large_ids():
    hi = np.array([1, 2, 2, 3_000_000, 2_000_000_000], dtype=np.int64)
    lo = np.array([0, 0, 1, 2_999_999, 123], dtype=np.int64)
    back = noise_module._pair_unindex(noise_module._pair_index(lo, hi))
    assert back[0].tolist() == lo.tolist() and back[1].tolist() == hi.tolist()


def test_tsv_round_trip_with_string_ids(tmp_path):
    names = ["alpha", "beta", "gamma", "delta", "omega"]
    g = PretrainingGraph.from_edges([0, 1, 2], [1, 2, 3], 5)  # omega isolated
    write_edges_tsv(tmp_path / "e.tsv", g, names)
    write_labels_tsv(tmp_path / "l.tsv", np.array(["x", "y", "x", "y", "x"]), names)
    assert (tmp_path / "e.tsv").read_text() == "alpha\tbeta\nbeta\tgamma\ngamma\tdelta\n"
    lg = load_graph_tsv(tmp_path / "e.tsv", tmp_path / "l.tsv")
    assert lg.node_names == names and lg.label_names == ["x", "y"]
    assert lg.labels.tolist() == [0, 1, 0, 1, 0]
    assert lg.graph == g and (lg.dropped_self_loops, lg.dropped_duplicates) == (0, 0)


def test_tsv_reports_self_loops_duplicates_comments_and_whitespace(tmp_path):
    (tmp_path / "l.tsv").write_text("# node label\n10\t2\n2\t10\n\n7\t2\n10\t2\n")
    (tmp_path / "e.tsv").write_text("# edges\n10\t2\n2 10\n7\t7\n\n2\t7\n")
    u, v, skipped = read_edges_tsv(tmp_path / "e.tsv")
    assert (u, v, skipped) == (["10", "2", "7", "2"], ["2", "10", "7", "7"], 2)
    names, labels = read_labels_tsv(tmp_path / "l.tsv")
    assert names == ["10", "2", "7"] and labels.tolist() == ["2", "10", "2"]
    lg = load_graph_tsv(tmp_path / "e.tsv", tmp_path / "l.tsv")
    assert (lg.dropped_self_loops, lg.dropped_duplicates) == (1, 1)
    assert lg.graph.edges().tolist() == [[0, 1], [1, 2]]
    assert lg.label_names == ["10", "2"]  # labels are strings, sorted as strings
    assert lg.labels.tolist() == [1, 0, 1]


def test_tsv_errors_name_the_file_line_and_node(tmp_path):
    labels = tmp_path / "l.tsv"
    labels.write_text("a\tx\nb\ty\na\ty\n")
    with pytest.raises(SiptError, match=r"line 3: node 'a'.*line 1"):
        read_labels_tsv(labels)
    labels.write_text("a\tx\nb\ty\n")
    edges = tmp_path / "e.tsv"
    edges.write_text("a\tb\nb\tc\n")
    partial = load_graph_tsv(edges, labels)  # labels for some nodes: the edge to 'c' is left out and counted
    assert partial.graph.n_edges == 1 and partial.unlabelled_edges == 1 and partial.node_names == ["a", "b"]
    edges.write_text("a\tb\tc\n")
    with pytest.raises(SiptError, match=r"e.tsv: line 1: expected two fields"):
        read_edges_tsv(edges)
    edges.write_text("# only a comment\n")
    with pytest.raises(SiptError, match="edges file .*e.tsv is empty"):
        read_edges_tsv(edges)
    edges.write_bytes(b"a\t\xff\n")
    with pytest.raises(SiptError, match="not UTF-8"):
        read_edges_tsv(edges)
    with pytest.raises(SiptError, match="does not exist"):
        read_labels_tsv(tmp_path / "missing.tsv")


def test_writers_refuse_names_that_cannot_round_trip(tmp_path):
    g = PretrainingGraph.from_edges([0], [1], 2)
    for bad in (["a", "#b"], ["a", "b c\t"], ["a", "a"], ["a"]):
        with pytest.raises(SiptError):
            write_edges_tsv(tmp_path / "e.tsv", g, bad)
    write_edges_tsv(tmp_path / "e.tsv", g)
    assert (tmp_path / "e.tsv").read_text() == "0\t1\n"
