"""The AStitch figures (issue 31): panels, lines, bands, control lines and dots counted on the
matplotlib objects, against the hand-made tables of :mod:`tests.astitch.handmade_results`.
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.collections import PathCollection, PolyCollection

from ncprobe.astitch.report import per_expression
from ncprobe.errors import NoData, UsageError
from ncprobe.plots.astitch import (
    plot_auroc_layers,
    plot_expressions,
    plot_linear_layers,
    plot_selectivity,
)

from ..astitch import handmade_results as hm


def _visible(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]


def _ys(ax) -> list[list[float]]:
    return [list(np.asarray(line.get_ydata(), dtype=float)) for line in ax.get_lines()]


def test_the_auroc_figure_has_a_panel_per_score_and_split_a_band_per_line_and_chance():
    fig = plot_auroc_layers(hm.auroc_table("m"))
    axes = _visible(fig)
    # rows: contrast, literal; columns: dev, test
    assert [ax.get_title().replace("\n", " ") for ax in axes] == [
        "EN m, contrast dev (n = 6)", "EN m, contrast test (n = 8)",
        "EN m, literal dev (n = 6)", "EN m, literal test (n = 9)"]
    test_contrast = axes[1]
    bands = [c for c in test_contrast.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 4                             # one per level x context
    ys = _ys(test_contrast)
    want = [hm.auroc_value("test", layer, "nc", "excluded", "contrast") for layer in ("1", "2")]
    assert any(y == pytest.approx(want) for y in ys)
    assert [0.5, 0.5] in ys                            # chance
    assert [t.get_text() for t in test_contrast.get_xticklabels()] == ["1", "2"]


def test_the_linear_figure_draws_the_controls_with_their_bands():
    fig = plot_linear_layers(hm.linear_table("m"))
    axes = _visible(fig)
    assert [ax.get_title().split("\n")[1] for ax in axes] == [
        "zero-shot (n = 9 test uses)", "few-shot (n = 9 test uses)"]
    ax = axes[0]
    ys = _ys(ax)
    # the features' test F1 in percent, the control task dotted, the three controls flat
    nc = [100 * hm.f1_on_test(layer, "nc", "excluded") for layer in ("1", "2")]
    assert any(y == pytest.approx(nc) for y in ys)
    assert any(y == pytest.approx([v - 20 for v in nc]) for y in ys)     # control task
    for level in (40.0, 45.0, 48.0):                   # majority, expression-only, static
        assert any(y == pytest.approx([level, level]) for y in ys)
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 6                   # the three features and their control tasks
    # the control task's band: its interval (handmade: f1 - 0.3 .. f1 - 0.1), in percent
    lows = [sorted(b.get_paths()[0].vertices[:, 1].tolist())[0] for b in bands]
    assert any(low == pytest.approx(min(nc) - 30) for low in lows)
    spans = [p for p in ax.patches]
    assert len(spans) == 3                             # the three controls' intervals


def test_the_selectivity_figure_marks_zero_and_bands_every_line():
    fig = plot_selectivity(hm.linear_table("m"))
    ax = _visible(fig)[0]
    ys = _ys(ax)
    assert any(y == pytest.approx([20.0, 20.0]) for y in ys) and [0.0, 0.0] in ys
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 3


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
