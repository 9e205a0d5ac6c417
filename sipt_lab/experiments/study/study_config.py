"""The config of an LC-transfer study (:class:`LcTransferConfig`), validated on construction."""

from __future__ import annotations

from dataclasses import dataclass

from sipt_lab.core import names
from sipt_lab.core.errors import ConfigError
from sipt_lab.core.options import option, validate
from sipt_lab.training import TrainConfig

#: Metrics of :func:`~sipt_lab.experiments.study.metrics.heldout_metrics`, each in ``[0, 1]``.
STUDY_METRICS = names.STUDY_METRICS
#: Arms of the study (``tfidf`` is a reference row that needs no training; ``natural`` is SIPT over
#: the task's own graph, when one is given).
STUDY_ARMS = ("init", "lm", "sipt", "natural", "tfidf")
#: The geometry arm's name per ``L_SI`` geometry (``LcTransferConfig.geometry_arm``).
GEOMETRY_ARMS = {"raw": "sipt-raw", "normalised": "sipt-normalised"}
#: The default task's classes: vital-article summaries of these categories.
ARTICLE_CATEGORIES = ("Physical sciences", "History", "Arts", "Geography")
SPLIT_NAMES = ("pretrain", "train", "validation", "test")
#: The study's training length and batch over the init kind's defaults (a short run per arm).
STUDY_TRAIN = {"steps": 100, "batch_size": 16, "max_len": 64}


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
        geometry_arm: each seed also trains, at the top dial level (the largest ``q``), a SIPT arm
            whose ``L_SI`` sees the other geometry (:data:`GEOMETRY_ARMS`): the raw pooled vector
            for an init whose output is L2-normalised, the normalised one otherwise; the summary
            sets its gain beside the default SIPT arm's. A contrastive negative margin above the
            unit sphere's diameter (2) is rescaled to it on normalised vectors, the positive margin
            by the same factor. Left out of the saved config while False.
        per_sample_arm: each seed also trains this per-sample baseline (``multitask`` or
            ``same-family``, on ``train.pt_labels`` over the study's sample ids, weighted by the SIPT
            arm's ``λ``); the summary sets its paired gain over LM-only beside SIPT's. Left out of
            the saved config while None.
    """

    samples: str | None = option(
        None,
        nonempty=True,
        metavar="S",
        help="samples file of the task (with --labels; default: vital-article summaries of 4 categories)",
    )
    labels: str | None = option(None, help="id<TAB>label of every sample", nonempty=True, metavar="L.tsv")
    edges: str | None = option(
        None,
        nonempty=True,
        metavar="E.tsv",
        help="the task's own graph (u<TAB>v sample ids): one more SIPT arm on it, its gain set beside "
        "what its LC predicts",
    )
    n_pretrain: int = option(600, help="pre-training samples", range=(2, None), metavar="N")
    n_train: int = option(
        300,
        range=(2, None),
        metavar="N",
        help="never-seen fine-tuning train samples: the k-NN references and probe data",
    )
    n_validation: int = option(100, help="never-seen validation samples", range=(1, None), metavar="N")
    n_test: int = option(300, help="never-seen test samples", range=(1, None), metavar="N")
    levels: tuple[float, ...] = option(
        (0.0, 0.25, 0.5, 0.75, 1.0),
        range=(0.0, 1.0),
        metavar="Q",
        help="the dial's q grid, each in [0, 1] (q=0: the random control)",
    )
    seeds: int = option(3, help="seeds, each training every arm", range=(1, None))
    init: str = option("minilm", help="char, minilm or a Hugging Face directory", nonempty=True)
    pooling: str | None = option(None, choices=names.POOLINGS, help="pooling of a Hugging Face init (default: its own)")
    encoder: str = option("default", choices=names.ENCODER_PRESETS, help="size of the char encoder")
    train: TrainConfig | None = None
    k: int = option(3, help="neighbours of the k-NN metric", range=(1, None))
    metric: str = option("knn_auroc", choices=STUDY_METRICS, help="metric of the gains and the slope")
    split_seed: int = option(0, help="seed of the splits and the dial's graphs", range=(0, None))
    bootstrap: int = option(2000, help="bootstrap resamples of the slope's CI", range=(1, None), metavar="B")
    pilot_sd: float | None = option(None, help="sd of a pilot's paired gains over seeds", range=(0.0, None))
    protocol: str = option(
        "inductive",
        choices=names.STUDY_PROTOCOLS,
        help="inductive: fine-tuning splits never pre-trained on; transductive: every split pre-trained on too",
    )
    geometry_arm: bool = option(
        False,
        omit_default=True,
        help="also train, at the top dial level, a SIPT arm whose L_SI sees the other geometry than the init's "
        "output (raw for a normalising init, normalised otherwise), its gain set beside the default's",
    )
    per_sample_arm: str | None = option(
        None,
        choices=names.PER_SAMPLE_METHODS,
        omit_default=True,
        metavar="NAME",
        help="also train a per-sample baseline (multitask or same-family, on --pt-labels over the samples' ids), "
        "its gain over LM-only set beside SIPT's",
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(float(q) for q in self.levels))
        validate(self)
        if len(set(self.levels)) < 2:
            raise ConfigError(
                "LcTransferConfig.levels",
                f"needs at least two distinct levels (one gives no slope), got {list(self.levels)}",
            )
        if (self.samples is None) != (self.labels is None):
            raise ConfigError(
                "LcTransferConfig.labels",
                "give the samples file and its labels together, or neither (the default task)",
            )
        if self.edges is not None and self.samples is None:
            raise ConfigError("LcTransferConfig.edges", "a graph needs the samples file its ids belong to")
        if self.train is None:
            from sipt_lab.training.defaults import init_kind, train_config

            object.__setattr__(self, "train", train_config(init_kind(self.init), **STUDY_TRAIN))
        if (self.per_sample_arm is None) != (self.train.pt_labels is None):
            raise ConfigError(
                "TrainConfig.pt_labels",
                "labels the per-sample arm: give it with LcTransferConfig.per_sample_arm, and neither without the other",
            )

    @property
    def sizes(self) -> dict[str, int]:
        """Split name -> number of samples."""
        return {
            "pretrain": self.n_pretrain,
            "train": self.n_train,
            "validation": self.n_validation,
            "test": self.n_test,
        }
