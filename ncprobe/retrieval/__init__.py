"""The retrieval probe (IdioLink): rank a split's documents for each query and score the
rankings. :mod:`.bm25` is the lexical control, :mod:`.metrics` R-Precision and nDCG@10 with
their tie ranges and aggregates."""

from __future__ import annotations

from .bm25 import BM25, bm25_scores, tokenize
from .metrics import aggregate, evaluate, rank, ranking_metrics, relevance_matrix

__all__ = ["BM25", "aggregate", "bm25_scores", "evaluate", "rank", "ranking_metrics",
           "relevance_matrix", "tokenize"]
