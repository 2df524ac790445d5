"""NCIMP's concept: the compositionality class of each noun compound, for an eraser.

Each compound's original sentence in each naturalistic context (``S1``, ``S2``, ``S3``: the
stimuli :func:`ncprobe.data.load_stimuli` gives an NCIMP run, originals only) is a row: its
label the compound's gold class (NCTTI's ``CompScale``: ``I``, ``PC`` or ``C``, the ``cls`` of
:class:`~ncprobe.data.stimuli.NounCompound` and of NCIMP's tables; ``classes[label]`` names
it), its group the compound, its vectors the model's at the level ``nc`` (the compound's span)
and ``sent``, in every layer view (and the model's own sentence embedding, sentence level
only), encoded through the embedding cache as an NCIMP run encodes them
(:func:`ncprobe.embed.embed_cached`: the same items, the same entries) and read one view at a
time. A compound without a class is not a row (said in the notes).

There is **no held-out split**: NCIMP has one set of compounds, so an eraser is fitted on
folds of them by compound (a compound is never erased by an eraser fitted on itself); making
the folds is the amnesic probe's job (:func:`ncprobe.amnesic.erase.grouped_folds`).
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..concept import Concept, Side
from ..embed import LEVEL_PART
from ..errors import UsageError
from ..schema import CLASSES, LANGS, LEVELS, NATURALISTIC, OWN_VIEW

__all__ = ["OPTIONS", "ncimp_concept"]

#: The options the concept takes beyond the hook's, with their defaults (those of an NCIMP
#: run, :class:`~ncprobe.ncimp.config.RunConfig`).
OPTIONS: dict[str, Any] = {"device": None, "dtype": None, "store_dtype": "float32",
                           "batch_size": 32, "batch_tokens": None, "en_naturalistic": "auto",
                           "accept_modified_data": False}
#: The vectors of each level.


def ncimp_concept(model: str, lang: str, *, layers: str | None = None,
                  data_dir: str | Path | None = None, cache: bool = True,
                  cache_dir: str | Path | None = None, progress: bool = False,
                  **options: Any) -> Concept:
    """NCIMP's concept of ``lang`` with ``model``'s vectors (the module's doc says which rows
    and vectors).

    Args:
        layers: the transformer layer views (``--layers``).
        options: ``device``, ``dtype``, ``store_dtype``, ``batch_size``, ``batch_tokens``,
            ``en_naturalistic``, ``accept_modified_data`` (as an NCIMP run's).

    Raises:
        UsageError: an option the concept does not take, an unknown language, a layer the
            model lacks (before any encoding). DataError: a damaged data file.
    """
    from ..data import load_stimuli
    from ..embed import embed_cached, view_names
    from ..encoders import load_encoder
    from .config import RunConfig

    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise UsageError(f"the NCIMP concept takes no option {', '.join(unknown)}; its "
                         f"options: {', '.join(OPTIONS)} (and layers, data_dir, cache, "
                         "cache_dir, progress)")
    if lang not in LANGS:
        raise UsageError(f"unknown NCIMP language {lang!r}; the languages are "
                         f"{', '.join(LANGS)}")
    # an NCIMP run's own checks of the options
    cfg = RunConfig(model=model, lang=lang, contexts="nat", layers=layers,  # type: ignore[arg-type]
                    **{**OPTIONS, **options})
    # a layer the model lacks, a device not there: here, before any other work
    encoder = load_encoder(cfg.model, cfg.lang, layers=cfg.layers, device=cfg.device,
                           dtype=cfg.dtype, batch_tokens=cfg.batch_tokens)
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stim = load_stimuli(lang, contexts=NATURALISTIC, probes=(), data_dir=data_dir,
                            en_naturalistic=cfg.en_naturalistic,
                            accept_modified=cfg.accept_modified_data)
    notes += [str(w.message) for w in caught]
    stim = stim.filter(probe="original", context=NATURALISTIC)
    cls = [getattr(stim.ncs.get((s.lang, s.nc)), "cls", None) for s in stim]
    keep = np.array([c in CLASSES for c in cls], bool)
    lacking = sorted({s.nc for s, k in zip(stim, keep, strict=True) if not k})
    if lacking:
        notes.append(f"{lang}: {len(lacking)} NC(s) without a compositionality class are not "
                     f"rows of the concept: {', '.join(lacking)}")
    rows = np.flatnonzero(keep)
    train = Side(rows, np.array([CLASSES.index(str(cls[i])) for i in rows], np.int64),
                 np.array([stim[int(i)].nc for i in rows], dtype=object),
                 np.array([f"{stim[int(i)].context}:{stim[int(i)].nc}" for i in rows],
                          dtype=object))
    held_open = contextlib.ExitStack()  # the store's files, until the concept is closed
    emb = held_open.enter_context(embed_cached(
        stim, encoder, cache=cache, cache_dir=cache_dir, store_dtype=cfg.store_dtype,
        batch_size=cfg.batch_size, batch_tokens=cfg.batch_tokens, progress=progress)[0])
    try:
        # each view at the levels it has, as an NCIMP run reads them (the model's own
        # sentence embedding, last, the sentence level only)
        names = view_names(encoder)
        have = tuple(getattr(encoder, "levels", LEVELS))
        levels = getattr(encoder, "view_levels", None) or [have] * len(names)
        pairs = [(name, level) for name, on in zip(names, levels, strict=True)
                 for level in LEVELS if level in on and level in have
                 and (name != OWN_VIEW or emb.has_own)]
        index = {name: i for i, name in enumerate(names)}

        def read(view: str, level: str) -> np.ndarray:
            if view == OWN_VIEW:
                return np.asarray(emb.part("own", 0))
            return np.asarray(emb.part(LEVEL_PART[level], index[view]))

        return Concept(
            f"ncimp compositionality class ({lang})", CLASSES, pairs, read, train, None,
            close=held_open.close,
            meta={"probe": "ncimp", "model": model, "lang": lang, "layers": layers,
                  "contexts": list(NATURALISTIC), "fingerprint": encoder.fingerprint(),
                  "data_sources": dict(stim.sources), "modified_data": dict(stim.modified),
                  "options": {k: v for k, v in options.items() if v != OPTIONS.get(k)}},
            notes=list(dict.fromkeys([*stim.notes, *notes])))
    except BaseException:
        held_open.close()
        raise
