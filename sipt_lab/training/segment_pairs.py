"""LinkBERT's training instances (Yasunaga et al. 2022, §4): ``[CLS] A [SEP] B [SEP]`` segment pairs.

Each seed document ``i`` gives an anchor segment ``A``; ``B`` is, with probability 1/3 each,

* ``contiguous``: A's next segment in the same document;
* ``random``: a segment of a uniformly random other document;
* ``linked``: a segment of a document ``j`` linked to ``i`` in ``G_PT``, drawn with probability
  ∝ 1 / in-degree(j) (the paper's diversity rule: hubs do not dominate). ``G_PT`` is undirected
  here, so the in-degree is the degree.

A seed without a neighbour draws between contiguous and random. The relation is the label of the
document-relation-prediction (DRP) head.

**Segments of single-sentence samples.** sipt-lab's samples are one sentence each (the
semi-synthetic lab), so a document is one sample's text, cut to the characters its row holds
(``max_len − 3``, so the pair row fits ``max_len`` tokens), and its two segments are the halves of
that text cut at the word boundary nearest the middle (the space itself is dropped; a text without
a space is cut at its middle character). ``A`` is always a first half and ``B`` always a second
half, for every relation: otherwise a character model tells contiguous pairs apart by whether
``B`` starts a sentence (a capital letter), not by what the two segments say.

Every draw is keyed by ``(seed, stream, step)``, so a batch is a pure function of the step; the
seeds are :class:`~sipt_lab.training.batches.GraphBatchSampler`'s, the same as the other methods'.
"""

from __future__ import annotations

import numpy as np

from sipt_lab import names
from sipt_lab.errors import SiptError
from sipt_lab.graph import PretrainingGraph
from sipt_lab.models.tokenizer import CharTokenizer
from sipt_lab.training.batches import MASK_REPLACEMENTS, GraphBatchSampler, PretrainBatch, SeedInputs, check_mask

#: The DRP head's classes, in order.
RELATIONS = names.RELATIONS
CONTIGUOUS, RANDOM, LINKED = range(len(RELATIONS))
_TYPES, _PARTNERS, _MASKS, _REPLACEMENTS = 10, 11, 12, 13  # rng streams (GraphBatchSampler uses 0..3)


def split_halves(texts: list[str], max_chars: int) -> tuple[list[str], list[str]]:
    """Each text's first ``max_chars`` characters cut in two at the space nearest the middle.

    Returns:
        The first halves and the second halves (the space between them in neither).
    """
    first, second = [], []
    for text in texts:
        doc = text[:max_chars]
        middle = len(doc) / 2
        spaces = [k for k, char in enumerate(doc) if char == " "]
        if spaces:
            cut = min(spaces, key=lambda k: abs(k - middle))
            first.append(doc[:cut])
            second.append(doc[cut + 1 :])
        else:
            first.append(doc[: len(doc) // 2])
            second.append(doc[len(doc) // 2 :])
    return first, second


def inverse_degree_neighbours(graph: PretrainingGraph, nodes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(B,)`` a neighbour ``j`` of each node drawn with probability ∝ 1 / degree(j); -1 where the
    node has none."""
    adjacency = graph.adjacency()
    if adjacency.nnz == 0:
        return np.full(len(nodes), -1, dtype=np.int64)
    degrees = np.diff(adjacency.indptr)
    weights = 1.0 / np.maximum(degrees[adjacency.indices], 1)
    cumulative = np.concatenate([[0.0], np.cumsum(weights)])
    start, stop = adjacency.indptr[nodes], adjacency.indptr[nodes + 1]
    targets = cumulative[start] + rng.random(len(nodes)) * (cumulative[stop] - cumulative[start])
    slot = np.clip(np.searchsorted(cumulative, targets, side="right") - 1, start, np.maximum(stop - 1, start))
    return np.where(stop > start, adjacency.indices[np.minimum(slot, len(adjacency.indices) - 1)], -1).astype(np.int64)


def draw_relations(graph: PretrainingGraph, seeds: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each seed's relation (1/3 each; contiguous or random for a seed without a neighbour) and
    the document its ``B`` comes from.

    Returns:
        ``(B,)`` int64 relation codes (:data:`RELATIONS`) and ``(B,)`` int64 partner documents.
    """
    n = graph.n_nodes
    if n < 2:
        raise SiptError("segment pairs need at least 2 samples (a random pair takes another document)")
    relations = rng.integers(0, len(RELATIONS), size=len(seeds))
    linked = inverse_degree_neighbours(graph, seeds, rng)
    isolated = (relations == LINKED) & (linked < 0)
    relations[isolated] = rng.integers(0, 2, size=int(isolated.sum()))
    other = rng.integers(0, n - 1, size=len(seeds))
    other += other >= seeds
    partners = np.select([relations == CONTIGUOUS, relations == RANDOM], [seeds, other], linked)
    return relations.astype(np.int64), partners.astype(np.int64)


class SegmentPairSampler:
    """LinkBERT batches: the seeds of :class:`GraphBatchSampler` as ``[CLS] A [SEP] B [SEP]`` rows
    with segment ids, relation labels and an MLM mask over A's and B's characters.

    Args:
        graph: ``G_PT``; texts: its ``n`` samples; tokenizer: a character tokenizer with ``[SEP]``.
        batch_size, seed: as :class:`GraphBatchSampler`.
        mask_prob, mask_replacement: the MLM mask (LinkBERT: 0.15 with BERT's 80/10/10).
    """

    def __init__(self, graph: PretrainingGraph, texts: list[str], tokenizer: CharTokenizer, batch_size: int,
                 mask_prob: float = 0.15, seed: int = 0, mask_replacement: str = "bert") -> None:
        problem = check_mask(mask_prob, mask_replacement)
        if problem:
            raise SiptError(problem)
        first, second = split_halves(texts, tokenizer.max_len - 3)
        self.first, self.second = tokenizer.encode(first), tokenizer.encode(second)
        self.graph = graph
        self.tokenizer = tokenizer
        self.sep_id = tokenizer.sep_id
        self.seeds = GraphBatchSampler(graph, self.first[1], batch_size, 0.0, seed).seeds
        self.seed = seed
        self.mask_prob = mask_prob
        self.replace = MASK_REPLACEMENTS[mask_replacement]

    def batch(self, step: int) -> PretrainBatch:
        seeds = self.seeds(step)
        relations, partners = draw_relations(self.graph, seeds, np.random.default_rng([self.seed, _PARTNERS, step]))
        (a_ids, a_len), (b_ids, b_len) = self.first, self.second
        ids, token_types, lengths = self.tokenizer.join_pairs((a_ids[seeds], a_len[seeds]), (b_ids[partners], b_len[partners]))
        columns = np.arange(ids.shape[1])
        draws = np.random.default_rng([self.seed, _MASKS, step]).random(ids.shape)
        mask = (draws < self.mask_prob) & (columns >= 1) & (columns < lengths[:, None]) & (ids != self.sep_id)
        replacement = self.replace(np.random.default_rng([self.seed, _REPLACEMENTS, step]), mask.shape, self.tokenizer.vocab_size)
        none = np.full(len(seeds), -1, dtype=np.int64)
        no_pairs = np.empty((0, 2), dtype=np.int64)
        return PretrainBatch(seeds, len(seeds), none, none, mask, no_pairs, no_pairs, replacement,
                             SeedInputs(ids, lengths, token_types, relations))
