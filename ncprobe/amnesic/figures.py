"""The amnesic report's figure: what erasing the concept changed, against the layer view, with
the control's band, one panel per target.

Each panel is a target (NCIMP, AStitch, NCC). Its lines are cells of the target (a metric at a
level and context): ``erased - plain`` against the layer view, a line with markers, and the
control's ``control - plain`` paired interval as a band of the line's colour behind it: where
the line leaves its band, erasing the concept moved the target more than erasing random
directions of the same rank did. A target has many cells (NCIMP: 11 measures x 2 levels x 2
contexts); a panel draws the :data:`MAX_LINES` whose ``erased - control`` is largest at some
view, leaving out the cells that share the concept's training rows
(``shares_concept_rows``: their change answers no question of use), and says how many it
drew of how many. A model of one view (a static model) is a marker with bars.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..intervention import TESTED

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

#: The most cells a panel draws.
MAX_LINES = 6
#: The change drawn as a line, and the one drawn as its band.
LINE, BAND = "erased - plain", "control - plain"
#: What makes a cell of a target.
CELL = ("metric", "level", "context")


def _chosen(part: pd.DataFrame) -> tuple[list[tuple[str, str, str]], int]:
    """The cells of one target's rows to draw (largest ``|erased - control|`` at any view
    first, the cells sharing the concept's rows left out) and how many cells it has."""
    tested = part[part["condition"] == TESTED]
    shares = tested["shares_concept_rows"].astype("boolean").fillna(False).to_numpy(bool)
    tested = tested[~shares]
    size = tested.assign(size=tested["value"].abs()).groupby(
        list(CELL), sort=False)["size"].max().fillna(-1.0)
    cells = [tuple(str(v) for v in c) for c in size.sort_values(
        ascending=False, kind="stable").index]
    return cells[:MAX_LINES], len(cells)  # type: ignore[return-value]


def draw_changes(changes: pd.DataFrame) -> Figure:
    """The figure of ``changes`` (the results' table; the module says what it draws).

    Raises:
        ValueError: a table without change rows.
    """
    from ..plots.theme import PANEL_HEIGHT, PANEL_WIDTH, add_legend, declutter, new_figure, style

    rows = changes[changes["condition"].isin((LINE, BAND, TESTED))]
    if rows.empty:
        raise ValueError("no change rows to draw (erased - plain, control - plain)")
    targets = list(dict.fromkeys(rows["target"].astype(str)))
    with style():
        fig = new_figure(figsize=(1.5 * PANEL_WIDTH * len(targets) + 0.4,
                                  1.4 * PANEL_HEIGHT + 1.6), layout="constrained")
        axes = fig.subplots(1, len(targets), squeeze=False)[0]
        for ax, target in zip(axes, targets, strict=True):
            part = rows[rows["target"].astype(str) == target]
            views = list(dict.fromkeys(part["layer"].astype(str)))
            cells, total = _chosen(part)
            for k, cell in enumerate(cells):
                colour = f"C{k % 10}"
                at = part[(part[list(CELL)].astype(str) == list(cell)).all(axis=1)]
                line, band = (at[at["condition"] == c].set_index(
                    at.loc[at["condition"] == c, "layer"].astype(str)).reindex(views)
                    for c in (LINE, BAND))
                _line(ax, views, line, band, colour, " ".join(cell))
            ax.axhline(0.0, color="#444444", linewidth=0.6, zorder=0)
            ax.set_xticks(range(len(views)), views)
            ax.set_xlim(-0.5, len(views) - 0.5)
            ax.set_xlabel("layer view")
            ax.set_title(f"{target}\n{len(cells)} of {total} cells (largest erased - control)")
            add_legend(ax, ax.get_legend_handles_labels()[0])
        axes[0].set_ylabel("erased - plain (line), control - plain (band)")
        fig.suptitle("what erasing the concept changed, against the control's band (95% "
                     "paired intervals)")
        declutter(fig)
    return fig


def _line(ax, views: list[str], line: pd.DataFrame, band: pd.DataFrame, colour: str,
          label: str) -> None:
    """One cell: ``erased - plain`` with markers, the control's interval as a band (bars
    for one view)."""
    x = np.arange(len(views), dtype=float)
    value = line["value"].to_numpy(dtype=float)
    lo, hi = (band[c].to_numpy(dtype=float) for c in ("ci_low", "ci_high"))
    has = np.isfinite(lo) & np.isfinite(hi)
    if len(views) == 1:
        if has[0]:
            ax.vlines(x, lo, hi, color=colour, alpha=0.35, linewidth=6.0, zorder=1)
        ax.plot(x, value, "o", color=colour, markersize=4, zorder=3, label=label)
        return
    if has.any():
        ax.fill_between(x, np.where(has, lo, np.nan), np.where(has, hi, np.nan),
                        color=colour, alpha=0.15, linewidth=0, zorder=1)
    ax.plot(x, value, color=colour, linewidth=1.3, marker="o", markersize=2.5, zorder=3,
            label=label)
