"""The pre-training graph ``G_PT``: an undirected simple graph over samples ``0..n-1``.

Two representations share one interface (:class:`PretrainingGraph`):

* **explicit**: a symmetric ``scipy.sparse.csr_array`` (0/1 ``int8`` data, sorted ``int32`` indices
  where they fit, no self-loops, no duplicate edges);
* **implicit label cliques**: group ids, with ``i ~ j`` iff ``groups[i] == groups[j]`` and
  ``i != j``. Degrees, neighbours, edge tests, sampling and local consistency work on the groups
  without materialising the ``O(n^2)`` edges (the CLIQUES family and Corollary 1 use this);
  :meth:`PretrainingGraph.adjacency`, ``edges`` and noise materialise them, up to a size limit.

Edge noise is in :mod:`sipt_lab.graphs.noise`, snowball samples in :mod:`sipt_lab.graphs.sampling`,
the TSV file format in :mod:`sipt_lab.graphs.tsv`.
"""

from __future__ import annotations

from functools import cached_property

import networkx as nx
import numpy as np
import scipy.sparse as sp

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.arrays import (
    as_index_array,
    check_n_nodes,
    csr_from_pair_keys,
    factorize,
    freeze_csr,
    index_dtype,
    same_partition,
    segment_bisect,
    select_missing,
    sorted_unique,
)

#: Largest number of undirected edges that :meth:`PretrainingGraph.adjacency` (and everything that
#: needs explicit edges, e.g. :func:`~sipt_lab.graphs.noise.add_noise`) will materialise: 50M edges
#: are ~0.5 GB of CSR.
MAX_MATERIALISED_EDGES = 50_000_000


class PretrainingGraph:
    """Undirected simple graph ``G_PT`` over samples ``0..n-1``.

    Build it with :meth:`from_edges`, :meth:`from_adjacency`, :meth:`from_groups` (implicit label
    cliques) or :meth:`from_networkx`; never mutate it (the arrays it hands out are read-only).
    ``dropped_self_loops`` and ``dropped_duplicates`` count what the constructor threw away.

    ```pycon
    >>> from sipt_lab import PretrainingGraph
    >>> graph = PretrainingGraph.from_edges([0, 1, 1, 2], [1, 0, 2, 2], n_nodes=4)
    >>> graph, graph.dropped_duplicates, graph.dropped_self_loops
    (PretrainingGraph(n_nodes=4, n_edges=2, sparse), 1, 1)
    >>> graph.neighbors(1).tolist(), graph.degrees().tolist()
    ([0, 2], [1, 2, 1, 0])
    >>> cliques = PretrainingGraph.from_groups(["x", "x", "x", "y", "y"])  # implicit: no edge list stored
    >>> cliques.n_edges, cliques.has_edge([0, 0], [2, 3]).tolist()
    (4, [True, False])

    ```
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
        n = check_n_nodes(n_nodes)
        u = as_index_array(u, "u")
        v = as_index_array(v, "v")
        if u.shape != v.shape:
            raise ValueError(f"u and v must have the same shape, got {u.shape} and {v.shape}")
        for name, arr in (("u", u), ("v", v)):
            if arr.size and (arr.min() < 0 or arr.max() >= n):
                raise ValueError(f"{name} has node ids outside [0, {n})")
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        loops = lo == hi
        keys = sorted_unique(lo[~loops] * n + hi[~loops])
        n_dup = int((~loops).sum()) - keys.size
        return cls(n, csr=csr_from_pair_keys(keys, n), dropped_self_loops=int(loops.sum()), dropped_duplicates=n_dup)

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
            return bool(np.array_equal(self.degrees(), other.degrees())) and same_partition(self._codes, other._codes)
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
            members = self._order[self._starts[g] : self._starts[g + 1]]
            return members[members != i].astype(np.int64)
        A = self._csr
        return A.indices[A.indptr[i] : A.indptr[i + 1]].astype(np.int64)

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
        pos = starts + segment_bisect(A.indices, starts, ends, v, side="left")
        found = pos < ends
        found[found] = A.indices[pos[found]] == v[found]
        return found.reshape(shape)

    def subgraph(self, nodes) -> PretrainingGraph:
        """Induced subgraph on distinct ``nodes``, relabelled ``0..k-1`` in the given order."""
        nodes = self._check_nodes(np.asarray(nodes).ravel())
        if sorted_unique(nodes).size != nodes.size:
            raise ValueError("subgraph nodes must be distinct")
        if self.is_implicit:
            return PretrainingGraph.from_groups(self._group_ids[nodes])
        sub = sp.csr_array(self._csr[nodes][:, nodes])
        sub.sort_indices()
        return PretrainingGraph(nodes.size, csr=freeze_csr(sub))

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
            out[ok] = select_missing(self._order, start[ok], end[ok], r)
            return out
        A = self._csr
        start, end = A.indptr[nodes].astype(np.int64), A.indptr[nodes + 1].astype(np.int64)
        n_choices = self._n - 1 - (end - start)
        ok = n_choices > 0
        start, end, nodes = start[ok], end[ok], nodes[ok]
        r = rng.integers(0, n_choices[ok])
        # Skip the node itself: its rank among the integers missing from its row.
        self_rank = nodes - segment_bisect(A.indices, start, end, nodes, side="left")
        out[ok] = select_missing(A.indices, start, end, r + (r >= self_rank))
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
                "operations (degrees, sampling, consistency) or fewer/smaller groups"
            )
        lens = self.group_sizes[self._codes]  # row i holds its whole group, itself included
        total = int(lens.sum())
        row_starts = np.cumsum(lens) - lens
        offsets = np.repeat(self._starts[self._codes] - row_starts, lens) + np.arange(total)
        cols = self._order[offsets]
        rows = np.repeat(np.arange(self._n), lens)
        keep = cols != rows
        indptr = np.concatenate([[0], np.cumsum(lens - 1)])
        idx = index_dtype(self._n, total)
        csr = sp.csr_array(
            (np.ones(int(keep.sum()), np.int8), cols[keep].astype(idx), indptr.astype(idx)), shape=(self._n, self._n)
        )
        csr.has_sorted_indices = True
        return freeze_csr(csr)

    def _check_nodes(self, nodes: np.ndarray) -> np.ndarray:
        nodes = as_index_array(nodes, "nodes")
        if nodes.size and (nodes.min() < 0 or nodes.max() >= self._n):
            raise ValueError(f"node ids must lie in [0, {self._n})")
        return nodes
