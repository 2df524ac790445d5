"""File helpers shared by the data, cache and results code: hashing, atomic writes,
retries and file names, one implementation each.

Atomic writes (:func:`atomic_open`, and :func:`atomic_write_bytes` and
:func:`atomic_write_text` on top of it) all give the same guarantees: the parent
directory is created when needed, the content goes to a temporary name that no other
process uses (``tempfile.mkstemp`` in the target directory), is flushed to disk
(``fsync``) before the rename, and the temporary file is removed on any failure, so
the final name only ever holds complete content.

Hashes: :func:`file_sha256` (a file's content), :class:`FileHashCache` (the same,
remembered between runs; :func:`hash_cache` is the one of model weights, in the cache root
that :func:`cache_root` names), :func:`tree_sha256` (a directory), :func:`git_blob_sha1`
(the id git gives a file) and :func:`json_sha256` (a JSON-able value).
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
import tempfile
import time
from pathlib import Path
from typing import IO, Any, Callable, Iterator, TypeVar

from .errors import OutputError

T = TypeVar("T")
log = logging.getLogger(__name__)


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """SHA-256 hex digest of a file's content, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def git_blob_sha1(data: bytes) -> str:
    """The id git gives a file with this content (``git hash-object``):
    ``sha1(b"blob <len>\\0" + content)``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def json_sha256(value: Any, *, default: Callable[[Any], Any] = str) -> str:
    """SHA-256 hex digest of ``value`` as JSON with sorted keys (equal values, equal digests).

    ``default`` turns what JSON cannot hold (sets, paths...) into what it can, as in
    :func:`json.dumps`.
    """
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=default).encode()).hexdigest()


def safe_name(text: str, extra: str = "") -> str:
    """``text`` as a file name: every run of characters other than ASCII letters, digits,
    ``.``, ``_``, ``-`` and those of ``extra`` becomes one ``_``.

    >>> safe_name("sentence-transformers/all-MiniLM-L6-v2")
    'sentence-transformers_all-MiniLM-L6-v2'
    >>> safe_name("layers=1,2", extra="=,")
    'layers=1,2'
    """
    return re.sub(f"[^A-Za-z0-9{re.escape('._-' + extra)}]+", "_", text)


def retry(call: Callable[[], T], *, retries: int, backoff: float,
          retryable: Callable[[BaseException], bool],
          on_retry: Callable[[BaseException, int, float], None] | None = None) -> T:
    """``call()``, attempted again after an error that ``retryable`` accepts, with backoff.

    Up to ``retries`` further attempts; the k-th (k = 1, 2...) waits ``backoff * 2**(k-1)``
    seconds, after ``on_retry(error, k, wait)`` is called. An error that ``retryable``
    refuses is raised at once, and the last error when every attempt failed.
    """
    for attempt in range(retries + 1):
        try:
            return call()
        except Exception as e:
            if attempt == retries or not retryable(e):
                raise
            wait = backoff * 2**attempt
            if on_retry is not None:
                on_retry(e, attempt + 1, wait)
            time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover (the loop returns or raises)


#: errno values that mean "this output cannot be written here" (see :func:`output_error`)
UNWRITABLE_ERRNOS = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES,
                               errno.EPERM, errno.ENOTDIR, errno.EISDIR, errno.ELOOP})


def output_error(err: OSError, path: str | os.PathLike | None = None, *,
                 what: str = "output", todo: str | None = None) -> OutputError:
    """The named error for an OSError met while writing ``path`` (the CLI exits 6 with it).

    The message names the path and the cause in words, and says what to do (``todo``,
    by default: choose a writable path or free space, and run the command again).
    """
    where = str(path if path is not None else (err.filename or "?"))
    blocker = _not_a_directory(where) if err.errno == errno.ENOTDIR else None
    cause = {errno.EROFS: "the file system is read-only",
             errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
             errno.EACCES: "permission denied", errno.EPERM: "operation not permitted",
             errno.ENOTDIR: "a part of the path is a file, not a directory",
             errno.EISDIR: "it is a directory",
             errno.ELOOP: "too many levels of symbolic links (a link loop)"}.get(
                 err.errno or 0, err.strerror or str(err))
    if blocker is not None:  # say which part of the path is in the way
        cause += f": {blocker}" if blocker.is_file() else f" ({blocker} is no directory)"
    todo = todo or "choose a writable path (or free space) and run the command again"
    return OutputError(f"cannot write the {what}: {cause}; {todo}", path=where)


def _not_a_directory(path: str | os.PathLike) -> Path | None:
    """The first part of ``path`` (a folder above it, or ``path`` itself) that exists but is
    not a directory, following symbolic links; ``None`` when there is none (up to the first
    part that does not exist)."""
    p = Path(path)
    for part in [*reversed(p.parents), p]:
        try:
            st = os.stat(part)
        except OSError:  # missing (what follows would be created), a loop, no permission
            return None
        if not stat.S_ISDIR(st.st_mode):
            return part
    return None


def check_can_write(where: str | os.PathLike, *, target: str | os.PathLike | None = None,
                    what: str = "output", todo: str | None = None, prefix: str | None = None
                    ) -> None:
    """Refuse now, before any work, a place where nothing can be written: a temporary file is
    created and removed in ``where``, or in the nearest directory above it that exists when
    it does not exist yet (a read-only file system, no permission, a file where a directory
    is needed, a link loop; a full disk may show only when the real file is written).

    Args:
        where: the directory the output will be written into.
        target: the output named in the error (default: ``where``).
        what, todo: as in :func:`output_error`.
        prefix: the temporary file's name starts with it (default: ``.<target name>.``), and
            it ends in ``.tmp``, as ncprobe's temporary files do.

    Raises:
        OutputError: naming ``target`` and the cause (exit 6).
    """
    import tempfile

    named = Path(target if target is not None else where)
    probe = Path(where).absolute()
    while not os.path.lexists(probe) and probe != probe.parent:
        probe = probe.parent
    try:
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=prefix or f".{named.name}.", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:  # whatever the cause, nothing can be written there
        raise output_error(e, named, what=what, todo=todo) from e


def current_umask() -> int:
    """The process umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)  # elsewhere: set and restore (not thread-safe, so only a fallback)
    os.umask(old)
    return old


def umask_mode(*, directory: bool = False) -> int:
    """The mode a plain ``open()`` (0666) or ``mkdir()`` (0777) would give under the umask."""
    return (0o777 if directory else 0o666) & ~current_umask()


def chmod_like_open(path: str | os.PathLike | int, *, directory: bool = False) -> None:
    """Give ``path`` (or an open descriptor) the mode a plain ``open``/``mkdir`` would have.

    ``tempfile.mkstemp``/``mkdtemp`` create 0600/0700 on purpose; a file or directory that
    is then renamed into place as the user's output must read like any other they write.
    """
    mode = umask_mode(directory=directory)
    if isinstance(path, int):
        os.fchmod(path, mode)
    else:
        os.chmod(path, mode)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see the old content or the new, never a part.

    Concurrent writers of the same path never share a temporary file; the last rename wins.
    """
    path = Path(path)
    with atomic_open(path) as fh:
        fh.write(data)
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """:func:`atomic_write_bytes` of UTF-8 text."""
    return atomic_write_bytes(path, text.encode("utf-8"))


#: Name of the per-file hash cache kept under the cache root (see :class:`FileHashCache`).
HASH_CACHE_NAME = "file-sha256.json"
_HASH_CACHE_FORMAT = 1
#: A file whose mtime or ctime is this close to the moment it was hashed may still be
#: written to within the same timestamp tick (Linux file times are coarse, a few ms); its
#: digest is not remembered, as git does for "racily clean" index entries.
RACY_SECONDS = 2.0


def _stat_key(st: os.stat_result) -> list[int]:
    # size and mtime as asked; ctime and inode too: `touch -d`, `cp -p` or rsync can give
    # a rewritten file its old mtime back, but never its old ctime or inode
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


class FileHashCache:
    """SHA-256 digests of files, remembered between runs in one small JSON file.

    A digest is reused only while the file's absolute path, size, mtime, ctime and
    inode are unchanged, so a file rewritten in place (even with the same size)
    is hashed again. A missing, unreadable or corrupt cache file is ignored and
    written anew; failing to write it only costs a re-hash next time.

    Args:
        path: the JSON file (``None``: remember nothing, hash every time).
    """

    def __init__(self, path: str | os.PathLike | None) -> None:
        self.path = Path(path) if path is not None else None
        self._corrupt = False
        self._entries = self._read()
        self._dirty = self._corrupt  # a corrupt file is rewritten by save()

    def _read(self) -> dict[str, list]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            entries = data["files"] if data.get("format") == _HASH_CACHE_FORMAT else None
            good = {k: v for k, v in (entries or {}).items()
                    if isinstance(k, str) and isinstance(v, list) and len(v) == 5
                    and all(isinstance(x, int) for x in v[:4]) and isinstance(v[4], str)
                    and len(v[4]) == 64}
            self._corrupt = entries is None or len(good) != len(entries)
            return good
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError, AttributeError, KeyError):
            self._corrupt = True  # unreadable or not ours: start again, rewrite it on save()
            return {}

    def sha256(self, path: str | os.PathLike) -> str:
        """The SHA-256 hex digest of a file's content (from the cache when still valid)."""
        key = os.path.abspath(path)
        before = os.stat(key)
        stat = _stat_key(before)
        hit = self._entries.get(key)
        if hit is not None and hit[:4] == stat:
            return hit[4]
        started = time.time_ns()
        digest = file_sha256(key)
        after = os.stat(key)
        settled = started - max(after.st_mtime_ns, after.st_ctime_ns) > RACY_SECONDS * 1e9
        if _stat_key(after) == stat and settled:
            self._entries[key] = stat + [digest]
            self._dirty = True
        else:
            self._entries.pop(key, None)
        return digest

    def save(self) -> None:
        """Write the cache (merged with what other processes wrote meanwhile), atomically."""
        if self.path is None or not self._dirty:
            return
        merged = {**self._read(), **self._entries}
        # forget files that are gone or changed, so the file does not grow forever
        keep = {}
        for k, v in merged.items():
            try:
                if _stat_key(os.stat(k)) == v[:4]:
                    keep[k] = v
            except OSError:
                pass
        try:
            atomic_write_text(self.path, json.dumps({"format": _HASH_CACHE_FORMAT,
                                                     "files": keep}, separators=(",", ":")))
        except OSError as e:  # a read-only cache only costs time
            log.debug("could not write %s: %s", self.path, e)
        self._entries, self._dirty = keep, False


#: The environment variable naming the embedding cache root (when no directory is given).
CACHE_ENV = "NCPROBE_CACHE"


def cache_root(path: str | os.PathLike | None = None) -> Path:
    """The embedding cache root: ``path``, else ``$NCPROBE_CACHE``, else the user cache
    directory (``platformdirs.user_cache_dir("ncprobe")/embeddings``)."""
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
    alone. Here, not in :mod:`ncprobe.cache`, so that encoders need not import the store.
    """
    cache = FileHashCache(cache_root() / HASH_CACHE_NAME)
    try:
        yield cache
    finally:
        cache.save()


def _skipped(rel: Path) -> bool:
    """Files of a model directory that no model loader reads: hidden entries (``.git/``,
    ``.cache/``, ``.gitattributes``) and the top-level README/LICENSE texts."""
    if any(part.startswith(".") for part in rel.parts):
        return True
    return len(rel.parts) == 1 and rel.name.upper().startswith(("README", "LICENSE"))


def tree_sha256(root: str | os.PathLike, *, hash_cache: FileHashCache | None = None
                ) -> tuple[str, int]:
    """One SHA-256 over the content of every file under ``root``, recursively.

    Each file contributes its path relative to ``root`` and the SHA-256 of its
    content, so renaming, adding, removing or changing any byte of any file
    changes the result. Symbolic links are followed (HuggingFace cache snapshots
    are links to blobs); a directory reached twice is read once; a dangling link
    is skipped (no loader can read it). Hidden entries and top-level README and
    LICENSE files are left out (see :func:`_skipped`).

    Args:
        root: a directory.
        hash_cache: remembers per-file digests between calls (see :class:`FileHashCache`).

    Returns:
        ``(hex digest, number of files hashed)``.
    """
    root = Path(root)
    cache = hash_cache or FileHashCache(None)
    lines = []
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:  # a link cycle or a directory linked twice
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))  # .git, .cache
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root)
            if _skipped(rel) or not full.exists():
                continue
            lines.append(f"{rel.as_posix()}\0{cache.sha256(full)}\n")
    lines.sort()
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8"))
    return h.hexdigest(), len(lines)


class LockBusy(OSError):
    """:func:`dir_lock` with ``blocking=False`` found the directory locked by another process."""


@contextlib.contextmanager
def dir_lock(path: str | os.PathLike, *, blocking: bool = True) -> Iterator[Path]:
    """Hold an exclusive advisory lock on a directory (``flock`` on the directory itself).

    Hand-written rather than ``filelock``: locking the directory's own descriptor
    leaves no lock file beside the user's files, and nothing that ``ncprobe cache
    clear`` would have to delete while another process waits on it. The lock is
    released when the block ends or the process dies (the kernel drops it), so a
    killed run never leaves a stale lock. After the lock is won, the directory at
    ``path`` is checked to be the one locked: if it was removed (or replaced)
    meanwhile, the attempt starts again, and :class:`FileNotFoundError` is raised
    when nothing is at ``path`` any more.

    Args:
        path: an existing directory.
        blocking: wait for the lock (default); ``False``: raise :class:`LockBusy` at once.

    On platforms without ``fcntl`` (Windows) nothing is locked and a warning is logged.
    """
    path = Path(path)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        log.warning(
            "%s: no file locking on this platform; do not run two ncprobe commands on the same "
            "cache or output directory at once", path)
        yield path
        return
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    while True:
        fd = os.open(path, flags)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                raise LockBusy(f"{path} is locked by another process") from None
            try:
                now = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                now = None
            held = os.fstat(fd)
            if now is None or (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
                continue  # removed or replaced while we waited: lock what is there now
            yield path
            return
        finally:
            os.close(fd)  # closing the descriptor releases the lock


@contextlib.contextmanager
def temp_file(path: str | os.PathLike, *, sync: bool = True
              ) -> Iterator[tuple[IO[bytes], Path]]:
    """A temporary file beside ``path`` (a unique name, as :func:`atomic_open` makes), and its
    name: removed on any failure, its content flushed to disk (``fsync``) when the block ends
    cleanly, unless ``sync`` is false. The caller then renames it to its final name
    (``os.replace``: the second half of :func:`atomic_open`, which may come later and on
    another thread) or removes it. The parent directory is created when needed.

    Without ``sync``, a file renamed into place may, after a power loss or a crash of the
    system (not of the process: the system still writes what it holds), hold less than was
    written: only for files whose readers verify their content (the embedding cache's
    shards, CRC-32 checked before use, discarded and encoded again when damaged)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        chmod_like_open(fd)
        with os.fdopen(fd, "wb") as fh:
            yield fh, Path(tmp)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """A binary file handle whose content appears at ``path`` only when the block ends cleanly.

    The streaming form of :func:`atomic_write_bytes` (same unique temporary name,
    fsync and rename: :func:`temp_file`, then the rename), for content too large to build
    in memory first. The parent directory is created when needed.
    """
    with temp_file(path) as (fh, tmp):
        yield fh
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
