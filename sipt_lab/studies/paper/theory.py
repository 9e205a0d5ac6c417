"""Checks of the paper's theory by running it: an oracle SIPT embedder and Corollary 1.

Theorem 1 is about an embedder that reaches the optimum of ``L_SI``; a transformer trained for a
few hundred steps only approaches it. :func:`oracle_embeddings` removes the encoder: it optimises
``L_SI`` directly over one free vector per node, so its nearest-neighbour accuracy shows what the
bound predicts without encoder limits. :func:`corollary1_experiment` builds a label-clique PT
graph from one labelling, measures the oracle's NN accuracy on another labelling and compares it
with the Corollary 1 bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sipt_lab.evaluation import loo_knn, radius_terms
from sipt_lab.graphs.consistency import corollary1_bound, local_consistency
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.objectives.structure import get_structure_loss
from sipt_lab.training.sampler import sampled_pairs


def oracle_embeddings(
    graph: PretrainingGraph,
    *,
    dim: int = 16,
    steps: int = 500,
    lr: float = 0.1,
    loss: str = "contrastive",
    seed: int = 0,
    **loss_params: float,
) -> np.ndarray:
    """``(n, dim)`` float32 free node vectors trained on ``L_SI`` alone (no encoder, no LM).

    Every step uses all nodes as seeds, with one uniformly drawn neighbour and non-neighbour each
    (the trainer's sampling), and takes an Adam step on the structure-inducing loss ``loss``.
    """
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    z = torch.nn.Parameter(0.1 * torch.randn(graph.n_nodes, dim, generator=generator))
    optimizer = torch.optim.Adam([z], lr=lr)
    pair_loss = get_structure_loss(loss)
    nodes = np.arange(graph.n_nodes)
    for _ in range(steps):
        # every node is a seed, so rows are node ids
        positive, negative = (
            torch.from_numpy(pairs)
            for pairs in sampled_pairs(
                graph, nodes, graph.sample_positives(nodes, rng), graph.sample_negatives(nodes, rng)
            )
        )
        value = pair_loss(z, positive[:, 0], positive[:, 1], negative[:, 0], negative[:, 1], **loss_params)
        optimizer.zero_grad()
        value.backward()
        optimizer.step()
    return z.detach().numpy().astype(np.float32)


@dataclass(frozen=True)
class BoundCheck:
    """One measured nearest-neighbour accuracy next to the bound the theory gives for it.

    Attributes:
        bound: the labels' local consistency over the PT graph (Theorem 1); over a label-clique
            graph that is Corollary 1's bound (:func:`~sipt_lab.graphs.consistency.corollary1_bound`).
        nn_accuracy, nn_auroc: the oracle embedder's LOO k-NN accuracy and macro AUROC.
    """

    bound: float
    nn_accuracy: float
    nn_auroc: float


@dataclass(frozen=True)
class Theorem1Check(BoundCheck):
    """:class:`BoundCheck` plus Theorem 1 as stated: how well the best radius recovers ``G_PT`` from
    the oracle's embeddings (``radius_f1``; 1 is the validity condition) and the LOO r-NN accuracy
    at that radius (``radius_nn_accuracy``, over the ``radius_nn_coverage`` fraction of samples
    with a neighbour within it), which equals LC when ``radius_f1`` is 1."""

    radius_f1: float = float("nan")
    radius_nn_accuracy: float = float("nan")
    radius_nn_coverage: float = float("nan")


def theorem1_check(
    graph: PretrainingGraph, labels: np.ndarray, *, k: int = 3, seed: int = 0, **oracle_options
) -> Theorem1Check:
    """Oracle embedder on ``graph``; its LOO ``k``-NN accuracy on ``labels`` and its r-NN accuracy at
    the radius best recovering ``graph``, vs ``LC_G(labels)``."""
    z = oracle_embeddings(graph, seed=seed, **oracle_options)
    scores = loo_knn(z, labels, k)
    terms = radius_terms(z, graph, labels)
    return Theorem1Check(
        local_consistency(graph, labels),
        scores.accuracy,
        scores.auroc,
        terms["radius_f1"],
        terms["radius_nn_accuracy"],
        terms["radius_nn_coverage"],
    )


def corollary1_experiment(
    pt_labels: np.ndarray, ft_labels: np.ndarray, *, k: int = 3, seed: int = 0, **oracle_options
) -> BoundCheck:
    """Label-clique PT graph from ``pt_labels``; the oracle's NN accuracy on ``ft_labels``.

    Corollary 1: that accuracy is at most the probability that a node's FT label equals the
    majority FT label of its PT clique (:func:`sipt_lab.graphs.consistency.corollary1_bound`).
    """
    graph = PretrainingGraph.from_groups(pt_labels)
    scores = loo_knn(oracle_embeddings(graph, seed=seed, **oracle_options), ft_labels, k)
    return BoundCheck(corollary1_bound(pt_labels, ft_labels), scores.accuracy, scores.auroc)


def correlated_labels(
    pt_labels: np.ndarray, n_ft_classes: int, agreement: float, rng: np.random.Generator
) -> np.ndarray:
    """FT labels that follow ``pt_labels`` (class ``c`` -> ``c mod n_ft_classes``) with probability
    ``agreement`` and are uniformly random otherwise: a knob for the PT/FT task correlation."""
    follow = rng.random(len(pt_labels)) < agreement
    return np.where(follow, np.asarray(pt_labels) % n_ft_classes, rng.integers(0, n_ft_classes, len(pt_labels)))
