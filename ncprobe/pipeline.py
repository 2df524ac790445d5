"""compute(config) -> Results: stimuli -> vectors -> cosines -> measures -> statistics.

One stimulus can be followed through: :func:`compute` loads the stimuli and the
encoder, :func:`ncprobe.embed.embed` gives one vector per stimulus and level,
:func:`analyse` pairs each probe with the original of its context and takes
the cosine, and the measures and statistics are computed from that long table.
"""

from __future__ import annotations

import logging
import platform
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ._version import VERSION as __version__
from .config import LEVELS, RunConfig
from .data.stimuli import CLASSES, NATURALISTIC, Stimuli
from .embed import Embeddings, embed
from .encoders.registry import hub_unavailable as _hub_unavailable  # used by reproduce
from .errors import NcprobeError, UsageError
from .measures import (CONTEXT_GROUPS, PROBE_MEASURES, RUN_KEYS, cosine, nc_measures,
                       sentence_measures, undefined_counts)
from .results import Results
from .rogue import dimension_contributions, fit_standardiser, rank_dimensions, standardise
from .stats import ALPHA, bootstrap_mean, bootstrap_spearman, spearman

log = logging.getLogger(__name__)

_PACKAGES = ("numpy", "pandas", "pyarrow", "torch", "transformers", "sentence-transformers",
             "gensim", "simple-elmo-pytorch")


def compute(config: RunConfig | None = None, *, stimuli: Stimuli | None = None, encoder=None,
            data_dir=None, cache: bool = True, cache_dir=None, progress: bool = True,
            allow_pickle: bool = False, allow_gensim_downloader: bool = False,
            **options) -> Results:
    """Run one model on one language: every cosine, measure and statistic.

    Args:
        config: a :class:`~ncprobe.config.RunConfig`; or give its fields as keyword
            ``options`` (``model=``, ``lang=``, ``contexts=`` ...).
        stimuli: stimuli to use instead of the NCIMP files (e.g. ``load_pairs(...)``).
        encoder: an encoder object to use instead of loading ``config.model``; every table
            and ``meta["config"]["model"]`` then name ``encoder.name``. The config's
            ``layers``, ``device`` and ``dtype`` must then be unset (they apply when
            ncprobe loads the model: pass them to ``load_encoder``).
        data_dir: the NCIMP data directory (default: ``$NCPROBE_DATA``, then the cache).
        cache: keep vectors in the embedding cache (``False``: encode everything, store nothing).
        cache_dir: the cache root (default: ``$NCPROBE_CACHE``, then the user cache).
        progress: show a progress bar while encoding.
        allow_pickle, allow_gensim_downloader: passed to
            :func:`~ncprobe.encoders.load_encoder` (gensim ``.kv`` pickles; gensim-data).

    Example:
        >>> res = ncprobe.compute(model="glove-6b-50d", lang="en")   # doctest: +SKIP
        >>> print(res.summary())                                      # doctest: +SKIP
    """
    from .cache import EmbeddingStore, cache_root
    from .data import check_coverage, load_stimuli
    from .encoders import load_encoder

    cfg = config if config is not None else RunConfig(**options)
    if config is not None and options:
        raise TypeError("give either a RunConfig or keyword options, not both")
    notes: list[str] = []
    # the config names what the user asked for (e.g. a path: run identity compares it); when
    # an encoder object is given, the encoder's own name is the only name there is
    named = cfg.to_dict() if encoder is None else None
    if encoder is None:
        # first: a model that cannot be had here (unknown, not downloaded, a layer it lacks, a
        # device not there) fails before any other work; transformer weights load on the
        # first encode, so a run whose vectors are all cached never loads them
        encoder = load_encoder(cfg.model, cfg.lang, layers=cfg.layers, device=cfg.device,
                               dtype=cfg.dtype, allow_pickle=allow_pickle,
                               allow_gensim_downloader=allow_gensim_downloader)
    else:
        given = {k: v for k, v in (("layers", cfg.layers), ("device", cfg.device),
                                   ("dtype", cfg.dtype)) if v is not None}
        if given:  # they would be recorded without having had any effect
            raise UsageError(f"{', '.join(f'{k}={v!r}' for k, v in given.items())} has no "
                             "effect with encoder=...: pass it to load_encoder instead")
    asked: dict = {}  # a user's own stimuli: coverage of what they hold
    if stimuli is None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            stimuli = load_stimuli(cfg.lang, contexts=cfg.contexts, wordssyn=cfg.wordssyn,
                                   gold=cfg.gold, data_dir=data_dir,
                                   en_naturalistic=cfg.en_naturalistic,
                                   accept_modified=cfg.accept_modified_data)
        for w in caught:
            notes.append(str(w.message))
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        asked = {"contexts": cfg.contexts, "probes": "all"}  # NCIMP: all the config asks for
    # never compute on incomplete input: every NC needs every context, probe and gold score
    notes += stimuli.notes + check_coverage(stimuli, **asked)
    levels = _levels(cfg, encoder)
    store = EmbeddingStore(encoder.fingerprint(), root=cache_root(cache_dir)) if cache else None
    emb = embed(stimuli, encoder, store=store, batch_size=cfg.batch_size, progress=progress)
    notes += store.problems if store is not None else []  # cache shards found corrupt
    log.info("%d stimuli, %d unique items, %d encoded now", len(stimuli), emb.unique, emb.encoded)
    # every table names the encoder that ran (encoder.name)
    meta = {"config": named or {**cfg.to_dict(), "model": encoder.name},
            "model_name": encoder.name,
            "fingerprint": encoder.fingerprint(), "versions": _versions(),
            "data_sources": dict(stimuli.sources), "modified_data": dict(stimuli.modified),
            "encoded": emb.encoded, "unique": emb.unique,
            "notes": notes}
    return analyse(stimuli, emb, cfg, model=encoder.name, view_names=_view_names(encoder),
                   levels=levels, meta=meta)


def _levels(cfg: RunConfig, encoder) -> tuple[str, ...]:
    have = tuple(getattr(encoder, "levels", LEVELS))
    if cfg.levels is None:
        return tuple(lv for lv in LEVELS if lv in have)
    missing = [lv for lv in cfg.levels if lv not in have]
    if missing:
        raise UsageError(f"model {encoder.name!r} gives no {'/'.join(missing)}-level vectors "
                         f"(it has: {', '.join(have)}); choose --level {','.join(have)}")
    return tuple(cfg.levels)


def _view_names(encoder) -> list[str]:
    named = getattr(encoder, "view_names", None)
    if named:
        return list(named)
    return ["+".join(str(i) for i in v) for v in encoder.views]


def _versions() -> dict:
    out = {"ncprobe": __version__, "python": platform.python_version()}
    for pkg in _PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def analyse(stimuli: Stimuli, emb: Embeddings, cfg: RunConfig, *, model: str,
            view_names: Sequence[str], levels: Sequence[str], meta: dict | None = None
            ) -> Results:
    """Cosines, measures and statistics from stimuli and their vectors (no model code)."""
    meta = dict(meta or {"config": cfg.to_dict()})
    notes = list(meta.get("notes", []))
    probe_rows, orig_rows = _pair_rows(stimuli)
    ncs = ncs_table(stimuli)
    groups = _context_groups(stimuli)
    vectors = {"sent": emb.sent, "nc": emb.span}

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
            # the rogue table's columns, in this order
            keys = dict(model=model, lang=cfg.lang, space=None, layers=layers, level=level)
            raw = np.asarray(vectors[level][:, v, :], dtype=np.float64)
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
    cosines = pd.concat(parts, ignore_index=True)[
        RUN_KEYS + ["context", "nc", "cls", "comp", "probe", "variant", "target", "length",
                    "cosine"]]
    sentences = sentence_measures(cosines)
    measures = nc_measures(sentences).merge(ncs[["lang", "nc", "cls", "comp"]],
                                            on=["lang", "nc"], how="left")
    notes += undefined_counts(cosines, sentences, measures)
    correlations = _correlations(measures, sentences, ncs, cfg)
    meta["notes"] = notes
    return Results(cosines=cosines, sentences=sentences, measures=measures,
                   correlations=correlations, distributions=_distributions(measures, cfg),
                   lexical_overlap=_lexical_overlap(sentences, base, cfg),
                   rogue=pd.DataFrame(rogue_rows), standardisation=pd.DataFrame(syn_check),
                   ncs=ncs, meta=[meta])


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
        key = (s.lang, CONTEXT_GROUPS[s.context])
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
    df = df[[(lg, nc) in present for lg, nc in zip(df["lang"], df["nc"])]].copy()
    df["gold"] = df["gold"].astype(float)
    df["syn_overlap"] = [bool(nc_words.get(k, set()) & syn_words.get(k, set()))
                         for k in zip(df["lang"], df["nc"])]
    # the gold of the run is the "comp" column everywhere downstream
    df = df.rename(columns={"comp": "comp_token"}).rename(columns={"gold": "comp"})
    return df.reset_index(drop=True)


def _probe_frame(stimuli: Stimuli, probe_rows, orig_rows, ncs: pd.DataFrame) -> pd.DataFrame:
    rows = [stimuli[i] for i in probe_rows]
    df = pd.DataFrame({
        "lang": [s.lang for s in rows], "context": [s.context for s in rows],
        "group": [CONTEXT_GROUPS[s.context] for s in rows],
        "nc": [s.nc for s in rows], "probe": [s.probe for s in rows],
        "variant": np.array([s.variant for s in rows], dtype=np.int16),
        "target": [s.target for s in rows],
        "length": np.array([len(stimuli[j].tokens) for j in orig_rows], dtype=np.int32)})
    return df.merge(ncs[["lang", "nc", "cls", "comp"]], on=["lang", "nc"], how="left")


def _correlations(measures, sentences, ncs, cfg: RunConfig) -> pd.DataFrame:
    keys = RUN_KEYS + ["context", "measure"]
    rows = []
    overlap = set(zip(ncs.loc[ncs["syn_overlap"], "lang"], ncs.loc[ncs["syn_overlap"], "nc"]))
    # numpy arrays and group positions instead of a sub-frame per group: a layer-wise run has
    # hundreds of groups, and pandas indexing per group cost more than the statistics
    value = measures["value"].to_numpy(dtype=np.float64)
    gold = measures["comp"].to_numpy(dtype=np.float64)
    kept = ~pd.MultiIndex.from_frame(measures[["lang", "nc"]].astype(object)).isin(overlap)
    for key, idx in _groups(measures, keys):
        rows.append(_corr_row(key, keys, "nc", value[idx], gold[idx], cfg))
        keep = idx[kept[idx]]
        rows.append(_corr_row(key, keys, "overlap-filtered", value[keep], gold[keep], cfg))
    if cfg.per_sentence:
        token = ncs.melt(id_vars=["lang", "nc"], value_vars=["s1", "s2", "s3"],
                         var_name="context", value_name="token_score")
        token["context"] = token["context"].str.upper()
        nat = sentences[sentences["context"].isin(NATURALISTIC)]
        nat = nat.merge(token, on=["lang", "nc", "context"], how="left")
        nat = nat.assign(context="nat")
        value = nat["value"].to_numpy(dtype=np.float64)
        gold = nat["token_score"].to_numpy(dtype=np.float64)
        for key, idx in _groups(nat, keys):
            rows.append(_corr_row(key, keys, "sentence", value[idx], gold[idx], cfg))
    return pd.DataFrame(rows)


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
    return {**dict(zip(keys, key)), "analysis": analysis, "n": c.n, "rho": c.rho, "p": c.p,
            "significant": bool(c.p <= ALPHA), "ci_low": lo, "ci_high": hi}


def _distributions(measures: pd.DataFrame, cfg: RunConfig) -> pd.DataFrame:
    keys = RUN_KEYS + ["context", "measure"]
    rows = []
    value = measures["value"].to_numpy(dtype=np.float64)
    cls_of = measures["cls"].to_numpy(dtype=object)
    for key, idx in _groups(measures, keys):
        for cls in ("all",) + CLASSES:
            v = value[idx] if cls == "all" else value[idx[cls_of[idx] == cls]]
            v = v[~np.isnan(v)]
            lo, hi = bootstrap_mean(v, n_boot=cfg.n_boot, seed=cfg.seed)
            rows.append({**dict(zip(keys, key)), "cls": cls, "n": len(v),
                         "mean": float(v.mean()) if len(v) else np.nan,
                         "sd": float(v.std(ddof=1)) if len(v) > 1 else np.nan,
                         "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


def _lexical_overlap(sentences: pd.DataFrame, base: pd.DataFrame, cfg: RunConfig
                     ) -> pd.DataFrame:
    """Spearman between the length (words) of naturalistic sentences and their sentence-level Sim."""
    nat = sentences[(sentences["level"] == "sent") & sentences["context"].isin(NATURALISTIC)
                    & sentences["measure"].isin(PROBE_MEASURES)]
    lengths = base.drop_duplicates(["lang", "nc", "context"])[["lang", "nc", "context", "length"]]
    nat = nat.merge(lengths, on=["lang", "nc", "context"], how="left")
    rows = []
    keys = ["model", "lang", "space", "layers", "measure"]
    for key, g in nat.groupby(keys, observed=True, sort=True):
        c = spearman(g["length"].to_numpy(dtype=np.float64), g["value"].to_numpy())
        rows.append({**dict(zip(keys, key)), "n": c.n, "rho": c.rho, "p": c.p,
                     "significant": bool(c.p <= ALPHA)})
    return pd.DataFrame(rows, columns=keys + ["n", "rho", "p", "significant"])


#: The models of the study (SPEC §5) and the two that run offline, in the order they are reported.
OFFLINE_MODELS = ("glove-6b-50d", "minilm")
STUDY_MODELS = ("word2vec", "glove", "elmo", "sbert-ml", "bert-large", "bert-ml",
                "distilbert-ml", "llama2", "openai")


@dataclass
class Reproduction:
    """What :func:`reproduce` did: the joined results, the runs made, and the runs skipped."""

    results: Results | None
    ran: list[tuple[str, str, str]]       # (model, lang, results directory)
    skipped: list[tuple[str, str, str]]   # (model, lang, why)


def reproduce(models: Sequence[str] | None = None, langs: Sequence[str] = ("en", "pt"), *,
              results_dir="results", data_dir=None, cache: bool = True, cache_dir=None,
              progress: bool = True, on_skip=None, overwrite: bool = False,
              **options) -> Reproduction:
    """``compute`` for every model × language that can run here; skip the others with a reason.

    A model is skipped (never silently: ``on_skip(model, lang, why)`` is called and the reason
    kept in :attr:`Reproduction.skipped`) when it has no variant for the language, or when it
    is not available here: weights that must be downloaded by hand, a missing optional
    package, no GPU, no API key, or a hub model that is neither cached locally nor reachable.
    Any other error stops the run.

    Args:
        models: aliases, ids or paths (default: the offline models, then the study's).
        langs: languages.
        results_dir: each run's results go to :func:`run_dir` ``(results_dir, model, lang,
            config)``: ``<results_dir>/<model>-<lang>``, plus the options that differ from
            the defaults.
        overwrite: replace results directories that hold a different run (see
            :meth:`~ncprobe.results.Results.to_parquet`); without it, such a directory stops
            the reproduction before any model runs.
        options: :class:`~ncprobe.config.RunConfig` fields shared by every run (``contexts``,
            ``n_boot``, ``seed`` ...).
    """
    from .encoders import MODELS
    from .errors import ModelUnavailableError
    from .results import check_target

    models = list(models) if models else list(OFFLINE_MODELS + STUDY_MODELS)
    ran, skipped, parts = [], [], []
    # refuse to replace another run before spending any time computing
    for model in models:
        for lang in langs:
            spec = MODELS.get(model)
            if spec is None or lang in spec.ids or "*" in spec.ids:
                cfg = RunConfig(model=model, lang=lang, **options)
                check_target(run_dir(results_dir, model, lang, cfg), cfg.to_dict(),
                             overwrite=overwrite)

    def skip(model, lang, why):
        skipped.append((model, lang, why))
        if on_skip is not None:
            on_skip(model, lang, why)

    for model in models:
        for lang in langs:
            spec = MODELS.get(model)
            if spec is not None and lang not in spec.ids and "*" not in spec.ids:
                skip(model, lang, f"no {lang} variant (covers {', '.join(spec.ids)})")
                continue
            why = _hub_unavailable(spec.model_id(lang) if spec else model, spec)
            if why:
                skip(model, lang, why)
                continue
            try:
                res = compute(RunConfig(model=model, lang=lang, **options), data_dir=data_dir,
                              cache=cache, cache_dir=cache_dir, progress=progress)
            except ModelUnavailableError as e:
                skip(model, lang, str(e))
                continue
            out = res.to_parquet(run_dir(results_dir, model, lang, RunConfig(
                model=model, lang=lang, **options)), overwrite=overwrite)
            ran.append((model, lang, str(out)))
            parts.append(res)
    return Reproduction(Results.concat(parts) if parts else None, ran, skipped)


#: Short names of RunConfig fields in default directory names (others: the field name).
_DIR_NAMES = {"contexts": "ctx", "levels": "level", "standardise": "std", "n_boot": "boot",
              "top_k": "top", "per_sentence": "per-sentence", "en_naturalistic": "en-nat"}


def run_dir(results_dir, model: str, lang: str, config: RunConfig | None = None) -> Path:
    """Where a run's results go by default: ``<results_dir>/<model>-<lang>[-<options>]``.

    ``model`` is named by its last path part. Every option of ``config`` that changes
    the results and differs from its default is appended in field order, as
    ``name_value`` (``True`` flags as their name alone), e.g.
    ``minilm-en-layers_all-std-boot_0``; all-default options give ``<model>-<lang>``.
    Options that do not change results (:data:`ncprobe.results.NOT_IDENTITY`: batch size,
    device) are left out. Characters other than letters, digits and ``. _ + , = -`` become
    ``_``; when that happens, or the name grows past 120 characters, a short hash of the
    options is appended so that different options never share a directory.
    """
    import hashlib
    import json
    import re
    from dataclasses import MISSING, fields

    from .results import NOT_IDENTITY

    def clean(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._+,=-]+", "_", text)

    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model.rstrip("/").split("/")[-1]) or "model"
    name = f"{slug}-{lang}"
    if config is None:
        return Path(results_dir) / name
    parts, changed, lossy = [], {}, False
    for f in fields(RunConfig):
        if f.name in ("model", "lang") or f.name in NOT_IDENTITY:
            continue
        value = getattr(config, f.name)
        default = f.default if f.default is not MISSING else None
        if value == default:
            continue
        changed[f.name] = value
        label = _DIR_NAMES.get(f.name, f.name.replace("_", "-"))
        if value is True:
            parts.append(label)
            continue
        text = ",".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)
        safe = clean(text)
        lossy |= safe != text
        parts.append(f"{label}_{safe}")
    if parts:
        name += "-" + "-".join(parts)
    if lossy or len(name) > 120:
        digest = hashlib.sha256(json.dumps(changed, sort_keys=True, default=str).encode())
        name = f"{name[:110]}-h{digest.hexdigest()[:8]}"
    return Path(results_dir) / name


