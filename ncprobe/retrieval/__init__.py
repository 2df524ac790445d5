"""The retrieval probe (IdioLink): rank a split's documents for each query and score the
rankings.

:func:`retrieve` runs it end to end (:mod:`.probe`) and returns a :class:`RetrievalResults`
(:mod:`.results`: tables, results directory, summary). Its parts: :mod:`.queries` (the query
modes and texts), :mod:`.encode` (raw text and character spans through the embedding cache),
:mod:`.bm25` (the lexical control), :mod:`.metrics` (R-Precision and nDCG@10 with their tie
ranges and aggregates), :mod:`.stats` (idiom-cluster intervals and paired tests) and
:mod:`.report` (the paper's Table 2 layout and the figures).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .bm25 import BM25, bm25_scores, tokenize
    from .config import RetrievalConfig
    from .metrics import aggregate, evaluate, rank, ranking_metrics, relevance_matrix
    from .probe import retrieve
    from .queries import QUERY_MODES
    from .results import RetrievalResults
    from .stats import cluster_intervals, default_pairs, paired_tests

__all__ = ["BM25", "QUERY_MODES", "RetrievalConfig", "RetrievalResults", "aggregate", "bm25_scores",
           "cluster_intervals", "default_pairs", "evaluate", "paired_tests", "rank",
           "ranking_metrics", "relevance_matrix", "retrieve", "tokenize"]

#: Where each public name lives: imported when first asked for, so that the probe registry
#: (:mod:`ncprobe.retrieval.seam`) loads without the retrieval machinery.
_HOMES = {"BM25": "bm25", "bm25_scores": "bm25", "tokenize": "bm25", "aggregate": "metrics",
          "evaluate": "metrics", "rank": "metrics", "ranking_metrics": "metrics",
          "relevance_matrix": "metrics", "retrieve": "probe", "QUERY_MODES": "queries",
          "RetrievalResults": "results", "RetrievalConfig": "config", "cluster_intervals": "stats",
          "default_pairs": "stats", "paired_tests": "stats"}


def __getattr__(name: str):
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
