"""ncprobe.astitch.stats: AUROC, macro-F1, cluster bootstrap intervals, selectivity and the
paired cluster swap permutation test, each against an independent computation (pairs counted
by hand, scikit-learn, plain loops over resamples and over every subset)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, roc_auc_score

from ncprobe.astitch.stats import (
    TEST_COLUMNS,
    cluster_auroc,
    cluster_scores,
    label,
    macro_f1,
    paired_tests,
    selectivity,
    weighted_auroc,
    within_auroc,
)
from ncprobe.errors import UsageError
from ncprobe.significance import ResolutionWarning


def _pairs_auc(scores, labels, weights) -> float:
    """AUROC by counting every positive-negative pair (ties 1/2), weighted."""
    num = den = 0.0
    for si, li, wi in zip(scores, labels, weights, strict=True):
        for sj, lj, wj in zip(scores, labels, weights, strict=True):
            if li == 1 and lj == 0:
                num += wi * wj * (1.0 if si > sj else 0.5 if si == sj else 0.0)
                den += wi * wj
    return num / den


def _resampled_rows(clusters, n_boot: int, seed: int) -> list[np.ndarray]:
    """The rows of each cluster-bootstrap resample, built explicitly: the expressions sorted,
    ``default_rng(seed).integers(0, k, (n_boot, k))`` drawn, every row of each drawn one."""
    names = sorted(set(clusters))
    members = [np.flatnonzero(np.asarray(clusters) == e) for e in names]
    draws = np.random.default_rng(seed).integers(0, len(names), size=(n_boot, len(names)))
    return [np.concatenate([members[j] for j in d]) for d in draws]


# --- AUROC ------------------------------------------------------------------------------------


def test_weighted_auroc_counts_pairs_with_ties_as_half() -> None:
    scores, labels = [1.0, 2.0, 2.0, 3.0], [0, 1, 0, 1]
    # positives 2, 3; negatives 1, 2: 2>1, 2=2 (1/2), 3>1, 3>2 -> 3.5 of 4 pairs
    # weights (2, 1, 1, 1): 2*1 + 1*1/2 + 2*1 + 1*1 = 5.5 of (1 + 1) * (2 + 1) = 6
    got = weighted_auroc(scores, labels, np.array([[1, 1, 1, 1], [2, 1, 1, 1]]))
    assert got == pytest.approx([3.5 / 4, 5.5 / 6])
    assert got[1] == pytest.approx(_pairs_auc(scores, labels, [2, 1, 1, 1]))


def test_weighted_auroc_equals_sklearn_with_sample_weights() -> None:
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 6, 60).astype(float)   # many ties
    labels = rng.integers(0, 2, 60)
    weights = rng.integers(0, 4, (25, 60)).astype(float)
    got = weighted_auroc(scores, labels, weights)
    want = [roc_auc_score(labels, scores, sample_weight=w) for w in weights]
    assert got == pytest.approx(want, abs=1e-12)


def test_weighted_auroc_is_nan_where_one_class_has_no_weight() -> None:
    got = weighted_auroc([0.1, 0.5, 0.9], [0, 1, 1], np.array([[0, 1, 1], [1, 1, 0]]))
    assert np.isnan(got[0]) and got[1] == 1.0


def test_cluster_auroc_point_and_interval_from_explicit_resamples() -> None:
    rng = np.random.default_rng(5)
    n = 40
    clusters = [f"expr{i % 7}" for i in rng.permutation(n)]
    labels = rng.integers(0, 2, n)
    scores = np.round(rng.normal(size=n) + labels, 1)     # rounded: ties across rows
    out = cluster_auroc(scores, labels, clusters, n_boot=300, seed=11)
    assert out["auroc"] == pytest.approx(_pairs_auc(scores, labels, np.ones(n)))
    assert (out["n"], out["n_literal"], out["n_expressions"]) == (n, int(labels.sum()), 7)
    aucs = []
    for rows in _resampled_rows(clusters, 300, 11):
        if len(set(labels[rows])) == 2:
            aucs.append(roc_auc_score(labels[rows], scores[rows]))
    assert out["boot_used"] == len(aucs)
    assert (out["ci_low"], out["ci_high"]) == pytest.approx(
        tuple(np.percentile(aucs, [2.5, 97.5])), abs=1e-12)


def test_cluster_auroc_leaves_out_resamples_with_one_label() -> None:
    # expression "a" holds only literal rows, "b" only idiomatic: a resample drawing one of
    # them twice has a single label and no AUROC
    out = cluster_auroc([0.9, 0.8, 0.1, 0.2], [1, 1, 0, 0], ["a", "a", "b", "b"],
                        n_boot=200, seed=0)
    draws = np.random.default_rng(0).integers(0, 2, (200, 2))
    assert out["auroc"] == 1.0
    assert out["boot_used"] == int((draws[:, 0] != draws[:, 1]).sum())
    assert out["ci_low"] == out["ci_high"] == 1.0


def test_cluster_auroc_of_one_label_is_nan() -> None:
    out = cluster_auroc([0.1, 0.2], [1, 1], ["a", "b"], n_boot=50, seed=0)
    assert np.isnan(out["auroc"]) and np.isnan(out["ci_low"]) and out["boot_used"] == 0
    with pytest.raises(UsageError, match="NaN"):
        cluster_auroc([0.1, np.nan], [0, 1], ["a", "b"], n_boot=10, seed=0)


def _within_by_hand(scores, labels, clusters) -> tuple[float, float]:
    """Concordant pairs (ties 1/2) and pairs, counted pair by pair inside each expression."""
    wins = pairs = 0.0
    for i, j in itertools.product(range(len(scores)), repeat=2):
        if clusters[i] == clusters[j] and labels[i] == 1 and labels[j] == 0:
            wins += 1.0 if scores[i] > scores[j] else 0.5 if scores[i] == scores[j] else 0.0
            pairs += 1.0
    return wins, pairs


def test_within_auroc_counts_pairs_inside_each_expression_only() -> None:
    # a: literal 0.9 and 0.4 against idiomatic 0.5 -> 1 of 2 pairs; b: literal 0.3 against
    # idiomatic 0.3 (tie, 1/2) and 0.1 (1) -> 1.5 of 2; c and d hold one label: no pair.
    # Within: (1 + 1.5) / (2 + 2) = 0.625. Pooled, c's literal 0.99 and d's idiomatic 0.0
    # add easy cross-expression pairs: 17.5 of 20 pairs, 0.875.
    scores = [0.9, 0.4, 0.5, 0.3, 0.3, 0.1, 0.99, 0.98, 0.0]
    labels = [1, 1, 0, 1, 0, 0, 1, 1, 0]
    clusters = ["a", "a", "a", "b", "b", "b", "c", "c", "d"]
    out = within_auroc(scores, labels, clusters, n_boot=0, seed=0)
    assert out["auroc_within"] == 0.625
    assert out["n_within"] == 2
    assert np.isnan(out["auroc_within_low"]) and np.isnan(out["auroc_within_high"])
    assert cluster_auroc(scores, labels, clusters, n_boot=0, seed=0)["auroc"] == pytest.approx(
        _pairs_auc(scores, labels, np.ones(len(scores))))
    assert _pairs_auc(scores, labels, np.ones(len(scores))) == 0.875


def test_within_auroc_interval_resamples_the_expressions_with_both_labels() -> None:
    rng = np.random.default_rng(8)
    n = 60
    clusters = [f"e{i % 9}" for i in rng.permutation(n)]
    labels = rng.integers(0, 2, n)
    labels[[i for i, c in enumerate(clusters) if c == "e3"]] = 1     # e3: literal uses only
    scores = np.round(rng.normal(size=n) + 0.5 * labels, 1)           # ties inside expressions
    out = within_auroc(scores, labels, clusters, n_boot=300, seed=7)
    wins, pairs = _within_by_hand(scores, labels, clusters)
    assert out["auroc_within"] == pytest.approx(wins / pairs, abs=1e-12)
    mixed = sorted(c for c in set(clusters)
                   if len({int(y) for y, d in zip(labels, clusters, strict=True) if d == c}) == 2)
    assert out["n_within"] == len(mixed) < 9
    # the interval by a plain loop: each resample of the mixed expressions, pairs counted
    per = {e: _within_by_hand(*(np.asarray(v)[[i for i, c in enumerate(clusters) if c == e]]
                                for v in (scores, labels, clusters))) for e in mixed}
    draws = np.random.default_rng(7).integers(0, len(mixed), (300, len(mixed)))
    boot = [sum(per[mixed[j]][0] for j in d) / sum(per[mixed[j]][1] for j in d) for d in draws]
    assert (out["auroc_within_low"], out["auroc_within_high"]) == pytest.approx(
        tuple(np.percentile(boot, [2.5, 97.5])), abs=1e-12)
    # the rows of the ambiguous expressions alone give the same number and the same interval
    keep = np.isin(clusters, mixed)
    alone = within_auroc(scores[keep], labels[keep], np.asarray(clusters)[keep], n_boot=300,
                         seed=7)
    assert alone == out


def test_within_auroc_without_an_expression_holding_both_labels_is_nan() -> None:
    out = within_auroc([0.1, 0.9, 0.3], [0, 1, 1], ["a", "b", "b"], n_boot=50, seed=0)
    assert out["n_within"] == 0 and np.isnan(out["auroc_within"])
    assert np.isnan(out["auroc_within_low"])
    with pytest.raises(UsageError, match="NaN"):
        within_auroc([0.1, np.nan], [0, 1], ["a", "a"], n_boot=10, seed=0)


# --- macro-F1, accuracy, selectivity ----------------------------------------------------------


def test_macro_f1_by_hand() -> None:
    # label 0: TP 1, gold 2, predicted 2 -> 2/4; label 1: TP 2, gold 3, predicted 3 -> 4/6
    assert macro_f1([0, 0, 1, 1, 1], [0, 1, 1, 1, 0]) == pytest.approx((0.5 + 4 / 6) / 2)
    # label 0 neither gold nor predicted: F1 0 (zero_division=0), label 1 perfect
    assert macro_f1([1, 1], [1, 1]) == pytest.approx(0.5)
    with pytest.raises(UsageError, match="0 \\(idiomatic\\)"):
        macro_f1([0, 2], [0, 1])


def test_cluster_scores_intervals_equal_a_plain_loop_over_resamples() -> None:
    rng = np.random.default_rng(8)
    n = 50
    clusters = [f"e{j}" for j in rng.integers(0, 9, n)]
    y = rng.integers(0, 2, n)
    pred = np.where(rng.random(n) < 0.6, y, 1 - y)
    out = cluster_scores(y, pred, clusters, n_boot=400, seed=2)
    f1s, accs = [], []
    for rows in _resampled_rows(clusters, 400, 2):
        f1s.append(f1_score(y[rows], pred[rows], average="macro", labels=[0, 1],
                            zero_division=0))
        accs.append(np.mean(y[rows] == pred[rows]))
    assert out["n"] == n and out["n_expressions"] == len(set(clusters))
    assert out["macro_f1"] == pytest.approx(f1_score(y, pred, average="macro"))
    assert out["accuracy"] == pytest.approx(np.mean(y == pred))
    assert (out["f1_low"], out["f1_high"]) == pytest.approx(
        tuple(np.percentile(f1s, [2.5, 97.5])), abs=1e-12)
    assert (out["acc_low"], out["acc_high"]) == pytest.approx(
        tuple(np.percentile(accs, [2.5, 97.5])), abs=1e-12)


def test_cluster_scores_without_resamples_has_nan_intervals() -> None:
    out = cluster_scores([0, 1], [0, 1], ["a", "b"], n_boot=0, seed=0)
    assert out["macro_f1"] == 1.0 and np.isnan(out["f1_low"]) and np.isnan(out["acc_high"])
    with pytest.raises(UsageError, match="differ in length"):
        cluster_scores([0, 1], [0], ["a", "b"], n_boot=10, seed=0)


def test_selectivity_is_the_difference_of_f1_on_the_same_draws() -> None:
    rng = np.random.default_rng(4)
    n = 36
    clusters = [f"e{j}" for j in rng.integers(0, 6, n)]
    y, pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
    yc, pc = rng.integers(0, 2, n), rng.integers(0, 2, n)
    out = selectivity(y, pred, yc, pc, clusters, n_boot=200, seed=9)

    def f1(a, b):
        return f1_score(a, b, average="macro", labels=[0, 1], zero_division=0)

    assert out["selectivity"] == pytest.approx(f1(y, pred) - f1(yc, pc))
    diffs = [f1(y[r], pred[r]) - f1(yc[r], pc[r]) for r in _resampled_rows(clusters, 200, 9)]
    assert (out["sel_low"], out["sel_high"]) == pytest.approx(
        tuple(np.percentile(diffs, [2.5, 97.5])), abs=1e-12)


# --- paired tests -----------------------------------------------------------------------------


def _pred_table(y, pred_a, pred_b, clusters, *, rows_b=None) -> pd.DataFrame:
    n = len(y)
    base = {"model": "m", "lang": "en", "setting": "zero-shot", "level": "nc",
            "context": "excluded", "probe_kind": "linear", "control": ""}
    a = pd.DataFrame({**base, "layer": 1, "row": np.arange(1, n + 1), "expression": clusters,
                      "label": y, "predicted": pred_a})
    b = pd.DataFrame({**base, "layer": 2, "row": np.arange(1, n + 1) if rows_b is None
                      else rows_b, "expression": clusters, "label": y, "predicted": pred_b})
    # b's rows in another order: the test matches rows, not positions
    return pd.concat([a, b.iloc[::-1]], ignore_index=True)


KEY_A = {"model": "m", "layer": 1, "level": "nc", "context": "excluded", "control": ""}
KEY_B = {"model": "m", "layer": 2, "level": "nc", "context": "excluded", "control": ""}


def _f1(y, p) -> float:
    return f1_score(y, p, average="macro", labels=[0, 1], zero_division=0)


def test_swap_test_is_exact_over_every_subset_of_few_expressions() -> None:
    rng = np.random.default_rng(1)
    n, k = 30, 5
    clusters = np.array([f"e{j}" for j in rng.integers(0, k, n)])
    y = rng.integers(0, 2, n)
    pa = np.where(rng.random(n) < 0.8, y, 1 - y)
    pb = np.where(rng.random(n) < 0.5, y, 1 - y)
    out = paired_tests(_pred_table(y, pa, pb, clusters), [(KEY_A, KEY_B)], family="f",
                       n_boot=100, seed=3, n_perm=1000)
    d = _f1(y, pa) - _f1(y, pb)
    names = sorted(set(clusters))
    extreme = 0
    for subset in itertools.product((False, True), repeat=len(names)):
        swap = np.isin(clusters, [e for e, s in zip(names, subset, strict=True) if s])
        a, b = np.where(swap, pb, pa), np.where(swap, pa, pb)
        extreme += abs(_f1(y, a) - _f1(y, b)) >= abs(d) - 1e-12
    row = out.iloc[0]
    assert list(out.columns) == list(TEST_COLUMNS)
    assert row["diff"] == pytest.approx(d) and row["f1_a"] == pytest.approx(_f1(y, pa))
    assert row["p"] == pytest.approx(extreme / 2 ** len(names))
    assert not row["p_bound"] and "exact" in row["test"]
    assert (row["n"], row["n_expressions"], row["lang"], row["setting"]) == (
        n, len(names), "en", "zero-shot")
    diffs = [_f1(y[r], pa[r]) - _f1(y[r], pb[r]) for r in _resampled_rows(clusters, 100, 3)]
    assert (row["diff_low"], row["diff_high"]) == pytest.approx(
        tuple(np.percentile(diffs, [2.5, 97.5])), abs=1e-12)


def test_random_swaps_agree_with_the_exact_test() -> None:
    rng = np.random.default_rng(2)
    n, k = 60, 11
    clusters = np.array([f"e{j:02d}" for j in np.arange(n) % k])
    y = rng.integers(0, 2, n)
    pa = np.where(rng.random(n) < 0.75, y, 1 - y)
    pb = np.where(rng.random(n) < 0.6, y, 1 - y)
    table = _pred_table(y, pa, pb, clusters)
    exact = paired_tests(table, [(KEY_A, KEY_B)], family="f", n_boot=0, seed=0,
                         n_perm=2 ** k).iloc[0]
    drawn = paired_tests(table, [(KEY_A, KEY_B)], family="f", n_boot=0, seed=0,
                         n_perm=2000).iloc[0]
    assert "exact" in exact["test"] and "2,000 random swaps" in drawn["test"]
    se = np.sqrt(exact["p"] * (1 - exact["p"]) / 2000)
    assert abs(drawn["p"] - exact["p"]) < 4 * se + 1e-3


def test_p_at_its_floor_is_a_bound_and_corrected_as_a_family() -> None:
    # a right everywhere, b wrong everywhere, over 15 expressions: no random swap of the
    # 200 reaches |d| (only the identity and the swap of all do, 2 of 2^15)
    k = 15
    clusters = np.repeat([f"e{j:02d}" for j in range(k)], 2)
    y = np.tile([0, 1], k)
    table = _pred_table(y, y, 1 - y, clusters)
    same = {**KEY_A}
    with pytest.warns(ResolutionWarning, match="n_perm=2,000"):
        out = paired_tests(table, [(KEY_A, KEY_B), (same, KEY_A)], family="fam", n_boot=50,
                           seed=0, n_perm=200, correction="holm")
    first, second = out.iloc[0], out.iloc[1]
    assert first["p"] == pytest.approx(1 / 201) and first["p_bound"]
    assert second["diff"] == 0.0 and second["p"] == 1.0 and not second["p_bound"]
    # Holm over two tests: the least p doubled (a bound still), the other 1
    assert first["p_corrected"] == pytest.approx(2 / 201) and first["p_corrected_bound"]
    assert second["p_corrected"] == 1.0 and not second["p_corrected_bound"]
    assert first["significant"] and not second["significant"]
    assert set(out["family"]) == {"fam"} and set(out["family_size"]) == {2}
    assert set(out["correction"]) == {"holm"}


def test_no_permutations_leaves_p_undefined() -> None:
    y = np.array([0, 1, 0, 1])
    out = paired_tests(_pred_table(y, y, 1 - y, ["a", "a", "b", "b"]), [(KEY_A, KEY_B)],
                       family="f", n_boot=0, seed=0, n_perm=0)
    assert np.isnan(out["p"].iloc[0]) and out["family_size"].iloc[0] == 0
    assert not out["significant"].iloc[0]


def test_paired_tests_refuses_cells_with_different_rows() -> None:
    y = np.array([0, 1, 0, 1])
    table = _pred_table(y, y, y, ["a", "a", "b", "b"], rows_b=[1, 2, 3, 9])
    with pytest.raises(UsageError, match="m layer 1 nc/excluded and m layer 2 nc/excluded do "
                                         "not hold the same test rows: 2 row"):
        paired_tests(table, [(KEY_A, KEY_B)], family="f", n_boot=10, seed=0)


def test_paired_tests_refuses_a_key_naming_several_cells_or_none() -> None:
    y = np.array([0, 1])
    table = _pred_table(y, y, y, ["a", "b"])
    with pytest.raises(UsageError, match="more than once"):
        paired_tests(table, [({"model": "m"}, KEY_B)], family="f", n_boot=10, seed=0)
    with pytest.raises(UsageError, match="no rows"):
        paired_tests(table, [({**KEY_A, "layer": 5}, KEY_B)], family="f", n_boot=10, seed=0)


def test_paired_tests_of_no_pairs_is_an_empty_table() -> None:
    y = np.array([0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = paired_tests(_pred_table(y, y, y, ["a", "b"]), [], family="f", n_boot=10,
                           seed=0)
    assert out.empty and list(out.columns) == list(TEST_COLUMNS)


def test_label_names_model_layer_view_and_control() -> None:
    assert label({"model": "bert", "layer": 7.0, "level": "nc", "context": "excluded",
                  "control": ""}) == "bert layer 7 nc/excluded"
    assert label({"model": "", "layer": None, "level": "", "context": "",
                  "control": "majority"}) == "majority"


def test_chunks_and_other_tests_do_not_change_a_p_value(monkeypatch) -> None:
    from ncprobe.astitch import stats

    rng = np.random.default_rng(6)
    n, k = 40, 8
    clusters = np.array([f"e{j}" for j in np.arange(n) % k])
    y = rng.integers(0, 2, n)
    pa, pb = np.where(rng.random(n) < 0.8, y, 1 - y), np.where(rng.random(n) < 0.55, y, 1 - y)
    table = _pred_table(y, pa, pb, clusters)
    pairs = [(KEY_A, KEY_B), (KEY_B, KEY_A), (KEY_A, KEY_A)]
    exact = paired_tests(table, pairs, family="f", n_boot=0, seed=0, n_perm=256)["p"]
    drawn = paired_tests(table, pairs[:1], family="f", n_boot=0, seed=0, n_perm=200)["p"]
    monkeypatch.setattr(stats, "_CHUNK", 40)   # 5 subsets a chunk, 2 tests a product
    assert np.array_equal(
        paired_tests(table, pairs, family="f", n_boot=0, seed=0, n_perm=256)["p"], exact)
    assert exact[0] == exact[1] and exact[2] == 1.0    # a vs b and b vs a: one |d|
    small = paired_tests(table, pairs, family="f", n_boot=0, seed=0, n_perm=200)["p"]
    alone = paired_tests(table, pairs[:1], family="f", n_boot=0, seed=0, n_perm=200)["p"]
    assert small[0] == alone[0] and small[0] == small[1]
    assert abs(small[0] - drawn[0]) < 4 * np.sqrt(exact[0] * (1 - exact[0]) / 200) + 0.01


def test_macro_f1_from_the_counts_is_scikit_learns_on_every_kind_of_case() -> None:
    """macro_f1 sums the confusion counts itself (it scores the controls' draws by the
    hundred); it equals scikit-learn's f1_score exactly, constant gold or predictions, one
    row and an absent label included."""
    from ncprobe.astitch.stats import macro_f1

    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 7, 40):
        for _ in range(60):
            gold, pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
            if rng.random() < 0.25:
                pred[:] = pred[0]
            if rng.random() < 0.25:
                gold[:] = gold[0]
            want = f1_score(gold, pred, average="macro", labels=[0, 1], zero_division=0)
            assert macro_f1(gold, pred) == want, (gold, pred)
