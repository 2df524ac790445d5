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

Tests (issue 12, "comparisons that are tests"):

* :func:`correct` corrects a family of p-values for multiple comparisons (Holm,
  Benjamini-Hochberg; ``statsmodels``).
* :func:`paired_bootstrap_rho_diff`: the difference of two variables' rhos with one gold on
  the same items, with a paired percentile interval and bootstrap p-value, from the same
  resamples (and the same count-based ranks) as :func:`bootstrap_spearman`.
* :func:`williams_t` (Williams 1959, as Steiger 1980, eq. 7) and :func:`meng_z` (Meng,
  Rosenthal & Rubin 1992): the classical tests of two dependent correlations that share a
  variable, a cross-check of the bootstrap.
* :func:`class_tests`: Kruskal-Wallis across the classes and pairwise Mann-Whitney U with
  rank-biserial effect sizes, the pairs corrected as one family.

:func:`ncprobe.ncimp.comparison.compare` applies the difference tests to two runs' results.

The resolution of resampling p-values (issue 28): a p-value from ``B`` resamples is never
below ``1/(B+1)`` (a sign-flip or permutation test) or ``2/(B+1)`` (the two-sided bootstrap
p of :func:`paired_bootstrap_rho_diff`), and a correction multiplies that floor by up to the
family's size. So every resampling p here comes with a *bound* flag: true when no resample
was as extreme as the data, i.e. the p-value is only the floor and the true p lies below it.

* :func:`correct_bounded` corrects p-values some of which are bounds, and says which
  corrected values are bounds in turn (those the unknown true p's could still lower);
* :func:`resamples_for` and :func:`choose_flips`: how many resamples make the least
  corrected p of a family reach :data:`~ncprobe.significance.FINEST` (0.001, ``***``), with
  :data:`MAX_FLIPS` as the cap where that is cheap (sign flips);
* :func:`sign_flip`: the two-sided sign-flip (randomisation) test of summed cluster
  differences, exact over all ``2^k`` patterns when they are few enough, else over random
  patterns drawn in chunks (memory bounded whatever ``B``), with the bound flags;
* :func:`paired_family`: the one engine of the probes' paired cluster-resampling tests
  (IdioLink's sign flips over idioms, AStitch's swaps over expressions): the resamples chosen
  for the family, each test's p and bound, the family corrected, the resolution warned about.

:func:`cosine` is the row-wise cosine every probe that compares vectors takes (NCIMP's Eq. 2,
AStitch's paraphrase probe).

:func:`ncprobe.significance.warn_resolution` warns where a bound limits a decision.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .config import N_BOOT as N_BOOT  # the one default, kept importable from here
from .schema import CORRECTIONS as CORRECTIONS  # kept importable from here
from .schema import Correction
from .significance import ALPHA, FINEST, check_correction

if TYPE_CHECKING:
    import pandas as pd
    from sklearn.pipeline import Pipeline



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
def resample_counts(n: int, n_boot: int, seed: int) -> np.ndarray:
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
    counts = resample_counts(n, n_boot, seed)
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


def _resample_rhos(x: np.ndarray, y: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """Spearman's rho of ``x`` and ``y`` (NaN-free, one length ``n``) in each of the
    ``(n_boot, n)`` resamples of :func:`_resamples`; NaN where a resample is constant."""
    n = len(x)
    ra, sa = _resample_ranks(x.tobytes(), n_boot, seed)
    rb, sb = _resample_ranks(y.tobytes(), n_boot, seed)
    cov = np.einsum("ij,ij,ij->i", resample_counts(n, n_boot, seed), ra, rb)
    den = np.sqrt(sa * sb)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(den > 0, cov / den, np.nan)
    return np.clip(rho, -1.0, 1.0)


def bootstrap_spearman(x, y, *, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95
                       ) -> tuple[float, float]:
    """Percentile bootstrap interval of Spearman's rho (pairs resampled with replacement)."""
    x, y = _paired(x, y)
    n = len(x)
    if n < 3 or n_boot < 1:
        return (math.nan, math.nan)
    return percentile_interval(_resample_rhos(x, y, n_boot, seed), level)


def bootstrap_mean(x, *, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95
                   ) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``x`` (NaN dropped)."""
    x = np.asarray(x, dtype=np.float64)
    x = x[~np.isnan(x)]
    if len(x) < 2 or n_boot < 1:
        return (math.nan, math.nan)
    means = x[_resamples(len(x), n_boot, seed)].mean(1)
    return percentile_interval(means, level)


def class_separation(values: ArrayLike, classes: Sequence[Any], *, n_boot: int = N_BOOT,
                     seed: int = 0) -> tuple[float, np.ndarray]:
    """How far apart the classes lie in ``values``: the rank effect size of the
    Kruskal-Wallis test, ``eta2_H = (H - k + 1) / (n - k)`` (Tomczak & Tomczak 2014), on the
    ``n`` items, and in each of the ``n_boot`` resamples of :func:`bootstrap_spearman`'s
    draws (``default_rng(seed).integers(0, n, (n_boot, n))``, items resampled whole).

    ``H`` is the tie-corrected statistic, ``(n - 1) sum_j n_j (mean rank_j - mean rank)^2 /
    sum_i (rank_i - mean rank)^2`` (``scipy.stats.kruskal``'s, which the tests check), ``k``
    the classes present. Under no difference between the classes ``H`` is about ``k - 1``,
    so ``eta2_H`` is about 0 (its chance line); 1 is classes fully apart in rank. A
    resample's ranks come from its counts (:func:`_resample_ranks`), not from a sort.

    Returns:
        The items' ``eta2_H`` and the ``(n_boot,)`` resampled ones; NaN where undefined
        (fewer than two classes, every value equal, ``n <= k``).

    Raises:
        ValueError: ``values`` and ``classes`` of different lengths, a NaN value or a
            missing class (drop those items first).
    """
    x = np.asarray(values, dtype=np.float64)
    labels = np.asarray(classes, dtype=object)
    if x.ndim != 1 or labels.shape != x.shape:
        raise ValueError(f"class_separation needs values and classes of one length, got "
                         f"{x.shape} and {labels.shape}")
    if np.isnan(x).any() or any(c is None or c != c for c in labels):
        raise ValueError("class_separation: drop the items without a value or a class first")
    n = len(x)
    kinds, codes = np.unique(labels.astype(str), return_inverse=True)
    onehot = np.eye(len(kinds))[codes]                                     # (n, k)

    def eta2(h: np.ndarray, k: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where((k >= 2) & (n > k), (h - k + 1.0) / (n - k), np.nan)

    point = math.nan
    if len(kinds) >= 2 and len(np.unique(x)) > 1:
        from scipy.stats import kruskal

        stat = float(kruskal(*(x[codes == j] for j in range(len(kinds)))).statistic)
        point = float(eta2(np.array(stat), np.array(len(kinds))))
    if n_boot < 1 or n < 2:
        return point, np.full(max(n_boot, 0), np.nan)
    counts = resample_counts(n, n_boot, seed)
    ranks, ss = _resample_ranks(x.tobytes(), n_boot, seed)                # centred ranks
    sums = (counts * ranks) @ onehot                                       # (B, k)
    sizes = counts @ onehot
    with np.errstate(invalid="ignore", divide="ignore"):
        between = np.where(sizes > 0, sums ** 2 / sizes, 0.0).sum(1)
        h = np.where(ss > 0, (n - 1.0) * between / ss, np.nan)
    return point, eta2(h, (sizes > 0).sum(1).astype(np.float64))


def percentile_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval at ``level`` of resampled ``values`` (NaN left out; NaN for
    none)."""
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return (math.nan, math.nan)
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(values, [tail, 100.0 - tail])
    return (float(lo), float(hi))


# ---------------------------------------------------------------------------------------------
# tests: multiple comparisons, differences of correlations, classes

# The multiple-comparison corrections of :func:`correct` (Holm's step-down, controlling the
# family-wise error rate; Benjamini-Hochberg's step-up, the false discovery rate; or none)
# are the schema's vocabulary: schema.Correction, schema.CORRECTIONS; checked, named and
# marked in ncprobe.significance, whose ALPHA (the level of significance) is kept here too.


def correct(p: ArrayLike, method: Correction = "holm") -> np.ndarray:
    """The p-values ``p`` corrected for multiple comparisons, in the same order.

    The family is every p-value of ``p`` that is not NaN; a NaN stays NaN (a test that was
    not defined is no part of the family). The corrected values are those of
    ``statsmodels.stats.multitest.multipletests`` (``holm``: Holm 1979, step-down;
    ``fdr_bh``: Benjamini & Hochberg 1995, step-up); ``none`` returns them unchanged.

    >>> correct([0.01, 0.04, float("nan"), 0.03], "holm").round(4).tolist()
    [0.03, 0.06, nan, 0.06]

    Raises:
        UsageError: an unknown ``method`` (it names the known ones).
    """
    check_correction(method)
    values = np.array(p, dtype=np.float64, ndmin=1)
    if values.ndim != 1:
        raise ValueError(f"correct needs a 1-d sequence of p-values, got shape {values.shape}")
    ok = ~np.isnan(values)
    if method == "none" or not ok.any():
        return values
    if method == "holm":
        values[ok] = _holm(values[ok])
        return values
    from statsmodels.stats.multitest import multipletests

    values[ok] = multipletests(values[ok], method=method)[1]
    return values


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values: in ascending order, ``p_(i) (m - i + 1)``, made
    non-decreasing by a running maximum, at most 1 (equal p-values keep their order, as
    statsmodels' ``multipletests(method="holm")`` does; the tests compare the two).

    Written here rather than called from statsmodels, whose Holm runs a full garbage
    collection on every call: a report corrects a few hundred families, and in a process
    holding large tables each collection took a noticeable fraction of a second.
    """
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(np.maximum.accumulate(p[order] * np.arange(m, 0, -1)), 1.0)
    out = np.empty(m)
    out[order] = adjusted
    return out


def correct_bounded(p: ArrayLike, bound: ArrayLike, method: Correction = "holm"
                    ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`correct` of p-values some of which are only bounds, and which corrected values
    are bounds in turn.

    ``bound[i]`` true says the true ``p[i]`` lies somewhere in ``(0, p[i]]`` (a resampling
    p-value at its floor). Holm's step-down and Benjamini-Hochberg's step-up adjusted
    p-values never decrease when an input increases, so the corrected value of the true
    p's lies between the correction of ``p`` with every bound set to 0 (``low``) and the
    correction of ``p`` as given (``high``, what is returned). Where the two agree, the
    corrected value is exact whatever the bounds hide; where they differ it is a bound
    (``high`` is reached only if the bounds are the true p's). Under Holm that marks the
    rows whose step-down maximum involves a bound, and also those whose rank a bound could
    still change; ``none`` keeps each p's own flag.

    >>> q, b = correct_bounded([0.001, 0.2, 0.04], [True, False, False], "holm")
    >>> q.round(3).tolist(), b.tolist()
    ([0.003, 0.2, 0.08], [True, False, False])

    Returns:
        ``(corrected, corrected_bound)``, in the order of ``p``; NaN stays NaN (and not a
        bound).

    Raises:
        UsageError: an unknown ``method``.
    """
    high = correct(p, method)
    flags = np.array(bound, dtype=bool, ndmin=1)
    values = np.array(p, dtype=np.float64, ndmin=1)
    if flags.shape != values.shape:
        raise ValueError(f"correct_bounded needs one bound flag per p-value, got "
                         f"{flags.shape} and {values.shape}")
    flags &= ~np.isnan(values)
    if method == "none" or not flags.any():
        return high, flags
    low = correct(np.where(flags, 0.0, values), method)
    return high, ~np.isclose(low, high, rtol=1e-12, atol=0.0) & ~np.isnan(high)


def _family_factor(m: int, method: str) -> int:
    """How much a correction of ``m`` tests can multiply the least p: ``m`` for Holm (the
    least p of the family times ``m``) and Benjamini-Hochberg (the same at rank 1), 1 for
    none."""
    return 1 if method == "none" else max(1, m)


def correct_tests(tests: pd.DataFrame, method: Correction, family: str
                  ) -> tuple[np.ndarray, np.ndarray]:
    """A table of paired resampling tests (``p``, each with its ``p_bound``) corrected as one
    family (:func:`correct_bounded`). ``tests`` gains ``p_corrected``, ``p_corrected_bound``,
    ``significant`` (corrected p at most :data:`~ncprobe.significance.ALPHA`; NaN: not),
    ``correction`` (``method``), ``family`` and ``family_size`` (the tests with a p); the
    corrected p and their bound flags are returned (for
    :func:`~ncprobe.significance.warn_resolution`)."""
    corrected, corrected_bound = correct_bounded(tests["p"].to_numpy(dtype=np.float64),
                                                 tests["p_bound"].to_numpy(dtype=bool), method)
    tests["p_corrected"] = corrected
    tests["p_corrected_bound"] = corrected_bound
    tests["significant"] = np.asarray(corrected <= ALPHA, dtype=bool)  # NaN: False
    tests["correction"] = method
    tests["family"] = family
    tests["family_size"] = int(tests["p"].notna().sum())
    return corrected, corrected_bound


def resamples_for(m: int, method: str = "holm", *, per: int = 1, finest: float = FINEST
                  ) -> int:
    """The resamples ``B`` whose least p, ``per / (B + 1)`` (``per`` 1: a sign-flip or
    permutation test; 2: a two-sided bootstrap p), stays at or below ``finest`` once a family
    of ``m`` tests is corrected by ``method`` (``m * per / (B + 1) <= finest`` for Holm and
    Benjamini-Hochberg): ``B = ceil(m * per / finest)``, 1,000 per test for a sign flip.

    >>> resamples_for(42), resamples_for(42, per=2), resamples_for(42, "none")
    (42000, 84000, 1000)
    """
    return math.ceil(_family_factor(m, method) * per / finest - 1e-9)


#: The most random sign flips :func:`choose_flips` draws by itself (a family of 2,000 tests
#: under Holm): beyond it a floored p is left as a bound and said (ResolutionWarning).
MAX_FLIPS = 2_000_000


def choose_flips(n_flips: int | str, m: int, method: str = "holm") -> tuple[int, bool]:
    """The random sign patterns of a family of ``m`` sign-flip tests: ``n_flips`` when it is a
    number, else (``"auto"``) :func:`resamples_for` ``(m, method)`` at most
    :data:`MAX_FLIPS`. Returns ``(flips, capped)``, ``capped`` true when the cap kept
    ``"auto"`` below what the family needs.

    Raises:
        UsageError: ``n_flips`` neither ``"auto"`` nor a whole number >= 0.
    """
    from .errors import UsageError

    if isinstance(n_flips, str):
        if n_flips != "auto":
            raise UsageError(f"n_flips must be 'auto' or a whole number >= 0, not {n_flips!r}")
        want = resamples_for(m, method)
        return min(want, MAX_FLIPS), want > MAX_FLIPS
    if isinstance(n_flips, bool) or not isinstance(n_flips, (int, np.integer)) or n_flips < 0:
        raise UsageError(f"n_flips must be 'auto' or a whole number >= 0 (0: no test), not "
                         f"{n_flips!r}")
    return int(n_flips), False


@dataclass(frozen=True)
class SignFlip:
    """One :func:`sign_flip` test: a p-value per column, whether it is a bound, and how.

    Attributes:
        p: two-sided p-value of each column of the summed differences.
        bound: per column, no random pattern was as extreme as the data: ``p`` is the floor
            ``1/(B+1)`` and the true p lies below it (never true when ``exact``).
        exact: every one of the ``2^k`` patterns was enumerated.
        patterns: how many patterns (``2^k`` when exact, else the random flips ``B``).
    """

    p: np.ndarray
    bound: np.ndarray
    exact: bool
    patterns: int

    def describe(self, clusters: str = "idioms") -> str:
        """The test in words, as a tests table's ``test`` column records it: ``"sign-flip
        over idioms (42,000 random flips)"``."""
        if self.exact:
            return f"sign-flip over {clusters} (exact, all {self.patterns:,} sign patterns)"
        return f"sign-flip over {clusters} ({self.patterns:,} random flips)"


#: Elements of one chunk of sign patterns (patterns x clusters): the memory of
#: :func:`sign_flip` is bounded by it, whatever the number of flips.
_CHUNK = 1 << 21


def subset_chunks(k: int, n: int, seed: Sequence[int], *, exact: bool, chunk: int
                  ) -> Iterator[np.ndarray]:
    """Subsets of ``k`` clusters as ``(rows, k)`` 0/1 float matrices: every subset
    (``exact``: the binary digits of 0 ... 2^k - 1, in order) or ``n`` random ones from
    ``default_rng(seed)``, in chunks of at most ``chunk`` elements. The chunking is fixed by
    ``k`` and ``chunk``, so the same seed gives the same subsets whatever else is tested
    beside: the sign patterns of :func:`sign_flip` (``1 - 2 x``) and the swaps of a cluster
    permutation test (:func:`ncprobe.astitch.stats.paired_tests`)."""
    rows = max(1, chunk // max(k, 1))
    total = 2 ** k if exact else n
    shifts = np.arange(k, dtype=np.int64)
    rng = None if exact else np.random.default_rng(list(seed))
    for start in range(0, total, rows):
        size = min(rows, total - start)
        if rng is None:
            bits = (np.arange(start, start + size, dtype=np.int64)[:, None] >> shifts) & 1
        else:
            bits = rng.integers(0, 2, size=(size, k), dtype=np.int8)
        yield bits.astype(np.float64)


def sign_flip(sums: Sequence[ArrayLike], n_flips: int, *, seed: int = 0) -> list[SignFlip]:
    """Two-sided sign-flip tests of summed differences over clusters (paired data, the
    clusters exchangeable under the null hypothesis).

    Each ``sums[i]`` holds one test's per-cluster sums of paired differences, shape ``(k,)``
    or ``(k, c)`` (``c`` columns tested on the same clusters, e.g. two metrics). The
    statistic is ``|sum over clusters|``; a sign pattern flips whole clusters. When
    ``2^k <= n_flips`` every pattern is enumerated and ``p = #{|stat*| >= |stat|} / 2^k``
    (exact: at least ``2 / 2^k``, the identity and its mirror); otherwise ``n_flips`` random
    patterns give ``p = (1 + #{|stat*| >= |stat|}) / (1 + n_flips)``, a bound when the count
    is 0. Tests with the same ``k`` share their patterns (common random numbers, and one pass
    over them), drawn in chunks so that memory stays bounded.

    Args:
        sums: per test, the per-cluster sums (at least one cluster each).
        n_flips: random patterns (>= 1; :func:`choose_flips` picks them for a family).
        seed: the seed of the random patterns (``default_rng([seed, 1])``).

    Returns:
        One :class:`SignFlip` per test, in order; ``p`` and ``bound`` have one entry per
        column (a 1-d ``sums[i]`` is one column).
    """
    arrays = []
    for x in sums:
        a = np.asarray(x, dtype=np.float64)
        arrays.append(a[:, None] if a.ndim == 1 else a)
    if n_flips < 1:
        raise ValueError(f"sign_flip needs n_flips >= 1, not {n_flips}")
    out: list[SignFlip | None] = [None] * len(arrays)
    by_k: dict[int, list[int]] = {}
    for i, a in enumerate(arrays):
        if a.ndim != 2 or a.shape[0] < 1:
            raise ValueError(f"sign_flip: test {i} needs (clusters,) or (clusters, columns) "
                             f"sums with at least one cluster, got shape {a.shape}")
        by_k.setdefault(a.shape[0], []).append(i)
    for k, members in by_k.items():
        d = np.concatenate([arrays[i] for i in members], axis=1)   # k x columns
        observed = np.abs(d.sum(axis=0))
        # a pattern's statistic equal to the observed one up to rounding counts as extreme
        tol = 1e-9 * np.abs(d).sum(axis=0) + 1e-12
        exact = 2 ** k <= n_flips
        extreme = np.zeros(d.shape[1], dtype=np.int64)
        for bits in subset_chunks(k, n_flips, [seed, 1], exact=exact, chunk=_CHUNK):
            signs = 1.0 - 2.0 * bits
            extreme += (np.abs(signs @ d) >= observed - tol).sum(axis=0)
        # exact: the share of every pattern; random: with the observed sample counted once
        p = np.asarray(extreme / 2.0 ** k if exact else (1.0 + extreme) / (1.0 + n_flips),
                       dtype=np.float64)
        bound = np.zeros(len(extreme), dtype=bool) if exact else extreme == 0
        patterns = 2 ** k if exact else n_flips
        at = 0
        for i in members:
            c = arrays[i].shape[1]
            out[i] = SignFlip(p[at:at + c], bound[at:at + c], exact, patterns)
            at += c
    return [x for x in out if x is not None]


#: The columns a paired-tests table gains from :func:`correct_tests`.
CORRECTED_COLUMNS: tuple[str, ...] = ("p_corrected", "p_corrected_bound", "significant",
                                      "correction", "family", "family_size")

#: One resampling test's outcome, as :func:`paired_family` takes it from its ``run``: the
#: p-value of each column, whether each is a bound, and the test in words.
TestOutcome = tuple[ArrayLike, ArrayLike, str]


def paired_family(rows: list[dict[str, Any]], tests: Sequence[Any],
                  run: Callable[[Sequence[Any], int], Sequence[TestOutcome]], *,
                  m: int, n_resamples: int | str, method: Correction, family: str,
                  columns: Sequence[str], name: str, option: str, noun: str
                  ) -> pd.DataFrame:
    """A family of paired cluster-resampling tests as one corrected table: the engine of
    every probe's ``paired_tests`` (IdioLink's sign flips over idioms, AStitch's swaps over
    expressions), which compute each pair's own numbers and leave the rest to it.

    The resamples ``B`` are :func:`choose_flips` ``(n_resamples, m, method)``; ``run(tests,
    B)`` gives each test's :data:`TestOutcome`. A row names its test by ``_test`` (an index
    into ``tests``, or None: no test, its ``test`` text kept) and the column of that test's
    p by ``_col`` (default 0); it gets ``p``, ``p_bound`` and ``test`` from the outcome, or
    ``"<name> (not run: <option>=0)"`` when ``B`` is 0. The table (``columns``, those of
    :data:`CORRECTED_COLUMNS` last filled in) is corrected as one family by
    :func:`correct_tests`; a corrected bound that limits a decision is warned about
    (:func:`~ncprobe.significance.warn_resolution`, ``B`` counted as ``"random <noun>"``).

    Args:
        rows: one dict per row of the table (``p`` NaN and ``p_bound`` False unless given).
        tests: what ``run`` tests (per-cluster sums, per-expression counts ...).
        run: the resampling test of every one of ``tests`` with ``B`` resamples.
        m: the tests of the family (what ``"auto"`` draws for).
        n_resamples: ``"auto"`` or a whole number >= 0 (0: no test, p NaN).
        method: the correction (already checked).
        family: the family's name (the ``family`` column).
        columns: the table's columns, in order.
        name: the test's name in the ``test`` column; ``option``: the option of ``B``.
        noun: what one resample is, plural (``"sign flips"``, ``"swaps"``).
    """
    import pandas as pd

    n, capped = choose_flips(n_resamples, m, method)
    outcomes = run(tests, n) if n and len(tests) else []
    for r in rows:
        r.setdefault("p", math.nan)
        r.setdefault("p_bound", False)
        if r.get("_test") is None:
            continue
        if not n:
            r["test"] = f"{name} (not run: {option}=0)"
            continue
        p, bound, text = outcomes[int(r["_test"])]
        col = int(r.get("_col", 0))
        r["p"] = float(np.atleast_1d(p)[col])
        r["p_bound"] = bool(np.atleast_1d(bound)[col])
        r["test"] = text
    out = pd.DataFrame(rows, columns=[c for c in columns if c not in CORRECTED_COLUMNS])
    corrected, corrected_bound = correct_tests(out, method, family)
    if n:
        from .significance import warn_resolution

        warn_resolution(corrected, corrected_bound, rows="paired tests",
                        resamples=f"{n:,} random {noun}", option=option,
                        needed=resamples_for(m, method),
                        capped=f"'auto' draws at most {MAX_FLIPS:,}" if capped else "",
                        stacklevel=4)
    return out[list(columns)]


@dataclass(frozen=True)
class RhoDifference:
    """:func:`paired_bootstrap_rho_diff`: ``rho_a - rho_b`` on ``n`` items, its percentile
    interval ``[ci_low, ci_high]`` and its two-sided bootstrap p-value; ``p_bound``: no
    resample fell on the other side of 0, so ``p`` is the floor ``2/(B+1)`` of the
    resamples and the true p lies below it."""

    rho_a: float
    rho_b: float
    diff: float
    ci_low: float
    ci_high: float
    p: float
    n: int
    p_bound: bool = False


def _complete(*columns: ArrayLike) -> list[np.ndarray]:
    """The columns (1-d, one length) without the items that are NaN in any of them."""
    arrays = [np.asarray(c, dtype=np.float64) for c in columns]
    if any(a.ndim != 1 or a.shape != arrays[0].shape for a in arrays):
        raise ValueError("needs 1-d arrays of one length, got shapes "
                         + ", ".join(str(a.shape) for a in arrays))
    ok = ~np.any([np.isnan(a) for a in arrays], axis=0)
    return [a[ok] for a in arrays]


def paired_bootstrap_rho_diff(a: ArrayLike, b: ArrayLike, gold: ArrayLike, *,
                              n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95
                              ) -> RhoDifference:
    """Is ``a`` more correlated with ``gold`` than ``b`` is, on the same items?

    ``diff = rho(a, gold) - rho(b, gold)`` (Spearman, :func:`spearman`) on the items where
    none of ``a``, ``b``, ``gold`` is NaN (``n`` of them). The items are resampled jointly
    (the triple of an item stays together): the resamples are those of
    :func:`bootstrap_spearman` for the same ``n`` and ``seed``
    (``default_rng(seed).integers(0, n, (n_boot, n))``), and each resample's two rhos are
    computed from counts as there, without ranking it. A resample in which ``a``, ``b`` or
    ``gold`` is constant has no difference and is left out; ``B`` is the number left.

    * ``ci_low``, ``ci_high``: the percentile interval of the ``B`` differences (``level``).
    * ``p``: two-sided bootstrap p-value of ``diff = 0``: with ``k_le`` resample differences
      ``<= 0`` and ``k_ge`` ``>= 0``, ``p = min(1, 2 (min(k_le, k_ge) + 1) / (B + 1))``.
      It is the smallest ``1 - level`` at which the percentile interval leaves out 0, with
      the usual ``+1`` for the observed sample, so that it is never 0 (its least value is
      ``2 / (B + 1)``).
    * ``p_bound``: ``min(k_le, k_ge) == 0`` (and ``p < 1``): no resample on the other side
      of 0, so ``p = 2 / (B + 1)`` is only the floor of ``B`` resamples, a bound above the
      true p (:func:`correct_bounded` carries it through a correction).

    Fewer than three items, a constant variable or ``n_boot < 1`` give NaN where the value
    is undefined (``n`` is always the number of complete items).
    """
    x, y, g = _complete(a, b, gold)
    n = len(x)
    rho_a, rho_b = spearman(x, g).rho, spearman(y, g).rho
    diff = rho_a - rho_b
    if math.isnan(diff) or n_boot < 1:
        return RhoDifference(rho_a, rho_b, diff, math.nan, math.nan, math.nan, n)
    diffs = _resample_rhos(x, g, n_boot, seed) - _resample_rhos(y, g, n_boot, seed)
    diffs = diffs[~np.isnan(diffs)]
    if len(diffs) == 0:
        return RhoDifference(rho_a, rho_b, diff, math.nan, math.nan, math.nan, n)
    lo, hi = percentile_interval(diffs, level)
    p, bound = bootstrap_p(diffs)
    return RhoDifference(rho_a, rho_b, diff, lo, hi, p, n, p_bound=bound)


def bootstrap_p(diffs: ArrayLike) -> tuple[float, bool]:
    """The two-sided bootstrap p-value of a difference of 0 from its resampled differences
    (NaN left out; ``B`` remain): with ``k_le`` of them ``<= 0`` and ``k_ge`` ``>= 0``,
    ``p = min(1, 2 (min(k_le, k_ge) + 1) / (B + 1))``, and whether it is only the floor of
    ``B`` resamples (no resample on the other side of 0, ``p < 1``: a bound above the true
    p). NaN (and no bound) for no difference.

    >>> bootstrap_p([0.5, 1.0, -0.2, 2.0])
    (0.8, False)
    """
    d = np.asarray(diffs, dtype=np.float64)
    d = d[~np.isnan(d)]
    if len(d) == 0:
        return math.nan, False
    k = min(int(np.sum(d <= 0.0)), int(np.sum(d >= 0.0)))
    p = min(1.0, 2.0 * (k + 1) / (len(d) + 1))
    return p, k == 0 and p < 1.0


def _valid_correlations(n: int, *rs: float) -> bool:
    return n >= 4 and all(not math.isnan(r) and abs(r) < 1.0 for r in rs)


def williams_t(r_ag: float, r_bg: float, r_ab: float, n: int) -> tuple[float, float]:
    """Williams' t for two dependent correlations that share a variable: ``(t, p)``.

    Does ``a`` correlate with ``g`` as much as ``b`` does, measured on the same ``n``
    items? ``r_ag``, ``r_bg`` are the two correlations, ``r_ab`` the correlation of ``a``
    and ``b``. In the form of Steiger (1980), eq. 7::

        |R| = 1 - r_ag^2 - r_bg^2 - r_ab^2 + 2 r_ag r_bg r_ab
        rbar = (r_ag + r_bg) / 2
        t = (r_ag - r_bg) sqrt((n-1)(1+r_ab) / (2 (n-1)/(n-3) |R| + rbar^2 (1-r_ab)^3))

    with ``n - 3`` degrees of freedom; ``p`` is two-sided (Student's t,
    ``scipy.stats.t``). The test is derived for Pearson correlations; applying it to
    Spearman rhos, as ncprobe does, is the usual approximation (the rhos are Pearson
    correlations of ranks). ``n < 4``, a correlation that is NaN or of absolute value 1,
    or a non-positive denominator (correlations that no data can have) give NaN.

    >>> t, p = williams_t(0.5, 0.5, 0.3, 50)
    >>> t, p
    (0.0, 1.0)
    """
    from scipy.stats import t as student_t

    if not _valid_correlations(n, r_ag, r_bg, r_ab):
        return (math.nan, math.nan)
    det = 1.0 - r_ag**2 - r_bg**2 - r_ab**2 + 2.0 * r_ag * r_bg * r_ab
    rbar = (r_ag + r_bg) / 2.0
    den = 2.0 * (n - 1) / (n - 3) * det + rbar**2 * (1.0 - r_ab) ** 3
    if not den > 0.0:
        return (math.nan, math.nan)
    t = (r_ag - r_bg) * math.sqrt((n - 1) * (1.0 + r_ab) / den)
    return (t, float(min(1.0, 2.0 * student_t.sf(abs(t), n - 3))))


def meng_z(r_ag: float, r_bg: float, r_ab: float, n: int) -> tuple[float, float]:
    """Meng, Rosenthal & Rubin's (1992) z for two dependent correlations sharing a variable.

    The same question as :func:`williams_t`, on Fisher's z of the two correlations::

        rbar2 = (r_ag^2 + r_bg^2) / 2
        f = min(1, (1 - r_ab) / (2 (1 - rbar2)))
        h = (1 - f rbar2) / (1 - rbar2)
        z = (atanh(r_ag) - atanh(r_bg)) sqrt((n - 3) / (2 (1 - r_ab) h))

    Returns ``(z, p)``, ``p`` two-sided from the standard normal. Applied to Spearman rhos
    it is an approximation, as :func:`williams_t`. ``n < 4`` or a correlation that is NaN
    or of absolute value 1 give NaN.
    """
    from scipy.stats import norm

    if not _valid_correlations(n, r_ag, r_bg, r_ab):
        return (math.nan, math.nan)
    rbar2 = (r_ag**2 + r_bg**2) / 2.0
    f = min(1.0, (1.0 - r_ab) / (2.0 * (1.0 - rbar2)))
    h = (1.0 - f * rbar2) / (1.0 - rbar2)
    z = (math.atanh(r_ag) - math.atanh(r_bg)) * math.sqrt((n - 3) / (2.0 * (1.0 - r_ab) * h))
    return (z, float(min(1.0, 2.0 * norm.sf(abs(z)))))


#: The columns of :func:`class_tests`.
CLASS_TEST_COLUMNS: tuple[str, ...] = (
    "test", "cls_a", "cls_b", "n_a", "n_b", "statistic", "p", "p_corrected", "rank_biserial",
    "significant", "family", "family_size")
#: The families of :func:`class_tests` (a Kruskal-Wallis test alone; the pairs of one
#: measure), and what a test left uncorrected is said to be corrected with.
CLASS_FAMILIES = {"kruskal-wallis": "this Kruskal-Wallis test alone",
                  "mann-whitney": "the Mann-Whitney pairs of this measure",
                  "none": "uncorrected: each test on its own"}


def class_tests(values: ArrayLike, classes: ArrayLike | Sequence[str | None], *,
                correct_method: Correction = "holm") -> pd.DataFrame:
    """Do the values of one measure differ between the classes (I, PC, C)?

    ``values[i]`` is the measure of item ``i`` and ``classes[i]`` its class; items whose
    value is NaN or whose class is missing are dropped. The classes present are tested in
    the order of :data:`ncprobe.schema.CLASSES` (any other class after them, sorted).

    Returns one row per test (columns :data:`CLASS_TEST_COLUMNS`):

    * ``test == "kruskal-wallis"``: ``scipy.stats.kruskal`` across every class present;
      ``cls_a`` is ``"all"``, ``cls_b`` and ``n_b`` are missing (``<NA>``), ``n_a`` the
      number of items, ``statistic`` H. Its ``p_corrected`` is its ``p``: it is one test per
      measure (correct it across measures with :func:`correct`).
    * ``test == "mann-whitney"``: for each pair of classes (``I``-``PC``, ``I``-``C``,
      ``PC``-``C``), the two-sided ``scipy.stats.mannwhitneyu`` of ``cls_a`` against
      ``cls_b`` (its defaults: exact for small samples without ties, else normal with
      continuity correction); ``statistic`` is ``U1``, the U of ``cls_a`` (pairs in which
      the ``cls_a`` item is larger, plus half the ties); ``rank_biserial`` is the effect
      size ``2 U1 / (n_a n_b) - 1``, in [-1, 1]: positive when the values of ``cls_a``
      tend to be larger than those of ``cls_b``. ``p_corrected`` corrects the p-values of
      the pairs as one family (``correct_method``, :func:`correct`).

    ``significant`` is ``p_corrected <= ALPHA``; ``family`` and ``family_size`` name the
    tests each ``p_corrected`` was corrected with (:data:`CLASS_FAMILIES`) and how many have a
    p. A test that is undefined (fewer than two classes, every value equal) has NaN
    ``statistic`` and ``p`` and is not significant. Every p-value here is scipy's exact or
    asymptotic one: no resampling, no floor.
    """
    import pandas as pd
    from scipy.stats import kruskal, mannwhitneyu

    from .schema import ALL_CLASSES, CLASSES

    v = np.asarray(values, dtype=np.float64)
    c = pd.Series(np.asarray(classes, dtype=object)).reset_index(drop=True)
    if v.ndim != 1 or len(c) != len(v):
        raise ValueError(f"class_tests needs values and classes of one length, got {v.shape} "
                         f"and {len(c)}")
    ok = ~np.isnan(v) & c.notna().to_numpy()
    v, labels = v[ok], c[ok].astype(str).to_numpy()
    present = set(labels.tolist())
    order = [k for k in CLASSES if k in present] + sorted(present - set(CLASSES))
    groups = {k: v[labels == k] for k in order}
    rows: list[dict] = []
    h = p = math.nan
    if len(order) >= 2 and len(np.unique(v)) > 1:
        res = kruskal(*groups.values())
        h, p = float(res.statistic), float(res.pvalue)
    rows.append({"test": "kruskal-wallis", "cls_a": ALL_CLASSES, "cls_b": pd.NA,
                 "n_a": len(v), "n_b": pd.NA, "statistic": h, "p": p, "p_corrected": p,
                 "rank_biserial": math.nan})
    pairs = []
    for i, ka in enumerate(order):
        for kb in order[i + 1:]:
            x, y = groups[ka], groups[kb]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # every value tied: p is NaN, said below
                res = mannwhitneyu(x, y, alternative="two-sided")
            u1 = float(res.statistic)
            pairs.append({"test": "mann-whitney", "cls_a": ka, "cls_b": kb, "n_a": len(x),
                          "n_b": len(y), "statistic": u1, "p": float(res.pvalue),
                          "rank_biserial": 2.0 * u1 / (len(x) * len(y)) - 1.0})
    corrected = correct([r["p"] for r in pairs], correct_method)
    for r, pc in zip(pairs, corrected, strict=True):
        r["p_corrected"] = float(pc)
    rows += pairs
    out = pd.DataFrame(rows, columns=list(CLASS_TEST_COLUMNS[:-3]))
    out["cls_a"] = out["cls_a"].astype("string")
    out["cls_b"] = out["cls_b"].astype("string")
    out["n_a"] = out["n_a"].astype("Int64")
    out["n_b"] = out["n_b"].astype("Int64")
    out["significant"] = (out["p_corrected"] <= ALPHA).to_numpy()
    mw = (out["test"] == "mann-whitney").to_numpy()
    out["family"] = np.where(mw, CLASS_FAMILIES["mann-whitney"] if correct_method != "none"
                             else CLASS_FAMILIES["none"], CLASS_FAMILIES["kruskal-wallis"])
    defined = out["p"].notna().to_numpy()
    out["family_size"] = np.where(
        mw & (correct_method != "none"), int(np.count_nonzero(mw & defined)),
        defined.astype(np.int64)).astype(np.int64)
    return out


def standardised_logistic(C: float = 1.0, max_iter: int = 10_000) -> Pipeline:
    """The linear probe every probe shares, unfitted: features standardised by a
    ``StandardScaler`` (fitted with the classifier, so on training rows only), then
    scikit-learn's ``LogisticRegression(solver="lbfgs")`` (multinomial for more than two
    classes) with an L2 penalty of inverse strength ``C``. The NCC probe's all-measure
    classifier, the amnesic probe's concept probe and the default model of the online code
    (:mod:`ncprobe.mdl`) are this one."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(),
                         LogisticRegression(C=C, solver="lbfgs", max_iter=max_iter))


def one_blas_thread() -> AbstractContextManager[Any]:
    """BLAS limited to one thread while small products run (a bootstrap table's thousand
    resamples by a few hundred items; a linear probe's L-BFGS steps on a few thousand rows):
    too small for threads to pay off, and on a busy machine threads made them several times
    slower. A computation run under it gives the same numbers in a worker process, which
    joblib also limits to one thread."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def cosine(a: np.ndarray, b: np.ndarray, *, norm_a: np.ndarray | None = None,
           norm_b: np.ndarray | None = None) -> np.ndarray:
    """Row-wise cosine (NCIMP's Eq. 2) in float64; NaN where a row has NaN or zero norm.

    Args:
        a, b: vectors, one per row.
        norm_a, norm_b: ``np.linalg.norm(a, axis=-1)`` (and of ``b``) when already known
            (a vector compared with many probes is then normed once).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    num = np.einsum("...d,...d->...", a, b)
    if norm_a is None:
        norm_a = np.linalg.norm(a, axis=-1)
    if norm_b is None:
        norm_b = np.linalg.norm(b, axis=-1)
    den = norm_a * norm_b
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    out = np.where(den > 0, out, np.nan)
    return np.clip(out, -1.0, 1.0)
