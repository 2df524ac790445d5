"""The ten figures of the study (SPEC §4), one function each, from a Results.

Every figure function (named ``fig_*``, not to be taken for the formulas of
:mod:`ncprobe.measures`) takes a Results holding one or many models and one or
both languages, and returns a :class:`matplotlib.figure.Figure` (its panels are
``fig.axes``). :data:`FIGURES` maps the figure names to the functions, in
figure order. Nothing is shown or saved here; :func:`ncprobe.report.write_report`
saves them.

The figures are built without pyplot: nothing is registered in pyplot's list of
figures and the caller's backend is never changed; they are drawn with Agg. In
Jupyter, a figure function as the last line of a cell shows its figure once; in
a script, ``fig.savefig(...)``.

Layout and style, shared by all figures:

* one panel per model, side by side (wrapped after :data:`MAX_COLUMNS` models),
  with the model's name as the panel title;
* the conditions (language x context) as colours from :data:`CONDITION_PALETTE`:
  English blue, Portuguese orange, naturalistic darker, neutral lighter;
* the compositionality classes I / PC / C as colours from :data:`CLASS_PALETTE`
  (green, yellow, blue) in the figures by class;
* a schematic "ideal values" panel, first, in the figures where the study
  draws the expected pattern (:data:`IDEAL`): the shape of the values a model
  that captured idiomaticity would give, by class, on a low-high scale with no
  numbers;
* only the ``raw`` vector space by default (``space="standardised"`` for the
  z-scored one), one layer view per model (see :mod:`ncprobe.selection`), the
  naturalistic and neutral contexts (``contexts="nat,neut,neut-pl"`` adds the
  plural neutral sentences).

A figure that is one panel (one model and no ideal panel; one condition for the
correlogram) can be drawn into an Axes of the caller's own figure: ``ax=`` (as in
seaborn: the function draws into it and returns its figure, with the legend inside
the Axes and no figure title). Each function's docstring says whether it takes ``ax``.

A model without values for a figure (e.g. a sentence-level-only API model in an
NC-level figure) is left out, with a note saying so: ``return_notes=True`` returns
``(fig, notes)``, the notes a list of strings. A figure with no values at all
raises :class:`NoData`.
"""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Callable

import matplotlib
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.patches import Patch

from .errors import NcprobeError, UsageError
from .schema import (
    AFFINITIES,
    ALL_CLASSES,
    CLASS_LABELS,
    CLASSES,
    CONDITIONS,
    CORRELOGRAM_TICKS,
    DISPLAY_PROBES,
    LANGS,
    LEVEL_LABELS,
    MEASURE_LABELS,
    PANEL_TICKS,
    PAPER_FIGURES,
    RATIO,
    SCALED,
    condition_label,
    condition_parts,
)
from .selection import model_order, select
from .stats import ALPHA, spearman

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.typing import RcKeyType  # matplotlib >= 3.9: the rc names, as a Literal

#: Colour of each condition (:data:`ncprobe.schema.CONDITIONS`, in that order): English blue
#: (EN-Nat, EN-Neut, EN-Neut-pl), Portuguese orange (PT-...); naturalistic darker, neutral
#: lighter, plural neutral lightest.
CONDITION_PALETTE = dict(zip(CONDITIONS, ("#1f5aa6", "#86b6e3", "#c6dcf1",
                                          "#d45f0a", "#f6ad62", "#fbd7ad"), strict=True))
#: Colour of each compositionality class (I, PC, C): idiomatic green, partly compositional
#: yellow, compositional blue.
CLASS_PALETTE = dict(zip(CLASSES, ("#3c9d3c", "#e9c31f", "#3a6fc2"), strict=True))

#: The pattern a model that captured idiomaticity would show (SPEC §1 and §3), per measure and
#: class, on a schematic 0 (low) - 1 (high) scale; the ratio's scale is 1 = as compositional.
IDEAL = {
    "syn": {"I": 0.9, "PC": 0.9, "C": 0.9},            # high for every NC
    "comp": {"I": 0.2, "PC": 0.55, "C": 0.9},          # high only for compositional NCs
    "wordssyn": {"I": 0.2, "PC": 0.55, "C": 0.9},      # high only for compositional NCs
    "rand": {"I": 0.08, "PC": 0.08, "C": 0.08},        # the floor
    "A_Syn|WordsSyn": {"I": 0.75, "PC": 0.4, "C": 0.02},  # high for idiomatic, ~0 for C
    "A_Syn|Rand": {"I": 0.8, "PC": 0.8, "C": 0.8},     # high for every NC
    "Sim_R|Syn": {"I": 0.95, "PC": 0.95, "C": 0.95},   # ~1 for every NC
    "Sim_R|WordsSyn": {"I": 0.1, "PC": 0.5, "C": 0.9},  # high for C, low for I
    RATIO: {"I": 3.0, "PC": 1.8, "C": 1.0},            # far above 1 for I, ~1 for C
}

#: Model panels per row before the figure wraps.
MAX_COLUMNS = 4
PANEL_WIDTH = 2.3     # inches, one model panel
PANEL_HEIGHT = 2.2
IDEAL_WIDTH = 1.45
FONT_SIZE = 8         # points at the saved size; nothing is drawn smaller
_RC: dict[RcKeyType, Any] = {
    "font.size": FONT_SIZE, "axes.titlesize": FONT_SIZE + 1, "axes.labelsize": FONT_SIZE,
    "xtick.labelsize": FONT_SIZE, "ytick.labelsize": FONT_SIZE, "legend.fontsize": FONT_SIZE,
    "legend.title_fontsize": FONT_SIZE, "figure.titlesize": FONT_SIZE + 2,
    "axes.titleweight": "normal", "savefig.dpi": 300, "figure.dpi": 100,
}


class NoData(NcprobeError):
    """The results hold nothing that a figure or table shows."""


# ---------------------------------------------------------------------------------------------
# shared helpers


@contextmanager
def _style():
    import seaborn as sns

    with sns.axes_style("whitegrid", {"grid.linewidth": 0.5, "grid.color": "#dddddd"}), \
            matplotlib.rc_context(_RC):
        yield


def _new_figure(**kwargs) -> Figure:
    """A Figure of its own, unknown to pyplot, drawn with Agg whatever the caller's backend."""
    _inline_display()
    fig = Figure(**kwargs)
    FigureCanvasAgg(fig)
    return fig


def _inline_display() -> None:
    """In a Jupyter kernel with matplotlib's inline backend, make sure a Figure shown as a
    cell's value is drawn.

    ipykernel names the inline backend (``MPLBACKEND``) but loads it, and with it the
    display of figures, only when pyplot first needs it: a Figure made without pyplot
    would otherwise show as text. The backend that is named is loaded, as pyplot would
    load it; nothing is loaded or changed anywhere else.
    """
    if "IPython" not in sys.modules:
        return
    try:
        backend = matplotlib.get_backend(auto_select=False)
    except TypeError:  # matplotlib < 3.10
        backend = matplotlib.rcParams._get("backend")
    if backend in ("inline", "module://matplotlib_inline.backend_inline"):
        import matplotlib_inline.backend_inline  # noqa: F401  (sets up the display on import)


def _root_figure(ax: Axes) -> Figure:
    try:
        fig = ax.get_figure(root=True)
    except TypeError:  # matplotlib < 3.10: a subfigure's .figure is the root figure
        fig = ax.figure.figure
    if fig is None:
        raise UsageError("ax: the Axes is on no figure; draw on one made with "
                         "plt.subplots() or Figure.add_subplot()")
    return fig


def _one_panel(ax: Axes | None, ideal: bool | None, panels: int, what: str) -> bool:
    """Whether to draw the ideal panel; refuses an ``ax`` for a figure of several panels."""
    if ax is None:
        return True if ideal is None else bool(ideal)
    if not isinstance(ax, Axes):
        raise UsageError(f"ax={ax!r}: give a matplotlib Axes, or leave it out")
    if ideal:
        raise UsageError("ax= draws one panel, without the ideal values panel: leave out "
                         "ideal=True, or leave out ax to draw the whole figure")
    if panels != 1:
        raise UsageError(f"ax= draws one panel, and these results make {panels} ({what}): "
                         "give results of one model (and one condition for the correlogram), "
                         "or leave out ax to draw the whole figure")
    return False


def _returned(fig: Figure, notes: list[str], return_notes: bool):
    return (fig, list(notes)) if return_notes else fig


def _short(model: str) -> str:
    """A model's name for display: the last part of a HuggingFace id or path."""
    return str(model).rstrip("/").rsplit("/", 1)[-1]


def _label(measure: str) -> str:
    return MEASURE_LABELS.get(measure, measure)


def _models_with(data: pd.DataFrame, all_models: list[str], what: str, notes: list[str]
                 ) -> list[str]:
    have = set(data["model"]) if len(data) else set()
    shown = [m for m in all_models if m in have]
    missing = [m for m in all_models if m not in have]
    if missing:
        notes.append(f"not shown (no {what}): {', '.join(missing)}")
    if not shown:
        raise NoData(f"no {what} in these results" + (f" (models: {', '.join(all_models)})"
                                                       if all_models else ""))
    return shown


def _all_models(results) -> list[str]:
    return model_order(results.measures, results.sentences, results.correlations)


class _Grid:
    """One panel per model (wrapped), optionally one block of rows per measure, and an ideal
    panel in the first column of each block."""

    def __init__(self, models: list[str], *, ideal: bool, blocks: int = 1, sharey: bool = True,
                 panel_width: float = PANEL_WIDTH, panel_height: float = PANEL_HEIGHT,
                 legend_rows: int = 1, ax: Axes | None = None):
        self.models = models
        self.ax = ax    # the caller's Axes: the one panel (checked by _one_panel)
        if ax is not None:
            self.fig = _root_figure(ax)
            self.axes: list[list] = [[ax]]
            self.ideal: list = []
            return
        ncols = min(len(models), MAX_COLUMNS)
        self.model_rows = math.ceil(len(models) / ncols)
        nrows = blocks * self.model_rows
        widths = ([IDEAL_WIDTH] if ideal else []) + [panel_width] * ncols
        height = panel_height * nrows + 0.45 + 0.22 * legend_rows
        self.fig = _new_figure(figsize=(sum(widths) + 0.4, height), layout="constrained")
        engine = self.fig.get_layout_engine()
        if not isinstance(engine, ConstrainedLayoutEngine):  # made with layout="constrained"
            raise TypeError(f"expected a constrained layout engine, got {engine!r}")
        engine.set(w_pad=0.04, h_pad=0.04, wspace=0.03, hspace=0.04)
        gs = self.fig.add_gridspec(nrows, len(widths), width_ratios=widths)
        off = 1 if ideal else 0
        self.axes = []      # [block][model index]
        self.ideal = []     # [block]
        for b in range(blocks):
            row0 = b * self.model_rows
            first = None
            panels = []
            for i, _ in enumerate(models):
                r, c = row0 + i // ncols, off + i % ncols
                ax = self.fig.add_subplot(gs[r, c], sharey=first if sharey else None)
                if first is None:
                    first = ax
                if sharey and c != off:
                    ax.tick_params(labelleft=False)
                panels.append(ax)
            self.axes.append(panels)
            if ideal:
                self.ideal.append(self.fig.add_subplot(gs[row0, 0]))

    def first_column(self, b: int, i: int) -> bool:
        return i % min(len(self.models), MAX_COLUMNS) == 0

    @property
    def legend_on(self):
        """Where the legends go: the figure, or the caller's Axes."""
        return self.fig if self.ax is None else self.ax

    def finish(self, title: str) -> None:
        """The figure's title (not on the caller's figure) and readable tick labels."""
        if self.ax is None:
            _finish(self.fig, title)
        else:
            _declutter(self.fig, [self.ax])


def _legend(where, handles: list, *, title: str | None = None,
            loc: str = "outside lower center", ncols: int | None = None) -> None:
    """A legend below the panels of a figure, or inside an Axes (``where``)."""
    if not handles:
        return
    if isinstance(where, Axes):  # one column, unless a grid is asked for (the conditions)
        where.legend(handles=handles, loc="best", ncols=ncols or 1, title=title,
                     handlelength=1.2, columnspacing=1.0, handletextpad=0.4)
        return
    where.legend(handles=handles, loc=loc, ncols=ncols or len(handles), frameon=False,
                 title=title, handlelength=1.2, columnspacing=1.0, handletextpad=0.4,
                 borderaxespad=0.2)


def _condition_legend(where, conditions: list[str], *, loc: str = "outside lower center"
                      ) -> None:
    """Conditions in a grid: one row per language, one column per context."""
    parts = [condition_parts(c) for c in conditions]
    langs = [lang for lang in LANGS if any(lg == lang for lg, _ in parts)]
    groups = list(dict.fromkeys(group for _, group in parts))
    # legends fill column by column: list the entries context-major so rows are languages
    handles = []
    for group in groups:
        for lang in langs:
            name = condition_label(lang, group)
            handles.append(Patch(facecolor=CONDITION_PALETTE[name], edgecolor="#444444",
                                 linewidth=0.5, label=name) if name in conditions
                           else Patch(visible=False, label=""))
    _legend(where, handles, title="condition", loc=loc, ncols=len(groups))


def _class_handles(prefix: str = "") -> list:
    return [Patch(facecolor=CLASS_PALETTE[c], edgecolor="#444444", linewidth=0.5,
                  label=prefix + CLASS_LABELS[c]) for c in CLASSES]


def _ideal_panel(ax, measures: list[str], *, ratio: bool = False) -> None:
    """Schematic bars of :data:`IDEAL`, one group per measure, one bar per class."""
    width = 0.26
    for i, m in enumerate(measures):
        for j, cls in enumerate(CLASSES):
            ax.bar(i + (j - 1) * width, IDEAL[m][cls], width=width * 0.95,
                   color=CLASS_PALETTE[cls], edgecolor="#444444", linewidth=0.5)
    ax.set_xticks(range(len(measures)), [_short_measure(m, measures) for m in measures])
    ax.set_xlim(-0.6, len(measures) - 0.4)
    if ratio:
        ax.set_ylim(0, 3.4)
        ax.axhline(1.0, color="#444444", linewidth=0.8, linestyle="--", zorder=1.5)
        ax.set_yticks([0, 1, 3], ["0", "1", "high"])
    else:
        ax.set_ylim(0, 1.08)
        ax.set_yticks([0, 1], ["low", "high"])
    ax.set_title("ideal values")
    ax.grid(False, axis="x")
    ax.set_xlabel("")
    ax.set_ylabel("")


def _short_measure(measure: str, shown: list[str]) -> str:
    """Tick label of a measure (:data:`ncprobe.schema.PANEL_TICKS`): the part that differs
    among the measures of a panel; an Affinity or Scaled Similarity shown beside measures of
    another kind keeps its whole name."""
    for kind in (AFFINITIES, SCALED):
        if measure in kind and not all(m in kind for m in shown):
            return _label(measure)
    return PANEL_TICKS.get(measure, _label(measure))


def _declutter(fig, axes=None) -> None:
    """Rotate the x tick labels of the panels (``axes``, or all of ``fig``'s) where they would
    overlap (30 degrees)."""
    fig.draw_without_rendering()  # lays the figure out: text extents, no pixels
    for ax in fig.axes if axes is None else axes:
        labels = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        if len(labels) < 2 or any(t.get_rotation() for t in labels):
            continue
        # the extents at the layout just drawn (the renderer of that draw)
        boxes = sorted((t.get_window_extent() for t in labels), key=lambda b: b.x0)
        if any(a.x1 + 3 > b.x0 for a, b in pairwise(boxes)):
            for t in labels:
                t.set_rotation(30)
                t.set_ha("right")
                t.set_rotation_mode("anchor")


def _finish(fig, title: str) -> None:
    fig.suptitle(title)
    _declutter(fig)


def _boxes(ax, sub: pd.DataFrame, *, x: str, order: list[str], hue: str, hue_order: list[str],
           palette: dict) -> None:
    import seaborn as sns

    sub = sub.dropna(subset=["value"])
    if sub.empty:
        return
    sub = sub.assign(**{x: sub[x].astype(str), hue: sub[hue].astype(str)})
    sns.boxplot(data=sub, x=x, y="value", hue=hue, order=order, hue_order=hue_order,
                palette=palette, saturation=1, ax=ax, legend=False, width=0.8, gap=0.12,
                linewidth=0.6, fliersize=1.2, linecolor="#333333",
                flierprops={"marker": "o", "markeredgewidth": 0.3, "alpha": 0.6})


# ---------------------------------------------------------------------------------------------
# distributions of measures per condition (figures 1, 2, 3, 5)


def _distribution_figure(results, *, measures: list[str], level: str, title: str, ylabel: str,
                         space: str, contexts, layers, sharey: bool, ideal: bool | None,
                         ax: Axes | None, return_notes: bool):
    data = select(results.measures, space=space, level=level, contexts=contexts,
                  measures=measures, layers=layers)
    notes: list[str] = []
    models = _models_with(data.dropna(subset=["value"]), _all_models(results),
                          f"{LEVEL_LABELS.get(level, level)}-level values", notes)
    ideal = _one_panel(ax, ideal, len(models), "one per model")
    conds = [c for c in CONDITION_PALETTE if c in set(data["condition"].astype(str))]
    with _style():
        grid = _Grid(models, ideal=ideal, sharey=sharey, ax=ax)
        for i, (model, pax) in enumerate(zip(models, grid.axes[0], strict=True)):
            _boxes(pax, data[data["model"] == model], x="measure", order=measures,
                   hue="condition", hue_order=conds, palette=CONDITION_PALETTE)
            pax.set_xticks(range(len(measures)), [_short_measure(m, measures) for m in measures])
            pax.set_title(_short(model))
            pax.set_xlabel("")
            pax.set_ylabel(ylabel if grid.first_column(0, i) or not sharey else "")
        if ideal:
            _ideal_panel(grid.ideal[0], measures)
            _condition_legend(grid.fig, conds, loc="outside lower right")
            _legend(grid.fig, _class_handles(), title="ideal values: class",
                    loc="outside lower left")
        else:
            _condition_legend(grid.legend_on, conds)
        grid.finish(title + f" ({space} space)")
    return _returned(grid.fig, notes, return_notes)


def fig_sentence_cosines(results, *, space: str = "raw", contexts=None, layers=None,
                         sharey: bool = False, ideal: bool | None = None,
                         ax: Axes | None = None, return_notes: bool = False):
    """Figure 1: distribution of the sentence-level cosine of each probe family, per condition.

    One box per probe and condition over the per-NC Sim values (``measures`` table,
    level ``sent``: naturalistic values are the NC's mean over S1-S3): P_Syn,
    P_Comp, P_WordsSyn, P_Rand. P_Comp is the study's: per sentence, the higher of
    the head-only and the modifier-only substitution. The ideal panel: P_Syn high
    for every NC, P_Comp and P_WordsSyn high only for compositional NCs, P_Rand low.
    Panels have their own y scale (``sharey=True`` for a common one): sentence
    cosines of static models sit near 1.

    ``ax=`` is accepted when the results hold one model with values for this figure:
    its panel is drawn into the given Axes (no ideal panel), whose figure is returned.
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _cosine_figure(results, "sent", space=space, contexts=contexts, layers=layers,
                          sharey=sharey, ideal=ideal, ax=ax, return_notes=return_notes)


def fig_nc_cosines(results, *, space: str = "raw", contexts=None, layers=None,
                   sharey: bool = False, ideal: bool | None = None, ax: Axes | None = None,
                   return_notes: bool = False):
    """Figure 2: as sentence_cosines at NC level (the NC's own tokens, in context).

    That is :func:`fig_sentence_cosines` with the NC-level values. P_Comp is the
    per-sentence max of the head and modifier substitutions. Sentence-level-only
    models (API embedders) are left out with a note.

    ``ax=`` is accepted when the results hold one model with values for this figure:
    its panel is drawn into the given Axes (no ideal panel), whose figure is returned.
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _cosine_figure(results, "nc", space=space, contexts=contexts, layers=layers,
                          sharey=sharey, ideal=ideal, ax=ax, return_notes=return_notes)


def _cosine_figure(results, level: str, **kw):
    """Figures 1 and 2: the Sim of each display probe at one level."""
    title = {"sent": "Sentence-level", "nc": "NC-level"}[level]
    return _distribution_figure(results, measures=list(DISPLAY_PROBES), level=level,
                                title=f"{title} cosine similarity per probe",
                                ylabel="cosine (Sim)", **kw)


def fig_affinity(results, *, level: str = "nc", space: str = "raw", contexts=None,
                 layers=None, sharey: bool = True, ideal: bool | None = None,
                 ax: Axes | None = None, return_notes: bool = False):
    """Figure 3: distribution of the Affinities A_Syn|WordsSyn and A_Syn|Rand (Eq. 4) per NC.

    Ideal panel: A_Syn|Rand high for every NC; A_Syn|WordsSyn high for idiomatic
    NCs and about 0 for compositional ones. NC level by default.

    ``ax=`` is accepted when the results hold one model with values for this figure:
    its panel is drawn into the given Axes (no ideal panel), whose figure is returned.
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _distribution_figure(results, measures=list(AFFINITIES), level=level, space=space,
                                contexts=contexts, layers=layers, sharey=sharey, ideal=ideal,
                                title=f"Affinity, {LEVEL_LABELS.get(level, level)} level",
                                ylabel="Affinity A_Syn|·", ax=ax, return_notes=return_notes)


def fig_scaled_similarity(results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool | None = None,
                          ax: Axes | None = None, return_notes: bool = False):
    """Figure 5: distribution of the Scaled Similarities Sim_R|Syn and Sim_R|WordsSyn (Eq. 5).

    Ideal panel: Sim_R|Syn about 1 for every NC; Sim_R|WordsSyn high for
    compositional NCs and low for idiomatic ones. NC level by default.

    ``ax=`` is accepted when the results hold one model with values for this figure:
    its panel is drawn into the given Axes (no ideal panel), whose figure is returned.
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _distribution_figure(results, measures=list(SCALED), level=level, space=space,
                                contexts=contexts, layers=layers, sharey=sharey, ideal=ideal,
                                title=f"Scaled Similarity, {LEVEL_LABELS.get(level, level)} level",
                                ylabel="Scaled Similarity Sim_R|·", ax=ax,
                                return_notes=return_notes)


# ---------------------------------------------------------------------------------------------
# by compositionality class (figures 4, 6, 7)


def _class_figure(results, *, measures: list[str], level: str, title: str, space: str,
                  contexts, layers, sharey: bool, ideal: bool | None, ax: Axes | None = None,
                  return_notes: bool = False, ylabel: str | None = None):
    data = select(results.measures, space=space, level=level, contexts=contexts,
                  measures=measures, layers=layers)
    data = data[data["cls"].isin(CLASSES)].dropna(subset=["value"])
    notes: list[str] = []
    models = _models_with(data, _all_models(results),
                          f"{LEVEL_LABELS.get(level, level)}-level values", notes)
    ideal = _one_panel(ax, ideal, len(models) * len(measures), "one per model and measure")
    conds = [c for c in CONDITION_PALETTE if c in set(data["condition"].astype(str))]
    with _style():
        grid = _Grid(models, ideal=ideal, blocks=len(measures), sharey=sharey, ax=ax)
        for b, measure in enumerate(measures):
            for i, (model, pax) in enumerate(zip(models, grid.axes[b], strict=True)):
                sub = data[(data["model"] == model) & (data["measure"] == measure)]
                _boxes(pax, sub, x="condition", order=conds, hue="cls",
                       hue_order=list(CLASSES), palette=CLASS_PALETTE)
                pax.set_xticks(range(len(conds)), conds)
                pax.set_title(_short(model))
                pax.set_xlabel("")
                pax.set_ylabel((ylabel or _label(measure))
                               if grid.first_column(b, i) or not sharey else "")
            if ideal:
                _ideal_panel(grid.ideal[b], [measure])
                grid.ideal[b].set_xticks([0], [_label(measure)])
        _legend(grid.legend_on, _class_handles())
        grid.finish(title + f", {LEVEL_LABELS.get(level, level)} level ({space} space)")
    return _returned(grid.fig, notes, return_notes)


def fig_affinity_by_class(results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool = True,
                          return_notes: bool = False):
    """Figure 4: the Affinities per compositionality class (I / PC / C) and condition.

    One row of panels per Affinity (A_Syn|WordsSyn, then A_Syn|Rand); boxes over
    the NCs of each class. NCs without a class (no gold score) are left out.

    No ``ax=``: the figure is at least two panels (one per Affinity).
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _class_figure(results, measures=list(AFFINITIES), level=level, space=space,
                         contexts=contexts, layers=layers, sharey=sharey, ideal=ideal,
                         title="Affinity by compositionality class", return_notes=return_notes)


def fig_simr_syn_by_class(results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool | None = None,
                          ax: Axes | None = None, return_notes: bool = False):
    """Figure 6: Sim_R|Syn per compositionality class and condition (ideal: ~1 for all).

    ``ax=`` is accepted when the results hold one model with values for this figure:
    its panel is drawn into the given Axes (no ideal panel), whose figure is returned.
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _class_figure(results, measures=["Sim_R|Syn"], level=level, space=space,
                         contexts=contexts, layers=layers, sharey=sharey, ideal=ideal,
                         title="Sim_R|Syn by compositionality class", ax=ax,
                         return_notes=return_notes)


def fig_simr_wordssyn_by_class(results, *, level: str = "nc", space: str = "raw",
                               contexts=None, layers=None, sharey: bool = True,
                               ideal: bool | None = None, ax: Axes | None = None,
                               return_notes: bool = False):
    """Figure 7: Sim_R|WordsSyn per class and condition (ideal: high for C, low for I).

    ``ax=`` is accepted when the results hold one model with values for this figure:
    its panel is drawn into the given Axes (no ideal panel), whose figure is returned.
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _class_figure(results, measures=["Sim_R|WordsSyn"], level=level, space=space,
                         contexts=contexts, layers=layers, sharey=sharey, ideal=ideal,
                         title="Sim_R|WordsSyn by compositionality class", ax=ax,
                         return_notes=return_notes)


# ---------------------------------------------------------------------------------------------
# the ratio, mean ± sd (figures 8, 9)


def _errorbars(ax, rows: pd.DataFrame, *, x_order: list[str], x: str, hue: str,
               hue_order: list[str], palette: dict) -> None:
    """One point (mean) with an error bar (± sd) per (x, hue) row, hues dodged within x."""
    n = len(hue_order)
    step = 0.8 / n
    for j, h in enumerate(hue_order):
        sub = rows[rows[hue].astype(str) == h]
        sub = sub[sub[x].astype(str).isin(x_order) & sub["mean"].notna()]
        if sub.empty:
            continue
        pos = [x_order.index(str(v)) + (j - (n - 1) / 2) * step for v in sub[x]]
        sd = sub["sd"].fillna(0.0).to_numpy()
        colour = palette[h]
        ax.errorbar(pos, sub["mean"].to_numpy(), yerr=sd, fmt="o", markersize=4.5,
                    color=colour, ecolor=_darker(colour), elinewidth=1.0, capsize=2.5,
                    markeredgecolor="#333333", markeredgewidth=0.5, label=h)


def _darker(colour: str, f: float = 0.75):
    return tuple(c * f for c in to_rgb(colour))


def _ratio_scale(axes, rows: pd.DataFrame) -> None:
    """Symmetric-log y scale when mean ± sd spans far beyond the ratio's natural range."""
    lo = float((rows["mean"] - rows["sd"].fillna(0)).min())
    hi = float((rows["mean"] + rows["sd"].fillna(0)).max())
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


def fig_ratio(results, *, level: str = "nc", space: str = "raw", contexts=None, layers=None,
              ax: Axes | None = None, return_notes: bool = False):
    """Figure 8: the ratio Sim_R|Syn / Sim_R|WordsSyn, mean ± sd over the NCs, per model and
    condition (``distributions`` table, all NCs).

    The sd is large where some NCs have Sim_R|WordsSyn near 0; the y axis turns
    symmetric-logarithmic (linear within ±1) when mean ± sd reaches beyond ±12.
    The dashed line is 1 (as similar to the gold synonym as to the word synonyms).

    ``ax=`` is accepted when the results hold one model with values for this figure:
    its panel is drawn into the given Axes, whose figure is returned.
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _ratio_figure(results, by_class=False, level=level, space=space, contexts=contexts,
                         layers=layers, ideal=False, ax=ax, return_notes=return_notes)


def fig_ratio_by_class(results, *, level: str = "nc", space: str = "raw", contexts=None,
                       layers=None, ideal: bool | None = None, ax: Axes | None = None,
                       return_notes: bool = False):
    """Figure 9: the ratio Sim_R|Syn / Sim_R|WordsSyn, mean ± sd per class and condition.

    Ideal panel: far above 1 for idiomatic NCs (the gold synonym keeps the
    meaning, the word synonyms do not), about 1 for compositional ones.

    ``ax=`` is accepted when the results hold one model with values for this figure:
    its panel is drawn into the given Axes (no ideal panel), whose figure is returned.
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _ratio_figure(results, by_class=True, level=level, space=space, contexts=contexts,
                         layers=layers, ideal=ideal, ax=ax, return_notes=return_notes)


def _ratio_figure(results, *, by_class: bool, level, space, contexts, layers,
                  ideal: bool | None, ax: Axes | None, return_notes: bool):
    """Figures 8 and 9: mean ± sd of the ratio per condition, and per class if ``by_class``."""
    dist = select(results.distributions, space=space, level=level, contexts=contexts,
                  measures=[RATIO], layers=layers)
    rows = dist[dist["cls"].isin(list(CLASSES) if by_class else [ALL_CLASSES])
                & dist["mean"].notna()]
    notes: list[str] = []
    models = _models_with(rows, _all_models(results),
                          f"{LEVEL_LABELS.get(level, level)}-level ratio", notes)
    ideal = _one_panel(ax, ideal, len(models), "one per model")
    conds = [c for c in CONDITION_PALETTE if c in set(rows["condition"].astype(str))]
    if by_class:
        hue, hue_order, palette = "cls", list(CLASSES), CLASS_PALETTE
    else:
        hue, hue_order, palette = "condition", conds, CONDITION_PALETTE
    with _style():
        grid = (_Grid(models, ideal=ideal, ax=ax) if by_class else
                _Grid(models, ideal=False, ax=ax,
                      panel_width=min(PANEL_WIDTH, 0.9 + 0.45 * len(conds))))
        for i, (model, pax) in enumerate(zip(models, grid.axes[0], strict=True)):
            _errorbars(pax, rows[rows["model"] == model], x_order=conds, x="condition", hue=hue,
                       hue_order=hue_order, palette=palette)
            pax.set_xticks(range(len(conds)), conds)
            pax.set_xlim(-0.6, len(conds) - 0.4)
            pax.set_title(_short(model))
            pax.set_ylabel(f"{_label(RATIO)}\n(mean ± sd)" if grid.first_column(0, i) else "")
        _ratio_scale(grid.axes[0], rows)
        if by_class:
            if ideal:
                _ideal_panel(grid.ideal[0], [RATIO], ratio=True)
                grid.ideal[0].set_xticks([0], [PANEL_TICKS[RATIO]])
            _legend(grid.legend_on, _class_handles())
        grid.finish(f"Ratio of Scaled Similarities{' by class' if by_class else ''}, "
                    f"{LEVEL_LABELS.get(level, level)} level ({space} space)")
    return _returned(grid.fig, notes, return_notes)


# ---------------------------------------------------------------------------------------------
# correlogram (figure 10)

#: Measures of the correlogram unless others are named.
CORRELOGRAM_MEASURES = DISPLAY_PROBES + AFFINITIES + SCALED


def correlogram_matrix(results, condition: str, *, level: str = "nc", space: str = "raw",
                       measures=CORRELOGRAM_MEASURES, gold: bool = True, layers=None):
    """The variables, Spearman rho and p of one correlogram panel.

    Variables are (model, measure) pairs (and ``("", "gold")`` first when ``gold``), each
    a vector of per-NC values of one condition; rho and p are pairwise over the NCs
    both have (:func:`ncprobe.stats.spearman`).

    Returns:
        ``(variables, rho, p)``: a list of (model, measure) and two square arrays.
    """
    data = select(results.measures, space=space, level=level, contexts="all",
                  measures=list(measures), layers=layers)
    data = data[data["condition"].astype(str) == condition]
    models = [m for m in _all_models(results) if m in set(data["model"])]
    wide = data.pivot_table(index="nc", columns=["model", "measure"], values="value",
                            aggfunc="first", dropna=False)
    variables, columns = [], []
    if gold and len(data):
        g = data.drop_duplicates("nc").set_index("nc")["comp"].reindex(wide.index)
        variables.append(("", "gold"))
        columns.append(g.to_numpy(dtype=np.float64))
    for model in models:
        for m in measures:
            if (model, m) in wide.columns:
                v = wide[(model, m)].to_numpy(dtype=np.float64)
                if np.isfinite(v).sum() >= 3:
                    variables.append((model, m))
                    columns.append(v)
    n = len(variables)
    rho = np.full((n, n), np.nan)
    p = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(i + 1):
            c = spearman(columns[i], columns[j])
            rho[i, j] = rho[j, i] = c.rho
            p[i, j] = p[j, i] = c.p
    return variables, rho, p


def fig_correlogram(results, *, level: str = "nc", space: str = "raw", contexts=None,
                    measures=CORRELOGRAM_MEASURES, gold: bool = True, layers=None,
                    ax: Axes | None = None, return_notes: bool = False):
    """Figure 10: Spearman rho between every pair of (model, measure) per-NC value vectors.

    One panel per condition. Rows and columns are the measures of each model in
    turn (model names on the diagonal), with the gold compositionality score
    first when ``gold``. Only the lower triangle is drawn, and in it only the
    cells with p <= 0.05; the others stay blank. The variables and values of a
    panel: :func:`correlogram_matrix`.

    ``ax=`` is accepted when the results hold one condition (one language, and
    ``contexts`` naming one context group): the panel is drawn into the given Axes,
    with its colour bar beside it, and the Axes' figure is returned.
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    conds_all = select(results.measures, space=space, level=level, contexts=contexts,
                       measures=list(measures), layers=layers)
    conds_all = conds_all.dropna(subset=["value"])
    if conds_all.empty:
        raise NoData(f"no {LEVEL_LABELS.get(level, level)}-level values for a correlogram")
    notes: list[str] = []
    _models_with(conds_all, _all_models(results),
                 f"{LEVEL_LABELS.get(level, level)}-level values", notes)
    conds = [c for c in CONDITION_PALETTE if c in set(conds_all["condition"].astype(str))]
    _one_panel(ax, None, len(conds), "one per condition: " + ", ".join(conds))
    panels = [(c, *correlogram_matrix(results, c, level=level, space=space, measures=measures,
                                      gold=gold, layers=layers)) for c in conds]
    if ax is not None:
        with _style():
            cond, variables, rho, p = panels[0]
            mesh = _correlogram_panel(ax, variables, rho, p)
            ax.set_title(cond)
            if mesh is not None:
                ax.figure.colorbar(mesh, ax=ax, aspect=30,
                                   label=f"Spearman ρ (blank: p > {ALPHA})")
        return _returned(_root_figure(ax), notes, return_notes)
    nvar = max(len(v) for _, v, _, _ in panels) - 1
    same = all(v == panels[0][1] for _, v, _, _ in panels)
    ncols = min(len(panels), 2)
    nrows = math.ceil(len(panels) / ncols)
    side = max(1.6, 0.17 * nvar)
    label_room = 0.9
    width = ncols * side + (1 if same else ncols) * label_room + 1.0
    height = nrows * side + (1 if same else nrows) * label_room + 0.6
    with _style():
        fig = _new_figure(figsize=(width, height), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False)
        flat = axes.ravel()
        mesh = None
        for k, (pax, (cond, variables, rho, p)) in enumerate(zip(flat, panels, strict=True)):
            mesh = _correlogram_panel(pax, variables, rho, p)
            pax.set_title(cond)
            if same and len(panels) > 1:
                if k % ncols:
                    pax.tick_params(labelleft=False)
                if k + ncols < len(panels):
                    pax.tick_params(labelbottom=False)
        for pax in flat[len(panels):]:
            fig.delaxes(pax)
        if mesh is not None:
            fig.colorbar(mesh, ax=list(flat[:len(panels)]), shrink=min(0.8, 3.0 / height + 0.3),
                         aspect=30, label=f"Spearman ρ (blank: p > {ALPHA})")
        fig.suptitle(f"Correlogram of models × measures, {LEVEL_LABELS.get(level, level)} level "
                     f"({space} space)")
    return _returned(fig, notes, return_notes)


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
    ticks = [CORRELOGRAM_TICKS.get(m, m) for _, m in variables]
    ax.set_xticks(np.arange(n - 1) + 0.5, ticks[:-1], rotation=90)
    ax.set_yticks(np.arange(n - 1) + 0.5, ticks[1:])
    ax.tick_params(length=0, pad=1)
    _model_blocks(ax, variables)
    return mesh


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
            ax.text(row + 1.15, row + 0.5, _short(model), va="center", ha="left",
                    fontsize=FONT_SIZE, color="#333333")
        start = end


#: The figures of SPEC §4, in order: name (:data:`ncprobe.schema.PAPER_FIGURES`, the report's
#: file names) -> function(results, **options) -> Figure.
FIGURES: dict[str, Callable] = dict(zip(PAPER_FIGURES, (
    fig_sentence_cosines, fig_nc_cosines, fig_affinity, fig_affinity_by_class,
    fig_scaled_similarity, fig_simr_syn_by_class, fig_simr_wordssyn_by_class, fig_ratio,
    fig_ratio_by_class, fig_correlogram), strict=True))

__all__ = ["CLASS_PALETTE", "CONDITION_PALETTE", "CORRELOGRAM_MEASURES", "FIGURES", "IDEAL",
           "NoData", "correlogram_matrix", "fig_affinity", "fig_affinity_by_class",
           "fig_correlogram", "fig_nc_cosines", "fig_ratio", "fig_ratio_by_class",
           "fig_scaled_similarity", "fig_sentence_cosines", "fig_simr_syn_by_class",
           "fig_simr_wordssyn_by_class"]
