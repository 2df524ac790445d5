"""One label per measure in every figure (issue 12): typeset, parsed, no other abbreviation;
model names on the correlogram's axes; no large blank margins around the saved figures.

The expected labels are written out here from the study's names (SPEC §3), not taken from
ncprobe; margins are measured on the PNG with numpy.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from matplotlib.mathtext import MathTextParser
from matplotlib.text import Text
from PIL import Image

from ncprobe import schema
from ncprobe.ncimp import figures as plots

from .. import synthetic

#: the study's names, written out: plain (tables, terminal) and typeset (figures)
PLAIN = {"syn": "P_Syn", "comp": "P_Comp", "wordssyn": "P_WordsSyn", "rand": "P_Rand",
         "A_Syn|WordsSyn": "A_Syn|WordsSyn", "A_Syn|Rand": "A_Syn|Rand",
         "Sim_R|Syn": "Sim_R|Syn", "Sim_R|WordsSyn": "Sim_R|WordsSyn",
         "Sim_R|Syn/Sim_R|WordsSyn": "Sim_R|Syn / Sim_R|WordsSyn"}
MATH = {"syn": r"$P_{\mathrm{Syn}}$", "comp": r"$P_{\mathrm{Comp}}$",
        "wordssyn": r"$P_{\mathrm{WordsSyn}}$", "rand": r"$P_{\mathrm{Rand}}$",
        "A_Syn|WordsSyn": r"$A_{\mathrm{Syn|WordsSyn}}$", "A_Syn|Rand": r"$A_{\mathrm{Syn|Rand}}$",
        "Sim_R|Syn": r"$\mathit{Sim}_{\mathrm{R|Syn}}$",
        "Sim_R|WordsSyn": r"$\mathit{Sim}_{\mathrm{R|WordsSyn}}$",
        "Sim_R|Syn/Sim_R|WordsSyn":
            r"$\mathit{Sim}_{\mathrm{R|Syn}}\,/\,\mathit{Sim}_{\mathrm{R|WordsSyn}}$"}
#: the measures each figure of the study shows (SPEC §4), so that no test passes on a figure
#: that shows no label at all
SHOWN = {"sent_cosines": ["syn", "comp", "wordssyn", "rand"],
         "nc_cosines": ["syn", "comp", "wordssyn", "rand"],
         "affinity": ["A_Syn|WordsSyn", "A_Syn|Rand"],
         "affinity_by_class": ["A_Syn|WordsSyn", "A_Syn|Rand"],
         "scaled_similarity": ["Sim_R|Syn", "Sim_R|WordsSyn"],
         "simr_syn_by_class": ["Sim_R|Syn"], "simr_wordssyn_by_class": ["Sim_R|WordsSyn"],
         "ratio": ["Sim_R|Syn/Sim_R|WordsSyn"], "ratio_by_class": ["Sim_R|Syn/Sim_R|WordsSyn"],
         "correlogram": ["syn", "comp", "wordssyn", "rand", "A_Syn|WordsSyn", "A_Syn|Rand",
                         "Sim_R|Syn", "Sim_R|WordsSyn"]}
#: what is left of a text once every typeset label is taken out must name no measure: the
#: probe names, the short forms of earlier figures (SimR, WS), a plain subscript (P_, A_)
LEFTOVER = re.compile(r"\b(Syn|WordsSyn|Rand|Comp|SimR|WS|ratio)\b|[PA]_|Sim_|Sim R")


@pytest.fixture(scope="module")
def res():
    return synthetic.build()


def _figures(res):
    out = {name: f(res) for name, f in plots.FIGURES.items()}
    for name, f in getattr(plots, "ADDED_FIGURES", {}).items():
        try:
            out[name] = f(res)
        except plots.NoData:   # the synthetic results may hold nothing it shows
            pass
    return out


@pytest.fixture(scope="module")
def figures(res):
    return _figures(res)


def _texts(fig) -> list[str]:
    fig.draw_without_rendering()
    return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]


def test_one_label_per_measure_plain_and_typeset():
    assert {m: schema.MEASURE_LABELS[m] for m in PLAIN} == PLAIN
    assert {m: schema.MEASURE_MATH_LABELS[m] for m in MATH} == MATH
    assert set(schema.MEASURE_MATH_LABELS) == set(schema.MEASURE_LABELS)
    assert schema.measure_label("A_Syn|Rand") == "A_Syn|Rand"
    assert schema.measure_label("A_Syn|Rand", math=True) == MATH["A_Syn|Rand"]
    # the shorter labels of the earlier figures are gone
    assert not hasattr(schema, "PANEL_TICKS") and not hasattr(schema, "CORRELOGRAM_TICKS")


@pytest.mark.parametrize("measure", sorted(schema.MEASURE_MATH_LABELS))
def test_typeset_labels_parse_with_the_subscript_lowered(measure):
    label = schema.MEASURE_MATH_LABELS[measure]
    if "$" not in label:
        assert label == "Comp (gold)" and measure == "gold"
        return
    math = label[label.index("$"):label.rindex("$") + 1]
    parsed = MathTextParser("path").parse(math, dpi=72, prop=None)   # raises on a bad label
    chars = [(chr(g[2]), g[4]) for g in parsed.glyphs]   # (character, y offset)
    shown = "".join(c for c, _ in chars)
    # no markup left in what is drawn: the subscript is typeset, not written
    assert not set(shown) & set("_{}$\\")
    plain = schema.MEASURE_LABELS[measure].replace(" ", "").replace("_", "")
    if measure in ("comp-head", "comp-mod"):
        plain = plain.split("(")[0]
    assert shown.replace("/", "") == plain.replace("/", "")
    base_y = chars[0][1]
    # the first letter after the symbol is lower than the symbol (a subscript)
    first_sub = 1 if chars[0][0] in "PA" else 3     # P, A; or S-i-m
    assert chars[first_sub][1] != base_y


@pytest.mark.parametrize("name", list(plots.FIGURES))
def test_every_figure_names_measures_only_by_their_typeset_label(figures, name):
    fig = figures[name]
    fig.canvas.draw()   # renders every mathtext: a label that does not parse raises here
    texts = _texts(fig)
    # a label broken over two lines ("$A\\,/\\,$\n$B$") is one label
    joined = "\n\n".join(t.replace("$\n$", "") for t in texts)
    for m in SHOWN[name]:
        assert MATH[m] in joined, (name, m)
    labels = sorted(set(schema.MEASURE_MATH_LABELS.values()), key=len, reverse=True)
    for text in texts:
        rest = text
        for lab in labels:
            rest = rest.replace(lab, " ")
        assert not LEFTOVER.search(rest), (name, text)


def test_added_figures_too(figures):
    for name in getattr(plots, "ADDED_FIGURES", {}):
        if name not in figures:
            continue
        fig = figures[name]
        fig.canvas.draw()
        labels = sorted(set(schema.MEASURE_MATH_LABELS.values()), key=len, reverse=True)
        for text in _texts(fig):
            rest = text
            for lab in labels:
                rest = rest.replace(lab, " ")
            assert not LEFTOVER.search(rest), (name, text)


def test_correlogram_names_the_models_on_both_axes(figures):
    fig = figures["correlogram"]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    for cond, ax in panels.items():
        matrix = ax.get_window_extent(renderer)
        ticks = [t.get_window_extent(renderer) for t in
                 ax.get_xticklabels() + ax.get_yticklabels() if t.get_visible() and t.get_text()]
        outside = [t for t in ax.texts if t.get_text() in ("model-a", "model-b")
                   and not matrix.overlaps(t.get_window_extent(renderer))]
        # the panels on the left have model names left of the matrix, the bottom ones below
        if any(t.get_visible() for t in ax.get_yticklabels() if t.get_text()):
            left = [t for t in outside if t.get_window_extent(renderer).x1 <= matrix.x0]
            assert {t.get_text() for t in left} == {"model-a", "model-b"}, cond
        if any(t.get_visible() for t in ax.get_xticklabels() if t.get_text()):
            below = [t for t in outside if t.get_window_extent(renderer).y1 <= matrix.y0]
            assert {t.get_text() for t in below} == {"model-a", "model-b"}, cond
        # and they cover no tick label
        for t in outside:
            box = t.get_window_extent(renderer)
            assert not any(box.overlaps(b) for b in ticks), (cond, t.get_text())


def _blank_bands(png: bytes) -> tuple[float, float, float]:
    """(largest blank band at an edge, largest blank row band, largest blank column band), as
    fractions of the image's height or width; blank = every pixel near white."""
    a = np.asarray(Image.open(io.BytesIO(png)).convert("L")).astype(int)
    rows, cols = (a >= 245).all(axis=1), (a >= 245).all(axis=0)

    def longest(v):
        best = cur = 0
        for x in v:
            cur = cur + 1 if x else 0
            best = max(best, cur)
        return best

    def edge(v):
        return int(np.argmin(v)) if not v.all() else len(v)
    edges = max(edge(rows) / len(rows), edge(rows[::-1]) / len(rows),
                edge(cols) / len(cols), edge(cols[::-1]) / len(cols))
    return edges, longest(rows) / len(rows), longest(cols) / len(cols)


@pytest.mark.parametrize("name", list(plots.FIGURES))
def test_no_large_blank_margins(figures, name):
    """Saved as the report saves them (tight bounding box): blank edges under 5% of a side
    (the layout's pad is about 0.04 in on figures 3-9 in wide), and no blank band across the
    figure over 12% of it (the space a legend's title or a row of turned tick labels takes is
    under that; a panel left empty or a title set far off is more). The figure is the one the
    label tests read (the same call, made once): saving lays it out again."""
    fig = figures[name]
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    edges, row_band, col_band = _blank_bands(buf.getvalue())
    assert edges < 0.05, (name, edges)
    assert row_band < 0.12 and col_band < 0.12, (name, row_band, col_band)


def test_blank_band_measure_finds_a_blank_margin():
    """The measure itself: an image with a fifth of it blank on the left is caught."""
    img = np.zeros((50, 100), dtype=np.uint8)
    img[:, :20] = 255
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="png")
    edges, rows, cols = _blank_bands(buf.getvalue())
    assert edges == pytest.approx(0.2) and cols == pytest.approx(0.2) and rows == 0
