"""The retrieval probe end to end: IdioLink, models x query modes -> :class:`RetrievalResults`.

For each model, every query is ranked against the split's whole corpus (method: the IdioLink
protocol, ``docs/guide/retrieval.md``):

* a dense model (sentence-transformers) encodes each document as its own sentence embedding
  (with the model's document prefix), and each query once per text it needs: the query
  sentence (for ``sentence`` and ``span``) and the instructed query (for the two
  ``instruction_*`` modes), each with its span's character offsets, so one forward pass
  gives both the sentence embedding and the span vector. The vectors go through the
  embedding cache (:mod:`ncprobe.retrieval.encode`); scores are cosine similarities, in
  float64;
* ``bm25`` is the lexical control (:mod:`ncprobe.retrieval.bm25`), modes ``sentence`` and
  ``span``.

A span that cannot be pooled (no token of the model overlaps it) never falls back silently:
the run stops naming the queries, unless ``span_fallback="sentence"`` is given, and then
each such query's sentence vector is used, marked in ``per_query.fallback`` and noted.

Metrics, tie ranges, intervals and paired tests: :mod:`.metrics`, :mod:`.stats`.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
import pandas as pd

from ..errors import DataError, UsageError
from .bm25 import EPSILON, K1, TOKEN_RE, B, bm25_scores, check_parameters
from .bm25 import MODES as BM25_MODES
from .metrics import evaluate
from .queries import document_text, parse_modes, query_text
from .results import RetrievalResults, check_models, grouped_means

if TYPE_CHECKING:  # pragma: no cover
    from ..data.idiolink import IdioLink

log = logging.getLogger(__name__)

__all__ = ["BM25_MODES", "LEXICAL", "planned_runs", "retrieve"]

#: The model name of the lexical control.
LEXICAL = "bm25"
#: What ``span_fallback`` may be.
SPAN_FALLBACKS = (None, "sentence")


def retrieve(models: str | Sequence[str] = ("minilm",), modes: str | Sequence[str] = "all",
             split: str = "test", *, idioms: Sequence[str] | None = None,
             data_dir: str | Path | None = None, accept_modified_data: bool = False,
             out: str | Path | None = None, overwrite: bool = False,
             cache_dir: str | Path | None = None, use_cache: bool = True,
             batch_size: int = 64, device: str | None = None, dtype: str | None = None,
             allow_remote_code: bool = False, k1: float = K1, b: float = B,
             n_boot: int = 1000, seed: int = 0, correction: str = "holm",
             span_fallback: str | None = None, progress: bool = True,
             idiolink: IdioLink | None = None, encoders: dict | None = None,
             on_step: Callable[[str], None] | None = None) -> RetrievalResults:
    """Run the IdioLink retrieval probe: rank every document for every query, per model and
    query mode, and score the rankings.

    Args:
        models: model names (an alias such as ``minilm``, a sentence-transformers hub id or
            directory, or ``bm25``), or one name; each runs once.
        modes: query modes (:data:`~ncprobe.retrieval.queries.QUERY_MODES`; ``"all"`` or a
            comma list). ``bm25`` runs the ones of :data:`BM25_MODES` among them.
        split: ``test`` (the published figures), ``val`` or ``train``.
        idioms: only these idioms (their queries and documents); default all.
        data_dir, accept_modified_data: as :func:`~ncprobe.data.idiolink.load_idiolink`.
        out: write the results directory there (refusing to replace what it must not;
            ``overwrite`` replaces another run's results).
        cache_dir, use_cache: the embedding cache (``use_cache=False``: nothing stored).
        batch_size, device, dtype: how the dense models run (``dtype``: ``float16`` or
            ``bfloat16`` on a GPU).
        allow_remote_code: run models whose hub repository holds code (opt-in).
        k1, b: BM25's parameters (the benchmark's: 0.9, 0.4).
        n_boot, seed: idiom-cluster bootstrap resamples of the intervals (0: none); the
            paired tests draw their own sign flips, enough for their Holm family
            (:func:`ncprobe.retrieval.stats.paired_tests`, ``n_flips='auto'``).
        correction: multiple-comparison correction of the paired tests (``holm`` ...).
        span_fallback: ``None`` (a span that cannot be pooled stops the run) or
            ``"sentence"`` (use the query's sentence vector, marked and noted).
        progress: progress bars on stderr.
        idiolink: an already loaded split (instead of ``split``/``data_dir``).
        encoders: model name -> an already built encoder (e.g. in tests).
        on_step: called with one line at each step (``model 1/2 (bm25), mode 2/2 (span):
            ranking 1500 queries against 7500 documents``; ``ncprobe retrieve`` prints them
            on stderr unless ``--quiet``); ``None``: nothing is said.

    Returns:
        :class:`~ncprobe.retrieval.results.RetrievalResults`.

    Raises:
        UsageError: an unknown mode, model, split or idiom, a model named twice, a mode no
            model can run, a model that is not a sentence-transformers model, a number out
            of its range (``k1`` finite >= 0, ``b`` finite in [0, 1], ``n_boot`` and ``seed``
            whole numbers >= 0, ``batch_size`` a whole number >= 1), an ``out`` inside
            another results directory (exit 2).
        DataError: the data is missing or damaged, or a span cannot be pooled (exit 3).
        ModelUnavailableError: a model that cannot run here (exit 5).
        OutputError: ``out`` or the cache cannot be written (exit 6).
    """
    from ..data.idiolink import load_idiolink

    names = [models] if isinstance(models, str) else list(models)
    configs = planned_runs(names, modes, idiolink.split if idiolink is not None else split,
                           idioms=idioms, out=out, overwrite=overwrite, k1=k1, b=b,
                           n_boot=n_boot, seed=seed, correction=correction,
                           span_fallback=span_fallback, batch_size=batch_size, device=device,
                           dtype=dtype, accept_modified_data=accept_modified_data)
    if out is not None:
        from ..results.store import check_writable

        check_writable(out)  # before any work
    if idiolink is None:
        idiolink = load_idiolink(split, data_dir, accept_modified_data=accept_modified_data)
    if idioms is not None:
        idiolink = idiolink.subset(idioms)
    say: Callable[[str], None] = on_step or _silent
    n_q, n_d = len(idiolink.queries), len(idiolink.documents)
    parts, meta = [], []
    for k, (name, cfg) in enumerate(configs.items(), start=1):
        step = f"model {k}/{len(configs)} ({name})"
        if name == LEXICAL:
            frames = []
            for i, mode in enumerate(cfg["modes"], start=1):
                say(f"{step}, mode {i}/{len(cfg['modes'])} ({mode}): ranking {n_q} queries "
                    f"against {n_d} documents")
                frames.append(evaluate(bm25_scores(idiolink, mode, k1=k1, b=b), idiolink,
                                       name, mode).assign(fallback=False))
            run = {"config": cfg, "fingerprint": _bm25_fingerprint(k1, b), "notes": []}
        else:
            encoder = (encoders or {}).get(name)
            if encoder is None:
                say(f"{step}: loading the model")
                encoder = _load(name, device, dtype, allow_remote_code)
            frames, run = _dense(name, encoder, idiolink, cfg, cache_dir, use_cache,
                                 batch_size, span_fallback, progress,
                                 say=functools.partial(_prefixed, say, step))
        notes = [*run["notes"], *idiolink.notes]
        if idiolink.modified:
            notes.append("data files differ from their pins (accept_modified_data): "
                         + ", ".join(idiolink.modified))
        # what the run was made on, so that runs of other items or data are never shown
        # together (RetrievalResults.concat)
        run.update(data_sources=dict(idiolink.sources), notes=notes,
                   modified_data=dict(idiolink.modified),
                   corpus={"idioms": len({q.idiom for q in idiolink.queries}),
                           "queries": n_q, "documents": n_d})
        parts += frames
        meta.append(run)
    say(f"scoring: the tables, the intervals ({n_boot} resamples) and the paired tests")
    per_query = pd.concat(parts, ignore_index=True)
    res = _tables(per_query, meta, n_boot=n_boot, seed=seed, correction=correction)
    if out is not None:
        res.to_parquet(out, overwrite=overwrite)
    return res


def planned_runs(models: Sequence[str], modes: Sequence[str], split: str, *,
                 idioms: Sequence[str] | None = None, out: str | Path | None = None,
                 overwrite: bool = False, k1: float = K1, b: float = B, n_boot: int = 1000,
                 seed: int = 0, correction: str = "holm", span_fallback: str | None = None,
                 batch_size: int | None = None, device: str | None = None,
                 dtype: str | None = None, accept_modified_data: bool = False
                 ) -> dict[str, dict]:
    """Each model's run config, checked before any work: the options, and ``out`` (a
    directory that is not a results directory, or holds another run without ``overwrite``,
    is refused now rather than after the encoding).

    Returns:
        model -> its config (as ``run.json`` records it).

    Raises:
        UsageError: a bad option, a model named twice, a mode ``bm25`` lacks, ``out``
            refused.
    """
    from ..encoders.registry import query_format_of
    from ..results.store import check_target
    from ..significance import check_correction

    names = check_models(models)
    wanted = parse_modes(modes)
    if span_fallback not in SPAN_FALLBACKS:
        raise UsageError(f"span_fallback must be None or 'sentence', not {span_fallback!r}")
    check_parameters(k1, b)
    _check_whole("n_boot", n_boot, 0, "--n-boot")
    _check_whole("seed", seed, 0, "--seed")
    if batch_size is not None:
        _check_whole("batch_size", batch_size, 1, "--batch-size")
    check_correction(correction)
    shared = {"split": split, "idioms": sorted(idioms) if idioms is not None else None,
              "k1": k1, "b": b, "n_boot": n_boot, "seed": seed, "correction": correction,
              "accept_modified_data": accept_modified_data}
    configs = {}
    for name in names:
        if name == LEXICAL:
            configs[name] = {"model": name, "modes": list(_modes_of(name, wanted)), **shared}
        else:
            configs[name] = {"model": name, "modes": list(wanted), **shared,
                             "format": query_format_of(name).describe(),
                             "span_fallback": span_fallback, "dtype": dtype,
                             "batch_size": batch_size, "device": device}
    if out is not None:
        check_target(out, [{"config": c} for c in configs.values()], overwrite=overwrite)
    return configs


def _silent(line: str) -> None:
    """Says nothing (no ``on_step``)."""


def _prefixed(say: Callable[[str], None], step: str, line: str) -> None:
    """``say`` the words of a model's step after the model's own (``model 1/2 (minilm)``)."""
    say(step + line)


def _check_whole(name: str, value, least: int, option: str) -> None:
    """Refuse a count that is not a whole number >= ``least`` (NaN, infinite, negative,
    fractional or not a number)."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise UsageError(f"{name}={value!r} ({option}): give a whole number >= {least}")


def _tables(per_query: pd.DataFrame, meta: list[dict], *, n_boot: int, seed: int,
            correction: str) -> RetrievalResults:
    """The aggregate tables of per-query rows."""
    from .metrics import METRICS, aggregate
    from .results import _COLUMNS
    from .stats import cluster_intervals, paired_tests

    means = aggregate(per_query)
    ci = cluster_intervals(per_query, n_boot=n_boot, seed=seed)
    keys = ["model", "mode", "usage"]
    overall = means.merge(ci.drop(columns=["n", *METRICS]), on=keys, how="left",
                          validate="one_to_one")
    tests = paired_tests(per_query, n_boot=n_boot, seed=seed, correction=correction)
    return RetrievalResults(
        per_query[list(_COLUMNS["per_query"])], overall[list(_COLUMNS["overall"])],
        grouped_means(per_query, "idiom"), grouped_means(per_query, "subject"), tests, meta)


def _modes_of(name: str, wanted: tuple[str, ...]) -> tuple[str, ...]:
    if name != LEXICAL:
        return wanted
    got = tuple(m for m in wanted if m in BM25_MODES)
    if not got:
        raise UsageError(f"bm25 has no mode among {', '.join(wanted)}: the lexical control "
                         f"has the modes {', '.join(BM25_MODES)}")
    return got


def _bm25_fingerprint(k1: float, b: float) -> dict:
    return {"family": "bm25", "model": LEXICAL, "k1": k1, "b": b, "epsilon": EPSILON,
            "tokenizer": f"lower-case, then {TOKEN_RE.pattern}",
            "implementation": "ncprobe.retrieval.bm25 (rank_bm25.BM25Okapi's formula)"}


def _load(name: str, device, dtype, allow_remote_code: bool):
    from ..encoders.registry import load_encoder
    from .encode import check_text_model

    # a static, ELMo or plain transformer model: refused for what it is, before the layer
    # view below (which such a model would refuse as an option without effect)
    check_text_model(name, allow_remote_code=allow_remote_code)
    # the layer view does not matter here (the text encoder pools the last hidden states);
    # the last layer alone is one every model has
    return load_encoder(name, "en", layers="-1", device=device, dtype=dtype,
                        allow_remote_code=allow_remote_code)


def _dense(name: str, encoder, idiolink: IdioLink, cfg: dict, cache_dir, use_cache: bool,
           batch_size: int, span_fallback: str | None, progress: bool,
           say: Callable[[str], None] = _silent) -> tuple[list[pd.DataFrame], dict]:
    """One dense model's per-query rows, per mode, and its run metadata (``say``: told of
    each step, a line to follow the model's own words)."""
    from ..cache import EmbeddingStore, vector_shape
    from ..embed import embed
    from ..encoders.registry import query_format_of
    from .encode import TextItem, text_encoder

    fmt = query_format_of(name)
    modes = tuple(cfg["modes"])
    enc = text_encoder(encoder)
    docs = [TextItem(document_text(fmt, d.sentence)) for d in idiolink.documents]
    plain = any(m in ("sentence", "span") for m in modes)
    instructed = any(m.startswith("instruction_") for m in modes)
    queries: dict[str, list[TextItem]] = {}
    for kind, on, pooled in (("plain", plain, "span"), ("instructed", instructed,
                                                         "instruction_span")):
        if not on:
            continue
        items = []
        for q in idiolink.queries:
            qt = query_text(fmt, pooled, q.sentence, q.span, q.start, q.end)
            assert qt.span is not None, "a span mode always gives a span"
            items.append(TextItem(qt.text, qt.span))
        queries[kind] = items
    items = docs + [it for kind in ("plain", "instructed") for it in queries.get(kind, [])]
    store = None
    if use_cache:
        store = EmbeddingStore(enc.fingerprint(), cache_dir, shape=vector_shape(enc))
    say(f": encoding {len(docs)} documents and {len(items) - len(docs)} query texts")
    # text items and the text encoder are what embed needs of stimuli and encoders (tokens
    # and span; encode and fingerprint)
    got = embed(items, enc, store=store, batch_size=batch_size,  # type: ignore[arg-type]
                progress=progress)
    n_d = len(docs)
    doc_vecs = got.sent[:n_d, 0]
    if any(m.endswith("span") for m in modes) and got.span.shape[-1] != doc_vecs.shape[-1]:
        raise UsageError(
            f"{name}: its span vectors (the transformer's last hidden states) have "
            f"{got.span.shape[-1]} dimensions but its sentence embeddings {doc_vecs.shape[-1]} "
            "(a layer after the pooling changes the size), so a span cannot be compared with "
            "the documents; run it in the sentence modes only (--modes "
            "sentence,instruction_sentence)")
    offset = {"plain": n_d, "instructed": n_d + len(queries.get("plain", []))}
    n_q = len(idiolink.queries)
    frames, notes = [], []
    ids = [q.id for q in idiolink.queries]
    for i, mode in enumerate(modes, start=1):
        say(f", mode {i}/{len(modes)} ({mode}): ranking {n_q} queries against {n_d} documents")
        kind = "instructed" if mode.startswith("instruction_") else "plain"
        rows = slice(offset[kind], offset[kind] + n_q)
        vecs = (got.span if mode.endswith("span") else got.sent)[rows, 0]
        fallback = np.zeros(n_q, dtype=bool)
        if mode.endswith("span"):
            fallback = got.missing_span_words[rows] > 0
            if fallback.any():
                lost = [ids[i] for i in np.flatnonzero(fallback)]
                shown = ", ".join(lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5
                                                else "")
                if span_fallback is None:
                    raise DataError(
                        f"{name}, mode {mode}: the span of {len(lost)} quer"
                        f"{'y' if len(lost) == 1 else 'ies'} ({shown}) could not be pooled: no "
                        "token of the model overlaps it (truncated away?). Nothing falls back "
                        "silently: pass --span-fallback sentence (Python: "
                        "span_fallback='sentence') to use those queries' sentence vectors, "
                        "marked in the results")
                vecs = vecs.copy()
                vecs[fallback] = got.sent[rows, 0][fallback]
                notes.append(f"{mode}: {len(lost)} span(s) could not be pooled; their "
                             f"sentence vectors were used (span_fallback): {shown}")
        scores = _cosine(vecs, doc_vecs, name, mode)
        frames.append(evaluate(scores, idiolink, name, mode).assign(fallback=fallback))
    run = {"config": cfg, "fingerprint": enc.fingerprint(),
           "notes": notes, "encoded": got.encoded}
    if store is not None and store.problems:
        run["cache_problems"] = list(store.problems)
    return frames, run


def _cosine(queries: np.ndarray, docs: np.ndarray, name: str, mode: str) -> np.ndarray:
    """Cosine similarities, queries x documents, in float64."""
    q = queries.astype(np.float64)
    d = docs.astype(np.float64)
    qn = np.linalg.norm(q, axis=1, keepdims=True)
    dn = np.linalg.norm(d, axis=1, keepdims=True)
    if not (qn > 0).all() or not (dn > 0).all() or not np.isfinite(q).all() \
            or not np.isfinite(d).all():
        raise DataError(f"{name}, mode {mode}: a vector is zero or not finite; cosine "
                        "similarity is undefined for it")
    return (q / qn) @ (d / dn).T

