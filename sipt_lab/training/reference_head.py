"""An init's new MLM head, fitted once on a fixed reference corpus (:func:`fit_reference_head`).

A checkpoint without an MLM head (MiniLM, every sentence-transformers directory) gets a fresh one at
load time: a dense layer, a layer norm and an output bias, with the decoder tied to the input
embeddings (:func:`~sipt_lab.models.hf.load_hf_encoder`). The warm-up fits it with the encoder
frozen, so what it learns is how to read the init's frozen token states back into the init's own
vocabulary: a property of the init, not of a run's samples. ``pretrain`` therefore fits it on
:func:`reference_texts` (a fixed, seeded draw of :data:`REFERENCE_SENTENCES` sentences of the
offline English vital-article summaries, :func:`~sipt_lab.data.corpus.load_default_corpus`), with
its own batches and its own random stream (:data:`REFERENCE_SEED`), never the run's: one head
serves every run of that init and those warm-up settings, whatever its samples, seed, batch size,
device or precision, and a run trains the same whether it fitted the head or loaded it.

:func:`reference_head_key` names such a head: the init's weights (their SHA-256), the warm-up
settings in :data:`REFERENCE_FIELDS` and :func:`reference_identity`.
:class:`~sipt_lab.training.head_warmups.HeadWarmups` (``reference=True``) keeps it under that key
in the cache, and finds the head shipped for the offline default init in the package.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from functools import lru_cache

import numpy as np
import torch
from torch import nn

from sipt_lab.data.corpus import load_default_corpus
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.objectives import Objective
from sipt_lab.training.inputs import encoder_inputs
from sipt_lab.training.loop import fit_heads
from sipt_lab.training.sampler import MASK_UNITS, GraphBatchSampler
from sipt_lab.training.step import ModelStep, RunLoss

#: Sentences drawn from the default corpus for the reference fit, and the seed of that draw, of its
#: batches and masks, of the head's random initial values and of its dropout.
REFERENCE_SENTENCES = 4096
REFERENCE_SEED = 0
#: Seeds per warm-up step and tokens per sentence of the reference fit (capped at the init's own length).
REFERENCE_BATCH = 32
REFERENCE_MAX_LEN = 128
#: TrainConfig fields the reference fit reads: the masking the head learns to undo and its optimiser.
REFERENCE_FIELDS = ("mask_prob", "mask_replacement", "mask_unit", "weight_decay", "head_warmup", "head_lr")


@lru_cache(maxsize=1)
def reference_texts() -> tuple[str, ...]:
    """The reference corpus: :data:`REFERENCE_SENTENCES` distinct default-corpus sentences drawn
    with :data:`REFERENCE_SEED`, in corpus order."""
    sentences = load_default_corpus().sentences
    rows = np.random.default_rng(REFERENCE_SEED).choice(len(sentences), REFERENCE_SENTENCES, replace=False)
    return tuple(sentences[row] for row in np.sort(rows))


def reference_identity() -> dict:
    """What identifies the reference fit's data: the corpus, the draw (by the SHA-256 of its
    sentences, so a change in the corpus or its sentence rule makes a new key) and its batches."""
    texts = reference_texts()
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()
    return {
        "corpus": load_default_corpus().source,
        "sentences": len(texts),
        "sha256": digest,
        "seed": REFERENCE_SEED,
        "batch_size": REFERENCE_BATCH,
        "max_len": REFERENCE_MAX_LEN,
    }


def reference_head_key(config, described: dict) -> str:
    """The key of the head a reference fit gives: the init (its weights' SHA-256 when its
    description has one, wherever the checkpoint lies; else the whole description),
    ``config``'s :data:`REFERENCE_FIELDS` and :func:`reference_identity` (JSON)."""
    init = {"sha256": described["sha256"]} if "sha256" in described else described
    fields = {name: getattr(config, name) for name in REFERENCE_FIELDS}
    return json.dumps(["reference MLM head", init, fields, reference_identity()], sort_keys=True, default=str)


def fit_reference_head(
    model: nn.Module,
    source,
    heads: list[nn.Parameter],
    objectives: list[tuple[float, Objective]],
    config,
    device: torch.device,
    log: Callable[[int, dict[str, float]], None] | None = None,
) -> str:
    """Fit ``heads`` (``model``'s new MLM head parameters) for ``config.head_warmup`` steps of
    :func:`~sipt_lab.training.loop.fit_heads` on :func:`reference_texts`, with ``model``'s other
    parameters frozen, in fp32 on ``device``, reading ``objectives`` (the run's MLM term). ``source``
    is the init's encoder source (it tokenises the reference sentences). The head's random values
    are drawn again and the fit runs on a random stream of its own (:data:`REFERENCE_SEED`): the
    result does not depend on the run's seed, and the run's random state is as it was before.
    Returns the note for the log."""
    texts = list(reference_texts())
    tokenizer = source.tokenizer(texts, min(source.input_defaults()["max_len"], REFERENCE_MAX_LEN))
    inputs = encoder_inputs(tokenizer, texts, device)
    sampler = masking_sampler(tokenizer, texts, inputs.lengths, REFERENCE_BATCH, config, REFERENCE_SEED)
    step = ModelStep(model, RunLoss(inputs, None, objectives, device))
    cuda_devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda_devices):
        torch.manual_seed(REFERENCE_SEED)
        _draw_again(model, heads)
        note = fit_heads(
            heads, step, sampler, dataclasses.replace(config, batch_size=REFERENCE_BATCH), "new MLM head", log
        )
    return f"{note} (on {len(texts):,} reference sentences of the default corpus)"


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


def _draw_again(model: nn.Module, heads: list[nn.Parameter]) -> None:
    """Draw the heads' random values (their matrices: N(0, the checkpoint's initializer_range), as
    ``transformers`` initialises a linear layer) from the current random state; their vectors (a
    layer norm's 1 and 0, zero biases) are the same at every load."""
    config = getattr(getattr(model, "model", None), "config", None)
    std = float(getattr(config, "initializer_range", 0.02))
    with torch.no_grad():
        for parameter in heads:
            if parameter.dim() > 1:
                parameter.normal_(0.0, std)
