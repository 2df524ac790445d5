"""The NCC probe's classifiers: an item's class (``NC``, ``PC``, ``C``) from its measures,
cross-validated over items.

* :class:`CutPoints`, the **single-measure** classifier: two cut points ``low <= high`` on one
  measure ``x``. *Rising* (the measure grows with compositionality): ``NC`` where
  ``x < low``, ``C`` where ``x >= high``, ``PC`` in between. *Falling*: ``C`` below ``low``,
  ``NC`` at or above ``high``. Fitted by exhaustive search: the candidate cut points are the
  midpoints between consecutive distinct training values, plus ``-inf`` and ``+inf`` (so a
  class may be left empty: ``low = high`` empties ``PC``); every pair ``low <= high`` of
  candidates in both directions is scored by its training accuracy at once, from cumulative
  class counts (``O(m^2)`` numpy for ``m`` distinct values, no loop). **Ties** (pairs of
  equal training accuracy) go, in this order, to (1) the pair closest to the class-balanced
  split: the least ``|below(low) - n_low| + |below(high) - (n_low + n_PC)|``, where
  ``below(t)`` is the number of training items under ``t`` and ``n_low`` the number of
  training items of the direction's lowest class (``NC`` rising, ``C`` falling): where the
  data cannot decide, the cut points sit where a perfectly ordered measure would put them;
  (2) rising before falling; (3) the smaller ``low``, then the smaller ``high``. The fit is
  deterministic and depends on the training items only.
* the **all-measure** classifier (:func:`logistic`): scikit-learn's
  ``LogisticRegression(solver="lbfgs")`` (multinomial for three classes: scikit-learn's only
  multiclass mode for lbfgs since 1.5, its ``"auto"`` choice before) with an L2 penalty of
  fixed strength ``C`` (:data:`C_REG`, 1.0: fixed in advance, never tuned) on features
  standardised by a ``StandardScaler`` in the same ``Pipeline``, so the scaling, too, is fitted
  on the training folds only. ``max_iter`` (:data:`MAX_ITER`, 10,000) is far above what the
  strictly convex L2 problem on standardised features needs; should a fit still stop there,
  scikit-learn's per-fit warnings are gathered into one ``ConvergenceWarning`` that counts the
  fits (the predictions are kept: the last iterate of lbfgs).
* :func:`cross_validated`: stratified ``k``-fold cross-validation (``StratifiedKFold(k,
  shuffle=True, random_state=seed + r)``) repeated for ``r = 0 .. R-1``; every item is
  predicted once per repeat by a classifier that never saw it, and its prediction is the modal
  one over the ``R`` repeats (:func:`modal`); :func:`repeated` keeps each repeat's
  predictions (the accuracy's spread over the repeats).
* :func:`nested_selected`: the choice of the best classifier (view, level, measure), made
  inside each outer training fold by an inner cross-validation and scored on the outer test
  fold: the accuracy of the selection procedure, never of a row chosen on its test items.

* :func:`codelength`, the classifiers' **minimum description length** (``--mdl``): the online
  code (:func:`ncprobe.mdl.online_code`, Voita & Titov 2020) of the items' gold classes given a
  classifier's features, by :func:`logistic` (the ``C`` of the run) for both kinds: for
  ``all`` that is the classifier itself; ``single`` has no probabilities (two cut points),
  so its features are coded by the same logistic regression on its one measure, the
  probabilistic counterpart of two cut points (a multinomial logistic regression on one
  feature splits the line into at most three ordered intervals, as the cut points do). Its
  intervals are a cluster bootstrap over items (:func:`ncprobe.mdl.codelength_interval`; one
  item per compound, so items and compounds are the same unit).

Items with a NaN (or infinite) feature are refused, not dropped: which items a row is scored on
is the caller's decision, made explicitly and reported.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike

from ..config import N_BOOT
from . import NCC_CLASSES

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline

#: ``single``: :class:`CutPoints` on one measure; ``all``: :func:`logistic` on every measure.
Kind = Literal["single", "all"]
KINDS: tuple[str, ...] = ("single", "all")

FOLDS = 10
REPEATS = 5
#: The inverse L2 regularisation strength of the all-measure classifier, fixed in advance.
C_REG = 1.0
MAX_ITER = 10_000


def _codes(labels: Sequence[str] | ArrayLike, classes: Sequence[str], what: str) -> np.ndarray:
    """Each label's index in ``classes`` (ints); a label outside them is a ValueError."""
    values = np.asarray(labels, dtype=object).ravel()
    index = {c: i for i, c in enumerate(classes)}
    unknown = sorted({str(v) for v in values if v not in index})
    if unknown:
        raise ValueError(f"{what} holds labels outside the classes {tuple(classes)}: "
                         f"{', '.join(repr(u) for u in unknown[:5])}")
    return np.fromiter((index[v] for v in values), dtype=np.int64, count=len(values))


def _check_classes(classes: Sequence[str]) -> tuple[str, str, str]:
    if len(classes) != 3 or len(set(classes)) != 3:
        raise ValueError(f"the cut-point classifier needs three distinct classes ordered from "
                         f"the least to the most compositional, got {tuple(classes)!r}")
    return (classes[0], classes[1], classes[2])


def _finite(x: ArrayLike, what: str) -> np.ndarray:
    values = np.asarray(x, dtype=np.float64)
    bad = int((~np.isfinite(values)).sum())
    if bad:
        raise ValueError(f"{what}: {bad} of {values.size} values are NaN or infinite; drop "
                         f"or handle those items before classifying")
    return values


@dataclass(frozen=True)
class CutPoints:
    """A fitted single-measure classifier: two cut points on one measure.

    Attributes:
        low: the lower cut point (``-inf``: nothing falls below it).
        high: the upper cut point, ``>= low`` (``+inf``: nothing reaches it).
        rising: True: ``classes[0]`` (``NC``) below ``low``, ``classes[2]`` (``C``) at or
            above ``high``; False: the reverse.
        classes: the three classes from the least to the most compositional.
        train_accuracy: the fraction of the training items the cut points classify right.
    """

    low: float
    high: float
    rising: bool
    classes: tuple[str, str, str] = ("NC", "PC", "C")
    train_accuracy: float = math.nan

    @classmethod
    def fit(cls, x: ArrayLike, y: Sequence[str] | ArrayLike,
            classes: Sequence[str] = NCC_CLASSES) -> CutPoints:
        """The cut points of greatest training accuracy on ``x`` (the module says how ties
        go).

        Raises:
            ValueError: no items, ``x`` and ``y`` of different lengths, a NaN or infinite
                ``x``, or a label outside ``classes``.
        """
        ordered = _check_classes(classes)
        values = _finite(x, "CutPoints.fit").ravel()
        codes = _codes(y, ordered, "CutPoints.fit's labels")
        if len(values) != len(codes) or not len(values):
            raise ValueError(f"CutPoints.fit needs one label per value and at least one item, "
                             f"got {len(values)} values and {len(codes)} labels")
        low, high, rising, correct = _fit_cuts(values, codes)
        return cls(low, high, rising, ordered, correct / len(values))

    def predict(self, x: ArrayLike) -> np.ndarray:
        """The class of each value of ``x`` (an object array of the class labels).

        Raises:
            ValueError: a NaN or infinite value.
        """
        values = _finite(x, "CutPoints.predict")
        return np.array(self.classes, dtype=object)[_predict_codes(values, self.low, self.high,
                                                                   self.rising)]


def _predict_codes(x: np.ndarray, low: float, high: float, rising: bool) -> np.ndarray:
    """Class indices (0, 1, 2 from the least compositional) of the values ``x``."""
    first, last = (0, 2) if rising else (2, 0)
    return np.where(x < low, first, np.where(x >= high, last, 1))


def _fit_cuts(x: np.ndarray, codes: np.ndarray) -> tuple[float, float, bool, int]:
    """``(low, high, rising, training items right)`` of the exhaustive search.

    With the ``m`` distinct training values sorted, candidate ``i`` (``0 .. m``) has exactly
    the first ``i`` distinct values below it: ``-inf``, the ``m - 1`` midpoints, ``+inf``.
    ``cum[i, k]`` counts the items of class ``k`` below candidate ``i``, so the pair
    ``(i, j)``, ``i <= j``, rising, gets right ``cum[i, NC] + (cum[j, PC] - cum[i, PC]) +
    (n_C - cum[j, C])`` items: a term ``gain_low[i]`` plus a term ``gain_high[j]``. The best
    score is the maximum over ``j`` of ``gain_high[j]`` plus the running maximum of
    ``gain_low`` up to ``j``; only the pairs reaching it (an outer sum compared with it, in
    integers) are then ranked by the tie rule.
    """
    values, group = np.unique(x, return_inverse=True)
    m = len(values)
    per_value = np.zeros((m, 3), dtype=np.int64)
    np.add.at(per_value, (group.ravel(), codes), 1)
    cum = np.vstack([np.zeros((1, 3), dtype=np.int64), np.cumsum(per_value, axis=0)])
    total = cum[-1]
    below = cum.sum(axis=1)
    gains = []
    for lowest, highest in ((0, 2), (2, 0)):                           # rising, falling
        gains.append((cum[:, lowest] - cum[:, 1],
                      cum[:, 1] - cum[:, highest] + total[highest]))
    best = max(int((np.maximum.accumulate(low) + high).max()) for low, high in gains)
    # the pairs (direction, i, j) that reach the best score, in that lexicographic order
    found = []
    for number, (low, high) in enumerate(gains):
        i, j = np.nonzero(np.add.outer(low, high) == best)
        keep = i <= j
        found.append((np.full(int(keep.sum()), number), i[keep], j[keep]))
    direction, i, j = (np.concatenate(parts) for parts in zip(*found, strict=True))
    lowest = np.where(direction == 0, total[0], total[2])
    distance = np.abs(below[i] - lowest) + np.abs(below[j] - lowest - total[1])
    pick = int(np.argmin(distance))                                    # the first of the least
    # halves first: (a + b) / 2 could overflow; where the midpoint rounds onto the lower value
    # (adjacent floats) the upper value keeps "first i values below candidate i" true
    mid = values[:-1] / 2.0 + values[1:] / 2.0
    cuts = np.concatenate([[-np.inf], np.where(mid > values[:-1], mid, values[1:]), [np.inf]])
    return float(cuts[i[pick]]), float(cuts[j[pick]]), bool(direction[pick] == 0), best


def logistic(C: float = C_REG, max_iter: int = MAX_ITER) -> Pipeline:
    """The all-measure classifier, unfitted: standardisation, then multinomial logistic
    regression (lbfgs, L2 penalty of inverse strength ``C``):
    :func:`ncprobe.stats.standardised_logistic`."""
    from ..stats import standardised_logistic

    return standardised_logistic(C, max_iter)


#: The columns :func:`codelength` gives, in order.
CODE_COLUMNS: tuple[str, ...] = ("n", "codelength_bits", "bits_low", "bits_high", "uniform_bits",
                                 "compression", "compression_low", "compression_high",
                                 "uniform_blocks", "n_groups")


def codelength(features: ArrayLike, gold: Sequence[str] | ArrayLike, groups: Sequence[str], *,
               seed: int = 0, n_boot: int = N_BOOT, C: float = C_REG, max_iter: int = MAX_ITER,
               classes: Sequence[str] = NCC_CLASSES) -> dict[str, float | int | None]:
    """The online codelength of the gold classes given ``features`` (the module says which
    model), with its intervals over ``groups`` (each item's unit).

    Returns:
        :data:`CODE_COLUMNS`: ``n`` (items), ``codelength_bits`` with its interval
        (``bits_low``, ``bits_high``), ``uniform_bits`` (``n log2 K``), ``compression``
        (uniform / online) with its interval, ``uniform_blocks`` (the blocks after the first
        sent with the uniform code because the items before them lacked a class) and
        ``n_groups``; an interval not computed (``n_boot`` 0) is ``None``.

    Raises:
        UsageError: what :func:`ncprobe.mdl.online_code` and
            :func:`~ncprobe.mdl.codelength_interval` refuse (a NaN feature, too few items).
    """
    from functools import partial

    from ..mdl import codelength_interval, online_code

    code = online_code(features, gold, partial(logistic, C, max_iter), seed=seed,
                       classes=tuple(classes))
    ci = codelength_interval(code, groups, n_boot=n_boot, seed=seed)

    def value(x: float) -> float | None:
        return float(x) if math.isfinite(x) else None

    return {"n": code.n, "codelength_bits": code.bits, "bits_low": value(ci.bits_low),
            "bits_high": value(ci.bits_high), "uniform_bits": code.uniform_bits,
            "compression": code.compression, "compression_low": value(ci.compression_low),
            "compression_high": value(ci.compression_high),
            "uniform_blocks": len(code.uniform_blocks), "n_groups": ci.n_groups}


def modal(predictions: ArrayLike) -> np.ndarray:
    """Each item's modal prediction over repeats.

    Args:
        predictions: ``(R, n)``: repeat ``r``'s prediction of item ``i`` at ``[r, i]``.

    Returns:
        ``(n,)``: the label predicted most often for each item. Ties between labels predicted
        equally often go to the one the earliest repeat predicted: the first repeat's
        prediction when it is among them (``[A, B, B, A, C]`` -> ``A``, ``[A, B, B, C, C]`` ->
        ``B``).
    """
    table = np.asarray(predictions)
    if table.ndim != 2 or table.shape[0] == 0:
        raise ValueError(f"modal needs an (R, n) array with R >= 1, got shape {table.shape}")
    labels, inverse = np.unique(table, return_inverse=True)
    codes = inverse.reshape(table.shape)
    counts = (codes[None, :, :] == np.arange(len(labels))[:, None, None]).sum(axis=1)  # (K, n)
    items = np.arange(table.shape[1])
    is_modal = (counts == counts.max(axis=0))[codes, items]   # (R, n): repeat r's label modal?
    return table[np.argmax(is_modal, axis=0), items]


def cross_validated(features: ArrayLike, gold: Sequence[str] | ArrayLike, kind: Kind, *,
                    folds: int = FOLDS, repeats: int = REPEATS, seed: int = 0,
                    C: float = C_REG, max_iter: int = MAX_ITER,
                    classes: Sequence[str] = NCC_CLASSES) -> np.ndarray:
    """Every item's cross-validated prediction, modal over the repeats.

    Args:
        features: ``(n, p)`` (or ``(n,)`` for one measure), the items in the order of ``gold``;
            ``kind="single"`` takes one measure (``p == 1``): call it once per measure.
        gold: the ``n`` gold classes, each in ``classes``.
        kind: ``single`` (:class:`CutPoints`) or ``all`` (:func:`logistic`).
        folds: ``k`` of the stratified k-fold split.
        repeats: ``R``, the splits drawn with ``random_state = seed + r``, ``r < R``.
        seed: the first split's seed.
        C, max_iter: the all-measure classifier's (unused for ``single``).
        classes: the classes, from the least to the most compositional.

    Returns:
        ``(n,)`` object array: each item's predicted class (:func:`modal` over the repeats of
        :func:`repeated`).

    Raises:
        ValueError: an unknown ``kind``, several measures for ``single``, a feature that is
            NaN or infinite (the message counts the items: drop or impute them first), lengths
            that differ, or a gold label outside ``classes``. (More folds than a class has
            items: scikit-learn's ``StratifiedKFold`` only warns, up to the number of items;
            :func:`ncprobe.ncc.probe.run_ncc` refuses such ``folds`` before any work.)
    """
    return modal(repeated(features, gold, kind, folds=folds, repeats=repeats, seed=seed, C=C,
                          max_iter=max_iter, classes=classes))


def repeated(features: ArrayLike, gold: Sequence[str] | ArrayLike, kind: Kind, *,
             folds: int = FOLDS, repeats: int = REPEATS, seed: int = 0, C: float = C_REG,
             max_iter: int = MAX_ITER, classes: Sequence[str] = NCC_CLASSES) -> np.ndarray:
    """``(R, n)`` object array: repeat ``r``'s cross-validated prediction of item ``i`` (the
    arguments and errors of :func:`cross_validated`)."""
    _check_cv(folds, repeats)
    ordered = _check_classes(classes)
    matrix = _matrix(features, kind)
    codes = _gold_codes(gold, ordered, matrix.shape[0])
    from sklearn.model_selection import StratifiedKFold
    from threadpoolctl import threadpool_limits

    fitter = _Fitter(C, max_iter)
    predicted = np.empty((repeats, matrix.shape[0]), dtype=np.int64)
    # one BLAS thread (threadpoolctl comes with scikit-learn): a fit on a few hundred items is
    # over before threads pay off (20x slower with them on a busy 2-core machine), and the
    # order of the sums, hence the last bits of the fit, no longer depends on the core count
    with threadpool_limits(limits=1, user_api="blas"), _checked_once():
        for r in range(repeats):
            split = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed + r)
            for train, test in split.split(matrix, codes):
                predicted[r, test] = fitter(kind, matrix[train], codes[train], matrix[test])
    fitter.warn()
    return np.array(ordered, dtype=object)[predicted]


@dataclass(frozen=True)
class Candidate:
    """One classifier the nested selection may choose: its name (the row's label), its
    features ``(n, p)`` (the items in the order of the gold classes) and its kind."""

    name: str
    features: np.ndarray
    kind: Kind


@dataclass(frozen=True)
class Nested:
    """What :func:`nested_selected` returns.

    Attributes:
        predictions: ``(R, n)`` object array, repeat ``r``'s outer-fold prediction of item
            ``i`` by the classifier chosen on that fold's training items.
        chosen: the name of the candidate chosen in each outer fold, repeat by repeat.
    """

    predictions: np.ndarray
    chosen: tuple[str, ...]

    def counts(self) -> dict[str, int]:
        """How often each candidate was chosen, most often first (ties: first chosen)."""
        from collections import Counter

        return dict(Counter(self.chosen).most_common())


#: The folds of :func:`nested_selected`'s inner cross-validation (the choice inside each outer
#: training fold): five, the usual inner k, half the fits of ten for the same ranking of
#: candidates up to noise (the inner accuracies only order the candidates).
INNER_FOLDS = 5


def nested_selected(candidates: Sequence[Candidate], gold: Sequence[str] | ArrayLike, *,
                    folds: int = FOLDS, repeats: int = REPEATS, seed: int = 0,
                    inner_folds: int = INNER_FOLDS,
                    C: float = C_REG, max_iter: int = MAX_ITER,
                    classes: Sequence[str] = NCC_CLASSES) -> Nested:
    """The selection procedure, cross-validated: nested cross-validation.

    For repeat ``r`` (``r < R``), the items are split as :func:`repeated` splits them
    (``StratifiedKFold(folds, shuffle=True, random_state=seed + r)``). In each outer fold,
    every candidate is scored by an inner stratified ``inner_folds``-fold cross-validation of
    the outer training items only (``random_state=seed + r``, one repeat): its inner accuracy;
    the most accurate candidate (ties: the first in ``candidates``) is fitted on all the outer
    training items and predicts the outer test items. The test items never take part in the
    choice, so the accuracy of these predictions is that of the procedure "choose the best
    view, level and measure, then classify", not of a row chosen on the items it is scored
    on.

    Raises:
        ValueError: no candidate, candidates of other lengths, or what :func:`repeated`
            refuses.
    """
    _check_cv(folds, repeats)
    _check_cv(inner_folds, 1)
    if not candidates:
        raise ValueError("nested_selected needs at least one candidate")
    ordered = _check_classes(classes)
    matrices = [_matrix(c.features, c.kind) for c in candidates]
    n = matrices[0].shape[0]
    if any(m.shape[0] != n for m in matrices):
        raise ValueError("the candidates' features hold different numbers of items")
    codes = _gold_codes(gold, ordered, n)
    from sklearn.model_selection import StratifiedKFold
    from threadpoolctl import threadpool_limits

    fitter = _Fitter(C, max_iter)
    predicted = np.empty((repeats, n), dtype=np.int64)
    chosen = []
    with threadpool_limits(limits=1, user_api="blas"), _checked_once():
        for r in range(repeats):
            outer = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed + r)
            for train, test in outer.split(matrices[0], codes):
                inner = list(StratifiedKFold(n_splits=inner_folds, shuffle=True,
                                             random_state=seed + r).split(train, codes[train]))
                scores = []
                for cand, matrix in zip(candidates, matrices, strict=True):
                    x, y = matrix[train], codes[train]
                    right = sum(int((fitter(cand.kind, x[fit], y[fit], x[held]) == y[held])
                                    .sum()) for fit, held in inner)
                    scores.append(right)
                best = int(np.argmax(scores))                        # the first of the best
                chosen.append(candidates[best].name)
                predicted[r, test] = fitter(candidates[best].kind, matrices[best][train],
                                            codes[train], matrices[best][test])
    fitter.warn()
    return Nested(np.array(ordered, dtype=object)[predicted], tuple(chosen))


def _checked_once():
    """scikit-learn without its checks of every fit's input and parameters: the features were
    checked once (:func:`_matrix`: finite, of one shape) and the parameters are fixed, so
    only the checks' cost goes (a tenth of an NCC run); the fits are the same to the bit."""
    from sklearn import config_context

    return config_context(assume_finite=True, skip_parameter_validation=True)


def _check_cv(folds: int, repeats: int) -> None:
    if folds < 2 or repeats < 1:
        raise ValueError(f"cross-validation needs folds >= 2 and repeats >= 1, got "
                         f"folds={folds}, repeats={repeats}")


def _matrix(features: ArrayLike, kind: str) -> np.ndarray:
    """The features as an ``(n, p)`` float matrix, checked for ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"unknown classifier kind {kind!r}: use one of {', '.join(KINDS)}")
    matrix = np.asarray(features, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if matrix.ndim != 2:
        raise ValueError(f"features must be (n, p), got shape {matrix.shape}")
    n = matrix.shape[0]
    if kind == "single" and matrix.shape[1] != 1:
        raise ValueError(f"the single-measure classifier takes one measure, got "
                         f"{matrix.shape[1]}: call cross_validated once per measure")
    bad = int((~np.isfinite(matrix).all(axis=1)).sum())
    if bad:
        raise ValueError(f"{bad} of {n} items have a NaN or infinite feature: drop or handle "
                         f"those items before cross-validating")
    return matrix


def _gold_codes(gold: Sequence[str] | ArrayLike, classes: Sequence[str], n: int) -> np.ndarray:
    codes = _codes(gold, classes, "gold")
    if len(codes) != n:
        raise ValueError(f"features hold {n} items but gold {len(codes)}")
    return codes


class _Fitter:
    """Fits a classifier of a kind on training items and predicts test items (class codes);
    counts the logistic fits that stopped at ``max_iter``, warned once (:meth:`warn`)."""

    def __init__(self, C: float, max_iter: int) -> None:
        self.C, self.max_iter = C, max_iter
        self.stopped = self.fits = 0

    def __call__(self, kind: str, x_train: np.ndarray, y_train: np.ndarray,
                 x_test: np.ndarray) -> np.ndarray:
        if kind == "single":
            low, high, rising, _ = _fit_cuts(x_train[:, 0], y_train)
            return _predict_codes(x_test[:, 0], low, high, rising)
        from sklearn.exceptions import ConvergenceWarning

        model = logistic(self.C, self.max_iter)
        with warnings.catch_warnings():
            # counted here and warned once for the whole cross-validation
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(x_train, y_train)
        self.fits += 1
        self.stopped += int(np.max(model[-1].n_iter_) >= self.max_iter)
        return model.predict(x_test)

    def warn(self) -> None:
        if self.stopped:
            from sklearn.exceptions import ConvergenceWarning

            warnings.warn(f"{self.stopped} of {self.fits} logistic-regression fits stopped at "
                          f"max_iter={self.max_iter} before converging; their predictions are "
                          "the last iterate's (raise max_iter, or check the features for "
                          "near-duplicates)", ConvergenceWarning, stacklevel=3)
