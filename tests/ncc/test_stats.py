"""The NCC probe's statistics (:mod:`ncprobe.ncc.stats`) on items built here.

Expected values come from the test itself: a 3 x 3 confusion (with one ``none`` answer) whose
precision, recall and F1 are worked out by hand; bootstrap intervals recomputed with numpy from
the documented draws (``default_rng(seed).integers(0, n, (n_boot, n))``) and, for macro-F1,
scikit-learn's ``f1_score`` on each resample in a loop; McNemar's p as a binomial sum written
out with ``math.comb``; Holm from ``tests/by_hand.py``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score

from ncprobe.ncc.stats import (
    TESTS_COLUMNS,
    accuracy_ci,
    accuracy_table,
    baseline_table,
    confusion,
    confusion_table,
    correct_families,
    item_swaps,
    label,
    macro_f1,
    macro_f1_ci,
    maxt_adjusted,
    paired_test,
    per_class,
    per_class_table,
    scores,
)
from ncprobe.ncc.stats import tests_table as make_tests_table  # not "test*": pytest collects it

from ..by_hand import holm

# gold x predicted counts: NC row 4 NC, 1 PC; PC row 1 NC, 2 PC, 1 C; C row 1 PC, 3 C, 1 none
CELLS = {("NC", "NC"): 4, ("NC", "PC"): 1, ("PC", "NC"): 1, ("PC", "PC"): 2, ("PC", "C"): 1,
         ("C", "PC"): 1, ("C", "C"): 3, ("C", "none"): 1}
GOLD = [g for (g, _), k in CELLS.items() for _ in range(k)]
PRED = [p for (_, p), k in CELLS.items() for _ in range(k)]
# by hand: NC: TP 4, predicted 5, gold 5 -> P = R = F1 = 0.8
#          PC: TP 2, predicted 4, gold 4 -> P = R = F1 = 0.5
#          C:  TP 3, predicted 4, gold 5 (the "none" is a miss) -> P 3/4, R 3/5, F1 6/9
MACRO_F1 = (0.8 + 0.5 + 6 / 9) / 3            # = 59/90


def _draws(n: int, n_boot: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def _percentiles(values: np.ndarray) -> list[float]:
    return np.percentile(values, [2.5, 97.5]).tolist()


# --- one row's numbers ------------------------------------------------------------------------


def test_accuracy_interval_is_the_percentile_bootstrap_of_the_documented_draws() -> None:
    right = np.array([True] * 7 + [False] * 3)
    acc, lo, hi = accuracy_ci(right, n_boot=500, seed=4)
    assert acc == 0.7
    assert [lo, hi] == pytest.approx(_percentiles(right[_draws(10, 500, 4)].mean(axis=1)))
    assert lo <= acc <= hi
    assert accuracy_ci(right, n_boot=500, seed=4) == (acc, lo, hi)      # deterministic
    assert accuracy_ci(right, n_boot=500, seed=5) != (acc, lo, hi)
    assert all(math.isnan(v) for v in accuracy_ci(np.array([], dtype=bool)))


def test_macro_f1_and_per_class_scores_by_hand() -> None:
    assert macro_f1(GOLD, PRED) == pytest.approx(59 / 90)
    assert MACRO_F1 == pytest.approx(59 / 90)
    table = per_class(GOLD, PRED)
    assert table["cls"].tolist() == ["NC", "PC", "C"]
    assert table["n"].tolist() == [5, 4, 5]
    assert table["precision"].tolist() == pytest.approx([0.8, 0.5, 0.75])
    assert table["recall"].tolist() == pytest.approx([0.8, 0.5, 0.6])
    assert table["f1"].tolist() == pytest.approx([0.8, 0.5, 2 / 3])
    row = scores(GOLD, PRED, n_boot=200, seed=0)
    assert (row["n"], row["accuracy"]) == (14, pytest.approx(9 / 14))   # 4 + 2 + 3 right
    assert row["macro_f1"] == pytest.approx(59 / 90)
    assert row["ci_low"] <= row["accuracy"] <= row["ci_high"]
    assert row["f1_low"] <= row["macro_f1"] <= row["f1_high"]


def test_an_unanswered_item_is_wrong_and_a_class_never_predicted_scores_zero() -> None:
    # PC is never predicted and never right: its F1 is 0 (zero_division=0), still averaged
    gold = ["NC", "NC", "PC", "C"]
    pred = ["NC", "unanswered", "NC", "C"]
    # NC: TP 1, predicted 2, gold 2 -> 0.5; PC: 0; C: 1
    assert macro_f1(gold, pred) == pytest.approx((0.5 + 0.0 + 1.0) / 3)


@pytest.mark.parametrize(("start", "stop"), [(0, 14), (4, 10)])
def test_the_macro_f1_interval_is_f1_score_on_each_resample(start: int, stop: int) -> None:
    # items 4..9 (6 items): many resamples lack a class, where zero_division applies
    gold, pred = np.array(GOLD[start:stop]), np.array(PRED[start:stop])
    n_items = stop - start
    draws = _draws(n_items, 300, 9)
    loop = [f1_score(gold[i], pred[i], labels=["NC", "PC", "C"], average="macro",
                     zero_division=0) for i in draws]
    value, lo, hi = macro_f1_ci(gold, pred, n_boot=300, seed=9)
    assert [lo, hi] == pytest.approx(_percentiles(np.array(loop)))
    # the accuracy interval uses the same draws
    _, acc_lo, acc_hi = accuracy_ci(gold == pred, n_boot=300, seed=9)
    assert [acc_lo, acc_hi] == pytest.approx(_percentiles((gold == pred)[draws].mean(axis=1)))


@pytest.mark.parametrize("seed", range(4))
def test_macro_f1_is_sklearns_f1_score(seed: int) -> None:
    rng = np.random.default_rng(seed)
    gold = rng.choice(["NC", "PC", "C"], 30)
    pred = rng.choice(["NC", "PC", "C", "none", "unanswered"], 30, p=[.3, .1, .3, .2, .1])
    assert macro_f1(gold, pred) == pytest.approx(
        f1_score(gold, pred, labels=["NC", "PC", "C"], average="macro", zero_division=0))


def test_confusion_counts_every_cell_with_the_other_answers_last() -> None:
    table = confusion(GOLD, PRED)
    assert table.columns.tolist() == ["gold", "predicted", "count"]
    expected = [(g, p, CELLS.get((g, p), 0)) for g in ("NC", "PC", "C")
                for p in ("NC", "PC", "C", "none")]
    assert list(table.itertuples(index=False, name=None)) == expected
    assert int(table["count"].sum()) == len(GOLD)


def test_gold_outside_the_classes_is_refused() -> None:
    with pytest.raises(ValueError, match="'none'"):
        macro_f1(["NC", "none"], ["NC", "NC"])


# --- paired tests -----------------------------------------------------------------------------


def test_mcnemar_is_the_exact_binomial_and_the_interval_is_paired() -> None:
    # 8 items only a gets right, 2 only b, 5 both, 5 neither
    a = np.array([True] * 8 + [False] * 2 + [True] * 5 + [False] * 5)
    b = np.array([False] * 8 + [True] * 2 + [True] * 5 + [False] * 5)
    got = paired_test(a, b, n_boot=400, seed=2)
    # two-sided: 2 * P(X <= 2), X ~ Binomial(10, 1/2) = 2 * (1 + 10 + 45) / 1024 = 0.109375
    assert got["p"] == pytest.approx(2 * sum(math.comb(10, k) for k in range(3)) / 2 ** 10)
    assert got["p"] == pytest.approx(0.109375)
    assert (got["n"], got["a_only"], got["b_only"]) == (20, 8, 2)
    assert (got["accuracy_a"], got["accuracy_b"]) == (pytest.approx(13 / 20),
                                                      pytest.approx(7 / 20))
    assert got["diff"] == pytest.approx(0.3)
    draws = _draws(20, 400, 2)
    diffs = a[draws].mean(axis=1) - b[draws].mean(axis=1)
    assert [got["diff_low"], got["diff_high"]] == pytest.approx(_percentiles(diffs))
    assert got["diff_low"] <= got["diff"] <= got["diff_high"]
    assert paired_test(a, b, n_boot=400, seed=2) == got


def test_no_discordant_item_gives_p_one() -> None:
    same = np.array([True, False, True])
    got = paired_test(same, same, n_boot=100, seed=0)
    assert (got["p"], got["diff"], got["diff_low"], got["diff_high"]) == (1.0, 0.0, 0.0, 0.0)


# --- the tables from the items table ------------------------------------------------------


def _rows(system: str, kind: str, setting: str, layer: str, level: str, measure: str,
          predicted: dict[str, str], gold: dict[str, str]) -> list[dict]:
    return [{"system": system, "kind": kind, "setting": setting, "layer": layer,
             "level": level, "measure": measure, "item": item, "nc": f"nc {item}",
             "gold": gold[item], "predicted": p, "correct": p == gold[item]}
            for item, p in predicted.items()]


@pytest.fixture
def items() -> pd.DataFrame:
    ids = [f"{i:03d}" for i in range(1, 13)]
    gold = dict(zip(ids, ["NC", "PC", "C"] * 4, strict=True))
    rng = np.random.default_rng(0)
    glove = {i: (g if k % 3 else "NC") for k, (i, g) in enumerate(gold.items())}
    ceiling = dict(gold)
    ceiling["004"] = "PC"
    gpt = {i: rng.choice(["NC", "PC", "C"]) for i in ids}
    gemma = {i: p for i, p in gpt.items() if i not in ("002", "005", "011")}   # 9 answered
    gemma["001"] = "none"
    local = {i: "C" for i in ids}
    frame = pd.DataFrame(
        _rows("gpt-5", "published", "0-shot", "", "", "", gpt, gold)
        + _rows("glove-6b-50d", "representation", "single", "-", "nc", "syn", glove, gold)
        + _rows("gemma-3-27b-it", "published", "3-shot", "", "", "", gemma, gold)
        + _rows("gold score", "ceiling", "all", "", "", "gold", ceiling, gold)
        + _rows("tiny-llama", "behaviour", "0-shot", "", "", "", local, gold))
    return frame.sample(frac=1.0, random_state=1).reset_index(drop=True)   # any row order


def test_labels_join_the_non_empty_keys() -> None:
    assert label({"system": "glove-6b-50d", "setting": "single", "layer": "-", "level": "nc",
                  "measure": "syn", "kind": "representation"}) == "glove-6b-50d single - nc syn"
    assert label({"system": "gpt-5", "setting": "0-shot", "layer": "", "level": "",
                  "measure": ""}) == "gpt-5 0-shot"


def test_tests_table_pairs_every_classifier_with_every_system_on_shared_items(
        items: pd.DataFrame) -> None:
    table = make_tests_table(items, n_boot=300, seed=3, correction="holm")
    assert table.columns.tolist() == list(TESTS_COLUMNS)
    # classifiers in order of first appearance in the (shuffled) frame, systems likewise
    first = items.drop_duplicates(["system"])["system"].tolist()
    classifiers = [s for s in first if s in ("glove-6b-50d", "gold score")]
    systems = [s for s in first if s in ("gpt-5", "gemma-3-27b-it", "tiny-llama")]
    names = {"glove-6b-50d": "glove-6b-50d single - nc syn", "gold score": "gold score all gold",
             "gpt-5": "gpt-5 0-shot", "gemma-3-27b-it": "gemma-3-27b-it 3-shot",
             "tiny-llama": "tiny-llama 0-shot"}
    pairs = [(names[a], names[b]) for a in classifiers for b in systems]
    assert list(zip(table["a"], table["b"], strict=True)) == pairs
    by_system = {s: part.set_index("item")["correct"]
                 for s, part in items.groupby("system")}
    for row in table.itertuples():
        a = next(s for s in names if names[s] == row.a)
        b = next(s for s in names if names[s] == row.b)
        shared = sorted(by_system[b].index)                 # b's items; a holds all 12
        ra, rb = by_system[a][shared].to_numpy(), by_system[b][shared].to_numpy()
        assert row.n == len(shared) == (9 if b == "gemma-3-27b-it" else 12)
        assert (row.a_only, row.b_only) == ((ra & ~rb).sum(), (~ra & rb).sum())
        assert row.accuracy_a == pytest.approx(ra.mean())
        assert row.diff == pytest.approx(ra.mean() - rb.mean())
        discordant = row.a_only + row.b_only
        tail = sum(math.comb(discordant, k) for k in range(min(row.a_only, row.b_only) + 1))
        p = 1.0 if not discordant else min(1.0, 2 * tail / 2 ** discordant)
        assert row.p == pytest.approx(p)
        draws = _draws(len(shared), 300, 3)                  # items sorted by id
        diffs = ra[draws].mean(axis=1) - rb[draws].mean(axis=1)
        assert [row.diff_low, row.diff_high] == pytest.approx(_percentiles(diffs))
    # the families, fixed by the question: the model's classifiers vs the published systems,
    # the ceiling vs the published systems, each vs the local model's answers; Holm within
    family = {("glove-6b-50d", "gpt-5"): "classifiers vs systems: glove-6b-50d",
              ("glove-6b-50d", "gemma-3-27b-it"): "classifiers vs systems: glove-6b-50d",
              ("glove-6b-50d", "tiny-llama"):
                  "classifiers vs systems: glove-6b-50d vs tiny-llama's answers",
              ("gold score", "gpt-5"): "gold ceiling vs systems",
              ("gold score", "gemma-3-27b-it"): "gold ceiling vs systems",
              ("gold score", "tiny-llama"): "gold ceiling vs tiny-llama's answers"}
    expected = [family[(a, b)] for a in classifiers for b in systems]
    assert table["family"].tolist() == expected
    for name in set(expected):
        part = table[table["family"] == name]
        assert part["p_corrected"].tolist() == pytest.approx(holm(part["p"]).tolist())
        assert set(part["family_size"]) == {len(part)}
    assert (table["significant"] == (table["p_corrected"] <= 0.05)).all()
    assert set(table["correction"]) == {"holm"}
    assert table["kind_a"].isin(["representation", "ceiling"]).all()
    assert table["kind_b"].isin(["published", "behaviour"]).all()


def test_the_accuracy_table_scores_each_row_on_its_own_items(items: pd.DataFrame) -> None:
    table = accuracy_table(items, n_boot=200, seed=0)
    gemma = table.set_index("system").loc["gemma-3-27b-it"]
    part = items[items["system"] == "gemma-3-27b-it"]
    assert gemma["n"] == 9
    assert gemma["accuracy"] == pytest.approx(part["correct"].mean())
    # the "none" answer to item 001 is counted, and wrong
    assert not part.set_index("item").loc["001", "correct"]
    assert gemma["macro_f1"] == pytest.approx(
        f1_score(part["gold"], part["predicted"], labels=["NC", "PC", "C"], average="macro",
                 zero_division=0))
    assert table["system"].tolist() == items.drop_duplicates(["system"])["system"].tolist()
    per = per_class_table(items)
    assert len(per) == 5 * 3
    assert per.groupby("system")["n"].sum().to_dict() == items.groupby("system").size().to_dict()
    conf = confusion_table(items)
    assert conf.groupby("system")["count"].sum().to_dict() == (
        items.groupby("system").size().to_dict())
    assert conf[(conf["system"] == "gemma-3-27b-it") & (conf["predicted"] == "none")][
        "count"].sum() == 1


def test_the_items_table_is_checked(items: pd.DataFrame) -> None:
    twice = pd.concat([items, items.iloc[:1]], ignore_index=True)
    with pytest.raises(ValueError, match="1 repeated row x item"):
        make_tests_table(twice)
    lying = items.copy()
    lying.loc[0, "correct"] = not lying.loc[0, "correct"]
    with pytest.raises(ValueError, match="disagrees with gold == predicted"):
        accuracy_table(lying)
    odd = items.copy()
    odd.loc[0, "kind"] = "oracle"
    with pytest.raises(ValueError, match="unknown kinds"):
        make_tests_table(odd)


# --- max-T, Westfall-Young step-down -------------------------------------------------------


def _z(d: np.ndarray) -> float:
    """McNemar's z of one test: |right only by a - right only by b| / sqrt(discordant)."""
    a_only, b_only = int((d == 1).sum()), int((d == -1).sum())
    return abs(a_only - b_only) / math.sqrt(a_only + b_only) if a_only + b_only else 0.0


def _stepdown_by_hand(diffs: np.ndarray) -> list[float]:
    """Every one of the 2^n joint swaps written out; test j's adjusted p: the largest, over
    the tests k at least as extreme as j (z_k >= z_j), of the share of swaps whose largest z
    among the tests no more extreme than k (z_i <= z_k) reaches z_k (Westfall & Young's
    step-down, without a sort)."""
    m, n = diffs.shape
    observed = [_z(d) for d in diffs]
    swaps = [np.array(s) for s in itertools.product((1, -1), repeat=n)]
    swapped = [[_z(d * s) for d in diffs] for s in swaps]

    def share(k: int) -> float:
        below = [i for i in range(m) if observed[i] <= observed[k]]
        return sum(max(z[i] for i in below) >= observed[k] - 1e-12
                   for z in swapped) / len(swaps)

    return [max(share(k) for k in range(m) if observed[k] >= observed[j]) for j in range(m)]


def test_maxt_is_westfall_young_step_down_over_every_swap() -> None:
    # 9 items, 3 tests with distinct statistics (right only by a / only by b):
    # test 0: 6 / 0 (z 2.449), test 1: 4 / 1 (z 1.342), test 2: 1 / 1 (z 0)
    diffs = np.array([[1, 1, 1, 1, 1, 1, 0, 0, 0],
                      [1, 1, 0, 0, 1, -1, 0, 1, 0],
                      [0, 0, 0, 0, 0, 0, 1, -1, 0]])
    every = np.array(list(itertools.product((1, -1), repeat=9)))
    got = maxt_adjusted(diffs, every)
    want = _stepdown_by_hand(diffs)
    assert got.tolist() == pytest.approx(want)
    # the most extreme test: every swap of its 6 items but all-or-none leaves z < 2.449, and
    # no other test reaches 2.449: 2 of 64 patterns of its items, so 2/64 exactly
    assert got[0] == pytest.approx(2 / 64)
    # the least extreme (z 0) is reached by every swap: 1; the adjusted p never falls with z
    assert got[2] == 1.0 and got[0] <= got[1] <= got[2]
    # max-T is never below the single test's own permutation p (test 1 alone: P(|z| >= z1))
    alone = maxt_adjusted(diffs[[1]], every)[0]
    assert got[1] >= alone - 1e-12


def test_maxt_with_tied_statistics_gives_them_one_p() -> None:
    diffs = np.array([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [1, -1, 0, 0, 0]])
    every = np.array(list(itertools.product((1, -1), repeat=5)))
    got = maxt_adjusted(diffs, every)
    assert got.tolist() == pytest.approx(_stepdown_by_hand(diffs))
    assert got[0] == got[1]


def test_drawn_swaps_approach_the_exact_step_down() -> None:
    diffs = np.array([[1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, -1],
                      [1, 1, 0, 0, 1, -1, 0, 1, 0, 0, 0, 0],
                      [0, 0, 0, 0, 0, 0, 1, -1, 0, 1, 1, 1]])
    exact = maxt_adjusted(diffs, np.array(list(itertools.product((1, -1), repeat=12))))
    swaps = item_swaps(12, 20_000, seed=5)
    assert (swaps[0] == 1).all() and set(np.unique(swaps)) == {-1, 1}    # identity first
    assert (item_swaps(12, 50, seed=5) == item_swaps(12, 50, seed=5)).all()  # seeded
    # 20,000 draws: a share's standard error is at most 0.0036; 5 of them
    assert maxt_adjusted(diffs, swaps).tolist() == pytest.approx(exact.tolist(), abs=0.018)


def test_correct_families_corrects_each_family_on_its_own() -> None:
    rng = np.random.default_rng(1)
    diffs = rng.choice([-1, 0, 1], size=(5, 10), p=[0.2, 0.5, 0.3]).astype(np.int8)
    tests = pd.DataFrame({"p": [0.01, 0.2, 0.03, np.nan, 0.04],
                          "family": ["a", "a", "b", "b", "b"]})
    holm_by = correct_families(tests.assign(**{c: 0 for c in TESTS_COLUMNS
                                               if c not in tests}), diffs, "holm")
    assert holm_by["p_corrected"].tolist()[:2] == pytest.approx(holm([0.01, 0.2]).tolist())
    assert holm_by["p_corrected"].tolist()[4] == pytest.approx(holm([0.03, 0.04])[1])
    assert np.isnan(holm_by["p_corrected"][3])                  # no items: out of its family
    assert holm_by["family_size"].tolist() == [2, 2, 2, 2, 2]
    every = np.array(list(itertools.product((1, -1), repeat=10)))
    maxt = correct_families(tests.assign(**{c: 0 for c in TESTS_COLUMNS if c not in tests}),
                            diffs, "maxt", permutations=4000, seed=0)
    # family b without its NaN test: tests 2 and 4, checked against every swap
    exact = maxt_adjusted(diffs[[2, 4]], every)
    assert maxt["p_corrected"].tolist()[2::2] == pytest.approx(exact.tolist(), abs=0.03)
    assert set(maxt["correction"]) == {"maxt"}


# --- the baselines ------------------------------------------------------------------------------


def test_the_baselines_of_each_task_by_hand() -> None:
    # SemanticQA's NCC: NC 95, PC 75, C 71 (the protocol)
    gold = ["NC"] * 95 + ["PC"] * 75 + ["C"] * 71
    rows = baseline_table(gold).set_index("system")
    assert rows["kind"].unique().tolist() == ["baseline"]
    assert rows["setting"].to_dict() == {"uniform": "3-way", "stratified": "3-way",
                                         "majority": "3-way", "four_options": "4-option"}
    acc = rows["accuracy"]
    assert acc["uniform"] == pytest.approx(1 / 3)
    assert acc["stratified"] == pytest.approx((95**2 + 75**2 + 71**2) / 241**2)   # 33.9
    assert round(100 * acc["stratified"], 1) == 33.9
    assert acc["majority"] == pytest.approx(95 / 241)                             # 39.4
    assert acc["four_options"] == pytest.approx(0.25)
    # macro-F1 from the expected counts: class c, n_c gold, q n predicted, q n_c right
    f1 = rows["macro_f1"]
    n = {"NC": 95, "PC": 75, "C": 71}

    def expected(q: dict[str, float]) -> float:
        return sum(2 * q[c] * n[c] / (n[c] + q[c] * 241) for c in n) / 3

    assert f1["uniform"] == pytest.approx(expected({c: 1 / 3 for c in n}))
    assert f1["stratified"] == pytest.approx(1 / 3)          # F1_c = the class's share
    assert f1["majority"] == pytest.approx(2 * 95 / (95 + 241) / 3)
    assert f1["four_options"] == pytest.approx(expected({c: 1 / 4 for c in n}))
    # a rule is no sample: no interval; n the items
    assert rows[["ci_low", "ci_high", "f1_low", "f1_high"]].isna().all().all()
    assert set(rows["n"]) == {241}
