"""LinkBERT's training instances (Yasunaga et al. 2022, §4): ``[CLS] A [SEP] B [SEP]`` segment pairs.

Each seed document ``i`` gives an anchor segment ``A``; ``B`` is, with probability 1/3 each,

* ``contiguous``: A's next segment in the same document;
* ``random``: a segment of a uniformly random other document;
* ``linked``: a segment of a document ``j`` linked to ``i`` in ``G_PT``, drawn with probability
  ∝ 1 / in-degree(j) (the paper's diversity rule: hubs do not dominate). ``G_PT`` is undirected
  here, so the in-degree is the degree.

A seed without a neighbour draws between contiguous and random. The relation is the label of the
document-relation-prediction (DRP) head.

**Segments of single-sentence samples.** sipt-lab's samples are one sentence (or one short
summary) each, so a document is one sample's text and its two segments are the halves of that text
cut at the word boundary nearest the middle (the space itself is dropped; a text without a space is
cut at its middle character), each truncated to the tokens that let the pair row fit the
tokenizer's ``max_len`` (:func:`half_length`). ``A`` is always a first half and ``B`` always a
second half, for every relation: otherwise a character model tells contiguous pairs apart by whether
``B`` starts a sentence (a capital letter), not by what the two segments say. Any tokenizer with a
separator works (the character tokenizer built with ``sep=True``, a Hugging Face one).

Every draw is keyed by ``(seed, stream, step)``, so a batch is a pure function of the step; the
seeds are :class:`~sipt_lab.training.sampler.GraphBatchSampler`'s, the same as the other methods'.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from torch import nn

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models import evaluating
from sipt_lab.models.tokenizer import Tokenizer
from sipt_lab.objectives import names
from sipt_lab.objectives.relation import DocumentRelation
from sipt_lab.training.sampler import MASK_REPLACEMENTS, GraphBatchSampler, PretrainBatch, SeedInputs, check_mask

#: The DRP head's classes, in order.
RELATIONS = names.RELATIONS
CONTIGUOUS, RANDOM, LINKED = range(len(RELATIONS))
_TYPES, _PARTNERS, _MASKS, _REPLACEMENTS = 10, 11, 12, 13  # rng streams (GraphBatchSampler uses 0..3)


def split_halves(texts: list[str]) -> tuple[list[str], list[str]]:
    """Each text cut in two at the space nearest the middle.

    Returns:
        The first halves and the second halves (the space between them in neither).
    """
    first, second = [], []
    for doc in texts:
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


def half_length(max_len: int, closing: int) -> int:
    """Tokens per encoded half so that ``[CLS] A [SEP] B [SEP]`` has at most ``max_len`` tokens, for
    a tokenizer whose rows end with ``closing`` special tokens (a pair of halves of ``h`` tokens
    each makes ``2h + 1 − 2·closing``)."""
    return max((max_len - 1 + 2 * closing) // 2, 2)


def join_segments(
    first: tuple[np.ndarray, np.ndarray],
    second: tuple[np.ndarray, np.ndarray],
    sep_id: int,
    pad_id: int,
    closing: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``[CLS] A [SEP] B [SEP]`` rows from two tokenizer encodings (rows paired by index).

    Args:
        first, second: ``(ids (n, L_a), lengths (n,))`` and ``(ids (n, L_b), lengths (n,))`` as a
            tokenizer's ``encode`` makes them: ``[CLS]`` first, then ``closing`` special tokens
            (1 for ``[SEP]``-closed Hugging Face rows, 0 for characters); B's ``[CLS]`` and both
            rows' closing tokens are dropped.
        sep_id, pad_id: the separator and padding ids.

    Returns:
        ids ``(n, L)`` int64 (padded with ``pad_id``), token types ``(n, L)`` int64 (0 for
        ``[CLS] A [SEP]``, 1 for ``B [SEP]`` and the padding after it) and lengths ``(n,)``.
    """
    (a_ids, a_len), (b_ids, b_len) = first, second
    a_core, b_core = a_len - closing, b_len - closing - 1  # A with its [CLS]; B without
    lengths = a_core + b_core + 2
    n, width = len(a_len), int(lengths.max(initial=1))
    ids = np.full((n, width), pad_id, dtype=np.int64)
    rows, cols = np.nonzero(np.arange(a_ids.shape[1])[None, :] < a_core[:, None])
    ids[rows, cols] = a_ids[rows, cols]
    ids[np.arange(n), a_core] = sep_id
    rows, cols = np.nonzero(np.arange(b_ids.shape[1])[None, :] < b_core[:, None])
    ids[rows, a_core[rows] + 1 + cols] = b_ids[rows, cols + 1]
    ids[np.arange(n), lengths - 1] = sep_id
    token_types = (np.arange(width)[None, :] > a_core[:, None]).astype(np.int64)
    return ids, token_types, lengths


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


def draw_relations(
    graph: PretrainingGraph, seeds: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
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
        graph: ``G_PT``; texts: its ``n`` samples; tokenizer: the run's tokenizer, with a
            separator (``sep_id``: a character tokenizer built with ``sep=True``, a Hugging Face one).
        batch_size, seed: as :class:`GraphBatchSampler`.
        mask_prob, mask_replacement: the MLM mask (LinkBERT: 0.15 with BERT's 80/10/10).
    """

    def __init__(
        self,
        graph: PretrainingGraph,
        texts: list[str],
        tokenizer: Tokenizer,
        batch_size: int,
        mask_prob: float = 0.15,
        seed: int = 0,
        mask_replacement: str = "bert",
    ) -> None:
        problem = check_mask(mask_prob, mask_replacement)
        if problem:
            raise SiptError(problem)
        halves = dataclasses.replace(tokenizer, max_len=half_length(tokenizer.max_len, tokenizer.suffix_tokens))
        first, second = split_halves(texts)
        self.first, self.second = halves.encode(first), halves.encode(second)
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
        ids, token_types, lengths = join_segments(
            (a_ids[seeds], a_len[seeds]),
            (b_ids[partners], b_len[partners]),
            self.sep_id,
            self.tokenizer.pad_id,
            self.tokenizer.suffix_tokens,
        )
        columns = np.arange(ids.shape[1])
        draws = np.random.default_rng([self.seed, _MASKS, step]).random(ids.shape)
        mask = (draws < self.mask_prob) & (columns >= 1) & (columns < lengths[:, None]) & (ids != self.sep_id)
        replacement = self.replace(
            np.random.default_rng([self.seed, _REPLACEMENTS, step]), mask.shape, self.tokenizer.vocab_size
        )
        none = np.full(len(seeds), -1, dtype=np.int64)
        no_pairs = np.empty((0, 2), dtype=np.int64)
        return PretrainBatch(
            seeds,
            len(seeds),
            none,
            none,
            mask,
            no_pairs,
            no_pairs,
            replacement,
            SeedInputs(ids, lengths, token_types, relations),
        )


@torch.inference_mode()
def relation_accuracy(
    encoder: nn.Module,
    relation: DocumentRelation,
    sampler: SegmentPairSampler,
    steps: int = 4,
    first_step: int = 1_000_000,
) -> dict[str, float]:
    """DRP accuracy of a trained LinkBERT on ``steps`` fresh batches (steps never trained on).

    Returns:
        ``accuracy`` (3-way, chance 1/3) and ``linked_vs_random`` (on the linked and random pairs,
        whether the head ranks the true one of those two relations higher; chance 1/2: what a graph
        whose links carry no signal gives).
    """
    device = next(encoder.parameters()).device
    with evaluating(encoder):
        hits, linked_hits, linked_total, total = 0, 0, 0, 0
        for step in range(first_step, first_step + steps):
            own = sampler.batch(step).inputs
            ids, types = (torch.as_tensor(a, device=device) for a in (own.ids, own.token_types))
            logits = relation.logits(encoder.embed(ids, token_types=types)).float().cpu().numpy()
            truth = own.relations
            hits += int((logits.argmax(1) == truth).sum())
            total += len(truth)
            pair = truth != RELATIONS.index("contiguous")
            random_code, linked_code = RELATIONS.index("random"), RELATIONS.index("linked")
            says_linked = logits[pair, linked_code] > logits[pair, random_code]
            linked_hits += int((says_linked == (truth[pair] == linked_code)).sum())
            linked_total += int(pair.sum())
    return {"accuracy": hits / max(total, 1), "linked_vs_random": linked_hits / max(linked_total, 1)}
