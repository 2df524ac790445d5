"""``ncprobe cache info | clear``: what a cache root holds, and deleting ncprobe's entries.

``cache clear`` deletes only entries that ncprobe wrote (:func:`check_entry`): a real
directory (never a symbolic link) named ``<name>-<16 hex digits>`` whose ``fingerprint.json``
hashes to that name, holding nothing but ncprobe's own files (the marker, the fingerprint,
shards and ncprobe's temporary files: :mod:`ncprobe.cache.entries`), removed file by file.
An entry whose marker is missing is recognised by that strict layout (the next run writes
the marker again). Anything else is left untouched, and the weight-hash cache in the root
(:func:`ncprobe._io.hash_cache`) too.

``cache info`` lists the entries with their items, and names each shard that the next run
will discard (:func:`~ncprobe.cache.shards.check_shard`): unreadable, damaged, of another
shape or dtype, or written by a development version of ncprobe.

Errors: a cache root that is a file, a symbolic-link loop or a dangling link is
:class:`~ncprobe.errors.UsageError` (exit 2).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .._io import LockBusy, cache_root, dir_lock
from ..errors import UsageError
from ..owned import CACHEDIR_TAG, is_ncprobe_tag
from .dtypes import DTYPE_KEY
from .entries import (
    ENTRY_RE,
    FINGERPRINT,
    SHARD_RE,
    fingerprint_id,
    is_entry_file,
    is_root_file,
    root_problem,
)
from .shapes import SHAPE_PARTS, majority_shape, recorded_shape, shape_mismatch
from .shards import check_shard


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
    m = ENTRY_RE.match(path.name)
    try:
        st = os.lstat(path)
    except OSError as e:
        return EntryCheck(path, False, f"cannot be read ({e.strerror})", lookalike=bool(m))
    if stat.S_ISLNK(st.st_mode):
        return EntryCheck(path, False, "it is a symbolic link (never followed)", lookalike=True)
    if not stat.S_ISDIR(st.st_mode):
        return EntryCheck(path, False, "not a directory")
    fp = path / FINGERPRINT
    has_fp = os.path.lexists(fp)
    if not m:
        return EntryCheck(path, False, "its name is not <model>-<16 hex digits>", lookalike=has_fp)
    try:
        if not stat.S_ISREG(os.lstat(fp).st_mode):
            return EntryCheck(path, False, f"{FINGERPRINT} is not a regular file", lookalike=True)
        meta = json.loads(fp.read_text(encoding="utf-8"))
        if not isinstance(meta, dict):
            raise ValueError("not a JSON object")
    except FileNotFoundError:
        return EntryCheck(path, False, f"it has no {FINGERPRINT}", lookalike=True)
    except (OSError, ValueError) as e:
        return EntryCheck(path, False, f"its {FINGERPRINT} cannot be read ({e})", lookalike=True)
    if fingerprint_id(meta) != m.group(1):
        return EntryCheck(path, False, f"its {FINGERPRINT} does not hash to the directory's name",
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
        if not child.is_file(follow_symlinks=False) or not is_entry_file(name):
            return EntryCheck(path, False, f"it holds {name!r}, which ncprobe does not write",
                              meta, lookalike=True)
        if name == CACHEDIR_TAG and not is_ncprobe_tag(child.path):
            return EntryCheck(path, False, f"its {CACHEDIR_TAG} was not written by ncprobe",
                              meta, lookalike=True)
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
            m = ENTRY_RE.match(chk.path.name)
            if m and chk.fingerprint and fingerprint_id(chk.fingerprint) == m.group(1) \
                    and is_ncprobe_tag(chk.path / CACHEDIR_TAG):
                out.append(chk)
        return out


def scan(root: str | os.PathLike | None = None) -> CacheScan:
    """Classify every item directly under the cache root (nothing is followed or changed).

    Raises:
        UsageError: the root is a file, a symbolic-link loop or a dangling link, or cannot
            be listed (a root that does not exist holds nothing).
    """
    base = cache_root(root)
    why = root_problem(base)
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
        if is_root_file(item.name) and item.is_file(follow_symlinks=False):
            continue
        chk = check_entry(item.path)
        if chk.ok:
            entries.append(chk)
        elif chk.lookalike:
            refused.append(chk)
        else:
            foreign.append(Path(item.path))
    return CacheScan(base, entries, refused, foreign, is_ncprobe_tag(base / CACHEDIR_TAG))


def cache_info(root: str | os.PathLike | None = None, *, verify: bool = True) -> list[dict]:
    """One dict per ncprobe store entry: ``dir, model, fingerprint, shape, store_dtype,
    items, bytes, corrupt``.

    Only entries that :func:`check_entry` accepts are listed (:func:`scan` gives the
    others). ``shape`` is ``{views, sent_dim, span_dim}`` as the entry's fingerprint says
    (``None`` for a part not known); ``store_dtype`` how its vectors are stored. ``corrupt``
    names each shard that ``compute`` will discard, with why: unreadable, arrays missing or
    inconsistent, vectors of another shape than the fingerprint says or stored in another
    dtype, written by a development version of ncprobe, or (``verify``) bytes changed since
    they were written (every array's CRC-32: all vectors are read, a few MB at a time);
    their items are not counted. Without ``verify`` only the headers are read.

    Raises:
        UsageError: the root is a file, a symbolic-link loop or a dangling link.
    """
    out = []
    for e in scan(root).entries:
        items, corrupt, size = 0, [], 0
        checked = []
        dtype = e.fingerprint.get(DTYPE_KEY, "float32")
        for f in sorted(e.path.iterdir()):
            size += f.lstat().st_size
            if SHARD_RE.match(f.name):
                why, shape, n = check_shard(f, dtype, verify)
                if why or shape is None:
                    corrupt.append(f"{f}: {why}")
                else:
                    checked.append((f, shape, n))
        expected = majority_shape(recorded_shape(e.fingerprint), [(s, n) for _, s, n in checked])
        for f, shape, n in checked:
            wrong = shape_mismatch(shape, expected)
            if wrong:
                corrupt.append(f"{f}: {wrong}")
            else:
                items += n
        out.append({"dir": str(e.path), "model": e.model, "fingerprint": e.fingerprint,
                    "shape": dict(zip(SHAPE_PARTS, expected, strict=True)),
                    "store_dtype": dtype, "items": items, "bytes": size,
                    "corrupt": corrupt})
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
        root: the cache root (see :func:`ncprobe._io.cache_root`).
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
