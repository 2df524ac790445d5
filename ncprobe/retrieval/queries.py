"""IdioLink's query texts: what a dense model encodes for each query mode, and where the span is.

The four query modes of the protocol (``../shared/idiolink/PROTOCOL.md``, "Query modes"):

* ``sentence``: the query sentence (with the model's query prefix), one sentence vector;
* ``span``: the same text, the vector pooled over the span's sub-word tokens ("late
  chunking"), the span located by its first occurrence in the sentence (as the data gives it);
* ``instruction_sentence``: the sentence behind :data:`INSTRUCTION` (which quotes the span),
  written in the model's :class:`~ncprobe.encoders.prompts.QueryFormat`, one sentence vector;
* ``instruction_span``: the same instructed text, pooled over the span located by its
  **last** occurrence in that text (the instruction's quote of it comes first).

:func:`query_text` gives the text and the span's character offsets in it; how the vector is
pooled from them is the encoder's business. Documents are always whole sentences
(:func:`document_text`).

The probe's vocabulary lives here too: the modes' and usages' display names
(:func:`mode_label`, :data:`USAGE_NAMES`), and :func:`check_mode_table`, the check of a
table that a figure or the report is given.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..encoders.prompts import QueryFormat
from ..errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["INSTRUCTION", "QUERY_MODES", "USAGE_NAMES", "QueryText", "check_mode_table",
           "document_text", "mode_label", "parse_modes", "query_text"]

#: The query modes, in the order of the paper's table.
QUERY_MODES: tuple[str, ...] = ("sentence", "span", "instruction_sentence", "instruction_span")
#: The query usages of the results (``all``: every query), with their names in tables and
#: figures.
USAGE_NAMES = {"all": "all queries", "literal": "literal queries",
               "idiomatic": "idiomatic queries"}


def mode_label(mode: str) -> str:
    """A query mode for display: ``instruction_span`` -> ``Instruction span``."""
    return str(mode).replace("_", " ").capitalize()


#: The protocol's instruction (``{span}``: the query's span, quoted).
INSTRUCTION = ("Based on the literal/idiomatic usage of the span '{span}' in the query, "
               "retrieve documents that contain a span conveying the same conceptual meaning.")


@dataclass(frozen=True)
class QueryText:
    """The text a model encodes for one query in one mode.

    Attributes:
        text: the text, as the model's format writes it.
        span: ``(start, end)``, the character offsets in ``text`` of the span to pool
            (``text[start:end]`` is the span); None in a sentence-vector mode.
    """

    text: str
    span: tuple[int, int] | None


def _check_mode(mode: str) -> None:
    if mode not in QUERY_MODES:
        raise UsageError(f"unknown query mode {mode!r}; the modes are "
                         + ", ".join(QUERY_MODES))


def query_text(fmt: QueryFormat, mode: str, sentence: str, span: str, start: int,
               end: int) -> QueryText:
    """What a model with format ``fmt`` encodes for a query in ``mode``.

    Args:
        fmt: the model's query format.
        mode: one of :data:`QUERY_MODES`.
        sentence: the query sentence (raw text).
        span: the PIE as it occurs in the sentence.
        start, end: the span's character offsets in ``sentence`` (its first occurrence:
            :attr:`~ncprobe.data.idiolink.IdioLinkRecord.offsets`).

    Returns:
        :class:`QueryText`: the text, and for the span modes the span's offsets in it.

    Raises:
        UsageError: an unknown mode, or ``sentence[start:end]`` is not ``span``.
        ValueError: ``instruction_span`` with a format whose text lacks the span (no format
            of :data:`~ncprobe.encoders.prompts.FORMAT_STYLES` drops the sentence).

    Example:
        >>> q = query_text(QueryFormat(), "instruction_span", "Spill it.", "Spill", 0, 5)
        >>> q.text[q.span[0]:q.span[1]], q.span[0] > q.text.index("'Spill'")
        ('Spill', True)
    """
    _check_mode(mode)
    if sentence[start:end] != span:
        raise UsageError(f"span {span!r} is not at offsets ({start}, {end}) of the sentence "
                         f"{sentence[:80]!r} (found {sentence[start:end]!r} there)")
    if mode == "sentence":
        return QueryText(fmt.query(sentence), None)
    if mode == "span":
        shift = len(fmt.query_prefix)
        return QueryText(fmt.query(sentence), (start + shift, end + shift))
    text = fmt.instructed(INSTRUCTION.format(span=span), sentence)
    if mode == "instruction_sentence":
        return QueryText(text, None)
    at = text.rfind(span)
    if at < 0:
        raise ValueError(f"query mode {mode!r}: the span {span!r} is not in the text that "
                         f"query format {fmt.describe()} writes: {text[:80]!r}")
    return QueryText(text, (at, at + len(span)))


def document_text(fmt: QueryFormat, sentence: str) -> str:
    """A document as a model with format ``fmt`` encodes it (its document prefix, if any)."""
    return fmt.document(sentence)


def parse_modes(modes: str | Sequence[str]) -> tuple[str, ...]:
    """The query modes of ``--modes``: a comma list (``sentence,span``) or a sequence of names.

    ``all`` stands for the four modes of :data:`QUERY_MODES`, in their order. The order given
    is kept.

    Raises:
        UsageError: no mode, an unknown mode (with the closest names), or a mode named twice.

    Example:
        >>> parse_modes("span, sentence")
        ('span', 'sentence')
    """
    items = modes.split(",") if isinstance(modes, str) else list(modes)
    names = [str(m).strip() for m in items]
    if not any(names):
        raise UsageError("no query mode given; the modes are " + ", ".join(QUERY_MODES)
                         + " (or all)")
    out: list[str] = []
    for name in names:
        if not name:
            raise UsageError(f"an empty query mode in {modes!r}; write the modes comma-"
                             "separated, e.g. sentence,span")
        expanded = QUERY_MODES if name == "all" else (name,)
        for mode in expanded:
            if mode not in QUERY_MODES:
                close = difflib.get_close_matches(mode, [*QUERY_MODES, "all"], n=3,
                                                  cutoff=0.5)
                hint = f" Did you mean {', '.join(close)}?" if close else ""
                raise UsageError(f"unknown query mode {mode!r}; the modes are "
                                 f"{', '.join(QUERY_MODES)} (or all).{hint}")
            if mode in out:
                raise UsageError(f"query mode {mode!r} is given twice in {modes!r}"
                                 + (" (all names every mode)" if "all" in names else ""))
            out.append(mode)
    return tuple(out)


def check_mode_table(df, name: str, columns: Sequence[str]) -> pd.DataFrame:
    """``df`` when it is a DataFrame with ``columns`` (:func:`ncprobe.query.check_table`) whose
    query modes (if it has a ``mode`` column) are known; else a UsageError naming what is
    wrong (figures and report tables check their input with it)."""
    from ..query import check_table

    df = check_table(df, name, columns, of="a retrieval run", where=f"tables[{name!r}]")
    if "mode" in df.columns:
        unknown = sorted({str(m) for m in df["mode"]} - set(QUERY_MODES))
        if unknown:
            raise UsageError(f"tables[{name!r}]: unknown query mode(s) {', '.join(unknown)}; "
                             f"the modes are {', '.join(QUERY_MODES)}")
    return df
