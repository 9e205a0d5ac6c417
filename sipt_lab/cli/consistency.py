"""``sipt-lab consistency``: local consistency and homophily of node labels over a graph in TSV files."""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from importlib import resources

from sipt_lab.cli.arguments import nonempty
from sipt_lab.errors import SiptError
from sipt_lab.fileio import json_text
from sipt_lab.names import TIE_POLICIES

EXAMPLE_EDGES = "example_edges.tsv"
EXAMPLE_LABELS = "example_labels.tsv"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "consistency",
        help="local consistency (Definition 5) and homophily of labels over a graph",
        description="Measure how well node labels agree with the graph: local consistency "
        "(the fraction of nodes whose label is the plurality label of their neighbours, i.e. the "
        "leave-one-out accuracy of a one-hop majority vote), node homophily and edge homophily. "
        "Isolated nodes are counted but left out of the means.",
    )
    parser.add_argument("--edges", type=nonempty, metavar="EDGES.tsv",
                        help="undirected edges, one 'u<TAB>v' per line; '#' starts a comment; "
                        "self-loops and duplicate edges are dropped and reported")
    parser.add_argument("--labels", type=nonempty, metavar="LABELS.tsv",
                        help="one 'node<TAB>label' per line; these nodes are the graph's nodes "
                        "(nodes without edges are isolated) and every edge must use them")
    parser.add_argument("--example", action="store_true",
                        help="use the packaged 31-node two-field example instead of --edges/--labels")
    parser.add_argument("--ties", choices=TIE_POLICIES, default="split",
                        help="score of a node whose label ties with k-1 others for its neighbours' "
                        "plurality: split = 1/k (expected accuracy of a random tie-break), "
                        "strict = 0, lenient = 1 (default: %(default)s)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object instead of a table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sipt_lab.consistency import consistency_report
    from sipt_lab.graph import load_graph_tsv

    if args.example and (args.edges or args.labels):
        raise SiptError("--example replaces --edges/--labels; pass either --example or both files")
    if not args.example and not (args.edges and args.labels):
        raise SiptError("--edges and --labels are both required (or pass --example)")
    with ExitStack() as stack:
        if args.example:
            data = resources.files("sipt_lab") / "data"
            edges_file = str(stack.enter_context(resources.as_file(data / EXAMPLE_EDGES)))
            labels_file = str(stack.enter_context(resources.as_file(data / EXAMPLE_LABELS)))
        else:
            edges_file, labels_file = args.edges, args.labels
        labelled = load_graph_tsv(edges_file, labels_file)
    report = consistency_report(labelled.graph, labelled.labels, args.ties)
    result = {
        **report.to_dict(),
        "dropped_self_loops": labelled.dropped_self_loops,
        "dropped_duplicates": labelled.dropped_duplicates,
        "edges_file": edges_file,
        "labels_file": labels_file,
    }
    if args.json:
        print(json_text(result, sort_keys=False))
    else:
        print(_table(result))
    return 0


def _table(result: dict) -> str:
    rows = [
        ("edges file", result["edges_file"]),
        ("labels file", result["labels_file"]),
        ("nodes", result["n_nodes"]),
        ("edges", result["n_edges"]),
        ("isolated nodes (not averaged)", result["n_isolated"]),
        ("classes", result["n_classes"]),
        ("self-loops dropped", result["dropped_self_loops"]),
        ("duplicate edges dropped", result["dropped_duplicates"]),
        ("tie policy", result["tie_policy"]),
        ("local consistency", f"{result['local_consistency']:.4f}"),
        ("node homophily", f"{result['node_homophily']:.4f}"),
        ("edge homophily", f"{result['edge_homophily']:.4f}"),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)
