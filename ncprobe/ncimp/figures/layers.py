"""Layer-wise correlations: Spearman rho of each measure with the gold score against the
layer (``fig_layers``; ncprobe's addition, not a figure of the study): small multiples, one
panel per measure, so that no two measures' intervals overlap."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal, overload

import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ...errors import NoData
from ...plots.theme import (
    add_legend,
    count_range,
    declutter,
    draws_ideal,
    math_label,
    new_figure,
    root_figure,
    short_name,
    style,
    with_notes,
)
from ...schema import LEVEL_LABELS, MEASURES, OWN_VIEW, OWN_VIEW_LABEL
from ..inference import model_names
from ..selection import layer_index, layerwise_measures, layerwise_views, select
from ._docs import fill_doc
from .conditions import conditions_of

if TYPE_CHECKING:  # pragma: no cover
    from ..runs import ResultsData as Results


#: Most panels in a row when one model and condition's measures are wrapped into rows.
_WRAP = 5

#: Colours of the measures in the layer-wise figure (one line each), in measure order.
_MEASURE_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000")


@overload
def fig_layers(results: Results, *, level: str = "nc", space: str = "raw", measures=None,
               contexts=None, ax: Axes | None = None, return_notes: Literal[False] = False
        ) -> Figure: ...


@overload
def fig_layers(results: Results, *, level: str = "nc", space: str = "raw", measures=None,
               contexts=None, ax: Axes | None = None, return_notes: Literal[True]
        ) -> tuple[Figure, list[str]]: ...


@fill_doc
def fig_layers(results: Results, *, level: str = "nc", space: str = "raw", measures=None,
               contexts=None, ax: Axes | None = None, return_notes: bool = False
        ) -> Figure | tuple[Figure, list[str]]:
    """Layer-wise: Spearman rho of each measure with the gold score against the layer, with
    its 95% bootstrap interval as a band (ncprobe's addition, not a figure of the study).

    Small multiples: one panel per measure (columns; default: the measures of the study's
    tables, :data:`ncprobe.schema.DISPLAY_MEASURES`) and per model and condition (rows), on
    shared axes, for the models (and languages) with two or more single-layer views
    (``--layers all``, or a comma list of single layers); x is the layer (0 = embeddings), the
    line the rho, the band its interval (``ci_low`` to ``ci_high`` of the ``correlations``
    table; none for a run with ``n_boot=0``). Views that average several layers (the default
    last four, ``9+10+11+12``) are not on the layer axis and are left out, with a note; the
    layer-wise table (:func:`ncprobe.ncimp.tables.layers`) has them. At the sentence level of a
    sentence-transformers model, its own sentence embedding (the view
    :data:`~ncprobe.schema.OWN_VIEW`, computed after the last layer, not per layer) is a
    dashed horizontal reference across the panel, never a line over the layers. The title
    states ``n``, the NCs each rho is computed over. Models without layer-wise views are left
    out with a note.

    ``ax=`` is accepted when the results make one model and condition: every measure chosen is
    then drawn in that one panel (choose one or few with ``measures``).
    {return_notes}
    """
    shown = layerwise_measures(level, space, measures)
    runs = layerwise_views(results.correlations, space=space, level=level, contexts=contexts)
    notes: list[str] = []
    models = list(dict.fromkeys(model for model, _ in runs))
    others = [m for m in model_names(results) if m not in models]
    if not runs:
        raise NoData(f"no layer-wise {LEVEL_LABELS.get(level, level)}-level correlations "
                     f"({space} space): no model has two or more single-layer views")
    if others:
        notes.append(f"not shown (fewer than two single-layer views): {', '.join(others)}")
    combined = sorted({f"{v} ({model})" for (model, _), views in runs.items() for v in views
                       if layer_index(v) is None and v != OWN_VIEW})
    if combined:
        notes.append("not on the layer axis (several layers averaged): " + ", ".join(combined))
    owned = sorted({model for (model, _), views in runs.items() if OWN_VIEW in views})
    if owned:
        notes.append(f"dashed horizontal line: {OWN_VIEW_LABEL} (view {OWN_VIEW!r}, after "
                     f"the last layer, not a layer) of {', '.join(owned)}")
    drawn = [v for v in dict.fromkeys(v for views in runs.values() for v in views)
             if layer_index(v) is not None or v == OWN_VIEW]
    parts = [select(results.correlations, space=space, level=level, contexts=contexts,
                    measures=shown, layers=v) for v in drawn]
    cor = pd.concat(parts, ignore_index=True)
    cor = cor[(cor["analysis"] == "nc").to_numpy()
              & np.array([(m, lg) in runs
                          for m, lg in zip(cor["model"], cor["lang"], strict=True)], dtype=bool)]
    cor = cor.assign(layer=[layer_index(v) for v in cor["layers"]])
    on_axis = cor[cor["layer"].notna()]
    own = cor[cor["layers"] == OWN_VIEW]
    conds = conditions_of(on_axis)
    panels = [(m, c) for m in models for c in conds
              if ((on_axis["model"] == m) & (on_axis["condition"].astype(str) == c)).any()]
    draws_ideal(ax, None, len(panels), "one per model and condition")
    present = [m for m in shown if m in set(on_axis["measure"])]
    colours = dict(zip(MEASURES, _MEASURE_COLOURS, strict=True))
    bands = not on_axis[["ci_low", "ci_high"]].isna().all(axis=None)
    if not bands:
        notes.append("no bootstrap intervals in these results (n_boot=0)")
    n = _n_text(on_axis)
    with style():
        # one model and condition: its measures wrapped into rows of a few panels, else
        # rows of model x condition and one column per measure
        wrap = len(panels) == 1 and len(present) > _WRAP
        if ax is None:
            nrows = math.ceil(len(present) / _WRAP) if wrap else len(panels)
            ncols = math.ceil(len(present) / nrows) if wrap else len(present)
            fig = new_figure(figsize=(ncols * 1.75 + 0.9, nrows * 1.45 + 1.3),
                             layout="constrained")
            grid = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True)
            if wrap:
                cells = [grid[k // ncols, k % ncols] for k in range(len(present))]
                for k in range(len(present), nrows * ncols):  # the last row's empty places
                    fig.delaxes(grid[k // ncols, k % ncols])
                    cells[k - ncols].xaxis.set_tick_params(labelbottom=True)
                where = {(*panels[0], m): cells[k] for k, m in enumerate(present)}
            else:
                where = {(model, cond, m): grid[i, j] for i, (model, cond) in enumerate(panels)
                         for j, m in enumerate(present)}
        else:
            fig = root_figure(ax)
            where = {(*panels[0], m): ax for m in present}
        for (model, cond, m), pax in where.items():
            rows = on_axis[(on_axis["model"] == model) & (on_axis["condition"].astype(str) == cond)
                           & (on_axis["measure"] == m)].sort_values("layer")
            if not rows.empty:
                _band_and_line(pax, rows, colours[m], m)
            ref = own[(own["model"] == model) & (own["condition"].astype(str) == cond)
                      & (own["measure"] == m)]
            if len(ref) and np.isfinite(ref["rho"].iloc[0]):
                pax.axhline(float(ref["rho"].iloc[0]), color=colours[m], linestyle="--",
                            linewidth=1.0, gid=f"{OWN_VIEW} {m}", label=f"_{OWN_VIEW} {m}")
            # each panel names what it shows (for a reader's tools; titles go on the grid)
            pax.set_label(f"{model} · {cond} · {m}")
        for pax in dict.fromkeys(where.values()):
            pax.axhline(0.0, color="#444444", linewidth=0.6, zorder=1)
            pax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        handles = [Line2D([], [], color="#444444", marker="o", markersize=3, linewidth=1.1,
                          label="ρ per layer" + (" (band: 95% bootstrap interval)" if bands
                                                 else ""))]
        if len(own):
            handles.append(Line2D([], [], color="#444444", linestyle="--", linewidth=1.0,
                                  label=f"ρ of {OWN_VIEW_LABEL} (not a layer)"))
        title = (f"Spearman ρ with the gold score per layer (0 = embeddings), "
                 f"{LEVEL_LABELS.get(level, level)} level ({space} space)")
        if ax is None:
            if wrap:
                model, cond = panels[0]
                for k, m in enumerate(present):
                    cells[k].set_title(math_label(m))
                    if k % ncols == 0:
                        cells[k].set_ylabel("Spearman ρ")
                    if k + ncols >= len(present):  # the lowest panel of its column
                        cells[k].set_xlabel("layer")
                fig.suptitle(f"{title}\n{short_name(model)} · {cond}; {n}")
            else:
                for i, (model, cond) in enumerate(panels):
                    grid[i, 0].set_ylabel(f"{short_name(model)} · {cond}")
                for j, m in enumerate(present):
                    grid[0, j].set_title(math_label(m))
                    grid[-1, j].set_xlabel("layer")
                fig.suptitle(f"{title}\n{n}")
            add_legend(fig, handles, loc="outside lower center", ncols=len(handles))
            declutter(fig)
        else:
            model, cond = panels[0]
            ax.set_title(f"{short_name(model)} · {cond}\n{n}")
            ax.set_xlabel("layer (0 = embeddings)")
            ax.set_ylabel("Spearman ρ with gold")
            add_legend(ax, [Line2D([], [], color=colours[m], marker="o", markersize=3,
                                   linewidth=1.1, label=math_label(m))
                            for m in present] + handles[1:])
            declutter(fig, [ax])
    return with_notes(fig, notes, return_notes)


def _band_and_line(pax: Axes, rows: pd.DataFrame, colour: str, measure: str) -> None:
    """One measure's rho over the layers and its interval as a band (not bridged across a
    layer without one)."""
    x = rows["layer"].to_numpy(dtype=np.float64)
    lo = rows["ci_low"].to_numpy(dtype=np.float64)
    hi = rows["ci_high"].to_numpy(dtype=np.float64)
    ok = np.isfinite(lo) & np.isfinite(hi)
    if ok.any():
        pax.fill_between(x, np.where(ok, lo, 0.0), np.where(ok, hi, 0.0), where=ok,
                         color=colour, alpha=0.2, linewidth=0, label=f"_interval {measure}")
    pax.plot(x, rows["rho"].to_numpy(dtype=np.float64), color=colour, marker="o",
             markersize=2.5, linewidth=1.1, label=math_label(measure), gid=measure)


def _n_text(cor: pd.DataFrame) -> str:
    """``n`` of the figure: the NCs each rho is computed over (``n = 281 NCs per rho``; a
    range where conditions, models or layers differ)."""
    shown = count_range(cor["n"])
    return "n = 0 NCs" if shown is None else f"n = {shown} NCs per ρ"
