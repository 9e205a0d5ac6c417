import numpy as np
import pytest

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.training.sampler import GraphBatchSampler


def _explicit_graph():
    """30 nodes: a random sparse graph plus two isolated nodes (28, 29) and a hub (0) linked to 1..20."""
    rng = np.random.default_rng(3)
    u, v = rng.integers(0, 28, 60), rng.integers(0, 28, 60)
    keep = u != v
    u = np.concatenate([u[keep], np.zeros(20, dtype=np.int64)])
    v = np.concatenate([v[keep], np.arange(1, 21)])
    return PretrainingGraph.from_edges(u, v, 30)


def _implicit_graph():
    return PretrainingGraph.from_groups(np.array([0] * 8 + [1] * 7 + [2] * 6 + [3]))  # node 21 is alone


@pytest.mark.parametrize("make_graph", [_explicit_graph, _implicit_graph])
def test_pairs_respect_the_graph(make_graph):
    graph = make_graph()
    n = graph.n_nodes
    lengths = np.random.default_rng(0).integers(1, 12, n)
    sampler = GraphBatchSampler(graph, lengths, batch_size=7, seed=5)
    degrees = graph.degrees()
    for step in range(40):
        b = sampler.batch(step)
        seeds = b.nodes[: b.n_seeds]
        assert b.n_seeds == 7 and len(np.unique(b.nodes)) == len(b.nodes)
        has_pos, has_neg = b.positives >= 0, b.negatives >= 0
        np.testing.assert_array_equal(has_pos, degrees[seeds] > 0)
        np.testing.assert_array_equal(has_neg, degrees[seeds] < n - 1)
        pos, neg = b.nodes[b.positives[has_pos]], b.nodes[b.negatives[has_neg]]
        assert (pos != seeds[has_pos]).all() and (neg != seeds[has_neg]).all()
        assert graph.has_edge(seeds[has_pos], pos).all()
        assert not graph.has_edge(seeds[has_neg], neg).any()
        # every encoded non-seed row is some seed's partner
        partners = np.concatenate([b.positives[has_pos], b.negatives[has_neg]])
        assert set(range(b.n_seeds, len(b.nodes))) <= set(partners.tolist())
        # the default ("sampled") pairs are exactly (seed, partner)
        seed_rows = np.arange(b.n_seeds)
        np.testing.assert_array_equal(b.positive_pairs, np.column_stack([seed_rows[has_pos], b.positives[has_pos]]))
        np.testing.assert_array_equal(b.negative_pairs, np.column_stack([seed_rows[has_neg], b.negatives[has_neg]]))


@pytest.mark.parametrize("make_graph", [_explicit_graph, _implicit_graph])
def test_batch_pairs_are_every_ordered_pair_labelled_by_the_graph(make_graph):
    graph = make_graph()
    lengths = np.random.default_rng(0).integers(1, 12, graph.n_nodes)
    sampled = GraphBatchSampler(graph, lengths, batch_size=6, seed=2)
    in_batch = GraphBatchSampler(graph, lengths, batch_size=6, seed=2, pairs="batch")
    dense = graph.adjacency().toarray() > 0
    for step in range(10):
        b = in_batch.batch(step)
        # same samples and masks as the paper's sampling: only the scored pairs differ
        np.testing.assert_array_equal(b.nodes, sampled.batch(step).nodes)
        np.testing.assert_array_equal(b.mask, sampled.batch(step).mask)
        u = len(b.nodes)
        pairs = np.concatenate([b.positive_pairs, b.negative_pairs])
        assert len(pairs) == u * (u - 1) and len({tuple(p) for p in pairs.tolist()}) == len(pairs)
        assert (pairs[:, 0] != pairs[:, 1]).all()
        assert dense[b.nodes[b.positive_pairs[:, 0]], b.nodes[b.positive_pairs[:, 1]]].all()
        assert not dense[b.nodes[b.negative_pairs[:, 0]], b.nodes[b.negative_pairs[:, 1]]].any()
        # every sampled (seed, positive) edge is among them
        seed_rows = np.flatnonzero(b.positives >= 0)
        assert {(s, b.positives[s]) for s in seed_rows} <= {tuple(p) for p in b.positive_pairs.tolist()}


def test_seeds_are_a_permutation_per_epoch():
    graph = _implicit_graph()
    sampler = GraphBatchSampler(graph, np.full(22, 5), batch_size=5, seed=1)
    assert sampler.steps_per_epoch == 4
    for epoch in range(3):
        seeds = np.concatenate([sampler.seeds(epoch * 4 + k) for k in range(4)])
        assert len(np.unique(seeds)) == 20
    assert not np.array_equal(sampler.seeds(0), sampler.seeds(4))


def test_batch_larger_than_graph_is_the_whole_graph():
    graph = _implicit_graph()
    sampler = GraphBatchSampler(graph, np.full(22, 5), batch_size=100)
    assert sorted(sampler.seeds(3).tolist()) == list(range(22))


def test_deterministic_and_independent_of_the_graph():
    lengths = np.random.default_rng(0).integers(1, 20, 30)
    a = GraphBatchSampler(_explicit_graph(), lengths, 8, seed=4)
    b = GraphBatchSampler(_explicit_graph(), lengths, 8, seed=4)
    other_graph = GraphBatchSampler(PretrainingGraph.from_groups(np.arange(30) % 3), lengths, 8, seed=4)
    other_seed = GraphBatchSampler(_explicit_graph(), lengths, 8, seed=5)
    for step in (0, 3, 9):
        x, y, z = a.batch(step), b.batch(step), other_graph.batch(step)
        for field in ("nodes", "positives", "negatives", "mask", "positive_pairs", "negative_pairs"):
            np.testing.assert_array_equal(getattr(x, field), getattr(y, field))
        # seeds and MLM masks do not depend on the graph (nor on anything but seed and step)
        np.testing.assert_array_equal(x.nodes[: x.n_seeds], z.nodes[: z.n_seeds])
        np.testing.assert_array_equal(x.mask, z.mask)
    assert not np.array_equal(a.batch(0).nodes, other_seed.batch(0).nodes)


def test_a_run_without_pairs_gets_its_seeds_masks_and_replacements_alone():
    lengths = np.random.default_rng(0).integers(2, 20, 30)
    paired = GraphBatchSampler(_explicit_graph(), lengths, 8, seed=4, mask_replacement="bert", vocab_size=50)
    alone = GraphBatchSampler(
        _explicit_graph(), lengths, 8, seed=4, mask_replacement="bert", vocab_size=50, reads_pairs=False
    )
    for step in (0, 5):
        x, y = paired.batch(step), alone.batch(step)
        assert len(x.nodes) > x.n_seeds and len(x.positive_pairs)  # the paired run has partners and pairs
        np.testing.assert_array_equal(y.nodes, x.nodes[: x.n_seeds])
        assert y.n_seeds == x.n_seeds and (y.positives == -1).all() and (y.negatives == -1).all()
        assert y.positive_pairs.shape == y.negative_pairs.shape == (0, 2)
        np.testing.assert_array_equal(y.mask, x.mask)
        np.testing.assert_array_equal(y.replacement, x.replacement)


def test_masks_avoid_cls_and_padding_at_the_requested_rate():
    graph = PretrainingGraph.from_groups(np.arange(200) % 10)
    lengths = np.random.default_rng(0).integers(1, 60, 200)
    sampler = GraphBatchSampler(graph, lengths, batch_size=50, mask_prob=0.15, seed=0)
    masked = eligible = 0
    for step in range(20):
        b = sampler.batch(step)
        seed_lengths = lengths[b.nodes[: b.n_seeds]]
        assert b.mask.shape == (50, seed_lengths.max())
        assert not b.mask[:, 0].any()
        assert not (b.mask & (np.arange(b.mask.shape[1]) >= seed_lengths[:, None])).any()
        masked += b.mask.sum()
        eligible += (seed_lengths - 1).sum()
    assert 0.13 < masked / eligible < 0.17
    none = GraphBatchSampler(graph, lengths, batch_size=50, mask_prob=0.0)
    assert not none.batch(0).mask.any()


def test_bad_inputs_are_sipt_errors():
    graph = _implicit_graph()
    with pytest.raises(SiptError, match="one sentence per node"):
        GraphBatchSampler(graph, np.ones(5), 4)
    with pytest.raises(SiptError, match="batch_size"):
        GraphBatchSampler(graph, np.ones(22), 0)
    with pytest.raises(SiptError, match="unknown pair mode 'all'; choose one of sampled, batch"):
        GraphBatchSampler(graph, np.ones(22), 4, pairs="all")


def test_hard_negatives_are_two_hops_away_and_component_negatives_stay_home():
    from sipt_lab.training.sampler import NEGATIVE_SAMPLERS

    ring = np.arange(12)
    two_cycles = PretrainingGraph.from_edges(
        np.concatenate([ring[:6], ring[6:]]), np.concatenate([np.roll(ring[:6], 1), np.roll(ring[6:], 1)]), 12
    )
    seeds = np.arange(12)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        hard = NEGATIVE_SAMPLERS["two-hop"](two_cycles, seeds, rng)
        home = NEGATIVE_SAMPLERS["same-component"](two_cycles, seeds, rng)
        for s, h, c in zip(seeds, hard, home):
            assert h != s and not two_cycles.has_edge(np.array([s]), np.array([h]))[0]
            assert c != s and not two_cycles.has_edge(np.array([s]), np.array([c]))[0]
            assert (c < 6) == (s < 6)  # the same 6-cycle (each has non-neighbours at home)
        # on a 6-cycle a neighbour of a neighbour is two steps round, or the seed itself (drawn again)
        ring_distance = np.minimum((hard - seeds) % 6, (seeds - hard) % 6)
        assert np.all((ring_distance == 2) & ((hard < 6) == (seeds < 6)))
    sampler = GraphBatchSampler(two_cycles, np.full(12, 5), batch_size=4, seed=0, negatives="two-hop")
    assert sampler.batch(0).negatives.min() >= 0
    with pytest.raises(SiptError, match="unknown negative sampler"):
        GraphBatchSampler(two_cycles, np.full(12, 5), batch_size=4, negatives="hardest")


def test_bert_replacement_is_80_10_10_over_the_same_mask():
    from sipt_lab.training.sampler import KEEP_TOKEN, REPLACE_WITH_MASK

    graph = _implicit_graph()
    lengths = np.full(graph.n_nodes, 40)
    plain = GraphBatchSampler(graph, lengths, batch_size=22, seed=1)
    bert = GraphBatchSampler(graph, lengths, batch_size=22, seed=1, mask_replacement="bert", vocab_size=50)
    codes = []
    for step in range(40):
        a, b = plain.batch(step), bert.batch(step)
        assert a.replacement is None
        np.testing.assert_array_equal(a.mask, b.mask)  # the choice of tokens does not change
        codes.append(b.replacement[b.mask])
    codes = np.concatenate(codes)
    assert len(codes) > 4000
    shares = [np.mean(codes == REPLACE_WITH_MASK), np.mean(codes >= 0), np.mean(codes == KEEP_TOKEN)]
    np.testing.assert_allclose(shares, [0.8, 0.1, 0.1], atol=0.02)
    random_ids = codes[codes >= 0]
    assert random_ids.min() == 1 and random_ids.max() == 49 and len(np.unique(random_ids)) == 49  # never [PAD]


def test_bert_replacement_needs_the_vocabulary_size():
    with pytest.raises(SiptError, match="vocab_size"):
        GraphBatchSampler(_implicit_graph(), np.full(22, 5), 4, mask_replacement="bert")
    with pytest.raises(SiptError, match="unknown mask replacement"):
        GraphBatchSampler(_implicit_graph(), np.full(22, 5), 4, mask_replacement="span")
