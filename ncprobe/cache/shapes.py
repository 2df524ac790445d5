"""The shape of an entry's vectors: what the encoder says, what the entry records, and
which shards fit.

The shape (views, sentence dimension, span dimension) comes from the entry's fingerprint,
never from whichever shard is read first: the encoder says what it knows without loading
(:func:`vector_shape`: its views and dimension), and the first shard ncprobe stores records
the whole shape in ``fingerprint.json`` (key :data:`SHAPE_KEY`, left out of the entry's name
hash). A shard of another shape (well-formed arrays, another dimension) is discarded alone.
Only where ``fingerprint.json`` records no shape (it was found damaged and written again
from the entry's name) and the encoder does not say a dimension is a part that neither
gives taken from the shape that most stored items have (:func:`majority_shape`).
"""

from __future__ import annotations

from typing import Sequence

#: the key of ``fingerprint.json`` that records the entry's vector shape (not hashed)
SHAPE_KEY = "vector_shape"
#: the parts of a shape, as ``fingerprint.json`` and ``cache info`` name them
SHAPE_PARTS = ("views", "sent_dim", "span_dim")
#: ``(views, sentence dimension, span dimension)``; ``None`` where not known
Shape = tuple[int | None, int | None, int | None]


def vector_shape(encoder) -> Shape:
    """``(views, sentence dim, span dim)`` of an encoder's vectors, as far as it says
    without loading a model (``None`` where it does not: an API model's size before its
    first answer, a sentence-transformers model's own sentence embedding).

    Read from the encoder's attributes (``views``, ``dim``, a ``sent_dim`` of its class), so
    the store needs nothing of the encoders' modules."""
    views = getattr(encoder, "views", None)
    dim = getattr(encoder, "dim", None)
    dim = int(dim) if isinstance(dim, int) and dim > 0 else None
    # an encoder with a sentence size of its own (a sentence-transformers Dense layer) has a
    # ``sent_dim`` that may load the model: left to the first shard stored
    sent = None if hasattr(type(encoder), "sent_dim") else dim
    return (len(views) if views else None), sent, dim


def shape_text(shape: Shape) -> str:
    """``views 3, sent_dim 50, span_dim ?``."""
    return ", ".join(f"{k} {'?' if v is None else v}"
                     for k, v in zip(SHAPE_PARTS, shape, strict=True))


def recorded_shape(meta: dict) -> Shape:
    """The shape ``fingerprint.json`` records (and the views its fingerprint names)."""
    rec = meta.get(SHAPE_KEY)
    rec = rec if isinstance(rec, dict) else {}
    out: list[int | None] = []
    for k in SHAPE_PARTS:
        v = rec.get(k)
        out.append(v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None)
    views = meta.get("views")
    if out[0] is None and isinstance(views, list) and views:
        out[0] = len(views)
    return out[0], out[1], out[2]


def merge_shape(first: Shape, then: Shape) -> Shape:
    """``first``, its unknown parts taken from ``then``."""
    a, b, c = (x if x is not None else y for x, y in zip(first, then, strict=True))
    return a, b, c


def shape_mismatch(shape: tuple[int, int, int], expected: Shape) -> str | None:
    """Why vectors of ``shape`` do not belong in an entry of ``expected`` shape, or None."""
    if all(e is None or e == s for s, e in zip(shape, expected, strict=True)):
        return None
    return (f"vectors of another shape: {shape_text(shape)}, while the entry's fingerprint "
            f"says {shape_text(expected)}")


def majority_shape(expected: Shape, shapes: Sequence[tuple[tuple[int, int, int], int]]
                   ) -> Shape:
    """``expected`` with its unknown parts taken from the shape of most items among
    ``(shape, items)`` that fit its known parts (the first such shape on a tie)."""
    if None not in expected:
        return expected
    votes: dict[tuple[int, int, int], int] = {}
    for shape, n in shapes:
        if shape_mismatch(shape, expected) is None:
            votes[shape] = votes.get(shape, 0) + n
    if not votes:
        return expected
    best = max(votes, key=lambda s: votes[s])  # max keeps the first of equal counts
    return merge_shape(expected, best)
