"""How vectors are stored: float32 (exact), float16 or bfloat16, and what storing costs.

Vectors are stored as float32 (exact), or, with ``dtype="float16"`` / ``"bfloat16"``
(``--store-dtype``), in half precision: half the disk and the reading. The storage dtype is
part of the entry's fingerprint (key :data:`DTYPE_KEY`, present only when it is not
float32, so float32 entries keep their names), so entries of different dtypes never mix;
vectors come back as float32 either way. float16 keeps 11 significant bits within +-65504
(a vector beyond that is refused, naming bfloat16); bfloat16 keeps 8 bits over float32's
range (rounded to nearest even). Rounding to nearest moves a vector by an angle of at most
``asin(u)`` (:data:`UNIT_ROUNDOFF`), so a cosine between two stored vectors by at most
:data:`COSINE_BOUND`; vectors that storing would move further (values below float16's
normal range) are refused (:func:`encode_measured`). Each shard of a half-precision entry
records, per item, how far storing moved its vectors (:func:`storage_loss`), from which a
run states the bound its own vectors met (:func:`store_loss_record`).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import UsageError

#: the fingerprint key of an entry's storage dtype (present when it is not float32)
DTYPE_KEY = "store_dtype"
#: How vectors can be stored (``--store-dtype``); float32 is exact, the default.
STORE_DTYPES = ("float32", "float16", "bfloat16")
#: what each storage dtype is on disk (bfloat16: the upper 16 bits of the float32)
DISK_DTYPE: dict[str, np.dtype] = {"float32": np.dtype("<f4"), "float16": np.dtype("<f2"),
                                   "bfloat16": np.dtype("<u2")}


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
#: the smallest positive normal number of each half-precision dtype
_SMALLEST_NORMAL = {"float16": float(np.finfo(np.float16).tiny),
                    "bfloat16": float(np.finfo(np.float32).tiny)}


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


def store_loss_record(dtype: str, angle: float) -> tuple[dict, list[str]]:
    """What a run records of its storage dtype's effect: ``({LOSS_KEY: bound}, [note])``,
    or ``({}, [])`` for float32 (exact: a float32 run's ``run.json`` is what it always was).

    ``bound`` is ``2 * angle`` (:func:`storage_loss`, the worst over the run's vectors): no
    cosine between two of its stored vectors differs from their float32 cosine by more. The
    note says it in words, with the dtype's own bound (:data:`COSINE_BOUND`).
    """
    if dtype == "float32":
        return {}, []
    bound = 2.0 * angle
    return {LOSS_KEY: bound}, [
        f"vectors stored as {dtype}: no cosine between two stored vectors differs from its "
        f"float32 value by more than {bound:.2g} (measured on this run's vectors; {dtype} "
        f"guarantees {COSINE_BOUND[dtype]:.2g}). Measures of z-scored vectors "
        "(--standardise) and rho are not bounded by it"]


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
