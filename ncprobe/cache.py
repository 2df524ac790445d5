"""EmbeddingStore: pooled vectors on disk, per model fingerprint, never computed twice.

Layout: ``<root>/<name>-<hash of fingerprint>/`` holds ``fingerprint.json`` and
shards ``shard-*.npz``. Each shard holds item keys (SHA-1 of the sentence's
words and the span), sentence and span vectors and the missing-word counts.
A shard is written to a temporary file and renamed into place, so a run that
is interrupted keeps every shard it finished and the rerun encodes only what
is missing. Shards are read with ``allow_pickle=False``.

The root is ``$NCPROBE_CACHE`` when set, else ``platformdirs.user_cache_dir("ncprobe")/embeddings``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from .encoders.base import Encoded

CACHE_ENV = "NCPROBE_CACHE"
STORE_FORMAT = 1


def cache_root(path: str | os.PathLike | None = None) -> Path:
    if path:
        return Path(path).expanduser()
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("ncprobe")) / "embeddings"


def item_key(tokens: Sequence[str], span: tuple[int, int]) -> bytes:
    """The store key of one (sentence, span) item: 20 bytes of SHA-1."""
    payload = json.dumps([list(tokens), list(span)], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha1(payload.encode("utf-8")).digest()


def fingerprint_id(fingerprint: dict) -> str:
    blob = json.dumps({**fingerprint, "store": STORE_FORMAT}, sort_keys=True, default=list)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class EmbeddingStore:
    """Vectors of one encoder fingerprint.

    Args:
        fingerprint: the encoder's :meth:`~ncprobe.encoders.base.Encoder.fingerprint`.
        root: cache root (see :func:`cache_root`).
    """

    def __init__(self, fingerprint: dict, root: str | os.PathLike | None = None) -> None:
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", str(fingerprint.get("name") or
                                                     fingerprint.get("model", "model")))[-60:]
        self.dir = cache_root(root) / f"{safe}-{fingerprint_id(fingerprint)}"
        self.dir.mkdir(parents=True, exist_ok=True)
        fp = self.dir / "fingerprint.json"
        if not fp.exists():
            _atomic_write(fp, json.dumps(fingerprint, indent=2, sort_keys=True,
                                         default=list).encode())
        self._index: dict[bytes, tuple[int, int]] = {}
        self._shards: list[dict[str, np.ndarray]] = []
        for shard in sorted(self.dir.glob("shard-*.npz")):
            self._load(shard)

    def _load(self, path: Path) -> None:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
        n = len(self._shards)
        self._shards.append(data)
        # keys are stored as (n, 20) uint8: a bytes dtype would strip trailing NUL bytes
        for row, key in enumerate(data["keys"]):
            self._index[key.tobytes()] = (n, row)

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: bytes) -> bool:
        return key in self._index

    def get(self, keys: Sequence[bytes]) -> Encoded:
        """Vectors of stored keys (every key must be present)."""
        locs = [self._index[k] for k in keys]
        take = lambda name: np.stack([self._shards[s][name][r] for s, r in locs])  # noqa: E731
        return Encoded(take("sent"), take("span"), take("missing"), take("missing_span"))

    def put(self, keys: Sequence[bytes], enc: Encoded) -> None:
        """Write one shard atomically and index it."""
        if not keys:
            return
        data = {"keys": np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 20), "sent": enc.sent, "span": enc.span,
                "missing": enc.missing_words, "missing_span": enc.missing_span_words}
        name = f"shard-{time.time_ns():020d}-{os.getpid()}.npz"
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.dir / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._load(self.dir / name)


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def cache_info(root: str | os.PathLike | None = None) -> list[dict]:
    """One entry per stored fingerprint: directory, model, items, bytes."""
    out = []
    base = cache_root(root)
    if not base.is_dir():
        return out
    for d in sorted(p for p in base.iterdir() if p.is_dir()):
        fp = d / "fingerprint.json"
        meta = json.loads(fp.read_text()) if fp.exists() else {}
        shards = list(d.glob("shard-*.npz"))
        items = 0
        for s in shards:
            with np.load(s, allow_pickle=False) as z:
                items += len(z["keys"])
        out.append({"dir": str(d), "model": meta.get("name") or meta.get("model"),
                     "fingerprint": meta, "items": items,
                     "bytes": sum(f.stat().st_size for f in d.iterdir())})
    return out


def cache_clear(root: str | os.PathLike | None = None, model: str | None = None) -> int:
    """Delete stored vectors (all, or those of one model name); returns directories removed."""
    removed = 0
    for entry in cache_info(root):
        if model is None or entry["model"] == model:
            shutil.rmtree(entry["dir"])
            removed += 1
    return removed
