"""IdioLink's metrics: R-Precision and nDCG@10 (binary gains) per query, their tie ranges, and
their means overall, per query usage, per idiom and per subject.

Written by hand rather than through an IR library: the protocol's definitions are a few lines
(R-Precision: relevant documents among the first R over R; nDCG@10: DCG = sum over ranks i =
1..10 of rel_i / log2(i + 1), ideal DCG over min(R, 10) relevant documents), and computing
them on the whole score matrix at once also gives the tie range, which no library reports.

**Tie rule.** Documents are ranked by score, descending, with a stable sort: documents with
equal scores keep their order in the corpus (``indexes.json``). The benchmark sorts with
numpy's default (non-stable) argsort, whose order of tied documents depends on the numpy build
and the CPU, so its figures can differ from these within the **tie range**: for each query,
the least and the most a metric can take when only documents with exactly equal scores are
reordered (relevant documents placed last, or first, within every tie group; for R-Precision
only the group straddling the R cut-off matters, for nDCG@10 every group overlapping ranks
1-10). The ranges' means over queries are the ``*_min`` and ``*_max`` columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from ..data.idiolink import IdioLink

__all__ = ["CUTOFF", "METRICS", "TOP", "aggregate", "evaluate", "rank", "ranking_metrics",
           "relevance_matrix", "tie_ranges"]

#: The nDCG cut-off.
CUTOFF = 10
#: The benchmark keeps the first 100 documents of a ranking (R <= 60 and the cut-off 10 lie
#: inside them, so the metrics do not depend on it).
TOP = 100
#: The metric columns, as fractions.
METRICS = ("r_precision", "ndcg@10")
_GROUPS = ("usage", "idiom", "subject")


def rank(scores: np.ndarray, relevant: np.ndarray | None = None,
         ties: str = "stable", top: int | None = None) -> np.ndarray:
    """Document indices of each query in ranked order (queries x documents).

    Args:
        scores: queries x documents.
        relevant: boolean, queries x documents (needed for ``ties="best"`` / ``"worst"``).
        ties: ``stable`` (equal scores keep the corpus order: the tie rule), ``best``
            (relevant documents first within equal scores, then corpus order) or ``worst``
            (relevant last).
        top: only the first ``top`` ranks (``stable`` ties): the same indices as the first
            ``top`` columns of the whole ranking, found without sorting every document.
    """
    neg = -np.asarray(scores, dtype=float) + 0.0  # + 0.0: -0.0 and 0.0 as one key
    if ties == "stable":
        if top is not None and top < neg.shape[-1]:
            return _first_ranks(neg, top)
        return np.argsort(neg, axis=-1, kind="stable")
    if relevant is None or ties not in ("best", "worst"):
        raise ValueError("ties must be 'stable', or 'best' / 'worst' with a relevance matrix")
    second = ~relevant if ties == "best" else relevant
    return np.lexsort((second, neg), axis=-1)  # lexsort is stable: then corpus order


def _first_ranks(neg: np.ndarray, top: int) -> np.ndarray:
    """The first ``top`` columns of ``argsort(neg, kind="stable")``, per row.

    A partition finds each row's ``top`` smallest keys; when no other document has a key
    equal to the largest of them, they are exactly the first ``top`` of the stable order, and
    sorting them alone (in corpus order first, then stably by key) gives that order. Rows
    with a tie across the cut are sorted whole.
    """
    part = np.argpartition(neg, top - 1, axis=1)[:, :top]
    kth = np.take_along_axis(neg, part, axis=1).max(axis=1)
    whole = np.flatnonzero((neg <= kth[:, None]).sum(axis=1) != top)
    cand = np.sort(part, axis=1)  # corpus order, so that the stable sort keeps it in ties
    order = np.argsort(np.take_along_axis(neg, cand, axis=1), axis=1, kind="stable")
    out = np.take_along_axis(cand, order, axis=1)
    if whole.size:
        out[whole] = np.argsort(neg[whole], axis=1, kind="stable")[:, :top]
    return out


def ranking_metrics(order: np.ndarray, relevant: np.ndarray) -> dict[str, np.ndarray]:
    """R-Precision and nDCG@10 of each query, from its ranking and its relevant documents.

    Args:
        order: document indices in ranked order, queries x documents (:func:`rank`).
        relevant: boolean, queries x documents: ``relevant[q, d]``.

    Returns:
        ``{"r_precision": ..., "ndcg@10": ..., "relevant": R}``, one value per query.
    """
    n_rel = relevant.sum(axis=1)
    if (n_rel == 0).any():
        raise ValueError("a query has no relevant document")
    ranked = np.take_along_axis(relevant, order[:, :TOP], axis=1).astype(float)
    hits = np.cumsum(ranked, axis=1)
    r_prec = hits[np.arange(len(n_rel)), np.minimum(n_rel, ranked.shape[1]) - 1] / n_rel
    discount = 1.0 / np.log2(np.arange(2, CUTOFF + 2))  # ranks 1..10
    k = min(CUTOFF, ranked.shape[1])
    dcg = ranked[:, :k] @ discount[:k]
    ideal = np.concatenate([[0.0], np.cumsum(discount)])[np.minimum(n_rel, k)]
    return {"r_precision": r_prec, "ndcg@10": dcg / ideal, "relevant": n_rel}


def tie_ranges(scores: np.ndarray, relevant: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """:func:`ranking_metrics` under the three tie orders: ``stable`` (the tie rule),
    ``worst`` and ``best`` (see :func:`rank`).

    Only a query with two equal scores among its first ``max(R, 10) + 1`` ranked documents
    can differ between the orders (a tie beyond them moves neither metric), so the worst
    and best orders are ranked for those queries alone: for dense scores, which rarely
    tie, that is a few queries instead of every one.
    """
    k = min(scores.shape[1], max(int(relevant.sum(axis=1).max()), CUTOFF) + 1)
    order = rank(scores, top=max(TOP, k))
    stable = ranking_metrics(order, relevant)
    top = np.take_along_axis(scores, order[:, :k], axis=1)
    tied = np.flatnonzero((top[:, 1:] == top[:, :-1]).any(axis=1))
    out = {"stable": stable}
    for ties in ("worst", "best"):
        got = {m: v.copy() for m, v in stable.items()}
        if tied.size:
            sub = ranking_metrics(rank(scores[tied], relevant[tied], ties), relevant[tied])
            for m in METRICS:
                got[m][tied] = sub[m]
        out[ties] = got
    return out


def relevance_matrix(idiolink: IdioLink) -> np.ndarray:
    """Boolean queries x documents: ``[q, d]`` is whether document d is relevant to query q
    (:meth:`~ncprobe.data.idiolink.IdioLink.relevant`)."""
    col = {d.id: j for j, d in enumerate(idiolink.documents)}
    out = np.zeros((len(idiolink.queries), len(idiolink.documents)), dtype=bool)
    for i, q in enumerate(idiolink.queries):
        out[i, [col[d] for d in idiolink.relevant(q)]] = True
    return out


def evaluate(scores: np.ndarray, idiolink: IdioLink, model: str = "bm25",
             mode: str = "sentence") -> pd.DataFrame:
    """The metrics of every query of a split, with the stable tie rule and the tie range.

    Args:
        scores: queries x documents, in the split's order (e.g.
            :func:`~ncprobe.retrieval.bm25.bm25_scores`).
        idiolink: the split.
        model, mode: written into the ``model`` and ``mode`` columns.

    Returns:
        One row per query, in file order: ``model, mode, query, idiom, subject, usage,
        relevant`` (R), then ``r_precision, ndcg@10`` (fractions; ties ranked stably, by
        document position in ``indexes.json``) and ``r_precision_min, r_precision_max,
        ndcg@10_min, ndcg@10_max`` (the tie range: tied documents reordered, relevant last
        or first).
    """
    scores = np.asarray(scores, dtype=float)
    shape = (len(idiolink.queries), len(idiolink.documents))
    if scores.shape != shape:
        raise ValueError(f"scores have shape {scores.shape}; the split needs {shape}")
    rel = relevance_matrix(idiolink)
    got = tie_ranges(scores, rel)
    q = idiolink.queries
    frame = pd.DataFrame({"model": model, "mode": mode, "query": [r.id for r in q],
                          "idiom": [r.idiom for r in q], "subject": [r.subject for r in q],
                          "usage": [r.usage for r in q], "relevant": got["stable"]["relevant"]})
    for m in METRICS:
        frame[m] = got["stable"][m]
    for m in METRICS:
        frame[m + "_min"] = got["worst"][m]
        frame[m + "_max"] = got["best"][m]
    return frame


def aggregate(per_query: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """Mean metrics over queries: overall and per query usage, or per idiom or subject.

    Args:
        per_query: :func:`evaluate`'s rows (one or more model x mode).
        by: ``None`` (rows with ``usage`` ``all``, ``literal``, ``idiomatic``), or
            ``usage``, ``idiom`` or ``subject`` (one row per value).

    Returns:
        A tidy frame: ``model, mode``, the group column, ``r_precision, ndcg@10`` (fractions,
        stable tie rule), ``*_min`` / ``*_max`` (the tie range of each mean) and ``n``
        (queries).
    """
    values = [m + s for m in METRICS for s in ("", "_min", "_max")]
    keys = ["model", "mode"]
    if by is None:
        overall = per_query.groupby(keys, sort=False)[values].mean().reset_index()
        overall.insert(2, "usage", "all")
        overall["n"] = per_query.groupby(keys, sort=False).size().to_numpy()
        split = aggregate(per_query, "usage")
        out = pd.concat([overall, split], ignore_index=True)
        pairs = list(zip(out["model"], out["mode"], strict=True))
        first = {k: i for i, k in enumerate(dict.fromkeys(
            zip(per_query["model"], per_query["mode"], strict=True)))}
        out["_k"] = [first[k] for k in pairs]
        out["_o"] = out["usage"].map({"all": 0, "literal": 1, "idiomatic": 2})
        return (out.sort_values(["_k", "_o"], kind="stable").drop(columns=["_o", "_k"])
                .reset_index(drop=True))
    if by not in _GROUPS:
        raise ValueError(f"by must be None or one of {', '.join(_GROUPS)}, not {by!r}")
    grouped = per_query.groupby(keys + [by], sort=False)
    out = grouped[values].mean().reset_index()
    out["n"] = grouped.size().to_numpy()
    return out
