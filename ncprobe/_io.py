"""File helpers shared by the data, cache and results code: hashing and atomic writes.

One implementation each, so every file ncprobe writes has the same guarantees:
a temporary name that no other process uses (``tempfile.mkstemp`` in the target
directory), data flushed to disk before the rename, and the temporary file
removed on any failure, so the final name only ever holds complete content.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """SHA-256 hex digest of a file's content, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see the old content or the new, never a part.

    The parent directory is created when needed. Concurrent writers of the same
    path never share a temporary file; the last rename wins.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """:func:`atomic_write_bytes` of UTF-8 text."""
    return atomic_write_bytes(path, text.encode("utf-8"))
