"""Gold compositionality scores and classes.

* Gold Comp (Eq. 1 of the study): the mean over the three naturalistic
  sentences of the per-sentence annotator mean, NCTTI ``MeanS1..3``. NCTTI is
  used rather than the xlsx because it covers all 280 scored English NCs (the
  xlsx lacks ``small fry``) and reproduces the paper's class means.
* Type-level score: NCTTI ``CompType``; where it is empty (``small fry``) or the
  NC is absent (``dust storm``), the ``compositionality`` column of the NCS
  ``input/sentids_<lang>.csv`` (decimal comma in English), with a note.
* Class: NCTTI ``CompScale`` (``NC`` -> ``I``), joined case-insensitively
  (NCTTI lower-cases ``dutch courage``). The xlsx classes are thresholds on the
  type score and are not the paper's classes.
* The xlsx (``human_compositionality scores.xlsx``) is read only to cross-check the
  token and type scores, by ``ncprobe data check`` and ``data info``
  (``load_stimuli(cross_check=True)``): disagreements are counted in the notes, never
  merged. No score comes from it, so ``compute`` neither reads nor verifies it (parsing the
  workbook cost about a third of a second on every run).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypedDict

from .reading import LoadContext

NCTTI = "marcospln+nctti/data/data_{lang}.tsv"
NCS_IDS = "marcospln+noun_compound_senses/input/sentids_{lang}.csv"
XLSX = ("risehnhew+Finding-Idiomaticity-in-Word-Representations/dataset/"
        "human_compositionality scores.xlsx")
_CLASS = {"NC": "I", "PC": "PC", "C": "C"}


class _Where(TypedDict):
    """Where a cell sits, as :meth:`LoadContext.score` and error reports take it."""

    file: str
    row: int
    key: str


@dataclass(frozen=True)
class Score:
    token_scores: tuple[float, float, float]
    comp: float
    comp_type: float
    cls: str | None


def load_scores(lang: str, ctx: LoadContext, *, cross_check: bool = False) -> dict[str, Score]:
    """Scores per NC, keyed by the lower-cased compound (the join is case-insensitive).

    With ``cross_check``, the xlsx is read too and its disagreements with NCTTI are noted
    (see the module doc); the scores are the same either way.
    """
    rel = NCTTI.format(lang=lang)
    df = ctx.table(rel, sep="\t", columns=["compound", "CompScale", "CompType", "MeanS1",
                                           "MeanS2", "MeanS3"])
    if df is None:
        return {}
    type_fallback = _ncs_type_scores(lang, ctx)
    out: dict[str, Score] = {}
    fell_back = []
    for i, r in enumerate(df.records(), start=1):
        key = r["compound"].strip().lower()
        where: _Where = {"file": rel, "row": i, "key": r["compound"]}
        if key in out:
            ctx.sink.error("duplicate NC", column="compound", **where)
            continue
        s1, s2, s3 = (ctx.score(r[c], column=c, **where) for c in ("MeanS1", "MeanS2", "MeanS3"))
        tok = (s1, s2, s3)
        ctype = ctx.score(r["CompType"], column="CompType", allow_empty=True, **where)
        if math.isnan(ctype) and key in type_fallback:
            ctype = type_fallback[key]
            fell_back.append(r["compound"])
        cls = _CLASS.get(r["CompScale"].strip())
        if cls is None:
            ctx.sink.error(f"class {r['CompScale']!r} is not one of NC, PC, C",
                           column="CompScale", **where)
        out[key] = Score(tok, sum(tok) / 3, ctype, cls)
    for key, t in type_fallback.items():
        if key not in out:
            out[key] = Score((math.nan,) * 3, math.nan, t, None)
            fell_back.append(key)
    if fell_back:
        ctx.notes.append(f"{lang}: type-level score taken from {NCS_IDS.format(lang=lang)} for "
                         f"{len(fell_back)} NC(s) that NCTTI lacks or leaves empty: "
                         + ", ".join(sorted(fell_back)))
    if cross_check:
        _cross_check_xlsx(lang, ctx, out)
    return out


def _ncs_type_scores(lang: str, ctx: LoadContext) -> dict[str, float]:
    rel = NCS_IDS.format(lang=lang)
    if not ctx.exists(rel):
        ctx.notes.append(f"{lang}: {rel} absent: no type-level score for NCs that NCTTI lacks")
        return {}
    df = ctx.table(rel, columns=["compound", "compositionality"])
    if df is None:
        return {}
    return {r["compound"].strip().lower(): ctx.score(
        r["compositionality"], file=rel, row=i, column="compositionality", key=r["compound"])
        for i, r in enumerate(df.records(), start=1)}


def _cross_check_xlsx(lang: str, ctx: LoadContext, scores: dict[str, Score]) -> None:
    df = ctx.table(XLSX, excel=True, columns=["language", "experiment_type", "file", "compound",
                                              "CompositionalityToken", "CompositionalityType"])
    if df is None:
        return
    token_diff, type_diff, absent = [], 0, set()
    for i, r in enumerate(df.records(), start=2):  # row 1 is the header
        if r["language"] != lang:
            continue
        key = r["compound"].strip().lower()
        where: _Where = {"file": XLSX, "row": i, "key": r["compound"]}
        score = scores.get(key)
        if score is None:
            absent.add(r["compound"])
            continue
        ctype = ctx.score(r["CompositionalityType"], column="CompositionalityType", **where)
        type_diff += abs(ctype - score.comp_type) > 0.01
        if r["experiment_type"] != "Naturalistic":
            continue
        stem = r["file"].rsplit(".", 1)[0]
        if not stem or stem[-1] not in "123":
            ctx.sink.error(f"cannot tell the sentence (S1-S3) from {r['file']!r}",
                           column="file", **where)
            continue
        tok = ctx.score(r["CompositionalityToken"], column="CompositionalityToken", **where)
        if abs(tok - score.token_scores[int(stem[-1]) - 1]) > 0.01:
            token_diff.append(f"{r['compound']} S{stem[-1]}")
    if token_diff:
        ctx.notes.append(f"{lang}: {len(token_diff)} token-level score(s) differ (> 0.01) "
                         f"between NCTTI and the xlsx; NCTTI is used: {', '.join(token_diff)}")
    if type_diff:
        ctx.notes.append(f"{lang}: {type_diff} xlsx row(s) have a type score that differs from "
                         "NCTTI")
    if absent:
        ctx.notes.append(f"{lang}: {len(absent)} xlsx NC(s) not in NCTTI: "
                         + ", ".join(sorted(absent)))
