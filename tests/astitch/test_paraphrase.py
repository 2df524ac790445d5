"""ncprobe.astitch.paraphrase: the contrast and literal scores, and the AUROC table (columns,
cell order, unscored rows, idiomatic share, AUROC counted by hand)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ncprobe.astitch import SCORES
from ncprobe.astitch.paraphrase import AUROC_COLUMNS, SCORE_COLUMNS, auroc_table, scores
from ncprobe.errors import UsageError


def test_scores_by_hand_without_warnings() -> None:
    lit = np.array([0.9, 0.8, np.nan, 0.4])
    non = np.array([[0.5, 0.7, np.nan],     # 0.9 - 0.7
                    [np.nan, np.nan, np.nan],  # no non-literal paraphrase
                    [0.1, 0.2, 0.3],        # no literal one
                    [0.6, np.nan, 0.1]])    # 0.4 - 0.6
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # an all-NaN row must not warn
        contrast, literal = scores(lit, non)
    assert contrast[[0, 3]] == pytest.approx([0.2, -0.2])
    assert np.isnan(contrast[[1, 2]]).all()
    assert np.array_equal(literal, lit, equal_nan=True) and literal is not lit
    with pytest.raises(UsageError, match=r"\(n, m\)"):
        scores(lit, non[:2])


def _table() -> pd.DataFrame:
    """Two cells, the later-sorting one first: model b layer 3, then model a layer 1."""
    rows = []
    # cell 1: literal scores 0.9 (label 1), 0.5 (label 1), 0.5 (label 0), 0.2 (label 0), and an
    # unscored contrast in the last row
    data = [("x", 1, 0.9, 0.3), ("x", 0, 0.5, 0.1), ("y", 1, 0.5, -0.2), ("y", 0, 0.2, np.nan),
            ("z", 0, 0.4, np.nan)]
    for r, (expr, lab, lit, con) in enumerate(data, start=1):
        rows.append({"model": "b", "lang": "en", "split": "test", "layer": 3, "level": "nc",
                     "context": "excluded", "row": r, "expression": expr, "label": lab,
                     "literal": lit, "contrast": con})
    # cell 2: every scored row idiomatic (one label)
    for r in range(1, 4):
        rows.append({"model": "a", "lang": "en", "split": "test", "layer": 1, "level": "sent",
                     "context": "included", "row": r, "expression": f"e{r}", "label": 0,
                     "literal": 0.1 * r, "contrast": 0.2 * r})
    return pd.DataFrame(rows, columns=list(SCORE_COLUMNS))


def test_auroc_table_columns_order_and_counts() -> None:
    out = auroc_table(_table(), n_boot=100, seed=0)
    assert list(out.columns) == list(AUROC_COLUMNS)
    assert list(zip(out["model"], out["layer"], out["subset"], out["score"], strict=True)) == [
        (m, layer, subset, score) for m, layer in (("b", 3), ("a", 1))
        for subset in ("all", "ambiguous") for score in SCORES]
    lit = out[(out["model"] == "b") & (out["score"] == "literal")].iloc[0]
    assert lit["subset"] == "all"
    # literal: positives 0.9, 0.5; negatives 0.5, 0.2, 0.4: 0.9 beats 3, 0.5 beats 2 + ties 1
    assert lit["auroc"] == pytest.approx((3 + 2 + 0.5) / 6)
    assert (lit["n"], lit["n_literal"], lit["n_expressions"], lit["n_unscored"]) == (5, 2, 3, 0)
    assert lit["idiomatic_share"] == pytest.approx(3 / 5)
    con = out[(out["model"] == "b") & (out["score"] == "contrast")].iloc[0]
    # contrast: positives 0.3, -0.2; negative 0.1 (two rows unscored): 1 of 2 pairs
    assert con["auroc"] == pytest.approx(0.5)
    assert (con["n"], con["n_unscored"], con["n_expressions"]) == (3, 2, 2)
    assert con["idiomatic_share"] == pytest.approx(1 / 3)
    assert 0 < con["boot_used"] <= 100


def test_within_expression_auroc_and_the_ambiguous_subset_by_hand() -> None:
    out = auroc_table(_table(), n_boot=100, seed=0).set_index(["model", "subset", "score"])
    # literal, all rows: x (0.9 literal, 0.5 idiomatic) 1 of 1 pair, y (0.5, 0.2) 1 of 1, z
    # one label: within 2/2, pooled 5.5/6 (the test above)
    lit = out.loc[("b", "all", "literal")]
    assert (lit["auroc_within"], lit["n_within"]) == (1.0, 2)
    assert lit["auroc"] == pytest.approx(5.5 / 6)
    assert lit["auroc_within_low"] == lit["auroc_within_high"] == 1.0     # every resample: 1.0
    # ambiguous rows: z (idiomatic only) left out; pooled 0.9 beats 0.5 and 0.2, 0.5 ties 0.5
    # and beats 0.2: 3.5 / 4
    amb = out.loc[("b", "ambiguous", "literal")]
    assert (amb["n"], amb["n_expressions"], amb["n_literal"]) == (4, 2, 2)
    assert amb["auroc"] == pytest.approx(3.5 / 4) and amb["auroc_within"] == 1.0
    # contrast: y's idiomatic row is unscored, so only x holds a pair (0.3 over 0.1)
    con = out.loc[("b", "all", "contrast")]
    assert (con["auroc_within"], con["n_within"], con["auroc"]) == (1.0, 1, 0.5)
    con = out.loc[("b", "ambiguous", "contrast")]
    assert (con["n"], con["n_unscored"], con["auroc_within"]) == (3, 1, 1.0)
    # model a: one label, no ambiguous row at all
    none = out.loc[("a", "ambiguous", "literal")]
    assert none["n"] == 0 and np.isnan(none["auroc_within"]) and np.isnan(none["auroc"])


def test_a_cell_with_one_label_has_no_auroc() -> None:
    out = auroc_table(_table(), n_boot=100, seed=0)
    one = out[(out["model"] == "a") & (out["subset"] == "all")]
    assert one["auroc"].isna().all() and one["ci_low"].isna().all()
    assert one["auroc_within"].isna().all() and (one["n_within"] == 0).all()
    assert (one["boot_used"] == 0).all() and (one["idiomatic_share"] == 1.0).all()


def test_cells_with_the_same_expressions_share_their_draws() -> None:
    table = _table()
    other = table[table["model"] == "b"].assign(model="c", layer=9)
    out = auroc_table(pd.concat([table, other], ignore_index=True), n_boot=200, seed=4)
    b, c = out[out["model"] == "b"], out[out["model"] == "c"]
    cols = ["auroc", "ci_low", "ci_high", "boot_used", "auroc_within", "auroc_within_low",
            "auroc_within_high"]
    assert np.allclose(b[cols].to_numpy(float), c[cols].to_numpy(float), equal_nan=True)


def test_auroc_table_needs_its_columns() -> None:
    with pytest.raises(UsageError, match="contrast"):
        auroc_table(_table().drop(columns="contrast"), n_boot=10, seed=0)
