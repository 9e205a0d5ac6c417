"""Graph-aware batches and the LM / SIPT pre-training loop."""

from sipt_lab.training.batches import GraphBatchSampler, PretrainBatch
from sipt_lab.training.trainer import PretrainResult, TrainConfig, embed, pretrain, resolve_device

__all__ = ["GraphBatchSampler", "PretrainBatch", "PretrainResult", "TrainConfig", "embed", "pretrain", "resolve_device"]
