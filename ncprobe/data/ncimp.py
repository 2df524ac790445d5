"""The official NCIMP files -> :class:`~ncprobe.data.stimuli.Stimuli`.

What is read (``../shared/ncimp/SCHEMA.md`` describes every file):

* naturalistic S1-S3: ``dataset/<LANG>/naturalistics_examplesent{1,2,3}.csv``
  (PT in every copy; EN only where the official files could be fetched);
* neutral: ``dataset/<LANG>/neutral.csv``, singular pattern (context ``N``) and,
  on request, the plural pattern (context ``Npl``);
* English naturalistic contexts when the official files are absent: the
  derived reference table (REF), with probe sentences built by splicing each
  probe phrase into the NC span (:mod:`ncprobe.data.pairs`), with a warning;
* scores and classes: :mod:`ncprobe.data.scores`.

Every span comes from its own column's ``_tag`` and is checked against the
sentence; where the file also holds the bare phrase (``compound noun``,
``only mwe synonym``...), the span text must equal it.

Deliberate handling of the known upstream anomalies (SCHEMA section 7) is
listed in the loader's ``notes`` with counts; nothing is dropped silently:

* head/modifier swap in PT naturalistic files: ``original head only`` holds
  the first word of the NC, which is not the semantic head for 30 NCs whose
  first word is an adjective or numeral. The semantic head is the
  ``compound noun head`` of the neutral file; the comp-head/comp-mod probes
  are assigned by which NC word each keeps, and the corrections are counted.
* ``dust storm`` has no token-level scores: kept (for similarity statistics),
  gold NaN, reported as unscored.
* EN ``only head synonym altN`` tags have the wrong length: not read here;
  ``ncprobe data check`` reports them as tolerated.

Trust: every file read is verified against its pin (``ncprobe/data/upstream.tsv``)
before it is parsed; a file that differs is an error unless ``accept_modified=True``,
and is then listed in ``Stimuli.modified`` and in a ``MODIFIED DATA`` note. Whatever the
pins, the NC set of every naturalistic context read must equal the neutral file's, and
every NC with a score must be in the neutral file, so a file cut short is caught.
"""

from __future__ import annotations

import json
import logging
import os
import re
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Iterable

from ..errors import ErrorSink
from .pairs import MinimalPair, splice
from .reading import RESTORE, LoadContext
from .scores import load_scores
from .sources import resolve_data_dir
from .stimuli import (LANGS, NATURALISTIC, NEUTRAL, NEUTRAL_PLURAL, NounCompound, Stimuli,
                      Stimulus, expand_contexts, expand_probes)

log = logging.getLogger(__name__)

REPO = "risehnhew+Finding-Idiomaticity-in-Word-Representations/dataset"
NAT_FILE = REPO + "/{LANG}/naturalistics_examplesent{k}.csv"
NEUTRAL_FILE = REPO + "/{LANG}/neutral.csv"
REF_FILE = "malibayram+idiomaticity_probing/studio/public/references/ncimp_en_pt_reference.csv"
#: The slots of the reference table (S1-S3 naturalistic, N1 neutral, N2 neutral plural).
REF_SLOTS = ("S1", "S2", "S3", "N1", "N2")
#: NCs without a gold score by design (SCHEMA section 7.1): English ``dust storm`` has no
#: token-level scores anywhere. Any other NC without a gold score stops ``compute``.
UNSCORED_BY_DESIGN = {"en": frozenset({"dust storm"})}


class SplicedStimuliWarning(UserWarning):
    """Probe sentences were built by splicing phrases, not read from official files."""


SPLICE_COST = (
    "English naturalistic probe sentences are not in the data directory (the official "
    "dataset/EN/naturalistics_examplesent{1,2,3}.csv could not be fetched); ncprobe builds them "
    "by splicing each probe phrase of the reference table into the NC span. Cost: the article "
    "and agreement edits of the official probe sentences are lost (on the English neutral file, "
    "where both exist, splicing differs from the official sentence for P_Syn 68/281, P_Comp "
    "51/562, P_WordsSyn 357/1405 and P_Rand 336/1405 sentences), so sentence-level "
    "similarities are slightly inflated. NC-level vectors are affected only through context.")

# (probe, variant) -> (sentence column, tag column or None for "<sentence>_tag",
#                      bare phrase column the span must equal, per language, or None)
_NAT_COLUMNS = {
    ("syn", 1): "synonym for compound",
    ("comp-head", 1): "original head only",
    ("comp-mod", 1): "original modifier only",
    ("wordssyn", 1): "synonym both",
    **{("rand", k): f"nc rand freq sentence{k}" for k in range(1, 6)},
}
_NEUTRAL_COLUMNS = {
    ("original", 1): ("neutral sentence", "original sentence_tag", "compound noun"),
    ("syn", 1): ("synonym for compound", None, "only mwe synonym"),
    ("comp-head", 1): ("original head only", None, "compound noun head"),
    ("comp-mod", 1): ("original modifier only", None, "compound noun modifier"),
    ("wordssyn", 1): ("synonym both", None, {"en": "only synonym both",
                                             "pt": "only both synonyms"}),
    **{("rand", k): (f"nc rand freq sentence{k}", None, {"en": f"nc rand freq{k}"})
       for k in range(1, 6)},
}
_PLURAL_COLUMNS = {
    ("original", 1): ("neutral sentence plural", None, None),
    ("syn", 1): ({"en": "synonym for compoundplural", "pt": "mwe synonym plural"}, None, None),
    ("comp-head", 1): ("head only plural", None, None),
    ("wordssyn", 1): ({"en": "synonym both plural", "pt": "both synonyms plural"}, None, None),
}
_ALT = re.compile(r"^both synonym alt(\d+)$")


def load_stimuli(lang: str | Iterable[str] = "en", contexts: str | Iterable[str] = "nat,neut",
                 probes: str | Iterable[str] = "all", *, wordssyn: str = "first",
                 gold: str = "comp", data_dir: str | Path | None = None,
                 en_naturalistic: str = "auto", collect: bool = False,
                 accept_modified: bool = False, cross_check: bool = False) -> Stimuli:
    """Load NCIMP stimuli for one or both languages.

    Args:
        lang: ``en``, ``pt``, ``all`` or a list of them.
        contexts: ``nat`` (S1-S3), ``neut`` (neutral singular, ``N``), ``neut-pl``
            (neutral plural, ``Npl``), context ids, or a comma list of these.
        probes: probe families to keep (``original`` is always kept); ``all``,
            ``comp`` (= comp-head + comp-mod) or a comma list.
        wordssyn: ``first`` (variant 1, as in the paper) or ``all`` (every
            alternative the data carry: 5 in English, 1 in Portuguese).
        gold: ``comp`` (Eq. 1, token-level, default) or ``type`` (type-level
            score) as the NC's ``gold``.
        data_dir: the data directory (default: ``$NCPROBE_DATA``, then the cache).
        en_naturalistic: ``auto`` (official files when present, else the
            reference table), ``official`` (error without them) or ``reference``.
        collect: report every problem at once instead of stopping at the first.
        accept_modified: use data files whose git blob id differs from their pin
            (edited or replaced copies) instead of stopping; they are listed in
            ``Stimuli.modified`` and in a ``MODIFIED DATA`` note. Files must still parse
            and agree with each other (the same NCs in every context).
        cross_check: also read the scores xlsx (``human_compositionality scores.xlsx``)
            and note where it disagrees with the NCTTI scores that are used, as ``ncprobe
            data check`` and ``data info`` do. It changes no score, so it is off by default
            (and ``compute`` does not read, nor need, the xlsx).

    Returns:
        :class:`Stimuli`; ``.to_frame()`` gives one row per stimulus.

    Raises:
        DataError: a file is missing, unreadable, malformed, differs from its pin (unless
            ``accept_modified``), holds a bad value, or lacks NCs that another file has.

    Example:
        >>> stim = load_stimuli("pt", contexts="neut", probes="syn")  # doctest: +SKIP
        >>> stim.to_frame()[["nc", "probe", "sentence"]].head(2)      # doctest: +SKIP
    """
    langs = LANGS if lang == "all" else ((lang,) if isinstance(lang, str) else tuple(lang))
    ctx_ids = expand_contexts(contexts)
    keep = expand_probes(probes)
    if wordssyn not in ("first", "all"):
        raise ValueError(f"wordssyn must be 'first' or 'all', not {wordssyn!r}")
    if gold not in ("comp", "type"):
        raise ValueError(f"gold must be 'comp' or 'type', not {gold!r}")
    if en_naturalistic not in ("auto", "official", "reference"):
        raise ValueError("en_naturalistic must be 'auto', 'official' or 'reference'")
    ctx = LoadContext(resolve_data_dir(data_dir), ErrorSink(collect=collect),
                      accept_modified=accept_modified)
    result = Stimuli(())
    for lg in langs:
        if lg not in LANGS:
            raise ValueError(f"unknown language {lg!r}; NCIMP has {', '.join(LANGS)} "
                             "(use load_pairs() for your own data)")
        result = result + _load_lang(lg, ctx_ids, keep, wordssyn, gold, ctx, en_naturalistic,
                                     cross_check=cross_check)
    ctx.sink.raise_if_any()
    ctx.flush_tolerated()
    for rel, m in ctx.modified.items():
        ctx.notes.insert(0, modified_note(rel, m))
    result.notes, result.sources, result.modified = ctx.notes, ctx.read, ctx.modified
    result.gold_exempt = {lg: UNSCORED_BY_DESIGN.get(lg, frozenset()) if gold == "comp"
                          else frozenset() for lg in langs}
    for note in ctx.notes:
        log.info("%s", note)
    return result


def modified_note(rel: str, m: dict) -> str:
    """The note that names a data file used although it differs from its pin."""
    return (f"MODIFIED DATA: {rel} (git blob {m['blob']}, pinned {m['pinned']}) was used "
            "as it is (accept_modified / --accept-modified-data); results are not those of "
            "the published data")


def _load_lang(lang: str, ctx_ids, keep, wordssyn, gold, ctx: LoadContext,
               en_naturalistic: str, *, cross_check: bool = False) -> Stimuli:
    neutral = _NeutralFile(lang, ctx)
    items: list[Stimulus] = []
    #: (context, file) -> the NC keys that file holds for that context
    nat_keys: dict[tuple[str, str], list[str]] = {}
    if NEUTRAL in ctx_ids:
        items += neutral.stimuli(_NEUTRAL_COLUMNS, NEUTRAL, wordssyn)
    if NEUTRAL_PLURAL in ctx_ids:
        items += neutral.stimuli(_PLURAL_COLUMNS, NEUTRAL_PLURAL, "first")
    nat_ids = [c for c in ctx_ids if c in NATURALISTIC]
    if nat_ids:
        official = all(ctx.exists(NAT_FILE.format(LANG=lang.upper(), k=c[1])) for c in nat_ids)
        if lang == "en" and en_naturalistic == "reference" or (
                lang == "en" and en_naturalistic == "auto" and not official):
            warnings.warn(SPLICE_COST, SplicedStimuliWarning, stacklevel=3)
            ctx.notes.append("en: naturalistic probe sentences spliced from the reference "
                             "table (official files absent)")
            items += _reference_naturalistic(lang, nat_ids, wordssyn, neutral, ctx, nat_keys)
        else:
            for c in nat_ids:
                items += _naturalistic(lang, c, wordssyn, neutral, ctx, nat_keys)
    if neutral.df is not None:
        for (c, rel), keys in nat_keys.items():
            _same_ncs(neutral, f"context {c}", rel, keys, ctx)
    items = [s for s in items if s.probe in keep]
    _note_repeats(items, ctx)
    if NEUTRAL_PLURAL in ctx_ids and lang == "en":
        ctx.notes.append("en Npl: the plural P_Syn sentence uses the second gold synonym "
                         "(upstream 'synonym for compoundplural'), not the plural of the first")
    if NEUTRAL_PLURAL in ctx_ids:
        ctx.notes.append(f"{lang} Npl: the plural pattern has no comp-mod and no rand probes "
                         "upstream")
    scores = load_scores(lang, ctx, cross_check=cross_check)
    if neutral.df is not None and scores:
        known = {k.lower() for k in neutral.keys}
        stray = sorted(k for k in scores if k not in known)
        if stray:
            ctx.sink.error(f"{len(stray)} NC(s) have a score but are not in {neutral.rel} (is "
                           f"that file cut short or edited?): {_listed(stray)}; {RESTORE}",
                           file=neutral.rel)
    ncs: dict[tuple[str, str], NounCompound] = {}
    for nc in dict.fromkeys([s.nc for s in items] or neutral.keys):
        sc = scores.get(nc.lower())
        head, mod = neutral.head_mod.get(nc, ("", ""))
        if sc is None:
            ncs[(lang, nc)] = NounCompound(lang, nc, head=head, modifier=mod)
            continue
        g = sc.comp if gold == "comp" else sc.comp_type
        ncs[(lang, nc)] = NounCompound(lang, nc, sc.comp, sc.comp_type, sc.token_scores, sc.cls,
                                       g, head, mod)
    unscored = sorted(n.nc for n in ncs.values() if not n.scored)
    if unscored:
        ctx.notes.append(f"{lang}: {len(unscored)} NC(s) without a gold {gold} score, kept for "
                         f"similarity statistics and excluded from correlations: "
                         + ", ".join(unscored))
    return Stimuli(tuple(items), ncs)


def _listed(names, limit: int = 12) -> str:
    names = list(names)
    more = f" ... and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _same_ncs(neutral: "_NeutralFile", what: str, rel: str, keys: list[str],
              ctx: LoadContext) -> None:
    """The NCs of one naturalistic context must be those of the neutral file (SCHEMA 6)."""
    have = set(keys)
    master = set(neutral.keys)
    lacking = [k for k in neutral.keys if k not in have]
    extra = [k for k in dict.fromkeys(keys) if k not in master]
    if lacking:
        ctx.sink.error(f"{what} lacks {len(lacking)} of the {len(master)} NCs of "
                       f"{neutral.rel} (the file is cut short, or rows were removed): "
                       f"{_listed(lacking)}; {RESTORE}", file=rel)
    if extra:
        ctx.sink.error(f"{what} has {len(extra)} NC(s) that {neutral.rel} lacks: "
                       f"{_listed(extra)}; {RESTORE}", file=rel)


def _note_repeats(items: list[Stimulus], ctx: LoadContext) -> None:
    """Count (never drop) repeated substitutes and identical original sentences."""
    seen_sub: set[tuple] = set()
    seen_orig: dict[tuple, str] = {}
    originals = {(s.lang, s.nc, s.context): s for s in items if s.probe == "original"}
    for s in items:
        o = originals.get((s.lang, s.nc, s.context))
        if s.probe != "original" and o is not None and (
                s.tokens[:s.span[0]] != o.tokens[:o.span[0]]
                or s.tokens[s.span[1]:] != o.tokens[o.span[1]:]):
            ctx.tolerate(f"{s.lang} {s.context if s.context in (NEUTRAL, NEUTRAL_PLURAL) else 'nat'}"
                         f": {s.probe} sentences whose words outside the span differ from the "
                         "original (inflection, article or number agreement made upstream)")
        if s.probe == "original":
            if s.context not in NATURALISTIC:
                continue
            key = (s.lang, s.nc, s.tokens)
            if key in seen_orig:
                ctx.tolerate(f"{s.lang}: naturalistic sentence identical to another context of "
                             f"the same NC ({s.nc} {seen_orig[key]}={s.context})")
            seen_orig[key] = s.context
            continue
        key = (s.lang, s.nc, s.context, s.probe, s.target)
        if key in seen_sub:
            ctx.tolerate(f"{s.lang}: {s.probe} variants repeating an earlier variant's phrase in "
                         "the same context (kept: each variant is a substitution)")
        seen_sub.add(key)


def _words(text: str) -> str:
    return " ".join(text.split())


def _pick(spec, lang: str):
    return spec.get(lang) if isinstance(spec, dict) else spec


class _NeutralFile:
    """The neutral file of one language: stimuli, and the semantic head of each NC."""

    def __init__(self, lang: str, ctx: LoadContext) -> None:
        self.lang, self.ctx = lang, ctx
        self.rel = NEUTRAL_FILE.format(LANG=lang.upper())
        self.df = ctx.table(self.rel, columns=["compound", "compound noun", "compound noun head",
                                               "compound noun modifier"])
        self.keys: list[str] = []
        self.head_mod: dict[str, tuple[str, str]] = {}
        self.head_pos: dict[str, int] = {}
        self.records: list[dict[str, str]] = []
        if self.df is None:
            return
        self.keys = _unique_keys(self.df, self.rel, ctx.sink)
        self.records = self.df.records()
        for i, r in enumerate(self.records, start=1):
            nc, head, mod = r["compound"], r["compound noun head"], r["compound noun modifier"]
            self.head_mod[nc] = (head, mod)
            parts = _parts(nc)
            if len(parts) != 2 or {head, mod} != set(parts):
                ctx.sink.error(f"head {head!r} and modifier {mod!r} are not the two words of "
                               f"{nc!r}", file=self.rel, row=i, column="compound noun head",
                               key=nc)
                continue
            self.head_pos[nc] = parts.index(head) if parts[0] != parts[1] else 1

    def stimuli(self, columns: dict, context: str, wordssyn: str) -> list[Stimulus]:
        if self.df is None:
            return []
        cols = dict(columns)
        if wordssyn == "all" and context == NEUTRAL:
            for c in self.df.columns:
                m = _ALT.match(c)
                if m:
                    cols[("wordssyn", int(m.group(1)) + 1)] = (c, None, f"only {c}")
        out: list[Stimulus] = []
        records = self.records
        for (probe, variant), (sent_spec, tag_col, phrase_spec) in cols.items():
            sent_col = _pick(sent_spec, self.lang)
            tag_col = tag_col or f"{sent_col}_tag"
            phrase_col = _pick(phrase_spec, self.lang)
            if not self._has(sent_col, tag_col, phrase_col):
                continue
            for i, r in enumerate(records, start=1):
                s = _tagged(self.ctx, self.lang, r, i, self.rel, context, probe, variant,
                            sent_col, tag_col, phrase_col)
                if s is not None:
                    out.append(s)
        return out

    def _has(self, *columns) -> bool:
        missing = [c for c in columns if c and c not in self.df.columns]
        for c in missing:
            self.ctx.sink.error("missing column", file=self.rel, column=c)
        return not missing


def _unique_keys(df, rel: str, sink: ErrorSink) -> list[str]:
    first: dict[str, int] = {}
    for i, nc in enumerate(df.column("compound"), start=1):
        if not nc.strip():
            sink.error("empty NC key", file=rel, row=i, column="compound")
        elif nc in first:
            sink.error(f"duplicate NC (first at row {first[nc]}); each NC must appear once",
                       file=rel, row=i, column="compound", key=nc)
        else:
            first[nc] = i
    return list(first)


def _parts(text: str) -> list[str]:
    """The two words of an NC: split on the space, or on the hyphen of one token."""
    return re.split(r"[ -]", " ".join(text.split()), maxsplit=1) if text else []


def _tagged(ctx: LoadContext, lang: str, r: dict, row: int, rel: str, context: str, probe: str,
            variant: int, sent_col: str, tag_col: str, phrase_col: str | None
            ) -> Stimulus | None:
    """One stimulus from a sentence column and its tag; the span must hold ``r[phrase_col]``."""
    nc = r["compound"]
    span = ctx.tag_span(r[sent_col], r[tag_col], file=rel, row=row, column=tag_col, key=nc)
    if span is None:
        return None
    tokens = tuple(r[sent_col].split())
    if r[sent_col] != " ".join(tokens):
        ctx.tolerate(f"{lang}: sentence cells with leading, trailing or double spaces "
                     "(normalised: words are whitespace tokens)")
    held = " ".join(tokens[span[0]:span[1]])
    phrase = _words(r[phrase_col]) if phrase_col else held
    if phrase != held:
        if phrase.lower() != held.lower():
            ctx.sink.error(f"the span holds {held!r} but column {phrase_col!r} says {phrase!r}",
                           file=rel, row=row, column=tag_col, key=nc)
            return None
        ctx.tolerate(f"{lang}: span text differs from {phrase_col!r} only in letter case "
                     "(capitalised at sentence start)")
    return Stimulus(lang, nc, context, probe, variant, tokens, span, held,
                    f"{rel}:{row}:{sent_col}")


def _swapped(surface: str, head: str, mod: str, head_pos: int | None) -> bool:
    """Whether a head-only/modifier-only pair holds the semantic head in the modifier slot.

    Which word of the surface NC each phrase keeps is matched by the longest
    common prefix (case-insensitive), so inflected forms (``fechado`` for
    ``fechada``) and capitalised copies still match. ``head_pos`` is the
    semantic head's position (0 or 1) in the NC. False when it cannot be told.
    """
    parts = [p.lower() for p in _parts(surface)]
    if head_pos is None or len(parts) != 2 or parts[0] == parts[1]:
        return False

    def lcp(a: str, b: str) -> int:
        return len(os.path.commonprefix([a, b]))
    h, m = head.lower(), mod.lower()
    first = lcp(h, parts[0]) + lcp(m, parts[1])
    second = lcp(h, parts[1]) + lcp(m, parts[0])
    return first != second and (first > second) != (head_pos == 0)


def _semantic_comp(items: dict, surface: str, head_pos: int | None) -> tuple[dict, bool]:
    """Relabel comp-head/comp-mod so that comp-head holds the semantic head."""
    h, m = items.get("comp-head"), items.get("comp-mod")
    if h is None or m is None or not _swapped(surface, h.target, m.target, head_pos):
        return items, False
    return {**items, "comp-head": replace(m, probe="comp-head"),
            "comp-mod": replace(h, probe="comp-mod")}, True


def _naturalistic(lang: str, context: str, wordssyn: str, neutral: _NeutralFile,
                  ctx: LoadContext, nat_keys: dict) -> list[Stimulus]:
    rel = NAT_FILE.format(LANG=lang.upper(), k=context[1])
    df = ctx.table(rel, columns=["compound", "compound noun", "original sentence",
                                 "original sentence_tag", *_NAT_COLUMNS.values()])
    if df is None:
        return []
    nat_keys[(context, rel)] = _unique_keys(df, rel, ctx.sink)
    cols = dict(_NAT_COLUMNS)
    if wordssyn == "all":
        for c in df.columns:
            m = _ALT.match(c)
            if m:
                cols[("wordssyn", int(m.group(1)) + 1)] = c
    out: list[Stimulus] = []
    swaps = []
    for i, r in enumerate(df.records(), start=1):
        orig = _tagged(ctx, lang, r, i, rel, context, "original", 1, "original sentence",
                       "original sentence_tag", "compound noun")
        if orig is None:
            continue
        row = {"original": orig}
        for (probe, variant), col in cols.items():
            s = _tagged(ctx, lang, r, i, rel, context, probe, variant, col, f"{col}_tag", None)
            if s is not None:
                row[probe if probe in ("comp-head", "comp-mod") else (probe, variant)] = s
        row, swapped = _semantic_comp(row, orig.target, neutral.head_pos.get(r["compound"]))
        if swapped:
            swaps.append(r["compound"])
        out.extend(row.values())
    if swaps:
        ctx.notes.append(f"{lang} {context}: head/modifier-only probes swapped to the semantic "
                         f"head for {len(swaps)} NCs (first word an adjective or numeral): "
                         + ", ".join(swaps))
    return out


def _reference_naturalistic(lang: str, nat_ids, wordssyn: str, neutral: _NeutralFile,
                            ctx: LoadContext, nat_keys: dict) -> list[Stimulus]:
    """EN naturalistic stimuli from the reference table, by splicing (see SPLICE_COST)."""
    cols = ["language", "canonical_form", "slot", "original_sentence", "target_surface", "span",
            "p_syn", "p_comp", "p_words_syn", "p_rand"]
    df = ctx.table(REF_FILE, columns=cols)
    if df is None:
        return []
    pairs: list[MinimalPair] = []
    surface: dict[tuple[str, str, str], str] = {}
    for c in nat_ids:
        nat_keys[(c, REF_FILE)] = []
    for i, r in enumerate(df.records(), start=1):
        nc, slot = r["canonical_form"], r["slot"]
        where = dict(file=REF_FILE, row=i, key=nc)
        # every value used to select rows is checked, so a typo cannot drop rows silently
        if r["language"] not in ("EN", "PT"):
            ctx.sink.error(f"language {r['language']!r} is not EN or PT; {RESTORE}",
                           column="language", **where)
            continue
        if slot not in REF_SLOTS:
            ctx.sink.error(f"slot {slot!r} is not one of {', '.join(REF_SLOTS)}; {RESTORE}",
                           column="slot", **where)
            continue
        if r["language"].lower() != lang or slot not in nat_ids:
            continue
        nat_keys[(slot, REF_FILE)].append(nc)
        try:
            start, end = (int(x) for x in json.loads(r["span"]))
        except (ValueError, TypeError, json.JSONDecodeError):
            ctx.sink.error(f"span {r['span']!r} is not [start, end]", column="span", **where)
            continue
        key = (lang, nc, slot)
        if key in surface:
            ctx.sink.error(f"duplicate NC in slot {slot}", column="canonical_form", **where)
            continue
        surface[key] = _words(r["target_surface"])
        if r["original_sentence"] != _words(r["original_sentence"]):
            ctx.tolerate(f"{lang}: reference-table sentences with double spaces (normalised)")
        if "??" in r["original_sentence"]:
            ctx.tolerate(f"{lang}: reference-table sentences with '??' where non-ASCII "
                         "characters were lost upstream")

        def add(probe: str, variant: int, phrase: str, column: str) -> None:
            pairs.append(MinimalPair(lang, nc, slot, r["original_sentence"], (start, end),
                                     probe, variant, phrase, REF_FILE, i, column))
        add("original", 1, "", "original_sentence")
        comp = [p.strip() for p in r["p_comp"].split("||")]
        rand = [p.strip() for p in r["p_rand"].split("||")]
        words = [p.strip() for p in r["p_words_syn"].split("||")]
        if len(comp) != 2 or len(rand) != 5 or not words[0]:
            ctx.sink.error(f"expected 2 p_comp, 5 p_rand and >= 1 p_words_syn phrases, found "
                           f"{len(comp)}, {len(rand)}, {len(words)}", **where)
            continue
        add("syn", 1, r["p_syn"], "p_syn")
        if _swapped(r["target_surface"], comp[0], comp[1], neutral.head_pos.get(nc)):
            comp = comp[::-1]
            ctx.tolerate(f"{lang}: reference-table p_comp pairs swapped to the semantic head "
                         "(corrected)")
        add("comp-head", 1, comp[0], "p_comp")
        add("comp-mod", 1, comp[1], "p_comp")
        for k, phrase in enumerate(words if wordssyn == "all" else words[:1], start=1):
            add("wordssyn", k, phrase, "p_words_syn")
        for k, phrase in enumerate(rand, start=1):
            add("rand", k, phrase, "p_rand")
    return splice(pairs, ctx.sink, target=surface)
