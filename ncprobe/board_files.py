"""A board (:class:`ncprobe.board.Board`) as files: its table as Markdown, LaTeX and CSV, its
tests as CSV, a figure (each model's value with its interval, one panel per probe) and a
self-contained HTML page (the table with sortable columns and the figure inline: no network,
no external script or style), written as ncprobe's own files (:mod:`ncprobe.owned`: a
directory holding files ncprobe did not write, or inside a results directory, is refused
before anything is written). Presentation only: the numbers are the board's.

The HTML page sorts by a column when its header is clicked, and on load by the address's
``#sort=COLUMN`` (``#sort=COLUMN:desc``; ``COLUMN`` is a header's ``data-key``): a model a
probe lacks stays below the ranked ones whatever the direction, shown as ``missing``.
"""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from .board import Board
from .tables import to_latex, to_markdown

#: The report kind of a board directory (its manifest's), and its label in messages.
KIND = "board"
LABEL = "board (ncprobe board)"
#: The files a board writes, less its figure (``board.<format>``).
TABLE_FILES = ("board.md", "board.tex", "board.csv", "tests.csv", "board.html")
#: What a cell of a probe a model lacks says.
MISSING = "missing"


def _num(x: float, digits: int = 3) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _rank(x: float) -> str:
    return "" if x is None or math.isnan(x) else str(int(x))


def wide_table(board: Board) -> pd.DataFrame:
    """The board as display strings: one row per model, per probe its metric with the
    interval, its rank with the rank interval and its tier (``missing`` where the probe lacks
    the model)."""
    out = pd.DataFrame(index=pd.Index(list(board.models), name="model"))
    for h in board.headlines:
        cells = board.cells[board.cells["probe"] == h.probe].set_index("model")
        value, rank, tier = [], [], []
        for m in board.models:
            c = cells.loc[m]
            if bool(c["missing"]):
                value.append(MISSING)
                rank.append(MISSING)
                tier.append(MISSING)
                continue
            value.append(f"{_num(c['value'])} [{_num(c['ci_low'])}, {_num(c['ci_high'])}]")
            rank.append(f"{_rank(c['rank'])} [{_rank(c['rank_low'])}, {_rank(c['rank_high'])}]")
            tier.append(_rank(c["tier"]))
        out[f"{h.title} {h.metric}"] = value
        out[f"{h.title} rank"] = rank
        out[f"{h.title} tier"] = tier
    return out


def notes(board: Board) -> list[str]:
    """What the tables' reader must know: each probe's metric, cell and unit, the draws, the
    tests and the tiers."""
    pct = f"{board.level:.0%}"
    lines = [f"Intervals: {pct} percentile intervals over {board.n_boot} draws (seed "
             f"{board.seed}) of each probe's unit, the same draws for every model of the probe; "
             f"rank [rank interval]: 1 is best, the interval the {pct} range of the model's "
             "ranks over those draws. Tiers: models in order of their value; a model joins "
             "the current tier unless the paired bootstrap test against the tier's best is "
             f"significant after Holm's correction over the probe's pairs (alpha "
             f"{board.alpha}). A model a probe lacks is 'missing', never ranked."]
    for h in board.headlines:
        cells = board.cells[(board.cells["probe"] == h.probe) & ~board.cells["missing"]]
        where = "; ".join(dict.fromkeys(f"{m}: {c}" for m, c in h.cell.items()))
        n = int(cells["n_units"].iloc[0]) if len(cells) else 0
        lines.append(f"{h.title} ({h.probe}): {h.metric}, "
                     f"{'higher' if h.higher_is_better else 'lower'} is better, resampling "
                     f"{n} {h.unit}" + (f"; {where}" if where else ""))
        lines += [f"{h.title}: {note}" for note in h.notes]
    return lines


def markdown(board: Board) -> str:
    """The board's Markdown: the table, then the notes."""
    return (to_markdown(wide_table(board)) + "\n"
            + "\n".join(f"- {line}" for line in notes(board)) + "\n")


def latex(board: Board) -> str:
    """The board's LaTeX table (booktabs), its notes as the caption."""
    return to_latex(wide_table(board), caption=" ".join(notes(board)))


def csv_text(df: pd.DataFrame) -> str:
    return df.to_csv(index=False, lineterminator="\n", float_format="%.6g")


def figure(board: Board):
    """The board's figure: one panel per probe, each model's value as a dot with its interval
    as a line (a model the probe lacks: ``missing`` at the axis)."""
    from .plots.theme import PANEL_WIDTH, new_figure

    n = len(board.headlines)
    fig = new_figure(figsize=(PANEL_WIDTH * n, 0.45 * len(board.models) + 1.0),
                     layout="constrained")
    axes = fig.subplots(1, n, sharey=True, squeeze=False)[0]
    ys = list(range(len(board.models)))[::-1]
    for ax, h in zip(axes, board.headlines, strict=True):
        cells = board.cells[board.cells["probe"] == h.probe].set_index("model")
        for y, m in zip(ys, board.models, strict=True):
            c = cells.loc[m]
            if bool(c["missing"]):
                ax.annotate(MISSING, (0.02, y), xycoords=("axes fraction", "data"),
                            va="center", color="0.45", fontstyle="italic")
                continue
            ax.plot([c["ci_low"], c["ci_high"]], [y, y], color="0.3", lw=1.2)
            ax.plot([c["value"]], [y], "o", color="#3a6fc2", ms=5)
        ax.set_title(f"{h.title}\n{h.metric}")
        ax.set_yticks(ys, list(board.models))
        ax.set_ylim(-0.6, len(board.models) - 0.4)
        ax.grid(axis="x", color="0.9")
    return fig


_SCRIPT = """
(function () {
  var table = document.getElementById("board");
  var body = table.tBodies[0];
  function value(row, i) {
    var cell = row.cells[i];
    if (cell.getAttribute("data-missing") === "1") { return null; }
    var v = cell.getAttribute("data-sort");
    var num = parseFloat(v);
    return isNaN(num) ? v : num;
  }
  function sortBy(key, dir) {
    var heads = table.tHead.rows[0].cells, i = -1;
    for (var k = 0; k < heads.length; k++) {
      if (heads[k].getAttribute("data-key") === key) { i = k; }
      heads[k].removeAttribute("aria-sort");
    }
    if (i < 0) { return; }
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = value(a, i), y = value(b, i);
      if (x === null || y === null) { return (x === null) - (y === null); }
      var c = x < y ? -1 : (x > y ? 1 : 0);
      return dir === "desc" ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    heads[i].setAttribute("aria-sort", dir === "desc" ? "descending" : "ascending");
    table.setAttribute("data-sorted", key + ":" + dir);
  }
  var heads = table.tHead.rows[0].cells;
  for (var k = 0; k < heads.length; k++) {
    heads[k].addEventListener("click", function () {
      var now = this.getAttribute("aria-sort");
      sortBy(this.getAttribute("data-key"), now === "ascending" ? "desc" : "asc");
    });
  }
  var m = /[#&]sort=([^:&]+)(?::(asc|desc))?/.exec(window.location.hash);
  if (m) { sortBy(decodeURIComponent(m[1]), m[2] || "asc"); }
})();
"""

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 14px; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: right; }
td { white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { cursor: pointer; background: #f3f3f3; user-select: none; }
th[aria-sort=ascending]::after { content: " \\25B2"; }
th[aria-sort=descending]::after { content: " \\25BC"; }
td[data-missing="1"] { color: #888; font-style: italic; }
img { max-width: 100%; margin-top: 1.5em; }
li { margin: 0.3em 0; }
"""


def html_page(board: Board, png: bytes) -> str:
    """The board as one self-contained HTML page: the table (sortable), the notes and the
    figure (``png``, inline)."""
    heads = [("model", "model")] + [
        (f"{h.probe}-{what}", f"{h.title} {h.metric if what == 'value' else what}")
        for h in board.headlines for what in ("value", "rank", "tier")]
    head = "".join(f'<th data-key="{html.escape(k)}" scope="col">{html.escape(t)}</th>'
                   for k, t in heads)
    rows = []
    for m in board.models:
        tds = [f'<td data-sort="{html.escape(m)}">{html.escape(m)}</td>']
        for h in board.headlines:
            c = board.cells[(board.cells["probe"] == h.probe)
                            & (board.cells["model"] == m)].iloc[0]
            if bool(c["missing"]):
                tds += [f'<td data-missing="1" data-sort="">{MISSING}</td>'] * 3
                continue
            # sorted ascending, the best first: the value by its direction, rank and tier
            shown = [(f"{_num(c['value'])} [{_num(c['ci_low'])}, {_num(c['ci_high'])}]",
                      c["value"]),
                     (f"{_rank(c['rank'])} [{_rank(c['rank_low'])}, {_rank(c['rank_high'])}]",
                      c["rank"]),
                     (_rank(c["tier"]), c["tier"])]
            tds += [f'<td data-sort="{json.dumps(float(key))}">{html.escape(text)}</td>'
                    for text, key in shown]
        rows.append(f'<tr data-model="{html.escape(m)}">' + "".join(tds) + "</tr>")
    items = "".join(f"<li>{html.escape(line)}</li>" for line in notes(board))
    img = base64.b64encode(png).decode("ascii")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<link rel=\"icon\" href=\"data:,\">\n"
            "<title>ncprobe board</title>\n<style>" + _STYLE + "</style>\n</head>\n<body>\n"
            "<h1>Models across probes</h1>\n"
            "<p>Click a column's header to sort by it (again: the other way).</p>\n"
            f"<table id=\"board\">\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
            + "\n".join(rows) + "\n</tbody>\n</table>\n"
            f"<ul>{items}</ul>\n"
            f"<img alt=\"each model's value with its interval, one panel per probe\" "
            f"src=\"data:image/png;base64,{img}\">\n"
            "<script>" + _SCRIPT + "</script>\n</body>\n</html>\n")


def planned(formats: Sequence[str]) -> list[str]:
    """Every file a board with figure formats ``formats`` writes."""
    return [*TABLE_FILES, *(f"board.{fmt}" for fmt in formats)]


def check_board_dir(out: str | Path, formats: Sequence[str], *, overwrite: bool = False
                    ) -> None:
    """Refuse, before any work, an ``--out`` a board cannot be written to
    (:func:`ncprobe.owned.check_report_dir`: inside a results directory, holding files
    ncprobe did not write, another kind of report without ``overwrite``)."""
    from .owned import check_report_dir

    check_report_dir(out, lambda: planned(formats), kind=KIND, label=LABEL,
                     overwrite=overwrite)


def write_board(board: Board, out: str | Path, *, formats: Sequence[str] = ("png", "pdf"),
                dpi: int = 200, overwrite: bool = False,
                progress: Callable[[str], None] | None = None) -> list[Path]:
    """Write ``board`` into ``out`` (Markdown, LaTeX, CSV of the cells and of the tests, the
    figure in every format, the HTML page) as ncprobe's own files; returns the files."""
    from .drawing import figure_bytes
    from .owned import Put, write_owned
    from .plots.theme import style

    check_board_dir(out, formats, overwrite=overwrite)
    with style():
        blobs = figure_bytes(figure(board), sorted({*formats, "png"}), dpi)
    files = {"board.md": markdown(board).encode(), "board.tex": latex(board).encode(),
             "board.csv": csv_text(board.cells).encode(),
             "tests.csv": csv_text(board.tests).encode(),
             **{f"board.{fmt}": blobs[fmt] for fmt in formats},
             "board.html": html_page(board, blobs["png"]).encode()}

    def write(put: Put) -> list[Path]:
        done = []
        for name, data in files.items():
            put({Path(out) / name: data})
            done.append(Path(out) / name)
            if progress is not None:
                progress(f"wrote {Path(out) / name}")
        return done

    return write_owned(out, planned(formats), write, kind=KIND, label=LABEL,
                       possible=None, overwrite=overwrite)
