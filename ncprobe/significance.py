"""The vocabulary of significance: the level, the multiple-comparison corrections, their
names, the stars and the notes that say what a mark means.

No statistics here (:mod:`ncprobe.stats` and :mod:`ncprobe.inference` compute them) and no
drawing (:mod:`ncprobe.plots`, :mod:`ncprobe.tables`): the words and marks that tables,
figures, the summary and ``ncprobe compare`` share, each written once.

* :data:`ALPHA`: a p-value at or below it is significant;
* :data:`~ncprobe.schema.CORRECTIONS` (``holm``, ``fdr_bh``, ``none``), checked in one place,
  :func:`check_correction`; each named once for captions and notes
  (:data:`CORRECTION_NAMES`) and once for the correlogram's colour bar
  (:data:`SHORT_CORRECTION_NAMES`);
* :func:`stars` and :data:`STARS_NOTE`, :func:`p_text`;
* :func:`correction_note`, the footnote of a table or figure whose marks follow a correction.
"""

from __future__ import annotations

import math

from .errors import UsageError
from .schema import CORRECTIONS, Correction

#: Cells with p <= ALPHA are significant (tables show the others as "-").
ALPHA = 0.05

#: How each correction is named in captions, footnotes and the summary.
CORRECTION_NAMES: dict[str, str] = {"holm": "Holm-corrected",
                                    "fdr_bh": "Benjamini-Hochberg (FDR) corrected",
                                    "none": "uncorrected"}
#: The corrections as the correlogram's colour bar names them (short: the bar's label is no
#: longer than the bar); ``none`` has no short name (the bar says "uncorrected").
SHORT_CORRECTION_NAMES: dict[str, str] = {"holm": "Holm", "fdr_bh": "BH"}

#: The significance marks of :func:`stars`, said once under a table or figure.
STARS_NOTE = f"* p <= {ALPHA:g}, ** p <= 0.01, *** p <= 0.001"


def check_correction(method: str) -> Correction:
    """``method`` when it is one of :data:`~ncprobe.schema.CORRECTIONS`: the one check of a
    correction, wherever one is given (tables, figures, the report, the summary, compare).

    >>> check_correction("fdr_bh")
    'fdr_bh'

    Raises:
        UsageError: an unknown correction; the message names the known ones.
    """
    if method not in CORRECTIONS:
        raise UsageError(f"unknown multiple-comparison correction {method!r}; choose from "
                         + ", ".join(CORRECTIONS))
    return method  # type: ignore[return-value]  # one of the Literal's values, checked above


def correction_note(method: str, n: int, what: str = "cells of this table") -> str:
    """The footnote of a table or figure whose marks follow ``method`` over ``n`` p-values:
    ``"- : Holm-corrected p > 0.05 across the 24 cells of this table"``.

    Raises:
        UsageError: an unknown correction (:func:`check_correction`).
    """
    check_correction(method)
    if method == "none":
        return f"- : p > {ALPHA}, not corrected for the {n} {what} (as in the study)"
    return f"- : {CORRECTION_NAMES[method]} p > {ALPHA} across the {n} {what}"


def p_text(p: float) -> str:
    """A p-value for display: three decimals, ``<0.001`` below 0.001, blank when undefined."""
    import pandas as pd

    if p is None or (isinstance(p, float) and math.isnan(p)) or pd.isna(p):
        return ""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def stars(p: float) -> str:
    """The significance mark of a (corrected) p-value: ``***`` <= 0.001, ``**`` <= 0.01,
    ``*`` <= :data:`ALPHA` (0.05), blank above it or when undefined."""
    import pandas as pd

    if p is None or pd.isna(p) or p > ALPHA:
        return ""
    return "***" if p <= 0.001 else "**" if p <= 0.01 else "*"


__all__ = ["ALPHA", "CORRECTIONS", "CORRECTION_NAMES", "Correction", "SHORT_CORRECTION_NAMES",
           "STARS_NOTE", "check_correction", "correction_note", "p_text", "stars"]
