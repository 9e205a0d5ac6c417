"""Graph-aware batches, the pre-training loop over one or many models, embedding and fine-tuning.

The names below load on first use (PEP 562), so that reading :mod:`sipt_lab.training.defaults`
(which the CLI's parser does) imports no torch.
"""

from sipt_lab.core.exports import lazy_getattr

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

__getattr__ = lazy_getattr(__name__, _EXPORTS)
