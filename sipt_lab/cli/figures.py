"""``sipt-lab figures``: the paper's figures and the theory checks, PNG + PDF + CSV each.

The figure registry imports torch, scikit-learn and matplotlib, so it is imported only when the
command runs: ``--only`` names are checked then (an unknown one lists them all), and options left
out take :class:`~sipt_lab.studies.paper.figure_options.FigureOptions`' defaults. The flags are
generated from its fields; a config error names the field, shown here as its flag.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from sipt_lab.cli.arguments import GRID_INTERRUPT_HINT, add_preset_flags, nonempty
from sipt_lab.core.options import add_config_arguments, config_from_args, options_of, record_field_flags
from sipt_lab.studies.paper.figure_options import FigureOptions, figure_times_line

DEFAULT_OUT = "paper_figures/out"
#: FigureOptions fields set by ``figures`` flags.
FIGURE_FIELDS = (
    "seeds",
    "executor",
    "steps",
    "n_nodes",
    "families",
    "passes",
    "scale_nodes",
    "preset",
    "encoder",
    "batched",
    "compile",
)
#: What --help says of a field's default where the flag itself defaults to None.
FIGURE_FIELD_DEFAULTS = {name: meta.default_help for name, meta in options_of(FigureOptions).items()}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "figures",
        help="make the paper's figures and theory checks (PNG, PDF and the CSV behind each)",
        description="Compute and draw the paper's semi-synthetic figures and checks of its theory "
        "(fig5a, fig5b, theorem1, ...: an unknown --only name lists them all). fig5a, fig5b and theorem1 share one grid of LM-vs-SIPT cells "
        "(every family at noise 0, CLIQUES at every noise rate, --seeds seeds) kept under OUT/cells: "
        "each cell is computed once and a re-run skips finished cells (one of the three alone runs only its "
        "own cells). The " + figure_times_line() + ".",
    )
    parser.add_argument("--only", nargs="+", metavar="NAME", help="make only these figures (default: all)")
    # Options left out stay None here and take FigureOptions' defaults (the ones --help shows).
    add_config_arguments(
        parser,
        FigureOptions,
        ("seeds", "executor"),
        check=False,
        defaults={"seeds": None, "executor": None},
        default_help={"seeds": str(FigureOptions.seeds), "executor": FigureOptions.executor},
    )
    parser.add_argument(
        "--out", default=DEFAULT_OUT, type=nonempty, metavar="DIR", help="output directory (default: %(default)s)"
    )
    add_config_arguments(parser, FigureOptions, ("steps", "n_nodes"), check=False)
    add_config_arguments(
        parser,
        FigureOptions,
        ("families",),
        check=False,
        defaults={"families": None},
        default_help={"families": FIGURE_FIELD_DEFAULTS["families"]},
    )
    add_config_arguments(parser, FigureOptions, ("passes", "scale_nodes"))
    add_preset_flags(parser, FigureOptions)
    add_config_arguments(parser, FigureOptions, ("compile",), check=False)
    record_field_flags(  # of each experiment
        parser, {"TrainConfig.steps": "--steps", "GraphSpec.n_nodes": "--nodes", "SimulateJob.batched": "--batched"}
    )
    parser.set_defaults(func=run, fill_defaults=fill_figure_defaults, interrupt_hint=GRID_INTERRUPT_HINT)


def fill_figure_defaults(args: argparse.Namespace) -> None:
    """FigureOptions' default of each flag left out that has one, so that ``--print-config`` lists
    it as the run uses it (``steps`` and ``nodes`` stay unset: each family resolves its own)."""
    defaults = {field.name: field.default for field in dataclasses.fields(FigureOptions)}
    for name in FIGURE_FIELDS:
        if getattr(args, name) is None and defaults[name] is not None:
            setattr(args, name, defaults[name])


def run(args: argparse.Namespace) -> int:
    from sipt_lab.studies.paper.figures import make_figures

    given = {name: getattr(args, name) for name in FIGURE_FIELDS}
    options = config_from_args(
        args, FigureOptions, (), **{name: value for name, value in given.items() if value is not None}
    )
    start = time.perf_counter()
    written = make_figures(args.only, args.out, options)
    for name, paths in written.items():
        print(f"{name}: {', '.join(str(path) for path in paths)}")
    print(f"total wall time: {time.perf_counter() - start:.1f} s")
    return 0


def script_main(name: str, script: str, argv: list[str] | None = None) -> int:
    """Entry point of ``paper_figures/<name>.py`` (``script`` is its ``__file__``): ``sipt-lab figures
    --only name`` with the script's arguments (``--seeds``, ``--executor``, ``--out`` ...), writing
    by default into the ``out`` folder next to the script."""
    from sipt_lab.cli.main import main

    out = Path(script).resolve().parent / "out"
    return main(["figures", "--only", name, "--out", str(out), *(sys.argv[1:] if argv is None else argv)])
