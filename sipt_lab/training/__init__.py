"""Graph-aware batches and the LM / SIPT pre-training loop."""

from sipt_lab.training.batches import PAIR_MODES, GraphBatchSampler, PretrainBatch
from sipt_lab.training.trainer import PRECISIONS, PretrainResult, TrainConfig, embed, pretrain, resolve_device, steps_for_epochs

__all__ = ["PAIR_MODES", "PRECISIONS", "steps_for_epochs", "GraphBatchSampler", "PretrainBatch", "PretrainResult", "TrainConfig", "embed", "pretrain", "resolve_device"]
