"""The one engine that selects rows (ncprobe.query), as Results.select, compare and the
figures' selection use it: the same rows for the same filters, one exception type and one
message per mistake."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from ncprobe.errors import UsageError
from ncprobe.ncimp import selection
from ncprobe.ncimp.comparison import compare
from ncprobe.ncimp.results import Results
from ncprobe.query import filter_rows, not_present_message

from . import synthetic


@pytest.fixture(scope="module")
def res() -> Results:
    return synthetic.build()


def _by_hand(df: pd.DataFrame, **wanted) -> pd.DataFrame:
    """The rows whose columns hold, as text, one of the wanted values (written out here)."""
    keep = pd.Series(True, index=df.index)
    for col, values in wanted.items():
        values = list(values) if isinstance(values, list) else [values]
        keep &= df[col].astype(str).isin([str(v) for v in values])
    return df[keep].reset_index(drop=True)


def test_strict_and_lenient_keep_the_same_rows(res) -> None:
    m = res.measures
    filters = {"model": "model-b", "layers": 12, "level": ["nc"], "measure": ["syn", "comp"]}
    want = _by_hand(m, **filters)
    assert len(want) and set(want["layers"]) == {"12"}  # a number matches as text
    pd.testing.assert_frame_equal(filter_rows(m, filters), want)
    pd.testing.assert_frame_equal(filter_rows(m, filters, strict=False), want)
    pd.testing.assert_frame_equal(res.select(**filters), want)
    # the order of the filters never changes the rows
    pd.testing.assert_frame_equal(filter_rows(m, dict(reversed(filters.items()))), want)


def test_lenient_skips_missing_columns_and_values_keep_no_row(res) -> None:
    m = res.measures
    assert "probe" not in m.columns
    pd.testing.assert_frame_equal(filter_rows(m, {"probe": "syn", "level": "nc"},
                                              strict=False), _by_hand(m, level="nc"))
    assert filter_rows(m, {"context": "neut-pl"}, strict=False).empty
    # the figures' selection: a context group the table lacks keeps no row, never an error
    assert selection.select(m, contexts="neut-pl").empty


@pytest.mark.parametrize("filters", [{"context": "neut-pl"}, {"level": "word"},
                                     {"model": "model-c"}])
def test_one_message_for_a_value_not_present(res, filters) -> None:
    """Results.select and compare say it alike: UsageError (a ValueError), one text."""
    (col, value), = filters.items()
    present = list(dict.fromkeys(res.measures[col].astype(str)))
    with pytest.raises(UsageError) as direct:
        res.select(**filters)
    assert isinstance(direct.value, ValueError)
    assert str(direct.value) == not_present_message(col, [value], present,
                                                    "the measures table")
    with pytest.raises(UsageError) as side:
        compare(res, select_a={"model": "model-a", **filters},
                select_b={"model": "model-b"}, n_boot=10)
    assert str(side.value) == not_present_message(col, [value], present,
                                                  "side A's measures table", source="select_a")
    assert f"{col} {value!r} is not in" in str(side.value)
    assert all(v in str(side.value) for v in present)


def test_one_message_for_a_column_that_cannot_be_selected(res) -> None:
    with pytest.raises(UsageError, match=r"cannot select on 'analysis': the measures table is "
                                         "selected on model, lang, space, layers"):
        res.select("measures", analysis="nc")
    with pytest.raises(UsageError, match=r"^select_b: cannot select on 'value': side B's "
                                         "measures table is selected on model, lang"):
        compare(res, select_a={"model": "model-a"}, select_b={"value": "1"}, n_boot=10)


def test_a_context_hint_says_which_kind_of_context_a_table_holds(res) -> None:
    with pytest.raises(UsageError, match="holds context groups .* S1 is in nat"):
        res.select(context="S1")
    sentences = pd.DataFrame({"context": ["S1", "S2", "S3", "N"], "value": [0.1] * 4})
    with pytest.raises(UsageError, match="the sentences table holds sentence contexts: nat is "
                                         "S1, S2, S3"):
        filter_rows(sentences, {"context": "nat"}, where="the sentences table")


def test_one_check_for_an_nc_of_one_cell_held_twice(res) -> None:
    """check_one_run_per_cell, wide and compare refuse hand-pooled measures alike."""
    one = res.measures[(res.measures["model"] == "model-a") & (res.measures["lang"] == "en")]
    pooled = dataclasses.replace(res, measures=pd.concat([one, one], ignore_index=True))
    r = one.iloc[0]
    cell = ", ".join(f"{k} {r[k]}" for k in ("model", "lang", "space", "layers", "level",
                                             "context", "measure", "nc"))
    said = f"hold the per-NC measures of one cell more than once ({cell}; {2 * len(one)} rows"
    with pytest.raises(UsageError) as e:
        pooled.check_one_run_per_cell()
    assert said in str(e.value)
    with pytest.raises(UsageError) as e:
        pooled.wide()
    assert said in str(e.value)
    with pytest.raises(UsageError) as e:
        compare(pooled, res, select_a={"model": "model-a"}, select_b={"model": "model-b"},
                n_boot=10)
    assert said in str(e.value) and str(e.value).startswith("side A's rows")
