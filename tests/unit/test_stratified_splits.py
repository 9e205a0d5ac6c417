"""Stratified grouped splits: every class in every split whenever whole groups allow it, exact
sizes, no group on two sides, seeded; a one-line refusal when the groups cannot allow it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sipt_lab.core.errors import SiptError
from sipt_lab.data.splits import covering_groups, stratified_group_splits
from sipt_lab.studies.lc.dial import grouped_splits

#: The CLI's ``--n-pretrain 100 --n-train 48 --n-validation 12 --n-test 48``.
STUDY_SIZES = {"pretrain": 100, "train": 48, "validation": 12, "test": 48}


def check_splits(splits: dict[str, np.ndarray], labels, groups, sizes: dict[str, int]) -> None:
    """Exact sizes, no sample or group on two sides, every class of ``labels`` on every side."""
    labels, groups = np.asarray(labels), np.asarray(groups)
    assert {name: len(index) for name, index in splits.items()} == sizes
    everything = np.concatenate(list(splits.values()))
    assert len(np.unique(everything)) == len(everything)
    sides = [set(groups[index].tolist()) for index in splits.values()]
    assert all(not a & b for a, b in itertools.combinations(sides, 2))
    for name, index in splits.items():
        assert set(labels[index].tolist()) == set(labels.tolist()), name


@pytest.mark.parametrize("labelled_by", ["sample", "group"])
def test_the_study_split_that_missed_a_test_class_now_holds_every_class_everywhere(labelled_by):
    """240 samples in groups of 4 with 4 classes (each sample its own label, or one per group) at the
    sizes of the command that failed with "test classes [2] never occur in the fine-tuning train split"."""
    groups = np.arange(240) // 4
    for seed in range(20):
        rng = np.random.default_rng([seed, 7])
        labels = rng.integers(0, 4, 240) if labelled_by == "sample" else rng.integers(0, 4, 60)[groups]
        splits = grouped_splits(labels, groups, STUDY_SIZES, np.random.default_rng(seed))
        check_splits(splits, labels, groups, STUDY_SIZES)


def test_the_splits_are_seeded_and_keep_each_class_near_its_share():
    labels = np.repeat([0, 1, 2, 3], [120, 60, 40, 20])
    groups = np.random.default_rng(0).permutation(240) // 3
    sizes = {"train": 80, "validation": 20, "test": 40}
    first = stratified_group_splits(labels, groups, sizes, np.random.default_rng(5))
    again = stratified_group_splits(labels, groups, sizes, np.random.default_rng(5))
    other = stratified_group_splits(labels, groups, sizes, np.random.default_rng(6))
    assert all(np.array_equal(first[name], again[name]) for name in sizes)
    assert any(not np.array_equal(first[name], other[name]) for name in sizes)
    shares = np.bincount(labels) / labels.size
    for name, index in first.items():
        # within one sample per class of the whole's shares (plus the one-of-each floor)
        assert np.all(np.abs(np.bincount(labels[index], minlength=4) - shares * sizes[name]) <= 1.5), name


@pytest.mark.parametrize(
    "labels, groups, sizes, problem",
    [
        # class 3 lives in two groups: four splits cannot all hold it
        (
            np.r_[np.zeros(40, int), np.ones(40, int), np.full(40, 2), [3, 3]],
            np.r_[np.arange(120) // 2, [60, 61]],
            {"pretrain": 20, "train": 10, "validation": 5, "test": 5},
            "found no way to put every class in each of the 4 splits (pretrain, train, validation, test) with whole "
            "groups: class 3 is in 2 of the 62 groups",
        ),
        # every class is in two groups, yet no two disjoint sets of groups each hold all three
        (
            [0, 1, 0, 2, 1, 2],
            [0, 0, 1, 1, 2, 2],
            {"train": 3, "test": 3},
            "found no way to put every class in each of the 2 splits (train, test) with whole groups",
        ),
        ([0, 1, 2, 3] * 10, np.arange(40), {"train": 8, "validation": 3, "test": 8}, "the validation split of 3 "),
        ([0, 1] * 10, np.arange(20) // 2, {"train": 8, "validation": 4, "test": 10}, "whole groups only to"),
    ],
)
def test_splits_the_groups_cannot_allow_are_refused_in_one_line(labels, groups, sizes, problem):
    with pytest.raises(SiptError) as error:
        stratified_group_splits(np.asarray(labels), np.asarray(groups), sizes, np.random.default_rng(0))
    message = str(error.value)
    assert problem in message and "\n" not in message


def coverable(present: np.ndarray, n_splits: int) -> bool:
    """Brute force: does some assignment of groups to splits (or none) put every class in every split?"""
    assignments = np.array(list(itertools.product(range(-1, n_splits), repeat=present.shape[0])))  # (a, groups)
    held = np.stack([(assignments == split).astype(int) @ present for split in range(n_splits)], axis=1)
    return bool((held > 0).all(axis=(1, 2)).any())


@settings(max_examples=80, deadline=None)
@given(
    membership=st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=3), min_size=1, max_size=7),
    n_splits=st.integers(2, 3),
    seed=st.integers(0, 2**16),
)
def test_a_class_is_never_missing_when_some_assignment_of_whole_groups_allows_it(membership, n_splits, seed):
    """Groups of 1-3 samples over up to 3 classes: the split is refused exactly when no assignment of
    whole groups to splits puts every class in every split (checked by brute force), and otherwise
    every split holds every class at its exact size (one sample of each: a covering assignment has them)."""
    labels = np.concatenate([np.asarray(members) for members in membership])
    groups = np.repeat(np.arange(len(membership)), [len(members) for members in membership])
    n_classes = np.unique(labels).size
    present = np.zeros((len(membership), n_classes), dtype=bool)
    present[groups, np.unique(labels, return_inverse=True)[1]] = True
    allowed = coverable(present, n_splits)
    assert (covering_groups(present, n_splits, np.random.default_rng(seed)) is not None) == allowed
    names = ["train", "validation", "test"][:n_splits]
    sizes = dict.fromkeys(names, n_classes)
    try:
        splits = stratified_group_splits(labels, groups, sizes, np.random.default_rng(seed))
    except SiptError as error:
        assert not allowed and str(error).startswith("found no way to put every class"), str(error)
        return
    assert allowed
    check_splits(splits, labels, groups, sizes)
