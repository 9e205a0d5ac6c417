"""The per-sample baselines as recipes: the per-token objective plus a supervised per-sample term.

``L_PT = (1 − λ)·L_M + λ·L_PS``, ``λ`` the config's ``lambda_si`` (the weight SIPT gives
``L_SI``), ``L_PS`` one of :mod:`sipt_lab.objectives.sample_heads`:

* ``multitask`` (:class:`MultiTaskRecipe`, Hu et al.): multi-label classification of each seed's
  pre-training labels; batches are the LM arm's (same seeds and masks, no partners);
* ``same-family`` (:class:`SameFamilyRecipe`, PLUS): for each seed one partner that shares one of
  its labels and one that shares none (:class:`LabelOverlap`, drawn as SIPT draws a seed's
  neighbour and non-neighbour), a binary head over each pair; so a batch holds as many positive
  pairs as negative ones (bar seeds without such a partner).

The labels are a :class:`SampleLabels` over the run's samples, read from ``TrainConfig.pt_labels``
(``id<TAB>label;label;...`` a line, the layout of the NETWORKS domain's ``go_pretrain.tsv``; a
listed id with no label has none, which is a known empty set). A sample the file does not list is
refused unless ``TrainConfig.allow_missing``: then it is *unknown*, skipped by the per-sample
term (never a seed's partner either) and trained by the per-token loss alone.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from sipt_lab.core.errors import SiptError
from sipt_lab.models import EncoderSource
from sipt_lab.objectives import MaskedLM, Objective
from sipt_lab.objectives.sample_heads import MultiLabel, SameFamily
from sipt_lab.training.recipe import Plan, RunData, graph_sampler, hidden_size

#: Draws :class:`LabelOverlap` makes for a seed's partner before it gives up (-1: no pair of that kind).
PARTNER_TRIES = 32


@dataclass(frozen=True, eq=False)
class SampleLabels:
    """Per-sample pre-training labels of a run's ``n`` samples.

    Attributes:
        matrix: ``(n, L)`` 0/1 sparse matrix, row ``i`` the labels of sample ``i`` (empty when unknown).
        known: ``(n,)`` bool, samples whose labels are known.
        names: ``(L,)`` label names, column ``l`` is ``names[l]``.
    """

    matrix: sp.csr_array
    known: np.ndarray
    names: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "matrix", sp.csr_array(self.matrix))
        object.__setattr__(self, "known", np.asarray(self.known, dtype=bool))


def missing_labels(known: np.ndarray, ids, where: str, allow_missing: bool) -> None:
    """SiptError when some of the run's samples (``known`` ``(n,)`` False, ``ids`` ``(n,)`` their
    names) have no per-sample label in ``where`` and ``allow_missing`` is False: how many, one of
    them, and the two fixes."""
    missing = np.flatnonzero(~np.asarray(known, dtype=bool))
    if missing.size and not allow_missing:
        raise SiptError(
            f"{missing.size:,} of {len(known):,} pre-training samples have no per-sample labels in {where} "
            f"(e.g. {ids[int(missing[0])]!r}); list them, or set TrainConfig.allow_missing to skip them "
            "(they keep the per-token loss)"
        )


class LabelOverlap:
    """The graph a same-family batch draws its pairs from: samples ``i != j`` are linked when both
    are known and share a label. It answers what :class:`~sipt_lab.training.sampler.GraphBatchSampler`
    asks of a graph (``n_nodes``, ``sample_positives``, ``sample_negatives``, ``has_edge``) without
    building the edges, which a large family would make quadratic.

    A positive is one of a random label's other members (a random label of the seed, then a random
    member of it, up to :data:`PARTNER_TRIES` draws); a negative a uniformly random known sample that
    shares no label (up to as many draws). -1 where none is found, and for unknown seeds.
    """

    def __init__(self, labels: SampleLabels) -> None:
        self._rows = sp.csr_array(labels.matrix.multiply(labels.known[:, None]).astype(np.int8))
        self._members = self._rows.tocsc()
        self._candidates = np.flatnonzero(labels.known)

    @property
    def n_nodes(self) -> int:
        return self._rows.shape[0]

    def has_edge(self, u, v) -> np.ndarray:
        """``(m,)`` bool: samples ``u[k]`` and ``v[k]`` differ, are known and share a label."""
        u, v = np.asarray(u, dtype=np.int64).ravel(), np.asarray(v, dtype=np.int64).ravel()
        shared = np.asarray(self._rows[u].multiply(self._rows[v]).sum(axis=1)).ravel()
        return (shared > 0) & (u != v)

    def sample_positives(self, nodes, rng) -> np.ndarray:
        """``(m,)`` int64: for each node another sample sharing one of its labels, -1 if none was found."""
        rng = np.random.default_rng(rng)
        nodes = np.asarray(nodes, dtype=np.int64).ravel()
        rows, members = self._rows, self._members

        def draw(pending: np.ndarray) -> np.ndarray:
            start, count = rows.indptr[pending], np.diff(rows.indptr)[pending]
            out = np.full(len(pending), -1, dtype=np.int64)
            has = count > 0
            label = rows.indices[start[has] + (rng.random(has.sum()) * count[has]).astype(np.int64)]
            first, size = members.indptr[label], np.diff(members.indptr)[label]
            out[has] = members.indices[first + (rng.random(len(label)) * size).astype(np.int64)]
            return out

        return self._draw(nodes, draw, lambda candidates, pending: candidates != pending)

    def sample_negatives(self, nodes, rng) -> np.ndarray:
        """``(m,)`` int64: for each known node a known sample sharing none of its labels, -1 if none was found."""
        rng = np.random.default_rng(rng)
        nodes = np.asarray(nodes, dtype=np.int64).ravel()
        candidates = self._candidates

        def draw(pending: np.ndarray) -> np.ndarray:
            return candidates[rng.integers(0, len(candidates), len(pending))]

        return self._draw(nodes, draw, lambda drawn, pending: (drawn != pending) & ~self.has_edge(pending, drawn))

    def _draw(self, nodes: np.ndarray, draw, valid) -> np.ndarray:
        """``draw(pending nodes) -> candidates`` repeated for the known nodes whose candidate is
        missing (-1) or not ``valid(candidates, pending nodes)``, up to :data:`PARTNER_TRIES` times."""
        out = np.full(len(nodes), -1, dtype=np.int64)
        known = np.zeros(self.n_nodes, dtype=bool)
        known[self._candidates] = True
        pending = np.flatnonzero(known[nodes])
        for _ in range(PARTNER_TRIES):
            if not len(pending) or not len(self._candidates):
                break
            candidates = draw(nodes[pending])
            ok = candidates >= 0
            ok[ok] = valid(candidates[ok], nodes[pending][ok])
            out[pending[ok]] = candidates[ok]
            pending = pending[~ok]
        return out


@dataclass(frozen=True, eq=False)
class PerSampleRecipe:
    """A per-sample baseline: ``(1 − λ)·L_M + λ·L_PS``, ``L_PS`` and the graph its batches are drawn
    over given by :meth:`term`; ``name`` is the method's."""

    labels: SampleLabels
    name: ClassVar[str] = ""

    def encoder_source(self, source: EncoderSource) -> EncoderSource:
        return source

    def term(self, data: RunData) -> tuple[Objective, object]:
        """``(L_PS, the graph the sampler draws seeds and partners over)``."""
        raise NotImplementedError

    def plan(self, data: RunData) -> Plan:
        if self.labels.matrix.shape[0] != len(data.texts):
            raise SiptError(
                f"per-sample labels cover {self.labels.matrix.shape[0]} samples but the run has {len(data.texts)}; "
                "give one row per sample"
            )
        term, graph = self.term(data)
        lam = data.config.lambda_si
        objectives = [(weight, objective) for weight, objective in ((1.0 - lam, MaskedLM()), (lam, term)) if weight > 0]
        return Plan(graph_sampler(dataclasses.replace(data, graph=graph), objectives), objectives)

    def describe(self) -> dict:
        """The method and what identifies its labels in a checkpoint: their number, known samples, entries."""
        labels = self.labels
        return {
            "recipe": self.name,
            "labels": int(labels.matrix.shape[1]),
            "known": int(labels.known.sum()),
            "entries": int(labels.matrix.nnz),
        }


class MultiTaskRecipe(PerSampleRecipe):
    """Hu et al.'s multi-task baseline: ``L_MT`` (:class:`MultiLabel`) on the LM arm's batches."""

    name = "multitask"

    def term(self, data: RunData) -> tuple[Objective, object]:
        labels = self.labels
        return MultiLabel(hidden_size(data.source), labels.matrix, labels.known, data.config.seed), data.graph


class SameFamilyRecipe(PerSampleRecipe):
    """PLUS's same-family baseline: ``L_SF`` (:class:`SameFamily`) on pairs drawn by :class:`LabelOverlap`."""

    name = "same-family"

    def term(self, data: RunData) -> tuple[Objective, object]:
        return SameFamily(hidden_size(data.source), data.config.seed), LabelOverlap(self.labels)
