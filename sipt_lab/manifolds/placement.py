"""Putting topic-modelled sentences on a tiling: topic triples, the vertex -> topic map, sampling.

A sentence lives on the 2-simplex of its three most probable topics, at its renormalised top-3
probabilities (barycentric coordinates). To put it on a tiling, every vertex gets a distinct topic
and a sentence goes to the triangle whose three vertex topics are its top-3 topics (as a set), at
its probabilities reordered to the triangle's vertex order. Its FT label, the most probable topic,
is then the topic of the triangle's vertex with the largest barycentric coordinate.

* :func:`triple_pools` groups sentences by their top-3 topic set (optionally only those whose
  top-3 mass exceeds a threshold, as the original code's 2/3 filter). Short sentences often have
  one or two topical words, so their third (and second) topic ties with all the others at the
  prior level (about half the default corpus at 20 topics): their top-3 *set* is then settled by the
  tie-break of :attr:`~sipt_lab.data.topics.TopicAssignment.top3_topics`, but their *position* hardly
  depends on it: the tied coordinates are equal and small, so the sentence sits next to the edge
  (or vertex) that every candidate triangle shares.
* :func:`map_topics_to_vertices` searches (backtracking, most-constrained vertex first, seeded
  random candidate order) for an injective vertex -> topic map under which every triangle's triple
  holds at least ``min_count`` sentences, and raises :class:`SiptError` when none exists.
* :func:`entropy_flat_sample` draws sentences so their entropy histogram is as flat as the pool
  allows: the paper's "sample an entropy bucket, then a sentence in it" (the original code meant to
  do this but its weights were always 1, i.e. uniform sampling). Drawing buckets uniformly among the
  non-empty ones, without replacement, fills every bucket to a common level ``L`` (small buckets are
  exhausted); we compute those expected counts directly ("water-filling") and draw only the
  remainder at random, which is the same target with less variance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.data.corpus import unseen_groups
from sipt_lab.data.topics import TopicAssignment
from sipt_lab.manifolds.tilings import Tiling

#: Most backtracking steps of the vertex -> topic search before it gives up.
MAX_SEARCH_STEPS = 200_000
#: Entropy buckets per triangle (the original's histogram had 10 bins).
N_ENTROPY_BUCKETS = 10


@dataclass(frozen=True)
class TriplePools:
    """Sentences grouped by their top-3 topic set.

    Attributes:
        n_topics: ``K``.
        triples: ``(T, 3)`` int64 sorted topic triples that hold at least one sentence.
        counts: ``(T,)`` sentences per triple.
        members: ``(m,)`` int64 corpus indices, grouped by triple (``starts`` delimits the groups).
        starts: ``(T + 1,)`` int64 offsets into ``members``.
    """

    n_topics: int
    triples: np.ndarray
    counts: np.ndarray
    members: np.ndarray
    starts: np.ndarray

    def valid(self, min_count: int) -> np.ndarray:
        """``(K, K, K)`` bool: ``valid[a, b, c]`` iff the set ``{a, b, c}`` holds ``>= min_count`` sentences."""
        K = self.n_topics
        table = np.zeros((K, K, K), dtype=bool)
        ok = self.triples[self.counts >= min_count]
        for perm in ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)):
            table[tuple(ok[:, perm].T)] = True
        return table

    def pool(self, triple) -> np.ndarray:
        """Corpus indices of the sentences whose top-3 set is ``triple`` (any order; empty if none)."""
        key = _triple_key(np.sort(np.asarray(triple))[None, :], self.n_topics)[0]
        at = np.searchsorted(_triple_key(self.triples, self.n_topics), key)
        if at == len(self.triples) or not np.array_equal(np.sort(triple), self.triples[at]):
            return np.empty(0, dtype=np.int64)
        return self.members[self.starts[at] : self.starts[at + 1]]


def triple_pools(topics: TopicAssignment, min_top3_mass: float = 0.0) -> TriplePools:
    """Group the sentences whose top-3 topic mass is ``> min_top3_mass`` by their top-3 topic set."""
    kept = np.flatnonzero(topics.top3_mass > min_top3_mass) if min_top3_mass > 0 else np.arange(len(topics.doc_topic))
    K = topics.n_topics
    keys = _triple_key(np.sort(topics.top3_topics[kept], axis=1), K)
    order = np.argsort(keys, kind="stable")
    unique, starts, counts = np.unique(keys[order], return_index=True, return_counts=True)
    triples = np.stack([unique // (K * K), unique // K % K, unique % K], axis=1)
    return TriplePools(K, triples, counts, kept[order], np.r_[starts, len(kept)].astype(np.int64))


def map_topics_to_vertices(
    tiling: Tiling, pools: TriplePools, min_count: int, rng: np.random.Generator, *, family: str
) -> np.ndarray:
    """``(V,)`` distinct topics, one per vertex, such that every triangle's triple holds ``>= min_count``
    sentences. Raises :class:`SiptError` naming the shortfall and the fixes when the search fails."""
    valid = pools.valid(min_count)
    n_valid = int((pools.counts >= min_count).sum())
    search = _Search(tiling, valid, rng)
    found = search.run()
    if found is None:
        verdict = "none exists" if search.steps < MAX_SEARCH_STEPS else f"none found in {MAX_SEARCH_STEPS} steps"
        raise SiptError(
            f"{family}: no map of {tiling.n_vertices} distinct topics onto the tiling's vertices gives all "
            f"{tiling.n_triangles} triangles a topic triple with >= {min_count} sentences ({verdict}; "
            f"{n_valid} of the {pools.n_topics}-topic model's triples hold that many); use fewer GraphSpec.n_topics "
            f"(more sentences per triple), fewer GraphSpec.n_nodes, a lower min_per_triangle, or a bigger GraphSpec.corpus"
        )
    return found


class _Search:
    """Backtracking over vertices, most constrained first; candidates in a seeded random order."""

    def __init__(self, tiling: Tiling, valid: np.ndarray, rng: np.random.Generator):
        self.triangles = tiling.triangles
        self.valid = valid
        self.pair_ok = valid.any(axis=2)
        self.rng = rng
        self.assigned = np.full(tiling.n_vertices, -1, dtype=np.int64)
        self.used = np.zeros(valid.shape[0], dtype=bool)
        self.steps = 0
        self.at_vertex = [np.flatnonzero((tiling.triangles == v).any(axis=1)) for v in range(tiling.n_vertices)]

    def run(self) -> np.ndarray | None:
        return self.assigned.copy() if self._extend() else None

    def _candidates(self, v: int) -> np.ndarray:
        ok = ~self.used
        for t in self.at_vertex[v]:
            others = self.assigned[self.triangles[t][self.triangles[t] != v]]
            a, b = others
            if a >= 0 and b >= 0:
                ok = ok & self.valid[a, b]
            elif a >= 0 or b >= 0:
                ok = ok & self.pair_ok[max(a, b)]
        return np.flatnonzero(ok)

    def _extend(self) -> bool:
        free = np.flatnonzero(self.assigned < 0)
        if free.size == 0:
            return True
        options = [self._candidates(v) for v in free]
        pick = int(np.argmin([o.size for o in options]))
        v, candidates = free[pick], options[pick]
        for topic in self.rng.permutation(candidates):
            self.steps += 1
            if self.steps > MAX_SEARCH_STEPS:
                return False
            self.assigned[v], self.used[topic] = topic, True
            if self._extend():
                return True
            self.assigned[v], self.used[topic] = -1, False
        return False


def entropy(probs: np.ndarray) -> np.ndarray:
    """``(n,)`` Shannon entropy (nats) of each row of ``probs`` ``(n, k)``; ``0 log 0 = 0``."""
    probs = np.asarray(probs, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(probs > 0, probs * np.log(probs), 0.0).sum(axis=1)


def entropy_buckets(values: np.ndarray, n_buckets: int = N_ENTROPY_BUCKETS) -> np.ndarray:
    """``(n,)`` int bucket of each value: ``n_buckets`` equal-width bins over the values' own range."""
    values = np.asarray(values, dtype=np.float64)
    lo, hi = values.min(), values.max()
    if hi <= lo:
        return np.zeros(values.size, dtype=np.int64)
    return np.minimum(((values - lo) / (hi - lo) * n_buckets).astype(np.int64), n_buckets - 1)


def entropy_flat_sample(buckets: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``(k,)`` distinct indices into ``buckets`` (``(m,)`` int bucket per item, see
    :func:`entropy_buckets`), in random order, with a bucket histogram as flat as possible: every
    bucket gets ``min(size, L)`` draws for a common level ``L``, and the ``k - sum`` leftover draws
    go to distinct random buckets that still have items. Within a bucket the items are uniform."""
    buckets = np.asarray(buckets, dtype=np.int64)
    if not 0 <= k <= buckets.size:
        raise ValueError(f"cannot draw {k} of {buckets.size} items without replacement")
    if k == 0:
        return np.empty(0, dtype=np.int64)
    sizes = np.bincount(buckets)
    take = _water_fill(sizes, k, rng)
    shuffled = rng.permutation(buckets.size)
    by_bucket = shuffled[np.argsort(buckets[shuffled], kind="stable")]
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    rank = np.arange(buckets.size) - starts[buckets[by_bucket]]
    return rng.permutation(by_bucket[rank < take[buckets[by_bucket]]])


def _water_fill(sizes: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``(B,)`` draws per bucket: ``min(size, L)`` for the largest level ``L`` that fits in ``k``, plus
    one more for ``k - sum`` random buckets with items to spare."""
    levels = np.arange(sizes.max() + 1)
    filled = np.minimum(sizes[None, :], levels[:, None]).sum(axis=1)
    level = int(np.searchsorted(filled, k, side="right")) - 1
    take = np.minimum(sizes, level)
    spare = np.flatnonzero(sizes > level)
    take[rng.choice(spare, size=k - int(take.sum()), replace=False)] += 1
    return take


def triangle_counts(total: int, n_triangles: int, rng: np.random.Generator) -> np.ndarray:
    """``(F,)`` equal shares of ``total`` (sizes differ by at most one; the larger ones at random)."""
    counts = np.full(n_triangles, total // n_triangles, dtype=np.int64)
    counts[rng.choice(n_triangles, size=total % n_triangles, replace=False)] += 1
    return counts


def _triple_key(sorted_triples: np.ndarray, K: int) -> np.ndarray:
    return (sorted_triples[:, 0] * K + sorted_triples[:, 1]) * K + sorted_triples[:, 2]


@dataclass(frozen=True)
class Placement:
    """Sentences on a tiling: pre-training points and the held-out points, built the same way.

    Attributes:
        sentences: ``(n,)`` int64 corpus index of each point (node order is random).
        triangles: ``(n,)`` int64 triangle of each point.
        bary: ``(n, 3)`` barycentric coordinates in the triangle's vertex order.
        heldout_sentences, heldout_triangles, heldout_bary: the same for the held-out points.
        pool_sizes: ``(F,)`` sentences available per triangle.
    """

    sentences: np.ndarray
    triangles: np.ndarray
    bary: np.ndarray
    heldout_sentences: np.ndarray
    heldout_triangles: np.ndarray
    heldout_bary: np.ndarray
    pool_sizes: np.ndarray


def place_sentences(
    tiling: Tiling,
    vertex_topics: np.ndarray,
    pools: TriplePools,
    topics: TopicAssignment,
    counts: np.ndarray,
    heldout_counts: np.ndarray,
    rng: np.random.Generator,
    *,
    groups: np.ndarray,
    family: str,
) -> Placement:
    """Draw ``counts[t]`` pre-training and then ``heldout_counts[t]`` held-out sentences on every
    triangle ``t`` from its pool, entropy-flat (:func:`entropy_flat_sample`, buckets over the pool's
    entropy range), held-out ones from the sentences left over; a triangle whose held-out draw holds
    a sentence of a group (article) with a pre-training sentence (of any triangle) draws its held-out
    sentences again, from a stream of its own, among the pool's sentences of the other groups.

    ``vertex_topics``: ``(V,)`` from :func:`map_topics_to_vertices`; ``counts``, ``heldout_counts``:
    ``(F,)``; ``groups``: ``(N,)`` group of every corpus sentence
    (:func:`~sipt_lab.data.corpus.sentence_groups`). The caller guarantees every pool holds
    ``counts + heldout_counts`` sentences; raises :class:`SiptError` when a pool has too few left
    outside the pre-training sentences' groups.
    """
    corners = vertex_topics[tiling.triangles]
    triangle_pools = [pools.pool(triple) for triple in corners]
    bary = [_renormalised(topics.doc_topic[pool][:, triple]) for pool, triple in zip(triangle_pools, corners)]
    buckets = [entropy_buckets(entropy(b)) for b in bary]
    first, spare = [], []
    for b, count, heldout_count in zip(buckets, counts, heldout_counts):
        chosen = entropy_flat_sample(b, int(count), rng)
        rest = np.setdiff1d(np.arange(b.size), chosen)
        first.append(chosen)
        spare.append(rest[entropy_flat_sample(b[rest], int(heldout_count), rng)])
    node_sentences = np.concatenate([pool[chosen] for pool, chosen in zip(triangle_pools, first)])
    redraw = rng.spawn(1)[0]  # its own stream: the nodes, their order and later draws (noise) stay as drawn
    second = []
    for t, (pool, b, drawn) in enumerate(zip(triangle_pools, buckets, spare)):
        if unseen_groups(groups, node_sentences, pool[drawn]).all():
            second.append(drawn)
            continue
        rest = np.flatnonzero(unseen_groups(groups, node_sentences, pool))  # the nodes' own groups are seen
        if rest.size < drawn.size:
            raise SiptError(
                f"{family}: triangle {t} needs {drawn.size} held-out sentences from articles with no sentence "
                f"on a node, but its topic triple has only {rest.size}; ask for fewer GraphSpec.n_heldout, fewer "
                f"GraphSpec.n_nodes or GraphSpec.n_topics, or use a bigger GraphSpec.corpus"
            )
        second.append(rest[entropy_flat_sample(b[rest], drawn.size, redraw)])
    pt, ho = _points(triangle_pools, bary, first), _points(triangle_pools, bary, second)
    node_order, heldout_order = rng.permutation(pt[0].size), rng.permutation(ho[0].size)
    pool_sizes = np.array([pool.size for pool in triangle_pools], dtype=np.int64)
    return Placement(*(column[node_order] for column in pt), *(column[heldout_order] for column in ho), pool_sizes)


def _points(pools: list[np.ndarray], bary: list[np.ndarray], draws: list[np.ndarray]) -> list[np.ndarray]:
    """The drawn points of every triangle ``t`` (``draws[t]``: positions in ``pools[t]``), concatenated:
    ``(m,)`` corpus indices, ``(m,)`` triangles and ``(m, 3)`` barycentric coordinates."""
    return [
        np.concatenate([pool[d] for pool, d in zip(pools, draws)]),
        np.concatenate([np.full(d.size, t, dtype=np.int64) for t, d in enumerate(draws)]),
        np.concatenate([b[d] for b, d in zip(bary, draws)]),
    ]


def _renormalised(probs: np.ndarray) -> np.ndarray:
    """``(m, 3)`` rows of ``probs`` scaled to sum to one (a sentence's barycentric coordinates)."""
    return probs / probs.sum(axis=1, keepdims=True)
