"""The public datasets of the paper's real domains, by name: where each comes from, its licence,
what it holds, and how ``sipt-lab data fetch NAME --to DIR`` downloads it (:func:`fetch_dataset`).

A :class:`Dataset` lists its files (URL, name under ``DIR``, SHA-256 when pinned); an archive is
unpacked into ``DIR`` after its digest is checked. None of these sources publishes a checksum and
sipt-lab cannot download them where it is developed, so the real entries pin no digest: fetching
one needs ``allow_unpinned`` (``--allow-unpinned``), and the digests of what was downloaded are
written to ``DIR/SHA256SUMS`` (``sha256sum -c`` format) so that a lab can pin them and every later
copy is checked. Where each file goes in a domain's data directory is in ``docs/domains.md``.
"""

from __future__ import annotations

import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_text_atomic
from sipt_lab.domains.fetch import fetch, file_sha256

SUMS_NAME = "SHA256SUMS"
_ARCHIVES = (".tar.gz", ".tgz", ".zip")


@dataclass(frozen=True)
class RemoteFile:
    """Attributes: ``url``; ``name`` the file's path under the target directory; ``sha256`` its
    pinned hex digest, or None when none is pinned."""

    url: str
    name: str
    sha256: str | None = None


@dataclass(frozen=True)
class Dataset:
    """Attributes:
    name: registry key.
    domain: the domain whose data directory it fills.
    contents: what it holds, one line.
    source: where it comes from (page to cite).
    licence: its licence as the source states it.
    files: the files to download; archives (``.tar.gz``, ``.tgz``, ``.zip``) are unpacked in place.
    """

    name: str
    domain: str
    contents: str
    source: str
    licence: str
    files: tuple[RemoteFile, ...]


def _tape(task: str, contents: str) -> Dataset:
    return Dataset(
        f"tape-{task.replace('_', '-')}",
        "proteins",
        contents,
        "https://github.com/songlab-cal/tape#data",
        "no dataset licence stated; TAPE's code is BSD-3-Clause",
        (
            RemoteFile(
                f"http://s3.amazonaws.com/songlabdata/proteindata/data_raw_pytorch/{task}.tar.gz", f"tape/{task}.tar.gz"
            ),
        ),
    )


def _scibert(task: str, contents: str) -> Dataset:
    base = f"https://raw.githubusercontent.com/allenai/scibert/master/data/text_classification/{task}"
    return Dataset(
        f"scibert-{task}",
        "abstracts",
        contents,
        "https://github.com/allenai/scibert",
        "no dataset licence stated; SciBERT's repository is Apache-2.0",
        tuple(RemoteFile(f"{base}/{split}.txt", f"tasks/{task}/{split}.txt") for split in ("train", "dev", "test")),
    )


#: Name -> dataset.
DATASETS: dict[str, Dataset] = {
    dataset.name: dataset
    for dataset in (
        _tape("remote_homology", "TAPE remote homology (fold classes), JSON splits train/valid/test_*_holdout"),
        _tape("fluorescence", "TAPE fluorescence (GFP log-fluorescence), JSON splits train/valid/test"),
        _tape("stability", "TAPE stability (protein stability score), JSON splits train/valid/test"),
        _tape(
            "secondary_structure",
            "TAPE secondary structure (ss3 per residue), JSON splits train/valid/cb513 (+ casp12, ts115)",
        ),
        _tape(
            "proteinnet",
            "TAPE contact prediction (ProteinNet primary, tertiary, valid_mask), JSON splits train/valid/test",
        ),
        _scibert("mag", "SciBERT paper field (MAG titles, 7 fields), JSON Lines train/dev/test"),
        _scibert("sci-cite", "SciCite citation intents, JSON Lines train/dev/test"),
        _scibert("acl-arc", "ACL-ARC citation intents, JSON Lines train/dev/test"),
        _scibert(
            "sciie-relation-extraction",
            "SciERC relation extraction (7 relations between '<< >>' and '[[ ]]' marked entities), "
            "JSON Lines train/dev/test",
        ),
        Dataset(
            "tree-of-life",
            "proteins",
            "tree-of-life protein-protein interaction networks of 1,840 species",
            "https://snap.stanford.edu/tree-of-life/data.html",
            "MIT (the resource's repository)",
            (
                RemoteFile(
                    "http://snap.stanford.edu/tree-of-life/data/treeoflife.interactomes.tar.gz",
                    "raw/treeoflife.interactomes.tar.gz",
                ),
            ),
        ),
        Dataset(
            "pretrain-gnns-bio",
            "networks",
            "Hu et al.'s PPI ego-networks with GO labels (PyG processed format)",
            "https://github.com/snap-stanford/pretrain-gnns",
            "MIT",
            (RemoteFile("http://snap.stanford.edu/gnn-pretrain/data/bio_dataset.zip", "raw/bio_dataset.zip"),),
        ),
    )
}


def get_dataset(name: str) -> Dataset:
    """The dataset ``name``; SiptError naming the choices otherwise."""
    try:
        return DATASETS[name]
    except KeyError:
        raise SiptError(
            f"unknown dataset {name!r}; choose one of: {', '.join(DATASETS)} (`sipt-lab data list`)"
        ) from None


def fetch_dataset(dataset: Dataset, directory: str | Path, allow_unpinned: bool = False) -> list[Path]:
    """Download every file of ``dataset`` into ``directory`` (verified when pinned), unpack archives,
    and record all digests in ``directory/SHA256SUMS``; returns the files' paths.

    SiptError when ``directory`` is a file or cannot be created, when a file has no pinned digest and
    ``allow_unpinned`` is False, and from :func:`~sipt_lab.domains.fetch.fetch` for a failed or
    corrupted download.
    """
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise SiptError(f"--to {directory} is a file; pass a directory (it is created if missing)")
    unpinned = [remote.name for remote in dataset.files if remote.sha256 is None]
    if unpinned and not allow_unpinned:
        raise SiptError(
            f"dataset {dataset.name} has no pinned SHA-256 for {', '.join(unpinned)}; pass --allow-unpinned "
            f"to download it unchecked and record its digests in {SUMS_NAME}"
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SiptError(f"cannot create --to {directory} ({error.strerror}); pick a writable directory") from None
    paths, sums = [], {}
    for remote in dataset.files:
        path = fetch(remote.url, directory / remote.name, remote.sha256)
        sums[remote.name] = remote.sha256 or file_sha256(path)
        if path.name.endswith(_ARCHIVES):
            _unpack(path, path.parent)
        paths.append(path)
    sums_path = directory / SUMS_NAME
    recorded = (
        dict(line.split("  ", 1)[::-1] for line in sums_path.read_text().splitlines() if "  " in line)
        if sums_path.is_file()
        else {}
    )
    recorded.update(sums)
    write_text_atomic(sums_path, "".join(f"{digest}  {name}\n" for name, digest in sorted(recorded.items())))
    return paths


def _unpack(archive: Path, into: Path) -> None:
    """Extract ``archive`` into ``into``; members may not leave it (tar's ``data`` filter, zip paths checked)."""
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as bundle:
                root = into.resolve()
                if any(not (root / member).resolve().is_relative_to(root) for member in bundle.namelist()):
                    raise SiptError(f"archive {archive} has members outside its directory; refusing to unpack it")
                bundle.extractall(into)
        else:
            with tarfile.open(archive) as bundle:
                bundle.extractall(into, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as error:
        raise SiptError(f"cannot unpack {archive} ({error}); delete it and fetch again") from None
