"""ncprobe.astitch.linear: the choice of C on dev, the controls (majority, expression-only,
the control task's labels) and the linear table, checked by hand and against scikit-learn."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ncprobe.astitch import linear
from ncprobe.astitch.linear import (
    LINEAR_COLUMNS,
    PRED_COLUMNS,
    PRED_KEYS,
    control_labels,
    expression_only,
    fit_predict,
    linear_table,
    majority,
)
from ncprobe.errors import UsageError


def _blobs(rng, n0: int, n1: int) -> tuple[np.ndarray, np.ndarray]:
    """Two separable clouds: label 0 round (-1, -1), label 1 round (1, 1)."""
    X = np.r_[rng.normal(-1.0, 0.3, (n0, 2)), rng.normal(1.0, 0.3, (n1, 2))]
    return X, np.r_[np.zeros(n0, int), np.ones(n1, int)]


def _dev_f1(C, Xtr, ytr, Xd, yd) -> float:
    model = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=2000))
    return f1_score(yd, model.fit(Xtr, ytr).predict(Xd), average="macro", labels=[0, 1],
                    zero_division=0)


def test_fit_predict_takes_the_smallest_c_of_the_best_dev_f1() -> None:
    rng = np.random.default_rng(0)
    # imbalanced training (45 : 5): a strong penalty leaves the intercept alone, predicting
    # the majority label everywhere; a weaker one separates the clouds
    Xtr, ytr = _blobs(rng, 45, 5)
    Xd, yd = _blobs(rng, 10, 10)
    Xte, _ = _blobs(rng, 7, 9)
    grid = (10.0, 1.0, 0.1, 0.01, 0.001)            # any order: ties go to the smallest C
    dev = {C: _dev_f1(C, Xtr, ytr, Xd, yd) for C in grid}
    best = max(dev.values())
    want = min(C for C in grid if dev[C] == best)
    assert dev[0.001] < best and want > 0.001        # the choice matters here
    fit = fit_predict(Xtr, ytr, Xd, yd, Xte, c_grid=grid)
    assert fit.C == want and fit.dev_f1 == pytest.approx(best) and fit.converged
    refit = make_pipeline(StandardScaler(), LogisticRegression(C=want, max_iter=2000))
    assert np.array_equal(fit.pred, refit.fit(Xtr, ytr).predict(Xte))


def test_fit_predict_refuses_a_training_set_with_one_label() -> None:
    X = np.zeros((4, 2))
    with pytest.raises(UsageError, match="holds label 1 only \\(4 rows\\)"):
        fit_predict(X, [1, 1, 1, 1], X, [0, 1, 0, 1], X)
    with pytest.raises(UsageError, match="width"):
        fit_predict(X, [0, 1, 0, 1], np.zeros((4, 3)), [0, 1, 0, 1], X)


def test_a_fit_that_stops_early_is_flagged_not_warned(monkeypatch) -> None:
    rng = np.random.default_rng(1)
    X, y = _blobs(rng, 20, 20)
    X = np.c_[X, rng.normal(size=(40, 30))]
    monkeypatch.setattr(linear, "MAX_ITER", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = fit_predict(X, y, X, y, X, c_grid=(1.0,))
    assert not fit.converged


def test_control_labels_one_per_expression_and_seeded() -> None:
    expressions = [f"expr{i:03d}" for i in range(400)] * 2        # each type twice
    train = [1] * 80 + [0] * 20
    first = control_labels(expressions[::-1], train, seed=5)
    assert list(first) == sorted(set(expressions))               # one label per type
    assert first == control_labels(expressions, train, seed=5)   # input order irrelevant
    assert first != control_labels(expressions, train, seed=6)
    assert set(first.values()) <= {0, 1}
    share = np.mean(list(first.values()))                        # p(1) = 0.8, 400 draws
    assert abs(share - 0.8) < 4 * np.sqrt(0.8 * 0.2 / 400)
    assert set(control_labels(["a", "b"], [0, 0], seed=0).values()) == {0}


def test_majority_and_expression_only_by_hand() -> None:
    assert majority([1, 1, 0], 3).tolist() == [1, 1, 1]
    assert majority([1, 0], 2).tolist() == [0, 0]                 # a tie: 0 (idiomatic)
    # overall 1 (three of five); a -> 1, b tied -> overall 1, c -> 0, d unseen -> overall 1
    got = expression_only(["a", "a", "b", "b", "c"], [1, 1, 0, 1, 0], ["a", "b", "c", "d"])
    assert got.tolist() == [1, 1, 0, 1]
    with pytest.raises(UsageError):
        expression_only(["a"], [0, 1], ["a"])


def _cell(key: dict, rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["row", "expression", "label", "predicted",
                                        "control_label", "control_predicted"])
    for k in PRED_KEYS:
        frame[k] = key[k]
    frame["draw"], frame["decision"] = -1, np.nan
    return frame[list(PRED_COLUMNS)]


BASE = {"model": "bert", "lang": "en", "setting": "zero-shot", "level": "nc",
        "context": "excluded"}


def test_linear_table_scores_controls_and_order() -> None:
    task = {**BASE, "layer": 5, "probe_kind": "linear", "control": ""}
    base = {**BASE, "model": "", "layer": -1, "probe_kind": "control", "control": "majority"}
    early = {**task, "layer": 2}
    rows = [(1, "a", 0, 0, 1, 1), (2, "a", 1, 1, 1, 0), (3, "b", 0, 1, 0, 0),
            (4, "b", 1, 1, 0, 0), (5, "c", 1, 1, 1, 1)]
    preds = pd.concat([_cell(task, rows), _cell(base, [r[:3] + (1, -1, -1) for r in rows]),
                       _cell(early, rows)], ignore_index=True)
    fits = pd.DataFrame([{**task, "C": 0.1, "dev_macro_f1": 0.7, "control_C": 1.0,
                          "converged": True},
                         {**early, "C": 10.0, "dev_macro_f1": 0.6, "control_C": 1.0,
                          "converged": True}])
    out = linear_table(preds, fits, n_boot=200, seed=0)
    assert list(out.columns) == list(LINEAR_COLUMNS)
    # every cell for all uses, then every cell for the ambiguous ones (a and b: both labels)
    assert out["layer"].tolist() == [5, -1, 2] * 2
    assert out["control"].tolist() == ["", "majority", ""] * 2
    assert out["subset"].tolist() == ["all"] * 3 + ["ambiguous"] * 3
    assert out["n"].tolist() == [5] * 3 + [4] * 3
    first = out.iloc[0]
    # task: label 0 TP 1, gold 2, predicted 1 -> 2/3; label 1 TP 3, gold 3, predicted 4 -> 6/7
    f1 = (2 / 3 + 6 / 7) / 2
    # control task: labels 1 1 0 0 1, predictions 1 0 0 0 1: label 0 TP 2, gold 2, pred 3 ->
    # 4/5; label 1 TP 2, gold 3, pred 2 -> 4/5
    assert first["macro_f1"] == pytest.approx(f1) and first["accuracy"] == pytest.approx(0.8)
    assert first["control_f1"] == pytest.approx(0.8)
    assert first["control_low"] <= first["control_high"]
    assert first["selectivity"] == pytest.approx(f1 - 0.8)
    assert first["sel_low"] <= first["sel_high"]
    assert (first["C"], first["dev_macro_f1"], first["n"], first["n_expressions"]) == (
        0.1, 0.7, 5, 3)
    control = out.iloc[1]
    # majority: every row 1: label 0 F1 0, label 1 TP 3, gold 3, predicted 5 -> 6/8
    assert control["macro_f1"] == pytest.approx(0.75 / 2)
    assert np.isnan(control["C"]) and np.isnan(control["control_f1"])
    assert np.isnan(control["selectivity"]) and np.isnan(control["sel_low"])
    assert out.iloc[2]["C"] == 10.0


def test_linear_table_refuses_two_fits_of_one_cell() -> None:
    key = {**BASE, "layer": 1, "probe_kind": "linear", "control": ""}
    preds = _cell(key, [(1, "a", 0, 0, 0, 0), (2, "b", 1, 1, 1, 1)])
    fit = {**key, "C": 1.0, "dev_macro_f1": 0.5, "control_C": 1.0, "converged": True}
    with pytest.raises(UsageError, match="2 rows for the cell"):
        linear_table(preds, pd.DataFrame([fit, fit]), n_boot=10, seed=0)


def test_a_fixed_c_fit_is_scikit_learns_to_the_bit_and_refuses_a_non_finite_row() -> None:
    # the fits run without scikit-learn's per-fit checks (ncprobe checks the rows once):
    # the decision scores must still equal a plain pipeline's, fitted with every check on
    rng = np.random.default_rng(5)
    X = rng.normal(size=(80, 6))
    y = (X[:, 0] + 0.5 * rng.normal(size=80) > 0).astype(int)
    fit = linear.fit_fixed(0.3, X[:60], y[:60], X[60:])
    plain = make_pipeline(StandardScaler(), LogisticRegression(C=0.3, solver="lbfgs",
                                                               max_iter=linear.MAX_ITER))
    plain.fit(X[:60], y[:60])
    assert np.array_equal(fit.scores, plain.decision_function(X[60:]))
    assert np.array_equal(fit.pred, plain.predict(X[60:]))
    bad = X.copy()
    bad[3, 2] = np.nan
    bad[7, 0] = np.inf
    with pytest.raises(UsageError, match="X_train: 2 of 60 rows hold a NaN or infinite"):
        linear.fit_fixed(0.3, bad[:60], y[:60], X[60:])
