"""The manifold graph families (plane, mobius, sphere, torus, klein, projective) on hand-made topics."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from synthetic_fakes import shared_articles, with_articles

from sipt_lab.core.errors import SiptError
from sipt_lab.data.corpus import Corpus, load_corpus
from sipt_lab.data.topics import TopicAssignment
from sipt_lab.manifolds import get_surface
from sipt_lab.synthetic.builder import build_dataset, resolve_spec
from sipt_lab.synthetic.families import get_family
from sipt_lab.synthetic.manifold_families import DEFAULT_TOPICS, build_manifold
from sipt_lab.synthetic.spec import GraphSpec

FAMILIES = ("plane", "mobius", "sphere", "torus", "klein", "projective")


def _triple_corpus(n_topics: int = 10, per_triple: int = 45, seed: int = 0) -> tuple[Corpus, TopicAssignment]:
    """``per_triple`` sentences for every topic triple: Dirichlet(2, 2, 2) over the triple (mass 0.9),
    the rest spread evenly, so every sentence's top-3 set is its triple."""
    rng = np.random.default_rng(seed)
    triples = list(itertools.combinations(range(n_topics), 3))
    doc_topic = np.full((len(triples) * per_triple, n_topics), 0.1 / (n_topics - 3))
    for k, triple in enumerate(triples):
        rows = slice(k * per_triple, (k + 1) * per_triple)
        doc_topic[rows, list(triple)] = 0.9 * rng.dirichlet([2, 2, 2], per_triple)
    sentences = [f"sentence {i}" for i in range(len(doc_topic))]
    return Corpus(sentences, None, None, "fake"), TopicAssignment.from_doc_topic(doc_topic)


def _build(name: str, corpus, topics, seed: int = 0, **options):
    spec = resolve_spec(GraphSpec(family=name, n_nodes=60, n_heldout=10, seed=seed, n_topics=topics.n_topics))
    return build_manifold(name, spec, corpus, topics, np.random.default_rng(seed), **options)


@pytest.fixture(scope="module")
def fake():
    return _triple_corpus()


def test_heldout_sentences_come_from_articles_with_no_sentence_on_a_node(fake):
    corpus, topics = fake
    corpus = with_articles(corpus, 5)  # nine articles per topic triple
    for seed in range(2):
        data = _build("torus", corpus, topics, seed=seed)
        assert len(data.heldout_sentences) == 10
        assert not shared_articles(corpus, data.sentences, data.heldout_sentences)
        plain = _build("torus", fake[0], topics, seed=seed)  # the articles move only held-out sentences
        assert data.sentences == plain.sentences and np.array_equal(data.graph.edges(), plain.graph.edges())
    with pytest.raises(SiptError, match="from articles with no sentence on a node") as error:
        _build("torus", with_articles(corpus, 45), topics)  # one article per triple
    assert "\n" not in str(error.value) and "fewer GraphSpec.n_heldout" in str(error.value)


@pytest.mark.parametrize("name", FAMILIES)
def test_family_builds_a_valid_dataset(name, fake):
    corpus, topics = fake
    data = _build(name, corpus, topics)
    tiling = get_surface(name)
    assert data.family == name and data.n_nodes == 60 and len(data.sentences) == 60

    A = data.graph.adjacency().toarray()
    assert (A == A.T).all() and (np.diag(A) == 0).all() and A.sum() > 0

    columns, rows = data.tables["points"]
    assert columns[:5] == ("node", "triangle", "b0", "b1", "b2")
    tri = rows[:, 1].astype(int)
    bary = rows[:, 2:5].astype(float)
    corpus_index = rows[:, columns.index("corpus_index")].astype(int)
    assert np.allclose(bary.sum(axis=1), 1.0)
    assert np.ptp(np.bincount(tri, minlength=tiling.n_triangles)) <= 1  # balanced over triangles
    vertex_topics = np.array(data.params["vertex_topics"])
    assert np.unique(vertex_topics).size == tiling.n_vertices
    corner_topics = vertex_topics[tiling.triangles[tri]]
    # every sentence sits on the triangle of its top-3 topic set, at its renormalised probabilities
    assert (np.sort(corner_topics, axis=1) == np.sort(topics.top3_topics[corpus_index], axis=1)).all()
    probs = topics.doc_topic[corpus_index[:, None], corner_topics]
    assert np.allclose(bary, probs / probs.sum(axis=1, keepdims=True))
    # the FT label is the topic of the vertex with the largest coordinate
    assert (data.labels == corner_topics[np.arange(60), bary.argmax(axis=1)]).all()
    assert (data.labels == topics.labels[corpus_index]).all()
    assert [corpus.sentences[i] for i in corpus_index] == data.sentences

    tri_columns, tri_rows = data.tables["triangles"]
    assert tri_columns[:4] == ("triangle", "v0", "v1", "v2")
    assert (tri_rows[:, 1:4].astype(int) == tiling.triangles).all()
    assert (tri_rows[:, 4:7].astype(int) == vertex_topics[tiling.triangles]).all()

    assert len(data.heldout_sentences) == 10 and data.heldout_labels.shape == (10,)
    assert not set(data.heldout_sentences) & set(data.sentences)
    assert set(data.heldout_labels.tolist()) <= set(vertex_topics.tolist())
    assert data.local_consistency > 0.6


def test_same_seed_same_dataset_other_seed_other_dataset(fake):
    corpus, topics = fake
    first, second, other = (
        _build("torus", corpus, topics, 3),
        _build("torus", corpus, topics, 3),
        _build("torus", corpus, topics, 4),
    )
    assert first.sentences == second.sentences and first.graph == second.graph
    assert first.heldout_sentences == second.heldout_sentences
    assert np.array_equal(first.tables["points"][1], second.tables["points"][1])
    assert first.sentences != other.sentences


def test_too_few_sentences_per_triple_is_a_clear_error():
    corpus, topics = _triple_corpus(per_triple=12)
    with pytest.raises(
        SiptError, match=r"torus: no map of 7 distinct topics.*>= 40 sentences.*fewer GraphSpec.n_topics"
    ):
        _build("torus", corpus, topics)
    # the per-triangle share counts too: 60 nodes + 10 held-out on the plane's 2 triangles need 35 each
    with pytest.raises(SiptError, match=">= 35 sentences"):
        _build("plane", corpus, topics, min_per_triangle=5)


def test_explicit_radius_and_min_per_triangle(fake):
    corpus, topics = fake
    data = _build("sphere", corpus, topics, radius=0.05, min_per_triangle=10)
    assert data.params["radius"] == 0.05 and data.params["mean_degree_target"] is None
    assert data.params["min_per_triangle"] == 10  # 60 / 8 + 10 / 8 -> at most 8 + 2 per triangle
    assert data.graph.n_edges < _build("sphere", corpus, topics).graph.n_edges


def test_registry_and_written_tables(fake, tmp_path):
    corpus, topics = fake
    for name in FAMILIES:
        assert get_family(name).default_topics == DEFAULT_TOPICS
    assert all(get_family(name).default_nodes == 100 for name in FAMILIES)
    data = get_family("mobius").builder(
        resolve_spec(GraphSpec(family="mobius", n_nodes=40, n_heldout=5)), corpus, topics, np.random.default_rng(0)
    )
    out = data.write(tmp_path / "mobius")
    points = (out / "points.tsv").read_text().splitlines()
    assert points[0].startswith("#node\ttriangle\tb0\tb1\tb2") and len(points) == 41
    triangles = (out / "triangles.tsv").read_text().splitlines()
    assert triangles[0].startswith("#triangle\tv0\tv1\tv2") and len(triangles) == 6
    assert "edges.tsv" in {p.name for p in out.iterdir()}


@pytest.mark.slow
def test_torus_on_the_default_corpus():
    # fits the 20-topic LDA (about 30 s on 2 cores) unless it is cached
    data = build_dataset(GraphSpec(family="torus"), corpus=load_corpus())
    assert data.n_nodes == 100 and len(data.heldout_sentences) == 20
    assert np.unique(data.labels).size == 7
    assert data.local_consistency > 0.85
    assert data.graph.adjacency().diagonal().sum() == 0


@pytest.mark.slow
def test_graph_build_writes_a_surface_with_its_picture(fake, tmp_path, monkeypatch, capsys):
    from sipt_lab.cli.main import main
    from sipt_lab.synthetic import builder

    corpus, topics = fake
    monkeypatch.setattr(builder, "load_corpus", lambda path=None: corpus)
    monkeypatch.setattr(builder, "fit_topics", lambda corpus, config: topics)
    out = tmp_path / "torus"
    assert (
        main(["graph", "build", "--graph", "torus", "--nodes", "60", "--topics", "10", "--out", str(out), "--quiet"])
        == 0
    )
    assert {"triangles.tsv", "points.tsv", "surface.png", "edges.tsv", "labels.tsv"} <= {p.name for p in out.iterdir()}
    assert (out / "surface.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["consistency", "--edges", str(out / "edges.tsv"), "--labels", str(out / "labels.tsv"), "--json"]) == 0
