"""Selecting and labelling the rows of a :class:`~ncprobe.ncimp.results.Results` that figures and
tables show.

Shared by :mod:`ncprobe.ncimp.figures` and :mod:`ncprobe.ncimp.tables` (no plotting here; the names
and labels are those of :mod:`ncprobe.schema`):

* a **condition** is language x context group: ``EN-Nat``, ``EN-Neut``, ``PT-Nat``,
  ``PT-Neut`` (and ``EN-Neut-pl`` / ``PT-Neut-pl`` for the plural neutral
  sentences, shown only on request; ``EN-NCS`` / ``PT-NCS`` for the NCS dataset's
  sentences, shown wherever the results hold them), labelled by
  :func:`ncprobe.schema.condition_label`; the results of a user's own pairs in another
  language have conditions of their own (``FR-Nat`` ...), shown after the NCIMP ones
  (:func:`conditions_in` orders them, :func:`split_condition` reads a label back);
* :func:`select` keeps one vector space (``raw`` by default), one layer view per
  model and language, the chosen levels and context groups, and adds the
  ``condition`` column;
* :func:`model_order` gives the models in the order the runs were joined in.

The layer view: a run of a transformer may hold several (``--layers`` with a
layer-wise analysis). Unless one is named, figures and tables use, for each
model and language, the view that comes first in the results: the one the run
listed first, which is the default combination (the last four layers) when the
run used the default. The view :data:`~ncprobe.schema.OWN_VIEW` (a sentence-transformers
model's own sentence embedding, sentence level only) is a view of the results but no layer
view: it is never the one taken by default while the model has another.
"""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from ..query import filter_rows
from ..schema import (
    CONDITIONS,
    CONTEXT_GROUP_LABELS,
    CONTEXT_GROUPS,
    DEFAULT_CONTEXT_GROUPS,
    OWN_VIEW,
    SHOWN_WHEN_PRESENT,
    condition_label,
    condition_parts,
)

__all__ = ["conditions_in", "contexts_of", "default_views", "layer_index", "layerwise_views",
           "model_order", "select", "split_condition"]


def split_condition(label: str) -> tuple[str, str]:
    """``(lang, context group)`` of any condition label that
    :func:`~ncprobe.schema.condition_label` writes, of the NCIMP languages or not:
    ``"EN-Nat" -> ("en", "nat")``, ``"FR-Neut-pl" -> ("fr", "neut-pl")``. A label whose end is
    no context group's label (a group printed as it is) splits at its first ``-``."""
    label = str(label)
    if label in CONDITIONS:
        return condition_parts(label)
    # the longest group label that ends the label: "-Neut-pl" before "-Neut"
    for group, shown in sorted(CONTEXT_GROUP_LABELS.items(), key=lambda kv: -len(kv[1])):
        if label.endswith("-" + shown) and len(label) > len(shown) + 1:
            return label[:-len(shown) - 1].lower(), group
    lang, _, group = label.partition("-")
    return lang.lower(), group


def _condition_key(label: str) -> tuple:
    """Sort key of a condition: those of :data:`~ncprobe.schema.CONDITIONS` first, in that
    order; then the others by language, then context group (the order of
    :data:`~ncprobe.schema.CONTEXT_GROUPS`; a group that is none of them after those)."""
    if label in CONDITIONS:
        return (0, CONDITIONS.index(label), "", 0, "")
    lang, group = split_condition(label)
    rank = list(CONTEXT_GROUPS).index(group) if group in CONTEXT_GROUPS else len(CONTEXT_GROUPS)
    return (1, 0, lang, rank, label)


def conditions_in(values: Iterable) -> list[str]:
    """The distinct conditions among ``values`` (labels such as ``EN-Nat``; missing values
    skipped), in the order figures and tables show them: the NCIMP languages' first
    (:data:`~ncprobe.schema.CONDITIONS` order), then those of other languages (a user's own
    pairs: ``FR-Nat`` ...) by language code, then context group."""
    found = {str(v) for v in values if v is not None and not (isinstance(v, float) and v != v)}
    return sorted(found, key=_condition_key)


def contexts_of(contexts: str | Iterable[str] | None) -> tuple[str, ...]:
    """Context groups from ``"nat,neut"``, a sequence, ``"all"`` or ``None``: the default two
    and ``ncs`` (:data:`~ncprobe.schema.SHOWN_WHEN_PRESENT`: shown where the results hold it)."""
    if contexts is None:
        return DEFAULT_CONTEXT_GROUPS + SHOWN_WHEN_PRESENT
    if isinstance(contexts, str):
        if contexts == "all":
            return tuple(CONTEXT_GROUPS)
        contexts = [c.strip() for c in contexts.split(",") if c.strip()]
    out = tuple(contexts)
    bad = [c for c in out if c not in CONTEXT_GROUPS]
    if bad:
        raise ValueError(f"unknown context group(s) {bad}: choose from {list(CONTEXT_GROUPS)}")
    return out


def model_order(*frames: pd.DataFrame) -> list[str]:
    """Models in the order they first appear (the order the runs were joined in)."""
    seen: dict[str, None] = {}
    for df in frames:
        if "model" in df.columns:
            for m in pd.unique(df["model"].astype(str)):  # in order of appearance
                seen.setdefault(m, None)
    return list(seen)


def _as_tuple(value) -> tuple | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def select(df: pd.DataFrame, *, space: str | None = "raw", level=None, contexts=None,
           measures=None, layers: str | dict | None = None) -> pd.DataFrame:
    """The rows of one Results table that a figure or table shows.

    Args:
        df: a Results table (any; filters apply where the column exists).
        space: ``raw`` or ``standardised``; ``None`` keeps both.
        level: ``sent``, ``nc``, a sequence of them, or ``None`` for all.
        contexts: context groups (see :func:`contexts_of`); ``nat`` and ``neut`` by default,
            and ``ncs`` where the table holds it.
        measures: measure names to keep (``None``: all).
        layers: the layer view (``"-"`` for static models, ``"21+22+23+24"`` ...),
            or a dict model -> view; ``None``: per model and language, the first
            view in the results that is a layer view (not
            :data:`~ncprobe.schema.OWN_VIEW`, unless the model has no other).

    Returns:
        A copy with string columns (``measure`` is no longer categorical) and, where
        the table has ``lang`` and ``context``, an ordered categorical ``condition``:
        its categories are every one of :data:`~ncprobe.schema.CONDITIONS`, then the
        conditions of other languages present (``FR-Nat`` ...), as :func:`conditions_in`
        orders them.
    """
    # the rows: filtered by the one engine of ncprobe.query, leniently (a filter
    # applies where the table has its column; a value not present keeps no row)
    out = filter_rows(df, {"space": space}, strict=False)
    if "layers" in out.columns and len(out):
        if layers is None:
            out = default_views(out, [c for c in ("model", "lang") if c in out.columns])
        elif isinstance(layers, dict):
            keep = [layers.get(m) == lv for m, lv in zip(out["model"], out["layers"], strict=True)]
            out = out[keep]
        else:
            out = filter_rows(out, {"layers": layers}, strict=False)
    out = filter_rows(out, {"level": _as_tuple(level)}, strict=False)
    # context groups in the per-NC tables only: cosines and sentences hold S1 ... Npl
    groups = "context" in out.columns and out["context"].isin(list(CONTEXT_GROUPS)).any()
    out = filter_rows(out, {"context": contexts_of(contexts) if groups else None,
                            "measure": _as_tuple(measures)}, strict=False)
    if "measure" in out.columns:
        out["measure"] = out["measure"].astype(str)
    for col in ("model", "lang", "level", "context", "cls", "nc", "layers"):
        if col in out.columns:
            out[col] = out[col].astype(object).where(out[col].notna(), None)
    if {"lang", "context"} <= set(out.columns):
        cond = [condition_label(lg, ctx)
                for lg, ctx in zip(out["lang"], out["context"], strict=True)]
        # every NCIMP condition is a category (present or not), then the others present
        others = [c for c in conditions_in(cond) if c not in CONDITIONS]
        out["condition"] = pd.Categorical(cond, categories=list(CONDITIONS) + others,
                                          ordered=True)
    return out.reset_index(drop=True)


def default_views(df: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """The rows of ``df`` (a table with a ``layers`` column) in the default layer view of
    each ``key`` group (model and language): the first view in the results that is a layer
    view, :data:`~ncprobe.schema.OWN_VIEW` only where the group has no other. What figures,
    tables and ``compare`` of two models use when no view is named."""
    own = (df["layers"].astype(str) == OWN_VIEW).to_numpy()
    ranked = pd.concat([df[~own], df[own]]) if own.any() else df
    first = ranked.drop_duplicates(key)[key + ["layers"]]
    return df.merge(first, on=key + ["layers"], how="inner")


def layer_index(view) -> int | None:
    """The layer of a single-layer view (``"12"`` -> 12; 0 is the embeddings), else None
    (``"-"`` of a static model, ``"9+10+11+12"`` of a combination)."""
    text = str(view)
    return int(text) if text.isdecimal() else None


def layerwise_measures(level: str, space: str, measures: str | Iterable[str] | None
                       ) -> list[str]:
    """The measures a layer-wise figure or table shows (default
    :data:`~ncprobe.schema.DISPLAY_MEASURES`), after checking ``level`` and ``space``."""
    from ..errors import UsageError
    from ..schema import DISPLAY_MEASURES, LEVELS, MEASURES, SPACES

    if level not in LEVELS:
        raise UsageError(f"level={level!r}: choose from {', '.join(LEVELS)}")
    if space not in SPACES:
        raise UsageError(f"space={space!r}: choose from {', '.join(SPACES)}")
    shown = list(DISPLAY_MEASURES if measures is None else
                 ([measures] if isinstance(measures, str) else measures))
    bad = [m for m in shown if m not in MEASURES]
    if bad or not shown:
        raise UsageError(f"measures: unknown {bad or shown}; choose from {', '.join(MEASURES)}")
    return shown


def layerwise_views(df: pd.DataFrame, *, space: str = "raw", level: str = "nc",
                    contexts=None) -> dict[tuple[str, str], list[str]]:
    """The layer-wise runs of a ``correlations`` table: per (model, language) holding at least
    two single-layer views with a rho at ``space`` and ``level`` (analysis ``nc``, the context
    groups ``contexts``), every view it holds there: the single layers in layer order, then the
    others (combinations) in the order of the results, and last
    :data:`~ncprobe.schema.OWN_VIEW` where the model has its own sentence embedding (the
    sentence level of a sentence-transformers model: not a layer)."""
    if df.empty or "layers" not in df.columns:
        return {}
    rows = df[(df["space"] == space) & (df["level"] == level) & (df["analysis"] == "nc")
              & df["context"].isin(contexts_of(contexts)) & df["rho"].notna()]
    out: dict[tuple[str, str], list[str]] = {}
    for model in model_order(rows):
        mine = rows[rows["model"].astype(str) == model]
        for lang in pd.unique(mine["lang"].astype(str)):
            views = [str(v) for v in pd.unique(mine.loc[mine["lang"].astype(str) == lang,
                                                         "layers"].astype(str))]
            single = sorted((v for v in views if layer_index(v) is not None), key=int)
            if len(single) >= 2:
                others = [v for v in views if layer_index(v) is None and v != OWN_VIEW]
                out[(model, lang)] = single + others + ([OWN_VIEW] if OWN_VIEW in views
                                                        else [])
    return out
