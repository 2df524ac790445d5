"""The one engine that filters the rows of a results table by the values of its columns, and
the one check that a table has the columns a reader needs (:func:`check_table`).

Every selection of rows ncprobe makes goes through :func:`filter_rows`, in one of two modes:

* **strict** — what a user names must exist: :meth:`Results.select
  <ncprobe.ncimp.results.Results.select>` and the sides of
  :func:`~ncprobe.ncimp.comparison.compare`. A
  filter on a column that cannot be filtered on, or a value the table does not hold, is a
  :class:`~ncprobe.errors.UsageError` (also a ``ValueError``) with one message for each
  mistake (:func:`cannot_select_message`, :func:`not_present_message`);
* **lenient** — what a figure or table shows: :func:`ncprobe.ncimp.selection.select`. A filter
  applies where the table has its column, and a value not present keeps no row.

In both modes a filter is one value or a list of values (``None``: every value), values are
matched as text (``12`` selects the layer view ``"12"``), a row is kept when it matches every
filter, and the rows keep their order. In strict mode each value is checked against the whole
table, so the order of the filters never changes the outcome.

A leaf: it imports nothing of ncprobe but :mod:`ncprobe.errors` and :mod:`ncprobe.schema`, so
every module that selects rows (:mod:`ncprobe.ncimp.selection`, :mod:`ncprobe.results`,
:mod:`ncprobe.ncimp.comparison`) imports it without an import cycle, in any order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from .errors import UsageError
from .schema import CONTEXT_GROUPS

__all__ = ["Filter", "cannot_select_message", "check_table", "filter_rows",
           "not_present_message", "present_values", "wanted_values"]

#: A filter: one value, several, or ``None`` (every value).
Filter = str | Sequence[str] | None
#: How many of the values a table holds a message lists before it counts the rest.
SHOWN_VALUES = 30


def check_table(df: object, name: str, columns: Sequence[str], *, of: str,
                where: str | None = None) -> pd.DataFrame:
    """``df`` when it is a DataFrame with every column of ``columns``: the table ``name`` of
    ``of`` (``NCC results``, ``a retrieval run``) that a figure, a report table or a
    computation reads. Else a UsageError that starts with ``where`` (default ``name``) and
    says what to give."""
    where = where or name
    if not isinstance(df, pd.DataFrame):
        raise UsageError(f"{where}: give the {name} table of {of} (a DataFrame), not a "
                         f"{type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise UsageError(f"{where}: no column {', '.join(missing)}; give the {name} table of "
                         f"{of}")
    return df


def wanted_values(wanted: object) -> list[str]:
    """The values of one filter as text: ``"nat"`` -> ``["nat"]``, ``[6, 12]`` -> ``["6",
    "12"]``."""
    if isinstance(wanted, Iterable) and not isinstance(wanted, (str, bytes)):
        return [str(v) for v in wanted]
    return [str(wanted)]


def present_values(df: pd.DataFrame, col: str) -> list[str]:
    """The distinct values of a column as text, in the order of the rows (missing values
    skipped)."""
    return list(dict.fromkeys(str(v) for v in df[col].dropna().unique()))


def _prefix(source: str | None) -> str:
    return f"{source}: " if source else ""


def cannot_select_message(columns: Sequence[str], where: str, takes: Sequence[str], *,
                          source: str | None = None) -> str:
    """The message of a filter on a column that ``where`` cannot be filtered on.

    >>> cannot_select_message(["probe"], "the measures table", ["model", "lang"])
    "cannot select on 'probe': the measures table is selected on model, lang"
    """
    return (f"{_prefix(source)}cannot select on {', '.join(map(repr, columns))}: "
            f"{where} is selected on {', '.join(takes) or '(nothing)'}")


def not_present_message(col: str, bad: Sequence[str], present: Sequence[str], where: str, *,
                        source: str | None = None) -> str:
    """The message of filter values that ``where`` does not hold: the values, and those it
    holds; for a context, whether it holds sentence contexts or context groups.

    >>> not_present_message("level", ["word"], ["sent", "nc"], "the measures table")
    "level 'word' is not in the measures table; it holds level sent, nc"
    """
    hint = ""
    if col == "context":
        groups = [v for v in bad if v in CONTEXT_GROUPS]
        ids = {v: g for v in bad for g, cs in CONTEXT_GROUPS.items() if v in cs}
        if groups and any(c in present for g in groups for c in CONTEXT_GROUPS[g]):
            hint = (f"; {where} holds sentence contexts: "
                    + ", ".join(f"{g} is {', '.join(CONTEXT_GROUPS[g])}" for g in groups))
        elif ids and any(g in present for g in ids.values()):
            hint = (f"; {where} holds context groups (sentence contexts are in cosines and "
                    "sentences): " + ", ".join(f"{v} is in {g}" for v, g in ids.items()))
    shown = ", ".join(present[:SHOWN_VALUES]) + (f" ... ({len(present)} in all)"
                                                 if len(present) > SHOWN_VALUES else "")
    return (f"{_prefix(source)}{col} {', '.join(map(repr, bad))} is not in {where}; it "
            f"holds {col} {shown or '(none: the table is empty)'}{hint}")


def filter_rows(df: pd.DataFrame, filters: Mapping[str, object], *, strict: bool = True,
                where: str = "the table", takes: Sequence[str] | None = None,
                source: str | None = None) -> pd.DataFrame:
    """The rows of ``df`` that match every filter, in their order, with a fresh index.

    Args:
        df: a results table.
        filters: column -> one value or a list of values (matched as text); ``None``: every
            value.
        strict: refuse a filter on a column that cannot be filtered on and a value ``df``
            does not hold (see the module doc); ``False``: a filter on a column ``df`` lacks
            is left out, and a value it does not hold keeps no row.
        where: what ``df`` is called in a message (``"the measures table"``).
        takes: the columns that may be filtered on, in the order a message lists them
            (default: every column of ``df``); strict mode only.
        source: who gave the filters, the start of a message (``"select_a"``).

    Raises:
        UsageError: (strict) a filter on a column of no ``takes`` or that ``df`` lacks, or a
            value that ``df`` does not hold in that column.

    >>> df = pd.DataFrame({"level": ["sent", "nc", "nc"], "value": [1.0, 2.0, 3.0]})
    >>> filter_rows(df, {"level": "nc"})["value"].tolist()
    [2.0, 3.0]
    """
    given = {k: v for k, v in filters.items() if v is not None}
    if strict:
        allowed = [c for c in (df.columns if takes is None else takes) if c in df.columns]
        unknown = [c for c in given if c not in allowed]
        if unknown:
            raise UsageError(cannot_select_message(unknown, where, allowed, source=source))
    keep = pd.Series(True, index=df.index)
    for col, wanted in given.items():
        if col not in df.columns:
            continue  # lenient: a filter applies where the column exists
        values = wanted_values(wanted)
        if strict:
            present = present_values(df, col)
            bad = [v for v in values if v not in present]
            if bad:
                raise UsageError(not_present_message(col, bad, present, where,
                                                     source=source))
        # the column's own values whose text is wanted: compared as the column holds them
        matched = [v for v in df[col].dropna().unique() if str(v) in values]
        keep &= df[col].isin(matched)
    return df[keep].reset_index(drop=True)
