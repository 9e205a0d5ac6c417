"""Graph-aware pre-training batches.

Each step draws ``B`` seed samples (without replacement within an epoch; an epoch is one random
permutation of the nodes, its last incomplete batch dropped), one uniformly random neighbour
(positive) and one non-neighbour (negative) per seed, never the seed itself — uniformly random by
default, or a graph-aware hard negative (:data:`NEGATIVE_SAMPLERS`: two hops away, or in the same
connected component) — and an MLM mask over the seeds' tokens, with what each chosen token becomes
(:data:`MASK_REPLACEMENTS`: always ``[MASK]``, BERT's 80/10/10, or nothing: the token is kept and
only predicted, as LSM predicts concepts of visible tokens), token by token or whole words at a
time (:data:`MASK_UNITS`). Seeds without a neighbour (or without a non-neighbour) get
``-1`` there and no term of that kind.

Every draw comes from its own generator keyed by ``(seed, stream, step or epoch)``, so a batch is a
pure function of ``(graph, seed, step)``: the LM and SIPT arms of one seed see the same seeds in the
same order with the same masks, and resuming at step ``t`` needs no sampler state.

The batch lists each distinct sample once (seeds first, then the other positives/negatives), so a
step encodes ``U <= 3B`` samples instead of ``3B`` and indexes the embeddings by row.

Which pairs ``L_SI`` sees is a :data:`PAIR_MODES` choice: ``"sampled"`` (the paper's) scores each
seed against its one positive and one negative; ``"batch"`` scores every ordered pair of distinct
encoded samples, labelled by ``G_PT`` (``U(U-1)`` pairs from the same ``U`` encodings, as metric
learning libraries mine in-batch pairs), which gives the loss far more pairs for the same encoder
compute.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models.tokenizer import PAD_ID
from sipt_lab.training import names

_PERMUTATION, _PAIRS, _MASKS, _REPLACEMENTS = range(4)
#: Codes of :attr:`PretrainBatch.replacement` (any code >= 0 is the id of a random token).
REPLACE_WITH_MASK, KEEP_TOKEN = -1, -2


@dataclass
class PretrainBatch:
    """One step's samples.

    Attributes:
        nodes: ``(U,)`` int64 distinct sample ids to encode; ``nodes[:n_seeds]`` are the seeds.
        n_seeds: ``B``.
        positives: ``(B,)`` int64 row in ``nodes`` of each seed's positive (a neighbour), -1 if isolated.
        negatives: ``(B,)`` int64 row in ``nodes`` of each seed's negative (a non-neighbour), -1 if none.
        mask: ``(B, L_s)`` bool MLM mask over the seeds' tokens, ``L_s`` the longest seed; never on
            ``[CLS]`` (column 0), the tokenizer's closing special tokens or padding.
        positive_pairs: ``(P, 2)`` int64 rows in ``nodes`` of the pairs ``L_SI`` pulls together (edges).
        negative_pairs: ``(N, 2)`` int64 rows of the pairs it pushes apart (non-edges).
        replacement: ``(B, L_s)`` int64, what each masked token becomes in the input:
            :data:`REPLACE_WITH_MASK`, :data:`KEEP_TOKEN` or a token id (meaningless where ``mask``
            is False); None: ``[MASK]`` everywhere.
        inputs: the seeds' own input rows when they are not the samples' token ids (LinkBERT's
            segment pairs, :class:`SeedInputs`); then ``mask`` and ``replacement`` index them,
            and only the seeds are encoded. None: each row is its sample's tokens.
    """

    nodes: np.ndarray
    n_seeds: int
    positives: np.ndarray
    negatives: np.ndarray
    mask: np.ndarray
    positive_pairs: np.ndarray
    negative_pairs: np.ndarray
    replacement: np.ndarray | None = None
    inputs: SeedInputs | None = None


@dataclass
class SeedInputs:
    """Input rows built for one batch's seeds (rather than looked up by sample id).

    Attributes:
        ids: ``(B, L)`` int64 token ids, ``[CLS]`` first, right-padded.
        lengths: ``(B,)`` int64 tokens per row before padding.
        token_types: ``(B, L)`` int64 segment ids.
        relations: ``(B,)`` int64 class of each row for a sequence-level objective (LinkBERT's
            document relation), or None.
    """

    ids: np.ndarray
    lengths: np.ndarray
    token_types: np.ndarray
    relations: np.ndarray | None = None


def mask_only(rng: np.random.Generator, shape: tuple[int, int], vocab_size: int) -> None:
    """Every masked token becomes ``[MASK]`` (the LM baseline sipt-lab's results so far used)."""
    return None


def bert_replacement(rng: np.random.Generator, shape: tuple[int, int], vocab_size: int) -> np.ndarray:
    """BERT's 80/10/10: of the masked tokens, 80 % become ``[MASK]``, 10 % a token drawn uniformly
    from the vocabulary but ``[PAD]`` (Hugging Face's ``DataCollatorForLanguageModeling`` draws from
    all of it, but its models read padding from a separate attention mask; sipt-lab's encoders take
    ``[PAD]`` ids for padding, so a drawn ``[PAD]`` would hide the token), 10 % stay as they are; all
    are predicted. Returns a ``shape`` array of replacement codes."""
    kind = rng.random(shape)
    random_ids = rng.integers(PAD_ID + 1, vocab_size, size=shape)
    return np.where(kind < 0.8, REPLACE_WITH_MASK, np.where(kind < 0.9, random_ids, KEEP_TOKEN))


def keep_tokens(rng: np.random.Generator, shape: tuple[int, int], vocab_size: int) -> np.ndarray:
    """No replacement: a chosen token stays visible and is only predicted (LSM's targets)."""
    return np.full(shape, KEEP_TOKEN, dtype=np.int64)


#: What a token chosen for MLM becomes: name -> ``(rng, (B, L_s), vocab_size) -> codes or None``.
MASK_REPLACEMENTS: dict[str, Callable[..., np.ndarray | None]] = dict(
    zip(names.MASK_REPLACEMENTS, (mask_only, bert_replacement, keep_tokens), strict=True)
)


def check_mask(mask_prob: float, mask_replacement: str) -> str | None:
    """Why ``(mask_prob, mask_replacement)`` is invalid, or None: a probability in [0, 1), or 1
    (every token) when tokens are kept rather than hidden."""
    if mask_replacement not in MASK_REPLACEMENTS:
        return f"unknown mask replacement {mask_replacement!r}; choose one of {', '.join(MASK_REPLACEMENTS)}"
    if not (0.0 <= mask_prob < 1.0 or (mask_prob == 1.0 and mask_replacement == "keep")):
        return f"mask_prob is {mask_prob}; it must lie in [0, 1) (1, every token, only with mask_replacement 'keep')"
    return None


def token_units(tokenizer: Any, texts: list[str]) -> None:
    """Every token is its own masking unit (BERT's original masking)."""
    return None


def word_units(tokenizer: Any, texts: list[str]) -> np.ndarray:
    """Whole-word masking: the tokens of one word are masked together (``tokenizer.word_ids``:
    ``(n, L)`` word of each token, -1 where nothing may be masked)."""
    if not callable(getattr(tokenizer, "word_ids", None)):
        raise SiptError(f"{type(tokenizer).__name__} does not report word boundaries; use mask_unit token")
    return tokenizer.word_ids(list(texts))


#: Which tokens are masked together: name -> ``(tokenizer, texts) -> (n, L) unit ids or None``
#: (None: each token alone).
MASK_UNITS: dict[str, Callable[[Any, list[str]], np.ndarray | None]] = dict(
    zip(names.MASK_UNITS, (token_units, word_units), strict=True)
)


def sampled_pairs(
    graph: PretrainingGraph, nodes: np.ndarray, positives: np.ndarray, negatives: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The paper's pairs: (seed, its positive) and (seed, its negative), for seeds that have one.

    Args:
        nodes: ``(U,)`` the batch's sample ids; positives, negatives: ``(B,)`` rows in ``nodes`` or -1.

    Returns:
        ``(P, 2)`` and ``(N, 2)`` int64 row pairs.
    """
    seeds = np.arange(len(positives), dtype=np.int64)
    has_pos, has_neg = positives >= 0, negatives >= 0
    return (
        np.column_stack([seeds[has_pos], positives[has_pos]]),
        np.column_stack([seeds[has_neg], negatives[has_neg]]),
    )


def batch_pairs(
    graph: PretrainingGraph, nodes: np.ndarray, positives: np.ndarray, negatives: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair ``(i, j)``, ``i != j``, of the batch's rows, split by whether
    ``nodes[i] ~ nodes[j]`` in ``graph``. Arguments and result as :func:`sampled_pairs`."""
    rows = np.arange(len(nodes), dtype=np.int64)
    first, second = np.meshgrid(rows, rows, indexing="ij")
    off_diagonal = first != second
    first, second = first[off_diagonal], second[off_diagonal]
    linked = graph.has_edge(nodes[first], nodes[second])
    return (np.column_stack([first[linked], second[linked]]), np.column_stack([first[~linked], second[~linked]]))


def uniform_negatives(graph: PretrainingGraph, seeds: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(B,)`` a uniformly random non-neighbour of each seed (-1 where none exists)."""
    return graph.sample_negatives(seeds, rng)


def two_hop_negatives(graph: PretrainingGraph, seeds: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(B,)`` hard negatives: a random neighbour of a random neighbour that is not itself linked
    to the seed (SPECTER's citations-of-citations); up to :data:`NEGATIVE_TRIES` draws, then a
    uniform non-neighbour."""

    def draw(pending: np.ndarray) -> np.ndarray:
        hop = graph.sample_positives(pending, rng)
        second = np.full(len(pending), -1, dtype=np.int64)
        second[hop >= 0] = graph.sample_positives(hop[hop >= 0], rng)
        return second

    return _redraw_until_non_neighbour(graph, seeds, rng, draw)


def same_component_negatives(graph: PretrainingGraph, seeds: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(B,)`` a random non-neighbour from the seed's connected component of ``G_PT``; up to
    :data:`NEGATIVE_TRIES` draws, then a uniform non-neighbour."""
    components = _components(graph)
    order = np.argsort(components, kind="stable")
    sorted_components = components[order]

    def draw(pending: np.ndarray) -> np.ndarray:
        starts = np.searchsorted(sorted_components, components[pending], side="left")
        sizes = np.searchsorted(sorted_components, components[pending], side="right") - starts
        return order[starts + (rng.random(len(pending)) * sizes).astype(np.int64)]

    return _redraw_until_non_neighbour(graph, seeds, rng, draw)


#: Draws a graph-aware negative sampler makes before it falls back to a uniform non-neighbour.
NEGATIVE_TRIES = 16


def _redraw_until_non_neighbour(
    graph: PretrainingGraph, seeds: np.ndarray, rng: np.random.Generator, draw: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """``draw(pending seeds) -> candidates`` repeated for the seeds whose candidate is missing
    (-1), the seed itself or one of its neighbours; the rest get a uniform non-neighbour."""
    out = np.full(len(seeds), -1, dtype=np.int64)
    pending = np.arange(len(seeds))
    for _ in range(NEGATIVE_TRIES):
        if not len(pending):
            break
        candidates = draw(seeds[pending])
        valid = (candidates >= 0) & (candidates != seeds[pending])
        valid[valid] = ~graph.has_edge(seeds[pending][valid], candidates[valid])
        out[pending[valid]] = candidates[valid]
        pending = pending[~valid]
    out[pending] = graph.sample_negatives(seeds[pending], rng)
    return out


def _components(graph: PretrainingGraph) -> np.ndarray:
    from scipy.sparse.csgraph import connected_components

    return connected_components(graph.adjacency(), directed=False)[1]


#: How a seed's non-neighbour is drawn: name -> ``(graph, seeds (B,), rng) -> (B,) node or -1``.
NEGATIVE_SAMPLERS: dict[str, Callable[[PretrainingGraph, np.ndarray, np.random.Generator], np.ndarray]] = dict(
    zip(names.NEGATIVE_SAMPLERS, (uniform_negatives, two_hop_negatives, same_component_negatives), strict=True)
)


#: Which pairs ``L_SI`` sees: name -> ``(graph, nodes, positives, negatives) -> (positive_pairs, negative_pairs)``.
PAIR_MODES: dict[str, Callable[..., tuple[np.ndarray, np.ndarray]]] = dict(
    zip(names.PAIR_MODES, (sampled_pairs, batch_pairs), strict=True)
)


class GraphBatchSampler:
    """Deterministic batches over ``graph``'s nodes.

    Args:
        graph: ``G_PT`` over ``n`` samples.
        lengths: ``(n,)`` tokens per sample (``[CLS]`` included), from :meth:`CharTokenizer.encode`.
        batch_size: seeds per step; capped at ``n`` (then every step is the whole graph, shuffled).
        mask_prob: probability that a character (not ``[CLS]``, not padding) is masked (1 with
            ``mask_replacement="keep"``: every character is a target).
        seed: non-negative integer seed.
        pairs: a name in :data:`PAIR_MODES`.
        suffix_tokens: special tokens that end every row (``[SEP]``: 1 for BERT-style
            tokenizers), never masked.
        negatives: how each seed's non-neighbour is drawn, a name in :data:`NEGATIVE_SAMPLERS`.
        mask_replacement: what a masked token becomes, a name in :data:`MASK_REPLACEMENTS`.
        vocab_size: token ids ``0..vocab_size-1`` (random replacements are drawn from them).
        units: ``(n, L >= max(lengths))`` int64 masking unit of each token (:data:`MASK_UNITS`):
            the tokens of a row that share a unit are masked together, each unit with probability
            ``mask_prob``; -1 is never masked. None: every token is its own unit.
        reads_pairs: whether the run reads graph pairs (``L_SI``). False (the LM arm): batches hold
            the seeds only, with no partners and no pairs, and sampling skips the graph; seeds, masks
            and replacements are those of a run that reads pairs (each has its own random stream).
    """

    def __init__(
        self,
        graph: PretrainingGraph,
        lengths: np.ndarray,
        batch_size: int,
        mask_prob: float = 0.15,
        seed: int = 0,
        pairs: str = "sampled",
        suffix_tokens: int = 0,
        negatives: str = "uniform",
        mask_replacement: str = "mask",
        vocab_size: int = 0,
        units: np.ndarray | None = None,
        reads_pairs: bool = True,
    ) -> None:
        lengths = np.asarray(lengths, dtype=np.int64)
        if units is not None and (units.shape[0] != len(lengths) or units.shape[1] < lengths.max(initial=0)):
            raise SiptError(
                f"masking units of shape {units.shape} do not cover {len(lengths)} samples of up to {lengths.max(initial=0)} tokens"
            )
        if lengths.shape != (graph.n_nodes,):
            raise SiptError(
                f"{len(lengths)} samples but the graph has {graph.n_nodes} nodes; give one sentence per node"
            )
        if batch_size < 1:
            raise SiptError(f"batch_size is {batch_size}; use at least 1")
        problem = check_mask(mask_prob, mask_replacement)
        if problem:
            raise SiptError(problem)
        if seed < 0:
            raise SiptError(f"seed is {seed}; use a non-negative integer")
        check_pair_mode(pairs)
        check_negatives(negatives)
        if mask_replacement == "bert" and vocab_size < 1:
            raise SiptError(
                f"vocab_size is {vocab_size}; random replacement tokens need the tokenizer's vocabulary size"
            )
        self.graph = graph
        self.lengths = lengths
        self.batch_size = min(batch_size, graph.n_nodes)
        self.mask_prob = mask_prob
        self.seed = seed
        self.pair_mode = PAIR_MODES[pairs]
        self.suffix_tokens = suffix_tokens
        self.sample_negatives = NEGATIVE_SAMPLERS[negatives]
        self.replace = MASK_REPLACEMENTS[mask_replacement]
        self.vocab_size = vocab_size
        self.units = units
        self.reads_pairs = reads_pairs
        self.steps_per_epoch = graph.n_nodes // self.batch_size
        self._epoch, self._permutation = -1, np.empty(0, dtype=np.int64)

    def seeds(self, step: int) -> np.ndarray:
        """``(B,)`` int64 seed samples of ``step``."""
        epoch, offset = divmod(step, self.steps_per_epoch)
        if epoch != self._epoch:
            self._epoch = epoch
            self._permutation = np.random.default_rng([self.seed, _PERMUTATION, epoch]).permutation(self.graph.n_nodes)
        return self._permutation[offset * self.batch_size : (offset + 1) * self.batch_size]

    def batch(self, step: int) -> PretrainBatch:
        seeds = self.seeds(step)
        seed_lengths = self.lengths[seeds]
        columns = np.arange(seed_lengths.max())
        draws = np.random.default_rng([self.seed, _MASKS, step]).random((len(seeds), len(columns)))
        chosen = draws < self.mask_prob
        if self.units is not None:  # one draw per unit: column u's draw decides unit u of the row
            units = self.units[seeds, : len(columns)]
            chosen = np.take_along_axis(chosen, np.maximum(units, 0), axis=1) & (units >= 0)
        mask = chosen & (columns >= 1) & (columns < seed_lengths[:, None] - self.suffix_tokens)
        replacement = self.replace(np.random.default_rng([self.seed, _REPLACEMENTS, step]), mask.shape, self.vocab_size)
        if not self.reads_pairs:  # seeds copied: it is a view of the epoch's permutation
            partners, pairs = np.full((2, len(seeds)), -1, dtype=np.int64), np.empty((2, 0, 2), dtype=np.int64)
            return PretrainBatch(seeds.copy(), len(seeds), *partners, mask, *pairs, replacement)
        nodes, positive_rows, negative_rows = self._partners(seeds, step)
        positive_pairs, negative_pairs = self.pair_mode(self.graph, nodes, positive_rows, negative_rows)
        return PretrainBatch(
            nodes, len(seeds), positive_rows, negative_rows, mask, positive_pairs, negative_pairs, replacement
        )

    def _partners(self, seeds: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``step``'s batch nodes (the seeds, then their partners that are not seeds) and each seed's
        positive and negative as rows of them (-1: none)."""
        pair_rng = np.random.default_rng([self.seed, _PAIRS, step])
        positives = self.graph.sample_positives(seeds, pair_rng)
        negatives = self.sample_negatives(self.graph, seeds, pair_rng)
        partners = np.concatenate([positives, negatives])
        nodes = np.concatenate([seeds, np.setdiff1d(partners[partners >= 0], seeds)])
        order = np.argsort(nodes, kind="stable")
        sorted_nodes = nodes[order]

        def rows(ids: np.ndarray) -> np.ndarray:
            return np.where(ids >= 0, order[np.searchsorted(sorted_nodes, ids)], -1)

        return nodes, rows(positives), rows(negatives)


def check_negatives(name: str) -> None:
    """Raise :class:`SiptError` naming the choices when ``name`` is not in :data:`NEGATIVE_SAMPLERS`."""
    if name not in NEGATIVE_SAMPLERS:
        raise SiptError(f"unknown negative sampler {name!r}; choose one of {', '.join(NEGATIVE_SAMPLERS)}")


def check_pair_mode(name: str) -> None:
    """Raise :class:`SiptError` naming the choices when ``name`` is not in :data:`PAIR_MODES`."""
    if name not in PAIR_MODES:
        raise SiptError(f"unknown pair mode {name!r}; choose one of {', '.join(PAIR_MODES)}")
