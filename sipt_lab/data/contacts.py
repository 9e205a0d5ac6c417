"""Residue contact maps and TAPE's contact-prediction metric, precision at L/5.

A protein's contacts (:class:`ContactMap`) are the residue pairs ``i < j`` whose coordinates lie
closer than :data:`CONTACT_ANGSTROM` (TAPE: ``pdist(tertiary) < 8``), among residues of its
``valid_mask``; pairs closer than :data:`MIN_SEPARATION` in sequence are never scored. A task's
labels are one :class:`ContactMap` per protein; what a head trains on and is scored on are the
pairs of the residues the encoder reads, flattened by :func:`flatten_pairs` into rows
``(protein, separation, length, contact)``.

Memory: a protein of ``L`` residues has :func:`pair_count` ``(L) = (L - 6)(L - 5) / 2`` scored pairs,
so a pairwise head over ``H``-wide residue states holds ``2H`` float32 features per pair:
``4 * 2H * (L - 6)(L - 5) / 2`` bytes, about ``4 H L^2`` (L = 512, H = 768: 0.73 GiB per sequence);
labels take one byte a training pair (:func:`pair_contacts`) and 16 a scored pair (:func:`flatten_pairs`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Two residues are in contact when their coordinates are closer than this (Angstrom), as TAPE.
CONTACT_ANGSTROM = 8.0
#: Pairs closer than this in sequence are neither trained on nor scored (TAPE masks ``|i - j| < 6``).
MIN_SEPARATION = 6
#: Metric name -> sequence separations ``[low, high)`` it scores (high None: unbounded), TAPE's
#: medium- and long-range contacts; the first is the task's primary metric.
CONTACT_RANGES = {
    "p_at_l5_medium_long": (12, None),
    "p_at_l5_medium": (12, 24),
    "p_at_l5_long": (24, None),
}
#: Columns of :func:`flatten_pairs`' rows.
PAIR_COLUMNS = ("protein", "separation", "length", "contact")


@dataclass(frozen=True)
class ContactMap:
    """One protein's contacts. Attributes:
    valid: ``(L,)`` bool, residues with a resolved structure (TAPE's ``valid_mask``).
    contacts: ``(k, 2)`` int64 pairs ``i < j`` in contact, both valid, ``j - i >= MIN_SEPARATION``.
    """

    valid: np.ndarray
    contacts: np.ndarray

    @property
    def length(self) -> int:
        return int(self.valid.size)


def contact_map(contacts: np.ndarray, valid: np.ndarray) -> ContactMap:
    """The :class:`ContactMap` of an ``(L, L)`` 0/1 (or bool) matrix ``contacts`` (upper triangle
    read) over the residues ``valid`` ``(L,)`` bool."""
    valid = np.asarray(valid, dtype=bool)
    i, j = np.nonzero(np.triu(np.asarray(contacts) > 0, k=MIN_SEPARATION))
    keep = valid[i] & valid[j]
    return ContactMap(valid, np.stack([i[keep], j[keep]], axis=1).astype(np.int64))


def coordinate_contacts(coordinates: np.ndarray, valid: np.ndarray) -> ContactMap:
    """Contacts of the residue coordinates ``coordinates`` ``(L, 3)`` (Angstrom): pairs closer than
    :data:`CONTACT_ANGSTROM`, among the residues ``valid`` ``(L,)``."""
    points = np.asarray(coordinates, dtype=np.float64)
    distances = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(-1))
    return contact_map(distances < CONTACT_ANGSTROM, valid)


def pair_count(residues) -> np.ndarray:
    """Scored pairs ``i < j``, ``j - i >= MIN_SEPARATION``, among ``residues`` (int or array) residues."""
    n = np.maximum(np.asarray(residues, dtype=np.int64) - MIN_SEPARATION, 0)
    return n * (n + 1) // 2


def pair_index(residues: int) -> tuple[np.ndarray, np.ndarray]:
    """``(i, j)``, each ``(pair_count(residues),)`` int64: the scored pairs among residues
    ``0..residues-1``, ordered by ``i`` then ``j``."""
    i, j = np.triu_indices(residues, k=MIN_SEPARATION)
    return i.astype(np.int64), j.astype(np.int64)


def _pair_contacts(label: ContactMap, count: int) -> np.ndarray:
    """``(pair_count(count),)`` int8: 1 / 0 per scored pair of the first ``count`` residues of
    ``label`` (:func:`pair_index` order), -1 where a residue is not valid."""
    i, j = pair_index(count)
    inside = label.contacts[(label.contacts < count).all(axis=1)]
    contact = np.zeros(i.size, dtype=np.int8)
    if inside.size:
        contact[np.isin(i * count + j, inside[:, 0] * count + inside[:, 1])] = 1
    valid = label.valid[:count]
    contact[~(valid[i] & valid[j])] = -1
    return contact


def pair_contacts(maps: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``(sum pair_count(counts),)`` int8: the ``contact`` column of :func:`flatten_pairs` alone, one
    byte a pair (what a head trains on: a training split's pairs number ``~ sum L^2 / 2``)."""
    parts = [_pair_contacts(label, count) for label, count in zip(maps, np.asarray(counts).tolist())]
    return np.concatenate(parts) if parts else np.empty(0, np.int8)


def flatten_pairs(maps: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``(sum pair_count(counts), 4)`` int32 rows :data:`PAIR_COLUMNS`, protein after protein and
    :func:`pair_index` order within one: the scored pairs among the first ``counts[k]`` residues of
    each :class:`ContactMap` of ``maps`` ``(m,)`` (the residues an encoder read). ``protein`` is
    ``k``, ``length`` is ``counts[k]``, ``contact`` is 1 or 0, or -1 when a residue is not valid."""
    rows = [np.empty((0, 4), np.int32)]
    for k, (label, count) in enumerate(zip(maps, np.asarray(counts).tolist())):
        i, j = pair_index(count)
        contact = _pair_contacts(label, count)
        rows.append(np.stack([np.full(i.size, k), j - i, np.full(i.size, count), contact], axis=1).astype(np.int32))
    return np.concatenate(rows)


def contact_labels(labels: np.ndarray) -> np.ndarray:
    """The contact column of :func:`flatten_pairs` rows ``(P, 4)``, or ``labels`` ``(P,)`` themselves
    when they are that column already (what a probe fits on)."""
    labels = np.asarray(labels)
    return labels.reshape(len(labels), -1)[:, -1]


def precision_at_l5(pairs: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    """TAPE's precision at L/5 for each of :data:`CONTACT_RANGES`.

    Per protein of ``L`` scored residues, the ``L // 5`` pairs of the range with the highest
    ``scores`` are predicted contacts (ties: the earlier pair); precision is the predicted pairs
    that are contacts over the sum of ``L // 5`` over proteins, so a protein with fewer valid pairs
    in the range than ``L // 5`` counts the missing ones as wrong (as TAPE's top-k over masked
    probabilities does). 0.0 when no protein has 5 residues.

    Args:
        pairs: ``(P, 4)`` rows of :func:`flatten_pairs`.
        scores: ``(P,)`` contact probabilities (any monotone score).
    """
    pairs, scores = np.asarray(pairs, dtype=np.int64), np.asarray(scores, dtype=np.float64)
    _, first = np.unique(pairs[:, 0], return_index=True)
    bounds = np.append(first, len(pairs))
    result = {}
    for name, (low, high) in CONTACT_RANGES.items():
        separation = pairs[:, 1]
        scored = (separation >= low) & (separation < (np.inf if high is None else high)) & (pairs[:, 3] >= 0)
        correct, total = 0, 0
        for start, stop in zip(bounds[:-1], bounds[1:]):
            k = int(pairs[start, 2]) // 5
            candidates = np.flatnonzero(scored[start:stop]) + start
            top = candidates[np.argsort(-scores[candidates], kind="stable")[:k]]
            correct += int(pairs[top, 3].sum())
            total += k
        result[name] = correct / total if total else 0.0
    return result


def code_contact_maps(raw: list) -> tuple[np.ndarray, tuple[str, ...]]:
    """A loader's :class:`ContactMap` per protein -> ``(m,)`` object array of them, classes named
    ``("no contact", "contact")``."""
    labels = np.empty(len(raw), dtype=object)
    labels[:] = list(raw)
    return labels, ("no contact", "contact")


def no_contacts(labels: np.ndarray, names: tuple[str, ...]) -> str | None:
    """What makes flattened train pair labels (:func:`contact_labels`) unusable: no contact, or no
    valid non-contact."""
    values = contact_labels(labels)
    values = values[values >= 0]
    return None if np.unique(values).size == 2 else "has no valid pair of both classes (contact and none)"
