"""Bring your own minimal pairs: build probe sentences by splicing a phrase into a word span.

A minimal pair is an original sentence, the word span of the expression it
probes, and a substitute phrase that replaces that span. ncprobe builds the
probe sentence as ``words[:start] + substitute.split() + words[end:]``; the
substitute's span is ``[start, start + len(substitute.split()))`` (:mod:`ncprobe.data.splice`,
whose names :class:`MinimalPair`, :func:`splice`, :func:`splice_phrase` and :func:`span_error`
are importable from here too). The file is read row by row with :mod:`ncprobe.data.rows`.

This is the input format for new languages and data sets, and the path ncprobe
itself takes for English naturalistic contexts when the official English probe
files are absent (from the reference table, REF). Splicing keeps the rest of the
sentence unchanged, so article and agreement edits (``a`` -> ``an``, plural
verbs, Portuguese gender) that hand-made probe sentences carry are not made.

File format (CSV or JSON Lines, one row per probe; UTF-8):

=============  ========  ===========================================================
column         required  meaning
=============  ========  ===========================================================
nc             yes       the expression's key (one NC, many rows)
sentence       yes       the original sentence, pre-tokenised (words split by spaces)
start, end     yes*      word span of the expression, 0-based, end exclusive
span           yes*      instead of start/end: ``[start, end]`` as JSON
probe          yes       ``syn``, ``comp-head``, ``comp-mod``, ``wordssyn``, ``rand``
                         (``original`` rows are allowed and need no substitute)
substitute     yes       the phrase that replaces the span (empty for ``original``)
variant        no        1-based variant number (default: counted per probe)
context        no        ``S1``, ``S2``, ``S3``, ``N``, ``Npl`` (default ``S1``)
lang           no        language code (default: the ``lang`` argument, else ``xx``)
comp           no        gold compositionality of the NC, on ``scale`` (default 0-5)
class          no        ``I``, ``PC`` or ``C``
=============  ========  ===========================================================

What is refused, each with the file, the row (the data row of a CSV, header not
counted; the line of a JSONL file) and the column: a file that is not UTF-8 or not
valid CSV/JSON (a row with an extra field, an unterminated quote), a text field that is
not a string (JSONL), a span that is not two integers (``[1]``, ``[1, 2, 3]``,
``["a", 2]``, ``1.5``, booleans), ``span`` and ``start``/``end`` that disagree, an
original span that misses the compound's words where they occur elsewhere in the sentence
(:func:`span_error`), a ``comp`` that is not a finite number on the declared scale, a row
that repeats an earlier row (after the normalisation below), and a (probe, variant) given
twice for one NC and context. Text is normalised to Unicode NFC first and runs of
whitespace count as one space (``nc`` and ``sentence`` are split into words on it), so the
same words typed in composed or decomposed form, or with extra or trailing spaces, compare
equal: such a row is a repeat, not a second variant.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import ErrorSink
from ..schema import SUBSTITUTIONS
from .rows import (
    Row,
    check_scale,
    given,
    group_errors,
    integer,
    nc_info,
    parse_row,
    read_rows,
    row_context,
    row_key,
    row_span,
    same_score,
)
from .splice import MinimalPair, span_error, splice, splice_phrase
from .stimuli import NounCompound, Stimuli, Stimulus

#: What to do about a pairs file that cannot be read as it is.
FIX_PAIRS = ("correct the file (UTF-8 CSV with one header line, or JSON Lines; see "
             "ncprobe.data.pairs for the format) and load it again")
#: Columns that hold text.
TEXT_COLUMNS = ("nc", "sentence", "probe", "substitute", "context", "lang", "class")
#: How a caller of :func:`load_pairs` declares another scale of ``comp``.
LOAD_SCALE_HINT = "load_pairs(..., scale=(low, high))"

# the splicing names, where this module's users have always found them
__all__ = ["FIX_PAIRS", "LOAD_SCALE_HINT", "TEXT_COLUMNS", "MinimalPair", "load_pairs",
           "span_error", "splice", "splice_phrase"]


def load_pairs(path: str | os.PathLike, lang: str | None = None, *, collect: bool = False,
               scale: tuple[float, float] = (0, 5)) -> Stimuli:
    """Read a minimal-pairs file (CSV or JSONL) into :class:`Stimuli`.

    Args:
        path: a ``.csv`` or ``.jsonl`` file in the format of this module.
        lang: language code for rows without a ``lang`` column.
        collect: report every bad row at once (raises :class:`DataErrors`).
        scale: the ``(low, high)`` range of the ``comp`` scores (default 0-5, as NCIMP);
            a score outside it, or not finite, is an error.

    Raises:
        DataError: the file cannot be read or parsed, or a row is invalid (see the module
            docstring); the error names the file, the row and the column.
        UsageError: ``scale`` is not two finite numbers, low < high.

    Example:
        >>> import pathlib, tempfile
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "pairs.csv"
        >>> _ = f.write_text("nc,sentence,start,end,probe,substitute\\n"
        ...                  "grey matter,use your grey matter,2,4,syn,brain\\n")
        >>> [s.text for s in load_pairs(f, lang="en")]
        ['use your grey matter', 'use your brain']
    """
    scale = check_scale(scale)
    path = Path(path)
    sink = ErrorSink(collect=collect)
    pairs: list[MinimalPair] = []
    ncs: dict[tuple[str, str], NounCompound] = {}
    counters: dict[tuple, int] = {}
    seen_rows: dict[str, tuple[int, str]] = {}
    seen_keys: dict[tuple, tuple[int, bool]] = {}
    spans_checked: set[tuple[str, str, str]] = set()
    for i, raw in read_rows(path, sink, FIX_PAIRS):
        row = parse_row(i, raw, sink, str(path), text_columns=TEXT_COLUMNS,
                        required=("nc", "sentence", "probe"), span_required=True)
        if row is None or _repeats(row, seen_rows, sink):
            continue
        r, where = row.text, row.where
        probe = r["probe"].strip()
        if probe not in SUBSTITUTIONS:
            sink.error(f"unknown probe {probe!r}; use one of {', '.join(SUBSTITUTIONS)}",
                       column="probe", **where)
            continue
        context = row_context(r, sink, where)
        if context is None:
            continue
        span = row_span(raw, sink, where)
        if span is None:
            continue
        rlang = (r.get("lang") or lang or "xx").strip()
        nc = " ".join(r["nc"].split())  # as the sentence: words split on whitespace
        key = (rlang, nc, context, probe)
        counters[key] = counters.get(key, 0) + 1
        variant = _variant(row, key, counters[key], seen_keys, sink)
        if variant is None:
            continue
        if (rlang, nc, context) not in spans_checked:
            spans_checked.add((rlang, nc, context))
            wrong = span_error(r["sentence"].split(), span, nc, exact=False)
            if wrong is not None:
                sink.error(wrong, column="span" if given(raw, "span") else "start", **where)
                continue
        _add_nc(ncs, nc_info(rlang, nc, r, raw, sink, where, scale, LOAD_SCALE_HINT), sink,
                where)
        pairs.append(MinimalPair(rlang, nc, context, r["sentence"], span, probe, variant,
                                 r.get("substitute") or "", str(path), i))
    items = splice(pairs, sink)
    group_errors(sink)
    sink.raise_if_any()
    for s in items:
        ncs.setdefault((s.lang, s.nc), NounCompound(s.lang, s.nc))
    return Stimuli(tuple(items), ncs, _span_notes(items), {})


def _repeats(row: Row, seen: dict[str, tuple[int, str]], sink: ErrorSink) -> bool:
    """Whether ``row`` repeats an earlier row (:func:`~ncprobe.data.rows.row_key`), after
    reporting it; otherwise it is recorded in ``seen`` as the first of its kind."""
    same = row_key(row.raw)
    exact = json.dumps(row.raw, sort_keys=True, ensure_ascii=False, default=str)
    if same in seen:
        earlier, earlier_exact = seen[same]
        how = "exactly" if exact == earlier_exact else (
            "once Unicode NFC and spaces are normalised (the same words, typed in another "
            "form or with other spacing: it would count that probe twice)")
        sink.error(f"repeats row {earlier} {how}; remove one of them", **row.where)
        return True
    seen[same] = (row.number, exact)
    return False


def _variant(row: Row, key: tuple, counted: int, seen: dict[tuple, tuple[int, bool]],
             sink: ErrorSink) -> int | None:
    """The row's variant: its ``variant`` column, else ``counted`` (its place among the rows
    of ``key``: language, NC, context, probe); ``None`` after reporting a bad or repeated
    one. A variant given twice is an error when either row numbers it explicitly."""
    raw, where = row.raw, row.where
    explicit = given(raw, "variant")
    if explicit:
        variant = integer(raw["variant"])
        if variant is None or variant < 1:
            sink.error(f"variant {raw['variant']!r} is not a whole number >= 1",
                       column="variant", **where)
            return None
    else:
        variant = counted
    _, nc, context, probe = key
    first = seen.get(key + (variant,))
    if first is not None and (explicit or first[1]):
        sink.error(f"probe {probe} variant {variant} of {nc!r} in context {context} is "
                   f"already given by row {first[0]}; number the variants apart, or "
                   "remove the repeat", column="variant" if explicit else "probe", **where)
        return None
    seen[key + (variant,)] = (row.number, explicit)
    return variant


def _add_nc(ncs: dict[tuple[str, str], NounCompound], info: NounCompound | None,
            sink: ErrorSink, where: dict) -> None:
    """Record a row's gold score and class; one that differs from an earlier row's of the
    same NC is reported (the later row's is kept)."""
    if info is None:
        return
    old = ncs.get((info.lang, info.nc))
    if old is not None and (old.cls != info.cls or not same_score(old.comp, info.comp)):
        sink.error(f"comp/class differ from an earlier row of {info.nc!r}", **where)
    ncs[(info.lang, info.nc)] = info


def _span_notes(items: list[Stimulus]) -> list[str]:
    """A note when original spans hold other than the NC key (inflection, or a wrong span)."""
    odd = [s for s in items if s.probe == "original" and s.target.lower() != s.nc.lower()]
    if not odd:
        return []
    shown = "; ".join(f"{s.source}: {s.target!r} for {s.nc!r}" for s in odd[:3])
    more = f" (and {len(odd) - 3} more)" if len(odd) > 3 else ""
    return [f"{len(odd)} original span(s) differ from their nc key — an inflected form, or a "
            f"start/end that points at the wrong words? {shown}{more}"]


