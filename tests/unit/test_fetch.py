"""fetch() offline, over file:// URLs of a tiny fixture."""

import hashlib

import pytest

from sipt_lab.core.errors import SiptError
from sipt_lab.domains.fetch import fetch

DATA = b">P1\nMKT\n" * 1000


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "source" / "p.fa"
    path.parent.mkdir()
    path.write_bytes(DATA)
    return path


def leftovers(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_good_download_lands_verified(tmp_path, source):
    dest = tmp_path / "raw" / "p.fa"
    assert fetch(source.as_uri(), dest, hashlib.sha256(DATA).hexdigest().upper()) == dest
    assert dest.read_bytes() == DATA and leftovers(dest.parent) == ["p.fa"]


def test_verified_file_is_not_downloaded_again(tmp_path, source):
    dest = tmp_path / "p.fa"
    digest = hashlib.sha256(DATA).hexdigest()
    fetch(source.as_uri(), dest, digest)
    source.unlink()  # a second download would fail
    assert fetch(source.as_uri(), dest, digest).read_bytes() == DATA


def test_corrupted_download_is_deleted_and_names_both_digests(tmp_path, source):
    expected = hashlib.sha256(DATA).hexdigest()
    source.write_bytes(DATA[:-1] + b"X")
    actual = hashlib.sha256(source.read_bytes()).hexdigest()
    dest = tmp_path / "raw" / "p.fa"
    with pytest.raises(SiptError, match=f"has sha256 {actual}, expected {expected}") as error:
        fetch(source.as_uri(), dest, expected)
    assert "\n" not in str(error.value) and leftovers(dest.parent) == []


def test_stale_dest_is_replaced(tmp_path, source):
    dest = tmp_path / "p.fa"
    dest.write_bytes(b"old")
    fetch(source.as_uri(), dest, hashlib.sha256(DATA).hexdigest())
    assert dest.read_bytes() == DATA


@pytest.mark.parametrize(
    ("url", "digest", "match"),
    [
        ("missing", "0" * 64, "cannot download"),
        ("ok", "abc", "sha256 must be 64 hex digits"),
    ],
)
def test_bad_input_is_a_one_line_error(tmp_path, source, url, digest, match):
    target = (tmp_path / "nope.fa").as_uri() if url == "missing" else source.as_uri()
    with pytest.raises(SiptError, match=match) as error:
        fetch(target, tmp_path / "raw" / "p.fa", digest)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "raw").exists() or leftovers(tmp_path / "raw") == []
