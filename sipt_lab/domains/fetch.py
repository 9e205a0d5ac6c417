"""Download a domain's raw file once, verified: :func:`fetch`.

The file is streamed to a temporary file beside ``dest`` while its SHA-256 is computed, and renamed
onto ``dest`` only when the digest matches, so ``dest`` is either the verified file or absent (a
killed or corrupted download leaves nothing behind under its name). ``file://`` URLs work too.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import default_file_mode

_CHUNK = 1 << 20  # bytes read per step
_SHA256 = re.compile(r"[0-9a-f]{64}")


def fetch(url: str, dest: str | Path, sha256: str | None) -> Path:
    """``dest``, holding the bytes at ``url`` whose SHA-256 hex digest is ``sha256``.

    A ``dest`` already there with that digest is kept without downloading. ``sha256`` None downloads
    without a check (for sources that publish no digest; :func:`file_sha256` then gives the digest
    to record), keeping a ``dest`` already there. SiptError (one line) for a malformed digest, a
    failed download, or a digest mismatch (naming expected and actual digests; the partial file is deleted).
    """
    expected = None if sha256 is None else sha256.lower()
    if expected is not None and not _SHA256.fullmatch(expected):
        raise SiptError(f"sha256 must be 64 hex digits, got {sha256!r}; copy the digest the source publishes")
    dest = Path(dest)
    if dest.is_file() and (expected is None or file_sha256(dest) == expected):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    try:
        os.fchmod(fd, default_file_mode())
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url) as response:
            while chunk := response.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if expected is not None and digest.hexdigest() != expected:
            raise SiptError(
                f"download of {url} has sha256 {digest.hexdigest()}, expected {expected}; "
                "the file changed or is corrupt, check the URL and digest"
            )
        os.replace(tmp, dest)
    except (urllib.error.URLError, OSError, ValueError) as error:
        Path(tmp).unlink(missing_ok=True)
        raise SiptError(
            f"cannot download {url} ({getattr(error, 'reason', None) or error}); check the URL and the connection"
        ) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dest


def file_sha256(path: Path) -> str:
    """SHA-256 hex digest of the file ``path``, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
