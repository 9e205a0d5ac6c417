"""Graph-aware batches and the LM / SIPT pre-training loop."""

from sipt_lab.training.batches import PAIR_MODES, GraphBatchSampler, PretrainBatch
from sipt_lab.training.trainer import PretrainResult, TrainConfig, embed, pretrain, resolve_device

__all__ = ["PAIR_MODES", "GraphBatchSampler", "PretrainBatch", "PretrainResult", "TrainConfig", "embed", "pretrain", "resolve_device"]
