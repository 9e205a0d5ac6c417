import networkx as nx
import numpy as np
import pytest
from synthetic_fakes import fake_corpus_and_topics

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.synthetic.graphlets import connected_graphs
from sipt_lab.synthetic.mechanistic import (
    build_mechanistic,
    cycle_with_motifs,
    neighborhood_labels,
    structural_labels,
)
from sipt_lab.synthetic.spec import GraphSpec

FAMILIES = ("neighborhood", "motif", "structural")


@pytest.fixture(scope="module")
def fakes():
    return fake_corpus_and_topics(n_topics=30, per_topic=60, n_vague=50)


def build(fakes, family, n_nodes=60, seed=0, n_heldout=10, **kwargs):
    corpus, topics = fakes
    spec = GraphSpec(family, n_nodes=n_nodes, n_heldout=n_heldout, n_topics=30, seed=seed)
    return build_mechanistic(spec, corpus, topics, np.random.default_rng(seed), label=family, **kwargs)


@pytest.mark.parametrize("n_nodes", [8, 9, 23, 90, 201])
def test_cycle_with_motifs_structure(n_nodes):
    motif_graph = cycle_with_motifs(n_nodes, np.random.default_rng(n_nodes))
    G = motif_graph.graph.to_networkx()
    part = motif_graph.part
    atlas = connected_graphs(2, 5)
    n_motifs = motif_graph.motif_atlas_ids.size
    assert G.number_of_nodes() == n_nodes and nx.is_connected(G)
    assert n_motifs == max(1, round(n_nodes / (4 + 137 / 30)))
    cycle = np.flatnonzero(part == 0)
    assert cycle.size == motif_graph.cycle_length >= 3
    assert nx.is_isomorphic(G.subgraph(cycle.tolist()), nx.cycle_graph(cycle.size))
    for j, atlas_id in enumerate(motif_graph.motif_atlas_ids):
        members = np.flatnonzero(part == j + 1)
        assert nx.is_isomorphic(G.subgraph(members.tolist()), atlas[atlas_id])
        leaving = [(u, v) for u, v in G.edges(members.tolist()) if (part[u] == j + 1) != (part[v] == j + 1)]
        assert len(leaving) == 1  # one attaching edge, to the cycle
        anchor, motif_node = motif_graph.attachments[j]
        assert part[anchor] == 0 and part[motif_node] == j + 1 and G.has_edge(anchor, motif_node)
    assert (
        G.number_of_edges()
        == cycle.size + sum(atlas[i].number_of_edges() for i in motif_graph.motif_atlas_ids) + n_motifs
    )


def test_cycle_with_motifs_spreads_the_anchors_evenly():
    motif_graph = cycle_with_motifs(90, np.random.default_rng(0))
    G = motif_graph.graph.to_networkx()
    cycle_nodes = np.flatnonzero(motif_graph.part == 0).tolist()
    anchors = motif_graph.attachments[:, 0]
    ring = nx.cycle_basis(G.subgraph(cycle_nodes))[0]
    positions = np.sort([ring.index(a) for a in anchors])
    gaps = np.diff(np.concatenate([positions, [positions[0] + len(ring)]]))
    assert gaps.max() - gaps.min() <= 1


def test_cycle_with_motifs_rejects_tiny_graphs():
    with pytest.raises(SiptError, match="GraphSpec.n_nodes >= 8"):
        cycle_with_motifs(7, np.random.default_rng(0))


def test_neighborhood_labels_on_a_path_are_contiguous_segments():
    path = PretrainingGraph.from_networkx(nx.path_graph(40))
    labels = neighborhood_labels(path, np.random.default_rng(0), radius=3, n_clusters=4)
    assert np.unique(labels).size == 4
    assert np.count_nonzero(np.diff(labels)) == 3  # four runs along the path


def test_structural_labels_follow_the_graphlet_degree_vectors():
    ring = PretrainingGraph.from_networkx(nx.cycle_graph(12))
    assert structural_labels(ring, np.random.default_rng(0)).tolist() == [0] * 12  # one distinct GDV
    # two stars joined at their centres: centres, leaves; equivalent nodes share a cluster
    G = nx.Graph([(0, 1)] + [(0, k) for k in range(2, 8)] + [(1, k) for k in range(8, 14)])
    labels = structural_labels(
        PretrainingGraph.from_networkx(G, nodelist=range(14)), np.random.default_rng(0), n_clusters=2
    )
    assert labels[0] == labels[1] and np.unique(labels[2:]).size == 1 and labels[0] != labels[2]
    assert labels[2] == 0  # the bigger cluster is numbered 0


@pytest.mark.parametrize("family", FAMILIES)
def test_builders_put_one_distinct_topic_per_structure_class(fakes, family):
    corpus, topics = fakes
    dataset = build(fakes, family)
    columns, rows = dataset.tables["nodes"]
    structure = rows[:, columns.index(family)].astype(int)
    assert dataset.n_nodes == 60 and len(dataset.sentences) == 60
    # the FT label is a relabelling of the structure label: one distinct topic per class
    pairs = set(zip(structure.tolist(), dataset.labels.tolist()))
    assert len(pairs) == np.unique(structure).size == np.unique(dataset.labels).size == dataset.params["n_classes"]
    index = {s: i for i, s in enumerate(corpus.sentences)}
    pt = np.array([index[s] for s in dataset.sentences])
    heldout = np.array([index[s] for s in dataset.heldout_sentences])
    assert np.array_equal(topics.labels[pt], dataset.labels)
    assert np.array_equal(topics.labels[heldout], dataset.heldout_labels)
    assert len(heldout) == 10 and not set(pt) & set(heldout) and len(set(pt)) == 60
    A = dataset.graph.adjacency()
    assert (A != A.T).nnz == 0 and not A.diagonal().any()
    if family == "motif":
        assert dataset.params["n_classes"] == dataset.params["n_motifs"] + 1


def test_the_three_families_share_the_graph_for_a_seed(fakes):
    graphs = [build(fakes, family, seed=5).graph for family in FAMILIES]
    assert graphs[0] == graphs[1] == graphs[2]


def test_structural_lc_is_below_neighborhood_and_motif_lc(fakes):
    lc = {family: np.mean([build(fakes, family, seed=s).local_consistency for s in range(3)]) for family in FAMILIES}
    assert lc["structural"] < 0.75 < min(lc["neighborhood"], lc["motif"])


def test_same_seed_same_dataset(fakes):
    a, b = build(fakes, "structural", seed=2), build(fakes, "structural", seed=2)
    assert a.sentences == b.sentences and a.graph == b.graph and np.array_equal(a.labels, b.labels)
    assert a.heldout_sentences == b.heldout_sentences and a.params == b.params


def test_too_few_confident_sentences_is_a_clear_error(fakes):
    with pytest.raises(SiptError, match="fewer GraphSpec.n_nodes"):
        build(fakes, "motif", n_nodes=400)  # the cycle class alone needs ~200 sentences of one topic
    with pytest.raises(SiptError, match="probability >= 0.99"):
        build(fakes, "neighborhood", min_confidence=0.99)
