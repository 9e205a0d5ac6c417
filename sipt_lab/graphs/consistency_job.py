"""What one ``sipt-lab consistency`` run measures (:class:`ConsistencyJob`): a light module, from
whose fields the CLI's parser generates the command's flags."""

from __future__ import annotations

from dataclasses import dataclass

from sipt_lab.core.options import option, validate
from sipt_lab.graphs.names import TIE_POLICIES

#: How the edges are read: in memory, streamed in chunks, or on a Dask cluster.
ENGINES = ("memory", "stream", "dask")
#: Seconds to wait for an unreachable Dask scheduler.
SCHEDULER_TIMEOUT = 10.0
#: Most edges per chunk: Arrow slices by a C long, and a chunk of 100 bytes an edge must fit in memory.
MAX_CHUNK_EDGES = 1 << 31


@dataclass(frozen=True)
class ConsistencyJob:
    """Local consistency and homophily of the labels in ``labels`` over the graph in ``edges``
    (or of the packaged ``example``), read by ``engine``.

    Attributes:
        edges, labels: the ``u<TAB>v`` edges and ``node<TAB>label`` files (or Parquet / CSV).
        example: use the packaged example instead of ``edges`` / ``labels``.
        ties: the tie policy (:data:`~sipt_lab.graphs.names.TIE_POLICIES`).
        engine: :data:`ENGINES` name; None: by the files and ``chunk_size``.
        chunk_size, edge_columns, label_columns, scheduler, scheduler_timeout, workers, spill_dir:
            the stream and Dask engines' settings.
    """

    edges: str | None = option(
        None,
        nonempty=True,
        metavar="EDGES.tsv",
        help="undirected edges, one 'u<TAB>v' per line; '#' starts a comment; self-loops and "
        "duplicate edges are dropped and reported",
    )
    labels: str | None = option(
        None,
        nonempty=True,
        metavar="LABELS.tsv",
        help="one 'node<TAB>label' per line; these nodes are the graph's nodes (nodes without "
        "edges are isolated) and every edge must use them",
    )
    example: bool = option(False, help="use the packaged 31-node two-field example instead of --edges/--labels")
    ties: str = option(
        "split",
        choices=TIE_POLICIES,
        help="score of a node whose label ties with k-1 others for its neighbours' plurality: split = 1/k "
        "(expected accuracy of a random tie-break), strict = 0, lenient = 1",
    )
    engine: str | None = option(
        None,
        choices=ENGINES,
        help="memory: read the whole edge list (TSV); stream: read the edges in chunks in bounded "
        "memory (TSV, CSV, optionally .gz, or Parquet); dask: the same on a Dask cluster (default: "
        "stream for Parquet/CSV edges or with --chunk-size, else memory); all give the same numbers",
    )
    chunk_size: int | None = option(
        None,
        range=(1, MAX_CHUNK_EDGES),
        metavar="EDGES",
        help="edges per chunk of the stream engine (default: 2097152), and about per Dask "
        "partition of a text file; memory grows with it",
    )
    edge_columns: str = option("u,v", metavar="U,V", help="the two node columns of a Parquet edges file")
    label_columns: str = option(
        "node,label", metavar="NODE,LABEL", help="the node and label columns of a Parquet labels file"
    )
    scheduler: str | None = option(
        None,
        metavar="ADDRESS",
        help="Dask scheduler address (tcp://host:8786) for --engine dask; default: a LocalCluster on this machine",
    )
    scheduler_timeout: float = option(
        SCHEDULER_TIMEOUT,
        range=(0.0, None),
        open="low",
        metavar="SECONDS",
        default_help=f"{SCHEDULER_TIMEOUT:g}",
        help="give up on an unreachable --scheduler after this long",
    )
    workers: int | None = option(
        None,
        range=(1, None),
        metavar="N",
        default_help="all available cores",
        help="threads of the stream engine (at most one per spill partition), or LocalCluster "
        "workers of the dask engine when no --scheduler is given",
    )
    spill_dir: str | None = option(
        None,
        metavar="DIR",
        help="where the stream engine writes its temporary spill files "
        "(16 bytes per edge; default: the system's temporary directory)",
    )

    def __post_init__(self) -> None:
        validate(self)
