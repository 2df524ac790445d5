"""The tables of the study (SPEC §4), as DataFrames, Markdown and LaTeX.

Every builder takes a :class:`~ncprobe.results.Results` (one or many models, one or
both languages) and returns a DataFrame of display strings, indexed by model,
level and condition (``EN-Nat``, ``EN-Neut``, ``PT-Nat``, ``PT-Neut``), with
one column per measure. Correlation cells show Spearman's rho with two
decimals where p <= 0.05 and ``-`` otherwise (as in the study); empty cells
(a measure a run does not have) are blank. :data:`TABLES` maps the table names
(:data:`ncprobe.schema.PAPER_TABLES`) to the builders, in the order of SPEC §4;
:func:`to_markdown` and :func:`to_latex` render any of them. Column headers, level and
condition labels are those of :mod:`ncprobe.schema`.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import pandas as pd

from .schema import (
    AFFINITIES,
    ALL_CLASSES,
    CONDITIONS,
    DISPLAY_MEASURES,
    DISPLAY_PROBES,
    LEVEL_LABELS,
    MEASURE_LABELS,
    PAPER_TABLE_CAPTIONS,
    PAPER_TABLES,
    RATIO,
    SCALED,
    condition_label,
)
from .selection import model_order, select
from .stats import ALPHA

#: The example NCs of the study's per-NC table.
EXAMPLE_NCS = ("grey matter", "eager beaver", "Dutch courage", "eternal rest", "economic aid",
               "research lab")
INDEX = ["model", "level", "condition"]


def _rho_cell(rho: float, p: float) -> str:
    if rho is None or p is None or math.isnan(rho) or math.isnan(p):
        return ""
    return f"{rho:.2f}" if p <= ALPHA else "-"


def _layout(rows: pd.DataFrame, cell: Callable[[pd.Series], str], measures: Sequence[str],
            models: list[str]) -> pd.DataFrame:
    """One row per (model, level, condition), one column per measure, in the study's order."""
    if rows.empty:
        return pd.DataFrame(columns=[MEASURE_LABELS.get(m, m) for m in measures],
                            index=pd.MultiIndex.from_tuples([], names=INDEX))
    rows = rows.assign(cell=[cell(r) for _, r in rows.iterrows()],
                       level=rows["level"].map(LEVEL_LABELS).fillna(rows["level"]))
    wide = rows.pivot_table(index=INDEX, columns="measure", values="cell", aggfunc="first",
                            observed=True)
    wide = wide.reindex(columns=[m for m in measures if m in wide.columns])
    order = {m: i for i, m in enumerate(models)}
    lv = {name: i for i, name in enumerate(LEVEL_LABELS.values())}
    wide = wide.sort_index(key=lambda s: s.map(order) if s.name == "model" else (
        s.map(lv) if s.name == "level" else s.astype(str).map(_condition_rank)))
    wide.columns = [MEASURE_LABELS.get(m, m) for m in wide.columns]
    return wide.fillna("")


def _condition_rank(c: str) -> int:
    return CONDITIONS.index(c) if c in CONDITIONS else len(CONDITIONS)


def correlations(results, measures: Sequence[str], *, level=None, analysis: str = "nc",
                 space: str = "raw", contexts=None) -> pd.DataFrame:
    """Spearman rho of per-NC measures with the gold score; "-" where p > 0.05."""
    c = select(results.correlations, space=space, level=level, contexts=contexts,
               measures=measures)
    c = c[c["analysis"] == analysis]
    return _layout(c, lambda r: _rho_cell(r["rho"], r["p"]), measures,
                   model_order(results.correlations))


def sent_correlations(results, **kw) -> pd.DataFrame:
    """Spearman of the probes' sentence-level similarities with Comp."""
    return correlations(results, DISPLAY_PROBES, level="sent", **kw)


def nc_correlations(results, **kw) -> pd.DataFrame:
    """Spearman of the probes' NC-level similarities with Comp."""
    return correlations(results, DISPLAY_PROBES, level="nc", **kw)


def length_correlations(results, *, space: str = "raw") -> pd.DataFrame:
    """Spearman between naturalistic sentence length (words) and sentence-level similarity."""
    lo = select(results.lexical_overlap, space=space, measures=DISPLAY_PROBES)
    lo = lo.assign(level="sent", condition=[condition_label(lg, "nat") for lg in lo["lang"]])
    return _layout(lo, lambda r: _rho_cell(r["rho"], r["p"]), DISPLAY_PROBES,
                   model_order(results.lexical_overlap))


def affinity_correlations(results, **kw) -> pd.DataFrame:
    """Spearman of the Affinities with Comp (both levels)."""
    return correlations(results, AFFINITIES, **kw)


def scaled_correlations(results, **kw) -> pd.DataFrame:
    """Spearman of the Scaled Similarities and their ratio with Comp (both levels)."""
    return correlations(results, SCALED + (RATIO,), **kw)


def filtered_correlations(results, **kw) -> pd.DataFrame:
    """The correlations without the NCs whose gold synonym shares a word with the NC."""
    return correlations(results, DISPLAY_PROBES + AFFINITIES + SCALED,
                        analysis="overlap-filtered", **kw)


def means(results, *, space: str = "raw", contexts=None) -> pd.DataFrame:
    """Mean ± sd over NCs of every probe, Affinity and Scaled Similarity."""
    wanted = DISPLAY_MEASURES
    d = select(results.distributions, space=space, contexts=contexts, measures=wanted)
    d = d[d["cls"] == ALL_CLASSES]
    return _layout(d, lambda r: "" if math.isnan(r["mean"]) else
                   f"{r['mean']:.3f} ± {r['sd']:.3f}", wanted,
                   model_order(results.distributions))


def standardisation(results, *, contexts=None) -> pd.DataFrame:
    """Spearman between the P_Syn cosines before and after z-scoring (rogue dimensions)."""
    s = select(results.standardisation, space=None, contexts=contexts)
    s = s.assign(measure="syn")
    out = _layout(s, lambda r: "" if math.isnan(r["rho"]) else f"{r['rho']:.2f}", ["syn"],
                  model_order(results.standardisation))
    syn = MEASURE_LABELS["syn"]
    return out.rename(columns={syn: f"{syn} raw vs standardised"})


def examples(results, ncs: Sequence[str] | None = None, *, level: str = "nc",
             space: str = "raw", contexts=None) -> pd.DataFrame:
    """Every measure of chosen NCs (default: the six of the study), per model and condition.

    NCs are matched case-insensitively; those not in the results are listed in
    ``df.attrs["missing"]``.
    """
    wanted = [n.lower() for n in (ncs or EXAMPLE_NCS)]
    measures = DISPLAY_MEASURES
    m = select(results.measures, space=space, level=level, contexts=contexts,
               measures=measures)
    m = m[m["nc"].str.lower().isin(wanted)]
    found = set(m["nc"].str.lower())
    if m.empty:
        out = pd.DataFrame()
    else:
        m = m.assign(cell=[("" if math.isnan(v) else f"{v:.2f}") for v in m["value"]],
                     rank=m["nc"].str.lower().map({n: i for i, n in enumerate(wanted)}))
        m = m.assign(gold=[("" if c is None or math.isnan(c) else f"{c:.2f}") for c in m["comp"]])
        wide = m.pivot_table(index=["rank", "nc", "cls", "gold", "model", "condition"],
                             columns="measure", values="cell", aggfunc="first", observed=True)
        wide = wide.reindex(columns=[x for x in measures if x in wide.columns])
        wide.columns = [MEASURE_LABELS.get(x, x) for x in wide.columns]
        out = wide.reset_index(level="rank", drop=True).rename_axis(
            index={"cls": "class", "gold": "Comp"}).fillna("")
    out.attrs["missing"] = [n for n in (ncs or EXAMPLE_NCS) if n.lower() not in found]
    return out


# the builders take different keyword options: each is called as builder(results, **kw)
_BUILDERS: tuple[Callable[..., pd.DataFrame], ...] = (
    sent_correlations, nc_correlations, length_correlations, affinity_correlations,
    scaled_correlations, means, filtered_correlations, standardisation, examples)
#: The tables of SPEC §4, in order: name (:data:`ncprobe.schema.PAPER_TABLES`) ->
#: builder(results) -> DataFrame.
TABLES: dict[str, Callable[..., pd.DataFrame]] = dict(zip(PAPER_TABLES, _BUILDERS, strict=True))
#: One line on what each table shows (the report's index uses these).
CAPTIONS = PAPER_TABLE_CAPTIONS


# The two renderers below are written by hand on purpose (issue 10 weighed pandas'
# DataFrame.to_markdown, through tabulate, and Styler.to_latex on the real tables):
# - to_markdown does not escape "|" in a header or cell, so every table with a measure such as
#   "A_Syn|WordsSyn" has more header cells than delimiter cells and GitHub (and markdown-it's
#   GFM tables) renders no table at all; by default it also re-formats the display strings
#   ("0.40" -> "0.4", "1.90" -> "1.9") and prints a MultiIndex row as a tuple
#   "('glove-6b-50d', 'Sent', 'EN-Nat')". Fixing that takes reset_index, escaping every cell,
#   disable_numparse and colalign: the code below, plus a dependency (tabulate).
# - Styler.to_latex(escape="latex") leaves "|", "<" and ">" as they are (an em dash, "¡" and
#   "¿" in LaTeX's default OT1 font encoding) and does not escape the caption ("P_Syn" stops
#   pdflatex); it puts the index names on a second header row under the measures, sets every
#   column "l", needs \usepackage{multirow} for a readable MultiIndex and draws \cline rules
#   that do not fit booktabs. Fixing that is again as much code as this renderer.


def _flat(df: pd.DataFrame) -> tuple[list[str], list[list[str]], int]:
    """Header, rows of display strings, and how many leading columns label the rows.

    Named index levels become the first columns (the MultiIndex of the tables: model, level,
    condition); an unnamed index (a plain RangeIndex) is left out, and then the first column
    labels the rows.
    """
    named = any(n is not None for n in df.index.names)
    frame = df.reset_index() if named else df
    header = [str(c) for c in frame.columns]
    rows = [["" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
             for v in row] for row in frame.itertuples(index=False)]
    n_labels = df.index.nlevels if named else min(1, len(header))
    return header, rows, n_labels


def _one_line(text: str) -> str:
    # a line break inside a cell would end a Markdown row, and a blank line a LaTeX paragraph
    return " ".join(text.splitlines()) if ("\n" in text or "\r" in text) else text


def _md_cell(text: str) -> str:
    # GFM: "\|" is a literal bar inside a cell; "\" is doubled first so that a backslash in a
    # name cannot escape the cell's closing bar (it renders as one backslash either way)
    return _one_line(text).replace("\\", "\\\\").replace("|", "\\|")


def to_markdown(df: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (index levels become the first columns).

    Every cell is the table's display string ("-" and blank cells included), with "|" and
    "\\" escaped and line breaks joined, so that each row has exactly one cell per column.
    """
    header, rows, _ = _flat(df)
    esc = [[_md_cell(c) for c in r] for r in [header] + rows]
    lines = ["| " + " | ".join(esc[0]) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in esc[1:]]
    return "\n".join(lines) + "\n"


#: LaTeX text-mode escapes: the ten special characters, plus "|", "<" and ">" (which print as
#: an em dash, "¡" and "¿" in the default OT1 font encoding) and "±".
_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}", "|": r"\textbar{}", "<": r"$<$", ">": r"$>$",
                  "±": r"$\pm$"}


def latex_escape(text: str) -> str:
    """``text`` as LaTeX text mode prints it (needs only the base packages; one line)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in _one_line(text))


def to_latex(df: pd.DataFrame, caption: str | None = None) -> str:
    """A booktabs ``tabular`` (inside a ``table`` with the caption, when one is given).

    Label columns (the index levels) are ``l``, value columns ``r``; every header, cell and
    the caption are escaped with :func:`latex_escape`. Needs ``\\usepackage{booktabs}``.
    """
    header, rows, n_labels = _flat(df)
    spec = "l" * n_labels + "r" * (len(header) - n_labels)
    body = [r"\begin{tabular}{" + spec + "}", r"\toprule",
            " & ".join(latex_escape(h) for h in header) + r" \\", r"\midrule"]
    body += [" & ".join(latex_escape(c) for c in r) + r" \\" for r in rows]
    body += [r"\bottomrule", r"\end{tabular}"]
    if caption is None:
        return "\n".join(body) + "\n"
    return "\n".join([r"\begin{table}[ht]", r"\centering", r"\small"] + body
                     + [r"\caption{" + latex_escape(caption) + "}", r"\end{table}"]) + "\n"
