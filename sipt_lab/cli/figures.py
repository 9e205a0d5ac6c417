"""``sipt-lab figures``: the paper's figures and the theory checks, PNG + PDF + CSV each.

The figure registry imports torch, scikit-learn and matplotlib, so it is imported only when the
command runs: ``--only`` names are checked then (an unknown one lists them all), and options left
out take :class:`~sipt_lab.experiments.paper.figures.FigureOptions`' defaults.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sipt_lab.cli.arguments import POSITIVE, integer, nonempty
from sipt_lab.cli.simulate import add_preset_flags
from sipt_lab.grid import EXECUTORS

DEFAULT_OUT = "paper_figures/out"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "figures",
        help="make the paper's figures and theory checks (PNG, PDF and the CSV behind each)",
        description="Compute and draw the paper's semi-synthetic figures and checks of its theory "
        "(fig5a, fig5b, theorem1, ...: an unknown --only name lists them all). fig5a, fig5b and theorem1 share one grid of LM-vs-SIPT cells "
        "(every family at noise 0, CLIQUES at every noise rate, --seeds seeds) kept under OUT/cells: "
        "each cell is computed once and a re-run skips finished cells.",
    )
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="make only these figures (default: all)")
    parser.add_argument("--seeds", type=int, metavar="K",
                        help="seeds 0..K-1 per experiment (default: 3)")
    parser.add_argument("--executor", metavar="NAME",
                        help=f"where grid cells run: {', '.join(EXECUTORS)} (default: local)")
    parser.add_argument("--out", default=DEFAULT_OUT, type=nonempty, metavar="DIR", help="output directory (default: %(default)s)")
    parser.add_argument("--steps", type=int, metavar="N", help="pre-training steps per arm (default: each family's)")
    parser.add_argument("--nodes", type=int, metavar="N",
                        help="pre-training samples per dataset (default: each family's)")
    parser.add_argument("--families", nargs="+", metavar="NAME",
                        help="graph families of fig5a and theorem1 (default: all eight of Figure 5a)")
    parser.add_argument("--passes", type=POSITIVE, metavar="P",
                        help="heldout_scale: passes over each pre-training sample per arm (steps = P x nodes / batch; default 64)")
    parser.add_argument("--scale-nodes", type=integer(2, 1_000_000), nargs="+", metavar="N",
                        help="heldout_scale: pre-training sizes for every family (default: CLIQUES 50 200 1000, TORUS 50 200 500)")
    add_preset_flags(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sipt_lab.experiments.paper.figures import FigureOptions, make_figures

    given = {"seeds": args.seeds, "executor": args.executor, "families": tuple(args.families or ()) or None,
             "passes": args.passes, "preset": args.preset, "encoder": args.encoder, "batched": args.batched, "scale_nodes": tuple(args.scale_nodes) if args.scale_nodes else None}
    options = FigureOptions(steps=args.steps, n_nodes=args.nodes, **{k: v for k, v in given.items() if v is not None})
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
