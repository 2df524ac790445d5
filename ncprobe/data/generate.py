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

- is alphabetic (``str.isalpha``) and at least two letters long,
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

import functools
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..errors import UsageError

#: How many of a language's most frequent words (``wordfreq.top_n_list``) are candidates
#: for P_Rand. 100 000 reaches Zipf ~2.0 in English and Portuguese, low enough for the
#: rarer components of NCIMP, and takes about one second per language to score.
CANDIDATES = 100_000
#: Shortest candidate word, in letters (single letters are symbols more than words).
MIN_LETTERS = 2


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
        diff: ``zipf - source_zipf`` per word (within ``±band``).
        band: the half-width of the Zipf band the words were drawn from.
        wordfreq_version: the ``wordfreq`` version whose data were used.
    """

    words: tuple[str, ...]
    zipf: tuple[float, ...]
    source_words: tuple[str, ...]
    source_zipf: tuple[float, ...]
    diff: tuple[float, ...]
    band: float
    wordfreq_version: str

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def max_abs_diff(self) -> float:
        """The largest Zipf difference of the phrase, in absolute value."""
        return max(abs(d) for d in self.diff)


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
               band: float = 0.5, exclude: Iterable[str] = ()) -> list[RandomPhrase]:
    """``n`` frequency-matched random phrases for a compound (see the module docstring).

    Args:
        nc_words: the compound, a string (split on whitespace) or its words.
        lang: a language code ``wordfreq`` covers (``en``, ``pt``, ``de``, ...).
        n: how many phrases (the study used 5 per sentence).
        seed: the seed of ``numpy.random.default_rng``.
        band: half-width of the Zipf band around each word's Zipf frequency (> 0).
        exclude: more words no chosen word may equal (case-insensitive), e.g. the
            other words of the sentence.

    Returns:
        ``n`` phrases, each with as many words as the compound, no word shared with the
        compound, ``exclude`` or another phrase of this call.

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
    cands = _candidates(lang)
    banned = {w.casefold() for w in source} | {w.casefold() for w in exclude}
    src_zipf = tuple(_zipf(w, lang) for w in source)
    rng = np.random.default_rng(seed)
    used: set[str] = set()
    slots: list[list[tuple[str, float]]] = []
    for word, z in zip(source, src_zipf, strict=True):
        pool = [(w, c) for w, c in cands if abs(c - z) <= band + 1e-9
                and w.casefold() not in banned]
        if len(pool) < n:
            raise UsageError(
                f"only {len(pool)} candidate word(s) of {lang!r} within ±{band:g} of the Zipf "
                f"frequency {z:.2f} of {word!r} (need {n}); "
                + _band_needed(cands, z, banned, n) + ", or ask for fewer phrases (n)")
        order = rng.permutation(len(pool))
        slots.append([pool[i] for i in order])
    version = _wordfreq_version()
    out: list[RandomPhrase] = []
    cursor = [0] * len(slots)
    for _ in range(n):
        picked: list[tuple[str, float]] = []
        for j, pool in enumerate(slots):
            while cursor[j] < len(pool) and pool[cursor[j]][0].casefold() in used:
                cursor[j] += 1
            if cursor[j] >= len(pool):
                raise UsageError(
                    f"ran out of distinct candidate words for {source[j]!r} (Zipf "
                    f"{src_zipf[j]:.2f}) within ±{band:g} in {lang!r} after "
                    f"{len(out)} phrase(s); widen the band or ask for fewer phrases (n)")
            w, c = pool[cursor[j]]
            cursor[j] += 1
            used.add(w.casefold())
            picked.append((w, c))
        zs = tuple(c for _, c in picked)
        diff = tuple(round(a - b, 2) for a, b in zip(zs, src_zipf, strict=True))
        out.append(RandomPhrase(
            words=tuple(w for w, _ in picked), zipf=zs, source_words=source,
            source_zipf=src_zipf, diff=diff, band=float(band), wordfreq_version=version))
    return out


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
    import wordfreq

    langs = wordfreq.available_languages("best")
    if lang not in langs:
        raise UsageError(f"wordfreq has no frequency list for language {lang!r}; it covers: "
                         f"{', '.join(sorted(langs))}")


def _zipf(word: str, lang: str) -> float:
    import wordfreq

    _check_lang(lang)
    return float(wordfreq.zipf_frequency(word, lang))


@functools.lru_cache(maxsize=8)
def _candidates(lang: str) -> tuple[tuple[str, float], ...]:
    """The candidate words of a language with their Zipf frequencies, in wordfreq's order."""
    import wordfreq

    _check_lang(lang)
    out = []
    for w in wordfreq.top_n_list(lang, CANDIDATES):
        if w.isalpha() and len(w) >= MIN_LETTERS:
            out.append((w, float(wordfreq.zipf_frequency(w, lang))))
    return tuple(out)


def _wordfreq_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wordfreq")
    except PackageNotFoundError:  # pragma: no cover - imported above, so installed
        return "unknown"
