"""A run's per-sample pre-training labels (the per-sample baselines'), read from ``TrainConfig.pt_labels``.

Every command that pre-trains (``pretrain``, ``domain run``, ``simulate``, ``study lc-transfer``)
gives :func:`method_labels` its method, its training config and the ids of its samples; the file's
layout is the NETWORKS domain's ``go_pretrain.tsv`` (``id<TAB>label;label;...`` a line,
:func:`~sipt_lab.domains.loaders.read_term_sets`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.training import TrainConfig
from sipt_lab.training.methods import get_method
from sipt_lab.training.per_sample import SampleLabels, missing_labels


def method_labels(
    method: str | None,
    config: TrainConfig,
    ids: Sequence[str],
    nodes: np.ndarray | None = None,
    skip_unknown: bool = False,
) -> SampleLabels | None:
    """The labels of a run of ``method`` over the samples ``ids`` ``(N,)`` (rows ``nodes`` ``(n,)``,
    the run's samples in order; None: all of them): None for a method that reads none.

    SiptError when the method needs labels and ``config.pt_labels`` is unset, when the file names an
    id outside ``ids`` (unless ``skip_unknown``: a file over a whole domain read for a slice of it),
    and when some of the run's samples are not listed, unless ``config.allow_missing``."""
    if method is None or not get_method(method).needs_labels:
        return None
    if config.pt_labels is None:
        raise SiptError(
            f"method {method} needs per-sample pre-training labels; set TrainConfig.pt_labels to a file of "
            "id<TAB>label;label lines (the layout of go_pretrain.tsv)"
        )
    from sipt_lab.domains.loaders import read_term_sets

    terms = read_term_sets(config.pt_labels, list(ids), skip_unknown=skip_unknown)
    rows = np.arange(len(ids)) if nodes is None else np.asarray(nodes, dtype=np.int64)
    missing_labels(terms.listed[rows], [ids[i] for i in rows], config.pt_labels, config.allow_missing)
    return SampleLabels(terms.matrix[rows], terms.listed[rows], terms.terms)
