"""`sipt-lab data fetch` against a loopback HTTP server: a good archive, a corrupted file, bad names and directories."""

import functools
import hashlib
import http.server
import io
import tarfile
import threading
from pathlib import Path

import pytest

from sipt_lab.cli.main import main
from sipt_lab.domains import datasets
from sipt_lab.domains.datasets import Dataset, RemoteFile

TASK = b'[{"primary": "MKV", "log_fluorescence": [1.5]}]'
#: The real registry (the ``registry`` fixture replaces it while the commands run).
REGISTERED = datasets.DATASETS


def tar_gz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as bundle:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            bundle.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """Serves tmp_path/www on 127.0.0.1; yields its base URL."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def registry(server, monkeypatch):
    root, base = server
    archive = tar_gz({f"fluorescence/fluorescence_{split}.json": TASK for split in ("train", "valid", "test")})
    (root / "fl.tar.gz").write_bytes(archive)
    (root / "corrupt.txt").write_bytes(b"not what was pinned")
    (root / "plain.txt").write_bytes(b"unpinned bytes")
    entries = {
        "good": Dataset(
            "good",
            "proteins",
            "a TAPE-like task",
            "test",
            "CC0",
            (RemoteFile(f"{base}/fl.tar.gz", "tape/fl.tar.gz", hashlib.sha256(archive).hexdigest()),),
        ),
        "corrupt": Dataset(
            "corrupt",
            "proteins",
            "a file whose bytes changed",
            "test",
            "CC0",
            (RemoteFile(f"{base}/corrupt.txt", "c.txt", hashlib.sha256(b"the original").hexdigest()),),
        ),
        "unpinned": Dataset(
            "unpinned", "abstracts", "no digest", "test", "CC0", (RemoteFile(f"{base}/plain.txt", "p.txt"),)
        ),
        "missing": Dataset(
            "missing", "abstracts", "404", "test", "CC0", (RemoteFile(f"{base}/nope.txt", "n.txt", "0" * 64),)
        ),
    }
    monkeypatch.setattr(datasets, "DATASETS", entries)
    return entries


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("sipt-lab: error: ") and "\n" not in err and "Traceback" not in err
    return err


def test_good_archive_is_verified_unpacked_and_recorded(tmp_path, registry, capsys):
    out = tmp_path / "proteins"
    assert main(["data", "fetch", "good", "--to", str(out)]) == 0
    assert (out / "tape" / "fluorescence" / "fluorescence_valid.json").read_bytes() == TASK
    assert (out / "SHA256SUMS").read_text() == f"{registry['good'].files[0].sha256}  tape/fl.tar.gz\n"
    assert "licence: CC0" in capsys.readouterr().out
    from sipt_lab.domains.loaders import read_tape_task

    assert read_tape_task(out / "tape" / "fluorescence", "fluorescence").labels["train"] == [1.5]


def test_corrupted_file_leaves_nothing(tmp_path, registry, capsys):
    out = tmp_path / "d"
    assert main(["data", "fetch", "corrupt", "--to", str(out)]) == 2
    assert "has sha256" in one_line_error(capsys) and not any(out.iterdir())


def test_unpinned_needs_consent_then_records_its_digest(tmp_path, registry, capsys):
    out = tmp_path / "d"
    assert main(["data", "fetch", "unpinned", "--to", str(out)]) == 2
    assert "--allow-unpinned" in one_line_error(capsys) and not (out / "p.txt").exists()
    assert main(["data", "fetch", "unpinned", "--to", str(out), "--allow-unpinned"]) == 0
    assert (out / "SHA256SUMS").read_text() == f"{hashlib.sha256(b'unpinned bytes').hexdigest()}  p.txt\n"


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["data", "fetch", "nope", "--to", "{tmp}/d"], "unknown dataset 'nope'; choose one of: good, corrupt"),
        (["data", "fetch", "good", "--to", "{tmp}/file"], "is a file; pass a directory"),
        (["data", "fetch", "missing", "--to", "{tmp}/d"], "cannot download"),
    ],
)
def test_bad_name_directory_or_url_is_one_line(tmp_path, registry, capsys, argv, match):
    (tmp_path / "file").write_text("x")
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    assert match in one_line_error(capsys)


def test_list_names_source_and_licence(capsys):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert "tape-fluorescence (proteins)" in out and "licence:" in out and "pretrain-gnns-bio (networks)" in out


def test_list_and_help_say_which_checksums_are_pinned(registry, capsys):
    from sipt_lab.cli.data import CHECKSUMS
    from sipt_lab.domains import names

    assert main(["data", "list"]) == 0
    marks = {line.split(" ", 1)[0]: line.rsplit("; sha256 ", 1)[1] for line in capsys.readouterr().out.splitlines()}
    assert marks["good"] == "pinned" and marks["unpinned"] == "not pinned (--allow-unpinned)"
    pinned = tuple(name for name, d in REGISTERED.items() if all(f.sha256 for f in d.files))
    assert names.PINNED_DATASETS == pinned  # the light list --help reads is the registry's
    assert CHECKSUMS.startswith(f"SHA-256 pinned: {', '.join(pinned) or 'no dataset yet'}")
    docs = (Path(__file__).parents[2] / "docs" / "domains.md").read_text()
    downloading = docs[docs.index("## Downloading") :]
    assert all(f"`{name}`" in downloading for name in REGISTERED)  # the docs' table lists every dataset
