"""The measures of the study (method §3), as pure functions over cosines. No model code here.

Array functions (:func:`cosine`, :func:`affinity`, :func:`scaled_similarity`,
:func:`ratio`) compute one formula each; the frame functions
(:func:`sentence_measures`, :func:`nc_measures`) apply them to the long cosine
table of :class:`~ncprobe.ncimp.results.Results`.

Definitions, per context sentence (naturalistic S1-S3, neutral N, plural Npl):

* ``Sim(P)`` (Eq. 3): the mean over the variants of probe family P of
  cos(expr(P), expr(NC)); ``rand`` has five variants, ``syn`` one.
* ``comp``: the study's P_Comp, per sentence the higher of ``comp-head`` and
  ``comp-mod``; both components are reported too.
* ``A_Syn|WordsSyn`` = Sim(syn) - Sim(wordssyn) and ``A_Syn|Rand`` =
  Sim(syn) - Sim(rand) (Eq. 4).
* ``Sim_R|Syn`` and ``Sim_R|WordsSyn`` (Eq. 5): (Sim(P) - Sim(rand)) / (1 - Sim(rand)).

Per NC (:func:`nc_measures`): naturalistic values (context ``nat``) are the mean
over S1-S3 of the per-sentence values (so Sim_R is a mean of per-sentence
ratios, as in Eq. 5); neutral (``neut``) and plural neutral (``neut-pl``)
are their single sentence. The ratio ``Sim_R|Syn/Sim_R|WordsSyn`` is taken per
NC from those means.

Undefined values are NaN, never infinities, and are counted by
:func:`undefined_counts`:

* a cosine with a vector that does not exist (a span with no known word);
  means over variants and sentences leave NaN out;
* ``Sim_R`` of a sentence whose ``Sim(rand)`` is within :data:`EPS` of 1 (the
  random probes are as similar as they can be: nothing to scale by);
* the ratio of an NC whose ``|Sim_R|WordsSyn|`` is below :data:`EPS`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# the measures' names and the key columns; MEASURES ... stay importable from here
from ..schema import (
    AFFINITIES,
    GROUP_OF_CONTEXT,
    MEASURES,
    NC_KEYS,
    RATIO,
    RUN_KEYS,
    SCALED,
    SUBSTITUTION_MEASURES,
)
from ..stats import cosine as cosine  # Eq. 2, shared with the probes that compare vectors

#: Distance from 1 (for Sim(rand)) or 0 (for a ratio's denominator) below which a
#: scaled value is undefined.
EPS = 1e-6

__all__ = ["AFFINITIES", "EPS", "MEASURES", "SUBSTITUTION_MEASURES", "RATIO", "RUN_KEYS", "SCALED",
           "affinity", "cosine", "nc_measures", "ratio", "scaled_similarity",
           "sentence_measures", "undefined_counts"]


def affinity(sim_i, sim_j):
    """Eq. 4: Aff(Pi, Pj | NC) = Sim(Pi, NC) - Sim(Pj, NC)."""
    return np.asarray(sim_i, dtype=np.float64) - np.asarray(sim_j, dtype=np.float64)


def scaled_similarity(sim_p, sim_rand):
    """Eq. 5 for one sentence: (Sim(P) - Sim(rand)) / (1 - Sim(rand)); NaN when Sim(rand) ~ 1."""
    sim_p = np.asarray(sim_p, dtype=np.float64)
    sim_rand = np.asarray(sim_rand, dtype=np.float64)
    room = 1.0 - sim_rand
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (sim_p - sim_rand) / room
    return np.where(np.abs(room) > EPS, out, np.nan)


def ratio(num, den):
    """num / den, NaN where ``|den|`` < :data:`EPS`."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    return np.where(np.abs(den) >= EPS, out, np.nan)


def _derive(wide: pd.DataFrame) -> pd.DataFrame:
    """Add comp, affinities and scaled similarities to a frame with one column per probe."""
    out = wide.copy()
    if {"comp-head", "comp-mod"} <= set(out.columns):
        out["comp"] = np.maximum(out["comp-head"], out["comp-mod"])
    has = set(out.columns)
    if {"syn", "wordssyn"} <= has:
        out["A_Syn|WordsSyn"] = affinity(out["syn"], out["wordssyn"])
    if {"syn", "rand"} <= has:
        out["A_Syn|Rand"] = affinity(out["syn"], out["rand"])
        out["Sim_R|Syn"] = scaled_similarity(out["syn"], out["rand"])
    if {"wordssyn", "rand"} <= has:
        out["Sim_R|WordsSyn"] = scaled_similarity(out["wordssyn"], out["rand"])
    return out[[m for m in MEASURES if m in out.columns]]


def _long(wide: pd.DataFrame) -> pd.DataFrame:
    long = (wide.rename_axis(columns="measure").stack(future_stack=True)
            .rename("value").reset_index())
    long["measure"] = pd.Categorical(long["measure"], categories=list(MEASURES), ordered=True)
    return long


def sentence_measures(cosines: pd.DataFrame) -> pd.DataFrame:
    """Per sentence (context) and NC: Sim of every probe family and the derived measures.

    Args:
        cosines: the long cosine table (columns :data:`~ncprobe.schema.RUN_KEYS`, ``context``,
            ``nc``, ``probe``, ``variant``, ``cosine``).

    Returns:
        A long table: :data:`~ncprobe.schema.NC_KEYS`, ``measure``, ``value``.
    """
    keys = list(NC_KEYS)
    sims = (cosines.groupby(keys + ["probe"], observed=True, sort=True)["cosine"].mean()
            .unstack("probe"))
    return _long(_derive(sims))


def nc_measures(sentences: pd.DataFrame) -> pd.DataFrame:
    """Per NC and context group (``nat`` = mean over S1-S3, ``neut``, ``neut-pl``).

    Args:
        sentences: the output of :func:`sentence_measures`.
    """
    df = sentences.copy()
    df["context"] = df["context"].astype(str).map(GROUP_OF_CONTEXT)
    if df["context"].isna().any():
        raise ValueError("unknown context in the sentence measures: expected S1-S3, N or Npl")
    keys = list(NC_KEYS)
    wide = (df.groupby(keys + ["measure"], observed=True, sort=True)["value"].mean()
            .unstack("measure"))
    if set(SCALED) <= set(wide.columns):
        wide[RATIO] = ratio(wide["Sim_R|Syn"], wide["Sim_R|WordsSyn"])
    wide.columns = wide.columns.astype(str)
    return _long(wide[[m for m in MEASURES if m in wide.columns]])


def undefined_counts(cosines: pd.DataFrame, sentences: pd.DataFrame, ncs: pd.DataFrame
                     ) -> list[str]:
    """One line per kind of undefined value, with counts (empty when everything is defined)."""
    lines = []
    bad = cosines[cosines["cosine"].isna()]
    if len(bad):
        per = bad.groupby(["level", "probe"], observed=True).size()
        parts = ", ".join(f"{lv} {pr}: {n}" for (lv, pr), n in per.items())
        lines.append(f"{len(bad)} of {len(cosines)} cosines undefined (a span or sentence with "
                     f"no vector; left out of the means): {parts}")
    for m in SCALED:
        s = sentences[sentences["measure"] == m]
        n = int(s["value"].isna().sum())
        if n:
            lines.append(f"{m} undefined for {n} of {len(s)} sentences (Sim(rand) within {EPS} "
                         "of 1, or a probe without cosines); left out of the NC means")
    r = ncs[ncs["measure"] == RATIO]
    n = int(r["value"].isna().sum())
    if n:
        lines.append(f"{RATIO} undefined for {n} of {len(r)} NC values (|Sim_R|WordsSyn| < "
                     f"{EPS}, or an undefined Sim_R)")
    return lines
