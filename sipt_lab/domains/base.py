"""What a domain is: its samples, its fine-tuning tasks and its pre-training graphs.

A domain is a :class:`Domain`, plain data that each domain module defines and
:data:`sipt_lab.domains.registry.DOMAINS` lists by name; :meth:`Domain.read` returns a
:class:`DomainData` (or a subclass carrying the domain's own fields), from the domain's own files
(``wiki``) or from a data directory the user gives (``--data DIR``; the expected files of each
domain are its ``layout``, documented in ``docs/domains.md``), and each of its ``graphs`` is
a builder ``(data, seed) -> PretrainingGraph`` over the samples ``0..n-1``, a ``G_PT`` choice the
user names. A new domain or graph is a table entry, never a branch in the code that runs it.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.data.splits import Splits
from sipt_lab.data.tasks import Task, get_task_kind
from sipt_lab.graphs.consistency import local_consistency
from sipt_lab.graphs.graph import PretrainingGraph


@dataclass(frozen=True)
class DomainData:
    """A domain's samples and tasks.

    Attributes:
        ids: ``(n,)`` distinct sample ids (what ``SPLITS.tsv`` and edge files name).
        texts: ``(n,)`` the samples' texts (for sequence encoders; a graph domain's short descriptions).
        tasks: task name -> :class:`~sipt_lab.data.tasks.Task` over some of the samples.
        splits: task name -> the task's published :class:`~sipt_lab.data.splits.Splits`
            (TAPE's, SciBERT's); a task without an entry is split at random per seed.
    """

    ids: list[str]
    texts: list[str]
    tasks: dict[str, Task]
    splits: dict[str, Splits] = field(default_factory=dict, kw_only=True)

    @property
    def samples(self) -> list:
        """``(n,)`` what the encoder reads per sample: the texts here; a domain whose samples are
        not texts (graphs) overrides this."""
        return self.texts


GraphBuilder = Callable[[DomainData, int], PretrainingGraph]


@dataclass(frozen=True)
class Domain:
    """Attributes:
    name: its key in :data:`~sipt_lab.domains.registry.DOMAINS`.
    description: one line for listings.
    load: ``() -> DomainData`` when ``layout`` is empty, else ``(data directory) -> DomainData``.
    graphs: graph name -> builder ``(data, seed) -> PretrainingGraph``; the first is the default.
    default_task: the task a run fine-tunes unless told otherwise.
    layout: the files ``load`` reads from a data directory, in one line ("" when the domain brings
        its own data); ``docs/domains.md`` details them.
    default_init: the warm start of a run that names none (an ``--init`` value).
    encoder_source: ``(init, data) -> EncoderSource`` for domains whose encoder depends on the data
        (the GIN's attribute vocabulary); None uses :func:`~sipt_lab.models.encoder_source`.
    """

    name: str
    description: str
    load: Callable[..., DomainData]
    graphs: dict[str, GraphBuilder]
    default_task: str
    layout: str = ""
    default_init: str = "minilm"
    encoder_source: Callable[[str, DomainData], Any] | None = None

    def read(self, data_dir: str | Path | None = None) -> DomainData:
        """The domain's data: its own (``layout`` empty, ``data_dir`` None) or the directory ``data_dir``;
        SiptError when a needed directory is missing or one is given that the domain does not read."""
        if not self.layout:
            if data_dir is not None:
                raise SiptError(f"domain {self.name} brings its own data; drop DomainRunConfig.data_dir {data_dir}")
            return self.load()
        if data_dir is None:
            raise SiptError(
                f"domain {self.name} needs DomainRunConfig.data_dir DIR holding {self.layout}; "
                "see docs/domains.md (`sipt-lab data fetch` downloads the public files)"
            )
        if not Path(data_dir).is_dir():
            raise SiptError(f"data directory {data_dir} does not exist; pass the directory holding {self.layout}")
        return self.load(Path(data_dir))


def build_graph(domain: Domain, graph: str, data: DomainData, seed: int = 0, fit_on=None) -> PretrainingGraph:
    """Build ``domain``'s pre-training graph ``graph`` over ``data``; SiptError for an unknown name.
    ``fit_on``: indices of the pre-training samples, passed to a builder that fits statistics on the
    texts (one with a ``fit_on`` parameter: ``tfidf-knn``'s IDF), so held-out samples never shape them."""
    try:
        builder = domain.graphs[graph]
    except KeyError:
        raise SiptError(
            f"domain {domain.name!r} has no graph {graph!r}; choose one of: {', '.join(domain.graphs)}"
        ) from None
    if fit_on is not None and "fit_on" in inspect.signature(builder).parameters:
        return builder(data, seed, fit_on=fit_on)
    return builder(data, seed)


@dataclass(frozen=True)
class GraphSummary:
    """Attributes:
    n_edges: undirected edges of the graph.
    coverage: fraction of all samples with at least one edge.
    local_consistency: LC of the task over the graph the model was pre-trained on, induced on the
        task's labelled samples among its nodes (ties split; isolated samples left out), the bound
        of the paper's Theorem 1; None where the labels do not allow it: not one class per sample
        (regression, multi-label) or no edge among the task's samples there (a published task
        whose samples lie outside ``G_PT``).
    local_consistency_all_splits: LC of the task over the whole graph, induced on the task's
        labelled samples of every split (validation and test edges included); equal to
        ``local_consistency`` when no pre-training graph is given.
    """

    n_edges: int
    coverage: float
    local_consistency: float | None
    local_consistency_all_splits: float | None = None


def summarize_graph(
    graph: PretrainingGraph, task: Task, pretrained_on: tuple[PretrainingGraph, np.ndarray] | None = None
) -> GraphSummary:
    """Edges, coverage and the local consistency of ``task`` over ``graph``. ``pretrained_on``:
    ``(seen, nodes)``, the graph a model was pre-trained on (``graph`` less held-out edges, over
    the samples ``nodes`` ``(m,)``: node ``i`` of ``seen`` is sample ``nodes[i]``); LC is then
    reported over ``seen``, and the LC over ``graph`` kept as ``local_consistency_all_splits``."""
    everything = _task_consistency(graph.subgraph(task.samples), task.labels, task)
    if pretrained_on is None:
        seen_lc = everything
    else:
        seen, nodes = pretrained_on
        nodes = np.asarray(nodes, dtype=np.int64)
        labelled = np.flatnonzero(task.is_labelled(nodes))
        seen_lc = _task_consistency(seen.subgraph(labelled), task.labels_of(nodes[labelled]), task)
    return GraphSummary(
        n_edges=graph.n_edges,
        coverage=float(np.count_nonzero(graph.degrees()) / max(graph.n_nodes, 1)),
        local_consistency=seen_lc,
        local_consistency_all_splits=everything,
    )


def _task_consistency(induced: PretrainingGraph, labels: np.ndarray, task: Task) -> float | None:
    """LC of ``labels`` over ``induced`` (the task's labelled samples); None when ``task`` is not one
    class per sample or ``induced`` has no edge."""
    classes = task.labels.ndim == 1 and np.issubdtype(task.labels.dtype, np.integer)
    return local_consistency(induced, labels) if classes and induced.n_edges else None


#: ``dataclasses.field`` metadata of a :class:`DomainData` field that is not per sample (kept whole by :func:`subset`).
SHARED = {"shared": True}


def subset(data: DomainData, nodes) -> DomainData:
    """``data`` restricted to the samples ``nodes`` ``(k,)`` (sorted, distinct), renumbered ``0..k-1``:
    every per-sample list field is cut (fields marked :data:`SHARED` are kept whole), every task keeps
    its labels on the kept samples, every published split its kept samples."""
    nodes = np.asarray(nodes, dtype=np.int64)
    n = len(data.ids)
    fields = {}
    for item in dataclasses.fields(data):
        value = getattr(data, item.name)
        if item.metadata.get("shared"):
            fields[item.name] = value
        elif item.name == "tasks":
            fields["tasks"] = {name: _restrict_task(task, nodes) for name, task in value.items()}
        elif item.name == "splits":
            fields["splits"] = {name: _restrict_splits(splits, nodes) for name, splits in value.items()}
        elif isinstance(value, (list, tuple, np.ndarray)) and len(value) == n:
            fields[item.name] = [value[i] for i in nodes.tolist()]
        else:
            fields[item.name] = value
    return type(data)(**fields)


def id_graph(ids: list[str], pairs: np.ndarray) -> PretrainingGraph:
    """The graph over the samples ``ids`` ``(n,)`` of the id pairs ``pairs`` ``(m, 2)`` (str), keeping
    the pairs whose both ids are samples (a slice of a domain keeps the links among its samples)."""
    names = np.asarray(ids, dtype=str)
    order = np.argsort(names)
    flat = np.asarray(pairs, dtype=str).reshape(-1)
    position = np.searchsorted(names[order], flat).clip(max=max(len(names) - 1, 0))
    found = (
        (names[order][position] == flat).reshape(-1, 2).all(axis=1) if len(names) else np.zeros(len(flat) // 2, bool)
    )
    ends = order[position].reshape(-1, 2)[found]
    return PretrainingGraph.from_edges(ends[:, 0], ends[:, 1], len(names))


def id_pairs(ids: list[str], graph: PretrainingGraph) -> np.ndarray:
    """``(m, 2)`` str: the edges of ``graph`` (over ``ids``) as id pairs, for :func:`id_graph`."""
    return np.asarray(ids, dtype=str)[graph.edges()] if graph.n_edges else np.empty((0, 2), dtype=str)


@dataclass(frozen=True)
class LinkedData(DomainData):
    """:class:`DomainData` plus ``links`` ``(m, 2)`` str: the id pairs of an external graph (interactions,
    citations), kept whole by :func:`subset`; :func:`links_graph` is the graph over the current samples."""

    links: np.ndarray = field(default_factory=lambda: np.empty((0, 2), dtype=str), metadata=SHARED)


def links_graph(data: LinkedData, seed: int = 0) -> PretrainingGraph:
    """``i ~ j`` when ``data.links`` pairs their ids (``seed`` unused)."""
    return id_graph(data.ids, data.links)


def add_split_tasks(ids: list[str], texts: list[str], entries: dict[str, tuple[str, Any]]):
    """The samples ``ids``, ``texts`` followed by the samples of tasks with published splits.

    Args:
        entries: task name -> ``(kind, SplitRecords)`` (:class:`~sipt_lab.domains.task_loaders.SplitRecords`).
    Returns ``(ids, texts, tasks, splits)``: new lists (task samples get ids ``name/split/k``), and per
    task its :class:`Task` (labels coded by the kind's :attr:`~sipt_lab.data.tasks.TaskKind.code`:
    classes by ``np.unique`` over all splits, regression targets as floats, per-token classes as
    arrays) and :class:`Splits`.
    """
    ids, texts, tasks, splits = list(ids), list(texts), {}, {}
    for name, (kind, records) in entries.items():
        first, parts, labels = len(ids), {}, []
        for split, split_texts in records.texts.items():
            parts[split] = np.arange(len(ids), len(ids) + len(split_texts), dtype=np.int64)
            ids += [f"{name}/{split}/{k}" for k in range(len(split_texts))]
            texts += split_texts
            labels += records.labels[split]
        coded, label_names = get_task_kind(kind).code(labels)
        tasks[name] = Task(name, kind, np.arange(first, len(ids), dtype=np.int64), coded, label_names)
        splits[name] = Splits(parts["train"], parts["validation"], parts["test"])
    return ids, texts, tasks, splits


def _restrict_task(task: Task, nodes: np.ndarray) -> Task:
    keep = task.is_labelled(nodes)
    return dataclasses.replace(task, samples=np.flatnonzero(keep).astype(np.int64), labels=task.labels_of(nodes[keep]))


def _restrict_splits(splits: Splits, nodes: np.ndarray) -> Splits:
    """``splits`` over the kept samples ``nodes`` (sorted), renumbered to positions in ``nodes``."""

    def kept(part: np.ndarray) -> np.ndarray:
        return np.flatnonzero(np.isin(nodes, part)).astype(np.int64)

    return Splits(kept(splits.train), kept(splits.validation), kept(splits.test))
