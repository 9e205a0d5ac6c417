"""Train / validation / test splits of a task's samples, and the pre-training graph they leave.

File format (``SPLITS.tsv``): one ``id<TAB>train|validation|test`` line per sample in the task;
``#`` comments and blank lines are skipped. Ids may contain spaces (they are article titles in the
``wiki`` domain), so the separator must be a tab. Samples not listed are in no split (they may
still be pre-training samples). Every problem a user can fix is a one-line :class:`SiptError`:
an unreadable line, an unknown split name, an id listed twice (overlapping splits), an id that is
not a sample, an empty split, a listed sample without a label, a train split with one class.

Held-out samples (validation and test) keep their node ids, but :func:`pretraining_graph` drops
every edge touching them, so pre-training never sees their links.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import is_comment, read_text_file, shorten, split_lines, write_text_atomic
from sipt_lab.data.tasks import Task, check_train_labels
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.graphs.tsv import is_header

SPLIT_NAMES = ("train", "validation", "test")


@dataclass(frozen=True)
class Splits:
    """Disjoint sorted ``int64`` sample-index arrays ``(n_train,)``, ``(n_validation,)``, ``(n_test,)``."""

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray

    @property
    def held_out(self) -> np.ndarray:
        """``(n_validation + n_test,)`` sorted indices of the samples pre-training must not link."""
        return np.union1d(self.validation, self.test)


def random_splits(samples, fractions=(0.8, 0.1, 0.1), seed=0) -> Splits:
    """Shuffle ``samples`` ``(m,)`` (sample indices) with ``seed`` and cut them by ``fractions``
    (train, validation, test; summing to 1); validation and test get ``round(fraction * m)`` each."""
    samples = np.asarray(samples, dtype=np.int64)
    if len(fractions) != 3 or min(fractions) <= 0 or not np.isclose(sum(fractions), 1.0):
        raise SiptError(
            f"split fractions {tuple(fractions)} must be three positive numbers summing to 1; e.g. 0.8 0.1 0.1"
        )
    shuffled = np.random.default_rng(seed).permutation(samples)
    n_val, n_test = (round(f * samples.size) for f in fractions[1:])
    if n_val == 0 or n_test == 0 or n_val + n_test >= samples.size:
        raise SiptError(
            f"{samples.size} samples cannot be split {tuple(fractions)} with every split "
            "non-empty; use more samples or larger held-out fractions"
        )
    cuts = np.split(shuffled, [samples.size - n_val - n_test, samples.size - n_test])
    return Splits(*(np.sort(part) for part in cuts))


#: Groups :func:`covering_groups` tries before it gives up: far more than a search that succeeds
#: needs (one per (split, class) pair when groups are many), a bound on one that cannot.
COVER_SEARCH_STEPS = 20_000


def stratified_group_splits(
    labels: np.ndarray, groups: np.ndarray, sizes: dict[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Disjoint sorted ``int64`` index arrays ``{name: (sizes[name],)}`` over the ``(n,)`` ``labels``
    (any class ids), no group of the ``(n,)`` ``groups`` in two of them, every class in every split and
    each split's class shares near the whole's: scikit-learn's ``StratifiedGroupKFold`` idea at fixed
    sizes, seeded by ``rng``.

    Each group goes whole to one split or to none. First every split gets groups that hold every class
    (:func:`covering_groups`); then the other groups, in random order, each join the split
    with room whose classes fall furthest below their share, until every split has its size. A split
    keeps exactly its size of its groups' samples (one of each class, the rest by the classes' shares);
    its groups' other samples go to no split. SiptError (one line) when a split is smaller than the
    number of classes, the groups cannot put a class in every split, or they run out before every
    split is full."""
    classes, y = np.unique(np.asarray(labels), return_inverse=True)
    group = np.unique(np.asarray(groups), return_inverse=True)[1]
    names, size = list(sizes), np.array([sizes[name] for name in sizes], dtype=np.int64)
    for name, wanted in zip(names, size):
        if wanted < classes.size:
            raise SiptError(
                f"the {name} split of {wanted} samples cannot hold one sample of each of the {classes.size} "
                f"classes; make it at least {classes.size}"
            )
    counts = np.zeros((group.max() + 1, classes.size), dtype=np.int64)  # (groups, classes) samples
    np.add.at(counts, (group, y), 1)
    shares = counts.sum(axis=0) / y.size
    owner = covering_groups(counts > 0, len(names), rng)
    if owner is None:
        holders = np.count_nonzero(counts, axis=0)
        rarest = int(np.argmin(holders))
        raise SiptError(
            f"found no way to put every class in each of the {len(names)} splits ({', '.join(names)}) with whole groups: "
            f"class {classes[rarest]} is in {holders[rarest]} of the {counts.shape[0]} groups; give more groups with "
            "each class or drop the rarest class's samples"
        )
    held = np.array([counts[owner == split].sum(axis=0) for split in range(len(names))])  # (splits, classes)
    room = size - held.sum(axis=1)
    gap = shares[None, :] - held / size[:, None]  # (splits, classes) shortfall from the shares, per sample
    closed = np.where(room > 0, 0.0, -np.inf)  # (splits,) -inf where full
    group_size = counts.sum(axis=1).tolist()
    for free_group in rng.permutation(np.flatnonzero(owner < 0)).tolist():
        if (closed < 0).all():
            break
        split = int((gap @ counts[free_group] + closed).argmax())
        owner[free_group], held[split] = split, held[split] + counts[free_group]
        gap[split] -= counts[free_group] / size[split]
        room[split] -= group_size[free_group]
        closed[split] = 0.0 if room[split] > 0 else -np.inf
    if (room > 0).any():
        short = [name for name, left in zip(names, room) if left > 0]
        raise SiptError(
            f"the {y.size} samples in {counts.shape[0]} groups fill the splits with whole groups only to "
            f"{int((size - np.maximum(room, 0)).sum())} of the {int(size.sum())} samples they need ({', '.join(short)} "
            "short); lower the split sizes or give more samples"
        )
    splits = {}
    for split, name in enumerate(names):
        members = np.flatnonzero(owner[group] == split)
        quota = class_quota(held[split], sizes[name], shares)
        chosen = [rng.choice(members[y[members] == cls], quota[cls], replace=False) for cls in range(classes.size)]
        splits[name] = np.sort(np.concatenate(chosen)).astype(np.int64)
    return splits


def covering_groups(present: np.ndarray, n_splits: int, rng: np.random.Generator) -> np.ndarray | None:
    """``(groups,)`` split index per group (-1: none yet) such that each of ``n_splits`` splits holds
    every class of the ``(groups, classes)`` bool ``present``, or None when no assignment does.

    A depth-first search: the (split, class) pair with the fewest free groups holding the class is
    covered next, by the group that covers the most classes the split still lacks. Groups of the
    same class set are interchangeable here, so one of each set is tried (the first in a seeded
    order). The search is exhaustive up to :data:`COVER_SEARCH_STEPS` groups tried (then None too);
    with many groups its first path succeeds."""
    if (present.sum(axis=0) < n_splits).any():
        return None  # the pigeonhole bound, before any search
    order = rng.permutation(present.shape[0])
    owner = np.full(present.shape[0], -1)
    held = np.zeros((n_splits, present.shape[1]), dtype=bool)

    def search() -> bool:
        lacking = np.argwhere(~held)
        if lacking.size == 0:
            return True
        free = order[owner[order] < 0]
        holding = present[free].sum(axis=0)  # (classes,) free groups holding each class
        split, cls = min(lacking, key=lambda pair: holding[pair[1]])
        candidates = free[present[free, cls]]
        first = np.sort(np.unique(present[candidates], axis=0, return_index=True)[1])
        options = candidates[first]
        covers = present[np.ix_(options, ~held[split])].sum(axis=1)
        before = held[split].copy()
        for chosen in options[np.argsort(-covers, kind="stable")]:
            steps[0] += 1
            owner[chosen], held[split] = split, before | present[chosen]
            if steps[0] > COVER_SEARCH_STEPS or search():
                return steps[0] <= COVER_SEARCH_STEPS
            owner[chosen], held[split] = -1, before
        return False

    steps = [0]
    return owner if search() else None


def class_quota(available: np.ndarray, size: int, shares: np.ndarray) -> np.ndarray:
    """``(classes,)`` samples of each class a split of ``size`` keeps from the ``(classes,)``
    ``available`` ones: one of each available class, then each class up to its share of ``shares``
    ``(classes,)`` (as far as it has samples), the rest one at a time to the class furthest below its
    share that has more to give; needs ``available.sum() >= size``."""
    quota = np.minimum(available, 1)
    while (left := size - quota.sum()) > 0:
        deficit = np.where(quota < available, shares * size - quota, -np.inf)
        bulk = np.minimum(np.floor(np.clip(deficit, 0, None)), available - quota).astype(quota.dtype)
        if 0 < bulk.sum() <= left:
            quota += bulk  # every class up to the whole samples of its share, at once
        else:
            quota[np.argmax(deficit)] += 1
    return quota


def read_splits(path: str | Path, sample_ids: Sequence[str]) -> Splits:
    """Read ``SPLITS.tsv`` (format in the module docstring) over the samples named ``sample_ids`` ``(n,)``."""
    text = read_text_file(path, "splits file")
    index = {sample_id: i for i, sample_id in enumerate(sample_ids)}
    split_of: dict[str, tuple[str, int]] = {}  # id -> (split, line number)
    members: dict[str, list[int]] = {name: [] for name in SPLIT_NAMES}
    first = True
    for lineno, raw in enumerate(split_lines(text), start=1):
        if not raw.strip() or is_comment(raw):
            continue
        if first and is_header(raw, "splits"):
            first = False
            continue
        first = False
        fields = raw.split("\t")
        if len(fields) != 2:
            raise SiptError(f"{path}: line {lineno}: expected id<TAB>split, got {shorten(raw)}")
        sample_id, split = fields[0].strip(), fields[1].strip()
        if split not in members:
            raise SiptError(
                f"{path}: line {lineno}: unknown split {shorten(split)}; use one of {', '.join(SPLIT_NAMES)}"
            )
        if sample_id in split_of:
            earlier, earlier_line = split_of[sample_id]
            raise SiptError(
                f"{path}: line {lineno}: {shorten(sample_id)} is already in {earlier} (line "
                f"{earlier_line}), now in {split}; splits must not overlap, keep one line"
            )
        if sample_id not in index:
            raise SiptError(
                f"{path}: line {lineno}: {shorten(sample_id)} is not a sample id; fix the id or remove the line"
            )
        split_of[sample_id] = (split, lineno)
        members[split].append(index[sample_id])
    empty = [name for name in SPLIT_NAMES if not members[name]]
    if empty:
        raise SiptError(f"{path}: the {empty[0]} split is empty; assign some samples to it")
    return Splits(*(np.sort(np.array(members[name], dtype=np.int64)) for name in SPLIT_NAMES))


def write_splits(path: str | Path, splits: Splits, sample_ids: Sequence[str]) -> None:
    """Write ``splits`` as ``SPLITS.tsv`` atomically, train then validation then test."""
    lines = (f"{sample_ids[i]}\t{name}\n" for name in SPLIT_NAMES for i in getattr(splits, name).tolist())
    write_text_atomic(path, "".join(lines))


def check_task_splits(task: Task, splits: Splits, sample_ids: Sequence[str]) -> None:
    """SiptError if a split sample of ``task`` has no label or its train split cannot train a model."""
    listed = np.concatenate([splits.train, splits.validation, splits.test])
    unlabelled = listed[~task.is_labelled(listed)]
    if unlabelled.size:
        raise SiptError(
            f"labels of task {task.name!r} are missing for {unlabelled.size} sample(s) in the "
            f"splits (first: {sample_ids[unlabelled[0]]!r}); label them or drop them from the splits"
        )
    check_train_labels(task.name, task.kind, task.labels_of(splits.train), task.label_names)


def pretraining_graph(graph: PretrainingGraph, splits: Splits) -> PretrainingGraph:
    """``graph`` (explicit) on the same nodes without any edge touching a validation or test sample."""
    edges = graph.edges()
    keep = ~np.isin(edges, splits.held_out).any(axis=1)
    return PretrainingGraph.from_edges(edges[keep, 0], edges[keep, 1], graph.n_nodes)


def link_queries(graph: PretrainingGraph, fraction: float, seed: int, among: np.ndarray | None = None) -> np.ndarray:
    """``(q,)`` sorted samples held out of pre-training so that their ``G_PT`` links, unseen by any
    run, choose ``λ_SI``: ``ceil(fraction * m)`` of the ``m`` samples of ``among`` (default: all) that
    have a neighbour in ``graph``, drawn with ``seed``. At least two linked samples must stay behind."""
    candidates = np.arange(graph.n_nodes) if among is None else np.asarray(among, dtype=np.int64)
    linked = candidates[graph.degrees()[candidates] > 0]
    count = int(np.ceil(fraction * linked.size))
    if linked.size - count < 2:
        raise SiptError(
            f"only {linked.size} samples have a neighbour in G_PT; holding {count} out to choose λ "
            f"needs at least {count + 2} (or a smaller fraction: LambdaSweep.validation)"
        )
    return np.sort(np.random.default_rng([seed, 2]).choice(linked, size=count, replace=False))
