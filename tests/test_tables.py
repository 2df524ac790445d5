"""The tables of SPEC §4 on a synthetic Results (tests/synthetic.py): every cell against the
synthetic tables, "-" exactly where p > 0.05, Markdown and LaTeX rendering, write_report's files.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from ncprobe import plots, tables  # noqa: E402
from ncprobe.report import write_report  # noqa: E402

from . import synthetic  # noqa: E402

MODELS = ["model-a", "model-b"]
DEFAULT_VIEW = {"model-a": "-", "model-b": "9+10+11+12"}
CONDITION = {("en", "nat"): "EN-Nat", ("en", "neut"): "EN-Neut", ("pt", "nat"): "PT-Nat",
             ("pt", "neut"): "PT-Neut"}
LEVEL = {"sent": "Sent", "nc": "NC"}
LABEL = {"syn": "P_Syn", "comp": "P_Comp", "wordssyn": "P_WordsSyn", "rand": "P_Rand",
         "A_Syn|WordsSyn": "A_Syn|WordsSyn", "A_Syn|Rand": "A_Syn|Rand",
         "Sim_R|Syn": "Sim_R|Syn", "Sim_R|WordsSyn": "Sim_R|WordsSyn",
         "Sim_R|Syn/Sim_R|WordsSyn": "Sim_R|Syn / Sim_R|WordsSyn"}
PROBES = ["syn", "comp", "wordssyn", "rand"]


@pytest.fixture(scope="module")
def res():
    return synthetic.build()


def _shown(df: pd.DataFrame) -> pd.DataFrame:
    """Rows a table shows: raw space, each model's default layer view."""
    if "space" in df.columns:
        df = df[df["space"] == "raw"]
    return df[[DEFAULT_VIEW[m] == lv for m, lv in zip(df["model"], df["layers"])]]


def _expected_cell(rho, p) -> str:
    return f"{rho:.2f}" if p <= 0.05 else "-"


@pytest.mark.parametrize("name, measures, levels, analysis", [
    ("sent_correlations", PROBES, ["sent"], "nc"),
    ("nc_correlations", PROBES, ["nc"], "nc"),
    ("affinity_correlations", ["A_Syn|WordsSyn", "A_Syn|Rand"], ["sent", "nc"], "nc"),
    ("scaled_correlations", ["Sim_R|Syn", "Sim_R|WordsSyn", "Sim_R|Syn/Sim_R|WordsSyn"],
     ["sent", "nc"], "nc"),
    ("filtered_correlations", PROBES + ["A_Syn|WordsSyn", "A_Syn|Rand", "Sim_R|Syn",
                                        "Sim_R|WordsSyn"], ["sent", "nc"], "overlap-filtered"),
])
def test_correlation_tables_match_every_cell(res, name, measures, levels, analysis):
    t = tables.TABLES[name](res)
    # rows: model x level x condition, in that order; columns: the measures
    want_rows = [(m, LEVEL[lv], c) for m in MODELS for lv in levels for c in CONDITION.values()]
    assert list(t.index) == want_rows
    assert list(t.columns) == [LABEL[m] for m in measures]
    c = _shown(res.correlations)
    c = c[(c["analysis"] == analysis) & c["level"].isin(levels) & c["measure"].isin(measures)]
    assert len(c) == t.size
    dashes = 0
    for r in c.itertuples(index=False):
        cell = t.loc[(r.model, LEVEL[r.level], CONDITION[(r.lang, r.context)]), LABEL[r.measure]]
        assert cell == _expected_cell(r.rho, r.p)
        dashes += r.p > 0.05
    # "-" exactly where p > 0.05: as many dashes as non-significant rows
    assert int((t == "-").to_numpy().sum()) == dashes
    assert 0 < dashes < t.size or name == "nc_correlations"


def test_overlap_filter_drops_the_overlapping_ncs(res):
    c = _shown(res.correlations)
    c = c[(c["level"] == "nc") & (c["measure"] == "syn") & (c["context"] == "nat")]
    n = c.set_index(["model", "lang", "analysis"])["n"]
    assert n[("model-a", "en", "nc")] - n[("model-a", "en", "overlap-filtered")] == 2
    assert n[("model-a", "pt", "nc")] - n[("model-a", "pt", "overlap-filtered")] == 1


def test_length_correlations(res):
    t = tables.length_correlations(res)
    lex = _shown(res.lexical_overlap)
    lex = lex[lex["measure"].isin(PROBES)]
    assert len(t) == 2 * 2                  # models x languages (naturalistic sentences only)
    for r in lex.itertuples(index=False):
        cell = t.loc[(r.model, "Sent", f"{r.lang.upper()}-Nat"), LABEL[r.measure]]
        assert cell == _expected_cell(r.rho, r.p)
    assert (t == "-").to_numpy().sum() == int((lex["p"] > 0.05).sum())


def test_means_table(res):
    t = tables.means(res)
    d = _shown(res.distributions)
    d = d[(d["cls"] == "all") & d["measure"].isin(list(LABEL))]
    assert t.shape == (2 * 2 * 4, len(LABEL))
    for r in d.itertuples(index=False):
        cell = t.loc[(r.model, LEVEL[r.level], CONDITION[(r.lang, r.context)]), LABEL[r.measure]]
        assert cell == f"{r.mean:.3f} ± {r.sd:.3f}"


def test_standardisation_table(res):
    t = tables.standardisation(res)
    s = _shown(res.standardisation)
    assert len(t) == len(s) == 2 * 2 * 4
    for r in s.itertuples(index=False):
        cell = t.loc[(r.model, LEVEL[r.level], CONDITION[(r.lang, r.context)])].iloc[0]
        assert cell == f"{r.rho:.2f}"


def test_examples_table(res):
    t = tables.examples(res)
    # the study's six: four are in the synthetic English NCs, two are not
    assert list(dict.fromkeys(t.index.get_level_values("nc"))) == [
        "grey matter", "Dutch courage", "economic aid", "research lab"]
    assert t.attrs["missing"] == ["eager beaver", "eternal rest"]
    m = _shown(res.measures)
    m = m[(m["level"] == "nc") & (m["nc"] == "Dutch courage") & (m["model"] == "model-b")
          & (m["context"] == "neut")]
    for r in m[m["measure"].isin(list(LABEL))].itertuples(index=False):
        row = t.xs(("Dutch courage", "model-b", "EN-Neut"), level=["nc", "model", "condition"])
        assert row[LABEL[r.measure]].iloc[0] == f"{r.value:.2f}"
    assert set(t.index.get_level_values("class")) == {"I", "PC", "C"}
    # matched case-insensitively; unknown NCs are listed, not an error
    mine = tables.examples(res, ["DUTCH COURAGE", "no such nc"])
    assert set(mine.index.get_level_values("nc")) == {"Dutch courage"}
    assert mine.attrs["missing"] == ["no such nc"]
    none = tables.examples(res, ["no such nc"])
    assert none.empty and none.attrs["missing"] == ["no such nc"]


def test_markdown_escapes_bars_and_keeps_every_row(res):
    t = tables.affinity_correlations(res)
    md = tables.to_markdown(t).splitlines()
    assert md[0] == "| model | level | condition | A_Syn\\|WordsSyn | A_Syn\\|Rand |"
    assert len(md) == 2 + len(t)
    # every body line has the same number of unescaped separators as the header
    seps = {line.replace("\\|", "").count("|") for line in md}
    assert seps == {6}


def test_latex_escapes_special_characters():
    assert tables.latex_escape("A_Syn|Rand & 50% #1 $x$ {a} ~ ^ \\ ±") == (
        r"A\_Syn\textbar{}Rand \& 50\% \#1 \$x\$ \{a\} \textasciitilde{} "
        r"\textasciicircum{} \textbackslash{} $\pm$")
    df = pd.DataFrame({"Sim_R|Syn": ["0.50 ± 0.10"], "x&y": ["-"]},
                      index=pd.Index(["m_1"], name="model"))
    tex = tables.to_latex(df, caption="rho_s, 5% level")
    assert r"\begin{tabular}{lrr}" in tex and r"\toprule" in tex and r"\bottomrule" in tex
    assert r"model & Sim\_R\textbar{}Syn & x\&y \\" in tex
    assert r"m\_1 & 0.50 $\pm$ 0.10 & - \\" in tex
    assert r"\caption{rho\_s, 5\% level}" in tex
    # every body row has one "&" fewer than its number of columns
    body = [ln for ln in tex.splitlines() if ln.endswith(r"\\")]
    assert all(ln.replace(r"\&", "").count("&") == 2 for ln in body)


def test_write_report_writes_the_expected_files(res, tmp_path):
    one = synthetic.subset(res, lambda df: (df["model"] == "model-a") if "model" in df.columns
                           else np.ones(len(df), bool))
    written = write_report(one, tmp_path, formats=("png",), dpi=40)
    figs = [f"fig{i:02d}_{n}.png" for i, n in enumerate(plots.FIGURES, start=1)]
    tabs = [f"table_{n}{ext}" for n in tables.TABLES for ext in (".md", ".tex")]
    assert sorted(p.name for p in written) == sorted(figs + tabs + ["README.md"])
    assert all(p.is_file() and p.stat().st_size > 0 for p in written)
    # plus the manifest that lets a later report replace exactly these files, nothing else
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        figs + tabs + ["README.md", ".ncprobe-report.json"])
    index = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "model-a" in index and "fig10_correlogram" in index


def test_write_report_skips_figures_without_values(res, tmp_path):
    sent_only = synthetic.subset(
        res, lambda df: ((df["level"] == "sent") if "level" in df.columns
                         else np.ones(len(df), bool)))
    written = write_report(sent_only, tmp_path, formats=("png", "pdf"), dpi=40)
    figs = sorted(p.name for p in written if p.name.startswith("fig"))
    assert figs == ["fig01_sent_cosines.pdf", "fig01_sent_cosines.png"]
    index = (tmp_path / "README.md").read_text(encoding="utf-8")
    for i, name in enumerate(plots.FIGURES, start=1):
        if i > 1:
            assert f"fig{i:02d}_{name}" in index    # named in the index as not drawn
    assert (tmp_path / "table_sent_correlations.md").is_file()
