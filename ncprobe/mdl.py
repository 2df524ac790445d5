"""Minimum description length of a probe by online code (Voita & Titov 2020,
"Information-Theoretic Probing with Minimum Description Length"): how many bits it takes to
transmit a probe's labels given its features, against the uniform code that ignores them.
It is what a probe's accuracy leaves open when the accuracy depends on the regulariser: a
concept that is easy to extract compresses the labels early, from few rows.

**The online code** (:func:`online_code`). The ``n`` rows are put in a seeded random order
(``numpy.random.default_rng(seed).permutation(n)``) and cut at the block ends
:func:`block_ends` gives: ``0 < t_1 < t_2 < ... < t_S = n``. The first block (rows ``1 ..
t_1`` of that order) is sent with the **uniform code**, ``log2 K`` bits a row (``K`` the number
of classes). Each later block (rows ``t_{i-1} + 1 .. t_i``) is sent with a model fitted on all
the rows before it (``1 .. t_{i-1}``): a row costs ``-log2 p(y | x)`` bits, ``p`` that model's
probability of the row's own label. The online codelength is the sum of all rows' costs; the
uniform codelength is ``n log2 K``; **compression** is uniform / online (above 1: the features
tell something about the labels that the model can learn; about 1 or below: nothing learnable).

**Block ends.** At the usual fractions of the rows, :data:`BLOCK_PERCENTS`: 0.1, 0.2, 0.4, 0.8,
1.6, 3.2, 6.25, 12.5, 25, 50 and 100 percent. A fraction ``f`` percent of ``n`` rows ends its
block at ``ceil(n f / 100)`` rows (rounded up, computed in exact fractions so that no float
rounding can move an end: 6.25 % of 16 rows is exactly 1 row, of 1000 rows 62.5, so 63), so
every end is at least one row and the last is ``n``.
For small ``n`` several fractions give the same end (with ``n = 20``: 1, 1, 1, 1, 1, 1, 2, 3,
5, 10, 20); equal ends are merged into one (the ends kept are the distinct values, in order:
1, 2, 3, 5, 10, 20), so no block is empty, and the first block always holds at least one row.

**A class missing before a block.** A model fitted on earlier rows that lack one of the ``K``
classes (at ``t_1 = 1`` always: one row holds one class) would give that class no probability
at all, and a classifier cannot be fitted on a single class. Such a block is sent with the
uniform code, like the first block, and counted: :attr:`OnlineCode.uniform_blocks` names every
block so coded beyond the first (never silently: a result with many such blocks says the
classes are rare for the rows given). The rule is that every one of the ``K`` classes must
occur in the earlier rows; a block whose earlier rows hold all ``K`` is always coded by its
model.

**The model** is the caller's: a factory of unfitted scikit-learn-style classifiers
(:class:`Classifier`: ``fit(X, y)``, ``predict_proba(X)`` and ``classes_``), called once per
block. This shared module cannot name a probe's classifier (shared modules import no probe's
package), so the probes pass theirs: NCC its all-measure classifier,
:func:`ncprobe.ncc.classify.logistic` (:func:`ncprobe.stats.standardised_logistic`, the
linear probe every probe shares, with ``C = 1``), AStitch its linear probe,
:func:`ncprobe.astitch.linear.classifier` with the ``C`` chosen on dev. The labels reach the
model as class indices ``0 .. K-1`` in the order of
``classes`` (sorted distinct labels by default). Fits that stop at an iteration limit
(scikit-learn's ``ConvergenceWarning``) are counted and warned about once per code. A
scikit-learn ``LogisticRegression`` (alone or last in a ``Pipeline``) has its probabilities
taken in logs from its decision function (log-sigmoid, log-softmax: the same probabilities as
its ``predict_proba``), so a row far outside a tiny block's standardised training rows, whose
probability ``predict_proba`` rounds to 0, still costs its finite (large) number of bits. Any
other model's ``predict_proba`` is used as it is, and a row's label probability of 0 makes the
code infinite: that is an error, not a row dropped.

**Intervals over the probe's unit** (:func:`codelength_interval`): a cluster bootstrap of the
per-row costs. The groups (each row's unit: an AStitch expression, an NCC item) are sorted;
each resample draws as many groups as there are, with replacement
(:func:`ncprobe.stats.resample_counts`: ``default_rng(seed).integers(0, G, (n_boot, G))``),
each drawn group bringing all its rows and their costs. A resample's codelength is the sum of
its rows' costs, its uniform codelength ``log2 K`` times its rows, its compression the ratio;
the interval is the percentile interval of those. The models are not refitted in a resample:
the interval is that of the rows coded, for the sequence of models fitted once.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .config import N_BOOT
from .errors import UsageError
from .stats import one_blas_thread, resample_counts

#: The block ends, in percent of the rows (Voita & Titov 2020's online code).
BLOCK_PERCENTS: tuple[str, ...] = ("0.1", "0.2", "0.4", "0.8", "1.6", "3.2", "6.25", "12.5",
                                   "25", "50", "100")
#: The coverage of :func:`codelength_interval`'s percentile intervals.
LEVEL = 0.95


class Classifier(Protocol):
    """What the model factory makes: an unfitted classifier in scikit-learn's manner."""

    classes_: Any

    def fit(self, X: np.ndarray, y: np.ndarray) -> Any: ...

    def predict_proba(self, X: np.ndarray) -> Any: ...


@dataclass(frozen=True)
class OnlineCode:
    """:func:`online_code`'s result.

    Attributes:
        bits: the online codelength in bits (the sum of :attr:`costs`).
        uniform_bits: the uniform codelength, ``n log2 K``.
        compression: ``uniform_bits / bits``.
        costs: ``(n,)``: each row's cost in bits, in the rows' given order (not the shuffled
            one), so callers can resample them.
        block: ``(n,)``: the index of the block that sent each row (0: the first, uniform).
        ends: the block ends ``t_1 < ... < t_S = n`` (rows of the shuffled order).
        uniform_blocks: the blocks after the first sent with the uniform code because the
            rows before them lacked a class.
        classes: the ``K`` classes, in the order of the class indices the model was given.
        order: ``(n,)``: the shuffled order (row ``order[j]`` was sent ``j``-th).
        stopped: the fits that stopped at the model's iteration limit.
    """

    bits: float
    uniform_bits: float
    compression: float
    costs: np.ndarray
    block: np.ndarray
    ends: tuple[int, ...]
    uniform_blocks: tuple[int, ...]
    classes: tuple[Any, ...]
    order: np.ndarray
    stopped: int = 0

    @property
    def n(self) -> int:
        """The number of rows coded."""
        return len(self.costs)


@dataclass(frozen=True)
class CodeInterval:
    """:func:`codelength_interval`'s result: percentile intervals of the codelength (bits)
    and of the compression over resamples of the groups (NaN with ``n_boot = 0`` or fewer
    than two groups)."""

    bits_low: float
    bits_high: float
    compression_low: float
    compression_high: float
    n_groups: int
    n_boot: int
    level: float


def block_ends(n: int) -> tuple[int, ...]:
    """The distinct block ends of ``n`` rows: ``ceil(n f / 100)`` for each ``f`` of
    :data:`BLOCK_PERCENTS` (exact), equal ends merged, ascending; the last is ``n``.

    >>> block_ends(20)
    (1, 2, 3, 5, 10, 20)

    Raises:
        UsageError: ``n`` is not a whole number >= 2.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise UsageError(f"the online code needs at least 2 rows, got n={n!r}")
    ends = {math.ceil(int(n) * Fraction(f) / 100) for f in BLOCK_PERCENTS}
    return tuple(sorted(ends))


def _features(X: ArrayLike) -> np.ndarray:
    matrix = np.asarray(X, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if matrix.ndim != 2:
        raise UsageError(f"the features must be a (rows, features) matrix, got shape "
                         f"{matrix.shape}")
    bad = int((~np.isfinite(matrix).all(axis=1)).sum()) if matrix.size else 0
    if bad:
        raise UsageError(f"the features: {bad} of {len(matrix)} rows hold a NaN or infinite "
                         "value; drop or repair those rows before computing the codelength")
    return matrix


def _label_codes(y: ArrayLike, classes: Sequence[Any] | None, n: int
                 ) -> tuple[np.ndarray, tuple[Any, ...]]:
    values = np.asarray(y, dtype=object).ravel()
    if len(values) != n:
        raise UsageError(f"the features hold {n} rows but the labels {len(values)}: give one "
                         "label per row")
    missing = int(pd.isna(values).sum())
    if missing:
        raise UsageError(f"{missing} of {n} labels are missing (None or NaN): drop those rows "
                         "or give them a class")
    if classes is None:
        classes = sorted(set(values.tolist()))
    ordered = tuple(classes)
    if len(set(ordered)) != len(ordered):
        raise UsageError(f"the classes repeat a class: {ordered!r}")
    if len(ordered) < 2:
        raise UsageError(f"the labels hold {len(ordered)} class(es) ({ordered!r}); a code "
                         "that learns needs at least 2 classes")
    index = {c: i for i, c in enumerate(ordered)}
    unknown = sorted({str(v) for v in values if v not in index})
    if unknown:
        raise UsageError(f"labels outside the classes {ordered!r}: "
                         f"{', '.join(repr(u) for u in unknown[:5])}")
    return np.fromiter((index[v] for v in values), dtype=np.int64, count=n), ordered


def online_code(X: ArrayLike, y: ArrayLike, model: Callable[[], Classifier], *, seed: int = 0,
                classes: Sequence[Any] | None = None) -> OnlineCode:
    """The online codelength of the labels ``y`` given the features ``X`` (the module says how).

    Args:
        X: ``(n, p)`` features (or ``(n,)``: one feature), one row per label.
        y: the ``n`` labels.
        model: a factory of unfitted classifiers (:class:`Classifier`), called once per block.
        seed: the seed of the rows' order.
        classes: the ``K`` classes (default: the distinct labels, sorted); the uniform code is
            ``log2 K`` bits a row.

    Returns:
        :class:`OnlineCode`: the codelength, the uniform codelength, the compression, each
        row's cost, the blocks.

    Raises:
        UsageError: fewer than 2 rows, features and labels of different lengths, a NaN or
            infinite feature, a missing label, fewer than 2 classes, a label outside
            ``classes``.
        ValueError: the model gives a row's label probability 0 (the code would be infinite).
    """
    from sklearn.exceptions import ConvergenceWarning

    matrix = _features(X)
    n = len(matrix)
    ends = block_ends(n)
    codes, ordered = _label_codes(y, classes, n)
    k = len(ordered)
    uniform = math.log2(k)
    order = np.random.default_rng(seed).permutation(n)
    xs, ys = matrix[order], codes[order]
    cost = np.full(n, uniform)          # in the shuffled order; a block a model sends replaces
    block = np.zeros(n, dtype=np.int64)
    uniform_blocks, stopped = [], 0
    with one_blas_thread():
        for i in range(1, len(ends)):
            start, end = ends[i - 1], ends[i]
            block[start:end] = i
            if len(np.unique(ys[:start])) < k:
                uniform_blocks.append(i)
                continue
            fitted = model()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                fitted.fit(xs[:start], ys[:start])
            for w in caught:
                if issubclass(w.category, ConvergenceWarning):
                    stopped += 1
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            logp = _log_proba(fitted, xs[start:end])
            column = {int(c): j for j, c in enumerate(np.asarray(fitted.classes_))}
            own = logp[np.arange(end - start), [column[int(c)] for c in ys[start:end]]]
            if not np.isfinite(own).all():
                raise ValueError(f"block {i} (rows {start + 1}-{end} of the shuffled order): the "
                                 f"model gives {int((~np.isfinite(own)).sum())} row(s) their "
                                 "label probability 0, an infinite code; use a model whose "
                                 "probabilities stay positive (a regularised one)")
            cost[start:end] = -own / math.log(2.0)
    if stopped:
        warnings.warn(f"{stopped} of the online code's fits stopped at the model's iteration "
                      "limit before converging; their probabilities are the last iterate's",
                      ConvergenceWarning, stacklevel=2)
    costs, blocks = np.empty(n), np.empty(n, dtype=np.int64)
    costs[order], blocks[order] = cost, block
    bits = float(cost.sum())
    return OnlineCode(bits, n * uniform, n * uniform / bits, costs, blocks, ends,
                      tuple(uniform_blocks), ordered, order, stopped)


def codelength_interval(code: OnlineCode, groups: ArrayLike | Sequence[Any], *,
                        n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL
                        ) -> CodeInterval:
    """Percentile intervals of the codelength and the compression by a cluster bootstrap over
    the groups (the module says how).

    Args:
        code: an :func:`online_code` result.
        groups: each row's group (the probe's unit), in the rows' given order.
        n_boot: the resamples of the groups (0: no interval, NaN).
        seed: the seed of the draws.
        level: the coverage of the intervals.

    Raises:
        UsageError: groups of another length than the rows, a missing group (None or NaN), a
            bad ``n_boot`` or ``level``.
    """
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise UsageError(f"n_boot must be a whole number >= 0 (0: no intervals), not {n_boot!r}")
    if not 0.0 < level < 1.0:
        raise UsageError(f"level must lie strictly between 0 and 1 (e.g. 0.95), not {level!r}")
    values = np.asarray(groups, dtype=object).ravel()
    if len(values) != code.n:
        raise UsageError(f"{len(values)} groups for {code.n} rows: give each row its group "
                         "(its unit, e.g. the expression)")
    missing = int(pd.isna(values).sum())
    if missing:
        raise UsageError(f"{missing} of {code.n} rows have no group (None or NaN): give every "
                         "row its unit")
    try:
        names, inverse = np.unique(values, return_inverse=True)
    except TypeError:
        raise UsageError("the groups mix types that do not sort together (text and numbers): "
                         "give every row's group as one type") from None
    g = len(names)
    nan = math.nan
    if n_boot == 0 or g < 2:
        return CodeInterval(nan, nan, nan, nan, g, int(n_boot), level)
    group_bits = np.bincount(inverse, weights=code.costs, minlength=g)
    group_rows = np.bincount(inverse, minlength=g).astype(np.float64)
    counts = resample_counts(g, int(n_boot), seed)
    bits = counts @ group_bits
    compression = counts @ group_rows * math.log2(len(code.classes)) / bits
    tail = (1.0 - level) / 2.0 * 100.0
    b_lo, b_hi = np.percentile(bits, [tail, 100.0 - tail])
    c_lo, c_hi = np.percentile(compression, [tail, 100.0 - tail])
    return CodeInterval(float(b_lo), float(b_hi), float(c_lo), float(c_hi), g, int(n_boot),
                        level)


def _log_proba(fitted: Classifier, X: np.ndarray) -> np.ndarray:
    """``(rows, classes)`` natural-log probabilities. A logistic regression (alone or last in a
    ``Pipeline``) gives them from its decision function, as its ``predict_proba`` does (the
    logistic function for two classes, the softmax for more) but in logs: a probability
    ``predict_proba`` rounds to 0 (a row far out after standardising on a few rows) keeps its
    finite cost. Any other model: the log of ``predict_proba``."""
    from scipy.special import log_expit, log_softmax
    from sklearn.linear_model import LogisticRegression

    steps = getattr(fitted, "steps", None)
    final = steps[-1][1] if steps else fitted
    if isinstance(final, LogisticRegression):
        d = np.asarray(fitted.decision_function(X), dtype=np.float64)  # type: ignore[attr-defined]
        if d.ndim == 1:                               # two classes: d is class 1's logit
            return np.column_stack([log_expit(-d), log_expit(d)])
        return np.asarray(log_softmax(d, axis=1), dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(fitted.predict_proba(X), dtype=np.float64))
