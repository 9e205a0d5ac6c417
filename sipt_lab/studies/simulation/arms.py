"""One seed of a semi-synthetic experiment: train each arm, embed, score; the grid's cell function.

For each seed: build the family's dataset (:func:`sipt_lab.synthetic.build_dataset`), pre-train the
same encoder once per method on the same batches and masks (``lm``: ``λ_SI = 0``; ``sipt``: the
configured ``λ_SI``; ...), embed the pre-training and held-out sentences, and score each arm by
leave-one-out 3-NN AUROC (the paper's protocol), held-out 3-NN AUROC and link retrieval on G_PT.
Theorem 1 predicts SIPT's nearest-neighbour accuracy approaches at least the topic task's local
consistency over G_PT, which is reported next to the scores. :func:`simulate_seed` is the cell
function of every grid of seeds (``simulate``, the paper's figures, the benchmarks).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from sipt_lab.data.splits import random_splits
from sipt_lab.data.tasks import Task
from sipt_lab.evaluation import heldout_knn, link_retrieval_metrics, loo_knn, radius_terms
from sipt_lab.evaluation.concept_probe import concept_probe
from sipt_lab.jobs.per_sample_labels import method_labels
from sipt_lab.models import CharInit
from sipt_lab.models.tokenizer import unigram_entropy
from sipt_lab.studies.simulation.config import SimulationConfig
from sipt_lab.synthetic import SyntheticDataset, build_dataset
from sipt_lab.training import TrainConfig, embed, pretrain
from sipt_lab.training.defaults import method_train_config
from sipt_lab.training.finetune import copies_of, finetune
from sipt_lab.training.methods import Teacher, get_method, method_recipe, relation_accuracy
from sipt_lab.training.trainer import PretrainResult

#: Keys of a :func:`simulate_seed` result; a stored result without them is recomputed.
SEED_RESULT_KEYS = ("graph", "seed", "noise", "local_consistency", "n_nodes", "n_edges", "n_classes", "methods")


@dataclass
class ArmOutput:
    """One arm's trained embeddings and scores.

    Attributes:
        embeddings: ``(n, H)`` pre-training sample embeddings.
        heldout_embeddings: ``(h, H)`` held-out sample embeddings.
        metrics: ``auroc``, ``accuracy`` (LOO 3-NN), ``heldout_auroc``, ``heldout_accuracy``,
            ``link`` (LRAP, nDCG, AP, MRR), Theorem 1's ``radius``, ``radius_f1``,
            ``radius_nn_accuracy``, ``radius_nn_coverage`` (:func:`~sipt_lab.evaluation.radius_terms`),
            ``finetune`` (when the config fine-tunes: :func:`finetune_arm`'s test metrics),
            ``final_loss`` and ``final_terms`` (the total and each term by name, e.g. ``mlm``, ``si``:
            means of the last 20 steps; MLM in nats), ``unigram_entropy`` (the MLM loss of a
            context-free predictor on the same tokens, nats) and ``seconds``.
    """

    embeddings: np.ndarray
    heldout_embeddings: np.ndarray
    metrics: dict[str, Any]


def simulate_seed(config: SimulationConfig) -> dict[str, Any]:
    """The cell function: one seed, every arm; a JSON-able dict with :data:`SEED_RESULT_KEYS`."""
    dataset = build_dataset(config.graph)
    return seed_result(config, dataset, run_arms(dataset, config))


def run_arms(dataset: SyntheticDataset, config: SimulationConfig) -> dict[str, ArmOutput]:
    """Pre-train and evaluate each of ``config.methods`` on ``dataset`` (paired: same seed, same
    seeds per step, same steps). The MLSM family's teacher is the ``lm`` arm, trained first (and
    not reported when ``lm`` is not among the methods)."""
    outputs, teacher = {}, None
    needs_teacher = any(get_method(name).needs_teacher for name in config.methods)
    order = (["lm"] if needs_teacher else []) + [
        name for name in config.methods if not (needs_teacher and name == "lm")
    ]
    for arm in order:
        start = time.perf_counter()
        ids = [str(node) for node in range(dataset.n_nodes)]  # a synthetic sample's id is its node number
        recipe = method_recipe(
            arm, teacher, config.concepts, method_labels(arm, arm_config(config, arm), ids, skip_unknown=True)
        )
        result = pretrain(
            dataset.sentences,
            dataset.graph,
            arm_config(config, arm),
            CharInit(config.encoder, config.tokenizer),
            method=recipe,
        )
        if arm == "lm" and needs_teacher:
            teacher = Teacher(result.encoder, result.tokenizer)
        output = evaluate_arm(dataset, config, result, time.perf_counter() - start)
        output.metrics.update(_method_metrics(arm, result, recipe, teacher, dataset))
        if arm in config.methods:
            outputs[arm] = output
    return {arm: outputs[arm] for arm in config.methods}


def _method_metrics(arm: str, result, recipe, teacher: Teacher | None, dataset: SyntheticDataset) -> dict[str, Any]:
    """What only some methods report: LinkBERT's relation accuracy on fresh pairs; for the MLSM
    family the concept codes' sparsity and the concept -> vocabulary probe against the teacher's MLM."""
    if "drp" in result.objectives:
        sampler = recipe.plan_sampler(dataset.sentences, dataset.graph, result.tokenizer, result.config)
        return {"drp": relation_accuracy(result.encoder, result.objectives["drp"], sampler)}
    if "concepts" in result.objectives:
        ids, lengths = result.tokenizer.encode(dataset.sentences)
        probe = concept_probe(
            result.encoder,
            teacher.encoder,
            ids,
            lengths,
            result.tokenizer.vocab_size,
            result.tokenizer.mask_id,
            seed=result.config.seed,
        )
        return {"concepts": dict(result.objectives["concepts"].targets.stats), "probe": probe}
    return {}


def finetune_arm(dataset: SyntheticDataset, config: SimulationConfig, result: PretrainResult) -> dict[str, float]:
    """Test metrics (accuracy, macro-F1) of full fine-tuning of a trained arm under
    ``config.finetune`` on the topic task, over random 80/10/10 splits of the pre-training samples
    drawn with the seed (the same for every arm), from a copy of the arm's encoder."""
    task = Task("topic", "classification", np.arange(len(dataset.sentences)), dataset.labels)
    splits = random_splits(task.samples, seed=config.graph.seed)
    return finetune(
        copies_of(result.encoder, result.tokenizer), dataset.sentences, task, splits, config.finetune, config.graph.seed
    ).test


def arm_config(config: SimulationConfig, arm: str) -> TrainConfig:
    """The training config of method ``arm`` (:func:`~sipt_lab.training.defaults.method_train_config`: e.g.
    ``λ_SI = 0`` for ``lm``, the config's for ``sipt``)."""
    return method_train_config(arm, config.train)


def evaluate_arm(
    dataset: SyntheticDataset, config: SimulationConfig, result: PretrainResult, seconds: float
) -> ArmOutput:
    """Embed the pre-training and held-out sentences with a trained arm and score them; ``seconds``
    is the arm's training time, recorded with the embedding time added (as ``metrics["seconds"]``)."""
    start = time.perf_counter()
    z = embed(result.encoder, result.tokenizer, dataset.sentences)
    z_heldout = embed(result.encoder, result.tokenizer, dataset.heldout_sentences)
    seconds += time.perf_counter() - start
    loo = loo_knn(z, dataset.labels, config.k)
    metrics: dict[str, Any] = {
        "auroc": loo.auroc,
        "accuracy": loo.accuracy,
        "link": link_retrieval_metrics(z, dataset.graph, config.link_queries, rng=config.graph.seed),
        **radius_terms(z, dataset.graph, dataset.labels),
        "final_loss": float(np.mean(result.history["loss"][-20:])),
        "final_terms": {
            term: float(np.mean(values[-20:])) for term, values in result.history.items() if term not in ("loss", "lr")
        },
        "unigram_entropy": unigram_entropy(*result.tokenizer.encode(dataset.sentences), result.tokenizer.suffix_tokens),
        "seconds": seconds,
    }
    if len(dataset.heldout_sentences) and len(np.unique(dataset.heldout_labels)) > 1:
        heldout = heldout_knn(z, dataset.labels, z_heldout, dataset.heldout_labels, config.k)
        metrics.update(heldout_auroc=heldout.auroc, heldout_accuracy=heldout.accuracy)
    if config.finetune is not None:
        metrics["finetune"] = finetune_arm(dataset, config, result)
    return ArmOutput(z, z_heldout, metrics)


def seed_result(config: SimulationConfig, dataset: SyntheticDataset, arms: dict[str, ArmOutput]) -> dict[str, Any]:
    """A seed's JSON-able cell result: the dataset's sizes and LC, and each arm's metrics."""
    return {**seed_fields(config, dataset), "methods": {arm: output.metrics for arm, output in arms.items()}}


def seed_fields(config: SimulationConfig, dataset: SyntheticDataset) -> dict[str, Any]:
    """What a seed's cell result says besides its arms' metrics: the condition, the dataset's sizes and LC."""
    return {
        "graph": config.graph.family,
        "seed": config.graph.seed,
        "noise": config.graph.noise,
        "local_consistency": dataset.local_consistency,
        "n_nodes": dataset.graph.n_nodes,
        "n_edges": dataset.graph.n_edges,
        "n_classes": int(np.unique(dataset.labels).size),
    }
