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
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pandas as pd

from ..config import config_of, takes_config
from ..errors import DataError, UsageError
from .bm25 import EPSILON, TOKEN_RE, bm25_scores
from .bm25 import MODES as BM25_MODES
from .config import RetrievalConfig
from .metrics import evaluate
from .queries import document_text, query_text
from .results import RetrievalResults, grouped_means

if TYPE_CHECKING:  # pragma: no cover
    from ..data.idiolink import IdioLink

log = logging.getLogger(__name__)

__all__ = ["BM25_MODES", "LEXICAL", "planned_runs", "published_values", "retrieve"]

#: The model name of the lexical control.
LEXICAL = "bm25"


@takes_config(RetrievalConfig)
def retrieve(config: RetrievalConfig | None = None, /, *, out: str | Path | None = None,
             overwrite: bool = False, data_dir: str | Path | None = None,
             cache_dir: str | Path | None = None, use_cache: bool = True,
             progress: bool = True, idiolink: IdioLink | None = None,
             encoders: dict | None = None, on_step: Callable[[str], None] | None = None,
             **options: Any) -> RetrievalResults:
    """Run the IdioLink retrieval probe: rank every document for every query, per model and
    query mode, and score the rankings.

    The run options are the fields of :class:`~ncprobe.retrieval.config.RetrievalConfig`
    (``models``, ``modes``, ``split``, ``idioms``, ``n_boot``, ``k1``, ...:
    ``help(RetrievalConfig)``), given either as a ``RetrievalConfig`` or as keywords, with
    its defaults, meanings and checks; ``help(retrieve)`` lists them in its signature. An
    option given as ``None`` takes its default. Each model runs once; ``bm25`` runs the modes
    of :data:`BM25_MODES` among those asked for.

    Args:
        config: a :class:`~ncprobe.retrieval.config.RetrievalConfig`, instead of the keyword
            options (not both).
        out: write the results directory there (refusing to replace what it must not;
            ``overwrite`` replaces another run's results).
        data_dir: the data directory (as :func:`~ncprobe.data.idiolink.load_idiolink`).
        cache_dir, use_cache: the embedding cache (``use_cache=False``: nothing stored).
        progress: progress bars on stderr.
        idiolink: an already loaded split (instead of ``split``/``data_dir``; the results
            record its split).
        encoders: model name -> an already built encoder (e.g. in tests).
        on_step: called with one line at each step (``model 1/2 (bm25), mode 2/2 (span):
            ranking 1500 queries against 7500 documents``; ``ncprobe retrieve`` prints them
            on stderr unless ``--quiet``); ``None``: nothing is said.
        **options: the fields of :class:`~ncprobe.retrieval.config.RetrievalConfig`, by name.

    Returns:
        :class:`~ncprobe.retrieval.results.RetrievalResults`.

    Raises:
        TypeError: an option that is no RetrievalConfig field (naming the closest), or both
            ``config`` and options.
        UsageError: an option RetrievalConfig refuses (an unknown mode, a model named
            twice, a number out of its range ...), an unknown model or idiom, a mode no
            model can run, a model that is not a sentence-transformers model, an ``out``
            inside another results directory (exit 2).
        DataError: the data is missing or damaged, or a span cannot be pooled (exit 3).
        ModelUnavailableError: a model that cannot run here (exit 5).
        OutputError: ``out`` or the cache cannot be written (exit 6).

    Example:
        >>> res = ncprobe.retrieve(models=["minilm", "bm25"], split="val")  # doctest: +SKIP
        >>> print(res.summary())                                            # doctest: +SKIP
    """
    from ..data.idiolink import load_idiolink

    cfg = config_of(RetrievalConfig, config, options, caller="retrieve")
    configs = planned_runs(cfg, split=idiolink.split if idiolink is not None else None,
                           out=out, overwrite=overwrite)
    if out is not None:
        from ..results.store import check_writable

        check_writable(out)  # before any work
    if idiolink is None:
        idiolink = load_idiolink(cfg.split, data_dir,
                                 accept_modified_data=cfg.accept_modified_data)
    if cfg.idioms is not None:
        idiolink = idiolink.subset(cfg.idioms)
    say: Callable[[str], None] = on_step or _silent
    n_q, n_d = len(idiolink.queries), len(idiolink.documents)
    parts, meta = [], []
    for k, (name, run_config) in enumerate(configs.items(), start=1):
        step = f"model {k}/{len(configs)} ({name})"
        if name == LEXICAL:
            frames = []
            for i, mode in enumerate(run_config["modes"], start=1):
                say(f"{step}, mode {i}/{len(run_config['modes'])} ({mode}): ranking {n_q} "
                    f"queries against {n_d} documents")
                frames.append(evaluate(bm25_scores(idiolink, mode, k1=cfg.k1, b=cfg.b),
                                       idiolink, name, mode).assign(fallback=False))
            run = {"config": run_config, "fingerprint": _bm25_fingerprint(cfg.k1, cfg.b),
                   "notes": []}
        else:
            encoder = (encoders or {}).get(name)
            if encoder is None:
                say(f"{step}: loading the model")
                encoder = _load(name, cfg.device, cfg.dtype, cfg.allow_remote_code)
            frames, run = _dense(name, encoder, idiolink, run_config, cache_dir, use_cache,
                                 cfg.batch_size, cfg.span_fallback, progress,
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
    say(f"scoring: the tables, the intervals ({cfg.n_boot} resamples) and the paired tests")
    per_query = pd.concat(parts, ignore_index=True)
    res = _tables(per_query, meta, n_boot=cfg.n_boot, seed=cfg.seed, correction=cfg.correction)
    if out is not None:
        res.to_parquet(out, overwrite=overwrite)
    return res


def published_values(keys: list[str], *, results_dir: str | Path = "results",
                     data_dir: str | Path | None = None, cache: bool = True,
                     cache_dir: str | Path | None = None, progress: bool = False,
                     resume: bool = False, overwrite: bool = False,
                     say: Callable[[str], None] | None = None
                     ) -> dict[str, tuple[float, float, float]]:
    """The figures of Table 2 that ``keys`` name (``<model>/<mode>/<metric>``, e.g.
    ``bm25/sentence/r_precision``; every query, the test split), in percent, each with its tie
    range: key -> (value with the stable tie order, least, most). One run of the models the
    keys name, with the modes they name, at the probe's defaults otherwise, written to its
    results directory under ``results_dir`` (:func:`~ncprobe.retrieval.config.run_dir`);
    with ``resume``, a finished run there (the same options, its data files unchanged) is
    read instead of computed again.

    Raises:
        DataError: a key that is not ``<model>/<mode>/<metric>`` of a known metric.
        The errors of :func:`retrieve` (a model that cannot run here, an ``out`` refused).
    """
    from ..data.sources import sources_unchanged
    from ..errors import NcprobeError
    from ..results.store import run_identity
    from .config import run_dir
    from .metrics import METRICS

    wanted: dict[str, list[str]] = {}
    parsed = {}
    for key in keys:
        parts = key.split("/")
        if len(parts) != 3 or parts[2] not in METRICS:
            raise DataError(f"published key {key!r}: IdioLink's are <model>/<mode>/<metric> "
                            f"with a metric of {', '.join(METRICS)}")
        parsed[key] = parts
        wanted.setdefault(parts[0], [])
        if parts[1] not in wanted[parts[0]]:
            wanted[parts[0]].append(parts[1])
    modes = list(dict.fromkeys(m for ms in wanted.values() for m in ms))
    cfg = RetrievalConfig(models=tuple(wanted), modes=",".join(modes))
    out = run_dir(cfg, results_dir)
    res = None
    if resume:
        planned = [{"config": c} for c in planned_runs(cfg).values()]
        try:
            found = RetrievalResults.load(out)
        except (NcprobeError, OSError):
            found = None
        if (found is not None
                and [i["config"] for i in run_identity(found.meta, found.layout)]
                == [i["config"] for i in run_identity(planned, found.layout)]
                and all(sources_unchanged(m.get("data_sources"), data_dir)
                        for m in found.meta)):
            res = found
            if say is not None:
                say(f"idiolink: kept {out} (finished earlier; not computed again)")
    if res is None:
        res = retrieve(cfg, out=out, overwrite=overwrite, data_dir=data_dir,
                       cache_dir=cache_dir, use_cache=cache, progress=progress, on_step=say)
        if say is not None:
            say(f"idiolink: computed {out}")
    rows = {(str(r["model"]), str(r["mode"])): r for _, r in res.overall.iterrows()
            if str(r["usage"]) == "all"}
    got = {}
    for key, (model, mode, metric) in parsed.items():
        row = rows.get((model, mode))
        if row is None:  # a mode the model does not run: no figure for the key
            continue
        got[key] = (100 * float(row[metric]), 100 * float(row[metric + "_min"]),
                    100 * float(row[metric + "_max"]))
    return got


def planned_runs(config: RetrievalConfig, *, split: str | None = None,
                 out: str | Path | None = None, overwrite: bool = False) -> dict[str, dict]:
    """Each model's run config, checked before any work: the models' query formats, the
    modes of ``bm25``, and ``out`` (a directory that is not a results directory, or holds
    another run without ``overwrite``, is refused now rather than after the encoding).

    Args:
        config: the run's options (checked by RetrievalConfig itself).
        split: the split the run is made on, when it is not ``config.split`` (a split loaded
            beforehand).
        out, overwrite: as :func:`retrieve`.

    Returns:
        model -> its config (as ``run.json`` records it).

    Raises:
        UsageError: a model without a query format, a mode ``bm25`` lacks, ``out`` refused.
    """
    from ..encoders.registry import query_format_of
    from ..results.store import check_target

    # the keys in the order run.json has always had them
    shared = {"split": split if split is not None else config.split,
              "idioms": sorted(config.idioms) if config.idioms is not None else None,
              "k1": config.k1, "b": config.b, "n_boot": config.n_boot, "seed": config.seed,
              "correction": config.correction,
              "accept_modified_data": config.accept_modified_data}
    configs = {}
    for name in config.models:
        if name == LEXICAL:
            configs[name] = {"model": name, "modes": list(_modes_of(name, tuple(config.modes))),
                             **shared}
        else:
            configs[name] = {"model": name, "modes": list(config.modes), **shared,
                             "format": query_format_of(name).describe(),
                             "span_fallback": config.span_fallback, "dtype": config.dtype,
                             "batch_size": config.batch_size, "device": config.device}
    if out is not None:
        check_target(out, [{"config": run} for run in configs.values()],
                     layout=RetrievalResults.layout, overwrite=overwrite)
    return configs


def _silent(line: str) -> None:
    """Says nothing (no ``on_step``)."""


def _prefixed(say: Callable[[str], None], step: str, line: str) -> None:
    """``say`` the words of a model's step after the model's own (``model 1/2 (minilm)``)."""
    say(step + line)


def _tables(per_query: pd.DataFrame, meta: list[dict], *, n_boot: int, seed: int,
            correction: str) -> RetrievalResults:
    """The aggregate tables of per-query rows."""
    from .metrics import METRICS, aggregate
    from .results import RETRIEVAL_COLUMNS
    from .stats import cluster_intervals, paired_tests

    means = aggregate(per_query)
    ci = cluster_intervals(per_query, n_boot=n_boot, seed=seed)
    keys = ["model", "mode", "usage"]
    overall = means.merge(ci.drop(columns=["n", *METRICS]), on=keys, how="left",
                          validate="one_to_one")
    tests = paired_tests(per_query, n_boot=n_boot, seed=seed, correction=correction)
    return RetrievalResults(
        per_query[list(RETRIEVAL_COLUMNS["per_query"])],
        overall[list(RETRIEVAL_COLUMNS["overall"])],
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
    from ..embed import embed_cached
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
    say(f": encoding {len(docs)} documents and {len(items) - len(docs)} query texts")
    # text items and the text encoder are what embed needs of stimuli and encoders (tokens
    # and span; encode and fingerprint)
    got, stores = embed_cached(items, enc, cache=use_cache,  # type: ignore[arg-type]
                               cache_dir=cache_dir, batch_size=batch_size, progress=progress)
    store = stores[0] if stores else None
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

