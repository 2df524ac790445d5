"""The NCS dataset (Garcia et al. 2021, ``marcospln/noun_compound_senses``): context ``NCS``.

NCS released, for the NCs of NCIMP (the same keys, column ``compound``), three files of
neutral sentences per language, ``dataset/{en,pt}/neutral/P{1,2,3}_sents.csv``
(:data:`NCS_FILE`). Each holds every NC with its neutral sentence (``This is a <NC>`` /
``Este é um <NC> .``, the same in the three files) and probe sentences
(:data:`NCS_COLUMNS`):

* P1 ``mwe synonym``: the P_Syn sentence (``syn``);
* P2 ``head only`` and ``modifier only``: the P_Comp sentences (``comp-head``, ``comp-mod``);
* P3 ``both synonyms``: the P_WordsSyn sentence (``wordssyn``, one variant).

These are the context ``NCS`` (context group ``ncs``), next to NCIMP's: the original and the
syn / comp / wordssyn probes as released. NCS has no random probes, so P_Rand is generated
(:func:`ncprobe.data.probes.rand_stimuli`, drawing from :mod:`ncprobe.data.frequency`):
:data:`RAND_K` phrases per NC, seed :data:`RAND_SEED`, Zipf band ±:data:`RAND_BAND`, each word
frequency-matched to the word of the NC it replaces and equal to no word of the sentence. That
needs the optional ``wordfreq`` package (``pip install "ncprobe[generate]"``); without it
asking for ``NCS`` with ``rand`` probes is a :class:`~ncprobe.errors.MissingPackageError`
(exit 5). The gold scores and classes are NCIMP's (the same NCs).

The files carry no tags; spans are found, and every other outcome is an error naming the
file, row and column:

* the original's span: the words of ``compound`` in the neutral sentence, contiguous and
  exactly once (a copy that differs only in letter case is accepted and counted);
* a probe's span ends where the words after the original's span begin: those words must
  be the original's, unchanged. It starts after the words of the pattern's prefix
  (``This is a``) that the probe keeps, each equal to the original's word at its position
  or an article, demonstrative or copula of the same kind (:data:`PREFIX_VARIANTS`:
  ``a``/``an``, ``um``/``uma``, ``Este``/``Esta``...), at most as many words as the
  original's prefix. Such agreement edits are counted in a note per pair of words. A probe
  that drops or replaces a prefix word (``Este é transparente .`` for ``Este é um livro
  aberto .``) has its span start at the first word not kept, as NCIMP's own tags have it
  for the same sentences; these are listed in a note.

Every file is read through :meth:`~ncprobe.data.reading.LoadContext.table`, so it is
verified against its pin (``ncprobe/data/upstream.tsv``); and each file's NC set must be
the NCIMP neutral file's, so a file cut short is caught even when modified data are
accepted. Cells with extra white space are folded (words are whitespace tokens) and
counted.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Iterable

from ..schema import NCS_CONTEXT
from .reading import LoadContext
from .stimuli import Stimulus

#: The NCS files, inside the data directory (``{lang}``: ``en`` or ``pt``; ``{k}``: 1, 2, 3).
NCS_FILE = "marcospln+noun_compound_senses/dataset/{lang}/neutral/P{k}_sents.csv"
#: The neutral sentence (the original), in every NCS file.
ORIGINAL_COLUMN = "neutral sentence"
#: Each NCS file (P1, P2, P3) -> ``(probe, variant)`` -> the column of its sentences.
NCS_COLUMNS: dict[int, dict[tuple[str, int], str]] = {
    1: {("syn", 1): "mwe synonym"},
    2: {("comp-head", 1): "head only", ("comp-mod", 1): "modifier only"},
    3: {("wordssyn", 1): "both synonyms"},
}
#: Generated P_Rand of the NCS context: phrases per NC, seed, Zipf half-width (the study's
#: five random probes per sentence; see :func:`ncprobe.data.frequency.rand_words`).
RAND_K = 5
RAND_SEED = 0
RAND_BAND = 0.5


def _kinds(*groups: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(g.split()) for g in groups)


#: Words of the pattern's prefix a probe may change into one another, per language
#: (case-insensitive): articles, demonstratives, copulas, for gender and number agreement.
PREFIX_VARIANTS: dict[str, tuple[frozenset[str], ...]] = {
    "en": _kinds("a an the", "this these that those", "is are"),
    "pt": _kinds("um uma uns umas o a os as", "este esta estes estas isto", "é são"),
}


def ncs_stimuli(lang: str, neutral, ctx: LoadContext, probes: Iterable[str]) -> list[Stimulus]:
    """The stimuli of the context ``NCS`` for one language.

    Args:
        lang: ``en`` or ``pt``.
        neutral: the NCIMP neutral file of the language
            (:class:`~ncprobe.data.ncimp.official.NeutralFile`): its NC set is the one
            every NCS file must hold, its heads relabel P_Comp (as for the naturalistic files).
        ctx: where files are read from and problems and notes go.
        probes: the probe families the caller keeps; ``rand`` is generated only if kept.

    Returns:
        The originals, the released probes of P1-P3 and, if ``rand`` is kept, the
        generated P_Rand probes (:data:`RAND_K` per NC).

    Raises:
        MissingPackageError: ``rand`` is kept and ``wordfreq`` is not installed.
        UsageError: a compound has too few frequency-matched candidate words (from the
            generator).

    Data problems (a missing or modified file, a missing column, a sentence without the
    compound, a probe that changes the words after it, NCs missing from a file) go to
    ``ctx.sink`` with file, row and column.
    """
    from .ncimp.anomalies import semantic_comp
    from .ncimp.official import same_ncs, unique_keys, words

    keep = set(probes)
    if "rand" in keep:
        _require_wordfreq()
    originals: dict[str, Stimulus] = {}
    first_file: dict[str, str] = {}
    probes_of: dict[str, dict[str, Stimulus]] = {}
    edits: Counter = Counter()
    shortened: list[str] = []
    for k, columns in NCS_COLUMNS.items():
        rel = NCS_FILE.format(lang=lang, k=k)
        df = ctx.table(rel, columns=("compound", ORIGINAL_COLUMN, *columns.values()))
        if df is None:
            continue
        keys = unique_keys(df, rel, ctx.sink)
        if neutral.df is not None:
            same_ncs(neutral, f"the NCS file P{k}", rel, keys, ctx)
        for i, r in enumerate(df.records(), start=1):
            nc = r["compound"]
            if not nc.strip():
                continue  # reported by unique_keys
            where = dict(file=rel, row=i, key=nc)
            text = _cell(r[ORIGINAL_COLUMN], lang, ctx, words)
            orig = originals.get(nc)
            if orig is None:
                orig = _original(lang, nc, text, ctx, f"{rel}:{i}:{ORIGINAL_COLUMN}", where)
                if orig is None:
                    continue
                originals[nc], first_file[nc] = orig, rel
            elif text != orig.text:
                ctx.sink.error(f"the neutral sentence {text!r} differs from {orig.text!r} of "
                               f"{first_file[nc]}; the NCS files give each NC the same one",
                               column=ORIGINAL_COLUMN, **where)
                continue
            for (probe, variant), col in columns.items():
                ptext = _cell(r[col], lang, ctx, words)
                made = _probe(orig, probe, variant, ptext, f"{rel}:{i}:{col}", ctx,
                              dict(where, column=col))
                if made is None:
                    continue
                stim, changed = made
                edits.update(changed)
                if stim.span[0] < orig.span[0]:
                    shortened.append(f"{nc} ({col}: {ptext!r})")
                probes_of.setdefault(nc, {})[probe] = stim
    items: list[Stimulus] = list(originals.values())
    swaps = []
    for nc, got in probes_of.items():
        got, relabelled = semantic_comp(got, originals[nc].target, neutral.head_pos.get(nc))
        if relabelled:
            swaps.append(nc)
        items.extend(got.values())
    _notes(lang, ctx, edits, shortened, swaps)
    if "rand" in keep and originals:
        items.extend(_generated_rand(lang, list(originals.values()), ctx))
    return items


def _probe(orig: Stimulus, probe: str, variant: int, text: str, source: str,
           ctx: LoadContext, where: dict) -> tuple[Stimulus, list[tuple[str, str]]] | None:
    """The stimulus of one probe sentence ``text`` of ``orig``'s pattern, with the prefix words
    it changed (:func:`probe_span`); ``None`` after reporting an empty sentence or one that
    does not fit the pattern (``where`` names the cell)."""
    if not text:
        ctx.sink.error("empty probe sentence", **where)
        return None
    tokens = tuple(text.split())
    found = probe_span(orig, tokens, orig.lang)
    if isinstance(found, str):
        ctx.sink.error(f"{found}: original {orig.text!r}, probe {text!r}", **where)
        return None
    (start, end), changed = found
    return Stimulus(orig.lang, orig.nc, NCS_CONTEXT, probe, variant, tokens, (start, end),
                    " ".join(tokens[start:end]), source), changed


def probe_span(original: Stimulus, tokens: tuple[str, ...], lang: str
               ) -> tuple[tuple[int, int], list[tuple[str, str]]] | str:
    """The span of a probe sentence of the original's pattern (see the module docstring).

    Returns:
        ``((start, end), edits)``, ``edits`` the ``(original word, probe word)`` pairs of the
        prefix that differ; or, when the probe does not fit the pattern, why (a string).

    >>> o = Stimulus("en", "field work", "NCS", "original", 1,
    ...              ("This", "is", "a", "field", "work"), (3, 5), "field work")
    >>> probe_span(o, ("This", "is", "an", "area", "activity"), "en")
    ((3, 5), [('a', 'an')])
    """
    start, end = original.span
    after = original.tokens[end:]
    stop = len(tokens) - len(after)
    if stop <= 0 or tokens[stop:] != after:
        return (f"the words after the NC ({' '.join(after)!r}) are not kept at the end of the "
                "probe sentence")
    kinds = PREFIX_VARIANTS.get(lang, ())
    edits: list[tuple[str, str]] = []
    i = 0
    while i < min(start, stop):
        a, b = original.tokens[i], tokens[i]
        if a != b:
            fa, fb = a.casefold(), b.casefold()
            if fa != fb and not any(fa in kind and fb in kind for kind in kinds):
                break
            edits.append((a, b))
        i += 1
    if i >= stop:
        return "the probe sentence holds nothing in place of the NC"
    return (i, stop), edits


def _cell(text: str, lang: str, ctx: LoadContext, words) -> str:
    folded = words(text)
    if folded != text:
        ctx.tolerate(f"{lang} NCS: sentence cells with leading, trailing or double spaces "
                     "(normalised: words are whitespace tokens)")
    return folded


def _original(lang: str, nc: str, text: str, ctx: LoadContext, source: str, where: dict
              ) -> Stimulus | None:
    """The neutral sentence with the span of the compound's words (exactly once)."""
    tokens = tuple(text.split())
    nc_words = tuple(nc.split())
    n = len(nc_words)

    def hits(fold) -> list[int]:
        want = tuple(fold(w) for w in nc_words)
        return [i for i in range(len(tokens) - n + 1)
                if tuple(fold(w) for w in tokens[i:i + n]) == want]

    exact = hits(str)
    found = exact or hits(str.casefold)
    if len(found) != 1:
        what = ("does not contain" if not found
                else f"contains {len(found)} times")
        ctx.sink.error(f"the neutral sentence {text!r} {what} the compound's words "
                       f"{' '.join(nc_words)!r} (a span must hold them once)",
                       column=ORIGINAL_COLUMN, **where)
        return None
    if not exact:
        ctx.tolerate(f"{lang} NCS: neutral sentences writing the compound in another letter "
                     "case")
    start = found[0]
    return Stimulus(lang, nc, NCS_CONTEXT, "original", 1, tokens, (start, start + n),
                    " ".join(tokens[start:start + n]), source)


def _notes(lang: str, ctx: LoadContext, edits: Counter, shortened: list[str],
           swaps: list[str]) -> None:
    if edits:
        pairs = ", ".join(f"{a} -> {b} {n}" for (a, b), n in sorted(
            edits.items(), key=lambda kv: (-kv[1], kv[0])))
        ctx.notes.append(f"{lang} NCS: probe sentences with the pattern's article, "
                         f"demonstrative or copula changed upstream (agreement; kept, outside "
                         f"the span): {sum(edits.values())} word(s): {pairs}")
    if shortened:
        ctx.notes.append(f"{lang} NCS: {len(shortened)} probe sentence(s) drop or replace "
                         "words of the pattern's prefix; their span starts at the first word "
                         "not kept: " + "; ".join(shortened))
    if swaps:
        ctx.notes.append(f"{lang} NCS: head/modifier-only probes swapped to the semantic head "
                         f"for {len(swaps)} NCs: " + ", ".join(swaps))


def _generated_rand(lang: str, originals: list[Stimulus], ctx: LoadContext) -> list[Stimulus]:
    """:data:`RAND_K` generated P_Rand probes per original, with a note on the match."""
    from .probes import rand_stimuli

    made = rand_stimuli(originals, k=RAND_K, seed=RAND_SEED, band=RAND_BAND)
    diffs = sorted(abs(d) for _, ph in made for d in ph.drawn_diff)
    median = statistics.median(diffs)
    version = made[0][1].wordfreq_version
    ctx.notes.append(
        f"{lang} NCS: P_Rand generated (NCS releases none) for {len(originals)} NCs: "
        f"{RAND_K} each, seed {RAND_SEED}, wordfreq {version}, Zipf band ±{RAND_BAND:g}, no "
        f"word of the sentence; |Zipf difference| per word median {median:.2f}, max "
        f"{diffs[-1]:.2f}")
    return [s for s, _ in made]


def _require_wordfreq() -> None:
    """Exit 5 (:class:`~ncprobe.errors.MissingPackageError`) without ``wordfreq``: the one
    check of :func:`ncprobe.data.frequency.require_wordfreq`, with what NCS needs it for."""
    from .frequency import require_wordfreq

    require_wordfreq("the NCS context generates its P_Rand probes (NCS releases none) with",
                     "or leave out the rand probes, or the ncs context")
