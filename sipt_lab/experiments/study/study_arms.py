"""One seed of the study as a grid cell (:class:`StudySeed`, :func:`study_seed`): the seed's arms
trained and scored on the never-seen samples, each arm from the same start."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.experiments.study.dial import dial_graph, dial_target_lc, inductive_splits, pretraining_nodes
from sipt_lab.experiments.study.metrics import encoder_consistency, heldout_metrics
from sipt_lab.experiments.study.study_config import (
    ALL_CATEGORIES,
    CLIQUES_TOPICS,
    GEOMETRY_ARMS,
    LcTransferConfig,
)
from sipt_lab.graphs.graph import PretrainingGraph


def study_task(config: LcTransferConfig) -> tuple[list[str], list[str], np.ndarray, PretrainingGraph | None]:
    """``(ids, texts, labels (n,) ints 0..C-1, the task's own graph or None)`` of the study's task:
    the config's files, or the built-in ``config.task`` (:data:`STUDY_TASKS`)."""
    if config.samples is not None:
        from sipt_lab.data.samples import read_sample_graph, read_sample_labels, read_samples

        samples = read_samples(config.samples)
        natural = None if config.edges is None else read_sample_graph(config.edges, samples)
        return list(samples.ids), list(samples.texts), read_sample_labels(config.labels, samples)[0], natural
    ids, texts, labels = BUILT_IN_TASKS[config.task](config)
    return ids, texts, np.unique(labels, return_inverse=True)[1], None


def article_task(config: LcTransferConfig) -> tuple[list[str], list[str], list]:
    """Vital-article summaries of ``config.categories`` labelled by category."""
    from sipt_lab.data.corpus import default_articles

    articles = default_articles()
    known = sorted({a["topic"] for a in articles} - {UNCATEGORIZED})
    wanted = known if config.categories == ALL_CATEGORIES else list(config.categories)
    unknown = sorted(set(wanted) - set(known))
    if unknown:
        raise SiptError(f"unknown article categories {unknown}; choose among {known} or 'all'")
    chosen = [(i, a) for i, a in enumerate(articles) if a["topic"] in wanted]
    ids = [f"{ARTICLE_ID}{i}" for i, _ in chosen]
    return ids, [a["extract"] for _, a in chosen], [a["topic"] for _, a in chosen]


def article_graph(name: str, article_ids: list[str]) -> PretrainingGraph:
    """The wiki domain's graph ``name`` (:data:`ARTICLE_GRAPHS`) over the articles ``article_ids``
    (ids of :func:`article_task`, node ``i`` is ``article_ids[i]``) and nothing else: TF-IDF is fitted
    on their texts only."""
    from sipt_lab.domains import subset
    from sipt_lab.domains.wiki import load_wiki, mentions_graph, tfidf_knn_graph

    articles = subset(load_wiki(), np.array([int(i.removeprefix(ARTICLE_ID)) for i in article_ids]))
    return {"mentions": mentions_graph, "tfidf-knn": tfidf_knn_graph}[name](articles)


def cliques_task(config: LcTransferConfig) -> tuple[list[str], list[str], list]:
    """Every split's sentences as the CLIQUES family draws them from ``config.corpus`` (seeded by
    ``config.split_seed``), labelled by their top topic."""
    from sipt_lab.synthetic import build_dataset
    from sipt_lab.synthetic.graph_spec import GraphSpec

    spec = GraphSpec(
        family="cliques",
        n_nodes=sum(config.sizes.values()),
        n_heldout=0,
        n_topics=CLIQUES_TOPICS,
        corpus=config.corpus,
        seed=config.split_seed,
    )
    dataset = build_dataset(spec)
    return [f"sentence{i}" for i in range(len(dataset.sentences))], dataset.sentences, list(dataset.labels)


#: Built-in tasks (:data:`STUDY_TASKS`): name -> ``config -> (ids, texts, raw labels)``.
BUILT_IN_TASKS = {"articles": article_task, "cliques": cliques_task}
#: The default corpus's category of articles without one.
UNCATEGORIZED = "Uncategorized"
#: Prefix of an article's id in the articles task (its index in the corpus follows).
ARTICLE_ID = "article"


def arm_configs(config: LcTransferConfig, seed: int) -> dict[str, object]:
    """The trained arms' :class:`~sipt_lab.training.TrainConfig` for ``seed``: identical but for
    ``lambda_si`` (0 for ``lm``)."""
    sipt = replace(config.train, seed=seed)
    return {"lm": replace(sipt, lambda_si=0.0), "sipt": sipt}


def geometry_config(train, output_normalizes: bool) -> tuple[str, object]:
    """``(arm name, TrainConfig)`` of the geometry arm: ``train`` with ``L_SI`` on the other geometry
    than the one it trains on for an encoder whose output is normalised when ``output_normalizes``;
    a contrastive negative margin above the unit sphere's diameter is rescaled to it on normalised
    vectors, with the positive margin by the same factor."""
    from sipt_lab.core import names
    from sipt_lab.objectives.structure import UNIT_SPHERE_DIAMETER
    from sipt_lab.training.train_config import si_normalizes

    other = "raw" if si_normalizes(train, output_normalizes) else "normalised"
    changed = replace(train, si_geometry=other)
    if other == "normalised" and train.loss == "contrastive":
        params = {**names.LOSS_PARAMETERS["contrastive"], **train.loss_params}
        if params["neg_margin"] > UNIT_SPHERE_DIAMETER:
            factor = UNIT_SPHERE_DIAMETER / params["neg_margin"]
            changed = replace(changed, loss_params={key: value * factor for key, value in params.items()})
    return GEOMETRY_ARMS[other], changed


def train_arm(texts: list[str], graph: PretrainingGraph, train, source, watch=None, head_warmups=None, method=None):
    """:func:`~sipt_lab.training.pretrain` of one arm on the pre-training ``texts`` and ``graph``
    (``watch``: the loop's evaluations, :func:`validation_watch`; ``head_warmups``: the seed's
    fitted heads, :class:`~sipt_lab.training.head_warmups.HeadWarmups`; ``method``: a method's recipe)."""
    from sipt_lab.training import pretrain

    return pretrain(texts, graph, train, source, watch=watch, head_warmups=head_warmups, method=method)


def validation_watch(score: Scorer, train, trace: list[dict], **row):
    """The loop's evaluations of an arm, every ``train.eval_every`` steps (None when that is None):
    the study's metrics of the never-seen validation split (k-NN with neighbours from the
    fine-tuning train split, the probe fitted on train and scored on validation; the test split
    stays unseen until the arm is scored). Each evaluation appends ``row`` with ``step``,
    ``metric`` and ``value`` to ``trace``."""
    if train.eval_every is None:
        return None
    from sipt_lab.training import embed
    from sipt_lab.training.watch import Watch

    def factory(encoder, tokenizer):
        def evaluate(step: int) -> dict[str, float]:
            metrics = score.validation(embed(encoder, tokenizer, score.texts, device=train.device))
            trace.extend({**row, "step": step, "metric": name, "value": value} for name, value in metrics.items())
            return metrics

        return Watch(evaluate=evaluate)

    return factory


def study_source(config: LcTransferConfig):
    """The study's :class:`~sipt_lab.models.EncoderSource` (``init``, char size, pooling)."""
    from sipt_lab.models import encoder_preset, encoder_source

    return encoder_source(
        config.init, encoder_preset(config.encoder) if config.init == "char" else None, config.pooling
    )


@dataclass(frozen=True)
class StudySeed:
    """One cell of a study's grid: every trained arm of ``seed``."""

    study: LcTransferConfig
    seed: int


#: Keys of a :func:`study_seed` result; a stored result without them is recomputed.
SEED_KEYS = ("rows", "encoder_consistency")


def study_inputs(config: LcTransferConfig):
    """``(ids, texts, labels, splits, natural)``: the task, its splits and the task's own graph over
    the pre-training nodes (None without one), the same in every process; SiptError when that graph
    links no two pre-training samples."""
    ids, texts, labels, natural = study_task(config)
    splits = inductive_splits(labels, config.sizes, np.random.default_rng(config.split_seed))
    pt = pretraining_nodes(splits, config.protocol)
    if config.natural_graph is not None:
        natural = article_graph(config.natural_graph, [ids[i] for i in pt])
    elif natural is not None:
        natural = natural.subgraph(pt)
    if natural is not None and natural.n_edges == 0:
        raise SiptError(
            f"{config.edges or config.natural_graph} links no two pre-training samples; give a graph over the samples, "
            "or more pre-training samples"
        )
    return ids, texts, labels, splits, natural


class Scorer:
    """The never-seen samples of a study: their texts, and :func:`heldout_metrics` of vectors of them."""

    def __init__(self, config: LcTransferConfig, texts: list[str], labels: np.ndarray, splits: dict[str, np.ndarray]):
        new = np.concatenate([splits[name] for name in ("train", "validation", "test")])
        self.texts, self.labels, self.k = [texts[i] for i in new], labels[new], config.k
        self.positions = np.split(np.arange(new.size), np.cumsum([config.n_train, config.n_validation]))

    def __call__(self, vectors: np.ndarray) -> dict[str, float]:
        return heldout_metrics(vectors, self.labels, *self.positions, self.k)

    def encoder(self, encoder, tokenizer, config: LcTransferConfig, seed: int) -> dict[str, float]:
        """The metrics of ``encoder``'s vectors and, with ``config.finetune_epochs``, those of
        fine-tuning a copy of it (:func:`finetune_metrics`)."""
        from sipt_lab.training import embed

        metrics = self(embed(encoder, tokenizer, self.texts, device=config.train.device))
        if config.finetune_epochs:
            metrics |= finetune_metrics(encoder, tokenizer, self, config, seed)
        return metrics

    def validation(self, vectors: np.ndarray) -> dict[str, float]:
        """The same metrics on the validation rows (the probe's strength chosen on them too)."""
        train, validation, _ = self.positions
        return heldout_metrics(vectors, self.labels, train, validation, validation, self.k)


def finetune_metrics(encoder, tokenizer, score: Scorer, config: LcTransferConfig, seed: int) -> dict[str, float]:
    """Test accuracy and macro-F1 of a copy of ``encoder`` fine-tuned with a linear head on the
    never-seen train split (:func:`sipt_lab.training.finetune.finetune`, one learning rate,
    ``config.finetune_epochs`` passes at most, the best validation pass kept)."""
    import copy

    from sipt_lab.data.splits import Splits
    from sipt_lab.data.tasks import Task
    from sipt_lab.training.finetune import finetune
    from sipt_lab.training.train_config import FinetuneConfig

    train = config.train
    settings = FinetuneConfig(
        lrs=(config.finetune_lr,),
        epochs=config.finetune_epochs,
        batch_size=train.batch_size,
        max_len=train.max_len,
        device=train.device,
    )
    task = Task("study", "classification", np.arange(len(score.texts)), score.labels)
    splits = Splits(*score.positions)
    result = finetune(lambda: (copy.deepcopy(encoder), tokenizer), score.texts, task, splits, settings, seed)
    return {"finetune_accuracy": result.test["accuracy"], "finetune_macro_f1": result.test["macro_f1"]}


def study_seed(cell: StudySeed) -> dict:
    """The cell function: train and score the ``init``, ``lm``, ``sipt`` (one per dial level), the
    geometry arm (``config.geometry_arm``) and ``natural`` arms of one seed; ``{"rows": [...], "encoder_consistency": float}``.
    The trained arms share one new-head warm-up (:class:`~sipt_lab.training.head_warmups.HeadWarmups`)."""
    import torch

    from sipt_lab.experiments.pretrain_job import initial_embeddings
    from sipt_lab.graphs.consistency import local_consistency
    from sipt_lab.training.head_warmups import HeadWarmups

    config, seed = cell.study, cell.seed
    ids, texts, labels, splits, natural = study_inputs(config)
    source = study_source(config)
    pt = pretraining_nodes(splits, config.protocol)
    pt_texts, pt_labels = [texts[i] for i in pt], labels[pt]
    score = Scorer(config, texts, labels, splits)
    rows: list[dict] = []
    trace: list[dict] = []
    record = row_recorder(rows)
    targets = [dial_target_lc(pt_labels, q) for q in config.levels]
    warmups = HeadWarmups()

    def trained(name: str, graph: PretrainingGraph, train, level=None, method=None) -> dict[str, float]:
        watch = validation_watch(score, train, trace, arm=name, seed=seed, level=level)
        result = train_arm(pt_texts, graph, train, source, watch, warmups, method)
        return score.encoder(result.encoder, result.tokenizer, config, seed)

    trains = arm_configs(config, seed)
    tokenizer = source.tokenizer(pt_texts, config.train.max_len)
    init_pt = initial_embeddings(pt_texts, trains["lm"], source, tokenizer)
    own = encoder_consistency(init_pt, pt_labels, config.k)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        init_encoder, _ = source.encoder(tokenizer)
    record("init", seed, score.encoder(init_encoder, tokenizer, config, seed))
    graphs = [
        dial_graph(pt_labels, q, np.random.default_rng([config.split_seed, seed, level]))
        for level, q in enumerate(config.levels)
    ]
    lcs = [float(local_consistency(graph, pt_labels)) for graph in graphs]
    record("lm", seed, trained("lm", graphs[-1], trains["lm"]))
    for level, q in enumerate(config.levels):
        metrics = trained("sipt", graphs[level], trains["sipt"], level)
        record("sipt", seed, metrics, level, q, targets[level], lcs[level])
    if config.geometry_arm:
        arm, train = geometry_config(trains["sipt"], source.normalizes)
        top = int(np.argmax(config.levels))
        record(arm, seed, trained(arm, graphs[top], train, top), top, config.levels[top], targets[top], lcs[top])
    if natural is not None:
        lc = float(local_consistency(natural, pt_labels))
        record("natural", seed, trained("natural", natural, trains["sipt"]), lc=lc)
    if config.per_sample_arm is not None:
        from sipt_lab.experiments.per_sample_labels import method_labels
        from sipt_lab.training.methods import method_recipe, method_train_config

        arm = config.per_sample_arm
        train = method_train_config(arm, trains["sipt"])
        recipe = method_recipe(arm, labels=method_labels(arm, train, ids, pt))
        record(arm, seed, trained(arm, graphs[-1], train, method=recipe))
    return {"rows": rows, "encoder_consistency": own, "trace": trace}


def row_recorder(rows: list[dict]):
    """``record(arm, seed, metrics, level=None, q=None, target=None, lc=None)``: one row per metric into ``rows``."""

    def record(arm: str, seed, metrics: dict, level=None, q=None, target=None, lc=None) -> None:
        rows.extend(
            {
                "level": level,
                "q": q,
                "target_lc": target,
                "lc": lc,
                "arm": arm,
                "seed": seed,
                "metric": metric,
                "value": value,
            }
            for metric, value in metrics.items()
        )

    return record


def level_lines(rows: list[dict], metric: str) -> list[str]:
    """One line per seed and dial level: the level's measured LC and SIPT's ``metric``."""
    return [
        f"seed {row['seed']} q={row['q']:g} (LC {row['lc']:.3f}): {metric} SIPT {row['value']:.3f}"
        for row in rows
        if row["arm"] == "sipt" and row["metric"] == metric
    ]
