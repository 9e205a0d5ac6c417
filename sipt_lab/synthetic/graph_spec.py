"""What a synthetic build is asked for (:class:`GraphSpec`): a light module, so that the CLI's
parser generates the ``graph build`` and ``simulate`` flags from its fields without importing the
families (scikit-learn).
"""

from __future__ import annotations

from dataclasses import dataclass

from sipt_lab.core.options import option, validate
from sipt_lab.graphs.noise import NOISE_MODES

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

    family: str = option(help="graph family ('sipt-lab graph list' shows them)", flag="--graph", metavar="NAME")
    n_nodes: int | None = option(
        None, help="pre-training nodes", range=(2, MAX_NODES), flag="--nodes", metavar="N", default_help="the family's"
    )
    noise: float = option(0.0, help="edge-noise probability in [0, 1]", range=(0.0, 1.0), metavar="P")
    noise_mode: str = option(
        "add",
        choices=NOISE_MODES,
        metavar="MODE",
        help=f"{' or '.join(NOISE_MODES)}: add = every non-edge appears with probability P; "
        "flip = also every edge disappears with probability P",
    )
    seed: int = option(0, help="seed of every random choice", range=(0, MAX_SEED), metavar="S")
    n_heldout: int = option(
        20, help="held-out sentences built the same way", range=(0, MAX_NODES), flag="--heldout", metavar="H"
    )
    n_topics: int | None = option(
        None, help="LDA topic count", range=(2, MAX_TOPICS), flag="--topics", metavar="K", default_help="the family's"
    )
    corpus: str | None = option(
        None,
        help="one sentence per line (text or JSONL, maybe .gz); default: the embedded corpus",
        nonempty=True,
        metavar="PATH",
    )

    def __post_init__(self) -> None:
        validate(self)

    @property
    def is_resolved(self) -> bool:
        """Whether the family's default sizes are filled in (see :func:`~sipt_lab.synthetic.builder.resolve_spec`)."""
        return self.n_nodes is not None and self.n_topics is not None
