"""Figures and tables of results in a language other than NCIMP's English and Portuguese (a
user's own pairs: here French), on the synthetic Results of tests/synthetic.py with its
Portuguese rows relabelled ``fr``.

Expected conditions and orders are written out by hand; the expected correlations are computed
here with scipy from the per-NC ``measures`` table.
"""

from __future__ import annotations

import dataclasses
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import scipy.stats as ss
from matplotlib.colors import to_hex
from matplotlib.patches import PathPatch

from ncprobe.ncimp import figures as plots
from ncprobe.ncimp.report import write_report
from ncprobe.ncimp.results import Results
from ncprobe.ncimp.selection import conditions_in, select, split_condition

from . import synthetic

#: Every colour the English and Portuguese conditions and the classes are drawn in.
NCIMP_COLOURS = {to_hex(c) for c in (*plots.CONDITION_PALETTE.values(),
                                     *plots.CLASS_PALETTE.values())}


def _to_french(results: Results) -> Results:
    """model-a only, its Portuguese rows relabelled ``fr`` in every table."""
    tables = {}
    for f in dataclasses.fields(results):
        if f.name == "meta":
            continue
        df = getattr(results, f.name)
        if "model" in df.columns and len(df):
            df = df[df["model"] == "model-a"]
        df = df.copy()
        if "lang" in df.columns and len(df):
            dtype = df["lang"].dtype
            df["lang"] = df["lang"].astype(object).replace("pt", "fr").astype(dtype)
        tables[f.name] = df.reset_index(drop=True)
    meta = [{**m, "config": {**m["config"], "lang": "fr" if m["config"]["lang"] == "pt"
                             else m["config"]["lang"]}}
            for m in results.meta if m["config"]["model"] == "model-a"]
    return Results(**tables, meta=meta)


@pytest.fixture(scope="module")
def base() -> Results:
    return synthetic.build()


@pytest.fixture(scope="module")
def res(base) -> Results:
    return _to_french(base)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_conditions_of_other_languages_come_after_ncimp_ones():
    shuffled = ["FR-Neut", "PT-Neut", "DE-Neut-pl", "FR-Nat", None, float("nan"), "EN-Nat",
                "FR-Nat", "DE-Nat", "FR-NCS"]
    assert conditions_in(shuffled) == ["EN-Nat", "PT-Neut", "DE-Nat", "DE-Neut-pl", "FR-Nat",
                                       "FR-Neut", "FR-NCS"]
    assert split_condition("FR-Neut-pl") == ("fr", "neut-pl")
    assert split_condition("PT-BR-Neut") == ("pt-br", "neut")
    assert split_condition("EN-NCS") == ("en", "ncs")


def test_select_labels_french_conditions(res, base):
    data = select(res.measures, level="nc", measures=["syn"])
    assert data["condition"].notna().all()
    got = data.groupby(["lang", "context"])["condition"].agg(lambda s: set(s.astype(str)))
    assert got.to_dict() == {("en", "nat"): {"EN-Nat"}, ("en", "neut"): {"EN-Neut"},
                             ("fr", "nat"): {"FR-Nat"}, ("fr", "neut"): {"FR-Neut"}}
    cats = list(data["condition"].cat.categories)
    assert cats[-2:] == ["FR-Nat", "FR-Neut"] and cats.index("EN-Nat") < cats.index("FR-Nat")
    # English and Portuguese results keep every NCIMP condition as a category, nothing else
    en = select(base.measures, level="nc", measures=["syn"])
    assert list(en["condition"].cat.categories) == [
        "EN-Nat", "EN-Neut", "EN-Neut-pl", "EN-NCS", "PT-Nat", "PT-Neut", "PT-Neut-pl", "PT-NCS"]


def test_french_colours_are_their_own():
    pal = plots.condition_palette(["FR-Neut", "EN-Nat", "FR-Nat", "DE-Nat"])
    assert pal["EN-Nat"] == plots.CONDITION_PALETTE["EN-Nat"]
    others = [to_hex(pal[c]) for c in ("DE-Nat", "FR-Nat", "FR-Neut")]
    assert len(set(others)) == 3 and not set(others) & NCIMP_COLOURS
    # deterministic: the same colours whatever the order they are asked in
    assert plots.condition_palette(["DE-Nat", "FR-Nat", "EN-Nat", "FR-Neut"]) == pal


def test_figure_draws_french_boxes_in_their_colours(res):
    fig = plots.fig_affinity(res, ideal=False)
    ax = next(a for a in fig.axes if a.get_title() == "model-a")
    colours = [to_hex(b.get_facecolor()) for b in ax.patches if isinstance(b, PathPatch)]
    assert len(colours) == 2 * 4   # two Affinities x EN-Nat, EN-Neut, FR-Nat, FR-Neut
    en = {to_hex(plots.CONDITION_PALETTE[c]) for c in ("EN-Nat", "EN-Neut")}
    fr = set(colours) - en
    assert set(colours) >= en and len(fr) == 2 and not fr & NCIMP_COLOURS
    legend = {t.get_text() for lg in fig.legends for t in lg.get_texts()}
    assert {"EN-Nat", "EN-Neut", "FR-Nat", "FR-Neut"} <= legend


def test_correlogram_of_three_conditions(res):
    """English nat and neut with French nat only (a one-context run of one's own pairs): three
    panels, the grid's fourth cell left out."""
    three = synthetic.subset(res, lambda df: ~((df["lang"] == "fr") & (df["context"] == "neut"))
                             if {"lang", "context"} <= set(df.columns)
                             else np.ones(len(df), bool))
    fig = plots.fig_correlogram(three)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["EN-Nat", "EN-Neut", "FR-Nat"]


def _table_rows(path) -> list[dict[str, str]]:
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip() for c in ln.strip("|").split("|")), strict=True))
            for ln in lines[2:]]


@pytest.mark.slow
def test_write_report_draws_and_tabulates_french_results(res, tmp_path):
    written = write_report(res, tmp_path, formats=("png",), dpi=40)
    names = {p.name for p in written}
    for i, name in enumerate(plots.FIGURES, start=1):
        assert f"fig{i:02d}_{name}.png" in names
        assert (tmp_path / f"fig{i:02d}_{name}.png").stat().st_size > 0
    rows = _table_rows(tmp_path / "table_nc_correlations.md")
    assert [r["condition"] for r in rows] == ["EN-Nat", "EN-Neut", "FR-Nat", "FR-Neut"]
    m = res.measures
    for row in rows[2:]:
        context = {"FR-Nat": "nat", "FR-Neut": "neut"}[row["condition"]]
        for measure, column in (("comp", "P_Comp"), ("wordssyn", "P_WordsSyn")):
            sub = m[(m["lang"] == "fr") & (m["space"] == "raw") & (m["level"] == "nc")
                    & (m["context"] == context) & (m["measure"] == measure)]
            pairs = [(float(v), float(g)) for v, g in zip(sub["value"], sub["gold"], strict=True)
                     if not (math.isnan(v) or pd.isna(g))]
            assert len(pairs) == 12
            x, y = np.array(pairs).T
            rho = ss.spearmanr(x, y).statistic
            assert row[column].split()[0] == f"{rho:.2f}"
