"""Issue 12, "uncertainty shown": bootstrap intervals in the correlation tables, the
multiple-comparison correction of the tables and the correlogram, the printed summary, and
the median / IQR of figures 8-9.

Every expected value is derived here, independently of ncprobe: the intervals are rounded
with :mod:`decimal`, Holm's and Benjamini-Hochberg's adjusted p-values by explicit loops,
Spearman's rho with scipy and the quartiles with ``numpy.percentile``.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np
import pandas as pd
import pytest
import scipy.stats as ss

from ncprobe.cli import build_parser
from ncprobe.errors import UsageError
from ncprobe.ncimp import figures as plots
from ncprobe.ncimp import tables
from ncprobe.ncimp.results import Results

from . import synthetic
from .by_hand import benjamini_hochberg, holm

DEFAULT_VIEW = {"model-a": "-", "model-b": "9+10+11+12"}
CONDITION = {("en", "nat"): "EN-Nat", ("en", "neut"): "EN-Neut", ("pt", "nat"): "PT-Nat",
             ("pt", "neut"): "PT-Neut"}
COND_KEY = {v: k for k, v in CONDITION.items()}
LEVEL = {"sent": "Sent", "nc": "NC"}
RATIO = "Sim_R|Syn/Sim_R|WordsSyn"
PROBES = ["syn", "comp", "wordssyn", "rand"]
#: name -> (measures, levels, analysis) of the correlation tables built from ``correlations``
CORRELATION_TABLES = {
    "sent_correlations": (PROBES, ["sent"], "nc"),
    "nc_correlations": (PROBES, ["nc"], "nc"),
    "affinity_correlations": (["A_Syn|WordsSyn", "A_Syn|Rand"], ["sent", "nc"], "nc"),
    "scaled_correlations": (["Sim_R|Syn", "Sim_R|WordsSyn", RATIO], ["sent", "nc"], "nc"),
    "filtered_correlations": (PROBES + ["A_Syn|WordsSyn", "A_Syn|Rand", "Sim_R|Syn",
                                        "Sim_R|WordsSyn"], ["sent", "nc"], "overlap-filtered"),
}


def _with_intervals(res: Results, seed: int = 7) -> Results:
    """A copy whose correlations carry made-up intervals around rho (seeded), widths varied
    so that the two bounds round differently from rho."""
    rng = np.random.default_rng(seed)
    c = res.correlations.copy()
    c["ci_low"] = (c["rho"] - rng.uniform(0.003, 0.2, len(c))).clip(-1, 1)
    c["ci_high"] = (c["rho"] + rng.uniform(0.003, 0.2, len(c))).clip(-1, 1)
    return dataclasses.replace(res, correlations=c)


@pytest.fixture(scope="module")
def res() -> Results:
    return _with_intervals(synthetic.build())


def _shown(df: pd.DataFrame) -> pd.DataFrame:
    """Rows a table shows: raw space, each model's default layer view."""
    if "space" in df.columns:
        df = df[df["space"] == "raw"]
    return df[[DEFAULT_VIEW[m] == lv for m, lv in zip(df["model"], df["layers"], strict=True)]]


def _rows(res, name):
    measures, levels, analysis = CORRELATION_TABLES[name]
    c = _shown(res.correlations)
    return c[(c["analysis"] == analysis) & c["level"].isin(levels) & c["measure"].isin(measures)]


def _two(x: float) -> str:
    """``x`` rounded to two decimals, half to even on its exact binary value."""
    return str(Decimal(x).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN))


def _cell(t, r):
    return t.loc[(r.model, LEVEL[r.level], CONDITION[(r.lang, r.context)]),
                 tables.MEASURE_LABELS.get(r.measure, r.measure)]


# ---------------------------------------------------------------------------------------------
# tables


def test_the_loops_agree_with_statsmodels():
    from statsmodels.stats.multitest import multipletests

    p = np.random.default_rng(1).uniform(0, 0.08, 40)
    np.testing.assert_allclose(holm(p), multipletests(p, method="holm")[1])
    np.testing.assert_allclose(benjamini_hochberg(p), multipletests(p, method="fdr_bh")[1])


@pytest.mark.parametrize("name", list(CORRELATION_TABLES))
def test_significant_cells_show_rho_and_its_interval(res, name):
    t = tables.TABLES[name](res, correct="none")
    rows = _rows(res, name)
    assert len(rows) == t.size
    significant = 0
    for r in rows.itertuples(index=False):
        cell = _cell(t, r)
        if r.p <= 0.05:
            assert cell == f"{_two(r.rho)} [{_two(r.ci_low)}, {_two(r.ci_high)}]"
            significant += 1
        else:
            assert cell == "-"
    assert significant > 0


def test_cells_without_an_interval_show_rho_alone(res):
    # n_boot 0: no interval in the results (the synthetic build has NaN everywhere)
    bare = synthetic.build()
    t = tables.nc_correlations(bare, correct="none")
    for r in _rows(bare, "nc_correlations").itertuples(index=False):
        assert _cell(t, r) == (_two(r.rho) if r.p <= 0.05 else "-")
    # and one missing interval among others
    c = res.correlations.copy()
    one = _rows(res, "nc_correlations").query("p <= 0.05").index[0]
    c.loc[one, "ci_high"] = np.nan
    t = tables.nc_correlations(dataclasses.replace(res, correlations=c), correct="none")
    r = next(_rows(res, "nc_correlations").loc[[one]].itertuples(index=False))
    assert _cell(t, r) == _two(r.rho)


@pytest.mark.parametrize("name", list(CORRELATION_TABLES))
def test_compact_tables_have_no_intervals(res, name):
    t = tables.TABLES[name](res, intervals=False, correct="none")
    for r in _rows(res, name).itertuples(index=False):
        assert _cell(t, r) == (_two(r.rho) if r.p <= 0.05 else "-")
    assert not t.map(lambda s: "[" in s).to_numpy().any()
    assert "interval" not in tables.caption(name, t)


@pytest.mark.parametrize("name", list(CORRELATION_TABLES))
@pytest.mark.parametrize("method, adjust", [("holm", holm), ("fdr_bh", benjamini_hochberg)])
def test_dashes_follow_the_corrected_p_of_the_table(res, name, method, adjust):
    kw = {} if method == "holm" else {"correct": method}   # holm is the default
    t = tables.TABLES[name](res, **kw)
    rows = _rows(res, name)
    adjusted = adjust(rows["p"].to_numpy())
    dashes = 0
    for r, q in zip(rows.itertuples(index=False), adjusted, strict=True):
        cell = _cell(t, r)
        if q <= 0.05:
            assert cell == f"{_two(r.rho)} [{_two(r.ci_low)}, {_two(r.ci_high)}]"
        else:
            assert cell == "-"
            dashes += 1
    assert int((t == "-").to_numpy().sum()) == dashes
    # the correction changes something: some raw p <= 0.05 become "-"
    assert dashes > int((rows["p"] > 0.05).sum()) or name == "nc_correlations"
    cap = tables.caption(name, t)
    word = "Holm-corrected" if method == "holm" else "Benjamini-Hochberg"
    assert f"{word}" in cap and f"across the {len(rows)} cells of this table" in cap
    assert "(- : p > 0.05)" not in cap


def test_length_correlations_are_corrected_too(res):
    t = tables.length_correlations(res)
    lex = _shown(res.lexical_overlap)
    lex = lex[lex["measure"].isin(PROBES)]
    adjusted = holm(lex["p"].to_numpy())
    for r, q in zip(lex.itertuples(index=False), adjusted, strict=True):
        cell = t.loc[(r.model, "Sent", f"{r.lang.upper()}-Nat"),
                     tables.MEASURE_LABELS[r.measure]]
        assert cell == (_two(r.rho) if q <= 0.05 else "-")
    assert f"across the {len(lex)} cells" in tables.caption("length_correlations", t)


def test_none_reproduces_the_study_marks(res):
    t = tables.nc_correlations(res, correct="none", intervals=False)
    rows = _rows(res, "nc_correlations")
    assert int((t == "-").to_numpy().sum()) == int((rows["p"] > 0.05).sum())
    assert "not corrected" in tables.caption("nc_correlations", t)


def test_an_unknown_correction_is_refused(res):
    with pytest.raises(UsageError, match="holm, fdr_bh, none"):
        tables.nc_correlations(res, correct="bonferroni")
    with pytest.raises(UsageError, match="holm, fdr_bh, none"):
        plots.fig_correlogram(res, correct="bonferroni")


# ---------------------------------------------------------------------------------------------
# correlogram


def _correlogram_p(res, cond):
    """Spearman p of every pair (j > i) of the correlogram's variables of one condition."""
    lang, ctx = COND_KEY[cond]
    m = _shown(res.measures)
    m = m[(m["level"] == "nc") & (m["lang"] == lang) & (m["context"] == ctx)]
    ncs = sorted(set(m["nc"]))
    cols = [m.drop_duplicates("nc").set_index("nc")["gold"].reindex(ncs).to_numpy(float)]
    for model in DEFAULT_VIEW:
        for measure in plots.CORRELOGRAM_MEASURES:
            s = m[(m["model"] == model) & (m["measure"] == measure)].set_index("nc")["value"]
            cols.append(s.reindex(ncs).to_numpy(float))
    pairs = {}
    for i, j in itertools.combinations(range(len(cols)), 2):
        ok = ~(np.isnan(cols[i]) | np.isnan(cols[j]))
        r = ss.spearmanr(cols[i][ok], cols[j][ok])
        pairs[(j, i)] = (float(r.statistic), float(r.pvalue))
    return len(cols), pairs


def test_correlogram_blanks_follow_holm_across_the_figure(res):
    conds = list(COND_KEY)
    family = []   # (cond, j, i, rho, p) of every drawn cell of every panel
    sizes = {}
    for cond in conds:
        n, pairs = _correlogram_p(res, cond)
        sizes[cond] = n
        family += [(cond, j, i, rho, p) for (j, i), (rho, p) in pairs.items()]
    adjusted = holm([f[4] for f in family])
    fig = plots.fig_correlogram(res)
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    raw_only = 0
    for cond in conds:
        n = sizes[cond]
        want = np.full((n - 1, n - 1), np.nan)
        for (c, j, i, rho, p), q in zip(family, adjusted, strict=True):
            if c == cond and q <= 0.05:
                want[j - 1, i] = rho
            raw_only += c == cond and p <= 0.05 < q
        arr = panels[cond].collections[0].get_array()
        drawn = np.ma.filled(np.ma.asarray(arr, dtype=float), np.nan).reshape(want.shape)
        assert np.array_equal(np.isnan(drawn), np.isnan(want)), cond
        np.testing.assert_allclose(drawn[np.isfinite(want)], want[np.isfinite(want)], atol=1e-9)
    assert raw_only > 0   # Holm blanks cells that p <= 0.05 alone would draw
    labels = [ax.get_ylabel() for ax in fig.axes if "Spearman" in ax.get_ylabel()]
    assert labels and f"blank: Holm p > 0.05, {len(family)} pairs" in labels[0]


# ---------------------------------------------------------------------------------------------
# summary


def _summary_res(res, *, gold="comp", standardised=True, per_sentence=False):
    def keep(df):
        return df["space"] == "raw" if "space" in df.columns else np.ones(len(df), bool)

    out = res if standardised else synthetic.subset(res, keep)
    meta = [{**m, "config": {**m["config"], "gold": gold, "n_boot": 1000}} for m in out.meta]
    out = dataclasses.replace(out, meta=meta)
    if per_sentence:
        extra = out.correlations[(out.correlations["analysis"] == "nc")
                                 & (out.correlations["context"] == "nat")].copy()
        extra["analysis"] = "sentence"
        extra["n"] = extra["n"] * 3
        out = dataclasses.replace(out, correlations=pd.concat([out.correlations, extra],
                                                              ignore_index=True))
    return out


def test_summary_shows_the_standardised_space_when_the_run_has_it(res):
    with_std = _summary_res(res).summary()
    assert "nc level · nat (standardised space)" in with_std
    assert "nc level · nat (raw space)" in with_std
    without = _summary_res(res, standardised=False).summary()
    assert "standardised space" not in without and "nc level · nat (raw space)" in without
    # one space on request
    assert "(raw space)" not in _summary_res(res).summary(space="standardised")


def test_summary_names_the_gold_of_the_run(res):
    text = _summary_res(res).summary()
    assert "gold compositionality score" in text and "type-level" not in text
    text = _summary_res(res, gold="type").summary()
    assert "type-level compositionality score (--gold type)" in text
    assert "gold compositionality score" not in text


def test_summary_explains_comp_and_shows_per_sentence_correlations(res):
    text = _summary_res(res).summary()
    comp = [ln for ln in text.splitlines() if ln.startswith("comp:")]
    assert len(comp) == 1 and "comp-head" in comp[0] and "comp-mod" in comp[0]
    assert "per sentence (" not in text
    text = _summary_res(res, per_sentence=True).summary()
    assert "per sentence (raw space)" in text and "token-level score" in text


def _blocks(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for block in text.split("\n\n"):
        lines = block.splitlines()
        if len(lines) > 2 and " level · " in lines[0]:
            out[lines[0]] = lines[1:]
    return out


def test_summary_ratio_median_and_iqr_are_numpys(res):
    text = _summary_res(res).summary()
    blocks = _blocks(text)
    head = re.compile(r"^(\S+) · (\w+)(?: · layers (\S+))? · (\w+) level · (\w+) \((\w+) space\)$")
    checked = 0
    for title, lines in blocks.items():
        mt = head.match(title)
        assert mt, title
        model, lang, layers, level, context, space = mt.groups()
        at = [k for k, ln in enumerate(lines) if ln.split()[:1] == [RATIO]]
        assert len(at) == 1
        nums = re.findall(r"-?\d+\.\d+", lines[at[0] + 1])
        assert "median" in lines[at[0] + 1] and "IQR" in lines[at[0] + 1]
        med, q1, q3 = map(float, nums[:3])
        m = res.measures
        v = m[(m["model"] == model) & (m["lang"] == lang) & (m["layers"] == (layers or "-"))
              & (m["space"] == space) & (m["level"] == level) & (m["context"] == context)
              & (m["measure"] == RATIO)]["value"].dropna().to_numpy()
        want = np.percentile(v, [50, 25, 75])
        np.testing.assert_allclose([med, q1, q3], want, atol=5.1e-4)
        # mean ± sd stays beside it
        assert re.search(r"-?\d+\.\d{3} ± \d+\.\d{3}", lines[at[0]])
        checked += 1
    # 2 models (model-b: 2 views) x 2 languages x 2 levels x 2 contexts x 2 spaces
    assert checked == 3 * 2 * 2 * 2 * 2


def test_summary_rho_interval_and_holm_stars(res):
    sres = _summary_res(res)
    text = sres.summary()
    c = sres.correlations[sres.correlations["analysis"] == "nc"]
    adjusted = holm(c["p"].to_numpy())
    stars = 0
    for r, q in zip(c.itertuples(index=False), adjusted, strict=True):
        lo, hi = f"{r.ci_low:+.3f}", f"{r.ci_high:+.3f}"
        assert f"{r.rho:+.3f} [{lo}, {hi}]" in text
        stars += q <= 0.05
    assert sum(ln.count("]*") for ln in text.splitlines()) == stars
    assert f"Holm-corrected p <= 0.05 across all {len(c)} correlations printed" in text
    assert int((c["p"] <= 0.05).sum()) > stars > 0
    # none: the uncorrected marks
    text = sres.summary(correct="none")
    assert sum(ln.count("]*") for ln in text.splitlines()) == int((c["p"] <= 0.05).sum())


# ---------------------------------------------------------------------------------------------
# figures 8 and 9


def _bars(ax) -> list[tuple[float, float, float, float]]:
    """(x, median, low, high) of every error bar of a panel."""
    out = []
    for cont in ax.containers:
        line, _, (bars,) = cont.lines
        segs = bars.get_segments()
        for x, y, seg in zip(line.get_xdata(), line.get_ydata(), segs, strict=True):
            out.append((float(x), float(y), float(seg[:, 1].min()), float(seg[:, 1].max())))
    return out


def _ratio_values(res, model, cond, cls=None):
    lang, ctx = COND_KEY[cond]
    m = _shown(res.measures)
    m = m[(m["model"] == model) & (m["level"] == "nc") & (m["lang"] == lang)
          & (m["context"] == ctx) & (m["measure"] == RATIO)]
    if cls is not None:
        m = m[m["cls"] == cls]
    return m["value"].dropna().to_numpy()


def test_figure_8_draws_median_and_quartiles(res):
    fig = plots.fig_ratio(res)
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    conds = list(COND_KEY)
    for model in DEFAULT_VIEW:
        ax = panels[model]
        bars = sorted(_bars(ax))
        assert len(bars) == len(conds)
        for (x, med, lo, hi), cond in zip(bars, conds, strict=True):
            assert round(x) == conds.index(cond)
            q1, q2, q3 = np.percentile(_ratio_values(res, model, cond), [25, 50, 75])
            assert (med, lo, hi) == pytest.approx((q2, q1, q3), abs=1e-12)
        # the median is not the mean: the figure no longer draws the mean
        means = [_ratio_values(res, model, c).mean() for c in conds]
        assert not np.allclose([b[1] for b in bars], means)
    ylabel = next(ax.get_ylabel() for ax in fig.axes if ax.get_ylabel())
    assert "median, IQR" in ylabel and "sd" not in ylabel
    assert "median, IQR" in fig.get_suptitle()


def test_figure_9_draws_median_and_quartiles_per_class(res):
    fig = plots.fig_ratio_by_class(res)
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    for model in DEFAULT_VIEW:
        bars = _bars(panels[model])
        want = []
        for cond in COND_KEY:
            for cls in ("I", "PC", "C"):
                q1, q2, q3 = np.percentile(_ratio_values(res, model, cond, cls), [25, 50, 75])
                want.append((q2, q1, q3))
        got = sorted((b[1], b[2], b[3]) for b in bars)
        np.testing.assert_allclose(np.array(got), np.array(sorted(want)), atol=1e-12)


def test_ratio_quartiles_table(res):
    q = plots.ratio_quartiles(res)
    for r in q.itertuples(index=False):
        v = _ratio_values(res, r.model, r.condition)
        assert r.n == len(v)
        assert (r.q1, r.median, r.q3) == pytest.approx(tuple(np.percentile(v, [25, 50, 75])))


# ---------------------------------------------------------------------------------------------
# report and CLI


def test_report_and_reproduce_take_the_options():
    parser = build_parser()
    args = parser.parse_args(["report", "r", "--correct", "fdr_bh", "--compact-tables"])
    assert args.correct == "fdr_bh" and args.compact_tables
    # not given: absent (a probe's report option), NCIMP's report then takes its defaults
    args = parser.parse_args(["report", "r"])
    assert not hasattr(args, "correct") and not hasattr(args, "compact_tables")
    from ncprobe.probes import get_probe
    defaults = {o.flags[0]: o.default for o in get_probe("ncimp").report_options()}
    assert defaults["--correct"] == "holm" and defaults["--compact-tables"] is False
    args = parser.parse_args(["reproduce", "--correct", "none"])
    assert args.correct == "none" and not args.compact_tables
    with pytest.raises(SystemExit):
        parser.parse_args(["report", "r", "--correct", "bonferroni"])


@pytest.mark.slow
def test_report_tables_and_index_say_the_correction(res, tmp_path, monkeypatch):
    from ncprobe.ncimp.report import write_report

    one = synthetic.subset(res, lambda df: (df["model"] == "model-a") if "model" in df.columns
                           else np.ones(len(df), bool))
    # what is read here is the tables and the index: one figure of the study (one that takes
    # the correction, and quick to draw) is drawn, not all ten
    monkeypatch.setattr(plots, "FIGURES", {"ratio_by_class": plots.FIGURES["ratio_by_class"]})
    write_report(one, tmp_path, formats=("png",), dpi=30, correct="fdr_bh", intervals=False)
    md = (tmp_path / "table_nc_correlations.md").read_text(encoding="utf-8")
    rows = _rows(one, "nc_correlations")
    assert md.splitlines()[0] == tables.caption(
        "nc_correlations", tables.nc_correlations(one, correct="fdr_bh", intervals=False))
    assert f"Benjamini-Hochberg (FDR) corrected p > 0.05 across the {len(rows)} cells" in md
    assert "[" not in md.split("\n\n", 1)[1]
    tex = (tmp_path / "table_nc_correlations.tex").read_text(encoding="utf-8")
    assert "Benjamini-Hochberg (FDR) corrected" in tex
    index = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "Benjamini-Hochberg (FDR) corrected (`--correct fdr_bh`)" in index
    assert "--compact-tables" in index
