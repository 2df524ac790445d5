"""NccResults (issue 30): the results directory (round trip, verified, joined), the access
(select, wide, agreement), the summary and JSON rows, and the comparison of two runs.

The items table is built here by hand: 20 items whose gold class cycles NC, PC, C, and a few
system rows whose right and wrong items are spelled out below, so that every expected
accuracy, count and flagged item is counted here from those rules, not taken from the code.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import binomtest

from ncprobe.errors import DataError, UsageError
from ncprobe.ncc.results import NccResults

from .handmade import (
    ALL_WRONG,
    CLAUDE_WRONG,
    GOLD,
    GPT_WRONG,
    IDS,
    N_BOOT,
    SINGLE_WRONG,
    items_table,
    meta,
    results,
)


@pytest.fixture(scope="module")
def res() -> NccResults:
    return results()


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


# --- on disk --------------------------------------------------------------------------------


def test_a_round_trip_keeps_every_table_and_a_rerun_writes_the_same_bytes(res, tmp_path):
    res.to_parquet(tmp_path / "a")
    back = NccResults.load(tmp_path / "a")
    for name, table in res.tables.items():
        pd.testing.assert_frame_equal(back.tables[name], table, check_dtype=False)
    assert back.run_id == res.run_id and back.models == ["glove-6b-50d"]
    back.to_parquet(tmp_path / "b")            # what was read, written again
    results().to_parquet(tmp_path / "c")       # computed again from the same items
    assert _files(tmp_path / "a") == _files(tmp_path / "b") == _files(tmp_path / "c")
    assert sorted(_files(tmp_path / "a")) == sorted(
        ["items.parquet", "accuracy.parquet", "per_class.parquet", "tests.parquet",
         "confusion.parquet", "run.json"])


def test_an_edited_table_is_refused_unless_accepted(res, tmp_path):
    out = res.to_parquet(tmp_path / "r")
    edited = pd.read_parquet(out / "accuracy.parquet")
    edited.loc[0, "accuracy"] = 0.99
    edited.to_parquet(out / "accuracy.parquet")
    with pytest.raises(DataError, match="edited"):
        NccResults.load(out)
    back = NccResults.load(out, accept_edited=True)
    assert back.accuracy.loc[0, "accuracy"] == 0.99
    assert "accuracy.parquet" in back.edited_lines()[0]
    assert back.summary().startswith("EDITED RESULTS (glove-6b-50d)")


def test_a_run_json_without_the_tables_model_is_refused(res, tmp_path):
    # the tables hold glove's rows, run.json describes minilm: a run removed or edited
    other = NccResults(**res.tables, meta=meta("minilm"))
    out = other.to_parquet(tmp_path / "r")
    with pytest.raises(DataError, match="no run for the model.*glove-6b-50d"):
        NccResults.load(out)


def test_load_many_joins_models_with_the_published_rows_once(res, tmp_path):
    res.to_parquet(tmp_path / "runs" / "glove")
    results("minilm").to_parquet(tmp_path / "runs" / "minilm")
    joined = NccResults.load_many([tmp_path / "runs"])
    assert joined.models == ["glove-6b-50d", "minilm"]
    kinds = joined.accuracy["kind"].tolist()
    # 2 published files + the paper's 2 rows, 1 ceiling and 4 baselines once, 2
    # representation rows per model
    assert kinds.count("published") == 4 and kinds.count("ceiling") == 1
    assert kinds.count("baseline") == 4 and kinds.count("representation") == 4
    assert (joined.items["kind"] == "published").sum() == 20 + 18
    # each model's family, and the ceiling's once (the same in both runs)
    assert joined.tests["family"].drop_duplicates().tolist() == [
        "classifiers vs systems: glove-6b-50d", "gold ceiling vs systems",
        "classifiers vs systems: minilm"]
    assert len(joined.tests) == 2 * len(res.tests) - 2
    # the data note of both runs once, named after both; each run's own note after it
    assert joined.notes == ["glove-6b-50d, minilm: 3 prediction files hold fewer lines",
                            "glove-6b-50d: glove-6b-50d was quick", "minilm: minilm was quick"]


def test_load_many_refuses_a_model_in_two_directories(res, tmp_path):
    res.to_parquet(tmp_path / "a")
    results().to_parquet(tmp_path / "b")
    with pytest.raises(UsageError, match=r"'glove-6b-50d' is in both .*a and .*b.*never pooled"):
        NccResults.load_many([tmp_path / "a", tmp_path / "b"])


def test_load_many_refuses_runs_whose_published_rows_differ(res, tmp_path):
    res.to_parquet(tmp_path / "a")
    results("minilm", gpt_wrong={1, 2}).to_parquet(tmp_path / "b")
    with pytest.raises(UsageError, match="different published or gold-ceiling rows"):
        NccResults.load_many([tmp_path / "a", tmp_path / "b"])


# --- access -----------------------------------------------------------------------------------


def test_select_filters_and_names_the_values_there_are(res):
    # the two files, then the paper's fine-tuned rows (no file)
    assert res.select(kind="published")["system"].tolist() == [
        "gpt-5", "claude-sonnet-4-5", "BERT-base", "BERT-large"]
    assert len(res.select("items", system="gpt-5", correct=False)) == len(GPT_WRONG)
    with pytest.raises(UsageError, match="kind 'publishd' is not in the accuracy table; it "
                                         "holds kind published, representation, ceiling"):
        res.select(kind="publishd")
    with pytest.raises(UsageError, match="unknown table 'overall'"):
        res.select("overall")
    with pytest.raises(UsageError, match="cannot select on 'model'"):
        res.select(model="glove-6b-50d")


def test_wide_by_item_and_by_system(res):
    wide = res.wide("item")
    assert wide["item"].tolist() == IDS and wide["gold"].tolist() == GOLD
    claude = wide["claude-sonnet-4-5 5-shot"]
    assert claude.isna().tolist() == [k >= 18 for k in range(20)]   # not in its file
    assert [bool(v) for v in claude[:18]] == [k not in CLAUDE_WRONG for k in range(18)]
    assert [bool(v) for v in wide["gpt-5 0-shot"]] == [k not in GPT_WRONG for k in range(20)]
    by_system = res.wide()
    # 5 rows of items, 4 baselines, the paper's 2 rows (no items: no column in by item)
    assert len(by_system) == 11 and {"f1_NC", "precision_PC", "recall_C"} <= set(by_system)
    assert "BERT-base fine-tuned (paper)" not in wide and "uniform 3-way" not in wide
    # the ceiling is wrong on one NC item (k = 3), answered PC: NC recall 6/7, PC precision 7/8
    ceiling = by_system[by_system["kind"] == "ceiling"].iloc[0]
    assert ceiling["recall_NC"] == pytest.approx(6 / 7)
    assert ceiling["precision_PC"] == pytest.approx(7 / 8)
    with pytest.raises(UsageError, match="by='model'"):
        res.wide("model")


def test_agreement_names_the_items_every_system_misses_and_only_the_representation_gets(res):
    systems = res.agreement_systems()
    # every published row, and the model's most accurate representation row (all: 18 of 20)
    assert systems == {"gpt-5 0-shot": "published", "claude-sonnet-4-5 5-shot": "published",
                       "gold score all gold": "ceiling",
                       "glove-6b-50d all - nc all": "representation"}
    ag = res.agreement()
    # item 001 (k 0): gpt, claude ("none") and glove all wrong; 007 (k 6): both systems wrong,
    # glove all right
    assert ag.loc[ag["missed_by_all"], "item"].tolist() == ["001"]
    assert ag.loc[ag["only_representation"], "item"].tolist() == ["007"]
    assert ag["item"].iloc[0] == "001"                                   # fewest right first
    assert ag["right"].is_monotonic_increasing
    by_item = ag.set_index("item")
    assert by_item.loc["020", "said_n"] == 1 and by_item.loc["020", "said_right"] == 1
    assert by_item.loc["004", "said_right"] == 1                          # gpt wrong (k 3)


# --- what is printed ----------------------------------------------------------------------------


def _pct(right: int, n: int) -> str:
    return f"{100 * right / n:.1f}"


def test_the_summary_holds_the_numbers_in_kind_order(res):
    text = res.summary()
    lines = text.splitlines()
    rows = {name: next(line for line in lines if f" {name} " in line)
            for name in ("gpt-5 0-shot", "claude-sonnet-4-5 5-shot", "gold score all gold",
                         "glove-6b-50d single - nc syn", "glove-6b-50d all - nc all")}
    assert " 20 " in rows["gpt-5 0-shot"]
    assert _pct(17, 20) + " [" in rows["gpt-5 0-shot"]
    assert " 18 " in rows["claude-sonnet-4-5 5-shot"]
    assert _pct(15, 18) + " [" in rows["claude-sonnet-4-5 5-shot"]
    assert _pct(19, 20) + " [" in rows["gold score all gold"]
    assert _pct(10, 20) + " [" in rows["glove-6b-50d single - nc syn"]
    assert _pct(18, 20) + " [" in rows["glove-6b-50d all - nc all"]
    order = [lines.index(rows[k]) for k in ("gpt-5 0-shot", "claude-sonnet-4-5 5-shot",
                                            "gold score all gold", "glove-6b-50d single - nc syn")]
    assert order == sorted(order)        # published, then ceiling, then representation
    assert "human 71.0" in text
    # the baselines of the 20 items (7 NC, 7 PC, 6 C): majority (NC) 7/20, four options 25
    assert _pct(7, 20) in next(line for line in lines if " majority 3-way " in line)
    assert " 25.0 " in next(line for line in lines if " four_options 4-option " in line)
    assert "trained on about 18 gold labels per fold" in text      # 20 items, 10 folds
    # the most accurate classifier (glove all, 18/20), labelled as chosen on the items it is
    # scored on, against the best published system (gpt, 17/20): right only by glove: items
    # 3 and 6 (gpt wrong there); only by gpt: item 5
    headline = next(line for line in lines if line.startswith("most accurate representation"))
    assert "chosen on the items it is scored on" in headline
    assert "glove-6b-50d all - nc all vs best published system gpt-5 0-shot" in headline
    assert "on the 20 items" in headline and "+5.0 points" in headline
    assert "only by the classifier 2, only by the system 1" in headline
    p = binomtest(2, 3, 0.5).pvalue
    assert f"McNemar p {p:.3f}" in headline
    assert "glove-6b-50d: 3 prediction files hold fewer lines" in text


def test_json_rows_are_the_accuracy_table_with_nan_as_null():
    rows = results(n_boot=0).json_rows()
    assert [r["system"] for r in rows] == ["gpt-5", "claude-sonnet-4-5", "glove-6b-50d",
                                           "glove-6b-50d", "gold score", "uniform",
                                           "stratified", "majority", "four_options",
                                           "BERT-base", "BERT-large"]
    bert = rows[-2]
    assert bert["kind"] == "published" and bert["n"] == 0 and bert["accuracy"] == 0.536
    assert bert["ci_low"] is None and bert["macro_f1"] is None
    gpt = rows[0]
    assert gpt["kind"] == "published" and gpt["setting"] == "0-shot" and gpt["layer"] == ""
    assert gpt["n"] == 20 and gpt["accuracy"] == pytest.approx(17 / 20)
    assert gpt["ci_low"] is None and gpt["ci_high"] is None      # no resamples: no interval
    assert isinstance(gpt["macro_f1"], float) and not math.isnan(gpt["macro_f1"])


# --- compare ------------------------------------------------------------------------------------


def test_compare_tests_a_classifier_of_one_run_against_one_of_another(res):
    other = results("minilm")
    df = res.compare(other, a="glove-6b-50d all - nc all", b=["minilm single - nc syn"],
                     names=["A", "B"])
    assert len(df) == 1
    row = df.iloc[0]
    # glove all wrong on {0, 5}; minilm single wrong on the even items
    a_only = len(SINGLE_WRONG - ALL_WRONG)
    b_only = len(ALL_WRONG - SINGLE_WRONG)
    assert (row["a_only"], row["b_only"], row["n"]) == (a_only, b_only, 20)
    assert row["diff"] == pytest.approx((18 - 10) / 20)
    assert row["p"] == pytest.approx(binomtest(a_only, a_only + b_only, 0.5).pvalue)
    assert row["family"] == "classifiers across runs: A vs B" and row["family_size"] == 1
    assert row["diff_low"] <= row["diff"] <= row["diff_high"]
    # default: every representation row against every one: 2 x 2, one family
    every = res.compare(other)
    assert len(every) == 4 and set(every["family_size"]) == {4}
    with pytest.raises(UsageError, match="'nope' is not a system row.*gpt-5 0-shot"):
        res.compare(other, a="nope")
    with pytest.raises(UsageError, match="compared with other NCC results"):
        res.compare(None)


# --- families fixed by the question ------------------------------------------------------------


@pytest.mark.parametrize("correction", ["maxt", "holm"])
def test_a_test_has_the_same_corrected_p_whatever_other_models_shared_the_run(correction):
    """The same test (glove's classifiers, the ceiling, against the published systems) in a
    run of glove alone and in a run of glove and minilm: the same corrected p."""
    alone = NccResults.from_items(items_table("glove-6b-50d"), meta("glove-6b-50d"),
                                  n_boot=N_BOOT, correction=correction)
    minilm = items_table("minilm")
    both_items = pd.concat([items_table("glove-6b-50d"),
                            minilm[minilm["kind"] == "representation"]], ignore_index=True)
    both = NccResults.from_items(both_items, meta("glove-6b-50d") + meta("minilm"),
                                 n_boot=N_BOOT, correction=correction)
    key = ["a", "b"]
    one = alone.tests.set_index(key)
    two = both.tests.set_index(key)
    assert len(two) == len(one) + 4          # minilm's 2 rows x the 2 published systems
    shared = two.loc[one.index]
    for col in ("p", "p_corrected", "family", "family_size"):
        assert shared[col].tolist() == one[col].tolist(), col
    assert (one["p_corrected"] < 1).any()     # not trivially equal
    assert set(two["family"]) == {"classifiers vs systems: glove-6b-50d",
                                  "classifiers vs systems: minilm", "gold ceiling vs systems"}


def test_compare_corrects_with_max_t_when_asked(res):
    import itertools

    import numpy as np

    from ncprobe.ncc.stats import maxt_adjusted

    other = results("minilm")
    df = res.compare(other, names=["A", "B"], correction="maxt")
    assert len(df) == 4 and set(df["correction"]) == {"maxt"}
    # the same p by hand: the 20 items' right/wrong of each pair; 2^20 swaps are too many,
    # so the drawn swaps are checked against all the swaps of the 12 items that differ
    right_a = {r: [k not in w for k in range(20)] for r, w in
               (("glove-6b-50d single - nc syn", SINGLE_WRONG),
                ("glove-6b-50d all - nc all", ALL_WRONG))}
    right_b = {r.replace("glove-6b-50d", "minilm"): v for r, v in right_a.items()}
    diffs = np.array([np.array(right_a[a], int) - np.array(right_b[b], int)
                      for a, b in zip(df["a"], df["b"], strict=True)])
    moving = np.flatnonzero((diffs != 0).any(axis=0))
    assert len(moving) <= 14
    every = np.array(list(itertools.product((1, -1), repeat=len(moving))))
    exact = maxt_adjusted(diffs[:, moving], every)
    assert df["p_corrected"].tolist() == pytest.approx(exact.tolist(), abs=0.02)


def test_the_accuracy_over_the_cv_repeats_is_each_rows_mean_least_and_greatest():
    repeats = pd.DataFrame([
        {"system": "glove-6b-50d", "kind": "representation", "setting": "all", "layer": "-",
         "level": "nc", "measure": "all", "repeat": r, "accuracy": a}
        for r, a in enumerate([0.80, 0.90, 0.85, 0.75])])
    res = NccResults.from_items(items_table(), meta(), n_boot=N_BOOT, repeats=repeats)
    acc = res.accuracy.set_index("measure")
    row = acc.loc["all"]
    assert (row["repeat_mean"], row["repeat_min"], row["repeat_max"]) == pytest.approx(
        (0.825, 0.75, 0.90))
    # the rows without repeats (a file, the other classifier here) have none
    assert acc.loc["syn", ["repeat_mean", "repeat_min", "repeat_max"]].isna().all()
    line = next(x for x in res.summary().splitlines() if " glove-6b-50d all - nc all " in x)
    assert line.rstrip().endswith("82.5 [75.0, 90.0]")


def test_a_side_without_classifiers_is_named_in_the_command_lines_words(res):
    """Regression (issue 38): the refusal named the Python keyword ``a=[labels]``, which the
    command line cannot give; it names RESULTS_A / RESULTS_B and what to compare instead."""
    from dataclasses import replace

    acc = res.accuracy
    bare = replace(res, accuracy=acc[acc["kind"].astype(str) != "representation"])
    with pytest.raises(UsageError, match=r"RESULTS_B \(b\): these results hold no "
                       r"representation classifier.*ncprobe run ncc --model MODEL") as got:
        res.compare(bare)
    assert "[labels]" not in str(got.value)
