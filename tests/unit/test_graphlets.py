import itertools

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from sipt_lab.synthetic.graphlets import N_ORBITS, connected_graphs, orbit_counts


def brute_force_orbits(G: nx.Graph) -> np.ndarray:
    """Enumerate every connected induced 2..4-node subgraph and classify each node's orbit by
    edge count and degrees inside the subgraph (ORCA numbering)."""
    counts = np.zeros((G.number_of_nodes(), N_ORBITS), dtype=np.int64)
    for k in (2, 3, 4):
        for nodes in itertools.combinations(G.nodes, k):
            H = G.subgraph(nodes)
            if not nx.is_connected(H):
                continue
            m = H.number_of_edges()
            max_degree = max(d for _, d in H.degree())
            for v, d in H.degree():
                if k == 2:
                    orbit = 0
                elif k == 3:
                    orbit = 3 if m == 3 else (1 if d == 1 else 2)
                elif m == 3 and max_degree == 2:  # path
                    orbit = 4 if d == 1 else 5
                elif m == 3:  # star
                    orbit = 6 if d == 1 else 7
                elif m == 4 and max_degree == 2:  # cycle
                    orbit = 8
                elif m == 4:  # paw
                    orbit = {1: 9, 2: 10, 3: 11}[d]
                elif m == 5:  # diamond
                    orbit = 12 if d == 2 else 13
                else:
                    orbit = 14
                counts[v, orbit] += 1
    return counts


def adjacency(G: nx.Graph) -> sp.csr_array:
    return nx.to_scipy_sparse_array(G, nodelist=range(G.number_of_nodes()))


def test_atlas_counts_match_the_number_of_connected_graphs():
    graphs = connected_graphs(1, 5)
    sizes = [g.number_of_nodes() for g in graphs]
    assert [sizes.count(k) for k in range(1, 6)] == [1, 1, 2, 6, 21]
    assert len(connected_graphs()) == 30  # the motif pool: 2 to 5 nodes
    assert all(nx.is_connected(g) for g in graphs)


def test_atlas_has_no_two_isomorphic_graphs():
    graphs = connected_graphs(2, 5)
    for a, b in itertools.combinations(graphs, 2):
        assert not nx.is_isomorphic(a, b)


def test_atlas_six_nodes_has_all_112_graphs():
    # the heuristic could_be_isomorphic of the original code merged some of these
    assert len(connected_graphs(6, 6)) == 112


@pytest.mark.parametrize(
    "G",
    [
        nx.path_graph(6),
        nx.star_graph(5),
        nx.cycle_graph(7),
        nx.complete_graph(4),
        nx.complete_graph(6),
        nx.gnp_random_graph(8, 0.45, seed=3),
        nx.gnp_random_graph(11, 0.35, seed=7),
        nx.gnp_random_graph(9, 0.8, seed=11),
        nx.disjoint_union(nx.complete_graph(4), nx.path_graph(3)),
    ],
    ids=["path", "star", "cycle", "K4", "K6", "random8", "random11", "dense9", "disconnected"],
)
def test_orbit_counts_match_brute_force(G):
    np.testing.assert_array_equal(orbit_counts(adjacency(G)), brute_force_orbits(G))


def test_orbit_counts_known_values():
    star = orbit_counts(adjacency(nx.star_graph(4)))  # centre 0, leaves 1..4
    assert star[0].tolist() == [4, 0, 6, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0]
    assert star[1].tolist() == [1, 3, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0]
    k4 = orbit_counts(adjacency(nx.complete_graph(4)))
    assert k4[0].tolist() == [3, 0, 0, 3] + [0] * 10 + [1]


def test_orbit_counts_accept_dense_input_and_reject_bad_graphs():
    G = nx.gnp_random_graph(10, 0.4, seed=1)
    np.testing.assert_array_equal(orbit_counts(nx.to_numpy_array(G)), orbit_counts(adjacency(G)))
    with pytest.raises(ValueError, match="self-loops"):
        orbit_counts(np.eye(3))
    with pytest.raises(ValueError, match="symmetric"):
        orbit_counts(np.array([[0, 1], [0, 0]]))


def test_orbit_counts_match_pyfglt_up_to_column_order():
    fglt = pytest.importorskip("pyfglt.fglt")
    G = nx.gnp_random_graph(40, 0.2, seed=5)
    A = sp.csc_matrix(adjacency(G).astype(np.float64))
    theirs = fglt.compute(A).to_numpy()
    orca_order = [1, 2, 3, 4, 5, 6, 7, 8, 12, 9, 10, 11, 13, 14, 15]
    np.testing.assert_array_equal(orbit_counts(adjacency(G)), theirs[:, orca_order])
