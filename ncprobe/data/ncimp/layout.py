"""Which NCIMP file holds what: file paths and the columns read from each.

Paths are relative to the data directory (``<owner>+<repo>/<path in that repository>``,
see :mod:`ncprobe.data.sources`); ``../shared/ncimp/SCHEMA.md`` describes every file.
Column names are given per probe as ``(probe, variant)`` keys. A column name that
differs between languages is a ``{lang: name}`` dict (read it with :func:`pick`); a
language missing from such a dict has no such column.
"""

from __future__ import annotations

import re
from typing import Iterable

REPO = "risehnhew+Finding-Idiomaticity-in-Word-Representations/dataset"
#: Naturalistic sentences S1-S3 with their probe sentences, one row per NC
#: (``{LANG}``: ``EN`` or ``PT``; ``{k}``: 1, 2 or 3).
NAT_FILE = REPO + "/{LANG}/naturalistics_examplesent{k}.csv"
#: Neutral sentences (singular and plural pattern) with their probe sentences and the
#: bare phrases (``compound noun head``, ``only mwe synonym``...), one row per NC.
NEUTRAL_FILE = REPO + "/{LANG}/neutral.csv"
#: The derived reference table (REF): the only source of English naturalistic sentences,
#: with bare probe phrases but no probe sentences (see :mod:`.reference`).
REF_FILE = "malibayram+idiomaticity_probing/studio/public/references/ncimp_en_pt_reference.csv"
#: The slots of the reference table (S1-S3 naturalistic, N1 neutral, N2 neutral plural).
REF_SLOTS = ("S1", "S2", "S3", "N1", "N2")
#: The reference-table columns read.
REF_COLUMNS = ("language", "canonical_form", "slot", "original_sentence", "target_surface",
               "span", "p_syn", "p_comp", "p_words_syn", "p_rand")
#: The NC key and surface columns of the naturalistic files.
NAT_KEY_COLUMNS = ("compound", "compound noun", "original sentence", "original sentence_tag")
#: The NC key, surface, head and modifier columns of the neutral file.
NEUTRAL_KEY_COLUMNS = ("compound", "compound noun", "compound noun head",
                       "compound noun modifier")

# Naturalistic files: (probe, variant) -> sentence column. Each tag is in "<column>_tag";
# these files hold no bare-phrase columns, so the span's own text is the target.
NAT_COLUMNS = {
    ("syn", 1): "synonym for compound",
    ("comp-head", 1): "original head only",
    ("comp-mod", 1): "original modifier only",
    ("wordssyn", 1): "synonym both",
    **{("rand", k): f"nc rand freq sentence{k}" for k in range(1, 6)},
}
# Neutral file, singular pattern: (probe, variant) -> (sentence column, tag column or None
# for "<sentence column>_tag", bare-phrase column the span must hold, or None for none).
NEUTRAL_COLUMNS = {
    ("original", 1): ("neutral sentence", "original sentence_tag", "compound noun"),
    ("syn", 1): ("synonym for compound", None, "only mwe synonym"),
    ("comp-head", 1): ("original head only", None, "compound noun head"),
    ("comp-mod", 1): ("original modifier only", None, "compound noun modifier"),
    ("wordssyn", 1): ("synonym both", None, {"en": "only synonym both",
                                             "pt": "only both synonyms"}),
    **{("rand", k): (f"nc rand freq sentence{k}", None, {"en": f"nc rand freq{k}"})
       for k in range(1, 6)},
}
# Neutral file, plural pattern: as NEUTRAL_COLUMNS; no comp-mod and no rand probes upstream.
PLURAL_COLUMNS = {
    ("original", 1): ("neutral sentence plural", None, None),
    ("syn", 1): ({"en": "synonym for compoundplural", "pt": "mwe synonym plural"}, None, None),
    ("comp-head", 1): ("head only plural", None, None),
    ("wordssyn", 1): ({"en": "synonym both plural", "pt": "both synonyms plural"}, None, None),
}
#: The further WordsSyn alternatives: ``both synonym alt<N>`` is variant N + 1.
_ALT = re.compile(r"^both synonym alt(\d+)$")


def pick(spec, lang: str):
    """A column name of :data:`NEUTRAL_COLUMNS`/:data:`PLURAL_COLUMNS` for one language."""
    return spec.get(lang) if isinstance(spec, dict) else spec


def wordssyn_alternatives(columns: Iterable[str]) -> dict[int, str]:
    """Variant -> sentence column of the WordsSyn alternatives a file holds (variants 2...).

    >>> wordssyn_alternatives(["synonym both", "both synonym alt1", "both synonym alt1_tag"])
    {2: 'both synonym alt1'}
    """
    out = {}
    for c in columns:
        m = _ALT.match(c)
        if m:
            out[int(m.group(1)) + 1] = c
    return out
