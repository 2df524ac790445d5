"""The ratio Sim_R|Syn / Sim_R|WordsSyn, median and inter-quartile range: figures 8 and 9
(the numbers: :func:`ncprobe.ncimp.inference.ratio_quartiles`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from ...plots.theme import (
    CLASS_PALETTE,
    PANEL_WIDTH,
    PanelGrid,
    add_legend,
    class_handles,
    draw_ideal_panel,
    draws_ideal,
    math_label,
    models_with,
    n_text,
    short_name,
    style,
    with_notes,
)
from ...schema import CLASSES, LEVEL_LABELS, RATIO, Correction
from ..inference import model_names, ratio_quartiles
from ..selection import select
from ._docs import fill_doc
from .by_class import mark_classes
from .conditions import condition_palette, conditions_of

if TYPE_CHECKING:  # pragma: no cover
    from ..runs import ResultsData as Results


def _errorbars(ax, rows: pd.DataFrame, *, x_order: list[str], x: str, hue: str,
               hue_order: list[str], palette: dict) -> None:
    """One point (``median``) with an error bar from ``q1`` to ``q3`` per (x, hue) row, hues
    dodged within x."""
    n = len(hue_order)
    step = 0.8 / n
    for j, h in enumerate(hue_order):
        sub = rows[rows[hue].astype(str) == h]
        sub = sub[sub[x].astype(str).isin(x_order) & sub["median"].notna()]
        if sub.empty:
            continue
        pos = [x_order.index(str(v)) + (j - (n - 1) / 2) * step for v in sub[x]]
        med = sub["median"].to_numpy(dtype=np.float64)
        err = np.vstack([med - sub["q1"].to_numpy(dtype=np.float64),
                         sub["q3"].to_numpy(dtype=np.float64) - med])
        colour = palette[h]
        ax.errorbar(pos, med, yerr=err, fmt="o", markersize=4.5,
                    color=colour, ecolor=_darker(colour), elinewidth=1.0, capsize=2.5,
                    markeredgecolor="#333333", markeredgewidth=0.5, label=h)


def _darker(colour: str, f: float = 0.75) -> tuple[float, ...]:
    return tuple(c * f for c in to_rgb(colour))


def _ratio_scale(axes, rows: pd.DataFrame) -> None:
    """Symmetric-log y scale when the quartiles span far beyond the ratio's natural range."""
    lo = float(rows["q1"].min())
    hi = float(rows["q3"].max())
    for ax in axes:
        ax.axhline(1.0, color="#444444", linewidth=0.8, linestyle="--", zorder=1.5)
    if max(abs(lo), abs(hi)) <= 12:
        return
    ticks = [t for t in (-1000, -300, -100, -30, -10, -3, -1, 0, 1, 3, 10, 30, 100, 300, 1000)
             if lo * 1.3 <= t <= hi * 1.3 or -1 <= t <= 1]
    for ax in axes:
        ax.set_yscale("symlog", linthresh=1.0, linscale=0.6)
        ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
        ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())


@overload
def fig_ratio(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
              layers=None, ax: Axes | None = None, return_notes: Literal[False] = False
        ) -> Figure: ...


@overload
def fig_ratio(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
              layers=None, ax: Axes | None = None, return_notes: Literal[True]
        ) -> tuple[Figure, list[str]]: ...


@fill_doc
def fig_ratio(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
              layers=None, ax: Axes | None = None, return_notes: bool = False
        ) -> Figure | tuple[Figure, list[str]]:
    """Figure 8: the ratio Sim_R|Syn / Sim_R|WordsSyn, median and inter-quartile range
    (25th-75th percentile) over all the NCs, per model and condition.

    The numbers: :func:`ncprobe.ncimp.inference.ratio_quartiles` (from the per-NC ``measures``
    table).

    The study drew mean ± sd; the ratio is heavy-tailed (NCs with Sim_R|WordsSyn near 0
    give values far out: GloVe's mean ± sd spans about -30..30), so the median and IQR are
    drawn; the mean and sd stay in the ``distributions`` table and the summary. The y axis
    turns symmetric-logarithmic (linear within ±1) when a quartile reaches beyond ±12.
    The dashed line is 1 (as similar to the gold synonym as to the word synonyms).

    ``ax=`` is accepted when the results hold one model with values for this figure:
    its panel is drawn into the given Axes, whose figure is returned.
    {return_notes}
    """
    return _ratio_figure(results, by_class=False, level=level, space=space, contexts=contexts,
                         layers=layers, ideal=False, ax=ax, return_notes=return_notes)


@overload
def fig_ratio_by_class(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                       layers=None, ideal: bool | None = None, ax: Axes | None = None,
                       return_notes: Literal[False] = False, correct: Correction = "holm"
        ) -> Figure: ...


@overload
def fig_ratio_by_class(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                       layers=None, ideal: bool | None = None, ax: Axes | None = None,
                       return_notes: Literal[True], correct: Correction = "holm"
        ) -> tuple[Figure, list[str]]: ...


@fill_doc
def fig_ratio_by_class(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                       layers=None, ideal: bool | None = None, ax: Axes | None = None,
                       return_notes: bool = False, correct: Correction = "holm"
        ) -> Figure | tuple[Figure, list[str]]:
    """Figure 9: the ratio Sim_R|Syn / Sim_R|WordsSyn, median and inter-quartile range per
    class and condition (as figure 8).

    Drawn as :func:`fig_ratio` draws figure 8.

    {class_marks}

    Ideal panel: far above 1 for idiomatic NCs (the gold synonym keeps the
    meaning, the word synonyms do not), about 1 for compositional ones.

    {ax_one_model}
    {return_notes}
    """
    return _ratio_figure(results, by_class=True, level=level, space=space, contexts=contexts,
                         layers=layers, ideal=ideal, ax=ax, return_notes=return_notes,
                         correct=correct)


def _ratio_figure(results: Results, *, by_class: bool, level, space, contexts, layers,
                  ideal: bool | None, ax: Axes | None, return_notes: bool,
                  correct: Correction = "holm"):
    """Figures 8 and 9: median and IQR of the ratio per condition, and per class if
    ``by_class``."""
    rows = ratio_quartiles(results, by_class=by_class, level=level, space=space,
                           contexts=contexts, layers=layers)
    notes: list[str] = []
    models = models_with(rows, model_names(results),
                         f"{LEVEL_LABELS.get(level, level)}-level ratio", notes)
    ideal = draws_ideal(ax, ideal, len(models), "one per model")
    conds = conditions_of(rows)
    if by_class:
        hue, hue_order, palette = "cls", list(CLASSES), CLASS_PALETTE
    else:
        hue, hue_order, palette = "condition", conds, condition_palette(conds)
    with style():
        grid = (PanelGrid(models, ideal=ideal, ax=ax) if by_class else
                PanelGrid(models, ideal=False, ax=ax,
                          panel_width=min(PANEL_WIDTH, 0.9 + 0.45 * len(conds))))
        for i, (model, pax) in enumerate(zip(models, grid.axes[0], strict=True)):
            _errorbars(pax, rows[rows["model"] == model], x_order=conds, x="condition", hue=hue,
                       hue_order=hue_order, palette=palette)
            pax.set_xticks(range(len(conds)), conds)
            pax.set_xlim(-0.6, len(conds) - 0.4)
            pax.set_title(short_name(model))
            pax.set_ylabel(f"{math_label(RATIO)}\n(median, IQR)" if grid.first_column(0, i) else "")
        _ratio_scale(grid.axes[0], rows)
        if by_class:
            mark_classes(results, grid.axes, models, [RATIO], conds, notes, level=level,
                          space=space, contexts=contexts, layers=layers, correct=correct)
        if by_class:
            if ideal:
                draw_ideal_panel(grid.ideal[0], [RATIO], ratio=True)
                grid.ideal[0].set_xticks([0], [math_label(RATIO)])
            add_legend(grid.legend_on, class_handles())
        values = select(results.measures, space=space, level=level, contexts=contexts,
                        measures=[RATIO], layers=layers)
        grid.finish(f"Ratio of Scaled Similarities{' by class' if by_class else ''} "
                    f"(median, IQR), {LEVEL_LABELS.get(level, level)} level ({space} space)",
                    n_text(values, by_class=by_class))
    return with_notes(grid.fig, notes, return_notes)


