"""What a graph family is (:class:`Family`); what a build is asked for, :class:`GraphSpec`, lives in
:mod:`~sipt_lab.synthetic.graph_spec` (re-exported here).

A family is plain data: its name, a builder ``(spec, corpus, topics, rng) -> SyntheticDataset``,
its default sizes and a one-line description. Each family module defines its entries; the table of
all of them is :data:`sipt_lab.synthetic.families.FAMILIES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sipt_lab.data.corpus import Corpus
from sipt_lab.data.topics import TopicAssignment
from sipt_lab.synthetic.dataset import SyntheticDataset
from sipt_lab.synthetic.graph_spec import MAX_NODES, MAX_SEED, MAX_TOPICS, GraphSpec

__all__ = ["MAX_NODES", "MAX_SEED", "MAX_TOPICS", "Builder", "Family", "GraphSpec"]

Builder = Callable[[GraphSpec, Corpus, TopicAssignment, np.random.Generator], SyntheticDataset]


@dataclass(frozen=True)
class Family:
    """A graph family.

    Attributes:
        name: the key of :data:`~sipt_lab.synthetic.families.FAMILIES` (``GraphSpec.family``).
        builder: ``(spec, corpus, topics, rng) -> SyntheticDataset`` for a resolved ``spec``.
        default_nodes: ``GraphSpec.n_nodes`` when the spec gives none.
        default_topics: ``GraphSpec.n_topics`` when the spec gives none.
        description: one line for listings.
    """

    name: str
    builder: Builder
    default_nodes: int
    default_topics: int
    description: str
