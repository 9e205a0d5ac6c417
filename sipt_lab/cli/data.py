"""``sipt-lab data``: list the public datasets of the real domains, and download one, verified."""

from __future__ import annotations

import argparse

from sipt_lab.cli.arguments import nonempty


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "data",
        help="list or download the public datasets of the proteins, abstracts and networks domains",
        description="`data list` names each dataset with its domain, contents, source and licence; "
        "`data fetch NAME --to DIR` downloads it into DIR (checked against its pinned SHA-256, archives "
        "unpacked) and records the digests in DIR/SHA256SUMS. Where the files go in a domain's --data "
        "directory: docs/domains.md.",
    )
    actions = parser.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    actions.add_parser("list", help="the registered datasets").set_defaults(func=run_list)
    fetch = actions.add_parser("fetch", help="download one dataset")
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


def run_list(args: argparse.Namespace) -> int:
    from sipt_lab.domains.datasets import DATASETS

    for dataset in DATASETS.values():
        pinned = all(remote.sha256 for remote in dataset.files)
        print(
            f"{dataset.name} ({dataset.domain}): {dataset.contents}; source {dataset.source}; licence: "
            f"{dataset.licence}; sha256 {'pinned' if pinned else 'not pinned'}"
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
