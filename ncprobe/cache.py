"""EmbeddingStore: pooled vectors on disk, per model fingerprint, never computed twice.

Layout: ``<root>/<name>-<hash of fingerprint>/`` (a store *entry*) holds
``CACHEDIR.TAG`` (the ncprobe marker, in the format of the Cache Directory
Tagging Specification, so backup tools skip it), ``fingerprint.json`` and shards
``shard-*.npz``. Each shard holds item keys (SHA-1 of the sentence's words and
the span), sentence and span vectors and the missing-word counts. A shard is
written to a unique temporary file and renamed into place, so an interrupted
run keeps every shard it finished and the rerun encodes only what is missing.
Shards are read with ``allow_pickle=False``; a shard that cannot be read, or
whose arrays are missing or of inconsistent shapes, is logged by path, deleted
and its items encoded again.

Concurrent runs: :func:`ncprobe.embed.embed` holds an exclusive lock on the
entry directory (:func:`ncprobe._io.dir_lock`) while it looks up, encodes and
stores, and reloads what another process stored before it got the lock, so two
runs sharing a cache encode and store every item once.

``cache clear`` deletes only entries that ncprobe wrote: a real directory (never
a symbolic link) named ``<name>-<16 hex digits>`` whose ``fingerprint.json``
hashes to that name, holding nothing but ncprobe's own files (the marker, the
fingerprint, shards and ncprobe's temporary files), removed file by file. Entries
written before the marker existed have the same layout without ``CACHEDIR.TAG``
and are recognised by that strict layout. Anything else is left untouched.

The root is ``$NCPROBE_CACHE`` when set, else ``platformdirs.user_cache_dir("ncprobe")/embeddings``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import stat
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ._io import LockBusy, atomic_open, atomic_write_text, dir_lock, json_sha256, safe_name
from .encoders.base import Encoded
from .errors import NcprobeError, UsageError

log = logging.getLogger(__name__)

CACHE_ENV = "NCPROBE_CACHE"
STORE_FORMAT = 1
#: The marker of the cache root and of every store entry (https://bford.info/cachedir/).
MARKER = "CACHEDIR.TAG"
_TAG_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"
_FINGERPRINT = "fingerprint.json"
_ENTRY_RE = re.compile(r"^[A-Za-z0-9._-]{0,60}-([0-9a-f]{16})$")
_SHARD_RE = re.compile(r"^shard-[A-Za-z0-9_-]+\.npz$")
# temporary files of an interrupted write: ``.tmp-*`` (ncprobe <= 0.1 layout) and
# ``.<final name>.<random>.tmp`` (ncprobe._io)
_TEMP_RE = re.compile(r"^(\.tmp-[A-Za-z0-9_.-]*"
                      r"|\.(shard-[A-Za-z0-9_-]+\.npz|fingerprint\.json|CACHEDIR\.TAG)\.[^/]+\.tmp)$")
# files of the cache root that are ncprobe's but no store entry (the weight-hash cache)
_ROOT_FILES_RE = re.compile(r"^(CACHEDIR\.TAG|file-sha256\.json"
                            r"|\.(CACHEDIR\.TAG|file-sha256\.json)\.[^/]+\.tmp)$")
_ARRAYS = ("keys", "sent", "span", "missing", "missing_span")


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
    """The 16 hex digits that name a fingerprint's store entry (with the store format)."""
    return json_sha256({**fingerprint, "store": STORE_FORMAT}, default=list)[:16]


def _tag_text(what: str) -> str:
    return (f"{_TAG_SIGNATURE}\n# This directory is {what}, written by ncprobe.\n"
            "# Remove it with `ncprobe cache clear`; see https://bford.info/cachedir/\n")


def _is_ncprobe_tag(path: Path) -> bool:
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 4096:
            return False
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return text.startswith(_TAG_SIGNATURE) and "ncprobe" in text


class EmbeddingStore:
    """Vectors of one encoder fingerprint.

    Args:
        fingerprint: the encoder's :meth:`~ncprobe.encoders.base.Encoder.fingerprint`.
        root: cache root (see :func:`cache_root`).

    Attributes:
        dir: the store entry directory.
        problems: one line per shard found unreadable and discarded (for the run's notes).
    """

    def __init__(self, fingerprint: dict, root: str | os.PathLike | None = None) -> None:
        safe = safe_name(str(fingerprint.get("name") or fingerprint.get("model", "model")))[-60:]
        self.fingerprint = dict(fingerprint)
        self.root = cache_root(root)
        self.dir = self.root / f"{safe}-{fingerprint_id(fingerprint)}"
        self.root.mkdir(parents=True, exist_ok=True)
        if not (self.root / MARKER).exists() and all(
                _ROOT_FILES_RE.match(n) for n in os.listdir(self.root)):
            # only a root that holds nothing but ncprobe's files is tagged: a tag in a directory
            # the user pointed --cache-dir at (their home...) would hide it from their backups
            atomic_write_text(self.root / MARKER, _tag_text("an ncprobe embedding cache"))
        self.problems: list[str] = []
        self._lock_depth = 0
        self._reset()
        self._ensure_dir()
        self.refresh()

    def _reset(self) -> None:
        self._index: dict[bytes, tuple[int, int]] = {}
        self._shards: list[dict[str, np.ndarray]] = []
        self._loaded: list[str] = []
        self._shape: tuple[tuple[int, ...], tuple[int, ...]] | None = None

    def _ensure_dir(self) -> None:
        """Create the entry (again, after a ``cache clear``) with its marker and fingerprint."""
        if self.dir.is_symlink():
            raise NcprobeError(f"{self.dir} is a symbolic link; ncprobe never writes through "
                               "links in its cache: remove the link or choose another "
                               "--cache-dir")
        self.dir.mkdir(parents=True, exist_ok=True)
        if not (self.dir / MARKER).exists():
            atomic_write_text(self.dir / MARKER, _tag_text(
                f"an ncprobe embedding store (format {STORE_FORMAT})"))
        fp = self.dir / _FINGERPRINT
        try:
            ok = fingerprint_id(json.loads(fp.read_text(encoding="utf-8"))) == \
                fingerprint_id(self.fingerprint)
        except (OSError, ValueError, TypeError):
            ok = False
        if not ok:  # missing or damaged: the directory name says what it must hold
            atomic_write_text(fp, json.dumps(self.fingerprint, indent=2, sort_keys=True,
                                             default=list))

    @contextlib.contextmanager
    def lock(self) -> Iterator["EmbeddingStore"]:
        """Hold the entry's exclusive lock (re-entrant within this object) and see every shard.

        On entry, shards that other processes stored meanwhile are loaded, and the
        entry is recreated if ``cache clear`` removed it while this process waited.
        """
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield self
            finally:
                self._lock_depth -= 1
            return
        stack = contextlib.ExitStack()
        for _ in range(10):
            self._ensure_dir()
            try:
                stack.enter_context(dir_lock(self.dir))
                break
            except FileNotFoundError:  # removed between creation and locking: again
                continue
        else:
            raise NcprobeError(f"{self.dir}: could not lock the cache entry; it keeps being "
                               "removed (is `ncprobe cache clear` running in a loop?)")
        with stack:
            self._ensure_dir()
            self._lock_depth = 1
            try:
                self.refresh()
                yield self
            finally:
                self._lock_depth = 0

    def refresh(self) -> None:
        """Index the shards on disk that are not indexed yet (all again if some vanished)."""
        try:
            names = sorted(n for n in os.listdir(self.dir) if _SHARD_RE.match(n))
        except FileNotFoundError:
            names = []
        if set(self._loaded) - set(names):  # removed by `cache clear`: start from disk
            self._reset()
        loaded = set(self._loaded)
        for name in names:
            if name not in loaded:
                self._load(name)

    def _load(self, name: str) -> None:
        path = self.dir / name
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                raise ValueError("not a regular file")
            with np.load(path, allow_pickle=False) as z:
                data = {k: z[k] for k in _ARRAYS if k in z.files}
            why = self._invalid(data)
        except FileNotFoundError:
            return  # removed meanwhile by another process (a clear, or its own discard)
        except Exception as e:  # noqa: BLE001 - numpy/zipfile raise many types on corrupt files
            why = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        if why:
            self._discard(path, why)
            return
        n = len(self._shards)
        self._shards.append(data)
        self._loaded.append(name)
        self._shape = self._shape or (data["sent"].shape[1:], data["span"].shape[1:])
        # keys are stored as (n, 20) uint8: a bytes dtype would strip trailing NUL bytes
        for row, key in enumerate(data["keys"]):
            self._index[key.tobytes()] = (n, row)

    def _invalid(self, data: dict[str, np.ndarray]) -> str | None:
        """Why a loaded shard cannot be used, or None."""
        missing = [k for k in _ARRAYS if k not in data]
        if missing:
            return f"arrays {', '.join(missing)} are missing"
        keys, sent, span = data["keys"], data["sent"], data["span"]
        n = len(keys)
        if keys.dtype != np.uint8 or keys.ndim != 2 or keys.shape[1] != 20:
            return f"keys have shape {keys.shape} and dtype {keys.dtype}, not (n, 20) uint8"
        # sentence and span vectors may differ in size (a sentence-transformers Dense layer
        # maps the sentence embedding to another dimension), never in items or views
        if sent.ndim != 3 or span.ndim != 3 or sent.shape[:2] != span.shape[:2] or len(sent) != n:
            return f"sent {sent.shape} and span {span.shape} do not match {n} keys"
        if not (np.issubdtype(sent.dtype, np.floating) and np.issubdtype(span.dtype, np.floating)):
            return f"vectors are {sent.dtype}/{span.dtype}, not floating point"
        for k in ("missing", "missing_span"):
            if data[k].shape != (n,) or not np.issubdtype(data[k].dtype, np.integer):
                return f"{k} has shape {data[k].shape} ({data[k].dtype}), not ({n},) integers"
        shape = (sent.shape[1:], span.shape[1:])
        if self._shape is not None and shape != self._shape:
            return (f"vectors of shape {shape} ((views, dim) of sentences and spans), while the "
                    f"other shards hold {self._shape}")
        return None

    def _discard(self, path: Path, why: str) -> None:
        msg = (f"cache shard {path} cannot be used ({why}); it was deleted and its items "
               "are encoded again")
        log.warning("%s", msg)
        self.problems.append(msg)
        path.unlink(missing_ok=True)  # ncprobe's own file, in ncprobe's own entry

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: bytes) -> bool:
        return key in self._index

    def get(self, keys: Sequence[bytes]) -> Encoded:
        """Vectors of stored keys (every key must be present)."""
        locs = np.array([self._index[k] for k in keys], dtype=np.intp).reshape(len(keys), 2)
        shards = np.unique(locs[:, 0])

        def take(name: str) -> np.ndarray:  # one fancy-indexing copy per shard
            like = self._shards[int(shards[0])][name] if len(shards) else np.zeros((0,))
            out = np.empty((len(keys), *like.shape[1:]), dtype=like.dtype)
            for s in shards:
                sel = locs[:, 0] == s
                out[sel] = self._shards[int(s)][name][locs[sel, 1]]
            return out

        return Encoded(take("sent"), take("span"), take("missing"), take("missing_span"))

    def put(self, keys: Sequence[bytes], enc: Encoded) -> None:
        """Write one shard atomically (under the entry's lock) and index it."""
        if not keys:
            return
        data = {"keys": np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 20),
                "sent": enc.sent, "span": enc.span,
                "missing": enc.missing_words, "missing_span": enc.missing_span_words}
        with self.lock():
            # time first, so shards sort in the order they were written; the random part
            # keeps names unique across processes and threads
            name = f"shard-{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.npz"
            with atomic_open(self.dir / name) as fh:
                # numbers only: shards are read back with allow_pickle=False
                np.savez(fh, allow_pickle=False, **data)
            self._load(name)


@dataclass
class EntryCheck:
    """Whether a directory under the cache root is a store entry that ncprobe wrote."""

    path: Path
    ok: bool
    why: str = ""
    fingerprint: dict = field(default_factory=dict)
    lookalike: bool = False   # looks like an entry (name or fingerprint.json) but is not one

    @property
    def model(self) -> str | None:
        return self.fingerprint.get("name") or self.fingerprint.get("model")


def check_entry(path: str | os.PathLike) -> EntryCheck:
    """Decide, without following any symbolic link, whether ``path`` is an ncprobe store entry."""
    path = Path(path)
    m = _ENTRY_RE.match(path.name)
    try:
        st = os.lstat(path)
    except OSError as e:
        return EntryCheck(path, False, f"cannot be read ({e.strerror})", lookalike=bool(m))
    if stat.S_ISLNK(st.st_mode):
        return EntryCheck(path, False, "it is a symbolic link (never followed)", lookalike=True)
    if not stat.S_ISDIR(st.st_mode):
        return EntryCheck(path, False, "not a directory")
    fp = path / _FINGERPRINT
    has_fp = os.path.lexists(fp)
    if not m:
        return EntryCheck(path, False, "its name is not <model>-<16 hex digits>", lookalike=has_fp)
    try:
        if not stat.S_ISREG(os.lstat(fp).st_mode):
            return EntryCheck(path, False, f"{_FINGERPRINT} is not a regular file", lookalike=True)
        meta = json.loads(fp.read_text(encoding="utf-8"))
        if not isinstance(meta, dict):
            raise ValueError("not a JSON object")
    except FileNotFoundError:
        return EntryCheck(path, False, f"it has no {_FINGERPRINT}", lookalike=True)
    except (OSError, ValueError) as e:
        return EntryCheck(path, False, f"its {_FINGERPRINT} cannot be read ({e})", lookalike=True)
    if fingerprint_id(meta) != m.group(1):
        return EntryCheck(path, False, f"its {_FINGERPRINT} does not hash to the directory's name",
                          meta, lookalike=True)
    try:
        children = list(os.scandir(path))
    except OSError as e:
        return EntryCheck(path, False, f"cannot be listed ({e.strerror})", meta, lookalike=True)
    for child in sorted(children, key=lambda c: c.name):
        if child.is_symlink():
            return EntryCheck(path, False, f"it holds a symbolic link {child.name!r}", meta,
                              lookalike=True)
        if child.is_dir(follow_symlinks=False):
            return EntryCheck(path, False, f"it holds a directory {child.name!r}", meta,
                              lookalike=True)
        name = child.name
        if not child.is_file(follow_symlinks=False) or not (
                name in (_FINGERPRINT, MARKER) or _SHARD_RE.match(name) or _TEMP_RE.match(name)):
            return EntryCheck(path, False, f"it holds {name!r}, which ncprobe does not write",
                              meta, lookalike=True)
        if name == MARKER and not _is_ncprobe_tag(Path(child.path)):
            return EntryCheck(path, False, f"its {MARKER} was not written by ncprobe", meta,
                              lookalike=True)
    return EntryCheck(path, True, "", meta)


@dataclass
class CacheScan:
    """What a cache root holds: ncprobe's entries, look-alikes refused, and other items."""

    root: Path
    entries: list[EntryCheck]
    refused: list[EntryCheck]
    foreign: list[Path]
    tagged: bool   # the root carries ncprobe's CACHEDIR.TAG


def scan(root: str | os.PathLike | None = None) -> CacheScan:
    """Classify every item directly under the cache root (nothing is followed or changed)."""
    base = cache_root(root)
    entries, refused, foreign = [], [], []
    try:
        items = sorted(os.scandir(base), key=lambda c: c.name)
    except (FileNotFoundError, NotADirectoryError):
        items = []
    for item in items:
        if _ROOT_FILES_RE.match(item.name) and item.is_file(follow_symlinks=False):
            continue
        chk = check_entry(item.path)
        if chk.ok:
            entries.append(chk)
        elif chk.lookalike:
            refused.append(chk)
        else:
            foreign.append(Path(item.path))
    return CacheScan(base, entries, refused, foreign, _is_ncprobe_tag(base / MARKER))


def _shard_items(path: Path) -> tuple[int, str | None]:
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = z["keys"]
        if keys.ndim != 2 or keys.shape[1] != 20:
            return 0, f"keys have shape {keys.shape}"
        return len(keys), None
    except Exception as e:  # noqa: BLE001 - numpy/zipfile raise many types on corrupt files
        return 0, f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def cache_info(root: str | os.PathLike | None = None) -> list[dict]:
    """One dict per ncprobe store entry: ``dir, model, fingerprint, items, bytes, corrupt``.

    Only entries that :func:`check_entry` accepts are listed. ``corrupt`` names the
    shards that cannot be read (their items are not counted; ``compute`` discards them).
    """
    out = []
    for e in scan(root).entries:
        items, corrupt, size = 0, [], 0
        for f in sorted(e.path.iterdir()):
            size += f.lstat().st_size
            if _SHARD_RE.match(f.name):
                n, why = _shard_items(f)
                items += n
                if why:
                    corrupt.append(f"{f}: {why}")
        out.append({"dir": str(e.path), "model": e.model, "fingerprint": e.fingerprint,
                    "items": items, "bytes": size, "corrupt": corrupt})
    return out


@dataclass
class ClearReport:
    """What :func:`cache_clear` did."""

    removed: list[str] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)   # (directory, why)
    foreign: list[str] = field(default_factory=list)            # other items, untouched


def _remove_entry(path: Path) -> str | None:
    """Delete one store entry file by file under its lock; why not, or None when removed."""
    try:
        with dir_lock(path, blocking=False):
            chk = check_entry(path)  # again, under the lock: nothing was added meanwhile
            if not chk.ok:
                return f"not an ncprobe cache entry: {chk.why}"
            for child in os.scandir(path):
                os.unlink(child.path)  # a plain unlink never follows a link
            os.rmdir(path)
    except LockBusy:
        return "in use by a running ncprobe command (locked); clear it when that run ends"
    except OSError as e:
        return f"could not be removed ({e})"
    return None


def cache_clear(root: str | os.PathLike | None = None, model: str | None = None) -> ClearReport:
    """Delete stored vectors: every ncprobe store entry, or those of one model.

    Only directories that :func:`check_entry` accepts are deleted, file by file;
    symbolic links are never followed, and everything else under the root is
    left as it is (named in the report).

    Args:
        root: the cache root (see :func:`cache_root`).
        model: only entries whose fingerprint ``name`` or ``model`` is this.

    Raises:
        UsageError: ``model`` matches no cached model (the message lists those cached),
            or the root holds items but is no ncprobe cache (nothing is deleted).
    """
    found = scan(root)
    report = ClearReport(foreign=[str(p) for p in found.foreign])
    report.kept += [(str(e.path), f"not an ncprobe cache entry: {e.why}") for e in found.refused]
    if model is not None:
        chosen = [e for e in found.entries if model in (e.fingerprint.get("name"),
                                                       e.fingerprint.get("model"))]
        if not chosen:
            names = sorted({str(e.model) for e in found.entries})
            raise UsageError(f"no cached vectors of model {model!r} in {found.root}; cached: "
                             + (", ".join(names) if names else "nothing")
                             + " (see `ncprobe cache info`)")
    else:
        chosen = found.entries
        if not chosen and not found.tagged and (found.foreign or found.refused):
            raise UsageError(
                f"{found.root} is not an ncprobe embedding cache: it holds no directory that "
                f"ncprobe wrote ({len(found.foreign) + len(found.refused)} other item(s)); "
                "nothing was deleted. Check --cache-dir / $NCPROBE_CACHE")
    for e in chosen:
        why = _remove_entry(e.path)
        if why:
            report.kept.append((str(e.path), why))
        else:
            report.removed.append(str(e.path))
    return report
