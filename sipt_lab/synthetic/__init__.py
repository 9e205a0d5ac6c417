"""Semi-synthetic graph families over topic-modelled sentences (the SIPT paper's Methods)."""

from sipt_lab.synthetic.builder import build_dataset, resolve_spec
from sipt_lab.synthetic.dataset import SyntheticDataset
from sipt_lab.synthetic.families import FAMILIES, family_names, get_family
from sipt_lab.synthetic.spec import Family, GraphSpec

__all__ = ["FAMILIES", "Family", "GraphSpec", "SyntheticDataset", "build_dataset", "family_names", "get_family",
           "resolve_spec"]
