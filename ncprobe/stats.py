"""Statistics: Spearman's rho with its p-value, significance, seeded bootstrap intervals.

No scipy at run time: ranks, the t-distribution p-value (through the
regularised incomplete beta function) and the bootstrap are implemented here
with numpy, and the tests check them against scipy.

* :func:`spearman` drops pairs with a NaN, ranks with average ranks for ties,
  and takes the two-sided p-value from Student's t with ``n - 2`` degrees of
  freedom (the same as ``scipy.stats.spearmanr``). Fewer than three pairs or a
  constant variable give NaN.
* :func:`bootstrap_spearman` and :func:`bootstrap_mean` give percentile
  intervals from ``n_boot`` resamples drawn by ``numpy.random.default_rng(seed)``:
  the same inputs and seed give the same interval on every run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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


def rankdata(x) -> np.ndarray:
    """Average ranks (1-based) of a 1-d array without NaN: ties share the mean of their ranks."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    # each run of equal values gets the mean of the positions it occupies
    starts = np.r_[True, xs[1:] != xs[:-1]]
    run = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], len(xs)] - 1
    avg = (first + last) / 2.0 + 1.0
    ranks = np.empty(len(x))
    ranks[order] = avg[run]
    return ranks


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    a = a - a.mean()
    b = b - b.mean()
    den = math.sqrt(float(a @ a) * float(b @ b))
    if den == 0.0:
        return math.nan
    return float(np.clip((a @ b) / den, -1.0, 1.0))


def _paired(x, y) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"spearman needs two 1-d arrays of one length, got {x.shape} and {y.shape}")
    ok = ~(np.isnan(x) | np.isnan(y))
    return x[ok], y[ok]


def spearman(x, y) -> Correlation:
    """Spearman's rho between ``x`` and ``y`` with its two-sided p-value.

    >>> c = spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7])
    >>> round(c.rho, 4), c.n
    (0.8208, 5)
    """
    x, y = _paired(x, y)
    n = len(x)
    if n < 3:
        return Correlation(math.nan, math.nan, n)
    rho = _pearson(rankdata(x), rankdata(y))
    return Correlation(rho, rho_pvalue(rho, n), n)


def rho_pvalue(rho: float, n: int) -> float:
    """Two-sided p-value of a correlation ``rho`` over ``n`` pairs (t with n-2 df)."""
    if math.isnan(rho) or n < 3:
        return math.nan
    df = n - 2
    if abs(rho) >= 1.0:
        return 0.0
    t2 = rho * rho * df / ((1.0 - rho) * (1.0 + rho))
    return betainc(df / 2.0, 0.5, df / (df + t2))


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), by its continued fraction."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    # the continued fraction converges fast for x < (a + 1) / (a + b + 2); use symmetry otherwise
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - betainc(b, a, 1.0 - x)
    return math.exp(log_front) * _beta_cf(a, b, x) / a


def _beta_cf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _resamples(n: int, n_boot: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def _row_ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks within each row of a 2-d array of finite values."""
    b, n = values.shape
    # order-preserving shift that puts every row above the one before
    lo, hi = values.min(), values.max()
    span = (hi - lo) + 1.0
    shifted = (values - lo) + np.arange(b)[:, None] * span
    flat = np.sort(shifted, axis=None)
    base = np.arange(b)[:, None] * n
    less = np.searchsorted(flat, shifted, side="left") - base
    less_eq = np.searchsorted(flat, shifted, side="right") - base
    return (less + less_eq + 1) / 2.0


def bootstrap_spearman(x, y, *, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95
                       ) -> tuple[float, float]:
    """Percentile bootstrap interval of Spearman's rho (pairs resampled with replacement)."""
    x, y = _paired(x, y)
    n = len(x)
    if n < 3 or n_boot < 1:
        return (math.nan, math.nan)
    # ranks are invariant under the resampling's order-preserving map, so resample the ranks:
    # equal values keep equal ranks and row ranks stay exact in float64
    idx = _resamples(n, n_boot, seed)
    ra = _row_ranks(rankdata(x)[idx])
    rb = _row_ranks(rankdata(y)[idx])
    ra -= ra.mean(1, keepdims=True)
    rb -= rb.mean(1, keepdims=True)
    den = np.sqrt((ra * ra).sum(1) * (rb * rb).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(den > 0, (ra * rb).sum(1) / den, np.nan)
    return _percentiles(rho, level)


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
