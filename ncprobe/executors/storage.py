"""What the results directory and the embedding cache need when tasks run on other machines.

Every task of a cluster reproduction writes its own results directory and reads and writes
the embedding cache, on whichever node it lands; the submitting machine then reads the
results back. So both must be on storage that every node mounts, and ncprobe's locks must
hold there. Those locks (:func:`ncprobe._io.dir_lock`) are ``flock(2)`` on a directory: the
cache entry's, while a run looks up, encodes and stores its vectors, and a results
directory's parent, while a new results directory is swapped in.

- A node-local filesystem (ext4, xfs, btrfs, tmpfs, overlay ...) locks fine but is not
  shared: with more than one node, tasks write where this machine cannot read.
- NFS (every version) and SMB/CIFS: the Linux client implements ``flock`` for files only;
  on a directory the lock is taken in the node's own kernel and never reaches the server,
  so two nodes do not see each other's locks. Then two tasks that share a cache entry (one
  model in two languages) may both encode the same items (time lost; the shards are written
  whole, under unique names, so nothing is corrupted), and two ncprobe commands writing one
  results directory from two nodes at once are not kept apart.
- Lustre locks across nodes when mounted with ``-o flock``; ``-o localflock`` makes the locks
  node-local, ``-o noflock`` makes them fail. GPFS (Spectrum Scale) and CephFS lock across
  nodes.

:func:`check_storage` applies this: it refuses (:class:`~ncprobe.errors.OutputError`) a
directory where taking the lock fails, and returns a warning for one whose locks stay on the
node, or one on a node's own disk when the cluster has several nodes.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import OutputError

#: filesystems on which a directory's flock stays on the node (see the module docstring)
NODE_LOCAL_LOCKS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "fuse.sshfs", "9p"})
#: filesystems of one machine's own disks or memory
NOT_SHARED = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "f2fs",
                        "zfs", "vfat", "exfat", "ramfs"})


@dataclass(frozen=True)
class Mount:
    """One line of ``/proc/mounts``: where a filesystem is mounted, its type and options."""

    point: str
    fstype: str
    options: tuple[str, ...]


def _unescape(field: str) -> str:
    """``/proc/mounts`` writes a space as ``\\040``, a tab ``\\011``, a newline ``\\012``,
    a backslash ``\\134``."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit() and len(field[i + 1:i + 4]) == 3:
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mounts(text: str) -> list[Mount]:
    """The mounts of a ``/proc/mounts`` text (lines that do not parse are left out)."""
    mounts = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4:
            mounts.append(Mount(_unescape(parts[1]), parts[2], tuple(parts[3].split(","))))
    return mounts


def mount_of(path: str | os.PathLike, mounts: list[Mount]) -> Mount | None:
    """The mount that holds ``path`` (absolute, resolved): the longest mount point that is
    ``path`` or one of its parents; the last such line wins, as the kernel stacks them."""
    target = Path(path)
    best: Mount | None = None
    for m in mounts:
        point = Path(m.point)
        if (target == point or point in target.parents) and \
                (best is None or len(point.parts) >= len(Path(best.point).parts)):
            best = m
    return best


def existing_ancestor(path: str | os.PathLike) -> Path:
    """``path`` resolved, or its nearest parent that exists (a directory not made yet)."""
    where = Path(path).expanduser().resolve()
    while not where.exists() and where != where.parent:
        where = where.parent
    return where


def lock_failure(directory: str | os.PathLike) -> str | None:
    """Whether a directory's lock can be taken in ``directory``: None, or the error.

    A fresh directory is made there, locked as :func:`ncprobe._io.dir_lock` locks
    (``flock``, exclusive, without waiting), released and removed. A directory that cannot be
    written is not this check's business (None): the writers' own checks name it.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: dir_lock itself locks nothing there
        return None
    try:
        probe = tempfile.mkdtemp(dir=directory, prefix=".ncprobe-lock-", suffix=".probe")
    except OSError:
        return None
    try:
        fd = os.open(probe, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    except OSError as e:
        return e.strerror or str(e)
    finally:
        try:
            os.rmdir(probe)
        except OSError:
            pass
    return None


def storage_warning(what: str, path: str | os.PathLike, mount: Mount | None,
                    nodes: int | None) -> str | None:
    """The warning for ``what`` (``results directory``, ``embedding cache``) at ``path`` on
    ``mount``, in a cluster of ``nodes`` nodes (None: unknown), else None."""
    if mount is None:
        return None
    fs = mount.fstype
    if fs in NODE_LOCAL_LOCKS or (fs == "lustre" and "localflock" in mount.options):
        how = "mounted with localflock" if fs == "lustre" else "its client locks files only"
        return (f"the {what} {path} is on {fs} ({how}): ncprobe's directory locks stay on "
                "each node there, so tasks on different nodes do not see each other's. The "
                "runs of one reproduction write different results directories; two that "
                "share a cache entry (one model in two languages) may both encode the same "
                "items (time lost, nothing corrupted). Do not run two ncprobe commands on "
                "one results directory from two nodes at once; for locks that hold, use "
                "storage whose flock spans nodes (GPFS, CephFS, Lustre mounted with -o "
                "flock), or give each node its own --cache-dir")
    if fs in NOT_SHARED and nodes is not None and nodes > 1:
        return (f"the {what} {path} is on {fs}, a filesystem of this machine's own, and the "
                f"cluster has {nodes} nodes: a task on another node writes where this "
                "machine cannot read it. Put --results-dir and the cache (--cache-dir) on "
                "storage every node mounts")
    return None


def check_storage(what: str, path: str | os.PathLike, *, nodes: int | None = None,
                  mounts_text: str | None = None) -> str | None:
    """Refuse ``path`` when a directory lock cannot be taken there; else its warning or None.

    Args:
        what: how messages name it (``results directory``, ``embedding cache``).
        path: the directory (it need not exist yet: its nearest existing parent is checked).
        nodes: how many nodes the tasks may land on (None: unknown).
        mounts_text: ``/proc/mounts`` as read (default: read it; where there is none, the
            filesystem is not classified).

    Raises:
        OutputError: locking fails there (naming the filesystem, the error and what to do).
    """
    where = existing_ancestor(path)
    if mounts_text is None:
        try:
            mounts_text = Path("/proc/mounts").read_text(encoding="utf-8", errors="replace")
        except OSError:
            mounts_text = ""
    mount = mount_of(where, parse_mounts(mounts_text))
    failed = lock_failure(where) if where.is_dir() else None
    if failed:
        fs = f" ({mount.fstype})" if mount else ""
        raise OutputError(f"cannot lock a directory in the {what}{fs}: {failed}. ncprobe's "
                          "cache and results need flock(2) on directories; choose a "
                          "directory on a filesystem that supports it (Lustre: mount with "
                          "-o flock)", path=str(path))
    return storage_warning(what, path, mount, nodes)
