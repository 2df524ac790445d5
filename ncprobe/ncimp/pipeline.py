"""compute(config) -> Results: stimuli -> vectors -> cosines -> measures -> statistics.

One stimulus can be followed through: :func:`compute` loads the stimuli and the
encoder, :func:`ncprobe.embed.embed` gives one vector per stimulus, level and layer view
(read from the embedding cache one view at a time), and
:func:`ncprobe.ncimp.analysis.analyse` pairs each probe with the original of its context,
takes the cosine, and computes the measures and statistics from that long table.
:func:`run_dir` names the directory a run's results go to by default.
"""

from __future__ import annotations

import logging
import platform
import warnings
from dataclasses import MISSING, fields
from importlib import metadata
from pathlib import Path
from typing import Any

from .._io import cache_root, json_sha256, safe_name
from .._version import VERSION as __version__
from ..config import config_of, takes_config
from ..data.stimuli import Stimuli
from ..embed import embed, own_store, view_names
from ..encoders.base import has_own_sentence
from ..errors import UsageError
from ..schema import LEVELS, Level
from ..transform import META_KEY as TRANSFORM_KEY
from ..transform import VectorTransform, check_transform, in_forward
from ..transform import note as transform_note
from .analysis import analyse
from .config import RunConfig, is_level
from .results import Results

log = logging.getLogger(__name__)

_PACKAGES = ("numpy", "pandas", "pyarrow", "torch", "transformers", "sentence-transformers",
             "gensim", "simple-elmo-pytorch")


@takes_config(RunConfig)
def compute(config: RunConfig | None = None, /, *, stimuli: Stimuli | None = None, encoder=None,
            data_dir=None, cache: bool = True, cache_dir=None, progress: bool = True,
            allow_pickle: bool = False, allow_gensim_downloader: bool = False,
            transform: VectorTransform | None = None, **options: Any) -> Results:
    """Run one model on one language: every cosine, measure and statistic.

    The run options are the fields of :class:`~ncprobe.ncimp.config.RunConfig` (``model``,
    ``lang``, ``contexts``, ``levels``, ``layers``, ``n_boot``, ...: ``help(RunConfig)``),
    given either as a ``RunConfig`` or as keywords, with RunConfig's defaults, meanings and
    checks; ``help(compute)`` lists them in its signature. An option given as ``None`` takes
    its default.

    Args:
        config: a :class:`~ncprobe.ncimp.config.RunConfig`, instead of the keyword options (not
        both). stimuli: stimuli to use instead of the NCIMP files (e.g. ``load_pairs(...)``).
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
        transform: a :class:`~ncprobe.transform.VectorTransform` applied to each layer
            view's vectors as they are read (the rows' groups: their compounds); the cache
            keeps the plain vectors, and ``meta["transform"]`` records its fingerprint (the run
            id is not the plain run's). ``None``: the vectors as they are.
        **options: the fields of :class:`~ncprobe.ncimp.config.RunConfig`, by name.

    Raises:
        TypeError: an option that is no RunConfig field (naming the closest), or both
            ``config`` and options.
        ValueError: an option value RunConfig refuses.

    Example:
        >>> res = ncprobe.compute(model="glove-6b-50d", lang="en")   # doctest: +SKIP
        >>> print(res.summary())                                      # doctest: +SKIP
    """
    cfg = config_of(RunConfig, config, options, caller="compute")  # before any import
    transform_fp = None if transform is None else check_transform(transform)
    from ..cache.dtypes import store_loss_record
    from ..cache.shapes import vector_shape
    from ..cache.store import EmbeddingStore
    from ..data import check_coverage, load_stimuli
    from ..encoders import load_encoder
    from ..encoders.registry import check_options

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
                               allow_gensim_downloader=allow_gensim_downloader,
                               batch_tokens=cfg.batch_tokens)
    else:
        # a token budget for an encoder that does not tokenise would be recorded for nothing
        check_options(type(encoder), encoder.name, {"batch_tokens": cfg.batch_tokens})
        given = {k: v for k, v in (("layers", cfg.layers), ("device", cfg.device),
                                   ("dtype", cfg.dtype)) if v is not None}
        if given:  # they would be recorded without having had any effect
            raise UsageError(f"{', '.join(f'{k}={v!r}' for k, v in given.items())} has no "
                             "effect with encoder=...: pass it to load_encoder instead")
    # a transform acting in the forward pass: the encoder applies it (its fingerprint, and so
    # the cache entry, names it); refused for a model without one, before any work
    encoder = in_forward(encoder, transform)
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
    else:
        other = sorted({s.lang for s in stimuli} - {cfg.lang})
        if other:  # e.g. French pairs: run.json's config.lang is the model's language only
            notes.append(f"stimuli in {', '.join(other)}: the model was loaded for language "
                         f"{cfg.lang!r} (config lang: the model variant; the tables' lang "
                         "column: the stimuli's language)")
    # never compute on incomplete input: every NC needs every context, probe and gold score
    notes += stimuli.notes + check_coverage(stimuli, **asked)
    run_levels = _levels(cfg, encoder)
    store = EmbeddingStore(encoder.fingerprint(), root=cache_root(cache_dir),
                           shape=vector_shape(encoder), dtype=cfg.store_dtype) if cache else None
    # a sentence-transformers model's own sentence embedding: an entry of its own, written
    # from the same forward passes as the layer views
    own = own_store(store, encoder) if store is not None and has_own_sentence(encoder) else None
    # read one layer view at a time by analyse(), from the store's files (held open until
    # the analysis is done)
    emb = embed(stimuli, encoder, store=store, batch_size=cfg.batch_size,
                batch_tokens=cfg.batch_tokens, progress=progress,
                store_dtype=cfg.store_dtype, own=own)
    log.info("%d stimuli, %d unique items, %d encoded now", len(stimuli), emb.unique, emb.encoded)
    # every table names the encoder that ran (encoder.name). How this computation went (items
    # encoded now, cache shards found unusable: RUN_LOG_KEYS) is kept in memory only, never
    # written or hashed: the same computation gives the same run id, cold cache or warm.
    meta = {"config": named or {**cfg.to_dict(), "model": encoder.name},
            "model_name": encoder.name,
            "fingerprint": encoder.fingerprint(), "versions": _versions(),
            "data_sources": dict(stimuli.sources), "modified_data": dict(stimuli.modified),
            "unique": emb.unique, "notes": notes,
            "encoded": emb.encoded,
            "cache_problems": [*(store.problems if store is not None else []),
                               *(own.problems if own is not None else [])]}
    loss, said = store_loss_record(cfg.store_dtype, emb.store_loss)  # what half precision did
    meta.update(loss)
    notes += said
    if transform is not None and transform_fp is not None:  # a plain run's: as they were
        meta[TRANSFORM_KEY] = transform_fp
        notes.append(transform_note(transform_fp))
        emb = emb.transformed(transform, view_names(encoder), [s.nc for s in stimuli])
    with emb:
        # view_levels: a sentence-transformers model's own embedding has the sentence level
        # only; an encoder that does not say has its levels in every view
        return analyse(stimuli, emb, cfg, model=encoder.name, view_names=view_names(encoder),
                       levels=run_levels, meta=meta,
                       view_levels=getattr(encoder, "view_levels", None))


def _levels(cfg: RunConfig, encoder) -> tuple[Level, ...]:
    have = tuple(getattr(encoder, "levels", LEVELS))
    if cfg.levels is None:
        return tuple(lv for lv in LEVELS if is_level(lv) and lv in have)
    missing = [lv for lv in cfg.levels if lv not in have]
    if missing:
        raise UsageError(f"model {encoder.name!r} gives no {'/'.join(missing)}-level vectors "
                         f"(it has: {', '.join(have)}); choose --level {','.join(have)}")
    return tuple(cfg.levels)


def _versions() -> dict:
    out = {"ncprobe": __version__, "python": platform.python_version()}
    for pkg in _PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


#: Short names of RunConfig fields in default directory names (others: the field name).
_DIR_NAMES = {"contexts": "ctx", "levels": "level", "standardise": "std", "n_boot": "boot",
              "top_k": "top", "per_sentence": "per-sentence", "en_naturalistic": "en-nat"}


def run_dir(results_dir, model: str, lang: str, config: RunConfig | None = None) -> Path:
    """Where a run's results go by default: ``<results_dir>/<model>-<lang>[-<options>]``.

    ``model`` is named by its last path part. Every option of ``config`` that changes
    the results and differs from its default is appended in field order, as
    ``name_value`` (``True`` flags as their name alone), e.g.
    ``minilm-en-layers_all-std-boot_0``; all-default options give ``<model>-<lang>``.
    Options that do not change results (:data:`ncprobe.results.store.NOT_IDENTITY`: batch size,
    device) are left out. Characters other than letters, digits and ``. _ + , = -`` become
    ``_``; when that happens, or the name grows past 120 characters, a short hash of the
    options is appended so that different options never share a directory.
    """
    from ..results.store import NOT_IDENTITY

    slug = safe_name(model.rstrip("/").split("/")[-1]) or "model"
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
        safe = safe_name(text, extra="+,=")
        lossy |= safe != text
        parts.append(f"{label}_{safe}")
    if parts:
        name += "-" + "-".join(parts)
    if lossy or len(name) > 120:
        name = f"{name[:110]}-h{json_sha256(changed)[:8]}"
    return Path(results_dir) / name


