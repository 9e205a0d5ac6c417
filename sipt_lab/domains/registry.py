"""Domains by name: each gives its samples, its fine-tuning tasks and its pre-training graphs.

A domain is a :class:`Domain` registered with :func:`register_domain`; its ``load()`` returns a
:class:`DomainData` (or a subclass carrying the domain's own fields), and each of its ``graphs`` is
a builder ``(data, seed) -> PretrainingGraph`` over the samples ``0..n-1``, a ``G_PT`` choice the
user names. A new domain or graph is a registry entry, never a branch in the code that runs it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from sipt_lab.consistency import local_consistency
from sipt_lab.errors import SiptError
from sipt_lab.evaluation.tasks import Task
from sipt_lab.graph import PretrainingGraph


@dataclass(frozen=True)
class DomainData:
    """A domain's samples and tasks.

    Attributes:
        ids: ``(n,)`` distinct sample ids (what ``SPLITS.tsv`` and edge files name).
        texts: ``(n,)`` the samples' texts (for sequence encoders).
        tasks: task name -> :class:`~sipt_lab.evaluation.tasks.Task` over some of the samples.
    """

    ids: list[str]
    texts: list[str]
    tasks: dict[str, Task]


GraphBuilder = Callable[[DomainData, int], PretrainingGraph]


@dataclass(frozen=True)
class Domain:
    """Attributes:
    name: registry key.
    description: one line for listings.
    load: ``() -> DomainData``.
    graphs: graph name -> builder ``(data, seed) -> PretrainingGraph``; the first is the default.
    default_task: the task a run fine-tunes unless told otherwise.
    """

    name: str
    description: str
    load: Callable[[], DomainData]
    graphs: dict[str, GraphBuilder]
    default_task: str


DOMAINS: dict[str, Domain] = {}


def register_domain(domain: Domain) -> Domain:
    """Add ``domain`` to :data:`DOMAINS` (a duplicate name is a programming error)."""
    if domain.name in DOMAINS:
        raise KeyError(f"domain {domain.name!r} is already registered")
    DOMAINS[domain.name] = domain
    return domain


def get_domain(name: str) -> Domain:
    """The registered domain ``name``; SiptError naming the choices otherwise."""
    _load_builtin_domains()
    try:
        return DOMAINS[name]
    except KeyError:
        raise SiptError(f"unknown domain {name!r}; choose one of: {', '.join(domain_names())}") from None


def domain_names() -> list[str]:
    _load_builtin_domains()
    return list(DOMAINS)


def build_graph(domain: Domain, graph: str, data: DomainData, seed: int = 0) -> PretrainingGraph:
    """Build ``domain``'s pre-training graph ``graph`` over ``data``; SiptError for an unknown name."""
    try:
        builder = domain.graphs[graph]
    except KeyError:
        raise SiptError(f"domain {domain.name!r} has no graph {graph!r}; choose one of: "
                        f"{', '.join(domain.graphs)}") from None
    return builder(data, seed)


@dataclass(frozen=True)
class GraphSummary:
    """Attributes:
    n_edges: undirected edges of the graph.
    coverage: fraction of all samples with at least one edge.
    local_consistency: LC of the task over the graph induced on the task's labelled samples
        (ties split; isolated samples left out), the bound of the paper's Theorem 1.
    """

    n_edges: int
    coverage: float
    local_consistency: float


def summarize_graph(graph: PretrainingGraph, task: Task) -> GraphSummary:
    """Edges, coverage and the local consistency of ``task`` over ``graph``."""
    return GraphSummary(
        n_edges=graph.n_edges,
        coverage=float(np.count_nonzero(graph.degrees()) / max(graph.n_nodes, 1)),
        local_consistency=local_consistency(graph.subgraph(task.samples), task.labels),
    )


def subset(data: DomainData, nodes) -> DomainData:
    """``data`` restricted to the samples ``nodes`` ``(k,)`` (sorted, distinct), renumbered ``0..k-1``:
    every per-sample list field is cut, every task keeps its labels on the kept samples."""
    nodes = np.asarray(nodes, dtype=np.int64)
    n = len(data.ids)
    fields = {}
    for item in dataclasses.fields(data):
        value = getattr(data, item.name)
        if item.name == "tasks":
            fields["tasks"] = {name: _restrict_task(task, nodes) for name, task in value.items()}
        elif isinstance(value, (list, tuple, np.ndarray)) and len(value) == n:
            fields[item.name] = [value[i] for i in nodes.tolist()]
        else:
            fields[item.name] = value
    return type(data)(**fields)


def _restrict_task(task: Task, nodes: np.ndarray) -> Task:
    keep = task.is_labelled(nodes)
    return dataclasses.replace(task, samples=np.flatnonzero(keep).astype(np.int64), labels=task.labels_of(nodes[keep]))


def _load_builtin_domains() -> None:
    # Importing the modules registers their domains.
    from sipt_lab.domains import wiki  # noqa: F401
