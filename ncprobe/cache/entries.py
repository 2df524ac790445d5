"""What a cache root holds, by name: store entries, their marker and fingerprint, shards
and ncprobe's temporary files.

A store *entry* is ``<root>/<name>-<16 hex digits>/``: the digits are
:func:`fingerprint_id` of the fingerprint that ``fingerprint.json`` holds. It holds
:data:`~ncprobe.owned.CACHEDIR_TAG` (in the format of the Cache Directory Tagging
Specification, so backup tools skip it), ``fingerprint.json``, shards ``shard-*.npz`` and,
while one is written, ncprobe's temporary files (:func:`ncprobe.owned.temp_re`). The root
also holds its own marker and the weight-hash cache (:func:`ncprobe._io.hash_cache`), which
are no entries. The marker, the temporary names and the removal of what interrupted writes
left are :mod:`ncprobe.owned`'s, as for every directory ncprobe owns.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from .._io import HASH_CACHE_NAME, json_sha256
from ..owned import CACHEDIR_TAG, temp_re
from .shapes import SHAPE_KEY

#: The version of the store's layout, hashed into every entry's name.
STORE_FORMAT = 1
#: the file of an entry that holds its fingerprint (and the vector shape it records)
FINGERPRINT = "fingerprint.json"
#: an entry's name; group 1 is its fingerprint id
ENTRY_RE = re.compile(r"^[A-Za-z0-9._-]{0,60}-([0-9a-f]{16})$")
_SHARD = r"shard-[A-Za-z0-9_-]+\.npz"
SHARD_RE = re.compile(rf"^{_SHARD}$")
#: the temporary files of a shard being written (the only files written in an entry under its
#: lock alone: the marker and the fingerprint are also written before it is taken)
SHARD_TEMP_RE = temp_re(pattern=_SHARD)
_ENTRY_TEMP_RE = temp_re([FINGERPRINT, CACHEDIR_TAG], pattern=_SHARD)
_ROOT_TEMP_RE = temp_re([CACHEDIR_TAG, HASH_CACHE_NAME])


def is_entry_file(name: str) -> bool:
    """Whether ``name`` is a file ncprobe writes in a store entry: the marker, the
    fingerprint, a shard, or a temporary file of one of them."""
    return name in (FINGERPRINT, CACHEDIR_TAG) or bool(SHARD_RE.match(name)
                                                        or _ENTRY_TEMP_RE.match(name))


def is_root_file(name: str) -> bool:
    """Whether ``name`` is a file ncprobe writes in the cache root and no store entry: the
    root's marker, the weight-hash cache, or a temporary file of one of them."""
    return name in (CACHEDIR_TAG, HASH_CACHE_NAME) or bool(_ROOT_TEMP_RE.match(name))


def fingerprint_id(fingerprint: dict) -> str:
    """The 16 hex digits that name a fingerprint's store entry (with the store format).

    The recorded vector shape (:data:`~ncprobe.cache.shapes.SHAPE_KEY`) is left out: it
    follows from the fingerprint, it does not define it.
    """
    fp = {k: v for k, v in fingerprint.items() if k != SHAPE_KEY}
    return json_sha256({**fp, "store": STORE_FORMAT}, default=list)[:16]


def root_problem(root: Path) -> str | None:
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
