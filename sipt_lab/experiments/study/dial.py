"""The LC dial (cliques over labels that agree with the task label with probability ``q``) and the
study's splits: pre-training nodes, then fine-tuning train / validation / test."""

from __future__ import annotations

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.experiments.study.study_config import SPLIT_NAMES
from sipt_lab.graphs.graph import PretrainingGraph


def dial_groups(labels: np.ndarray, q: float, rng: np.random.Generator) -> np.ndarray:
    """``(n,)`` clique label per sample: the task label (``(n,)`` ints ``0..C-1``) with probability
    ``q``, else a uniformly random class."""
    labels = np.asarray(labels)
    from sipt_lab.experiments.paper.theory import correlated_labels

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


def inductive_splits(labels: np.ndarray, sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Disjoint random index arrays ``{"pretrain", "train", "validation", "test"}`` of the given sizes
    over ``(n,)`` labels; the last three are never pre-trained on. SiptError (before any training)
    when the task has one class, too few samples, or a split's classes do not let the metrics run."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    if classes.size < 2:
        raise SiptError(
            f"the task has one class ({classes[0] if classes.size else 'none'}); a study needs labels of at least two classes"
        )
    never_seen = sizes["train"] + sizes["validation"] + sizes["test"]
    available = labels.size - sizes["pretrain"]
    if available < never_seen:
        raise SiptError(
            f"the task has {labels.size} samples: after {sizes['pretrain']} pre-training samples {max(available, 0)} are never "
            f"seen, but the train/validation/test splits need {never_seen}; lower the split sizes or give more samples"
        )
    order = rng.permutation(labels.size)
    bounds = np.cumsum([sizes[name] for name in SPLIT_NAMES])
    splits = dict(zip(SPLIT_NAMES, np.split(order, bounds)[:-1], strict=True))
    for name in ("pretrain", "train"):
        if np.unique(labels[splits[name]]).size < 2:
            raise SiptError(f"the {name} split holds one class only; make it larger")
    missing = np.setdiff1d(labels[splits["test"]], labels[splits["train"]])
    if missing.size:
        raise SiptError(
            f"test classes {missing.tolist()} never occur in the fine-tuning train split; make LcTransferConfig.n_train larger"
        )
    return splits


def pretraining_nodes(splits: dict[str, np.ndarray], protocol: str) -> np.ndarray:
    """Indices of the samples pre-trained on: the ``pretrain`` split (``inductive``), or every
    split's samples (``transductive``)."""
    if protocol == "inductive":
        return splits["pretrain"]
    return np.concatenate([splits[name] for name in SPLIT_NAMES])


def splits_tsv(ids, splits: dict[str, np.ndarray]) -> str:
    """``id<TAB>split`` lines of every sample in a split (the ``splits.tsv`` format)."""
    return "".join(f"{ids[i]}\t{name}\n" for name in SPLIT_NAMES for i in splits[name])
