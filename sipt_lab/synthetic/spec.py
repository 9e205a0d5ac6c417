"""What a synthetic build is asked for (:class:`GraphSpec`) and what a graph family is (:class:`Family`).

A family is plain data: its name, a builder ``(spec, corpus, topics, rng) -> SyntheticDataset``,
its default sizes and a one-line description. Each family module defines its entries; the table of
all of them is :data:`sipt_lab.synthetic.families.FAMILIES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sipt_lab.core.errors import ConfigError
from sipt_lab.data.corpus import Corpus
from sipt_lab.data.topics import TopicAssignment
from sipt_lab.graphs.noise import NOISE_MODES
from sipt_lab.synthetic.dataset import SyntheticDataset

#: Largest accepted sizes, checked before anything is allocated: a build holds a few arrays of
#: ``n_nodes`` entries, and every seed must be a valid numpy and torch seed.
MAX_NODES = 1_000_000
MAX_TOPICS = 1_000
MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class GraphSpec:
    """What to build. ``None`` sizes mean "the family's default".

    Attributes:
        family: family name (a key of :data:`~sipt_lab.synthetic.families.FAMILIES`).
        n_nodes: number of pre-training samples (graph nodes).
        noise: edge-noise rate in [0, 1] (see :func:`sipt_lab.graphs.noise.add_noise`).
        noise_mode: ``"add"`` or ``"flip"``.
        seed: seeds every random choice of the build.
        n_heldout: held-out samples built the same way, never in pre-training.
        n_topics: LDA topic count; ``None`` uses the family's default.
        corpus: path of a user corpus; ``None`` uses the embedded default corpus.
    """

    family: str
    n_nodes: int | None = None
    noise: float = 0.0
    noise_mode: str = "add"
    seed: int = 0
    n_heldout: int = 20
    n_topics: int | None = None
    corpus: str | None = None

    def __post_init__(self) -> None:
        if self.n_nodes is not None and not 2 <= self.n_nodes <= MAX_NODES:
            raise ConfigError("GraphSpec.n_nodes", f"must be in [2, {MAX_NODES:,}], got {self.n_nodes:,}")
        if not 0 <= self.n_heldout <= MAX_NODES:
            raise ConfigError("GraphSpec.n_heldout", f"must be in [0, {MAX_NODES:,}], got {self.n_heldout:,}")
        if not 0 <= self.seed <= MAX_SEED:
            raise ConfigError("GraphSpec.seed", f"must be in [0, {MAX_SEED}], got {self.seed}")
        if not 0.0 <= self.noise <= 1.0:
            raise ConfigError("GraphSpec.noise", f"must be a probability in [0, 1], got {self.noise}")
        if self.noise_mode not in NOISE_MODES:
            raise ConfigError("GraphSpec.noise_mode", f"{self.noise_mode!r} is unknown; choose one of: {', '.join(NOISE_MODES)}")
        if self.n_topics is not None and not 2 <= self.n_topics <= MAX_TOPICS:
            raise ConfigError("GraphSpec.n_topics", f"must be in [2, {MAX_TOPICS}], got {self.n_topics}")

    @property
    def is_resolved(self) -> bool:
        """Whether the family's default sizes are filled in (see :func:`~sipt_lab.synthetic.builder.resolve_spec`)."""
        return self.n_nodes is not None and self.n_topics is not None


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
