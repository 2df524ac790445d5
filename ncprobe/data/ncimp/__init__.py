"""The NCIMP files -> :class:`~ncprobe.data.stimuli.Stimuli` (:func:`load_stimuli`).

What is read (``../shared/ncimp/SCHEMA.md`` describes every file; :mod:`.layout` names
the files and their columns):

* naturalistic S1-S3: ``dataset/<LANG>/naturalistics_examplesent{1,2,3}.csv``
  (PT in every copy; EN only where the official files could be fetched), by
  :mod:`.official`;
* neutral: ``dataset/<LANG>/neutral.csv``, singular pattern (context ``N``) and,
  on request, the plural pattern (context ``Npl``), by :mod:`.official`;
* English naturalistic contexts when the official files are absent: the
  derived reference table (REF), with probe sentences built by splicing each
  probe phrase into the NC span, with a warning (:mod:`.reference`);
* scores and classes: :mod:`ncprobe.data.scores`;
* on request (``ncs``), the context ``NCS``: the neutral sentences of the NCS dataset for
  the same NCs, with generated P_Rand probes (:mod:`ncprobe.data.ncs`; its NC set must
  also equal the neutral file's).

The known upstream anomalies (SCHEMA section 7) are repaired or counted on purpose,
and listed in the loader's ``notes`` with counts (:mod:`.anomalies`).

Trust: every file read is verified against its pin (``ncprobe/data/upstream.tsv``)
before it is parsed; a file that differs is an error unless ``accept_modified=True``,
and is then listed in ``Stimuli.modified`` and in a ``MODIFIED DATA`` note. Whatever the
pins, the NC set of every naturalistic context read must equal the neutral file's, and
every NC with a score must be in the neutral file, so a file cut short is caught.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Iterable

from ...errors import ErrorSink
from ...schema import (
    EN_NATURALISTIC_CHOICES,
    GOLD_CHOICES,
    NCS_CONTEXT,
    WORDSSYN_CHOICES,
    check_choice,
)
from ..reading import RESTORE, LoadContext
from ..scores import load_scores
from ..sources import resolve_data_dir
from ..stimuli import (
    LANGS,
    NATURALISTIC,
    NEUTRAL,
    NEUTRAL_PLURAL,
    NounCompound,
    Stimuli,
    Stimulus,
    expand_contexts,
    expand_probes,
)
from .anomalies import UNSCORED_BY_DESIGN, note_repeats
from .layout import NAT_FILE, NEUTRAL_COLUMNS, NEUTRAL_FILE, PLURAL_COLUMNS, REF_FILE, REF_SLOTS
from .official import NeutralFile, listed, naturalistic, same_ncs
from .reference import SplicedStimuliWarning, reference_naturalistic, splice_cost

__all__ = ["NAT_FILE", "NEUTRAL_FILE", "REF_FILE", "REF_SLOTS", "UNSCORED_BY_DESIGN",
           "SplicedStimuliWarning", "load_stimuli", "modified_note"]

log = logging.getLogger(__name__)


def load_stimuli(lang: str | Iterable[str] = "en", contexts: str | Iterable[str] = "nat,neut",
                 probes: str | Iterable[str] = "all", *, wordssyn: str = "first",
                 gold: str = "comp", data_dir: str | Path | None = None,
                 en_naturalistic: str = "auto", collect: bool = False,
                 accept_modified: bool = False, cross_check: bool = False) -> Stimuli:
    """Load NCIMP stimuli for one or both languages.

    Args:
        lang: ``en``, ``pt``, ``all`` or a list of them.
        contexts: ``nat`` (S1-S3), ``neut`` (neutral singular, ``N``), ``neut-pl``
            (neutral plural, ``Npl``), ``all`` (these five), ``ncs`` (context ``NCS``: the
            neutral sentences of the NCS dataset, Garcia et al. 2021, for the same NCs, with
            generated P_Rand probes, which need ``pip install "ncprobe[generate]"``; see
            :mod:`ncprobe.data.ncs`), context ids, or a comma list of these.
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
        UsageError: ``ncs`` with ``rand`` probes asked for and ``wordfreq`` not installed.

    Warns:
        SplicedStimuliWarning: English naturalistic probe sentences were spliced from the
            reference table; the message gives how often splicing differs from the
            official sentences of the neutral file.

    Example:
        >>> stim = load_stimuli("pt", contexts="neut", probes="syn")  # doctest: +SKIP
        >>> stim.to_frame()[["nc", "probe", "sentence"]].head(2)      # doctest: +SKIP
    """
    langs = LANGS if lang == "all" else ((lang,) if isinstance(lang, str) else tuple(lang))
    ctx_ids = expand_contexts(contexts)
    keep = expand_probes(probes)
    check_choice("wordssyn", wordssyn, WORDSSYN_CHOICES)
    check_choice("gold", gold, GOLD_CHOICES)
    check_choice("en_naturalistic", en_naturalistic, EN_NATURALISTIC_CHOICES)
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
    neutral = NeutralFile(lang, ctx)
    items: list[Stimulus] = []
    #: (context, file) -> the NC keys that file holds for that context
    nat_keys: dict[tuple[str, str], list[str]] = {}
    if NEUTRAL in ctx_ids:
        items += neutral.stimuli(NEUTRAL_COLUMNS, NEUTRAL, wordssyn)
    if NEUTRAL_PLURAL in ctx_ids:
        items += neutral.stimuli(PLURAL_COLUMNS, NEUTRAL_PLURAL, "first")
    nat_ids = [c for c in ctx_ids if c in NATURALISTIC]
    if nat_ids:
        official = all(ctx.exists(NAT_FILE.format(LANG=lang.upper(), k=c[1])) for c in nat_ids)
        if lang == "en" and en_naturalistic == "reference" or (
                lang == "en" and en_naturalistic == "auto" and not official):
            warnings.warn(splice_cost(lang, neutral), SplicedStimuliWarning, stacklevel=3)
            ctx.notes.append("en: naturalistic probe sentences spliced from the reference "
                             "table (official files absent)")
            items += reference_naturalistic(lang, nat_ids, wordssyn, neutral, ctx, nat_keys)
        else:
            for c in nat_ids:
                items += naturalistic(lang, c, wordssyn, neutral, ctx, nat_keys)
    if neutral.df is not None:
        for (c, rel), keys in nat_keys.items():
            same_ncs(neutral, f"context {c}", rel, keys, ctx)
    if NCS_CONTEXT in ctx_ids:
        from ..ncs import ncs_stimuli  # the NCS dataset: its files, same NCs, generated P_Rand

        items += ncs_stimuli(lang, neutral, ctx, keep)
    items = [s for s in items if s.probe in keep]
    note_repeats(items, ctx)
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
                           f"that file cut short or edited?): {listed(stray)}; {RESTORE}",
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
