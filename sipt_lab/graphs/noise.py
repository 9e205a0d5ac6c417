"""Random edge noise on a pre-training graph, as in the original SIPT code.

:func:`add_noise` samples the noise exactly without enumerating the ``C(n,2)`` node pairs.
"""

from __future__ import annotations

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.arrays import csr_from_pair_keys, sorted_unique
from sipt_lab.graphs.graph import MAX_MATERIALISED_EDGES, PretrainingGraph

#: Noise models of :func:`add_noise`.
NOISE_MODES = ("add", "flip")


def add_noise(graph: PretrainingGraph, rate: float, mode: str = "add", rng=None) -> PretrainingGraph:
    """Random edge noise, as in the original SIPT code (``_noise_graph``).

    ``"add"``: every non-adjacent unordered pair independently gains an edge with probability
    ``rate``. ``"flip"``: in addition every existing edge is removed independently with
    probability ``rate`` (so ``rate=1`` gives the complement graph).

    Sampled exactly without enumerating the ``C(n,2)`` pairs: independent Bernoulli(rate) trials over
    the ``N0 = C(n,2) - m`` non-edges are equivalent to drawing ``K ~ Binomial(N0, rate)`` and then a
    uniform ``K``-subset of the non-edges. The subset is drawn as ``K`` distinct ranks in ``[0, N0)``
    (uniform draws with duplicates removed, topped up and uniformly thinned to ``K``; its complement
    when ``K > N0/2``); rank ``r`` maps to the ``r``-th pair index missing from the sorted edge pair
    indices, and pair index ``k = hi(hi-1)/2 + lo`` maps back to ``(lo, hi)``.
    Returns a new explicit graph (``graph`` itself when ``rate == 0``).
    """
    if mode not in NOISE_MODES:
        raise SiptError(f"unknown noise mode {mode!r}; use one of {', '.join(NOISE_MODES)}")
    try:
        rate = float(rate)
    except (TypeError, ValueError):
        raise SiptError(f"noise rate must be a number in [0, 1], got {rate!r}") from None
    if not 0.0 <= rate <= 1.0:
        raise SiptError(f"noise rate must lie in [0, 1], got {rate}")
    if rate == 0.0:
        return graph
    rng = np.random.default_rng(rng)
    n = graph.n_nodes
    edges = graph.edges()
    original = np.sort(_pair_index(edges[:, 0], edges[:, 1]))
    n_non_edges = n * (n - 1) // 2 - original.size
    n_added = int(rng.binomial(n_non_edges, rate))
    kept = original[rng.random(original.size) >= rate] if mode == "flip" else original
    if kept.size + n_added > MAX_MATERIALISED_EDGES:
        raise SiptError(
            f"noise rate {rate} on {n} nodes would give {kept.size + n_added} edges, above the limit "
            f"of {MAX_MATERIALISED_EDGES}; use a smaller rate or graph"
        )
    ranks = _sample_distinct(n_non_edges, n_added, rng)
    added = ranks + np.searchsorted(original - np.arange(original.size), ranks, side="right")
    lo, hi = _pair_unindex(np.concatenate([kept, added]))
    keys = np.sort(lo * n + hi)
    return PretrainingGraph(n, csr=csr_from_pair_keys(keys, n))


def _sample_distinct(population: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Uniformly random ``k``-subset of ``range(population)``, sorted int64 (``population`` may be huge)."""
    if 2 * k > population:  # dense: draw the complement instead (population <= 2k is small)
        keep = np.ones(population, dtype=bool)
        keep[_sample_distinct(population, population - k, rng)] = False
        return np.flatnonzero(keep).astype(np.int64)
    chosen = np.empty(0, dtype=np.int64)
    while chosen.size < k:
        # Distinct values of iid uniform draws form, given their number, a uniform subset.
        draws = rng.integers(0, population, size=k - chosen.size + 16, dtype=np.int64)
        chosen = sorted_unique(np.concatenate([chosen, draws]))
    if chosen.size > k:
        chosen = np.sort(rng.choice(chosen, size=k, replace=False))
    return chosen


def _pair_index(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Index of the unordered pair ``lo < hi`` in ``[0, C(n,2))``: ``hi(hi-1)/2 + lo``."""
    hi = hi.astype(np.int64)
    return hi * (hi - 1) // 2 + lo


def _pair_unindex(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`_pair_index` (float estimate of ``hi`` corrected by exact integer checks)."""
    index = index.astype(np.int64)
    hi = np.floor((1 + np.sqrt(1 + 8 * index.astype(np.float64))) / 2).astype(np.int64)
    hi -= hi * (hi - 1) // 2 > index
    hi += (hi + 1) * hi // 2 <= index
    return index - hi * (hi - 1) // 2, hi
