"""Style and figure creation, shared by the figures of every probe (NCIMP's
:mod:`ncprobe.ncimp.figures` first; the other probes' ``figures`` modules and the figure
workers' warm-up, :mod:`ncprobe.drawing`).

Public: the class palette (:data:`CLASS_PALETTE`), the ideal values (:data:`IDEAL`), the
layout sizes, :func:`style` (the context every figure is drawn in), :func:`new_figure` (a
Figure unknown to pyplot, drawn with Agg), and what every figure states under its title:
:func:`suptitle` (the title and ``n``), :func:`n_text` (the NCs of a figure of per-NC values)
and :func:`count_range` (``280``, or ``279-280``). The figure modules' own helpers: the grid
of panels (:class:`PanelGrid`, :func:`draws_ideal`, :func:`draw_ideal_panel`), legends
(:func:`add_legend`, :func:`class_handles`), boxes (:func:`draw_boxes`), labels
(:func:`short_name`, :func:`math_label`), readable tick labels (:func:`declutter`), the
models shown (:func:`models_with`) and what a figure function returns (:func:`with_notes`).
NCIMP's conditions (their palette, legend and order) are its own:
:mod:`ncprobe.ncimp.figures.conditions`; :mod:`ncprobe.ncimp.figures` re-exports what users
take from both.
"""
from __future__ import annotations

import math
import sys
from contextlib import contextmanager
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Iterator

import matplotlib
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.patches import Patch

from ..errors import NoData, UsageError
from ..schema import (
    CLASS_LABELS,
    CLASSES,
    MEASURE_MATH_LABELS,
    RATIO,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.typing import RcKeyType  # matplotlib >= 3.9: the rc names, as a Literal

#: Colour of each compositionality class (I, PC, C): idiomatic green, partly compositional
#: yellow, compositional blue.
CLASS_PALETTE = dict(zip(CLASSES, ("#3c9d3c", "#e9c31f", "#3a6fc2"), strict=True))

#: The pattern a model that captured idiomaticity would show (method §1 and §3), per measure and
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


# ---------------------------------------------------------------------------------------------
# style and figure creation


@contextmanager
def style() -> Iterator[None]:
    """The style every figure is drawn in: seaborn's ``whitegrid`` with light grid lines,
    and :data:`FONT_SIZE` points throughout (a context: matplotlib's settings are restored
    on leaving it)."""
    import seaborn as sns

    with sns.axes_style("whitegrid", {"grid.linewidth": 0.5, "grid.color": "#dddddd"}), \
            matplotlib.rc_context(_RC):
        yield


def new_figure(**kwargs) -> Figure:
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


def root_figure(ax: Axes) -> Figure:
    """The figure an Axes is drawn on (the root figure, not a subfigure)."""
    try:
        fig = ax.get_figure(root=True)
    except TypeError:  # matplotlib < 3.10: a subfigure's .figure is the root figure
        fig = ax.figure.figure
    if fig is None:
        raise UsageError("ax: the Axes is on no figure; draw on one made with "
                         "plt.subplots() or Figure.add_subplot()")
    return fig


def draws_ideal(ax: Axes | None, ideal: bool | None, panels: int, what: str) -> bool:
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


def with_notes(fig: Figure, notes: list[str], return_notes: bool
               ) -> Figure | tuple[Figure, list[str]]:
    return (fig, list(notes)) if return_notes else fig


def short_name(model: str) -> str:
    """A model's name for display: the last part of a HuggingFace id or path."""
    return str(model).rstrip("/").rsplit("/", 1)[-1]


def math_label(measure: str) -> str:
    """A measure's one label, typeset (:data:`ncprobe.schema.MEASURE_MATH_LABELS`): also its
    tick label, whatever the panel shows beside it (where space is short, :func:`declutter`
    turns the labels rather than shortening them)."""
    return MEASURE_MATH_LABELS.get(measure, measure)


def count_range(counts) -> str | None:
    """How many, as a figure's ``n`` says it: ``280``, or ``279-280`` where the counts
    differ (missing values left out); ``None`` for no count at all."""
    values = sorted({int(c) for c in counts if not pd.isna(c)})
    if not values:
        return None
    return f"{values[0]}" if len(values) == 1 else f"{values[0]}-{values[-1]}"


def n_text(data: pd.DataFrame, *, by_class: bool = False) -> str:
    """What ``n`` is in a figure of per-NC values: the NCs with a value in each panel's
    condition (``"n = 280 NCs per condition"``; ``"n = 279-280 ..."`` where models or
    conditions differ), and per class when ``by_class`` (``"(I 103, PC 88, C 89)"``).

    ``data`` has the columns ``model``, ``condition``, ``nc``, ``value`` (and ``cls``); each
    NC counts once per model and condition however many rows (measures) it has there.
    """
    rows = data.dropna(subset=["value"])
    if by_class and "cls" in rows.columns:  # an NC without a class is in no panel
        rows = rows[rows["cls"].isin(CLASSES)]
    if rows.empty:
        return "n = 0 NCs"
    keys = ["model", "condition"]
    text = (f"n = {count_range(rows.groupby(keys, observed=True)['nc'].nunique())} NCs per "
            + ("model and condition" if rows["model"].nunique() > 1 else "condition"))
    if by_class and "cls" in rows.columns:
        counts = rows.groupby([*keys, "cls"], observed=True)["nc"].nunique()
        shown = [f"{cls} {count_range(counts.xs(cls, level='cls'))}" for cls in CLASSES
                 if cls in counts.index.get_level_values("cls")]
        if shown:
            text += " (" + ", ".join(shown) + ")"
    return text


def models_with(data: pd.DataFrame, all_models: list[str], what: str, notes: list[str]
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


class PanelGrid:
    """One panel per model (wrapped), optionally one block of rows per measure, and an ideal
    panel in the first column of each block."""

    def __init__(self, models: list[str], *, ideal: bool, blocks: int = 1, sharey: bool = True,
                 panel_width: float = PANEL_WIDTH, panel_height: float = PANEL_HEIGHT,
                 legend_rows: int = 1, ax: Axes | None = None):
        self.models = models
        self.ax = ax    # the caller's Axes: the one panel (checked by draws_ideal)
        if ax is not None:
            self.fig = root_figure(ax)
            self.axes: list[list] = [[ax]]
            self.ideal: list = []
            return
        ncols = min(len(models), MAX_COLUMNS)
        self.model_rows = math.ceil(len(models) / ncols)
        nrows = blocks * self.model_rows
        widths = ([IDEAL_WIDTH] if ideal else []) + [panel_width] * ncols
        height = panel_height * nrows + 0.45 + 0.22 * legend_rows
        self.fig = new_figure(figsize=(sum(widths) + 0.4, height), layout="constrained")
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

    def finish(self, title: str, n: str) -> None:
        """The figure's title and ``n`` (what the values count, :func:`n_text`) under it, and
        readable tick labels; on the caller's Axes, ``n`` under its title instead."""
        if self.ax is None:
            _finish(self.fig, title, n)
        else:
            self.ax.set_title(f"{self.ax.get_title()}\n{n}" if self.ax.get_title() else n)
            declutter(self.fig, [self.ax])


def add_legend(where, handles: list, *, title: str | None = None,
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


def class_handles(prefix: str = "") -> list:
    return [Patch(facecolor=CLASS_PALETTE[c], edgecolor="#444444", linewidth=0.5,
                  label=prefix + CLASS_LABELS[c]) for c in CLASSES]


def draw_ideal_panel(ax, measures: list[str], *, ratio: bool = False) -> None:
    """Schematic bars of :data:`IDEAL`, one group per measure, one bar per class."""
    width = 0.26
    for i, m in enumerate(measures):
        for j, cls in enumerate(CLASSES):
            ax.bar(i + (j - 1) * width, IDEAL[m][cls], width=width * 0.95,
                   color=CLASS_PALETTE[cls], edgecolor="#444444", linewidth=0.5)
    ax.set_xticks(range(len(measures)), [math_label(m) for m in measures])
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


def declutter(fig, axes=None) -> None:
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


def _finish(fig, title: str, n: str) -> None:
    """The title, ``n`` on a second line (every figure says what it counts), and readable
    tick labels."""
    suptitle(fig, title, n)
    declutter(fig)


def suptitle(fig, title: str, n: str) -> None:
    """A figure's title with ``n`` (what its values count) on a second line."""
    fig.suptitle(f"{title}\n{n}")


def draw_boxes(ax, sub: pd.DataFrame, *, x: str, order: list[str], hue: str, hue_order: list[str],
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
