"""The NCC probe's classifiers (:mod:`ncprobe.ncc.classify`) on data built here.

Expected values come from the test itself: cut points read off hand-made examples (the
scores of the tied candidates worked out in comments), a brute-force loop over every pair of
candidate cut points in plain Python, the modal votes counted by hand, scikit-learn's own
``cross_val_predict`` for the logistic regression, and a hand-written fold loop for the cut
points."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ncprobe.ncc import NCC_CLASSES
from ncprobe.ncc.classify import (
    Candidate,
    CutPoints,
    cross_validated,
    modal,
    nested_selected,
    repeated,
)

NINE = [1, 2, 3, 4, 5, 6, 7, 8, 9]
ORDERED = ["NC"] * 3 + ["PC"] * 3 + ["C"] * 3


# --- CutPoints ------------------------------------------------------------------------------


def test_cut_points_separate_a_rising_measure_at_the_midpoints() -> None:
    fit = CutPoints.fit(NINE, ORDERED)
    assert (fit.low, fit.high, fit.rising, fit.train_accuracy) == (3.5, 6.5, True, 1.0)
    assert fit.predict([0, 3.4, 3.5, 6.4, 6.5, 100]).tolist() == ["NC", "NC", "PC", "PC", "C",
                                                                  "C"]


def test_cut_points_turn_round_for_a_falling_measure() -> None:
    fit = CutPoints.fit(NINE, ORDERED[::-1])
    assert (fit.low, fit.high, fit.rising, fit.train_accuracy) == (3.5, 6.5, False, 1.0)
    # falling: C below the lower cut, NC at or above the upper one
    assert fit.predict([1, 5, 9]).tolist() == ["C", "PC", "NC"]


def test_a_class_absent_from_training_gets_an_empty_interval() -> None:
    # no PC: the only perfect pair puts both cuts at 2.5 (low == high), PC empty
    fit = CutPoints.fit([1, 2, 3, 4], ["NC", "NC", "C", "C"])
    assert (fit.low, fit.high, fit.rising, fit.train_accuracy) == (2.5, 2.5, True, 1.0)
    assert fit.predict([2.4, 2.5, 2.6]).tolist() == ["NC", "C", "C"]


def test_a_single_class_puts_the_cuts_at_infinity_rising_first() -> None:
    # every item PC: (-inf, +inf) is right on all three in both directions, and is the
    # class-balanced split (0 items below low, 3 below high) in both: rising comes first
    fit = CutPoints.fit([1.0, 2.0, 3.0], ["PC"] * 3)
    assert (fit.low, fit.high, fit.rising) == (-math.inf, math.inf, True)
    assert fit.predict([-1e300, 1e300]).tolist() == ["PC", "PC"]


def test_ties_go_to_the_class_balanced_split_not_the_first_pair() -> None:
    y = ["NC", "NC", "PC", "NC", "PC", "PC", "NC", "PC", "C", "C"]
    # rising, the lower cut below the first i values gains cum_NC(i) - cum_PC(i):
    # i = 0..8: 0, 1, 2, 1, 2, 1, 0, 1, 0: a tie of 2 at i = 2 (low 2.5) and i = 4 (low 4.5);
    # the upper cut gains cum_PC(j) - cum_C(j), 4 at j = 8 alone (high 8.5): 2 + 4 + 2 = 8 right.
    # 4 NC items: i = 4 is the class-balanced place (|4 - 4| = 0 against |2 - 4| = 2)
    fit = CutPoints.fit(range(1, 11), y)
    assert (fit.low, fit.high, fit.rising, fit.train_accuracy) == (4.5, 8.5, True, 0.8)


def test_equal_distances_go_to_the_smaller_cut() -> None:
    # i = 1 (low 1.5) and i = 3 (low 3.5) both right on 5 of 6 (NC, PC, NC | PC | C, C) and
    # both one item from the 2 NC: the smaller lower cut wins
    fit = CutPoints.fit(range(1, 7), ["NC", "PC", "NC", "PC", "C", "C"])
    assert (fit.low, fit.high, fit.rising) == (1.5, 4.5, True)
    assert fit.train_accuracy == pytest.approx(5 / 6)


def _brute_force(x: list[float], y: list[str]) -> tuple[float, float, float, bool]:
    """``(accuracy, low, high, rising)`` by the documented rule, in plain Python: every pair of
    candidate cuts in both directions, each prediction made item by item; the most right,
    then the least distance from the class-balanced split, then the first in the order
    rising/falling, low, high."""
    values = sorted(set(x))
    mids = [(a + b) / 2 for a, b in zip(values, values[1:], strict=False)]
    cuts = [-math.inf, *mids, math.inf]
    n_pc = y.count("PC")
    best: tuple[int, int, float, float, bool] | None = None        # (-right, distance, ...)
    for first, last in (("NC", "C"), ("C", "NC")):
        n_first = y.count(first)
        for low, high in itertools.combinations_with_replacement(cuts, 2):
            right = sum((first if v < low else last if v >= high else "PC") == t
                        for v, t in zip(x, y, strict=True))
            distance = (abs(sum(v < low for v in x) - n_first)
                        + abs(sum(v < high for v in x) - n_first - n_pc))
            key = (-right, distance, low, high, first == "NC")
            if best is None or key[:2] < best[:2]:
                best = key
    assert best is not None
    return -best[0] / len(x), best[2], best[3], best[4]


@pytest.mark.parametrize("seed", range(8))
def test_the_search_is_a_brute_force_loop_ties_included(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 25
    # many ties in x (rounded to 0.5) and a weak trend, rising for even seeds, falling for odd
    y = rng.choice(NCC_CLASSES, n).tolist()
    trend = np.array([NCC_CLASSES.index(c) for c in y]) * (1 if seed % 2 == 0 else -1)
    x = (np.round(2 * (trend + rng.normal(0, 1.2, n))) / 2).tolist()
    fit = CutPoints.fit(x, y)
    accuracy, low, high, rising = _brute_force(x, y)
    assert fit.train_accuracy == pytest.approx(accuracy)
    assert (fit.low, fit.high, fit.rising) == (low, high, rising)
    # the reported accuracy is that of the cut points' own predictions
    assert np.mean(fit.predict(x) == np.array(y, dtype=object)) == pytest.approx(
        fit.train_accuracy)


def test_cut_points_refuse_nan_and_unknown_labels() -> None:
    with pytest.raises(ValueError, match="1 of 3 values are NaN"):
        CutPoints.fit([1.0, math.nan, 2.0], ["NC", "PC", "C"])
    with pytest.raises(ValueError, match="'X'"):
        CutPoints.fit([1.0, 2.0], ["NC", "X"])
    with pytest.raises(ValueError, match="NaN"):
        CutPoints.fit(NINE, ORDERED).predict([math.nan])


# --- the modal vote ---------------------------------------------------------------------------


def test_modal_takes_the_majority_and_breaks_ties_by_the_earliest_repeat() -> None:
    votes = np.array([["A", "A", "C", "B"],
                      ["B", "B", "C", "B"],
                      ["B", "B", "C", "A"],
                      ["A", "C", "A", "A"],
                      ["C", "C", "B", "C"]], dtype=object)
    # item 0: A 2, B 2, C 1 -> A (repeat 0's); item 1: A 1, B 2, C 2 -> B (repeat 1 is the
    # earliest of B and C); item 2: C 3 -> C; item 3: B 2, A 2, C 1 -> B (repeat 0's)
    assert modal(votes).tolist() == ["A", "B", "C", "B"]
    assert modal(votes[:1]).tolist() == ["A", "A", "C", "B"]


# --- cross-validation -----------------------------------------------------------------------


def _three_classes(n_per: int, spread: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    gold = np.repeat(np.array(NCC_CLASSES, dtype=object), n_per)
    centre = np.repeat([0.0, 10.0, 20.0], n_per)
    return centre[:, None] + rng.normal(0, spread, (3 * n_per, 3)), gold


@pytest.mark.parametrize("kind", ["single", "all"])
def test_separable_classes_are_all_predicted_right(kind: str) -> None:
    features, gold = _three_classes(40, 1.0, 0)
    x = features[:, :1] if kind == "single" else features
    assert (cross_validated(x, gold, kind) == gold).all()
    # falling: the same measure negated
    if kind == "single":
        assert (cross_validated(-x, gold, kind) == gold).all()


@pytest.mark.parametrize("kind", ["single", "all"])
def test_shuffled_labels_give_chance_accuracy(kind: str) -> None:
    features, gold = _three_classes(100, 1.0, 1)
    shuffled = np.random.default_rng(7).permutation(gold)
    x = features[:, :1] if kind == "single" else features
    accuracy = float(np.mean(cross_validated(x, shuffled, kind) == shuffled))
    # chance is 1/3 (classes balanced); the binomial sd over 300 items is 0.027. The same
    # cut points fitted in-sample do better on noise: the folds keep the items out.
    assert 0.2 < accuracy < 0.45
    if kind == "single":
        assert CutPoints.fit(x[:, 0], shuffled).train_accuracy > accuracy


def test_the_cut_points_of_one_repeat_are_a_fold_loop() -> None:
    features, gold = _three_classes(30, 6.0, 2)
    x = features[:, 0]
    expected = np.empty(len(x), dtype=object)
    for train, test in StratifiedKFold(10, shuffle=True, random_state=3).split(x, gold):
        expected[test] = CutPoints.fit(x[train], gold[train]).predict(x[test])
    assert cross_validated(x, gold, "single", repeats=1, seed=3).tolist() == expected.tolist()


def test_the_logistic_regression_of_one_repeat_is_sklearns_cross_val_predict() -> None:
    features, gold = _three_classes(30, 6.0, 3)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=10_000))
    expected = cross_val_predict(model, features, gold.astype(str),
                                 cv=StratifiedKFold(10, shuffle=True, random_state=5))
    got = cross_validated(features, gold, "all", repeats=1, seed=5)
    assert got.tolist() == expected.tolist()


@pytest.mark.parametrize("kind", ["single", "all"])
def test_repeats_are_the_modal_vote_of_seeds_seed_to_seed_plus_r(kind: str) -> None:
    features, gold = _three_classes(30, 7.0, 4)
    x = features[:, :1] if kind == "single" else features
    each = np.stack([cross_validated(x, gold, kind, repeats=1, seed=s) for s in (2, 3, 4)])
    assert cross_validated(x, gold, kind, repeats=3, seed=2).tolist() == modal(each).tolist()
    # deterministic
    assert (cross_validated(x, gold, kind, repeats=3, seed=2)
            == cross_validated(x, gold, kind, repeats=3, seed=2)).all()


def test_items_with_a_nan_feature_are_refused_and_counted() -> None:
    features, gold = _three_classes(10, 1.0, 5)
    features[[3, 17], [0, 2]] = np.nan
    with pytest.raises(ValueError, match="2 of 30 items have a NaN"):
        cross_validated(features, gold, "all")


def test_the_single_classifier_takes_one_measure_and_kinds_are_checked() -> None:
    features, gold = _three_classes(10, 1.0, 6)
    with pytest.raises(ValueError, match="takes one measure, got 3"):
        cross_validated(features, gold, "single")
    with pytest.raises(ValueError, match="unknown classifier kind"):
        cross_validated(features, gold, "every")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'D'"):
        cross_validated(features[:, 0], [*gold[:-1], "D"], "single")


def test_fits_that_stop_at_max_iter_are_counted_in_one_warning() -> None:
    features, gold = _three_classes(10, 5.0, 7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cross_validated(features, gold, "all", repeats=2, max_iter=1)
    convergence = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(convergence) == 1
    assert "20 of 20 logistic-regression fits stopped at max_iter=1" in str(
        convergence[0].message)


# --- the repeats and the nested selection -----------------------------------------------------


def test_repeated_gives_each_repeats_predictions_and_their_modal_is_cross_validated() -> None:
    rng = np.random.default_rng(3)
    gold = np.array(["NC", "PC", "C"] * 20, dtype=object)
    x = np.array([{"NC": 0, "PC": 1, "C": 2}[g] for g in gold]) + rng.normal(0, 0.6, 60)
    table = repeated(x, gold, "single", folds=5, repeats=3, seed=2)
    assert table.shape == (3, 60)
    # repeat r is the hand-written fold loop with the split seeded 2 + r
    codes = np.array([NCC_CLASSES.index(g) for g in gold])
    for r in range(3):
        by_hand = np.empty(60, dtype=object)
        for train, test in StratifiedKFold(5, shuffle=True, random_state=2 + r).split(x, codes):
            by_hand[test] = CutPoints.fit(x[train], gold[train]).predict(x[test])
        assert table[r].tolist() == by_hand.tolist()
    assert cross_validated(x, gold, "single", folds=5, repeats=3, seed=2).tolist() == \
        modal(table).tolist()


def _toy(n_noise: int, sigma: float, n: int = 300, seed: int = 0):
    """Balanced gold classes; feature 0 = the class's rank + N(0, sigma) (the only one that
    predicts), then ``n_noise`` features of pure noise."""
    rng = np.random.default_rng(seed)
    rank = np.repeat([0, 1, 2], n // 3)
    gold = np.array(NCC_CLASSES, dtype=object)[rank]
    signal = rank + rng.normal(0.0, sigma, n)
    noise = rng.normal(0.0, 1.0, (n_noise, n))
    return gold, signal, noise


def test_nested_selection_is_honest_where_the_maximum_over_noise_rows_is_not() -> None:
    from scipy.stats import norm

    sigma = 0.5
    gold, signal, noise = _toy(40, sigma)
    # the best cut points of the true model are 0.5 and 1.5: NC and C right with probability
    # Phi(0.5 / sigma), PC with 2 Phi(0.5 / sigma) - 1
    truth = (4 * norm.cdf(0.5 / sigma) - 1) / 3                             # 0.788
    noise_rows = [Candidate(f"noise {k}", f[:, None], "single") for k, f in enumerate(noise)]
    # each noise row cross-validated on its own, as a row of the table is: the maximum over
    # them is chosen on the items it is scored on
    rows = [float((cross_validated(c.features, gold, "single", folds=5, repeats=1, seed=0)
                   == gold).mean()) for c in noise_rows]
    best_noise = max(rows)
    nested_noise = nested_selected(noise_rows, gold, folds=5, repeats=1, seed=0)
    honest = float((nested_noise.predictions[0] == gold).mean())
    # noise carries nothing: its true accuracy is 1/3 (balanced classes); the nested estimate
    # is within 3 standard errors (sqrt(1/3 * 2/3 / 300) = 0.027) of it, while the maximum
    # of 40 such estimates stays below 1/3 + 1.5 SE only with probability Phi(1.5)^40 = 0.06
    assert abs(honest - 1 / 3) < 3 * 0.0272
    assert best_noise > 1 / 3 + 1.5 * 0.0272 and best_noise > honest + 0.03
    # with the predictive feature among the noise, the procedure finds it: near the truth
    every = [Candidate("signal", signal[:, None], "single"), *noise_rows]
    nested = nested_selected(every, gold, folds=5, repeats=2, seed=0)
    assert nested.predictions.shape == (2, 300)
    for r in range(2):
        assert abs(float((nested.predictions[r] == gold).mean()) - truth) < 3 * 0.0236
    assert nested.chosen == ("signal",) * 10 and nested.counts() == {"signal": 10}


def test_nested_selection_when_the_answer_is_known_exactly() -> None:
    gold, _, noise = _toy(5, 0.5, n=90, seed=1)
    rank = np.array([NCC_CLASSES.index(g) for g in gold], dtype=float)
    # a feature that separates the classes perfectly, twice (the second falling): every inner
    # CV scores both 100%, the tie goes to the first; every outer item is then right
    cands = [Candidate(f"noise {k}", f[:, None], "single") for k, f in enumerate(noise)]
    cands += [Candidate("perfect", rank[:, None], "single"),
              Candidate("perfect, falling", -rank[:, None], "single")]
    nested = nested_selected(cands, gold, folds=3, repeats=2, seed=4)
    assert nested.chosen == ("perfect",) * 6
    assert (nested.predictions == gold).all()
    # the all-measure classifier on the perfect feature is a candidate too: 100% as well,
    # but after it in the list, so never chosen
    both = [Candidate("perfect", rank[:, None], "single"),
            Candidate("all", np.column_stack([rank, noise[0]]), "all")]
    assert nested_selected(both, gold, folds=3, repeats=1, seed=0).chosen == ("perfect",) * 3
    with pytest.raises(ValueError, match="at least one candidate"):
        nested_selected([], gold)
    with pytest.raises(ValueError, match="different numbers of items"):
        nested_selected([cands[0], Candidate("short", rank[:10, None], "single")], gold)


def test_the_test_fold_never_takes_part_in_the_choice() -> None:
    # candidate "leaky" equals the gold rank on the first outer fold's test items only and is
    # noise elsewhere; "fair" predicts moderately everywhere. Chosen on the training items,
    # "leaky" is never picked in that fold, and its test items are classified by "fair"
    gold, signal, noise = _toy(1, 0.6, n=120, seed=2)
    codes = np.array([NCC_CLASSES.index(g) for g in gold])
    train, test = next(StratifiedKFold(4, shuffle=True, random_state=0).split(signal, codes))
    leaky = noise[0].copy()
    leaky[test] = codes[test] * 10.0
    nested = nested_selected([Candidate("leaky", leaky[:, None], "single"),
                              Candidate("fair", signal[:, None], "single")], gold, folds=4,
                             repeats=1, seed=0)
    assert nested.chosen[0] == "fair"
    fair = CutPoints.fit(signal[train], gold[train]).predict(signal[test])
    assert nested.predictions[0, test].tolist() == fair.tolist()
