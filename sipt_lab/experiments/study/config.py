"""The config of an LC-transfer study (:class:`LcTransferConfig`), validated on construction."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sipt_lab.core import names
from sipt_lab.core.errors import ConfigError
from sipt_lab.training import TrainConfig

#: Metrics of :func:`~sipt_lab.experiments.study.metrics.heldout_metrics`, each in ``[0, 1]``.
STUDY_METRICS = names.STUDY_METRICS
#: Arms of the study (``tfidf`` is a reference row that needs no training; ``natural`` is SIPT over
#: the task's own graph, when one is given).
STUDY_ARMS = ("init", "lm", "sipt", "natural", "tfidf")
#: The default task's classes: vital-article summaries of these categories.
ARTICLE_CATEGORIES = ("Physical sciences", "History", "Arts", "Geography")
SPLIT_NAMES = ("pretrain", "train", "validation", "test")


@dataclass(frozen=True)
class LcTransferConfig:
    """One LC-transfer study (saved as ``config.json``).

    Attributes:
        samples, labels: a samples file and its ``id<TAB>label`` TSV; None: the default task,
            vital-article summaries of :data:`ARTICLE_CATEGORIES` labelled by category.
        edges: the task's own graph (``u<TAB>v`` sample ids of ``samples``), optional: one more
            SIPT arm (``natural``) pre-trains on its subgraph over the pre-training nodes, and the
            summary sets its measured gain beside the gain the dial's line predicts at its LC.
        n_pretrain, n_train, n_validation, n_test: split sizes (samples); the last three are never
            pre-trained on.
        levels: the dial's ``q`` grid, each in ``[0, 1]``, at least two distinct values.
        seeds: seeds ``0..seeds-1``; each trains every arm once.
        init, pooling, encoder: where the encoder comes from (as ``sipt-lab pretrain``).
        train: the trainer's settings; its ``seed`` is replaced per seed and its ``lambda_si`` is the
            SIPT arm's (the LM-only arm sets 0). None: the init kind's defaults
            (:func:`sipt_lab.training.defaults.train_config`) with ``steps=100, batch_size=16, max_len=64``.
        k: neighbours of the k-NN metric and of the init's own k-NN graph.
        metric: the :data:`STUDY_METRICS` entry the summary's gains and slope are computed on.
        split_seed: seed of the splits and of the dial's graphs.
        bootstrap: bootstrap resamples (over seeds) of the slope's CI.
        pilot_sd: sd of the paired gains over seeds measured by a pilot (an earlier study's
            ``paired_sd``): the run states the effect its seeds can detect before training.
        protocol: ``inductive`` (the fine-tuning splits are never pre-trained on) or
            ``transductive`` (every split's samples are pre-training nodes too, as in the paper's
            protocol; labelled so in the summary and the verdict).
    """

    samples: str | None = None
    labels: str | None = None
    edges: str | None = None
    n_pretrain: int = 600
    n_train: int = 300
    n_validation: int = 100
    n_test: int = 300
    levels: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    seeds: int = 3
    init: str = "minilm"
    pooling: str | None = None
    encoder: str = "default"
    train: TrainConfig | None = None
    k: int = 3
    metric: str = "knn_auroc"
    split_seed: int = 0
    bootstrap: int = 2000
    pilot_sd: float | None = None
    protocol: str = "inductive"

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(float(q) for q in self.levels))
        outside = [q for q in self.levels if not 0.0 <= q <= 1.0]
        if outside:
            raise ConfigError("LcTransferConfig.levels", f"q is a probability and must lie in [0, 1], got {outside[0]:g}")
        if len(set(self.levels)) < 2:
            raise ConfigError("LcTransferConfig.levels", f"needs at least two distinct levels (one gives no slope), got {list(self.levels)}")
        for name, low in (("n_pretrain", 2), ("n_train", 2), ("n_validation", 1), ("n_test", 1), ("seeds", 1), ("k", 1), ("bootstrap", 1)):
            if getattr(self, name) < low:
                raise ConfigError(f"LcTransferConfig.{name}", f"must be >= {low}, got {getattr(self, name)}")
        if self.pilot_sd is not None and not (math.isfinite(self.pilot_sd) and self.pilot_sd >= 0):
            raise ConfigError("LcTransferConfig.pilot_sd", f"must be a finite sd >= 0, got {self.pilot_sd}")
        if self.protocol not in names.STUDY_PROTOCOLS:
            raise ConfigError("LcTransferConfig.protocol", f"unknown protocol {self.protocol!r}; choose one of {', '.join(names.STUDY_PROTOCOLS)}")
        if self.metric not in STUDY_METRICS:
            raise ConfigError("LcTransferConfig.metric", f"unknown metric {self.metric!r}; choose one of {', '.join(STUDY_METRICS)}")
        if (self.samples is None) != (self.labels is None):
            raise ConfigError("LcTransferConfig.labels", "give the samples file and its labels together, or neither (the default task)")
        if self.edges is not None and self.samples is None:
            raise ConfigError("LcTransferConfig.edges", "a graph needs the samples file its ids belong to")
        if self.train is None:
            from sipt_lab.training.defaults import init_kind, train_config

            object.__setattr__(self, "train", train_config(init_kind(self.init), steps=100, batch_size=16, max_len=64))

    @property
    def sizes(self) -> dict[str, int]:
        """Split name -> number of samples."""
        return {"pretrain": self.n_pretrain, "train": self.n_train, "validation": self.n_validation, "test": self.n_test}
