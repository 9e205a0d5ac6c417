"""Semi-synthetic graph families over topic-modelled sentences (the SIPT paper's Methods)."""

from sipt_lab.synthetic.dataset import SyntheticDataset
from sipt_lab.synthetic.registry import GraphSpec, build_dataset, family_names, register_family

__all__ = ["GraphSpec", "SyntheticDataset", "build_dataset", "family_names", "register_family"]
