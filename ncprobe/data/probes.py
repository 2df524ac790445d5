"""Probe sentences built from a compound in its sentence: P_Comp, P_Syn, P_WordsSyn, P_Rand.

Every builder here splices (:func:`~ncprobe.data.splice.splice_phrase`): the words of the
compound's span ``[start, end)`` are replaced by a phrase and every word outside the span is
kept exactly, so the new sentence is ``tokens[:start] + phrase + tokens[end:]`` and the
phrase's span is ``[start, start + len(phrase))``. Article and agreement edits that
hand-written probes carry (``an apple tree`` -> ``a tree``, Portuguese gender) are *not*
made.

Probe families (see method §1):

- **P_Comp** (:func:`comp_probes`): the span replaced by the compound's head alone
  (``comp-head``) and by its modifier alone (``comp-mod``).
- **P_Rand** (:func:`rand_probes` for one sentence, :func:`rand_stimuli` and
  :func:`replace_rand` for stimuli): the span replaced by random words of the same language,
  one per word of the compound, each frequency-matched to the word it replaces (same Zipf
  band: :func:`~ncprobe.data.frequency.rand_words`, where the matching is described).
- **P_Syn** and **P_WordsSyn** (:func:`syn_probes`): the span replaced by a phrase the user
  gives (a synonym of the whole compound, or a synonym per word); nothing is invented.

:func:`~ncprobe.data.generate.generate_pairs` writes them for a user's file of compounds;
the NCS context (:mod:`ncprobe.data.ncs`) draws its P_Rand with :func:`rand_stimuli`.
"""

from __future__ import annotations

import hashlib
import re
import statistics
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..errors import UsageError
from .frequency import RandomPhrase, rand_words
from .splice import check_span, phrase_words, splice_phrase
from .stimuli import Stimuli, Stimulus

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
        phrase_words(part, probe.replace("comp-", ""))
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
    check_span(tuple(tokens), span)
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
    out = stimuli.with_items(kept + [s for s, _ in generated])
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
