"""Bring your own minimal pairs: build probe sentences by splicing a phrase into a word span.

A minimal pair is an original sentence, the word span of the expression it
probes, and a substitute phrase that replaces that span. ncprobe builds the
probe sentence as ``words[:start] + substitute.split() + words[end:]``; the
substitute's span is ``[start, start + len(substitute.split()))``.

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
import math
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ..errors import DataError, ErrorSink, UsageError
from .generate import _find, splice_phrase
from .stimuli import CLASSES, CONTEXTS, PROBES, NounCompound, Stimuli, Stimulus

#: What to do about a pairs file that cannot be read as it is.
FIX_PAIRS = ("correct the file (UTF-8 CSV with one header line, or JSON Lines; see "
             "ncprobe.data.pairs for the format) and load it again")
#: Columns that hold text.
_TEXT = ("nc", "sentence", "probe", "substitute", "context", "lang", "class")
_INT = re.compile(r"^\s*[+-]?\d+\s*$")


@dataclass(frozen=True)
class MinimalPair:
    """One row of the minimal-pairs format (see the module docstring)."""

    lang: str
    nc: str
    context: str
    sentence: str
    span: tuple[int, int]
    probe: str
    variant: int
    substitute: str
    file: str = ""
    row: int | None = None
    column: str = ""

    @property
    def source(self) -> str:
        return ":".join(str(x) for x in (self.file, self.row, self.column) if x not in ("", None))

    def where(self, **extra) -> dict:
        """Where to point an error: file, row, NC key (plus any column given)."""
        return dict(file=self.file, row=self.row, key=self.nc, **extra)


def splice(pairs: Iterable[MinimalPair], sink: ErrorSink, *, target: dict | None = None
           ) -> list[Stimulus]:
    """Stimuli from minimal pairs: one original per (lang, nc, context), one stimulus per pair.

    ``target`` optionally maps ``(lang, nc, context)`` to the text the original
    span must hold (e.g. the NC's surface form); otherwise the span's own text
    is taken as the target.
    """
    out: list[Stimulus] = []
    seen: dict[tuple[str, str, str], MinimalPair] = {}
    for p in pairs:
        ctx_key = (p.lang, p.nc, p.context)
        words = tuple(p.sentence.split())
        start, end = p.span
        if not (0 <= start < end <= len(words)):
            sink.error(f"span [{start}, {end}) is empty or outside the sentence of {len(words)} "
                       "words", **p.where())
            continue
        first = seen.get(ctx_key)
        if first is None:
            seen[ctx_key] = p
            want = (target or {}).get(ctx_key, " ".join(words[start:end]))
            if " ".join(words[start:end]) != want:
                sink.error(f"span [{start}, {end}) holds {' '.join(words[start:end])!r}, "
                           f"expected {want!r}", **p.where())
                continue
            out.append(Stimulus(p.lang, p.nc, p.context, "original", 1, words, (start, end),
                                want, p.source))
        elif first.sentence.split() != list(words) or first.span != p.span:
            sink.error(f"sentence or span differs from the first row of {p.nc!r} in context "
                       f"{p.context} (row {first.row}); all rows of one context must share them",
                       **p.where())
            continue
        if p.probe == "original":
            continue
        phrase = p.substitute.split()
        if not phrase:
            sink.error(f"empty substitute for probe {p.probe!r}",
                       **p.where(column=p.column or "substitute"))
            continue
        tokens, span = splice_phrase(words, (start, end), phrase)  # checked above: no raise
        out.append(Stimulus(p.lang, p.nc, p.context, p.probe, p.variant, tokens, span,
                            " ".join(phrase), p.source, spliced=True))
    return out


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
    scale = _check_scale(scale)
    path = Path(path)
    sink = ErrorSink(collect=collect)
    rows = _read_rows(path, sink)
    pairs: list[MinimalPair] = []
    ncs: dict[tuple[str, str], NounCompound] = {}
    counters: dict[tuple, int] = {}
    seen_rows: dict[str, tuple[int, str]] = {}
    seen_keys: dict[tuple, tuple[int, bool]] = {}
    spans_checked: set[tuple[str, str, str]] = set()
    for i, raw in rows:
        where = dict(file=str(path), row=i, key=str(raw.get("nc", "")))
        r = _texts(raw, sink, where)
        if r is None:
            continue
        missing = [c for c in ("nc", "sentence", "probe") if not r.get(c, "").strip()]
        missing += [] if (_given(raw, "span") or (_given(raw, "start") and _given(raw, "end"))
                          ) else ["start/end"]
        if missing:
            for c in missing:
                sink.error("missing or empty required column", column=c, **where)
            continue
        same, exact = _row_key(raw), json.dumps(raw, sort_keys=True, ensure_ascii=False,
                                                default=str)
        if same in seen_rows:
            earlier, earlier_exact = seen_rows[same]
            how = "exactly" if exact == earlier_exact else (
                "once Unicode NFC and spaces are normalised (the same words, typed in another "
                "form or with other spacing: it would count that probe twice)")
            sink.error(f"repeats row {earlier} {how}; remove one of them", **where)
            continue
        seen_rows[same] = (i, exact)
        probe = r["probe"].strip()
        if probe not in PROBES:
            sink.error(f"unknown probe {probe!r}; use one of {', '.join(PROBES)}",
                       column="probe", **where)
            continue
        context = _context(r, sink, where)
        if context is None:
            continue
        span = _span(raw, sink, where)
        if span is None:
            continue
        rlang = (r.get("lang") or lang or "xx").strip()
        nc = " ".join(r["nc"].split())  # as the sentence: words split on whitespace
        key = (rlang, nc, context, probe)
        counters[key] = counters.get(key, 0) + 1
        explicit = _given(raw, "variant")
        if explicit:
            variant = _integer(raw["variant"])
            if variant is None or variant < 1:
                sink.error(f"variant {raw['variant']!r} is not a whole number >= 1",
                           column="variant", **where)
                continue
        else:
            variant = counters[key]
        first = seen_keys.get(key + (variant,))
        if first is not None and (explicit or first[1]):
            sink.error(f"probe {probe} variant {variant} of {nc!r} in context {context} is "
                       f"already given by row {first[0]}; number the variants apart, or "
                       "remove the repeat", column="variant" if explicit else "probe", **where)
            continue
        seen_keys[key + (variant,)] = (i, explicit)
        if (rlang, nc, context) not in spans_checked:
            spans_checked.add((rlang, nc, context))
            wrong = span_error(r["sentence"].split(), span, nc, exact=False)
            if wrong is not None:
                sink.error(wrong, column="span" if _given(raw, "span") else "start", **where)
                continue
        info = _nc_info(rlang, nc, r, raw, sink, where, scale, LOAD_SCALE_HINT)
        if info is not None:
            old = ncs.get((rlang, nc))
            if old is not None and (old.cls != info.cls or not _same(old.comp, info.comp)):
                sink.error(f"comp/class differ from an earlier row of {nc!r}", **where)
            ncs[(rlang, nc)] = info
        pairs.append(MinimalPair(rlang, nc, context, r["sentence"], span, probe, variant,
                                 r.get("substitute") or "", str(path), i))
    items = splice(pairs, sink)
    group_errors(sink)
    sink.raise_if_any()
    for s in items:
        ncs.setdefault((s.lang, s.nc), NounCompound(s.lang, s.nc))
    return Stimuli(tuple(items), ncs, _span_notes(items), {})


def _check_scale(scale) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in scale)
    except (TypeError, ValueError):
        raise UsageError(f"scale must be two numbers (low, high), not {scale!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise UsageError(f"scale must be two finite numbers with low < high, not {scale!r}")
    return lo, hi


def _given(r: dict, column: str) -> bool:
    """Whether a row gives a value for ``column`` (absent, null and blank are not values)."""
    v = r.get(column)
    return v is not None and not (isinstance(v, str) and not v.strip())


def _texts(raw: dict, sink: ErrorSink, where: dict, columns: Iterable[str] = _TEXT
           ) -> dict | None:
    """The row's text ``columns`` as NFC strings; ``None`` after reporting a non-string value."""
    out = {}
    ok = True
    for c in columns:
        v = raw.get(c)
        if v is None:
            continue
        if not isinstance(v, str):
            sink.error(f"must be a string, not {type(v).__name__} {json.dumps(v)[:40]}",
                       column=c, **where)
            ok = False
            continue
        out[c] = unicodedata.normalize("NFC", v)
    return out if ok else None


def _context(r: dict, sink: ErrorSink, where: dict) -> str | None:
    """The row's context (default ``S1``); ``None`` after reporting an unknown one."""
    context = (r.get("context") or "S1").strip()
    if context not in CONTEXTS:
        sink.error(f"unknown context {context!r}; use one of {', '.join(CONTEXTS)}",
                   column="context", **where)
        return None
    return context


def _integer(v) -> int | None:
    """An int, or a string of one; ``None`` for anything else (floats, booleans, lists...)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and _INT.match(v):
        return int(v)
    return None


def _span_notes(items: list[Stimulus]) -> list[str]:
    """A note when original spans hold other than the NC key (inflection, or a wrong span)."""
    odd = [s for s in items if s.probe == "original" and s.target.lower() != s.nc.lower()]
    if not odd:
        return []
    shown = "; ".join(f"{s.source}: {s.target!r} for {s.nc!r}" for s in odd[:3])
    more = f" (and {len(odd) - 3} more)" if len(odd) > 3 else ""
    return [f"{len(odd)} original span(s) differ from their nc key — an inflected form, or a "
            f"start/end that points at the wrong words? {shown}{more}"]


def span_error(tokens: Sequence[str], span: tuple[int, int], nc: str, *, exact: bool = True
               ) -> str | None:
    """What is wrong with the span of a compound's original sentence, or ``None``.

    The span must hold the compound's words (``nc`` split on whitespace), compared
    case-insensitively after the NFC normalisation the text gets. With ``exact`` (the
    generator, :func:`~ncprobe.data.generate.generate_pairs`, which draws its probes from
    those words) any other span is wrong. Without it (:func:`load_pairs`) a span is wrong only
    when the compound's words occur elsewhere in the sentence, i.e. ``start``/``end`` point
    at the wrong words; a span whose words occur nowhere else may be an inflected form
    (``police cars`` for ``police car``) and is kept, with a note (:func:`_span_notes`).
    A span outside the sentence is not judged here (the callers refuse it with its own
    message).

    >>> span_error("use your grey matter".split(), (1, 3), "grey matter").split(" (")[1]
    'they are at [2, 4)); correct start/end'
    >>> span_error("use your grey matter".split(), (2, 4), "Grey Matter") is None
    True
    """
    words = list(tokens)
    start, end = span
    if not 0 <= start < end <= len(words):
        return None
    want = nc.split()
    held = words[start:end]
    if [w.casefold() for w in held] == [w.casefold() for w in want]:
        return None
    found = _find(words, want)
    if not found and not exact:
        return None
    if found:
        at = ", ".join(f"[{a}, {b})" for a, b in found)
        fix = (f"(they are at {at}); correct start/end (0-based word positions, end "
               "exclusive)" + (", or leave them out to have the words looked up" if exact
                               else ""))
    else:
        fix = ("(they do not occur in the sentence); write nc as the sentence has it, or "
               "correct start/end (0-based word positions, end exclusive)")
    return (f"span [{start}, {end}) holds {' '.join(held)!r}, not the words of the compound "
            f"{nc!r} {fix}")


def _row_key(raw: dict) -> str:
    """A row as :func:`load_pairs` compares rows for repeats: every text value in NFC with
    runs of whitespace as one space and no space around it (what the text gets before it is
    used), a number as its text, absent, null and blank values left out."""
    norm = {}
    for column, value in raw.items():
        if isinstance(value, str):
            value = " ".join(unicodedata.normalize("NFC", value).split())
            if not value:
                continue
        elif value is None:
            continue
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)  # JSON Lines: 2 and "2" are the same start
        norm[str(column)] = value
    return json.dumps(norm, sort_keys=True, ensure_ascii=False, default=str)


def group_errors(sink: ErrorSink) -> None:
    """Merge the problems that several rows share into one error with a count.

    Errors with the same file, column and message (the row and NC key aside) are replaced,
    where the first of them stood, by one that says how many rows and which
    (``in 90 rows (rows 1-90): ...``); a problem of one row keeps its own message.
    """
    groups: dict[tuple, list[DataError]] = {}
    for e in sink.errors:
        key = (e.file, e.column, e.reason) if e.row is not None else (id(e),)
        groups.setdefault(key, []).append(e)
    out = []
    for same in groups.values():
        if len(same) == 1:
            out.append(same[0])
            continue
        rows = sorted({e.row for e in same if e.row is not None})
        out.append(DataError(f"in {len(rows)} rows ({_ranges(rows)}): {same[0].reason}",
                             file=same[0].file, column=same[0].column))
    sink.errors[:] = out


def _ranges(rows: list[int], shown: int = 8) -> str:
    """``rows 1-3, 7, 9-12``: sorted row numbers as runs (the first ``shown`` runs)."""
    runs: list[list[int]] = []
    for r in rows:
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    text = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs[:shown])
    more = f" and {len(runs) - shown} more run(s)" if len(runs) > shown else ""
    return f"rows {text}{more}"


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def _read_rows(path: Path, sink: ErrorSink) -> list[tuple[int, dict]]:
    """The rows of a pairs file with their numbers (CSV: data row; JSONL: line)."""
    from .reading import parse_table

    if not path.is_file():
        sink.error("file not found", file=str(path))
        sink.raise_if_any()
    try:
        data = path.read_bytes()
    except OSError as e:
        raise DataError(f"cannot be read ({e.strerror or e}); check its permissions",
                        file=str(path)) from None
    if path.suffix.lower() not in (".jsonl", ".ndjson"):
        df = parse_table(data, str(path), remedy=FIX_PAIRS)
        return list(enumerate(df.to_dict("records"), start=1))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line_no = data[:e.start].count(b"\n") + 1
        raise DataError(f"not UTF-8 text: byte 0x{data[e.start]:02x} cannot be decoded (a file "
                        f"saved as Latin-1 or Windows-1252?); re-save it as UTF-8",
                        file=str(path), row=line_no) from None
    rows = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            sink.error(f"not valid JSON: {e.msg}", file=str(path), row=i)
            continue
        if not isinstance(obj, dict):
            sink.error("each line must be a JSON object", file=str(path), row=i)
            continue
        rows.append((i, obj))
    if not rows and not sink.errors:
        raise DataError(f"no rows; {FIX_PAIRS}", file=str(path))
    return rows


def _span(r: dict, sink: ErrorSink, where: dict) -> tuple[int, int] | None:
    """``[start, end)`` from ``span`` or ``start``/``end``; both given must agree."""
    bad = ("span must be two integers: start and end columns, or span as [start, end]")
    span: tuple[int, int] | None = None
    if _given(r, "span"):
        raw = r["span"]
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError:
                raw = None
        parts = [_integer(x) for x in raw] if isinstance(raw, list) and len(raw) == 2 else []
        ints = [x for x in parts if x is not None]
        if len(parts) != 2 or len(ints) != 2:
            sink.error(f"{bad}; got {json.dumps(r['span'], ensure_ascii=False)[:40]}",
                       column="span", **where)
            return None
        span = (ints[0], ints[1])
    if _given(r, "start") or _given(r, "end"):
        start, end = _integer(r.get("start")), _integer(r.get("end"))
        if start is None or end is None:
            sink.error(f"{bad}; got start {r.get('start')!r}, end {r.get('end')!r}",
                       column="start" if start is None else "end", **where)
            return None
        if span is not None and span != (start, end):
            sink.error(f"span {list(span)} and start/end ({start}, {end}) disagree; give one of "
                       "them", column="span", **where)
            return None
        span = (start, end)
    return span


#: How a caller of :func:`load_pairs` declares another scale of ``comp``.
LOAD_SCALE_HINT = "load_pairs(..., scale=(low, high))"


def _nc_info(lang: str, nc: str, r: dict, raw: dict, sink: ErrorSink, where: dict,
             scale: tuple[float, float], scale_hint: str = LOAD_SCALE_HINT
             ) -> NounCompound | None:
    """The row's gold score and class (``None`` when it gives neither); ``scale_hint`` says
    how the caller declares another scale (a keyword, a command-line option)."""
    value = raw.get("comp")
    cls = (r.get("class") or "").strip() or None
    if not _given(raw, "comp") and cls is None:
        return None
    comp = math.nan
    if _given(raw, "comp"):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            sink.error(f"comp {value!r} is not a number", column="comp", **where)
        else:
            try:
                comp = float(value.strip().replace(",", ".") if isinstance(value, str) else value)
            except ValueError:
                sink.error(f"comp {value!r} is not a number", column="comp", **where)
            else:
                lo, hi = scale
                if not (math.isfinite(comp) and lo <= comp <= hi):
                    sink.error(f"comp {value!r} is not a finite number on the scale {lo:g}-"
                               f"{hi:g}; correct it, or declare the scale ({scale_hint})",
                               column="comp", **where)
                    comp = math.nan
    if cls is not None and cls not in CLASSES:
        sink.error(f"class {cls!r} is not one of {', '.join(CLASSES)}", column="class", **where)
        cls = None
    return NounCompound(lang, nc, comp=comp, cls=cls, gold=comp)
