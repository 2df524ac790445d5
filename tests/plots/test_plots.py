"""The ten figures on a synthetic Results (tests/synthetic.py): panels, labels, drawn elements.

Expected counts and values are derived from the synthetic tables with numpy/scipy,
not from ncprobe.
"""

from __future__ import annotations

import itertools

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import scipy.stats as ss
from matplotlib.figure import Figure
from matplotlib.patches import PathPatch, Rectangle
from matplotlib.text import Text

from ncprobe.errors import UsageError
from ncprobe.ncimp import figures as plots
from ncprobe.ncimp.results import Results

from .. import synthetic

MODELS = ["model-a", "model-b"]
CONDITIONS = ["EN-Nat", "EN-Neut", "PT-Nat", "PT-Neut"]
COND_KEY = {"EN-Nat": ("en", "nat"), "EN-Neut": ("en", "neut"), "PT-Nat": ("pt", "nat"),
            "PT-Neut": ("pt", "neut")}
DEFAULT_VIEW = {"model-a": "-", "model-b": "9+10+11+12"}
RATIO = "Sim_R|Syn/Sim_R|WordsSyn"


@pytest.fixture(scope="module")
def res() -> Results:
    return synthetic.build()


def _drawn_once(results, **options):
    """``get(name)``: the figure of that name of ``results`` with ``options``, drawn on the
    first call and the same object after it."""
    cache: dict = {}

    def get(name: str):
        if name not in cache:
            cache[name] = plots.FIGURES[name](results, **options)
        return cache[name]
    return get


@pytest.fixture(scope="module")
def figure(res):
    """The figure of that name with default options, drawn once per module."""
    return _drawn_once(res)


@pytest.fixture(autouse=True)
def _nothing_in_pyplot():
    """No test leaves a figure registered in pyplot: the figures are built without it."""
    yield
    fignums = plt.get_fignums()
    plt.close("all")
    assert fignums == []


def _panels(fig) -> dict[str, list]:
    out: dict[str, list] = {}
    for ax in fig.axes:
        if ax.get_title():
            out.setdefault(ax.get_title(), []).append(ax)
    return out


def _boxes(ax) -> list:
    return [p for p in ax.patches if isinstance(p, PathPatch)]


def _bars(ax) -> list:
    return [p for p in ax.patches if isinstance(p, Rectangle)]


def _values(res, model, level, measure, lang, context, cls=None):
    m = res.measures
    sel = ((m["model"] == model) & (m["space"] == "raw") & (m["layers"] == DEFAULT_VIEW[model])
           & (m["level"] == level) & (m["measure"] == measure) & (m["lang"] == lang)
           & (m["context"] == context))
    if cls is not None:
        sel &= m["cls"] == cls
    return m.loc[sel, "value"].dropna().to_numpy()


def _quartiles(box: PathPatch) -> tuple[float, float]:
    y = box.get_path().vertices[:, 1]
    return (round(float(y.min()), 9), round(float(y.max()), 9))


def _assert_boxes(boxes, want) -> None:
    np.testing.assert_allclose(np.array(sorted(_quartiles(b) for b in boxes)), np.array(want),
                               atol=1e-7)


def _expected_quartiles(values_list) -> list[tuple[float, float]]:
    out = []
    for v in values_list:
        q1, q3 = np.percentile(v, [25, 75])
        out.append((round(float(q1), 9), round(float(q3), 9)))
    return sorted(out)


def test_figures_are_the_ten_of_the_spec_in_order():
    assert list(plots.FIGURES) == ["sent_cosines", "nc_cosines", "affinity", "affinity_by_class",
                                   "scaled_similarity", "simr_syn_by_class",
                                   "simr_wordssyn_by_class", "ratio", "ratio_by_class",
                                   "correlogram"]
    assert set(plots.CONDITION_PALETTE) >= set(CONDITIONS)
    assert list(plots.CLASS_PALETTE) == ["I", "PC", "C"]


@pytest.mark.parametrize("name, level, measures, ylabel", [
    ("sent_cosines", "sent", ["syn", "comp", "wordssyn", "rand"], "cosine"),
    ("nc_cosines", "nc", ["syn", "comp", "wordssyn", "rand"], "cosine"),
    ("affinity", "nc", ["A_Syn|WordsSyn", "A_Syn|Rand"], "Affinity"),
    ("scaled_similarity", "nc", ["Sim_R|Syn", "Sim_R|WordsSyn"], "Scaled Similarity"),
])
def test_distribution_figures(res, figure, name, level, measures, ylabel):
    fig = figure(name)
    panels = _panels(fig)
    assert sorted(panels) == ["ideal values", *MODELS]
    assert all(len(v) == 1 for v in panels.values())
    # the ideal panel: one schematic bar per measure and class
    assert len(_bars(panels["ideal values"][0])) == len(measures) * 3
    for model in MODELS:
        ax = panels[model][0]
        boxes = _boxes(ax)
        assert len(boxes) == len(measures) * len(CONDITIONS)
        # raw space and the default layer view only: each box spans Q1..Q3 of one cell
        want = _expected_quartiles(_values(res, model, level, m, *COND_KEY[c])
                                   for m in measures for c in CONDITIONS)
        _assert_boxes(boxes, want)
        assert len(ax.get_xticklabels()) == len(measures)
    assert ylabel in panels[MODELS[0]][0].get_ylabel()
    # the conditions' legend names the four conditions, in their colours
    legend_text = {t.get_text() for lg in fig.legends for t in lg.get_texts()}
    assert set(CONDITIONS) <= legend_text
    assert any("idiomatic" in t for t in legend_text)


def test_box_colours_follow_the_condition_palette(figure):
    fig = figure("affinity")
    ax = _panels(fig)["model-a"][0]
    colours = [matplotlib.colors.to_hex(b.get_facecolor()) for b in _boxes(ax)]
    want = {matplotlib.colors.to_hex(plots.CONDITION_PALETTE[c]) for c in CONDITIONS}
    assert set(colours) == want
    # English blue and darker for naturalistic: a hue check on the palette itself
    en_nat, en_neut = (matplotlib.colors.to_rgb(plots.CONDITION_PALETTE[c])
                       for c in ("EN-Nat", "EN-Neut"))
    pt_nat = matplotlib.colors.to_rgb(plots.CONDITION_PALETTE["PT-Nat"])
    assert en_nat[2] > en_nat[0] and pt_nat[0] > pt_nat[2]
    assert sum(en_nat) < sum(en_neut)


@pytest.mark.parametrize("name, measures", [
    ("affinity_by_class", ["A_Syn|WordsSyn", "A_Syn|Rand"]),
    ("simr_syn_by_class", ["Sim_R|Syn"]),
    ("simr_wordssyn_by_class", ["Sim_R|WordsSyn"]),
])
def test_class_figures(res, figure, name, measures):
    fig = figure(name)
    panels = _panels(fig)
    # one row of panels per measure, each with its ideal panel
    assert sorted(panels) == ["ideal values", *MODELS]
    assert [len(panels[k]) for k in ("ideal values", *MODELS)] == [len(measures)] * 3
    for b, measure in enumerate(measures):
        assert len(_bars(panels["ideal values"][b])) == 3
        for model in MODELS:
            ax = panels[model][b]
            # the measure's typeset label: symbol, then its subscript upright
            sym, sub = measure.split("_", 1)
            sym = sym if len(sym) == 1 else rf"\mathit{{{sym}}}"
            assert rf"${sym}_{{\mathrm{{{sub}}}}}$" in panels[MODELS[0]][b].get_ylabel()
            assert [t.get_text() for t in ax.get_xticklabels()] == CONDITIONS
            boxes = _boxes(ax)
            assert len(boxes) == 3 * len(CONDITIONS)   # I, PC, C per condition
            # the NC without a class is left out
            want = _expected_quartiles(_values(res, model, "nc", measure, *COND_KEY[c], cls=k)
                                       for c in CONDITIONS for k in ("I", "PC", "C"))
            _assert_boxes(boxes, want)
            colours = {matplotlib.colors.to_hex(bx.get_facecolor()) for bx in boxes}
            assert colours == {matplotlib.colors.to_hex(c) for c in plots.CLASS_PALETTE.values()}


def _points(ax) -> tuple[list[float], list[tuple[float, float]]]:
    """(medians, (low, high) of the bars) of the error-bar points drawn in a panel."""
    medians, spans = [], []
    for cont in ax.containers:
        line, _, (bars,) = cont.lines[0], cont.lines[1], cont.lines[2]
        ys = list(line.get_ydata())
        medians += ys
        for seg in bars.get_segments():
            spans.append((seg[:, 1].min(), seg[:, 1].max()))
    return medians, spans


def _dist(res, model, cls, cond):
    """(median, (25th, 75th percentile)) of the ratio over the NCs (all: cls "all")."""
    lang, ctx = COND_KEY[cond]
    v = _values(res, model, "nc", RATIO, lang, ctx, cls=None if cls == "all" else cls)
    assert len(v) > 3
    q1, q2, q3 = np.percentile(v, [25, 50, 75])
    return float(q2), (float(q1), float(q3))


def test_ratio_figure_draws_median_and_iqr_per_condition(res, figure):
    fig = figure("ratio")
    panels = _panels(fig)
    assert sorted(panels) == MODELS    # no ideal panel here
    for model in MODELS:
        medians, spans = _points(panels[model][0])
        want = [_dist(res, model, "all", c) for c in CONDITIONS]
        assert sorted(medians) == pytest.approx(sorted(w[0] for w in want))
        np.testing.assert_allclose(np.array(sorted(spans)), np.array(sorted(w[1] for w in want)))


def test_ratio_by_class_draws_one_point_per_class_and_condition(res, figure):
    fig = figure("ratio_by_class")
    panels = _panels(fig)
    assert sorted(panels) == ["ideal values", *MODELS]
    assert len(_bars(panels["ideal values"][0])) == 3
    for model in MODELS:
        medians, _ = _points(panels[model][0])
        want = [_dist(res, model, k, c)[0] for c in CONDITIONS for k in ("I", "PC", "C")]
        assert sorted(medians) == pytest.approx(sorted(want))


def _expected_correlogram(res, cond, models=MODELS):
    lang, ctx = COND_KEY[cond]
    m = res.measures
    m = m[(m["space"] == "raw") & (m["level"] == "nc") & (m["lang"] == lang)
          & (m["context"] == ctx)]
    m = m[[DEFAULT_VIEW[x] == lv for x, lv in zip(m["model"], m["layers"], strict=True)]]
    ncs = sorted(set(m["nc"]))
    gold = m.drop_duplicates("nc").set_index("nc")["gold"].reindex(ncs).to_numpy(float)
    cols = [gold]
    for model in models:
        for measure in plots.CORRELOGRAM_MEASURES:
            s = m[(m["model"] == model) & (m["measure"] == measure)].set_index("nc")["value"]
            cols.append(s.reindex(ncs).to_numpy(float))
    n = len(cols)
    rho = np.full((n - 1, n - 1), np.nan)
    for i, j in itertools.combinations(range(n), 2):      # j > i: row j - 1, column i
        ok = ~(np.isnan(cols[i]) | np.isnan(cols[j]))
        r = ss.spearmanr(cols[i][ok], cols[j][ok])
        if r.pvalue <= 0.05:
            rho[j - 1, i] = r.statistic
    return rho


def test_correlogram_draws_exactly_the_significant_cells(res):
    # uncorrected p, the study's blanks (Holm: tests/test_uncertainty.py)
    fig = plots.fig_correlogram(res, correct="none")
    panels = _panels(fig)
    assert sorted(panels) == sorted(CONDITIONS)
    for cond in CONDITIONS:
        ax = panels[cond][0]
        want = _expected_correlogram(res, cond)
        arr = ax.collections[0].get_array()
        drawn = np.ma.filled(np.ma.asarray(arr, dtype=float), np.nan).reshape(want.shape)
        assert np.array_equal(np.isnan(drawn), np.isnan(want)), cond
        assert np.isfinite(want).sum() > 5 and np.isnan(want[np.tril_indices_from(want)]).any()
        np.testing.assert_allclose(drawn[np.isfinite(want)], want[np.isfinite(want)], atol=1e-9)
        # rows: the measures of model-a then model-b (gold is the first column)
        assert len(ax.get_yticks()) == 2 * len(plots.CORRELOGRAM_MEASURES)
    # the model names are written in the empty upper triangle
    texts = {t.get_text() for t in panels["EN-Nat"][0].texts}
    assert set(MODELS) <= texts


def test_correlogram_matrix_variables(res):
    variables, rho, p = plots.correlogram_matrix(res, "PT-Neut")
    assert variables[0] == ("", "gold")
    assert variables[1:] == [(m, x) for m in MODELS for x in plots.CORRELOGRAM_MEASURES]
    assert rho.shape == p.shape == (len(variables),) * 2
    np.testing.assert_allclose(np.diag(rho), 1.0)


def test_sentence_only_model_is_left_out_of_nc_figures_with_a_note(res,
                                                                    sentence_only_b_figure):
    # model-b as an API embedder: sentence level only (_sentence_only_b)
    assert plots.FIGURES["nc_cosines"] is plots.fig_nc_cosines
    assert plots.FIGURES["sent_cosines"] is plots.fig_sentence_cosines
    fig, notes = sentence_only_b_figure("nc_cosines")
    assert sorted(_panels(fig)) == ["ideal values", "model-a"]
    assert notes == ["not shown (no NC-level values): model-b"]
    fig, notes = sentence_only_b_figure("sent_cosines")
    assert sorted(_panels(fig)) == ["ideal values", *MODELS] and notes == []
    sent_only = synthetic.subset(res, lambda df: (df["level"] == "sent") if "level" in df.columns
                                 else np.ones(len(df), bool))
    for name in ("nc_cosines", "affinity", "ratio", "correlogram"):
        with pytest.raises(plots.NoData):
            plots.FIGURES[name](sent_only)


def test_one_language_and_one_model(res):
    en_a = synthetic.subset(res, lambda df: (
        (df["lang"] == "en") if "lang" in df.columns else np.ones(len(df), bool))
        & ((df["model"] == "model-a") if "model" in df.columns else True))
    fig = plots.fig_sentence_cosines(en_a)
    panels = _panels(fig)
    assert sorted(panels) == ["ideal values", "model-a"]
    assert len(_boxes(panels["model-a"][0])) == 4 * 2     # EN-Nat, EN-Neut
    legend_text = {t.get_text() for lg in fig.legends for t in lg.get_texts()}
    assert {"EN-Nat", "EN-Neut"} <= legend_text and "PT-Nat" not in legend_text
    fig = plots.fig_simr_syn_by_class(en_a)
    ax = _panels(fig)["model-a"][0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["EN-Nat", "EN-Neut"]
    fig = plots.fig_correlogram(en_a)
    assert sorted(_panels(fig)) == ["EN-Nat", "EN-Neut"]


def test_many_models_wrap_after_four_columns(res):
    names = [f"m{i}" for i in range(6)]
    many = Results.concat([synthetic.relabel(synthetic.subset(
        res, lambda df: (df["model"] == "model-a") if "model" in df.columns
        else np.ones(len(df), bool)), n) for n in names])
    fig = plots.fig_affinity(many)
    panels = _panels(fig)
    assert sorted(panels) == ["ideal values", *names]
    ys = {n: panels[n][0].get_position().y0 for n in names}
    xs = {n: panels[n][0].get_position().x0 for n in names}
    assert ys["m0"] == pytest.approx(ys["m3"]) and ys["m4"] < ys["m0"]
    assert xs["m4"] == pytest.approx(xs["m0"])


def test_layers_and_space_can_be_chosen(res):
    fig = plots.fig_nc_cosines(res, layers={"model-a": "-", "model-b": "12"})
    ax = _panels(fig)["model-b"][0]
    m = res.measures
    sel = ((m["model"] == "model-b") & (m["layers"] == "12") & (m["space"] == "raw")
           & (m["level"] == "nc") & (m["lang"] == "en") & (m["context"] == "nat")
           & (m["measure"] == "rand"))
    q = np.array(_expected_quartiles([m.loc[sel, "value"].to_numpy()])[0])
    assert any(np.allclose(_quartiles(b), q, atol=1e-7) for b in _boxes(ax))
    fig = plots.fig_nc_cosines(res, space="standardised")
    assert "standardised" in fig.get_suptitle()


@pytest.mark.parametrize("name", list(plots.FIGURES))
def test_readable_at_the_saved_size(figure, name):
    """Text at least 8 pt, no overlapping horizontal tick labels, legends outside the panels."""
    fig = figure(name)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for t in fig.findobj(Text):
        if t.get_visible() and t.get_text().strip():
            assert t.get_fontsize() >= 8, (name, t.get_text(), t.get_fontsize())
    for ax in fig.axes:
        labels = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        if labels and not any(t.get_rotation() for t in labels):
            boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
            assert all(a.x1 <= b.x0 for a, b in itertools.pairwise(boxes)), (name, ax.get_title())
    for legend in fig.legends:
        lb = legend.get_window_extent(renderer)
        for ax in fig.axes:
            if ax.get_title():
                assert not lb.overlaps(ax.get_window_extent(renderer)), (name, ax.get_title())


# ---------------------------------------------------------------------------------------------
# figures as Figure objects: no pyplot, notes returned, drawing into the caller's Axes


def _one_model(res, model="model-a", lang=None):
    def keep(df):
        mask = np.ones(len(df), bool)
        if "model" in df.columns:
            mask &= (df["model"] == model).to_numpy()
        if lang is not None and "lang" in df.columns:
            mask &= (df["lang"] == lang).to_numpy()
        return mask
    return synthetic.subset(res, keep)


def _sentence_only_b(res):
    """model-b as a sentence-level-only (API) model: its NC-level rows removed."""
    return synthetic.subset(res, lambda df: ~((df["model"] == "model-b") & (df["level"] == "nc"))
                            if "level" in df.columns else np.ones(len(df), bool))


@pytest.mark.parametrize("name", list(plots.FIGURES))
def test_figures_are_figures_unknown_to_pyplot(figure, name):
    # the module's one call of the figure with default options (``figure``): whichever test
    # makes it, pyplot knows of no figure after it (here, and _nothing_in_pyplot after each)
    fig = figure(name)
    assert type(fig) is Figure and fig.axes
    assert plt.get_fignums() == []


# the note each NC-level figure gives when model-b has no NC-level values (the wording of
# the report's index); the sentence-level figure has none
CLASS_FIGURES = ("affinity_by_class", "simr_syn_by_class", "simr_wordssyn_by_class",
                 "ratio_by_class")
NOTES_WITHOUT_B = {
    "sent_cosines": [],
    "nc_cosines": ["not shown (no NC-level values): model-b"],
    "affinity": ["not shown (no NC-level values): model-b"],
    "affinity_by_class": ["not shown (no NC-level values): model-b"],
    "scaled_similarity": ["not shown (no NC-level values): model-b"],
    "simr_syn_by_class": ["not shown (no NC-level values): model-b"],
    "simr_wordssyn_by_class": ["not shown (no NC-level values): model-b"],
    "ratio": ["not shown (no NC-level ratio): model-b"],
    "ratio_by_class": ["not shown (no NC-level ratio): model-b"],
    "correlogram": ["not shown (no NC-level values): model-b"],
}


@pytest.fixture(scope="module")
def sentence_only_b_figure(res):
    """The figure of that name of :func:`_sentence_only_b`, with its notes
    (``return_notes=True``), drawn once per module."""
    return _drawn_once(_sentence_only_b(res), return_notes=True)


@pytest.mark.parametrize("name", list(plots.FIGURES))
def test_return_notes_returns_the_figure_and_its_notes(sentence_only_b_figure, name):
    fig, notes = sentence_only_b_figure(name)
    assert isinstance(fig, Figure)
    if name in CLASS_FIGURES:  # and the note on the per-class tests their brackets mark
        # model-a: 4 conditions x 9 measures x 3 pairs of classes in the per-class table
        assert notes[:-1] == NOTES_WITHOUT_B[name]
        assert "Mann-Whitney" in notes[-1] and "Holm-corrected" in notes[-1]
        assert "across the 108 pairs" in notes[-1]
    else:
        assert notes == NOTES_WITHOUT_B[name]
    titles = {t for ax in fig.axes for t in [ax.get_title()] + [x.get_text() for x in ax.texts]}
    assert ("model-b" in titles) == (name == "sent_cosines")


def test_ax_draws_one_panel_into_the_callers_axes(res):
    a = _one_model(res, "model-a")
    mine = Figure(figsize=(6, 3))
    left, right = mine.subplots(1, 2)
    # the ratio: one point per condition, at the median over all NCs, bars to the quartiles
    out = plots.fig_ratio(a, ax=left)
    assert out is mine and mine.axes == [left, right]
    # the panel's title, and under it what its values count (the caller's figure has no
    # title of ncprobe's to hold it)
    title, n = left.get_title().splitlines()
    assert title == "model-a" and n.startswith("n = ") and not right.has_data()
    medians, spans = _points(left)
    want = [_dist(res, "model-a", "all", c) for c in CONDITIONS]
    assert sorted(medians) == pytest.approx(sorted(w[0] for w in want))
    np.testing.assert_allclose(np.array(sorted(spans)), np.array(sorted(w[1] for w in want)))
    assert mine.get_suptitle() == ""          # the caller's figure keeps its own title
    # a box plot: the boxes of the panel, and the legend inside the Axes
    out, notes = plots.fig_nc_cosines(a, ax=right, return_notes=True)
    assert out is mine and notes == []
    measures = ["syn", "comp", "wordssyn", "rand"]
    want = _expected_quartiles(_values(res, "model-a", "nc", m, *COND_KEY[c])
                               for m in measures for c in CONDITIONS)
    _assert_boxes(_boxes(right), want)
    legend = right.get_legend()
    assert legend is not None and set(CONDITIONS) <= {t.get_text() for t in legend.get_texts()}
    assert mine.legends == [] and len(mine.axes) == 2    # no ideal panel, no figure legend


def test_ax_of_a_correlogram_of_one_condition(res):
    en_a = _one_model(res, "model-a", lang="en")
    mine = Figure()
    ax = mine.add_subplot()
    out = plots.fig_correlogram(en_a, contexts="nat", ax=ax, correct="none")
    assert out is mine and ax.get_title().splitlines()[0] == "EN-Nat"
    assert ax.get_title().splitlines()[1].startswith("n = ")
    want = _expected_correlogram(res, "EN-Nat", models=["model-a"])
    arr = ax.collections[0].get_array()
    drawn = np.ma.filled(np.ma.asarray(arr, dtype=float), np.nan).reshape(want.shape)
    assert np.array_equal(np.isnan(drawn), np.isnan(want)) and np.isfinite(want).sum() > 3
    np.testing.assert_allclose(drawn[np.isfinite(want)], want[np.isfinite(want)], atol=1e-9)
    assert len(mine.axes) == 2                  # the panel and its colour bar


@pytest.mark.parametrize("call", [
    lambda res, ax: plots.fig_ratio(res, ax=ax),                        # two models
    lambda res, ax: plots.fig_nc_cosines(_one_model(res), ideal=True, ax=ax),  # ideal panel
    lambda res, ax: plots.fig_correlogram(_one_model(res), ax=ax),      # four conditions
])
def test_ax_is_refused_for_more_than_one_panel(res, call):
    mine = Figure()
    ax = mine.add_subplot()
    with pytest.raises(UsageError, match="ax="):
        call(res, ax)
    assert not ax.has_data() and len(mine.axes) == 1


def test_ax_is_not_taken_by_the_figure_of_two_affinities(res):
    with pytest.raises(TypeError):
        plots.fig_affinity_by_class(_one_model(res), ax=Figure().add_subplot())


@pytest.mark.parametrize("name", list(plots.FIGURES))
def test_every_figure_states_its_n(figure, name):
    """Issue 28: every figure says what its values count. The synthetic results hold 12 scored
    English NCs (4 per class) and one without a score or class, and 12 Portuguese ones (4 per
    class): a panel counts 12 or 13 NCs, a panel by class 12 (4 per class)."""
    import re

    lines = figure(name)._suptitle.get_text().splitlines()
    assert len(lines) == 2, lines
    m = re.fullmatch(r"n = (\d+)(?:-(\d+))? NCs per model and condition(.*)", lines[1])
    assert m, lines[1]
    counts = {int(m.group(1)), int(m.group(2) or m.group(1))}
    by_class = name.endswith("by_class")
    assert counts == ({12} if by_class else {12, 13})
    assert m.group(3).startswith(" (I 4, PC 4, C 4)" if by_class else ("", ";"))
