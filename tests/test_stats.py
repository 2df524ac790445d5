"""Spearman, p-values and bootstrap intervals, checked against scipy and explicit loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as ss
from hypothesis import given, settings
from hypothesis import strategies as st

from ncprobe.stats import bootstrap_mean, bootstrap_spearman, spearman


@pytest.mark.parametrize("n", [3, 4, 7, 30, 280])
def test_spearman_matches_scipy_with_ties(n):
    rng = np.random.default_rng(n)
    x = rng.integers(0, max(2, n // 3), n).astype(float)  # many ties
    x[:2] = [0.0, 1.0]  # never constant
    y = x + rng.normal(size=n)
    got = spearman(x, y)
    want = ss.spearmanr(x, y)
    assert got.n == n
    assert got.rho == pytest.approx(want.statistic, abs=1e-12)
    assert got.p == pytest.approx(want.pvalue, rel=1e-9, abs=1e-300)


def test_spearman_drops_nan_pairs_and_handles_degenerate_input():
    x = [1.0, 2.0, math.nan, 4.0, 5.0, 6.0]
    y = [2.0, 1.0, 3.0, math.nan, 6.0, 5.0]
    got = spearman(x, y)
    want = ss.spearmanr([1, 2, 5, 6], [2, 1, 6, 5])
    assert got.n == 4 and got.rho == pytest.approx(want.statistic)
    assert math.isnan(spearman([1, 2], [2, 1]).rho)          # fewer than 3 pairs
    assert math.isnan(spearman([1, 1, 1, 1], [1, 2, 3, 4]).rho)  # constant: undefined
    perfect = spearman([1, 2, 3, 4], [10, 20, 30, 40])
    assert perfect.rho == 1.0 and perfect.p == 0.0 and perfect.significant


def test_spearman_hand_worked():
    # ranks x: 1 2 3 4; y = 1 3 2 4 -> d^2 = 0+1+1+0 = 2; rho = 1 - 6*2/(4*15) = 0.8
    assert spearman([1, 2, 3, 4], [10, 30, 20, 40]).rho == pytest.approx(0.8)


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 80), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_bootstrap_spearman_equals_ranking_every_resample_explicitly(n, levels, seed):
    # tie-heavy integer data: the count-based ranks must equal scipy's ranks of each resample
    rng = np.random.default_rng(seed)
    x = rng.integers(0, levels + 1, n).astype(float)
    y = np.round(x + rng.normal(size=n), 1)
    lo, hi = bootstrap_spearman(x, y, n_boot=200, seed=seed % 1000)
    idx = np.random.default_rng(seed % 1000).integers(0, n, size=(200, n))
    rhos = []
    for i in idx:
        a, b = x[i], y[i]
        if np.all(a == a[0]) or np.all(b == b[0]):
            continue  # rho undefined for a constant resample: left out, as ncprobe does
        rhos.append(ss.spearmanr(a, b).statistic)
    if not rhos:
        assert math.isnan(lo) and math.isnan(hi)
        return
    want = np.percentile(rhos, [2.5, 97.5])
    assert lo == pytest.approx(want[0], abs=1e-12) and hi == pytest.approx(want[1], abs=1e-12)


def test_bootstrap_spearman_is_seeded_and_matches_a_plain_loop():
    rng = np.random.default_rng(3)
    x = rng.normal(size=60)
    y = 0.5 * x + rng.normal(size=60)
    lo, hi = bootstrap_spearman(x, y, n_boot=300, seed=7)
    assert (lo, hi) == bootstrap_spearman(x, y, n_boot=300, seed=7)
    assert (lo, hi) != bootstrap_spearman(x, y, n_boot=300, seed=8)
    # the same resamples, done one by one with scipy
    idx = np.random.default_rng(7).integers(0, 60, size=(300, 60))
    rhos = [ss.spearmanr(x[i], y[i]).statistic for i in idx]
    want = np.percentile(rhos, [2.5, 97.5])
    assert lo == pytest.approx(want[0], abs=1e-12) and hi == pytest.approx(want[1], abs=1e-12)
    assert lo < spearman(x, y).rho < hi


def test_bootstrap_mean():
    x = np.arange(100, dtype=float)
    lo, hi = bootstrap_mean(x, n_boot=500, seed=1)
    means = x[np.random.default_rng(1).integers(0, 100, size=(500, 100))].mean(1)
    assert (lo, hi) == tuple(np.percentile(means, [2.5, 97.5]))
    assert lo < 49.5 < hi
    assert all(math.isnan(v) for v in bootstrap_mean([1.0], n_boot=10))
