"""What one ``sipt-lab simulate`` run asks for (:class:`SimulateJob`), and the option fields it
shares with ``sipt-lab figures``: a light module (no torch), from whose fields the CLI's parser
generates the flags. :func:`~sipt_lab.studies.simulation.config.simulation_config`
resolves it into the experiment's config.
"""

from __future__ import annotations

from dataclasses import dataclass

from sipt_lab.core.errors import ConfigError
from sipt_lab.core.options import option, validate
from sipt_lab.grid import EXECUTORS, check_executor
from sipt_lab.models import names as model_names
from sipt_lab.studies import names as study_names
from sipt_lab.synthetic.graph_spec import MAX_SEED, GraphSpec
from sipt_lab.training import names as training_names

#: The default methods (arms) of an experiment; any of :data:`sipt_lab.training.methods.METHODS` may be run.
ARMS = ("lm", "sipt")
#: Largest accepted number of seeds of one experiment.
MAX_SEEDS = 1_000

#: Help of the option fields ``simulate`` and ``figures`` share.
PRESET_HELP = (
    f"training settings per family: {' or '.join(study_names.SIMULATION_PRESETS)} (paper: the paper's encoder sizes, "
    "whole graph per step, 8,000 steps or 1,500 epochs, lr 3e-4 constant, sampled pairs)"
)
ENCODER_HELP = f"char encoder sizes: {', '.join(model_names.ENCODER_PRESETS)}"
BATCHED_HELP = (
    "train all seeds x arms of a condition as one batched model, conditions side by side under --executor "
    "(same numbers up to float rounding; faster for small encoders on a CPU)"
)


def preset_option(default_help: str | None = None):
    """The ``preset`` field (``default`` or ``paper``)."""
    return option(
        "default", help=PRESET_HELP, choices=study_names.SIMULATION_PRESETS, metavar="NAME", default_help=default_help
    )


def encoder_option():
    """The ``encoder`` field: a char encoder size name, None: the preset's."""
    return option(
        None, help=ENCODER_HELP, choices=model_names.ENCODER_PRESETS, metavar="NAME", default_help="the preset's"
    )


@dataclass(frozen=True)
class SimulateJob:
    """One ``sipt-lab simulate`` run: its dataset, seeds, methods and training settings by name.

    Attributes:
        graph: the dataset of the first seed (unresolved sizes: the family's).
        seeds: independent repetitions, seeds ``graph.seed .. graph.seed + seeds - 1``.
        methods: the pre-training methods compared (:data:`~sipt_lab.training.names.METHODS`).
        preset: training settings per family (:data:`~sipt_lab.studies.names.SIMULATION_PRESETS`).
        encoder: char encoder sizes by name; None: the preset's.
        executor: how seeds run (:data:`~sipt_lab.grid.EXECUTORS`).
        batched: train all seeds x arms of a condition as one batched model.
    """

    graph: GraphSpec
    seeds: int = option(3, help="independent repetitions, seeds 0..K-1 from --seed", range=(1, MAX_SEEDS), metavar="K")
    methods: tuple[str, ...] = option(
        ARMS,
        metavar="NAME",
        help=f"pre-training methods to compare, each on the same seeds and steps: {', '.join(training_names.METHODS)} "
        "(default: lm sipt; mlsm/lsm15/lsm learn from the lm arm as teacher)",
    )
    preset: str = preset_option()
    encoder: str | None = encoder_option()
    executor: str = option("local", help=f"how seeds run: {', '.join(EXECUTORS)}", metavar="NAME")
    batched: bool = option(False, help=BATCHED_HELP)

    def __post_init__(self) -> None:
        check_seeds(self.seeds, self.graph.seed)
        validate(self)
        check_executor(self.executor)


def check_seeds(n_seeds: int, first: int = 0, field: str = "SimulateJob.seeds") -> None:
    """ConfigError (naming ``field``, the number of seeds) unless ``n_seeds`` seeds from ``first`` on
    are a valid run: 1 to :data:`MAX_SEEDS` seeds, the last a valid graph seed."""
    if not 1 <= n_seeds <= MAX_SEEDS:
        raise ConfigError(field, f"must be in [1, {MAX_SEEDS:,}], got {n_seeds:,}")  # as the field's range says
    if first + n_seeds - 1 > MAX_SEED:
        raise ConfigError("GraphSpec.seed", f"+ {field} - 1 must be at most {MAX_SEED}; pass a smaller GraphSpec.seed")
