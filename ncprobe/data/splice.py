"""Minimal pairs and splicing: a probe sentence is the original with one word span replaced.

A minimal pair is an original sentence, the word span ``[start, end)`` of the expression it
probes, and a substitute phrase. The probe sentence is ``words[:start] + phrase +
words[end:]`` and the phrase's span is ``[start, start + len(phrase))`` (:func:`splice_phrase`);
every word outside the span is kept exactly, so article and agreement edits (``a`` -> ``an``,
plural verbs, Portuguese gender) that hand-made probe sentences carry are not made.

This is the one splicing path of ncprobe: user files (:func:`ncprobe.data.pairs.load_pairs`),
the English naturalistic contexts built from NCIMP's reference table
(:mod:`ncprobe.data.ncimp.reference`) and the generated probes (:mod:`ncprobe.data.probes`)
all build their sentences here. It holds no file reading and no frequency data, so the NCIMP
loader imports it without the generator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from ..errors import ErrorSink, UsageError
from .stimuli import Stimulus


@dataclass(frozen=True)
class MinimalPair:
    """One row of the minimal-pairs format (see :mod:`ncprobe.data.pairs`)."""

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


def splice_phrase(tokens: Sequence[str], span: tuple[int, int], phrase: str | Sequence[str]
                  ) -> tuple[tuple[str, ...], tuple[int, int]]:
    """Replace the words ``tokens[start:end]`` by ``phrase``; every other word is kept.

    Args:
        tokens: the sentence as words.
        span: ``(start, end)`` of the words to replace, end exclusive, not empty.
        phrase: the substitute, a string (split on whitespace) or a list of words.

    Returns:
        The new words and the substitute's span ``(start, start + len(phrase))``.

    Raises:
        UsageError: the span is empty or outside the sentence, or the phrase is empty.

    >>> splice_phrase("use your grey matter now".split(), (2, 4), "brain")
    (('use', 'your', 'brain', 'now'), (2, 3))
    """
    words = tuple(tokens)
    start, end = check_span(words, span)
    new = phrase_words(phrase, "substitute phrase")
    return words[:start] + new + words[end:], (start, start + len(new))


def check_span(words: Sequence[str], span: tuple[int, int]) -> tuple[int, int]:
    """``span`` as two ints, checked to be a non-empty span of ``words``.

    Raises:
        UsageError: ``span`` is not two integers, or is empty or outside the sentence.
    """
    try:
        start, end = (int(x) for x in span)
    except (TypeError, ValueError):
        raise UsageError(f"span must be two integers (start, end), not {span!r}") from None
    if not (0 <= start < end <= len(words)):
        raise UsageError(f"span [{start}, {end}) is empty or outside the sentence of "
                         f"{len(words)} words")
    return start, end


def phrase_words(phrase: str | Sequence[str], what: str) -> tuple[str, ...]:
    """The words of a phrase (a string split on whitespace, or a list of words).

    Raises:
        UsageError: the phrase has no words (``what`` names it in the message: ``empty
            {what}``).
    """
    if isinstance(phrase, str):
        words = tuple(phrase.split())
    else:
        words = tuple(w for part in phrase for w in str(part).split())
    if not words:
        raise UsageError(f"empty {what}")
    return words


def find_words(tokens: Sequence[str], words: Sequence[str]) -> list[tuple[int, int]]:
    """Every span of ``tokens`` that holds ``words`` (case-insensitive).

    >>> find_words("the grey matter of Grey Matter".split(), ["grey", "matter"])
    [(1, 3), (4, 6)]
    """
    low = [t.casefold() for t in tokens]
    want = [w.casefold() for w in words]
    n = len(want)
    return [(i, i + n) for i in range(len(low) - n + 1) if n and low[i:i + n] == want]


def span_error(tokens: Sequence[str], span: tuple[int, int], nc: str, *, exact: bool = True
               ) -> str | None:
    """What is wrong with the span of a compound's original sentence, or ``None``.

    The span must hold the compound's words (``nc`` split on whitespace), compared
    case-insensitively after the NFC normalisation the text gets. With ``exact`` (the
    generator, :func:`~ncprobe.data.generate.generate_pairs`, which draws its probes from
    those words) any other span is wrong. Without it (:func:`~ncprobe.data.pairs.load_pairs`)
    a span is wrong only when the compound's words occur elsewhere in the sentence, i.e.
    ``start``/``end`` point at the wrong words; a span whose words occur nowhere else may be
    an inflected form (``police cars`` for ``police car``) and is kept, with a note.
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
    found = find_words(words, want)
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
