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

The shape of an entry's vectors (views, sentence dimension, span dimension) comes
from its fingerprint, never from whichever shard is read first: the encoder says
what it knows without loading (:func:`vector_shape`: its views and dimension), and
the first shard ncprobe stores records the whole shape in ``fingerprint.json``
(key ``vector_shape``, left out of the entry's name hash). A shard of another shape
(well-formed arrays, another dimension) is discarded alone, with a warning naming
it; ``cache info`` lists it. Only in an entry written before the shape was recorded,
with an encoder that does not say a dimension, is a part that neither gives taken
from the shape that most stored items have.

Errors: a cache root that is a file, a symbolic-link loop or a dangling link is
:class:`~ncprobe.errors.OutputError` for ``compute`` (exit 6) and
:class:`~ncprobe.errors.UsageError` for ``cache info``/``cache clear`` (exit 2); a
cache that cannot be written (read-only, full disk, no permission) is
:class:`~ncprobe.errors.OutputError`, checked before anything is encoded. Anything
named like a shard that is not a regular file (a directory) is left alone and
reported, as is an entry holding one in ``cache info``.

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
It also holds ``file-sha256.json``, the digests of model weight files that fingerprints
hash (:func:`hash_cache`), which ``cache info`` and ``cache clear`` leave alone.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import stat
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ._io import (
    HASH_CACHE_NAME,
    FileHashCache,
    LockBusy,
    atomic_open,
    atomic_write_text,
    dir_lock,
    json_sha256,
    output_error,
    safe_name,
)
from .encoders.base import Encoded
from .errors import NcprobeError, OutputError, UsageError

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
#: the key of ``fingerprint.json`` that records the entry's vector shape (not hashed)
SHAPE_KEY = "vector_shape"
_SHAPE_PARTS = ("views", "sent_dim", "span_dim")
#: ``(views, sentence dimension, span dimension)``; ``None`` where not known
Shape = tuple[int | None, int | None, int | None]
_CACHE_TODO = ("choose a writable cache with --cache-dir DIR (or $NCPROBE_CACHE), free space, or "
               "run with --no-cache (nothing is stored), and run the command again")


def cache_root(path: str | os.PathLike | None = None) -> Path:
    """The cache root: ``path``, else ``$NCPROBE_CACHE``, else the user cache directory."""
    if path:
        return Path(path).expanduser()
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("ncprobe")) / "embeddings"


@contextlib.contextmanager
def hash_cache() -> Iterator[FileHashCache]:
    """The per-file hash cache of model weights, ``<cache root>/file-sha256.json``, saved
    when the block ends (whether or not hashing succeeded).

    Fingerprints hash the content of every weight file; remembering each file's digest
    (by path, size and times) keeps that to one read per changed file. It lives in the
    cache root beside the store entries, which ``cache info`` and ``cache clear`` leave
    alone.
    """
    cache = FileHashCache(cache_root() / HASH_CACHE_NAME)
    try:
        yield cache
    finally:
        cache.save()


def item_key(tokens: Sequence[str], span: tuple[int, int]) -> bytes:
    """The store key of one (sentence, span) item: 20 bytes of SHA-1."""
    payload = json.dumps([list(tokens), list(span)], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha1(payload.encode("utf-8")).digest()


def fingerprint_id(fingerprint: dict) -> str:
    """The 16 hex digits that name a fingerprint's store entry (with the store format).

    The recorded vector shape (:data:`SHAPE_KEY`) is left out: it follows from the
    fingerprint, it does not define it.
    """
    fp = {k: v for k, v in fingerprint.items() if k != SHAPE_KEY}
    return json_sha256({**fp, "store": STORE_FORMAT}, default=list)[:16]


def vector_shape(encoder) -> Shape:
    """``(views, sentence dim, span dim)`` of an encoder's vectors, as far as it says
    without loading a model (``None`` where it does not: an API model's size before its
    first answer, a sentence-transformers model's own sentence embedding)."""
    views = getattr(encoder, "views", None)
    dim = getattr(encoder, "dim", None)
    dim = int(dim) if isinstance(dim, int) and dim > 0 else None
    # an encoder with a sentence size of its own (a sentence-transformers Dense layer) has a
    # ``sent_dim`` that may load the model: left to the first shard stored
    sent = None if hasattr(type(encoder), "sent_dim") else dim
    return (len(views) if views else None), sent, dim


def _shape_text(shape: Shape) -> str:
    return ", ".join(f"{k} {'?' if v is None else v}"
                     for k, v in zip(_SHAPE_PARTS, shape, strict=True))


def _recorded_shape(meta: dict) -> Shape:
    """The shape ``fingerprint.json`` records (and the views its fingerprint names)."""
    rec = meta.get(SHAPE_KEY)
    rec = rec if isinstance(rec, dict) else {}
    out: list[int | None] = []
    for k in _SHAPE_PARTS:
        v = rec.get(k)
        out.append(v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None)
    views = meta.get("views")
    if out[0] is None and isinstance(views, list) and views:
        out[0] = len(views)
    return out[0], out[1], out[2]


def _merge(first: Shape, then: Shape) -> Shape:
    """``first``, its unknown parts taken from ``then``."""
    a, b, c = (x if x is not None else y for x, y in zip(first, then, strict=True))
    return a, b, c


def _mismatch(shape: tuple[int, int, int], expected: Shape) -> str | None:
    """Why vectors of ``shape`` do not belong in an entry of ``expected`` shape, or None."""
    if all(e is None or e == s for s, e in zip(shape, expected, strict=True)):
        return None
    return (f"vectors of another shape: {_shape_text(shape)}, while the entry's fingerprint "
            f"says {_shape_text(expected)}")


def _majority(expected: Shape, shapes: Sequence[tuple[tuple[int, int, int], int]]) -> Shape:
    """``expected`` with its unknown parts taken from the shape of most items among
    ``(shape, items)`` that fit its known parts (the first such shape on a tie)."""
    if None not in expected:
        return expected
    votes: dict[tuple[int, int, int], int] = {}
    for shape, n in shapes:
        if _mismatch(shape, expected) is None:
            votes[shape] = votes.get(shape, 0) + n
    if not votes:
        return expected
    best = max(votes, key=lambda s: votes[s])  # max keeps the first of equal counts
    return _merge(expected, best)


def _structure(specs: dict[str, tuple[tuple[int, ...], np.dtype]]
               ) -> tuple[str | None, tuple[int, int, int] | None, int]:
    """``(why not usable, (views, sent dim, span dim), items)`` of a shard's arrays, given
    as name -> (shape, dtype): read from the file's headers or from loaded arrays."""
    missing = [k for k in _ARRAYS if k not in specs]
    if missing:
        return f"arrays {', '.join(missing)} are missing", None, 0
    (kshape, kdt), (sshape, sdt), (pshape, pdt) = specs["keys"], specs["sent"], specs["span"]
    if kdt != np.uint8 or len(kshape) != 2 or kshape[1] != 20:
        return f"keys have shape {kshape} and dtype {kdt}, not (n, 20) uint8", None, 0
    n = kshape[0]
    # sentence and span vectors may differ in size (a sentence-transformers Dense layer
    # maps the sentence embedding to another dimension), never in items or views
    if len(sshape) != 3 or len(pshape) != 3 or sshape[:2] != pshape[:2] or sshape[0] != n:
        return f"sent {sshape} and span {pshape} do not match {n} keys", None, n
    if not (np.issubdtype(sdt, np.floating) and np.issubdtype(pdt, np.floating)):
        return f"vectors are {sdt}/{pdt}, not floating point", None, n
    for k in ("missing", "missing_span"):
        shape, dt = specs[k]
        if shape != (n,) or not np.issubdtype(dt, np.integer):
            return f"{k} has shape {shape} ({dt}), not ({n},) integers", None, n
    return None, (int(sshape[1]), int(sshape[2]), int(pshape[2])), n


def _npz_specs(path: Path) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Shape and dtype of each array of a shard, read from the headers only (no data)."""
    out = {}
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            name = info.filename.removesuffix(".npy")
            if name not in _ARRAYS:
                continue
            with zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
                elif version == (2, 0):
                    shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
                else:
                    raise ValueError(f"array {name!r} has .npy format {version}")
            out[name] = (tuple(shape), np.dtype(dtype))
    return out


def _root_problem(root: Path) -> str | None:
    """What makes ``root`` unusable as a cache root (a file, a link loop, a dangling
    link), or None (a directory, or nothing yet: it is created)."""
    if root.is_dir():
        return None
    if os.path.islink(root):
        try:
            os.stat(root)
        except FileNotFoundError:
            return (f"a symbolic link to {os.readlink(root)!r}, which does not exist (create "
                    "that directory, or point the option at one)")
        except OSError as e:
            if e.errno == errno.ELOOP:
                return "a symbolic link loop (it never reaches a directory)"
            return f"a symbolic link that cannot be followed ({e.strerror or e})"
        return "a symbolic link to something that is not a directory"
    if os.path.lexists(root):
        return "a file, not a directory"
    return None


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
        shape: ``(views, sentence dim, span dim)`` of the encoder's vectors, ``None`` for
            a part not known (see :func:`vector_shape`); with the shape ``fingerprint.json``
            records, what every shard must hold.

    Attributes:
        dir: the store entry directory.
        problems: one line per shard found unreadable and discarded (for the run's notes).

    Raises:
        OutputError: the root is a file, a link loop or a dangling link, or the entry
            cannot be created (read-only file system, full disk, no permission).
    """

    def __init__(self, fingerprint: dict, root: str | os.PathLike | None = None, *,
                 shape: Shape | None = None) -> None:
        safe = safe_name(str(fingerprint.get("name") or fingerprint.get("model", "model")))[-60:]
        self.fingerprint = {k: v for k, v in fingerprint.items() if k != SHAPE_KEY}
        self.root = cache_root(root)
        self.dir = self.root / f"{safe}-{fingerprint_id(fingerprint)}"
        why = _root_problem(self.root)
        if why:
            raise OutputError(f"the embedding cache root is {why}; point --cache-dir DIR (or "
                              "$NCPROBE_CACHE) at a directory, or run with --no-cache "
                              "(nothing is stored)", path=str(self.root))
        self.problems: list[str] = []
        self._reported: set[str] = set()  # shard names not regular files, reported once
        self._lock_depth = 0
        self._declared: Shape = shape if shape is not None else (None, None, None)
        self._expected: Shape = self._declared
        self._recorded: Shape = (None, None, None)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            if not (self.root / MARKER).exists() and all(
                    _ROOT_FILES_RE.match(n) for n in os.listdir(self.root)):
                # only a root that holds nothing but ncprobe's files is tagged: a tag in a
                # directory the user pointed --cache-dir at (their home...) would hide it from
                # their backups
                atomic_write_text(self.root / MARKER, _tag_text("an ncprobe embedding cache"))
            self._reset()
            self._ensure_dir()
        except OSError as e:
            raise self._unwritable(e) from e
        self.refresh()

    def _unwritable(self, err: OSError, path: Path | None = None) -> OutputError:
        """The named error (exit 6) for a write into the cache that failed."""
        return output_error(err, path or err.filename or self.dir, what="embedding cache",
                            todo=_CACHE_TODO)

    def _reset(self) -> None:
        self._index: dict[bytes, tuple[int, int]] = {}
        self._shards: list[dict[str, np.ndarray]] = []
        self._loaded: list[str] = []
        self._shape: Shape = self._expected

    def _ensure_dir(self) -> None:
        """Create the entry (again, after a ``cache clear``) with its marker and fingerprint,
        and read the vector shape the fingerprint records."""
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
            meta = json.loads(fp.read_text(encoding="utf-8"))
            ok = isinstance(meta, dict) and fingerprint_id(meta) == fingerprint_id(
                self.fingerprint)
        except (OSError, ValueError, TypeError):
            meta, ok = {}, False
        if not ok:  # missing or damaged: the directory name says what it must hold
            meta = dict(self.fingerprint)
            atomic_write_text(fp, json.dumps(meta, indent=2, sort_keys=True, default=list))
        self._recorded = _recorded_shape(meta)
        expected = _merge(self._declared, self._recorded)
        if expected != self._expected:  # recorded by another process meanwhile
            self._expected = expected
            self._shape = _merge(expected, self._shape)

    def _record_shape(self, shape: Shape) -> None:
        """Write the whole vector shape into ``fingerprint.json`` (under the lock)."""
        meta = {**self.fingerprint, SHAPE_KEY: dict(zip(_SHAPE_PARTS, shape, strict=True))}
        atomic_write_text(self.dir / _FINGERPRINT,
                          json.dumps(meta, indent=2, sort_keys=True, default=list))
        self._expected = self._recorded = shape

    def check_writable(self) -> None:
        """Raise :class:`~ncprobe.errors.OutputError` now when no shard can be written to
        the entry (read-only file system, no permission), before anything is encoded.

        A file is created and removed under the name ncprobe's temporary files have. A
        full disk may still show only when a shard is written; that is named the same way.
        """
        import tempfile

        try:
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".shard-writable.npz.",
                                       suffix=".tmp")
            os.close(fd)
            os.unlink(tmp)
        except OSError as e:
            raise self._unwritable(e, self.dir) from e

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
            try:
                self._ensure_dir()
            except OSError as e:
                raise self._unwritable(e, self.dir) from e
            try:
                stack.enter_context(dir_lock(self.dir))
                break
            except FileNotFoundError:  # removed between creation and locking: again
                continue
        else:
            raise NcprobeError(f"{self.dir}: could not lock the cache entry; it keeps being "
                               "removed (is `ncprobe cache clear` running in a loop?)")
        with stack:
            try:
                self._ensure_dir()
            except OSError as e:
                raise self._unwritable(e, self.dir) from e
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
        new = []
        for name in names:
            if name not in loaded:
                got = self._read(name)
                if got is not None:
                    new.append((name, *got))
        # the parts of the shape that neither the encoder nor fingerprint.json says (an
        # entry written before the shape was recorded): from the shape of most items
        known = [(s, len(d["keys"])) for d in self._shards
                 for s in [_structure({k: (v.shape, v.dtype) for k, v in d.items()})[1]]
                 if s is not None]
        self._shape = _majority(self._shape, known + [(s, len(d["keys"])) for _, d, s in new])
        for name, data, shape in new:
            why = _mismatch(shape, self._shape)
            if why:
                self._discard(self.dir / name, why)
            else:
                self._add(name, data)

    def _read(self, name: str) -> tuple[dict[str, np.ndarray], tuple[int, int, int]] | None:
        """A shard's arrays and shape; None when it is gone, not a file, or was discarded."""
        path = self.dir / name
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                # not ncprobe's (a directory named like a shard): never deleted, reported once
                if name not in self._reported:
                    self._reported.add(name)
                    msg = (f"cache entry {self.dir} holds {name!r}, which is not a regular "
                           "file; it was skipped and left as it is (remove it yourself: "
                           "`ncprobe cache clear` keeps an entry holding it)")
                    log.warning("%s", msg)
                    self.problems.append(msg)
                return None
            with np.load(path, allow_pickle=False) as z:
                data = {k: z[k] for k in _ARRAYS if k in z.files}
            why, shape, _ = _structure({k: (v.shape, v.dtype) for k, v in data.items()})
        except FileNotFoundError:
            return None  # removed meanwhile by another process (a clear, or its own discard)
        except Exception as e:  # noqa: BLE001 - numpy/zipfile raise many types on corrupt files
            why, shape = (f"{type(e).__name__}: {e}" if str(e) else type(e).__name__), None
        if why or shape is None:
            self._discard(path, why or "unusable")
            return None
        return data, shape

    def _add(self, name: str, data: dict[str, np.ndarray]) -> None:
        n = len(self._shards)
        self._shards.append(data)
        self._loaded.append(name)
        # keys are stored as (n, 20) uint8: a bytes dtype would strip trailing NUL bytes
        for row, key in enumerate(data["keys"]):
            self._index[key.tobytes()] = (n, row)

    def _discard(self, path: Path, why: str) -> None:
        msg = (f"cache shard {path} cannot be used ({why}); it was deleted and its items "
               "are encoded again")
        log.warning("%s", msg)
        self.problems.append(msg)
        try:
            path.unlink(missing_ok=True)  # ncprobe's own file, in ncprobe's own entry
        except OSError as e:  # a read-only cache: the shard stays, and is skipped again
            log.debug("could not delete %s: %s", path, e)

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
        """Write one shard atomically (under the entry's lock) and index it.

        Raises:
            NcprobeError: the vectors are not of the shape the entry's fingerprint says
                (the encoder returned what it did not declare; nothing is stored).
            OutputError: the shard cannot be written (full disk, read-only, no permission).
        """
        if not keys:
            return
        data = {"keys": np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 20),
                "sent": enc.sent, "span": enc.span,
                "missing": enc.missing_words, "missing_span": enc.missing_span_words}
        why, shape, _ = _structure({k: (np.shape(v), np.asarray(v).dtype)
                                    for k, v in data.items()})
        if why or shape is None:
            raise NcprobeError(f"{self.fingerprint.get('name') or self.fingerprint.get('model')}"
                               f": the encoder returned unusable vectors ({why}); nothing was "
                               "stored")
        with self.lock():
            wrong = _mismatch(shape, self._expected)
            if wrong:
                raise NcprobeError(
                    f"{self.fingerprint.get('name') or self.fingerprint.get('model')}: the "
                    f"encoder returned {wrong.replace('vectors of another shape: ', '')}; not "
                    f"stored in {self.dir}. Its vectors must keep one shape: run with "
                    "--no-cache, and report this")
            # time first, so shards sort in the order they were written; the random part
            # keeps names unique across processes and threads
            name = f"shard-{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.npz"
            try:
                if self._recorded != shape:
                    # the first shard ncprobe stores records the whole shape in
                    # fingerprint.json; shards that only a majority of items made the
                    # reference are checked against it again
                    self._record_shape(shape)
                    if _mismatch(shape, self._shape):
                        self._reset()
                        self.refresh()
                with atomic_open(self.dir / name) as fh:
                    # numbers only: shards are read back with allow_pickle=False
                    np.savez(fh, allow_pickle=False, **data)
            except OSError as e:
                raise self._unwritable(e, self.dir / name) from e
            self._shape = _merge(self._expected, self._shape)
            self.refresh()
            if name not in self._loaded:
                raise NcprobeError(f"{self.dir / name}: the shard just written could not be "
                                   "read back (see the warning above)")


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

    @property
    def spoiled(self) -> list[EntryCheck]:
        """Refused entries that ncprobe wrote (its marker, a ``fingerprint.json`` that hashes
        to their name) but that hold something ncprobe does not write now (a directory named
        like a shard...): neither listed nor cleared, so ``cache info`` names them."""
        out = []
        for chk in self.refused:
            m = _ENTRY_RE.match(chk.path.name)
            if m and chk.fingerprint and fingerprint_id(chk.fingerprint) == m.group(1) \
                    and _is_ncprobe_tag(chk.path / MARKER):
                out.append(chk)
        return out


def scan(root: str | os.PathLike | None = None) -> CacheScan:
    """Classify every item directly under the cache root (nothing is followed or changed).

    Raises:
        UsageError: the root is a file, a symbolic-link loop or a dangling link, or cannot
            be listed (a root that does not exist holds nothing).
    """
    base = cache_root(root)
    why = _root_problem(base)
    if why:
        raise UsageError(f"{base}: the embedding cache root is {why}; point --cache-dir (or "
                         "$NCPROBE_CACHE) at the cache directory")
    entries, refused, foreign = [], [], []
    try:
        items = sorted(os.scandir(base), key=lambda c: c.name)
    except FileNotFoundError:
        items = []
    except OSError as e:
        raise UsageError(f"{base}: the embedding cache root cannot be listed "
                         f"({e.strerror or e})") from e
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


def _shard_check(path: Path) -> tuple[str | None, tuple[int, int, int] | None, int]:
    """:func:`_structure` of a shard file, from its array headers (no vectors are read)."""
    try:
        return _structure(_npz_specs(path))
    except Exception as e:  # noqa: BLE001 - numpy/zipfile raise many types on corrupt files
        return (f"{type(e).__name__}: {e}" if str(e) else type(e).__name__), None, 0


def cache_info(root: str | os.PathLike | None = None) -> list[dict]:
    """One dict per ncprobe store entry: ``dir, model, fingerprint, shape, items, bytes,
    corrupt``.

    Only entries that :func:`check_entry` accepts are listed (:func:`scan` gives the
    others). ``shape`` is ``{views, sent_dim, span_dim}`` as the entry's fingerprint says
    (``None`` for a part not known). ``corrupt`` names each shard that ``compute`` will
    discard, with why: unreadable, arrays missing or inconsistent, or vectors of another
    shape than the fingerprint says; their items are not counted.

    Raises:
        UsageError: the root is a file, a symbolic-link loop or a dangling link.
    """
    out = []
    for e in scan(root).entries:
        items, corrupt, size = 0, [], 0
        checked = []
        for f in sorted(e.path.iterdir()):
            size += f.lstat().st_size
            if _SHARD_RE.match(f.name):
                why, shape, n = _shard_check(f)
                if why or shape is None:
                    corrupt.append(f"{f}: {why}")
                else:
                    checked.append((f, shape, n))
        expected = _majority(_recorded_shape(e.fingerprint), [(s, n) for _, s, n in checked])
        for f, shape, n in checked:
            wrong = _mismatch(shape, expected)
            if wrong:
                corrupt.append(f"{f}: {wrong}")
            else:
                items += n
        out.append({"dir": str(e.path), "model": e.model, "fingerprint": e.fingerprint,
                    "shape": dict(zip(_SHAPE_PARTS, expected, strict=True)), "items": items,
                    "bytes": size, "corrupt": corrupt})
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
