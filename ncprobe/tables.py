"""Tables as text: any DataFrame of display strings as GitHub-flavoured Markdown
(:func:`to_markdown`) or a booktabs LaTeX table (:func:`to_latex`, measure names typeset as the
figures typeset them: :func:`latex_text`), and a probe's paired tests family by family
(:func:`families_markdown`). Every probe's report renders its tables here; the tables
themselves are the probes' (NCIMP's: :mod:`ncprobe.ncimp.tables`). Names no probe.
"""

from __future__ import annotations

import math
import re
from typing import Callable

import pandas as pd

from .schema import MEASURE_LABELS, MEASURE_MATH_LABELS


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


def families_markdown(tests: pd.DataFrame, table: Callable[[pd.DataFrame], pd.DataFrame],
                      note: str) -> str:
    """A table of paired tests as Markdown, ``table`` making each shown table of its rows,
    and ``note`` last: one table, or one per family when there are several
    (:func:`ncprobe.significance.families_of`), each under a line naming it and its size."""
    from .significance import families_of

    parts = families_of(tests)
    if len(parts) == 1:
        body = to_markdown(table(tests))
    else:
        body = "\n".join(f"**Family: {name}** ({n} tests, corrected together)\n\n"
                         + to_markdown(table(part)) for name, n, part in parts)
    return body + f"\n{note}.\n"


#: LaTeX text-mode escapes: the ten special characters, plus "|", "<" and ">" (which print as
#: an em dash, "¡" and "¿" in the default OT1 font encoding) and "±".
_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}", "|": r"\textbar{}", "<": r"$<$", ">": r"$>$",
                  "±": r"$\pm$"}


def latex_escape(text: str) -> str:
    """``text`` as LaTeX text mode prints it (needs only the base packages; one line)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in _one_line(text))


def _measure_pattern() -> re.Pattern[str]:
    """The plain label of every measure that has a typeset one, longest first (so that
    ``Sim_R|Syn / Sim_R|WordsSyn`` is one match, not two), never inside a longer name."""
    labels = sorted({lab for m, lab in MEASURE_LABELS.items()
                     if MEASURE_MATH_LABELS.get(m, lab) != lab}, key=len, reverse=True)
    return re.compile("(?<![A-Za-z0-9_])(" + "|".join(re.escape(lab) for lab in labels)
                      + ")(?![A-Za-z0-9_])")


_MEASURES = _measure_pattern()
#: plain label -> the label the figures typeset (mathtext, which LaTeX reads as it is)
_TYPESET = {lab: MEASURE_MATH_LABELS.get(m, lab) for m, lab in MEASURE_LABELS.items()}


def latex_text(text: str) -> str:
    """``text`` as :func:`latex_escape` prints it, with every measure's plain label
    (``Sim_R|Syn``, ``P_Comp(head)`` ...) typeset as the figures typeset it
    (:data:`~ncprobe.schema.MEASURE_MATH_LABELS`).

    >>> print(latex_text("rho of Sim_R|Syn, 5% > 0"))
    rho of $\\mathit{Sim}_{\\mathrm{R|Syn}}$, 5\\% $>$ 0
    """
    text = _one_line(text)
    out, at = [], 0
    for match in _MEASURES.finditer(text):
        out += [latex_escape(text[at:match.start()]), _TYPESET[match.group(1)]]
        at = match.end()
    return "".join(out) + latex_escape(text[at:])


def to_latex(df: pd.DataFrame, caption: str | None = None) -> str:
    """A booktabs ``tabular`` (inside a ``table`` with the caption, when one is given).

    Label columns (the index levels) are ``l``, value columns ``r``; every header, cell and
    the caption are written with :func:`latex_text` (escaped, measure names and rho typeset
    as in the figures). Needs ``\\usepackage{booktabs}``.
    """
    header, rows, n_labels = _flat(df)
    spec = "l" * n_labels + "r" * (len(header) - n_labels)
    body = [r"\begin{tabular}{" + spec + "}", r"\toprule",
            " & ".join(latex_text(h) for h in header) + r" \\", r"\midrule"]
    body += [" & ".join(latex_text(c) for c in r) + r" \\" for r in rows]
    body += [r"\bottomrule", r"\end{tabular}"]
    if caption is None:
        return "\n".join(body) + "\n"
    return "\n".join([r"\begin{table}[ht]", r"\centering", r"\small"] + body
                     + [r"\caption{" + latex_text(caption) + "}", r"\end{table}"]) + "\n"
