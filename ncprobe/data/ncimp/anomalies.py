"""Known upstream anomalies of the NCIMP files (SCHEMA section 7): repaired or counted.

Each is handled on purpose and reported in the loader's ``notes`` with its count;
nothing is dropped silently:

* head/modifier swap: ``original head only`` holds the first word of the NC,
  which is not the semantic head for NCs whose first word is an adjective or
  numeral (30 Portuguese NCs in the naturalistic files; some ``p_comp`` pairs of
  the reference table). The semantic head is the ``compound noun head`` of the
  neutral file; the comp-head/comp-mod probes are assigned by which NC word each
  keeps (:func:`semantic_comp`, :func:`swapped`), and the corrections are counted.
* ``dust storm`` has no token-level scores: kept (for similarity statistics),
  gold NaN, reported as unscored (:data:`UNSCORED_BY_DESIGN`).
* EN ``only head synonym altN`` tags have the wrong length: not read by the
  loaders; ``ncprobe data check`` reports them as tolerated.
* probe sentences whose words outside the span differ from the original's
  (article and agreement edits), repeated substitutes and naturalistic sentences
  repeated across contexts: kept and counted (:func:`note_repeats`).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from ..reading import LoadContext
from ..stimuli import NATURALISTIC, Stimulus

#: NCs without a gold score by design (SCHEMA section 7.1): English ``dust storm`` has no
#: token-level scores anywhere. Any other NC without a gold score stops ``compute``.
UNSCORED_BY_DESIGN = {"en": frozenset({"dust storm"})}


def nc_parts(text: str) -> list[str]:
    """The two words of an NC: split on the space, or on the hyphen of one token."""
    return re.split(r"[ -]", " ".join(text.split()), maxsplit=1) if text else []


def swapped(surface: str, head: str, mod: str, head_pos: int | None) -> bool:
    """Whether a head-only/modifier-only pair holds the semantic head in the modifier slot.

    Which word of the surface NC each phrase keeps is matched by the longest
    common prefix (case-insensitive), so inflected forms (``fechado`` for
    ``fechada``) and capitalised copies still match. ``head_pos`` is the
    semantic head's position (0 or 1) in the NC. False when it cannot be told.
    """
    parts = [p.lower() for p in nc_parts(surface)]
    if head_pos is None or len(parts) != 2 or parts[0] == parts[1]:
        return False
    h, m = head.lower(), mod.lower()
    first = _common_prefix(h, parts[0]) + _common_prefix(m, parts[1])
    second = _common_prefix(h, parts[1]) + _common_prefix(m, parts[0])
    return first != second and (first > second) != (head_pos == 0)


def _common_prefix(a: str, b: str) -> int:
    return len(os.path.commonprefix([a, b]))


def semantic_comp(items: dict, surface: str, head_pos: int | None) -> tuple[dict, bool]:
    """Relabel comp-head/comp-mod so that comp-head holds the semantic head.

    ``items`` maps ``"comp-head"``/``"comp-mod"`` (and other keys, kept as they are) to
    stimuli; returns the items, relabelled where needed, and whether they were.
    """
    h, m = items.get("comp-head"), items.get("comp-mod")
    if h is None or m is None or not swapped(surface, h.target, m.target, head_pos):
        return items, False
    return {**items, "comp-head": replace(m, probe="comp-head"),
            "comp-mod": replace(h, probe="comp-mod")}, True


def edited_outside_span(probe: Stimulus, original: Stimulus) -> bool:
    """Whether a probe sentence's words outside its span differ from the original's.

    Such a probe was edited upstream beyond the substitution (an article, inflection
    or number agreement): splicing its phrase into the original would not give it.
    """
    return (probe.tokens[:probe.span[0]] != original.tokens[:original.span[0]]
            or probe.tokens[probe.span[1]:] != original.tokens[original.span[1]:])


def note_repeats(items: list[Stimulus], ctx: LoadContext) -> None:
    """Count (never drop) edits outside the span, repeated substitutes and repeated originals."""
    seen_sub: set[tuple] = set()
    seen_orig: dict[tuple, str] = {}
    originals = {(s.lang, s.nc, s.context): s for s in items if s.probe == "original"}
    for s in items:
        o = originals.get((s.lang, s.nc, s.context))
        if s.probe != "original" and o is not None and edited_outside_span(s, o):
            where = "nat" if s.context in NATURALISTIC else s.context  # N, Npl, NCS
            ctx.tolerate(f"{s.lang} {where}: {s.probe} sentences whose words outside the span "
                         "differ from the original (inflection, article or number agreement "
                         "made upstream)")
        if s.probe == "original":
            if s.context not in NATURALISTIC:
                continue
            key = (s.lang, s.nc, s.tokens)
            if key in seen_orig:
                ctx.tolerate(f"{s.lang}: naturalistic sentence identical to another context of "
                             f"the same NC ({s.nc} {seen_orig[key]}={s.context})")
            seen_orig[key] = s.context
            continue
        sub_key = (s.lang, s.nc, s.context, s.probe, s.target)
        if sub_key in seen_sub:
            ctx.tolerate(f"{s.lang}: {s.probe} variants repeating an earlier variant's phrase in "
                         "the same context (kept: each variant is a substitution)")
        seen_sub.add(sub_key)
