"""EmbeddingStore: pooled vectors on disk, per model fingerprint, never computed twice.

Layout: ``<root>/<name>-<hash of fingerprint>/`` (a store *entry*) holds
``CACHEDIR.TAG`` (the ncprobe marker, in the format of the Cache Directory
Tagging Specification, so backup tools skip it), ``fingerprint.json`` and shards
``shard-*.npz``. Each shard holds item keys (SHA-1 of the sentence's words and
the span), sentence and span vectors and the missing-word counts. A shard is
written to a unique temporary file and renamed into place, so an interrupted
run keeps every shard it finished and the rerun encodes only what is missing.

A run reads only what it needs. Shards are uncompressed ``.npz`` files whose vectors
are stored *views first* (``sent`` and ``span`` of shape ``(views, items, dim)``, and
an array ``layout`` that says so and names the storage dtype), so one layer view of
some items is a few contiguous byte ranges of the file: opening an entry reads the
item keys and the array headers of its shards, never their vectors, and
:meth:`EmbeddingStore.vectors` reads the rows of the keys asked for, one view at a
time (:class:`StoredVectors`). Other items of the entry (another language's, another
run's) are never read. Shards written by earlier versions (``(items, views, dim)``,
no ``layout``) are read in place, row by row, with the same guarantees; new shards in
the same entry get the new layout.

Vectors are stored as float32 (exact), or, with ``dtype="float16"`` / ``"bfloat16"``
(``--store-dtype``), in half precision: half the disk and the reading. The storage
dtype is part of the entry's fingerprint (key ``store_dtype``, present only when it is
not float32, so float32 entries keep their names), so entries of different dtypes
never mix; vectors come back as float32 either way. float16 keeps 11 significant
bits within +-65504 (a vector beyond that is refused, naming bfloat16); bfloat16 keeps
8 bits over float32's range (rounded to nearest even). Rounding to nearest moves a
vector by an angle of at most ``asin(u)`` (:data:`UNIT_ROUNDOFF`), so a cosine between two
stored vectors by at most :data:`COSINE_BOUND`; vectors that storing would move further
(values below float16's normal range) are refused (:func:`encode_measured`). Each shard
of a half-precision entry records, per item, how far storing moved its vectors (array
``loss``), from which a run states the bound its own vectors met (:func:`store_loss_record`).

Shards are read with ``allow_pickle=False``; a shard that cannot be read, or whose
arrays are missing, of inconsistent shapes, or that end before their headers say, is
logged by path, deleted and its items encoded again. The keys and missing-word counts
are read whole (their zip CRC is checked). The vectors of a shard are verified when a
run first looks up one of its items (``key in store``): each vector array is read in
steps of a few MB and its CRC-32 compared with the zip's (:func:`_vectors_damage`), once
per shard and run, and not again in the same process while the file is unchanged; a
shard whose bytes changed is discarded like an unreadable one (its items are encoded
again). Shards holding none of a run's items are not read.

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
runs sharing a cache encode and store every item once. Before the lock is released,
the shards a run will read are opened (:meth:`EmbeddingStore.vectors`): a ``cache
clear`` while the run analyses its vectors removes the files, and the run still
reads them through its open handles.

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
import io
import json
import logging
import math
import os
import re
import stat
import struct
import time
import uuid
import weakref
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator, Sequence

import numpy as np

from ._io import (
    HASH_CACHE_NAME,
    FileHashCache,
    LockBusy,
    atomic_open,
    atomic_write_text,
    check_can_write,
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
#: the array of a shard that names its layout and storage dtype (absent: the layout of
#: ncprobe <= 0.1, ``(items, views, dim)`` in the encoder's dtype)
_LAYOUT = "layout"
_VIEWS_FIRST = "views-first"
#: the array of a half-precision shard that says, per item, how far storing moved its
#: vectors (a bound on the largest angle, in radians, between a vector and its float32
#: original: :func:`storage_loss`); absent in float32 shards (exact) and in shards of
#: ncprobe <= 0.2
_LOSS = "loss"
#: the key of ``fingerprint.json`` that records the entry's vector shape (not hashed)
SHAPE_KEY = "vector_shape"
#: the fingerprint key of an entry's storage dtype (present when it is not float32)
DTYPE_KEY = "store_dtype"
#: How vectors can be stored (``--store-dtype``); float32 is exact, the default.
STORE_DTYPES = ("float32", "float16", "bfloat16")
# what each storage dtype is on disk (bfloat16: the upper 16 bits of the float32)
_DISK_DTYPE: dict[str, np.dtype] = {"float32": np.dtype("<f4"), "float16": np.dtype("<f2"),
               "bfloat16": np.dtype("<u2")}
_SHAPE_PARTS = ("views", "sent_dim", "span_dim")
#: ``(views, sentence dimension, span dimension)``; ``None`` where not known
Shape = tuple[int | None, int | None, int | None]
#: how errors name the cache, and what they tell to do
_CACHE_WHAT = "embedding cache"
_CACHE_TODO = ("choose a writable cache with --cache-dir DIR (or $NCPROBE_CACHE), free space, or "
               "run with --no-cache (nothing is stored), and run the command again")
# a zip local file header: signature ... file name length, extra field length (APPNOTE 4.3.7)
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"

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


_json_string = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) uses


def item_key(tokens: Sequence[str], span: tuple[int, int]) -> bytes:
    """The store key of one (sentence, span) item: 20 bytes of SHA-1 of
    ``json.dumps([tokens, span], ensure_ascii=False, separators=(",", ":"))``, built here
    from json's own string encoder without the general encoder's per-call set-up (the
    same bytes, tested; twice as fast, and every run keys every stimulus)."""
    start, end = span
    if type(start) is not int or type(end) is not int or not all(type(t) is str for t in tokens):
        payload = json.dumps([list(tokens), list(span)], ensure_ascii=False,
                             separators=(",", ":"))
    else:
        payload = f"[[{','.join(map(_json_string, tokens))}],[{start},{end}]]"
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


def check_store_dtype(dtype: str) -> str:
    """``dtype`` when it is a storage dtype (:data:`STORE_DTYPES`).

    Raises:
        UsageError: another value, naming the choices.
    """
    if dtype not in STORE_DTYPES:
        raise UsageError(f"store dtype {dtype!r} is not one of {', '.join(STORE_DTYPES)}")
    return dtype


#: The unit roundoff of each half-precision storage dtype: rounding to nearest moves a
#: value within the dtype's normal range by at most this fraction of itself.
UNIT_ROUNDOFF = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
#: The most that storing in a dtype may move a cosine between two stored vectors: twice
#: the largest angle that rounding to nearest gives a vector, ``2 asin(u)`` (float16
#: 9.8e-4, bfloat16 7.8e-3; float32: exact). A store whose vectors would move more (values
#: too small for float16, stored as subnormals or zero) is refused (:func:`encode_measured`).
COSINE_BOUND = {"float32": 0.0,
                **{d: 2.0 * math.asin(u) for d, u in UNIT_ROUNDOFF.items()}}
# the angles are computed in float64 from float32 values: a vector rounded exactly at the
# bound must not be refused for the last bits of that arithmetic
_BOUND_SLACK = 1.0 + 1e-9


def storage_loss(x: np.ndarray, stored: np.ndarray, dtype: str) -> np.ndarray:
    """Per item (axis 0), a bound on the largest angle in radians between one of its
    vectors (along the last axis, over every view) and that vector as stored in ``dtype``.

    Computed as ``asin(|stored - x| / |x|)``, a bound on the angle that holds whatever the
    direction of the error (``pi`` when the error is as long as the vector: a vector
    flushed to zero). Any cosine between two stored vectors then differs from the cosine of
    their float32 originals by at most the sum of their two angles (the triangle inequality
    of angles, and cosine is 1-Lipschitz). A vector that is all NaN (no known word) or not
    finite has no direction to lose: 0, as for a zero vector stored as zero.

    Returns:
        ``(items,)`` float32 (zeros for float32, which is exact).
    """
    x32 = np.asarray(x, dtype=np.float32)
    items = x32.shape[0] if x32.ndim else 1
    if dtype == "float32" or not x32.size:
        return np.zeros(items, dtype=np.float32)
    orig = x32.astype(np.float64).reshape(items, -1, x32.shape[-1])
    back = decode_vectors(stored, dtype).astype(np.float64).reshape(orig.shape)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        err = np.sqrt(np.sum(np.square(back - orig), axis=-1))
        norm = np.sqrt(np.sum(np.square(orig), axis=-1))
        ratio = np.where(err == 0, 0.0, err / norm)
    ratio = np.where(np.isfinite(ratio), ratio, np.where(np.isnan(ratio), 0.0, np.inf))
    angle = np.where(ratio < 1.0, np.arcsin(np.minimum(ratio, 1.0)), np.pi)
    return angle.max(axis=1, initial=0.0).astype(np.float32)


def encode_measured(x: np.ndarray, dtype: str, what: str = "the vectors"
                    ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`encode_vectors`, and per item (axis 0) how far that moved its vectors
    (:func:`storage_loss`).

    Raises:
        UsageError: what :func:`encode_vectors` refuses, or vectors that storing in
            ``dtype`` moves by more than rounding to nearest can (values below float16's
            smallest normal number, 6.1e-5, kept as subnormals or flushed to zero): a cosine
            between them could move by more than :data:`COSINE_BOUND`. The message names
            the worst vector's angle and the dtypes that keep them (bfloat16, float32).
    """
    stored = encode_vectors(x, dtype)
    loss = storage_loss(x, stored, dtype)
    if dtype != "float32" and loss.size:
        worst = float(loss.max())
        if 2.0 * worst > COSINE_BOUND[dtype] * _BOUND_SLACK:
            x32 = np.abs(np.asarray(x, dtype=np.float32))
            small = float(np.mean((x32 > 0) & (x32 < _SMALLEST_NORMAL[dtype])))
            other = "bfloat16 (float32's range) or float32" if dtype == "float16" else \
                "float32"
            raise UsageError(
                f"{what} are too small to be stored as {dtype}: {100 * small:.3g}% of their "
                f"values are below its smallest normal number ({_SMALLEST_NORMAL[dtype]:.3g}) "
                f"and keep fewer bits or become 0, so a vector moves by up to {worst:.3g} rad "
                f"and a cosine between two by up to {2 * worst:.3g}, more than {dtype}'s "
                f"bound of {COSINE_BOUND[dtype]:.2g}; store them with --store-dtype {other}")
    return stored, loss


#: The key of a run's metadata (``run.json``) that says how far storing its vectors in half
#: precision moved its cosines (present only when the storage dtype is not float32).
LOSS_KEY = "store_dtype_loss"


def store_loss_record(dtype: str, angle: float | None) -> tuple[dict, list[str]]:
    """What a run records of its storage dtype's effect: ``({LOSS_KEY: bound}, [note])``,
    or ``({}, [])`` for float32 (exact: a float32 run's ``run.json`` is what it always was).

    ``bound`` is ``2 * angle`` (:func:`storage_loss`, the worst over the run's vectors): no
    cosine between two of its stored vectors differs from their float32 cosine by more;
    ``None`` where the store does not say (vectors stored by ncprobe <= 0.2). The note
    says it in words, with the dtype's own bound (:data:`COSINE_BOUND`).
    """
    if dtype == "float32":
        return {}, []
    if angle is None:
        return {LOSS_KEY: None}, [
            f"vectors stored as {dtype} by an earlier ncprobe, which did not record how far "
            "storing moved them; clear the cache entry (ncprobe cache clear --model ...) and "
            "run again to have it measured"]
    bound = 2.0 * angle
    return {LOSS_KEY: bound}, [
        f"vectors stored as {dtype}: no cosine between two stored vectors differs from its "
        f"float32 value by more than {bound:.2g} (measured on this run's vectors; {dtype} "
        f"guarantees {COSINE_BOUND[dtype]:.2g}). Measures of z-scored vectors "
        "(--standardise) and rho are not bounded by it"]


#: the smallest positive normal number of each half-precision dtype
_SMALLEST_NORMAL = {"float16": float(np.finfo(np.float16).tiny),
                    "bfloat16": float(np.finfo(np.float32).tiny)}


def encode_vectors(x: np.ndarray, dtype: str) -> np.ndarray:
    """Vectors as stored in ``dtype`` (:data:`STORE_DTYPES`): float32, float16, or the
    bfloat16 bit patterns as uint16 (rounded to nearest even; NaN stays NaN).

    Raises:
        UsageError: float16 and a finite value beyond its range (+-65504): nothing is
            rounded to infinity without saying so; the message names bfloat16 and float32.
    """
    x32 = np.asarray(x, dtype=np.float32)
    if dtype == "float32":
        return x32
    if dtype == "float16":
        with np.errstate(over="ignore"):  # said below, with what to do
            half = x32.astype(np.float16)
        over = np.isinf(half) & np.isfinite(x32)
        if over.any():
            raise UsageError(
                f"vectors hold values up to {float(np.max(np.abs(x32[over]))):.4g}, beyond "
                "float16's largest (65504); store them with --store-dtype bfloat16 (float32's "
                "range) or float32")
        return half
    bits = np.ascontiguousarray(x32).view(np.uint32)
    # round to nearest, ties to even: add 0x7FFF plus the lowest bit that is kept
    kept = ((bits + (np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))))
            >> np.uint32(16)).astype(np.uint16)
    kept[np.isnan(x32)] = 0x7FC0  # a quiet NaN (rounding could carry a NaN to infinity)
    return kept


def decode_vectors(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 vectors from what :func:`encode_vectors` stored in ``dtype``."""
    if dtype == "bfloat16":
        return (np.asarray(x, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(
            np.float32)
    return np.asarray(x, dtype=np.float32)


def _structure(specs: dict[str, tuple[tuple[int, ...], np.dtype]],
               layout: tuple[str, str] | None = None
               ) -> tuple[str | None, tuple[int, int, int] | None, int]:
    """``(why not usable, (views, sent dim, span dim), items)`` of a shard's arrays, given
    as name -> (shape, dtype): read from the file's headers or from loaded arrays.

    ``layout`` is ``(order, storage dtype)`` of a shard that has a ``layout`` array
    (vectors ``(views, items, dim)``), ``None`` for the layout of ncprobe <= 0.1
    (``(items, views, dim)``, any floating dtype).
    """
    missing = [k for k in _ARRAYS if k not in specs]
    if missing:
        return f"arrays {', '.join(missing)} are missing", None, 0
    (kshape, kdt), (sshape, sdt), (pshape, pdt) = specs["keys"], specs["sent"], specs["span"]
    if kdt != np.uint8 or len(kshape) != 2 or kshape[1] != 20:
        return f"keys have shape {kshape} and dtype {kdt}, not (n, 20) uint8", None, 0
    n = kshape[0]
    if layout is not None and len(sshape) == 3 and len(pshape) == 3:
        # views first: checked as (items, views, dim) below
        sshape, pshape = (sshape[1], sshape[0], sshape[2]), (pshape[1], pshape[0], pshape[2])
    # sentence and span vectors may differ in size (a sentence-transformers Dense layer
    # maps the sentence embedding to another dimension), never in items or views
    if len(sshape) != 3 or len(pshape) != 3 or sshape[:2] != pshape[:2] or sshape[0] != n:
        return f"sent {sshape} and span {pshape} do not match {n} keys", None, n
    if layout is not None:
        want = _DISK_DTYPE[layout[1]]
        if sdt != want or pdt != want:
            return (f"vectors are {sdt}/{pdt}, not {want} as its layout ({layout[1]}) "
                    "says"), None, n
    elif not (np.issubdtype(sdt, np.floating) and np.issubdtype(pdt, np.floating)):
        return f"vectors are {sdt}/{pdt}, not floating point", None, n
    for k in ("missing", "missing_span"):
        shape, dt = specs[k]
        if shape != (n,) or not np.issubdtype(dt, np.integer):
            return f"{k} has shape {shape} ({dt}), not ({n},) integers", None, n
    return None, (int(sshape[1]), int(sshape[2]), int(pshape[2])), n


def _layout_of(value: np.ndarray) -> tuple[str, str]:
    """``(order, storage dtype)`` from a shard's ``layout`` array.

    Raises:
        ValueError: not a layout ncprobe writes.
    """
    items = value.tolist() if value.dtype.kind == "U" and value.shape == (2,) else None
    if items is None or items[0] != _VIEWS_FIRST or items[1] not in STORE_DTYPES:
        raise ValueError(f"its layout array {value!r} is not one ncprobe writes (a newer "
                         "ncprobe's?)")
    return items[0], items[1]


class _ViewsFirst:
    """The ``(views, items, dim)`` array of a shard, in the storage dtype, from batches of
    ``(items, views, dim)``: written view by view, batch by batch, never gathered whole (a
    shard's vectors are not copied into one more array of their size before the write)."""

    def __init__(self, batches: Sequence, dtype: str, what: str = "the vectors") -> None:
        # converted now (float32 on a little-endian machine: no copy), so that vectors that
        # the dtype cannot hold are refused before anything is written
        self.dtype = _DISK_DTYPE[dtype]
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


def _write_npz(fh: IO[bytes], arrays: dict) -> None:
    """What ``np.savez(fh, **arrays)`` writes (uncompressed ``.npy`` members, numbers only:
    shards are read back with ``allow_pickle=False``), with :class:`_ViewsFirst` values
    streamed into their member instead of built first."""
    with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, value in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                if isinstance(value, _ViewsFirst):
                    np.lib.format.write_array_header_1_0(member, {
                        "descr": np.lib.format.dtype_to_descr(value.dtype),
                        "fortran_order": False, "shape": value.shape})
                    value.write(member)
                else:
                    np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)


@dataclass
class _Member:
    """One array of a shard file: shape, dtype and where its data starts in the file
    (``None``: compressed or Fortran-ordered, read whole with numpy); and, to verify it,
    its zip entry's name, CRC-32 and where its stored bytes start in the file and how many
    there are (``start`` ``None``: compressed, verified by inflating it)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    offset: int | None
    name: str = ""
    crc: int = 0
    start: int | None = None
    stored: int = 0


def _member(fh: IO[bytes], zf: zipfile.ZipFile, info: zipfile.ZipInfo, size: int) -> _Member:
    """An array's header, and the file offset of its data when it is stored uncompressed."""
    def header(f) -> tuple[tuple[int, ...], bool, np.dtype]:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(f)
        if version == (2, 0):
            return np.lib.format.read_array_header_2_0(f)
        raise ValueError(f"array {info.filename!r} has .npy format {version}")

    if info.compress_type != zipfile.ZIP_STORED:
        with zf.open(info) as m:
            shape, _, dtype = header(m)
        return _Member(tuple(shape), np.dtype(dtype), None, info.filename, info.CRC)
    fh.seek(info.header_offset)
    local = fh.read(_LOCAL_HEADER.size)
    if len(local) != _LOCAL_HEADER.size or local[:4] != _LOCAL_SIGNATURE:
        raise ValueError(f"the zip entry of {info.filename!r} has no local header")
    fields_ = _LOCAL_HEADER.unpack(local)
    start = info.header_offset + _LOCAL_HEADER.size + fields_[10] + fields_[11]
    fh.seek(start)
    shape, fortran, dtype = header(fh)
    dtype = np.dtype(dtype)
    data = fh.tell()
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if data - start + nbytes > info.file_size or data + nbytes > size:
        raise ValueError(f"array {info.filename!r} ends before its {nbytes} bytes of data")
    return _Member(tuple(shape), dtype, None if fortran or dtype.hasobject else data,
                   info.filename, info.CRC, start, info.compress_size)


@dataclass
class _ShardFile:
    """What opening a shard file tells: its arrays' headers, layout and small arrays."""

    members: dict[str, _Member]
    layout: tuple[str, str] | None
    small: dict[str, np.ndarray]

    @property
    def specs(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        return {k: (m.shape, m.dtype) for k, m in self.members.items()}


def _open_shard(path: Path, *, small: bool) -> _ShardFile:
    """Read a shard's directory, array headers and layout; with ``small``, also its keys
    and missing-word counts (whole, CRC checked). No vector is read.

    Raises:
        Exception: of many types (zipfile, numpy, OSError) on a damaged file.
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        with zipfile.ZipFile(fh) as zf:
            infos = {i.filename.removesuffix(".npy"): i for i in zf.infolist()}
            layout = None
            if _LAYOUT in infos:
                with zf.open(infos[_LAYOUT]) as m:
                    layout = _layout_of(np.lib.format.read_array(m, allow_pickle=False))
            members = {k: _member(fh, zf, infos[k], size) for k in _ARRAYS if k in infos}
            arrays: dict[str, np.ndarray] = {}
            if small:
                for k in ("keys", "missing", "missing_span", _LOSS):
                    if k in infos:
                        with zf.open(infos[k]) as m:
                            arrays[k] = np.lib.format.read_array(m, allow_pickle=False)
    return _ShardFile(members, layout, arrays)


def _npz_specs(path: Path) -> tuple[dict[str, tuple[tuple[int, ...], np.dtype]],
                                    tuple[str, str] | None]:
    """Shape and dtype of each array of a shard, and its layout, from the headers only."""
    got = _open_shard(path, small=False)
    return got.specs, got.layout


#: Files whose vectors were verified in this process, by identity (device, inode, size,
#: mtime, ctime: a file written again, or another file renamed into its place, differs).
_VERIFIED: set[tuple[int, ...]] = set()
#: bytes read per step when verifying vectors (the memory it takes, whatever the shard's size)
_VERIFY_CHUNK = 1 << 22


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _vectors_damage(path: Path, members: dict[str, _Member]) -> str | None:
    """Why the vectors of a shard are not the bytes that were written (the CRC-32 of a
    vector array differs from the one its zip entry records), or None.

    Each vector array (``sent``, ``span``) is read once, in steps of a few MB (never whole
    in memory); a file verified in this process is not read again while it is unchanged
    (:data:`_VERIFIED`). Keys and missing-word counts are checked when the shard is opened.

    Raises:
        OSError, zipfile.BadZipFile, ValueError: the file cannot be read.
    """
    with open(path, "rb", buffering=0) as fh:
        ident = _identity(os.fstat(fh.fileno()))
        if ident in _VERIFIED:
            return None
        why = _crc_mismatch(fh, members)
    if why is None:
        _VERIFIED.add(ident)
    return why


def _crc_mismatch(fh: io.FileIO, members: dict[str, _Member]) -> str | None:
    """Read the vector arrays of an open shard and compare their CRC-32 with the zip's."""
    buf = bytearray(_VERIFY_CHUNK)
    view = memoryview(buf)
    for part in ("sent", "span"):
        m = members[part]
        if m.start is None:  # compressed (not written by ncprobe): zipfile checks the CRC
            # as it inflates the last bytes (BadZipFile on a mismatch)
            fh.seek(0)
            with zipfile.ZipFile(fh) as zf, zf.open(m.name) as f:
                while f.read(_VERIFY_CHUNK):
                    pass
            continue
        crc, pos, left = 0, m.start, m.stored
        while left:
            step = view[:min(left, _VERIFY_CHUNK)]
            got = os.preadv(fh.fileno(), [step], pos) if hasattr(os, "preadv") else \
                _pread_fallback(fh, step, pos)
            if not got:
                return f"its {part} vectors end {left} bytes early"
            crc = zlib.crc32(step[:got], crc)
            pos, left = pos + got, left - got
        if crc != m.crc:
            return (f"its {part} vectors are not the bytes written (CRC-32 {crc:08x}, "
                    f"recorded {m.crc:08x}): the file was changed or damaged on disk")
    return None


def _pread_fallback(fh: io.FileIO, buf: memoryview, pos: int) -> int:  # pragma: no cover
    """``os.preadv`` where the platform has none."""
    fh.seek(pos)
    return fh.readinto(buf) or 0


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


def _dtype_mismatch(layout: tuple[str, str] | None, entry_dtype: str) -> str | None:
    """Why a shard of ``layout`` does not belong in an entry storing ``entry_dtype``."""
    if layout is None:  # ncprobe <= 0.1 stored the encoder's float32 only
        return None if entry_dtype == "float32" else (
            f"vectors in the layout of ncprobe <= 0.1, while the entry stores {entry_dtype}")
    if layout[1] != entry_dtype:
        return f"vectors stored as {layout[1]}, while the entry stores {entry_dtype}"
    return None


@dataclass
class _Shard:
    """An indexed shard: its arrays' places in the file and its missing-word counts; no
    vector is held in memory."""

    name: str
    path: Path
    n: int
    shape: tuple[int, int, int]
    layout: tuple[str, str] | None
    members: dict[str, _Member]
    missing: np.ndarray
    missing_span: np.ndarray
    #: per item, the largest angle between a stored vector and its float32 original
    #: (:data:`_LOSS`); None where the shard does not say (float32: exact)
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
            vectors and its float32 original (:func:`storage_loss`; 0.0 for float32);
            ``None`` where a shard does not say (half precision stored by ncprobe <= 0.2).
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
        self.store_loss: float | None = 0.0
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
            if dtype != "float32" and self.store_loss is not None:
                self.store_loss = (None if shard.loss is None else
                                   max(self.store_loss, float(shard.loss[rows[out]].max())))
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
            out[rows_out] = decode_vectors(got, shard.layout[1] if shard.layout else
                                           "float32")[inverse]
        return out

    def _rows(self, fh: io.FileIO, shard: _Shard, part: str, view: int, rows: np.ndarray
              ) -> np.ndarray:
        """Rows ``rows`` (sorted, distinct) of one view of a shard, as stored."""
        m = shard.members[part]
        views_first = shard.layout is not None
        if m.offset is None:  # compressed or Fortran-ordered (not written by ncprobe)
            fh.seek(0)
            with np.load(fh, allow_pickle=False) as z:
                whole = z[part]
            self.rows_read += len(rows)
            self.bytes_read += whole.nbytes
            return (whole[view] if views_first else whole[:, view])[rows]
        dim, size = m.shape[2], m.dtype.itemsize
        row_bytes = dim * size
        if views_first:
            base, stride = m.offset + view * m.shape[1] * row_bytes, row_bytes
        else:
            base, stride = m.offset + view * row_bytes, m.shape[1] * row_bytes
        got = np.empty((len(rows), dim), dtype=m.dtype)
        if not got.size:
            return got
        buf = got.data.cast("B")
        if stride == row_bytes:  # consecutive rows are adjacent: one read per run
            cuts = np.flatnonzero(np.diff(rows) != 1) + 1
            for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(rows)], strict=True):
                _read_at(fh, buf[a * row_bytes:b * row_bytes], base + int(rows[a]) * stride,
                         shard.path)
        else:
            for i, r in enumerate(rows.tolist()):
                _read_at(fh, buf[i * row_bytes:(i + 1) * row_bytes], base + r * stride,
                         shard.path)
        self.rows_read += len(rows)
        self.bytes_read += got.nbytes
        return got


def _close_all(files: list) -> None:
    for fh in files:
        with contextlib.suppress(OSError):
            fh.close()


def _read_at(fh: io.FileIO, buf: memoryview, pos: int, path: Path) -> None:
    """Fill ``buf`` from ``pos`` of the file."""
    done = 0
    fd = fh.fileno()
    while done < len(buf):
        if hasattr(os, "preadv"):
            got = os.preadv(fd, [buf[done:]], pos + done)
        else:  # pragma: no cover - platforms without preadv
            fh.seek(pos + done)
            got = fh.readinto(buf[done:]) or 0
        if not got:
            raise NcprobeError(f"cache shard {path} ends before its vectors (damaged after "
                               "this run opened it); delete it (or run `ncprobe cache clear "
                               "--model ...`) and run the command again")
        done += got


class EmbeddingStore:
    """Vectors of one encoder fingerprint.

    Args:
        fingerprint: the encoder's :meth:`~ncprobe.encoders.base.Encoder.fingerprint`.
        root: cache root (see :func:`cache_root`).
        shape: ``(views, sentence dim, span dim)`` of the encoder's vectors, ``None`` for
            a part not known (see :func:`vector_shape`); with the shape ``fingerprint.json``
            records, what every shard must hold.
        dtype: how the vectors are stored (:data:`STORE_DTYPES`; default float32, exact).
            Part of the entry's fingerprint when it is not float32.

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
                self.refresh()
                yield self
            finally:
                self._lock_depth = 0

    def refresh(self) -> None:
        """Index the shards on disk that are not indexed yet (all again if some vanished).

        Only each shard's keys, missing-word counts and array headers are read."""
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
                    new.append(got)
        # the parts of the shape that neither the encoder nor fingerprint.json says (an
        # entry written before the shape was recorded): from the shape of most items
        known = [(s.shape, s.n) for s in self._shards]
        self._shape = _majority(self._shape, known + [(s.shape, s.n) for s, _ in new])
        for shard, keys in new:
            why = _mismatch(shard.shape, self._shape)
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
            got = _open_shard(path, small=True)
            why, shape, n = _structure(got.specs, got.layout)
            if not why:
                why = _dtype_mismatch(got.layout, self.dtype)
            loss = got.small.get(_LOSS)
            if not why and loss is not None and (loss.shape != (n,) or loss.dtype != np.float32):
                why = f"its {_LOSS} array has shape {loss.shape} ({loss.dtype}), not ({n},) float32"
        except FileNotFoundError:
            return None  # removed meanwhile by another process (a clear, or its own discard)
        except Exception as e:  # noqa: BLE001 - numpy/zipfile raise many types on corrupt files
            why, shape = (f"{type(e).__name__}: {e}" if str(e) else type(e).__name__), None
        if why or shape is None:
            self._discard(path, why or "unusable")
            return None
        shard = _Shard(name, path, n, shape, got.layout, got.members,
                       got.small["missing"], got.small["missing_span"], got.small.get(_LOSS))
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
        :func:`_vectors_damage`; once per shard, and once per process while the file is
        unchanged): a damaged shard is then discarded like an unreadable one (logged by
        path, named in :attr:`problems`, deleted), and its keys are no longer stored, so
        the run encodes them again."""
        loc = self._index.get(key)
        if loc is None:
            return False
        return self._shards[loc[0]].verified or self._verify(loc[0])

    def _verify(self, i: int) -> bool:
        """Verify the vectors of shard ``i``; drop it from the index when they are damaged
        (or the file is gone). Whether it is intact."""
        shard = self._shards[i]
        try:
            why = _vectors_damage(shard.path, shard.members)
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
        with self.vectors(keys) as got:
            parts = [np.stack([got.read(p, v) for v in range(got.views)], axis=1)
                     if got.views else np.zeros((got.n, 0, got.dims[p]), np.float32)
                     for p in ("sent", "span")]
            return Encoded(parts[0], parts[1], got.missing_words, got.missing_span_words)

    def put(self, keys: Sequence[bytes], enc: Encoded | Sequence[Encoded]) -> None:
        """Write one shard atomically (under the entry's lock) and index it.

        Args:
            keys: the items' keys.
            enc: their vectors, ``(items, views, dim)`` each, in one :class:`Encoded` or in
                several (batches, in the order of ``keys``); stored views first in the
                entry's dtype.

        Raises:
            NcprobeError: the vectors are not of the shape the entry's fingerprint says
                (the encoder returned what it did not declare; nothing is stored), or
                beyond float16's range in a float16 entry.
            OutputError: the shard cannot be written (full disk, read-only, no permission).
        """
        if not keys:
            return
        parts = [enc] if isinstance(enc, Encoded) else list(enc)
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
        why, shape, _ = _structure(specs)
        if why or shape is None:
            raise NcprobeError(f"{model}: the encoder returned unusable vectors ({why}); nothing "
                               "was stored")
        with self.lock():
            wrong = _mismatch(shape, self._expected)
            if wrong:
                raise NcprobeError(
                    f"{model}: the encoder returned "
                    f"{wrong.replace('vectors of another shape: ', '')}; not "
                    f"stored in {self.dir}. Its vectors must keep one shape: run with "
                    "--no-cache, and report this")
            sent = _ViewsFirst([p.sent for p in parts], self.dtype, f"{model}'s vectors")
            span = _ViewsFirst([p.span for p in parts], self.dtype, f"{model}'s vectors")
            data = {"keys": np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 20),
                    "sent": sent, "span": span,
                    "missing": np.concatenate([p.missing_words for p in parts]),
                    "missing_span": np.concatenate([p.missing_span_words for p in parts]),
                    _LAYOUT: np.array([_VIEWS_FIRST, self.dtype])}
            if self.dtype != "float32":  # float32 is exact: nothing to say
                data[_LOSS] = np.maximum(sent.loss, span.loss)
            del sent, span
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
                    _write_npz(fh, data)
            except OSError as e:
                raise self._unwritable(e, self.dir / name) from e
            del data
            self._shape = _merge(self._expected, self._shape)
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
                        _VERIFIED.add(_identity(os.stat(shard.path)))
                    break


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


def _shard_check(path: Path, entry_dtype: str = "float32", verify: bool = False
                 ) -> tuple[str | None, tuple[int, int, int] | None, int]:
    """:func:`_structure` of a shard file, from its array headers, and whether its storage
    dtype is the entry's; with ``verify``, also whether every array is the bytes written
    (their CRC-32: the vectors are read), else no vector is read."""
    try:
        got = _open_shard(path, small=verify)
        why, shape, n = _structure(got.specs, got.layout)
        why = why or _dtype_mismatch(got.layout, entry_dtype)
        if verify and not why:
            why = _vectors_damage(path, got.members)
        return why, shape, n
    except Exception as e:  # noqa: BLE001 - numpy/zipfile raise many types on corrupt files
        return (f"{type(e).__name__}: {e}" if str(e) else type(e).__name__), None, 0


def cache_info(root: str | os.PathLike | None = None, *, verify: bool = True) -> list[dict]:
    """One dict per ncprobe store entry: ``dir, model, fingerprint, shape, store_dtype,
    items, bytes, corrupt``.

    Only entries that :func:`check_entry` accepts are listed (:func:`scan` gives the
    others). ``shape`` is ``{views, sent_dim, span_dim}`` as the entry's fingerprint says
    (``None`` for a part not known); ``store_dtype`` how its vectors are stored. ``corrupt``
    names each shard that ``compute`` will discard, with why: unreadable, arrays missing or
    inconsistent, vectors of another shape than the fingerprint says or stored in another
    dtype, or (``verify``) bytes changed since they were written (every array's CRC-32: all
    vectors are read, a few MB at a time); their items are not counted. Shards of both
    layouts (views first, and that of ncprobe <= 0.1) are counted. Without ``verify`` only
    the headers are read.

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
            if _SHARD_RE.match(f.name):
                why, shape, n = _shard_check(f, dtype, verify)
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
                    "shape": dict(zip(_SHAPE_PARTS, expected, strict=True)),
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
