"""The amnesic results from hand-made tables: the summary's note on rows that share the
concept's training rows, the figure of the change against the layer, and compare of two runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ncprobe.amnesic.results import LAYOUT, AmnesicResults
from ncprobe.intervention import CHANGES, TARGET_RUNS, TESTED


def make_results(model: str = "toy", shift: float = 0.0, layers=("0", "1", "2")
                 ) -> AmnesicResults:
    """Two targets (``ncimp`` rho, ``astitch`` macro-F1 of two settings, the few-shot one
    sharing the concept's rows) over ``layers``; each value a known function of its cell."""
    rows = []
    cells = [("ncimp", "rho Sim(NC, Syn)", False), ("astitch", "macro-F1 one-shot", False),
             ("astitch", "macro-F1 few-shot", True)]
    for t, (target, metric, shares) in enumerate(cells):
        for i, layer in enumerate(layers):
            value = {"plain": 0.5 + 0.01 * i, "erased": 0.4 - 0.05 * t - shift,
                     "control": 0.49 + 0.01 * i}
            value["erased - plain"] = value["erased"] - value["plain"]
            value["control - plain"] = value["control"] - value["plain"]
            value[TESTED] = value["erased"] - value["control"]
            for condition in (*TARGET_RUNS, *CHANGES):
                v = value[condition]
                tested = condition == TESTED
                rows.append({
                    "model": model, "lang": "en", "concept": "toy concept",
                    "where": "vectors", "erase_layer": "each", "target": target,
                    "metric": metric, "layer": layer, "level": "nc", "context": "excluded",
                    "condition": condition, "value": v, "ci_low": v - 0.02,
                    "ci_high": v + 0.02, "n": 20, "unit": "items",
                    "p": 0.01 if tested else np.nan,
                    "p_corrected": 0.03 if tested else np.nan,
                    "significant": True if tested else np.nan,
                    "family": f"{target}: every cell" if tested else None,
                    "shares_concept_rows": shares})
    changes = pd.DataFrame(rows, columns=list(LAYOUT.columns["changes"]))
    guarantee = pd.DataFrame([{"model": model, "lang": "en", "concept": "toy concept",
                               "view": layer, "level": "nc", "condition": "concept",
                               "fold": "all", "split": "train", "probe": "erased",
                               "accuracy": 0.5, "chance": 0.5, "n": 20}
                              for layer in layers],
                             columns=list(LAYOUT.columns["guarantee"]))
    meta = [{"config": {"model": model, "lang": "en", "concept": "astitch",
                        "where": "vectors", "targets": ["ncimp", "astitch"]},
             "concept": "toy concept", "notes": []}]
    return AmnesicResults(changes, guarantee, meta)


def test_the_summary_notes_the_rows_that_share_the_concepts_rows_and_leaves_them_out():
    res = make_results()
    text = res.summary()
    notes = [line for line in text.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "astitch macro-F1 few-shot" in notes[0]
    assert "shares_concept_rows" in notes[0] and "one-shot" not in notes[0]
    # few-shot's erased - control (-0.19 at every layer) is the largest, yet not listed
    listed = [line for line in text.splitlines() if "erased - control" in line]
    assert listed and not any("few-shot" in line for line in listed)
    assert any("one-shot" in line for line in listed)


def test_the_figure_draws_each_targets_change_against_the_layer_with_the_controls_band():
    from matplotlib.collections import PolyCollection

    from ncprobe.amnesic.figures import draw_changes

    res = make_results()
    fig = draw_changes(res.changes)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title().splitlines()[0] for ax in panels] == ["ncimp", "astitch"]
    astitch = panels[1]
    lines = [ln for ln in astitch.get_lines() if not ln.get_label().startswith("_")]
    # few-shot shares the concept's rows: not drawn; one-shot is
    assert [ln.get_label() for ln in lines] == ["macro-F1 one-shot nc excluded"]
    assert "1 of 1 cells" in astitch.get_title()
    # the line: erased - plain at each view (t = 1: 0.35 - (0.5 + 0.01 i))
    np.testing.assert_allclose(lines[0].get_ydata(), [0.35 - 0.5 - 0.01 * i for i in range(3)])
    # the band: control - plain's interval, -0.01 +- 0.02 at every view
    band = [c for c in astitch.collections if isinstance(c, PolyCollection)]
    assert len(band) == 1
    ys = band[0].get_paths()[0].vertices[:, 1]
    assert ys.min() == pytest.approx(-0.03) and ys.max() == pytest.approx(0.01)
    # a static model (one view): a marker and a bar, no band
    one = draw_changes(make_results(layers=("-",)).changes)
    ax = [a for a in one.axes if a.get_title()][0]
    assert not [c for c in ax.collections if isinstance(c, PolyCollection)]


def test_compare_of_two_runs_by_hand(tmp_path, capsys):
    import math

    from ncprobe.cli import main

    a, b = make_results("m1"), make_results("m2", shift=0.05)
    df = a.compare(b, names=["A", "B"])
    # the cells both hold, but few-shot (it shares the concept's rows)
    assert len(df) == 2 * 3 and "macro-F1 few-shot" not in set(df["metric"])
    # A's erased - control minus B's: B's erased value is 0.05 lower
    np.testing.assert_allclose(df["diff"], 0.05)
    # each side's 95% interval is +-0.02: se = 0.02 / z each, independent
    z = 1.959963984540054
    se = math.hypot(0.02 / z, 0.02 / z)
    np.testing.assert_allclose(df["diff_high"] - df["diff"], z * se)
    p = math.erfc(0.05 / se / math.sqrt(2))
    np.testing.assert_allclose(df["p"], p)
    np.testing.assert_allclose(df["p_corrected"], min(1.0, 6 * p))  # Holm, six equal p
    assert df["family"].iloc[0].endswith("(6 tests)")
    # the command: two directories, printed and written
    for res, name in ((a, "a"), (b, "b")):
        res.to_parquet(tmp_path / name)
    out = tmp_path / "cmp.md"
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out),
                 "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "A - B [95%]" in printed and "+0.050" in printed and out.is_file()
    # the comparison resamples nothing: --n-boot would do nothing and is refused
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--n-boot", "5"]) == 2
    assert main(["compare", str(tmp_path / "a")]) == 2
    assert "two sides" in capsys.readouterr().err
