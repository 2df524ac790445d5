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
  English blue, Portuguese orange, naturalistic darker, neutral lighter; the
  conditions of other languages (a user's own pairs, ``FR-Nat`` ...) after them, in
  colour families of their own (:func:`condition_palette`);
* the compositionality classes I / PC / C as colours from :data:`CLASS_PALETTE`
  (green, yellow, blue) in the figures by class;
* a schematic "ideal values" panel, first, in the figures where the study
  draws the expected pattern (:data:`IDEAL`): the shape of the values a model
  that captured idiomaticity would give, by class, on a low-high scale with no
  numbers;
* only the ``raw`` vector space by default (``space="standardised"`` for the
  z-scored one), one layer view per model (see :mod:`ncprobe.selection`), the
  naturalistic and neutral contexts (``contexts="nat,neut,neut-pl"`` adds the
  plural neutral sentences, ``contexts="neut,ncs"`` shows the NCS dataset's beside
  NCIMP's neutral ones).

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
    CONTEXT_GROUPS,
    DISPLAY_PROBES,
    LEVEL_LABELS,
    MEASURE_MATH_LABELS,
    PAPER_FIGURES,
    RATIO,
    SCALED,
    condition_label,
)
from .selection import conditions_in, model_order, select, split_condition
from .stats import ALPHA, Correction, spearman
from .stats import correct as correct_p

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.typing import RcKeyType  # matplotlib >= 3.9: the rc names, as a Literal

#: Colour of each condition (:data:`ncprobe.schema.CONDITIONS`, in that order): English blue
#: (EN-Nat, EN-Neut, EN-Neut-pl, EN-NCS), Portuguese orange (PT-...); naturalistic darker,
#: neutral lighter, plural neutral lightest; the NCS dataset's sentences a hue of their own in
#: each family (English indigo, Portuguese brick), so they never read as NCIMP's neutral.
CONDITION_PALETTE = dict(zip(CONDITIONS, ("#1f5aa6", "#86b6e3", "#c6dcf1", "#5e4fa2",
                                          "#d45f0a", "#f6ad62", "#fbd7ad", "#9e3d22"),
                             strict=True))
#: Colours of the conditions of other languages (a user's own pairs: ``FR-Nat`` ...): one
#: family per language, in the order :func:`~ncprobe.selection.conditions_in` gives the
#: languages (teal, magenta, olive, grey; again from teal after four), one shade per context
#: group of :data:`~ncprobe.schema.CONTEXT_GROUPS` as for English and Portuguese (naturalistic
#: darker, neutral lighter, plural neutral lightest, NCS darkest); none is a colour of
#: :data:`CONDITION_PALETTE` or :data:`CLASS_PALETTE`.
OTHER_CONDITION_FAMILIES: tuple[tuple[str, str, str, str], ...] = (
    ("#00796b", "#4db6ac", "#b2dfdb", "#004d40"),
    ("#a2185b", "#e57ead", "#f5c6da", "#6a1b4d"),
    ("#7a7a1a", "#bfbf5a", "#e6e6b0", "#4d4d12"),
    ("#4d4d4d", "#999999", "#d0d0d0", "#262626"),
)


def condition_palette(conditions) -> dict[str, str]:
    """The colour of each condition of ``conditions`` (labels; in the order
    :func:`~ncprobe.selection.conditions_in` gives them): those of
    :data:`~ncprobe.schema.CONDITIONS` from :data:`CONDITION_PALETTE`; the others from
    :data:`OTHER_CONDITION_FAMILIES`, a family per language in that order and a shade per
    context group (a group that is none of the known ones takes the family's shades in turn).
    Deterministic: the same conditions always get the same colours."""
    shown = conditions_in(conditions)
    langs = list(dict.fromkeys(split_condition(c)[0] for c in shown if c not in CONDITIONS))
    groups = list(CONTEXT_GROUPS)
    extra = [g for g in dict.fromkeys(split_condition(c)[1] for c in shown) if g not in groups]
    out = {}
    for c in shown:
        if c in CONDITION_PALETTE:
            out[c] = CONDITION_PALETTE[c]
            continue
        lang, group = split_condition(c)
        family = OTHER_CONDITION_FAMILIES[langs.index(lang) % len(OTHER_CONDITION_FAMILIES)]
        shade = groups.index(group) if group in groups else len(groups) + extra.index(group)
        out[c] = family[shade % len(family)]
    return out


def _conditions(df: pd.DataFrame) -> list[str]:
    """The conditions of a selected table (its ``condition`` column), in the order shown."""
    return conditions_in(df["condition"].dropna().astype(str))

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
    """A measure's one label, typeset (:data:`ncprobe.schema.MEASURE_MATH_LABELS`)."""
    return MEASURE_MATH_LABELS.get(measure, measure)


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
    """Conditions in a grid: one row per language, one column per context (colours of
    :func:`condition_palette`)."""
    conditions = conditions_in(conditions)
    palette = condition_palette(conditions)
    parts = [split_condition(c) for c in conditions]
    langs = list(dict.fromkeys(lg for lg, _ in parts))  # English, Portuguese, then the others
    groups = list(dict.fromkeys(group for _, group in parts))
    # legends fill column by column: list the entries context-major so rows are languages
    handles = []
    for group in groups:
        for lang in langs:
            name = condition_label(lang, group)
            handles.append(Patch(facecolor=palette[name], edgecolor="#444444",
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
    """Tick label of a measure: its one label (:func:`_label`), whatever the panel shows beside
    it; where space is short, :func:`_declutter` turns the labels rather than shortening them."""
    return _label(measure)


def _declutter(fig, axes=None) -> None:
    """Rotate the x tick labels of the panels (``axes``, or all of ``fig``'s) where they would
    overlap: 30 degrees, or upright (90) where the labels turned by 30 degrees would still
    touch (their distance across the slant, the step between ticks x sin 30, under a label's
    height)."""
    fig.draw_without_rendering()  # lays the figure out: text extents, no pixels
    for ax in fig.axes if axes is None else axes:
        labels = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        if len(labels) < 2 or any(t.get_rotation() for t in labels):
            continue
        # the extents at the layout just drawn (the renderer of that draw)
        boxes = sorted((t.get_window_extent() for t in labels), key=lambda b: b.x0)
        if any(a.x1 + 3 > b.x0 for a, b in pairwise(boxes)):
            step = min(b.x0 + b.width / 2 - a.x0 - a.width / 2 for a, b in pairwise(boxes))
            height = max(b.height for b in boxes)
            angle = 30 if step * math.sin(math.radians(30)) >= height + 2 else 90
            for t in labels:
                t.set_rotation(angle)
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
    conds = _conditions(data)
    with _style():
        grid = _Grid(models, ideal=ideal, sharey=sharey, ax=ax)
        for i, (model, pax) in enumerate(zip(models, grid.axes[0], strict=True)):
            _boxes(pax, data[data["model"] == model], x="measure", order=measures,
                   hue="condition", hue_order=conds, palette=condition_palette(conds))
            pax.set_xticks(range(len(measures)), [_short_measure(m, measures) for m in measures])
            pax.set_title(_short(model))
            pax.set_xlabel("")
            pax.set_ylabel(ylabel if grid.first_column(0, i) or not sharey else "")
        if ideal:
            _ideal_panel(grid.ideal[0], measures)
            _condition_legend(grid.fig, conds, loc="outside lower right")
            # one model leaves room below for the two legends side by side only if the classes
            # are listed in a column (figure legends at one side are not stacked)
            _legend(grid.fig, _class_handles(), title="ideal values: class",
                    loc="outside lower left", ncols=1 if len(models) == 1 else None)
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
                                ylabel="Affinity", ax=ax, return_notes=return_notes)


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
                                ylabel="Scaled Similarity", ax=ax,
                                return_notes=return_notes)


# ---------------------------------------------------------------------------------------------
# by compositionality class (figures 4, 6, 7)


def _class_figure(results, *, measures: list[str], level: str, title: str, space: str,
                  contexts, layers, sharey: bool, ideal: bool | None, ax: Axes | None = None,
                  return_notes: bool = False, ylabel: str | None = None,
                  correct: Correction = "holm"):
    data = select(results.measures, space=space, level=level, contexts=contexts,
                  measures=measures, layers=layers)
    data = data[data["cls"].isin(CLASSES)].dropna(subset=["value"])
    notes: list[str] = []
    models = _models_with(data, _all_models(results),
                          f"{LEVEL_LABELS.get(level, level)}-level values", notes)
    ideal = _one_panel(ax, ideal, len(models) * len(measures), "one per model and measure")
    conds = _conditions(data)
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
        _mark_classes(results, grid.axes, models, measures, conds, notes, level=level,
                      space=space, contexts=contexts, layers=layers, correct=correct)
        _legend(grid.legend_on, _class_handles())
        grid.finish(title + f", {LEVEL_LABELS.get(level, level)} level ({space} space)")
    return _returned(grid.fig, notes, return_notes)


def fig_affinity_by_class(results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool = True,
                          return_notes: bool = False, correct: Correction = "holm"):
    """Figure 4: the Affinities per compositionality class (I / PC / C) and condition.

    One row of panels per Affinity (A_Syn|WordsSyn, then A_Syn|Rand); boxes over
    the NCs of each class. NCs without a class (no gold score) are left out.
    Brackets over the boxes mark the pairs of classes that differ: two-sided Mann-Whitney U,
    ``correct``-ed (default Holm) across the pairs of the per-class tests table
    (:func:`class_test_marks`); ``*`` / ``**`` / ``***``: corrected p <= 0.05 / 0.01 / 0.001.

    No ``ax=``: the figure is at least two panels (one per Affinity).
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _class_figure(results, measures=list(AFFINITIES), level=level, space=space,
                         contexts=contexts, layers=layers, sharey=sharey, ideal=ideal,
                         title="Affinity by compositionality class", return_notes=return_notes,
                         correct=correct)


def fig_simr_syn_by_class(results, *, level: str = "nc", space: str = "raw", contexts=None,
                          layers=None, sharey: bool = True, ideal: bool | None = None,
                          ax: Axes | None = None, return_notes: bool = False,
                          correct: Correction = "holm"):
    """Figure 6: Sim_R|Syn per compositionality class and condition (ideal: ~1 for all).

    Brackets over the boxes mark the pairs of classes that differ: two-sided Mann-Whitney U,
    ``correct``-ed (default Holm) across the pairs of the per-class tests table
    (:func:`class_test_marks`); ``*`` / ``**`` / ``***``: corrected p <= 0.05 / 0.01 / 0.001.

    ``ax=`` is accepted when the results hold one model with values for this figure:
    its panel is drawn into the given Axes (no ideal panel), whose figure is returned.
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _class_figure(results, measures=["Sim_R|Syn"], level=level, space=space,
                         contexts=contexts, layers=layers, sharey=sharey, ideal=ideal,
                         title=f"{_label('Sim_R|Syn')} by compositionality class", ax=ax,
                         return_notes=return_notes, correct=correct)


def fig_simr_wordssyn_by_class(results, *, level: str = "nc", space: str = "raw",
                               contexts=None, layers=None, sharey: bool = True,
                               ideal: bool | None = None, ax: Axes | None = None,
                               return_notes: bool = False, correct: Correction = "holm"):
    """Figure 7: Sim_R|WordsSyn per class and condition (ideal: high for C, low for I).

    Brackets over the boxes mark the pairs of classes that differ: two-sided Mann-Whitney U,
    ``correct``-ed (default Holm) across the pairs of the per-class tests table
    (:func:`class_test_marks`); ``*`` / ``**`` / ``***``: corrected p <= 0.05 / 0.01 / 0.001.

    ``ax=`` is accepted when the results hold one model with values for this figure:
    its panel is drawn into the given Axes (no ideal panel), whose figure is returned.
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _class_figure(results, measures=["Sim_R|WordsSyn"], level=level, space=space,
                         contexts=contexts, layers=layers, sharey=sharey, ideal=ideal,
                         title=f"{_label('Sim_R|WordsSyn')} by compositionality class",
                         ax=ax,
                         return_notes=return_notes, correct=correct)


# ---------------------------------------------------------------------------------------------
# the ratio, median and IQR (figures 8, 9)


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


def ratio_quartiles(results, *, by_class: bool = False, level: str = "nc", space: str = "raw",
                    contexts=None, layers=None) -> pd.DataFrame:
    """The median and quartiles of the ratio Sim_R|Syn / Sim_R|WordsSyn over the NCs, per
    model and condition (and class when ``by_class``), from the per-NC ``measures`` table.

    Returns:
        Columns ``model, condition, cls, n, q1, median, q3`` (``numpy.percentile``, linear
        interpolation; NaN values left out; ``cls`` is ``all`` unless ``by_class``): what
        figures 8 and 9 draw.
    """
    data = select(results.measures, space=space, level=level, contexts=contexts,
                  measures=[RATIO], layers=layers).dropna(subset=["value"])
    if by_class:
        data = data[data["cls"].isin(CLASSES)]
    else:
        data = data.assign(cls=ALL_CLASSES)
    rows = []
    for (model, cond, cls), g in data.groupby(["model", "condition", "cls"], observed=True,
                                              sort=False):
        q1, med, q3 = np.percentile(g["value"].to_numpy(dtype=np.float64), [25, 50, 75])
        rows.append({"model": str(model), "condition": str(cond), "cls": str(cls),
                     "n": len(g), "q1": float(q1), "median": float(med), "q3": float(q3)})
    return pd.DataFrame(rows, columns=["model", "condition", "cls", "n", "q1", "median", "q3"])


def _darker(colour: str, f: float = 0.75):
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


def fig_ratio(results, *, level: str = "nc", space: str = "raw", contexts=None, layers=None,
              ax: Axes | None = None, return_notes: bool = False):
    """Figure 8: the ratio Sim_R|Syn / Sim_R|WordsSyn, median and inter-quartile range
    (25th-75th percentile) over the NCs, per model and condition (per-NC ``measures`` table,
    all NCs; the numbers: :func:`ratio_quartiles`).

    The study drew mean ± sd; the ratio is heavy-tailed (NCs with Sim_R|WordsSyn near 0
    give values far out: GloVe's mean ± sd spans about -30..30), so the median and IQR are
    drawn; the mean and sd stay in the ``distributions`` table and the summary. The y axis
    turns symmetric-logarithmic (linear within ±1) when a quartile reaches beyond ±12.
    The dashed line is 1 (as similar to the gold synonym as to the word synonyms).

    ``ax=`` is accepted when the results hold one model with values for this figure:
    its panel is drawn into the given Axes, whose figure is returned.
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _ratio_figure(results, by_class=False, level=level, space=space, contexts=contexts,
                         layers=layers, ideal=False, ax=ax, return_notes=return_notes)


def fig_ratio_by_class(results, *, level: str = "nc", space: str = "raw", contexts=None,
                       layers=None, ideal: bool | None = None, ax: Axes | None = None,
                       return_notes: bool = False, correct: Correction = "holm"):
    """Figure 9: the ratio Sim_R|Syn / Sim_R|WordsSyn, median and inter-quartile range per
    class and condition (as figure 8, :func:`fig_ratio`).

    Brackets over the boxes mark the pairs of classes that differ: two-sided Mann-Whitney U,
    ``correct``-ed (default Holm) across the pairs of the per-class tests table
    (:func:`class_test_marks`); ``*`` / ``**`` / ``***``: corrected p <= 0.05 / 0.01 / 0.001.

    Ideal panel: far above 1 for idiomatic NCs (the gold synonym keeps the
    meaning, the word synonyms do not), about 1 for compositional ones.

    ``ax=`` is accepted when the results hold one model with values for this figure:
    its panel is drawn into the given Axes (no ideal panel), whose figure is returned.
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    return _ratio_figure(results, by_class=True, level=level, space=space, contexts=contexts,
                         layers=layers, ideal=ideal, ax=ax, return_notes=return_notes,
                         correct=correct)


def _ratio_figure(results, *, by_class: bool, level, space, contexts, layers,
                  ideal: bool | None, ax: Axes | None, return_notes: bool,
                  correct: Correction = "holm"):
    """Figures 8 and 9: median and IQR of the ratio per condition, and per class if
    ``by_class``."""
    rows = ratio_quartiles(results, by_class=by_class, level=level, space=space,
                           contexts=contexts, layers=layers)
    notes: list[str] = []
    models = _models_with(rows, _all_models(results),
                          f"{LEVEL_LABELS.get(level, level)}-level ratio", notes)
    ideal = _one_panel(ax, ideal, len(models), "one per model")
    conds = _conditions(rows)
    if by_class:
        hue, hue_order, palette = "cls", list(CLASSES), CLASS_PALETTE
    else:
        hue, hue_order, palette = "condition", conds, condition_palette(conds)
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
            pax.set_ylabel(f"{_label(RATIO)}\n(median, IQR)" if grid.first_column(0, i) else "")
        _ratio_scale(grid.axes[0], rows)
        if by_class:
            _mark_classes(results, grid.axes, models, [RATIO], conds, notes, level=level,
                          space=space, contexts=contexts, layers=layers, correct=correct)
        if by_class:
            if ideal:
                _ideal_panel(grid.ideal[0], [RATIO], ratio=True)
                grid.ideal[0].set_xticks([0], [_label(RATIO)])
            _legend(grid.legend_on, _class_handles())
        grid.finish(f"Ratio of Scaled Similarities{' by class' if by_class else ''} "
                    f"(median, IQR), {LEVEL_LABELS.get(level, level)} level ({space} space)")
    return _returned(grid.fig, notes, return_notes)


# ---------------------------------------------------------------------------------------------
# per-class tests marked on the figures by class (4, 6, 7, 9)

#: Height of one row of significance brackets above the boxes, as a fraction of a panel.
MARK_ROW = 0.12
_MARK_TICK = 0.02   # the bracket's legs, same units
_MARK_GID = "class-test"  # gid of every bracket and mark: "class-test;measure;condition;a;b"


def class_test_marks(results, *, measures: list[str], level: str = "nc", space: str = "raw",
                     contexts=None, layers=None, correct: Correction = "holm"
                     ) -> tuple[dict[tuple[str, str, str], list[tuple[str, str, float]]], str]:
    """The pairs of classes the figures by class mark: those whose Mann-Whitney test is
    significant in the per-class tests table (:func:`ncprobe.tables.class_tests`, same
    options: the correction's family is every pair that table holds, so a figure marks what
    the table stars).

    Returns:
        ``({(model, condition, measure): [(cls_a, cls_b, p_corrected), ...]}, note)``, the
        note saying which test and correction the marks follow.
    """
    from .tables import CORRECTION_NAMES, STARS_NOTE, class_tests

    tidy = class_tests(results, level=level, space=space, contexts=contexts, layers=layers,
                       correct=correct)
    sig = tidy[(tidy["test"] == "mann-whitney") & tidy["significant"]
               & tidy["measure"].isin(list(measures))]
    marks: dict[tuple[str, str, str], list[tuple[str, str, float]]] = {}
    for _, r in sig.iterrows():
        marks.setdefault((str(r["model"]), str(r["condition"]), str(r["measure"])), []).append(
            (str(r["cls_a"]), str(r["cls_b"]), float(r["p_corrected"])))
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
    """Brackets with :func:`ncprobe.tables.stars` over the marked pairs of each condition."""
    from .tables import stars

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


def _mark_classes(results, panels: list[list[Axes]], models: list[str], measures: list[str],
                  conds: list[str], notes: list[str], **options) -> None:
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
                    correct: Correction = "holm", ax: Axes | None = None,
                    return_notes: bool = False):
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
    conds = _conditions(conds_all)
    _one_panel(ax, None, len(conds), "one per condition: " + ", ".join(conds))
    panels = [(c, *correlogram_matrix(results, c, level=level, space=space, measures=measures,
                                      gold=gold, layers=layers)) for c in conds]
    panels, blank = _corrected_panels(panels, correct)
    if ax is not None:
        with _style():
            cond, variables, rho, p = panels[0]
            mesh = _correlogram_panel(ax, variables, rho, p)
            _model_axis_names(ax, variables)
            ax.set_title(cond)
            if mesh is not None:
                ax.figure.colorbar(mesh, ax=ax, aspect=30,
                                   label=f"Spearman ρ\n(blank: {blank})")
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
        fig.suptitle(f"Correlogram of models × measures, {LEVEL_LABELS.get(level, level)} level "
                     f"({space} space)")
    return _returned(fig, notes, return_notes)



def _corrected_panels(panels: list, correct: Correction) -> tuple[list, str]:
    """The panels with their p-values corrected as one family: the cells below the diagonal
    of every panel (those the figure can draw); and what a blank cell means."""
    from .tables import correction_note

    correction_note(correct, 0)  # an unknown correction: refused
    lower = [np.tril_indices(len(v), k=-1) for _, v, _, _ in panels]
    flat = np.concatenate([p[ix] for (_, _, _, p), ix in zip(panels, lower, strict=True)]
                          + [np.zeros(0)])
    fixed = correct_p(flat, correct)
    n = int(np.count_nonzero(~np.isnan(flat)))
    out, at = [], 0
    for (cond, variables, rho, p), ix in zip(panels, lower, strict=True):
        q = np.full_like(p, np.nan)
        q[ix] = fixed[at:at + len(ix[0])]
        q[(ix[1], ix[0])] = q[ix]
        at += len(ix[0])
        out.append((cond, variables, rho, q))
    # short: the colour bar's label is no longer than the colour bar
    if correct == "none":
        return out, f"p > {ALPHA}, uncorrected"
    return out, f"{_SHORT_CORRECTION[correct]} p > {ALPHA}, {n} pairs"


#: The corrections as the correlogram's colour bar names them (:func:`_corrected_panels`).
_SHORT_CORRECTION = {"holm": "Holm", "fdr_bh": "BH"}


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
    ticks = [_label(m) for _, m in variables]
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
                ax.annotate(_short(model), xy=(0.0, 0.5) if on_y else (0.5, 0.0),
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
            ax.text(row + 1.15, row + 0.5, _short(model), va="center", ha="left",
                    fontsize=FONT_SIZE, color="#333333")
        start = end


# ---------------------------------------------------------------------------------------------
# layer-wise correlations (ncprobe's addition, not a figure of the study)

#: Colours of the measures in the layer-wise figure (one line each), in measure order.
_MEASURE_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000")


def fig_layers(results, *, level: str = "nc", space: str = "raw", measures=None, contexts=None,
               ax: Axes | None = None, return_notes: bool = False):
    """Layer-wise: Spearman rho of each measure with the gold score against the layer, with
    its 95% bootstrap interval as a band (ncprobe's addition, not a figure of the study).

    One panel per model and condition, for the models (and languages) with two or more
    single-layer views (``--layers all``, or a comma list of single layers); x is the layer
    (0 = embeddings), one line per measure (default: the measures of the study's tables,
    :data:`ncprobe.schema.DISPLAY_MEASURES`), the band its interval (``ci_low`` to ``ci_high``
    of the ``correlations`` table; none for a run with ``n_boot=0``). Views that average
    several layers (the default last four, ``9+10+11+12``) are not on the layer axis and are
    left out, with a note; the layer-wise table (:func:`ncprobe.tables.layers`) has them.
    Models without layer-wise views are left out with a note.

    ``ax=`` is accepted when the results make one panel (one model and condition).
    ``return_notes=True`` returns ``(fig, notes)``.
    """
    from matplotlib.lines import Line2D

    from .schema import MEASURES
    from .selection import layer_index, layerwise_measures, layerwise_views

    shown = layerwise_measures(level, space, measures)
    runs = layerwise_views(results.correlations, space=space, level=level, contexts=contexts)
    notes: list[str] = []
    models = list(dict.fromkeys(model for model, _ in runs))
    others = [m for m in _all_models(results) if m not in models]
    if not runs:
        raise NoData(f"no layer-wise {LEVEL_LABELS.get(level, level)}-level correlations "
                     f"({space} space): no model has two or more single-layer views")
    if others:
        notes.append(f"not shown (fewer than two single-layer views): {', '.join(others)}")
    combined = sorted({f"{v} ({model})" for (model, _), views in runs.items() for v in views
                       if layer_index(v) is None})
    if combined:
        notes.append("not on the layer axis (several layers averaged): " + ", ".join(combined))
    parts = [select(results.correlations, space=space, level=level, contexts=contexts,
                    measures=shown, layers=v)
             for v in dict.fromkeys(v for views in runs.values() for v in views
                                    if layer_index(v) is not None)]
    cor = pd.concat(parts, ignore_index=True)
    cor = cor[(cor["analysis"] == "nc").to_numpy()
              & np.array([(m, lg) in runs
                          for m, lg in zip(cor["model"], cor["lang"], strict=True)], dtype=bool)]
    cor = cor.assign(layer=[layer_index(v) for v in cor["layers"]])
    conds = _conditions(cor)
    panels = [(m, c) for m in models for c in conds
              if ((cor["model"] == m) & (cor["condition"].astype(str) == c)).any()]
    _one_panel(ax, None, len(panels), "one per model and condition")
    present = [m for m in shown if m in set(cor["measure"])]
    colours = dict(zip(MEASURES, _MEASURE_COLOURS, strict=True))
    if cor[["ci_low", "ci_high"]].isna().all(axis=None):
        notes.append("no bootstrap intervals in these results (n_boot=0)")
    with _style():
        if ax is None:
            ncols = len(conds)
            fig = _new_figure(figsize=(ncols * 2.9 + 0.4, len(models) * 2.4 + 0.9),
                              layout="constrained")
            grid = fig.subplots(len(models), ncols, squeeze=False, sharex=True, sharey=True)
            where: dict[tuple[str, str], Axes] = {
                (m, c): grid[i, j] for i, m in enumerate(models) for j, c in enumerate(conds)}
            for key, pax in where.items():
                if key not in panels:
                    fig.delaxes(pax)
        else:
            fig = _root_figure(ax)
            where = {panels[0]: ax}
        for model, cond in panels:
            pax = where[(model, cond)]
            sub = cor[(cor["model"] == model) & (cor["condition"].astype(str) == cond)]
            for m in present:
                rows = sub[sub["measure"] == m].sort_values("layer")
                if rows.empty:
                    continue
                x = rows["layer"].to_numpy(dtype=np.float64)
                lo = rows["ci_low"].to_numpy(dtype=np.float64)
                hi = rows["ci_high"].to_numpy(dtype=np.float64)
                ok = np.isfinite(lo) & np.isfinite(hi)
                if ok.any():
                    pax.fill_between(x, np.where(ok, lo, 0.0), np.where(ok, hi, 0.0), where=ok,
                                     color=colours[m], alpha=0.15, linewidth=0,
                                     label=f"_interval {m}")
                pax.plot(x, rows["rho"].to_numpy(dtype=np.float64), color=colours[m],
                         marker="o", markersize=2.5, linewidth=1.1, label=_label(m), gid=m)
            pax.axhline(0.0, color="#444444", linewidth=0.6, zorder=1)
            pax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
            pax.set_title(f"{_short(model)} · {cond}")
            last_row = ax is not None or models.index(model) == len(models) - 1
            pax.set_xlabel("layer (0 = embeddings)" if last_row else "")
            pax.set_ylabel("Spearman ρ with gold" if ax is not None or cond == conds[0] else "")
        handles = [Line2D([], [], color=colours[m], marker="o", markersize=3,
                                           linewidth=1.1, label=_label(m)) for m in present]
        if ax is None:
            _legend(fig, handles, loc="outside lower center", ncols=min(len(handles), 6))
            fig.suptitle(f"Spearman ρ with the gold score per layer, "
                         f"{LEVEL_LABELS.get(level, level)} level ({space} space; bands: "
                         "95% bootstrap intervals)")
            _declutter(fig)
        else:
            _legend(ax, handles)
            _declutter(fig, [ax])
    return _returned(fig, notes, return_notes)


#: The figures of SPEC §4, in order: name (:data:`ncprobe.schema.PAPER_FIGURES`, the report's
#: file names) -> function(results, **options) -> Figure.
FIGURES: dict[str, Callable] = dict(zip(PAPER_FIGURES, (
    fig_sentence_cosines, fig_nc_cosines, fig_affinity, fig_affinity_by_class,
    fig_scaled_similarity, fig_simr_syn_by_class, fig_simr_wordssyn_by_class, fig_ratio,
    fig_ratio_by_class, fig_correlogram), strict=True))
#: ncprobe's figures beyond the study's (the report draws them after figure 10, when the
#: results hold what they show): name -> function(results, **options) -> Figure.
ADDED_FIGURES: dict[str, Callable] = {"layers": fig_layers}

__all__ = ["ADDED_FIGURES", "CLASS_PALETTE", "CONDITION_PALETTE", "CORRELOGRAM_MEASURES",
           "FIGURES", "IDEAL", "NoData", "OTHER_CONDITION_FAMILIES", "condition_palette",
           "correlogram_matrix", "fig_affinity",
           "fig_affinity_by_class", "fig_correlogram", "fig_layers", "fig_nc_cosines",
           "fig_ratio", "fig_ratio_by_class", "fig_scaled_similarity", "fig_sentence_cosines",
           "fig_simr_syn_by_class", "fig_simr_wordssyn_by_class", "ratio_quartiles"]
