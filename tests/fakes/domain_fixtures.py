"""Tiny data directories in the layouts of the proteins, abstracts and networks domains, with
planted structure (samples of one family are linked and share their labels)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

AMINO = "ACDEFGHIKLMNPQRSTVWY"
MOTIFS = ("KKRR", "WWYF", "DDEE")
#: The planted per-residue structure: each amino acid's 3-state class (helix / strand / coil formers).
SS3_OF = {**dict.fromkeys("AELMQKRH", 0), **dict.fromkeys("VIYFWT", 1), **dict.fromkeys("GPSNDC", 2)}


def _protein(rng, family: int) -> str:
    body = "".join(rng.choice(list(AMINO), size=int(rng.integers(8, 14))))
    return MOTIFS[family] + body + MOTIFS[family]


def write_proteins(
    root: Path,
    n_corpus: int = 30,
    per_split: tuple[int, int, int] = (12, 6, 6),
    seed: int = 0,
    ss_per_split: tuple[int, int, int] = (16, 6, 6),
) -> Path:
    """``sequences.fasta``, ``interactions.tsv`` (within a family) and TAPE remote_homology (family),
    fluorescence (motif-letter count) and secondary_structure (``ss3`` of each residue by its letter,
    :data:`SS3_OF`) files."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    families = np.arange(n_corpus) % 3
    (root / "sequences.fasta").write_text(
        "".join(f">P{k} protein {k}\n{_protein(rng, f)}\n" for k, f in enumerate(families))
    )
    pairs = [
        (a, b)
        for a in range(n_corpus)
        for b in range(a + 1, n_corpus)
        if families[a] == families[b] and rng.random() < 0.4
    ]
    (root / "interactions.tsv").write_text("protein_a\tprotein_b\n" + "".join(f"P{a}\tP{b}\n" for a, b in pairs))
    for task, field, suffixes in (
        ("remote_homology", "fold_label", ("train", "valid", "test_fold_holdout")),
        ("fluorescence", "log_fluorescence", ("train", "valid", "test")),
    ):
        (root / "tape" / task).mkdir(parents=True, exist_ok=True)
        for suffix, size in zip(suffixes, per_split):
            records = []
            for k in range(size):
                family = k % 3
                sequence = _protein(rng, family)
                label = family if rng.random() < 0.7 else int(rng.integers(3))  # noisy, so no arm is perfect
                value = (
                    label
                    if field == "fold_label"
                    else [float(sum(sequence.count(c) for c in "KWD")) + 3 * rng.normal()]
                )
                records.append({"id": f"{task}{k}", "primary": sequence, field: value})
            (root / "tape" / task / f"{task}_{suffix}.json").write_text(json.dumps(records))
    ss = root / "tape" / "secondary_structure"
    ss.mkdir(parents=True, exist_ok=True)
    for suffix, size in zip(("train", "valid", "cb513"), ss_per_split):
        records = []
        for k in range(size):
            sequence = _protein(rng, k % 3)
            ss3 = [
                SS3_OF[c] if rng.random() < 0.9 else int(rng.integers(3)) for c in sequence
            ]  # noisy, so no arm is perfect
            records.append(
                {"id": f"ss{k}", "primary": sequence, "ss3": ss3, "ss8": ss3, "protein_length": len(sequence)}
            )
        (ss / f"secondary_structure_{suffix}.json").write_text(json.dumps(records))
    return root


TOPICS = (("protein", "folding", "enzyme", "cell"), ("graph", "network", "algorithm", "theorem"))


def write_abstracts(
    root: Path, n_papers: int = 30, per_split: tuple[int, int, int] = (16, 8, 12), seed: int = 0
) -> Path:
    """``papers.jsonl`` (citations within a topic) and a SciBERT-style ``tasks/sci-topic``."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    topics = np.arange(n_papers) % 2

    def sentence(topic: int) -> str:
        return " ".join(rng.choice(TOPICS[topic], size=6))

    lines = []
    for k, topic in enumerate(topics):
        cited = [f"W{j}" for j in range(n_papers) if j != k and topics[j] == topic and rng.random() < 0.2]
        lines.append(
            json.dumps(
                {
                    "id": f"W{k}",
                    "title": sentence(topic),
                    "abstract": sentence(topic),
                    "citations": cited + ["W-unknown"],
                }
            )
        )
    (root / "papers.jsonl").write_text("\n".join(lines) + "\n")
    task = root / "tasks" / "sci-topic"
    task.mkdir(parents=True, exist_ok=True)
    for name, size in zip(("train", "dev", "test"), per_split):
        rows = [
            {
                "text": sentence(k % 2),
                "label": ("bio", "cs")[k % 2 if rng.random() < 0.5 else int(rng.integers(2))],
                "metadata": {},
            }
            for k in range(size)
        ]
        (task / f"{name}.txt").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return root


def write_networks(root: Path, n_graphs: int = 64, seed: int = 0) -> Path:
    """A TUDataset ``ppi`` of rings (codes 0/1) and stars (codes 2/3), GO terms by shape."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    edges, indicator, codes, pretrain, finetune = [], [], [], [], []
    first = 1
    for g in range(n_graphs):
        shape = g % 2
        size = int(rng.integers(4, 8))
        nodes = np.arange(first, first + size)
        pairs = (
            [(nodes[k], nodes[(k + 1) % size]) for k in range(size)]
            if shape == 0
            else [(nodes[0], v) for v in nodes[1:]]
        )
        edges += [f"{a}, {b}" for a, b in pairs] + [f"{b}, {a}" for a, b in pairs]
        indicator += [str(g + 1)] * size
        codes += [str(2 * shape + int(rng.integers(2)))] * size
        first += size
        terms = [f"GO:{shape}{t}" for t in range(8)] + ([f"GO:9{int(rng.integers(3))}"] if rng.random() < 0.5 else [])
        pretrain.append(f"{g + 1}\t{';'.join(terms)}")
        if g < n_graphs - 4:  # a few graphs are unlabelled for the task
            shown = shape if rng.random() < 0.75 else 1 - shape  # noisy, so no arm is perfect
            task_terms = [("GO:ring", "GO:star")[shown]] + (["GO:any"] if rng.random() < 0.5 else [])
            finetune.append(f"{g + 1}\t{';'.join(task_terms)}")
    (root / "ppi_A.txt").write_text("\n".join(edges) + "\n")
    (root / "ppi_graph_indicator.txt").write_text("\n".join(indicator) + "\n")
    (root / "ppi_node_labels.txt").write_text("\n".join(codes) + "\n")
    (root / "go_pretrain.tsv").write_text("\n".join(pretrain) + "\n")
    (root / "go_finetune.tsv").write_text("\n".join(finetune) + "\n")
    return root


def hairpin(length: int, rng=None) -> list[list[float]]:
    """``(length, 3)`` coordinates of a hairpin: residues 3.8 A apart along x, the second half folded
    back 5 A away, so residue ``i`` touches ``length - 1 - i`` (and its neighbours)."""
    half = (length + 1) // 2
    points = [[3.8 * i, 0.0, 0.0] if i < half else [3.8 * (length - 1 - i), 5.0, 0.0] for i in range(length)]
    if rng is not None:
        points = (np.asarray(points) + rng.normal(0, 0.3, (length, 3))).tolist()
    return points


def cysteine_cluster(sequence: str, rng) -> list[list[float]]:
    """``(L, 3)`` coordinates with the planted contacts of :func:`write_contacts`: residues 3.8 A apart
    along x, except the cysteines, gathered (within 1 A) 50 A away, so that two residues are in
    contact (< 8 A, at least 6 apart in sequence) exactly when both are cysteines."""
    return [
        (rng.normal(0, 0.3, 3) + [0.0, 50.0, 0.0]).tolist() if c == "C" else [3.8 * i, 0.0, 0.0]
        for i, c in enumerate(sequence)
    ]


def write_contacts(root: Path, per_split: tuple[int, int, int] = (8, 4, 4), seed: int = 0) -> Path:
    """TAPE's contact-prediction files in ``root/tape/proteinnet`` (``proteinnet_{train,valid,test}.json``,
    records ``{"id", "primary", "tertiary", "valid_mask"}`` as TAPE's JSON release): 30-40 residues,
    one in five a cysteine, in contact with each other (:func:`cysteine_cluster`), one residue in
    twenty unresolved."""
    rng = np.random.default_rng(seed)
    directory = root / "tape" / "proteinnet"
    directory.mkdir(parents=True, exist_ok=True)
    others = [a for a in AMINO if a != "C"]
    for suffix, size in zip(("train", "valid", "test"), per_split):
        records = []
        for k in range(size):
            length = int(rng.integers(30, 41))
            sequence = "".join("C" if rng.random() < 0.2 else rng.choice(others) for _ in range(length))
            records.append(
                {
                    "id": f"{suffix}{k}",
                    "primary": sequence,
                    "tertiary": cysteine_cluster(sequence, rng),
                    "valid_mask": (rng.random(length) > 0.05).tolist(),
                }
            )
        (directory / f"proteinnet_{suffix}.json").write_text(json.dumps(records))
    return root


#: SciERC's relations (SciBERT's ``sciie-relation-extraction`` labels), two for the fixture.
RELATION_WORDS = {"USED-FOR": ("uses", "applies"), "PART-OF": ("contains", "includes")}


def write_relations(root: Path, per_split: tuple[int, int, int] = (16, 8, 8), seed: int = 0) -> Path:
    """SciBERT's ``tasks/sciie-relation-extraction/{train,dev,test}.txt`` in ``root``: JSON Lines
    ``{"text", "label", "metadata"}``, each sentence marking its two entities ``<< >>`` and ``[[ ]]``;
    the relation is planted in the verb between them (noisy)."""
    rng = np.random.default_rng(seed)
    task = root / "tasks" / "sciie-relation-extraction"
    task.mkdir(parents=True, exist_ok=True)
    labels = list(RELATION_WORDS)
    for name, size in zip(("train", "dev", "test"), per_split):
        rows = []
        for k in range(size):
            label = labels[k % 2]
            verb = RELATION_WORDS[label if rng.random() < 0.8 else labels[1 - k % 2]][int(rng.integers(2))]
            first, second = rng.choice(TOPICS[k % 2], size=2)
            rows.append(
                {"text": f"the << {first} >> {verb} [[ {second} ]] .", "label": label, "metadata": [1, 1, 4, 4]}
            )
        (task / f"{name}.txt").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return root


def bio_graphs(n_graphs: int = 24, seed: int = 0, pretrain_terms: int = 12, downstream_terms: int = 4) -> list:
    """Ego-networks as Hu et al.'s bio loader makes them: ``x`` ``(n, 1)`` ones, ``edge_index`` both
    directions of each edge, ``edge_attr`` ``(2E, 9)`` (7 interaction types, then the self-loop and
    mask flags, 0), ``species_id``, ``center_node_idx`` and the centre's ``go_target_pretrain`` /
    ``go_target_downstream`` 0/1 vectors. Rings' edges are of type 0 (and 4 or not), stars' of
    type 1 (and 5 or not), and their GO terms follow the shape, so masked edges are learnable."""
    import torch
    from torch_geometric.data import Data

    rng = np.random.default_rng(seed)
    graphs = []
    for g in range(n_graphs):
        shape, size = g % 2, int(rng.integers(4, 8))
        pairs = [(k, (k + 1) % size) for k in range(size)] if shape == 0 else [(0, k) for k in range(1, size)]
        types = []
        for _ in pairs:
            row = [0] * 9
            row[shape] = 1
            row[4 + shape] = int(rng.random() < 0.5)
            types += [row, row]
        directed = [e for a, b in pairs for e in ((a, b), (b, a))]
        pretrain = np.zeros(pretrain_terms, dtype=np.int64)
        pretrain[shape * 6 : shape * 6 + 5] = 1
        downstream = np.zeros(downstream_terms, dtype=np.int64)
        downstream[shape if rng.random() < 0.8 else 1 - shape] = 1
        data = Data(
            x=torch.ones(size, 1),
            edge_index=torch.tensor(directed, dtype=torch.long).T.contiguous(),
            edge_attr=torch.tensor(types, dtype=torch.float),
        )
        data.species_id = torch.tensor([9606])
        data.center_node_idx = torch.tensor([0])
        data.go_target_pretrain = torch.as_tensor(pretrain)
        data.go_target_downstream = torch.as_tensor(downstream)
        graphs.append(data)
    return graphs


def write_bio_processed(path: Path, graphs: list, pyg1: bool = False) -> Path:
    """``torch.save((data, slices), path)`` as ``InMemoryDataset`` writes ``geometric_data_processed.pt``;
    ``pyg1``: the collated ``Data`` pickled as PyG 1 did (its tensors in its ``__dict__``, no PyG 2 store)."""
    import torch
    from torch_geometric.data import Data, InMemoryDataset

    data, slices = InMemoryDataset.collate(graphs)
    if pyg1:
        old = Data.__new__(Data)
        old.__dict__.update(data.to_dict())
        data = old
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save((data, slices), path)
    return path


def use_small_gin(monkeypatch) -> None:
    """The networks domain with a 16-wide GIN for the test (the paper's 300 is slow on 2 shared cores)."""
    from sipt_lab.domains import DOMAINS, get_domain
    from sipt_lab.models.graph_encoder import GINConfig, GraphInit

    monkeypatch.setitem(
        DOMAINS,
        "networks",
        dataclasses.replace(
            get_domain("networks"),
            encoder_source=lambda init, data: GraphInit(GINConfig(n_values=len(data.code_names), hidden=16)),
        ),
    )
