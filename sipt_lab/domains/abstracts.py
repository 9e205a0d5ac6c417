"""The ABSTRACTS domain: papers' titles and abstracts over their citations, SciBERT's classification tasks.

Data directory (``--data DIR``, details and sources in ``docs/domains.md``):

* ``papers.jsonl``: one paper a line, ``{"id", "title", "abstract", "citations": [ids]}`` (the paper:
  ~650k Microsoft Academic Graph abstracts);
* ``tasks/<task>/``: SciBERT text-classification tasks (``train.txt``, ``dev.txt``, ``test.txt``,
  JSON Lines ``{"text", "label"}``), e.g. ``mag`` (paper field), ``sci-cite``, ``acl-arc``, and
  ``sciie-relation-extraction`` (SciERC relation extraction: each sentence marks the relation's two
  entities ``<< ... >>`` and ``[[ ... ]]``, checked on reading); at least one.

Samples: the papers (``title abstract``), then each task's sentences (ids ``task/split/k``), which
cite nothing; a run pre-trains on the papers only and fine-tunes on the task's published splits,
scored by macro-F1 (task kind ``classification-f1``). Graph ``citations``: ``i ~ j`` when either
cites the other (the directed citation list, symmetrised).
"""

from __future__ import annotations

from pathlib import Path

from sipt_lab.core.errors import SiptError
from sipt_lab.domains.base import Domain, LinkedData, add_split_tasks, id_pairs, links_graph
from sipt_lab.domains.loaders import read_papers, read_scibert_task

LAYOUT = "papers.jsonl and tasks/<task>/ (SciBERT train.txt, dev.txt, test.txt)"


def load_abstracts(directory: Path) -> LinkedData:
    """The papers, their citations and every task under ``directory/tasks`` (see the module docstring)."""
    papers = read_papers(directory / "papers.jsonl")
    task_dirs = sorted(path for path in (directory / "tasks").glob("*") if path.is_dir())
    if not task_dirs:
        raise SiptError(
            f"{directory / 'tasks'} holds no task directory; add a SciBERT task "
            "(train.txt, dev.txt, test.txt) such as tasks/sci-cite"
        )
    ids, texts, tasks, splits = add_split_tasks(
        papers.ids, papers.texts, {path.name: ("classification-f1", read_scibert_task(path)) for path in task_dirs}
    )
    return LinkedData(ids, texts, tasks, splits=splits, links=id_pairs(papers.ids, papers.graph))


ABSTRACTS = Domain(
    name="abstracts",
    description="paper titles + abstracts over their citations (MAG), SciBERT classification tasks",
    load=load_abstracts,
    graphs={"citations": links_graph},
    default_task="mag",
    layout=LAYOUT,
)
