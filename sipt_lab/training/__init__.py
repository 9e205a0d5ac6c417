"""Graph-aware batches, the pre-training loop over one or many models, embedding and fine-tuning.

The names below load on first use (PEP 562), so that reading :mod:`sipt_lab.training.defaults`
(which the CLI's parser does) imports no torch.
"""

import importlib

_EXPORTS = {
    "NEGATIVE_SAMPLERS": "sampler",
    "PAIR_MODES": "sampler",
    "GraphBatchSampler": "sampler",
    "PretrainBatch": "sampler",
    "PretrainResult": "trainer",
    "embed": "embedding",
    "pretrain": "trainer",
    "pretrain_batched": "trainer",
    "BatchedRun": "trainer",
    "resolve_device": "runtime",
    "PRECISIONS": "train_config",
    "TrainConfig": "train_config",
    "steps_for_epochs": "train_config",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'sipt_lab.training' has no attribute {name!r}")
    return getattr(importlib.import_module(f"sipt_lab.training.{_EXPORTS[name]}"), name)
