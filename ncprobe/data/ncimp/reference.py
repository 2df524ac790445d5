"""English naturalistic stimuli from the derived reference table (REF), by splicing.

The official ``dataset/EN/naturalistics_examplesent{1,2,3}.csv`` are missing from
every public copy (SCHEMA section 0); the reference table holds the English
naturalistic sentences with their NC span and the bare probe phrases, but not the
probe sentences. Each probe sentence is built by splicing its phrase into the NC
span (:func:`ncprobe.data.splice.splice`), which loses the article and agreement
edits of the official sentences: :func:`splice_cost` measures how often on the
neutral file, where both the official sentences and the phrases exist, and
:class:`SplicedStimuliWarning` says so.
"""

from __future__ import annotations

import json

from ...errors import ErrorSink
from ..reading import RESTORE, LoadContext
from ..splice import MinimalPair, splice
from ..stimuli import NEUTRAL, Stimulus
from .anomalies import edited_outside_span, swapped
from .layout import NEUTRAL_COLUMNS, REF_COLUMNS, REF_FILE, REF_SLOTS
from .official import NeutralFile, words


class SplicedStimuliWarning(UserWarning):
    """Probe sentences were built by splicing phrases, not read from official files."""


#: The probe families the splicing cost is measured for, with their labels in the paper.
_COST_FAMILIES = (("P_Syn", ("syn",)), ("P_Comp", ("comp-head", "comp-mod")),
                  ("P_WordsSyn", ("wordssyn",)), ("P_Rand", ("rand",)))
_LANG_NAMES = {"en": "English", "pt": "Portuguese"}


def splice_differences(neutral: NeutralFile) -> dict[str, tuple[int, int]]:
    """Per probe family: (how many, of how many) probe sentences of the neutral file
    differ from what splicing their phrase into the neutral sentence would give.

    Every probe and WordsSyn variant of the singular pattern is counted. Nothing is
    reported or tolerated on the loader's context: the stimuli are built again on a
    context of their own, whose problems are dropped (the loader reports the file's).
    """
    quiet = LoadContext(neutral.ctx.data_dir, ErrorSink(collect=True), pins={})
    items = neutral.stimuli(NEUTRAL_COLUMNS, NEUTRAL, "all", ctx=quiet)
    originals = {s.nc: s for s in items if s.probe == "original"}
    counts: dict[str, tuple[int, int]] = {}
    for label, probes in _COST_FAMILIES:
        pairs = [(s, originals[s.nc]) for s in items if s.probe in probes and s.nc in originals]
        counts[label] = (sum(edited_outside_span(s, o) for s, o in pairs), len(pairs))
    return counts


def splice_cost(lang: str, neutral: NeutralFile) -> str:
    """The text of the :class:`SplicedStimuliWarning`, with the counts of
    :func:`splice_differences` (left out when the neutral file could not be read)."""
    name = _LANG_NAMES.get(lang, lang)
    measured = ""
    if neutral.df is not None:
        counts = [f"{label} {n}/{total}" for label, (n, total) in
                  splice_differences(neutral).items()]
        measured = (f" (on the {name} neutral file, where both exist, splicing differs from "
                    f"the official sentence for {', '.join(counts[:-1])} and {counts[-1]} "
                    "sentences)")
    return (f"{name} naturalistic probe sentences are not in the data directory (the official "
            f"dataset/{lang.upper()}/naturalistics_examplesent{{1,2,3}}.csv could not be "
            "fetched); ncprobe builds them by splicing each probe phrase of the reference table "
            "into the NC span. Cost: the article and agreement edits of the official probe "
            f"sentences are lost{measured}, so sentence-level similarities are slightly "
            "inflated. NC-level vectors are affected only through context.")


def reference_naturalistic(lang: str, nat_ids, wordssyn: str, neutral: NeutralFile,
                           ctx: LoadContext, nat_keys: dict) -> list[Stimulus]:
    """Naturalistic stimuli of one language from the reference table, by splicing.

    ``nat_ids``: the naturalistic contexts wanted (the table's slots ``S1``-``S3``). The
    NC keys read are recorded in ``nat_keys[(context, REF_FILE)]``, for the check that
    every context holds the neutral file's NCs.
    """
    df = ctx.table(REF_FILE, columns=REF_COLUMNS)
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
        surface[key] = words(r["target_surface"])
        if r["original_sentence"] != words(r["original_sentence"]):
            ctx.tolerate(f"{lang}: reference-table sentences with double spaces (normalised)")
        if "??" in r["original_sentence"]:
            ctx.tolerate(f"{lang}: reference-table sentences with '??' where non-ASCII "
                         "characters were lost upstream")
        pairs += _row_pairs(lang, r, i, (start, end), wordssyn, neutral, ctx)
    return splice(pairs, ctx.sink, target=surface)


def _row_pairs(lang: str, r: dict, row: int, span: tuple[int, int], wordssyn: str,
               neutral: NeutralFile, ctx: LoadContext) -> list[MinimalPair]:
    """The minimal pairs of one reference-table row: its original, then one per probe
    phrase (only the original when the phrase columns are malformed, after reporting)."""
    nc = r["canonical_form"]

    def pair(probe: str, variant: int, phrase: str, column: str) -> MinimalPair:
        return MinimalPair(lang, nc, r["slot"], r["original_sentence"], span, probe, variant,
                           phrase, REF_FILE, row, column)

    out = [pair("original", 1, "", "original_sentence")]
    comp = [p.strip() for p in r["p_comp"].split("||")]
    rand = [p.strip() for p in r["p_rand"].split("||")]
    alternatives = [p.strip() for p in r["p_words_syn"].split("||")]
    if len(comp) != 2 or len(rand) != 5 or not alternatives[0]:
        ctx.sink.error(f"expected 2 p_comp, 5 p_rand and >= 1 p_words_syn phrases, found "
                       f"{len(comp)}, {len(rand)}, {len(alternatives)}", file=REF_FILE, row=row,
                       key=nc)
        return out
    out.append(pair("syn", 1, r["p_syn"], "p_syn"))
    if swapped(r["target_surface"], comp[0], comp[1], neutral.head_pos.get(nc)):
        comp = comp[::-1]
        ctx.tolerate(f"{lang}: reference-table p_comp pairs swapped to the semantic head "
                     "(corrected)")
    out.append(pair("comp-head", 1, comp[0], "p_comp"))
    out.append(pair("comp-mod", 1, comp[1], "p_comp"))
    kept = alternatives if wordssyn == "all" else alternatives[:1]
    out += [pair("wordssyn", k, phrase, "p_words_syn") for k, phrase in enumerate(kept, start=1)]
    out += [pair("rand", k, phrase, "p_rand") for k, phrase in enumerate(rand, start=1)]
    return out
