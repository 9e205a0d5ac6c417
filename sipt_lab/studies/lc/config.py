"""The config of an LC-transfer study (:class:`LcTransferConfig`), validated on construction."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sipt_lab.core.errors import ConfigError
from sipt_lab.core.options import Overrides, option, validate
from sipt_lab.models import names as model_names
from sipt_lab.studies import names as study_names
from sipt_lab.training import TrainConfig
from sipt_lab.training import names as training_names
from sipt_lab.training.defaults import TrainOverrides, init_kind, resolve_train_config

#: Metrics of :func:`~sipt_lab.evaluation.heldout.heldout_metrics`, each in ``[0, 1]``.
STUDY_METRICS = study_names.STUDY_METRICS
#: Arms of the study (``tfidf`` is a reference row that needs no training; ``natural`` is SIPT over
#: the task's own graph, when one is given).
STUDY_ARMS = ("init", "lm", "sipt", "natural", "tfidf")
#: The geometry arm's name per ``L_SI`` geometry (``LcTransferConfig.geometry_arm``).
GEOMETRY_ARMS = {"raw": "sipt-raw", "normalised": "sipt-normalised"}
#: The ``articles`` task's default classes: vital-article summaries of these categories.
ARTICLE_CATEGORIES = ("Physical sciences", "History", "Arts", "Geography")
#: ``LcTransferConfig.categories`` value for every category of the corpus but ``Uncategorized``.
ALL_CATEGORIES = ("all",)
#: Built-in tasks (without ``samples``): ``articles``, vital-article summaries labelled by category;
#: ``cliques``, sentences of a corpus labelled by their top LDA topic as the CLIQUES family labels them.
STUDY_TASKS = ("articles", "cliques")
#: The articles task's own graphs (``LcTransferConfig.natural_graph``), built over the pre-training
#: articles only: who names whom, and TF-IDF nearest neighbours fitted on their texts.
ARTICLE_GRAPHS = ("mentions", "tfidf-knn")
SPLIT_NAMES = ("pretrain", "train", "validation", "test")
#: The study's training length and batch over the init kind's defaults (a short run per arm).
STUDY_TRAIN = TrainOverrides("study", steps=100, batch_size=16, max_len=64)
#: LDA topics of the cliques task: at the CLIQUES family's 100 topics too few topics hold enough
#: confident sentences of the embedded corpus for 10 classes of 200; at 20 they do.
CLIQUES_TOPICS = 20


@dataclass(frozen=True)
class LcTransferConfig:
    """One LC-transfer study (saved as ``config.json``).

    Attributes:
        samples, labels: a samples file and its ``id<TAB>label`` TSV (any subset: the labelled samples are studied); None: the built-in ``task``.
        task: the built-in task (:data:`STUDY_TASKS`) when ``samples`` is None: ``articles``,
            vital-article summaries of ``categories`` labelled by category; ``cliques``, sentences
            of ``corpus`` labelled by their top topic of a :data:`CLIQUES_TOPICS`-topic LDA as the
            CLIQUES family draws them (10 balanced classes of confident sentences), so the dial at
            ``q = 1`` is the CLIQUES graph over the pre-training sentences.
        corpus: the cliques task's sentence corpus (None: the embedded one).
        natural_graph: for the articles task, one of the wiki domain's own graphs
            (:data:`ARTICLE_GRAPHS`), built over the pre-training articles: the ``natural`` arm
            pre-trains on it (as with ``edges``). Left out of the saved config while None.
        categories: the articles task's classes (:data:`ALL_CATEGORIES`: every category but
            ``Uncategorized``).
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
        metric: the pre-registered :data:`STUDY_METRICS` entry of the verdict and the summary's top
            level (default: k-NN accuracy, the quantity Theorem 1 bounds); every metric measured is
            summarised under ``metrics``.
        split_seeds: seeds of the splits (and of the topic model of the cliques task, fitted on the
            pre-training side only) and of the dial's graphs; every seed runs on every split, and a
            replicate is one ``(split seed, seed)``.
        groups: ``id<TAB>group`` of every sample of ``samples`` (e.g. the document a sentence comes
            from): splits keep each group on one side, so no group spans pre-training and the
            never-seen splits, and hold every class each. None: each sample is its own group (the built-in tasks group by article).
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
        finetune_epochs: when positive, every arm's encoder (the init's too) is also fine-tuned with
            a linear head on the never-seen train split for at most that many passes at
            ``finetune_lr`` (the best validation pass kept) and scored on the test split: metrics
            ``finetune_accuracy`` and ``finetune_macro_f1``. Left out of the saved config while 0.
        finetune_lr: the fine-tuning's AdamW learning rate.
        per_sample_arm: each seed also trains this per-sample baseline (``multitask`` or
            ``same-family``, on ``train.pt_labels`` over the study's sample ids, weighted by the SIPT
            arm's ``λ``); the summary sets its paired gain over LM-only beside SIPT's. Left out of
            the saved config while None.
    """

    samples: str | None = option(
        None,
        nonempty=True,
        metavar="S",
        help="samples file of the task (with --labels; default: the built-in --task)",
    )
    labels: str | None = option(
        None,
        help="id<TAB>label of any subset of the samples: the study splits the labelled ones (its dial needs a "
        "label on every sample it pre-trains on) and leaves the rest out",
        nonempty=True,
        metavar="L.tsv",
    )
    edges: str | None = option(
        None,
        nonempty=True,
        metavar="E.tsv",
        help="the task's own graph (u<TAB>v sample ids): one more SIPT arm on it, its gain set beside "
        "what its LC predicts",
    )
    task: str = option(
        "articles",
        choices=STUDY_TASKS,
        help="built-in task without --samples: articles = vital-article summaries by category; cliques = "
        "sentences of --corpus by their top LDA topic (the CLIQUES family's 10 classes)",
    )
    corpus: str | None = option(
        None,
        nonempty=True,
        metavar="PATH",
        help="sentence corpus of the cliques task (one per line or JSONL, maybe .gz; default: the embedded one)",
    )
    natural_graph: str | None = option(
        None,
        choices=ARTICLE_GRAPHS,
        omit_default=True,
        help="the articles task's own graph over the pre-training articles (mentions, tfidf-knn): one more "
        "SIPT arm on it, its gain set beside what its LC predicts",
    )
    categories: tuple[str, ...] = option(
        ARTICLE_CATEGORIES,
        nonempty=True,
        metavar="NAME",
        help="the articles task's classes ('all': every category but Uncategorized)",
    )
    n_pretrain: int = option(600, help="pre-training samples", range=(2, None), metavar="N")
    n_train: int = option(
        300,
        range=(2, None),
        metavar="N",
        help="never-seen fine-tuning train samples: the k-NN references and probe data",
    )
    # two at least: a split of one sample holds one class, and AUROC needs two
    n_validation: int = option(100, help="never-seen validation samples", range=(2, None), metavar="N")
    n_test: int = option(300, help="never-seen test samples", range=(2, None), metavar="N")
    levels: tuple[float, ...] = option(
        (0.0, 0.25, 0.5, 0.75, 1.0),
        range=(0.0, 1.0),
        metavar="Q",
        help="the dial's q grid, each in [0, 1] (q=0: the random control)",
    )
    seeds: int = option(3, help="seeds, each training every arm", range=(1, None))
    init: str = option("minilm", help="char, minilm or a Hugging Face directory", nonempty=True)
    pooling: str | None = option(
        None, choices=model_names.POOLINGS, help="pooling of a Hugging Face init (default: its own)"
    )
    encoder: str = option("default", choices=model_names.ENCODER_PRESETS, help="size of the char encoder")
    train: TrainConfig | None = None
    k: int = option(3, help="neighbours of the k-NN metric", range=(1, None))
    metric: str = option(
        "knn_accuracy",
        choices=STUDY_METRICS,
        help="the pre-registered metric of the verdict (every metric is summarised)",
    )
    split_seeds: tuple[int, ...] = option(
        (0, 1),
        range=(0, None),
        metavar="S",
        help="seeds of the splits and the dial's graphs: every seed runs on every split",
    )
    groups: str | None = option(
        None,
        nonempty=True,
        metavar="G.tsv",
        help="id<TAB>group of every sample of --samples: no group spans pre-training and the never-seen splits "
        "(default: each sample its own group)",
    )
    pilot_sd: float | None = option(None, help="sd of a pilot's paired gains over seeds", range=(0.0, None))
    protocol: str = option(
        "inductive",
        choices=study_names.STUDY_PROTOCOLS,
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
        choices=training_names.PER_SAMPLE_METHODS,
        omit_default=True,
        metavar="NAME",
        help="also train a per-sample baseline (multitask or same-family, on --pt-labels over the samples' ids), "
        "its gain over LM-only set beside SIPT's",
    )
    finetune_epochs: int = option(
        0,
        range=(0, None),
        metavar="E",
        omit_default=True,
        help="also fine-tune every arm's encoder with a linear head on the train split for at most E passes "
        "(best validation pass, scored on test; 0: off)",
    )
    finetune_lr: float = option(5e-5, help="learning rate of the fine-tuning", range=(0.0, None), open="low")

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(float(q) for q in self.levels))
        object.__setattr__(self, "split_seeds", tuple(int(seed) for seed in self.split_seeds))
        object.__setattr__(self, "categories", tuple(self.categories))
        validate(self)
        if len(set(self.levels)) < 2:
            raise ConfigError(
                "LcTransferConfig.levels",
                f"needs at least two distinct levels (one gives no slope), got {list(self.levels)}",
            )
        if len(set(self.split_seeds)) != len(self.split_seeds):
            raise ConfigError(
                "LcTransferConfig.split_seeds",
                f"are the same split twice: {list(self.split_seeds)}; give distinct seeds",
            )
        if self.groups is not None and self.samples is None:
            raise ConfigError(
                "LcTransferConfig.groups", "groups the samples of a samples file; the built-in tasks group by article"
            )
        if (self.samples is None) != (self.labels is None):
            raise ConfigError(
                "LcTransferConfig.labels",
                "give the samples file and its labels together, or neither (the default task)",
            )
        if self.corpus is not None and (self.samples is not None or self.task != "cliques"):
            raise ConfigError(
                "LcTransferConfig.corpus", "is the cliques task's corpus; set task='cliques' without samples"
            )
        if self.metric.startswith("finetune_") and not self.finetune_epochs:
            raise ConfigError(
                "LcTransferConfig.metric", f"{self.metric} needs fine-tuning; set finetune_epochs to at least 1"
            )
        if self.natural_graph is not None and (self.samples is not None or self.task != "articles"):
            raise ConfigError(
                "LcTransferConfig.natural_graph", "is a graph of the articles task; for your own samples give edges"
            )
        if self.edges is not None and self.samples is None:
            raise ConfigError("LcTransferConfig.edges", "a graph needs the samples file its ids belong to")
        if self.train is None:
            object.__setattr__(self, "train", resolve_train_config(init_kind(self.init), STUDY_TRAIN))
        if (self.per_sample_arm is None) != (self.train.pt_labels is None):
            raise ConfigError(
                "TrainConfig.pt_labels",
                "labels the per-sample arm: give it with LcTransferConfig.per_sample_arm, and neither without the other",
            )

    @property
    def dataset(self) -> str:
        """The task's data in words, for titles and verdicts."""
        if self.samples is not None:
            return Path(self.samples).name
        if self.task == "cliques":
            return "CLIQUES sentences of " + ("the embedded corpus" if self.corpus is None else Path(self.corpus).name)
        return "vital-article summaries"

    @property
    def sizes(self) -> dict[str, int]:
        """Split name -> number of samples."""
        return {
            "pretrain": self.n_pretrain,
            "train": self.n_train,
            "validation": self.n_validation,
            "test": self.n_test,
        }


#: Named scales of the study (:func:`study_preset`; ``sipt-lab study lc-transfer --preset NAME``):
#: LcTransferConfig fields, and under ``train`` the TrainConfig fields over :data:`STUDY_TRAIN` and
#: the init kind's defaults. ``cpu``: CLIQUES over the embedded corpus, 640 pre-training and 640
#: never-seen sentences (320 / 80 / 240), 5 levels x 5 seeds x 2 split seeds, MiniLM at 40 tokens,
#: 0.6 passes over the pre-training sentences per arm (what 2 cores train in 35 minutes);
#: ``gpu-wiki``: every categorised vital article (9,033, 11 classes; 900 never-seen test articles),
#: 5 seeds x 2 split seeds, fine-tuning as a further metric.
STUDY_PRESETS: dict[str, Overrides] = {
    "cpu": Overrides(
        LcTransferConfig,
        "preset cpu",
        task="cliques",
        n_pretrain=640,
        n_train=320,
        n_validation=80,
        n_test=240,
        seeds=5,
        split_seeds=(0, 1),
        train=TrainOverrides("preset cpu", steps=24, batch_size=16, max_len=40, head_warmup=12),
    ),
    "gpu-wiki": Overrides(
        LcTransferConfig,
        "preset gpu-wiki",
        task="articles",
        categories=ALL_CATEGORIES,
        n_pretrain=6000,
        n_train=1800,
        n_validation=300,
        n_test=900,
        seeds=5,
        finetune_epochs=2,
        train=TrainOverrides("preset gpu-wiki", steps=300, batch_size=32, max_len=128, device="cuda", precision="fp32"),
    ),
}


#: Each metric in words, ``{k}`` standing for the number of neighbours.
METRIC_WORDS = {
    "knn_accuracy": "{k}-NN accuracy",
    "knn_auroc": "{k}-NN macro AUROC",
    "probe_accuracy": "linear-probe accuracy",
    "probe_macro_f1": "linear-probe macro-F1",
    "finetune_accuracy": "fine-tuned accuracy",
    "finetune_macro_f1": "fine-tuned macro-F1",
}


def metric_words(metric: str, k: int = 3) -> str:
    """``metric`` (a :data:`STUDY_METRICS` name) in words."""
    return METRIC_WORDS[metric].format(k=k)


def study_preset(name: str, **fields) -> LcTransferConfig:
    """The study :data:`STUDY_PRESETS` names, with ``fields`` (LcTransferConfig fields; a ``train``
    TrainConfig replaces the preset's) over it."""
    return preset_config(LcTransferConfig, STUDY_PRESETS, STUDY_TRAIN, name, fields)


def preset_config(cls: type, presets: dict[str, Overrides], base_train: TrainOverrides, name: str, fields: dict):
    """``cls`` built from the preset ``name`` of ``presets`` with ``fields`` over it: the preset's
    ``train`` over ``base_train`` over the init kind's defaults makes the TrainConfig
    (:func:`~sipt_lab.training.defaults.resolve_train_config`), unless ``fields`` gives one."""
    if name not in presets:
        raise ConfigError(f"{cls.__name__} preset", f"{name!r} is unknown; choose one of {', '.join(presets)}")
    chosen = {**{key: value for key, value in presets[name].items() if key != "train"}, **fields}
    if "train" not in chosen:
        init = chosen.get("init", cls.init)
        chosen["train"] = resolve_train_config(init_kind(init), base_train, presets[name].get("train"))
    return cls(**chosen)
