"""One replicate of the study as a grid cell (:class:`StudySeed`, :func:`study_seed`): a seed's arms
on one split seed's splits, trained and scored on the never-seen samples, each arm from the same start."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.evaluation.heldout import encoder_consistency, heldout_metrics
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.studies.lc.config import GEOMETRY_ARMS, LcTransferConfig
from sipt_lab.studies.lc.dial import dial_groups, dial_target_lc, grouped_splits, pretraining_nodes
from sipt_lab.studies.lc.tasks import StudyTask, article_graph, study_task


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
    from sipt_lab.objectives import names
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
    """One cell of a study's grid: every trained arm of ``seed`` on the splits of ``split_seed``."""

    study: LcTransferConfig
    split_seed: int
    seed: int


#: Keys of a :func:`study_seed` result; a stored result without them is recomputed.
SEED_KEYS = ("rows", "encoder_consistency")


def study_inputs(
    config: LcTransferConfig, split_seed: int
) -> tuple[StudyTask, dict[str, np.ndarray], PretrainingGraph | None]:
    """``(task, splits, natural)``: the task of ``split_seed``, its grouped splits and the task's own
    graph over the pre-training nodes (None without one), the same in every process; SiptError when
    that graph links no two pre-training samples."""
    task = study_task(config, split_seed)
    splits = grouped_splits(task.labels, task.groups, config.sizes, np.random.default_rng(split_seed), task.pretrain)
    pt = pretraining_nodes(splits, config.protocol)
    natural = task.natural
    if config.natural_graph is not None:
        natural = article_graph(config.natural_graph, [task.ids[i] for i in pt])
    elif natural is not None:
        natural = natural.subgraph(pt)
    if natural is not None and natural.n_edges == 0:
        raise SiptError(
            f"{config.edges or config.natural_graph} links no two pre-training samples; give a graph over the samples, "
            "or more pre-training samples"
        )
    return task, splits, natural


class Scorer:
    """The never-seen samples of a study: their texts, and :func:`heldout_metrics` of vectors of them."""

    def __init__(self, config: LcTransferConfig, texts: list[str], labels: np.ndarray, splits: dict[str, np.ndarray]):
        new = np.concatenate([splits[name] for name in ("train", "validation", "test")])
        self.texts, self.labels, self.k = [texts[i] for i in new], labels[new], config.k
        self.positions = np.split(np.arange(new.size), np.cumsum([config.n_train, config.n_validation]))

    def __call__(self, vectors: np.ndarray) -> dict[str, float]:
        return heldout_metrics(vectors, self.labels, *self.positions, self.k)

    def encoder(self, encoder, tokenizer, config: LcTransferConfig, seed: int) -> tuple[dict[str, float], np.ndarray]:
        """The metrics of ``encoder``'s vectors and, with ``config.finetune_epochs``, those of
        fine-tuning a copy of it (:func:`finetune_metrics`); and the ``(n, H)`` vectors."""
        from sipt_lab.training import embed

        vectors = embed(encoder, tokenizer, self.texts, device=config.train.device)
        metrics = self(vectors)
        if config.finetune_epochs:
            metrics |= finetune_metrics(encoder, tokenizer, self, config, seed)
        return metrics, vectors

    def with_references(self, vectors: np.ndarray, extra: np.ndarray, extra_labels: np.ndarray) -> dict[str, float]:
        """The metrics of ``(n, H)`` ``vectors`` with ``(m, H)`` ``extra`` vectors and their ``(m,)``
        labels added to the k-NN references and the probe's training data (the labels-direct arms)."""
        train, validation, test = self.positions
        added = len(self.labels) + np.arange(len(extra_labels))
        return heldout_metrics(
            np.vstack([vectors, extra]),
            np.concatenate([self.labels, extra_labels]),
            np.concatenate([train, added]),
            validation,
            test,
            self.k,
        )

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
    geometry arm (``config.geometry_arm``), ``natural`` and per-sample arms of one seed on one split
    seed's splits, and per level the labels-direct arms ``init+labels`` and ``lm+labels`` (the
    encoder's vectors of the pre-training samples and their dial labels added to the references);
    ``{"rows": [...], "encoder_consistency": float, "trace": [...]}``. The trained arms share one
    new-head warm-up (:class:`~sipt_lab.training.head_warmups.HeadWarmups`)."""
    import torch

    from sipt_lab.graphs.consistency import local_consistency
    from sipt_lab.training import embed
    from sipt_lab.training.head_warmups import HeadWarmups

    config, seed = cell.study, cell.seed
    task, splits, natural = study_inputs(config, cell.split_seed)
    source = study_source(config)
    pt = pretraining_nodes(splits, config.protocol)
    pt_texts, pt_labels = [task.texts[i] for i in pt], task.labels[pt]
    score = Scorer(config, task.texts, task.labels, splits)
    rows: list[dict] = []
    trace: list[dict] = []
    record = row_recorder(rows, cell.split_seed, seed)
    targets = [dial_target_lc(pt_labels, q) for q in config.levels]
    warmups = HeadWarmups()
    groups = [
        dial_groups(pt_labels, q, np.random.default_rng([cell.split_seed, seed, level]))
        for level, q in enumerate(config.levels)
    ]
    graphs = [PretrainingGraph.from_groups(labels) for labels in groups]
    lcs = [float(local_consistency(graph, pt_labels)) for graph in graphs]

    def trained(name: str, graph: PretrainingGraph, train, level=None, method=None):
        watch = validation_watch(score, train, trace, arm=name, split_seed=cell.split_seed, seed=seed, level=level)
        return train_arm(pt_texts, graph, train, source, watch, warmups, method)

    def with_labels(name: str, encoder, tokenizer, vectors: np.ndarray) -> None:
        pt_vectors = embed(encoder, tokenizer, pt_texts, device=config.train.device)
        for level, q in enumerate(config.levels):
            metrics = score.with_references(vectors, pt_vectors, groups[level])
            record(f"{name}+labels", metrics, level, q, targets[level], lcs[level])
        return pt_vectors

    trains = arm_configs(config, seed)
    tokenizer = source.tokenizer(pt_texts, config.train.max_len)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        init_encoder, _ = source.encoder(tokenizer)
    metrics, vectors = score.encoder(init_encoder, tokenizer, config, seed)
    record("init", metrics)
    own = encoder_consistency(with_labels("init", init_encoder, tokenizer, vectors), pt_labels, config.k)
    lm = trained("lm", graphs[-1], trains["lm"])
    metrics, vectors = score.encoder(lm.encoder, lm.tokenizer, config, seed)
    record("lm", metrics)
    with_labels("lm", lm.encoder, lm.tokenizer, vectors)
    for level, q in enumerate(config.levels):
        result = trained("sipt", graphs[level], trains["sipt"], level)
        record(
            "sipt",
            score.encoder(result.encoder, result.tokenizer, config, seed)[0],
            level,
            q,
            targets[level],
            lcs[level],
        )
    if config.geometry_arm:
        arm, train = geometry_config(trains["sipt"], source.normalizes)
        top = int(np.argmax(config.levels))
        result = trained(arm, graphs[top], train, top)
        metrics = score.encoder(result.encoder, result.tokenizer, config, seed)[0]
        record(arm, metrics, top, config.levels[top], targets[top], lcs[top])
    if natural is not None:
        lc = float(local_consistency(natural, pt_labels))
        result = trained("natural", natural, trains["sipt"])
        record("natural", score.encoder(result.encoder, result.tokenizer, config, seed)[0], lc=lc)
    if config.per_sample_arm is not None:
        from sipt_lab.jobs.per_sample_labels import method_labels
        from sipt_lab.training.defaults import method_train_config
        from sipt_lab.training.methods import method_recipe

        arm = config.per_sample_arm
        train = method_train_config(arm, trains["sipt"])
        recipe = method_recipe(arm, labels=method_labels(arm, train, task.ids, pt))
        result = trained(arm, graphs[-1], train, method=recipe)
        record(arm, score.encoder(result.encoder, result.tokenizer, config, seed)[0])
    return {"rows": rows, "encoder_consistency": own, "trace": trace}


def row_recorder(rows: list[dict], split_seed: int | None, seed: int | None):
    """``record(arm, metrics, level=None, q=None, target=None, lc=None)``: one row per metric of
    ``split_seed`` and ``seed`` (None for the TF-IDF reference's seed) into ``rows``."""

    def record(arm: str, metrics: dict, level=None, q=None, target=None, lc=None) -> None:
        rows.extend(
            {
                "level": level,
                "q": q,
                "target_lc": target,
                "lc": lc,
                "arm": arm,
                "split_seed": split_seed,
                "seed": seed,
                "metric": metric,
                "value": value,
            }
            for metric, value in metrics.items()
        )

    return record


def level_lines(rows: list[dict], metric: str) -> list[str]:
    """One line per replicate and dial level: the level's measured LC and SIPT's ``metric``."""
    return [
        f"split {row['split_seed']} seed {row['seed']} q={row['q']:g} (LC {row['lc']:.3f}): {metric} SIPT {row['value']:.3f}"
        for row in rows
        if row["arm"] == "sipt" and row["metric"] == metric
    ]
