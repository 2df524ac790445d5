"""Statistics: Spearman's rho with its p-value, significance, seeded bootstrap intervals.

* :func:`spearman` drops pairs with a NaN and returns ``scipy.stats.spearmanr``'s rho
  (average ranks for ties) and two-sided p-value (Student's t with ``n - 2`` degrees of
  freedom). Fewer than three pairs or a constant variable give NaN.
* :func:`bootstrap_spearman` and :func:`bootstrap_mean` give percentile intervals from
  ``n_boot`` resamples drawn by ``numpy.random.default_rng(seed)``: the same inputs and
  seed give the same interval on every run.

The bootstrap of rho is computed from resample *counts* rather than by ranking every
resample (no library offers this; ``scipy.stats.bootstrap`` re-ranks each resample, which
costs a sort per resample and made the analysis, not the model, the cost of a rerun). A
resample is a vector ``c`` of how often each pair was drawn. The average rank, within the
resample, of a value ``v`` is ``(#drawn values < v) + (#drawn values == v + 1) / 2``, which
follows from the counts summed over the groups of equal values in the original order, ties
included. Spearman's rho of the resample is then the Pearson correlation of those ranks
with each pair weighted by its count: the same number as ranking the resampled arrays
explicitly (the tests check it against an explicit loop with scipy), with no sort per
resample.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

#: Cells with p <= ALPHA are significant (tables show the others as "-").
ALPHA = 0.05
N_BOOT = 1000


@dataclass(frozen=True)
class Correlation:
    rho: float
    p: float
    n: int

    @property
    def significant(self) -> bool:
        return bool(self.p <= ALPHA)


def _paired(x, y) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(
            f"spearman needs two 1-d arrays of one length, got {x.shape} and {y.shape}")
    ok = ~(np.isnan(x) | np.isnan(y))
    return x[ok], y[ok]


def spearman(x, y) -> Correlation:
    """Spearman's rho between ``x`` and ``y`` with its two-sided p-value.

    >>> c = spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7])
    >>> round(c.rho, 4), c.n
    (0.8208, 5)
    """
    from scipy.stats import spearmanr

    x, y = _paired(x, y)
    n = len(x)
    if n < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return Correlation(math.nan, math.nan, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on exact +-1; the values are right
        res = spearmanr(x, y)
    return Correlation(float(res.statistic), float(res.pvalue), n)


@lru_cache(maxsize=32)
def _resample_counts(n: int, n_boot: int, seed: int) -> np.ndarray:
    """``(n_boot, n)`` counts: how often each of ``n`` items is drawn in each resample.

    The draws are ``default_rng(seed).integers(0, n, (n_boot, n))``, the same resamples as
    indexing the data with that matrix; read-only because it is cached.
    """
    idx = _resamples(n, n_boot, seed)
    flat = idx + (np.arange(n_boot) * n)[:, None]
    counts = np.bincount(flat.ravel(), minlength=n_boot * n).reshape(n_boot, n)
    counts = counts.astype(np.float64)
    counts.flags.writeable = False
    return counts


@lru_cache(maxsize=8)
def _resamples(n: int, n_boot: int, seed: int) -> np.ndarray:
    """The ``(n_boot, n)`` resample indices of ``default_rng(seed)`` (cached, read-only)."""
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    idx.flags.writeable = False
    return idx


@lru_cache(maxsize=8)
def _resample_ranks(data: bytes, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Centred average ranks within each resample of every original item, and their weighted
    sum of squares per resample (``(n_boot, n)`` and ``(n_boot,)``).

    Cached by value: the gold scores are ranked once for every measure correlated with them.
    """
    x = np.frombuffer(data, dtype=np.float64)
    n = len(x)
    counts = _resample_counts(n, n_boot, seed)
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    new = np.r_[True, xs[1:] != xs[:-1]]                   # first item of each tie group
    last = np.r_[np.flatnonzero(new)[1:], n] - 1            # last item of each tie group
    upto = np.cumsum(counts[:, order], axis=1)[:, last]    # drawn with a value <= the group's
    below = np.concatenate([np.zeros((n_boot, 1)), upto[:, :-1]], axis=1)
    ranks = np.empty((n_boot, n))
    # every drawn copy of a group shares the mean of the ranks below+1 .. upto; the weighted
    # mean rank of any resample is (n + 1) / 2, as for any ranking of n values
    ranks[:, order] = ((below + upto + 1.0) / 2.0 - (n + 1.0) / 2.0)[:, np.cumsum(new) - 1]
    ss = np.einsum("ij,ij,ij->i", counts, ranks, ranks)
    ranks.flags.writeable = False
    ss.flags.writeable = False
    return ranks, ss


def bootstrap_spearman(x, y, *, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95
                       ) -> tuple[float, float]:
    """Percentile bootstrap interval of Spearman's rho (pairs resampled with replacement)."""
    x, y = _paired(x, y)
    n = len(x)
    if n < 3 or n_boot < 1:
        return (math.nan, math.nan)
    ra, sa = _resample_ranks(x.tobytes(), n_boot, seed)
    rb, sb = _resample_ranks(y.tobytes(), n_boot, seed)
    cov = np.einsum("ij,ij,ij->i", _resample_counts(n, n_boot, seed), ra, rb)
    den = np.sqrt(sa * sb)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(den > 0, cov / den, np.nan)
    return _percentiles(np.clip(rho, -1.0, 1.0), level)


def bootstrap_mean(x, *, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95
                   ) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``x`` (NaN dropped)."""
    x = np.asarray(x, dtype=np.float64)
    x = x[~np.isnan(x)]
    if len(x) < 2 or n_boot < 1:
        return (math.nan, math.nan)
    means = x[_resamples(len(x), n_boot, seed)].mean(1)
    return _percentiles(means, level)


def _percentiles(values: np.ndarray, level: float) -> tuple[float, float]:
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return (math.nan, math.nan)
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(values, [tail, 100.0 - tail])
    return (float(lo), float(hi))
