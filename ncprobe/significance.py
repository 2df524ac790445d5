"""The vocabulary of significance: the level, the multiple-comparison corrections, their
names, the stars and the notes that say what a mark means.

No statistics here (:mod:`ncprobe.stats` and :mod:`ncprobe.ncimp.inference` compute them) and no
drawing (:mod:`ncprobe.ncimp.figures`, :mod:`ncprobe.ncimp.tables`): the words and marks that
tables, figures, the summary and ``ncprobe compare`` share, each written once.

* :data:`ALPHA`: a p-value at or below it is significant;
* :data:`~ncprobe.schema.CORRECTIONS` (``holm``, ``fdr_bh``, ``none``), checked in one place,
  :func:`check_correction`; each named once for captions and notes
  (:data:`CORRECTION_NAMES`) and once for the correlogram's colour bar
  (:data:`SHORT_CORRECTION_NAMES`);
* :func:`stars` and :data:`STARS_NOTE`, :func:`p_text`;
* :func:`correction_note`, the footnote of a table or figure whose marks follow a correction;
  :func:`families_of` and :func:`corrected_text`: a table of paired tests by its families
  (each corrected on its own), and what its corrected p are, in words;
* :class:`ResolutionWarning` and :func:`warn_resolution`: a resampling p-value is only as fine
  as its resamples (``1/(B+1)`` at best); where none of them was as extreme as the data, the
  p-value is a *bound* (the true p lies below it). Tables carry that as a ``p_bound`` column
  beside ``p`` (``p_corrected_bound`` beside ``p_corrected``, from
  :func:`ncprobe.stats.correct_bounded`); :func:`p_text` shows a bound as ``< 0.0042`` and
  :func:`stars` credits it only with the stars its value guarantees. A bound that limits a
  decision (a corrected bound above :data:`FINEST`, which might deserve more stars, or above
  :data:`ALPHA`, which might be significant) is warned about, with the resamples that would
  resolve it.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

from .errors import UsageError
from .schema import CORRECTIONS, Correction

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from numpy.typing import ArrayLike

#: Cells with p <= ALPHA are significant (tables show the others as "-").
ALPHA = 0.05
#: The finest significance mark's level (``***``): the resolution a corrected resampling
#: p-value needs for every mark to be decidable.
FINEST = 0.001

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
    """The footnote of a table or figure whose marks follow ``method`` over ``n`` p-values,
    the family they were corrected in (which tests, how many):
    ``"- : Holm-corrected p > 0.05 across the 24 cells of this table (one family)"``.

    Raises:
        UsageError: an unknown correction (:func:`check_correction`).
    """
    check_correction(method)
    if method == "none":
        return f"- : p > {ALPHA}, not corrected for the {n} {what} (as in the study)"
    return f"- : {CORRECTION_NAMES[method]} p > {ALPHA} across the {n} {what} (one family)"


def families_of(tests: pd.DataFrame) -> list[tuple[str, int, pd.DataFrame]]:
    """A table of paired tests split into its families (each corrected on its own), in the
    table's order: each family's name, its size (``family_size``, else the rows with a p)
    and its rows. A table without a ``family`` column is one family, ``every test of this
    table (family not recorded)``; an empty table has none."""
    if "family" not in tests.columns:
        return ([("every test of this table (family not recorded)",
                  int(tests["p"].notna().sum()), tests)] if len(tests) else [])
    out = []
    for name in dict.fromkeys(str(f) for f in tests["family"]):
        part = tests[tests["family"].astype(str) == name].reset_index(drop=True)
        sizes = ([int(x) for x in part["family_size"] if finite(x)]
                 if "family_size" in part.columns else [])
        out.append((name, sizes[0] if sizes else int(part["p"].notna().sum()), part))
    return out


def corrected_text(tests: pd.DataFrame) -> str:
    """What the corrected p of a table of paired tests are, in words: each correction
    (``Holm-corrected (holm)``; ``not recorded`` without a ``correction`` column), then its
    families with their sizes (``one family: run glove (6 tests)``, or ``2 families, each
    corrected on its own: ...``)."""
    corrections = (", ".join(dict.fromkeys(
        f"{CORRECTION_NAMES.get(str(c), str(c))} ({c})" for c in tests["correction"]))
        if "correction" in tests else "not recorded")
    families = families_of(tests)
    within = ("one family: " if len(families) == 1 else
              f"{len(families)} families, each corrected on its own: ") + "; ".join(
        f"{name} ({n} test{'s' if n != 1 else ''})" for name, n, _ in families)
    return f"{corrections}, {within}"


def _ceil_digits(p: float, digits: int = 2) -> float:
    """``p`` rounded *up* to ``digits`` significant digits (a bound shown rounded never
    claims less than it is): 0.004149 -> 0.0042, 0.000999 -> 0.001."""
    if p <= 0.0:
        return p
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(p)))
    # the tolerance keeps a value already on the grid (0.0042) from going up a step
    return math.ceil(p * scale * (1.0 - 1e-12)) / scale


def finite(x: object) -> bool:
    """Whether ``x`` is a finite number (not None, NaN, infinite or text): what a table cell
    needs before it is formatted as one."""
    try:  # None, pd.NA and NaT cannot be floats; NaN and infinities are not finite
        return x is not None and math.isfinite(float(x))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def p_text(p: float, bound: bool = False) -> str:
    """A p-value for display: three decimals, ``<0.001`` below 0.001, blank when undefined.

    A ``bound`` (a resampling p-value whose resamples were never as extreme as the data: the
    true p lies below it) reads ``< 0.0042``: the value rounded up to two significant digits,
    never an exact-looking number.

    >>> p_text(0.0123), p_text(0.0004), p_text(1 / 241, bound=True), p_text(1 / 1001, True)
    ('0.012', '<0.001', '< 0.0042', '< 0.001')
    """
    import pandas as pd

    if p is None or (isinstance(p, float) and math.isnan(p)) or pd.isna(p):
        return ""
    if _is_true(bound):
        return f"< {_ceil_digits(float(p)):g}"
    return "<0.001" if p < FINEST else f"{p:.3f}"


def _is_true(flag: object) -> bool:
    """A bound flag as stored (bool, numpy bool, a missing value: not a bound)."""
    import pandas as pd

    return flag is not None and not (not isinstance(flag, (bool, int)) and pd.isna(flag)) \
        and bool(flag)


def stars(p: float, bound: bool = False) -> str:
    """The significance mark of a (corrected) p-value: ``***`` <= 0.001, ``**`` <= 0.01,
    ``*`` <= :data:`ALPHA` (0.05), blank above it or when undefined.

    A ``bound`` (the true p lies below ``p``) is credited with the marks ``p`` itself
    earns, which the true p earns too, and never more: a bound of 0.006 is ``**`` although
    its true p might deserve ``***`` (:func:`warn_resolution` says so).
    """
    import pandas as pd

    del bound  # the marks of the value are the ones a bound guarantees: said, not used
    if p is None or pd.isna(p) or p > ALPHA:
        return ""
    return "***" if p <= FINEST else "**" if p <= 0.01 else "*"


class ResolutionWarning(UserWarning):
    """A resampling p-value too coarse for a decision: a corrected p that is only a bound
    (no resample as extreme as the data) lies above :data:`FINEST` (it might deserve more
    stars) or above :data:`ALPHA` (it might be significant). The message names how many
    rows and the resamples that would resolve them."""


def unresolved(p_corrected: ArrayLike, bound: ArrayLike) -> tuple[int, int]:
    """How many corrected p-values are bounds that limit a decision: ``(above FINEST,
    above ALPHA)`` (the second counted in the first)."""
    import numpy as np

    p = np.asarray(p_corrected, dtype=np.float64).ravel()
    b = np.asarray([_is_true(x) for x in np.asarray(bound, dtype=object).ravel()], dtype=bool)
    ok = b & ~np.isnan(p)
    return int(np.count_nonzero(ok & (p > FINEST))), int(np.count_nonzero(ok & (p > ALPHA)))


def warn_resolution(p_corrected: ArrayLike, bound: ArrayLike, *, rows: str,
                    resamples: str, needed: int, option: str, capped: str = "",
                    stacklevel: int = 3) -> bool:
    """Warn (:class:`ResolutionWarning`) when some corrected p-values are bounds that limit a
    decision (:func:`unresolved`); say how many, of which ``rows`` (``"paired tests"``), with
    which ``resamples`` (``"42,000 random sign flips"``), and that ``option`` >= ``needed``
    would resolve them (``capped``: why that many were not drawn, when they were not).

    Returns:
        Whether it warned.
    """
    stars_, sig = unresolved(p_corrected, bound)
    if not stars_:
        return False
    import numpy as np

    total = np.asarray(p_corrected).size
    what = (f"{sig} above {ALPHA:g} might be significant" if sig == stars_ else
            f"{stars_ - sig} might deserve more stars" + (
                f", {sig} above {ALPHA:g} might be significant" if sig else ""))
    warnings.warn(
        f"{stars_} of the {total} {rows} have a corrected p that is only a bound above "
        f"{FINEST:g} (with {resamples}, no resample was as extreme as the data; the true p "
        f"is smaller): {what}. {option}={needed:,} or more would resolve them"
        + (f" ({capped})" if capped else ""), ResolutionWarning, stacklevel=stacklevel)
    return True


__all__ = ["ALPHA", "CORRECTIONS", "CORRECTION_NAMES", "Correction", "FINEST",
           "ResolutionWarning", "SHORT_CORRECTION_NAMES", "STARS_NOTE", "check_correction",
           "correction_note", "finite", "p_text", "stars", "unresolved", "warn_resolution"]
