"""Converters of the paper's published network data to the layouts its domains read
(``sipt-lab data convert``), streamed with progress bars, each output file written atomically.

* :func:`convert_string`: STRING-id interaction lists (the tree-of-life interactomes, or STRING's
  ``protein.links`` files: ``protein1 protein2 [combined_score]`` a line, whitespace-separated, an
  optional header) and STRING's FASTA (``>9606.ENSP00000000233``) -> the ``proteins`` domain's
  ``sequences.fasta`` (the proteins that interact, with a sequence) and ``interactions.tsv``;
* :func:`convert_pyg_bio`: Hu et al.'s biological graphs in PyTorch Geometric's processed format
  (``dataset/supervised/processed/geometric_data_processed.pt``, ``(data, slices)`` of ego-networks
  with ``edge_attr`` ``(2E, 9)``, the first 7 columns the interaction types, and per graph
  ``go_target_pretrain`` and ``go_target_downstream``) -> the ``networks`` domain's TUDataset
  (``ppi_A.txt``, ``ppi_graph_indicator.txt``, ``ppi_edge_attributes.txt`` with the 7 types) and
  ``go_pretrain.tsv`` / ``go_finetune.tsv``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import atomic_writer, stream_text_lines
from sipt_lab.core.outputs import check_new_files, written_together
from sipt_lab.core.progress import progress_bar

#: Header words of an interaction list's first line (STRING's ``protein1 protein2 combined_score``).
_HEADER_WORDS = {"protein1", "protein2", "protein_a", "protein_b", "node1", "node2"}
#: Columns of Hu et al.'s ``edge_attr`` that are interaction types (the last two flag self-loops and masking).
BIO_EDGE_TYPES = 7


def _lines(path: Path, what: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of the text file ``path`` (``.gz`` allowed), streamed with a progress bar."""
    return stream_text_lines(path, what, lambda handle: progress_bar(handle, desc=path.name, unit=" lines"))


def _taxon(path: Path) -> str | None:
    """The NCBI taxon a STRING-style file name starts with (``9606.protein.links...``, ``9606.txt``), or None."""
    head = path.name.split(".", 1)[0]
    return head if head.isdigit() else None


def _links(path: Path, min_score: int) -> Iterator[tuple[str, str]]:
    """The id pairs of the interaction list ``path`` whose score (third column, when present) is at
    least ``min_score``; ids without the file's taxon prefix get it (``ENSP1`` in ``9606.txt`` ->
    ``9606.ENSP1``), as STRING's FASTA names them."""
    taxon = _taxon(path)
    for number, line in _lines(path, "interaction list"):
        fields = line.split()
        if not fields:
            continue
        if number == 1 and (fields[0].lower() in _HEADER_WORDS or (len(fields) > 2 and not fields[2].isdigit())):
            continue
        if len(fields) < 2 or (len(fields) > 2 and not fields[2].isdigit()):
            raise SiptError(
                f"interaction list {path} line {number} is not 'protein1 protein2 [score]'; "
                "pass STRING links or tree-of-life interactome files"
            )
        if len(fields) > 2 and int(fields[2]) < min_score:
            continue
        a, b = (name if taxon is None or name.startswith(f"{taxon}.") else f"{taxon}.{name}" for name in fields[:2])
        yield a, b


def _fasta(path: Path) -> Iterator[tuple[str, str]]:
    """``(id, sequence)`` of the FASTA file ``path``, streamed (id: the header's first word)."""
    name, chunks = None, []
    for number, line in _lines(path, "FASTA file"):
        if line.startswith(">"):
            if name is not None:
                yield name, "".join(chunks)
            words = line[1:].split()
            if not words:
                raise SiptError(f"FASTA file {path} line {number}: header without an id; write '>ID description'")
            name, chunks = words[0], []
        elif line.strip():
            if name is None:
                raise SiptError(f"FASTA file {path} line {number}: sequence before the first '>' header")
            chunks.append("".join(line.split()))
    if name is not None:
        yield name, "".join(chunks)


@dataclass(frozen=True)
class StringConversion:
    """What :func:`convert_string` wrote and left out. Attributes: ``proteins`` written to
    ``sequences.fasta``; ``interactions`` lines written to ``interactions.tsv``; ``without_sequence``
    interacting proteins no FASTA holds (their interactions dropped); ``dropped`` interactions
    dropped for them; ``repeated`` FASTA records of an id already written (the first kept);
    ``self_loops`` interactions of a protein with itself and ``duplicates`` interactions of a pair
    already written (in either direction, as STRING lists each pair twice), both dropped as every
    graph reader drops them."""

    proteins: int
    interactions: int
    without_sequence: int
    dropped: int
    repeated: int
    self_loops: int = 0
    duplicates: int = 0


def convert_string(
    links: list[str | Path], fastas: list[str | Path], out: str | Path, min_score: int = 0, *, overwrite: bool = False
) -> StringConversion:
    """``out/sequences.fasta`` and ``out/interactions.tsv`` from STRING-id interaction lists and
    STRING's FASTA files, in three streamed passes: the interacting ids, the FASTA records of those
    ids (an empty sequence counts as none), then the interactions whose both ids have a sequence.
    Interactions with a score below ``min_score`` (STRING's ``combined_score``, 0-1000) are left out.
    Existing output files are replaced only with ``overwrite``, an input never. SiptError for a
    missing file, a malformed line, or nothing to write."""
    links, fastas, out = [Path(p) for p in links], [Path(p) for p in fastas], Path(out)
    if not links or not fastas:
        raise SiptError("convert STRING data: pass at least one interaction list and one FASTA file")
    check_new_files([out / "sequences.fasta", out / "interactions.tsv"], [*links, *fastas], overwrite=overwrite)
    wanted = {name for path in links for pair in _links(path, min_score) for name in pair}
    if not wanted:
        scored = f" scored at least {min_score}" if min_score else ""
        raise SiptError(
            f"the interaction lists hold no interaction{scored}; pass STRING links or interactome files"
            + (", or a lower minimum score (0-1000)" if min_score else "")
        )
    with written_together(out, ["sequences.fasta", "interactions.tsv"]):  # a full disk half-way: neither
        written, repeated = set(), 0
        with atomic_writer(out / "sequences.fasta", "w") as handle:
            for path in fastas:
                for name, sequence in _fasta(path):
                    if name in written:
                        repeated += 1
                    elif name in wanted and sequence:
                        handle.write(f">{name}\n{sequence}\n")
                        written.add(name)
        if not written:
            raise SiptError(
                f"no protein of the {len(wanted):,} in the interaction lists has a sequence in the FASTA files; "
                "pass the FASTA of the same STRING release and species"
            )
        index = {name: number for number, name in enumerate(written)}
        pairs: set[int] = set()  # min * n + max of each pair written: an int per pair, not two strings
        dropped = self_loops = duplicates = 0
        with atomic_writer(out / "interactions.tsv", "w") as handle:
            handle.write("protein_a\tprotein_b\n")
            for path in links:
                for a, b in _links(path, min_score):
                    if a not in index or b not in index:
                        dropped += 1
                    elif a == b:
                        self_loops += 1
                    elif (pair := min(index[a], index[b]) * len(index) + max(index[a], index[b])) in pairs:
                        duplicates += 1
                    else:
                        pairs.add(pair)
                        handle.write(f"{a}\t{b}\n")
    return StringConversion(len(written), len(pairs), len(wanted - written), dropped, repeated, self_loops, duplicates)


@dataclass(frozen=True)
class BioConversion:
    """What :func:`convert_pyg_bio` wrote. Attributes: ``graphs``, ``nodes``, ``edges`` (directed,
    as Hu et al. store both directions), ``pretrain_terms`` and ``finetune_terms`` (label columns)."""

    graphs: int
    nodes: int
    edges: int
    pretrain_terms: int
    finetune_terms: int


def _tensors(stored) -> dict:
    """The tensors of a collated ``Data`` as ``{key: tensor}``: PyG 2's (``to_dict``), a PyG 1 object
    pickled without PyG 2's store (its ``__dict__``), or a plain dict (PyG >= 2.4's saved form)."""
    import torch

    if isinstance(stored, dict):
        mapping = stored
    elif "_store" in vars(stored):
        mapping = stored.to_dict()
    else:
        mapping = vars(stored)
    return {key: value for key, value in mapping.items() if torch.is_tensor(value)}


def _read_processed(path: Path) -> tuple[dict, dict]:
    """``(tensors, slices)`` of a PyG ``InMemoryDataset`` file (``torch.save((data, slices))``)."""
    import torch

    try:
        stored = torch.load(path, map_location="cpu", weights_only=False)  # a pickle: the user's own download
    except FileNotFoundError:
        raise SiptError(f"PyG processed file {path} does not exist; pass geometric_data_processed.pt") from None
    except Exception as error:
        raise SiptError(f"cannot load PyG processed file {path} ({error}); pass Hu et al.'s .pt file") from None
    if not isinstance(stored, (tuple, list)) or len(stored) < 2 or not isinstance(stored[1], dict):
        raise SiptError(f"{path} is not a PyG InMemoryDataset file ((data, slices)); pass geometric_data_processed.pt")
    tensors, slices = _tensors(stored[0]), stored[1]
    needed = ("x", "edge_index", "edge_attr", "go_target_pretrain", "go_target_downstream")
    missing = [key for key in needed if key not in tensors or key not in slices]
    if missing:
        raise SiptError(
            f"{path} has no {', '.join(missing)}; pass Hu et al.'s supervised bio graphs "
            "(dataset/supervised/processed/geometric_data_processed.pt)"
        )
    slices = {key: np.asarray(value) for key, value in slices.items() if key in needed}
    problem = _bio_problem(tensors, slices)
    if problem:
        raise SiptError(f"{path} is not Hu et al.'s bio dataset ({problem}); pass their geometric_data_processed.pt")
    return tensors, slices


def _bio_problem(tensors: dict, slices: dict) -> str | None:
    """What in a processed file's tensors and slices differs from Hu et al.'s layout, or None:
    ``edge_index`` ``(2, E)`` integers, ``edge_attr`` ``(E, >= 7)``, and per key a slice vector
    ``(graphs + 1,)`` of integers that rises from 0 to the key's number of rows."""
    edge_index, edge_attr = tensors["edge_index"], tensors["edge_attr"]
    if edge_index.dim() != 2 or edge_index.shape[0] != 2 or edge_index.is_floating_point():
        return f"edge_index has shape {tuple(edge_index.shape)}, not (2, E) integers"
    if edge_attr.dim() != 2 or edge_attr.shape[0] != edge_index.shape[1] or edge_attr.shape[1] < BIO_EDGE_TYPES:
        return (
            f"edge_attr has shape {tuple(edge_attr.shape)}, not ({edge_index.shape[1]}, >= {BIO_EDGE_TYPES}): "
            f"the first {BIO_EDGE_TYPES} columns are the interaction types"
        )
    lengths = {len(bounds) for bounds in slices.values()}
    for key, bounds in slices.items():
        rows = tensors[key].shape[1] if key == "edge_index" else (tensors[key].shape[0] if tensors[key].dim() else 0)
        if (
            bounds.ndim != 1
            or len(lengths) != 1
            or not np.issubdtype(bounds.dtype, np.integer)
            or bounds.size < 1
            or bounds[0] != 0
            or bounds[-1] != rows
            or (np.diff(bounds) < 0).any()
        ):
            return f"the slices of {key} do not cut its {rows} rows into the same graphs as the other keys"
    return None


def convert_pyg_bio(
    processed: str | Path, out: str | Path, name: str = "ppi", *, overwrite: bool = False
) -> BioConversion:
    """The networks domain's files in ``out`` from Hu et al.'s processed bio graphs ``processed``.

    Per graph ``g`` (numbered from 1): its nodes in ``NAME_graph_indicator.txt`` (Hu et al.'s nodes
    have no attributes, so no node-label file), its directed edges as 1-based global node numbers in
    ``NAME_A.txt`` and, line for line, their 7 interaction types (0/1, the first 7 ``edge_attr``
    columns) in ``NAME_edge_attributes.txt``; ``go_pretrain.tsv`` lists the columns set in its
    ``go_target_pretrain`` (named ``pretrain-K``), ``go_finetune.tsv`` those of
    ``go_target_downstream`` (``downstream-K``), every graph listed (an empty set is a negative for
    every term). Existing output files are replaced only with ``overwrite``. SiptError for a file
    that is not such a dataset."""
    processed, out = Path(processed), Path(out)
    files = ("A", "graph_indicator", "edge_attributes", "go_pretrain", "go_finetune")
    paths = [out / f"{name}_{stem}.txt" for stem in files[:3]] + [out / f"{stem}.tsv" for stem in files[3:]]
    check_new_files(paths, [processed], overwrite=overwrite)
    tensors, slices = _read_processed(processed)
    edge_index, edge_types = tensors["edge_index"].numpy(), tensors["edge_attr"][:, :BIO_EDGE_TYPES].numpy()
    pretrain, downstream = tensors["go_target_pretrain"].numpy(), tensors["go_target_downstream"].numpy()
    node_bounds, edge_bounds = slices["x"], slices["edge_index"]
    term_bounds = {"pretrain": slices["go_target_pretrain"], "downstream": slices["go_target_downstream"]}
    term_columns = ((pretrain, term_bounds["pretrain"]), (downstream, term_bounds["downstream"]))
    n_graphs = len(node_bounds) - 1
    with (
        atomic_writer(paths[0], "w") as adjacency,
        atomic_writer(paths[1], "w") as indicator,
        atomic_writer(paths[2], "w") as attributes,
        atomic_writer(paths[3], "w") as go_pretrain,
        atomic_writer(paths[4], "w") as go_finetune,
    ):
        for g in progress_bar(range(n_graphs), desc="graphs", unit=" graphs"):
            first, nodes = int(node_bounds[g]), int(node_bounds[g + 1] - node_bounds[g])
            lo, hi = int(edge_bounds[g]), int(edge_bounds[g + 1])
            edges = edge_index[:, lo:hi]
            if edges.size and (edges.min() < 0 or edges.max() >= nodes):
                raise SiptError(
                    f"{processed} graph {g + 1} has an edge to node {int(edges.max())} of its {nodes}; "
                    "the file is not Hu et al.'s dataset (edge indices must be per graph)"
                )
            indicator.write(f"{g + 1}\n" * nodes)
            adjacency.writelines(f"{a + first + 1}, {b + first + 1}\n" for a, b in edges.T.tolist())
            attributes.writelines(",".join(map(str, row)) + "\n" for row in edge_types[lo:hi].astype(int).tolist())
            for handle, prefix, values in (
                (go_pretrain, "pretrain", pretrain),
                (go_finetune, "downstream", downstream),
            ):
                bounds = term_bounds[prefix]
                columns = np.flatnonzero(values[bounds[g] : bounds[g + 1]].reshape(-1) > 0)
                handle.write(f"{g + 1}\t{';'.join(f'{prefix}-{k}' for k in columns.tolist())}\n")
    return BioConversion(
        n_graphs,
        int(node_bounds[-1]),
        int(edge_bounds[-1]),
        *(values[bounds[0] : bounds[1]].size if n_graphs else 0 for values, bounds in term_columns),
    )
