"""AStitchResults (issue 31): the results directory (round trip, verified, joined with the
controls once), the access (select, wide), the summary and JSON rows, the tables computed from
the per-use parts, and the comparison of two runs.

The tables are built by hand (:mod:`tests.astitch.handmade_results`): every expected number is
read off its rules, or counted here (AUROC as pairs, macro-F1 by scikit-learn on the rows).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score

from ncprobe.astitch.results import AStitchResults
from ncprobe.errors import DataError, UsageError
from ncprobe.ncc.results import NccResults

from . import handmade_results as hm


@pytest.fixture(scope="module")
def res() -> AStitchResults:
    return hm.results()


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


# --- on disk --------------------------------------------------------------------------------


def test_a_round_trip_keeps_every_table_and_a_rewrite_the_same_bytes(res, tmp_path):
    res.to_parquet(tmp_path / "a")
    back = AStitchResults.load(tmp_path / "a")
    for name, table in res.tables.items():
        pd.testing.assert_frame_equal(back.tables[name], table, check_dtype=False)
    assert back.run_id == res.run_id and back.models == ["m"] and back.langs == ["en"]
    back.to_parquet(tmp_path / "b")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert sorted(_files(tmp_path / "a")) == sorted(
        ["scores.parquet", "auroc.parquet", "predictions.parquet", "linear.parquet",
         "tests.parquet", "excluded.parquet", "run.json"])
    assert json.loads((tmp_path / "a" / "run.json").read_text())["probe"] == "astitch"


def test_an_edited_table_is_refused_unless_accepted(res, tmp_path):
    out = res.to_parquet(tmp_path / "r")
    edited = pd.read_parquet(out / "linear.parquet")
    edited.loc[0, "macro_f1"] = 0.99
    edited.to_parquet(out / "linear.parquet")
    with pytest.raises(DataError, match="edited"):
        AStitchResults.load(out)
    back = AStitchResults.load(out, accept_edited=True)
    assert back.linear.loc[0, "macro_f1"] == 0.99
    assert "linear.parquet" in back.edited_lines()[0]
    assert back.summary().startswith("EDITED RESULTS (m)")


def test_a_run_json_without_the_tables_model_is_refused(res, tmp_path):
    # the tables hold m's rows (and the static control's, which need no run), run.json
    # describes "other" only
    out = AStitchResults(**res.tables, meta=hm.meta("other")).to_parquet(tmp_path / "r")
    with pytest.raises(DataError, match="no run for the model.s. m of its tables"):
        AStitchResults.load(out)


def test_load_many_joins_models_with_the_controls_and_excluded_rows_once(res, tmp_path):
    res.to_parquet(tmp_path / "runs" / "m")
    hm.results("m2").to_parquet(tmp_path / "runs" / "m2")
    joined = AStitchResults.load_many([tmp_path / "runs"])
    assert joined.models == ["m", "m2"]
    kinds = joined.linear.loc[joined.linear["subset"] == "all", "probe_kind"].tolist()
    # 2 settings x (majority, expression, static) and x 4 baselines once; 2 settings x 2
    # layers x 3 features per model
    assert kinds.count("control") == 6 and kinds.count("linear") == 2 * 12
    assert kinds.count("baseline") == 2 * 4
    assert (joined.predictions["probe_kind"] == "control").sum() == 6 * 9
    assert len(joined.excluded) == 5 and len(joined.auroc) == 2 * len(res.auroc)
    assert joined.tests["family"].tolist() == ["astitch: m", "astitch: m2"]
    assert joined.notes == ["m, m2: en: 5 rows left out", "m: m was quick", "m2: m2 was quick"]


def test_load_many_refuses_a_model_in_two_directories(res, tmp_path):
    res.to_parquet(tmp_path / "a")
    hm.results().to_parquet(tmp_path / "b")
    with pytest.raises(UsageError, match=r"'m' is in both .*a and .*b.*never pooled"):
        AStitchResults.load_many([tmp_path / "a", tmp_path / "b"])


def test_concat_refuses_other_control_rows_naming_the_options_that_differ(res):
    other = hm.results("m2", majority_f1=0.30, n_boot=100)
    with pytest.raises(UsageError, match=r"different control rows .*table linear.*"
                                         r"n_boot 200 in A, 100 in B"):
        AStitchResults.concat([res, other], ["A", "B"])


def test_concat_refuses_results_of_other_data(res):
    with pytest.raises(UsageError, match="different data: data file .*test.csv: git blob "
                                         "blob1 in A, blob2 in B"):
        AStitchResults.concat([res, hm.results("m2", data_blob="blob2")], ["A", "B"])


# --- access -----------------------------------------------------------------------------------


def test_select_filters_and_names_the_values_there_are(res):
    controls = res.select(setting="zero-shot", probe_kind="control", subset="all")
    assert controls["control"].tolist() == ["majority", "expression", "static"]
    # two layer views x four level/contexts x two subsets (all, ambiguous)
    assert len(res.select("auroc", split="test", score="contrast")) == 2 * 4 * 2
    with pytest.raises(UsageError, match="setting 'zero' is not in the linear table; it "
                                         "holds setting zero-shot, few-shot"):
        res.select(setting="zero")
    with pytest.raises(UsageError, match="unknown table 'overall'"):
        res.select("overall")


def test_wide_puts_the_layer_views_on_the_rows(res):
    wide = res.wide()
    assert wide.index.tolist() == ["1", "2"]
    assert wide[("m", "en", "zero-shot", "nc", "excluded")].tolist() == [
        hm.f1_on_test("1", "nc", "excluded"), hm.f1_on_test("2", "nc", "excluded")]
    assert wide.shape == (2, 2 * 3)             # the controls are not layer views
    auc = res.wide("auroc")          # the headline: the within-expression AUROC
    for subset in ("all", "ambiguous"):
        assert auc.loc["2", ("m", "en", "test", "sent", "included", "literal", subset)] == \
            pytest.approx(hm.within_value("test", "2", "sent", "included", "literal", subset))
    with pytest.raises(UsageError, match="wide..tests.."):
        res.wide("tests")


# --- what is printed ----------------------------------------------------------------------------


def test_json_rows_are_one_per_auroc_and_linear_row_with_nan_as_null(res):
    rows = res.json_rows()
    # after each linear row its two control tasks (type, within), one row each
    n_linear = int((res.linear["probe_kind"] == "linear").sum())
    assert len(rows) == len(res.auroc) + len(res.linear) + 2 * n_linear
    json.dumps(rows, allow_nan=False)           # plain JSON: no NaN anywhere
    para = rows[0]
    assert {"probe_kind", "model", "lang", "split", "setting", "level", "context", "layer",
            "score", "n", "n_expressions", "auroc", "ci_low", "ci_high"} <= set(para)
    a = hm.auroc_value("dev", "1", "nc", "excluded", "contrast")
    assert (para["probe_kind"], para["split"], para["setting"], para["score"]) == (
        "paraphrase", "dev", "", "contrast")
    assert para["auroc"] == pytest.approx(a) and para["ci_low"] == pytest.approx(a - 0.08)
    assert para["n"] == 6 and para["n_expressions"] == 2
    # the headline beside it, and the subset: every paraphrase row comes for both
    w = hm.within_value("dev", "1", "nc", "excluded", "contrast", "all")
    assert (para["subset"], para["n_within"]) == ("all", 2)
    assert para["auroc_within"] == pytest.approx(w)
    assert (para["auroc_within_low"], para["auroc_within_high"]) == pytest.approx(
        (w - 0.09, w + 0.09))
    paraphrase = [r for r in rows if r["probe_kind"] == "paraphrase"]
    assert Counter(r["subset"] for r in paraphrase) == {"all": len(res.auroc) // 2,
                                                        "ambiguous": len(res.auroc) // 2}
    amb = paraphrase[2]                         # dev, layer 1, nc excluded: ambiguous contrast
    assert (amb["subset"], amb["score"]) == ("ambiguous", "contrast")
    assert amb["auroc_within"] == pytest.approx(
        hm.within_value("dev", "1", "nc", "excluded", "contrast", "ambiguous"))
    majority = rows[len(res.auroc)]             # the first linear row: zero-shot majority
    assert {"probe_kind", "model", "lang", "split", "setting", "level", "context", "layer",
            "control", "n", "n_expressions", "macro_f1", "accuracy", "ci_low",
            "ci_high"} <= set(majority)
    assert (majority["probe_kind"], majority["control"], majority["model"],
            majority["split"], majority["setting"]) == ("control", "majority", "", "test",
                                                        "zero-shot")
    assert majority["macro_f1"] == pytest.approx(0.40)
    assert majority["ci_low"] == pytest.approx(0.30) and majority["ci_high"] == pytest.approx(0.50)
    assert majority["accuracy"] == pytest.approx(0.45)
    assert majority["selectivity"] is None and majority["dev_macro_f1"] is None
    cell = next(r for r in rows if r["probe_kind"] == "linear" and r["layer"] == "2"
                and r["level"] == "nc" and r["context"] == "excluded"
                and r["setting"] == "few-shot")
    assert cell["macro_f1"] == pytest.approx(0.50) and cell["dev_macro_f1"] == pytest.approx(0.70)
    assert cell["selectivity"] == pytest.approx(0.2) and cell["n"] == 9


def test_the_summary_shows_the_best_views_with_intervals_and_the_controls(res):
    text = res.summary()
    lines = text.splitlines()
    assert "cluster bootstrap over expressions (200 resamples)" in text
    # the paraphrase probe: the best test contrast cell, layer 2 nc excluded (0.73)
    # the within AUROC (0.63) first, the pooled one (0.73) beside it, for both subsets
    best = next(line for line in lines if " test " in line and " contrast " in line)
    assert " all " in best and "layer 2, nc, context excluded" in best
    assert best.index("0.630 [0.540, 0.720]") < best.index("0.730 [0.650, 0.810]")
    assert "scored rows lean idiomatic (70% idiomatic)" in best
    amb = next(line for line in lines if " test " in line and " contrast " in line
               and " ambiguous " in line)
    assert "0.620 [0.530, 0.710]" in amb and "0.730 [0.650, 0.810]" in amb
    # the linear probe: the view of the best *dev* F1 (layer 2) with its test F1 (50.0), not
    # layer 1's better test F1 (55.0)
    model = next(line for line in lines if line.lstrip().startswith("zero-shot")
                 and " m " in line)
    assert "layer 2, nc, context excluded" in model and "70.0" in model
    assert "50.0 [40.0, 60.0]" in model and "+20.0 [+5.0, +35.0]" in model
    majority = next(line for line in lines if "zero-shot  majority" in line)
    assert "40.0 [30.0, 50.0]" in majority
    assert any("zero-shot  expression-only" in line and "45.0 [35.0, 55.0]" in line
               for line in lines)
    assert any("static (glove-6b-50d)" in line and "48.0 [38.0, 58.0]" in line
               for line in lines)
    # the chosen view's two control tasks (its C), the AUROC of its scores, the baselines
    at = lines.index(model)
    assert "AUROC of its scores" in lines[at + 1] and "0.600 [0.500, 0.700]" in lines[at + 1]
    assert "type control" in lines[at + 2] and "30.0 [20.0, 40.0]" in lines[at + 2]
    assert "+20.0 [+5.0, +35.0]" in lines[at + 2]
    assert "within control (20 draws)" in lines[at + 3]
    assert "40.0 [30.0, 50.0]" in lines[at + 3] and "+10.0 [+0.0, +20.0]" in lines[at + 3]
    # the ambiguous uses (here every use: each expression has both labels in test)
    assert "ambiguous: 9 uses of 3 expr." in lines[at + 4] and "50.0" in lines[at + 4]
    base = next(line for line in lines if "zero-shot  baselines, all uses" in line)
    assert "majority (test) 35.7 [25.7, 45.7]" in base and "type oracle 64.9" in base
    assert "chance (stratified) 49.0" in base and "majority (train) 40.0" in base
    assert any("zero-shot  baselines, ambiguous uses" in line for line in lines)
    assert "selectivity = task F1 - control F1" in text
    assert "Excluded rows: 5" in text and "4 no literal paraphrase" in text
    assert "m: m was quick" in text


# --- computed from the parts --------------------------------------------------------------------


def _parts():
    key = {"model": "m", "lang": "en", "setting": "zero-shot", "level": "nc",
           "context": "excluded", "probe_kind": "linear", "control": ""}
    # test cell: literal uses (1) score 0.3, 0.5; idiomatic (0) 0.1, 0.4 -> 3 of 4 pairs right
    scores = pd.DataFrame({
        "model": "m", "lang": "en", "split": ["test"] * 4 + ["dev"] * 2, "layer": "1",
        "level": "nc", "context": "excluded", "row": [1, 2, 3, 4, 1, 2],
        "expression": ["a", "b", "a", "b", "a", "b"], "label": [1, 1, 0, 0, 1, 1],
        "literal": [0.6, 0.2, 0.7, 0.1, 0.5, 0.5], "contrast": [0.3, 0.5, 0.1, 0.4, 0.2, 0.3]})
    y = np.array([0, 0, 1, 1, 0, 1])
    expr = ["a", "a", "b", "b", "c", "c"]
    preds = {"1": [0, 1, 1, 1, 0, 0], "2": [0, 0, 1, 0, 0, 1]}
    parts = [pd.DataFrame({**key, "layer": layer, "row": np.arange(1, 7), "expression": expr,
                           "label": y, "predicted": p, "control_label": [1, 1, 0, 0, 1, 1],
                           "control_predicted": [1, 1, 1, 1, 1, 1]})
             for layer, p in preds.items()]
    predictions = pd.concat(parts, ignore_index=True)
    fits = pd.DataFrame([{**key, "layer": "1", "C": 0.1, "dev_macro_f1": 0.6, "control_C": 1.0,
                          "converged": True},
                         {**key, "layer": "2", "C": 1.0, "dev_macro_f1": 0.5, "control_C": 1.0,
                          "converged": False}])
    excluded = pd.DataFrame({"lang": ["en"], "split": ["dev"], "row": [9], "expression": ["z"],
                             "why": ["no literal paraphrase"]})
    return scores, predictions, fits, excluded, y, preds, key


def test_from_parts_computes_auroc_linear_and_tests_and_notes_the_cells():
    scores, predictions, fits, excluded, y, preds, key = _parts()
    res = AStitchResults.from_parts(scores, predictions, fits, excluded, hm.meta("m"),
                                    n_boot=50, seed=0, correction="holm",
                                    pairs=[({**key, "layer": "1"}, {**key, "layer": "2"})])
    auc = res.auroc[res.auroc["subset"] == "all"].set_index(["split", "score"])
    assert auc.loc[("test", "contrast"), "auroc"] == pytest.approx(3 / 4)
    # literal: 0.6 and 0.2 against 0.7 and 0.1: 0.6 > 0.1, 0.2 > 0.1 -> 2 of 4
    assert auc.loc[("test", "literal"), "auroc"] == pytest.approx(2 / 4)
    assert math.isnan(auc.loc[("dev", "contrast"), "auroc"])      # dev: literal uses only
    # within expressions: a (0.3 literal over 0.1), b (0.5 over 0.4) -> 2 of 2; literal: a
    # (0.6 under 0.7), b (0.2 over 0.1) -> 1 of 2
    assert auc.loc[("test", "contrast"), "auroc_within"] == 1.0
    assert auc.loc[("test", "literal"), "auroc_within"] == 0.5
    lin = res.linear[res.linear["subset"] == "all"].set_index("layer")
    for layer, p in preds.items():
        assert lin.loc[layer, "macro_f1"] == pytest.approx(f1_score(y, p, average="macro"))
    assert lin.loc["1", "C"] == 0.1 and lin.loc["2", "dev_macro_f1"] == 0.5
    test = res.tests.iloc[0]
    assert test["family"] == "astitch: m" and test["a"] == "m layer 1 nc/excluded"
    assert test["diff"] == pytest.approx(f1_score(y, preds["1"], average="macro")
                                         - f1_score(y, preds["2"], average="macro"))
    assert res.excluded["row"].tolist() == [9]
    notes = "\n".join(res.notes)
    assert "1 of 2 linear fit(s)" in notes and "did not converge" in notes
    assert "m layer 2 nc/excluded" in notes
    assert "AUROC undefined in 2 cell(s)" in notes   # dev, both scores
    with pytest.raises(UsageError, match="excluded: no column why"):
        AStitchResults.from_parts(scores, predictions, fits, excluded.drop(columns="why"),
                                  hm.meta("m"), n_boot=0, pairs=[])


# --- compare ------------------------------------------------------------------------------------


def _f1(layer: str) -> float:
    key = {"control": "", "layer": layer}
    pred = [hm.predicted(key, r) for r in range(1, 10)]
    return f1_score(hm.TEST_LABELS, pred, average="macro")


def test_compare_tests_a_cell_of_one_run_against_one_of_another(res):
    zero_nc = {"setting": "zero-shot", "level": "nc", "context": "excluded"}
    df = res.compare(hm.results("m2"), a={**zero_nc, "layer": "2"},
                     b={**zero_nc, "layer": "1"}, names=["A", "B"], n_perm=200)
    assert len(df) == 1
    row = df.iloc[0]
    assert (row["a"], row["b"]) == ("m layer 2 nc/excluded", "m2 layer 1 nc/excluded")
    assert row["f1_a"] == pytest.approx(_f1("2")) and row["f1_b"] == pytest.approx(_f1("1"))
    assert row["diff"] == pytest.approx(_f1("2") - _f1("1"))
    assert (row["n"], row["n_expressions"]) == (9, 3)
    assert row["family"] == "astitch across runs: A vs B" and row["family_size"] == 1
    # default: each side's best dev view per setting and feature, like with like
    every = res.compare(hm.results("m2"), n_perm=200)
    assert len(every) == 2 * 3 and set(every["a"].str.split().str[:3].str.join(" ")) == {
        "m layer 2"}


def test_compare_tells_one_model_run_twice_apart_by_the_names(res):
    cell = {"setting": "few-shot", "layer": "1", "level": "sent", "context": "excluded"}
    row = res.compare(hm.results("m"), a=cell, b=cell, names=["A", "B"], n_perm=200).iloc[0]
    assert (row["a"], row["b"]) == ("m (A) layer 1 sent/excluded", "m (B) layer 1 sent/excluded")
    assert row["diff"] == 0.0


def test_compare_refuses_other_probes_results_and_unknown_cells(res):
    ncc = NccResults(*[pd.DataFrame()] * 5, meta=[])
    with pytest.raises(UsageError, match="compared with other AStitch results"):
        res.compare(ncc)
    with pytest.raises(UsageError, match="compared with other AStitch results"):
        res.compare(None)
    with pytest.raises(UsageError, match="'nope' is not a linear cell"):
        res.compare(hm.results("m2"), a="nope")


def test_a_side_without_linear_cells_is_named_in_the_command_lines_words(res):
    """Regression (issue 38): the refusal named the Python keyword ``a=[labels]``, which the
    command line cannot give; it names RESULTS_A / RESULTS_B and what to compare instead."""
    from dataclasses import replace

    lin = res.linear
    bare = replace(res, linear=lin[lin["probe_kind"].astype(str) != "linear"])
    with pytest.raises(UsageError, match=r"RESULTS_A \(a\): these results hold no "
                       r"linear-probe cell.*ncprobe run astitch --model MODEL") as got:
        bare.compare(res)
    assert "[labels]" not in str(got.value)
