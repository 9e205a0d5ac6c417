"""``sipt-lab consistency``: local consistency and homophily of node labels over a graph in files.

TSV files are read in memory by default; ``--engine stream`` (implied by Parquet or CSV edges and
by ``--chunk-size``) streams the edges in bounded memory and ``--engine dask`` runs on a Dask
cluster, both with the same numbers (:func:`sipt_lab.graphs.consistency.consistency_from_files`).
"""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from importlib import resources
from pathlib import Path

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import json_text
from sipt_lab.core.options import add_config_arguments, config_from_args
from sipt_lab.graphs.consistency_job import ConsistencyJob

EXAMPLE_EDGES = "example_edges.tsv"
EXAMPLE_LABELS = "example_labels.tsv"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "consistency",
        help="local consistency (Definition 5) and homophily of labels over a graph",
        description="Measure how well node labels agree with the graph: local consistency "
        "(the fraction of nodes whose label is the plurality label of their neighbours, i.e. the "
        "leave-one-out accuracy of a one-hop majority vote), node homophily and edge homophily. "
        "The labels may cover a subset of the nodes: edges with an end without a label are left out "
        "and counted, so the numbers are those of the graph on the labelled nodes (as `advise` measures LC). "
        "Isolated nodes are counted but left out of the means.",
    )
    add_config_arguments(parser, ConsistencyJob, ("edges", "labels", "example", "ties"))
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    scale = parser.add_argument_group("graphs larger than memory")
    add_config_arguments(
        parser,
        ConsistencyJob,
        (
            "engine",
            "chunk_size",
            "edge_columns",
            "label_columns",
            "scheduler",
            "scheduler_timeout",
            "workers",
            "spill_dir",
        ),
        container=scale,
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sipt_lab.graphs.consistency import consistency_report
    from sipt_lab.graphs.consistency_kernel import check_labelled_edges
    from sipt_lab.graphs.tsv import load_graph_tsv

    json_output, args = args.json, config_from_args(args, ConsistencyJob)

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
        engine = _engine(args, edges_file, labels_file)
        if engine != "memory":
            return _print_result(
                json_output,
                {
                    **_from_files(args, engine, edges_file, labels_file),
                    "edges_file": edges_file,
                    "labels_file": labels_file,
                },
            )
        labelled = load_graph_tsv(edges_file, labels_file)
    check_labelled_edges(labelled.graph.n_edges, labelled.unlabelled_edges)
    report = consistency_report(labelled.graph, labelled.labels, args.ties)
    result = {
        **report.to_dict(),
        "dropped_self_loops": labelled.dropped_self_loops,
        "dropped_duplicates": labelled.dropped_duplicates,
        "unlabelled_edges": labelled.unlabelled_edges,
        "edges_file": edges_file,
        "labels_file": labels_file,
    }
    return _print_result(json_output, result)


def _print_result(json_output: bool, result: dict) -> int:
    print(json_text(result, sort_keys=False) if json_output else _table(result))
    return 0


def _engine(args: ConsistencyJob, edges_file, labels_file) -> str:
    """The engine asked for, or the one the files need; checks the flags that go with it."""
    from sipt_lab.graphs.edge_tables import is_parquet

    if Path(edges_file).is_dir() and not any(path.is_file() for path in Path(edges_file).rglob("*")):
        raise SiptError(f"--edges {edges_file} is a directory with no file in it; pass an edges file")

    # A directory of edges is Parquet parts; a directory given as labels stays an error of the TSV reader.
    text_tsv = not (
        is_parquet(edges_file)
        or any(
            str(f).lower().removesuffix(".gz").endswith((".csv", ".parquet", ".pq")) for f in (edges_file, labels_file)
        )
    )
    engine = args.engine or ("memory" if text_tsv and args.chunk_size is None else "stream")
    if engine == "memory" and Path(edges_file).is_dir():
        raise SiptError(
            f"--edges {edges_file} is a directory, which only a streamed engine reads (as Parquet parts); "
            "pass an edges file, or --engine stream"
        )
    if engine == "memory" and not text_tsv:
        raise SiptError("--engine memory reads TSV files only; use --engine stream for Parquet or CSV files")
    if engine == "memory" and args.chunk_size is not None:
        raise SiptError("--chunk-size applies to --engine stream or dask; drop it or pick one of those engines")
    if args.scheduler and engine != "dask":
        raise SiptError("--scheduler applies to --engine dask; add --engine dask")
    return engine


def _from_files(args: ConsistencyJob, engine: str, edges_file, labels_file) -> dict:
    from sipt_lab.graphs.consistency import consistency_from_files

    result = consistency_from_files(
        edges_file,
        labels_file,
        args.ties,
        engine=engine,
        chunk_edges=args.chunk_size,
        edge_columns=_two_names(args.edge_columns, "--edge-columns"),
        label_columns=_two_names(args.label_columns, "--label-columns"),
        scheduler=args.scheduler,
        workers=args.workers,
        spill_dir=args.spill_dir,
        connect_timeout=args.scheduler_timeout,
    )
    return result.to_dict()


def _two_names(text: str, flag: str) -> tuple[str, str]:
    names = [name.strip() for name in text.split(",")]
    if len(names) != 2 or not all(names):
        raise SiptError(f"{flag} takes two column names separated by a comma, got {text!r}")
    return names[0], names[1]


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
        ("edges left out (an end without a label)", result["unlabelled_edges"]),
        ("tie policy", result["tie_policy"]),
        ("local consistency", f"{result['local_consistency']:.4f}"),
        ("node homophily", f"{result['node_homophily']:.4f}"),
        ("edge homophily", f"{result['edge_homophily']:.4f}"),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)
