"""A vector transform: what a probe applies to a view's vectors as they are read.

A probe that takes a transform (:func:`ncprobe.compute`, :func:`ncprobe.astitch.run_astitch`,
:func:`ncprobe.ncc.run_ncc`) reads each layer view's vectors from the embedding cache as it
always does, one view and level at a time, and hands them to the transform before any measure
is taken of them; the cache keeps the plain vectors (the transform applies after reading,
never before writing). What the transform does (erase a concept, project, shift) is its own
business: a probe never asks, and a transform is told only where the vectors come from.

A transformed run records the transform's :attr:`~VectorTransform.fingerprint` in its
metadata (``transform``), so its run id differs from the plain run's and neither is ever
taken for, or written over, the other.

A transform may also act **inside the forward pass**: one with an ``intervention`` (an
:class:`ncprobe.encoders._intervene.Intervention`: a layer's hidden state changed at some
positions) is applied by the encoder of every probe that takes it (:func:`in_forward`, where
the probe has its encoder): the vectors are those of the changed pass, cached under the
encoder's fingerprint, which names the intervention; such a transform then leaves the vectors
it is handed as they are.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from .errors import UsageError

__all__ = ["META_KEY", "VectorTransform", "apply_transform", "check_transform", "in_forward",
           "note"]

#: The key of a run's metadata (``run.json``) that holds the transform's fingerprint; a plain
#: run has none.
META_KEY = "transform"


@runtime_checkable
class VectorTransform(Protocol):
    """What a probe calls on each layer view's vectors as they are read.

    ``transform(view, level, vectors, groups)`` returns the vectors to measure in place of
    ``vectors``: the same shape, one row per row given (the probe keeps the dtype it read).

    Args (of the call):
        view: the view's name as the results tables name it (``"6"``, ``"0+1+2"``, ``"own"``:
            the model's own sentence embedding).
        level: ``"sent"`` (sentence vectors) or ``"nc"`` (the span's: the compound or
            expression).
        vectors: ``(rows, dim)``, read-only: a transform returns a new array, never changes
            the one given.
        groups: per row, the expression the row belongs to (NCIMP's compound, AStitch's
            idiom), e.g. so that no row is transformed by something fitted on its own
            expression.

    Attributes:
        fingerprint: what the transform is, as text (non-empty); a run records it, and two
            transforms with the same fingerprint must give the same vectors.
    """

    @property
    def fingerprint(self) -> str: ...  # an attribute or a property: read only

    def __call__(self, view: str, level: str, vectors: np.ndarray,
                 groups: Sequence[str]) -> np.ndarray: ...


def check_transform(transform: object) -> str:
    """The fingerprint of ``transform``, checked before any work.

    Raises:
        UsageError: ``transform`` is not callable or has no non-empty text ``fingerprint``.
    """
    fp = getattr(transform, "fingerprint", None)
    if not callable(transform) or not isinstance(fp, str) or not fp:
        raise UsageError(f"transform={transform!r}: give a VectorTransform (ncprobe.transform): "
                         "a callable (view, level, vectors, groups) -> vectors with a "
                         "non-empty text 'fingerprint'")
    return fp


def note(fingerprint: str) -> str:
    """What a transformed run's notes say of its transform."""
    return (f"every view's vectors were transformed as read ({fingerprint}); the embedding "
            "cache holds the plain vectors")


def apply_transform(transform: VectorTransform, view: str, level: str, vectors: np.ndarray,
                    groups: Sequence[str]) -> np.ndarray:
    """``transform``'s vectors for those of one view and level, checked: the transform is
    given a read-only view of ``vectors`` (the arrays read or held stay as they are) and must
    give back an array of the same shape, returned in ``vectors``' dtype.

    Raises:
        UsageError: the transform gave another shape, naming the view and level.
    """
    given = np.asarray(vectors).view()
    given.flags.writeable = False
    if len(groups) != len(given):
        raise ValueError(f"{len(groups)} groups for {len(given)} rows")
    out = np.asarray(transform(view, level, given, groups))
    if out.shape != given.shape:
        raise UsageError(f"the vector transform {transform.fingerprint!r} gave {out.shape} "
                         f"vectors for the {given.shape} of view {view}, level {level}: a "
                         "transform returns one vector of the same size per row")
    return np.asarray(out, dtype=given.dtype)


def in_forward(encoder: Any, transform: VectorTransform | None) -> Any:
    """The encoder a probe encodes with under ``transform``: ``encoder`` itself, or, for a
    transform with an ``intervention`` (the module says what), ``encoder`` with it applied in
    its forward pass (``encoder.with_intervention``).

    Raises:
        UsageError: the transform acts in the forward pass and the model has none to act in
            (static vectors, ELMo, an API model), naming both; the encoder's own (a layer the
            model does not have).
    """
    change = getattr(transform, "intervention", None) if transform is not None else None
    if change is None:
        return encoder
    make = getattr(encoder, "with_intervention", None)
    if make is None:
        assert transform is not None
        raise UsageError(f"{transform.fingerprint} acts inside the forward pass, and "
                         f"{getattr(encoder, 'name', encoder)!r} has no forward pass to act in "
                         "(static vectors, ELMo or an API model): use a transformer model, or "
                         "transform the stored vectors")
    return make(change)
