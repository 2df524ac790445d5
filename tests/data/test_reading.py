"""The file helpers of ncprobe._io that the data layer and the cache share.

Expected digests come from hashlib and ``git hash-object``; expected waits from the
documented schedule (``backoff * 2**(k-1)`` before the k-th retry).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ncprobe import _io
from ncprobe.cache import entries
from ncprobe.data import reading, sources


def test_one_git_blob_id() -> None:
    """The downloader and the loader verify with the same function (checked against
    ``git hash-object`` in test_sources.py); an empty file's id is git's well-known one."""
    assert sources.git_blob_sha1 is reading.git_blob_sha1 is _io.git_blob_sha1
    assert _io.git_blob_sha1(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def test_json_sha256_ignores_key_order() -> None:
    a = {"name": "m", "layers": (1, 2), "n": 3}
    b = {"n": 3, "layers": (1, 2), "name": "m"}
    want = hashlib.sha256(b'{"layers": [1, 2], "n": 3, "name": "m"}').hexdigest()
    assert _io.json_sha256(a) == _io.json_sha256(b) == want
    assert _io.json_sha256({"p": Path("x")}) == hashlib.sha256(b'{"p": "x"}').hexdigest()


def test_cache_entry_names_are_unchanged() -> None:
    """The store entry of a fingerprint keeps its name: cached vectors stay found."""
    fp = {"name": "minilm", "model": "sentence-transformers/all-MiniLM-L6-v2",
          "layers": ((1, 2),), "dtype": "float32"}
    text = json.dumps({**fp, "store": entries.STORE_FORMAT}, sort_keys=True, default=list)
    assert entries.fingerprint_id(fp) == hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize("text, extra, want", [
    ("sentence-transformers/all-MiniLM-L6-v2", "", "sentence-transformers_all-MiniLM-L6-v2"),
    ("a  b//c", "", "a_b_c"),
    ("layers_1,2=x+y", "+,=", "layers_1,2=x+y"),
    ("layers_1,2=x+y", "", "layers_1_2_x_y"),
    ("é.ü", "", "_._"),
])
def test_safe_name(text: str, extra: str, want: str) -> None:
    assert _io.safe_name(text, extra) == want


def test_retry_waits_with_exponential_backoff(monkeypatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(_io.time, "sleep", waits.append)
    calls, seen = [], []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 4:
            raise ConnectionResetError(f"attempt {len(calls)}")
        return "body"

    got = _io.retry(flaky, retries=3, backoff=0.5, retryable=lambda e: True,
                    on_retry=lambda e, k, w: seen.append((str(e), k, w)))
    assert got == "body" and len(calls) == 4
    assert waits == [0.5, 1.0, 2.0]
    assert seen == [("attempt 1", 1, 0.5), ("attempt 2", 2, 1.0), ("attempt 3", 3, 2.0)]


def test_retry_gives_up(monkeypatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(_io.time, "sleep", waits.append)

    def down() -> None:
        raise TimeoutError("no answer")

    with pytest.raises(TimeoutError):
        _io.retry(down, retries=2, backoff=1, retryable=lambda e: True)
    assert waits == [1, 2]
    waits.clear()

    def missing() -> None:
        raise FileNotFoundError("404")

    with pytest.raises(FileNotFoundError):  # not retryable: raised at once
        _io.retry(missing, retries=5, backoff=1,
                  retryable=lambda e: not isinstance(e, FileNotFoundError))
    assert waits == []


@pytest.mark.parametrize("how", ["open", "bytes", "text"])
def test_atomic_writes_create_the_directory(tmp_path: Path, how: str) -> None:
    """Every atomic write has the same guarantees, the parent directory included."""
    path = tmp_path / "new" / "deeper" / "f.txt"
    if how == "open":
        with _io.atomic_open(path) as fh:
            fh.write(b"ok\n")
    elif how == "bytes":
        _io.atomic_write_bytes(path, b"ok\n")
    else:
        _io.atomic_write_text(path, "ok\n")
    assert path.read_bytes() == b"ok\n"
    assert [p.name for p in path.parent.iterdir()] == ["f.txt"]


def test_a_failed_atomic_write_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with _io.atomic_open(path) as fh:
            fh.write(b"half")
            raise RuntimeError("interrupted")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]
