"""The byte layout of a shard: an uncompressed ``.npz`` whose vectors are stored views first.

A shard holds item keys (``keys``, ``(items, 20)`` uint8: SHA-1 of the sentence's words and
the span), sentence and span vectors (``sent`` and ``span``, ``(views, items, dim)`` in the
storage dtype's disk form, :data:`~ncprobe.cache.dtypes.DISK_DTYPE`), the missing-word
counts (``missing``, ``missing_span``), an array ``layout`` that names the order and the
storage dtype, and, in a half-precision entry, ``loss``: per item, how far storing moved its
vectors (:func:`~ncprobe.cache.dtypes.storage_loss`). One layer view of some items is
then a few contiguous byte ranges of the file: :func:`open_shard` reads the keys and the
array headers, never the vectors, and :func:`read_at` reads the byte ranges asked for.

Shards are written by :func:`write_npz` (what ``np.savez`` writes, the vectors streamed view
by view from the batches: :class:`ViewsFirst`) and read with ``allow_pickle=False``. The
vectors of a shard are verified against the CRC-32 of their zip entries
(:func:`vectors_damage`), in steps of a few MB, once per file and process while the file is
unchanged (:data:`VERIFIED`).

A shard without a ``layout`` array (vectors ``(items, views, dim)``), or a half-precision one
without ``loss``, was written by a development version of ncprobe: it is refused like a
damaged one (:func:`shard_problem`), and its items are encoded again.
"""

from __future__ import annotations

import io
import os
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Sequence

import numpy as np

from ..errors import NcprobeError
from .dtypes import DISK_DTYPE, STORE_DTYPES, encode_measured

#: the arrays every shard holds
ARRAYS = ("keys", "sent", "span", "missing", "missing_span")
#: the array of a shard that names its layout and storage dtype
LAYOUT = "layout"
VIEWS_FIRST = "views-first"
#: the array of a half-precision shard that says, per item, how far storing moved its
#: vectors (a bound on the largest angle, in radians, between a vector and its float32
#: original: :func:`~ncprobe.cache.dtypes.storage_loss`); absent in float32 shards (exact)
LOSS = "loss"
#: what a shard of a layout that ncprobe no longer reads is said to be
DEV_VERSION = "written by a development version of ncprobe"
# a zip local file header: signature ... file name length, extra field length (APPNOTE 4.3.7)
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"
#: specs of arrays: name -> (shape, dtype)
Specs = dict[str, tuple[tuple[int, ...], np.dtype]]


def structure(specs: Specs, dtype: str | None = None
              ) -> tuple[str | None, tuple[int, int, int] | None, int]:
    """``(why not usable, (views, sent dim, span dim), items)`` of a shard's arrays, given
    as name -> (shape, dtype): read from the file's headers or from arrays to be stored.

    ``dtype`` is the storage dtype a shard's ``layout`` array names (vectors
    ``(views, items, dim)`` in its disk form); ``None`` for an encoder's vectors before they
    are stored (``(items, views, dim)``, any floating dtype).
    """
    missing = [k for k in ARRAYS if k not in specs]
    if missing:
        return f"arrays {', '.join(missing)} are missing", None, 0
    (kshape, kdt), (sshape, sdt), (pshape, pdt) = specs["keys"], specs["sent"], specs["span"]
    if kdt != np.uint8 or len(kshape) != 2 or kshape[1] != 20:
        return f"keys have shape {kshape} and dtype {kdt}, not (n, 20) uint8", None, 0
    n = kshape[0]
    if dtype is not None and len(sshape) == 3 and len(pshape) == 3:
        # views first: checked as (items, views, dim) below
        sshape, pshape = (sshape[1], sshape[0], sshape[2]), (pshape[1], pshape[0], pshape[2])
    # sentence and span vectors may differ in size (a sentence-transformers Dense layer
    # maps the sentence embedding to another dimension), never in items or views
    if len(sshape) != 3 or len(pshape) != 3 or sshape[:2] != pshape[:2] or sshape[0] != n:
        return f"sent {sshape} and span {pshape} do not match {n} keys", None, n
    if dtype is not None:
        want = DISK_DTYPE[dtype]
        if sdt != want or pdt != want:
            return (f"vectors are {sdt}/{pdt}, not {want} as its layout ({dtype}) "
                    "says"), None, n
    elif not (np.issubdtype(sdt, np.floating) and np.issubdtype(pdt, np.floating)):
        return f"vectors are {sdt}/{pdt}, not floating point", None, n
    for k in ("missing", "missing_span"):
        shape, dt = specs[k]
        if shape != (n,) or not np.issubdtype(dt, np.integer):
            return f"{k} has shape {shape} ({dt}), not ({n},) integers", None, n
    return None, (int(sshape[1]), int(sshape[2]), int(pshape[2])), n


def layout_of(value: np.ndarray) -> tuple[str, str]:
    """``(order, storage dtype)`` from a shard's ``layout`` array.

    Raises:
        ValueError: not a layout ncprobe writes.
    """
    items = value.tolist() if value.dtype.kind == "U" and value.shape == (2,) else None
    if items is None or items[0] != VIEWS_FIRST or items[1] not in STORE_DTYPES:
        raise ValueError(f"its layout array {value!r} is not one ncprobe writes (a newer "
                         "ncprobe's?)")
    return items[0], items[1]


class ViewsFirst:
    """The ``(views, items, dim)`` array of a shard, in the storage dtype, from batches of
    ``(items, views, dim)``: written view by view, batch by batch, never gathered whole (a
    shard's vectors are not copied into one more array of their size before the write)."""

    def __init__(self, batches: Sequence, dtype: str, what: str = "the vectors") -> None:
        # converted now (float32 on a little-endian machine: no copy), so that vectors that
        # the dtype cannot hold are refused before anything is written
        self.dtype = DISK_DTYPE[dtype]
        self.batches, losses = [], []
        for b in batches:
            stored, loss = encode_measured(b, dtype, what)
            self.batches.append(np.asarray(stored, dtype=self.dtype))
            losses.append(loss)
        #: per item, the largest angle storing moved one of its vectors (storage_loss)
        self.loss = np.concatenate(losses)
        first = np.shape(self.batches[0])
        self.shape = (first[1], sum(len(b) for b in self.batches), first[2])

    def write(self, fh: IO[bytes]) -> None:
        """The array's bytes (C order), after its ``.npy`` header."""
        scratch = None  # one view of the largest batch, for views that are not contiguous
        for v in range(self.shape[0]):
            for b in self.batches:
                rows = b[:, v, :]
                if not rows.flags.c_contiguous:
                    if scratch is None:
                        scratch = np.empty((max(map(len, self.batches)), self.shape[2]),
                                           dtype=self.dtype)
                    np.copyto(scratch[:len(rows)], rows)
                    rows = scratch[:len(rows)]
                if rows.size:
                    fh.write(rows.data.cast("B"))


def write_npz(fh: IO[bytes], arrays: dict) -> None:
    """What ``np.savez(fh, **arrays)`` writes (uncompressed ``.npy`` members, numbers only:
    shards are read back with ``allow_pickle=False``), with :class:`ViewsFirst` values
    streamed into their member instead of built first."""
    with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, value in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                if isinstance(value, ViewsFirst):
                    np.lib.format.write_array_header_1_0(member, {
                        "descr": np.lib.format.dtype_to_descr(value.dtype),
                        "fortran_order": False, "shape": value.shape})
                    value.write(member)
                else:
                    np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)


@dataclass
class Member:
    """One array of a shard file: shape, dtype and where its data starts in the file; and,
    to verify it, its zip entry's name, CRC-32, and where its stored bytes start in the file
    and how many there are."""

    shape: tuple[int, ...]
    dtype: np.dtype
    offset: int
    name: str
    crc: int
    start: int
    stored: int


def _member(fh: IO[bytes], info: zipfile.ZipInfo, size: int) -> Member:
    """An array's header and the file offset of its data.

    Raises:
        ValueError: the array is compressed or in Fortran order (ncprobe writes neither), of
            a ``.npy`` format numpy does not know, or ends before its data.
    """
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"array {info.filename!r} is compressed, which ncprobe never writes")
    fh.seek(info.header_offset)
    local = fh.read(_LOCAL_HEADER.size)
    if len(local) != _LOCAL_HEADER.size or local[:4] != _LOCAL_SIGNATURE:
        raise ValueError(f"the zip entry of {info.filename!r} has no local header")
    fields_ = _LOCAL_HEADER.unpack(local)
    start = info.header_offset + _LOCAL_HEADER.size + fields_[10] + fields_[11]
    fh.seek(start)
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    else:
        raise ValueError(f"array {info.filename!r} has .npy format {version}")
    if fortran:
        raise ValueError(f"array {info.filename!r} is in Fortran order, which ncprobe never "
                         "writes")
    dtype = np.dtype(dtype)
    data = fh.tell()
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if data - start + nbytes > info.file_size or data + nbytes > size:
        raise ValueError(f"array {info.filename!r} ends before its {nbytes} bytes of data")
    return Member(tuple(shape), dtype, data, info.filename, info.CRC, start, info.compress_size)


@dataclass
class ShardFile:
    """What opening a shard file tells: its arrays' headers, layout and small arrays."""

    members: dict[str, Member]
    layout: tuple[str, str] | None
    small: dict[str, np.ndarray]

    @property
    def specs(self) -> Specs:
        return {k: (m.shape, m.dtype) for k, m in self.members.items()}


def open_shard(path: Path, *, small: bool) -> ShardFile:
    """Read a shard's directory, array headers and layout; with ``small``, also its keys,
    missing-word counts and storage loss (whole, CRC checked). No vector is read.

    Raises:
        Exception: of many types (zipfile, numpy, OSError) on a damaged file.
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        with zipfile.ZipFile(fh) as zf:
            infos = {i.filename.removesuffix(".npy"): i for i in zf.infolist()}
            layout = None
            if LAYOUT in infos:
                with zf.open(infos[LAYOUT]) as m:
                    layout = layout_of(np.lib.format.read_array(m, allow_pickle=False))
            members = {k: _member(fh, infos[k], size) for k in (*ARRAYS, LOSS) if k in infos}
            arrays: dict[str, np.ndarray] = {}
            if small:
                for k in ("keys", "missing", "missing_span", LOSS):
                    if k in infos:
                        with zf.open(infos[k]) as m:
                            arrays[k] = np.lib.format.read_array(m, allow_pickle=False)
    return ShardFile(members, layout, arrays)


def shard_problem(got: ShardFile, entry_dtype: str
                  ) -> tuple[str | None, tuple[int, int, int] | None, int]:
    """:func:`structure` of an opened shard, and why it does not belong in an entry that
    stores ``entry_dtype``: written by a development version of ncprobe (no ``layout``, or
    half precision without ``loss``), or stored in another dtype."""
    if got.layout is None:
        return f"{DEV_VERSION}, without a {LAYOUT} array", None, 0
    why, shape, n = structure(got.specs, got.layout[1])
    if why:
        return why, shape, n
    if got.layout[1] != entry_dtype:
        return (f"vectors stored as {got.layout[1]}, while the entry stores {entry_dtype}",
                None, n)
    loss = got.specs.get(LOSS)
    if loss is None and entry_dtype != "float32":
        return f"{DEV_VERSION}, without a {LOSS} array", None, n
    if loss is not None and (loss[0] != (n,) or loss[1] != np.float32):
        return f"its {LOSS} array has shape {loss[0]} ({loss[1]}), not ({n},) float32", None, n
    return None, shape, n


#: Files whose vectors were verified in this process, by identity (device, inode, size,
#: mtime, ctime: a file written again, or another file renamed into its place, differs).
VERIFIED: set[tuple[int, ...]] = set()
#: bytes read per step when verifying vectors (the memory it takes, whatever the shard's size)
_VERIFY_CHUNK = 1 << 22


def identity(st: os.stat_result) -> tuple[int, ...]:
    """What tells a file apart in :data:`VERIFIED`."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def vectors_damage(path: Path, members: dict[str, Member]) -> str | None:
    """Why the vectors of a shard are not the bytes that were written (the CRC-32 of a
    vector array differs from the one its zip entry records), or None.

    Each vector array (``sent``, ``span``) is read once, in steps of a few MB (never whole
    in memory); a file verified in this process is not read again while it is unchanged
    (:data:`VERIFIED`). Keys and missing-word counts are checked when the shard is opened.

    Raises:
        OSError, zipfile.BadZipFile, ValueError: the file cannot be read.
    """
    with open(path, "rb", buffering=0) as fh:
        ident = identity(os.fstat(fh.fileno()))
        if ident in VERIFIED:
            return None
        why = _crc_mismatch(fh, members)
    if why is None:
        VERIFIED.add(ident)
    return why


def _crc_mismatch(fh: io.FileIO, members: dict[str, Member]) -> str | None:
    """Read the vector arrays of an open shard and compare their CRC-32 with the zip's."""
    buf = bytearray(_VERIFY_CHUNK)
    view = memoryview(buf)
    for part in ("sent", "span"):
        m = members[part]
        crc, pos, left = 0, m.start, m.stored
        while left:
            step = view[:min(left, _VERIFY_CHUNK)]
            got = _pread(fh, step, pos)
            if not got:
                return f"its {part} vectors end {left} bytes early"
            crc = zlib.crc32(step[:got], crc)
            pos, left = pos + got, left - got
        if crc != m.crc:
            return (f"its {part} vectors are not the bytes written (CRC-32 {crc:08x}, "
                    f"recorded {m.crc:08x}): the file was changed or damaged on disk")
    return None


def _pread(fh: io.FileIO, buf: memoryview, pos: int) -> int:
    """Read into ``buf`` from ``pos`` of the file, without moving its position where the
    platform allows; the number of bytes read (0 at the end of the file)."""
    if hasattr(os, "preadv"):
        return os.preadv(fh.fileno(), [buf], pos)
    fh.seek(pos)  # pragma: no cover - platforms without preadv
    return fh.readinto(buf) or 0  # pragma: no cover


def read_at(fh: io.FileIO, buf: memoryview, pos: int, path: Path) -> None:
    """Fill ``buf`` from ``pos`` of the file.

    Raises:
        NcprobeError: the file ends first (damaged after the run opened it).
    """
    done = 0
    while done < len(buf):
        got = _pread(fh, buf[done:], pos + done)
        if not got:
            raise NcprobeError(f"cache shard {path} ends before its vectors (damaged after "
                               "this run opened it); delete it (or run `ncprobe cache clear "
                               "--model ...`) and run the command again")
        done += got


def check_shard(path: Path, entry_dtype: str = "float32", verify: bool = False
                ) -> tuple[str | None, tuple[int, int, int] | None, int]:
    """:func:`shard_problem` of a shard file, from its array headers; with ``verify``, also
    whether every array is the bytes written (their CRC-32: the vectors are read), else no
    vector is read."""
    try:
        got = open_shard(path, small=verify)
        why, shape, n = shard_problem(got, entry_dtype)
        if verify and not why:
            why = vectors_damage(path, got.members)
        return why, shape, n
    except Exception as e:  # noqa: BLE001 - numpy/zipfile raise many types on corrupt files
        return (f"{type(e).__name__}: {e}" if str(e) else type(e).__name__), None, 0
