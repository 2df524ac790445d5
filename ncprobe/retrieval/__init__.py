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

from .bm25 import BM25, bm25_scores, tokenize
from .metrics import aggregate, evaluate, rank, ranking_metrics, relevance_matrix
from .probe import retrieve
from .queries import QUERY_MODES
from .results import RetrievalResults
from .stats import cluster_intervals, default_pairs, paired_tests

__all__ = ["BM25", "QUERY_MODES", "RetrievalResults", "aggregate", "bm25_scores",
           "cluster_intervals", "default_pairs", "evaluate", "paired_tests", "rank",
           "ranking_metrics", "relevance_matrix", "retrieve", "tokenize"]
