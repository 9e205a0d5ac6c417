from collections import Counter

import numpy as np
import pytest

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.consistency import (
    TIE_POLICIES,
    ConsistencyReport,
    consistency_report,
    corollary1_bound,
    edge_homophily,
    local_consistency,
    local_consistency_per_node,
    node_homophily,
)
from sipt_lab.graphs.graph import PretrainingGraph

# Hand-made graph, labels a=0, b=1, c=2:
#   0(a) - 1(a), 0 - 2(b), 2 - 3(b), 2 - 4(c); 5(a) isolated;
#   a separate triangle 6(a) 7(a) 8(b); and a star: 9(a) whose neighbours 10(b) 11(b) 12(c) 13(c)
#   tie for the plurality without its label (0 even when lenient), and who all disagree with it.
EDGES = [(0, 1), (0, 2), (2, 3), (2, 4), (6, 7), (6, 8), (7, 8), (9, 10), (9, 11), (9, 12), (9, 13)]
LABELS = np.array([0, 0, 1, 1, 2, 0, 0, 0, 1, 0, 1, 1, 2, 2])
NAN = np.nan
EXPECTED_PER_NODE = {
    #         0    1    2    3    4    5    6    7    8    9  10 11 12 13
    "split": [1 / 2, 1, 1 / 3, 1, 0, NAN, 1 / 2, 1 / 2, 0, 0, 0, 0, 0, 0],
    "strict": [0, 1, 0, 1, 0, NAN, 0, 0, 0, 0, 0, 0, 0, 0],
    "lenient": [1, 1, 1, 1, 0, NAN, 1, 1, 0, 0, 0, 0, 0, 0],
}


def hand_graph():
    u, v = np.array(EDGES).T
    return PretrainingGraph.from_edges(u, v, len(LABELS))


def brute_force_lc(graph, labels, ties):
    """Per-node Definition 5 straight from the definition (Counter of neighbour labels)."""
    out = []
    for node in range(graph.n_nodes):
        votes = Counter(labels[graph.neighbors(node)].tolist())
        if not votes:
            out.append(np.nan)
            continue
        top = max(votes.values())
        tied = [label for label, count in votes.items() if count == top]
        score = {"split": 1 / len(tied), "strict": float(len(tied) == 1), "lenient": 1.0}[ties]
        out.append(score if labels[node] in tied else 0.0)
    return np.array(out)


@pytest.mark.parametrize("ties", TIE_POLICIES)
def test_per_node_scores_on_the_hand_made_graph(ties):
    per_node = local_consistency_per_node(hand_graph(), LABELS, ties)
    np.testing.assert_allclose(per_node, EXPECTED_PER_NODE[ties])
    expected_mean = np.nansum(EXPECTED_PER_NODE[ties]) / 13
    assert local_consistency(hand_graph(), LABELS, ties) == pytest.approx(expected_mean)


def test_exact_means_isolated_excluded():
    g = hand_graph()
    assert local_consistency(g, LABELS, "split") == pytest.approx((0.5 + 1 + 1 / 3 + 1 + 0.5 + 0.5) / 13)
    assert local_consistency(g, LABELS, "strict") == pytest.approx(2 / 13)
    assert local_consistency(g, LABELS, "lenient") == pytest.approx(6 / 13)
    # node 0: 1/2, 1: 1, 2: 1/3, 3: 1, 4: 0, 6: 1/2, 7: 1/2, 8: 0, 9: 0, 10, 11: 0, 12, 13: 0
    assert node_homophily(g, LABELS) == pytest.approx((0.5 + 1 + 1 / 3 + 1 + 0 + 0.5 + 0.5) / 13)
    # same-label edges: 0-1, 2-3, 6-7 out of 11
    assert edge_homophily(g, LABELS) == pytest.approx(3 / 11)


def test_disconnected_parts_each_contribute():
    g = hand_graph()
    triangle = g.subgraph([6, 7, 8])
    assert local_consistency(triangle, LABELS[[6, 7, 8]], "split") == pytest.approx(1 / 3)
    assert local_consistency(triangle, LABELS[[6, 7, 8]], "lenient") == pytest.approx(2 / 3)


def test_any_label_values_are_factorised():
    g = hand_graph()
    names = np.array(["a", "b", "c"])[LABELS]
    shifted = LABELS * 10 - 7  # negative and sparse integer codes
    for ties in TIE_POLICIES:
        expected = local_consistency(g, LABELS, ties)
        assert local_consistency(g, names, ties) == pytest.approx(expected)
        assert local_consistency(g, shifted, ties) == pytest.approx(expected)
        assert local_consistency(g, names.tolist(), ties) == pytest.approx(expected)


def test_report_fields():
    report = consistency_report(hand_graph(), LABELS, ties="strict")
    assert isinstance(report, ConsistencyReport)
    assert report.to_dict() == {
        "local_consistency": pytest.approx(2 / 13),
        "node_homophily": pytest.approx(node_homophily(hand_graph(), LABELS)),
        "edge_homophily": pytest.approx(3 / 11),
        "n_nodes": 14,
        "n_edges": 11,
        "n_isolated": 1,
        "n_classes": 3,
        "tie_policy": "strict",
    }


def test_user_errors():
    g = hand_graph()
    with pytest.raises(SiptError, match="14 nodes"):
        local_consistency(g, LABELS[:-1])
    with pytest.raises(SiptError, match="unknown tie policy"):
        local_consistency(g, LABELS, ties="random")
    empty = PretrainingGraph.from_edges([], [], 3)
    with pytest.raises(SiptError, match="isolated"):
        local_consistency(empty, [0, 1, 0])
    with pytest.raises(SiptError, match="without edges"):
        edge_homophily(empty, [0, 1, 0])
    assert np.isnan(local_consistency_per_node(empty, [0, 1, 0])).all()


# Cliques {0,1,2,3} with FT labels a a a b, {4,5,6} with a a b, {7} alone.
GROUPS = np.array([0, 0, 0, 0, 1, 1, 1, 2])
FT = np.array(["a", "a", "a", "b", "a", "a", "b", "c"])


@pytest.mark.parametrize("ties, expected", [("split", 4 / 7), ("strict", 3 / 7), ("lenient", 5 / 7)])
def test_implicit_cliques_closed_form(ties, expected):
    g = PretrainingGraph.from_groups(GROUPS)
    materialised = PretrainingGraph.from_adjacency(g.adjacency())
    per_node = local_consistency_per_node(g, FT, ties)
    np.testing.assert_allclose(per_node, local_consistency_per_node(materialised, FT, ties))
    np.testing.assert_allclose(per_node, brute_force_lc(materialised, FT, ties))
    assert local_consistency(g, FT, ties) == pytest.approx(expected)
    # Corollary 1: sum over PT classes of P(class) * P(FT label = majority of the rest of the clique)
    assert corollary1_bound(GROUPS, FT, ties) == pytest.approx(expected)


def test_corollary1_matches_the_law_of_total_probability():
    # split ties: clique 0 -> 3/4 of its nodes agree, clique 1 -> (1/2 + 1/2 + 0)/3; weights 4/7, 3/7
    assert corollary1_bound(GROUPS, FT) == pytest.approx(4 / 7 * 3 / 4 + 3 / 7 * 1 / 3)
    assert corollary1_bound(GROUPS, GROUPS) == 1.0
    with pytest.raises(SiptError, match="same length"):
        corollary1_bound(GROUPS, FT[:-1])


def test_implicit_homophily_matches_materialised():
    g = PretrainingGraph.from_groups(GROUPS)
    m = PretrainingGraph.from_adjacency(g.adjacency())
    # clique 0: a-a pairs 3 of 6; clique 1: 1 of 3
    assert edge_homophily(g, FT) == edge_homophily(m, FT) == pytest.approx(4 / 9)
    assert node_homophily(g, FT) == pytest.approx(node_homophily(m, FT))
    assert node_homophily(g, FT) == pytest.approx((3 * 2 / 3 + 0 + 2 * 1 / 2 + 0) / 7)


def brute_force_node_homophily(graph, labels):
    fractions = [
        np.mean(labels[graph.neighbors(node)] == labels[node])
        for node in range(graph.n_nodes)
        if graph.degrees()[node] > 0
    ]
    return np.mean(fractions)


@pytest.mark.parametrize("seed", range(4))
def test_random_graphs_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 60
    labels = rng.integers(0, 4, n)
    graphs = [
        PretrainingGraph.from_edges(rng.integers(0, n, 120), rng.integers(0, n, 120), n),
        PretrainingGraph.from_groups(rng.integers(0, 9, n)),
    ]
    for g in graphs:
        materialised = PretrainingGraph.from_adjacency(g.adjacency())
        for ties in TIE_POLICIES:
            expected = brute_force_lc(materialised, labels, ties)
            np.testing.assert_allclose(local_consistency_per_node(g, labels, ties), expected)
        assert edge_homophily(g, labels) == pytest.approx(edge_homophily(materialised, labels))
        assert node_homophily(g, labels) == pytest.approx(node_homophily(materialised, labels))
        assert node_homophily(g, labels) == pytest.approx(brute_force_node_homophily(materialised, labels))


# (classes, edges) on 80 nodes: 2-3 classes make ties common; with 2 classes nearly every row has at
# least as many neighbours as classes, with 40 classes nearly none does (the kernel's two row paths).
@pytest.mark.parametrize("n_classes, n_edges", [(2, 60), (2, 400), (3, 150), (40, 100), (40, 900)])
@pytest.mark.parametrize("seed", range(3))
def test_sparse_kernel_matches_brute_force_with_many_ties(n_classes, n_edges, seed):
    rng = np.random.default_rng(seed)
    n = 80
    labels = rng.integers(0, n_classes, n)
    # skewed degrees: half the edge ends go to the first 8 nodes
    hubs = rng.random(n_edges) < 0.5
    u = np.where(hubs, rng.integers(0, 8, n_edges), rng.integers(0, n, n_edges))
    g = PretrainingGraph.from_edges(u, rng.integers(0, n, n_edges), n)
    per_node = {ties: local_consistency_per_node(g, labels, ties) for ties in TIE_POLICIES}
    for ties in TIE_POLICIES:
        np.testing.assert_allclose(per_node[ties], brute_force_lc(g, labels, ties))
    if n_classes <= 3:
        assert (per_node["strict"] < per_node["lenient"]).sum() >= 5  # the tie rules are exercised
    same = sum(labels[a] == labels[b] for a, b in g.edges())
    assert edge_homophily(g, labels) == pytest.approx(same / g.n_edges)
    assert node_homophily(g, labels) == pytest.approx(brute_force_node_homophily(g, labels))


def test_many_classes():
    # ~2000 classes: the implicit graph's group-by-label counts are a CSR array, not dense, and the
    # sparse kernel gets 16-bit label codes
    rng = np.random.default_rng(5)
    groups = rng.integers(0, 700, 2000)
    labels = groups * 3 + rng.integers(0, 3, 2000)
    g = PretrainingGraph.from_groups(groups)
    m = PretrainingGraph.from_adjacency(g.adjacency())
    for ties in TIE_POLICIES:
        expected = brute_force_lc(m, labels, ties)
        np.testing.assert_allclose(local_consistency_per_node(g, labels, ties), expected)
        np.testing.assert_allclose(local_consistency_per_node(m, labels, ties), expected)
    assert edge_homophily(g, labels) == pytest.approx(edge_homophily(m, labels))
    assert node_homophily(g, labels) == pytest.approx(node_homophily(m, labels))


@pytest.mark.parametrize("implicit", [False, True])
def test_report_counts_neighbour_labels_once(monkeypatch, implicit):
    from sipt_lab.graphs import consistency

    counter = "_group_label_counts" if implicit else "_neighbour_label_counts"
    calls = []
    original = getattr(consistency, counter)
    monkeypatch.setattr(consistency, counter, lambda *args: calls.append(1) or original(*args))
    groups = np.repeat(np.arange(4), 5)
    graph = PretrainingGraph.from_groups(groups) if implicit else hand_graph()
    labels = groups % 3 if implicit else LABELS
    report = consistency_report(graph, labels)
    assert len(calls) == 1
    assert report.local_consistency == pytest.approx(local_consistency(graph, labels))
    assert report.node_homophily == pytest.approx(node_homophily(graph, labels))
    assert report.edge_homophily == pytest.approx(edge_homophily(graph, labels))
