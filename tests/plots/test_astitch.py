"""The AStitch figures (issue 31): panels, lines, bands, control lines and dots counted on the
matplotlib objects, against the hand-made tables of :mod:`tests.astitch.handmade_results`.
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.collections import PathCollection, PolyCollection

from ncprobe.astitch.figures import (
    plot_auroc_layers,
    plot_expressions,
    plot_linear_layers,
    plot_selectivity,
)
from ncprobe.astitch.report import per_expression
from ncprobe.errors import NoData, UsageError

from ..astitch import handmade_results as hm


def _visible(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]


def _ys(ax) -> list[list[float]]:
    return [list(np.asarray(line.get_ydata(), dtype=float)) for line in ax.get_lines()]


def test_the_auroc_figure_has_a_panel_per_score_and_split_a_band_per_line_and_chance():
    fig = plot_auroc_layers(hm.auroc_table("m"))
    axes = _visible(fig)
    # rows: contrast (all, ambiguous), literal (all, ambiguous); columns: dev, test
    assert [ax.get_title().replace("\n", " ") for ax in axes] == [
        f"EN m, {score}, {subset} {split} (n = {n})"
        for score, n_test in (("contrast", 8), ("literal", 9))
        for subset in ("all", "ambiguous") for split, n in (("dev", 6), ("test", n_test))]
    test_contrast = axes[1]
    bands = [c for c in test_contrast.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 4                             # one per level x context
    ys = _ys(test_contrast)
    # the within-expression AUROC (banded) and the pooled one (faint) of each feature
    for value in (hm.auroc_value, lambda *k: hm.within_value(*k, "all")):
        want = [value("test", layer, "nc", "excluded", "contrast") for layer in ("1", "2")]
        assert any(y == pytest.approx(want) for y in ys)
    assert [0.5, 0.5] in ys                            # chance
    assert [t.get_text() for t in test_contrast.get_xticklabels()] == ["1", "2"]


def test_the_pooled_auroc_of_a_model_of_one_view_is_drawn_not_a_zero_length_line():
    one = hm.auroc_table("m")
    fig = plot_auroc_layers(one[one["layer"] == "1"])
    ax = _visible(fig)[1]                                 # contrast, all, test
    crosses = [line for line in ax.get_lines() if line.get_marker() == "x"]
    assert len(crosses) == 4                              # one per level x context
    pooled = hm.auroc_value("test", "1", "nc", "excluded", "contrast")
    assert any(list(line.get_ydata()) == pytest.approx([pooled]) for line in crosses)


def test_the_linear_figure_draws_the_controls_with_their_bands():
    fig = plot_linear_layers(hm.linear_table("m"))
    axes = _visible(fig)
    # a row of panels per subset: all expressions, then the ambiguous ones
    assert [ax.get_title() for ax in axes] == [
        f"EN m, {subset} expressions\n{setting} (n = 9 test uses)"
        for subset in ("all", "ambiguous") for setting in ("zero-shot", "few-shot")]
    ax = axes[0]
    ys = _ys(ax)
    # the features' test F1 in percent, the type control dotted, the within control
    # dash-dotted (handmade: F1 - 10), the controls and baselines flat
    nc = [100 * hm.f1_on_test(layer, "nc", "excluded") for layer in ("1", "2")]
    assert any(y == pytest.approx(nc) for y in ys)
    assert any(y == pytest.approx([v - 20 for v in nc]) for y in ys)     # type control
    assert any(y == pytest.approx([v - 10 for v in nc]) for y in ys)     # within control
    flat = [100 * f for f in (0.40, 0.45, 0.48, *hm.BASELINE_F1.values())]
    for level in flat:    # majority, expression-only, static; the baselines, type oracle
        assert any(y == pytest.approx([level, level]) for y in ys)
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 6                   # the three features and their type controls
    # the type control's band: its interval (handmade: f1 - 0.3 .. f1 - 0.1), in percent
    lows = [sorted(b.get_paths()[0].vertices[:, 1].tolist())[0] for b in bands]
    assert any(low == pytest.approx(min(nc) - 30) for low in lows)
    spans = [p for p in ax.patches]
    assert len(spans) == 3 + 3        # the controls' intervals, and the three baselines'


def test_the_linear_figure_hides_no_line_and_labels_its_y_axis_once():
    """Issue 38: in the README's GloVe figure two y-axis labels overlapped (one clipped), and
    two controls of the same value (majority and expression-only in zero-shot) drew one line
    over the other."""
    table = hm.linear_table("m")
    same = table["control"] == "expression"       # as in zero-shot: the majority's value
    table.loc[same, ["macro_f1", "f1_low", "f1_high"]] = [0.40, 0.30, 0.50]
    fig = plot_linear_layers(table)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = [t for t in [ax.yaxis.label for ax in fig.axes] + [fig._supylabel]
              if t is not None and t.get_visible() and t.get_text()]
    assert len(labels) == 1                                  # one label for the figure
    boxes = [t.get_window_extent(renderer) for t in labels]
    page = fig.bbox
    for box in boxes:                                        # inside the figure: not clipped
        assert page.x0 <= box.x0 <= box.x1 <= page.x1
        assert page.y0 <= box.y0 <= box.y1 <= page.y1
    for i, a in enumerate(boxes):
        assert not any(a.overlaps(b) for b in boxes[i + 1:])
    # the majority and expression-only controls, both 40.0: drawn dashed in turn, each dash
    # at its own offset, so each colour shows
    ax = _visible(fig)[0]
    at_40 = [line for line in ax.get_lines()
             if list(line.get_ydata()) == pytest.approx([40.0, 40.0])]
    assert len(at_40) == 2
    assert len({line.get_color() for line in at_40}) == 2
    assert len({line._unscaled_dash_pattern[0] for line in at_40}) == 2


def test_one_layer_view_draws_each_control_as_a_marker():
    """Issue 38: with one layer view the control task's line had zero length (drawn nowhere,
    though listed in the legend)."""
    one = hm.linear_table("m")
    one = one[one["layer"].astype(str) != "2"]
    fig = plot_linear_layers(one)
    ax = _visible(fig)[0]
    nc = 100 * hm.f1_on_test("1", "nc", "excluded")
    for value, marker in ((nc - 20, "x"), (nc - 10, "+")):         # type and within controls
        assert any(line.get_marker() == marker and line.get_markersize() > 0
                   and list(line.get_ydata()) == pytest.approx([value])
                   for line in ax.get_lines())


def test_the_selectivity_figure_marks_zero_and_bands_every_line():
    fig = plot_selectivity(hm.linear_table("m"))
    ax = _visible(fig)[0]
    ys = _ys(ax)
    # against the type control (handmade +20) and the within control (+10)
    assert any(y == pytest.approx([20.0, 20.0]) for y in ys) and [0.0, 0.0] in ys
    assert any(y == pytest.approx([10.0, 10.0]) for y in ys)
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 3 * 2


def test_the_expression_figure_sorts_by_the_gap_and_draws_a_dot_per_mean():
    df = per_expression(hm.scores_table("m"), hm.auroc_table("m"))
    fig = plot_expressions(df)
    ax = _visible(fig)[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["e1", "e2", "e3"]
    dots = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert sum(len(c.get_offsets()) for c in dots) == len(df) == 5
    assert "layer 2, nc, context excluded" in ax.get_title()
    assert "(chosen on dev)" in ax.get_title()


def test_empty_tables_are_no_data_and_bad_ones_a_usage_error():
    with pytest.raises(NoData):
        plot_auroc_layers(hm.auroc_table("m").iloc[:0])
    with pytest.raises(NoData):
        plot_linear_layers(hm.linear_table("m").query("probe_kind == 'control'"))
    with pytest.raises(NoData):
        plot_expressions(per_expression(hm.scores_table("m"), hm.auroc_table("m")).iloc[:0])
    with pytest.raises(UsageError, match="no column auroc"):
        plot_auroc_layers(hm.auroc_table("m").drop(columns="auroc"))
