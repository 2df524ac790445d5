"""Coverage: every NC has every context and probe family a run needs, and a gold score.

A run that silently lacks part of its input gives wrong numbers with exit 0: an NC
without its S2 sentence gets a naturalistic mean over fewer sentences, an NC without
random probes drops out of every Affinity correlation, an NC without a gold score drops
out of every correlation (``n = 0`` when no NC has one). :func:`check_coverage` stops
such a run and names the NCs and what they lack. ``compute`` calls it after loading.

The rules:

* Contexts. With ``contexts`` given (the NCIMP files: what the run asks for), every NC
  of a language needs each of them; otherwise (a user's own pairs) every NC needs every
  context that any NC of its language has.
* Probe families. With ``probes`` given, every (NC, context) needs each of them, except
  that the plural neutral context ``Npl`` has no ``comp-mod`` and no ``rand`` probes
  upstream (by design); otherwise every (NC, context) needs every family that any NC has
  in that context. ``original`` is always needed. Numbers of variants are not compared
  (English P_WordsSyn has 1 to 5 distinct alternatives, by design).
* Gold. A language whose loader vouches for its scores (``Stimuli.gold_exempt``, the
  NCIMP files) needs a gold score for every NC except those listed there (English
  ``dust storm``, unscored by design). Any other language (a user's own pairs) needs a
  gold score for every NC or for none: with none, similarities and measures are still
  computed and a note says that correlations are empty; with some, the NCs without one
  are named and the run stops, since they would silently leave the correlations.
"""

from __future__ import annotations

from typing import Iterable

from ..errors import DataError, DataErrors
from .stimuli import NEUTRAL_PLURAL, Stimuli, expand_contexts, expand_probes

#: Probe families the plural neutral pattern does not have upstream (SCHEMA section 3).
NO_PLURAL_PROBES = ("comp-mod", "rand")
#: NCs named in full in an error; the rest are counted.
SHOWN = 12


def check_coverage(stimuli: Stimuli, contexts: str | Iterable[str] | None = None,
                   probes: str | Iterable[str] | None = None) -> list[str]:
    """Check that every NC has every context, probe family and gold score the run needs.

    Args:
        stimuli: what the run will encode.
        contexts: the contexts the run asks for (``nat,neut``, ids...); ``None``: those
            present for the language.
        probes: the probe families the run asks for; ``None``: those present per context.

    Returns:
        Notes for the run (a language without any gold score).

    Raises:
        DataError: no stimuli, or NCs that lack a context, a probe family or a gold
            score (:class:`DataErrors` when several languages or kinds fail); the
            message names the NCs and what each lacks.
    """
    if not len(stimuli):
        raise DataError("no stimuli: nothing to compute (an empty pairs file, or a filter "
                        "that kept nothing?)")
    want_ctx = expand_contexts(contexts) if contexts is not None else None
    want_probes = expand_probes(probes) if probes is not None else None
    errors: list[DataError] = []
    notes: list[str] = []
    for lang in dict.fromkeys(s.lang for s in stimuli):
        items = [s for s in stimuli if s.lang == lang]
        ncs = list(dict.fromkeys(s.nc for s in items))
        have: dict[tuple[str, str], set[str]] = {}
        present: dict[str, list[str]] = {}
        for s in items:
            have.setdefault((s.nc, s.context), set()).add(s.probe)
            present.setdefault(s.context, [])
            if s.probe not in present[s.context]:
                present[s.context].append(s.probe)
        ctxs = list(want_ctx) if want_ctx is not None else list(present)
        families = {c: _families(c, want_probes, present.get(c, [])) for c in ctxs}
        lacking = {}
        for nc in ncs:
            what = []
            for c in ctxs:
                got = have.get((nc, c))
                if got is None:
                    what.append(c)
                    continue
                miss = [p for p in families[c] if p not in got]
                if miss:
                    what.append(f"{c} {'/'.join(miss)}")
            if what:
                lacking[nc] = what
        if lacking:
            need = "; ".join(f"{c}: {', '.join(families[c])}" for c in ctxs)
            errors.append(DataError(
                f"{lang}: {len(lacking)} of {len(ncs)} NCs lack a context or probe family the "
                f"run needs (each NC needs {need}): {_shown(lacking)}. A data file is cut "
                "short or rows were removed: restore the NCIMP files with `ncprobe data "
                "download`, or complete (or leave out) these NCs in your own pairs"))
        errors += _gold(stimuli, lang, ncs, notes)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise DataErrors(errors)
    return notes


def _families(context: str, want: tuple[str, ...] | None, present: list[str]) -> list[str]:
    if want is None:
        return ["original"] + [p for p in present if p != "original"]
    return [p for p in want
            if not (context == NEUTRAL_PLURAL and p in NO_PLURAL_PROBES)]


def _shown(lacking: dict[str, list[str]]) -> str:
    shown = [f"{nc} ({', '.join(what)})" for nc, what in list(lacking.items())[:SHOWN]]
    more = f" ... and {len(lacking) - SHOWN} more" if len(lacking) > SHOWN else ""
    return ", ".join(shown) + more


def _gold(stimuli: Stimuli, lang: str, ncs: list[str], notes: list[str]) -> list[DataError]:
    unscored = [nc for nc in ncs
                if (info := stimuli.ncs.get((lang, nc))) is None or not info.scored]
    if not unscored:
        return []
    if lang in stimuli.gold_exempt:
        exempt = stimuli.gold_exempt[lang]
        bad = [nc for nc in unscored if nc not in exempt]
        if not bad:
            return []
        by_design = (f"only {', '.join(sorted(exempt))} lacks one by design"
                     if exempt else "no NC lacks one by design")
        return [DataError(
            f"{lang}: {len(bad)} NC(s) have no gold score ({by_design}): {_names(bad)}. "
            "Correlations would silently leave them out: the scores file is cut short or "
            "edited; restore it with `ncprobe data download`")]
    if len(unscored) == len(ncs):
        notes.append(f"{lang}: no NC has a gold score (no comp values): similarities and "
                     "measures are computed, correlations with the gold score are empty "
                     "(n = 0); add a comp column to correlate")
        return []
    return [DataError(
        f"{lang}: {len(unscored)} of {len(ncs)} NCs have no gold score (comp) while the others "
        f"have one: {_names(unscored)}. Correlations would silently leave them out: give comp "
        "for every NC, or for none (similarities and measures only)")]


def _names(names: list[str]) -> str:
    more = f" ... and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more
