"""Layer-wise correlations: Spearman rho of each measure with the gold score against the
layer (``fig_layers``; ncprobe's addition, not a figure of the study)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..errors import NoData
from ..schema import LEVEL_LABELS, MEASURES
from ..selection import layer_index, layerwise_measures, layerwise_views, select
from ._docs import fill_doc
from ._style import (
    _all_models,
    _conditions,
    _declutter,
    _label,
    _legend,
    _one_panel,
    _returned,
    _short,
    new_figure,
    root_figure,
    style,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..results import Results


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

    One panel per model and condition, for the models (and languages) with two or more
    single-layer views (``--layers all``, or a comma list of single layers); x is the layer
    (0 = embeddings), one line per measure (default: the measures of the study's tables,
    :data:`ncprobe.schema.DISPLAY_MEASURES`), the band its interval (``ci_low`` to ``ci_high``
    of the ``correlations`` table; none for a run with ``n_boot=0``). Views that average
    several layers (the default last four, ``9+10+11+12``) are not on the layer axis and are
    left out, with a note; the layer-wise table (:func:`ncprobe.tables.layers`) has them.
    Models without layer-wise views are left out with a note.

    ``ax=`` is accepted when the results make one panel (one model and condition).
    {return_notes}
    """
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
    with style():
        if ax is None:
            ncols = len(conds)
            fig = new_figure(figsize=(ncols * 2.9 + 0.4, len(models) * 2.4 + 0.9),
                              layout="constrained")
            grid = fig.subplots(len(models), ncols, squeeze=False, sharex=True, sharey=True)
            where: dict[tuple[str, str], Axes] = {
                (m, c): grid[i, j] for i, m in enumerate(models) for j, c in enumerate(conds)}
            for key, pax in where.items():
                if key not in panels:
                    fig.delaxes(pax)
        else:
            fig = root_figure(ax)
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


