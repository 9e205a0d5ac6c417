"""Graph-aware batches and the LM / SIPT pre-training loop."""

from sipt_lab.training.batches import NEGATIVE_SAMPLERS, PAIR_MODES, GraphBatchSampler, PretrainBatch
from sipt_lab.training.trainer import PRECISIONS, PretrainResult, TrainConfig, embed, pretrain, resolve_device, steps_for_epochs

__all__ = ["NEGATIVE_SAMPLERS", "PAIR_MODES", "PRECISIONS", "steps_for_epochs", "GraphBatchSampler", "PretrainBatch", "PretrainResult", "TrainConfig", "embed", "pretrain", "resolve_device"]
