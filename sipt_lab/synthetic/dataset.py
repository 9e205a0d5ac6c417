"""The semi-synthetic dataset: sentences, a pre-training graph over them, and the FT labels.

Every graph family builds one :class:`SyntheticDataset`. It carries a held-out split built the same
way (same topics, same sampling) but never seen in pre-training, so the evaluation can go beyond the
paper's transductive leave-one-out protocol.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sipt_lab.core.fileio import write_json_atomic, write_text_atomic
from sipt_lab.graphs.consistency import local_consistency
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.graphs.tsv import write_edges_tsv, write_labels_tsv


@dataclass
class SyntheticDataset:
    """One semi-synthetic pre-training set.

    Attributes:
        family: family name (``"torus"``, ``"cliques"``, ...).
        sentences: the ``n`` pre-training samples.
        graph: ``G_PT`` over the samples (node ``i`` is ``sentences[i]``).
        labels: ``(n,)`` int FT labels (the sentence's most probable LDA topic).
        heldout_sentences: ``h`` samples built the same way, never in pre-training.
        heldout_labels: ``(h,)`` int FT labels of the held-out samples.
        params: how it was made: family, seed, noise, sizes and family-specific settings (JSON-able).
        tables: extra per-family tables written as ``<name>.tsv``: name -> (column names, rows).
    """

    family: str
    sentences: list[str]
    graph: PretrainingGraph
    labels: np.ndarray
    heldout_sentences: list[str]
    heldout_labels: np.ndarray
    params: dict[str, Any]
    tables: dict[str, tuple[tuple[str, ...], np.ndarray]] = field(default_factory=dict)

    @property
    def n_nodes(self) -> int:
        return self.graph.n_nodes

    @property
    def local_consistency(self) -> float:
        """``LC_G(labels)`` over the current ``graph`` (split ties), so it follows added noise."""
        return local_consistency(self.graph, self.labels)

    def meta(self) -> dict[str, Any]:
        """The JSON summary written as ``meta.json``."""
        return {
            "graph": self.family,
            "n_nodes": self.graph.n_nodes,
            "n_edges": self.graph.n_edges,
            "n_classes": int(np.unique(self.labels).size),
            "n_heldout": len(self.heldout_sentences),
            "local_consistency": self.local_consistency,
            **self.params,
        }

    def write(self, out_dir: str | Path) -> Path:
        """Write ``edges.tsv``, ``labels.tsv``, ``sentences.tsv``, ``heldout.tsv``, ``meta.json``
        and one ``<name>.tsv`` per extra table into ``out_dir``; returns the directory."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_edges_tsv(out / "edges.tsv", self.graph)
        write_labels_tsv(out / "labels.tsv", self.labels)
        write_text_atomic(out / "sentences.tsv", _sentence_table(self.sentences))
        write_text_atomic(
            out / "heldout.tsv",
            "".join(f"{label}\t{_one_line(s)}\n" for label, s in zip(self.heldout_labels, self.heldout_sentences)),
        )
        for name, (columns, rows) in self.tables.items():
            lines = ["#" + "\t".join(columns)] + ["\t".join(_cell(v) for v in row) for row in rows]
            write_text_atomic(out / f"{name}.tsv", "\n".join(lines) + "\n")
        write_json_atomic(out / "meta.json", json.loads(json.dumps(self.meta(), default=_json_default)))
        return out


def _sentence_table(sentences: list[str]) -> str:
    return "".join(f"{node}\t{_one_line(s)}\n" for node, s in enumerate(sentences))


def _one_line(sentence: str) -> str:
    return " ".join(sentence.split())


def _cell(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    return str(value)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to meta.json")
