"""EmbeddingStore: pooled vectors on disk, per model fingerprint, never computed twice.

A store entry (:mod:`ncprobe.cache.entries`) holds shards (:mod:`ncprobe.cache.shards`). A
shard is written to a unique temporary file and renamed into place, so an interrupted run
keeps every shard it finished and the rerun encodes only what is missing; the next run to
lock the entry removes the temporary file a killed run left
(:func:`ncprobe.owned.remove_temp_files`).

A run reads only what it needs: opening an entry reads the item keys and the array headers
of its shards, never their vectors, and :meth:`EmbeddingStore.vectors` reads the rows of the
keys asked for, one view at a time (:class:`StoredVectors`). Other items of the entry
(another language's, another run's) are never read.

Shards are read with ``allow_pickle=False``; a shard that cannot be read, whose arrays are
missing, of inconsistent shapes, or that end before their headers say, or that a development
version of ncprobe wrote (:func:`~ncprobe.cache.shards.shard_problem`), is logged by path,
deleted and its items encoded again. The keys and missing-word counts are read whole (their
zip CRC is checked). The vectors of a shard are verified when a run first looks up one of
its items (``key in store``), once per shard and run
(:func:`~ncprobe.cache.shards.vectors_damage`); a shard whose bytes changed is discarded
like an unreadable one. Shards holding none of a run's items are not read. A shard of
another shape than the entry's fingerprint says (:mod:`ncprobe.cache.shapes`) is discarded
alone, with a warning naming it.

Errors: a cache root that is a file, a symbolic-link loop or a dangling link is
:class:`~ncprobe.errors.OutputError` (exit 6); a cache that cannot be written (read-only,
full disk, no permission) is :class:`~ncprobe.errors.OutputError`, checked before anything
is encoded. Anything named like a shard that is not a regular file (a directory) is left
alone and reported.

Concurrent runs: :func:`ncprobe.embed.embed` holds an exclusive lock on the entry directory
(:func:`ncprobe._io.dir_lock`) while it looks up, encodes and stores, and reloads what
another process stored before it got the lock, so two runs sharing a cache encode and store
every item once. Before the lock is released, the shards a run will read are opened
(:meth:`EmbeddingStore.vectors`): a ``cache clear`` while the run analyses its vectors
removes the files, and the run still reads them through its open handles.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import stat
import time
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Protocol, Sequence, runtime_checkable

import numpy as np

from .._io import (
    atomic_write_text,
    cache_root,
    check_can_write,
    dir_lock,
    output_error,
    safe_name,
    temp_file,
)
from ..errors import NcprobeError, OutputError, UsageError
from ..owned import CACHEDIR_TAG, cachedir_tag, holds_only, remove_temp_files
from .dtypes import DTYPE_KEY, check_store_dtype, decode_vectors
from .entries import (
    FINGERPRINT,
    SHARD_RE,
    SHARD_TEMP_RE,
    STORE_FORMAT,
    fingerprint_id,
    is_root_file,
    root_problem,
)
from .shapes import (
    SHAPE_KEY,
    SHAPE_PARTS,
    Shape,
    majority_shape,
    merge_shape,
    recorded_shape,
    shape_mismatch,
)
from .shards import (
    LAYOUT,
    LOSS,
    VERIFIED,
    VIEWS_FIRST,
    Member,
    ViewsFirst,
    identity,
    open_shard,
    read_at,
    shard_problem,
    structure,
    vectors_damage,
    write_npz,
)

if TYPE_CHECKING:
    from ..encoders.base import Encoded

# the package's logger: its messages are named ``ncprobe.cache`` whichever module logs them
log = logging.getLogger("ncprobe.cache")

#: how errors name the cache, and what they tell to do
_CACHE_WHAT = "embedding cache"
_CACHE_TODO = ("choose a writable cache with --cache-dir DIR (or $NCPROBE_CACHE), free space, or "
               "run with --no-cache (nothing is stored), and run the command again")

_json_string = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) uses


def _tag(what: str) -> str:
    """The content of the :data:`~ncprobe.owned.CACHEDIR_TAG` of a cache directory that is
    ``what``."""
    return cachedir_tag(what, "ncprobe cache clear")


def item_key(tokens: Sequence[str], span: tuple[int, int]) -> bytes:
    """The store key of one (sentence, span) item: 20 bytes of SHA-1 of
    ``json.dumps([tokens, span], ensure_ascii=False, separators=(",", ":"))``, built here
    from json's own string encoder without the general encoder's per-call set-up (the
    same bytes, tested; every run keys every stimulus)."""
    return hashlib.sha1(_item_json(tokens, span).encode("utf-8")).digest()


def _item_json(tokens: Sequence[str], span: tuple[int, int]) -> str:
    """``json.dumps([list(tokens), list(span)], ensure_ascii=False, separators=(",", ":"))``."""
    start, end = span
    if type(start) is int and type(end) is int:
        text, n = "", 0
        try:  # str words (a str subclass too: json writes the string it holds)
            text, n = '","'.join(tokens), len(tokens)
        except TypeError:
            pass
        # json's string encoder adds two characters a word to the joined words where none
        # needs escaping (two quotes, and one escape for each quote of the n - 1 separators),
        # more where one does: then the joined words are the JSON, with one join for them all
        if n and len(_json_string(text)) == len(text) + 2 * n:
            return f'[["{text}"],[{start},{end}]]'
        try:  # each word escaped by json's string encoder
            return f"[[{','.join(map(_json_string, tokens))}],[{start},{end}]]"
        except TypeError:  # a word that is no string: json.dumps says what it makes of it
            pass
    return json.dumps([list(tokens), list(span)], ensure_ascii=False, separators=(",", ":"))


@dataclass
class PreparedShard:
    """A shard :meth:`EmbeddingStore.prepare` wrote under a temporary name
    that :meth:`EmbeddingStore.commit` names and indexes.

    Attributes:
        path: its temporary file.
        shape: the shape of its vectors (checked again when it is committed).
        model: the model's name, for messages.
        items: how many items it holds.
    """

    path: Path
    shape: tuple[int, int, int]
    model: str | None
    items: int

    def discard(self) -> None:
        """Remove the temporary file where it is still there (a committed shard was renamed
        away: nothing to remove). A file that cannot be removed stays (the next run that
        takes the entry's lock removes it): the error that stopped the write is the one raised."""
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)


@runtime_checkable
class VectorBatch(Protocol):
    """What :meth:`EmbeddingStore.put` stores of a batch: an encoder's
    :class:`~ncprobe.encoders.base.Encoded`, or anything with its four arrays."""

    sent: np.ndarray
    span: np.ndarray
    missing_words: np.ndarray
    missing_span_words: np.ndarray


@dataclass
class _Shard:
    """An indexed shard: its arrays' places in the file and its missing-word counts; no
    vector is held in memory."""

    name: str
    path: Path
    n: int
    shape: tuple[int, int, int]
    dtype: str
    members: dict[str, Member]
    missing: np.ndarray
    missing_span: np.ndarray
    #: per item, the largest angle between a stored vector and its float32 original
    #: (:data:`~ncprobe.cache.shards.LOSS`); None in float32 shards (exact)
    loss: np.ndarray | None = None
    #: whether its vectors were verified (their CRC-32) since it was indexed
    verified: bool = False


def _raise_open_files_limit(wanted: int) -> int:
    """Raise the soft limit of open files towards ``wanted`` (within the hard limit);
    the number of descriptors that may be opened now, leaving room for the rest of the run."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted + 256:
        new = wanted + 256 if hard == resource.RLIM_INFINITY else min(hard, wanted + 256)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
            soft = new
    return wanted if soft == resource.RLIM_INFINITY else max(0, min(wanted, soft - 256))


class StoredVectors:
    """Stored vectors of some keys, read one layer view at a time (see
    :meth:`EmbeddingStore.vectors`).

    Only the rows of the keys asked for are read, each contiguous run of rows in one
    read; the shards are opened when this object is made (under the entry's lock, in
    :func:`~ncprobe.embed.embed`) and stay open until :meth:`close`, so a ``cache clear``
    meanwhile does not take them away.

    Attributes:
        n: rows that :meth:`read` returns (one per position of ``order``).
        views: layer views.
        dims: vector size per part, ``{"sent": ..., "span": ...}``.
        dtype: the storage dtype (vectors are returned as float32).
        missing_words, missing_span_words: ``(n,)`` int32, per row.
        store_loss: a bound on the largest angle (radians) between one of these rows'
            vectors and its float32 original
            (:func:`~ncprobe.cache.dtypes.storage_loss`; 0.0 for float32).
        rows_read, bytes_read: what :meth:`read` has read from disk so far.
    """

    def __init__(self, shards: Sequence[_Shard], where: np.ndarray, rows: np.ndarray,
                 shape: tuple[int, int, int], dtype: str) -> None:
        self.n = len(where)
        self.views, self.dims = shape[0], {"sent": shape[1], "span": shape[2]}
        self.dtype = dtype
        self.rows_read = self.bytes_read = 0
        self.missing_words = np.zeros(self.n, dtype=np.int32)
        self.missing_span_words = np.zeros(self.n, dtype=np.int32)
        self.store_loss = 0.0
        # per shard: the output rows it fills, the sorted distinct rows it reads, and for
        # each output row the position of its row among those
        self._groups: list[tuple[_Shard, np.ndarray, np.ndarray, np.ndarray]] = []
        order = np.argsort(where, kind="stable")
        bounds = np.searchsorted(where[order], np.arange(len(shards) + 1))
        for i, shard in enumerate(shards):
            out = order[bounds[i]:bounds[i + 1]]
            if not len(out):
                continue
            distinct, inverse = np.unique(rows[out], return_inverse=True)
            self._groups.append((shard, out, distinct, inverse.reshape(-1)))
            self.missing_words[out] = shard.missing[rows[out]]
            self.missing_span_words[out] = shard.missing_span[rows[out]]
            if dtype != "float32" and shard.loss is not None:
                self.store_loss = max(self.store_loss, float(shard.loss[rows[out]].max()))
        self._files: dict[str, io.FileIO] = {}
        pin = _raise_open_files_limit(len(self._groups))
        try:
            for shard, *_ in self._groups[:pin]:
                self._files[shard.name] = open(shard.path, "rb", buffering=0)  # noqa: SIM115
        except FileNotFoundError as e:
            self.close()
            raise NcprobeError(f"cache shard {e.filename} was removed while this run opened "
                               "it (`ncprobe cache clear`?); run the command again") from None
        self._finalizer = weakref.finalize(self, _close_all, list(self._files.values()))

    def __enter__(self) -> "StoredVectors":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the shard files (reading again reopens them by path)."""
        files, self._files = getattr(self, "_files", {}), {}
        _close_all(list(files.values()))

    @contextlib.contextmanager
    def _file(self, shard: _Shard) -> Iterator[io.FileIO]:
        pinned = self._files.get(shard.name)
        if pinned is not None:
            yield pinned
            return
        try:
            fh = open(shard.path, "rb", buffering=0)  # noqa: SIM115
        except FileNotFoundError:
            raise NcprobeError(f"cache shard {shard.path} was removed while this run read it "
                               "(`ncprobe cache clear`?); run the command again") from None
        with fh:
            yield fh

    def read(self, part: str, view: int) -> np.ndarray:
        """``(n, dim)`` float32 vectors of one part (``"sent"`` or ``"span"``) and view.

        Raises:
            NcprobeError: a shard ends before its vectors (damaged after it was indexed).
        """
        if part not in self.dims:
            raise ValueError(f"part must be 'sent' or 'span', not {part!r}")
        if not 0 <= view < self.views:
            raise IndexError(f"view {view} of {self.views}")
        out = np.empty((self.n, self.dims[part]), dtype=np.float32)
        for shard, rows_out, distinct, inverse in self._groups:
            with self._file(shard) as fh:
                got = self._rows(fh, shard, part, view, distinct)
            out[rows_out] = decode_vectors(got, shard.dtype)[inverse]
        return out

    def _rows(self, fh: io.FileIO, shard: _Shard, part: str, view: int, rows: np.ndarray
              ) -> np.ndarray:
        """Rows ``rows`` (sorted, distinct) of one view of a shard, as stored: the view's
        rows are adjacent in the file (views first), so each run of consecutive rows is one
        read."""
        m = shard.members[part]
        row_bytes = m.shape[2] * m.dtype.itemsize
        base = m.offset + view * m.shape[1] * row_bytes
        got = np.empty((len(rows), m.shape[2]), dtype=m.dtype)
        if not got.size:
            return got
        buf = got.data.cast("B")
        cuts = np.flatnonzero(np.diff(rows) != 1) + 1
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(rows)], strict=True):
            read_at(fh, buf[a * row_bytes:b * row_bytes], base + int(rows[a]) * row_bytes,
                    shard.path)
        self.rows_read += len(rows)
        self.bytes_read += got.nbytes
        return got


def _close_all(files: list) -> None:
    for fh in files:
        with contextlib.suppress(OSError):
            fh.close()


class EmbeddingStore:
    """Vectors of one encoder fingerprint.

    Args:
        fingerprint: the encoder's :meth:`~ncprobe.encoders.base.Encoder.fingerprint`.
        root: cache root (see :func:`ncprobe._io.cache_root`).
        shape: ``(views, sentence dim, span dim)`` of the encoder's vectors, ``None`` for
            a part not known (see :func:`~ncprobe.cache.shapes.vector_shape`); with the
            shape ``fingerprint.json`` records, what every shard must hold.
        dtype: how the vectors are stored (:data:`~ncprobe.cache.dtypes.STORE_DTYPES`;
            default float32, exact). Part of the entry's fingerprint when it is not float32.

    Attributes:
        dir: the store entry directory.
        dtype: the storage dtype.
        problems: one line per shard found unreadable and discarded (for the run's notes).

    Raises:
        OutputError: the root is a file, a link loop or a dangling link, or the entry
            cannot be created (read-only file system, full disk, no permission).
        UsageError: ``dtype`` is not a storage dtype, or differs from the one the
            fingerprint names.
    """

    def __init__(self, fingerprint: dict, root: str | os.PathLike | None = None, *,
                 shape: Shape | None = None, dtype: str | None = None) -> None:
        named = fingerprint.get(DTYPE_KEY)
        if dtype is not None and named is not None and named != dtype:
            raise UsageError(f"the fingerprint names store dtype {named!r}, not {dtype!r}")
        self.dtype = check_store_dtype(dtype or named or "float32")
        safe = safe_name(str(fingerprint.get("name") or fingerprint.get("model", "model")))[-60:]
        self.fingerprint = {k: v for k, v in fingerprint.items()
                            if k not in (SHAPE_KEY, DTYPE_KEY)}
        if self.dtype != "float32":  # float32 entries keep the names they always had
            self.fingerprint[DTYPE_KEY] = self.dtype
        self.root = cache_root(root)
        self.dir = self.root / f"{safe}-{fingerprint_id(self.fingerprint)}"
        why = root_problem(self.root)
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
            if not (self.root / CACHEDIR_TAG).exists() and holds_only(self.root, is_root_file):
                # only a root that holds nothing but ncprobe's files is tagged: a tag in a
                # directory the user pointed --cache-dir at (their home...) would hide it from
                # their backups
                atomic_write_text(self.root / CACHEDIR_TAG,
                                  _tag("an ncprobe embedding cache"))
            self._reset()
            self._ensure_dir()
        except OSError as e:
            raise self._unwritable(e) from e
        self.refresh()

    def _unwritable(self, err: OSError, path: Path | None = None) -> OutputError:
        """The named error (exit 6) for a write into the cache that failed."""
        return output_error(err, path or err.filename or self.dir, what=_CACHE_WHAT,
                            todo=_CACHE_TODO)

    def _reset(self) -> None:
        self._index: dict[bytes, tuple[int, int]] = {}
        self._shards: list[_Shard] = []
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
        if not (self.dir / CACHEDIR_TAG).exists():
            atomic_write_text(self.dir / CACHEDIR_TAG,
                              _tag(f"an ncprobe embedding store (format {STORE_FORMAT})"))
        fp = self.dir / FINGERPRINT
        try:
            meta = json.loads(fp.read_text(encoding="utf-8"))
            ok = isinstance(meta, dict) and fingerprint_id(meta) == fingerprint_id(
                self.fingerprint)
        except (OSError, ValueError, TypeError):
            meta, ok = {}, False
        if not ok:  # missing or damaged: the directory name says what it must hold
            meta = dict(self.fingerprint)
            atomic_write_text(fp, json.dumps(meta, indent=2, sort_keys=True, default=list))
        self._recorded = recorded_shape(meta)
        expected = merge_shape(self._declared, self._recorded)
        if expected != self._expected:  # recorded by another process meanwhile
            self._expected = expected
            self._shape = merge_shape(expected, self._shape)

    def _record_shape(self, shape: Shape) -> None:
        """Write the whole vector shape into ``fingerprint.json`` (under the lock)."""
        meta = {**self.fingerprint, SHAPE_KEY: dict(zip(SHAPE_PARTS, shape, strict=True))}
        atomic_write_text(self.dir / FINGERPRINT,
                          json.dumps(meta, indent=2, sort_keys=True, default=list))
        self._expected = self._recorded = shape

    def check_writable(self) -> None:
        """Raise :class:`~ncprobe.errors.OutputError` now when no shard can be written to
        the entry (read-only file system, no permission), before anything is encoded.

        A file is created and removed under the name ncprobe's temporary files have. A
        full disk may still show only when a shard is written; that is named the same way.
        """
        check_can_write(self.dir, what=_CACHE_WHAT, todo=_CACHE_TODO,
                        prefix=".shard-writable.npz.")

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
                self._remove_leftovers()
                self.refresh()
                yield self
            finally:
                self._lock_depth = 0

    def _remove_leftovers(self) -> None:
        """Remove the shard temporary files that killed writers left in the entry (under its
        lock: every shard is written holding it, so none of them is being written now). A
        cache that cannot be written keeps them: it is still read."""
        try:
            remove_temp_files(self.dir, SHARD_TEMP_RE, what=_CACHE_WHAT, logger=log)
        except (OSError, OutputError) as e:
            log.debug("could not remove the temporary files in %s: %s", self.dir, e)

    def refresh(self) -> None:
        """Index the shards on disk that are not indexed yet (all again if some vanished).

        Only each shard's keys, missing-word counts and array headers are read."""
        try:
            names = sorted(n for n in os.listdir(self.dir) if SHARD_RE.match(n))
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
                    new.append(got)
        # the parts of the shape that neither the encoder nor fingerprint.json says (a
        # fingerprint.json written again after it was found damaged): from the shape of
        # most items
        known = [(s.shape, s.n) for s in self._shards]
        self._shape = majority_shape(self._shape, known + [(s.shape, s.n) for s, _ in new])
        for shard, keys in new:
            why = shape_mismatch(shard.shape, self._shape)
            if why:
                self._discard(shard.path, why)
            else:
                self._add(shard, keys)

    def _read(self, name: str) -> tuple[_Shard, np.ndarray] | None:
        """A shard's index entry and keys; None when it is gone, not a file, or was discarded."""
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
            got = open_shard(path, small=True)
            why, shape, n = shard_problem(got, self.dtype)
        except FileNotFoundError:
            return None  # removed meanwhile by another process (a clear, or its own discard)
        except Exception as e:  # noqa: BLE001 - numpy/zipfile raise many types on corrupt files
            why, shape = (f"{type(e).__name__}: {e}" if str(e) else type(e).__name__), None
        if why or shape is None:
            self._discard(path, why or "unusable")
            return None
        shard = _Shard(name, path, n, shape, self.dtype, got.members, got.small["missing"],
                       got.small["missing_span"], got.small.get(LOSS))
        return shard, got.small["keys"]

    def _add(self, shard: _Shard, keys: np.ndarray) -> None:
        n = len(self._shards)
        self._shards.append(shard)
        self._loaded.append(shard.name)
        # keys are stored as (n, 20) uint8: a bytes dtype would strip trailing NUL bytes
        for row, key in enumerate(keys):
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
        """Whether ``key`` is stored in a shard whose vectors are intact.

        The first look-up of a key in a shard verifies that shard's vectors (their CRC-32,
        :func:`~ncprobe.cache.shards.vectors_damage`; once per shard, and once per process
        while the file is unchanged): a damaged shard is then discarded like an unreadable
        one (logged by path, named in :attr:`problems`, deleted), and its keys are no longer
        stored, so the run encodes them again."""
        loc = self._index.get(key)
        if loc is None:
            return False
        return self._shards[loc[0]].verified or self._verify(loc[0])

    def _verify(self, i: int) -> bool:
        """Verify the vectors of shard ``i``; drop it from the index when they are damaged
        (or the file is gone). Whether it is intact."""
        shard = self._shards[i]
        try:
            why = vectors_damage(shard.path, shard.members)
        except FileNotFoundError:  # removed meanwhile (a clear): its items are not stored
            self._drop(i)
            return False
        except Exception as e:  # noqa: BLE001 - numpy/zipfile raise many types on corrupt files
            why = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        if why:
            self._discard(shard.path, why)
            self._drop(i)
            return False
        shard.verified = True
        return True

    def _drop(self, i: int) -> None:
        """Forget shard ``i``: its keys are no longer in the store."""
        name = self._shards[i].name
        self._index = {k: loc for k, loc in self._index.items() if loc[0] != i}
        self._loaded = [n for n in self._loaded if n != name]

    def vectors(self, keys: Sequence[bytes], order: Sequence[int] | np.ndarray | None = None
                ) -> StoredVectors:
        """The stored vectors of ``keys`` (every key must be present), to read one view at a
        time; nothing is read yet.

        Args:
            keys: stored item keys.
            order: for each row the reader returns, the position in ``keys`` of its item
                (rows may repeat an item); default: one row per key, in order.
        """
        locs = np.array([self._index[k] for k in keys], dtype=np.intp).reshape(len(keys), 2)
        pick = np.arange(len(keys)) if order is None else np.asarray(order, dtype=np.intp)
        used, where = np.unique(locs[pick, 0], return_inverse=True)
        shards = [self._shards[int(i)] for i in used]
        for i, shard in zip(used.tolist(), shards, strict=True):
            # shards looked up with ``in`` are verified already (embed does): this is for
            # keys asked for without that, which can no longer be encoded here
            if not shard.verified and not self._verify(i):
                raise NcprobeError(
                    f"cache shard {shard.path} was found damaged or removed when its vectors "
                    "were read (see the warning above); run the command again: its items are "
                    "encoded again")
        shape = shards[0].shape if shards else tuple(
            0 if s is None else s for s in self._shape)
        return StoredVectors(shards, where.reshape(-1), locs[pick, 1], shape,  # type: ignore[arg-type]
                             self.dtype)

    def get(self, keys: Sequence[bytes]) -> Encoded:
        """Vectors of stored keys (every key must be present), every view, as float32."""
        # the encoders' result type, imported here: the store itself needs nothing of them
        from ..encoders.base import Encoded

        with self.vectors(keys) as got:
            parts = [np.stack([got.read(p, v) for v in range(got.views)], axis=1)
                     if got.views else np.zeros((got.n, 0, got.dims[p]), np.float32)
                     for p in ("sent", "span")]
            return Encoded(parts[0], parts[1], got.missing_words, got.missing_span_words)

    def put(self, keys: Sequence[bytes], enc: VectorBatch | Sequence[VectorBatch]) -> None:
        """Write one shard atomically (under the entry's lock) and index it: :meth:`prepare`
        and :meth:`commit` in one.

        Args:
            keys: the items' keys.
            enc: their vectors, ``(items, views, dim)`` each, in one
                :class:`~ncprobe.encoders.base.Encoded` (:class:`VectorBatch`) or in several
                (batches, in the order of ``keys``); stored views first in the entry's dtype.

        Raises:
            NcprobeError: the vectors are not of the shape the entry's fingerprint says
                (the encoder returned what it did not declare; nothing is stored), or
                beyond float16's range in a float16 entry.
            OutputError: the shard cannot be written (full disk, read-only, no permission).
        """
        if not keys:
            return
        with self.lock():
            self.commit(self.prepare(keys, enc))

    def prepare(self, keys: Sequence[bytes], enc: VectorBatch | Sequence[VectorBatch]
                ) -> PreparedShard | None:
        """The slow half of :meth:`put`: check the vectors and write the shard under a
        temporary name in the entry, which no reader takes for a shard.
        It touches neither the lock nor the index, so several may run at once, on other
        threads, while the thread that holds the entry's lock goes on (the lock must be held
        meanwhile, by any thread of this process: taking it removes the temporary files of
        shards, which only killed writers leave); :meth:`commit` (on that thread) then gives
        the shard its name and indexes it. ``None`` for no keys.

        Raises:
            what :meth:`put` raises (the shape checked against the entry's as it is now;
            :meth:`commit` checks it again under the lock).
        """
        if not keys:
            return None
        parts = [enc] if isinstance(enc, VectorBatch) else list(enc)
        model = self.fingerprint.get("name") or self.fingerprint.get("model")
        sent_shapes = {np.shape(p.sent)[1:] for p in parts}
        span_shapes = {np.shape(p.span)[1:] for p in parts}
        if len(sent_shapes) > 1 or len(span_shapes) > 1:
            raise NcprobeError(f"{model}: the encoder returned batches of different shapes "
                               f"({sorted(sent_shapes | span_shapes)}); nothing was stored")
        n_sent = sum(len(p.sent) for p in parts)
        n_span = sum(len(p.span) for p in parts)
        specs = {"keys": ((len(keys), 20), np.dtype(np.uint8)),
                 "sent": ((n_sent, *sent_shapes.pop()), np.asarray(parts[0].sent).dtype),
                 "span": ((n_span, *span_shapes.pop()), np.asarray(parts[0].span).dtype),
                 "missing": ((sum(len(p.missing_words) for p in parts),),
                             np.asarray(parts[0].missing_words).dtype),
                 "missing_span": ((sum(len(p.missing_span_words) for p in parts),),
                                  np.asarray(parts[0].missing_span_words).dtype)}
        why, shape, _ = structure(specs)
        if why or shape is None:
            raise NcprobeError(f"{model}: the encoder returned unusable vectors ({why}); nothing "
                               "was stored")
        self._check_shape(shape, model)
        sent = ViewsFirst([p.sent for p in parts], self.dtype, f"{model}'s vectors")
        span = ViewsFirst([p.span for p in parts], self.dtype, f"{model}'s vectors")
        data = {"keys": np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 20),
                "sent": sent, "span": span,
                "missing": np.concatenate([p.missing_words for p in parts]),
                "missing_span": np.concatenate([p.missing_span_words for p in parts]),
                LAYOUT: np.array([VIEWS_FIRST, self.dtype])}
        if self.dtype != "float32":  # float32 is exact: nothing to say
            data[LOSS] = np.maximum(sent.loss, span.loss)
        del sent, span
        try:
            # a shard's temporary name: a killed writer's file is removed as a leftover. Not
            # flushed to disk (fsync) before its rename: the encoding would wait for the disk
            # (3 GB of a 17-view run of a 2048-wide model: 0.7 s written, 3.7 s synced on a
            # 2-core VM); the system writes it soon after, and a shard that a power loss
            # left incomplete fails its CRC check and is encoded again, never read
            with temp_file(self.dir / "shard-prepared.npz", sync=False) as (fh, tmp):
                write_npz(fh, data)
        except OSError as e:
            raise self._unwritable(e, self.dir) from e
        return PreparedShard(tmp, shape, model, len(keys))

    def commit(self, prepared: PreparedShard | None) -> None:
        """The second half of :meth:`put`, under the entry's lock: the shard prepared by
        :meth:`prepare` takes its name (the time first, so shards sort in the order they
        were committed), and its items are indexed. Its temporary file is removed when it
        cannot be committed.

        Raises:
            what :meth:`put` raises.
        """
        if prepared is None:
            return
        try:
            with self.lock():
                self._commit(prepared)
        finally:
            prepared.discard()  # committed: renamed away, nothing left to remove

    def _check_shape(self, shape: tuple[int, int, int], model) -> None:
        wrong = shape_mismatch(shape, self._expected)
        if wrong:
            raise NcprobeError(
                f"{model}: the encoder returned "
                f"{wrong.replace('vectors of another shape: ', '')}; not "
                f"stored in {self.dir}. Its vectors must keep one shape: run with "
                "--no-cache, and report this")

    def _commit(self, prepared: PreparedShard) -> None:
        shape = prepared.shape
        self._check_shape(shape, prepared.model)
        # the random part keeps names unique across processes and threads
        name = f"shard-{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.npz"
        try:
            if self._recorded != shape:
                # the first shard ncprobe stores records the whole shape in
                # fingerprint.json; shards that only a majority of items made the
                # reference are checked against it again
                self._record_shape(shape)
                if shape_mismatch(shape, self._shape):
                    self._reset()
                    self.refresh()
            os.replace(prepared.path, self.dir / name)
        except OSError as e:
            raise self._unwritable(e, self.dir / name) from e
        self._shape = merge_shape(self._expected, self._shape)
        self.refresh()
        if name not in self._loaded:
            raise NcprobeError(f"{self.dir / name}: the shard just written could not be "
                               "read back (see the warning above)")
        # written from memory just now (zipfile computed each CRC from those bytes):
        # read by this process without verifying it again
        for shard in reversed(self._shards):
            if shard.name == name:
                shard.verified = True
                with contextlib.suppress(OSError):
                    VERIFIED.add(identity(os.stat(shard.path)))
                break
