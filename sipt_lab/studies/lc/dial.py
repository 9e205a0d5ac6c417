"""The LC dial (cliques over labels that agree with the task label with probability ``q``) and the
study's splits: pre-training nodes, then fine-tuning train / validation / test."""

from __future__ import annotations

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.data.splits import stratified_group_splits
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.studies.lc.config import SPLIT_NAMES


def dial_groups(labels: np.ndarray, q: float, rng: np.random.Generator) -> np.ndarray:
    """``(n,)`` clique label per sample: the task label (``(n,)`` ints ``0..C-1``) with probability
    ``q``, else a uniformly random class."""
    labels = np.asarray(labels)
    from sipt_lab.studies.paper.theory import correlated_labels

    return correlated_labels(labels, int(labels.max()) + 1, q, rng)


def dial_graph(labels: np.ndarray, q: float, rng: np.random.Generator) -> PretrainingGraph:
    """Implicit clique graph over :func:`dial_groups`: samples with the same clique label are linked."""
    return PretrainingGraph.from_groups(dial_groups(labels, q, rng))


def dial_target_lc(labels: np.ndarray, q: float) -> float:
    """LC of ``labels`` (``(n,)`` ints ``0..C-1``) over :func:`dial_graph` at ``q`` in the large-clique
    limit: in clique ``c`` a class ``j`` has weight ``p_j (q [j = c] + (1 - q) / C)``, its plurality
    class wins, and LC is the share of samples whose label is their clique's plurality."""
    counts = np.bincount(np.asarray(labels))
    p, n_classes = counts / counts.sum(), counts.size
    weights = p[None, :] * (q * np.eye(n_classes) + (1 - q) / n_classes)  # (clique c, class j)
    winners = np.isclose(weights, weights.max(axis=1, keepdims=True))  # ties split, as local_consistency's default
    return float(np.sum((weights * winners).sum(axis=1) / winners.sum(axis=1)))


def grouped_splits(
    labels: np.ndarray,
    groups: np.ndarray,
    sizes: dict[str, int],
    rng: np.random.Generator,
    pretrain: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Disjoint index arrays ``{"pretrain", "train", "validation", "test"}`` of the given sizes over
    ``(n,)`` labels, no group of the ``(n,)`` ``groups`` in two of them, every class in every split
    (:func:`~sipt_lab.data.splits.stratified_group_splits`); the last three are never pre-trained on.
    ``pretrain``: the pre-training indices when the task fixes them (then only the samples outside
    their groups are split). SiptError (before any training) when the task has one class, or its
    groups cannot fill every split with every class."""
    labels, groups = np.asarray(labels), np.asarray(groups)
    classes = np.unique(labels)
    if classes.size < 2:
        raise SiptError(
            f"the task has one class ({classes[0] if classes.size else 'none'}); a study needs labels of at least two classes"
        )
    candidates = np.arange(labels.size)
    names = list(SPLIT_NAMES)
    fixed = {}
    if pretrain is not None:
        fixed["pretrain"] = np.asarray(pretrain, dtype=np.int64)
        candidates = candidates[~np.isin(groups, groups[fixed["pretrain"]])]
        names.remove("pretrain")
    drawn = stratified_group_splits(labels[candidates], groups[candidates], {name: sizes[name] for name in names}, rng)
    splits = {**fixed, **{name: candidates[index] for name, index in drawn.items()}}
    return {name: splits[name] for name in SPLIT_NAMES}


def pretraining_nodes(splits: dict[str, np.ndarray], protocol: str) -> np.ndarray:
    """Indices of the samples pre-trained on: the ``pretrain`` split (``inductive``), or every
    split's samples (``transductive``)."""
    if protocol == "inductive":
        return splits["pretrain"]
    return np.concatenate([splits[name] for name in SPLIT_NAMES])


def splits_tsv(split_seed: int, ids, splits: dict[str, np.ndarray]) -> str:
    """``split_seed<TAB>id<TAB>split`` lines of every sample in a split of ``split_seed`` (the ``splits.tsv`` format)."""
    return "".join(f"{split_seed}\t{ids[i]}\t{name}\n" for name in SPLIT_NAMES for i in splits[name])
