"""Semi-synthetic graph families over topic-modelled sentences (the SIPT paper's Methods).

The names below are imported on first use, so that :mod:`sipt_lab.synthetic.graph_spec` (which the
CLI's parser reads) loads without the families and scikit-learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sipt_lab.core.exports import lazy_getattr

#: Exported name -> the module of this package that defines it.
_EXPORTS = {
    "build_dataset": "builder",
    "resolve_spec": "builder",
    "SyntheticDataset": "dataset",
    "FAMILIES": "families",
    "family_names": "families",
    "get_family": "families",
    "Family": "spec",
    "GraphSpec": "graph_spec",
}

__all__ = [
    "FAMILIES",
    "Family",
    "GraphSpec",
    "SyntheticDataset",
    "build_dataset",
    "family_names",
    "get_family",
    "resolve_spec",
]

if TYPE_CHECKING:  # pragma: no cover
    from sipt_lab.synthetic.builder import build_dataset, resolve_spec
    from sipt_lab.synthetic.dataset import SyntheticDataset
    from sipt_lab.synthetic.families import FAMILIES, family_names, get_family
    from sipt_lab.synthetic.graph_spec import GraphSpec
    from sipt_lab.synthetic.spec import Family

__getattr__ = lazy_getattr(__name__, _EXPORTS)
