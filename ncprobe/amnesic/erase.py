"""The eraser of amnesic probing: LEACE fitted on a concept's labels, held as numpy arrays.

An :class:`Eraser` is LEACE's affine erasure (Belrose et al. 2023, ``concept_erasure.leace``)

    x' = x - ((x - bias) @ proj_right.T) @ proj_left.T

with ``proj_left`` ``(d, r)``, ``proj_right`` ``(r, d)`` and ``bias`` ``(d,)`` in float64, ``r`` the
rank of the erasure (``K - 1`` for a concept of ``K`` classes). It is fitted by
:class:`EraserFitter` (streaming: any number of :meth:`EraserFitter.update`, then
:meth:`EraserFitter.eraser`) or :func:`fit_eraser`, which wrap ``concept_erasure.LeaceFitter``
with one-hot labels in float64. torch and ``concept_erasure`` (the ``amnesic`` extra) are
imported only when an eraser is fitted; applying one, its fingerprint and everything else here
is numpy.

**LeaceFitter's settings** (:data:`LEACE_SETTINGS`), chosen so that LEACE's guarantee holds on
the rows the eraser was fitted on: after erasure, every class has the same mean (the sample
cross-covariance of the erased vectors with the one-hot labels is zero), so no linear
classifier does better on those rows than a constant one.

* ``affine=True``: the erasure is centred on the rows' mean, which it keeps; without the bias,
  equal class means are not reached.
* ``shrinkage=True``: the covariance of ``x`` is shrunk towards a multiple of the identity
  (``concept_erasure.shrinkage.optimal_linear_shrinkage``). The guarantee needs only
  ``P @ cov(x, z) = 0``, which holds for any invertible whitening; what the whitening decides
  is which erasure is the *least* change. The shrunk covariance is invertible even with fewer
  rows than dimensions (a 5120-dimensional view fitted on a few hundred compounds), where the
  sample covariance is singular and its pseudo-inverse drops directions that may carry the
  concept.
* ``svd_tol=1e-8`` (the package's default is 0.01): singular values of the whitened
  cross-covariance under ``svd_tol`` are not erased. They lie between 0 and about 1 (the
  covariances of whitened vectors with 0/1 labels), so the default leaves a concept whose
  whitened correlation is under about 0.01 in place and the guarantee fails for weak concepts
  (``tests/amnesic/test_erase.py`` plants one); ``1e-8`` erases
  everything above float64 rounding, while the one singular value that one-hot labels make zero
  (the columns sum to one) stays under it, so the rank is ``K - 1`` and no direction is erased
  at random.
* dimensions (nearly) constant on the fitted rows (:data:`CONSTANT_SPREAD`) are set to their
  mean, one erased direction each (so the rank is ``K - 1`` plus their number): whitening
  cannot see them, but their last bits may carry the labels, which a probe that standardises
  its features (dividing by their spread) reads; MiniLM's last layer's concept was read back
  at 99% after LEACE alone.
* ``constrain_cov_trace=False``: the package's trace constraint mixes the LEACE projection with
  an orthogonal one when erasure would increase the covariance's trace; the mixture no longer
  makes the class means equal, so it would break the guarantee (and it returns full ``d x d``
  factors).

The **control concept** (Elazar et al. 2021) is :func:`control_labels`: the labels permuted at
random, so its eraser has the concept's rank. :func:`grouped_folds` and :func:`erase_by_fold`
erase every row with an eraser fitted only on other groups (a compound is never erased by an
eraser fitted on itself). :class:`ErasingTransform` hands erasers to a probe's run as a
vector transform (:mod:`ncprobe.transform`): every view's vectors erased as they are read.
:func:`guarantee` shows LEACE's guarantee on the concept's own linear
probe instead of assuming it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import MissingPackageError, UsageError
from ..stats import standardised_logistic

if TYPE_CHECKING:
    import pandas as pd

#: A dimension whose spread on the fitted rows is at most this fraction of the largest
#: dimension's is constant there and set to its mean by the eraser
#: (:meth:`EraserFitter.eraser`): MiniLM's last layer has three (standard deviations 1.6e-32,
#: 1.7e-32 and 4.8e-9 against 0.66) whose last bits a standardising probe read the concept
#: from at 99% after LEACE alone.
CONSTANT_SPREAD = 1e-6
#: The erasure method, part of the fingerprint.
METHOD = "leace"
#: ``concept_erasure.LeaceFitter``'s keyword settings (the module docstring says why).
LEACE_SETTINGS: dict[str, Any] = {"affine": True, "shrinkage": True, "svd_tol": 1e-8,
                                  "constrain_cov_trace": False}
_FINGERPRINT_VERSION = b"ncprobe.amnesic.Eraser/1"


class EraserError(UsageError):
    """Bad input to an eraser (exit 2): the message says what, where and what to do."""


class OneLabelError(EraserError):
    """A concept with one label: the rows an eraser is fitted on (a fold's training part, a
    split) hold fewer than two distinct labels, so there is nothing to erase."""


class NonFiniteError(EraserError):
    """A vector holds NaN or an infinity."""


class ShapeError(EraserError):
    """Vectors of the wrong dimension or shape, or labels of another length."""


class UnknownLabelError(EraserError):
    """A label that is not one of the classes the eraser is fitted on."""


def _vectors(x: ArrayLike, dim: int | None, where: str) -> np.ndarray:
    """``x`` as a finite 2-D float64 array of ``dim`` columns, or a named error."""
    a = np.asarray(x)
    if a.ndim != 2:
        raise ShapeError(f"{where}: vectors must be a 2-D array (rows x dimensions), got shape "
                         f"{a.shape}")
    if dim is not None and a.shape[1] != dim:
        raise ShapeError(f"{where}: vectors have {a.shape[1]} dimensions, the eraser {dim}: "
                         f"fit and apply an eraser on one view's vectors")
    if not np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.complexfloating):
        raise ShapeError(f"{where}: vectors must be real numbers, got dtype {a.dtype}")
    a = a.astype(np.float64, copy=False)
    bad = ~np.isfinite(a).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise NonFiniteError(f"{where}: {len(rows)} vector(s) hold NaN or an infinity (first: "
                             f"row {int(rows[0])}): leave those rows out before fitting")
    return a


def _labels(labels: ArrayLike, n: int, where: str) -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim != 1 or len(y) != n:
        raise ShapeError(f"{where}: {n} vectors but labels of shape {y.shape}: give one label "
                         f"per row")
    return y


def _one_label(where: str, values: Sequence[Any], counts: Sequence[int]) -> OneLabelError:
    seen = ", ".join(f"{v!r} ({c} rows)" for v, c in zip(values, counts, strict=True)
                     if c) or "no rows"
    return OneLabelError(
        f"{where}: a concept with one label: the rows the eraser is fitted on hold {seen}; an "
        f"eraser needs at least two labels. Fit on rows that hold both (with folds: use fewer "
        f"folds, so that each training part holds more groups)")


def _frozen(a: ArrayLike) -> np.ndarray:
    out = np.array(a, dtype=np.float64, order="C", copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class Eraser:
    """LEACE's affine erasure of one concept: ``x' = x - ((x - bias) @ proj_right.T) @
    proj_left.T``.

    Attributes:
        proj_left: ``(d, r)`` float64.
        proj_right: ``(r, d)`` float64; ``proj_left @ proj_right`` is ``I - P``.
        bias: ``(d,)`` float64: the mean of the rows it was fitted on (kept by the erasure).
        classes: the concept's classes, in the order of the one-hot columns.
        n_rows: the number of rows it was fitted on (0 for :meth:`identity`).
        method: ``"leace"``.
    """

    proj_left: np.ndarray
    proj_right: np.ndarray
    bias: np.ndarray
    classes: tuple[Any, ...] = ()
    n_rows: int = 0
    method: str = METHOD

    def __post_init__(self) -> None:
        left, right, bias = _frozen(self.proj_left), _frozen(self.proj_right), _frozen(self.bias)
        if bias.ndim != 1 or left.ndim != 2 or right.ndim != 2 or left.shape[0] != len(bias) \
                or right.shape != (left.shape[1], len(bias)):
            raise ShapeError(f"Eraser: proj_left {left.shape}, proj_right {right.shape} and bias "
                             f"{bias.shape} must be (d, r), (r, d) and (d,)")
        object.__setattr__(self, "proj_left", left)
        object.__setattr__(self, "proj_right", right)
        object.__setattr__(self, "bias", bias)
        object.__setattr__(self, "classes", tuple(self.classes))

    @classmethod
    def identity(cls, dim: int) -> Eraser:
        """The empty eraser of ``dim`` dimensions: rank 0, :meth:`apply` returns its input."""
        if dim < 1:
            raise ShapeError(f"Eraser.identity: dim must be at least 1, got {dim}")
        return cls(np.zeros((dim, 0)), np.zeros((0, dim)), np.zeros(dim))

    @property
    def dim(self) -> int:
        return len(self.bias)

    @property
    def rank(self) -> int:
        """The number of directions erased (``K - 1`` for ``K`` classes)."""
        return int(self.proj_left.shape[1])

    @property
    def is_identity(self) -> bool:
        return self.rank == 0

    def apply(self, x: ArrayLike) -> np.ndarray:
        """The erased vectors, in ``x``'s dtype (float64 for integers), computed in float64.

        ``x`` is ``(..., d)``. The identity eraser returns a copy of ``x``, byte for byte. NaN
        stays NaN (the probes refuse it).
        """
        a = np.asarray(x)
        if a.ndim == 0 or a.shape[-1] != self.dim:
            raise ShapeError(f"Eraser.apply: vectors of shape {a.shape}, the eraser has "
                             f"{self.dim} dimensions: apply an eraser to the view it was fitted "
                             f"on")
        if self.is_identity:
            return a.copy()
        dtype = a.dtype if np.issubdtype(a.dtype, np.floating) else np.dtype(np.float64)
        a64 = a.astype(np.float64, copy=False)
        out = a64 - ((a64 - self.bias) @ self.proj_right.T) @ self.proj_left.T
        return out.astype(dtype, copy=False)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 (hex) of the method and the arrays' names, dtypes, shapes and bytes
        (little-endian float64): equal for equal erasures in any process; the eraser's part of
        an erased forward pass's cache key."""
        h = hashlib.sha256(_FINGERPRINT_VERSION + b"\0" + self.method.encode() + b"\0")
        for name, a in (("proj_left", self.proj_left), ("proj_right", self.proj_right),
                        ("bias", self.bias)):
            le = np.ascontiguousarray(a, dtype="<f8")
            h.update(f"{name}:{le.dtype.str}:{le.shape}\0".encode())
            h.update(le.tobytes())
        return h.hexdigest()


class EraserFitter:
    """Fits an :class:`Eraser` on rows streamed in any number of :meth:`update` calls.

    Args:
        dim: the vectors' dimension.
        classes: the concept's classes (at least two, distinct): the one-hot columns, in order.
        where: what the rows are, for error messages ("fold 2 of 5", "the training split").
        device: the torch device the statistics live and the eraser is computed on (``None``:
            the CPU). The eigendecomposition of the ``d x d`` covariance dominates: about two
            minutes for ``d = 5120`` on one CPU thread (0.9 s for ``d = 1024``); a GPU takes
            seconds. The eraser comes back as numpy arrays either way (a GPU's differ from the
            CPU's by rounding, and so does their fingerprint).
    """

    def __init__(self, dim: int, classes: Sequence[Hashable], *,
                 where: str = "the eraser's training rows", device: str | None = None) -> None:
        if int(dim) != dim or dim < 1:
            raise ShapeError(f"{where}: the dimension must be a positive integer, got {dim!r}")
        values = tuple(np.asarray(classes).tolist())
        if len(values) < 2 or len(set(values)) != len(values):
            raise EraserError(f"{where}: classes must be at least two distinct labels, got "
                              f"{values!r}")
        self.dim, self.classes, self.where, self.device = int(dim), values, where, device
        self._index = {c: i for i, c in enumerate(values)}
        self.counts = np.zeros(len(values), dtype=np.int64)
        self._fitter: Any = None

    @property
    def n_rows(self) -> int:
        return int(self.counts.sum())

    def _codes(self, y: np.ndarray) -> np.ndarray:
        codes = np.empty(len(y), dtype=np.int64)
        for i, v in enumerate(y.tolist()):
            code = self._index.get(v)
            if code is None:
                raise UnknownLabelError(
                    f"{self.where}: row {i} has the label {v!r}, not one of the classes "
                    f"{self.classes!r}: name every label in classes, or leave the row out")
            codes[i] = code
        return codes

    def _leace(self) -> Any:
        if self._fitter is None:
            try:
                import torch
                from concept_erasure import LeaceFitter
            except ImportError:
                raise MissingPackageError(
                    "erasing a concept needs concept-erasure and torch, which are not installed: "
                    "pip install 'ncprobe[amnesic]'") from None
            self._fitter = LeaceFitter(self.dim, len(self.classes), dtype=torch.float64,
                                       device=self.device, **LEACE_SETTINGS)
        return self._fitter

    def update(self, x: ArrayLike, labels: ArrayLike) -> EraserFitter:
        """Adds rows ``x`` ``(n, dim)`` with their ``labels`` ``(n,)``; returns the fitter."""
        a = _vectors(x, self.dim, self.where)
        codes = self._codes(_labels(labels, len(a), self.where))
        if not len(a):
            return self
        fitter = self._leace()  # names the extra when torch or concept-erasure is missing
        import torch

        z = np.zeros((len(a), len(self.classes)))
        z[np.arange(len(a)), codes] = 1.0
        fitter.update(torch.from_numpy(a).to(fitter.mean_x.device),
                      torch.from_numpy(z).to(fitter.mean_x.device))
        self.counts += np.bincount(codes, minlength=len(self.classes))
        return self

    def eraser(self) -> Eraser:
        """The eraser of the rows seen so far; :class:`OneLabelError` if they hold one label."""
        if np.count_nonzero(self.counts) < 2:
            raise _one_label(self.where, self.classes, self.counts.tolist())
        leace = self._leace()
        fitted = leace.eraser
        left = fitted.proj_left.detach().cpu().numpy().copy()
        right = fitted.proj_right.detach().cpu().numpy()
        # the directions under svd_tol come back as zero columns (rows): drop them
        keep = np.any(left != 0, axis=0) & np.any(right != 0, axis=1)
        left, right = left[:, keep], right[keep]
        # a dimension (nearly) constant on the fitted rows is below what whitening can see,
        # yet its last bits may still carry the labels (MiniLM's last layer: 1e-32), and a
        # probe that standardises its features divides by that spread and reads them: such a
        # dimension is set to its mean (the bias), one more erased direction each (e_j)
        spread = np.sqrt(np.clip(np.diag(leace.sigma_xx_.detach().cpu().numpy()), 0, None))
        constant = np.flatnonzero(spread <= CONSTANT_SPREAD * spread.max())
        if len(constant):
            left[constant] = 0.0
            unit = np.zeros((self.dim, len(constant)))
            unit[constant, np.arange(len(constant))] = 1.0
            left, right = np.hstack([left, unit]), np.vstack([right, unit.T])
        return Eraser(left, right, fitted.bias.detach().cpu().numpy(), classes=self.classes,
                      n_rows=self.n_rows)


def fit_eraser(x: ArrayLike, labels: ArrayLike, classes: Sequence[Hashable] | None = None, *,
               where: str = "the eraser's training rows", device: str | None = None) -> Eraser:
    """The eraser of ``labels`` fitted on ``x`` ``(n, d)`` in one update; ``classes`` default
    to the distinct labels, sorted (``where``, ``device``: :class:`EraserFitter`)."""
    a = np.asarray(x)
    if a.ndim != 2:
        raise ShapeError(f"{where}: vectors must be a 2-D array (rows x dimensions), got shape "
                         f"{a.shape}")
    y = _labels(labels, len(a), where)
    values: Sequence[Hashable] = np.unique(y).tolist() if classes is None else classes
    if classes is None and len(values) < 2:
        raise _one_label(where, values, [len(y)] * len(values))
    return EraserFitter(a.shape[1], values, where=where, device=device).update(a, y).eraser()


def control_labels(labels: ArrayLike, seed: int, groups: ArrayLike | None = None
                   ) -> np.ndarray:
    """The control concept (Elazar et al. 2021): ``labels`` permuted at random (seeded), so every
    class keeps its count and the control's eraser has the concept's rank. The permutation is
    drawn again until at least one row's label changes.

    With ``groups`` (one label per group: a compound's class), the groups' labels are permuted
    among the groups and every row takes its group's: the control is a concept of the same
    kind, and keeps the number of groups of each class.

    Raises:
        EraserError: a group with rows of different labels (permute rows instead: no
            ``groups``).
    """
    y = np.asarray(labels)
    if y.ndim != 1:
        raise ShapeError(f"control_labels: labels must be 1-D, got shape {y.shape}")
    if groups is not None:
        g = np.asarray(groups)
        if g.shape != y.shape:
            raise ShapeError(f"control_labels: {len(y)} labels but groups of shape {g.shape}")
        _, first, inverse = np.unique(g, return_index=True, return_inverse=True)
        per_group = y[first]
        mixed = sorted({str(v) for v in g[y != per_group[inverse.ravel()]]})
        if mixed:
            raise EraserError(f"control_labels: group(s) {', '.join(mixed[:4])} hold rows of "
                              "different labels: permute rows instead (no groups)")
        return control_labels(per_group, seed)[inverse.ravel()]
    values, counts = np.unique(y, return_counts=True)
    if len(values) < 2:
        raise _one_label("control_labels", values.tolist(), counts.tolist())
    rng = np.random.default_rng(seed)
    while True:  # each draw leaves every label in place with probability at most 1/2
        shuffled = y[rng.permutation(len(y))]
        if np.any(shuffled != y):
            return shuffled


def grouped_folds(groups: ArrayLike, k: int, seed: int,
                  labels: ArrayLike | None = None) -> np.ndarray:
    """Each row's fold ``0 .. k-1``; all rows of a group in one fold.

    scikit-learn's ``GroupKFold(k, shuffle=True, random_state=seed)``, or with ``labels``
    ``StratifiedGroupKFold`` (the same, keeping the labels' proportions in each fold as far as
    the groups allow).
    """
    from sklearn.model_selection import GroupKFold, StratifiedGroupKFold

    g = np.asarray(groups)
    if g.ndim != 1:
        raise ShapeError(f"grouped_folds: groups must be 1-D, got shape {g.shape}")
    n_groups = len(np.unique(g))
    if int(k) != k or k < 2 or k > n_groups:
        raise EraserError(f"grouped_folds: {k!r} folds of {n_groups} groups: give between 2 "
                          f"and {n_groups} folds")
    splitter: Any
    if labels is None:
        splitter, y = GroupKFold(n_splits=int(k), shuffle=True, random_state=seed), None
    else:
        splitter = StratifiedGroupKFold(n_splits=int(k), shuffle=True, random_state=seed)
        y = _labels(labels, len(g), "grouped_folds")
    folds = np.full(len(g), -1, dtype=np.int64)
    for fold, (_, test) in enumerate(splitter.split(np.zeros((len(g), 1)), y, g)):
        folds[test] = fold
    return folds


def fold_erasers(x: ArrayLike, labels: ArrayLike, groups: ArrayLike, k: int, seed: int,
                 control: bool = False, *, device: str | None = None) -> dict[Any, Eraser]:
    """The eraser of each group: fitted on the rows of the other folds only, so no row is
    erased by an eraser fitted on its own group (:class:`ErasingTransform` takes the mapping).

    Args:
        x: ``(n, d)`` vectors.
        labels: ``(n,)`` the concept's labels; the classes are the distinct labels, sorted.
        groups: ``(n,)`` the unit a row belongs to (a compound, an expression).
        k: the number of folds (:func:`grouped_folds`, stratified by ``labels``).
        seed: the folds' seed, and the control labels'.
        control: fit on :func:`control_labels` instead, permuted among the groups where each
            group holds one label, else among the rows (the same folds: the two erasures are
            paired row by row).
        device: where the erasers are fitted (:class:`EraserFitter`).

    Returns:
        ``{group: eraser}``: the groups of a fold share their fold's eraser.

    Raises:
        OneLabelError: a fold's training part holds one label (the message names the fold).
    """
    a64 = _vectors(np.asarray(x), None, "fold_erasers")
    y = _labels(labels, len(a64), "fold_erasers")
    g = np.asarray(groups)
    if g.shape != y.shape:
        raise ShapeError(f"fold_erasers: {len(y)} rows but groups of shape {g.shape}")
    classes = np.unique(y).tolist()
    if len(classes) < 2:
        raise _one_label("fold_erasers", classes, [len(y)] * len(classes))
    folds = grouped_folds(g, k, seed, labels=y)
    fitted_on = y
    if control:
        fitted_on = control_labels(y, seed, groups=g if one_label_per_group(y, g) else None)
    out: dict[Any, Eraser] = {}
    for fold in range(int(k)):
        held = folds == fold
        where = (f"fold {fold + 1} of {k}{' (control labels)' if control else ''}: its "
                 f"training part (the rows of the other folds)")
        eraser = EraserFitter(a64.shape[1], classes, where=where, device=device) \
            .update(a64[~held], fitted_on[~held]).eraser()
        out.update(dict.fromkeys(g[held].tolist(), eraser))
    return out


def erase_by_fold(x: ArrayLike, labels: ArrayLike, groups: ArrayLike, k: int, seed: int,
                  control: bool = False, *, device: str | None = None) -> np.ndarray:
    """``x`` erased fold by fold (:func:`fold_erasers`, the same arguments): each row by the
    eraser of its group, fitted on the other folds' rows only.

    Returns:
        ``(n, d)`` in ``x``'s dtype (float64 for integers).

    Raises:
        OneLabelError: a fold's training part holds one label (the message names the fold).
    """
    a = np.asarray(x)
    return apply_by_group(fold_erasers(a, labels, groups, k, seed, control, device=device),
                          a, groups)


def apply_by_group(erasers: Mapping[Any, Eraser], x: ArrayLike, groups: ArrayLike,
                   other: Eraser | None = None) -> np.ndarray:
    """Each row of ``x`` erased by the eraser of its group (``other`` for a group
    ``erasers`` does not hold), in ``x``'s dtype (float64 for integers)."""
    a = np.asarray(x)
    keys = np.asarray(groups, dtype=object)
    dtype = a.dtype if np.issubdtype(a.dtype, np.floating) else np.dtype(np.float64)
    out = np.empty(a.shape, dtype=dtype)
    for group in dict.fromkeys(keys.tolist()):
        rows = keys == group
        eraser = erasers[group] if group in erasers else other
        assert eraser is not None  # the callers check every group has one
        out[rows] = eraser.apply(a[rows])
    return out


def one_label_per_group(labels: ArrayLike, groups: ArrayLike) -> bool:
    """Whether every group's rows hold one label (a compound's class)."""
    y, g = np.asarray(labels), np.asarray(groups)
    _, first, inverse = np.unique(g, return_index=True, return_inverse=True)
    return bool(np.all(y == y[first][inverse.ravel()]))


@dataclass(frozen=True)
class ErasingTransform:
    """Erasers as a :class:`~ncprobe.transform.VectorTransform`: what a probe's run applies to
    each layer view's vectors as they are read (``compute(..., transform=...)``,
    ``run_astitch``, ``run_ncc``).

    Attributes:
        erasers: by ``(view, level)`` (the results tables' names: ``("6", "nc")``), either one
            :class:`Eraser` for every row, or a mapping from a row's group (its compound or
            expression) to the eraser of that group's fold (:func:`erase_by_fold`'s rule: no
            row erased by an eraser fitted on its own group).
        what: what the erasers erase, said in the run's notes and fingerprinted
            (e.g. ``"concept astitch (idiomatic/literal), en train"``).
        others: by ``(view, level)``, the eraser of the rows whose group the fold mapping does
            not hold (fitted on every row of the concept, so on none of theirs); ``None``:
            such a row is an error.

    A view and level the erasers do not hold, or a row whose group has no eraser, is an
    :class:`EraserError` naming it: a run is never half erased.
    """

    erasers: Mapping[tuple[str, str], Eraser | Mapping[str, Eraser]]
    what: str
    others: Mapping[tuple[str, str], Eraser] | None = None

    #: ``erase:`` and the sha256 of :attr:`what` and every eraser's fingerprint, by view,
    #: level and group in sorted order (set when made).
    fingerprint: str = field(init=False, default="")

    def __post_init__(self) -> None:
        if not self.what:
            raise EraserError("ErasingTransform: say what the erasers erase (what=...)")
        if not self.erasers:
            raise EraserError("ErasingTransform: no eraser given")
        object.__setattr__(self, "fingerprint", self._fingerprint())

    def _fingerprint(self) -> str:
        h = hashlib.sha256(_FINGERPRINT_VERSION + b"\0" + self.what.encode() + b"\0")
        for (view, level) in sorted(self.erasers):
            e = self.erasers[(view, level)]
            parts = [("", e)] if isinstance(e, Eraser) else sorted(e.items())
            for group, eraser in parts:
                h.update(f"{view}\0{level}\0{group}\0{eraser.fingerprint}\0".encode())
        for (view, level), eraser in sorted((self.others or {}).items()):
            h.update(f"others\0{view}\0{level}\0{eraser.fingerprint}\0".encode())
        return f"erase:{h.hexdigest()[:16]}"

    def __call__(self, view: str, level: str, vectors: np.ndarray,
                 groups: Sequence[str]) -> np.ndarray:
        e = self.erasers.get((view, level))
        if e is None:
            held = ", ".join(f"{v}/{lv}" for v, lv in sorted(self.erasers))
            raise EraserError(f"no eraser for view {view}, level {level} ({self.what}): the "
                              f"erasers hold {held}; fit one for every view and level the "
                              "run reads")
        if isinstance(e, Eraser):
            return e.apply(vectors)
        keys = np.asarray(groups, dtype=object)
        other = (self.others or {}).get((view, level))
        missing = sorted({str(g) for g in set(keys.tolist()) if g not in e})
        if missing and other is None:
            raise EraserError(f"no eraser for {len(missing)} group(s) of view {view}, level "
                              f"{level} ({', '.join(missing[:4])}): fold erasers cover the "
                              "groups they were fitted for")
        return apply_by_group(e, vectors, groups, other)

@dataclass(frozen=True)
class Guarantee:
    """The concept's own linear probe before and after erasure (:func:`guarantee`).

    Accuracies of the probe fitted on the training rows, on the training and held-out rows;
    ``chance`` is the training rows' majority-class rate, ``chance_held`` the held-out rows'
    rate of that class (the constant probe's accuracy there). ``loss_after`` is the erased
    probe's mean log-loss on the training rows and ``loss_chance`` the constant probe's (the
    entropy of the training classes, nats): LEACE's guarantee makes them equal, whatever the
    class balance.
    """

    train_before: float
    train_after: float
    held_before: float
    held_after: float
    chance: float
    chance_held: float
    loss_after: float
    loss_chance: float
    n_train: int
    n_held: int

    def table(self) -> pd.DataFrame:
        """One row per split and condition: ``split`` (``train``, ``held``), ``condition``
        (``plain``, ``erased``), ``accuracy``, ``chance``, ``n``."""
        import pandas as pd

        rows = [("train", "plain", self.train_before, self.chance, self.n_train),
                ("train", "erased", self.train_after, self.chance, self.n_train),
                ("held", "plain", self.held_before, self.chance_held, self.n_held),
                ("held", "erased", self.held_after, self.chance_held, self.n_held)]
        return pd.DataFrame(rows, columns=["split", "condition", "accuracy", "chance", "n"])


def guarantee(x_train: ArrayLike, y_train: ArrayLike, x_held: ArrayLike, y_held: ArrayLike,
              eraser: Eraser) -> Guarantee:
    """The concept's linear probe (:func:`ncprobe.stats.standardised_logistic`: standardised
    features, L2 logistic regression, lbfgs: deterministic, so no seed) fitted on the training
    rows before and after ``eraser``, scored on the training and held-out rows.

    With the eraser fitted on these training rows, the erased classes have equal means, so the
    probe's optimum is the constant one (its gradient vanishes at zero weights): its training
    accuracy is the majority-class rate when the classes are unbalanced, and its log-loss the
    classes' entropy. With balanced classes the constant has no majority and the tiny weights
    that rounding leaves decide the predictions; read ``loss_after`` there.
    """
    from sklearn.metrics import accuracy_score, log_loss

    xt = _vectors(x_train, eraser.dim, "guarantee (training rows)")
    xh = _vectors(x_held, eraser.dim, "guarantee (held-out rows)")
    yt = _labels(y_train, len(xt), "guarantee (training rows)")
    yh = _labels(y_held, len(xh), "guarantee (held-out rows)")
    values, counts = np.unique(yt, return_counts=True)
    if len(values) < 2:
        raise _one_label("guarantee (training rows)", values.tolist(), counts.tolist())
    if not len(xh):
        raise ShapeError("guarantee: no held-out rows: give at least one")
    majority = values[int(np.argmax(counts))]
    shares = counts / counts.sum()
    et, eh = eraser.apply(xt), eraser.apply(xh)
    plain, erased = standardised_logistic().fit(xt, yt), standardised_logistic().fit(et, yt)
    return Guarantee(
        train_before=float(accuracy_score(yt, plain.predict(xt))),
        train_after=float(accuracy_score(yt, erased.predict(et))),
        held_before=float(accuracy_score(yh, plain.predict(xh))),
        held_after=float(accuracy_score(yh, erased.predict(eh))),
        chance=float(counts.max() / counts.sum()), chance_held=float(np.mean(yh == majority)),
        loss_after=float(log_loss(yt, erased.predict_proba(et), labels=erased.classes_)),
        loss_chance=float(-(shares * np.log(shares)).sum()),
        n_train=len(xt), n_held=len(xh))
