"""``sipt-lab graph``: list the semi-synthetic graph families and build one into a directory.

The family registry is imported only when a ``graph`` subcommand runs (it pulls in scikit-learn and
every family module), so ``--graph`` is checked against the registry at run time: an unknown name
is a one-line error listing the registered ones.
"""

from __future__ import annotations

import argparse

from sipt_lab.cli.arguments import QUIET_HELP, nonempty
from sipt_lab.core.options import add_config_arguments, config_from_args
from sipt_lab.core.outputs import check_output_dir, claim_output_dir, write_manifest, written_together
from sipt_lab.synthetic.graph_spec import GraphSpec

#: GraphSpec fields set by the ``graph build`` flags, in the order ``--help`` lists them. Their
#: values are parsed by type alone and checked by GraphSpec (whose errors name the flag).
GRAPH_FIELDS = ("family", "n_nodes", "noise", "noise_mode", "seed", "n_topics", "n_heldout", "corpus")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "graph",
        help="list or build semi-synthetic pre-training graphs over topic-labelled sentences",
        description="Semi-synthetic datasets of the SIPT paper: sentences as nodes, a pre-training "
        "graph over them, and the sentence's most probable LDA topic as the FT label.",
    )
    actions = parser.add_subparsers(dest="graph_command", metavar="ACTION", required=True)

    listing = actions.add_parser("list", help="the registered graph families and their defaults")
    listing.set_defaults(func=run_list)

    build = actions.add_parser(
        "build",
        help="build one dataset into a directory",
        description="Build one dataset and write DIR/edges.tsv, labels.tsv (node, FT label), "
        "sentences.tsv (node, sentence), heldout.tsv (label, sentence), meta.json and the family's "
        "extra tables. edges.tsv and labels.tsv are readable by 'sipt-lab consistency'.",
    )
    add_config_arguments(build, GraphSpec, GRAPH_FIELDS, check=False, required=("family",))
    build.add_argument(
        "--out",
        required=True,
        type=nonempty,
        metavar="DIR",
        help="output directory, created if missing; it must be empty or hold an earlier "
        "build, whose files are replaced",
    )
    build.add_argument("-q", "--quiet", action="store_true", help=QUIET_HELP)
    build.set_defaults(func=run_build)


def run_list(args: argparse.Namespace) -> int:
    from sipt_lab.synthetic.families import family_names, get_family

    families = [get_family(name) for name in family_names()]
    rows = [("name", "nodes", "topics", "description")] + [
        (f.name, str(f.default_nodes), str(f.default_topics), f.description) for f in families
    ]
    widths = [max(len(row[j]) for row in rows) for j in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3])
    return 0


def run_build(args: argparse.Namespace) -> int:
    from sipt_lab.synthetic.builder import build_dataset, resolve_spec

    spec = resolve_spec(config_from_args(args, GraphSpec, GRAPH_FIELDS))
    inputs = [spec.corpus] if spec.corpus else []
    check_output_dir(args.out, owned_only=True, inputs=inputs)  # before the build; nothing is written if it fails
    dataset = build_dataset(spec)
    out = claim_output_dir(args.out, inputs=inputs)
    with written_together(out):  # a full disk half-way leaves no build that looks finished
        dataset.write(out)
        if "points" in dataset.tables:  # a surface: draw the tiling and the placed sentences
            from sipt_lab.viz.tiling_net import plot_dataset

            plot_dataset(dataset, out / "surface.png")
    write_manifest(out, [path.name for path in out.iterdir()])
    print(
        f"graph {dataset.family}: {dataset.n_nodes} nodes, {dataset.graph.n_edges} edges, "
        f"local consistency {dataset.local_consistency:.4f} -> {out}"
    )
    return 0
