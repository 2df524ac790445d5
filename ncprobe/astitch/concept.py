"""AStitch's concept: the idiomatic or literal use of each expression, for an eraser.

Each labelled use (:func:`ncprobe.data.astitch.load_astitch`) is a row: its label (0
idiomatic, 1 not idiomatic: the files' labels, so ``classes[label]`` names it), its group the
expression (an idiom's uses are kept together by folds), its vectors the model's at the level
``nc`` (the expression's span) and ``sent`` (the sentence), in the target sentence alone (the
context ``excluded``, as the AStitch run reads its linear probe's span and sentence features).
They are the AStitch run's own vectors: the same stimuli (:func:`~.probe.stimuli`, without the
paraphrases), cut to the model's token limit as the run cuts them (:func:`~.probe.fit_context`),
encoded through the embedding cache (:func:`~.probe.cached_vectors`) and read one view at a
time (:func:`~.probe.layer_views`, :func:`~.probe.view_vectors`).

**The training rows are a setting's training split, ``few-shot`` by default**
(``train_few_shot``): its expressions are those of dev and test, one or a few uses each
(``docs/guide`` and the data's PROTOCOL), so an eraser fitted on them is fitted on the
expressions it is later applied to in AStitch's dev and test rows, and the guarantee checked
on dev is about new uses of the same expressions, not about other expressions (zero-shot's
expressions never occur in dev or test: a held-out check there would mix a change of the
expressions with the erasure). **The held-out rows are dev.** Test is left alone: it is what
an amnesic run measures AStitch on.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import numpy as np

from ..concept import Concept, Side
from ..errors import UsageError
from ..schema import OWN_VIEW
from . import IDIOMATIC, LANGS, LITERAL, SETTINGS

__all__ = ["LABEL_NAMES", "DEFAULT_SETTING", "OPTIONS", "astitch_concept", "row_ids"]

#: The concept's classes, in the order of the files' labels (0 idiomatic, 1 not idiomatic).
LABEL_NAMES: tuple[str, ...] = tuple(name for _, name in sorted(
    ((IDIOMATIC, "idiomatic"), (LITERAL, "not idiomatic"))))
#: The setting whose training split the concept's training rows are.
DEFAULT_SETTING = "few-shot"
#: The split of the held-out rows.
HELD = "dev"
#: The context the vectors are read in: the target sentence alone.
CONTEXT = "excluded"
#: The options the concept takes beyond the hook's, with their defaults (those of the
#: AStitch run, :class:`~ncprobe.astitch.config.AStitchConfig`, and ``setting``).
OPTIONS: dict[str, Any] = {"setting": DEFAULT_SETTING, "device": None, "dtype": None,
                           "store_dtype": "float32", "batch_size": 32,
                           "accept_modified_data": False}


def row_ids(records: Any) -> np.ndarray:
    """Each record's id as the concept names its rows (``<split>:<row>``,
    :attr:`~ncprobe.concept.Side.ids`): what a target's training rows are matched on
    (:meth:`~ncprobe.concept.FittedOn.shared`)."""
    return np.array([f"{r.split}:{r.row}" for r in records], dtype=object)


def astitch_concept(model: str, lang: str, *, layers: str | None = None,
                    data_dir: str | Path | None = None, cache: bool = True,
                    cache_dir: str | Path | None = None, progress: bool = False,
                    **options: Any) -> Concept:
    """AStitch's concept of ``lang`` with ``model``'s vectors (the module's doc says which
    rows and vectors).

    Args:
        layers: the transformer layer views (``--layers``).
        options: ``setting`` (whose training split is trained on: ``few-shot``, default;
            ``zero-shot``, ``one-shot``, ``one-shot-semeval``), ``device``, ``dtype``,
            ``store_dtype``, ``batch_size``, ``accept_modified_data`` (as the AStitch run's).

    Raises:
        UsageError: an option the concept does not take, an unknown setting or language, a
            layer the model lacks (before any encoding). DataError: a damaged data file, or
            a training or dev split without both labels.
    """
    from ..data.astitch import load_astitch
    from .config import AStitchConfig
    from .probe import (
        cached_vectors,
        check_split_labels,
        fit_context,
        layer_views,
        model_encoder,
        split_rows,
        stimuli,
        training_rows,
        view_vectors,
    )

    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise UsageError(f"the AStitch concept takes no option {', '.join(unknown)}; its "
                         f"options: {', '.join(OPTIONS)} (and layers, data_dir, cache, "
                         "cache_dir, progress)")
    if lang not in LANGS:
        raise UsageError(f"unknown AStitch language {lang!r}; the languages are "
                         f"{', '.join(LANGS)}")
    opts = {**OPTIONS, **options}
    setting = opts.pop("setting")
    if setting not in SETTINGS:
        raise UsageError(f"setting={setting!r}: the AStitch concept trains on one setting's "
                         f"training split; give one of {', '.join(SETTINGS)}")
    trained = SETTINGS[setting]
    # the run's own checks of the model, language and options; the static control is not read
    cfg = AStitchConfig(models=(model,), langs=(lang,), layers=layers,
                        splits=(*trained, HELD, "test"), contexts=(CONTEXT,), static="none",
                        **opts)
    encoder, said = model_encoder(model, lang, cfg)  # a layer the model lacks: here
    data = load_astitch(lang, data_dir, accept_modified=cfg.accept_modified_data)
    check_split_labels(data, (setting,))
    splits = (*trained, HELD)
    stim, where = stimuli(data, splits=splits, contexts=(CONTEXT,), paraphrases=False)
    fitted, cut = fit_context(data, where.records, encoder)
    if cut:
        stim, where = stimuli(data, records=fitted, contexts=(CONTEXT,), paraphrases=False)
    recs = where.records
    at = where.original[CONTEXT]
    by_split = split_rows(recs)
    label = np.array([r.label for r in recs], np.int64)
    expr = np.array([r.expression for r in recs], dtype=object)
    ids = row_ids(recs)

    def side(rows: np.ndarray) -> Side:
        return Side(at[rows], label[rows], expr[rows], ids[rows])

    unplaced = [u for u in data.unplaced if u.split in splits]
    notes = [*data.notes, *said, *cut] + ([
        f"{lang}: {len(unplaced)} use(s) of {', '.join(splits)} whose expression could not "
        "be placed are not rows of the concept"] if unplaced else [])
    held_open = contextlib.ExitStack()  # the store's files, until the concept is closed
    emb, fingerprint = held_open.enter_context(cached_vectors(stim, encoder, cfg, cache,
                                                              cache_dir, progress))
    try:
        index = {}
        pairs = []
        for v, (name, levels) in enumerate(layer_views(encoder, emb)):
            index[name] = -1 if name == OWN_VIEW else v
            pairs += [(name, level) for level in levels]

        def read(view: str, level: str) -> np.ndarray:
            return view_vectors(emb, index[view], (level,), None)[level]

        return Concept(
            f"astitch idiomatic/literal ({lang})", LABEL_NAMES, pairs, read,
            side(training_rows(by_split, setting)), side(by_split[HELD]),
            close=held_open.close,
            meta={"probe": "astitch", "model": model, "lang": lang, "layers": layers,
                  "setting": setting, "train": list(trained), "held": HELD,
                  "context": CONTEXT, "fingerprint": fingerprint,
                  "data_sources": dict(data.sources), "modified_data": dict(data.modified),
                  "options": {k: v for k, v in opts.items() if v != OPTIONS.get(k)}},
            notes=list(dict.fromkeys(notes)))
    except BaseException:
        held_open.close()
        raise
