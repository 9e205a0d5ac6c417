"""Tilings, their topology, placement helpers, exact and approximate geodesics, radius graphs."""

from __future__ import annotations

import numpy as np
import pytest

from sipt_lab.core.errors import SiptError
from sipt_lab.data.topics import TopicAssignment
from sipt_lab.manifolds import (
    EXPECTED,
    SURFACES,
    Tiling,
    brute_force_pairs,
    check_tiling,
    corollary2_curve,
    entropy,
    entropy_buckets,
    entropy_flat_sample,
    geodesic_matrix,
    get_surface,
    map_topics_to_vertices,
    pairs_within,
    radius_graph,
    triangle_counts,
    triple_pools,
    uniform_points,
    verify_tiling,
)
from sipt_lab.manifolds.geodesic import unfold_patch
from sipt_lab.manifolds.homology import betti_numbers
from sipt_lab.manifolds.tilings import HEIGHT, cyclic_strip, lattice_positions, lattice_quotient, octahedron
from sipt_lab.viz.tiling_net import flat_net, plot_tiling


# ------------------------------------------------------------------ topology
@pytest.mark.parametrize("name", list(SURFACES))
def test_every_surface_has_its_invariants(name):
    tiling = get_surface(name)
    report = verify_tiling(tiling)
    want = EXPECTED[name]
    assert report.is_surface
    assert report.euler_characteristic == want.euler_characteristic
    assert report.betti_z2 == want.betti_z2
    assert report.betti_z3 == want.betti_z3
    assert report.boundary_components == want.boundary_components
    assert report.orientable == want.orientable
    assert set(report.edge_triangle_counts) == ({1, 2} if want.boundary_components else {2})
    assert report.mismatches(want) == []


def test_f_vectors_of_the_chosen_tilings():
    sizes = {name: (t.n_vertices, len(t.edges), t.n_triangles) for name, t in ((n, get_surface(n)) for n in SURFACES)}
    assert sizes == {
        "plane": (4, 5, 2),
        "mobius": (5, 10, 5),
        "annulus": (6, 12, 6),
        "sphere": (6, 12, 8),
        "torus": (7, 21, 14),
        "klein": (9, 27, 18),
        "projective": (6, 15, 10),
    }


def test_mobius_and_annulus_differ_only_beyond_betti_numbers():
    mobius, annulus = verify_tiling(cyclic_strip(7)), verify_tiling(cyclic_strip(6))
    assert mobius.betti_z2 == annulus.betti_z2 == (1, 1, 0)
    assert mobius.betti_z3 == annulus.betti_z3 == (1, 1, 0)
    assert (mobius.boundary_components, annulus.boundary_components) == (1, 2)
    assert (mobius.orientable, annulus.orientable) == (False, True)


def test_the_coefficient_field_matters_for_non_orientable_closed_surfaces():
    klein = get_surface("klein")
    assert betti_numbers(klein, 2) == (1, 2, 1)
    assert betti_numbers(klein, 3) == (1, 1, 0)
    assert betti_numbers(octahedron(), 3) == (1, 0, 1)  # the top dimension is kept


def test_a_fin_is_not_a_surface():
    fin = Tiling("plane", np.array([[0, 1, 2], [0, 1, 3], [0, 1, 4]]))
    report = verify_tiling(fin)
    assert report.edge_triangle_counts == (1, 3)
    assert not report.is_surface
    with pytest.raises(ValueError, match="more than two triangles"):
        _ = fin.neighbors


def test_two_spheres_pinched_at_a_vertex_fail_the_link_check():
    tetra = np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]])
    pinched = Tiling("sphere", np.vstack([tetra, np.where(tetra == 0, 0, tetra + 3)]))
    report = verify_tiling(pinched)
    assert set(report.edge_triangle_counts) == {2}  # edge-wise it looks like a closed surface
    assert not report.links_ok
    with pytest.raises(ValueError, match="not a valid sphere"):
        check_tiling(pinched)


def test_check_tiling_rejects_a_misnamed_tiling():
    with pytest.raises(ValueError, match="euler_characteristic is 2"):
        check_tiling(Tiling("torus", octahedron().triangles))


def test_neighbors_of_the_plane():
    assert get_surface("plane").neighbors.tolist() == [[1, -1, -1], [-1, 0, -1]]


# ------------------------------------------------------------------ exact distances
def test_distance_within_one_triangle():
    tiling = get_surface("plane")
    tri = np.array([0, 0])
    bary = np.array([[1 / 3, 1 / 3, 1 / 3], [1.0, 0.0, 0.0]])  # centroid and a corner
    i, j, d = pairs_within(tiling, tri, bary, 1.0)
    assert (i.tolist(), j.tolist()) == ([0], [1])
    assert d[0] == pytest.approx(1 / np.sqrt(3), abs=1e-12)


def test_distance_across_a_shared_edge():
    tiling = get_surface("plane")
    bary = np.full((2, 3), 1 / 3)  # the two centroids, 2 x inradius apart
    i, j, d = pairs_within(tiling, np.array([0, 1]), bary, 1.0)
    assert d.tolist() == pytest.approx([1 / np.sqrt(3)], abs=1e-12)
    assert pairs_within(tiling, np.array([0, 1]), bary, 0.5)[0].size == 0


def _near_apex(phi_degrees: float, delta: float) -> np.ndarray:
    """Barycentric point at distance ``delta`` from vertex 0 (slot 0), ``phi`` degrees from edge slot 0-1."""
    x = delta * np.array([np.cos(np.radians(phi_degrees)), np.sin(np.radians(phi_degrees))])
    b2 = x[1] / HEIGHT
    b1 = x[0] - 0.5 * b2
    return np.array([1 - b1 - b2, b1, b2])


def test_straight_lines_that_leave_the_unfolded_strip_are_rejected():
    # Around the octahedron's apex (4 triangles, 240 degrees) a point at 30 and one at 115 degrees are
    # 85 degrees apart; the unfolding that loops once around the apex shows them 35 degrees apart, a
    # straight line that does not stay on the triangles it unfolded.
    sphere = octahedron()
    delta = 0.1
    bary = np.array([_near_apex(30, delta), _near_apex(55, delta)])
    i, j, d = pairs_within(sphere, np.array([0, 1]), bary, 1.0)
    assert unfold_patch(sphere, 0, 1.0).depth.max() >= 5  # the looping unfolding was considered
    assert d.tolist() == pytest.approx([2 * delta * np.sin(np.radians(85 / 2))], abs=1e-12)


def test_octahedron_distances_are_never_below_the_3d_chord():
    sphere = octahedron()
    s = 1 / np.sqrt(2)
    xyz = np.array([[0, 0, s], [s, 0, 0], [0, s, 0], [-s, 0, 0], [0, -s, 0], [0, 0, -s]])
    tri, bary = uniform_points(sphere, 300, np.random.default_rng(3))
    points = np.einsum("nk,nkd->nd", bary, xyz[sphere.triangles[tri]])
    i, j, d = pairs_within(sphere, tri, bary, 1.2)
    assert i.size > 1000
    assert np.all(d >= np.linalg.norm(points[i] - points[j], axis=1) - 1e-12)


def _flat_torus_truth(m, n, shift, tri, bary):
    """Distances on the flat torus ``lattice_quotient(m, n, shift)``: min over lattice translates."""
    plane = np.einsum("nk,nkd->nd", bary, lattice_positions(m, n)[tri])
    g1, g2 = np.array([m, 0.0]), np.array([shift + n / 2, n * HEIGHT])
    diff = plane[:, None, :] - plane[None, :, :]
    best = np.full(diff.shape[:2], np.inf)
    for k1 in range(-3, 4):
        for k2 in range(-3, 4):
            best = np.minimum(best, np.linalg.norm(diff + k1 * g1 + k2 * g2, axis=-1))
    return best


@pytest.mark.slow
def test_radius_pairs_are_exact_on_the_flat_7_vertex_torus():
    torus = lattice_quotient(7, 1, shift=4)
    tri, bary = uniform_points(torus, 150, np.random.default_rng(0))
    truth = _flat_torus_truth(7, 1, 4, tri, bary)
    i, j, d = pairs_within(torus, tri, bary, 1.2)
    upper = np.triu(truth < 1.2, k=1)
    assert i.size == upper.sum() > 0
    assert upper[i, j].all()
    assert np.abs(d - truth[i, j]).max() < 1e-12


@pytest.mark.slow
def test_geodesic_matrix_flat_torus():
    # 6 x 6 flat torus, distances up to 3.5, exact only below reach = 0.6: the Dijkstra legs give an
    # upper bound, measured here at <= 6% worst case and 0.6% on average.
    tri, bary = uniform_points(lattice_quotient(6, 6), 150, np.random.default_rng(5))
    truth = _flat_torus_truth(6, 6, 0, tri, bary)
    approx = geodesic_matrix(lattice_quotient(6, 6), tri, bary, reach=0.6, steiner=4)
    iu = np.triu_indices(len(tri), 1)
    relative = (approx[iu] - truth[iu]) / truth[iu]
    assert truth[iu].max() > 3.0
    assert relative.min() > -1e-9  # never below the truth
    assert relative.max() < 0.10 and relative.mean() < 0.01
    near = truth[iu] < 0.6
    assert np.abs(approx[iu][near] - truth[iu][near]).max() < 1e-12


def test_kdtree_and_brute_force_find_the_same_pairs():
    sphere = get_surface("sphere")
    tri, bary = uniform_points(sphere, 400, np.random.default_rng(1))
    fast, slow = pairs_within(sphere, tri, bary, 0.3), brute_force_pairs(sphere, tri, bary, 0.3)
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])
    assert np.allclose(fast[2], slow[2], atol=1e-12)


# ------------------------------------------------------------------ radius graphs
@pytest.mark.parametrize("name", list(SURFACES))
def test_radius_graphs_are_simple_and_symmetric(name):
    tiling = get_surface(name)
    tri, bary = uniform_points(tiling, 120, np.random.default_rng(2))
    A = radius_graph(tiling, tri, bary, 0.4).adjacency().toarray()
    assert A.sum() > 0
    assert (A == A.T).all()
    assert (np.diag(A) == 0).all()


def test_no_self_loop_even_when_a_point_sees_its_own_translate():
    mobius = get_surface("mobius")  # its core circle is 2.5 long; every point's mirror image is < 2.65 away
    tri, bary = uniform_points(mobius, 12, np.random.default_rng(0))
    graph = radius_graph(mobius, tri, bary, 2.7)
    assert graph.n_edges == 12 * 11 // 2  # everything is within 2.7 of everything else
    assert graph.dropped_self_loops == 0


def test_same_seed_same_points_and_edges():
    torus = get_surface("torus")
    first = uniform_points(torus, 300, np.random.default_rng(7))
    second = uniform_points(torus, 300, np.random.default_rng(7))
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    assert radius_graph(torus, *first, 0.3) == radius_graph(torus, *second, 0.3)


def test_corollary2_local_consistency_grows_toward_one():
    rows = corollary2_curve({"torus": get_surface("torus")}, [100, 3000], mean_degree=10, seed=0)
    assert [row["n"] for row in rows] == [100, 3000]
    assert rows[1]["r"] < rows[0]["r"]
    assert rows[1]["lc"] > rows[0]["lc"]
    assert rows[1]["lc"] > 0.95
    assert 8 < rows[1]["mean_degree"] < 12
    assert set(rows[0]) == {"surface", "n", "r", "lc", "mean_degree"}


# ------------------------------------------------------------------ placement helpers
def test_entropy_flat_sample_is_water_filling():
    buckets = np.repeat(np.arange(4), [900, 50, 6, 44])
    rng = np.random.default_rng(0)
    chosen = entropy_flat_sample(buckets, 100, rng)
    assert np.unique(chosen).size == 100
    counts = np.bincount(buckets[chosen], minlength=4)
    assert counts[2] == 6  # exhausted
    assert sorted(counts[[0, 1, 3]].tolist()) == [31, 31, 32]  # level 31, one leftover draw


def test_entropy_flat_sample_flattens_the_histogram_versus_uniform_sampling():
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.uniform(0.0, 0.1, 2000), rng.uniform(0.1, 1.0, 200)])  # skewed
    buckets = entropy_buckets(values)
    flat = np.bincount(buckets[entropy_flat_sample(buckets, 200, rng)], minlength=10)
    uniform = np.bincount(buckets[rng.choice(values.size, 200, replace=False)], minlength=10)
    sizes = np.bincount(buckets, minlength=10)
    assert ((flat == sizes) | (flat >= flat.max() - 1)).all()  # exhausted, or filled to the common level
    assert flat.std() < uniform.std() / 4
    assert uniform.max() > 5 * flat.max()


def test_entropy_and_buckets():
    assert entropy(np.array([[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])).tolist() == pytest.approx([0.0, np.log(3)])
    assert entropy_buckets(np.array([0.0, 0.5, 1.0]), 10).tolist() == [0, 5, 9]


def test_triangle_counts_are_balanced():
    counts = triangle_counts(23, 5, np.random.default_rng(0))
    assert counts.sum() == 23 and set(counts.tolist()) == {4, 5}


def _triple_topics(K: int, per_triple: dict[tuple[int, int, int], int], rng) -> TopicAssignment:
    rows = []
    for triple, count in per_triple.items():
        block = np.full((count, K), 0.02)
        block[:, list(triple)] = rng.dirichlet([2, 2, 2], count) * (1 - 0.02 * (K - 3))
        rows.append(block)
    return TopicAssignment.from_doc_topic(np.vstack(rows))


def test_vertex_topic_search_finds_a_valid_injective_map():
    rng = np.random.default_rng(0)
    K = 8
    triples = [(a, b, c) for a in range(K) for b in range(a + 1, K) for c in range(b + 1, K)]
    counts = {t: (30 if i % 3 else 5) for i, t in enumerate(triples)}  # a third of the triples is thin
    topics = _triple_topics(K, counts, rng)
    pools = triple_pools(topics)
    tiling = get_surface("sphere")
    mapping = map_topics_to_vertices(tiling, pools, 20, np.random.default_rng(1), family="sphere")
    assert np.unique(mapping).size == tiling.n_vertices
    assert all(pools.pool(mapping[t]).size >= 20 for t in tiling.triangles)


def test_vertex_topic_search_fails_with_a_fix():
    topics = _triple_topics(6, {(0, 1, 2): 30, (1, 2, 3): 30, (3, 4, 5): 5}, np.random.default_rng(0))
    with pytest.raises(SiptError, match="none exists.*fewer GraphSpec.n_topics.*bigger GraphSpec.corpus"):
        map_topics_to_vertices(get_surface("plane"), triple_pools(topics), 40, np.random.default_rng(0), family="plane")


def test_triple_pools_group_by_top3_set_and_filter_on_mass():
    doc_topic = np.array(
        [
            [0.5, 0.3, 0.1, 0.05, 0.05],
            [0.1, 0.3, 0.5, 0.05, 0.05],  # same set {0, 1, 2}
            [0.05, 0.05, 0.3, 0.3, 0.3],
            [0.25, 0.25, 0.2, 0.15, 0.15],  # set {0, 1, 2} but top-3 mass 0.7
        ]
    )
    topics = TopicAssignment.from_doc_topic(doc_topic)
    pools = triple_pools(topics)
    assert pools.pool([2, 0, 1]).tolist() == [0, 1, 3]
    assert pools.pool([2, 3, 4]).tolist() == [2]
    assert pools.pool([0, 3, 4]).size == 0
    assert triple_pools(topics, 0.75).pool([0, 1, 2]).tolist() == [0, 1]


# ------------------------------------------------------------------ pictures
def test_flat_nets_do_not_overlap_and_plot_writes_a_png(tmp_path):
    for name in SURFACES:
        net = flat_net(get_surface(name))
        centroids = np.round(net.mean(axis=1), 6)
        assert len(np.unique(centroids, axis=0)) == len(centroids)
        assert np.allclose(np.linalg.norm(net[:, 0] - net[:, 1], axis=1), 1.0)
    torus = get_surface("torus")
    tri, bary = uniform_points(torus, 50, np.random.default_rng(0))
    path = plot_tiling(torus, tmp_path / "torus.png", tri, bary)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
