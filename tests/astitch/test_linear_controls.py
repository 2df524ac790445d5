"""Issue 38, the linear probe's token-from-type controls: the within-expression permutation
control, the baselines and the type oracle, the AUROC of the probe's scores, the two subsets,
the grid that dev never picks at an edge, and the JSON rows; every expected number worked
out by hand or with scikit-learn on a small case."""

from __future__ import annotations

import math
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ncprobe.astitch.config import AStitchConfig
from ncprobe.astitch.linear import (
    PRED_COLUMNS,
    chance_draws,
    fit_predict,
    linear_table,
    type_oracle,
    within_permutation,
)
from ncprobe.astitch.probe import _baselines, _fit_pair
from ncprobe.errors import UsageError

from . import handmade_results as hm


def _f1(y, p) -> float:
    return f1_score(y, p, average="macro", labels=[0, 1], zero_division=0)


# --- the within-expression permutation ----------------------------------------------------------


def test_the_within_permutation_keeps_every_expressions_label_counts() -> None:
    expr = ["a", "b", "a", "c", "a", "b", "c", "c", "d", "a"]
    y = [0, 1, 1, 0, 0, 0, 0, 0, 1, 1]
    drawn = within_permutation(expr, y, seed=3, draws=50)
    assert drawn.shape == (50, 10)
    counts = {e: Counter(v for x, v in zip(expr, y, strict=True) if x == e) for e in "abcd"}
    for row in drawn:
        for e in "abcd":
            assert Counter(int(v) for x, v in zip(expr, row, strict=True) if x == e) \
                == counts[e]
    # c (one label) and d (one use) never change; a and b do, in some draw
    for i in (3, 6, 7, 8):
        assert (drawn[:, i] == y[i]).all()
    assert any((row != np.array(y)).any() for row in drawn)
    assert len({tuple(row) for row in drawn}) > 1
    # seeded: the same draws again, other ones for another seed
    assert np.array_equal(drawn, within_permutation(expr, y, seed=3, draws=50))
    assert not np.array_equal(drawn, within_permutation(expr, y, seed=4, draws=50))
    with pytest.raises(UsageError, match="draws"):
        within_permutation(expr, y, seed=0, draws=0)


def test_within_draws_is_a_checked_option() -> None:
    assert AStitchConfig().within_draws == 20
    assert AStitchConfig(within_draws=5).within_draws == 5
    for bad in (0, -1, True, 2.5):
        with pytest.raises(UsageError, match="--within-draws"):
            AStitchConfig(within_draws=bad)


# --- the baselines and the type oracle --------------------------------------------------------


def _records(rows: list[tuple[str, str, int]]) -> list:
    return [SimpleNamespace(split=split, expression=e, label=lab, row=i + 1)
            for i, (split, e, lab) in enumerate(rows)]


TRAIN = [("train_zero_shot", e, lab) for e, lab in
         (("x", 0), ("x", 0), ("y", 0), ("y", 1), ("z", 0))]          # majority 0, share 1/5
TEST = [("test", e, lab) for e, lab in
        (("a", 0), ("a", 0), ("a", 1), ("b", 1), ("b", 1), ("c", 0), ("c", 1))]


def test_the_baselines_and_the_type_oracle_by_hand() -> None:
    recs = _records(TRAIN + [("dev", "x", 1)] + TEST)
    y = np.array([r.label for r in recs])
    preds = pd.concat(_baselines("en", recs, y, ["zero-shot"],
                                 AStitchConfig(within_draws=7, seed=5)), ignore_index=True)
    assert list(preds.columns) == list(PRED_COLUMNS)
    out = linear_table(preds, pd.DataFrame(columns=["model", "lang", "setting", "layer",
                                                    "level", "context", "probe_kind",
                                                    "control", "C", "dev_macro_f1"]),
                       n_boot=0, seed=0)
    got = {(r["subset"], r["control"]): r for r in out.to_dict("records")
           if r["probe_kind"] == "baseline"}
    # test labels 0 0 1 | 1 1 | 0 1: three 0s, four 1s
    # majority (train) predicts 0: F1(0) = 2*3/(3+7) = 0.6, F1(1) = 0
    assert got[("all", "majority_train")]["macro_f1"] == pytest.approx(0.3)
    # majority (test) predicts 1: F1(1) = 2*4/(4+7) = 8/11, F1(0) = 0
    assert got[("all", "majority_test")]["macro_f1"] == pytest.approx(4 / 11)
    # type oracle: a -> 0, b -> 1, c a tie -> 0 (idiomatic): predictions 0 0 0 1 1 0 0
    # label 0: TP 3, gold 3, predicted 5 -> 6/8; label 1: TP 2, gold 4, predicted 2 -> 4/6
    assert type_oracle([e for _, e, _ in TEST], [lab for *_, lab in TEST]).tolist() == [
        0, 0, 0, 1, 1, 0, 0]
    assert got[("all", "type_oracle")]["macro_f1"] == pytest.approx((6 / 8 + 4 / 6) / 2)
    # stratified chance: the mean macro-F1 of its 7 draws
    draws = chance_draws([lab for *_, lab in TRAIN], len(TEST), seed=5, draws=7)
    gold = [lab for *_, lab in TEST]
    assert got[("all", "chance")]["n_draws"] == 7
    assert got[("all", "chance")]["macro_f1"] == pytest.approx(
        np.mean([_f1(gold, d) for d in draws]))
    # ambiguous: a and c (both labels), rows 0 0 1 0 1; the oracle predicts 0 0 0 0 0:
    # label 0: TP 3, gold 3, predicted 5 -> 6/8; label 1: 0
    assert got[("ambiguous", "type_oracle")]["n"] == 5
    assert got[("ambiguous", "type_oracle")]["macro_f1"] == pytest.approx(6 / 8 / 2)


def test_chance_draws_follow_the_training_share() -> None:
    many = chance_draws([0, 0, 0, 1], 2000, seed=1, draws=3)
    assert many.shape == (3, 2000)
    assert abs(many.mean() - 0.25) < 0.03


# --- the linear table: AUROC of the scores, the within control, the subsets -------------------


KEY = {"model": "m", "lang": "en", "setting": "zero-shot", "layer": "3", "level": "nc",
       "context": "excluded", "probe_kind": "linear", "control": ""}
EXPR = ["a", "a", "a", "b", "b", "c"]
GOLD = [0, 1, 1, 0, 0, 1]                     # a ambiguous; b, c one label each


def _rows(key: dict, predicted, decision, draw: int = -1) -> pd.DataFrame:
    return pd.DataFrame({**{k: [v] * 6 for k, v in key.items()}, "row": range(1, 7),
                         "expression": EXPR, "label": GOLD, "predicted": predicted,
                         "control_label": -1, "control_predicted": -1, "draw": draw,
                         "decision": decision})[list(PRED_COLUMNS)]


def _auroc_by_hand(scores, labels) -> float:
    pos = [s for s, lab in zip(scores, labels, strict=True) if lab == 1]
    neg = [s for s, lab in zip(scores, labels, strict=True) if lab == 0]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def test_the_table_scores_the_auroc_and_the_within_control_by_hand() -> None:
    task_pred = [0, 1, 0, 0, 1, 1]
    decision = [-1.0, 0.5, -0.2, 0.1, -2.0, 3.0]
    within = [[0, 0, 1, 0, 0, 1], [1, 1, 1, 0, 0, 0]]
    preds = pd.concat([_rows(KEY, task_pred, decision)]
                      + [_rows({**KEY, "control": "within"}, w, np.nan, d)
                         for d, w in enumerate(within)], ignore_index=True)
    fits = pd.DataFrame([{**KEY, "C": 1.0, "dev_macro_f1": 0.6}])
    out = linear_table(preds, fits, n_boot=100, seed=0)
    assert len(out) == 2 and out["subset"].tolist() == ["all", "ambiguous"]
    all_, amb = out.iloc[0], out.iloc[1]
    # pairs (literal, idiomatic): literal 0.5, -0.2, 3.0 against idiomatic -1.0, 0.1, -2.0
    # 0.5 and 3.0 above all three, -0.2 above two: 8 of 9 pairs
    assert all_["auroc"] == pytest.approx(_auroc_by_hand(decision, GOLD)) == pytest.approx(8 / 9)
    assert all_["auroc_low"] <= all_["auroc_high"]
    f1_task = _f1(GOLD, task_pred)
    mean_within = np.mean([_f1(GOLD, w) for w in within])
    assert all_["macro_f1"] == pytest.approx(f1_task)
    assert all_["within_f1"] == pytest.approx(mean_within) and all_["n_draws"] == 2
    assert all_["within_sel"] == pytest.approx(f1_task - mean_within)
    assert all_["within_low"] <= all_["within_high"] and all_["wsel_low"] <= all_["wsel_high"]
    # ambiguous: expression a only (rows 1-3), the same predictions scored on them
    a = slice(0, 3)
    assert amb["n"] == 3 and amb["n_expressions"] == 1
    assert amb["macro_f1"] == pytest.approx(_f1(GOLD[a], task_pred[a]))
    assert amb["auroc"] == pytest.approx(_auroc_by_hand(decision[a], GOLD[a]))
    assert amb["within_f1"] == pytest.approx(np.mean([_f1(GOLD[a], w[a]) for w in within]))


# --- the fits: the grid, and the controls' C ----------------------------------------------------


def _blobs(rng, n0: int, n1: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.vstack([rng.normal(-1.0, 1.0, (n0, 4)), rng.normal(1.0, 1.0, (n1, 4))])
    return x, np.r_[np.zeros(n0, int), np.ones(n1, int)]


def test_dev_picking_an_end_of_the_grid_extends_it() -> None:
    rng = np.random.default_rng(0)
    Xtr, ytr = _blobs(rng, 45, 5)          # imbalanced: a strong penalty predicts label 0
    Xd, yd = _blobs(rng, 10, 10)
    Xte, _ = _blobs(rng, 6, 6)

    def dev_f1(C: float) -> float:
        model = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=2000))
        return _f1(yd, model.fit(Xtr, ytr).predict(Xd))

    grid = [0.01, 0.1]

    def best(tried: dict) -> float:         # the best dev F1, ties: the smallest C
        return max(sorted(tried), key=lambda c: (tried[c], -c))

    # the rule by hand: while the best is the smallest or the largest C tried, try a tenth or
    # ten times it, three times a side at most
    tried = {C: dev_f1(C) for C in grid}
    steps = {"low": 0, "high": 0}
    while True:
        b = best(tried)
        side = "low" if b == min(tried) else "high" if b == max(tried) else None
        if side is None or steps[side] == 3:
            break
        steps[side] += 1
        nxt = b / 10 if side == "low" else b * 10
        tried[nxt] = dev_f1(nxt)
    want = best(tried)
    assert len(tried) > len(grid)             # dev did pick an end: the grid was extended
    fit = fit_predict(Xtr, ytr, Xd, yd, Xte, c_grid=grid)
    assert fit.C == pytest.approx(want) and fit.dev_f1 == pytest.approx(tried[want])
    assert fit.extended == pytest.approx(sorted(set(tried) - set(grid)))
    assert fit.edge == (want == max(tried))


def test_both_controls_take_the_task_probes_c_and_a_type_only_vector_learns_no_more() -> None:
    rng = np.random.default_rng(1)
    expr = np.repeat(np.array(list("abcdefgh")), 6)
    centre = {e: rng.normal(0, 1, 5) for e in "abcdefgh"}
    # every use of an expression has the same vector (as a static model's span): a probe can
    # learn the expression type only, so the within control is the task itself
    X = np.stack([centre[e] for e in expr])
    y = np.array([(i % 3 == 0) ^ (e in "abc") for i, e in enumerate(expr)], dtype=int)
    tr, dev, te = np.arange(0, 48, 2), np.arange(1, 48, 4), np.arange(3, 48, 4)
    within = within_permutation(expr[tr], y[tr], seed=0, draws=4)
    ctrl = np.array([e in "aceg" for e in expr[tr]], dtype=int)
    task, type_ctrl, drawn = _fit_pair(X[tr], y[tr], X[dev], y[dev], X[te], ctrl, within,
                                       (0.01, 0.1, 1.0, 10.0))
    assert type_ctrl.C == task.C and all(d.C == task.C for d in drawn) and len(drawn) == 4
    assert math.isnan(type_ctrl.dev_f1)
    for d in drawn:
        assert np.array_equal(d.pred, task.pred)


# --- the JSON rows and the summary ------------------------------------------------------------


def test_json_rows_carry_subsets_both_controls_and_the_baselines() -> None:
    rows = hm.results("m").json_rows()
    linear = [r for r in rows if r["probe_kind"] != "paraphrase"]
    assert {r["subset"] for r in linear} == {"all", "ambiguous"}
    base = [r for r in linear if r["probe_kind"] == "baseline"]
    assert {r["baseline"] for r in base} == {"majority_train", "majority_test", "chance",
                                             "type_oracle"}
    oracle = next(r for r in base if r["baseline"] == "type_oracle" and r["subset"] == "all")
    assert oracle["macro_f1"] == pytest.approx((4 / 7 + 8 / 11) / 2)
    # each linear row is followed by its two controls, named by what they control for
    at = next(i for i, r in enumerate(rows) if r["probe_kind"] == "linear")
    task, type_row, within_row = rows[at], rows[at + 1], rows[at + 2]
    assert (type_row["probe_kind"], type_row["control"]) == ("control", "type")
    assert (within_row["probe_kind"], within_row["control"]) == ("control", "within")
    for r in (type_row, within_row):
        assert (r["model"], r["layer"], r["subset"], r["C"]) == (
            task["model"], task["layer"], task["subset"], task["C"])
    f1 = task["macro_f1"]
    assert type_row["macro_f1"] == pytest.approx(f1 - 0.2)
    assert within_row["macro_f1"] == pytest.approx(f1 - 0.1)
    assert within_row["selectivity"] == pytest.approx(0.1) and within_row["n_draws"] == 20
    assert task["auroc"] == pytest.approx(f1 + 0.1)


def test_a_language_without_a_model_of_it_is_warned_atop_its_block() -> None:
    res = hm.results("m")
    res.meta[0]["notes"].append("m has no en model: its pt model (x) reads the en sentences")
    lines = res.summary().splitlines()
    at = lines.index("== EN ==")
    assert lines[at + 1].startswith("WARNING: m") and "has no en model" in lines[at + 1]


# --- compare: which side is which -------------------------------------------------------------


def test_compare_names_the_store_dtype_of_each_side(tmp_path, capsys) -> None:
    """Issue 38: ``compare`` of a float16 and a float32 AStitch run never named the store
    dtype."""
    from ncprobe.cli import main

    hm.results("m", store_dtype="float16").to_parquet(tmp_path / "half")
    hm.results("m2").to_parquet(tmp_path / "full")          # float32: the default
    assert main(["compare", str(tmp_path / "half"), str(tmp_path / "full"), "--n-boot", "20",
                 "--out", str(tmp_path / "cmp.md")]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "store_dtype" in line]
    assert len(said) == 1
    assert "A store_dtype float16" in said[0] and "B store_dtype float32" in said[0]
    assert "B store_dtype float32" in (tmp_path / "cmp.md").read_text(encoding="utf-8")
