"""The correlogram: figure 10, Spearman rho between every pair of (model, measure) per-NC
value vectors (the numbers: :func:`ncprobe.ncimp.inference.correlogram_matrix`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, overload

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ...errors import NoData
from ...plots.theme import (
    FONT_SIZE,
    draws_ideal,
    math_label,
    models_with,
    n_text,
    new_figure,
    root_figure,
    short_name,
    style,
    suptitle,
    with_notes,
)
from ...schema import AFFINITIES, DISPLAY_SUBSTITUTIONS, LEVEL_LABELS, SCALED, Correction
from ...significance import ALPHA, SHORT_CORRECTION_NAMES
from .. import inference
from ..inference import model_names
from ..selection import select
from ._docs import fill_doc
from .conditions import conditions_of

if TYPE_CHECKING:  # pragma: no cover
    from ..runs import ResultsData as Results


#: Measures of the correlogram unless others are named.
CORRELOGRAM_MEASURES = DISPLAY_SUBSTITUTIONS + AFFINITIES + SCALED


def correlogram_matrix(results: Results, condition: str, *, level: str = "nc",
                       space: str = "raw", measures: Sequence[str] = CORRELOGRAM_MEASURES,
                       gold: bool = True, layers=None
                       ) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray]:
    """The variables, Spearman rho and p of one correlogram panel: those of
    :func:`ncprobe.ncimp.inference.correlogram_matrix`, with the figure's measures by default.

    Variables are (model, measure) pairs (and ``("", "gold")`` first when ``gold``), each
    a vector of per-NC values of one condition; rho and p are pairwise over the NCs
    both have (:func:`ncprobe.stats.spearman`).

    Returns:
        ``(variables, rho, p)``: a list of (model, measure) and two square arrays.
    """
    return inference.correlogram_matrix(results, condition, level=level, space=space,
                                        measures=measures, gold=gold, layers=layers)


@overload
def fig_correlogram(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                    measures=CORRELOGRAM_MEASURES, gold: bool = True, layers=None,
                    correct: Correction = "holm", ax: Axes | None = None,
                    return_notes: Literal[False] = False
        ) -> Figure: ...


@overload
def fig_correlogram(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                    measures=CORRELOGRAM_MEASURES, gold: bool = True, layers=None,
                    correct: Correction = "holm", ax: Axes | None = None,
                    return_notes: Literal[True]
        ) -> tuple[Figure, list[str]]: ...


@fill_doc
def fig_correlogram(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                    measures=CORRELOGRAM_MEASURES, gold: bool = True, layers=None,
                    correct: Correction = "holm", ax: Axes | None = None,
                    return_notes: bool = False
        ) -> Figure | tuple[Figure, list[str]]:
    """Figure 10: Spearman rho between every pair of (model, measure) per-NC value vectors.

    One panel per condition. Rows and columns are the measures of each model in
    turn (model names on the diagonal), with the gold compositionality score
    first when ``gold``. Only the lower triangle is drawn, and in it only the
    cells with p <= 0.05 after the correction ``correct`` (``holm`` by default,
    ``fdr_bh``, or ``none`` for the study's uncorrected blanks) over the family of
    every cell of the lower triangles of all panels (each pair once per panel); the
    others stay blank, and the colour bar's label says which correction, over how
    many pairs. The variables and values (uncorrected p) of a panel:
    :func:`correlogram_matrix`.

    ``ax=`` is accepted when the results hold one condition (one language, and
    ``contexts`` naming one context group): the panel is drawn into the given Axes,
    with its colour bar beside it, and the Axes' figure is returned.
    {return_notes}
    """
    conds_all = select(results.measures, space=space, level=level, contexts=contexts,
                       measures=list(measures), layers=layers)
    conds_all = conds_all.dropna(subset=["value"])
    if conds_all.empty:
        raise NoData(f"no {LEVEL_LABELS.get(level, level)}-level values for a correlogram")
    notes: list[str] = []
    models_with(conds_all, model_names(results),
                f"{LEVEL_LABELS.get(level, level)}-level values", notes)
    conds = conditions_of(conds_all)
    draws_ideal(ax, None, len(conds), "one per condition: " + ", ".join(conds))
    panels = [(c, *correlogram_matrix(results, c, level=level, space=space, measures=measures,
                                      gold=gold, layers=layers)) for c in conds]
    panels, blank = _corrected_panels(panels, correct)
    n = n_text(conds_all) + "; a cell: the NCs both variables have"
    if ax is not None:
        with style():
            cond, variables, rho, p = panels[0]
            mesh = _correlogram_panel(ax, variables, rho, p)
            _model_axis_names(ax, variables)
            ax.set_title(f"{cond}\n{n}")
            if mesh is not None:
                ax.figure.colorbar(mesh, ax=ax, aspect=30,
                                   label=f"Spearman ρ\n(blank: {blank})")
        return with_notes(root_figure(ax), notes, return_notes)
    nvar = max(len(v) for _, v, _, _ in panels) - 1
    same = all(v == panels[0][1] for _, v, _, _ in panels)
    ncols = min(len(panels), 2)
    nrows = math.ceil(len(panels) / ncols)
    side = max(1.6, 0.17 * nvar)
    label_room = 0.9
    width = ncols * side + (1 if same else ncols) * label_room + 1.0
    height = nrows * side + (1 if same else nrows) * label_room + 0.6
    with style():
        fig = new_figure(figsize=(width, height), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False)
        flat = axes.ravel()
        mesh = None
        # an odd number of panels leaves the grid's last cell empty (removed below)
        for k, (pax, (cond, variables, rho, p)) in enumerate(zip(flat[:len(panels)], panels,
                                                                 strict=True)):
            mesh = _correlogram_panel(pax, variables, rho, p)
            pax.set_title(cond)
            if same and len(panels) > 1:
                if k % ncols:
                    pax.tick_params(labelleft=False)
                if k + ncols < len(panels):
                    pax.tick_params(labelbottom=False)
            inner = same and len(panels) > 1
            _model_axis_names(pax, variables, left=not (inner and k % ncols),
                              bottom=not (inner and k + ncols < len(panels)))
        for pax in flat[len(panels):]:
            fig.delaxes(pax)
        if mesh is not None:
            fig.colorbar(mesh, ax=list(flat[:len(panels)]), shrink=min(0.8, 3.0 / height + 0.3),
                         aspect=30, label=f"Spearman ρ\n(blank: {blank})")
        suptitle(fig, f"Correlogram of models × measures, {LEVEL_LABELS.get(level, level)} "
                 f"level ({space} space)", n)
    return with_notes(fig, notes, return_notes)


def _corrected_panels(panels: list, correct: Correction) -> tuple[list, str]:
    """The panels with their p-values corrected as one family
    (:func:`ncprobe.ncimp.inference.correct_correlogram`), and what a blank cell means."""
    fixed, n = inference.correct_correlogram([p for _, _, _, p in panels], correct)
    out = [(cond, variables, rho, q)
           for (cond, variables, rho, _), q in zip(panels, fixed, strict=True)]
    # short: the colour bar's label is no longer than the colour bar
    if correct == "none":
        return out, f"p > {ALPHA}, uncorrected"
    return out, f"{SHORT_CORRECTION_NAMES[correct]} p > {ALPHA}, {n} pairs"


def _correlogram_panel(ax, variables, rho, p):
    """The lower triangle without the diagonal: rows are variables 1..n-1, columns 0..n-2."""
    n = len(variables)
    if n < 2:
        ax.text(0.5, 0.5, "fewer than two variables", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_xticks([])
        ax.set_yticks([])
        return None
    sub_rho, sub_p = rho[1:, :-1], p[1:, :-1]
    keep = np.tril(np.ones((n - 1, n - 1), dtype=bool)) & (sub_p <= ALPHA)
    shown = np.ma.masked_array(sub_rho, mask=~keep)
    mesh = ax.pcolormesh(np.arange(n), np.arange(n), shown, cmap="RdBu_r", vmin=-1, vmax=1,
                         edgecolors="white", linewidth=0.3)
    ax.set_xlim(0, n - 1)
    ax.set_ylim(n - 1, 0)
    ax.set_aspect("equal")
    ax.grid(False)
    ticks = [math_label(m) for _, m in variables]
    ax.set_xticks(np.arange(n - 1) + 0.5, ticks[:-1], rotation=90)
    ax.set_yticks(np.arange(n - 1) + 0.5, ticks[1:])
    ax.tick_params(length=0, pad=1)
    _model_blocks(ax, variables)
    return mesh


def _model_axis_names(ax, variables: list[tuple[str, str]], *, left: bool = True,
                      bottom: bool = True) -> None:
    """Each model's name on the axes, outside the matrix: beside its block of y tick labels
    (turned upright, ``left``) and under its block of x tick labels (``bottom``).

    The names are placed at draw time against the extents of the tick labels they group, so
    they never cover them, and the layout makes room for them. Row ``i`` is variable ``i + 1``,
    column ``j`` variable ``j`` (see :func:`_correlogram_panel`).
    """
    n = len(variables)
    if n < 2:
        return
    start = 0
    while start < n:
        model = variables[start][0]
        end = start
        while end < n and variables[end][0] == model:
            end += 1
        if model:
            spans = []
            if left:
                spans.append(("y", max(start, 1) - 1, end - 1))
            if bottom:
                spans.append(("x", start, min(end, n - 1)))
            for axis, lo, hi in spans:
                if lo >= hi:
                    continue
                on_y = axis == "y"
                ax.annotate(short_name(model), xy=(0.0, 0.5) if on_y else (0.5, 0.0),
                            xycoords=_tick_label_extent(ax, axis, lo, hi),
                            xytext=(-3, 0) if on_y else (0, -3), textcoords="offset points",
                            rotation=90 if on_y else 0, ha="right" if on_y else "center",
                            va="center" if on_y else "top", rotation_mode="default",
                            fontsize=FONT_SIZE, fontweight="bold", color="#333333",
                            annotation_clip=False)
        start = end


def _tick_label_extent(ax, axis: str, lo: int, hi: int):
    """A function of the renderer: the box of tick labels ``lo:hi`` of ``axis`` (display
    coordinates) along the axis, and of all its tick labels across it (so that a block's name
    clears the longest label of every block), for an annotation placed against them."""
    from matplotlib.transforms import Bbox

    def extent(renderer):
        labels = [t for t in (ax.get_yticklabels() if axis == "y" else ax.get_xticklabels())
                  if t.get_text()]
        block = [t.get_window_extent(renderer) for t in labels[lo:hi]]
        if not block:
            return ax.get_window_extent(renderer)
        both = Bbox.union(block)
        every = Bbox.union([t.get_window_extent(renderer) for t in labels])
        if axis == "y":
            return Bbox.from_extents(every.x0, both.y0, every.x1, both.y1)
        return Bbox.from_extents(both.x0, every.y0, both.x1, every.y1)
    return extent


def _model_blocks(ax, variables: list[tuple[str, str]]) -> None:
    """Lines between the models' blocks and each model's name in the empty upper triangle.

    Variable ``a`` is row ``a - 1`` and column ``a`` of the drawn triangle.
    """
    start = 0
    while start < len(variables):
        model = variables[start][0]
        end = start
        while end < len(variables) and variables[end][0] == model:
            end += 1
        if start > 0:
            ax.axhline(start - 1, color="#555555", linewidth=0.6)
            ax.axvline(start, color="#555555", linewidth=0.6)
        if model:
            row = max(start - 1, 0)
            ax.text(row + 1.15, row + 0.5, short_name(model), va="center", ha="left",
                    fontsize=FONT_SIZE, color="#333333")
        start = end


