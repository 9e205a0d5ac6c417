"""Graph families by name, and the one function that builds any of them.

A family is a builder ``(spec, corpus, topics, rng) -> SyntheticDataset`` registered with
:func:`register_family`. :func:`build_dataset` does the parts every family shares: validating the
request, loading the corpus, fitting (or loading) the topic model with the family's topic count,
and adding edge noise.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from sipt_lab.data.corpus import Corpus, check_corpus_path, load_corpus
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.graphs.graph import NOISE_MODES, add_noise
from sipt_lab.synthetic.dataset import SyntheticDataset
from sipt_lab.data.topics import TopicAssignment, TopicConfig, fit_topics


#: Largest accepted sizes, checked before anything is allocated: a build holds a few arrays of
#: ``n_nodes`` entries, and every seed must be a valid numpy and torch seed.
MAX_NODES = 1_000_000
MAX_TOPICS = 1_000
MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class GraphSpec:
    """What to build. ``None`` sizes mean "the family's default".

    Attributes:
        family: registered family name.
        n_nodes: number of pre-training samples (graph nodes).
        noise: edge-noise rate in [0, 1] (see :func:`sipt_lab.graphs.graph.add_noise`).
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
        """Whether the family's default sizes are filled in (see :func:`resolve_spec`)."""
        return self.n_nodes is not None and self.n_topics is not None


Builder = Callable[[GraphSpec, Corpus, TopicAssignment, np.random.Generator], SyntheticDataset]


@dataclass(frozen=True)
class Family:
    name: str
    builder: Builder
    default_nodes: int
    default_topics: int
    description: str


FAMILIES: dict[str, Family] = {}


def register_family(name: str, *, default_nodes: int, default_topics: int, description: str):
    """Decorator registering a builder under ``name`` (a duplicate name is a programming error)."""

    def decorate(builder: Builder) -> Builder:
        if name in FAMILIES:
            raise KeyError(f"graph family {name!r} is already registered")
        FAMILIES[name] = Family(name, builder, default_nodes, default_topics, description)
        return builder

    return decorate


def get_family(name: str) -> Family:
    _load_builtin_families()
    try:
        return FAMILIES[name]
    except KeyError:
        raise SiptError(f"unknown graph {name!r}; choose one of: {', '.join(family_names())}") from None


def family_names() -> list[str]:
    _load_builtin_families()
    return list(FAMILIES)


def resolve_spec(spec: GraphSpec) -> GraphSpec:
    """``spec`` with the family's default sizes filled in (what a build actually uses); the family
    name and the corpus path are checked here, every other field on construction."""
    family = get_family(spec.family)
    if spec.corpus is not None:
        check_corpus_path(spec.corpus)
    return dataclasses.replace(
        spec,
        n_nodes=family.default_nodes if spec.n_nodes is None else spec.n_nodes,
        n_topics=family.default_topics if spec.n_topics is None else spec.n_topics,
    )


def prepare_topics(spec: GraphSpec, *, progress: bool = True) -> None:
    """Fit (or find cached) the topic model ``spec`` needs, so that parallel workers building
    datasets from it load it instead of each fitting it at once."""
    spec = resolve_spec(spec)
    fit_topics(load_corpus(spec.corpus), TopicConfig(n_topics=spec.n_topics), progress=progress)


def build_dataset(spec: GraphSpec, *, corpus: Corpus | None = None, progress: bool = True) -> SyntheticDataset:
    """Build the dataset ``spec`` asks for, end to end, reproducibly from ``spec.seed``.

    ``corpus`` overrides ``spec.corpus`` (useful when the caller already loaded it).
    """
    spec = resolve_spec(spec)
    family = get_family(spec.family)
    corpus = load_corpus(spec.corpus) if corpus is None else corpus
    topics = fit_topics(corpus, TopicConfig(n_topics=spec.n_topics), progress=progress)
    rng = np.random.default_rng(spec.seed)
    dataset = family.builder(spec, corpus, topics, rng)
    if spec.noise > 0:
        dataset.graph = add_noise(dataset.graph, spec.noise, spec.noise_mode, rng)
    dataset.params = {
        "seed": spec.seed,
        "noise": spec.noise,
        "noise_mode": spec.noise_mode,
        "n_topics": spec.n_topics,
        "corpus": corpus.source,
        **dataset.params,
    }
    return dataset


def _load_builtin_families() -> None:
    # Importing the modules runs their @register_family decorators.
    from sipt_lab.synthetic import cliques, manifold_families, mechanistic  # noqa: F401
