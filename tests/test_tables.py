"""The tables of SPEC §4 on a synthetic Results (tests/synthetic.py): every cell against the
synthetic tables, "-" exactly where p > 0.05, write_report's files, and the Markdown and LaTeX
renderings read back with independent parsers (markdown-it-py's GFM tables; a LaTeX text-mode
reader written in this file).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ncprobe import tables as rendering
from ncprobe.ncimp import figures as plots
from ncprobe.ncimp import tables
from ncprobe.ncimp.report import write_report

from . import synthetic

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
    return df[[DEFAULT_VIEW[m] == lv for m, lv in zip(df["model"], df["layers"], strict=True)]]


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
    # uncorrected, the study's marks (the corrections: tests/test_uncertainty.py)
    t = tables.TABLES[name](res, correct="none")
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
    t = tables.length_correlations(res, correct="none")
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


# --- rendering: properties read back with independent parsers, not byte-for-byte strings ---

def _expected_grid(df: pd.DataFrame) -> list[list[str]]:
    """Header + rows a renderer must show: named index levels first, every display string."""
    flat = df.reset_index() if any(n is not None for n in df.index.names) else df
    return [[str(c) for c in flat.columns]] + [
        ["" if isinstance(v, float) and np.isnan(v) else str(v) for v in row]
        for row in flat.itertuples(index=False)]


def _gfm_grid(text: str) -> list[list[str]]:
    """The cells of the GFM table(s) in ``text`` as rendered text, read by markdown-it-py."""
    from markdown_it import MarkdownIt

    rows, row = [], None
    for tok in MarkdownIt("commonmark").enable("table").parse(text):
        if tok.type == "tr_open":
            row = []
        elif tok.type == "inline" and row is not None:
            # the children hold the rendered text: backslash escapes resolved
            row.append("".join(c.content for c in tok.children or [] if c.type.startswith(
                "text")))
        elif tok.type == "tr_close":
            rows.append(row)
            row = None
    return rows


#: LaTeX text mode, written out here independently of ncprobe: how each character that LaTeX
#: treats specially (or prints wrongly in the default OT1 encoding: | < >) may be written.
_LATEX_READ = {r"\textbackslash{}": "\\", r"\&": "&", r"\%": "%", r"\$": "$", r"\#": "#",
               r"\_": "_", r"\{": "{", r"\}": "}", r"\textasciitilde{}": "~",
               r"\textasciicircum{}": "^", r"\textbar{}": "|", r"\textless{}": "<",
               r"\textgreater{}": ">", r"$<$": "<", r"$>$": ">", r"$\pm$": "±",
               # the measures, typeset as in the figures (issue 28: not as escaped text)
               r"$P_{\mathrm{Syn}}$": "P_Syn", r"$P_{\mathrm{Comp}}$": "P_Comp",
               r"$P_{\mathrm{WordsSyn}}$": "P_WordsSyn", r"$P_{\mathrm{Rand}}$": "P_Rand",
               r"$A_{\mathrm{Syn|WordsSyn}}$": "A_Syn|WordsSyn",
               r"$A_{\mathrm{Syn|Rand}}$": "A_Syn|Rand",
               r"$\mathit{Sim}_{\mathrm{R|Syn}}\,/\,\mathit{Sim}_{\mathrm{R|WordsSyn}}$":
                   "Sim_R|Syn / Sim_R|WordsSyn",
               r"$\mathit{Sim}_{\mathrm{R|Syn}}$": "Sim_R|Syn",
               r"$\mathit{Sim}_{\mathrm{R|WordsSyn}}$": "Sim_R|WordsSyn"}
_LATEX_RAW_FORBIDDEN = set("\\&%$#_{}~^|<>±\n")


def _latex_text(tex: str) -> str:
    """What LaTeX prints for one escaped cell; fails on an unescaped special character."""
    out, i = [], 0
    while i < len(tex):
        for seq, ch in _LATEX_READ.items():
            if tex.startswith(seq, i):
                out.append(ch)
                i += len(seq)
                break
        else:
            assert tex[i] not in _LATEX_RAW_FORBIDDEN, f"unescaped {tex[i]!r} in {tex!r}"
            out.append(tex[i])
            i += 1
    return "".join(out)


def _latex_grid(tex: str) -> tuple[str, list[list[str]], str | None]:
    """(column spec, cells of the booktabs tabular as printed, caption as printed)."""
    import re

    lines = tex.splitlines()
    spec = re.fullmatch(r"\\begin\{tabular\}\{([lrc]*)\}", lines[lines.index(r"\toprule") - 1])
    assert spec, tex
    top, mid, bottom = (lines.index(r) for r in (r"\toprule", r"\midrule", r"\bottomrule"))
    assert top < mid < bottom and mid == top + 2      # one header row, between the rules
    rows = []
    for line in lines[top + 1:mid] + lines[mid + 1:bottom]:
        assert line.endswith(r" \\") and not line[:-3].endswith("\\"), line
        # split at "&" not preceded by a backslash: "\&" is an escaped ampersand
        rows.append([_latex_text(c) for c in re.split(r"(?<!\\) & ", line[:-3])])
    caps = [ln for ln in lines if ln.startswith(r"\caption{")]
    caption = _latex_text(caps[0][len(r"\caption{"):-1]) if caps else None
    return spec.group(1), rows, caption


def _adversarial() -> pd.DataFrame:
    """Names and cells with every character a renderer must escape, blanks and dashes."""
    idx = pd.MultiIndex.from_tuples(
        [("m_1|x", "Sent", "EN-Nat"), ("C:\\models\\", "NC", "PT-Neut"),
         ("a&b 50% #1 $x$ {y} ~z^", "NC", "EN-Neut")], names=["model", "level", "condition"])
    return pd.DataFrame({"Sim_R|Syn": ["0.50 ± 0.10", "-", ""],
                         "p < 0.05 > q": ["two\nlines", "x\\|y", "-0.19"],
                         "A_Syn|Rand": [float("nan"), "end\\", "|"]}, index=idx)


@pytest.mark.parametrize("name", list(tables.TABLES))
def test_markdown_is_a_gfm_table_with_every_cell(res, name):
    pytest.importorskip("markdown_it")
    df = tables.TABLES[name](res)
    # a GitHub table: one header, one row per table row, every cell as shown (index levels
    # first, "|" in measure names kept, "-" and blanks as they are)
    assert _gfm_grid(rendering.to_markdown(df)) == _expected_grid(df)
    assert len(_expected_grid(df)[0]) == df.index.nlevels + df.shape[1]


def test_markdown_escapes_what_would_break_a_row():
    pytest.importorskip("markdown_it")
    df = _adversarial()
    want = [[c.replace("\n", " ") for c in row] for row in _expected_grid(df)]
    assert _gfm_grid(rendering.to_markdown(df)) == want
    # no named index: the index is left out, the columns are shown as they are
    flat = df.reset_index(drop=True)
    assert _gfm_grid(rendering.to_markdown(flat)) == [
        [c.replace("\n", " ") for c in row] for row in _expected_grid(flat)]


@pytest.mark.parametrize("name", list(tables.TABLES))
def test_latex_is_a_booktabs_table_with_every_cell(res, name):
    df = tables.TABLES[name](res)
    spec, grid, caption = _latex_grid(rendering.to_latex(df, tables.CAPTIONS[name]))
    assert grid == _expected_grid(df)
    # index levels are label columns (l), measures value columns (r)
    assert spec == "l" * df.index.nlevels + "r" * df.shape[1]
    assert caption == tables.CAPTIONS[name]


def test_latex_typesets_measure_names_as_the_figures_do(res):
    """Issue 28: measure names in LaTeX tables are mathematics, not escaped underscores."""
    tex = rendering.to_latex(tables.TABLES["scaled_correlations"](res),
                          tables.CAPTIONS["scaled_correlations"])
    header = tex.splitlines()[tex.splitlines().index(r"\toprule") + 1]
    for typeset in (r"$\mathit{Sim}_{\mathrm{R|Syn}}$", r"$\mathit{Sim}_{\mathrm{R|WordsSyn}}$"):
        assert typeset in header
    assert r"Sim\_R" not in tex and r"\textbar{}" not in header
    # a name that only starts like a measure stays text
    assert rendering.latex_text("P_Synx") == r"P\_Synx"


def test_latex_escapes_every_special_character():
    df = _adversarial()
    tex = rendering.to_latex(df, caption="rho_s & p > 0.05, 5% {level} | <x>")
    spec, grid, caption = _latex_grid(tex)
    assert grid == [[c.replace("\n", " ") for c in row] for row in _expected_grid(df)]
    assert spec == "lll" + "rrr" and caption == "rho_s & p > 0.05, 5% {level} | <x>"
    assert tex.startswith("\\begin{table}[ht]\n") and tex.endswith("\\end{table}\n")
    # without a caption: the bare tabular; without a named index: one label column
    flat = df.reset_index(drop=True)
    bare = rendering.to_latex(flat)
    assert bare.startswith("\\begin{tabular}") and bare.endswith("\\end{tabular}\n")
    spec, grid, caption = _latex_grid(bare)
    assert spec == "lrr" and caption is None
    assert grid == [[c.replace("\n", " ") for c in row] for row in _expected_grid(flat)]


@pytest.mark.slow
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


@pytest.mark.slow
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
