"""MDL by online code (issue 40, ncprobe.mdl): block ends, the codelength of a toy case by
hand, the logistic model against a plain loop, compression with and without a concept, the
cluster bootstrap by hand, bad input."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from ncprobe.errors import UsageError
from ncprobe.mdl import CodeInterval, OnlineCode, block_ends, codelength_interval, online_code
from ncprobe.stats import standardised_logistic as logistic

PERCENTS = ("0.1", "0.2", "0.4", "0.8", "1.6", "3.2", "6.25", "12.5", "25", "50", "100")


class Frequencies:
    """Ignores x: each class's add-one-smoothed frequency among the training rows."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> Frequencies:
        self.classes_ = np.arange(2)
        counts = np.bincount(y, minlength=2)
        self.p = (counts + 1) / (counts.sum() + 2)
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return np.tile(self.p, (len(X), 1))


def test_block_ends_round_up_exactly_and_merge_equal_ends() -> None:
    # 20 rows: ceil(0.02) .. ceil(0.64) = 1, ceil(1.25) = 2, ceil(2.5) = 3, 5, 10, 20
    assert block_ends(20) == (1, 2, 3, 5, 10, 20)
    # 1000 rows: 6.25 % is 62.5 rows, rounded up to 63
    assert block_ends(1000) == (1, 2, 4, 8, 16, 32, 63, 125, 250, 500, 1000)
    # 16 rows: 6.25 % is exactly 1 row, and stays 1 when rounded up
    assert block_ends(16) == (1, 2, 4, 8, 16)
    for n in (2, 3, 7, 99, 1234, 5120):
        expected = sorted({-(-n * Fraction(f) // 100) for f in PERCENTS})
        assert block_ends(n) == tuple(int(e) for e in expected)
    assert block_ends(2) == (1, 2)


def test_a_toy_code_computed_by_hand() -> None:
    # the labels in the order the rows are sent; the rows themselves in another order
    sent = np.array([0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 0, 0, 1, 1, 1, 1, 0, 1, 1, 1])
    order = np.random.default_rng(7).permutation(20)     # the documented order
    y = np.empty(20, dtype=np.int64)
    y[order] = sent
    X = np.arange(20.0)[:, None]
    code = online_code(X, y, Frequencies, seed=7)
    # blocks [0,1) [1,2) [2,3) [3,5) [5,10) [10,20)
    by_hand = [1.0,                                       # first block: log2 2 = 1 bit
               1.0,                                       # before it only a 0: uniform
               -math.log2(2 / 4),                         # before: one 0, one 1; sends a 1
               -math.log2(2 / 5), -math.log2(2 / 5)]      # before: 0,1,1; sends 0,0
    # before: 0,1,1,0,0 (3 zeros, 2 ones): p0 = 4/7, p1 = 3/7; sends 1,1,1,0,1
    by_hand += [-math.log2(3 / 7)] * 3 + [-math.log2(4 / 7), -math.log2(3 / 7)]
    # before: the first 10 (4 zeros, 6 ones): p0 = 5/12, p1 = 7/12; sends 0,0,1,1,1,1,0,1,1,1
    p = {0: 5 / 12, 1: 7 / 12}
    by_hand += [-math.log2(p[int(c)]) for c in sent[10:]]
    total = (3.0 - 2 * math.log2(2 / 5) - 4 * math.log2(3 / 7) - math.log2(4 / 7)
             - 3 * math.log2(5 / 12) - 7 * math.log2(7 / 12))
    assert math.isclose(sum(by_hand), total, abs_tol=1e-12)
    assert code.bits == pytest.approx(total, abs=1e-12)
    assert code.uniform_bits == 20.0
    assert code.compression == pytest.approx(20.0 / total, abs=1e-12)
    assert np.allclose(code.costs[order], by_hand, atol=1e-12, rtol=0)
    assert code.ends == (1, 2, 3, 5, 10, 20)
    assert code.uniform_blocks == (1,)                   # counted, not silent
    assert code.block[order].tolist() == [0, 1, 2, 3, 3] + [4] * 5 + [5] * 10
    assert code.classes == (0, 1)
    assert np.array_equal(code.order, order)


def _plain_loop(X: np.ndarray, y: np.ndarray, seed: int) -> tuple[float, list[int]]:
    """The online code written out: scikit-learn fitted per block, -log2 p summed."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    n, k = len(y), len(np.unique(y))
    order = np.random.default_rng(seed).permutation(n)
    xs, ys = X[order], y[order]
    ends = sorted({math.ceil(n * Fraction(f) / 100) for f in PERCENTS})
    bits, uniform = ends[0] * math.log2(k), []
    for i in range(1, len(ends)):
        a, b = ends[i - 1], ends[i]
        if len(set(ys[:a].tolist())) < k:
            bits += (b - a) * math.log2(k)
            uniform.append(i)
            continue
        model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=10_000))
        model.fit(xs[:a], ys[:a])
        proba = model.predict_proba(xs[a:b])
        for row, label in enumerate(ys[a:b]):
            bits -= math.log2(proba[row, list(model.classes_).index(label)])
    return bits, uniform


@pytest.mark.parametrize("k", [2, 3])
def test_the_logistic_code_equals_a_plain_loop(k: int) -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    y = (np.digitize(X[:, 0] + 0.5 * rng.normal(size=60), [-0.4, 0.4][: k - 1])
         if k == 3 else (X[:, 0] > 0).astype(int))
    code = online_code(X, y, logistic, seed=11)
    bits, uniform = _plain_loop(X, y, 11)
    assert code.bits == pytest.approx(bits, abs=1e-9)
    assert code.uniform_blocks == tuple(uniform)
    assert code.uniform_bits == pytest.approx(60 * math.log2(k), abs=1e-12)


def test_text_labels_and_given_classes() -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 2))
    codes = (X[:, 1] > 0).astype(int)
    text = np.where(codes == 1, "literal", "idiomatic")
    as_codes = online_code(X, codes, logistic, seed=2)
    as_text = online_code(X, text, logistic, seed=2, classes=("idiomatic", "literal"))
    assert as_text.bits == pytest.approx(as_codes.bits, abs=1e-12)
    assert as_text.classes == ("idiomatic", "literal")
    # a class that never occurs: log2 3 bits a row uniformly, and every block uniform
    three = online_code(X, text, logistic, seed=2, classes=("idiomatic", "literal", "other"))
    assert three.uniform_bits == pytest.approx(40 * math.log2(3), abs=1e-12)
    assert three.uniform_blocks == tuple(range(1, len(three.ends)))
    assert three.compression == pytest.approx(1.0, abs=1e-12)


def test_compression_above_one_for_a_concept_and_not_for_shuffled_labels() -> None:
    rng = np.random.default_rng(5)
    n = 400
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    learned = online_code(X, y, logistic, seed=0)
    # a linear concept without noise: after a few dozen rows most rows cost well under 0.5 bit,
    # so the code is under half the uniform one
    assert learned.compression > 2.0
    shuffled = online_code(X, rng.permutation(y), logistic, seed=0)
    # no concept: every model's probabilities only add regret to the labels' own frequency
    # (at most the uniform 1 bit a row: they are near balanced), so the code cannot be much
    # shorter than n bits; 2 % (8 bits of 400) is the most an n-row sample's label frequency
    # off 1/2 could save (n (1 - H(p)) for |p - 1/2| within 2.5 standard errors is about 5 bits)
    assert shuffled.compression < 1.02
    assert learned.compression > shuffled.compression + 1.0


def test_the_cluster_bootstrap_resamples_whole_groups_by_hand() -> None:
    costs = np.array([1.0, 0.5, 2.0, 0.25, 3.0, 0.75])
    groups = ["b", "a", "b", "c", "a", "c"]               # sorted: a, b, c
    code = OnlineCode(bits=float(costs.sum()), uniform_bits=6.0,
                      compression=6.0 / float(costs.sum()), costs=costs,
                      block=np.zeros(6, dtype=np.int64), ends=(6,), uniform_blocks=(),
                      classes=(0, 1), order=np.arange(6))
    got = codelength_interval(code, groups, n_boot=50, seed=9, level=0.8)
    draws = np.random.default_rng(9).integers(0, 3, size=(50, 3))
    names = ["a", "b", "c"]
    bits, comp = [], []
    for draw in draws:
        rows = [r for g in draw for r in range(6) if groups[r] == names[g]]
        bits.append(sum(costs[r] for r in rows))
        comp.append(len(rows) * 1.0 / bits[-1])
    lo, hi = np.percentile(bits, [10, 90])
    clo, chi = np.percentile(comp, [10, 90])
    assert (got.bits_low, got.bits_high) == pytest.approx((lo, hi), abs=1e-12)
    assert (got.compression_low, got.compression_high) == pytest.approx((clo, chi), abs=1e-12)
    assert (got.n_groups, got.n_boot, got.level) == (3, 50, 0.8)
    # no resamples, or a single group: no interval
    assert math.isnan(codelength_interval(code, groups, n_boot=0).bits_low)
    assert math.isnan(codelength_interval(code, ["x"] * 6, n_boot=50).compression_high)


def test_the_interval_holds_the_point_estimate() -> None:
    rng = np.random.default_rng(6)
    X = rng.normal(size=(120, 3))
    groups = np.repeat(np.arange(30), 4)
    y = (X[:, 0] + rng.normal(scale=0.5, size=120) > 0).astype(int)
    code = online_code(X, y, logistic, seed=1)
    ci = codelength_interval(code, groups, n_boot=200, seed=1)
    assert isinstance(ci, CodeInterval)
    assert ci.bits_low < code.bits < ci.bits_high
    assert ci.compression_low < code.compression < ci.compression_high


def test_bad_input_is_named() -> None:
    X, y = np.zeros((10, 2)), np.array([0, 1] * 5)
    with pytest.raises(UsageError, match="10 rows but the labels 9"):
        online_code(X, y[:9], logistic)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(UsageError, match="1 of 10 rows hold a NaN or infinite"):
        online_code(bad, y, logistic)
    with pytest.raises(UsageError, match="at least 2 classes"):
        online_code(X, np.zeros(10, dtype=int), logistic)
    with pytest.raises(UsageError, match="labels outside the classes"):
        online_code(X, y, logistic, classes=(0, 2))
    with pytest.raises(UsageError, match="labels are missing"):
        online_code(X, np.array([0, 1, None] + [1] * 7, dtype=object), logistic)
    with pytest.raises(UsageError, match="at least 2 rows"):
        online_code(X[:1], y[:1], logistic)
    code = online_code(np.arange(10.0), y, Frequencies)
    with pytest.raises(UsageError, match="9 groups for 10 rows"):
        codelength_interval(code, ["g"] * 9)
    with pytest.raises(UsageError, match="1 of 10 rows have no group"):
        codelength_interval(code, ["g"] * 9 + [None])
    with pytest.raises(UsageError, match="n_boot"):
        codelength_interval(code, ["g"] * 10, n_boot=-1)
    with pytest.raises(UsageError, match="level"):
        codelength_interval(code, ["g"] * 10, level=1.0)


def test_a_logistic_probability_that_rounds_to_zero_keeps_its_finite_cost() -> None:
    # regression: two rows a millionth apart, standardised, put the third row some 2e6
    # standard deviations out; predict_proba rounds its label's probability to 0 (an
    # infinite cost), its decision function still gives the finite cost
    from scipy.special import log_expit

    sent_x = np.r_[0.0, 1e-6, 1.0, np.linspace(-1, 1, 17)]
    sent_y = np.r_[0, 1, 0, np.arange(17) % 2]
    order = np.random.default_rng(0).permutation(20)
    X, y = np.empty(20), np.empty(20, dtype=np.int64)
    X[order], y[order] = sent_x, sent_y
    code = online_code(X, y, logistic, seed=0)
    model = logistic().fit(sent_x[:2, None], sent_y[:2])
    assert model.predict_proba(sent_x[2:3, None])[0, 0] == 0.0
    scaler, fit = model[0], model[-1]
    d = fit.coef_[0, 0] * (1.0 - scaler.mean_[0]) / scaler.scale_[0] + fit.intercept_[0]
    by_hand = -log_expit(-d) / math.log(2.0)              # -log2 p(0) = -log2(1 - expit(d))
    assert 1e5 < by_hand < math.inf
    assert code.costs[order[2]] == pytest.approx(by_hand, rel=1e-12)


def test_a_probability_of_zero_is_an_error_not_a_row_dropped() -> None:
    class Certain(Frequencies):
        def predict_proba(self, X: np.ndarray) -> np.ndarray:
            return np.tile([1.0, 0.0], (len(X), 1))

    with pytest.raises(ValueError, match="probability 0, an infinite code"):
        online_code(np.zeros(20), [0, 1] * 10, Certain)
