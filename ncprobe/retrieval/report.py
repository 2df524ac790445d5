"""The retrieval probe's report (IdioLink): the paper's Table 2, the paired tests, the figures.

:func:`table2` lays out the ``overall`` table of a retrieval run as the paper's Table 2: one
row per model (in run order), one group of columns per query mode (Sentence, Span,
Instruction sentence, Instruction span), each with R-Precision (``R-Prec``) and nDCG@10, in
percent with 2 decimals; "–" where a model has no such mode (the BM25 control has only
Sentence and Span). :func:`table2_markdown` and :func:`table2_latex` render it, with the 95%
idiom-cluster bootstrap interval of each figure and a dagger on the figures that reordering
only tied documents could move (the tie range, in a footnote). :func:`paired_tests_table` (and its
Markdown and LaTeX forms) shows the paired tests between modes or models.

:func:`write_retrieval_report` writes all of it, and the figures of
:mod:`ncprobe.retrieval.figures`, into one directory with a ``README.md`` index, as ncprobe's
own files: the ownership manifest, atomic writes, refusal to replace a file ncprobe did not
write, resuming after an interruption, and the figures saved in every format are those of
every probe's report (:func:`ncprobe.report_files.write_probe_report`).

The tables come as a mapping of DataFrames (the tables of a retrieval run: ``overall``,
``per_idiom`` and ``tests``; metrics as fractions) plus the run's metadata.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import pandas as pd

from .._version import VERSION as __version__
from ..errors import UsageError
from ..report_files import (
    check_report_args,
    check_report_meta,
    figure_lines,
    meta_lines,
    write_probe_report,
)
from ..significance import STARS_NOTE, corrected_text, families_of, finite, p_text, stars
from .queries import QUERY_MODES, USAGE_NAMES, check_mode_table, mode_label

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..report_files import Drawn

__all__ = ["DAGGER", "METRICS", "MISSING", "MODES", "USAGES", "mode_label", "paired_tests_latex",
           "paired_tests_markdown", "paired_tests_table", "table2", "table2_latex",
           "table2_markdown", "write_retrieval_report"]

log = logging.getLogger(__name__)

#: The query modes, in the order of the paper's columns.
MODES = QUERY_MODES
#: The metrics (fractions in the tables), with their column labels in Table 2.
METRICS = {"r_precision": "R-Prec", "ndcg@10": "nDCG@10"}
#: The query usages, one section each, with their names.
USAGES = USAGE_NAMES
#: A cell of a mode the model has no figure for.
MISSING = "–"
#: The mark of a figure that reordering only tied documents could move.
DAGGER = "†"

_OVERALL = ("model", "mode", "usage", "n", "n_idioms") + tuple(
    f"{m}{suffix}" for m in METRICS for suffix in ("", "_lo", "_hi", "_min", "_max"))
_PER_IDIOM = ("model", "mode", "idiom", "usage", "n", "r_precision", "ndcg@10")
_TESTS = ("model_a", "mode_a", "model_b", "mode_b", "usage", "metric", "a", "b", "diff",
          "diff_lo", "diff_hi", "p", "p_corrected", "significant", "n", "n_idioms")
#: Columns of the tests table that name the test and the correction, when it has them.
_TEST_NAMES = ("test", "correction")
#: The figures of the report, in order: (file stem, (figure, metric)).
_FIGURES = (("fig01_modes_r_precision", ("modes", "r_precision")),
            ("fig02_modes_ndcg10", ("modes", "ndcg@10")),
            ("fig03_idioms_r_precision", ("idioms", "r_precision")),
            ("fig04_idioms_ndcg10", ("idioms", "ndcg@10")))
_TABLES = ("table_retrieval", "table_retrieval_tests")
#: The kind of this report, recorded in its manifest: the probe whose results it shows.
KIND = "idiolink"
#: This report in words, in messages (``a retrieval report (IdioLink)``; the probe's results
#: layout carries it, :mod:`ncprobe.retrieval.results`).
LABEL = "retrieval report (IdioLink)"


# ---------------------------------------------------------------------------------------------
# input checks


def _check_overall(overall: Any) -> pd.DataFrame:
    overall = check_mode_table(overall, "overall", _OVERALL)
    usages = sorted({str(u) for u in overall["usage"]} - set(USAGES))
    if usages:
        raise UsageError(f"tables['overall']: unknown usage(s) {', '.join(usages)}; the usages "
                         f"are {', '.join(USAGES)}")
    keys = overall[["model", "mode", "usage"]].astype(str)
    twice = keys[keys.duplicated()]
    if len(twice):
        first = twice.iloc[0]
        raise UsageError(f"tables['overall']: {len(twice)} row(s) given twice, e.g. model "
                         f"{first['model']}, mode {first['mode']}, usage {first['usage']}; "
                         "give one row per model, mode and usage (one run per model)")
    return overall


def _check_usage(usage: str) -> str:
    if usage not in USAGES:
        raise UsageError(f"usage={usage!r}: choose from {', '.join(USAGES)}")
    return usage


# ---------------------------------------------------------------------------------------------
# Table 2



def _pct(x: float) -> str:
    """A fraction in percent, 2 decimals."""
    return f"{float(x) * 100:.2f}"


@dataclass(frozen=True)
class _Cell:
    """One figure of Table 2, as shown."""

    value: str                 # "36.04", or MISSING
    interval: str | None       # "[34.10, 38.00]": the 95% bootstrap interval, when computed
    ties: str | None           # "47.78–50.74": the tie range, when ties could move the figure


def _cell(row: pd.Series | None, metric: str) -> _Cell:
    if row is None or not finite(row[metric]):
        return _Cell(MISSING, None, None)
    lo, hi = row[f"{metric}_lo"], row[f"{metric}_hi"]
    interval = f"[{_pct(lo)}, {_pct(hi)}]" if finite(lo) and finite(hi) else None
    tmin, tmax = row[f"{metric}_min"], row[f"{metric}_max"]
    ties = None
    if finite(tmin) and finite(tmax) and float(tmin) != float(tmax):
        a, b = _pct(tmin), _pct(tmax)
        if a == b:  # ties move the figure by less than the shown decimals: say how little
            a, b = f"{float(tmin) * 100:.4f}", f"{float(tmax) * 100:.4f}"
        ties = f"{a}–{b}"
    return _Cell(_pct(row[metric]), interval, ties)


@dataclass(frozen=True)
class _Layout:
    """Table 2 of one usage: its models (rows), modes (column groups) and cells."""

    usage: str
    models: list[str]
    modes: list[str]
    cells: dict[tuple[str, str, str], _Cell]   # (model, mode, metric) -> cell

    def ties(self) -> list[str]:
        """The footnote's entries: ``bm25 Span R-Prec 47.78–50.74``, in table order."""
        return [f"{model} {mode_label(mode)} {METRICS[metric]} {cell.ties}"
                for model in self.models for mode in self.modes for metric in METRICS
                if (cell := self.cells[model, mode, metric]).ties]

    def has_intervals(self) -> bool:
        return any(c.interval for c in self.cells.values())


def _layout(overall: pd.DataFrame, usage: str) -> _Layout:
    overall = _check_overall(overall)
    usage = _check_usage(usage)
    models = list(dict.fromkeys(str(m) for m in overall["model"]))  # run order
    held = {str(m) for m in overall["mode"]}
    modes = [m for m in MODES if m in held]
    rows = {(str(r["model"]), str(r["mode"])): r for _, r in overall.iterrows()
            if str(r["usage"]) == usage}
    cells = {(model, mode, metric): _cell(rows.get((model, mode)), metric)
             for model in models for mode in modes for metric in METRICS}
    return _Layout(usage, models, modes, cells)


def _text(cell: _Cell, intervals: bool) -> str:
    text = cell.value + (DAGGER if cell.ties else "")
    return text + (f" {cell.interval}" if intervals and cell.interval else "")


def table2(overall: pd.DataFrame, usage: str = "all", *, intervals: bool = True) -> pd.DataFrame:
    """The paper's Table 2 for one query usage, as a DataFrame of display strings.

    One row per model, in run order (the order the models first appear in ``overall``),
    indexed by ``model``; the columns a MultiIndex (``mode``, ``metric``): the query modes
    that any model of ``overall`` has, in the paper's order (Sentence, Span, Instruction
    sentence, Instruction span), each with ``R-Prec`` and ``nDCG@10``. A cell is the figure in
    percent with 2 decimals (the fraction x 100), ``†`` after it where reordering only tied
    documents could move it (its ``_min`` and ``_max`` differ; the ranges are in
    ``df.attrs["ties"]``), and with ``intervals`` its 95% bootstrap interval,
    ``49.15† [46.80, 51.40]`` (none where it was not computed); "–" where the model has no
    such mode.

    Args:
        overall: the ``overall`` table of a retrieval run (fractions).
        usage: ``all``, ``literal`` or ``idiomatic``.
        intervals: add the bootstrap intervals to the cells.

    Raises:
        UsageError: an unknown usage or query mode, a table without the columns, or a model,
            mode and usage given twice.
    """
    lay = _layout(overall, usage)
    columns = pd.MultiIndex.from_tuples(
        [(mode_label(mode), label) for mode in lay.modes for label in METRICS.values()],
        names=["mode", "metric"])
    data = [[_text(lay.cells[model, mode, metric], intervals)
             for mode in lay.modes for metric in METRICS] for model in lay.models]
    out = pd.DataFrame(data, index=pd.Index(lay.models, name="model", dtype=object),
                       columns=columns, dtype=object)
    out.attrs["ties"] = lay.ties()
    out.attrs["note"] = _note(lay, intervals)
    return out


def _note(lay: _Layout, intervals: bool) -> str:
    """What the cells of a Table 2 mean (below the table)."""
    parts = ["percent, 2 decimals"]
    if intervals and lay.has_intervals():
        parts.append("[95% idiom-cluster bootstrap interval]")
    if any(c.value == MISSING for c in lay.cells.values()):
        parts.append(f"{MISSING}: the model has no such query mode")
    return "; ".join(parts)


def _ties_note(entries: Sequence[str]) -> str:
    return ("ties: reordering only tied documents could move these figures (tie range, "
            "percent): " + "; ".join(entries))


def table2_markdown(overall: pd.DataFrame, usage: str = "all", *,
                    intervals: bool = True) -> str:
    """:func:`table2` as a GitHub-flavoured Markdown table (one header row: ``Sentence
    R-Prec`` ...), followed by what the cells mean and, where figures are marked ``†``, their
    tie ranges."""
    from ..tables import to_markdown

    df = table2(overall, usage, intervals=intervals)
    flat = df.copy()
    flat.columns = [f"{mode} {metric}" for mode, metric in df.columns]
    text = to_markdown(flat) + f"\nCells: {df.attrs['note']}.\n"
    if df.attrs["ties"]:
        text += f"\n{DAGGER} {_ties_note(df.attrs['ties'])}.\n"
    return text


def _tex(text: str) -> str:
    """A cell or caption in LaTeX text mode: :func:`ncprobe.tables.latex_escape`, with the
    dash of a missing cell and the dagger in LaTeX's own spelling."""
    from ..tables import latex_escape

    return (latex_escape(text).replace(MISSING, "--").replace(DAGGER, r"$^\dagger$"))


def _tex_row(cells: Sequence[str]) -> str:
    line = " & ".join(cells) + r" \\"
    # a row whose first cell begins with "[" would be read as the optional argument of the
    # "\\" ending the row before it
    return "{}" + line if line.startswith("[") else line


def table2_latex(overall: pd.DataFrame, usage: str = "all", *, intervals: bool = True,
                 caption: str | None = None) -> str:
    """:func:`table2` as a booktabs ``tabular`` inside a ``table``.

    The query modes are ``\\multicolumn`` group headers over their two metrics (with
    ``\\cmidrule`` under each); with ``intervals``, each model's bootstrap intervals are a
    second row in ``\\scriptsize``; figures that ties could move carry ``$^\\dagger$`` and a
    footnote under the table gives their tie ranges. Every name, cell and the caption are
    escaped (:func:`ncprobe.tables.latex_escape`). Needs ``\\usepackage{booktabs}``.

    Args:
        caption: the table's caption; default: the usage and what the cells are.
    """
    lay = _layout(overall, usage)
    n_cols = 1 + 2 * len(lay.modes)
    lines = [r"\begin{table}[ht]", r"\centering", r"\small",
             r"\begin{tabular}{l" + "r" * (n_cols - 1) + "}", r"\toprule"]
    if lay.modes:
        lines.append(_tex_row([""] + [r"\multicolumn{2}{c}{" + _tex(mode_label(m)) + "}"
                                      for m in lay.modes]))
        lines.append(" ".join(rf"\cmidrule(lr){{{2 + 2 * i}-{3 + 2 * i}}}"
                              for i in range(len(lay.modes))))
    lines.append(_tex_row(["Model"] + [_tex(label) for _ in lay.modes
                                       for label in METRICS.values()]))
    lines.append(r"\midrule")
    for model in lay.models:
        row = [lay.cells[model, mode, metric] for mode in lay.modes for metric in METRICS]
        lines.append(_tex_row([_tex(model)] + [_tex(_text(c, False)) for c in row]))
        if intervals and any(c.interval for c in row):
            lines.append(_tex_row([""] + [r"{\scriptsize " + _tex(c.interval) + "}"
                                          if c.interval else "" for c in row]))
    lines += [r"\bottomrule", r"\end{tabular}"]
    ties = lay.ties()
    if ties:
        lines.append(r"\par\smallskip{\footnotesize $^\dagger$ " + _tex(_ties_note(ties))
                     + r".\par}")
    if caption is None:
        caption = (f"Retrieval, {USAGES[lay.usage]}: R-Precision (R-Prec) and nDCG@10 per "
                   f"model and query mode; {_note(lay, intervals)}")
    lines += [r"\caption{" + _tex(caption) + "}", r"\end{table}"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# the paired tests


def _check_tests(tests: Any) -> pd.DataFrame:
    if tests is None or (isinstance(tests, pd.DataFrame) and tests.empty
                         and not len(tests.columns)):
        return pd.DataFrame(columns=list(_TESTS + _TEST_NAMES))
    return check_mode_table(tests, "tests", _TESTS)


def _signed(x: Any) -> str:
    return f"{float(x) * 100:+.2f}" if finite(x) else ""


def _flags(tests: pd.DataFrame, column: str) -> list[bool]:
    """A bound column (``p_bound``, ``p_corrected_bound``) as booleans; tables written before
    it existed hold no bound."""
    if column not in tests.columns:
        return [False] * len(tests)
    return [bool(x) if not pd.isna(x) else False for x in tests[column]]


def paired_tests_table(tests: pd.DataFrame) -> pd.DataFrame:
    """The paired tests of a retrieval run for display: one row per test, in the table's order.

    Columns: ``A`` and ``B`` (model and query mode), ``queries`` (the usage), ``metric``,
    ``A (%)`` and ``B (%)``, ``A - B [95% CI]`` (percentage points, with the interval of the
    difference), ``p``, ``p corrected`` (:func:`ncprobe.significance.p_text`: a bound,
    ``p_bound`` / ``p_corrected_bound``, reads ``< 0.0042``), ``sig.``
    (:func:`ncprobe.significance.stars` of the corrected p), ``n`` (queries) and ``idioms``.
    ``df.attrs["note"]`` names the test(s), the correction(s) and each family of tests
    corrected together with its size (the table's ``test``, ``correction``, ``family`` and
    ``family_size`` columns; "not recorded" without them).

    Raises:
        UsageError: a table without the columns of the ``tests`` table.
    """
    tests = _check_tests(tests)
    bound, corrected_bound = _flags(tests, "p_bound"), _flags(tests, "p_corrected_bound")
    shown = pd.DataFrame({
        "A": [f"{m} {mode_label(x)}" for m, x in zip(tests["model_a"], tests["mode_a"],
                                                     strict=True)],
        "B": [f"{m} {mode_label(x)}" for m, x in zip(tests["model_b"], tests["mode_b"],
                                                     strict=True)],
        "queries": [str(u) for u in tests["usage"]],
        "metric": [METRICS.get(str(m), str(m)) for m in tests["metric"]],
        "A (%)": [_pct(x) if finite(x) else "" for x in tests["a"]],
        "B (%)": [_pct(x) if finite(x) else "" for x in tests["b"]],
        "A - B [95% CI]": [
            _signed(d) + (f" [{_signed(lo)}, {_signed(hi)}]" if finite(lo) and finite(hi)
                          else "")
            for d, lo, hi in zip(tests["diff"], tests["diff_lo"], tests["diff_hi"],
                                 strict=True)],
        "p": [p_text(p, b) for p, b in zip(tests["p"], bound, strict=True)],
        "p corrected": [p_text(p, b) for p, b in zip(tests["p_corrected"], corrected_bound,
                                                      strict=True)],
        "sig.": [stars(p, b) for p, b in zip(tests["p_corrected"], corrected_bound,
                                              strict=True)],
        "n": [str(int(n)) if finite(n) else "" for n in tests["n"]],
        "idioms": [str(int(n)) if finite(n) else "" for n in tests["n_idioms"]],
    }, dtype=object)
    shown.attrs["note"] = _tests_note(tests)
    return shown


def _tests_note(tests: pd.DataFrame) -> str:
    if tests.empty:
        return "no paired tests in these results"
    kinds = (", ".join(dict.fromkeys(str(t) for t in tests["test"])) if "test" in tests
             else "not recorded")
    bounds = (any(_flags(tests, "p_bound")) or any(_flags(tests, "p_corrected_bound")))
    return (f"paired test: {kinds}; p corrected for multiple comparisons: "
            f"{corrected_text(tests)}; A - B in percentage points; sig.: {STARS_NOTE} "
            "(corrected p)"
            + ("; < x: a bound (no random flip was as extreme as the data: the true p is "
               "smaller, sig. credits only what the bound guarantees)" if bounds else ""))


def _by_family(tests: pd.DataFrame) -> list[tuple[str, int, pd.DataFrame]]:
    """The table split into its families, in order (one part when it has no test)."""
    return families_of(tests) or [("", 0, tests)]


def paired_tests_markdown(tests: pd.DataFrame) -> str:
    """:func:`paired_tests_table` as Markdown with its note (a line saying so when there are no
    tests); several families of tests (a run's own, the models across runs) each get their
    own table under a line naming the family and its size."""
    from ..tables import families_markdown

    tests = _check_tests(tests)
    if tests.empty:
        return "No paired tests in these results.\n"
    note = _tests_note(tests)
    return families_markdown(tests, paired_tests_table, f"{note[:1].upper()}{note[1:]}")


def paired_tests_latex(tests: pd.DataFrame, caption: str | None = None) -> str:
    """:func:`paired_tests_table` as a booktabs table (:func:`ncprobe.tables.to_latex`), its
    caption naming the test, the correction and the family; one table per family when there
    are several; a LaTeX comment when there are no tests."""
    from ..tables import to_latex

    tests = _check_tests(tests)
    df = paired_tests_table(tests)
    if df.empty:
        return "% No paired tests in these results.\n"
    parts = _by_family(tests)
    if len(parts) == 1:
        return to_latex(df, caption or f"Paired tests between query modes and models "
                                       f"({df.attrs['note']})")
    tables = [paired_tests_table(part) for _, _, part in parts]  # each with its own note
    return "\n".join(to_latex(t, f"{caption or 'Paired tests between query modes and models'}"
                                  f" ({t.attrs['note']})") for t in tables)


# ---------------------------------------------------------------------------------------------
# the report



def _counts(overall: pd.DataFrame, usage: str) -> str:
    """``(n = 1500 queries, 75 idioms)`` where every row of the usage says the same."""
    rows = overall[overall["usage"].astype(str) == usage]
    n = {int(x) for x in rows["n"] if finite(x)}
    idioms = {int(x) for x in rows["n_idioms"] if finite(x)}
    if len(n) != 1:
        return ""
    return f" (n = {n.pop()} queries" + (f", {idioms.pop()} idioms)" if len(idioms) == 1
                                          else ")")


def _table_files(overall: pd.DataFrame, tests: pd.DataFrame, split: str
                 ) -> dict[str, bytes]:
    """The tables' files: name -> content."""
    md = [f"# Retrieval results (IdioLink, split {split})\n",
          "The paper's Table 2: R-Precision (R-Prec) and nDCG@10 per model and query mode, "
          "in percent with 2 decimals, as a whole and per query usage.\n"]
    tex = [f"% Retrieval results (IdioLink, split {split}); needs \\usepackage{{booktabs}}"]
    for usage, name in USAGES.items():
        counts = _counts(overall, usage)
        md.append(f"## {name[0].upper()}{name[1:]}{counts}\n")
        if not (overall["usage"].astype(str) == usage).any():
            md.append(f"No {name} in these results.\n")
            tex.append(f"% No {name} in these results.")
            continue
        md.append(table2_markdown(overall, usage))
        lay = _layout(overall, usage)
        tex.append(table2_latex(overall, usage, caption=(
            f"Retrieval on IdioLink ({split} split), {name}{counts}: R-Precision (R-Prec) and "
            f"nDCG@10 per model and query mode; {_note(lay, True)}")).rstrip("\n"))
    tests_md = "# Paired tests (IdioLink, split " + split + ")\n\n" + paired_tests_markdown(tests)
    return {"table_retrieval.md": "\n".join(md).encode("utf-8"),
            "table_retrieval.tex": ("\n\n".join(tex) + "\n").encode("utf-8"),
            "table_retrieval_tests.md": tests_md.encode("utf-8"),
            "table_retrieval_tests.tex": paired_tests_latex(tests).encode("utf-8")}


def _draw(figure: tuple[str, str], tables: Mapping[str, pd.DataFrame]) -> Figure:
    from .figures import plot_idioms, plot_modes

    kind, metric = figure
    if kind == "modes":
        return plot_modes(tables["overall"], metric)
    return plot_idioms(tables["per_idiom"], metric)


_FIGURE_TEXT = {
    "modes": "{metric} of every model and query mode, with the 95% idiom-cluster bootstrap "
             "interval as error bars; one panel per query usage (all, literal, idiomatic).",
    "idioms": "{metric} per idiom (all queries), hardest first: one dot per query mode, one "
              "panel per model; which idioms are hard.",
}


def _index(meta: Mapping[str, Any], overall: pd.DataFrame, tests: pd.DataFrame,
           figures: list[Drawn]) -> str:
    """The index ``README.md``: the split, the models, every file, the notes."""
    from .figures import METRIC_NAMES

    lines = ["# ncprobe retrieval report\n",
             f"Made by ncprobe {__version__} from a retrieval run on IdioLink, split "
             f"`{meta['split']}`.\n", "## Models\n"]
    for m in meta["models"]:
        hub = f"`{m['id']}`" if m.get("id") else "no hub id"
        fmt = f", query format {m['format']}" if m.get("format") else ""
        lines.append(f"- `{m['model']}`: {hub}{fmt}")
    lines += ["", "## Files\n",
              "- `table_retrieval.md`, `table_retrieval.tex`: the paper's Table 2, R-Precision "
              "(R-Prec) and nDCG@10 per model and query mode in percent (2 decimals), with "
              "95% idiom-cluster bootstrap intervals where computed; a section (LaTeX: a "
              "table) each for all, literal and idiomatic queries. † marks a figure that "
              "reordering only tied documents could move; the footnote gives its tie range."]
    n_tests = len(tests)
    lines.append("- `table_retrieval_tests.md`, `table_retrieval_tests.tex`: "
                 + (f"the {n_tests} paired test(s) between query modes and models "
                    f"({_tests_note(tests)})." if n_tests else
                    "the paired tests between query modes and models: none in these results."))
    lines += figure_lines(figures, lambda figure: _FIGURE_TEXT[figure[0]].format(
        metric=METRIC_NAMES[figure[1]]))
    n_boot = meta.get("n_boot")
    lines += ["", "## Ties and intervals\n",
              "The BM25 figures depend on how tied documents are ordered; the stated tie rule "
              "is stable corpus order (documents with equal scores keep their order in the "
              "corpus), and the tie range gives how far it could move each figure (the "
              "benchmark's own order of ties depends on numpy's sort and the CPU)."]
    if isinstance(n_boot, int) and not isinstance(n_boot, bool):
        lines.append("")
        lines.append(f"Intervals: 95% bootstrap over idioms (each idiom's queries resampled "
                     f"together), {n_boot} resamples." if n_boot > 0 else
                     "No bootstrap intervals were computed (n_boot 0).")
    return "\n".join(lines + meta_lines(meta)) + "\n"


def write_retrieval_report(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any],
                           out_dir, *, formats: Sequence[str] = ("png", "pdf"),
                           dpi: int = 200, overwrite: bool = False,
                           progress: Callable[[str], None] | None = None) -> list[Path]:
    """Write the retrieval report into ``out_dir``: Table 2, the paired tests, the figures
    and an index.

    Files: ``fig01_modes_r_precision``, ``fig02_modes_ndcg10`` (:func:`ncprobe.retrieval.figures.
    plot_modes`), ``fig03_idioms_r_precision``, ``fig04_idioms_ndcg10``
    (:func:`~ncprobe.retrieval.figures.plot_idioms`) in every format of ``formats``;
    ``table_retrieval.md`` / ``.tex`` (:func:`table2` for all, literal and idiomatic
    queries), ``table_retrieval_tests.md`` / ``.tex`` (:func:`paired_tests_table`), and the index
    ``README.md`` (the split, the models with their hub ids and query formats, what each file
    is, the run's notes, and how ties bear on the BM25 figures). A figure with nothing to
    show is left out and named in the index.

    The files are ncprobe's own, as those of :func:`ncprobe.ncimp.report.write_report`: each is
    written atomically (with the mode a plain ``open`` gives under the umask) and recorded
    with its SHA-256 in ``.ncprobe-report.json`` before it is written; a file under one of
    these names that ncprobe did not write, or that was changed since, is never replaced
    (the report refuses before writing anything); the same call after an interruption
    resumes; the same tables give the same bytes. A directory holding the report of another
    probe (NCIMP's) is refused unless ``overwrite``.

    Results read although edited since ncprobe wrote them (``meta["edited"]``, one line per
    run naming the files) are said first, in the index and in every table file.

    Args:
        tables: the tables of a retrieval run: ``overall`` and ``per_idiom`` (needed),
            ``tests`` (may be empty or left out).
        meta: the run's metadata: ``split`` and ``models`` (``[{"model", "id", "format"}]``)
            needed; ``probe`` (``idiolink``), ``config``, ``notes``, ``n_boot`` and
            ``edited`` (lines saying what was edited) used when given.
        out_dir: the report directory (made when needed).
        formats: the figure formats (:data:`ncprobe.drawing.FORMATS`).
        dpi: resolution of the raster figures.
        overwrite: replace another probe's report in ``out_dir`` (its files removed and
            named in a logged warning).
        progress: called with one line as each figure and table is written (``figure
            1/4: fig01_modes_r_precision``; the CLI prints them on stderr).

    Returns:
        The files written, in order (figures, tables, the index ``README.md`` last).

    Raises:
        UsageError: bad tables or metadata, a bad format or dpi, or an ``out_dir`` that holds
            files ncprobe did not write (or that were changed since) under these names, or
            (without ``overwrite``) another probe's report, is a file, or is inside a
            results directory; nothing is written.
        OutputError: ``out_dir`` cannot be written; the message names the file.
    """
    formats = check_report_args(
        formats, dpi, tables, ("overall", "per_idiom"),
        what="the run's tables (overall, per_idiom, tests)",
        give="give the tables of a retrieval run (overall, per_idiom, tests)")
    meta = check_report_meta(meta, kind=KIND, probe="retrieval", run="a retrieval run",
                             needed=("split", "models"),
                             entry="{'model': ..., 'id': ..., 'format': ...}")
    overall = _check_overall(tables["overall"])
    per_idiom = check_mode_table(tables["per_idiom"], "per_idiom", _PER_IDIOM)
    tests = _check_tests(tables.get("tests"))
    split = str(meta["split"])
    shown = {"overall": overall, "per_idiom": per_idiom}
    return write_probe_report(
        out_dir, figures=_FIGURES, draw=lambda figure: _draw(figure, shown), tables=_TABLES,
        table_files=_table_files(overall, tests, split),
        index=lambda figures: _index(meta, overall, tests, figures), formats=formats,
        dpi=dpi, edited=meta.get("edited") or [], kind=KIND, label=LABEL, overwrite=overwrite,
        progress=progress, latex_shown=_tex, logger=log)

