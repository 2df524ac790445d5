"""Distributions of measures per condition: figures 1, 2, 3 and 5 (boxes over the NCs)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ...plots.theme import (
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
from ...schema import AFFINITIES, DISPLAY_SUBSTITUTIONS, LEVEL_LABELS, SCALED
from ..inference import model_names
from ..selection import select
from ._docs import fill_doc
from .conditions import condition_legend, condition_palette, conditions_of

if TYPE_CHECKING:  # pragma: no cover
    from ..runs import ResultsData as Results


def _distribution_figure(results: Results, *, measures: list[str], level: str, title: str,
                         ylabel: str, space: str, contexts, layers, sharey: bool,
                         ideal: bool | None, ax: Axes | None, return_notes: bool):
    data = select(results.measures, space=space, level=level, contexts=contexts,
                  measures=measures, layers=layers)
    notes: list[str] = []
    models = models_with(data.dropna(subset=["value"]), model_names(results),
                         f"{LEVEL_LABELS.get(level, level)}-level values", notes)
    ideal = draws_ideal(ax, ideal, len(models), "one per model")
    conds = conditions_of(data)
    with style():
        grid = PanelGrid(models, ideal=ideal, sharey=sharey, ax=ax)
        for i, (model, pax) in enumerate(zip(models, grid.axes[0], strict=True)):
            draw_boxes(pax, data[data["model"] == model], x="measure", order=measures,
                       hue="condition", hue_order=conds, palette=condition_palette(conds))
            pax.set_xticks(range(len(measures)), [math_label(m) for m in measures])
            pax.set_title(short_name(model))
            pax.set_xlabel("")
            pax.set_ylabel(ylabel if grid.first_column(0, i) or not sharey else "")
        if ideal:
            draw_ideal_panel(grid.ideal[0], measures)
            condition_legend(grid.fig, conds, loc="outside lower right")
            # one model leaves room below for the two legends side by side only if the classes
            # are listed in a column (figure legends at one side are not stacked)
            add_legend(grid.fig, class_handles(), title="ideal values: class",
                       loc="outside lower left", ncols=1 if len(models) == 1 else None)
        else:
            condition_legend(grid.legend_on, conds)
        grid.finish(title + f" ({space} space)", n_text(data))
    return with_notes(grid.fig, notes, return_notes)


@overload
def fig_sentence_cosines(results: Results, *, space: str = "raw", contexts=None, layers=None,
                         sharey: bool = False, ideal: bool | None = None,
                         ax: Axes | None = None, return_notes: Literal[False] = False
        ) -> Figure: ...


@overload
def fig_sentence_cosines(results: Results, *, space: str = "raw", contexts=None, layers=None,
                         sharey: bool = False, ideal: bool | None = None,
                         ax: Axes | None = None, return_notes: Literal[True]
        ) -> tuple[Figure, list[str]]: ...


@fill_doc
def fig_sentence_cosines(results: Results, *, space: str = "raw", contexts=None, layers=None,
                         sharey: bool = False, ideal: bool | None = None,
                         ax: Axes | None = None, return_notes: bool = False
        ) -> Figure | tuple[Figure, list[str]]:
    """Figure 1: distribution of the sentence-level cosine of each probe family, per condition.

    One box per probe and condition over the per-NC Sim values (``measures`` table,
    level ``sent``: naturalistic values are the NC's mean over S1-S3): P_Syn,
    P_Comp, P_WordsSyn, P_Rand. P_Comp is the study's: per sentence, the higher of
    the head-only and the modifier-only substitution. The ideal panel: P_Syn high
    for every NC, P_Comp and P_WordsSyn high only for compositional NCs, P_Rand low.
    Panels have their own y scale (``sharey=True`` for a common one): sentence
    cosines of static models sit near 1.

    {ax_one_model}
    {return_notes}
    """
    return _cosine_figure(results, "sent", space=space, contexts=contexts, layers=layers,
                          sharey=sharey, ideal=ideal, ax=ax, return_notes=return_notes)


@overload
def fig_nc_cosines(results: Results, *, space: str = "raw", contexts=None, layers=None,
                   sharey: bool = False, ideal: bool | None = None, ax: Axes | None = None,
                   return_notes: Literal[False] = False
        ) -> Figure: ...


@overload
def fig_nc_cosines(results: Results, *, space: str = "raw", contexts=None, layers=None,
                   sharey: bool = False, ideal: bool | None = None, ax: Axes | None = None,
                   return_notes: Literal[True]
        ) -> tuple[Figure, list[str]]: ...


@fill_doc
def fig_nc_cosines(results: Results, *, space: str = "raw", contexts=None, layers=None,
                   sharey: bool = False, ideal: bool | None = None, ax: Axes | None = None,
                   return_notes: bool = False
        ) -> Figure | tuple[Figure, list[str]]:
    """Figure 2: as figure 1 at NC level (the NC's own tokens, in context).

    That is :func:`fig_sentence_cosines` with the NC-level values. P_Comp is the
    per-sentence max of the head and modifier substitutions. Sentence-level-only
    models (API embedders) are left out with a note.

    {ax_one_model}
    {return_notes}
    """
    return _cosine_figure(results, "nc", space=space, contexts=contexts, layers=layers,
                          sharey=sharey, ideal=ideal, ax=ax, return_notes=return_notes)


def _cosine_figure(results: Results, level: str, **kw):
    """Figures 1 and 2: the Sim of each display probe at one level."""
    title = {"sent": "Sentence-level", "nc": "NC-level"}[level]
    return _distribution_figure(results, measures=list(DISPLAY_SUBSTITUTIONS), level=level,
                                title=f"{title} cosine similarity per probe",
                                ylabel="cosine (Sim)", **kw)


@overload
def fig_affinity(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                 layers=None, sharey: bool = True, ideal: bool | None = None,
                 ax: Axes | None = None, return_notes: Literal[False] = False
        ) -> Figure: ...


@overload
def fig_affinity(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                 layers=None, sharey: bool = True, ideal: bool | None = None,
                 ax: Axes | None = None, return_notes: Literal[True]
        ) -> tuple[Figure, list[str]]: ...


@fill_doc
def fig_affinity(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                 layers=None, sharey: bool = True, ideal: bool | None = None,
                 ax: Axes | None = None, return_notes: bool = False
        ) -> Figure | tuple[Figure, list[str]]:
    """Figure 3: distribution of the Affinities A_Syn|WordsSyn and A_Syn|Rand (Eq. 4) per NC.

    Ideal panel: A_Syn|Rand high for every NC; A_Syn|WordsSyn high for idiomatic
    NCs and about 0 for compositional ones. NC level by default.

    {ax_one_model}
    {return_notes}
    """
    return _distribution_figure(results, measures=list(AFFINITIES), level=level, space=space,
                                contexts=contexts, layers=layers, sharey=sharey, ideal=ideal,
                                title=f"Affinity, {LEVEL_LABELS.get(level, level)} level",
                                ylabel="Affinity", ax=ax, return_notes=return_notes)


@overload
def fig_scaled_similarity(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool | None = None,
                          ax: Axes | None = None, return_notes: Literal[False] = False
        ) -> Figure: ...


@overload
def fig_scaled_similarity(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool | None = None,
                          ax: Axes | None = None, return_notes: Literal[True]
        ) -> tuple[Figure, list[str]]: ...


@fill_doc
def fig_scaled_similarity(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool | None = None,
                          ax: Axes | None = None, return_notes: bool = False
        ) -> Figure | tuple[Figure, list[str]]:
    """Figure 5: distribution of the Scaled Similarities Sim_R|Syn and Sim_R|WordsSyn (Eq. 5).

    Ideal panel: Sim_R|Syn about 1 for every NC; Sim_R|WordsSyn high for
    compositional NCs and low for idiomatic ones. NC level by default.

    {ax_one_model}
    {return_notes}
    """
    return _distribution_figure(results, measures=list(SCALED), level=level, space=space,
                                contexts=contexts, layers=layers, sharey=sharey, ideal=ideal,
                                title=f"Scaled Similarity, {LEVEL_LABELS.get(level, level)} level",
                                ylabel="Scaled Similarity", ax=ax,
                                return_notes=return_notes)


