"""User files, row by row: reading CSV and JSON Lines, normalising and validating the columns.

The two readers of a user's own file, :func:`ncprobe.data.pairs.load_pairs` (minimal pairs)
and :func:`ncprobe.data.generate.generate_pairs` (compounds in context), share everything
here: :func:`read_rows` reads the file (errors name the file and the row: the data row of a
CSV, header not counted; the line of a JSONL file), :func:`parse_row` opens each row (its
text columns in Unicode NFC, the required columns present), and the column readers
(:func:`row_context`, :func:`row_span`, :func:`nc_info`, :func:`integer`) report a bad value
with its file, row and column to an :class:`~ncprobe.errors.ErrorSink`, so every bad row is
listed at once. :func:`group_errors` then merges the problems several rows share.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import DataError, ErrorSink, UsageError
from .reading import parse_table
from .stimuli import CLASSES, CONTEXTS, NounCompound

_INT = re.compile(r"^\s*[+-]?\d+\s*$")


@dataclass(frozen=True)
class Row:
    """One row of a user file, opened by :func:`parse_row`.

    Attributes:
        number: the row's number (CSV: data row, header not counted; JSONL: line).
        raw: the row as read (JSONL values keep their JSON types).
        text: its text columns, as NFC strings (absent and null columns left out).
        where: where to point an error about it: ``file``, ``row`` and ``key`` (the NC).
    """

    number: int
    raw: dict
    text: dict
    where: dict


def read_rows(path: Path, sink: ErrorSink, remedy: str) -> list[tuple[int, dict]]:
    """The rows of a CSV or JSON Lines (``.jsonl``, ``.ndjson``) file with their numbers.

    Args:
        path: the file.
        sink: where a JSONL line that is not a JSON object goes (the other lines are read).
        remedy: what the user should do about a file that cannot be read, appended to the
            error.

    Raises:
        DataError: the file is missing, unreadable, not UTF-8, not valid CSV, or has no rows.
    """
    if not path.is_file():
        sink.error("file not found", file=str(path))
        sink.raise_if_any()
    try:
        data = path.read_bytes()
    except OSError as e:
        raise DataError(f"cannot be read ({e.strerror or e}); check its permissions",
                        file=str(path)) from None
    if path.suffix.lower() not in (".jsonl", ".ndjson"):
        df = parse_table(data, str(path), remedy=remedy)
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
        raise DataError(f"no rows; {remedy}", file=str(path))
    return rows


def parse_row(number: int, raw: dict, sink: ErrorSink, file: str, *,
              text_columns: Iterable[str], required: Iterable[str], span_required: bool = False
              ) -> Row | None:
    """Open one row: its text columns (:func:`texts`) and the required ones present.

    Args:
        number, raw: a row of :func:`read_rows`.
        sink: where its problems go.
        file: the file, as errors name it.
        text_columns: the columns that hold text.
        required: the text columns that must hold more than white space.
        span_required: the row must also give a span (``span``, or ``start`` and ``end``).

    Returns:
        The row, or ``None`` after reporting a non-string text value or each missing column.
    """
    where = dict(file=file, row=number, key=str(raw.get("nc", "")))
    text = texts(raw, sink, where, text_columns)
    if text is None:
        return None
    missing = [c for c in required if not text.get(c, "").strip()]
    if span_required and not (given(raw, "span") or (given(raw, "start")
                                                     and given(raw, "end"))):
        missing.append("start/end")
    for c in missing:
        sink.error("missing or empty required column", column=c, **where)
    return None if missing else Row(number, raw, text, where)


def given(r: dict, column: str) -> bool:
    """Whether a row gives a value for ``column`` (absent, null and blank are not values)."""
    v = r.get(column)
    return v is not None and not (isinstance(v, str) and not v.strip())


def texts(raw: dict, sink: ErrorSink, where: dict, columns: Iterable[str]) -> dict | None:
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


def row_context(r: dict, sink: ErrorSink, where: dict) -> str | None:
    """The row's context (default ``S1``); ``None`` after reporting an unknown one."""
    context = (r.get("context") or "S1").strip()
    if context not in CONTEXTS:
        sink.error(f"unknown context {context!r}; use one of {', '.join(CONTEXTS)}",
                   column="context", **where)
        return None
    return context


def integer(v) -> int | None:
    """An int, or a string of one; ``None`` for anything else (floats, booleans, lists...)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and _INT.match(v):
        return int(v)
    return None


def row_span(r: dict, sink: ErrorSink, where: dict) -> tuple[int, int] | None:
    """``[start, end)`` from ``span`` or ``start``/``end``; both given must agree.

    ``None`` after reporting a span that is not two integers, or two that disagree.
    """
    bad = ("span must be two integers: start and end columns, or span as [start, end]")
    span: tuple[int, int] | None = None
    if given(r, "span"):
        raw = r["span"]
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError:
                raw = None
        parts = [integer(x) for x in raw] if isinstance(raw, list) and len(raw) == 2 else []
        ints = [x for x in parts if x is not None]
        if len(parts) != 2 or len(ints) != 2:
            sink.error(f"{bad}; got {json.dumps(r['span'], ensure_ascii=False)[:40]}",
                       column="span", **where)
            return None
        span = (ints[0], ints[1])
    if given(r, "start") or given(r, "end"):
        start, end = integer(r.get("start")), integer(r.get("end"))
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


def row_key(raw: dict) -> str:
    """A row as it is compared for repeats: every text value in NFC with runs of whitespace
    as one space and no space around it (what the text gets before it is used), a number as
    its text, absent, null and blank values left out."""
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


def check_scale(scale) -> tuple[float, float]:
    """The ``(low, high)`` scale of ``comp`` as two floats.

    Raises:
        UsageError: ``scale`` is not two finite numbers with low < high.
    """
    try:
        lo, hi = (float(x) for x in scale)
    except (TypeError, ValueError):
        raise UsageError(f"scale must be two numbers (low, high), not {scale!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise UsageError(f"scale must be two finite numbers with low < high, not {scale!r}")
    return lo, hi


def nc_info(lang: str, nc: str, r: dict, raw: dict, sink: ErrorSink, where: dict,
            scale: tuple[float, float], scale_hint: str) -> NounCompound | None:
    """The row's gold score and class (``None`` when it gives neither).

    Args:
        lang, nc: the compound.
        r: the row's text columns; raw: the row as read.
        sink, where: where a bad ``comp`` or ``class`` goes.
        scale: the ``(low, high)`` range of ``comp``.
        scale_hint: how the caller declares another scale (a keyword, a command-line
            option), for the message about a score off the scale.
    """
    value = raw.get("comp")
    cls = (r.get("class") or "").strip() or None
    if not given(raw, "comp") and cls is None:
        return None
    comp = math.nan
    if given(raw, "comp"):
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


def same_score(a: float, b: float) -> bool:
    """Two gold scores are the same (two NaNs, no score, included)."""
    return (math.isnan(a) and math.isnan(b)) or a == b


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
