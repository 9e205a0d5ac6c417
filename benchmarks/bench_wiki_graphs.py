"""The ``wiki`` domain's pre-training graphs: edges, coverage and LC of the category task per graph.

Run as ``python benchmarks/bench_wiki_graphs.py``; prints the two tables of ``docs/wiki_mentions.md``
(every named mention rule plus two variants of the default, then ``tfidf-knn`` and ``random``).
Build seconds exclude loading the JSON, which happens once.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from sipt_lab.domains import summarize_graph
from sipt_lab.domains.wiki import (
    DEFAULT_MENTION_RULE,
    MENTION_RULES,
    load_wiki,
    mention_edges,
    random_graph,
    tfidf_knn_graph,
)
from sipt_lab.graphs.graph import PretrainingGraph

_DEFAULT = MENTION_RULES[DEFAULT_MENTION_RULE]
VARIANTS = {
    f"{DEFAULT_MENTION_RULE}, titles >= 4 chars": dataclasses.replace(_DEFAULT, min_chars=4),
    f"{DEFAULT_MENTION_RULE} + common words": dataclasses.replace(_DEFAULT, common_words=True),
}


def _row(name: str, build, task) -> str:
    start = time.perf_counter()
    graph = build()
    seconds = time.perf_counter() - start
    s = summarize_graph(graph, task)
    return f"| {name} | {s.n_edges:,} | {s.coverage:.3f} | {s.local_consistency:.3f} | {seconds:.1f} |"


def _mentions(data, rule) -> PretrainingGraph:
    edges = mention_edges(data.ids, data.texts, rule, data.descriptions)
    return PretrainingGraph.from_edges(edges[:, 0], edges[:, 1], len(data.ids))


def main() -> None:
    data = load_wiki()
    task = data.tasks["category"]
    shares = np.bincount(task.labels) / task.labels.size
    print(f"chance: sum of squared class shares {np.square(shares).sum():.3f}\n")
    print("| graph | edges | coverage | LC | build s |\n|---|---|---|---|---|")
    builds = {
        f"mentions `{name}`": (lambda rule=rule: _mentions(data, rule))
        for name, rule in {**MENTION_RULES, **VARIANTS}.items()
    }
    builds.update({f"tfidf-knn k={k}": (lambda k=k: tfidf_knn_graph(data, k=k)) for k in (5, 10)})
    builds.update({f"random seed {seed}": (lambda seed=seed: random_graph(data, seed)) for seed in (0, 1, 2)})
    for name, build in builds.items():
        print(_row(name, build, task), flush=True)


if __name__ == "__main__":
    main()
