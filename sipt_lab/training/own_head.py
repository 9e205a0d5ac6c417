"""A checkpoint's new MLM head fitted on the run's own samples, from token states computed once
(:func:`fit_head_on_states`).

A checkpoint without an MLM head (MiniLM, every sentence-transformers directory) gets a fresh one at
load time: a dense layer, a layer norm and an output bias, with the decoder tied to the input
embeddings (:func:`~sipt_lab.models.hf.load_hf_encoder`). The warm-up fits it with the encoder
frozen. What it learns is how to read the frozen token states of *these* samples back into the
vocabulary, and that depends on their language: a head fitted on English sentences reads French
ones worse than one fitted on French sentences (``benchmarks/bench_reference_head.py``), and its
larger MLM gradients then pull the warm start away from the run's own links. So the head is fitted
on the run's samples.

Because the encoder is frozen during the warm-up, its states at the masked positions of a batch do
not change from one warm-up step to the next: :func:`fit_head_on_states` encodes each masked batch
of one pass over the samples once (at most ``head_warmup`` batches, without gradients and without
dropout), keeps the states at the masked positions and their target ids, and fits the head on them
for ``head_warmup`` steps, cycling over the batches. The warm-up costs at most one forward pass over
the samples instead of ``head_warmup`` forward passes of a batch, and it draws nothing from the
run's random state (the masks are the run's sampler's, the head's initial values the loaded ones).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.objectives.mlm import masked_lm_loss
from sipt_lab.training.loop import frozen_except
from sipt_lab.training.sampler import MASK_UNITS, REPLACE_WITH_MASK, GraphBatchSampler
from sipt_lab.training.step import RunLoss, make_optimizer


def masked_states(model: nn.Module, loss: RunLoss, sampler, batches: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The frozen ``model``'s last-layer states at the masked positions of the seeds of the
    sampler's first ``batches`` batches, masked as the run masks them: one ``((M, H) states, (M,)
    target ids)`` pair per batch, computed without gradients in eval mode. ``loss`` is the run's
    :class:`~sipt_lab.training.step.RunLoss` (its token rows, mask id and device)."""
    was_training = model.training
    model.eval()
    cached = []
    try:
        with torch.no_grad():
            for k in range(batches):
                batch = sampler.batch(k)
                seeds, width = batch.nodes[: batch.n_seeds], batch.mask.shape[1]
                ids = loss.inputs.ids[torch.as_tensor(seeds), :width].to(loss.device)
                replacement = (
                    np.full(batch.mask.shape, REPLACE_WITH_MASK, dtype=np.int64)
                    if batch.replacement is None
                    else batch.replacement
                )
                positions, targets = loss.mask_inputs(ids, batch.mask, replacement)
                cached.append((model.hidden_states(ids).flatten(0, 1)[positions], targets))
    finally:
        model.train(was_training)
    return cached


def fit_head_on_states(
    model: nn.Module,
    heads: list[nn.Parameter],
    loss: RunLoss,
    sampler,
    config,
    log: Callable[[int, dict[str, float]], None] | None = None,
) -> str:
    """Fit ``heads`` (``model``'s new MLM head parameters) for ``config.head_warmup`` steps at the
    constant ``config.head_lr`` (AdamW, ``config.weight_decay``) on :func:`masked_states` of one
    pass over the samples (at most ``head_warmup`` of the sampler's batches), step ``k`` on batch
    ``k`` modulo their number, with every other parameter frozen, in fp32. ``log`` receives each
    step's loss as ``head_warmup/loss``. Returns the note for the log."""
    batches = min(config.head_warmup, sampler.steps_per_epoch)
    cached = masked_states(model, loss, sampler, batches)
    optimizer = make_optimizer(heads, config.head_lr, config.weight_decay, fused=False)
    losses = []
    with frozen_except(heads, model.parameters()):
        for k in range(config.head_warmup):
            states, targets = cached[k % batches]
            value = masked_lm_loss(model.head_logits(states), targets)
            optimizer.zero_grad(set_to_none=True)
            value.backward()
            optimizer.step()
            losses.append(float(value.detach()))
            if log is not None:
                log(k + 1, {"head_warmup/loss": losses[-1]})
    return (
        f"new MLM head fitted for {config.head_warmup} steps with the encoder frozen, on the states of "
        f"{batches * sampler.batch_size:,} samples encoded once: mlm loss {losses[0]:.3g} -> {losses[-1]:.3g}"
    )


def masking_sampler(tokenizer, texts: list[str], lengths, batch_size: int, config, seed: int) -> GraphBatchSampler:
    """Batches of ``batch_size`` of ``texts`` (``(n,)`` token ``lengths``) masked as ``config``
    masks, drawn with ``seed``, without graph partners (an MLM term only)."""
    return GraphBatchSampler(
        PretrainingGraph.from_edges([], [], len(texts)),
        lengths,
        batch_size,
        config.mask_prob,
        seed,
        suffix_tokens=tokenizer.suffix_tokens,
        mask_replacement=config.mask_replacement,
        vocab_size=tokenizer.vocab_size,
        units=MASK_UNITS[config.mask_unit](tokenizer, texts),
        reads_pairs=False,
    )
