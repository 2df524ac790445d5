"""The retrieval probe's figures (IdioLink): the query modes compared, and the idioms that are
hard.

Both take the tables of a retrieval run (metrics as fractions, shown in percent):

* :func:`plot_modes`: one metric per figure, three panels by query usage (all, literal,
  idiomatic queries), one group of bars per model and one bar per query mode, with the 95%
  idiom-cluster bootstrap interval as an error bar;
* :func:`plot_idioms`: every idiom on a row, sorted by the metric (hardest first), one dot
  per query mode, one panel per model.

They follow the house style (:func:`ncprobe.plots.theme.style`, figures unknown to pyplot,
drawn with Agg). Nothing random is drawn, so the same tables give the same files.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from ..errors import NoData, UsageError
from ..plots.theme import (
    PANEL_HEIGHT,
    add_legend,
    count_range,
    declutter,
    new_figure,
    root_figure,
    short_name,
    style,
    suptitle,
)
from .queries import USAGE_NAMES, check_mode_table, mode_label

#: Colour of each query mode, in the order the modes are shown: plain queries blue (sentence
#: darker, span lighter), instructed queries orange (likewise).
MODE_PALETTE = {"sentence": "#2b5d9b", "span": "#8fb8e0",
                "instruction_sentence": "#c2571a", "instruction_span": "#f2a66b"}
#: The query usages, one panel each, in order, with their panel titles.
USAGE_TITLES = USAGE_NAMES
#: The metrics, with their names on the axes.
METRIC_NAMES = {"r_precision": "R-Precision", "ndcg@10": "nDCG@10"}

_EDGE = "#444444"
_IDIOM_ROW = 0.165   # inches per idiom in plot_idioms
_LABEL_WIDTH = 2.2   # inches left for the idiom labels


def _check_metric(metric: str) -> str:
    if metric not in METRIC_NAMES:
        raise UsageError(f"metric={metric!r}: choose from {', '.join(METRIC_NAMES)}")
    return metric


def _in_order(values) -> list[str]:
    """The distinct values as strings, in the order they first appear (the run order)."""
    return list(dict.fromkeys(str(v) for v in values))


def _modes_in(df: pd.DataFrame) -> list[str]:
    held = {str(m) for m in df["mode"]}
    return [m for m in MODE_PALETTE if m in held]


def _mode_handles(modes: Sequence[str], *, dots: bool = False) -> list:
    if dots:
        return [Line2D([], [], linestyle="", marker="o", markersize=5,
                       markerfacecolor=MODE_PALETTE[m], markeredgecolor=_EDGE,
                       markeredgewidth=0.5, label=mode_label(m)) for m in modes]
    return [Patch(facecolor=MODE_PALETTE[m], edgecolor=_EDGE, linewidth=0.5,
                  label=mode_label(m)) for m in modes]


def _n_queries(rows: pd.DataFrame) -> str:
    """``n = 1500 queries, 75 idioms`` of a panel's rows (the counts every row of it has; a
    range where models or modes differ)."""
    shown = [(count_range(rows[col]) if col in rows else None, unit)
             for col, unit in (("n", "queries"), ("n_idioms", "idioms"))]
    parts = [f"{n} {unit}" for n, unit in shown if n is not None]
    return "n = " + ", ".join(parts) if parts else "n not recorded"


def _percent_axis(axis) -> None:
    axis.set_major_formatter(PercentFormatter(xmax=100, decimals=0))


def plot_modes(overall: pd.DataFrame, metric: str, *, ax: Axes | None = None,
               usage: str | None = None) -> Figure:
    """One metric of every model and query mode, with its 95% bootstrap interval.

    One panel per query usage the table holds (all, literal, idiomatic queries; y: the
    metric in percent, 0-100%); in each, a group of bars per model (in run order) and a bar
    per query mode (colours :data:`MODE_PALETTE`; a model without a mode leaves its slot
    empty). Error bars: the 95% idiom-cluster bootstrap interval (``{metric}_lo``,
    ``{metric}_hi``), none where it was not computed.

    Args:
        overall: the ``overall`` table of a retrieval run (``model, mode, usage``, the
            metric and its ``_lo`` / ``_hi`` columns; fractions).
        metric: ``r_precision`` or ``ndcg@10``.
        ax: draw one panel into this Axes (the legend inside it, no figure title) and
            return its figure.
        usage: the one usage to draw (``all``, ``literal``, ``idiomatic``); default: every
            usage the table holds, or ``all`` with ``ax``.

    Raises:
        UsageError: an unknown metric, usage or query mode, a table without the columns,
            or ``ax`` that is not an Axes.
        NoData: no row of the usage(s) asked for.
    """
    metric = _check_metric(metric)
    overall = check_mode_table(overall, "overall",
                               ["model", "mode", "usage", metric, f"{metric}_lo",
                                f"{metric}_hi"])
    if usage is not None and usage not in USAGE_TITLES:
        raise UsageError(f"usage={usage!r}: choose from {', '.join(USAGE_TITLES)}")
    if ax is not None and not isinstance(ax, Axes):
        raise UsageError(f"ax={ax!r}: give a matplotlib Axes, or leave it out")
    held = {str(u) for u in overall["usage"]}
    if ax is not None:
        usages = [usage or "all"]
    else:
        usages = [usage] if usage else [u for u in USAGE_TITLES if u in held]
    usages = [u for u in usages if u in held]
    if not usages:
        raise NoData(f"no rows of {usage or 'any known'} query usage in the overall table")
    models = _in_order(overall["model"])
    modes = _modes_in(overall)
    slot = 0.8 / len(modes)
    with style():
        if ax is None:
            width = max(2.6, 0.6 + 0.16 * len(models) * len(modes))
            fig = new_figure(figsize=(width * len(usages) + 0.5, PANEL_HEIGHT + 1.0),
                             layout="constrained")
            axes = fig.subplots(1, len(usages), sharey=True, squeeze=False)[0]
        else:
            fig = root_figure(ax)
            axes = np.array([ax])
        for i, (u, pax) in enumerate(zip(usages, axes, strict=True)):
            rows = overall[overall["usage"].astype(str) == u]
            for j, mode in enumerate(modes):
                sub = rows[rows["mode"].astype(str) == mode]
                sub = sub[sub[metric].notna()]
                if sub.empty:
                    continue
                x = np.array([models.index(str(m)) for m in sub["model"]], dtype=float)
                x += (j - (len(modes) - 1) / 2) * slot
                value = sub[metric].to_numpy(dtype=float) * 100
                lo = sub[f"{metric}_lo"].to_numpy(dtype=float) * 100
                hi = sub[f"{metric}_hi"].to_numpy(dtype=float) * 100
                pax.bar(x, value, width=slot * 0.92, color=MODE_PALETTE[mode],
                        edgecolor=_EDGE, linewidth=0.5, label=mode_label(mode), zorder=2)
                has = ~(np.isnan(lo) | np.isnan(hi))
                if has.any():
                    err = np.vstack([value[has] - lo[has], hi[has] - value[has]])
                    pax.errorbar(x[has], value[has], yerr=np.clip(err, 0, None), fmt="none",
                                 ecolor="#222222", elinewidth=0.8, capsize=1.8, zorder=3)
            pax.set_xticks(range(len(models)), [short_name(m) for m in models])
            pax.set_xlim(-0.6, len(models) - 0.4)
            pax.set_ylim(0, 100)
            _percent_axis(pax.yaxis)
            pax.grid(False, axis="x")
            pax.set_title(f"{USAGE_TITLES[u]}\n{_n_queries(rows)}")
            pax.set_ylabel(METRIC_NAMES[metric] if i == 0 else "")
        handles = _mode_handles(modes)
        if ax is None:
            add_legend(fig, handles, title="query mode")
            fig.suptitle(f"{METRIC_NAMES[metric]} by query mode "
                         "(error bars: 95% idiom-cluster bootstrap interval)")
            declutter(fig)
        else:
            add_legend(ax, handles, title="query mode")
            declutter(fig, [ax])
    return fig


def plot_idioms(per_idiom: pd.DataFrame, metric: str, *, model: str | Sequence[str] | None = None,
                modes: Sequence[str] | None = None, top: int | None = None) -> Figure:
    """Which idioms are hard: every idiom on a row, sorted by ``metric`` (all queries).

    Idioms are sorted by the metric's mean over every dot shown (the shown models' shown
    query modes, usage ``all``), lowest, i.e. hardest, at the top (equal means: by the
    idiom's text). One panel per model (in run order), sharing the rows; in each, one dot
    per query mode (colours :data:`MODE_PALETTE`) on a 0-100% axis, and a grey line from the
    lowest mode to the highest. The figure grows with the idioms (75 fit on one page).

    Args:
        per_idiom: the ``per_idiom`` table of a retrieval run (``model, mode, idiom,
            usage`` and the metric; fractions).
        metric: ``r_precision`` or ``ndcg@10``.
        model: a model (or several) of the table; default: every model.
        modes: the query modes shown; default: every mode the table holds.
        top: show only the ``top`` hardest idioms.

    Raises:
        UsageError: an unknown metric, model or query mode, ``top`` not a whole number of
            1 or more, or a table without the columns.
        NoData: no row of usage ``all`` for the models and modes asked for.
    """
    metric = _check_metric(metric)
    per_idiom = check_mode_table(per_idiom, "per_idiom",
                                 ["model", "mode", "idiom", "usage", metric])
    if top is not None and (isinstance(top, bool) or not isinstance(top, (int, np.integer))
                            or top < 1):
        raise UsageError(f"top={top!r}: give a whole number of idioms, 1 or more, or leave "
                         "it out for every idiom")
    held_models = _in_order(per_idiom["model"])
    models = (held_models if model is None
              else [model] if isinstance(model, str) else [str(m) for m in model])
    unknown = [m for m in models if m not in held_models]
    if unknown or not models:
        raise UsageError(f"model={model!r}: not in the per_idiom table (its models: "
                         f"{', '.join(held_models) or 'none'})")
    shown_modes = _modes_in(per_idiom) if modes is None else [str(m) for m in modes]
    bad = [m for m in shown_modes if m not in MODE_PALETTE]
    if bad or not shown_modes:
        raise UsageError(f"modes={modes!r}: choose from {', '.join(MODE_PALETTE)}")
    rows = per_idiom[(per_idiom["usage"].astype(str) == "all")
                     & per_idiom["model"].astype(str).isin(models)
                     & per_idiom["mode"].astype(str).isin(shown_modes)
                     & per_idiom[metric].notna()]
    if rows.empty:
        raise NoData(f"no per-idiom {METRIC_NAMES[metric]} of usage all for model(s) "
                     f"{', '.join(models)} and mode(s) {', '.join(shown_modes)}")
    rows = rows.assign(idiom=rows["idiom"].astype(str), model=rows["model"].astype(str),
                       mode=rows["mode"].astype(str),
                       value=rows[metric].to_numpy(dtype=float) * 100)
    means = rows.groupby("idiom", sort=True)["value"].mean()
    order = sorted(means.index, key=lambda idiom: (means[idiom], idiom))
    if top is not None:
        order = order[:int(top)]
    models = [m for m in models if m in set(rows["model"])]
    shown_modes = [m for m in MODE_PALETTE if m in set(rows["mode"]) and m in shown_modes]
    y_of = {idiom: i for i, idiom in enumerate(order)}
    rows = rows[rows["idiom"].isin(y_of)]
    height = _IDIOM_ROW * len(order) + 1.3
    with style():
        fig = new_figure(figsize=(_LABEL_WIDTH + 2.3 * len(models), max(height, 2.5)),
                         layout="constrained")
        axes = fig.subplots(1, len(models), sharey=True, squeeze=False)[0]
        for i, (m, pax) in enumerate(zip(models, axes, strict=True)):
            sub = rows[rows["model"] == m]
            spread = sub.groupby("idiom")["value"].agg(["min", "max"])
            ys = [y_of[idiom] for idiom in spread.index]
            pax.hlines(ys, spread["min"], spread["max"], color="#bbbbbb", linewidth=0.8,
                       zorder=1)
            for mode in shown_modes:
                dots = sub[sub["mode"] == mode]
                if dots.empty:
                    continue
                pax.scatter(dots["value"], [y_of[d] for d in dots["idiom"]], s=14,
                            color=MODE_PALETTE[mode], edgecolors=_EDGE, linewidths=0.4,
                            label=mode_label(mode), zorder=2)
            pax.set_xlim(-3, 103)
            _percent_axis(pax.xaxis)
            pax.set_ylim(len(order) - 0.5, -0.5)   # the hardest idiom at the top
            if i == 0:  # the rows are shared: the idioms' labels once, on the left
                pax.set_yticks(range(len(order)), order)
            else:
                pax.tick_params(labelleft=False)
            pax.grid(False, axis="y")
            pax.set_title(short_name(m))
            pax.set_xlabel(f"{METRIC_NAMES[metric]} (mean over the idiom's queries)")
        add_legend(fig, _mode_handles(shown_modes, dots=True), title="query mode")
        shown = f"the {len(order)} hardest idioms" if top is not None else "every idiom"
        queries = count_range(rows.drop_duplicates(["model", "mode", "idiom"])["n"]) or "?"
        suptitle(fig, f"{METRIC_NAMES[metric]} per idiom, all queries: {shown}, hardest first",
                 f"n = {queries} queries per idiom, {len(order)} idioms shown")
    return fig


__all__ = ["METRIC_NAMES", "MODE_PALETTE", "USAGE_TITLES", "mode_label", "plot_idioms",
           "plot_modes"]
