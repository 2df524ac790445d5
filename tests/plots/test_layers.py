"""Layer-wise results (issue 12): the layer-wise figure and table, the report's layer-wise
files and its --space / --level options, and what `reproduce` passes to its runs.

Expected values are read from the synthetic ``correlations`` table with explicit loops (rho
rounded with :mod:`decimal`, Holm's correction from statsmodels), never from the code under
test.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from statsmodels.stats.multitest import multipletests

from ncprobe.cli import main
from ncprobe.errors import UsageError
from ncprobe.ncimp import figures as plots
from ncprobe.ncimp import tables
from ncprobe.ncimp.report import write_report
from ncprobe.schema import DISPLAY_MEASURES, MEASURE_LABELS

from .. import synthetic

LAYERS = (0, 1, 2, 3, 4)
GROUP = {"EN-Nat": ("en", "nat"), "EN-Neut": ("en", "neut"), "PT-Nat": ("pt", "nat"),
         "PT-Neut": ("pt", "neut")}


@pytest.fixture(scope="module")
def plain():
    """The synthetic results: model-b has one single-layer view ("12"), not layer-wise."""
    return synthetic.build()


@pytest.fixture(scope="module")
def layerwise(plain):
    return synthetic.build_layerwise(LAYERS, base=plain)


@pytest.fixture(scope="module")
def small(layerwise):
    """Model-b in English only: a quick report."""
    return synthetic.subset(layerwise, lambda df: (
        (df["model"] == "model-b") if "model" in df.columns else np.ones(len(df), bool))
        & ((df["lang"] == "en") if "lang" in df.columns else np.ones(len(df), bool)))


def _rows(res, *, model="model-b", condition="EN-Nat", level="nc", space="raw",
          measure="syn"):
    """The correlation rows of the single-layer views, by layer (an explicit filter)."""
    lang, ctx = GROUP[condition]
    c = res.correlations
    out = c[(c["model"] == model) & (c["lang"] == lang) & (c["context"] == ctx)
            & (c["level"] == level) & (c["space"] == space) & (c["analysis"] == "nc")
            & (c["measure"] == measure) & c["layers"].str.isdecimal()]
    return out.assign(layer=out["layers"].astype(int)).sort_values("layer")


def _two(x: float) -> str:
    return str(Decimal(x).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN))


def _panels(fig) -> dict[str, object]:
    """The panels of a layer-wise figure by what each shows: ``model · condition · measure``
    (small multiples: one measure per panel)."""
    return {ax.get_label(): ax for ax in fig.axes if ax.get_label().count(" · ") == 2}


# ---------------------------------------------------------------------------------------------
# the figure


@pytest.fixture(scope="module")
def default_figure(layerwise):
    """The layer-wise figure of ``layerwise`` with every default, and its notes: drawn once
    for the tests of its lines and of its bands (neither changes it)."""
    return plots.fig_layers(layerwise, return_notes=True)


def test_lines_are_the_rho_of_each_layer(layerwise, default_figure):
    fig, notes = default_figure
    panels = _panels(fig)
    # small multiples: one panel per condition and measure; model-a (static) has none
    assert set(panels) == {f"model-b · {c} · {m}" for c in GROUP for m in DISPLAY_MEASURES}
    assert any("model-a" in n for n in notes)
    assert any("9+10+11+12" in n for n in notes)  # the averaged view is not on the axis
    for cond in GROUP:
        for m in DISPLAY_MEASURES:
            ax = panels[f"model-b · {cond} · {m}"]
            [line] = [ln for ln in ax.get_lines() if ln.get_gid()]  # one measure per panel
            assert line.get_gid() == m
            assert len(ax.collections) <= 1  # at most one band: none overlaps another
            rows = _rows(layerwise, condition=cond, measure=m)
            assert list(line.get_xdata()) == list(LAYERS)
            np.testing.assert_allclose(line.get_ydata(), rows["rho"].to_numpy(), rtol=0,
                                       atol=1e-12)
    # shared axes: every panel has the same y range
    assert len({tuple(np.round(ax.get_ylim(), 9)) for ax in panels.values()}) == 1
    # n stated: the NCs each rho of the figure is over, read from the table
    c = layerwise.correlations
    drawn = c[(c["model"] == "model-b") & (c["level"] == "nc") & (c["space"] == "raw")
              & (c["analysis"] == "nc") & c["layers"].str.isdecimal()
              & c["measure"].isin(DISPLAY_MEASURES) & c["context"].isin(["nat", "neut"])]
    counts = sorted({int(n) for n in drawn["n"]})
    want = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    assert f"n = {want} NCs" in fig.get_suptitle()


def _band(ax, measure):
    [coll] = [c for c in ax.collections if c.get_label() == f"_interval {measure}"]
    assert isinstance(coll, PolyCollection)
    ys: dict[float, set] = {}
    for path in coll.get_paths():
        for x, y in path.vertices:
            ys.setdefault(round(float(x), 9), set()).add(round(float(y), 9))
    return ys


def test_bands_span_the_bootstrap_interval(layerwise, default_figure):
    panels = _panels(default_figure[0])
    for cond in GROUP:
        for m in ("comp", "Sim_R|WordsSyn"):
            ys = _band(panels[f"model-b · {cond} · {m}"], m)
            rows = _rows(layerwise, condition=cond, measure=m)
            assert sorted(ys) == list(LAYERS)
            for layer, lo, hi in zip(rows["layer"], rows["ci_low"], rows["ci_high"],
                                     strict=True):
                assert ys[layer] == {round(lo, 9), round(hi, 9)}
    # layer 1 of P_Syn in EN-Neut has no interval: no band there, nor bridged across it
    ys = _band(panels["model-b · EN-Neut · syn"], "syn")
    assert 1 not in ys
    rows = _rows(layerwise, condition="EN-Neut", measure="syn").set_index("layer")
    for layer in (2, 3, 4):
        assert ys[layer] == {round(rows.at[layer, "ci_low"], 9),
                             round(rows.at[layer, "ci_high"], 9)}


def test_level_space_and_measures_choose_the_rows(layerwise):
    fig = plots.fig_layers(layerwise, level="sent", space="standardised",
                           measures=["comp", "rand"], contexts="neut")
    panels = _panels(fig)
    assert set(panels) == {f"model-b · {c} · {m}" for c in ("EN-Neut", "PT-Neut")
                           for m in ("comp", "rand")}
    for cond in ("EN-Neut", "PT-Neut"):
        for m in ("comp", "rand"):
            [line] = [ln for ln in panels[f"model-b · {cond} · {m}"].get_lines()
                      if ln.get_gid()]
            assert line.get_gid() == m
            rows = _rows(layerwise, condition=cond, level="sent", space="standardised",
                         measure=m)
            np.testing.assert_allclose(line.get_ydata(), rows["rho"].to_numpy(), atol=1e-12)


def test_one_panel_into_the_callers_axes(layerwise):
    from matplotlib.figure import Figure

    own = Figure()
    ax = own.add_subplot()
    with pytest.raises(UsageError, match="one panel"):  # two panels: EN-Nat and PT-Nat
        plots.fig_layers(layerwise, contexts="nat", measures="comp", ax=ax)
    one = synthetic.subset(layerwise, lambda df: (df["lang"] == "en") if "lang" in df.columns
                           else np.ones(len(df), bool))
    ax2 = Figure().add_subplot()
    fig2 = plots.fig_layers(one, contexts="nat", measures="comp", ax=ax2)
    [line] = [ln for ln in ax2.get_lines() if ln.get_gid() == "comp"]
    np.testing.assert_allclose(line.get_ydata(), _rows(one, measure="comp")["rho"], atol=1e-12)
    assert fig2 is ax2.figure and fig2 is not own


def test_fig_layers_refuses_bad_options_and_no_layerwise_views(layerwise, plain):
    with pytest.raises(UsageError, match="level"):
        plots.fig_layers(layerwise, level="token")
    with pytest.raises(UsageError, match="space"):
        plots.fig_layers(layerwise, space="whitened")
    with pytest.raises(UsageError, match="measures"):
        plots.fig_layers(layerwise, measures=["nonsense"])
    with pytest.raises(plots.NoData):  # one single-layer view ("12") is not layer-wise
        plots.fig_layers(plain)


# ---------------------------------------------------------------------------------------------
# a sentence-transformers model's own sentence embedding (the view "own", sentence level only)

OWN_SCALE = 0.8


@pytest.fixture(scope="module")
def with_own(layerwise):
    """:func:`layerwise` with model-b's own sentence embedding: the view ``own`` at the
    sentence level only, its rows (layer 4's sentence-level rows, rho scaled by
    :data:`OWN_SCALE`) put FIRST in every table, where a first-view default would take them."""
    import dataclasses

    from ncprobe.ncimp.results import Results

    tables = {}
    for f in dataclasses.fields(layerwise):
        if f.name == "meta":
            continue
        df = getattr(layerwise, f.name)
        if not {"layers", "level"} <= set(df.columns) or df.empty:
            tables[f.name] = df
            continue
        part = df[(df["model"] == "model-b") & (df["layers"] == "4")
                  & (df["level"] == "sent")].copy()
        part["layers"] = "own"
        if f.name == "correlations":
            part["rho"] = part["rho"] * OWN_SCALE
        out = pd.concat([part, df], ignore_index=True)
        for c in df.columns:
            if isinstance(df[c].dtype, pd.CategoricalDtype):
                out[c] = out[c].astype(df[c].dtype)
        tables[f.name] = out
    return Results(**tables, meta=layerwise.meta)


def _own_rho(res, cond, measure, space="raw"):
    lang, ctx = GROUP[cond]
    c = res.correlations
    [rho] = c.loc[(c["model"] == "model-b") & (c["lang"] == lang) & (c["context"] == ctx)
                  & (c["level"] == "sent") & (c["space"] == space) & (c["analysis"] == "nc")
                  & (c["measure"] == measure) & (c["layers"] == "own"), "rho"]
    return float(rho)


@pytest.mark.slow  # ~3.5 s
def test_own_view_is_a_labelled_reference_not_a_point_on_the_layer_axis(with_own):
    fig, notes = plots.fig_layers(with_own, level="sent", return_notes=True)
    panels = _panels(fig)
    assert any("own sentence embedding" in n and "not a layer" in n for n in notes)
    for cond in GROUP:
        for m in DISPLAY_MEASURES:
            ax = panels[f"model-b · {cond} · {m}"]
            [line] = [ln for ln in ax.get_lines() if ln.get_gid() == m]
            assert list(line.get_xdata()) == list(LAYERS)  # no point for "own"
            np.testing.assert_allclose(
                line.get_ydata(), _rows(with_own, condition=cond, level="sent",
                                        measure=m)["rho"].to_numpy(), atol=1e-12)
            [ref] = [ln for ln in ax.get_lines() if ln.get_gid() == f"own {m}"]
            assert ref.get_linestyle() == "--"
            np.testing.assert_allclose(np.ravel(ref.get_ydata()),
                                       _own_rho(with_own, cond, m), rtol=0, atol=1e-12)
    legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert any("own sentence embedding" in t for t in legend)
    # the NC level has no "own" view: no reference line there
    nc = plots.fig_layers(with_own)
    assert not [ln for ax in nc.axes for ln in ax.get_lines()
                if str(ln.get_gid()).startswith("own")]


def test_layerwise_views_and_table_put_own_last_at_the_sentence_level_only(with_own):
    from ncprobe.ncimp.selection import layerwise_views

    c = with_own.correlations
    assert layerwise_views(c, level="sent")[("model-b", "en")] == [
        "0", "1", "2", "3", "4", "9+10+11+12", "own"]
    assert "own" not in layerwise_views(c, level="nc")[("model-b", "en")]
    t = tables.layers(with_own, level="sent", correct="none", intervals=False)
    assert list(t.columns) == ["0", "1", "2", "3", "4", "9+10+11+12", "own"]
    for cond, (lang, ctx) in GROUP.items():
        for m in DISPLAY_MEASURES:
            [row] = c[(c["model"] == "model-b") & (c["lang"] == lang) & (c["context"] == ctx)
                      & (c["level"] == "sent") & (c["space"] == "raw") & (c["analysis"] == "nc")
                      & (c["measure"] == m) & (c["layers"] == "own")].itertuples()
            assert t.loc[("model-b", cond, MEASURE_LABELS[m]), "own"] == (
                _two(row.rho) if row.p <= 0.05 else "-")
    assert "own" not in list(tables.layers(with_own, correct="none").columns)


def test_the_default_view_of_a_figure_is_a_layer_view_never_own(with_own):
    from ncprobe.ncimp.selection import select

    c = with_own.correlations
    assert c["layers"].iloc[0] == "own"  # the own rows come first in the table
    got = select(c, level="sent")
    assert set(got.loc[got["model"] == "model-b", "layers"]) == {"9+10+11+12"}
    # a model with nothing but its own embedding at a level: that view, as the only one
    alone = select(c[(c["layers"] == "own") | (c["model"] == "model-a")], level="sent")
    assert set(alone.loc[alone["model"] == "model-b", "layers"]) == {"own"}


# ---------------------------------------------------------------------------------------------
# the table


def test_table_cells_are_rho_rounded(layerwise):
    t = tables.layers(layerwise, correct="none", intervals=False)
    assert list(t.columns) == ["0", "1", "2", "3", "4", "9+10+11+12"]
    assert list(t.index.names) == ["model", "condition", "measure"]
    assert set(t.index.get_level_values("model")) == {"model-b"}
    assert list(dict.fromkeys(t.index.get_level_values("condition"))) == list(GROUP)
    c = layerwise.correlations
    checked = 0
    for cond, (lang, ctx) in GROUP.items():
        for m in DISPLAY_MEASURES:
            for view in t.columns:
                [row] = c[(c["model"] == "model-b") & (c["lang"] == lang)
                          & (c["context"] == ctx) & (c["level"] == "nc") & (c["space"] == "raw")
                          & (c["analysis"] == "nc") & (c["measure"] == m)
                          & (c["layers"] == view)].itertuples()
                want = _two(row.rho) if row.p <= 0.05 else "-"
                assert t.loc[("model-b", cond, MEASURE_LABELS[m]), view] == want
                checked += want != "-"
    assert checked > 50  # most cells are significant: the test compares numbers


def test_table_holm_and_intervals(layerwise):
    t = tables.layers(layerwise, correct="holm", intervals=True)
    c = layerwise.correlations
    fam = c[(c["model"] == "model-b") & (c["level"] == "nc") & (c["space"] == "raw")
            & (c["analysis"] == "nc") & c["measure"].isin(DISPLAY_MEASURES)].reset_index()
    assert t.attrs["family"] == len(fam) == 4 * len(DISPLAY_MEASURES) * 6
    fam["holm"] = multipletests(fam["p"].to_numpy(), method="holm")[1]
    cond = {v: k for k, v in GROUP.items()}
    differs = 0
    for r in fam.itertuples():
        cell = t.loc[("model-b", cond[(r.lang, r.context)], MEASURE_LABELS[r.measure]), r.layers]
        if r.holm > 0.05:
            want = "-"
        elif np.isnan(r.ci_low):
            want = _two(r.rho)
        else:
            want = f"{_two(r.rho)} [{_two(r.ci_low)}, {_two(r.ci_high)}]"
        assert cell == want
        differs += (r.p <= 0.05) and (r.holm > 0.05)
    assert differs > 0  # the correction changed some cells


def test_table_empty_without_layerwise_views(plain):
    t = tables.layers(plain)
    assert t.empty


# ---------------------------------------------------------------------------------------------
# the report


def _names(written):
    return sorted(p.name for p in written)


@pytest.mark.slow
def test_report_writes_the_layerwise_files_only_for_layerwise_results(small, plain, tmp_path,
                                                                      monkeypatch):
    # the layer-wise files are the subject of the first report: the study's figures say they
    # have nothing to show (as a figure with no values does), so that the report numbers the
    # layer-wise figure 11 without drawing them (their rows, model-b's default view, are those
    # of synthetic.build(): every figure of them is drawn by tests/plots/test_plots.py)
    def nothing_to_show(results, **kw):
        raise plots.NoData("not drawn in this test")

    monkeypatch.setattr(plots, "FIGURES", dict.fromkeys(plots.FIGURES, nothing_to_show))
    written = _names(write_report(small, tmp_path / "lw", formats=("png",), dpi=30))
    assert not [n for n in written if n.startswith("fig") and "layers" not in n]
    monkeypatch.undo()
    assert "fig11_layers.png" in written
    assert {"table_layers.md", "table_layers.tex"} <= set(written)
    md = (tmp_path / "lw" / "table_layers.md").read_text()
    assert "| model-b | EN-Nat | P_Comp |" in md
    index = (tmp_path / "lw" / "README.md").read_text()
    assert "fig11_layers" in index and "ncprobe's addition" in index
    manifest = json.loads((tmp_path / "lw" / ".ncprobe-report.json").read_text())
    assert "fig11_layers.png" in manifest["files"]

    one_view = synthetic.subset(plain, lambda df: (
        df["lang"] == "en") if "lang" in df.columns else np.ones(len(df), bool))
    # the same directory, now without layer-wise results: the layer-wise files go (stale),
    # and the study's figures are all there is
    again = _names(write_report(one_view, tmp_path / "lw", formats=("png",), dpi=30))
    assert not [n for n in again if "layers" in n]
    assert [n for n in again if n.startswith("fig")] == sorted(
        f"fig{i:02d}_{n}.png" for i, n in enumerate(plots.FIGURES, start=1))
    assert not (tmp_path / "lw" / "fig11_layers.png").exists()
    assert not (tmp_path / "lw" / "table_layers.md").exists()


@pytest.mark.slow
def test_a_foreign_fig11_is_refused_only_when_the_report_would_write_it(small, tmp_path,
                                                                         monkeypatch):
    out = tmp_path / "rep"
    out.mkdir()
    (out / "fig11_layers.png").write_bytes(b"mine")
    with pytest.raises(UsageError, match="fig11_layers.png"):
        write_report(small, out, formats=("png",), dpi=30)
    assert sorted(p.name for p in out.iterdir()) == ["fig11_layers.png"]  # nothing written
    one_view = synthetic.subset(small, lambda df: (
        df["layers"] == "9+10+11+12") if "layers" in df.columns else np.ones(len(df), bool))
    # without layer-wise views the report would write no fig11, whatever study figures it
    # draws: the first two only (every study figure of these rows, the default view of
    # ``small``, is drawn by tests/plots/test_plots.py: model-b's 9+10+11+12 view of
    # synthetic.build(), whose rows ``small`` holds)
    monkeypatch.setattr(plots, "FIGURES", dict(list(plots.FIGURES.items())[:2]))
    write_report(one_view, out, formats=("png",), dpi=30)
    assert (out / "fig11_layers.png").read_bytes() == b"mine"  # not ours: left alone


def _spy(seen: dict, name: str, draw):
    """``draw``, recording in ``seen`` the options it was given and the figure it drew."""
    def wrapped(results, **kw):
        fig, notes = draw(results, **kw)
        seen[name] = (kw, fig)
        return fig, notes
    return wrapped


@pytest.fixture(scope="module")
def cli_report(small, plain, tmp_path_factory):
    """`ncprobe report` of the results directories found below one directory (model-a's
    static run in English, and ``small`` a level deeper) with ``--space standardised --level
    sent``, every figure function watched (:func:`_spy`): the directory, model-a's results,
    the report's directory, the exit status, and what each figure function was given and
    drew (name -> (options, figure)). One report for the tests of the command and of the
    options reaching the figures."""
    tmp = tmp_path_factory.mktemp("cli")
    static = synthetic.subset(plain, lambda df: (
        (df["model"] == "model-a") if "model" in df.columns else np.ones(len(df), bool))
        & ((df["lang"] == "en") if "lang" in df.columns else np.ones(len(df), bool)))
    static.to_parquet(tmp / "runs" / "static" / "model-a-en")
    small.to_parquet(tmp / "runs" / "deep" / "er" / "model-b-en")
    out = tmp / "rep"
    seen: dict[str, tuple] = {}
    with pytest.MonkeyPatch.context() as mp:
        for name, draw in list(plots.FIGURES.items()):
            mp.setitem(plots.FIGURES, name, _spy(seen, name, draw))
        mp.setitem(plots.ADDED_FIGURES, "layers", _spy(seen, "layers", plots.fig_layers))
        code = main(["report", str(tmp / "runs"), "--out", str(out), "--format", "png",
                     "--jobs", "1", "--space", "standardised", "--level", "sent"])
    return tmp, static, out, code, seen


@pytest.mark.slow
def test_report_space_and_level_reach_the_figures(small, cli_report):
    *_, code, seen = cli_report
    assert code == 0
    names = list(plots.FIGURES)
    for i, name in enumerate(names):
        kw = seen[name][0]
        assert kw["space"] == "standardised"
        assert kw.get("level") == ("sent" if i >= 2 else None)
    # figure 8 draws the ratio's median per condition: of the standardised sentence-level
    # values of the default view (the first), not of the raw NC-level ones
    fig8 = seen["ratio"][1]
    [panel] = [ax for ax in fig8.axes if ax.get_title() == "model-b"]
    drawn = sorted(float(v) for cont in panel.containers for v in cont.lines[0].get_ydata())

    def medians(space, level):
        m = small.measures
        rows = m[(m["space"] == space) & (m["level"] == level) & (m["layers"] == "9+10+11+12")
                 & (m["measure"] == "Sim_R|Syn/Sim_R|WordsSyn")]
        return sorted(float(np.nanmedian(g["value"].to_numpy(dtype=float)))
                      for _, g in rows.groupby(["lang", "context"], observed=True))

    np.testing.assert_allclose(drawn, medians("standardised", "sent"), atol=1e-12)
    assert not np.allclose(drawn, medians("raw", "nc"))
    # the layer-wise figure too
    fig11 = seen["layers"][1]
    [line] = [ln for ln in _panels(fig11)["model-b · EN-Neut · comp"].get_lines()
              if ln.get_gid() == "comp"]
    want_rho = _rows(small, condition="EN-Neut", level="sent", space="standardised",
                     measure="comp")["rho"]
    np.testing.assert_allclose(line.get_ydata(), want_rho, atol=1e-12)


def test_report_refuses_a_space_or_level_the_results_lack(small, tmp_path):
    raw_only = synthetic.subset(small, lambda df: (df["space"] == "raw") if "space" in df.columns
                                else np.ones(len(df), bool))
    with pytest.raises(UsageError, match="standardised"):
        write_report(raw_only, tmp_path / "a", space="standardised")
    nc_only = synthetic.subset(small, lambda df: (df["level"] == "nc") if "level" in df.columns
                               else np.ones(len(df), bool))
    with pytest.raises(UsageError, match="Sent"):
        write_report(nc_only, tmp_path / "b", level="sent")
    with pytest.raises(UsageError, match="choose from"):
        write_report(small, tmp_path / "c", space="whitened")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


# ---------------------------------------------------------------------------------------------
# the command line


@pytest.mark.slow
def test_cli_report_finds_nested_results_and_takes_space_and_level(cli_report, tmp_path,
                                                                   capsys):
    _, static, out, code, _ = cli_report
    assert code == 0
    index = (out / "README.md").read_text()
    assert "model-a (en)" in index and "model-b (en)" in index  # both found below runs/
    assert "Vector space standardised" in index
    assert (out / "fig11_layers.png").exists()
    md = (out / "table_layers.md").read_text()
    assert "sentence level, standardised space" in md

    raw = tmp_path / "raw"
    synthetic.subset(static, lambda df: (df["space"] == "raw") if "space" in df.columns
                     else np.ones(len(df), bool)).to_parquet(raw / "model-a-en")
    capsys.readouterr()
    assert main(["report", str(raw), "--out", str(tmp_path / "rep2"),
                 "--space", "standardised"]) == 2
    err = capsys.readouterr().err
    assert "--space standardised" in err and "--standardise" in err
    assert not (tmp_path / "rep2").exists()
    with pytest.raises(SystemExit) as stop:  # not a level at all: argparse's own refusal
        main(["report", str(raw), "--out", str(tmp_path / "rep3"), "--level", "word"])
    assert stop.value.code == 2


def test_cli_reproduce_passes_layers_and_standardise(tmp_path, monkeypatch):
    import ncprobe.ncimp.reproduce as rp

    calls = []

    def fake(models, langs, **kw):
        calls.append(kw)
        return rp.Reproduction(None, [], [])

    monkeypatch.setattr(rp, "reproduce", fake)
    base = ["reproduce", "--models", "minilm", "--langs", "en", "--out", str(tmp_path / "o"),
            "--results-dir", str(tmp_path / "r"), "--jobs", "1", "--quiet"]
    assert main(base + ["--layers", "all", "--standardise"]) == 5  # nothing ran: exit 5
    assert calls[-1]["layers"] == "all" and calls[-1]["standardise"] is True
    assert main(base) == 5
    assert calls[-1]["layers"] is None and calls[-1]["standardise"] is False


def test_reproduce_gives_layers_only_to_models_with_layers(plain, tmp_path, monkeypatch):
    import ncprobe.ncimp.reproduce as rp

    configs = []
    made = synthetic.subset(plain, lambda df: (
        (df["model"] == "model-a") if "model" in df.columns else np.ones(len(df), bool)))

    def compute(cfg, **kw):
        configs.append(cfg)
        meta = [{**m, "config": {**m["config"], "model": cfg.model}} for m in made.meta[:1]]
        # each model its own rows: two models' tables labelled alike would be one cell twice
        mine = synthetic.relabel(made, cfg.model)
        return rp.Results(**{k: getattr(mine, k) for k in (
            "cosines", "sentences", "measures", "correlations", "distributions",
            "lexical_overlap", "rogue", "standardisation", "ncs")}, meta=meta)

    monkeypatch.setattr(rp, "compute", compute)
    monkeypatch.setattr(rp, "availability", lambda *a, **k: None)
    rep = rp.reproduce(["glove-6b-50d", "minilm"], ["en"], results_dir=tmp_path, layers="all",
                       standardise=True, n_boot=0, progress=False)
    by_model = {c.model: c for c in configs}
    assert by_model["minilm"].layers == "all" and by_model["glove-6b-50d"].layers is None
    assert all(c.standardise for c in configs)
    assert [n for n in rep.notes if n.startswith("glove-6b-50d (en)")]
    assert not [n for n in rep.notes if n.startswith("minilm")]
    dirs = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))
    assert dirs == ["glove-6b-50d-en-std-boot_0", "minilm-en-layers_all-std-boot_0"]
    assert isinstance(rep.results.correlations, pd.DataFrame)
