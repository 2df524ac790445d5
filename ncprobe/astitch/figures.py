"""The AStitch probe's figures: the paraphrase probe's AUROC and the linear probe's macro-F1
and selectivity against the layer view, and which expressions the best view gets right.

Each takes a table of AStitch results (:mod:`ncprobe.astitch.results`; fractions, F1 shown
in percent) and reads it only: the values and their 95% intervals (a cluster bootstrap over
expressions) are the results', never computed here; the per-expression means of
:func:`plot_expressions` come from :func:`ncprobe.astitch.report.per_expression`.

* :func:`plot_auroc_layers`: AUROC against the layer view, a panel per language, model and
  score (rows) and split (columns), a line per level and context with its interval as a
  band, chance at 0.5;
* :func:`plot_linear_layers`: test macro-F1 against the layer view, a panel per language and
  model (rows) and setting (columns), the controls (majority, expression-only, static) as
  horizontal lines with their intervals as bands, the control task dotted;
* :func:`plot_selectivity`: selectivity (macro-F1 less the control task's) against the
  layer view, with its interval, 0 marked;
* :func:`plot_expressions`: per expression, the mean contrast score of its idiomatic and of
  its literal uses (a dot pair with 95% t intervals), sorted by the gap.

They follow the house style (:func:`ncprobe.plots.theme.style`, figures unknown to pyplot,
drawn with Agg), say their ``n`` under the title, and raise :class:`~ncprobe.errors.NoData`
when there is nothing to draw. Nothing random is drawn, so the same tables give the same
files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from ..errors import NoData
from ..plots.theme import add_legend, count_range, declutter, new_figure, style, suptitle
from ..query import check_table
from . import IDIOMATIC, LITERAL, SCORES, SETTINGS, SPLITS
from .stats import SUBSETS

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.typing import LineStyleType

__all__ = ["CONTROL_STYLES", "FEATURE_STYLES", "LABEL_COLOURS", "plot_auroc_layers",
           "plot_expressions", "plot_linear_layers", "plot_selectivity"]

#: Colour and line style of each (level, context): the span darker green, the sentence blue;
#: with the surrounding sentences lighter and dashed.
FEATURE_STYLES: dict[tuple[str, str], tuple[str, LineStyleType]] = {
    ("nc", "excluded"): ("#1b7837", "-"), ("sent", "excluded"): ("#2b5d9b", "-"),
    ("nc", "included"): ("#7fbf7b", "--"), ("sent", "included"): ("#86b6e3", "--"),
}
#: Colour and line style of each control drawn as a horizontal line.
CONTROL_STYLES: dict[str, tuple[str, LineStyleType]] = {
    "majority": ("#555555", ":"), "expression": ("#c2571a", "--"), "static": ("#7b3294", "-."),
    "majority_test": ("#999999", (0, (6, 2))), "chance": ("#bbbbbb", "-"),
    "type_oracle": ("#b2182b", "-"),
}
#: The colour of each label's uses in :func:`plot_expressions`.
LABEL_COLOURS = {IDIOMATIC: "#c2571a", LITERAL: "#2b5d9b"}
_CONTROL_TEXT = {"majority": "majority (train)", "expression": "expression-only",
                 "static": "static model (its best dev view)",
                 "majority_test": "majority (test)", "chance": "chance (stratified)",
                 "type_oracle": "type oracle (each expression's test majority)"}
_LABEL_TEXT = {IDIOMATIC: "idiomatic uses (0)", LITERAL: "literal uses (1)"}
_PANEL = (2.5, 2.1)    # inches per panel of the layer figures
_EXPR_ROW = 0.17       # inches per expression of the expression figure
_INTERVAL = "95% cluster bootstrap interval over expressions"

_AUROC = ("model", "lang", "split", "layer", "level", "context", "score", "subset", "n",
          "n_expressions", "auroc_within", "auroc_within_low", "auroc_within_high", "auroc",
          "ci_low", "ci_high")
_LINEAR = ("model", "lang", "setting", "layer", "level", "context", "probe_kind", "control",
           "dev_macro_f1", "n", "macro_f1", "f1_low", "f1_high", "control_f1", "selectivity",
           "sel_low", "sel_high")
_EXPR = ("lang", "model", "layer", "level", "context", "chosen_on", "auroc_within",
         "auroc_within_low", "auroc_within_high", "auroc", "auroc_low", "auroc_high", "expression",
         "label", "n", "mean", "mean_low", "mean_high")


def _text(x: Any) -> str:
    return "" if x is None or (not isinstance(x, str) and pd.isna(x)) else str(x)


def _in(df: pd.DataFrame, **values: str) -> pd.DataFrame:
    keep = np.ones(len(df), dtype=bool)
    for col, value in values.items():
        keep &= df[col].astype(str).to_numpy() == value
    return df[keep]


def _features(df: pd.DataFrame) -> list[tuple[str, str]]:
    """The (level, context) pairs of ``df``: those of :data:`FEATURE_STYLES` first."""
    held = list(dict.fromkeys(zip(df["level"].astype(str), df["context"].astype(str),
                                  strict=True)))
    return [f for f in FEATURE_STYLES if f in held] + [f for f in held
                                                       if f not in FEATURE_STYLES]


def _feature_style(feature: tuple[str, str], k: int) -> tuple[str, LineStyleType]:
    return FEATURE_STYLES.get(feature, (f"C{k % 10}", "-"))


def _feature_label(feature: tuple[str, str]) -> str:
    return f"{feature[0]}, context {feature[1]}"


def _ordered(values: Sequence[str], order: Sequence[str]) -> list[str]:
    held = list(dict.fromkeys(values))
    return [v for v in order if v in held] + [v for v in held if v not in order]


def _langs(df: pd.DataFrame) -> list[str]:
    return _ordered(df["lang"].astype(str).tolist(), ("en", "pt"))


def _grid(nrows: int, ncols: int, *, extra: float = 1.5):
    fig = new_figure(figsize=(_PANEL[0] * ncols + 0.6, _PANEL[1] * nrows + extra),
                     layout="constrained")
    axes = fig.subplots(nrows, ncols, sharey=True, squeeze=False)
    return fig, axes


def _line(ax, x: list[int], value: np.ndarray, lo: np.ndarray, hi: np.ndarray, *,
          colour: str, ls: LineStyleType, scale: float = 1.0, lw: float = 1.4) -> None:
    """A value against the layer views with its interval: a band (a marker with a bar from
    the interval's low to its high end for one view); no band where the interval is missing.
    A percentile interval need not hold the point value (a skewed bootstrap distribution,
    few expressions): the bar is drawn as it is, never as errors around the value."""
    value, lo, hi = (np.asarray(v, dtype=float) * scale for v in (value, lo, hi))
    has = ~(np.isnan(lo) | np.isnan(hi))
    if len(x) == 1:
        if has[0]:
            ax.vlines(x, lo[:1], hi[:1], color=colour, linewidth=1.0, zorder=2)
        ax.plot(x, value, "o", color=colour, markersize=3.5, zorder=3)
        return
    if has.any():
        xs = np.asarray(x, dtype=float)
        ax.fill_between(xs, np.where(has, lo, np.nan), np.where(has, hi, np.nan),
                        color=colour, alpha=0.15, linewidth=0, zorder=1)
    ax.plot(x, value, color=colour, linestyle=ls, linewidth=lw, marker="o", markersize=2.5,
            zorder=3)


def _views(rows: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(rows["layer"].astype(str)))


def _feature_handles(features: list[tuple[str, str]], band: str) -> list:
    """A line per feature, and what its band is."""
    lines: list = [Line2D([], [], color=_feature_style(f, k)[0],
                          linestyle=_feature_style(f, k)[1], linewidth=1.4,
                          label=_feature_label(f)) for k, f in enumerate(features)]
    return lines + [Patch(color="#888888", alpha=0.3, label=f"band: {band}")]


def _finish_axes(axes, views: dict[int, list[str]], ylabel: str, percent: bool) -> None:
    nrows, ncols = axes.shape
    for i in range(nrows):
        for j in range(ncols):
            ax = axes[i, j]
            if not ax.get_visible():
                continue
            row_views = views.get(i, [])
            ax.set_xticks(range(len(row_views)), row_views)
            ax.set_xlim(-0.5, max(len(row_views), 1) - 0.5)
            if percent:
                ax.yaxis.set_major_formatter(PercentFormatter(xmax=100, decimals=0))
            if i == nrows - 1:
                ax.set_xlabel("layer view")
    # one label for the figure's y-axes: a label per row of panels is longer than a panel
    # is tall, and labels of neighbouring rows overlapped (and the outer ones were clipped)
    axes[0, 0].figure.supylabel(ylabel, fontsize=8)


def plot_auroc_layers(auroc: pd.DataFrame) -> Figure:
    """The paraphrase probe's AUROC against the layer view.

    One panel per language, model, score (contrast, then literal) and subset (all
    expressions, then the ambiguous ones) (rows) and split (columns, in the order of
    :data:`~ncprobe.astitch.SPLITS`); one line per level and context (the span darker, the
    sentence blue; with the surrounding sentences dashed): the within-expression AUROC (the
    headline) with its 95% cluster bootstrap interval over expressions as a band (an error
    bar for a model of one view), the pooled AUROC as a thin faint line with a cross at each
    view (a cross alone for a model of one view) in the same colour;
    chance (0.5) dashed grey. Each panel says its ``n`` (scored uses).

    Args:
        auroc: the ``auroc`` table of AStitch results.

    Raises:
        UsageError: a table without the columns. NoData: no cell with an AUROC.
    """
    auroc = check_table(auroc, "auroc", _AUROC, of="AStitch results")
    auroc = auroc[auroc["auroc"].notna()]
    if auroc.empty:
        raise NoData("no paraphrase cell with an AUROC (every cell's scored rows hold one "
                     "label, or none)")
    rows = [(lang, model, score, subset) for lang in _langs(auroc)
            for model in dict.fromkeys(_in(auroc, lang=lang)["model"].astype(str))
            for score in _ordered(_in(auroc, lang=lang, model=model)["score"].astype(str)
                                  .tolist(), SCORES)
            for subset in _ordered(_in(auroc, lang=lang, model=model, score=score)["subset"]
                                   .astype(str).tolist(), SUBSETS)]
    splits = _ordered(auroc["split"].astype(str).tolist(), SPLITS)
    features = _features(auroc)
    with style():
        fig, axes = _grid(len(rows), len(splits))
        views: dict[int, list[str]] = {}
        for i, j, ax, cell in _filled(axes, auroc, [{"lang": lang, "model": model,
                                                     "score": score, "subset": subset}
                                                    for lang, model, score, subset in rows],
                                      [{"split": split} for split in splits], views):
            for line, colour, ls in _feature_lines(cell, features):
                x = [views[i].index(str(v)) for v in line["layer"]]
                # a cross at each view: drawn even for a model of one view (no line then)
                ax.plot(x, line["auroc"].to_numpy(dtype=float), color=colour, linestyle=ls,
                        linewidth=0.7, alpha=0.55, marker="x", markersize=3.5, zorder=2)
                _line(ax, x, line["auroc_within"].to_numpy(), line["auroc_within_low"].to_numpy(),
                      line["auroc_within_high"].to_numpy(), colour=colour, ls=ls)
            lang, model, score, subset = rows[i]
            ax.axhline(0.5, color="#777777", linestyle="--", linewidth=0.9, zorder=0)
            ax.set_title(f"{lang.upper()} {model}, {score}, {subset}\n{splits[j]} "
                         f"(n = {count_range(cell['n']) or '?'})", fontsize=7)
        _finish_axes(axes, views, "within AUROC (line), 95% interval (band)", percent=False)
        handles = _feature_handles(features, _INTERVAL) + [
            Line2D([], [], color="#555555", linewidth=0.7, alpha=0.55, marker="x",
                   markersize=3.5, label="pooled AUROC (faint, crosses)"),
            Line2D([], [], color="#777777", linestyle="--", linewidth=0.9,
                   label="chance (0.5)")]
        add_legend(fig, handles, ncols=min(len(handles), 3))
        suptitle(fig, "AStitch paraphrase probe: AUROC of literal (1) against idiomatic (0) "
                 "uses by layer view, within expressions (pooled faint)",
                 f"n = {count_range(auroc['n']) or '?'} scored uses per cell; "
                 f"{count_range(auroc['n_expressions']) or '?'} expressions")
        declutter(fig)
    return fig


def _panels(linear: pd.DataFrame) -> tuple[list[tuple[str, ...]], list[str]]:
    """The rows of the linear figures, ``(lang, model, subset)`` (every subset of each
    model that holds test uses, all expressions first), and the settings (columns)."""
    own = linear[linear["probe_kind"].astype(str) == "linear"]
    subsets = (_ordered(own["subset"].astype(str).tolist(), SUBSETS)
               if "subset" in own.columns else [])
    rows = [(lang, model, *([subset] if subsets else [])) for lang in _langs(own)
            for model in dict.fromkeys(_in(own, lang=lang)["model"].astype(str))
            for subset in (subsets or [""])
            if not subsets or (_in(own, lang=lang, model=model, subset=subset)["n"]
                               .fillna(0).astype(float) > 0).any()]
    return rows, _ordered(own["setting"].astype(str).tolist(), list(SETTINGS))


def _linear_specs(rows: list[tuple[str, ...]]) -> list[dict[str, str]]:
    return [dict(zip(("lang", "model", "subset"), row, strict=False)) for row in rows]


def _row_title(row: tuple[str, ...]) -> str:
    lang, model = row[0], row[1]
    subset = f", {row[2]} expressions" if len(row) > 2 else ""
    return f"{lang.upper()} {model}{subset}"


def _control_line(ax, x: list[int], y: np.ndarray, *, colour: str, ls: LineStyleType,
                  marker: str) -> None:
    """A control task's F1 against the layer views: a thin line with a marker at each view
    (one view: the marker alone, never a line of zero length)."""
    ax.plot(x, y, color=colour, linestyle=ls, linewidth=0.9, marker=marker, markersize=3.5,
            zorder=2)


def _hlines(ax, lines: list[tuple[str, float, float, float]]) -> None:
    """Horizontal lines ``(key, value, low, high)`` (percent) in their styles, with their
    intervals as light bands. Lines of the same value are drawn dashed in turn, each
    dash at its own offset, so that one never hides another."""
    groups: dict[float, list[tuple[str, float, float, float]]] = {}
    for line in lines:
        groups.setdefault(round(line[1], 6), []).append(line)
    for same in groups.values():
        m = len(same)
        for k, (key, value, lo, hi) in enumerate(same):
            colour, ls = CONTROL_STYLES[key]
            style: LineStyleType = ls if m == 1 else (3.0 * k, (3.0, 3.0 * (m - 1)))
            ax.axhline(value, color=colour, linestyle=style, linewidth=1.2 if m > 1 else 1.0,
                       zorder=2)
            if np.isfinite(lo) and np.isfinite(hi):
                ax.axhspan(lo, hi, color=colour, alpha=0.08, linewidth=0, zorder=0)


def _row_specs(rows: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"lang": lang, "model": model} for lang, model in rows]


def _setting_specs(settings: list[str]) -> list[dict[str, str]]:
    return [{"setting": setting} for setting in settings]


def _filled(axes: np.ndarray, table: pd.DataFrame, rows: Sequence[Mapping[str, str]],
            columns: Sequence[Mapping[str, str]], views: dict[int, list[str]]
            ) -> Iterator[tuple[int, int, Axes, pd.DataFrame]]:
    """The panels of a grid of layer figures that hold rows of ``table``, each as ``(i, j,
    ax, rows)``: row ``i`` shows the rows matching ``rows[i]`` (its language and model: its
    layer views go into ``views[i]``; any other key narrows its panels), panel ``j`` of it
    those matching ``columns[j]`` too. A panel without a row is hidden."""
    for i, row in enumerate(rows):
        mine = _in(table, lang=row["lang"], model=row["model"])
        views[i] = _views(mine)
        narrow = {k: v for k, v in row.items() if k not in ("lang", "model")}
        for j, column in enumerate(columns):
            ax = axes[i, j]
            cell = _in(mine, **narrow, **column)
            if cell.empty:
                ax.set_visible(False)
                continue
            yield i, j, ax, cell


def _feature_lines(cell: pd.DataFrame, features: list[tuple[str, str]]
                   ) -> Iterator[tuple[pd.DataFrame, str, LineStyleType]]:
    """A panel's rows of each feature (level, context) it holds, in order, with the
    feature's colour and line style."""
    for k, feature in enumerate(features):
        line = _in(cell, level=feature[0], context=feature[1])
        if not line.empty:
            yield (line, *_feature_style(feature, k))


def _best_static(rows: pd.DataFrame) -> pd.Series | None:
    """The static control's cell of the best dev macro-F1 (the first on ties), or None."""
    static = rows[(rows["probe_kind"].astype(str) == "control")
                  & (rows["control"].astype(str) == "static")]
    if static.empty:
        return None
    dev = static["dev_macro_f1"].astype(float)
    return static.iloc[int(np.nanargmax(dev.to_numpy()))] if dev.notna().any() \
        else static.iloc[0]


def plot_linear_layers(linear: pd.DataFrame) -> Figure:
    """The linear probe's test macro-F1 against the layer view, with its controls.

    One panel per language, model and subset (rows: all expressions, then the ambiguous
    ones) and setting (columns: zero-, one-, few-shot); one line per feature (level and
    context) with its 95% cluster bootstrap interval over expressions as a band; the type
    control's F1 on the same feature dotted in its colour (crosses at each view), its
    interval a fainter band, and the within-expression control's dash-dotted (plus signs)
    (the selectivities: :func:`plot_selectivity`); the majority and expression-only controls,
    the static model's cell of the best dev macro-F1, and the baselines (the test majority,
    stratified chance) and the type oracle as horizontal lines, their intervals as light
    bands (lines of one value dashed in turn, none hidden). One y-axis label for the figure.

    Args:
        linear: the ``linear`` table of AStitch results.

    Raises:
        UsageError: a table without the columns. NoData: no linear-probe cell.
    """
    linear = check_table(linear, "linear", _LINEAR, of="AStitch results")
    rows, settings = _panels(linear)
    if not rows:
        raise NoData("no linear-probe cell (probe_kind linear)")
    own = linear[linear["probe_kind"].astype(str) == "linear"]
    features = _features(own)
    drawn: dict[str, str] = {}
    has_within = False
    with style():
        fig, axes = _grid(len(rows), len(settings))
        views: dict[int, list[str]] = {}
        for i, j, ax, cell in _filled(axes, own, _linear_specs(rows), _setting_specs(settings),
                                      views):
            row, setting = rows[i], settings[j]
            for line, colour, ls in _feature_lines(cell, features):
                x = [views[i].index(str(v)) for v in line["layer"]]
                _line(ax, x, line["macro_f1"].to_numpy(), line["f1_low"].to_numpy(),
                      line["f1_high"].to_numpy(), colour=colour, ls=ls, scale=100.0)
                _control_line(ax, x, line["control_f1"].to_numpy(dtype=float) * 100,
                              colour=colour, ls=":", marker="x")
                if "control_low" in line.columns and len(x) > 1:  # a fainter band
                    ax.fill_between(x, line["control_low"].to_numpy(dtype=float) * 100,
                                    line["control_high"].to_numpy(dtype=float) * 100,
                                    color=colour, alpha=0.06, linewidth=0, zorder=1)
                if "within_f1" in line.columns and line["within_f1"].notna().any():
                    has_within = True
                    _control_line(ax, x, line["within_f1"].to_numpy(dtype=float) * 100,
                                  colour=colour, ls="-.", marker="+")
            where = dict(zip(("lang", "model", "subset"), row, strict=False))
            controls = _in(linear, lang=where["lang"], setting=setting,
                           **({"subset": where["subset"]} if "subset" in where else {}))
            shown = [r for r in controls.to_dict("records")
                     if (str(r["probe_kind"]) == "control"
                         and str(r["control"]) in ("majority", "expression"))
                     or (str(r["probe_kind"]) == "baseline"
                         and str(r["control"]) in CONTROL_STYLES)]
            static = _best_static(controls)
            if static is not None:
                shown.append(static.to_dict())
            lines = []
            for r in shown:
                control = str(r["control"])
                lines.append((control, 100 * float(r["macro_f1"]),
                              100 * float(r["f1_low"]), 100 * float(r["f1_high"])))
                drawn[control] = (_CONTROL_TEXT[control] + (f": {r['model']}, "
                                  f"{r['level']}, context {r['context']}"
                                  if control == "static" else ""))
            _hlines(ax, lines)
            ax.set_title(f"{_row_title(row)}\n{setting} "
                         f"(n = {count_range(cell['n']) or '?'} test uses)", fontsize=7)
        _finish_axes(axes, views, "test macro-F1 (line), 95% interval (band)", percent=True)
        handles = _feature_handles(features, _INTERVAL)
        handles += [Line2D([], [], color="#444444", linestyle=":", linewidth=0.9, marker="x",
                           markersize=3.5, label="type control F1, same feature (its colour; "
                                                 "faint band: its interval)")]
        if has_within:
            handles += [Line2D([], [], color="#444444", linestyle="-.", linewidth=0.9,
                               marker="+", markersize=3.5,
                               label="within-expression control F1, same feature")]
        handles += [Line2D([], [], color=CONTROL_STYLES[c][0], linestyle=CONTROL_STYLES[c][1],
                           linewidth=1.0, label=f"{drawn[c]} (light band: its interval)")
                    for c in CONTROL_STYLES if c in drawn]
        add_legend(fig, handles, ncols=min(len(handles), 2))
        suptitle(fig, "AStitch linear probe: test macro-F1 by layer view, with the controls "
                 "and baselines", f"n = {count_range(own['n']) or '?'} test uses per cell")
        declutter(fig)
    return fig


def plot_selectivity(linear: pd.DataFrame) -> Figure:
    """Selectivity against the layer view: the linear probe's macro-F1 less the type
    control's (Hewitt and Liang 2019), solid, and less the within-expression control's,
    dash-dotted, in points.

    One panel per language, model and subset (rows) and setting (columns); one line per
    feature and control with its 95% cluster bootstrap interval over expressions as a band
    (the task and the control resampled together); 0 (no better than the control) marked.

    Raises:
        UsageError: a table without the columns. NoData: no linear cell with a selectivity.
    """
    linear = check_table(linear, "linear", _LINEAR, of="AStitch results")
    linear = linear[(linear["probe_kind"].astype(str) == "linear")
                    & linear["selectivity"].notna()]
    rows, settings = _panels(linear)
    if not rows:
        raise NoData("no linear-probe cell with a selectivity")
    features = _features(linear)
    has_within = "within_sel" in linear.columns and linear["within_sel"].notna().any()
    with style():
        fig, axes = _grid(len(rows), len(settings))
        views: dict[int, list[str]] = {}
        for i, j, ax, cell in _filled(axes, linear, _linear_specs(rows),
                                      _setting_specs(settings), views):
            row, setting = rows[i], settings[j]
            for line, colour, ls in _feature_lines(cell, features):
                x = [views[i].index(str(v)) for v in line["layer"]]
                _line(ax, x, line["selectivity"].to_numpy(), line["sel_low"].to_numpy(),
                      line["sel_high"].to_numpy(), colour=colour, ls=ls, scale=100.0)
                if has_within:
                    _line(ax, x, line["within_sel"].to_numpy(), line["wsel_low"].to_numpy(),
                          line["wsel_high"].to_numpy(), colour=colour, ls="-.", scale=100.0,
                          lw=1.0)
            ax.axhline(0.0, color="#777777", linestyle="--", linewidth=0.9, zorder=0)
            ax.set_title(f"{_row_title(row)}\n{setting} "
                         f"(n = {count_range(cell['n']) or '?'} test uses)", fontsize=7)
        _finish_axes(axes, views, "selectivity, points (line), 95% interval (band)",
                     percent=False)
        handles = _feature_handles(features, _INTERVAL)
        if has_within:
            handles += [Line2D([], [], color="#444444", linestyle="-", linewidth=1.4,
                               label="against the type control (solid)"),
                        Line2D([], [], color="#444444", linestyle="-.", linewidth=1.0,
                               label="against the within-expression control (dash-dot)")]
        handles += [Line2D([], [], color="#777777", linestyle="--", linewidth=0.9,
                           label="0: no better than the control")]
        add_legend(fig, handles, ncols=min(len(handles), 3))
        suptitle(fig, "AStitch linear probe: selectivity (macro-F1 less each control's) by "
                 "layer view", f"n = {count_range(linear['n']) or '?'} test uses per cell")
        declutter(fig)
    return fig


def _auc_text(what: str, value: Any, lo: Any, hi: Any) -> str:
    """``<what> 0.623 [0.551, 0.702]`` (no brackets without an interval; ``no <what>``
    without a value)."""
    if pd.isna(value):
        return f"no {what}"
    text = f"{what} {float(value):.3f}"
    if pd.notna(lo) and pd.notna(hi):
        text += f" [{float(lo):.3f}, {float(hi):.3f}]"
    return text


def plot_expressions(per_expression: pd.DataFrame) -> Figure:
    """Which expressions the best paraphrase view gets right.

    One panel per language and model (side by side): each expression a row (in the table's
    order: by its literal mean less its idiomatic mean, largest first), its mean contrast
    score over its idiomatic uses and over its literal uses as two dots joined by a line,
    each with its 95% t interval as a bar (none for one use); 0 marked. An expression whose
    literal dot lies right of its idiomatic one is separated the right way. The panel's title
    names the view (chosen on dev) and its within-expression and pooled AUROCs on test with
    their intervals.

    Args:
        per_expression: :func:`ncprobe.astitch.report.per_expression`.

    Raises:
        UsageError: a table without the columns. NoData: no expression.
    """
    df = check_table(per_expression, "per_expression", _EXPR, of="AStitch results")
    if df.empty:
        raise NoData("no expression with a scored use on test")
    panels = [(lang, model) for lang in _langs(df)
              for model in dict.fromkeys(_in(df, lang=lang)["model"].astype(str))]
    most = max(_in(df, lang=lang, model=model)["expression"].nunique()
               for lang, model in panels)
    with style():
        fig = new_figure(figsize=(3.6 * len(panels) + 0.8, _EXPR_ROW * most + 1.9),
                         layout="constrained")
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for ax, (lang, model) in zip(axes, panels, strict=True):
            part = _in(df, lang=lang, model=model)
            expressions = list(dict.fromkeys(part["expression"].astype(str)))
            y = {e: i for i, e in enumerate(expressions)}
            for e, group in part.groupby(part["expression"].astype(str), sort=False):
                if len(group) > 1:
                    ax.plot(group["mean"].to_numpy(dtype=float), [y[e]] * len(group),
                            color="#bbbbbb", linewidth=0.8, zorder=1)
            for lab, colour in LABEL_COLOURS.items():
                dots = part[part["label"].astype(int) == lab]
                if dots.empty:
                    continue
                mean = dots["mean"].to_numpy(dtype=float)
                lo = dots["mean_low"].to_numpy(dtype=float)
                hi = dots["mean_high"].to_numpy(dtype=float)
                ys = [y[str(e)] + (0.12 if lab == LITERAL else -0.12)
                      for e in dots["expression"]]
                has = ~(np.isnan(lo) | np.isnan(hi))
                if has.any():
                    ax.hlines(np.asarray(ys)[has], lo[has], hi[has], colors=colour,
                              linewidth=0.9, alpha=0.7, zorder=2)
                ax.scatter(mean, ys, s=14, color=colour, edgecolors="#222222",
                           linewidths=0.3, zorder=3)
            ax.axvline(0.0, color="#777777", linestyle="--", linewidth=0.8, zorder=0)
            ax.set_yticks(range(len(expressions)), expressions, fontsize=6)
            ax.set_ylim(len(expressions) - 0.5, -0.5)
            ax.grid(False, axis="y")
            first = part.iloc[0]
            within = _auc_text("test AUROC within", first["auroc_within"],
                               first["auroc_within_low"], first["auroc_within_high"])
            pooled = _auc_text("pooled", first["auroc"], first["auroc_low"],
                               first["auroc_high"])
            ax.set_title(f"{lang.upper()} {model}: layer {_text(first['layer'])}, "
                         f"{first['level']}, context {first['context']}\n(chosen on "
                         f"{first['chosen_on']}); n = {int(part['n'].sum())} uses\n{within}"
                         f"\n{pooled}", fontsize=7)
            ax.set_xlabel("mean contrast score (dot), 95% t interval (bar)")
        handles: list = [Line2D([], [], color=c, marker="o", linestyle="", markersize=4,
                          label=_LABEL_TEXT[lab]) for lab, c in LABEL_COLOURS.items()]
        handles.append(Patch(color="#bbbbbb", label="one expression's two means"))
        add_legend(fig, handles)
        suptitle(fig, "AStitch paraphrase probe: each test expression's idiomatic and literal "
                 "uses\n(contrast = cos to the literal paraphrase less the best cos to a "
                 "non-literal one)",
                 f"n = {int(df['n'].sum())} uses of {df['expression'].nunique()} expressions; "
                 "sorted by literal less idiomatic mean (largest first)")
    return fig
