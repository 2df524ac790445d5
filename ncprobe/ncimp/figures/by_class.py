"""By compositionality class: figures 4, 6 and 7 (boxes per class and condition), and the
per-class tests marked over the figures by class (4, 6, 7 and 9: brackets and stars)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ...plots.theme import (
    CLASS_PALETTE,
    FONT_SIZE,
    PanelGrid,
    add_legend,
    class_handles,
    draw_boxes,
    draw_ideal_panel,
    draws_ideal,
    math_label,
    models_with,
    n_text,
    short_name,
    style,
    with_notes,
)
from ...schema import AFFINITIES, CLASSES, LEVEL_LABELS, Correction
from ...significance import ALPHA, CORRECTION_NAMES, STARS_NOTE, stars
from ..inference import class_tests, model_names, significant_pairs
from ..selection import select
from ._docs import fill_doc
from .conditions import conditions_of

if TYPE_CHECKING:  # pragma: no cover
    from ..runs import ResultsData as Results


def _class_figure(results: Results, *, measures: list[str], level: str, title: str, space: str,
                  contexts, layers, sharey: bool, ideal: bool | None, ax: Axes | None = None,
                  return_notes: bool = False, ylabel: str | None = None,
                  correct: Correction = "holm"):
    data = select(results.measures, space=space, level=level, contexts=contexts,
                  measures=measures, layers=layers)
    data = data[data["cls"].isin(CLASSES)].dropna(subset=["value"])
    notes: list[str] = []
    models = models_with(data, model_names(results),
                         f"{LEVEL_LABELS.get(level, level)}-level values", notes)
    ideal = draws_ideal(ax, ideal, len(models) * len(measures), "one per model and measure")
    conds = conditions_of(data)
    with style():
        grid = PanelGrid(models, ideal=ideal, blocks=len(measures), sharey=sharey, ax=ax)
        for b, measure in enumerate(measures):
            for i, (model, pax) in enumerate(zip(models, grid.axes[b], strict=True)):
                sub = data[(data["model"] == model) & (data["measure"] == measure)]
                draw_boxes(pax, sub, x="condition", order=conds, hue="cls",
                           hue_order=list(CLASSES), palette=CLASS_PALETTE)
                pax.set_xticks(range(len(conds)), conds)
                pax.set_title(short_name(model))
                pax.set_xlabel("")
                pax.set_ylabel((ylabel or math_label(measure))
                               if grid.first_column(b, i) or not sharey else "")
            if ideal:
                draw_ideal_panel(grid.ideal[b], [measure])
                grid.ideal[b].set_xticks([0], [math_label(measure)])
        mark_classes(results, grid.axes, models, measures, conds, notes, level=level,
                      space=space, contexts=contexts, layers=layers, correct=correct)
        add_legend(grid.legend_on, class_handles())
        grid.finish(title + f", {LEVEL_LABELS.get(level, level)} level ({space} space)",
                    n_text(data, by_class=True))
    return with_notes(grid.fig, notes, return_notes)


@overload
def fig_affinity_by_class(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool = True,
                          return_notes: Literal[False] = False, correct: Correction = "holm"
        ) -> Figure: ...


@overload
def fig_affinity_by_class(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool = True,
                          return_notes: Literal[True], correct: Correction = "holm"
        ) -> tuple[Figure, list[str]]: ...


@fill_doc
def fig_affinity_by_class(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool = True,
                          return_notes: bool = False, correct: Correction = "holm"
        ) -> Figure | tuple[Figure, list[str]]:
    """Figure 4: the Affinities per compositionality class (I / PC / C) and condition.

    One row of panels per Affinity (A_Syn|WordsSyn, then A_Syn|Rand); boxes over
    the NCs of each class. NCs without a class (no gold score) are left out.
    {class_marks}

    No ``ax=``: the figure is at least two panels (one per Affinity).
    {return_notes}
    """
    return _class_figure(results, measures=list(AFFINITIES), level=level, space=space,
                         contexts=contexts, layers=layers, sharey=sharey, ideal=ideal,
                         title="Affinity by compositionality class", return_notes=return_notes,
                         correct=correct)


@overload
def fig_simr_syn_by_class(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool | None = None,
                          ax: Axes | None = None, return_notes: Literal[False] = False,
                          correct: Correction = "holm") -> Figure: ...


@overload
def fig_simr_syn_by_class(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool | None = None,
                          ax: Axes | None = None, return_notes: Literal[True],
                          correct: Correction = "holm"
        ) -> tuple[Figure, list[str]]: ...


@fill_doc
def fig_simr_syn_by_class(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool | None = None,
                          ax: Axes | None = None, return_notes: bool = False,
                          correct: Correction = "holm"
        ) -> Figure | tuple[Figure, list[str]]:
    """Figure 6: Sim_R|Syn per compositionality class and condition (ideal: ~1 for all).

    {class_marks}

    {ax_one_model}
    {return_notes}
    """
    return _class_figure(results, measures=["Sim_R|Syn"], level=level, space=space,
                         contexts=contexts, layers=layers, sharey=sharey, ideal=ideal,
                         title=f"{math_label('Sim_R|Syn')} by compositionality class", ax=ax,
                         return_notes=return_notes, correct=correct)


@overload
def fig_simr_wordssyn_by_class(results: Results, *, level: str = "nc", space: str = "raw",
                               contexts=None, layers=None, sharey: bool = True,
                               ideal: bool | None = None, ax: Axes | None = None,
                               return_notes: Literal[False] = False, correct: Correction = "holm"
        ) -> Figure: ...


@overload
def fig_simr_wordssyn_by_class(results: Results, *, level: str = "nc", space: str = "raw",
                               contexts=None, layers=None, sharey: bool = True,
                               ideal: bool | None = None, ax: Axes | None = None,
                               return_notes: Literal[True], correct: Correction = "holm"
        ) -> tuple[Figure, list[str]]: ...


@fill_doc
def fig_simr_wordssyn_by_class(results: Results, *, level: str = "nc", space: str = "raw",
                               contexts=None, layers=None, sharey: bool = True,
                               ideal: bool | None = None, ax: Axes | None = None,
                               return_notes: bool = False, correct: Correction = "holm"
        ) -> Figure | tuple[Figure, list[str]]:
    """Figure 7: Sim_R|WordsSyn per class and condition (ideal: high for C, low for I).

    {class_marks}

    {ax_one_model}
    {return_notes}
    """
    return _class_figure(results, measures=["Sim_R|WordsSyn"], level=level, space=space,
                         contexts=contexts, layers=layers, sharey=sharey, ideal=ideal,
                         title=f"{math_label('Sim_R|WordsSyn')} by compositionality class",
                         ax=ax,
                         return_notes=return_notes, correct=correct)


# ---------------------------------------------------------------------------------------------
# per-class tests marked on the figures by class (4, 6, 7, 9)

#: Height of one row of significance brackets above the boxes, as a fraction of a panel.
MARK_ROW = 0.12
_MARK_TICK = 0.02   # the bracket's legs, same units
_MARK_GID = "class-test"  # gid of every bracket and mark: "class-test;measure;condition;a;b"


def class_test_marks(results: Results, *, measures: list[str], level: str = "nc",
                     space: str = "raw", contexts=None, layers=None,
                     correct: Correction = "holm"
                     ) -> tuple[dict[tuple[str, str, str], list[tuple[str, str, float]]], str]:
    """The pairs of classes the figures by class mark: those whose Mann-Whitney test is
    significant in the per-class tests (:func:`ncprobe.ncimp.inference.class_tests`, same
    options: the correction's family is every pair that the per-class tests table holds, so
    a figure marks what the table stars; :func:`ncprobe.ncimp.inference.significant_pairs`).

    Returns:
        ``({(model, condition, measure): [(cls_a, cls_b, p_corrected), ...]}, note)``, the
        note saying which test and correction the marks follow.
    """
    tidy = class_tests(results, level=level, space=space, contexts=contexts, layers=layers,
                       correct=correct)
    marks = significant_pairs(tidy, measures)
    note = (f"brackets: pairs of classes that differ (two-sided Mann-Whitney U, "
            f"{CORRECTION_NAMES.get(correct, correct)} p <= {ALPHA:g} across the "
            f"{tidy.attrs.get('family_mw', 0)} pairs of the per-class tests table; "
            f"{STARS_NOTE}); no bracket: no such difference")
    return marks, note


def _class_x(condition_index: int, cls: str) -> float:
    """The x of a class's box (or point) within a condition: the hues dodged by 0.8 / 3."""
    return condition_index + (CLASSES.index(cls) - 1) * 0.8 / len(CLASSES)


def _bracket_rows(pairs: list[tuple[str, str, float]]) -> dict[tuple[str, str], int]:
    """The row of each pair's bracket: the neighbouring pairs (I-PC, PC-C) on the first, I-C
    on the first when neither of them is marked, else on the second."""
    outer = [(a, b) for a, b, _ in pairs if abs(CLASSES.index(a) - CLASSES.index(b)) > 1]
    inner = [(a, b) for a, b, _ in pairs if (a, b) not in outer]
    return {**{k: 0 for k in inner}, **{k: (1 if inner else 0) for k in outer}}


def _make_room(axes: list[Axes], rows: int) -> None:
    """Raise the top of the panels' shared y range so the data fill ``1 - rows * MARK_ROW``
    of it (in the axis' own scale: linear or symmetric-log)."""
    frac = rows * MARK_ROW + 0.01
    done: set[int] = set()
    for ax in axes:
        if id(ax) in done:
            continue
        done.update(id(s) for s in ax.get_shared_y_axes().get_siblings(ax))
        lo, hi = ax.get_ylim()
        scale = ax.yaxis.get_transform()
        (tlo,), (thi,) = scale.transform(np.array([[lo], [hi]]))
        top = scale.inverted().transform(np.array([[tlo + (thi - tlo) / (1.0 - frac)]]))
        ax.set_ylim(lo, float(top[0][0]))


def _mark_pairs(ax: Axes, conds: list[str], found: dict[str, list[tuple[str, str, float]]],
                rows: int, measure: str) -> None:
    """Brackets with :func:`ncprobe.significance.stars` over the marked pairs of each
    condition."""
    trans = ax.get_xaxis_transform()  # x in data, y in the panel's fraction
    base = 1.0 - rows * MARK_ROW + 0.005
    for i, cond in enumerate(conds):
        pairs = found.get(cond, [])
        for (a, b), row in _bracket_rows(pairs).items():
            p = next(p for x, y, p in pairs if (x, y) == (a, b))
            x0, x1 = _class_x(i, a) + 0.03, _class_x(i, b) - 0.03
            y = base + row * MARK_ROW
            gid = f"{_MARK_GID};{measure};{cond};{a};{b}"
            ax.plot([x0, x0, x1, x1], [y, y + _MARK_TICK, y + _MARK_TICK, y], transform=trans,
                    color="#333333", linewidth=0.6, clip_on=False, gid=gid)
            ax.text((x0 + x1) / 2, y + _MARK_TICK, stars(p), transform=trans, ha="center",
                    va="bottom", fontsize=FONT_SIZE, linespacing=1.0, gid=gid)


def mark_classes(results: Results, panels: list[list[Axes]], models: list[str],
                  measures: list[str], conds: list[str], notes: list[str], **options) -> None:
    """Mark, on each panel (``panels[block][model]``, one block per measure), the pairs of
    classes :func:`class_test_marks` finds, and say how in ``notes``."""
    marks, note = class_test_marks(results, measures=measures, **options)
    for measure, block in zip(measures, panels, strict=True):
        found = {model: {c: marks.get((model, c, measure), []) for c in conds}
                 for model in models}
        rows = max([max(_bracket_rows(p).values(), default=-1) + 1
                    for f in found.values() for p in f.values()], default=0)
        if rows:
            _make_room(block, rows)
            for model, ax in zip(models, block, strict=True):
                _mark_pairs(ax, conds, found[model], rows, measure)
    notes.append(note)


