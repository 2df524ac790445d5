"""Frequency-matched sampling: the ``wordfreq`` index of a language and random words drawn
from a Zipf band around each word of a compound (the words of P_Rand).

Frequency matching uses the ``wordfreq`` package, which ships its frequency data (no
network); it is an optional dependency (``pip install "ncprobe[generate]"``), imported only
when a draw is made, and :func:`require_wordfreq` is the one check that says how to install
it. For each word of the compound, a candidate is a word of
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

The probes built from these phrases (:func:`~ncprobe.data.probes.rand_probes`,
:func:`~ncprobe.data.probes.rand_stimuli`) are in :mod:`ncprobe.data.probes`.
"""

from __future__ import annotations

import bisect
import functools
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..errors import MissingPackageError, UsageError
from .splice import phrase_words

#: How many of a language's most frequent words (``wordfreq.top_n_list``) are candidates
#: for P_Rand. 100 000 reaches Zipf ~2.0 in English and Portuguese, low enough for the
#: rarer components of NCIMP, and takes about one second per language to score.
CANDIDATES = 100_000
#: Shortest candidate word, in letters: one- and two-letter entries of the lists are mostly
#: symbols, abbreviations and fragments (``em``, ``sa``, ``tho``... were drawn at 2).
MIN_LETTERS = 3


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

    source = phrase_words(nc_words, "compound")
    fixed = _check_draw(source, n, band, keep)
    cands = candidates(lang)
    banned = {w.casefold() for w in source} | {w.casefold() for w in exclude}
    src_zipf = tuple(zipf(w, lang) for w in source)
    rng = np.random.default_rng(seed)
    used: set[str] = set()
    orders = _draw_orders(source, src_zipf, fixed, lang, n=n, band=band, banned=banned,
                          rng=rng)
    version = wordfreq_version()
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


def _check_draw(source: tuple[str, ...], n, band, keep: Iterable[int]) -> set[int]:
    """The positions of ``keep`` as a set, after checking the arguments of :func:`rand_words`.

    Raises:
        UsageError: ``n`` is not a whole number >= 1, ``band`` not a finite number > 0, or
            ``keep`` holds other than positions of ``source`` (or all of them).
    """
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
    return fixed


def _draw_orders(source: tuple[str, ...], src_zipf: tuple[float, ...], fixed: set[int],
                 lang: str, *, n: int, band: float, banned: set[str], rng
                 ) -> dict[int, list[int]]:
    """Each drawn slot (word position) -> the positions in :func:`candidates` of its band, in
    draw order (:func:`_balanced`), the slots in order (``rng`` is drawn from in that order).

    Raises:
        UsageError: a slot's band holds fewer than ``n`` candidates that are not ``banned``.
    """
    cands = candidates(lang)
    zs_sorted = candidate_zipfs(lang)
    index = candidate_index(lang)
    orders: dict[int, list[int]] = {}
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
    return orders


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


def require_wordfreq(needs: str = "generating probes needs", instead: str = "") -> None:
    """Stop with :class:`MissingPackageError` (exit 5) when ``wordfreq`` cannot be imported.

    The one check of every generator that draws P_Rand
    (:func:`~ncprobe.data.generate.generate_pairs`, the NCS context of
    :mod:`ncprobe.data.ncs`); ``needs`` says who needs it, ``instead`` what the
    user can do other than installing it (appended in parentheses).
    """
    try:
        import wordfreq  # noqa: F401
    except ImportError:
        raise MissingPackageError(
            f'{needs} the wordfreq package, which is not installed: pip install '
            f'"ncprobe[generate]"' + (f" ({instead})" if instead else "")) from None


def _band_needed(cands: Sequence[tuple[str, float]], z: float, banned: set[str], n: int
                 ) -> str:
    """How wide a band would give ``n`` candidates around Zipf ``z`` (for error messages)."""
    dists = sorted(abs(c - z) for w, c in cands if w.casefold() not in banned)
    if len(dists) < n:
        return f"no band would: the language has only {len(dists)} candidate words"
    return f"a band of ±{math.ceil(round(dists[n - 1], 6) * 100) / 100:.2f} would give {n}"


def check_lang(lang: str) -> None:
    """Refuse a language ``wordfreq`` has no frequency list for.

    Raises:
        UsageError: naming the languages it covers.
    """
    langs = languages()
    if lang not in langs:
        raise UsageError(f"wordfreq has no frequency list for language {lang!r}; it covers: "
                         f"{', '.join(sorted(langs))}")


@functools.lru_cache(maxsize=1)
def languages() -> frozenset[str]:
    """The languages ``wordfreq`` has a full (``best``) frequency list for."""
    import wordfreq

    return frozenset(wordfreq.available_languages("best"))


def zipf(word: str, lang: str) -> float:
    """``wordfreq.zipf_frequency(word, lang)`` of a language :func:`check_lang` accepts."""
    import wordfreq

    check_lang(lang)
    return float(wordfreq.zipf_frequency(word, lang))


@functools.lru_cache(maxsize=8)
def candidates(lang: str) -> tuple[tuple[str, float], ...]:
    """The candidate words of a language with their Zipf frequencies, by ascending Zipf
    frequency (ties in wordfreq's own order, so the order is fixed by the data alone)."""
    import wordfreq

    check_lang(lang)
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
def candidate_zipfs(lang: str) -> list[float]:
    """The Zipf frequencies of :func:`candidates`, ascending (for ``bisect``)."""
    return [c for _, c in candidates(lang)]


@functools.lru_cache(maxsize=8)
def candidate_index(lang: str) -> dict[str, int]:
    """Each candidate word (case-folded) -> its position in :func:`candidates`."""
    return {w.casefold(): i for i, (w, _) in enumerate(candidates(lang))}


@functools.lru_cache(maxsize=1)
def wordfreq_version() -> str:
    """The installed ``wordfreq`` version, whose data a draw used."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wordfreq")
    except PackageNotFoundError:  # pragma: no cover - imported above, so installed
        return "unknown"
