"""The NCC probe's figures (SemanticQA): accuracy with its intervals, accuracy against the
layer, the confusion matrices, and which items the systems get right.

Each takes the tables of an NCC run (:mod:`ncprobe.ncc.results`; accuracies as fractions,
shown in percent) and reads them only: the intervals, counts and the per-item agreement are
the results' (:meth:`NccResults.agreement <ncprobe.ncc.results.NccResults.agreement>`), never
computed here.

* :func:`plot_accuracy`: every system row's accuracy with its 95% bootstrap interval, a
  panel per group (the published systems by setting, the local models' answers, the gold
  ceiling, each model's representation with its nested selection), and each panel's own
  task's baselines as lines (3-way for the classifiers, 4-option for the prompted systems);
* :func:`plot_layers`: a layered model's classifiers against the layer view;
* :func:`plot_confusion`: one confusion matrix per system row given (small multiples);
* :func:`plot_agreement`: items x systems, right or wrong, the items sorted by how many
  systems get them right; the items every system misses and those only the representation
  gets right named in a panel of their own.

They follow the house style (:func:`ncprobe.plots.theme.style`, figures unknown to pyplot,
drawn with Agg), and say their ``n`` under the title. Nothing random is drawn, so the same
tables give the same files.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from ..errors import NoData, UsageError
from ..plots.theme import add_legend, count_range, math_label, new_figure, style, suptitle
from ..query import check_table
from ..schema import LEVELS
from . import ANSWERS, HUMAN_ACCURACY, KINDS, NCC_CLASSES
from .stats import KEYS, label

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.typing import LineStyleType

__all__ = ["KIND_COLOURS", "LEVEL_COLOURS", "REFERENCE_STYLES", "plot_accuracy",
           "plot_agreement", "plot_confusion", "plot_layers"]

#: Colour of each kind of system row (the published systems take :data:`SETTING_COLOURS`).
KIND_COLOURS = dict(zip(KINDS, ("#999999", "#4d4d4d", "#111111", "#1b7837", "#d95f02",
                               "#7b3294"), strict=True))
#: Colour of a representation row by level (NC level darker, sentence level lighter).
LEVEL_COLOURS = dict(zip(LEVELS, ("#7fbf7b", "#1b7837"), strict=True))
#: Colours of the published settings, in the order they first appear (0-shot, 3-shot ...):
#: none of them a colour of a kind or a level.
SETTING_COLOURS = ("#2b5d9b", "#c2571a", "#b8860b", "#e7298a", "#17a2b8", "#7f7f7f",
                   "#a6761d", "#1f3a5f")
#: How each reference line is drawn: (line style, colour) of the human accuracy and of each
#: baseline row's system. A panel draws its own task's lines (:func:`reference_lines`).
REFERENCE_STYLES: dict[str, tuple[LineStyleType, str]] = {
    "human": ("-", "#b2182b"), "uniform": (":", "#555555"), "stratified": ("-.", "#555555"),
    "majority": ("--", "#555555"), "four_options": (":", "#8c510a")}
#: The baselines of each task: the classifiers' (three classes) and the prompted systems'
#: (four options; the majority class is an answer there too).
TASK_BASELINES = {"3-way": ("uniform", "stratified", "majority"),
                  "4-option": ("four_options", "majority")}
#: The task of the rows of each kind of panel.
PANEL_TASK = {"published": "4-option", "behaviour": "4-option", "ceiling": "3-way",
              "representation": "3-way"}
#: Colours of the agreement matrix: wrong, right (an item a system did not answer is left
#: light grey).
AGREEMENT_COLOURS = ("#f4a582", "#4393c3")
_UNANSWERED = "#e8e8e8"
_ROW = 0.17        # inches per row of a forest panel
_LABEL_WIDTH = 2.6  # inches for the row labels
_ITEM_ROW = 0.028  # inches per item of the agreement matrix
_NAMED_ROW = 0.15  # inches per named item
#: The items the agreement figure names at most (the hardest first).
MAX_NAMED = 50

_ACCURACY = (*KEYS, "n", "accuracy", "ci_low", "ci_high")
_CONFUSION = (*KEYS, "gold", "predicted", "count")



def _percent_axis(axis) -> None:
    axis.set_major_formatter(PercentFormatter(xmax=100, decimals=0))


def reference_lines(accuracy: pd.DataFrame, task: str) -> list[tuple[float, str, str]]:
    """The lines of a panel of ``task`` (``3-way``, ``4-option``): (fraction, label, style
    key of :data:`REFERENCE_STYLES`), read from the accuracy table's baseline rows (none
    when the table has none), and the paper's human accuracy for the prompted systems."""
    base = accuracy[accuracy["kind"].astype(str) == "baseline"]
    value = {str(s): float(a) for s, a in zip(base["system"], base["accuracy"], strict=True)}
    # the majority class is one line of both tasks: labelled once
    out = [(value[s], f"majority class {100 * value[s]:.1f}%" if s == "majority" else
            f"{s.replace('_', ' ')} {100 * value[s]:.1f}% ({task})", s)
           for s in TASK_BASELINES[task] if s in value]
    if task == "4-option":
        out.append((HUMAN_ACCURACY, f"human {100 * HUMAN_ACCURACY:.1f}% (paper)", "human"))
    return out


def _reference_handles(lines: Sequence[tuple[float, str, str]]) -> list:
    seen = dict.fromkeys((text, key) for _, text, key in lines)
    return [Line2D([], [], color=REFERENCE_STYLES[key][1], linestyle=REFERENCE_STYLES[key][0],
                   linewidth=1.0, label=text) for text, key in seen]


def _draw_references(ax, lines: Sequence[tuple[float, str, str]], *, vertical: bool) -> None:
    for value, _, key in lines:
        ls, colour = REFERENCE_STYLES[key]
        line = ax.axvline if vertical else ax.axhline
        line(100 * value, color=colour, linestyle=ls, linewidth=1.0, zorder=1)


def _layer_views(rows: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(str(v) for v in rows["layer"]))


def _groups(accuracy: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """The panels of :func:`plot_accuracy`: (title, kind, rows), in the order shown."""
    kind = accuracy["kind"].astype(str)
    out = []
    published = accuracy[kind == "published"]
    if len(published):
        order = {s: i for i, s in enumerate(dict.fromkeys(published["setting"].astype(str)))}
        published = published.assign(_s=published["setting"].astype(str).map(order))
        out.append(("published systems", "published",
                    published.sort_values("_s", kind="stable").drop(columns="_s")))
    for k, title in (("behaviour", "local models' own answers (0-shot)"),
                     ("ceiling", "gold ceiling: the classifiers on the human score")):
        rows = accuracy[kind == k]
        if len(rows):
            out.append((title, k, rows))
    represented = accuracy[kind == "representation"]
    selected = accuracy[kind == "selected"]
    for model in dict.fromkeys(represented["system"].astype(str)):
        rows = represented[represented["system"].astype(str) == model]
        chosen = selected[selected["system"].astype(str) == model]
        nested = "nested selection and " if len(chosen) else ""
        if len(_layer_views(rows)) > 1:
            rows = rows[rows["setting"].astype(str) == "all"]
            title = f"{model}: {nested}all-measure classifier per layer view"
        else:
            title = f"{model}: {nested}representation"
        out.append((title, "representation", pd.concat([chosen, rows])))
    return [(t, k, r) for t, k, r in out if len(r)]


def _row_text(row: Mapping, kind: str, layered: bool) -> str:
    """A row's label in its panel (the panel's title names what its rows share)."""
    if kind == "published":
        return f"{row['system']}, {row['setting']}"
    if str(row["setting"]) == "nested":
        return "nested selection (chosen in the training folds)"
    if kind == "representation":
        what = (math_label(str(row["measure"])) if str(row["setting"]) == "single"
                else "all measures")
        if layered:
            return f"layer {row['layer']}, {what}, level {row['level']}"
        return f"{what}, level {row['level']}"
    if kind == "ceiling":
        return "all measures" if str(row["setting"]) == "all" else f"{row['setting']}"
    return label(row)


def _colours(rows: pd.DataFrame, kind: str, settings: list[str]) -> list[str]:
    if kind == "published":
        return [SETTING_COLOURS[settings.index(str(s)) % len(SETTING_COLOURS)]
                for s in rows["setting"]]
    if kind == "representation":
        return [KIND_COLOURS["selected"] if str(k) == "selected"
                else LEVEL_COLOURS.get(str(lv), KIND_COLOURS[kind])
                for k, lv in zip(rows["kind"], rows["level"], strict=True)]
    return [KIND_COLOURS[kind]] * len(rows)


def plot_accuracy(accuracy: pd.DataFrame) -> Figure:
    """Every system row's accuracy with its 95% bootstrap interval over items.

    One panel per group, stacked on a shared 0-100% axis, each row a dot (the accuracy) and
    a line (the interval; none where it was not computed): the published systems, grouped
    and coloured by setting (0-shot, 3-shot ...); the local models' own answers; the gold
    ceiling; and one panel per model's representation, coloured by level (its every
    classifier for a model of one layer view; for a layered model its all-measure classifier
    per layer view and level, the single measures being :func:`plot_layers`'), its nested
    selection first (a diamond). Lines: each panel's own task's baselines
    (:func:`reference_lines`: 3-way for the classifiers, uniform, stratified and majority;
    4-option for the published and local models, four options and majority, with the paper's
    human accuracy). Each panel's title says its ``n`` (items scored: a prediction file may
    hold fewer; a result the paper prints without a file holds none).

    Args:
        accuracy: the ``accuracy`` table of NCC results (fractions).

    Raises:
        UsageError: a table without the columns. NoData: no row.
    """
    accuracy = check_table(accuracy, "accuracy", _ACCURACY, of="NCC results")
    groups = _groups(accuracy)
    if not groups:
        raise NoData("no system row in the accuracy table")
    settings = list(dict.fromkeys(
        accuracy.loc[accuracy["kind"].astype(str) == "published", "setting"].astype(str)))
    heights = [len(rows) * _ROW + 0.45 for _, _, rows in groups]
    with style():
        fig = new_figure(figsize=(_LABEL_WIDTH + 4.2, sum(heights) + 1.3),
                         layout="constrained")
        axes = fig.subplots(len(groups), 1, sharex=True, squeeze=False,
                            gridspec_kw={"height_ratios": heights})[:, 0]
        drawn: list[tuple[float, str, str]] = []
        for ax, (title, kind, rows) in zip(axes, groups, strict=True):
            layered = kind == "representation" and len(_layer_views(accuracy[
                (accuracy["system"].astype(str) == str(rows["system"].iloc[0]))
                & (accuracy["kind"].astype(str) == "representation")])) > 1
            y = np.arange(len(rows))
            value = rows["accuracy"].to_numpy(dtype=float) * 100
            lo = rows["ci_low"].to_numpy(dtype=float) * 100
            hi = rows["ci_high"].to_numpy(dtype=float) * 100
            colours = _colours(rows, kind, settings)
            has = ~(np.isnan(lo) | np.isnan(hi))
            if has.any():
                ax.hlines(y[has], lo[has], hi[has], colors=np.array(colours)[has],
                          linewidth=1.2, zorder=2)
            nested = (rows["setting"].astype(str) == "nested").to_numpy()
            for mark, size, which in (("o", 16, ~nested), ("D", 30, nested)):
                if which.any():
                    ax.scatter(value[which], y[which], s=size, marker=mark,
                               c=np.array(colours)[which], edgecolors="#222222",
                               linewidths=0.4, zorder=3)
            lines = reference_lines(accuracy, PANEL_TASK[kind])
            drawn += lines
            _draw_references(ax, lines, vertical=True)
            ax.set_yticks(y, [_row_text(r, kind, layered) for r in rows.to_dict("records")])
            ax.set_ylim(len(rows) - 0.5, -0.5)
            ax.grid(False, axis="y")
            n = count_range(rows.loc[rows["n"].astype(int) > 0, "n"])
            ax.set_title(f"{title} (n = {n or '?'} items)", loc="left")
        axes[-1].set_xlim(-1, 101)  # a dot at 0% or 100% drawn whole
        _percent_axis(axes[-1].xaxis)
        axes[-1].set_xlabel("accuracy (dot) and its 95% bootstrap interval over items (line)")
        handles = _reference_handles(drawn) + [
            Patch(color=SETTING_COLOURS[i % len(SETTING_COLOURS)], label=s)
            for i, s in enumerate(settings)]
        levels = set(accuracy.loc[accuracy["kind"].astype(str) == "representation", "level"]
                     .astype(str))
        handles += [Patch(color=LEVEL_COLOURS[lv], label=f"representation, level {lv}")
                    for lv in LEVELS if lv in levels]
        if (accuracy["setting"].astype(str) == "nested").any():
            handles.append(Line2D([], [], marker="D", linestyle="", color=KIND_COLOURS[
                "selected"], label="nested selection (chosen in the training folds)"))
        add_legend(fig, handles, ncols=min(len(handles), 4))
        shown = pd.concat([rows for _, _, rows in groups])
        suptitle(fig, "SemanticQA NCC: accuracy of every system row",
                 f"n = {count_range(shown.loc[shown['n'].astype(int) > 0, 'n']) or '?'} "
                 f"items per row; {len(shown)} rows")
    return fig


def plot_layers(accuracy: pd.DataFrame) -> Figure:
    """The representation classifiers of each layered model against the layer view.

    One panel per model with several layer views and level (NC, sentence), the layer views
    on x in the table's order; one line per classifier: the all-measure classifier bold,
    with its 95% bootstrap interval as a band, each single measure a thin line (its interval
    in the tables). Lines: the 3-way baselines (uniform, stratified, majority).

    Raises:
        UsageError: a table without the columns. NoData: no model with several layer views.
    """
    accuracy = check_table(accuracy, "accuracy", _ACCURACY, of="NCC results")
    rows = accuracy[accuracy["kind"].astype(str) == "representation"]
    models = [m for m in dict.fromkeys(rows["system"].astype(str))
              if len(_layer_views(rows[rows["system"].astype(str) == m])) > 1]
    if not models:
        raise NoData("no model with several layer views (a static model has one: its "
                     "classifiers are in the accuracy figure)")
    panels = [(m, lv) for m in models for lv in dict.fromkeys(
        rows.loc[rows["system"].astype(str) == m, "level"].astype(str))]
    measures = list(dict.fromkeys(rows.loc[rows["system"].astype(str).isin(models)
                                           & (rows["setting"].astype(str) == "single"),
                                           "measure"].astype(str)))
    cmap = [f"C{i % 10}" for i in range(len(measures))]
    three_way = reference_lines(accuracy, "3-way")
    ncols = min(len(panels), 2)
    nrows = -(-len(panels) // ncols)
    with style():
        fig = new_figure(figsize=(3.6 * ncols + 0.4, 2.6 * nrows + 1.4), layout="constrained")
        grid = fig.subplots(nrows, ncols, sharey=True, squeeze=False)
        for k, ax in enumerate(grid.ravel()):
            if k >= len(panels):
                ax.set_visible(False)
                continue
            model, level = panels[k]
            sub = rows[(rows["system"].astype(str) == model)
                       & (rows["level"].astype(str) == level)]
            views = _layer_views(sub)
            for j, measure in enumerate(measures):
                line = sub[(sub["setting"].astype(str) == "single")
                           & (sub["measure"].astype(str) == measure)]
                if len(line):
                    ax.plot([views.index(str(v)) for v in line["layer"]],
                            line["accuracy"].to_numpy(dtype=float) * 100, color=cmap[j],
                            linewidth=0.8, marker="o", markersize=2.5, zorder=2)
            every = sub[sub["setting"].astype(str) == "all"]
            if len(every):
                x = [views.index(str(v)) for v in every["layer"]]
                ax.fill_between(x, every["ci_low"].to_numpy(dtype=float) * 100,
                                every["ci_high"].to_numpy(dtype=float) * 100,
                                color="#111111", alpha=0.12, linewidth=0, zorder=1)
                ax.plot(x, every["accuracy"].to_numpy(dtype=float) * 100, color="#111111",
                        linewidth=2.0, marker="o", markersize=3.5, zorder=3)
            _draw_references(ax, three_way, vertical=False)
            ax.set_xticks(range(len(views)), views)
            ax.set_ylim(0, 100)
            _percent_axis(ax.yaxis)
            ax.set_xlabel("layer view")
            ax.set_title(f"{model}, level {level} (n = {count_range(sub['n']) or '?'} items)")
        handles = [Line2D([], [], color="#111111", linewidth=2.0,
                          label="all measures (band: 95% interval)")]
        handles += [Line2D([], [], color=cmap[j], linewidth=0.8, label=math_label(m))
                    for j, m in enumerate(measures)]
        add_legend(fig, handles + _reference_handles(three_way),
                   ncols=min(len(handles) + 3, 5))
        suptitle(fig, "SemanticQA NCC: the representation classifiers by layer view",
                 f"n = {count_range(rows['n']) or '?'} items per classifier")
    return fig


def _matrix(confusion: pd.DataFrame, key: tuple[str, ...], answers: list[str]) -> np.ndarray:
    keep = np.ones(len(confusion), dtype=bool)
    for col, value in zip(KEYS, key, strict=True):
        keep &= confusion[col].astype(str).to_numpy() == value
    sub = confusion[keep]
    out = np.zeros((len(NCC_CLASSES), len(answers)))
    for g, p, c in zip(sub["gold"].astype(str), sub["predicted"].astype(str), sub["count"],
                       strict=True):
        if g in NCC_CLASSES and p in answers:
            out[NCC_CLASSES.index(g), answers.index(p)] = float(c)
    return out


def plot_confusion(confusion: pd.DataFrame, accuracy: pd.DataFrame,
                   rows: Sequence[Sequence[str]] | None = None) -> Figure:
    """Confusion matrices, one panel per system row: the gold class (rows NC, PC, C) against
    the answer (columns NC, PC, C, then ``none`` and ``unanswered`` where any shown row gave
    them), each cell its count of items, coloured on one scale for every panel. Each
    panel's title: the row's label, its accuracy and ``n``.

    Args:
        confusion: the ``confusion`` table of NCC results.
        accuracy: the ``accuracy`` table (each panel's accuracy and ``n``).
        rows: the system rows to show, each as its key values (:data:`ncprobe.ncc.stats.KEYS`
            order), in the order shown; default: every row of ``accuracy``.

    Raises:
        UsageError: a table without the columns, or a row given that ``accuracy`` lacks.
        NoData: no row to show.
    """
    confusion = check_table(confusion, "confusion", _CONFUSION, of="NCC results")
    accuracy = check_table(accuracy, "accuracy", _ACCURACY, of="NCC results")
    by_key = {tuple(str(r[k]) for k in KEYS): r for r in accuracy.to_dict("records")}
    keys = list(by_key) if rows is None else [tuple(map(str, r)) for r in rows]
    unknown = [" ".join(k) for k in keys if k not in by_key]
    if unknown:
        raise UsageError(f"rows: {', '.join(unknown[:3])} not in the accuracy table")
    if not keys:
        raise NoData("no system row to show")
    shown = confusion[[tuple(str(r[k]) for k in KEYS) in set(keys)
                       for r in confusion.to_dict("records")]]
    given = set(shown.loc[shown["count"].astype(float) > 0, "predicted"].astype(str))
    answers = [a for a in ANSWERS if a in NCC_CLASSES or a in given]
    matrices = [_matrix(confusion, k, answers) for k in keys]
    top = max(float(m.max()) for m in matrices) or 1.0
    ncols = min(len(keys), 4)
    nrows = -(-len(keys) // ncols)
    width = 0.42 * len(answers) + 0.9
    with style():
        fig = new_figure(figsize=(width * ncols + 0.8, 2.3 * nrows + 0.9), layout="constrained")
        grid = fig.subplots(nrows, ncols, squeeze=False)
        image = None
        for k, ax in enumerate(grid.ravel()):
            if k >= len(keys):
                ax.set_visible(False)
                continue
            m, row = matrices[k], by_key[keys[k]]
            image = ax.imshow(m, cmap="Blues", vmin=0, vmax=top, aspect="auto")
            for (i, j), c in np.ndenumerate(m):
                ax.text(j, i, f"{int(c)}", ha="center", va="center", fontsize=7,
                        color="white" if c > 0.6 * top else "#222222")
            ax.set_xticks(range(len(answers)), answers)
            ax.set_yticks(range(len(NCC_CLASSES)), NCC_CLASSES)
            ax.grid(False)
            name = "\n".join(textwrap.wrap(label(row), 28))
            ax.set_title(f"{name}\n{100 * float(row['accuracy']):.1f}%, n = {int(row['n'])}",
                         fontsize=7)
            if k % ncols == 0:
                ax.set_ylabel("gold")
            if k // ncols == nrows - 1 or k + ncols >= len(keys):
                ax.set_xlabel("answer")
        if image is not None:
            fig.colorbar(image, ax=grid.ravel().tolist(), shrink=0.6, label="items")
        n = count_range(accuracy.loc[[k in set(keys) for k in by_key], "n"])
        suptitle(fig, "SemanticQA NCC: gold class (rows) against answer (columns)",
                 f"n = {n or '?'} items per panel; {len(keys)} system row(s)")
    return fig


def plot_agreement(agreement: pd.DataFrame, kinds: Mapping[str, str]) -> Figure:
    """Which items the systems get right: items x systems, right or wrong.

    Left, every item on a row (in the order of ``agreement``: by how many systems get it
    right, fewest first), every system a column (grouped by kind, separated by lines): right,
    wrong, or not answered (an item a prediction file lacks). Right, when there are such
    items, the items that every system misses and those that only the representation gets
    right, named (compound and gold class; the first :data:`MAX_NAMED`).

    Args:
        agreement: :meth:`NccResults.agreement <ncprobe.ncc.results.NccResults.agreement>`:
            ``item``, ``nc``, ``gold``, ``missed_by_all``, ``only_representation`` and one
            column per system (True, False or missing), sorted.
        kinds: each system column's kind, in the order shown.

    Raises:
        UsageError: a table without the columns, or a system column it lacks. NoData: no
            item or no system.
    """
    agreement = check_table(agreement, "agreement", ("item", "nc", "gold", "missed_by_all",
                                                "only_representation", *kinds),
                            of="NCC results")
    systems = list(kinds)
    if agreement.empty or not systems:
        raise NoData("no item or no system to show")
    values = agreement[systems].astype("float64").to_numpy()  # right 1, wrong 0, NaN
    named = agreement[agreement["missed_by_all"].astype(bool)
                      | agreement["only_representation"].astype(bool)].head(MAX_NAMED)
    cmap = ListedColormap(AGREEMENT_COLOURS).with_extremes(bad=_UNANSWERED)
    every = max(_ITEM_ROW * len(agreement), 1.5)   # inches of the item matrix
    few = _NAMED_ROW * len(named)                  # ... and of the named items
    # room for the systems' names (turned upright) under the matrices
    height = max(every, few) + 1.6 + 0.055 * max(len(s) for s in systems)
    width = 0.16 * len(systems) + 1.0
    with style():
        fig = new_figure(figsize=(2 * width + 2.4 if len(named) else width + 1.2, height),
                         layout="constrained")
        if not len(named):
            axes = [fig.add_subplot()]
        elif few < every:  # the named items' rows as tall as they need, at the top
            grid = fig.add_gridspec(2, 2, height_ratios=[few, every - few])
            axes = [fig.add_subplot(grid[:, 0]), fig.add_subplot(grid[0, 1])]
        else:
            axes = list(fig.subplots(1, 2))
        panels = [(axes[0], values, "every item, fewest systems right first")]
        if len(named):
            panels.append((axes[1], named[systems].astype("float64").to_numpy(),
                           "missed by every system / right only by the representation"))
        kind_of = [str(kinds[s]) for s in systems]
        bounds = [j for j in range(1, len(systems)) if kind_of[j] != kind_of[j - 1]]
        for ax, data, title in panels:
            ax.imshow(np.ma.masked_invalid(data), cmap=cmap, vmin=0, vmax=1,
                      aspect="auto", interpolation="nearest")
            for j in bounds:
                ax.axvline(j - 0.5, color="#222222", linewidth=0.8)
            ax.set_xticks(range(len(systems)), systems, rotation=90, fontsize=6)
            ax.grid(False)
            ax.set_title(title, fontsize=8)
        axes[0].set_yticks([])
        axes[0].set_ylabel(f"{len(agreement)} items")
        if len(named):
            marks = ["missed by all" if bool(m) else "only representation"
                     for m in named["missed_by_all"]]
            axes[1].set_yticks(range(len(named)), [
                f"{nc} ({gold}; {mark})" for nc, gold, mark in zip(
                    named["nc"], named["gold"], marks, strict=True)], fontsize=6)
        handles = [Patch(color=AGREEMENT_COLOURS[1], label="right"),
                   Patch(color=AGREEMENT_COLOURS[0], label="wrong"),
                   Patch(color=_UNANSWERED, label="not in the system's file")]
        add_legend(fig, handles)
        groups = ", ".join(f"{sum(k == kind for k in kind_of)} {kind}" for kind in KINDS
                           if kind in kind_of)
        suptitle(fig, "SemanticQA NCC: which items each system gets right",
                 f"n = {len(agreement)} items; {len(systems)} systems ({groups})")
    return fig
