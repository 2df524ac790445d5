"""The AStitch report (issue 31): its files (exactly those planned and named in the index,
ncprobe's own), its tables (numbers with their intervals), and the per-expression means of
figure 4 (recomputed here from the hand-made scores).

The results are those of :mod:`tests.astitch.handmade_results`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ncprobe.astitch import report as astitch_report
from ncprobe.astitch.report import (
    excluded_table,
    linear_markdown,
    per_expression,
    write_astitch_report,
)
from ncprobe.errors import UsageError

from . import handmade_results as hm


@pytest.fixture(scope="module")
def res():
    return hm.results()


def test_the_report_writes_the_files_its_index_names(res, tmp_path):
    written = res.report(tmp_path / "r", formats=("png",), dpi=30)
    names = [p.name for p in written]
    figures = ["fig01_auroc.png", "fig02_linear.png", "fig03_selectivity.png",
               "fig04_expressions.png"]
    tables = [f"table_astitch_{t}{s}" for t in ("auroc", "linear", "tests", "excluded")
              for s in (".md", ".tex")]
    assert names == [*figures, *tables, "README.md"]
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == sorted(
        [*names, ".ncprobe-report.json"])
    readme = (tmp_path / "r" / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("# ncprobe AStitch report\n")
    for name in names[:-1]:
        assert f"`{name}`" in readme
    assert "`m`: `hub/m`" in readme and "200 resamples" in readme
    for fig in figures:
        assert (tmp_path / "r" / fig).read_bytes().startswith(b"\x89PNG")
    auroc_md = (tmp_path / "r" / "table_astitch_auroc.md").read_text(encoding="utf-8")
    a = hm.auroc_value("test", "2", "nc", "excluded", "contrast")
    assert f"{a:.3f} [{a - 0.08:.3f}, {a + 0.08:.3f}]" in auroc_md
    w = hm.within_value("test", "2", "nc", "excluded", "contrast", "ambiguous")
    assert f"{w:.3f} [{w - 0.09:.3f}, {w + 0.09:.3f}]" in auroc_md
    assert "| en | test | contrast | all | nc, context excluded | 8 | 4 | 3 | 3 | 1 | 70.0 |" \
        in auroc_md
    # each split's within-expression AUROC comes before its pooled one
    header = next(line for line in auroc_md.splitlines() if line.startswith("| lang"))
    assert header.index("test within") < header.index("test pooled")
    tex = (tmp_path / "r" / "table_astitch_linear.tex").read_text(encoding="utf-8")
    assert tex.count(r"\begin{tabular}") == 2 * 2     # one per setting and subset
    # into the same directory again: nothing changes
    before = {p.name: p.read_bytes() for p in (tmp_path / "r").iterdir()}
    res.report(tmp_path / "r", formats=("png",), dpi=30)
    assert {p.name: p.read_bytes() for p in (tmp_path / "r").iterdir()} == before


def test_the_linear_table_has_the_controls_first_and_every_number_with_its_interval(res):
    md = linear_markdown(res.linear)
    zero = md.split("## EN, few-shot")[0].split("## EN, zero-shot (trains on train_zero_shot, "
                                                "C chosen on dev), ambiguous expressions")[0]
    rows = [line for line in zero.splitlines() if line.startswith("| ")][1:]
    assert [r.split(" | ")[0] for r in rows] == [
        "| majority", "| expression-only", "| static (glove-6b-50d)",
        "| baseline: majority (train)", "| baseline: majority (test)",
        "| baseline: chance (stratified)", "| ceiling: type oracle"] + ["| m"] * 6
    # the type oracle read off the hand-made rules: (4/7 + 8/11) / 2
    assert "| ceiling: type oracle | - |  |  | 9 | 64.9 [54.9, 74.9] |" in zero
    assert md.count("ambiguous expressions\n") == 2            # one table per setting
    layer2 = next(r for r in rows if "layer 2, nc, context excluded" in r)
    # dev 70.0; test 50.0 [40.0, 60.0]; accuracy 55.0 [45.0, 65.0]; control task 30.0
    assert ("| 70.0 | 9 | 50.0 [40.0, 60.0] | 55.0 [45.0, 65.0] | 30.0 [20.0, 40.0] | "
            "+20.0 [+5.0, +35.0] |") \
        in layer2
    assert "Hewitt and Liang 2019" in md


def test_the_tests_and_excluded_tables(res):
    md = astitch_report.tests_markdown(res.tests)
    assert "| m layer 2 nc/excluded | majority | en | zero-shot | 9 | 3 | 50.0 | 40.0 | " \
           "+10.0 [-5.0, +25.0] | 0.250 | 0.500 |  |" in md
    assert "Holm-corrected (holm), one family: astitch: m (1 test)" in md
    ex = excluded_table(res.excluded)
    assert ex[["split", "rows", "expressions", "which rows"]].values.tolist() == [
        ["train_zero_shot", "4", "1", "1-3, 7"], ["test", "1", "1", "12"]]


def test_per_expression_takes_the_dev_best_view_and_averages_each_label():
    # the hand-made AUROC is best at layer 2, nc, context excluded on dev; on test the
    # contrast of a use is 0.1 label + 0.01 row + 0.002 (row 9 unscored)
    df = per_expression(hm.scores_table("m"), hm.auroc_table("m"))
    assert set(df[["layer", "level", "context", "chosen_on"]].apply(tuple, axis=1)) == {
        ("2", "nc", "excluded", "dev")}
    a = hm.auroc_value("test", "2", "nc", "excluded", "contrast")
    assert df["auroc"].iloc[0] == pytest.approx(a)

    def c(row: int) -> float:
        return hm.contrast(hm.TEST_LABELS[row - 1], row, "2")

    uses = {("e1", 0): [c(1), c(2)], ("e1", 1): [c(3)], ("e2", 1): [c(4), c(6)],
            ("e2", 0): [c(5)], ("e3", 1): [c(7), c(8)]}
    got = {(r["expression"], r["label"]): r for r in df.to_dict("records")}
    assert set(got) == set(uses)
    for key, values in uses.items():
        row = got[key]
        assert row["n"] == len(values) and row["mean"] == pytest.approx(np.mean(values))
        if len(values) > 1:
            lo, hi = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values),
                                      scale=stats.sem(values))
            assert (row["mean_low"], row["mean_high"]) == pytest.approx((lo, hi))
        else:
            assert math.isnan(row["mean_low"]) and math.isnan(row["mean_high"])
    # literal mean less idiomatic mean: e1 0.1 + 0.015, e2 0.1 + 0.0; e3 lacks an idiomatic
    # use: last
    assert list(dict.fromkeys(df["expression"])) == ["e1", "e2", "e3"]
    assert got[("e1", 0)]["gap"] == pytest.approx(0.115)
    assert math.isnan(got[("e3", 1)]["gap"])


def test_bad_tables_or_metadata_write_nothing(res, tmp_path):
    tables = {k: v for k, v in res.tables.items() if k != "scores"}
    with pytest.raises(UsageError, match="tables: scores missing"):
        write_astitch_report(tables, res.report_meta(), tmp_path / "r")
    with pytest.raises(UsageError, match="not the AStitch probe"):
        write_astitch_report(res.tables, {**res.report_meta(), "probe": "ncc"}, tmp_path / "r")
    with pytest.raises(UsageError, match="no column macro_f1"):
        write_astitch_report({**res.tables, "linear": res.linear.drop(columns="macro_f1")},
                             res.report_meta(), tmp_path / "r")
    assert not (tmp_path / "r").exists()
