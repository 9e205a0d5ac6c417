"""How to make the paper's figures (:class:`FigureOptions`), checked once, and the helpers every
figure's cells share: where the grid cells live, topic models fitted before the workers start,
mean ± sd columns and progress lines (INFO records).

Each figure's expensive work runs as cells of :func:`~sipt_lab.grid.run_grid` under
``options.cells_dir`` (default ``<out_dir>/cells``), so it is computed once and a re-run skips
finished cells.

The module is light (no torch): the CLI's parser generates the ``figures`` flags from
:class:`FigureOptions`' fields; what runs imports the experiments when called.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sipt_lab.core.errors import ConfigError
from sipt_lab.core.options import option, validate
from sipt_lab.core.stats import mean_sd
from sipt_lab.grid import EXECUTORS, check_executor
from sipt_lab.studies.simulation.simulate_job import BATCHED_HELP, MAX_SEEDS, check_seeds, encoder_option, preset_option
from sipt_lab.synthetic.graph_spec import MAX_NODES, GraphSpec
from sipt_lab.training import names
from sipt_lab.training.train_config import MAX_STEPS

logger = logging.getLogger(__name__)

#: The graph families of Figure 5a, and the edge-noise rates of Figure 5b (on CLIQUES).
FIGURE5_FAMILIES = ("cliques", "plane", "mobius", "sphere", "torus", "neighborhood", "motif", "structural")
NOISE_RATES = (0.0, 0.05, 0.1, 0.15, 0.5)
#: Each figure's measured wall time at the defaults on 2 CPU cores: rows of ``figures`` (the names
#: one command made), ``seconds``, ``command``, ``date`` and ``record`` (where the run is written
#: up); a run on cores other sessions shared adds its ``cpu_seconds`` and the ``load`` average; and
#: ``not_measured``, the figures without a measurement yet.
FIGURE_TIMES = Path(__file__).with_name("figure_times.json")


def figure_time(row: dict) -> str:
    """One row of :data:`FIGURE_TIMES` in words: ``938 s`` or ``358 s (84 CPU s, at load 15)``."""
    shared = f" ({row['cpu_seconds']:.0f} CPU s, at load {row['load']:.0f})" if "load" in row else ""
    return f"{row['seconds']:.0f} s{shared}"


def figure_times_line() -> str:
    """:data:`FIGURE_TIMES` in one line for ``--help``: ``fig5a + fig5b + theorem1 938 s, ...``."""
    times = json.loads(FIGURE_TIMES.read_text(encoding="utf-8"))
    shown = ", ".join(
        f"{' + '.join(row['figures'])} {figure_time(row)}"
        for row in sorted(times["measurements"], key=lambda row: row["seconds"])
    )
    missing = times.get("not_measured", [])
    return f"measured wall time at the defaults on {times['cores']} CPU cores: {shown}" + (
        f"; not yet measured: {', '.join(missing)}" if missing else ""
    )


@dataclass(frozen=True)
class FigureOptions:
    """How to make the figures (round-trips through :mod:`sipt_lab.core.config_io`).

    Attributes:
        seeds: seeds ``0 .. seeds-1`` of every experiment (error bars are sd over seeds).
        executor: where grid cells run (``serial``, ``local``, ``slurm``).
        steps: pre-training steps per arm; None: each family's default (``heldout_scale``:
            :data:`~sipt_lab.studies.paper.heldout_scale.HELDOUT_SCALE_STEPS` at every size).
        n_nodes: pre-training samples per dataset; None: each family's default.
        families: the graph families of ``fig5a`` / ``theorem1``.
        noise_rates: the edge-noise rates of ``fig5b`` / ``theorem1`` (on CLIQUES).
        cells_dir: where grid cells live; None: ``<out_dir>/cells``.
        passes: ``heldout_scale``'s training budget as passes over each pre-training sample per arm
            (steps grow with the size; overrides ``steps``); None: equal steps at every size.
        scale_nodes: ``heldout_scale``'s pre-training sizes for every family; None: each family's
            :data:`~sipt_lab.studies.paper.heldout_scale.HELDOUT_SCALE_NODES`.
        preset: training settings per family (:data:`~sipt_lab.studies.simulation.presets.TRAINING_PRESETS`:
            ``default`` or ``paper``).
        encoder: char encoder sizes, a name in :data:`~sipt_lab.models.encoder.ENCODER_PRESETS`;
            None: the preset's.
        batched: train each condition's seeds x arms of the Figure 5 grid as one batched model
            (conditions side by side under ``executor``), and ``fig5cd`` / ``topology``'s two
            arms as one batched model in this process (same cells). On a CUDA GPU the grid's
            cells train as ONE batched training (:func:`~sipt_lab.studies.simulation.stacked_cells.plan_trainings`).
        compile: how a batched training runs its stacked encoders, a name in
            :data:`~sipt_lab.training.names.COMPILE_MODES` (``cudagraphs``: CUDA only); not part of the
            cells' configs (the numbers are the same up to float rounding).
    """

    seeds: int = option(3, help="seeds 0..K-1 per experiment", range=(1, MAX_SEEDS), metavar="K")
    executor: str = option("local", help=f"where grid cells run: {', '.join(EXECUTORS)}", metavar="NAME")
    steps: int | None = option(
        None,
        help="pre-training steps per arm",
        range=(1, MAX_STEPS),
        metavar="N",
        default_help="each family's; heldout_scale: 800 at every size",
    )
    n_nodes: int | None = option(
        None,
        help="pre-training samples per dataset",
        range=(2, MAX_NODES),
        flag="--nodes",
        metavar="N",
        default_help="each family's",
    )
    families: tuple[str, ...] = option(
        FIGURE5_FAMILIES,
        help="graph families of fig5a and theorem1",
        metavar="NAME",
        default_help="all eight of Figure 5a",
    )
    noise_rates: tuple[float, ...] = NOISE_RATES
    cells_dir: str | None = None
    passes: float | None = option(
        None,
        range=(0.0, None),
        open="low",
        metavar="P",
        help="heldout_scale: P passes over each pre-training sample per arm instead of equal steps at every size "
        "(steps = P x nodes / batch)",
    )
    scale_nodes: tuple[int, ...] | None = option(
        None,
        range=(2, 1_000_000),
        metavar="N",
        help="heldout_scale: pre-training sizes for every family",
        default_help="CLIQUES 50 200 1000, TORUS 50 200 300",
    )
    preset: str = preset_option()
    encoder: str | None = encoder_option()
    batched: bool = option(False, help=BATCHED_HELP)
    compile: str = option(
        "auto",
        choices=names.COMPILE_MODES,
        metavar="MODE",
        help="with --batched: run the stacked encoders eagerly (none), torch.compile'd (compile), or record each "
        "whole training step as a CUDA graph and replay it (cudagraphs, CUDA only); auto: cudagraphs on a GPU "
        "where the losses allow, else none",
    )


def check_options(options: FigureOptions) -> None:
    """Errors for options that cannot run, before anything runs: the fields' ranges and choices, the
    seeds, the executor (:func:`~sipt_lab.grid.check_executor`), and the experiment configs the
    options make (validated by the configs themselves, whose errors name their fields: steps,
    nodes, noise rates)."""
    validate(options)
    check_seeds(options.seeds, field="FigureOptions.seeds")
    check_executor(options.executor)
    if options.compile not in ("auto", "none") and not options.batched:
        raise ConfigError("FigureOptions.compile", "applies to batched training only; set FigureOptions.batched too")
    if not options.families:
        raise ConfigError("FigureOptions.families", "is empty; name at least one graph family")
    if options.scale_nodes is not None and not options.scale_nodes:
        raise ConfigError("FigureOptions.scale_nodes", "is empty; name at least one size of 2 nodes or more")
    for family in options.families:
        experiment_config(family, options)
    for rate in options.noise_rates:
        experiment_config("cliques", options, noise=rate)


def experiment_config(family: str, options: FigureOptions, *, seed: int = 0, noise: float = 0.0):
    """The :class:`~sipt_lab.studies.simulation.config.SimulationConfig` of one experiment under
    ``options`` (family defaults otherwise)."""
    from sipt_lab.studies.simulation.config import simulation_config

    graph_options = {"noise": float(noise)}
    if options.n_nodes is not None:
        graph_options["n_nodes"] = options.n_nodes
    return simulation_config(
        family,
        seed=seed,
        steps=options.steps,
        preset=options.preset,
        encoder=options.encoder,
        graph_options=graph_options,
    )


def cells_root(out_dir: str | Path, options: FigureOptions) -> Path:
    """The directory of the shared grid cells."""
    return Path(options.cells_dir) if options.cells_dir is not None else Path(out_dir) / "cells"


def prepare_grid_topics(specs: Sequence[GraphSpec], options: FigureOptions) -> None:
    """Fit each topic model the grid's datasets need once, here, rather than in every worker at once
    (only for executors that run cells in other processes)."""
    from sipt_lab.synthetic.builder import prepare_topics, resolve_spec

    if options.executor != "serial":
        models = {(spec.corpus, spec.n_topics): spec for spec in map(resolve_spec, specs)}
        for spec in models.values():
            prepare_topics(spec)


def mean_sd_columns(name: str, values: Sequence[float | None]) -> dict[str, float]:
    """``{name_mean, name_sd}`` of :func:`sipt_lab.core.stats.mean_sd` (sample sd, nan for one value)."""
    mean, sd = mean_sd(values)
    return {f"{name}_mean": mean, f"{name}_sd": sd}


def say(message: str) -> None:
    """A progress line: an INFO record (``sipt-lab: figures: ...`` on the command's stderr)."""
    logger.info("figures: %s", message)
