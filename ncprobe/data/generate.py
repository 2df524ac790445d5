"""Generate probe sentences for a user's own compounds: P_Comp, P_Rand, P_Syn, P_WordsSyn.

Every generator here builds a probe the way :mod:`ncprobe.data.pairs` does: the words of
the compound's span ``[start, end)`` are replaced by a phrase and every word outside the
span is kept exactly, so the new sentence is ``tokens[:start] + phrase + tokens[end:]`` and
the phrase's span is ``[start, start + len(phrase))``. Article and agreement edits that
hand-written probes carry (``an apple tree`` -> ``a tree``, Portuguese gender) are *not*
made; a reviewer who wants them edits the written-out pairs file.

Probe families (see SPEC.md, section 1):

- **P_Comp** (:func:`comp_probes`): the span replaced by the compound's head alone
  (``comp-head``) and by its modifier alone (``comp-mod``).
- **P_Rand** (:func:`rand_words`, :func:`rand_probes`): the span replaced by random words
  of the same language, one per word of the compound, each frequency-matched to the word
  it replaces (same Zipf band, see below).
- **P_Syn** and **P_WordsSyn** (:func:`syn_probes`): the span replaced by a phrase the user
  gives (a synonym of the whole compound, or a synonym per word); nothing is invented.

Frequency matching (P_Rand) uses the ``wordfreq`` package, which ships its frequency data
(no network). For each word of the compound, a candidate is a word of
``wordfreq.top_n_list(lang, CANDIDATES)`` (the :data:`CANDIDATES` most frequent words of
the language, 100 000; for English and Portuguese that reaches down to Zipf ~2.0, i.e.
about once per 10 million words) that

- is alphabetic (``str.isalpha``) and at least three letters long,
- for a language other than English, is not more frequent in English than in the
  language itself (web text carries English words: ``bed``, ``discount`` in Portuguese),
- shares no word, case-insensitively, with the compound (nor with ``exclude``), and
- has a Zipf frequency (``wordfreq.zipf_frequency(word, lang)``) within ``band`` of the
  Zipf frequency of the word it replaces (inclusive; default ±0.5, i.e. within a factor
  of ~3 in frequency).

Random phrases are drawn with ``numpy.random.default_rng(seed)``: for each slot the
candidates are shuffled once, and phrase *i* takes the next candidate not used yet, so no
word is used twice across the ``n`` phrases of one compound. The same arguments give the
same phrases on every run and machine (the ``wordfreq`` data version is part of the
input: its version is in :data:`RandomPhrase.wordfreq_version`).
"""

from __future__ import annotations

import bisect
import csv
import errno
import functools
import hashlib
import io
import math
import os
import re
import stat
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from .._io import UNWRITABLE_ERRNOS, atomic_write_text, output_error
from ..errors import DataError, ErrorSink, MissingPackageError, OutputError, UsageError
from .stimuli import PROBE_FAMILIES, Stimuli, Stimulus

#: How many of a language's most frequent words (``wordfreq.top_n_list``) are candidates
#: for P_Rand. 100 000 reaches Zipf ~2.0 in English and Portuguese, low enough for the
#: rarer components of NCIMP, and takes about one second per language to score.
CANDIDATES = 100_000
#: Shortest candidate word, in letters: one- and two-letter entries of the lists are mostly
#: symbols, abbreviations and fragments (``em``, ``sa``, ``tho``... were drawn at 2).
MIN_LETTERS = 3
#: A loader note about released P_Rand probes (:func:`ncprobe.data.ncimp.anomalies.
#: note_repeats` writes ``"<lang>[ <context>]: rand ..."``); :func:`replace_rand` drops them.
_RAND_NOTE = re.compile(r"^\S+( \S+)?: rand (sentences|variants) ")


@dataclass(frozen=True)
class GeneratedProbe:
    """One generated probe sentence.

    Attributes:
        probe: the probe family (``comp-head``, ``comp-mod``, ``rand``, ``syn``,
            ``wordssyn``).
        variant: 1-based variant number within the family.
        tokens: the new sentence, words outside the span identical to the original.
        span: word span ``(start, end)`` of the substitute in ``tokens``, end exclusive.
        substitute: the substitute phrase, words joined by single spaces.
        zipf: for ``rand``: the frequency report of the substitute, else ``None``.
    """

    probe: str
    variant: int
    tokens: tuple[str, ...]
    span: tuple[int, int]
    substitute: str
    zipf: RandomPhrase | None = None

    @property
    def text(self) -> str:
        """The sentence, words joined by single spaces."""
        return " ".join(self.tokens)


@dataclass(frozen=True)
class RandomPhrase:
    """A frequency-matched random phrase, with what a reviewer needs to judge the match.

    Attributes:
        words: the chosen words, one per word of the compound, in order.
        zipf: ``wordfreq.zipf_frequency`` of each chosen word.
        source_words: the compound's words they replace.
        source_zipf: Zipf frequency of each word of the compound.
        diff: ``zipf - source_zipf`` per word (within ``±band``; 0 for a kept word).
        band: the half-width of the Zipf band the words were drawn from.
        wordfreq_version: the ``wordfreq`` version whose data were used.
        kept: positions of the compound's words kept as they are (not drawn).
    """

    words: tuple[str, ...]
    zipf: tuple[float, ...]
    source_words: tuple[str, ...]
    source_zipf: tuple[float, ...]
    diff: tuple[float, ...]
    band: float
    wordfreq_version: str
    kept: tuple[int, ...] = ()

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def drawn_diff(self) -> tuple[float, ...]:
        """The Zipf differences of the drawn words (the ``kept`` ones left out)."""
        return tuple(d for i, d in enumerate(self.diff) if i not in self.kept)

    @property
    def max_abs_diff(self) -> float:
        """The largest Zipf difference of the drawn words, in absolute value."""
        return max(abs(d) for d in self.drawn_diff)


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
    start, end = _check_span(words, span)
    new = _words(phrase, "substitute phrase")
    return words[:start] + new + words[end:], (start, start + len(new))


def comp_probes(tokens: Sequence[str], span: tuple[int, int], head: str, modifier: str
                ) -> list[GeneratedProbe]:
    """P_Comp: the compound's span replaced by its head alone and by its modifier alone.

    Args:
        tokens: the sentence with the compound, as words.
        span: ``(start, end)`` of the compound in ``tokens``, end exclusive.
        head: the compound's head as it should appear (one or more words).
        modifier: the compound's modifier as it should appear.

    Returns:
        Two probes, ``comp-head`` then ``comp-mod`` (variant 1 each).

    Raises:
        UsageError: a bad span, or an empty head or modifier.

    >>> [p.text for p in comp_probes("This is an academy award".split(), (3, 5),
    ...                              "award", "academy")]
    ['This is an award', 'This is an academy']
    """
    out = []
    for probe, part in (("comp-head", head), ("comp-mod", modifier)):
        _words(part, probe.replace("comp-", ""))
        new, new_span = splice_phrase(tokens, span, part)
        out.append(GeneratedProbe(probe, 1, new, new_span, " ".join(new[new_span[0]:new_span[1]])))
    return out


def syn_probes(tokens: Sequence[str], span: tuple[int, int], synonyms: Iterable[str], *,
               probe: str = "syn") -> list[GeneratedProbe]:
    """P_Syn (or P_WordsSyn with ``probe="wordssyn"``) from synonyms a user gives.

    Each synonym phrase replaces the span, giving variants 1, 2, ... in the given order;
    blank synonyms are skipped.

    Raises:
        UsageError: ``probe`` is neither ``syn`` nor ``wordssyn``, or a bad span.
    """
    if probe not in ("syn", "wordssyn"):
        raise UsageError(f"probe must be 'syn' or 'wordssyn', not {probe!r}")
    out: list[GeneratedProbe] = []
    for syn in synonyms:
        if not syn.split():
            continue
        new, new_span = splice_phrase(tokens, span, syn)
        out.append(GeneratedProbe(probe, len(out) + 1, new, new_span, " ".join(syn.split())))
    return out


def rand_words(nc_words: str | Sequence[str], lang: str, *, n: int, seed: int,
               band: float = 0.5, exclude: Iterable[str] = (), keep: Iterable[int] = ()
               ) -> list[RandomPhrase]:
    """``n`` frequency-matched random phrases for a compound (see the module docstring).

    Args:
        nc_words: the compound, a string (split on whitespace) or its words.
        lang: a language code ``wordfreq`` covers (``en``, ``pt``, ``de``, ...).
        n: how many phrases (the study used 5 per sentence).
        seed: the seed of ``numpy.random.default_rng``.
        band: half-width of the Zipf band around each word's Zipf frequency (> 0).
        exclude: more words no chosen word may equal (case-insensitive), e.g. the
            other words of the sentence.
        keep: positions (0-based) of words of the compound that stay as they are in
            every phrase: the linking words of ``pomme de terre`` (``keep=[1]`` gives
            ``X de Y``), which are neither head nor modifier.

    Returns:
        ``n`` phrases, each with as many words as the compound, no drawn word shared with
        the compound, ``exclude`` or another phrase of this call. In each slot half the
        candidates are drawn from below the word's Zipf frequency and half from above
        (alternating, the side of the first drawn at random), so the chosen words are not
        rarer than the compound's on average although a band holds more rare words.

    Raises:
        UsageError: ``wordfreq`` lacks the language; ``n``, ``band`` or ``nc_words`` is
            invalid; or a word has fewer than ``n`` candidates in its band (the message
            says how wide the band would need to be).
    """
    import numpy as np

    source = _words(nc_words, "compound")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise UsageError(f"n must be a whole number >= 1, not {n!r}")
    if isinstance(band, bool) or not isinstance(band, (int, float)) or not (
            math.isfinite(band) and band > 0):
        raise UsageError(f"band must be a finite number > 0, not {band!r}")
    fixed = set()
    for i in keep:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(source):
            raise UsageError(f"keep must hold positions of the compound's {len(source)} "
                             f"words, not {i!r}")
        fixed.add(i)
    if len(fixed) == len(source):
        raise UsageError("keep holds every word of the compound: nothing to draw")
    cands = _candidates(lang)
    banned = {w.casefold() for w in source} | {w.casefold() for w in exclude}
    src_zipf = tuple(_zipf(w, lang) for w in source)
    rng = np.random.default_rng(seed)
    used: set[str] = set()
    zs_sorted = _candidate_zipfs(lang)
    index = _candidate_index(lang)
    orders: dict[int, list[int]] = {}  # slot -> candidate positions in draw order
    for j, (word, z) in enumerate(zip(source, src_zipf, strict=True)):
        if j in fixed:
            continue
        lo = bisect.bisect_left(zs_sorted, z - band - 1e-9)
        hi = bisect.bisect_right(zs_sorted, z + band + 1e-9)
        # the banned words are few: count those in the band instead of filtering it
        n_banned = sum(1 for b in banned if b in index and lo <= index[b] < hi)
        if hi - lo - n_banned < n:
            raise UsageError(
                f"only {hi - lo - n_banned} candidate word(s) of {lang!r} within ±{band:g} of "
                f"the Zipf frequency {z:.2f} of {word!r} (need {n}); "
                + _band_needed(cands, z, banned, n) + ", or ask for fewer phrases (n, --k)")
        orders[j] = _balanced(lo, bisect.bisect_left(zs_sorted, z, lo, hi), hi, rng)
    version = _wordfreq_version()
    out: list[RandomPhrase] = []
    cursor = dict.fromkeys(orders, 0)
    for _ in range(n):
        picked: list[tuple[str, float]] = []
        for j in range(len(source)):
            if j in fixed:
                picked.append((source[j], src_zipf[j]))  # the same word in every phrase
                continue
            order = orders[j]
            while cursor[j] < len(order) and (
                    (w := cands[order[cursor[j]]][0].casefold()) in used or w in banned):
                cursor[j] += 1
            if cursor[j] >= len(order):
                raise UsageError(
                    f"ran out of distinct candidate words for {source[j]!r} (Zipf "
                    f"{src_zipf[j]:.2f}) within ±{band:g} in {lang!r} after "
                    f"{len(out)} phrase(s); widen the band or ask for fewer phrases (n, --k)")
            w, c = cands[order[cursor[j]]]
            cursor[j] += 1
            used.add(w.casefold())
            picked.append((w, c))
        zs = tuple(c for _, c in picked)
        diff = tuple(round(a - b, 2) for a, b in zip(zs, src_zipf, strict=True))
        out.append(RandomPhrase(
            words=tuple(w for w, _ in picked), zipf=zs, source_words=source,
            source_zipf=src_zipf, diff=diff, band=float(band), wordfreq_version=version,
            kept=tuple(sorted(fixed))))
    return out


def _balanced(lo: int, mid: int, hi: int, rng) -> list[int]:
    """Candidate positions ``[lo, hi)`` in draw order: those below the word's Zipf frequency
    (``[lo, mid)``) and those at or above it (``[mid, hi)``) each shuffled, then taken from
    the two sides in turn (the first side at random), the rest of the larger side after."""
    import numpy as np

    below = lo + rng.permutation(mid - lo)
    above = mid + rng.permutation(hi - mid)
    first, second = (below, above) if rng.random() < 0.5 else (above, below)
    m = min(len(first), len(second))
    pairs = [int(x) for x in np.column_stack((first[:m], second[:m])).ravel()]
    return pairs + [int(x) for x in first[m:]] + [int(x) for x in second[m:]]


def rand_probes(tokens: Sequence[str], span: tuple[int, int], nc_words: str | Sequence[str],
                lang: str, *, k: int, seed: int, band: float = 0.5) -> list[GeneratedProbe]:
    """``k`` P_Rand sentences: the span replaced by frequency-matched random phrases.

    Args:
        tokens: the sentence with the compound, as words.
        span: ``(start, end)`` of the compound in ``tokens``, end exclusive.
        nc_words: the compound (normally ``tokens[start:end]``), whose words set the
            frequencies to match and which no random word may share.
        lang, seed, band: as :func:`rand_words`.
        k: how many probes (variants 1..k).

    Returns:
        ``k`` probes of family ``rand``, each with its :class:`RandomPhrase` report in
        ``zipf``.

    Raises:
        UsageError: as :func:`rand_words`, or a bad span.
    """
    _check_span(tuple(tokens), span)
    phrases = rand_words(nc_words, lang, n=k, seed=seed, band=band)
    out = []
    for i, ph in enumerate(phrases, start=1):
        new, new_span = splice_phrase(tokens, span, ph.words)
        out.append(GeneratedProbe("rand", i, new, new_span, ph.text, ph))
    return out


def item_seed(seed: int, lang: str, nc: str, context: str) -> int:
    """The seed of one compound's draw: ``seed`` mixed with the compound's identity.

    Each (language, NC, context) gets its own stream, so adding, removing or reordering
    other compounds never changes a compound's random words.
    """
    text = "\0".join((str(int(seed)), lang, nc, context)).encode("utf-8")
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big")


def rand_stimuli(originals: Iterable[Stimulus], *, k: int = 5, seed: int = 0,
                 band: float = 0.5, keep: dict[tuple[str, str, str], Iterable[int]] | None = None
                 ) -> list[tuple[Stimulus, RandomPhrase]]:
    """P_Rand stimuli for original stimuli: ``k`` frequency-matched random phrases each.

    For each original (``probe == "original"``; other stimuli are ignored) the span's
    words are replaced by :func:`rand_words` phrases drawn with
    :func:`item_seed` ``(seed, lang, nc, context)``; no chosen word equals a word of the
    sentence (case-insensitive). ``keep`` maps ``(lang, nc, context)`` to the positions of
    the compound's words kept as they are (:func:`rand_words`). The new stimuli are marked
    ``spliced`` and their ``source`` names the generator, seed and band.

    Returns:
        ``(stimulus, report)`` pairs, ``k`` per original, in the originals' order.

    Raises:
        UsageError: as :func:`rand_words` (the message names the compound).
    """
    out: list[tuple[Stimulus, RandomPhrase]] = []
    for orig in originals:
        if orig.probe != "original":
            continue
        start, end = orig.span
        try:
            phrases = rand_words(orig.tokens[start:end], orig.lang, n=k, band=band,
                                 seed=item_seed(seed, orig.lang, orig.nc, orig.context),
                                 exclude=orig.tokens,
                                 keep=(keep or {}).get((orig.lang, orig.nc, orig.context), ()))
        except UsageError as e:
            raise UsageError(f"{orig.lang} {orig.nc!r} ({orig.context}): {e}") from None
        for i, ph in enumerate(phrases, start=1):
            tokens, span = splice_phrase(orig.tokens, orig.span, ph.words)
            out.append((Stimulus(orig.lang, orig.nc, orig.context, "rand", i, tokens, span,
                                 ph.text, f"generated:rand:seed={seed}:band={band:g}",
                                 spliced=True), ph))
    return out


def replace_rand(stimuli: Stimuli, *, k: int = 5, seed: int = 0, band: float = 0.5
                 ) -> Stimuli:
    """``stimuli`` with every P_Rand probe replaced by generated ones (:func:`rand_stimuli`).

    Stimuli that have no ``rand`` probes get them; released ones are dropped. A note
    records the generator, the ``wordfreq`` version and the Zipf match (median and largest
    absolute difference per word).
    """
    generated = rand_stimuli(stimuli, k=k, seed=seed, band=band)
    kept = [s for s in stimuli if s.probe != "rand"]
    out = stimuli._with(kept + [s for s, _ in generated])
    # the loader's counts of the released P_Rand (ncimp.anomalies.note_repeats) describe
    # probes that are gone
    out.notes = [n for n in out.notes if not _RAND_NOTE.match(n)]
    if generated:
        diffs = sorted(abs(d) for _, ph in generated for d in ph.drawn_diff)
        median = statistics.median(diffs)
        out.notes = out.notes + [
            f"P_Rand generated for {len(generated) // k} sentence(s) ({k} each, seed {seed}, "
            f"wordfreq {generated[0][1].wordfreq_version}, Zipf band ±{band:g}): |Zipf "
            f"difference| per word median {median:.2f}, max {diffs[-1]:.2f}"]
    return out


#: Head rules for rows without ``head``/``modifier`` (:func:`generate_pairs`): the head is
#: the ``last`` part of a two-part compound (head-final: English, German, Dutch) or the
#: ``first`` (head-initial: Portuguese, Spanish, French, Italian).
HEAD_RULES = ("first", "last")
#: Columns of a pairs file written by :func:`generate_pairs`. ``load_pairs`` reads the
#: first eleven; the others are for the reviewer: ``origin`` (``given``: from the input;
#: ``generated``), and for ``rand`` rows the Zipf frequency of each chosen word, of the
#: word of the compound it replaces, their differences and the largest absolute one.
PAIRS_COLUMNS = ("lang", "nc", "context", "sentence", "start", "end", "probe", "variant",
                 "substitute", "comp", "class", "origin", "zipf", "source_zipf", "zipf_diff",
                 "max_abs_zipf_diff", "wordfreq")
#: The text columns of the input of :func:`generate_pairs`.
INPUT_TEXT = ("nc", "sentence", "head", "modifier", "class", "syn", "wordssyn", "context",
              "lang")
#: How a caller of :func:`generate_pairs` declares another scale of ``comp``.
SCALE_HINT = "--scale LOW HIGH; in Python generate_pairs(..., scale=(low, high))"
#: Separator of several synonyms in one ``syn`` or ``wordssyn`` cell of the input.
SYNONYM_SEP = ";"
#: What to do about an input file of :func:`generate_pairs` that cannot be used as it is.
FIX_INPUT = ("correct the input (UTF-8 CSV or JSON Lines: nc, sentence, start/end or span, "
             "head, modifier; optional comp, class, syn, wordssyn, context, lang) and run "
             "again")


@dataclass
class GenerationReport:
    """What :func:`generate_pairs` wrote.

    Attributes:
        path: the pairs file written.
        ncs: the compounds (``(lang, nc)``), in input order.
        rows: rows written per probe family.
        zipf_diffs: ``|Zipf difference|`` of every generated random word.
        band, seed, k: the P_Rand settings used.
        wordfreq_version: the ``wordfreq`` version whose data were used.
    """

    path: Path
    ncs: list[tuple[str, str]]
    rows: dict[str, int]
    zipf_diffs: list[float]
    band: float
    seed: int
    k: int
    wordfreq_version: str

    def summary(self) -> str:
        """A few lines: what was written, and how close the frequency match is."""
        total = sum(self.rows.values())
        per = ", ".join(f"{p} {n}" for p, n in self.rows.items() if n)
        lines = [f"wrote {total} rows for {len(self.ncs)} compound(s) to {self.path} ({per})"]
        if self.zipf_diffs:
            d = sorted(self.zipf_diffs)
            lines.append(
                f"P_Rand: {len(d)} random words, seed {self.seed}, Zipf band ±{self.band:g} "
                f"(wordfreq {self.wordfreq_version}); |Zipf difference| median "
                f"{statistics.median(d):.2f}, max {d[-1]:.2f}")
        lines.append("review the file (every generated row has origin=generated; edit or "
                     "delete rows as you see fit), then load it with ncprobe.load_pairs")
        return "\n".join(lines)


def generate_pairs(path: str | os.PathLike, out: str | os.PathLike, lang: str | None = None,
                   *, k: int = 5, seed: int = 0, band: float = 0.5, head: str | None = None,
                   ask: Callable[[str, tuple[str, ...]], str] | None = None,
                   overwrite: bool = False, scale: tuple[float, float] = (0, 5),
                   progress: Callable[[str], None] | None = None) -> GenerationReport:
    """Write a reviewable pairs file with generated probes for compounds in context.

    The input (CSV or JSON Lines, one row per compound and sentence) gives ``nc`` and
    ``sentence`` (pre-tokenised: words split by spaces); the compound's span as
    ``start``/``end`` or ``span`` (without them, the compound's words are looked up in
    the sentence and must occur exactly once); ``head`` and ``modifier`` (or ``head=``
    / ``ask=``); and optionally ``comp`` (gold score on ``scale``), ``class``
    (``I``/``PC``/``C``), ``syn`` and ``wordssyn`` (synonym phrases separated by ``;``),
    ``context`` (default ``S1``, the first naturalistic sentence: results and reports count
    such rows as naturalistic, ``nat``; give ``S1``/``S2``/``S3`` for several sentences of
    one compound, ``N`` for a neutral one) and ``lang``.

    The words are checked (nothing is written unless every row passes): ``head`` and
    ``modifier`` must each be whole words of the compound (compared case-insensitively
    after the normalisation the text gets, a hyphenated word counting as its parts:
    ``eau-forte`` is ``eau`` and ``forte``) and different words of it; a given span must
    hold exactly the compound's words (:func:`~ncprobe.data.pairs.span_error`); one
    compound's sentences must differ (the same sentence in two contexts would count twice).
    A problem that several rows share is reported once, with the number of rows and which.

    Written, per input row, in the format of :func:`ncprobe.data.pairs.load_pairs` (with
    the review columns of :data:`PAIRS_COLUMNS`): the original; P_Comp (head alone,
    modifier alone: :func:`comp_probes`); ``k`` P_Rand (:func:`rand_stimuli`: same
    Zipf band, same number of words, no word of the sentence, seeded per compound); and
    P_Syn / P_WordsSyn from the synonyms given (:func:`syn_probes`). Every word outside
    the compound's span is kept. No article or agreement edit is made: edit the file.

    Args:
        path: the input file.
        out: the pairs file to write (``.csv``); an existing file is refused unless
            ``overwrite``.
        lang: language of rows without ``lang`` (a language ``wordfreq`` covers).
        k, seed, band: P_Rand phrases per sentence, seed, Zipf half-width.
        head: for rows without ``head``/``modifier``: ``last`` or ``first`` part of a
            two-part compound (parts split on spaces, or on the hyphen of one hyphenated
            word).
        ask: for rows without ``head``/``modifier`` when ``head`` is not given: called as
            ``ask(nc, parts)`` once per compound, returns the head (one of ``parts``).
        overwrite: replace an existing ``out`` (a file: a directory is refused).
        scale: the ``(low, high)`` range of ``comp``.
        progress: called with a line of progress (``compound 3 of 10: ...``, and before
            the candidate words of a language are scored, which takes seconds); ``None``:
            silent.

    Returns:
        A :class:`GenerationReport` (``.summary()`` for the user).

    Raises:
        DataError / DataErrors: bad rows in the input (every one, with file, row and
            column; nothing is written) or an unreadable input.
        UsageError: a bad option, ``out`` exists (or is a directory), ``wordfreq`` lacks
            the language, or a compound has too few frequency-matched candidates.
        MissingPackageError: ``wordfreq`` is not installed (exit 5).
        OutputError: ``out`` cannot be written (read-only file system, full disk, no
            permission, a file where a directory is needed; exit 6).
    """
    from .pairs import (
        _check_scale,
        _context,
        _given,
        _nc_info,
        _read_rows,
        _span,
        _texts,
        group_errors,
        span_error,
    )

    src, dest = Path(path), Path(out)
    if head is not None and head not in HEAD_RULES:
        raise UsageError(f"head must be one of {', '.join(HEAD_RULES)}, not {head!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise UsageError(f"k must be a whole number >= 0, not {k!r}")
    if dest.suffix.lower() != ".csv":
        raise UsageError(f"the output must be a .csv file, not {dest}")
    _check_out(dest)
    if (dest.exists() or dest.is_symlink()) and not overwrite:
        raise UsageError(f"{dest} exists; choose another --out, or pass --overwrite to "
                         "replace it")
    if os.path.realpath(dest) == os.path.realpath(src):
        raise UsageError("the output would replace the input; choose another --out")
    scale = _check_scale(scale)
    _require_wordfreq()
    if lang:
        _check_lang(lang)
    sink = ErrorSink(collect=True)
    rows = _read_rows(src, sink)
    say = progress or (lambda line: None)
    scored: set[str] = set()
    asked: dict[tuple[str, str], str] = {}
    seen: dict[tuple[str, str, str], int] = {}
    sentences: dict[tuple[str, str, tuple[str, ...]], tuple[int, str]] = {}
    out_rows: list[dict[str, str]] = []
    counts = dict.fromkeys(PROBE_FAMILIES, 0)
    diffs: list[float] = []
    ncs: list[tuple[str, str]] = []
    for n, (i, raw) in enumerate(rows, start=1):
        where = dict(file=str(src), row=i, key=str(raw.get("nc", "")))
        say(f"compound {n} of {len(rows)}: {' '.join(str(raw.get('nc') or '?').split())}")
        r = _texts(raw, sink, where, INPUT_TEXT)
        if r is None:
            continue
        bad = [c for c in ("nc", "sentence") if not r.get(c, "").strip()]
        for c in bad:
            sink.error("missing or empty required column", column=c, **where)
        if bad:
            continue
        nc, tokens = " ".join(r["nc"].split()), tuple(r["sentence"].split())
        rlang = (r.get("lang") or lang or "").strip()
        if not rlang:
            sink.error("no language: give a lang column or the lang argument (--lang)",
                       column="lang", **where)
            continue
        context = _context(r, sink, where)
        if context is None:
            continue
        first = seen.get((rlang, nc, context))
        if first is not None:
            sink.error(f"{nc!r} already has a sentence in context {context} (row {first}); "
                       "give each sentence of one compound its own context (S1, S2, S3)",
                       column="context", **where)
            continue
        seen[(rlang, nc, context)] = i
        # the same sentence (words compared case-insensitively) in two contexts of one
        # compound would weigh twice in its naturalistic mean
        again = sentences.get((rlang, nc, tuple(t.casefold() for t in tokens)))
        if again is not None:
            sink.error(f"the sentence of {nc!r} repeats that of row {again[0]} (context "
                       f"{again[1]}): it would count twice; give another sentence or remove "
                       "the row", column="sentence", **where)
            continue
        sentences[(rlang, nc, tuple(t.casefold() for t in tokens))] = (i, context)
        if _given(raw, "span") or _given(raw, "start") or _given(raw, "end"):
            span = _span(raw, sink, where)
            if span is None:
                continue
            column = "span" if _given(raw, "span") else "start"
            if not 0 <= span[0] < span[1] <= len(tokens):
                sink.error(f"span [{span[0]}, {span[1]}) is empty or outside the sentence of "
                           f"{len(tokens)} words", column=column, **where)
                continue
            wrong = span_error(tokens, span, nc, exact=True)
            if wrong is not None:
                sink.error(wrong, column=column, **where)
                continue
        else:
            found = _find(tokens, nc.split())
            if len(found) != 1:
                sink.error(f"the words of {nc!r} occur {len(found)} times in the sentence; "
                           "give the span (start, end: 0-based word positions, end "
                           "exclusive)", column="sentence", **where)
                continue
            span = found[0]
        info = _nc_info(rlang, nc, r, raw, sink, where, scale, SCALE_HINT)
        parts = _head_mod(nc, r, head, ask, asked, rlang, sink, where)
        if parts is None:
            continue
        orig = Stimulus(rlang, nc, context, "original", 1, tokens, span,
                        " ".join(tokens[span[0]:span[1]]), f"{src}:{i}")
        # words of the compound in neither head nor modifier (de in pomme de terre) stay;
        # a hyphenated word counts as its parts (eau-forte: drawn)
        parts_words = {w for part in parts for w in _units(part)}
        linking = [j for j, w in enumerate(orig.tokens[span[0]:span[1]])
                   if not parts_words.intersection(_units(w))]
        if k and rlang not in scored:
            scored.add(rlang)
            say(f"scoring the {CANDIDATES:,} most frequent words of {rlang!r} (wordfreq; once "
                "per language, a few seconds)")
        try:
            generated: list[tuple[GeneratedProbe, RandomPhrase | None, str]] = [
                (p, None, "generated") for p in comp_probes(tokens, span, *parts)]
            generated += [(GeneratedProbe("rand", s.variant, s.tokens, s.span, s.target, ph),
                           ph, "generated") for s, ph in (
                               rand_stimuli([orig], k=k, seed=seed, band=band,
                                            keep={(rlang, nc, context): linking})
                               if k else [])]
        except UsageError as e:
            sink.error(str(e), **where)
            continue
        for probe in ("syn", "wordssyn"):
            cell = r.get(probe, "")
            generated += [(p, None, "given") for p in syn_probes(
                tokens, span, cell.split(SYNONYM_SEP), probe=probe)]
        if (rlang, nc) not in ncs:
            ncs.append((rlang, nc))
        common = dict(lang=rlang, nc=nc, context=context, sentence=" ".join(tokens),
                      start=str(span[0]), end=str(span[1]),
                      comp=str(raw.get("comp", "") if info is not None else ""),
                      **{"class": (r.get("class") or "").strip()})
        out_rows.append(dict(common, probe="original", variant="1",
                             substitute=orig.target, origin="given"))
        counts["original"] += 1
        for p, ph, origin in generated:
            row = dict(common, probe=p.probe, variant=str(p.variant), substitute=p.substitute,
                       origin=origin)
            if ph is not None:
                row.update(zipf=_nums(ph.zipf), source_zipf=_nums(ph.source_zipf),
                           zipf_diff=_nums(ph.diff), max_abs_zipf_diff=f"{ph.max_abs_diff:.2f}",
                           wordfreq=ph.wordfreq_version)
                diffs += [abs(d) for d in ph.drawn_diff]
            out_rows.append(row)
            counts[p.probe] += 1
    group_errors(sink)
    sink.raise_if_any()
    if not out_rows:
        raise DataError(f"no compounds to generate probes for; {FIX_INPUT}", file=str(src))
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=PAIRS_COLUMNS, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(out_rows)
    say(f"writing {dest}")
    try:
        atomic_write_text(dest, buf.getvalue())
    except OSError as e:
        if e.errno not in UNWRITABLE_ERRNOS:
            raise
        raise output_error(e, dest, what="pairs file") from None
    return GenerationReport(dest, ncs, counts, diffs, float(band), int(seed), k,
                            _wordfreq_version())


def _check_out(dest: Path) -> None:
    """Refuse, before any work, an output path that cannot become the pairs file.

    A directory is a usage error (exit 2); a symbolic-link loop at the path or in a folder
    of it, a dangling link or a file where a folder is needed (``notes.txt/pairs.csv``) is an
    :class:`~ncprobe.errors.OutputError` (exit 6).
    """
    def fail(code: int, cause: str | None = None) -> OutputError:
        return output_error(OSError(code, cause or os.strerror(code)), dest, what="pairs file")

    try:
        if stat.S_ISDIR(dest.stat().st_mode):
            raise UsageError(f"{dest} is a directory; name the pairs file to write (.csv), "
                             f"e.g. {dest / 'pairs.csv'}")
    except FileNotFoundError:
        pass  # a new file (or a dangling link, replaced as a file is: --overwrite)
    except OSError as e:  # a link loop, a file where a folder is needed, no permission
        raise output_error(e, dest, what="pairs file") from None
    for parent in dest.parents:
        try:
            mode = parent.stat().st_mode
        except FileNotFoundError:
            if parent.is_symlink():
                raise fail(errno.ENOENT, f"{parent} is a symbolic link to nothing") from None
            continue  # created when the file is written
        except OSError as e:
            raise output_error(e, dest, what="pairs file") from None
        if not stat.S_ISDIR(mode):
            raise fail(errno.ENOTDIR)
        return


def _units(text: str) -> list[str]:
    """The words of a compound or of a part of it, as the head and modifier check compares
    them: split on whitespace and on hyphens (``eau-forte`` is ``eau``, ``forte``),
    case-folded."""
    return [w.casefold() for w in re.split(r"[\s-]+", text) if w]


def _find(tokens: Sequence[str], words: Sequence[str]) -> list[tuple[int, int]]:
    """Every span of ``tokens`` that holds ``words`` (case-insensitive)."""
    low = [t.casefold() for t in tokens]
    want = [w.casefold() for w in words]
    n = len(want)
    return [(i, i + n) for i in range(len(low) - n + 1) if n and low[i:i + n] == want]


def _parts(nc: str) -> tuple[str, ...]:
    """The two parts of a compound: its words, or the halves of one hyphenated word."""
    words = tuple(nc.split())
    if len(words) == 1 and words[0].count("-") == 1:
        return tuple(words[0].split("-"))
    return words


def _head_mod(nc: str, r: dict, rule: str | None, ask, asked: dict, lang: str,
              sink: ErrorSink, where: dict) -> tuple[str, str] | None:
    """(head, modifier) of a row: its columns, else the head rule, else ``ask``."""
    head, mod = (" ".join((r.get(c) or "").split()) for c in ("head", "modifier"))
    if head and mod:
        words = _units(nc)
        found = {}
        for part, column in ((head, "head"), (mod, "modifier")):
            found[column] = _find(words, _units(part))
            if not found[column]:
                sink.error(f"{column} {part!r} is not a whole word (or words) of the compound "
                           f"{nc!r}, whose words are {', '.join(words)}; correct the {column} "
                           "column", column=column, **where)
                return None
        if not any(h_end <= m_start or m_end <= h_start for h_start, h_end in found["head"]
                   for m_start, m_end in found["modifier"]):
            sink.error(f"head {head!r} and modifier {mod!r} are the same word(s) of the compound "
                       f"{nc!r}; give its head and its modifier", column="modifier", **where)
            return None
        return head, mod
    if head or mod:
        sink.error("give both head and modifier, or neither (then --head first|last)",
                   column="modifier" if head else "head", **where)
        return None
    parts = _parts(nc)
    if rule is None and ask is None:
        sink.error("no head and modifier: add the columns head and modifier, or pass --head "
                   "last (head-final languages: English, German) or --head first "
                   "(head-initial: Portuguese, Spanish, French)", column="head", **where)
        return None
    if len(parts) != 2:
        sink.error(f"{nc!r} has {len(parts)} part(s), not two, so its head cannot be "
                   "inferred; give the head and modifier columns for it", column="head",
                   **where)
        return None
    if rule is not None:
        h = 0 if rule == "first" else 1
        return parts[h], parts[1 - h]
    if (lang, nc) not in asked:
        answer = " ".join(str(ask(nc, parts)).split())
        if answer not in parts:
            raise UsageError(f"the head of {nc!r} must be one of {', '.join(parts)}, not "
                             f"{answer!r}")
        asked[(lang, nc)] = answer
    h = parts.index(asked[(lang, nc)])
    return parts[h], parts[1 - h]


def _nums(values: Iterable[float]) -> str:
    return " ".join(f"{v:.2f}" for v in values)


def _require_wordfreq(needs: str = "generating probes needs", instead: str = "") -> None:
    """Stop with :class:`MissingPackageError` (exit 5) when ``wordfreq`` cannot be imported.

    The one check of every generator that draws P_Rand (:func:`generate_pairs`, the NCS
    context of :mod:`ncprobe.data.ncs`); ``needs`` says who needs it, ``instead`` what the
    user can do other than installing it (appended in parentheses).
    """
    try:
        import wordfreq  # noqa: F401
    except ImportError:
        raise MissingPackageError(
            f'{needs} the wordfreq package, which is not installed: pip install '
            f'"ncprobe[generate]"' + (f" ({instead})" if instead else "")) from None


def _check_span(words: tuple[str, ...], span: tuple[int, int]) -> tuple[int, int]:
    try:
        start, end = (int(x) for x in span)
    except (TypeError, ValueError):
        raise UsageError(f"span must be two integers (start, end), not {span!r}") from None
    if not (0 <= start < end <= len(words)):
        raise UsageError(f"span [{start}, {end}) is empty or outside the sentence of "
                         f"{len(words)} words")
    return start, end


def _words(phrase: str | Sequence[str], what: str) -> tuple[str, ...]:
    """The words of a phrase (a string split on whitespace, or a list of words)."""
    if isinstance(phrase, str):
        words = tuple(phrase.split())
    else:
        words = tuple(w for part in phrase for w in str(part).split())
    if not words:
        raise UsageError(f"empty {what}")
    return words


def _band_needed(cands: Sequence[tuple[str, float]], z: float, banned: set[str], n: int
                 ) -> str:
    """How wide a band would give ``n`` candidates around Zipf ``z`` (for error messages)."""
    dists = sorted(abs(c - z) for w, c in cands if w.casefold() not in banned)
    if len(dists) < n:
        return f"no band would: the language has only {len(dists)} candidate words"
    return f"a band of ±{math.ceil(round(dists[n - 1], 6) * 100) / 100:.2f} would give {n}"


def _check_lang(lang: str) -> None:
    langs = _languages()
    if lang not in langs:
        raise UsageError(f"wordfreq has no frequency list for language {lang!r}; it covers: "
                         f"{', '.join(sorted(langs))}")


@functools.lru_cache(maxsize=1)
def _languages() -> frozenset[str]:
    import wordfreq

    return frozenset(wordfreq.available_languages("best"))


def _zipf(word: str, lang: str) -> float:
    import wordfreq

    _check_lang(lang)
    return float(wordfreq.zipf_frequency(word, lang))


@functools.lru_cache(maxsize=8)
def _candidates(lang: str) -> tuple[tuple[str, float], ...]:
    """The candidate words of a language with their Zipf frequencies, by ascending Zipf
    frequency (ties in wordfreq's own order, so the order is fixed by the data alone)."""
    import wordfreq

    _check_lang(lang)
    out = []
    for w in wordfreq.top_n_list(lang, CANDIDATES):
        if w.isalpha() and len(w) >= MIN_LETTERS:
            z = float(wordfreq.zipf_frequency(w, lang))
            # web text of every language carries English: a word more frequent in English
            # than in the language itself (bed, discount in Portuguese) is not a candidate
            if lang != "en" and wordfreq.zipf_frequency(w, "en") > z:
                continue
            out.append((w, z))
    return tuple(sorted(out, key=lambda wc: wc[1]))  # stable: ties keep wordfreq's order


@functools.lru_cache(maxsize=8)
def _candidate_zipfs(lang: str) -> list[float]:
    """The Zipf frequencies of :func:`_candidates`, ascending (for ``bisect``)."""
    return [c for _, c in _candidates(lang)]


@functools.lru_cache(maxsize=8)
def _candidate_index(lang: str) -> dict[str, int]:
    """Each candidate word (case-folded) -> its position in :func:`_candidates`."""
    return {w.casefold(): i for i, (w, _) in enumerate(_candidates(lang))}


@functools.lru_cache(maxsize=1)
def _wordfreq_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wordfreq")
    except PackageNotFoundError:  # pragma: no cover - imported above, so installed
        return "unknown"
