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
comp           no        gold compositionality of the NC, 0-5
class          no        ``I``, ``PC`` or ``C``
=============  ========  ===========================================================
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import ErrorSink
from .stimuli import CLASSES, CONTEXTS, PROBES, NounCompound, Stimuli, Stimulus


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
        tokens = words[:start] + tuple(phrase) + words[end:]
        out.append(Stimulus(p.lang, p.nc, p.context, p.probe, p.variant, tokens,
                            (start, start + len(phrase)), " ".join(phrase), p.source,
                            spliced=True))
    return out


def load_pairs(path: str | os.PathLike, lang: str | None = None, *, collect: bool = False
               ) -> Stimuli:
    """Read a minimal-pairs file (CSV or JSONL) into :class:`Stimuli`.

    Args:
        path: a ``.csv`` or ``.jsonl`` file in the format of this module.
        lang: language code for rows without a ``lang`` column.
        collect: report every bad row at once (raises :class:`DataErrors`).

    Example:
        >>> import pathlib, tempfile
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "pairs.csv"
        >>> _ = f.write_text("nc,sentence,start,end,probe,substitute\\n"
        ...                  "grey matter,use your grey matter,2,4,syn,brain\\n")
        >>> [s.text for s in load_pairs(f, lang="en")]
        ['use your grey matter', 'use your brain']
    """
    path = Path(path)
    sink = ErrorSink(collect=collect)
    rows = _read_rows(path, sink)
    pairs: list[MinimalPair] = []
    ncs: dict[tuple[str, str], NounCompound] = {}
    counters: dict[tuple, int] = {}
    for i, r in enumerate(rows, start=1):
        where = dict(file=str(path), row=i, key=str(r.get("nc", "")))
        missing = [c for c in ("nc", "sentence", "probe") if not str(r.get(c, "")).strip()]
        missing += [] if ("span" in r or ("start" in r and "end" in r)) else ["start/end"]
        if missing:
            for c in missing:
                sink.error("missing or empty required column", column=c, **where)
            continue
        probe = str(r["probe"]).strip()
        if probe not in PROBES:
            sink.error(f"unknown probe {probe!r}; use one of {', '.join(PROBES)}",
                       column="probe", **where)
            continue
        context = str(r.get("context") or "S1").strip()
        if context not in CONTEXTS:
            sink.error(f"unknown context {context!r}; use one of {', '.join(CONTEXTS)}",
                       column="context", **where)
            continue
        span = _span(r, sink, where)
        if span is None:
            continue
        rlang = str(r.get("lang") or lang or "xx").strip()
        nc = str(r["nc"]).strip()
        key = (rlang, nc, context, probe)
        counters[key] = counters.get(key, 0) + 1
        try:
            variant = int(r["variant"]) if str(r.get("variant", "")).strip() else counters[key]
        except ValueError:
            sink.error(f"variant {r['variant']!r} is not an integer", column="variant", **where)
            continue
        info = _nc_info(rlang, nc, r, sink, where)
        if info is not None:
            old = ncs.get((rlang, nc))
            if old is not None and (old.cls != info.cls or not _same(old.comp, info.comp)):
                sink.error(f"comp/class differ from an earlier row of {nc!r}", **where)
            ncs[(rlang, nc)] = info
        pairs.append(MinimalPair(rlang, nc, context, str(r["sentence"]), span, probe, variant,
                                 str(r.get("substitute") or ""), str(path), i))
    items = splice(pairs, sink)
    sink.raise_if_any()
    for s in items:
        ncs.setdefault((s.lang, s.nc), NounCompound(s.lang, s.nc))
    return Stimuli(tuple(items), ncs, _span_notes(items), {})


def _span_notes(items: list[Stimulus]) -> list[str]:
    """A note when original spans hold something else than the NC key (inflection, or a wrong span)."""
    odd = [s for s in items if s.probe == "original" and s.target.lower() != s.nc.lower()]
    if not odd:
        return []
    shown = "; ".join(f"{s.source}: {s.target!r} for {s.nc!r}" for s in odd[:3])
    more = f" (and {len(odd) - 3} more)" if len(odd) > 3 else ""
    return [f"{len(odd)} original span(s) differ from their nc key — an inflected form, or a "
            f"start/end that points at the wrong words? {shown}{more}"]


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def _read_rows(path: Path, sink: ErrorSink) -> list[dict]:
    if not path.is_file():
        sink.error("file not found", file=str(path))
        sink.raise_if_any()
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        rows = []
        for i, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
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
            rows.append(obj)
        return rows
    import pandas as pd

    return pd.read_csv(path, dtype=str, keep_default_na=False).to_dict("records")


def _span(r: dict, sink: ErrorSink, where: dict) -> tuple[int, int] | None:
    try:
        if "span" in r and str(r["span"]).strip():
            raw = r["span"] if isinstance(r["span"], list) else json.loads(str(r["span"]))
            start, end = int(raw[0]), int(raw[1])
        else:
            start, end = int(r["start"]), int(r["end"])
    except (ValueError, TypeError, IndexError, KeyError, json.JSONDecodeError):
        sink.error("span must be two integers: start and end columns, or span as [start, end]",
                   column="span", **where)
        return None
    return start, end


def _nc_info(lang: str, nc: str, r: dict, sink: ErrorSink, where: dict) -> NounCompound | None:
    comp_raw = str(r.get("comp", "")).strip()
    cls = str(r.get("class", "")).strip() or None
    if not comp_raw and cls is None:
        return None
    comp = math.nan
    if comp_raw:
        try:
            comp = float(comp_raw.replace(",", "."))
        except ValueError:
            sink.error(f"comp {comp_raw!r} is not a number", column="comp", **where)
    if cls is not None and cls not in CLASSES:
        sink.error(f"class {cls!r} is not one of {', '.join(CLASSES)}", column="class", **where)
        cls = None
    return NounCompound(lang, nc, comp=comp, cls=cls, gold=comp)
