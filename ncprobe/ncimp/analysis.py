"""analyse(stimuli, vectors) -> Results: the pure part of a run, with no model code.

Each probe is paired with the original sentence of its context and compared by cosine, in
the raw vector space and, z-scored per language and context group, in the standardised one;
the measures and statistics (Spearman's rho with the gold score, bootstrap intervals, class
distributions, rogue dimensions) follow from that long table.

A layer-wise run is analysed one level and one layer view at a time: the vectors of that
view are read (:meth:`~ncprobe.embed.Embeddings.part`), turned into its cosines and rogue
dimensions, and let go before the next view is read, so memory holds one view's vectors
whatever the number of layers.

Each view is analysed at the levels it has (``view_levels``): a sentence-transformers
model's own sentence embedding (the view :data:`~ncprobe.schema.OWN_VIEW`, read as the
part ``own``) has the sentence level only, so every table holds it once and no NC-level row.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..data.stimuli import Stimuli
from ..embed import Embeddings
from ..errors import NcprobeError
from ..schema import (
    ALL_CLASSES,
    CLASSES,
    GOLD,
    GROUP_OF_CONTEXT,
    NATURALISTIC,
    OWN_VIEW,
    RESULT_COLUMNS,
    RUN_KEYS,
    SUBSTITUTION_MEASURES,
    TOKEN_SCORE_COLUMNS,
    Level,
)
from ..stats import ALPHA, bootstrap_mean, bootstrap_spearman, spearman
from .config import RunConfig
from .measures import cosine, nc_measures, sentence_measures, undefined_counts
from .results import Results
from .rogue import dimension_contributions, fit_standardiser, rank_dimensions, standardise


def analyse(stimuli: Stimuli, emb: Embeddings, cfg: RunConfig, *, model: str,
            view_names: Sequence[str], levels: Sequence[Level], meta: dict | None = None,
            view_levels: Sequence[Sequence[str]] | None = None) -> Results:
    """Cosines, measures and statistics from stimuli and their vectors (no model code).

    The vectors are read one level and layer view at a time (``emb.part``), never all
    views at once.

    Args:
        view_names: the ``layers`` label of each view, in the order of ``emb``'s views;
            :data:`~ncprobe.schema.OWN_VIEW` (last) is read as ``emb.part("own", 0)``.
        levels: the levels of the run.
        view_levels: per name of ``view_names``, the levels that view has (default: every
            level); a view is analysed at the levels of the run that it has.

    Raises:
        ValueError: ``view_levels`` is not one entry per view, or a view has none of the
            run's levels.
    """
    if view_levels is None:
        view_levels = [tuple(levels)] * len(view_names)
    if len(view_levels) != len(view_names):
        raise ValueError(f"view_levels has {len(view_levels)} entries for {len(view_names)} "
                         "views")
    if view_levels and not any(set(have) & set(levels) for have in view_levels):
        raise ValueError(f"no view has the level(s) {', '.join(levels)} of the run")
    meta = dict(meta or {"config": cfg.to_dict()})
    notes = list(meta.get("notes", []))
    probe_rows, orig_rows = _pair_rows(stimuli)
    ncs = ncs_table(stimuli)
    groups = _context_groups(stimuli)
    part_of = {"sent": "sent", "nc": "span"}  # the vectors of each level

    base = _probe_frame(stimuli, probe_rows, orig_rows, ncs)
    syn_pos = np.flatnonzero(base["probe"].to_numpy() == "syn")
    # Without --standardise, the standardised space serves only its rogue dimensions (the
    # originals) and the P_Syn check (the syn probes and their originals): only those rows
    # are z-scored, in a compact array (``sub``: its rows of the stimuli). Every value is
    # computed row by row, so it is the same as when every row is.
    sub = None
    if not cfg.standardise:
        sub = np.union1d(orig_rows, probe_rows[syn_pos])
        at = np.full(len(stimuli), -1)
        at[sub] = np.arange(len(sub))
        sub_groups = {k: (at[rows][at[rows] >= 0], at[originals])
                      for k, (rows, originals) in groups.items()}
        sub_syn = (at[probe_rows[syn_pos]], at[orig_rows[syn_pos]])
    parts, syn_check, rogue_rows = [], [], []
    for level in levels:
        for v, layers in enumerate(view_names):
            if level not in view_levels[v]:  # the model's own embedding: no NC level
                continue
            # the rogue table's columns, in this order
            keys = dict(model=model, lang=cfg.lang, space=None, layers=layers, level=level)
            # this view's vectors only, read now and let go at the end of the iteration
            vectors = (emb.part("own", 0) if layers == OWN_VIEW else
                       emb.part(part_of[level], v))
            raw = np.asarray(vectors, dtype=np.float64)
            del vectors
            raw_cos = _pair_cosines(raw, probe_rows, orig_rows)
            parts.append(base.assign(model=model, space="raw", layers=layers, level=level,
                                     cosine=raw_cos))
            rogue_rows += _rogue(raw, groups, cfg.top_k, {**keys, "space": "raw"})
            if sub is None:
                std = _standardised(raw, groups)
                std_cos = _pair_cosines(std, probe_rows, orig_rows)
                parts.append(base.assign(model=model, space="standardised", layers=layers,
                                         level=level, cosine=std_cos))
                rogue_rows += _rogue(std, groups, cfg.top_k, {**keys, "space": "standardised"})
            else:  # NaN except for the syn probes: only those are used
                std = _standardised(raw[sub], sub_groups)
                std_cos = np.full(len(probe_rows), np.nan)
                std_cos[syn_pos] = _pair_cosines(std, *sub_syn)
                rogue_rows += _rogue(std, sub_groups, cfg.top_k,
                                     {**keys, "space": "standardised"})
            syn_check += _syn_before_after(base, raw_cos, std_cos,
                                           dict(model=model, layers=layers, level=level))
            del raw, std
    cosines = pd.concat(parts, ignore_index=True)[list(RESULT_COLUMNS["cosines"])]
    sentences = sentence_measures(cosines)
    measures = nc_measures(sentences).merge(ncs[["lang", "nc", "cls", GOLD]],
                                            on=["lang", "nc"], how="left")
    notes += undefined_counts(cosines, sentences, measures)
    correlations = _correlations(measures, sentences, ncs, cfg)
    meta["notes"] = notes
    return Results(cosines=cosines, sentences=sentences, measures=measures,
                   correlations=correlations, distributions=_distributions(measures, cfg),
                   lexical_overlap=_lexical_overlap(sentences, base, cfg),
                   rogue=_table("rogue", rogue_rows),
                   standardisation=_table("standardisation", syn_check), ncs=ncs, meta=[meta])


def _table(name: str, rows: list[dict]) -> pd.DataFrame:
    """A results table from its rows, with the columns of the schema in their order."""
    return pd.DataFrame(rows, columns=list(RESULT_COLUMNS[name]))


def _pair_rows(stimuli: Stimuli) -> tuple[np.ndarray, np.ndarray]:
    """Row of every probe stimulus and row of the original of its (lang, nc, context)."""
    originals = {}
    for i, s in enumerate(stimuli):
        if s.probe == "original":
            originals[(s.lang, s.nc, s.context)] = i
    probe_rows, orig_rows = [], []
    for i, s in enumerate(stimuli):
        if s.probe == "original":
            continue
        j = originals.get((s.lang, s.nc, s.context))
        if j is None:
            raise NcprobeError(f"{s.source or s.nc}: probe {s.probe} of {s.nc!r} ({s.context}) has "
                               "no original sentence to compare with; every context needs its "
                               "original")
        probe_rows.append(i)
        orig_rows.append(j)
    if not probe_rows:
        raise NcprobeError("no probe stimuli: nothing to compare with the originals")
    return np.array(probe_rows), np.array(orig_rows)


def _pair_cosines(x: np.ndarray, rows: np.ndarray, other: np.ndarray) -> np.ndarray:
    """``cosine(x[rows], x[other])``, with the norm of each row of ``x`` computed once.

    An original is compared with every probe of its context (~17 pairs): norming each
    row once rather than each pair's copy is the same number (a row's norm does not
    depend on the rows around it) at a fraction of the cost.
    """
    used = np.union1d(rows, other)
    if len(used) == len(x):
        norms = np.linalg.norm(x, axis=-1)
    else:
        norms = np.empty(len(x))
        norms[used] = np.linalg.norm(x[used], axis=-1)
    out = np.empty(len(rows))
    # in chunks: two gathered copies of every pair's vectors would take 2 x 60 MB for a
    # 384-d model; each chunk's stays in the CPU cache
    for s in range(0, len(rows), _CHUNK):
        r, o = rows[s:s + _CHUNK], other[s:s + _CHUNK]
        out[s:s + _CHUNK] = cosine(x[r], x[o], norm_a=norms[r], norm_b=norms[o])
    return out


#: Pairs per chunk of :func:`_pair_cosines`.
_CHUNK = 2048


def _context_groups(stimuli: Stimuli) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """Per (lang, context group): all its rows, and the rows of its original sentences.

    Standardisation (mu, sigma) and rogue dimensions work on the originals of a group;
    z-scores apply to all its rows.
    """
    rows: dict[tuple[str, str], list[int]] = {}
    origs: dict[tuple[str, str], list[int]] = {}
    for i, s in enumerate(stimuli):
        key = (s.lang, GROUP_OF_CONTEXT[s.context])
        rows.setdefault(key, []).append(i)
        if s.probe == "original":
            origs.setdefault(key, []).append(i)
    return {k: (np.array(v), np.array(origs.get(k, []), dtype=int)) for k, v in rows.items()}


def _standardised(x: np.ndarray, groups) -> np.ndarray:
    """z-scores with mu and sigma of the original sentences of each (lang, context group)."""
    out = np.empty_like(x)
    for rows, originals in groups.values():
        ref = x[originals]
        if np.isnan(ref).any(axis=1).all():
            out[rows] = np.nan
            continue
        mu, sigma = fit_standardiser(ref)
        out[rows] = standardise(x[rows], mu, sigma)
    return out


def _rogue(x, groups, k: int, keys: dict) -> list[dict]:
    rows = []
    for (lang, group), (_, originals) in groups.items():
        contributions = dimension_contributions(x[originals])
        expected = float(np.sum(contributions))
        for rank, (dim, contrib, share) in enumerate(rank_dimensions(contributions, k), 1):
            rows.append({**keys, "lang": lang, "context": group, "rank": rank, "dim": dim,
                         "contribution": contrib, "share": share,
                         "expected_cosine": expected})
    return rows


def _syn_before_after(base: pd.DataFrame, raw_cos, std_cos, keys: dict) -> list[dict]:
    out = []
    syn = (base["probe"] == "syn").to_numpy()
    for (lang, group), idx in base[syn].groupby(["lang", "group"], sort=True).groups.items():
        pos = base.index.get_indexer(idx)
        c = spearman(raw_cos[pos], std_cos[pos])
        out.append({**keys, "lang": lang, "context": group, "n": c.n, "rho": c.rho, "p": c.p})
    return out


def ncs_table(stimuli: Stimuli) -> pd.DataFrame:
    """One row per NC, with ``syn_overlap``: its gold synonym shares a word with the NC.

    Words are compared lower-cased over every context: the NC as written in each
    original sentence against the synonym as written in that context's P_Syn.
    """
    nc_words: dict[tuple[str, str], set[str]] = {}
    syn_words: dict[tuple[str, str], set[str]] = {}
    for s in stimuli:
        if s.probe == "original":
            nc_words.setdefault((s.lang, s.nc), set()).update(s.target.lower().split())
        elif s.probe == "syn":
            syn_words.setdefault((s.lang, s.nc), set()).update(s.target.lower().split())
    df = stimuli.ncs_frame()
    present = {(s.lang, s.nc) for s in stimuli}
    df = df[[(lg, nc) in present for lg, nc in zip(df["lang"], df["nc"], strict=True)]].copy()
    df["gold"] = df["gold"].astype(float)
    df["syn_overlap"] = [bool(nc_words.get(k, set()) & syn_words.get(k, set()))
                         for k in zip(df["lang"], df["nc"], strict=True)]
    # the Stimuli's "comp" (Eq. 1) is "comp_token" in the results, where "comp" is a measure
    # (P_Comp) only; the gold of the run is the GOLD column everywhere downstream
    df = df.rename(columns={"comp": "comp_token", "gold": GOLD})
    return df.reset_index(drop=True)


def _probe_frame(stimuli: Stimuli, probe_rows, orig_rows, ncs: pd.DataFrame) -> pd.DataFrame:
    rows = [stimuli[i] for i in probe_rows]
    df = pd.DataFrame({
        "lang": [s.lang for s in rows], "context": [s.context for s in rows],
        "group": [GROUP_OF_CONTEXT[s.context] for s in rows],
        "nc": [s.nc for s in rows], "probe": [s.probe for s in rows],
        "variant": np.array([s.variant for s in rows], dtype=np.int16),
        "target": [s.target for s in rows],
        "length": np.array([len(stimuli[j].tokens) for j in orig_rows], dtype=np.int32)})
    return df.merge(ncs[["lang", "nc", "cls", GOLD]], on=["lang", "nc"], how="left")


def _correlations(measures, sentences, ncs, cfg: RunConfig) -> pd.DataFrame:
    keys = [*RUN_KEYS, "context", "measure"]
    rows = []
    flagged = ncs[ncs["syn_overlap"]]
    overlap = set(zip(flagged["lang"], flagged["nc"], strict=True))
    # numpy arrays and group positions instead of a sub-frame per group: a layer-wise run has
    # hundreds of groups, and pandas indexing per group cost more than the statistics
    value = measures["value"].to_numpy(dtype=np.float64)
    gold = measures[GOLD].to_numpy(dtype=np.float64)
    kept = ~pd.MultiIndex.from_frame(measures[["lang", "nc"]].astype(object)).isin(overlap)
    for key, idx in _groups(measures, keys):
        rows.append(_corr_row(key, keys, "nc", value[idx], gold[idx], cfg))
        keep = idx[kept[idx]]
        rows.append(_corr_row(key, keys, "overlap-filtered", value[keep], gold[keep], cfg))
    if cfg.per_sentence:
        token = ncs.melt(id_vars=["lang", "nc"], value_vars=list(TOKEN_SCORE_COLUMNS.values()),
                         var_name="context", value_name="token_score")
        token["context"] = token["context"].map({col: ctx for ctx, col
                                                 in TOKEN_SCORE_COLUMNS.items()})
        nat = sentences[sentences["context"].isin(NATURALISTIC)]
        nat = nat.merge(token, on=["lang", "nc", "context"], how="left")
        nat = nat.assign(context="nat")
        value = nat["value"].to_numpy(dtype=np.float64)
        gold = nat["token_score"].to_numpy(dtype=np.float64)
        for key, idx in _groups(nat, keys):
            rows.append(_corr_row(key, keys, "sentence", value[idx], gold[idx], cfg))
    return _table("correlations", rows)


def _groups(df: pd.DataFrame, keys: list[str]):
    """``(key, row positions)`` of each group, in the order of ``df.groupby(keys, sort=True)``.

    The positions of a group are ascending, as the rows of ``groupby``'s sub-frames are.
    """
    gb = df.groupby(keys, observed=True, sort=True)
    codes = gb.ngroup().to_numpy()  # group number of each row, in iteration order
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(gb.ngroups + 1))
    for i, key in enumerate(gb.size().index):
        yield (key if len(keys) > 1 else (key,)), order[bounds[i]:bounds[i + 1]]


def _corr_row(key, keys, analysis, values, gold, cfg: RunConfig) -> dict:
    values = np.asarray(values, dtype=np.float64)
    gold = np.asarray(gold, dtype=np.float64)
    c = spearman(values, gold)
    lo, hi = bootstrap_spearman(values, gold, n_boot=cfg.n_boot, seed=cfg.seed)
    return {**dict(zip(keys, key, strict=True)), "analysis": analysis,
            "n": c.n, "rho": c.rho, "p": c.p, "significant": bool(c.p <= ALPHA),
            "ci_low": lo, "ci_high": hi}


def _distributions(measures: pd.DataFrame, cfg: RunConfig) -> pd.DataFrame:
    keys = [*RUN_KEYS, "context", "measure"]
    rows = []
    value = measures["value"].to_numpy(dtype=np.float64)
    cls_of = measures["cls"].to_numpy(dtype=object)
    for key, idx in _groups(measures, keys):
        for cls in (ALL_CLASSES,) + CLASSES:
            v = value[idx] if cls == ALL_CLASSES else value[idx[cls_of[idx] == cls]]
            v = v[~np.isnan(v)]
            lo, hi = bootstrap_mean(v, n_boot=cfg.n_boot, seed=cfg.seed)
            rows.append({**dict(zip(keys, key, strict=True)), "cls": cls, "n": len(v),
                         "mean": float(v.mean()) if len(v) else np.nan,
                         "sd": float(v.std(ddof=1)) if len(v) > 1 else np.nan,
                         "ci_low": lo, "ci_high": hi})
    return _table("distributions", rows)


def _lexical_overlap(sentences: pd.DataFrame, base: pd.DataFrame, cfg: RunConfig
                     ) -> pd.DataFrame:
    """Spearman between naturalistic sentence length (words) and the sentence-level Sim."""
    nat = sentences[(sentences["level"] == "sent") & sentences["context"].isin(NATURALISTIC)
                    & sentences["measure"].isin(SUBSTITUTION_MEASURES)]
    lengths = base.drop_duplicates(["lang", "nc", "context"])[["lang", "nc", "context", "length"]]
    nat = nat.merge(lengths, on=["lang", "nc", "context"], how="left")
    rows = []
    keys = ["model", "lang", "space", "layers", "measure"]
    for key, g in nat.groupby(keys, observed=True, sort=True):
        c = spearman(g["length"].to_numpy(dtype=np.float64), g["value"].to_numpy())
        rows.append({**dict(zip(keys, key, strict=True)), "n": c.n, "rho": c.rho, "p": c.p,
                     "significant": bool(c.p <= ALPHA)})
    return _table("lexical_overlap", rows)
