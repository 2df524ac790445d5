"""run_ncc(): the NCC probe end to end: the items, the published systems' answers, each
model's representation (NCIMP's measures on each item's sentence, through ncprobe's own
pipeline and cache) classified by cross-validation, the gold ceiling, a local model's own
answers (``behaviour``), and the paired tests of every classifier against every system.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..config import config_of, takes_config
from ..errors import DataError, UsageError
from ..transform import META_KEY as TRANSFORM_KEY
from ..transform import VectorTransform, check_transform
from .config import OMITTED_AT_DEFAULT, NccConfig
from .stats import KEYS, label

__all__ = ["published_accuracy", "run_ncc"]

#: The system name of the gold ceiling's rows.
CEILING = "gold score"


def _silent(line: str) -> None:
    pass


@takes_config(NccConfig)
def run_ncc(config: NccConfig | None = None, /, *, out: str | Path | None = None,
            overwrite: bool = False, data_dir=None, cache: bool = True, cache_dir=None,
            progress: bool = True, on_step: Callable[[str], None] | None = None,
            transform: VectorTransform | None = None, **options: Any):
    """Run the NCC probe: every classifier and system on SemanticQA's 241 NCC items.

    Args:
        config: an :class:`~ncprobe.ncc.config.NccConfig`, or its fields as keywords.
        out: write the results directory there (refused before any work when it is not a
            results directory, or holds another run without ``overwrite``).
        data_dir: the data directory (default: :func:`ncprobe.data.resolve_data_dir`).
        cache, cache_dir: the embedding cache (as :func:`ncprobe.compute`).
        progress: progress bars while encoding; ``on_step``: told of each step.
        transform: a :class:`~ncprobe.transform.VectorTransform` applied to each layer view's
            vectors as they are read, before NCIMP's measures are taken of them (as
            :func:`ncprobe.compute`; the rows' groups: their compounds); the model's own
            answers (``behaviour``) read no stored vector and are not transformed, but a
            transform that acts in the forward pass (one with an ``intervention``:
            :mod:`ncprobe.transform`) acts in the passes that answer too (at the compound's
            tokens of each prompt, or every token). One model only; each run's metadata
            records the fingerprint (``transform``: the run id is not the plain run's).

    Returns:
        :class:`~ncprobe.ncc.results.NccResults`.

    Raises:
        UsageError: a bad option, or ``out`` refused. DataError: a damaged or edited item
        file, an item whose gold disagrees with NCTTI (exit 3). ModelUnavailableError: a
        model that cannot load here, or (``behaviour``) cannot answer (exit 5). Every
        model is checked from its config before any work (unknown, a layer it lacks, a
        device not there, not a causal LM with ``behaviour``).
    """
    from ..data.semanticqa import load_ncc, ncc_stimuli
    from ..results.store import model_runs
    from .results import NccResults

    cfg = config_of(NccConfig, config, options, caller="run_ncc")
    transform_fp = None if transform is None else check_transform(transform)
    if transform is not None and len(cfg.models) > 1:
        raise UsageError(f"transform={transform_fp!r} with {len(cfg.models)} models "
                         f"({', '.join(cfg.models)}): a vector transform belongs to one "
                         "model's vectors; run one model at a time")
    say = on_step or _silent
    # as NCIMP's: a plain run's run.json and run id as before
    runs = model_runs(cfg, out, layout=NccResults.layout, overwrite=overwrite,
                      transform=transform_fp, omitted_at_default=OMITTED_AT_DEFAULT)
    # every model is checked before any work, from its config alone (weights load on the
    # first encode): an unknown model, a layer it lacks, a device not there or (behaviour) a
    # model that cannot answer is refused now, not after the models before it were computed
    from ..encoders import load_encoder
    from .behaviour import causal_encoder

    for model in cfg.models:
        load_encoder(model, "en", layers=cfg.layers, device=cfg.device, dtype=cfg.dtype)
        if cfg.behaviour:
            causal_encoder(model, cfg.device, cfg.dtype)
    say("loading the items and the published predictions")
    data = load_ncc(data_dir, accept_modified=cfg.accept_modified_data)
    _check_folds(cfg.folds, data.gold_counts())
    stim, item_of_nc, stim_notes = ncc_stimuli(data, data_dir=data_dir,
                                               accept_modified=cfg.accept_modified_data)
    items = data.items
    rows = [_published_rows(system, items) for system in data.systems]
    meta = []
    per_repeat: list[dict] = []        # each classifier row's accuracy in each CV repeat
    codes: list[dict] = []             # --mdl: each classifier's codelength row
    selection_notes: list[str] = []    # what each nested selection chose
    for k, model in enumerate(cfg.models, start=1):
        step = f"model {k}/{len(cfg.models)} ({model})"
        say(f"{step}: NCIMP's measures on each item's sentence")
        res = _measures(model, cfg, stim, data_dir, cache, cache_dir, progress, transform)
        views = _views(res)
        say(f"{step}: classifying {len(items)} items, {len(views)} view(s) x level, "
            f"{cfg.folds} folds x {cfg.repeats} repeats")
        left_out: list[str] = []
        candidates: list = []
        mdl_rows: list[dict] = []
        for layer, level in views:
            features = _features(res, layer, level, items, item_of_nc)
            rows += _classified(model, "representation", layer, level, features, items, cfg,
                                left_out, candidates, per_repeat, mdl_rows)
        say(f"{step}: nested cross-validation of the choice among {len(candidates)} "
            "classifiers")
        rows.append(_selected(model, "selected", candidates, items, cfg, per_repeat,
                              selection_notes))
        run = {"config": runs[model], "fingerprint": res.meta[0].get("fingerprint"),
               "data_sources": {**dict(data.sources), **dict(res.meta[0]["data_sources"])},
               "modified_data": {**dict(data.modified),
                                 **dict(res.meta[0].get("modified_data") or {})},
               "notes": [*data.notes, *stim_notes, *res.meta[0].get("notes", []),
                         *left_out, selection_notes[-1]]}
        if transform_fp is not None:  # a plain run's metadata stays as it was
            run[TRANSFORM_KEY] = transform_fp
        codes += mdl_rows  # none without --mdl
        if cfg.behaviour:
            say(f"{step}: answering the items (zero-shot, letter log-probabilities)")
            answers = _answers(model, data, cfg, cache, cache_dir, progress,
                               getattr(transform, "intervention", None))
            rows.append(_behaviour_rows(model, answers, items))
            run["behaviour"] = answers.record()
        meta.append(run)
    say("the gold ceiling: the same classifiers on the human compositionality score")
    ceiling = pd.DataFrame({"gold": [stim.ncs[("en", it.nc)].comp for it in items]})
    left_out = []
    candidates = []
    ceiling_mdl: list[dict] = []
    rows += _classified(CEILING, "ceiling", "", "", ceiling, items, cfg, left_out, candidates,
                        per_repeat, ceiling_mdl)
    if left_out:  # the ceiling's rows belong to no model: said where the run is read
        raise DataError("; ".join(left_out) + ": every item needs its gold score")
    rows.append(_selected(CEILING, "ceiling", candidates, items, cfg, per_repeat,
                          selection_notes))
    for run in meta:  # the same in every run: the ceiling is shared
        run["notes"].append(selection_notes[-1])
    items_table = pd.concat(rows, ignore_index=True)
    say(f"scoring: accuracy and macro-F1 with intervals ({cfg.n_boot} resamples), the "
        "paired tests")
    res_ncc = NccResults.from_items(items_table, meta, n_boot=cfg.n_boot, seed=cfg.seed,
                                    correction=cfg.correction,
                                    repeats=pd.DataFrame(per_repeat),
                                    mdl=[*codes, *ceiling_mdl])
    if out is not None:
        res_ncc.to_parquet(out, overwrite=overwrite)
    return res_ncc


def _check_folds(folds: int, counts: dict[str, int]) -> None:
    """Refuse more stratified folds than the smallest class has items: scikit-learn only
    warns (folds without that class) up to the number of items, and fails beyond it."""
    cls, smallest = min(counts.items(), key=lambda kv: kv[1])
    if folds > smallest:
        raise UsageError(f"folds={folds} (--folds): stratified cross-validation puts an item "
                         f"of each class in every fold, and the smallest class ({cls}) has "
                         f"{smallest} items: give --folds from 2 to {smallest}")


def _published_rows(system, items) -> pd.DataFrame:
    """The items table's rows of one published prediction file: the items it answered."""
    answered = [it for it in items if it.id in system.answers]
    predicted = [system.answers[it.id] for it in answered]
    return _item_rows((system.system, "published", system.setting, "", "", ""), answered,
                      predicted)


def published_accuracy(data) -> dict[str, tuple[int, int]]:
    """Each published prediction file re-scored as the run scores it (its items table's
    rows): ``<setting>_<system>`` (the file's name) -> (items right, items in the file)."""
    out = {}
    for system in data.systems:
        rows = _published_rows(system, data.items)
        out[system.label] = (int(rows["correct"].sum()), len(rows))
    return out


def _item_rows(key: tuple[str, ...], items, predicted) -> pd.DataFrame:
    gold = [it.gold for it in items]
    return pd.DataFrame({
        **{k: [v] * len(items) for k, v in zip(KEYS, key, strict=True)},
        "item": [it.id for it in items], "nc": [it.nc for it in items], "gold": gold,
        "predicted": list(predicted),
        "correct": [p == g for p, g in zip(predicted, gold, strict=True)]})


def _measures(model: str, cfg: NccConfig, stim, data_dir, cache: bool, cache_dir,
              progress: bool, transform: VectorTransform | None = None):
    """NCIMP's measures of ``model`` on the items' stimuli (one sentence per compound),
    through :func:`ncprobe.compute`: the same pipeline, cache and measures (and vector
    transform)."""
    import warnings

    from ..ncimp.config import RunConfig
    from ..ncimp.pipeline import compute

    rc = RunConfig(model=model, lang="en", contexts="nat", layers=cfg.layers,
                   device=cfg.device, dtype=cfg.dtype, batch_size=cfg.batch_size, n_boot=0,
                   seed=cfg.seed, accept_modified_data=cfg.accept_modified_data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the run's notes keep them
        return compute(rc, stimuli=stim, data_dir=data_dir, cache=cache, cache_dir=cache_dir,
                       progress=progress, transform=transform)


def _views(res) -> list[tuple[str, str]]:
    """The (layer view, level) pairs of a run's raw-space measures, in their order."""
    m = res.measures
    m = m[(m["space"].astype(str) == "raw") & (m["context"].astype(str) == "nat")]
    pairs = m[["layers", "level"]].astype(str).drop_duplicates()
    return [tuple(p) for p in pairs.itertuples(index=False)]


def _features(res, layer: str, level: str, items, item_of_nc: dict) -> pd.DataFrame:
    """The measures of every item (rows in the items' order), one column per measure."""
    from ..schema import GOLD, NC_KEYS

    wide = res.wide(space="raw", context="nat", layers=layer, level=level)
    by_nc = wide.set_index("nc")
    missing = [it.nc for it in items if it.nc not in by_nc.index]
    if missing:
        raise DataError(f"no measures for {len(missing)} item compound(s) "
                        f"({', '.join(missing[:4])}) in view {layer}, level {level}")
    drop = [c for c in (*NC_KEYS, "cls", GOLD) if c in by_nc.columns]
    return by_nc.drop(columns=drop).loc[[it.nc for it in items]].reset_index(drop=True)


def _classified(system: str, kind: str, layer: str, level: str, features: pd.DataFrame,
                items, cfg: NccConfig, left_out: list[str], candidates: list,
                per_repeat: list[dict], mdl_rows: list[dict]) -> list[pd.DataFrame]:
    """The items rows of each classifier of one feature table: one measure by two cut points
    (each column), and all columns by logistic regression (the columns without a gap). Each
    classifier is added to ``candidates`` (the nested selection's), its accuracy in each
    repeat to ``per_repeat``; with ``cfg.mdl``, its codelength row
    (:func:`ncprobe.ncc.classify.codelength`: the key columns, then
    :data:`~ncprobe.ncc.classify.CODE_COLUMNS`) to ``mdl_rows``."""
    from .classify import Candidate, codelength

    out = []
    finite = {c: np.isfinite(features[c].to_numpy(float)) for c in features.columns}
    usable = [c for c in features.columns if finite[c].all()]
    for c in features.columns:  # never dropped in silence: the run's notes say which and why
        if not finite[c].all():
            left_out.append(f"{system} {layer} {level} {c}: not classified, "
                            f"{int((~finite[c]).sum())} of {len(items)} items have no finite "
                            "value (also left out of the all-measure classifier)")
    classifiers = [("single", str(col), [col]) for col in usable]
    if usable:
        classifiers.append(("all", "all", usable))
    for setting, measure, columns in classifiers:
        key = (system, kind, setting, layer, level, measure)
        matrix = features[columns].to_numpy(float)
        out.append(_cross_validated(key, matrix, setting, items, cfg, per_repeat))
        if cfg.mdl:
            mdl_rows.append({**dict(zip(KEYS, key, strict=True)),
                             **codelength(matrix, [it.gold for it in items],
                                          [it.id for it in items], seed=cfg.seed,
                                          n_boot=cfg.n_boot, C=cfg.regularisation)})
        candidates.append(Candidate(label(dict(zip(KEYS, key, strict=True))), matrix,
                                    setting))  # type: ignore[arg-type]
    return out


def _cross_validated(key: tuple[str, ...], matrix: np.ndarray, setting: str, items,
                     cfg: NccConfig, per_repeat: list[dict]) -> pd.DataFrame:
    """The items rows of one classifier: its modal prediction over the repeats; its
    accuracy in each repeat added to ``per_repeat``."""
    from .classify import modal, repeated

    table = repeated(matrix, [it.gold for it in items], setting,  # type: ignore[arg-type]
                     folds=cfg.folds, repeats=cfg.repeats, seed=cfg.seed,
                     C=cfg.regularisation)
    _add_repeats(key, table, items, per_repeat)
    return _item_rows(key, items, modal(table))


def _add_repeats(key: tuple[str, ...], table: np.ndarray, items, per_repeat: list[dict]
                 ) -> None:
    gold = np.array([it.gold for it in items], dtype=object)
    for r, predicted in enumerate(table):
        per_repeat.append({**dict(zip(KEYS, key, strict=True)), "repeat": r,
                           "accuracy": float((predicted == gold).mean())})


def _selected(system: str, kind: str, candidates: list, items, cfg: NccConfig,
              per_repeat: list[dict], notes: list[str]) -> pd.DataFrame:
    """The items rows of the nested selection among ``candidates`` (setting ``nested``); what
    it chose, said in ``notes``."""
    from .classify import INNER_FOLDS, modal, nested_selected

    if not candidates:  # every measure left out (the notes say why): nothing to choose
        notes.append(f"{system} nested: no classifier to choose among, no nested selection")
        return _item_rows((system, kind, "nested", "", "", ""), [], [])
    inner = min(INNER_FOLDS, cfg.folds)  # never more folds than the outer ones (small data)
    nested = nested_selected(candidates, [it.gold for it in items], folds=cfg.folds,
                             repeats=cfg.repeats, seed=cfg.seed, C=cfg.regularisation,
                             inner_folds=inner)
    key = (system, kind, "nested", "", "", "")
    _add_repeats(key, nested.predictions, items, per_repeat)
    counts = nested.counts()
    chose = ", ".join(f"{name} {k}" for name, k in list(counts.items())[:5])
    more = f" and {len(counts) - 5} other(s)" if len(counts) > 5 else ""
    notes.append(f"{system} nested: the classifier chosen by inner {inner}-fold "
                 f"cross-validation on each outer training fold among {len(candidates)} "
                 f"({cfg.folds} outer folds x {cfg.repeats} repeats): {chose}{more} (times "
                 "chosen)")
    return _item_rows(key, items, modal(nested.predictions))


def _answers(model: str, data, cfg: NccConfig, cache: bool, cache_dir, progress: bool,
             intervention: Any = None):
    from .behaviour import answer_items

    return answer_items(model, data.items, data.prompts["zeroshot"], device=cfg.device,
                        dtype=cfg.dtype, batch_size=cfg.batch_size, cache_dir=cache_dir,
                        use_cache=cache, progress=progress, intervention=intervention)


def _behaviour_rows(model: str, answers, items) -> pd.DataFrame:
    return _item_rows((model, "behaviour", "0-shot", "", "", ""), items,
                      [answers.classes[it.id] for it in items])
