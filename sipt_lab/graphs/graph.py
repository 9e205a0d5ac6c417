"""The pre-training graph ``G_PT``: an undirected simple graph over samples ``0..n-1``.

Two representations share one interface (:class:`PretrainingGraph`):

* **explicit**: a symmetric ``scipy.sparse.csr_array`` (0/1 ``int8`` data, sorted ``int32`` indices
  where they fit, no self-loops, no duplicate edges);
* **implicit label cliques**: group ids, with ``i ~ j`` iff ``groups[i] == groups[j]`` and
  ``i != j``. Degrees, neighbours, edge tests, sampling and local consistency work on the groups
  without materialising the ``O(n^2)`` edges (the CLIQUES family and Corollary 1 use this);
  :meth:`PretrainingGraph.adjacency`, ``edges`` and noise materialise them, up to a size limit.

Also here: :func:`add_noise` (the original SIPT code's random edge noise, sampled exactly without
enumerating pairs) and the TSV file format (``u<TAB>v`` edge lines, ``node<TAB>label`` lines).
Node names in files are strings; the library maps them to ``0..n-1`` at this boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np
import scipy.sparse as sp

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import read_text_file, shorten, write_text_atomic

#: Largest number of undirected edges that :meth:`PretrainingGraph.adjacency` (and everything that
#: needs explicit edges, e.g. :func:`add_noise`) will materialise: 50M edges are ~0.5 GB of CSR.
MAX_MATERIALISED_EDGES = 50_000_000

#: Noise models of :func:`add_noise`.
NOISE_MODES = ("add", "flip")


class PretrainingGraph:
    """Undirected simple graph ``G_PT`` over samples ``0..n-1``.

    Build it with :meth:`from_edges`, :meth:`from_adjacency`, :meth:`from_groups` (implicit label
    cliques) or :meth:`from_networkx`; never mutate it (the arrays it hands out are read-only).
    ``dropped_self_loops`` and ``dropped_duplicates`` count what the constructor threw away.
    """

    def __init__(
        self,
        n_nodes: int,
        *,
        csr: sp.csr_array | None = None,
        group_ids: np.ndarray | None = None,
        group_codes: np.ndarray | None = None,
        dropped_self_loops: int = 0,
        dropped_duplicates: int = 0,
    ):
        # Private: use the from_* constructors, which validate and canonicalise their input.
        self._n = int(n_nodes)
        self._csr = csr
        self._group_ids = group_ids
        self._codes = group_codes
        self.dropped_self_loops = int(dropped_self_loops)
        self.dropped_duplicates = int(dropped_duplicates)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_edges(cls, u, v, n_nodes: int) -> PretrainingGraph:
        """Graph on ``n_nodes`` nodes from endpoint arrays ``u, v`` (each ``(m,)`` ints in ``[0, n)``).

        Edges are undirected: ``(a, b)`` and ``(b, a)`` are the same edge. Self-loops and repeated
        edges are dropped and counted in ``dropped_self_loops`` / ``dropped_duplicates``.
        """
        n = _check_n_nodes(n_nodes)
        u = _as_index_array(u, "u")
        v = _as_index_array(v, "v")
        if u.shape != v.shape:
            raise ValueError(f"u and v must have the same shape, got {u.shape} and {v.shape}")
        for name, arr in (("u", u), ("v", v)):
            if arr.size and (arr.min() < 0 or arr.max() >= n):
                raise ValueError(f"{name} has node ids outside [0, {n})")
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        loops = lo == hi
        keys = _sorted_unique(lo[~loops] * n + hi[~loops])
        n_dup = int((~loops).sum()) - keys.size
        return cls(n, csr=_csr_from_pair_keys(keys, n), dropped_self_loops=int(loops.sum()),
                   dropped_duplicates=n_dup)

    @classmethod
    def from_adjacency(cls, adjacency) -> PretrainingGraph:
        """Graph from an ``(n, n)`` scipy sparse or dense matrix; ``i ~ j`` iff ``A[i,j] or A[j,i]``.

        Non-zero entries are edges whatever their value; the diagonal is dropped (its non-zeros are
        counted in ``dropped_self_loops``).
        """
        coo = sp.coo_array(adjacency)
        if coo.ndim != 2 or coo.shape[0] != coo.shape[1]:
            raise ValueError(f"adjacency must be square (n, n), got shape {coo.shape}")
        nonzero = coo.data != 0
        graph = cls.from_edges(coo.row[nonzero], coo.col[nonzero], coo.shape[0])
        graph.dropped_duplicates = 0  # a symmetric matrix stores every edge twice; that is not a duplicate
        return graph

    @classmethod
    def from_groups(cls, groups) -> PretrainingGraph:
        """Implicit label-clique graph: ``i ~ j`` iff ``groups[i] == groups[j]`` and ``i != j``.

        ``groups`` is ``(n,)`` of any sortable ids (usually ints). Nothing quadratic is stored.
        """
        groups = np.asarray(groups)
        if groups.ndim != 1:
            raise ValueError(f"groups must be 1-D (n,), got shape {groups.shape}")
        _, codes = factorize(groups)
        ids = groups.copy()
        ids.flags.writeable = codes.flags.writeable = False
        return cls(groups.size, group_ids=ids, group_codes=codes)

    @classmethod
    def from_networkx(cls, G: nx.Graph, nodelist=None) -> PretrainingGraph:
        """Graph from a networkx graph; node ``k`` is ``nodelist[k]`` (default ``list(G)``).

        Directed graphs are symmetrised, weights ignored, self-loops dropped.
        """
        nodelist = list(G) if nodelist is None else list(nodelist)
        if not nodelist:
            return cls.from_edges([], [], 0)
        return cls.from_adjacency(nx.to_scipy_sparse_array(G, nodelist=nodelist, weight=None))

    # ------------------------------------------------------------------ basic properties
    @property
    def n_nodes(self) -> int:
        return self._n

    @property
    def is_implicit(self) -> bool:
        """True for a label-clique graph built by :meth:`from_groups`."""
        return self._codes is not None

    @property
    def groups(self) -> np.ndarray | None:
        """``(n,)`` group ids of an implicit graph (as given to :meth:`from_groups`); None otherwise."""
        return self._group_ids

    @property
    def group_codes(self) -> np.ndarray | None:
        """``(n,)`` int64 group codes ``0..G-1`` of an implicit graph; None otherwise."""
        return self._codes

    @cached_property
    def group_sizes(self) -> np.ndarray | None:
        """``(G,)`` int64 member counts per group code of an implicit graph; None otherwise."""
        return None if self._codes is None else np.bincount(self._codes)

    @property
    def n_edges(self) -> int:
        """Number of undirected edges."""
        if self.is_implicit:
            s = self.group_sizes
            return int((s * (s - 1) // 2).sum())
        return int(self._csr.nnz // 2)

    def __repr__(self) -> str:
        kind = "implicit cliques" if self.is_implicit else "sparse"
        return f"PretrainingGraph(n_nodes={self._n}, n_edges={self.n_edges}, {kind})"

    def __eq__(self, other) -> bool:
        """Same node count and same edge set (representation does not matter)."""
        if not isinstance(other, PretrainingGraph):
            return NotImplemented
        if self._n != other._n or self.n_edges != other.n_edges:
            return False
        if self.is_implicit and other.is_implicit:
            return bool(np.array_equal(self.degrees(), other.degrees())) and _same_partition(
                self._codes, other._codes)
        return bool(np.array_equal(self.edges(), other.edges()))

    __hash__ = None

    # ------------------------------------------------------------------ structure
    def adjacency(self) -> sp.csr_array:
        """``(n, n)`` symmetric CSR adjacency, 0/1 ``int8`` data, sorted indices (read-only arrays).

        Materialises an implicit graph; refuses (SiptError) above :data:`MAX_MATERIALISED_EDGES`.
        """
        if self._csr is None:
            self._csr = self._materialise()
        return self._csr

    def degrees(self) -> np.ndarray:
        """``(n,)`` int64 node degrees."""
        if self.is_implicit:
            return self.group_sizes[self._codes] - 1
        return np.diff(self._csr.indptr).astype(np.int64)

    def neighbors(self, i: int) -> np.ndarray:
        """Sorted int64 neighbours of node ``i``."""
        i = self._check_nodes(np.asarray([i]))[0]
        if self.is_implicit:
            g = self._codes[i]
            members = self._order[self._starts[g]:self._starts[g + 1]]
            return members[members != i].astype(np.int64)
        A = self._csr
        return A.indices[A.indptr[i]:A.indptr[i + 1]].astype(np.int64)

    def edges(self) -> np.ndarray:
        """``(m, 2)`` int64 undirected edges with ``u < v``, sorted lexicographically."""
        A = self.adjacency()
        rows = np.repeat(np.arange(self._n, dtype=np.int64), np.diff(A.indptr))
        upper = A.indices > rows
        return np.column_stack([rows[upper], A.indices[upper].astype(np.int64)])

    def has_edge(self, u, v) -> np.ndarray:
        """Vectorised edge test: bool array of ``u ~ v`` for broadcast-compatible node arrays."""
        u, v = np.broadcast_arrays(np.asarray(u), np.asarray(v))
        shape = u.shape
        u = self._check_nodes(u.ravel())
        v = self._check_nodes(v.ravel())
        if self.is_implicit:
            return ((self._codes[u] == self._codes[v]) & (u != v)).reshape(shape)
        A = self._csr
        starts, ends = A.indptr[u].astype(np.int64), A.indptr[u + 1].astype(np.int64)
        pos = starts + _segment_bisect(A.indices, starts, ends, v, side="left")
        found = pos < ends
        found[found] = A.indices[pos[found]] == v[found]
        return found.reshape(shape)

    def subgraph(self, nodes) -> PretrainingGraph:
        """Induced subgraph on distinct ``nodes``, relabelled ``0..k-1`` in the given order."""
        nodes = self._check_nodes(np.asarray(nodes).ravel())
        if _sorted_unique(nodes).size != nodes.size:
            raise ValueError("subgraph nodes must be distinct")
        if self.is_implicit:
            return PretrainingGraph.from_groups(self._group_ids[nodes])
        sub = sp.csr_array(self._csr[nodes][:, nodes])
        sub.sort_indices()
        return PretrainingGraph(nodes.size, csr=_freeze(sub))

    def to_networkx(self) -> nx.Graph:
        """networkx Graph with nodes ``0..n-1`` (isolated ones included) and the edges."""
        G = nx.Graph()
        G.add_nodes_from(range(self._n))
        G.add_edges_from(self.edges().tolist())
        return G

    # ------------------------------------------------------------------ sampling
    def sample_positives(self, nodes, rng) -> np.ndarray:
        """A uniformly random neighbour of each node: ``(len(nodes),)`` int64, ``-1`` if isolated.

        ``rng``: a ``numpy.random.Generator`` or a seed.
        """
        rng = np.random.default_rng(rng)
        nodes = self._check_nodes(np.asarray(nodes).ravel())
        out = np.full(nodes.size, -1, dtype=np.int64)
        if self.is_implicit:
            g = self._codes[nodes]
            start, end = self._starts[g], self._starts[g + 1]
            has = end - start > 1
            start, end, nodes = start[has], end[has], nodes[has]
            r = rng.integers(0, end - start - 1)
            self_pos = self._rank[nodes] - start  # skip the node itself within its group
            out[has] = self._order[start + r + (r >= self_pos)]
            return out
        A = self._csr
        start = A.indptr[nodes].astype(np.int64)
        deg = A.indptr[nodes + 1] - start
        has = deg > 0
        out[has] = A.indices[start[has] + rng.integers(0, deg[has])]
        return out

    def sample_negatives(self, nodes, rng) -> np.ndarray:
        """A uniformly random non-neighbour ``!= node`` of each node; ``-1`` where none exists.

        Exact and rejection-free: the ``r``-th integer missing from a sorted row ``S`` is
        ``r + #{j : S[j] - j <= r}``, found by a vectorised binary search inside each CSR row
        (``O(log degree)`` per node however dense the row is).
        """
        rng = np.random.default_rng(rng)
        nodes = self._check_nodes(np.asarray(nodes).ravel())
        out = np.full(nodes.size, -1, dtype=np.int64)
        if self.is_implicit:
            g = self._codes[nodes]
            start, end = self._starts[g], self._starts[g + 1]
            n_choices = self._n - (end - start)
            ok = n_choices > 0
            r = rng.integers(0, n_choices[ok])
            out[ok] = _select_missing(self._order, start[ok], end[ok], r)
            return out
        A = self._csr
        start, end = A.indptr[nodes].astype(np.int64), A.indptr[nodes + 1].astype(np.int64)
        n_choices = self._n - 1 - (end - start)
        ok = n_choices > 0
        start, end, nodes = start[ok], end[ok], nodes[ok]
        r = rng.integers(0, n_choices[ok])
        # Skip the node itself: its rank among the integers missing from its row.
        self_rank = nodes - _segment_bisect(A.indices, start, end, nodes, side="left")
        out[ok] = _select_missing(A.indices, start, end, r + (r >= self_rank))
        return out

    # ------------------------------------------------------------------ internals
    @cached_property
    def _order(self) -> np.ndarray:
        """Implicit graphs: node ids sorted by (group code, node id)."""
        return np.argsort(self._codes, kind="stable")

    @cached_property
    def _rank(self) -> np.ndarray:
        """Implicit graphs: position of each node in :attr:`_order`."""
        rank = np.empty(self._n, dtype=np.int64)
        rank[self._order] = np.arange(self._n)
        return rank

    @cached_property
    def _starts(self) -> np.ndarray:
        """Implicit graphs: ``(G+1,)`` offsets of each group's members in :attr:`_order`."""
        return np.concatenate([[0], np.cumsum(self.group_sizes)])

    def _materialise(self) -> sp.csr_array:
        if self.n_edges > MAX_MATERIALISED_EDGES:
            raise SiptError(
                f"the implicit clique graph has {self.n_edges} edges, above the limit of "
                f"{MAX_MATERIALISED_EDGES} that can be materialised; use the implicit-graph "
                "operations (degrees, sampling, consistency) or fewer/smaller groups")
        lens = self.group_sizes[self._codes]  # row i holds its whole group, itself included
        total = int(lens.sum())
        row_starts = np.cumsum(lens) - lens
        offsets = np.repeat(self._starts[self._codes] - row_starts, lens) + np.arange(total)
        cols = self._order[offsets]
        rows = np.repeat(np.arange(self._n), lens)
        keep = cols != rows
        indptr = np.concatenate([[0], np.cumsum(lens - 1)])
        idx = _index_dtype(self._n, total)
        csr = sp.csr_array((np.ones(int(keep.sum()), np.int8), cols[keep].astype(idx),
                            indptr.astype(idx)), shape=(self._n, self._n))
        csr.has_sorted_indices = True
        return _freeze(csr)

    def _check_nodes(self, nodes: np.ndarray) -> np.ndarray:
        nodes = _as_index_array(nodes, "nodes")
        if nodes.size and (nodes.min() < 0 or nodes.max() >= self._n):
            raise ValueError(f"node ids must lie in [0, {self._n})")
        return nodes


# ---------------------------------------------------------------------- noise
def snowball_sample(graph: PretrainingGraph, n: int, seed: int = 0) -> np.ndarray:
    """``(min(n, graph.n_nodes),)`` sorted nodes reached by breadth-first search from a random
    start (restarting at a random unvisited node when a component is exhausted), so that the
    slice keeps the graph's local density, unlike a uniform sample."""
    rng = np.random.default_rng(seed)
    adjacency = graph.adjacency()
    visited = np.zeros(graph.n_nodes, dtype=bool)
    order = []
    while len(order) < min(n, graph.n_nodes):
        frontier = [int(rng.choice(np.flatnonzero(~visited)))]
        visited[frontier] = True
        while frontier and len(order) < n:
            order.extend(frontier)
            neighbours = np.unique(adjacency[frontier].indices)
            fresh = neighbours[~visited[neighbours]]
            fresh = rng.permutation(fresh)
            visited[fresh] = True
            frontier = fresh.tolist()
    return np.sort(np.array(order[:n], dtype=np.int64))


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
            f"of {MAX_MATERIALISED_EDGES}; use a smaller rate or graph")
    ranks = _sample_distinct(n_non_edges, n_added, rng)
    added = ranks + np.searchsorted(original - np.arange(original.size), ranks, side="right")
    lo, hi = _pair_unindex(np.concatenate([kept, added]))
    keys = np.sort(lo * n + hi)
    return PretrainingGraph(n, csr=_csr_from_pair_keys(keys, n))


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
        chosen = _sorted_unique(np.concatenate([chosen, draws]))
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


# ---------------------------------------------------------------------- array helpers
def factorize(values) -> tuple[np.ndarray, np.ndarray]:
    """``(uniques, codes)`` with ``uniques[codes] == values``, uniques sorted; codes ``(n,)`` int64.

    Linear time for small non-negative integers (bincount), a sort otherwise (NumPy 2's
    ``np.unique`` is hash based and slow on large integer arrays).
    """
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D array, got shape {values.shape}")
    if values.size == 0:
        return values.copy(), np.empty(0, dtype=np.int64)
    if values.dtype.kind in "iub" and values.min() >= 0 and values.max() < 4 * values.size + 1024:
        present = np.bincount(values.astype(np.int64)) > 0
        remap = np.cumsum(present) - 1
        return np.flatnonzero(present).astype(values.dtype), remap[values]
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    new = np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]])
    codes = np.empty(values.size, dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return sorted_values[new], codes


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    s = np.sort(values)
    return s[np.concatenate([[True], s[1:] != s[:-1]])] if s.size else s


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two code arrays induce the same partition of the nodes."""
    keys = a.astype(np.int64) * (int(b.max(initial=0)) + 1) + b
    return factorize(keys)[0].size == factorize(a)[0].size == factorize(b)[0].size


def _segment_bisect(values, starts, ends, targets, side: str) -> np.ndarray:
    """Vectorised ``bisect`` of ``targets[q]`` in the sorted segment ``values[starts[q]:ends[q]]``.

    Returns the insertion offset within the segment (``side`` as in ``np.searchsorted``).
    """
    lo, hi = starts.astype(np.int64), ends.astype(np.int64)
    active = np.flatnonzero(lo < hi)
    while active.size:
        mid = (lo[active] + hi[active]) // 2
        if side == "left":
            right = values[mid] < targets[active]
        else:
            right = values[mid] <= targets[active]
        lo[active[right]] = mid[right] + 1
        hi[active[~right]] = mid[~right]
        active = active[lo[active] < hi[active]]
    return lo - starts


def _select_missing(values, starts, ends, ranks) -> np.ndarray:
    """The ``ranks[q]``-th non-negative integer absent from the sorted distinct segment ``q``.

    With ``S`` the segment, that integer is ``r + #{j : S[j] - j <= r}``; ``S[j] - j`` is
    non-decreasing, so the count is a binary search on it.
    """
    lo, hi = starts.astype(np.int64), ends.astype(np.int64)
    starts64 = lo.copy()
    active = np.flatnonzero(lo < hi)
    while active.size:
        mid = (lo[active] + hi[active]) // 2
        right = values[mid] - (mid - starts64[active]) <= ranks[active]
        lo[active[right]] = mid[right] + 1
        hi[active[~right]] = mid[~right]
        active = active[lo[active] < hi[active]]
    return ranks + (lo - starts64)


def _index_dtype(n: int, nnz: int):
    return np.int32 if max(n, nnz) < np.iinfo(np.int32).max else np.int64


def _csr_from_pair_keys(keys: np.ndarray, n: int) -> sp.csr_array:
    """Symmetric CSR from sorted distinct keys ``lo * n + hi`` (``lo < hi``)."""
    idx = _index_dtype(n, 2 * keys.size)
    lo = (keys // max(n, 1)).astype(idx)
    hi = (keys % max(n, 1)).astype(idx)
    csr = sp.csr_array((np.ones(2 * keys.size, np.int8),
                        (np.concatenate([lo, hi]), np.concatenate([hi, lo]))), shape=(n, n))
    csr.sort_indices()
    return _freeze(csr)


def _freeze(csr: sp.csr_array) -> sp.csr_array:
    for arr in (csr.data, csr.indices, csr.indptr):
        arr.flags.writeable = False
    return csr


def _check_n_nodes(n_nodes) -> int:
    n = int(n_nodes)
    # Edge keys lo * n + hi and pair indices hi * (hi - 1) / 2 must fit in int64.
    if n < 0 or n != n_nodes or n > 3_000_000_000:
        raise ValueError(f"n_nodes must be an integer in [0, 3e9], got {n_nodes!r}")
    return n


def _as_index_array(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be an integer array, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False).ravel()


# ---------------------------------------------------------------------- TSV files
@dataclass(frozen=True)
class LabelledGraph:
    """A graph read from TSV files with its node labels.

    ``labels``: ``(n,)`` int64 codes; ``label_names[code]`` is the label string from the file;
    ``node_names[node]`` is the node's name in the files.
    """

    graph: PretrainingGraph
    labels: np.ndarray
    label_names: list[str]
    node_names: list[str]
    dropped_self_loops: int
    dropped_duplicates: int


def read_labels_tsv(path) -> tuple[list[str], np.ndarray]:
    """``node<TAB>label`` lines -> ``(node names in file order, (n,) array of label strings)``.

    ``#`` comments, blank lines and a header line (:data:`HEADER_NAMES`) are skipped; lines
    without a tab may separate the two fields with spaces. A node listed twice with the same label is kept once; with different labels it
    is an error naming the node and both lines.
    """
    lines, _ = _read_data_lines(path, "labels")
    names: list[str] = []
    labels: list[str] = []
    seen: dict[str, tuple[int, int]] = {}  # node -> (index, line number)
    for lineno, line in lines:
        node, label = _two_fields(line, path, lineno, "node<TAB>label")
        if node not in seen:
            seen[node] = (len(names), lineno)
            names.append(node)
            labels.append(label)
        elif labels[seen[node][0]] != label:
            raise SiptError(
                f"{path}: line {lineno}: node {shorten(node)} has label {shorten(label)} but line {seen[node][1]} "
                f"gave it {shorten(labels[seen[node][0]])}; give each node one label")
    return names, np.array(labels, dtype=str)


def read_edges_tsv(path) -> tuple[list[str], list[str], int]:
    """``u<TAB>v`` lines (or whitespace-separated) -> ``(u names, v names, n comment/blank/header lines)``."""
    u, v, _, n_skipped = _read_edges(path)
    return u, v, n_skipped


def load_graph_tsv(edges_path, labels_path) -> LabelledGraph:
    """Read a labelled graph: nodes are those of the labels file (in its order), edges from the edges file.

    An edge naming a node without a label is an error naming the node and line. Self-loops and
    duplicate edges are dropped and counted. Labels are strings (``01`` and ``1`` are two classes);
    their codes follow the sorted label strings.
    """
    node_names, label_strings = read_labels_tsv(labels_path)
    index = {name: i for i, name in enumerate(node_names)}
    u_names, v_names, linenos, _ = _read_edges(edges_path)
    u = np.fromiter((index.get(x, -1) for x in u_names), dtype=np.int64, count=len(u_names))
    v = np.fromiter((index.get(x, -1) for x in v_names), dtype=np.int64, count=len(v_names))
    unknown = np.flatnonzero((u < 0) | (v < 0))
    if unknown.size:
        k = int(unknown[0])
        name = u_names[k] if u[k] < 0 else v_names[k]
        raise SiptError(
            f"{edges_path}: line {linenos[k]}: node {shorten(name)} has no label in {labels_path}; "
            f"add it to the labels file or remove the edge ({unknown.size} such edge(s))")
    graph = PretrainingGraph.from_edges(u, v, len(node_names))
    label_names, codes = _factorize_label_strings(label_strings)
    return LabelledGraph(graph, codes, label_names, node_names, graph.dropped_self_loops,
                         graph.dropped_duplicates)


def write_edges_tsv(path, graph: PretrainingGraph, node_names=None) -> None:
    """Write one ``u<TAB>v`` line per undirected edge (``u < v`` by node id), atomically."""
    names = _node_name_list(graph.n_nodes, node_names)
    text = "".join(f"{names[a]}\t{names[b]}\n" for a, b in graph.edges().tolist())
    write_text_atomic(path, text)


def write_labels_tsv(path, labels, node_names=None) -> None:
    """Write one ``node<TAB>label`` line per node, atomically; ``labels`` is ``(n,)`` of anything str()-able."""
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-D (n,), got shape {labels.shape}")
    names = _node_name_list(labels.size, node_names)
    label_strings = [str(x) for x in labels.tolist()]
    for label in label_strings:
        _check_field(label, "label")
    write_text_atomic(path, "".join(f"{a}\t{b}\n" for a, b in zip(names, label_strings)))


def _read_data_lines(path, what: str) -> tuple[list[tuple[int, str]], int]:
    """Non-comment, non-blank ``(line number, stripped line)`` pairs and the number skipped."""
    text = read_text_file(path, f"{what} file")
    lines = []
    skipped = 0
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            skipped += 1
        else:
            lines.append((lineno, line))
    if lines and _is_header(lines[0][1], what):
        lines = lines[1:]
        skipped += 1
    if not lines:
        raise SiptError(f"{what} file {path} is empty (no data lines); expected one "
                        f"{'node<TAB>label' if what == 'labels' else 'u<TAB>v'} pair per line")
    return lines, skipped


#: Column names of a header line, per TSV kind: the first data line is skipped when its two fields
#: are one name of each set (any case), e.g. ``id<TAB>label`` or ``source<TAB>target``. Every
#: command reads labels and edges through these readers, so all of them skip the same header.
HEADER_NAMES = {
    "labels": ({"id", "node", "sample", "sample_id", "node_id", "name"}, {"label", "labels", "class", "category", "target", "y"}),
    "edges": ({"u", "source", "src", "from", "node1", "id1"}, {"v", "target", "dst", "to", "node2", "id2"}),
}


def _is_header(line: str, what: str) -> bool:
    fields = [f.strip().lower() for f in line.split("\t")] if "\t" in line else line.lower().split()
    firsts, seconds = HEADER_NAMES.get(what, (set(), set()))
    return len(fields) == 2 and fields[0] in firsts and fields[1] in seconds


def _read_edges(path) -> tuple[list[str], list[str], list[int], int]:
    lines, skipped = _read_data_lines(path, "edges")
    u, v, linenos = [], [], []
    for lineno, line in lines:
        a, b = _two_fields(line, path, lineno, "u<TAB>v")
        u.append(a)
        v.append(b)
        linenos.append(lineno)
    return u, v, linenos, skipped


def _two_fields(line: str, path, lineno: int, expected: str) -> tuple[str, str]:
    fields = [f.strip() for f in line.split("\t")] if "\t" in line else line.split()
    if len(fields) != 2 or not all(fields):
        raise SiptError(f"{path}: line {lineno}: expected two fields {expected}, got {shorten(line)}")
    return fields[0], fields[1]


def _factorize_label_strings(labels: np.ndarray) -> tuple[list[str], np.ndarray]:
    """``(n,)`` label strings -> (sorted distinct strings, ``(n,)`` int64 codes into them).

    Labels are compared as strings: ``01`` and ``1`` are two classes, never one number.
    """
    uniques, codes = np.unique(labels.astype(str), return_inverse=True)
    return uniques.tolist(), codes.astype(np.int64).reshape(-1)


def _node_name_list(n: int, node_names) -> list[str]:
    if node_names is None:
        return [str(i) for i in range(n)]
    names = [str(x) for x in node_names]
    if len(names) != n:
        raise SiptError(f"got {len(names)} node names for {n} nodes; pass one name per node")
    if len(set(names)) != n:
        raise SiptError("node names must be distinct; rename the repeated nodes")
    for name in names:
        _check_field(name, "node name")
    return names


def _check_field(value: str, what: str) -> None:
    if not value or value != value.strip() or "\t" in value or "\n" in value or value.startswith("#"):
        raise SiptError(f"{what} {shorten(value)} cannot be written to TSV (empty, tab/newline, surrounding "
                        "space or leading '#'); rename it")
