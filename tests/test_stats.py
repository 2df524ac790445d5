"""Spearman, p-values and bootstrap intervals, checked against scipy and explicit loops."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest
import scipy.stats as ss
from hypothesis import given, settings
from hypothesis import strategies as st

from ncprobe.errors import UsageError
from ncprobe.stats import (
    CLASS_TEST_COLUMNS,
    Correction,
    bootstrap_mean,
    bootstrap_spearman,
    class_tests,
    correct,
    cosine,
    meng_z,
    paired_bootstrap_rho_diff,
    paired_family,
    spearman,
    williams_t,
)

from .by_hand import benjamini_hochberg, holm


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


def _constant(rows: np.ndarray) -> np.ndarray:
    """Whether each row holds one value only."""
    return (rows == rows[:, :1]).all(axis=1)


def _rho_of_each_row(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row of ``x`` with the same row of ``y``, by its definition:
    scipy's average ranks of the row (``rankdata``, row by row), then Pearson's r of the two
    rows of ranks. (What ``scipy.stats.spearmanr`` computes, within 1e-15, without its
    per-call overhead on thousands of resamples.)"""
    rx, ry = ss.rankdata(x, axis=1), ss.rankdata(y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    return (rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))


def test_the_rho_of_each_row_is_scipys_spearman():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 4, (60, 25)).astype(float)  # tie-heavy rows
    y = np.round(x + rng.normal(size=(60, 25)), 1)
    want = [ss.spearmanr(a, b).statistic for a, b in zip(x, y, strict=True)]
    np.testing.assert_allclose(_rho_of_each_row(x, y), want, rtol=0, atol=1e-15)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.integers(3, 80), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_bootstrap_spearman_equals_ranking_every_resample_explicitly(n, levels, seed):
    # tie-heavy integer data: the count-based ranks must equal scipy's ranks of each resample
    rng = np.random.default_rng(seed)
    x = rng.integers(0, levels + 1, n).astype(float)
    y = np.round(x + rng.normal(size=n), 1)
    lo, hi = bootstrap_spearman(x, y, n_boot=200, seed=seed % 1000)
    idx = np.random.default_rng(seed % 1000).integers(0, n, size=(200, n))
    a, b = x[idx], y[idx]  # one resample a row
    # rho undefined for a constant resample: left out, as ncprobe does
    defined = ~(_constant(a) | _constant(b))
    rhos = _rho_of_each_row(a[defined], b[defined])
    if not len(rhos):
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


# --- tests: corrections, paired differences of rho, dependent correlations, classes ----------

def test_correct_hand_worked_numbers():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005 0.01 0.03 0.04; Holm x4 x3 x2 x1 = 0.02 0.03 0.06 0.04 -> cummax
    assert correct(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    # BH m p / i = 0.02 0.02 0.04 0.04 -> cummin from the top
    assert correct(p, "fdr_bh") == pytest.approx([0.02, 0.04, 0.04, 0.02], abs=1e-15)
    assert correct(p, "none").tolist() == p


@pytest.mark.parametrize("seed", range(6))
def test_correct_matches_hand_loops_and_statsmodels_nan_outside_the_family(seed):
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 30))
    p = rng.uniform(0, 0.2, m) ** 2
    p[rng.integers(0, m, m // 4)] = 0.0123  # ties
    with_nan = np.insert(p, rng.integers(0, m + 1, 3), np.nan)
    ok = ~np.isnan(with_nan)
    cases: list[tuple[Correction, Callable[[list[float]], Any]]] = [
        ("holm", holm), ("fdr_bh", benjamini_hochberg)]
    for method, by_hand in cases:
        got = correct(with_nan, method)
        assert np.isnan(got[~ok]).all()
        assert got[ok] == pytest.approx(by_hand(p.tolist()), abs=1e-14)
        assert got[ok] == pytest.approx(multipletests(p, method=method)[1], abs=1e-15)
    assert np.array_equal(correct(with_nan, "none"), with_nan, equal_nan=True)


def test_correct_edge_cases():
    assert correct([], "holm").tolist() == []
    assert np.isnan(correct([math.nan, math.nan], "holm")).all()
    assert correct([0.3], "holm").tolist() == [0.3]
    original = np.array([0.01, 0.02])
    correct(original, "holm")
    assert original.tolist() == [0.01, 0.02]  # the input is not changed
    unknown: Any = "bonferroni"  # what a caller without a type checker may pass
    with pytest.raises(UsageError, match="holm, fdr_bh, none"):
        correct([0.1], unknown)


def _diffs_by_resample(a, b, g, n_boot, seed):
    """rho(a, g) - rho(b, g) in each resample, each resample ranked by scipy on its own."""
    n = len(a)
    i = np.random.default_rng(seed).integers(0, n, (n_boot, n))
    x, y, z = a[i], b[i], g[i]  # one resample a row
    defined = ~(_constant(x) | _constant(y) | _constant(z))  # else the resample is left out
    x, y, z = x[defined], y[defined], z[defined]
    out = _rho_of_each_row(x, z) - _rho_of_each_row(y, z)
    # a resample where a and b rank alike has a difference of exactly 0 (scipy may leave a
    # last-digit rounding there): 0 it is, counted on both sides by the p-value
    out[np.abs(out) < 1e-12] = 0.0
    return out


def _p_by_definition(diffs: np.ndarray) -> float:
    k = min(int((diffs <= 0).sum()), int((diffs >= 0).sum()))
    return min(1.0, 2 * (k + 1) / (len(diffs) + 1))


@pytest.mark.parametrize("n, n_boot, seed", [(12, 300, 0), (40, 500, 5), (150, 400, 11)])
def test_paired_bootstrap_matches_an_explicit_loop_with_ties_and_nan(n, n_boot, seed):
    rng = np.random.default_rng(100 + seed)
    gold = rng.integers(0, 6, n).astype(float)           # gold scores with many ties
    a = np.round(gold + rng.normal(0, 1.5, n))            # ties in a and b too
    b = np.round(0.5 * gold + rng.normal(0, 2.0, n), 1)
    a[1], b[4], gold[7] = math.nan, math.nan, math.nan   # dropped jointly
    got = paired_bootstrap_rho_diff(a, b, gold, n_boot=n_boot, seed=seed)
    keep = ~(np.isnan(a) | np.isnan(b) | np.isnan(gold))
    x, y, g = a[keep], b[keep], gold[keep]
    assert got.n == n - 3
    rho_a, rho_b = ss.spearmanr(x, g).statistic, ss.spearmanr(y, g).statistic
    assert got.rho_a == pytest.approx(rho_a, abs=1e-12)
    assert got.rho_b == pytest.approx(rho_b, abs=1e-12)
    assert got.diff == pytest.approx(rho_a - rho_b, abs=1e-12)
    diffs = _diffs_by_resample(x, y, g, n_boot, seed)
    if n == 12:
        assert (diffs == 0).any()  # resamples with no difference, counted on both sides
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    assert got.ci_low == pytest.approx(lo, abs=1e-12)
    assert got.ci_high == pytest.approx(hi, abs=1e-12)
    assert got.p == pytest.approx(_p_by_definition(diffs), abs=1e-15)
    assert got == paired_bootstrap_rho_diff(a, b, gold, n_boot=n_boot, seed=seed)  # seeded
    narrow = paired_bootstrap_rho_diff(a, b, gold, n_boot=n_boot, seed=seed, level=0.5)
    want = np.percentile(diffs, [25, 75])
    assert (narrow.ci_low, narrow.ci_high) == pytest.approx(tuple(want), abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(4, 60), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_paired_bootstrap_equals_the_loop_on_tie_heavy_data(n, levels, seed):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, levels + 1, n).astype(float)
    a = np.round(g + rng.normal(size=n))
    b = rng.integers(0, 3, n).astype(float)
    got = paired_bootstrap_rho_diff(a, b, g, n_boot=100, seed=seed % 997)
    if any(np.all(v == v[0]) for v in (a, b, g)):
        assert math.isnan(got.diff) and math.isnan(got.p)
        return
    diffs = _diffs_by_resample(a, b, g, 100, seed % 997)
    if len(diffs) == 0:
        assert math.isnan(got.ci_low) and math.isnan(got.p)
        return
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    assert (got.ci_low, got.ci_high) == pytest.approx((lo, hi), abs=1e-9)
    assert got.p == pytest.approx(_p_by_definition(diffs), abs=1e-15)


def test_paired_bootstrap_degenerate_cases():
    same = np.array([3.0, 1.0, 2.0, 5.0, 4.0, 4.0])
    gold = np.array([1.0, 2.0, 2.0, 4.0, 5.0, 6.0])
    d = paired_bootstrap_rho_diff(same, same.copy(), gold, n_boot=200, seed=1)
    assert d.diff == 0.0 and d.ci_low == 0.0 and d.ci_high == 0.0 and d.p == 1.0
    short = paired_bootstrap_rho_diff([1, 2], [2, 1], [1, 2], n_boot=50)
    assert short.n == 2 and math.isnan(short.diff) and math.isnan(short.p)
    flat = paired_bootstrap_rho_diff([1, 1, 1, 1], [1, 2, 3, 4], [4, 3, 2, 1], n_boot=50)
    assert math.isnan(flat.rho_a) and math.isnan(flat.ci_low)
    no_boot = paired_bootstrap_rho_diff(same, gold, gold, n_boot=0)
    assert not math.isnan(no_boot.diff) and math.isnan(no_boot.ci_low)
    with pytest.raises(ValueError, match="one length"):
        paired_bootstrap_rho_diff([1, 2, 3], [1, 2], [1, 2, 3])


def test_williams_t_hand_worked():
    r_ag, r_bg, r_ab, n = 0.5, 0.3, 0.4, 50
    # |R| = 1 - .25 - .09 - .16 + 2 * .5 * .3 * .4 = 0.62; rbar = 0.4; (1 - r_ab)^3 = 0.216
    det = 1 - 0.25 - 0.09 - 0.16 + 0.12
    den = 2 * 49 / 47 * det + 0.4**2 * 0.216
    want_t = (0.5 - 0.3) * math.sqrt(49 * 1.4 / den)
    assert det == pytest.approx(0.62) and den == pytest.approx(1.3273259574, abs=1e-9)
    assert want_t == pytest.approx(1.43782, abs=1e-5)  # by hand: 0.2 * sqrt(51.683)
    t, p = williams_t(r_ag, r_bg, r_ab, n)
    assert t == pytest.approx(want_t, abs=1e-12)
    assert p == pytest.approx(2 * ss.t.sf(want_t, 47), abs=1e-12)
    assert 0.15 < p < 0.16
    # antisymmetric in the two correlations
    t2, p2 = williams_t(r_bg, r_ag, r_ab, n)
    assert t2 == pytest.approx(-t, abs=1e-12) and p2 == pytest.approx(p, abs=1e-12)


def test_williams_t_equal_correlations_and_undefined_cases():
    assert williams_t(0.42, 0.42, 0.7, 30) == (0.0, 1.0)
    assert williams_t(-0.2, -0.2, 0.1, 4) == (0.0, 1.0)
    for args in [(0.5, 0.3, 0.4, 3), (1.0, 0.3, 0.4, 50), (0.5, 0.3, -1.0, 50),
                 (math.nan, 0.3, 0.4, 50), (0.5, 0.3, 0.4, 0)]:
        t, p = williams_t(*args)
        assert math.isnan(t) and math.isnan(p), args


def test_meng_rosenthal_rubin_z_hand_worked():
    # rbar2 = (.25 + .09) / 2 = .17; f = .6 / (2 * .83) = .36145; h = (1 - f .17) / .83
    f = 0.6 / (2 * 0.83)
    h = (1 - f * 0.17) / 0.83
    want = (math.atanh(0.5) - math.atanh(0.3)) * math.sqrt(47 / (2 * 0.6 * h))
    assert f == pytest.approx(0.361446, abs=1e-6) and h == pytest.approx(1.130788, abs=1e-6)
    assert want == pytest.approx(1.41121, abs=1e-5)
    z, p = meng_z(0.5, 0.3, 0.4, 50)
    assert z == pytest.approx(want, abs=1e-12)
    assert p == pytest.approx(2 * ss.norm.sf(want), abs=1e-12)
    # f capped at 1: rbar2 = (.81 + .64) / 2 = .725, (1 - .1) / (2 * .275) = 1.64 > 1 -> h = 1
    z, _ = meng_z(0.9, 0.8, 0.1, 40)
    assert z == pytest.approx((math.atanh(0.9) - math.atanh(0.8)) * math.sqrt(37 / 1.8),
                              abs=1e-12)
    assert meng_z(0.3, 0.3, 0.5, 20) == (0.0, 1.0)
    for args in [(0.5, 0.3, 0.4, 3), (0.5, 0.3, 1.0, 50), (0.5, -1.0, 0.4, 50)]:
        z, p = meng_z(*args)
        assert math.isnan(z) and math.isnan(p), args


def test_class_tests_tiny_example_by_hand():
    values = [1, 2, 3, 2, 4, 5, 6, 7, math.nan, 9]
    classes = ["I", "I", "I", "PC", "PC", "C", "C", "C", "C", None]  # NaN value, no class
    got = class_tests(values, classes, correct_method="holm")
    assert list(got.columns) == list(CLASS_TEST_COLUMNS)
    kw = got.iloc[0]
    assert (kw["test"], kw["cls_a"], kw["n_a"]) == ("kruskal-wallis", "all", 8)
    assert pd.isna(kw["cls_b"]) and pd.isna(kw["n_b"])
    want = ss.kruskal([1, 2, 3], [2, 4], [5, 6, 7])
    assert kw["statistic"] == pytest.approx(want.statistic, abs=1e-12)
    assert kw["p"] == pytest.approx(want.pvalue, abs=1e-12) and kw["p_corrected"] == kw["p"]
    pairs = got.iloc[1:]
    assert list(zip(pairs["cls_a"], pairs["cls_b"], strict=True)) == [
        ("I", "PC"), ("I", "C"), ("PC", "C")]
    # U1 of I vs PC: 1 > 2? no, > 4? no; 2 = 2 (half), > 4? no; 3 > 2 yes, > 4? no -> 1.5
    assert pairs["statistic"].tolist() == [1.5, 0.0, 0.0]
    # rank-biserial 2 U1 / (n1 n2) - 1: 3 / 6 - 1 = -0.5; I and PC all below C: -1
    assert pairs["rank_biserial"].tolist() == [-0.5, -1.0, -1.0]
    groups = {"I": [1, 2, 3], "PC": [2, 4], "C": [5, 6, 7]}
    p = [ss.mannwhitneyu(groups[x], groups[y], alternative="two-sided").pvalue
         for x, y in [("I", "PC"), ("I", "C"), ("PC", "C")]]
    assert pairs["p"].tolist() == pytest.approx(p, abs=1e-12)
    assert pairs["p_corrected"].tolist() == pytest.approx(holm(p), abs=1e-12)
    assert got["significant"].tolist() == [bool(v <= 0.05) for v in got["p_corrected"]]


@pytest.mark.parametrize("method", ["holm", "fdr_bh", "none"])
def test_class_tests_match_scipy(method):
    rng = np.random.default_rng(4)
    classes = rng.choice(["C", "I", "PC"], 90)
    values = np.round(rng.normal(size=90) + (classes == "C") * 0.8, 1)  # ties, shifted C
    got = class_tests(values, classes, correct_method=method)
    groups = {k: values[classes == k] for k in ("I", "PC", "C")}
    want = ss.kruskal(*groups.values())
    assert got.iloc[0]["statistic"] == pytest.approx(want.statistic, abs=1e-12)
    assert got.iloc[0]["p"] == pytest.approx(want.pvalue, abs=1e-12)
    ps = []
    for (_, r), (x, y) in zip(got.iloc[1:].iterrows(), [("I", "PC"), ("I", "C"), ("PC", "C")],
                              strict=True):
        u = ss.mannwhitneyu(groups[x], groups[y], alternative="two-sided")
        u1 = sum((xi > yj) + 0.5 * (xi == yj) for xi in groups[x] for yj in groups[y])
        assert r["statistic"] == pytest.approx(u.statistic, abs=1e-9) == u1
        assert r["rank_biserial"] == pytest.approx(2 * u1 / (len(groups[x]) * len(groups[y]))
                                                   - 1, abs=1e-12)
        assert r["p"] == pytest.approx(u.pvalue, abs=1e-12)
        ps.append(u.pvalue)
    hand: dict[str, Callable[[list[float]], Any]] = {
        "holm": holm, "fdr_bh": benjamini_hochberg, "none": list}
    by_hand = hand[method]
    assert got.iloc[1:]["p_corrected"].tolist() == pytest.approx(by_hand(ps), abs=1e-12)
    assert got.iloc[1:]["rank_biserial"].iloc[1] < 0  # I below C


def test_class_tests_degenerate():
    one = class_tests([1.0, 2.0, 3.0], ["I", "I", "I"], correct_method="holm")
    assert len(one) == 1 and math.isnan(one.iloc[0]["p"]) and not one.iloc[0]["significant"]
    tied = class_tests([1.0] * 4, ["I", "I", "C", "C"], correct_method="holm")
    assert math.isnan(tied.iloc[0]["statistic"])
    assert tied.iloc[1]["rank_biserial"] == 0.0
    two = class_tests([1.0, 2.0, 3.0, 4.0], ["PC", "C", "PC", "C"], correct_method="holm")
    assert two.iloc[1][["cls_a", "cls_b"]].tolist() == ["PC", "C"]


def _enumerated(sums: list[float]) -> tuple[float, str]:
    """The exact two-sided sign-flip p of ``sums``, every sign pattern written out."""
    import itertools

    observed = abs(sum(sums))
    patterns = list(itertools.product((1, -1), repeat=len(sums)))
    extreme = sum(abs(sum(s * x for s, x in zip(signs, sums, strict=True))) >= observed - 1e-12
                  for signs in patterns)
    return extreme / len(patterns), f"by hand ({len(patterns)} patterns)"


_COLUMNS = ("name", "diff", "p", "p_bound", "test", "p_corrected", "p_corrected_bound",
            "significant", "correction", "family", "family_size")


def test_paired_family_by_hand():
    # two tests over clusters, each p by hand: [3, 1, 1] (sum 5; of the 8 patterns +-5 reach
    # it: p 2/8) and [1, 2, -0.5] (sum 2.5; +-3.5 and +-2.5 reach it: p 4/8); Holm over the
    # two: 0.25 * 2 = 0.5, then max(0.5, 0.5 * 1) = 0.5
    tests = [[3.0, 1.0, 1.0], [1.0, 2.0, -0.5]]
    assert _enumerated(tests[0])[0] == 0.25 and _enumerated(tests[1])[0] == 0.5
    seen: list[int] = []

    def run(todo, n):
        seen.append(n)
        return [(*_enumerated(t)[:1], False, _enumerated(t)[1]) for t in todo]

    rows = [{"name": "x", "diff": 5.0, "_test": 0}, {"name": "y", "diff": 2.5, "_test": 1},
            {"name": "none", "diff": math.nan, "_test": None, "test": "no clusters"}]
    out = paired_family(rows, tests, run, m=2, n_resamples="auto", method="holm",
                        family="fam", columns=_COLUMNS, name="flip", option="n_x",
                        noun="flips")
    assert list(out.columns) == list(_COLUMNS)
    assert seen == [2000]          # 'auto': 1,000 per test of the family under Holm
    np.testing.assert_allclose(out["p"], [0.25, 0.5, math.nan])
    np.testing.assert_allclose(out["p_corrected"], [0.5, 0.5, math.nan])
    assert out["test"].tolist() == ["by hand (8 patterns)"] * 2 + ["no clusters"]
    assert out["family"].tolist() == ["fam"] * 3 and (out["family_size"] == 2).all()
    assert not out["significant"].any() and not out["p_bound"].any()
    assert (out["correction"] == "holm").all()


def test_paired_family_not_run_and_bounds():
    rows = [{"name": "x", "diff": 1.0, "_test": 0}]
    out = paired_family([dict(r) for r in rows], [[1.0]], lambda t, n: [], m=1, n_resamples=0,
                        method="holm", family="f", columns=_COLUMNS, name="flip",
                        option="n_x", noun="flips")
    assert out["test"].tolist() == ["flip (not run: n_x=0)"]
    assert math.isnan(out["p"][0]) and out["family_size"][0] == 0
    # a random test none of whose 5 resamples reached the data: p is the floor 1/6, a bound,
    # above 0.05, so the decision is unresolved and said; 'auto' would draw 1,000
    from ncprobe.significance import ResolutionWarning

    with pytest.warns(ResolutionWarning, match=r"5 random flips.*n_x=1,000"):
        out = paired_family([dict(r, _col=1) for r in rows], [[1.0]],
                            lambda t, n: [([0.9, 1 / (n + 1)], [False, True], "random")],
                            m=1, n_resamples=5, method="holm", family="f",
                            columns=_COLUMNS, name="flip", option="n_x", noun="flips")
    assert out["p"][0] == pytest.approx(1 / 6) and bool(out["p_bound"][0])
    assert out["p_corrected"][0] == pytest.approx(1 / 6) and bool(out["p_corrected_bound"][0])


def test_cosine_by_hand():
    a = np.array([[1.0, 0.0], [3.0, 4.0], [0.0, 0.0]])
    b = np.array([[0.0, 2.0], [6.0, 8.0], [1.0, 1.0]])
    np.testing.assert_allclose(cosine(a, b), [0.0, 1.0, math.nan])


def test_class_separation_is_kruskal_wallis_eta2_in_every_resample():
    """``eta2_H = (H - k + 1) / (n - k)`` with scipy's tie-corrected H, on the items and in
    each resample drawn explicitly (ties from rounding and from drawing an item twice; a
    resample may miss a class, then k is the classes it holds)."""
    from scipy.stats import kruskal

    from ncprobe.stats import class_separation

    rng = np.random.default_rng(7)
    n = 40
    x = np.round(rng.normal(size=n), 1)
    c = np.array(["I", "PC", "C"])[rng.integers(0, 3, n)]
    c[:2] = "C"
    x[c == "I"] += 0.7
    point, drawn = class_separation(x, c, n_boot=60, seed=5)
    k = 3
    assert point == pytest.approx((kruskal(*(x[c == g] for g in "I PC C".split())).statistic
                                   - k + 1) / (n - k), abs=1e-12)
    idx = np.random.default_rng(5).integers(0, n, size=(60, n))
    for b, rows in enumerate(idx):
        xs, cs = x[rows], c[rows]
        present = [g for g in ("I", "PC", "C") if (cs == g).any()]
        h = kruskal(*(xs[cs == g] for g in present)).statistic
        assert drawn[b] == pytest.approx((h - len(present) + 1) / (n - len(present)),
                                         abs=1e-12)
    # no difference between the classes: about 0, the chance line
    null = [class_separation(rng.normal(size=300), rng.integers(0, 3, 300).astype(str),
                             n_boot=0)[0] for _ in range(200)]
    assert abs(np.mean(null)) < 0.003
    with pytest.raises(ValueError, match="drop the items"):
        class_separation([1.0, np.nan], ["I", "C"])
    assert np.isnan(class_separation([1.0, 1.0, 1.0], ["I", "C", "C"], n_boot=0)[0])
