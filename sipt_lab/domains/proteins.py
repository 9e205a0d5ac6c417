"""The PROTEINS domain: protein sequences over a protein-protein interaction graph, TAPE's tasks.

Data directory (``--data DIR``, details and sources in ``docs/domains.md``):

* ``sequences.fasta``: the pre-training corpus (the paper: ~1.5M tree-of-life proteins), ids = the
  headers' first words;
* ``interactions.tsv``: ``id_a<TAB>id_b`` (or comma-separated) interactions among those ids;
* ``tape/<task>/``: TAPE's JSON split files of each task present, ``remote_homology`` (accuracy),
  ``fluorescence`` and ``stability`` (Spearman's rho), ``secondary_structure`` (``ss3``, 3 classes
  per residue, tested on CB513; per-token accuracy), and ``contact_prediction`` in
  ``tape/proteinnet/`` (ProteinNet's ``tertiary`` coordinates and ``valid_mask``; precision at L/5
  of medium- and long-range contacts, a pairwise head whose memory grows with L^2,
  :mod:`~sipt_lab.data.contacts`); at least one.

Samples: the corpus proteins, then each task's proteins (ids ``task/split/k``), which have no
interactions; a run pre-trains on the corpus only and fine-tunes on the task's published splits.
Graph ``interactions``: ``i ~ j`` when the list names the pair. Sequences are texts of amino-acid
letters, so the ``char`` encoder reads them as they are; a Hugging Face protein LM (``--init DIR``)
brings its own tokenizer (ProtBERT-style tokenizers expect spaced residues: such a model needs
``texts`` rewritten, which this domain does not do; ESM-2 reads plain sequences). Per-residue
tasks need one token per residue (the ``char`` tokenizer, ESM-2's); fine-tuning checks that and
rejects other tokenizers with a one-line error.
"""

from __future__ import annotations

from pathlib import Path

from sipt_lab.core.errors import SiptError
from sipt_lab.domains.base import Domain, LinkedData, add_split_tasks, id_pairs, links_graph
from sipt_lab.domains.loaders import read_fasta, read_interactions, read_tape_task
from sipt_lab.domains.task_loaders import TAPE_TARGETS, tape_stem

#: TAPE task -> task kind.
TAPE_KINDS = {
    "remote_homology": "classification",
    "fluorescence": "regression",
    "stability": "regression",
    "secondary_structure": "token-classification",
    "contact_prediction": "contact-prediction",
}
LAYOUT = (
    "sequences.fasta, interactions.tsv and tape/<task>/ "
    "(TAPE JSON: remote_homology, fluorescence, stability, secondary_structure, proteinnet)"
)


def load_proteins(directory: Path) -> LinkedData:
    """The corpus, its interactions and every TAPE task under ``directory/tape`` (see the module docstring)."""
    corpus = read_fasta(directory / "sequences.fasta")
    graph = read_interactions(directory / "interactions.tsv", corpus.ids)
    entries = {
        name: (TAPE_KINDS[name], read_tape_task(directory / "tape" / tape_stem(name), name))
        for name in TAPE_TARGETS
        if (directory / "tape" / tape_stem(name)).is_dir()
    }
    if not entries:
        raise SiptError(
            f"{directory / 'tape'} holds no TAPE task directory; add one of {', '.join(map(tape_stem, TAPE_TARGETS))} "
            "(`sipt-lab data fetch tape-<task>`)"
        )
    ids, texts, tasks, splits = add_split_tasks(corpus.ids, corpus.sequences, entries)
    return LinkedData(ids, texts, tasks, splits=splits, links=id_pairs(corpus.ids, graph))


PROTEINS = Domain(
    name="proteins",
    description="protein sequences over their interactions (tree of life), TAPE tasks",
    load=load_proteins,
    graphs={"interactions": links_graph},
    default_task="remote_homology",
    layout=LAYOUT,
    default_init="char",
)
