"""Local consistency of graphs read from files: the streamed (out-of-core) engine against the
in-memory path and DuckDB running the same aggregation in SQL.

Run as ``python benchmarks/bench_consistency_stream.py [--sizes 1e7 3e7 1e8] [--memory-max 1e7]
[--methods stream stream-1 memory duckdb]``.
Each size ``m`` is a random graph of ``m`` integer-id edges over ``m / 10`` labelled nodes and 10
classes (a few self-loops and repeats included), written once as Parquet and as TSV edges plus a
TSV labels file (writing is not timed). Every measurement runs in a fresh child process, which
reports its wall and CPU seconds (reading included, imports not) and peak RSS; the table gives
edges per second and each method's time as a ratio to the streamed engine on the same input.
Methods:

* ``stream``: :func:`sipt_lab.graphs.consistency.consistency_from_files` (default chunk size,
  default workers: every available core);
* ``stream-1``: the same with one worker (no threads of its own);
* ``memory``: from TSV, today's path (``load_graph_tsv`` + ``consistency_report``); from Parquet,
  the whole table read by Arrow, ids mapped, then ``PretrainingGraph.from_edges`` +
  ``consistency_report`` (sizes up to ``--memory-max`` only: both hold every edge);
* ``duckdb``: :data:`SQL` (ids joined to labels, self-loops and repeats dropped, per node
  neighbour-label counts, plurality and ties split) on 2 threads and at most 8 GB; its local consistency and
  homophilies are checked equal to the streamed engine's (to 1e-9).

Generated files go under ``--dir`` (default: a new temporary directory) and are deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

N_CLASSES = 10
#: Streamed methods and their workers (None: the engine's default, every available core).
STREAM_WORKERS = {"stream": None, "stream-1": 1}
METHODS = (*STREAM_WORKERS, "memory", "duckdb")
NODES_PER_EDGE = 0.1
WRITE_ROWS = 1 << 22

#: The reference: Definition 5 with ties split, node and edge homophily, in one DuckDB query.
SQL = """
WITH lab AS (SELECT node, label FROM {labels}),
undirected AS (SELECT DISTINCT least(u, v) AS a, greatest(u, v) AS b FROM {edges} WHERE u <> v),
directed AS (SELECT a AS src, b AS dst FROM undirected UNION ALL SELECT b, a FROM undirected),
counts AS (SELECT d.src, l.label, count(*) AS c FROM directed d JOIN lab l ON l.node = d.dst
           GROUP BY d.src, l.label),
ranked AS (SELECT src, label, c, max(c) OVER (PARTITION BY src) AS top,
                  sum(c) OVER (PARTITION BY src) AS degree FROM counts),
nodes AS (SELECT src, any_value(top) AS top, any_value(degree) AS degree,
                 count(*) FILTER (WHERE c = top) AS n_top FROM ranked GROUP BY src),
scored AS (SELECT n.*, coalesce(c.c, 0) AS same FROM nodes n JOIN lab l ON l.node = n.src
           LEFT JOIN counts c ON c.src = n.src AND c.label = l.label)
SELECT avg(CASE WHEN same = top THEN 1.0 / n_top ELSE 0.0 END), avg(same / degree),
       sum(same) / sum(degree), sum(degree) // 2
FROM scored
"""


def write_graph(directory: Path, m: int, seed: int = 0) -> dict:
    """Parquet and TSV edges and TSV labels of a random graph with ``m`` edges; their paths."""
    rng = np.random.default_rng(seed)
    n = max(2, int(m * NODES_PER_EDGE))
    paths = {
        "parquet": directory / f"edges-{m}.parquet",
        "tsv": directory / f"edges-{m}.tsv",
        "labels": directory / f"labels-{m}.tsv",
    }
    schema = pa.schema([("u", pa.int64()), ("v", pa.int64())])
    text = pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")
    with (
        pq.ParquetWriter(paths["parquet"], schema) as parquet,
        pacsv.CSVWriter(paths["tsv"], schema, write_options=text) as tsv,
    ):
        for start in range(0, m, WRITE_ROWS):
            k = min(WRITE_ROWS, m - start)
            table = pa.table({"u": rng.integers(0, n, k), "v": rng.integers(0, n, k)}, schema=schema)
            parquet.write_table(table)
            tsv.write_table(table)
    labels = pa.table({"node": np.arange(n), "label": rng.integers(0, N_CLASSES, n)})
    pacsv.write_csv(labels, paths["labels"], text)
    return {"n": n, **{k: str(p) for k, p in paths.items()}}


def measure(method: str, fmt: str, edges: str, labels: str) -> dict:
    """One timed run (in this process): seconds, LC and homophilies, edges."""
    import duckdb

    from sipt_lab.graphs.consistency import consistency_from_files

    start, cpu = time.perf_counter(), _cpu_seconds()
    if method in STREAM_WORKERS:
        report = consistency_from_files(edges, labels, workers=STREAM_WORKERS[method]).report
        values = (report.local_consistency, report.node_homophily, report.edge_homophily, report.n_edges)
    elif method == "memory":
        report = _in_memory(fmt, edges, labels)
        values = (report.local_consistency, report.node_homophily, report.edge_homophily, report.n_edges)
    else:
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        con.execute("SET threads = 2")
        con.execute("SET memory_limit = '8GB'")
        con.execute(f"SET temp_directory = '{Path(edges).parent / 'duckdb-tmp'}'")
        source = (
            f"read_parquet('{edges}')"
            if fmt == "parquet"
            else f"read_csv('{edges}', delim='\\t', header=false, columns={{'u': 'BIGINT', 'v': 'BIGINT'}})"
        )
        label_source = (
            f"read_csv('{labels}', delim='\\t', header=false, columns={{'node': 'BIGINT', 'label': 'VARCHAR'}})"
        )
        values = con.execute(SQL.format(edges=source, labels=label_source)).fetchone()
    return {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": _cpu_seconds() - cpu,
        "values": [float(x) for x in values],
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _in_memory(fmt: str, edges: str, labels: str):
    from sipt_lab.graphs.consistency import consistency_report  # imported by measure already
    from sipt_lab.graphs.edge_tables import read_node_index, read_table
    from sipt_lab.graphs.graph import PretrainingGraph
    from sipt_lab.graphs.tsv import load_graph_tsv

    if fmt == "tsv":
        read = load_graph_tsv(edges, labels)
        return consistency_report(read.graph, read.labels)
    index = read_node_index(labels)
    table = read_table(edges, "edges", ("u", "v"))
    graph = PretrainingGraph.from_edges(index.lookup(table.column(0)), index.lookup(table.column(1)), index.n_nodes)
    return consistency_report(graph, index.codes)


def run_child(method: str, fmt: str, graph: dict, timeout: float) -> dict | None:
    """:func:`measure` in a fresh interpreter (so that its peak RSS is its own); None on timeout."""
    code = (
        f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        f"import bench_consistency_stream as b; "
        f"print('RESULT', json.dumps(b.measure({method!r}, {fmt!r}, {graph[fmt]!r}, {graph['labels']!r})))"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode:
        raise RuntimeError(f"{method}/{fmt} failed: {done.stderr.strip().splitlines()[-1]}")
    return json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 3e6, 1e7], help="edges per graph")
    parser.add_argument("--memory-max", type=float, default=1e7, help="largest size for the in-memory path")
    parser.add_argument("--formats", nargs="+", default=["parquet", "tsv"], choices=["parquet", "tsv"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run before it is skipped")
    parser.add_argument("--dir", help="where to write the graphs (default: a temporary directory)")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="sipt-bench-stream-", dir=args.dir))
    rows = []
    try:
        for m in (int(size) for size in args.sizes):
            graph = write_graph(root, m)
            for fmt in args.formats:
                results = {}
                for method in args.methods:
                    if method == "memory" and m > args.memory_max:
                        continue
                    results[method] = run_child(method, fmt, graph, args.timeout)
                rows += _rows(m, graph["n"], fmt, results)
                print(_format(rows[-len(results) :]), flush=True)
            for path in (graph["parquet"], graph["tsv"], graph["labels"]):
                Path(path).unlink()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print()
    print(_format(rows, header=True))
    _print_scaling(rows)


def _rows(m: int, n: int, fmt: str, results: dict) -> list[tuple]:
    stream = results.get("stream")
    rows = []
    for method, result in results.items():
        if result is None:
            rows.append((m, n, fmt, method, None, None, None, None, "-", "timed out"))
            continue
        ratio = f"{result['seconds'] / stream['seconds']:.2f}x" if stream else "-"
        check = "-"
        if stream and method != "stream":
            same = np.allclose(result["values"], stream["values"], rtol=1e-9, atol=0)
            check = "equal" if same else f"DIFFERENT {result['values']} vs {stream['values']}"
        rows.append(
            (
                m,
                n,
                fmt,
                method,
                result["seconds"],
                result["cpu_seconds"],
                m / result["seconds"],
                result["peak_rss_gib"],
                ratio,
                check,
            )
        )
    return rows


def _format(rows: list[tuple], header: bool = False) -> str:
    names = (
        "edges",
        "nodes",
        "input",
        "method",
        "seconds",
        "CPU s",
        "edges/s",
        "peak RSS GiB",
        "time / stream",
        "LC, homophilies",
    )
    lines = [names] if header else []
    for m, n, fmt, method, seconds, cpu, rate, rss, ratio, check in rows:
        lines.append(
            (
                f"{m:,}",
                f"{n:,}",
                fmt,
                method,
                "-" if seconds is None else f"{seconds:.1f}",
                "-" if cpu is None else f"{cpu:.1f}",
                "-" if rate is None else f"{rate / 1e6:.2f} M",
                "-" if rss is None else f"{rss:.2f}",
                ratio,
                check,
            )
        )
    widths = [max(len(line[k]) for line in lines) for k in range(len(names))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)) for line in lines)


def _print_scaling(rows: list[tuple]) -> None:
    """Edges/s of the streamed engine per input and workers, and the 1-billion-edge wall and CPU
    time they extrapolate to (linear fits)."""
    for fmt in ("parquet", "tsv"):
        for name in STREAM_WORKERS:
            stream = [(m, s, cpu) for m, _, f, method, s, cpu, *_ in rows if f == fmt and method == name and s]
            if len(stream) < 2:
                continue
            sizes, seconds, cpu = map(np.array, zip(*stream))
            wall, cpu = (np.polyfit(sizes, y, 1)[0] * 1e9 / 60 for y in (seconds, cpu))
            print(
                f"{name} from {fmt}: {', '.join(f'{m / s / 1e6:.2f} M' for m, s, _ in stream)} edges/s over "
                f"{', '.join(f'{m:,}' for m in sizes)} edges; linear fit per 1e9 edges: "
                f"{wall:.1f} min wall, {cpu:.1f} min CPU"
            )


if __name__ == "__main__":
    main()
