"""NCIMP's conditions (a language x a context group: ``EN-Nat``, ``PT-Neut``...) in its
figures: their colours (:data:`CONDITION_PALETTE`, :func:`condition_palette`), the conditions
a figure shows (:func:`conditions_of`) and their legend (:func:`condition_legend`). The
generic style of every probe's figures is :mod:`ncprobe.plots.theme`'s.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.patches import Patch

from ...plots.theme import add_legend
from ...schema import CONDITIONS, CONTEXT_GROUPS, condition_label
from ..selection import conditions_in, split_condition

__all__ = ["CONDITION_PALETTE", "OTHER_CONDITION_FAMILIES", "condition_legend",
           "condition_palette", "conditions_of"]

#: Colour of each condition (:data:`ncprobe.schema.CONDITIONS`, in that order): English blue
#: (EN-Nat, EN-Neut, EN-Neut-pl, EN-NCS), Portuguese orange (PT-...); naturalistic darker,
#: neutral lighter, plural neutral lightest; the NCS dataset's sentences a hue of their own in
#: each family (English indigo, Portuguese brick), so they never read as NCIMP's neutral.
CONDITION_PALETTE = dict(zip(CONDITIONS, ("#1f5aa6", "#86b6e3", "#c6dcf1", "#5e4fa2",
                                          "#d45f0a", "#f6ad62", "#fbd7ad", "#9e3d22"),
                             strict=True))
#: Colours of the conditions of other languages (a user's own pairs: ``FR-Nat`` ...): one
#: family per language, in the order :func:`~ncprobe.ncimp.selection.conditions_in` gives the
#: languages (teal, magenta, olive, grey; again from teal after four), one shade per context
#: group of :data:`~ncprobe.schema.CONTEXT_GROUPS` as for English and Portuguese (naturalistic
#: darker, neutral lighter, plural neutral lightest, NCS darkest); none is a colour of
#: :data:`CONDITION_PALETTE` or :data:`CLASS_PALETTE`.
OTHER_CONDITION_FAMILIES: tuple[tuple[str, str, str, str], ...] = (
    ("#00796b", "#4db6ac", "#b2dfdb", "#004d40"),
    ("#a2185b", "#e57ead", "#f5c6da", "#6a1b4d"),
    ("#7a7a1a", "#bfbf5a", "#e6e6b0", "#4d4d12"),
    ("#4d4d4d", "#999999", "#d0d0d0", "#262626"),
)


def condition_palette(conditions) -> dict[str, str]:
    """The colour of each condition of ``conditions`` (labels; in the order
    :func:`~ncprobe.ncimp.selection.conditions_in` gives them): those of
    :data:`~ncprobe.schema.CONDITIONS` from :data:`CONDITION_PALETTE`; the others from
    :data:`OTHER_CONDITION_FAMILIES`, a family per language in that order and a shade per
    context group (a group that is none of the known ones takes the family's shades in turn).
    Deterministic: the same conditions always get the same colours."""
    shown = conditions_in(conditions)
    langs = list(dict.fromkeys(split_condition(c)[0] for c in shown if c not in CONDITIONS))
    groups = list(CONTEXT_GROUPS)
    extra = [g for g in dict.fromkeys(split_condition(c)[1] for c in shown) if g not in groups]
    out = {}
    for c in shown:
        if c in CONDITION_PALETTE:
            out[c] = CONDITION_PALETTE[c]
            continue
        lang, group = split_condition(c)
        family = OTHER_CONDITION_FAMILIES[langs.index(lang) % len(OTHER_CONDITION_FAMILIES)]
        shade = groups.index(group) if group in groups else len(groups) + extra.index(group)
        out[c] = family[shade % len(family)]
    return out


def conditions_of(df: pd.DataFrame) -> list[str]:
    """The conditions of a selected table (its ``condition`` column), in the order shown."""
    return conditions_in(df["condition"].dropna().astype(str))


def condition_legend(where, conditions: list[str], *, loc: str = "outside lower center"
                     ) -> None:
    """Conditions in a grid: one row per language, one column per context (colours of
    :func:`condition_palette`)."""
    conditions = conditions_in(conditions)
    palette = condition_palette(conditions)
    parts = [split_condition(c) for c in conditions]
    langs = list(dict.fromkeys(lg for lg, _ in parts))  # English, Portuguese, then the others
    groups = list(dict.fromkeys(group for _, group in parts))
    # legends fill column by column: list the entries context-major so rows are languages
    handles = []
    for group in groups:
        for lang in langs:
            name = condition_label(lang, group)
            handles.append(Patch(facecolor=palette[name], edgecolor="#444444",
                                 linewidth=0.5, label=name) if name in conditions
                           else Patch(visible=False, label=""))
    add_legend(where, handles, title="condition", loc=loc, ncols=len(groups))
