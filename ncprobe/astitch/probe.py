"""run_astitch(): the AStitch probe end to end, layer view by layer view.

For each language: the labelled uses (:func:`ncprobe.data.astitch.load_astitch`), their
minimal pairs (each use's expression replaced by its literal and by each non-literal
paraphrase, with and without the surrounding sentences: :func:`~ncprobe.data.astitch.spliced`)
and the stimuli of all of them (:func:`stimuli`); for each model (and the static control),
one pass through the embedding cache (:func:`ncprobe.embed.embed`, the same overlapped
batches and store as every probe), then **one layer view at a time** read from the store:
the paraphrase probe's scores (:mod:`.paraphrase`) and the linear probe with its control task
(:mod:`.linear`) on that view's vectors, which are let go before the next view is read, so a
run holds one view's vectors of its stimuli, never all of them.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from ..config import config_of, takes_config
from ..errors import DataError, UsageError
from ..transform import META_KEY as TRANSFORM_KEY
from ..transform import VectorTransform, check_transform, in_forward
from ..transform import note as transform_note
from . import FEATURES, IDIOMATIC, LEVELS, LITERAL, NO_MODEL_NOTE, SETTINGS, SPLITS, VARIANTS
from .config import OMITTED_AT_DEFAULT, AStitchConfig

__all__ = ["Minimal", "cached_vectors", "check_split_labels", "layer_views", "model_encoder",
           "run_astitch", "split_rows", "stimuli", "training_rows", "view_vectors"]

log = logging.getLogger(__name__)

#: The splits the linear probe reads besides a setting's training split.
_EVAL = ("dev", "test")
#: The name of the sentence-transformers model's own sentence embedding as a view.
_OWN = "own"


def _silent(line: str) -> None:
    pass


@dataclass(frozen=True)
class Minimal:
    """Where each use's sentences are among the stimuli of a language.

    Attributes:
        records: the uses (placed rows), in order.
        original: ``{context: (n,) stimulus row}`` of each use's own sentence.
        literal: ``{context: (n,) row}`` of its literal paraphrase spliced in (-1: none).
        nonliteral: ``{context: (n, 3) rows}`` of each non-literal paraphrase (-1: none).
    """

    records: tuple
    original: dict[str, np.ndarray]
    literal: dict[str, np.ndarray]
    nonliteral: dict[str, np.ndarray]


def stimuli(data, *, splits: Sequence[str] | None = None, records: Sequence | None = None,
            contexts: Sequence[str] = VARIANTS, paraphrases: bool = True
            ) -> tuple[list, Minimal]:
    """The stimuli of a language's uses (of ``splits``, default all; ``records``: these uses
    instead of ``data``'s, e.g. with their context cut to fit a model, :func:`fit_context`):
    each use's sentence with and without its context and (``paraphrases``) each paraphrase
    spliced into both, every (sentence, span) once.

    Returns:
        ``(stimuli, minimal)``: the :class:`~ncprobe.data.stimuli.Stimulus` list, and where
        each use's sentences are in it (:class:`Minimal`).
    """
    from ..data.astitch import spliced
    from ..data.stimuli import Stimulus

    out: list = []
    seen: dict[tuple, int] = {}

    def add(rec, context: str, kind: str, variant: int, tokens, span) -> int:
        key = (tuple(tokens), tuple(span))
        if key not in seen:
            seen[key] = len(out)
            out.append(Stimulus(rec.lang, rec.expression, context, kind, variant, tuple(tokens),
                                tuple(span), " ".join(tokens[span[0]:span[1]]),
                                f"{rec.file}:{rec.row}", spliced=kind != "original"))
        return seen[key]

    recs = tuple(r for r in (data.records if records is None else records)
                 if splits is None or r.split in splits)
    n = len(recs)
    original = {c: np.full(n, -1, np.int64) for c in contexts}
    literal = {c: np.full(n, -1, np.int64) for c in contexts}
    nonliteral = {c: np.full((n, 3), -1, np.int64) for c in contexts}
    for i, rec in enumerate(recs):
        para = data.paraphrases.get(rec.expression) if paraphrases else None
        for context in contexts:
            inside = context == "included"
            tokens, span = ((rec.context_tokens, rec.context_span) if inside
                            else (rec.tokens, rec.span))
            original[context][i] = add(rec, context, "original", 1, tokens, span)
            if para is None:
                continue
            if para.literal:
                literal[context][i] = add(rec, context, "literal", 1,
                                          *spliced(rec, para.literal, context=inside))
            for k, phrase in enumerate(para.nonliteral[:3]):
                nonliteral[context][i, k] = add(rec, context, "nonliteral", k + 1,
                                                *spliced(rec, phrase, context=inside))
    return out, Minimal(recs, original, literal, nonliteral)


#: Uses whose context is this many tokens or more under a model's limit are measured with
#: every paraphrase spliced in (a paraphrase is rarely this much longer than its expression).
_MARGIN = 32


def _token_counter(encoder) -> tuple[Callable[[list], list[int]], int] | None:
    """How many tokens each pre-split sentence is to ``encoder``, and the most it takes
    (``None``: an encoder without a limit: static vectors, ELMo, an API)."""
    hf = getattr(encoder, "tokens", None) if hasattr(encoder, "st") else encoder
    if hf is None or not hasattr(hf, "tokenize") or not hasattr(hf, "max_length"):
        return None
    limit = int(hf.max_length)
    if hf is not encoder:  # sentence-transformers: its own sequence limit, if lower
        limit = min(limit, int(getattr(encoder.st[0], "max_seq_length", None) or limit))
    return (lambda sentences: [len(t.ids) for t in hf.tokenize(sentences)]), limit


def fit_context(data, records: Sequence, encoder) -> tuple[list, list[str]]:
    """The uses with each sentence cut to fit ``encoder``'s token limit, and a note naming
    those cut.

    A use whose text (the target sentence, or with context the previous, target and next
    sentences), or that text with any of its paraphrases spliced in, has more tokens than
    the model takes loses words at the ends of that text, one at a time from the side with
    more words beside the expression, until every one of them fits; the expression is kept.
    The same words are cut from the sentence and from each of its paraphrased copies, so the
    pairs stay minimal. (In the data, only contexts of long sentences come near a 512-token
    limit; a model with a short limit cuts more.)"""
    from dataclasses import replace

    from ..data.astitch import spliced

    counter = _token_counter(encoder)
    if counter is None:
        return list(records), []
    count, limit = counter
    out = list(records)
    cut: list[str] = []
    for context, words, where in (("excluded", "tokens", "span"),
                                  ("included", "context_tokens", "context_span")):
        inside = context == "included"
        lengths = count([getattr(r, words) for r in out])
        for i, rec in enumerate(out):
            if lengths[i] + _MARGIN <= limit:
                continue
            para = data.paraphrases.get(rec.expression)
            phrases = ([para.literal] if para is not None and para.literal else []) + \
                list(para.nonliteral[:3] if para is not None else [])
            trimmed = rec
            while True:
                text = getattr(trimmed, words)
                variants = [text] + [spliced(trimmed, ph, context=inside)[0] for ph in phrases]
                if max(count(variants)) <= limit:
                    break
                start, end = getattr(trimmed, where)
                left, right = start, len(text) - end
                if left == 0 and right == 0:
                    break  # the expression alone: the encoder names it
                if left >= right:
                    trimmed = replace(trimmed, **{words: text[1:], where: (start - 1, end - 1)})
                else:
                    trimmed = replace(trimmed, **{words: text[:-1]})
            if trimmed is not rec:
                out[i] = trimmed
                cut.append(f"{rec.split} {rec.row} (context {context}: "
                           f"{len(getattr(rec, words))} -> {len(getattr(trimmed, words))} "
                           "words)")
    if not cut:
        return out, []
    return out, [f"{data.lang}: {len(cut)} text(s) longer than {encoder.name}'s {limit} tokens "
                 "were cut at their ends to fit, the expression kept: " + "; ".join(cut)]


@takes_config(AStitchConfig)
def run_astitch(config: AStitchConfig | None = None, /, *, out: str | Path | None = None,
                overwrite: bool = False, data_dir=None, cache: bool = True, cache_dir=None,
                progress: bool = True, on_step: Callable[[str], None] | None = None,
                jobs: int = 1, transform: VectorTransform | None = None, **options: Any):
    """Run the AStitch probe: the paraphrase and linear probes of every model, language and
    layer view, with the controls, intervals over expressions and paired tests.

    Args:
        config: an :class:`~ncprobe.astitch.config.AStitchConfig`, or its fields as keywords.
        out: write the results directory there (refused before any work when it is not a
            results directory, or holds another run without ``overwrite``).
        data_dir: the data directory (default: :func:`ncprobe.data.resolve_data_dir`).
        cache, cache_dir: the embedding cache (as :func:`ncprobe.compute`).
        progress: progress bars while encoding; ``on_step``: told of each step.
        jobs: the linear probe's cells of a view fitted this many at a time, in processes
            (the results are the same for any number).
        transform: a :class:`~ncprobe.transform.VectorTransform` applied to each layer view's
            vectors of the model as they are read (the rows' groups: their expressions), before
            the paraphrase and linear probes; the static control's vectors are left as they
            are (another model's). One model only (a transform belongs to one model's
            vectors); the cache keeps the plain vectors, and each run's metadata records the
            fingerprint (``transform``: the run id is not the plain run's).

    Returns:
        :class:`~ncprobe.astitch.results.AStitchResults`.

    Raises:
        UsageError: a bad option, a model that is unknown or lacks a layer, or ``out``
            refused (exit 2). DataError: a damaged or edited data file, or a split the linear
            probe needs without both labels (exit 3). ModelUnavailableError: a model that
            cannot load here (exit 5). Every model is checked before any work.
    """
    from ..data.astitch import load_astitch
    from ..results.store import model_runs
    from .results import AStitchResults

    cfg = config_of(AStitchConfig, config, options, caller="run_astitch")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise UsageError(f"jobs={jobs!r} (--jobs): give a whole number >= 1")
    transform_fp = None if transform is None else check_transform(transform)
    if transform is not None and len(cfg.models) > 1:
        raise UsageError(f"transform={transform_fp!r} with {len(cfg.models)} models "
                         f"({', '.join(cfg.models)}): a vector transform belongs to one "
                         "model's vectors; run one model at a time")
    say = on_step or _silent
    runs = model_runs(cfg, out, layout=AStitchResults.layout, overwrite=overwrite,
                      transform=transform_fp, omitted_at_default=OMITTED_AT_DEFAULT)
    # every model (and the static control) is checked before any work, from its config alone
    # (transformer weights load on the first encode)
    encoders = {(m, lang): model_encoder(m, lang, cfg, control=m not in cfg.models)
                for lang in cfg.langs
                for m in (*cfg.models, *([cfg.static_model] if cfg.static_model else []))}
    scores, preds, fits, excluded = [], [], [], []
    meta: dict[str, dict[str, Any]] = {
        m: {"config": runs[m], "data_sources": {}, "modified_data": {},
            "notes": [] if transform_fp is None else [transform_note(transform_fp)],
            "fingerprint": {}, **({} if transform_fp is None else {TRANSFORM_KEY: transform_fp})}
        for m in cfg.models}
    shared_notes: list[str] = []
    for lang in cfg.langs:
        say(f"{lang}: loading the AStitch uses and paraphrases")
        data = load_astitch(lang, data_dir, accept_modified=cfg.accept_modified_data)
        check_split_labels(data, cfg.settings)
        stim, where = stimuli(data, splits=cfg.splits, contexts=cfg.contexts)
        excluded.append(_excluded(data, where))
        shared_notes += [*data.notes, *_paraphrase_notes(data, where)]
        y = np.array([r.label for r in where.records], np.int64)
        preds += _baselines(lang, where.records, y, cfg.settings, cfg)
        for name in (*cfg.models, *([cfg.static_model] if cfg.static_model else [])):
            static = name not in cfg.models
            encoder, said = encoders[(name, lang)]
            step = f"{lang}: {'static control' if static else 'model'} {name}"
            fitted, cut = fit_context(data, where.records, encoder)
            m_stim, m_where = (stimuli(data, records=fitted, contexts=cfg.contexts) if cut
                               else (stim, where))
            got = _probe_model(name, lang, encoder, m_stim, m_where, y, cfg, static,
                               (cache, cache_dir, progress, jobs), _prefixed(say, step),
                               None if static else transform)
            scores += got[0]
            preds += got[1]
            fits += got[2]
            if not static:
                run = meta[name]
                run["fingerprint"][lang] = got[3]
                run["data_sources"].update(data.sources)
                run["modified_data"].update(data.modified)
                run["notes"] += [*said, *cut, *got[4]]
            else:
                shared_notes += [*said, *cut, *(f"static control {name}: {n}" for n in got[4])]
    for run in meta.values():
        run["notes"] = list(dict.fromkeys([*shared_notes, *run["notes"]]))
    say("scoring: AUROC, macro-F1 and selectivity with intervals over expressions "
        f"({cfg.n_boot} resamples), the paired tests")
    from .linear import FIT_COLUMNS, PRED_COLUMNS

    pred_table = (pd.concat(preds, ignore_index=True) if preds
                  else pd.DataFrame(columns=list(PRED_COLUMNS)))
    mdl = [m for f in fits for m in f.pop("mdl", ())]  # --mdl: the cells' MDL rows
    fit_table = pd.DataFrame(fits, columns=[*FIT_COLUMNS, "no_vector"])
    res = AStitchResults.from_parts(
        pd.concat(scores, ignore_index=True), pred_table, fit_table,
        pd.concat(excluded, ignore_index=True), list(meta.values()), n_boot=cfg.n_boot,
        seed=cfg.seed, correction=cfg.correction, n_perm="auto" if cfg.n_perm is None
        else cfg.n_perm, pairs=paired_cells(fit_table), mdl=mdl)
    if out is not None:
        res.to_parquet(out, overwrite=overwrite)
    return res


def _probe_model(name: str, lang: str, encoder, stim: list, where: Minimal, y: np.ndarray,
                 cfg: AStitchConfig, static: bool, caching: tuple, say: Callable[[str], None],
                 transform: VectorTransform | None = None
                 ) -> tuple[list[pd.DataFrame], list[pd.DataFrame], list[dict], dict, list[str]]:
    """One model's (or the static control's) vectors, then the probes one view at a time:
    ``(scores, predictions, fits, fingerprint, notes)`` (the notes: what half-precision
    storage did to the cosines, :func:`ncprobe.cache.dtypes.store_loss_record`). The static
    control is the linear probe's only: its originals are encoded, no paraphrase is
    scored. ``transform``: applied to each view's vectors as read (:mod:`ncprobe.transform`)."""
    cache, cache_dir, progress, jobs = caching
    encoder = in_forward(encoder, transform)  # a transform acting in the forward pass
    todo = _originals(stim, where) if static else stim
    say(f"encoding {len(todo)} sentences (cached ones are read)")
    scores: list[pd.DataFrame] = []
    preds: list[pd.DataFrame] = []
    fits: list[dict] = []
    with cached_vectors(todo, encoder, cfg, cache, cache_dir, progress) as (emb, fp):
        rows = _rows_of(stim, todo) if static else None
        if transform is not None:  # the rows of emb are those of todo
            from ..embed import view_names

            emb = emb.transformed(transform, view_names(encoder), [s.nc for s in todo])
        views = layer_views(encoder, emb)
        for v, (view, levels) in enumerate(views):
            say(f"view {view} ({v + 1}/{len(views)})")
            # this view's vectors only, let go at the end of the iteration
            feats = view_vectors(emb, v if view != _OWN else -1, levels, rows)
            if not static:
                scores.append(_scores(name, lang, view, feats, where))
            if cfg.settings:
                p, f = _linear(name, lang, view, feats, where, y, cfg, static, jobs)
                preds += p
                fits += f
            del feats
        from ..cache.dtypes import store_loss_record

        said = store_loss_record(cfg.store_dtype, emb.store_loss)[1]
    # the NCIMP note's last sentence is about NCIMP's measures: not said here
    return scores, preds, fits, fp, [line.split(". Measures of z-scored")[0] for line in said]


def _prefixed(say: Callable[[str], None], step: str) -> Callable[[str], None]:
    return lambda line: say(f"{step}: {line}")


def model_encoder(model: str, lang: str, cfg: AStitchConfig, *, control: bool = False):
    """The encoder of ``model`` for ``lang``, and what the run's notes say of it. An alias
    without a model for the language (``minilm`` for Portuguese) probes its one model, said in
    the notes: AStitch asks what *this* model makes of the sentences, whatever their language
    (NCIMP instead takes each alias's own model of the language). The static ``control`` is
    loaded as it is (the run's layers and dtype are the probed models')."""
    from ..encoders import load_encoder
    from ..encoders.registry import MODELS

    spec = MODELS.get(model)
    said = []
    use = lang
    if spec is not None and not spec.covers(lang):
        use = next(iter(spec.ids))
        said.append(NO_MODEL_NOTE.format(model=model, lang=lang)
                    + f"its {use} model ({spec.model_id(use)}) reads the {lang} sentences")
    enc = load_encoder(model, use, layers=None if control else cfg.layers,
                       device=None if control else cfg.device,
                       dtype=None if control else cfg.dtype)
    if control:
        from ..encoders.static import StaticEncoder

        if not isinstance(enc, StaticEncoder):
            raise UsageError(f"--static {model}: the static control is a static vector model "
                             "(it cannot see the context: GloVe, word2vec, fastText, a vector "
                             f"file), and {model} is not one; give one, or --static none")
    return enc, said


def check_split_labels(data, settings: Sequence[str]) -> None:
    """Refuse data the linear probe cannot use: a training split of ``settings``, dev or test
    without both labels (no classifier can be trained or scored on it)."""
    from ..data.astitch import split_file

    for split in dict.fromkeys((*(x for s in settings for x in SETTINGS[s]),
                                *(_EVAL if settings else ()))):
        counts = data.labels(split)
        lacking = [name for value, name in ((IDIOMATIC, "idiomatic (0)"),
                                            (LITERAL, "not idiomatic (1)"))
                   if not counts.get(value)]
        if lacking:
            raise DataError(f"split {split} of {data.lang} has no {' and no '.join(lacking)} "
                            f"row ({sum(counts.values())} rows): the linear probe trains or "
                            "scores on it and needs both labels; restore the pinned file "
                            "(ncprobe data download)", file=split_file(data.lang, split))


def _has(data, rec) -> tuple[bool, bool]:
    """Whether the use's expression has a literal paraphrase, and a non-literal one."""
    para = data.paraphrases.get(rec.expression)
    return (para is not None and bool(para.literal),
            para is not None and bool(para.nonliteral))


def _excluded(data, where: Minimal) -> pd.DataFrame:
    """The rows the probes leave out, and why: not placed (every probe), and without the
    paraphrases a contrast needs (the paraphrase probe)."""
    rows = [(u.lang, u.split, u.row, u.expression, u.why) for u in data.unplaced]
    for rec in where.records:
        literal, other = _has(data, rec)
        why = ("no paraphrase row for the expression"
               if rec.expression not in data.paraphrases else
               "no literal paraphrase" if not literal else
               "no non-literal paraphrase" if not other else "")
        if why:
            rows.append((rec.lang, rec.split, rec.row, rec.expression,
                         why + " (paraphrase contrast not scored)"))
    return pd.DataFrame(rows, columns=["lang", "split", "row", "expression", "why"]).astype(
        {"row": np.int64})


def _paraphrase_notes(data, where: Minimal) -> list[str]:
    n = len(where.records)
    scored = np.array([all(_has(data, rec)) for rec in where.records], bool)
    lab = np.array([r.label for r in where.records])
    share = float((lab[scored] == IDIOMATIC).mean()) if scored.any() else float("nan")
    return [f"{data.lang}: {int(scored.sum())} of {n} uses have a literal and a non-literal "
            f"paraphrase (the contrast is scored on them: {100 * share:.0f}% idiomatic, "
            f"against {100 * float((lab == IDIOMATIC).mean()):.0f}% of all uses; expressions "
            "without a non-literal paraphrase are mostly compositional)"]


def _originals(stim: list, where: Minimal) -> list:
    rows = sorted({int(i) for c in where.original for i in where.original[c]})
    return [stim[i] for i in rows]


def _rows_of(stim: list, todo: list) -> np.ndarray:
    """``(len(stim),)``: each stimulus's row in ``todo`` (-1: not there)."""
    at = {id(s): k for k, s in enumerate(todo)}
    return np.array([at.get(id(s), -1) for s in stim], np.int64)


@contextlib.contextmanager
def cached_vectors(todo: list, encoder, cfg: AStitchConfig, cache: bool, cache_dir,
             progress: bool) -> Iterator[tuple[Any, dict]]:
    """The stimuli's vectors through the embedding cache (read one view at a time), and the
    encoder's fingerprint."""
    from ..embed import embed_cached

    emb = embed_cached(todo, encoder, cache=cache, cache_dir=cache_dir,
                       store_dtype=cfg.store_dtype, batch_size=cfg.batch_size,
                       progress=progress)[0]
    with emb:
        yield emb, encoder.fingerprint()


def layer_views(encoder, emb) -> list[tuple[str, tuple[str, ...]]]:
    """``(name, levels)`` of each layer view, then the model's own sentence embedding (a
    sentence-transformers model; the sentence level only)."""
    from ..embed import view_names

    names = view_names(encoder)
    views = [(name, tuple(LEVELS)) for name in names[:emb.views]]
    if emb.has_own:
        views.append((_OWN, ("sent",)))
    return views


def view_vectors(emb, view: int, levels: Sequence[str], rows: np.ndarray | None
                  ) -> dict[str, np.ndarray]:
    """This view's vectors of every stimulus per level, as read (float32: the cosines and the
    probe's features are taken in float64 from them, row subsets at a time, so a view of a
    5120-d model over every English stimulus is 0.5 GB a level, not twice that) (rows: where
    each stimulus is in the vectors read, for a subset; a stimulus not there is NaN)."""
    part_of = {"sent": "sent", "nc": "span"}  # the vectors of each level
    out = {}
    for level in levels:
        x = emb.part("own", 0) if view < 0 else emb.part(part_of[level], view)
        x = np.asarray(x)
        if rows is not None:
            full = np.full((len(rows), x.shape[1]), np.nan, dtype=x.dtype)
            full[rows >= 0] = x[rows[rows >= 0]]
            x = full
        out[level] = x
    return out


def _cosine_rows(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``cos(x[a], x[b])`` row by row, NaN where ``b`` is -1 (no paraphrase)."""
    from ..stats import cosine

    out = np.full(len(a), np.nan)
    ok = b >= 0
    out[ok] = cosine(x[a[ok]], x[b[ok]])
    return out


def _scores(model: str, lang: str, view: str, feats: dict, where: Minimal) -> pd.DataFrame:
    """The paraphrase probe's per-use scores of one view: every level and context."""
    from .paraphrase import SCORE_COLUMNS, scores

    recs = where.records
    parts = []
    for level, x in feats.items():
        for context in where.original:
            orig = where.original[context]
            lit = _cosine_rows(x, orig, where.literal[context])
            non = np.stack([_cosine_rows(x, orig, where.nonliteral[context][:, k])
                            for k in range(3)], axis=1)
            contrast, literal = scores(lit, non)
            parts.append(pd.DataFrame({
                "model": model, "lang": lang, "split": [r.split for r in recs],
                "layer": view, "level": level, "context": context,
                "row": np.array([r.row for r in recs], np.int64),
                "expression": [r.expression for r in recs],
                "label": np.array([r.label for r in recs], np.int64),
                "literal": literal, "contrast": contrast}))
    return pd.concat(parts, ignore_index=True)[list(SCORE_COLUMNS)]


def split_rows(records: Sequence) -> dict[str, np.ndarray]:
    splits = np.array([r.split for r in records])
    return {s: np.flatnonzero(splits == s) for s in SPLITS}


def training_rows(by_split: Mapping[str, np.ndarray], setting: str) -> np.ndarray:
    """A setting's training rows: those of each of its splits (:data:`SETTINGS`), in order
    (``one-shot-semeval``: the zero-shot rows, then the one-shot rows)."""
    return np.concatenate([by_split[s] for s in SETTINGS[setting]])


def _features(x: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, int]:
    """The features of ``rows``; a row without a vector (a static model that knows none of
    its words) is all zeros, counted. Float64, whatever the vectors' dtype."""
    f = np.array(x[rows], dtype=np.float64)
    gap = ~np.isfinite(f).all(axis=1)
    if gap.any():
        f[gap] = 0.0
    return f, int(gap.sum())


def _fit_pair(xtr: np.ndarray, ytr: np.ndarray, xdev: np.ndarray, ydev: np.ndarray,
              xte: np.ndarray, ctr: np.ndarray, within: np.ndarray | None,
              c_grid: Sequence[float]):
    """One cell's probe, its type control (``None`` where the random labels gave the training
    split one label only: a small split can) and its within-expression controls (one fit per
    draw of ``within``'s training labels; ``()`` for none), the controls with the task's
    ``C``."""
    from ..stats import one_blas_thread
    from .linear import fit_fixed, fit_predict

    # one BLAS thread, as in a worker process: the same numbers for any --jobs
    with warnings.catch_warnings(), one_blas_thread():
        warnings.simplefilter("ignore")  # convergence: counted in the fits table
        task = fit_predict(xtr, ytr, xdev, ydev, xte, c_grid=c_grid)
        ctrl = (fit_fixed(task.C, xtr, ctr, xte) if len(set(ctr.tolist())) == 2 else None)
        drawn = tuple(fit_fixed(task.C, xtr, w, xte) for w in within) \
            if within is not None else ()
    return task, ctrl, drawn


def _fit_cells(todo: list[tuple], jobs: int) -> list[tuple]:
    """:func:`_fit_pair` of every cell, ``jobs`` at a time in guarded worker processes
    (:func:`ncprobe.drawing.worker_pool`: none outlives the run, Ctrl-C stops them without a
    traceback of theirs); in this process for ``jobs`` 1."""
    if jobs > 1 and len(todo) > 1:
        from ..drawing import worker_pool

        with worker_pool(min(jobs, len(todo))) as pool:
            futures = [pool.submit(_fit_pair, *t) for t in todo]
            return [f.result() for f in futures]
    return [_fit_pair(*t) for t in todo]


def _linear(model: str, lang: str, view: str, feats: dict, where: Minimal, y: np.ndarray,
            cfg: AStitchConfig, static: bool, jobs: int = 1
            ) -> tuple[list[pd.DataFrame], list[dict]]:
    """The linear probe (with its type and within-expression controls; the static model's
    with the type control only) of one view: every setting and feature, the cells fitted
    ``jobs`` at a time (processes; the same results for any ``jobs``)."""
    from .linear import PRED_COLUMNS, WITHIN, control_labels, mdl_rows, within_permutation

    recs = where.records
    expr = np.array([r.expression for r in recs])
    by_split = split_rows(recs)
    test = by_split["test"]
    cells, todo = [], []
    for setting in cfg.settings:
        tr, dev = training_rows(by_split, setting), by_split["dev"]
        ctrl_map = control_labels(sorted(set(expr)), y[tr], seed=cfg.seed)
        y_ctrl = np.array([ctrl_map[e] for e in expr], np.int64)
        within = None if static else within_permutation(expr[tr], y[tr], seed=cfg.seed,
                                                        draws=cfg.within_draws)
        for level, context in FEATURES:
            if level not in feats or context not in where.original:
                continue
            rows = where.original[context]
            (xtr, g1), (xdev, g2), (xte, g3) = (_features(feats[level], rows[r])
                                                for r in (tr, dev, test))
            key = {"model": model, "lang": lang, "setting": setting, "layer": view,
                   "level": level, "context": context,
                   "probe_kind": "control" if static else "linear",
                   "control": "static" if static else ""}
            cells.append((key, y_ctrl, g1 + g2 + g3))
            todo.append((xtr, y[tr], xdev, y[dev], xte, y_ctrl[tr], within, cfg.c_grid))
    done = _fit_cells(todo, jobs)
    preds, fits = [], []
    n = len(test)

    def frame(key: dict, predicted, scores, draw: int, y_c=-1, p_c=-1) -> pd.DataFrame:
        return pd.DataFrame({
            **{k: [v] * n for k, v in key.items()},
            "row": np.array([recs[i].row for i in test], np.int64),
            "expression": expr[test], "label": y[test],
            "predicted": np.asarray(predicted, np.int64), "control_label": y_c,
            "control_predicted": p_c, "draw": np.full(n, draw, np.int64),
            "decision": np.asarray(scores, np.float64)})[list(PRED_COLUMNS)]

    for (key, y_ctrl, gaps), (task, ctrl, drawn) in zip(cells, done, strict=True):
        fits.append({**key, "C": task.C, "dev_macro_f1": task.dev_f1,
                     "control_C": ctrl.C if ctrl else np.nan,
                     "converged": bool(task.converged and (ctrl is None or ctrl.converged)
                                       and all(d.converged for d in drawn)),
                     "extended": ",".join(f"{c:g}" for c in task.extended),
                     "edge": bool(task.edge), "no_vector": gaps})
        if cfg.mdl:  # the online code of the cell's training labels (linear.mdl_rows)
            xtr, ytr, _, _, _, ytc, wtr, _ = todo[len(fits) - 1]
            fits[-1]["mdl"] = mdl_rows(key, task.C, xtr, ytr,
                                       expr[training_rows(by_split, key["setting"])],
                                       control_labels=None if static else ytc, within=wtr,
                                       n_boot=cfg.n_boot, seed=cfg.seed)
        preds.append(frame(key, task.pred, task.scores, -1,
                           y_ctrl[test] if ctrl else -1,
                           np.asarray(ctrl.pred, np.int64) if ctrl else -1))
        preds += [frame({**key, "control": WITHIN}, d.pred, d.scores, k)
                  for k, d in enumerate(drawn)]
    return preds, fits


def _baselines(lang: str, records: Sequence, y: np.ndarray, settings: Sequence[str],
               cfg: AStitchConfig | None = None) -> list[pd.DataFrame]:
    """The majority and expression-only controls, and the baselines and ceilings
    (:data:`ncprobe.astitch.linear.BASELINES`: training majority, test majority, stratified
    chance over ``cfg.within_draws`` seeded draws, the type oracle) of every setting (no
    model: the same in every run on the same data and options)."""
    from .linear import (
        PRED_COLUMNS,
        WITHIN_DRAWS,
        chance_draws,
        expression_only,
        majority,
        type_oracle,
    )

    expr = np.array([r.expression for r in records])
    by_split = split_rows(records)
    test = by_split["test"]
    n = len(test)
    seed, draws = (cfg.seed, cfg.within_draws) if cfg is not None else (0, WITHIN_DRAWS)
    parts = []

    def frame(setting: str, kind: str, control: str, pred, draw: int = -1) -> pd.DataFrame:
        return pd.DataFrame({
            "model": "", "lang": lang, "setting": setting, "layer": "", "level": "",
            "context": "", "probe_kind": kind, "control": control,
            "row": np.array([records[i].row for i in test], np.int64),
            "expression": expr[test], "label": y[test],
            "predicted": np.asarray(pred, np.int64), "control_label": -1,
            "control_predicted": -1, "draw": np.full(n, draw, np.int64),
            "decision": np.full(n, np.nan)})[list(PRED_COLUMNS)]

    for setting in settings:
        tr = training_rows(by_split, setting)
        for control, pred in (("majority", majority(y[tr], n)),
                              ("expression", expression_only(expr[tr], y[tr], expr[test]))):
            parts.append(frame(setting, "control", control, pred))
        parts.append(frame(setting, "baseline", "majority_train", majority(y[tr], n)))
        parts.append(frame(setting, "baseline", "majority_test", majority(y[test], n)))
        parts += [frame(setting, "baseline", "chance", pred, d)
                  for d, pred in enumerate(chance_draws(y[tr], n, seed=seed, draws=draws))]
        parts.append(frame(setting, "baseline", "type_oracle", type_oracle(expr[test],
                                                                           y[test])))
    return parts


def paired_cells(fits: pd.DataFrame) -> list[tuple[dict, dict]]:
    """The paired tests of a run, fixed by the run's cells alone (never by its results):
    within each model, language, setting and feature, every layer view against the view of
    the best **dev** macro-F1; and across the models (the static control among them), each
    one's dev-best view against every other's, per language, setting and feature."""
    from .linear import PRED_KEYS

    if fits.empty:
        return []
    keys = list(PRED_KEYS)
    pairs: list[tuple[dict, dict]] = []
    best: dict[tuple, list[dict]] = {}
    cell = ["lang", "setting", "level", "context"]
    for (_model, *rest), group in fits.groupby(["model", *cell], sort=False):
        rows = group.to_dict("records")
        top = max(rows, key=lambda r: (r["dev_macro_f1"], -rows.index(r)))
        for r in rows:
            if r is not top:
                pairs.append(({k: top[k] for k in keys}, {k: r[k] for k in keys}))
        best.setdefault(tuple(rest), []).append({k: top[k] for k in keys})
    for tops in best.values():
        for i, a in enumerate(tops):
            for b in tops[i + 1:]:
                pairs.append((a, b))
    return pairs
