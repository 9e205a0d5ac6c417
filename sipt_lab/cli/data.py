"""``sipt-lab data``: list the public datasets of the real domains, and download one, verified."""

from __future__ import annotations

import argparse

from sipt_lab.cli.arguments import integer, nonempty
from sipt_lab.domains.names import PINNED_DATASETS

#: What ``data --help`` says of checksums, from the registry's pinned datasets.
CHECKSUMS = (
    f"SHA-256 pinned: {', '.join(PINNED_DATASETS) or 'no dataset yet'}"
    + (" (each download checked against it, a mismatch refused and deleted)" if PINNED_DATASETS else "")
    + "; not pinned: every "
    + ("other " if PINNED_DATASETS else "")
    + "dataset (`data list` marks each): its source publishes no checksum, so `data fetch` refuses it without "
    "--allow-unpinned, which downloads it unchecked (a file already in DIR is kept as it is, unchecked) and "
    "records the digests it saw in DIR/SHA256SUMS, a record rather than a check until they are pinned in "
    "sipt_lab/domains/datasets.py (RemoteFile.sha256)."
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "data",
        help="list, download or convert the public datasets of the proteins, abstracts and networks domains",
        description="`data list` names each dataset with its domain, contents, source, licence and whether "
        "its SHA-256 is pinned; `data fetch NAME --to DIR` downloads it into DIR (archives unpacked) and records "
        f"the digests in DIR/SHA256SUMS. {CHECKSUMS} `data convert FORMAT` turns published network data "
        "(STRING-id interactomes, Hu et al.'s PyG graphs) into a domain's layout. Where the files go in a "
        "domain's --data directory: docs/domains.md.",
    )
    actions = parser.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    actions.add_parser("list", help="the registered datasets").set_defaults(func=run_list)
    fetch = actions.add_parser("fetch", help="download one dataset", description=CHECKSUMS)
    fetch.add_argument("name", metavar="NAME", help="dataset, e.g. tape-fluorescence (see `data list`)")
    fetch.add_argument(
        "--to", required=True, type=nonempty, metavar="DIR", help="directory to download into (created if missing)"
    )
    fetch.add_argument(
        "--allow-unpinned",
        action="store_true",
        help="download files without a pinned SHA-256 unchecked, recording their digests",
    )
    fetch.set_defaults(func=run_fetch)
    convert = actions.add_parser(
        "convert", help="convert published network data to a domain's layout (streamed, with progress)"
    ).add_subparsers(dest="convert_format", metavar="FORMAT", required=True)
    string = convert.add_parser(
        "string",
        help="STRING-id interaction lists + STRING FASTA -> the proteins domain's sequences.fasta and interactions.tsv",
        description="Reads tree-of-life interactome files or STRING protein.links files ('protein1 protein2 "
        "[combined_score]', .gz allowed; ids without the file's taxon prefix get it) and STRING's FASTA, and "
        "writes DIR/sequences.fasta (the interacting proteins with a sequence) and DIR/interactions.tsv (the "
        "interactions between them).",
    )
    string.add_argument("--links", nargs="+", required=True, type=nonempty, metavar="FILE", help="interaction lists")
    string.add_argument("--fasta", nargs="+", required=True, type=nonempty, metavar="FILE", help="STRING FASTA files")
    string.add_argument(
        "--min-score",
        type=integer(0, 1000),
        default=0,
        metavar="S",
        help="drop interactions scored below S (0-1000; default 0)",
    )
    string.add_argument("--out", required=True, type=nonempty, metavar="DIR", help="the proteins data directory")
    add_overwrite_flag(string)
    string.set_defaults(func=run_convert_string)
    bio = convert.add_parser(
        "pyg-bio",
        help="Hu et al.'s processed bio graphs (PyG) -> the networks domain's TUDataset and GO files",
        description="Reads pretrain-gnns' dataset/supervised/processed/geometric_data_processed.pt (a pickle: "
        "load only your own download) and writes DIR/ppi_A.txt, ppi_graph_indicator.txt, ppi_edge_attributes.txt "
        "(the 7 interaction types of each edge, which attribute masking masks), go_pretrain.tsv and "
        "go_finetune.tsv.",
    )
    bio.add_argument("processed", type=nonempty, metavar="FILE", help="geometric_data_processed.pt")
    bio.add_argument("--out", required=True, type=nonempty, metavar="DIR", help="the networks data directory")
    add_overwrite_flag(bio)
    bio.set_defaults(func=run_convert_bio)
    heads = convert.add_parser(
        "wiki-descriptions",
        help="the wiki domain's short descriptions -> per-sample pre-training labels for --pt-labels",
        description="Writes FILE: one 'title<TAB>head' line per wiki article, the head noun of its Wikidata short "
        "description ('1968 film by Stanley Kubrick' -> film), the per-sample label of `domain run wiki --methods "
        "multitask same-family --pt-labels FILE --allow-missing`: what an article is, not its category (the "
        "fine-tuning task). Articles without a description, or whose head fewer than --min-count articles share, "
        "are left out (unknown to the per-sample term).",
    )
    heads.add_argument(
        "--min-count",
        type=integer(1),
        default=5,
        metavar="N",
        help="keep heads shared by at least N articles (default 5)",
    )
    heads.add_argument("--out", required=True, type=nonempty, metavar="FILE", help="the labels file to write")
    add_overwrite_flag(heads)
    heads.set_defaults(func=run_convert_wiki_descriptions)


def add_overwrite_flag(parser: argparse.ArgumentParser) -> None:
    """``--overwrite`` of a converter: without it, a file it would write that exists is refused."""
    parser.add_argument("--overwrite", action="store_true", help="replace output files that exist already")


def run_list(args: argparse.Namespace) -> int:
    from sipt_lab.domains.datasets import DATASETS

    for dataset in DATASETS.values():
        pinned = sum(remote.sha256 is not None for remote in dataset.files)
        shown = {0: "not pinned (--allow-unpinned)", len(dataset.files): "pinned"}.get(
            pinned, f"pinned for {pinned} of {len(dataset.files)} files (--allow-unpinned)"
        )
        print(
            f"{dataset.name} ({dataset.domain}): {dataset.contents}; source {dataset.source}; licence: "
            f"{dataset.licence}; sha256 {shown}"
        )
    return 0


def run_fetch(args: argparse.Namespace) -> int:
    from sipt_lab.domains.datasets import SUMS_NAME, fetch_dataset, get_dataset

    dataset = get_dataset(args.name)
    paths = fetch_dataset(dataset, args.to, allow_unpinned=args.allow_unpinned)
    for path in paths:
        print(path)
    print(f"{dataset.name}: {len(paths)} file(s) in {args.to}, digests in {SUMS_NAME}; licence: {dataset.licence}")
    return 0


def run_convert_string(args: argparse.Namespace) -> int:
    from sipt_lab.domains.convert import convert_string

    done = convert_string(args.links, args.fasta, args.out, args.min_score, overwrite=args.overwrite)
    print(
        f"{args.out}: {done.proteins:,} proteins in sequences.fasta, {done.interactions:,} interactions in "
        f"interactions.tsv; left out {done.without_sequence:,} proteins without a sequence ({done.dropped:,} "
        f"interactions) and {done.repeated:,} repeated FASTA records; dropped {done.self_loops:,} self-loop(s) and "
        f"{done.duplicates:,} repeated edge(s) (either direction)"
    )
    return 0


def run_convert_bio(args: argparse.Namespace) -> int:
    from sipt_lab.domains.convert import convert_pyg_bio

    done = convert_pyg_bio(args.processed, args.out, overwrite=args.overwrite)
    print(
        f"{args.out}: {done.graphs:,} graphs, {done.nodes:,} nodes, {done.edges:,} directed edges with 7 "
        f"interaction types; {done.pretrain_terms:,} pre-training and {done.finetune_terms:,} fine-tuning GO columns"
    )
    return 0


def run_convert_wiki_descriptions(args: argparse.Namespace) -> int:
    from sipt_lab.domains.wiki import write_description_labels

    labels = write_description_labels(args.out, args.min_count, overwrite=args.overwrite)
    print(
        f"{args.out}: {len(labels):,} wiki articles labelled with {len(set(labels.values())):,} description heads "
        f"(each shared by at least {args.min_count} articles); pass --pt-labels {args.out} --allow-missing"
    )
    return 0
