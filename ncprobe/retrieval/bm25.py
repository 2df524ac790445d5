"""The lexical control of IdioLink: Okapi BM25 exactly as ``rank_bm25.BM25Okapi``.

The benchmark ranks documents with ``rank_bm25.BM25Okapi`` (k1 = 0.9, b = 0.4, epsilon
0.25) over documents and queries tokenised by :func:`tokenize`. :class:`BM25` is the same
formula over an inverted index: the idf ``log(N - n + 0.5) - log(n + 0.5)`` of every term,
negative ones floored to ``epsilon`` times the average idf (the average over the terms in order
of first appearance, as ``rank_bm25`` sums it), and a document's score the sum over the query's
tokens (repeated tokens counted each time) of ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b *
dl / avgdl))``. Each term's weights are computed with ``rank_bm25``'s floating-point
operations in its order and added in the query's token order, so the scores are those of
``rank_bm25`` (``tests/test_retrieval_bm25.py`` checks them to 1e-9); only documents that hold
a term are touched, which makes the whole test split's two modes take about a second instead
of minutes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from ..data.idiolink import IdioLink

__all__ = ["B", "EPSILON", "K1", "MODES", "TOKEN_RE", "BM25", "bm25_scores", "check_parameters",
           "tokenize"]

#: The benchmark's BM25 parameters (the published figures use these, not tuned ones).
K1 = 0.9
B = 0.4
#: ``rank_bm25.BM25Okapi``'s idf floor, as a fraction of the average idf.
EPSILON = 0.25
#: The benchmark's tokens (applied to lower-cased text).
TOKEN_RE = re.compile(r"\b\w+(?:'\w+)?\b")
#: BM25's query modes: the whole query sentence, or the span (the PIE) alone.
MODES = ("sentence", "span")


def check_parameters(k1: float, b: float, epsilon: float = EPSILON) -> None:
    """Refuse BM25 parameters outside their range, where the formula is not BM25 (a
    negative ``k1`` or a ``b`` above 1 can make scores negative or infinite, NaN ranks
    documents arbitrarily).

    Args:
        k1: term-frequency saturation: a finite number >= 0 (0: term frequency ignored).
        b: length normalisation: a finite number from 0 (none) to 1 (full).
        epsilon: the idf floor's fraction of the average idf: a finite number >= 0.

    Raises:
        UsageError: (a ``ValueError``) naming the parameter, the value and its range.
    """
    from ..errors import UsageError

    for name, value, low, high, option in (("k1", k1, 0.0, None, "--k1"),
                                           ("b", b, 0.0, 1.0, "--b"),
                                           ("epsilon", epsilon, 0.0, None, None)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                             np.floating)):
            raise UsageError(f"BM25 {name}={value!r}: give a number")
        x = float(value)
        if not math.isfinite(x) or x < low or (high is not None and x > high):
            valid = (f"a finite number from {low:g} to {high:g}" if high is not None
                     else f"a finite number >= {low:g}")
            raise UsageError(f"BM25 {name}={value!r}" + (f" ({option})" if option else "")
                             + f": {name} must be {valid} (the benchmark's: "
                             f"{ {'k1': K1, 'b': B, 'epsilon': EPSILON}[name]})")


def tokenize(text: str) -> list[str]:
    """The benchmark's tokens: lower-case, then ``\\b\\w+(?:'\\w+)?\\b``.

    Example:
        >>> tokenize("He didn't SPILL the beans, did he?")
        ['he', "didn't", 'spill', 'the', 'beans', 'did', 'he']
    """
    return TOKEN_RE.findall(text.lower())


class BM25:
    """Okapi BM25 over a tokenised corpus, scoring as ``rank_bm25.BM25Okapi.get_scores``.

    Args:
        corpus: the documents, each a list of tokens (see :func:`tokenize`).
        k1: term-frequency saturation (default :data:`K1`, the benchmark's 0.9).
        b: length normalisation (default :data:`B`, the benchmark's 0.4).
        epsilon: negative idfs become ``epsilon`` times the average idf.

    Raises:
        ValueError: an empty corpus; a parameter out of its range (:func:`check_parameters`:
            a :class:`~ncprobe.errors.UsageError`).
    """

    def __init__(self, corpus: Sequence[Sequence[str]], k1: float = K1, b: float = B,
                 epsilon: float = EPSILON) -> None:
        check_parameters(k1, b, epsilon)
        if not corpus:
            raise ValueError("BM25 needs at least one document")
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.corpus_size = len(corpus)
        doc_len = np.array([len(d) for d in corpus])
        self.avgdl = sum(len(d) for d in corpus) / self.corpus_size
        postings: dict[str, tuple[list[int], list[int]]] = {}  # in order of first appearance
        for i, doc in enumerate(corpus):
            freqs: dict[str, int] = {}
            for word in doc:
                freqs[word] = freqs.get(word, 0) + 1
            for word, tf in freqs.items():
                docs, tfs = postings.setdefault(word, ([], []))
                docs.append(i)
                tfs.append(tf)
        # rank_bm25's idf: summed in the order of first appearance, negatives floored
        self.idf: dict[str, float] = {}
        idf_sum = 0.0
        negative = []
        for word, (docs, _) in postings.items():
            idf = math.log(self.corpus_size - len(docs) + 0.5) - math.log(len(docs) + 0.5)
            self.idf[word] = idf
            idf_sum += idf
            if idf < 0:
                negative.append(word)
        self.average_idf = idf_sum / len(self.idf) if self.idf else 0.0
        for word in negative:
            self.idf[word] = epsilon * self.average_idf
        # rank_bm25's operations, in its order: q_freq * (k1 + 1) / (q_freq + k1 * (1 - b +
        # b * doc_len / avgdl)), times the idf
        norm = k1 * (1 - b + b * doc_len / self.avgdl)
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for word, (docs, tfs) in postings.items():
            d = np.array(docs, dtype=np.intp)
            q_freq = np.array(tfs)
            self._postings[word] = (d, self.idf[word] * (q_freq * (k1 + 1)
                                                         / (q_freq + norm[d])))

    def get_scores(self, query: Iterable[str]) -> np.ndarray:
        """The score of every document for a tokenised query (float64, corpus order)."""
        score = np.zeros(self.corpus_size)
        for q in query:
            hit = self._postings.get(q)
            if hit is not None:
                score[hit[0]] += hit[1]
        return score

    def score_matrix(self, queries: Sequence[Sequence[str]]) -> np.ndarray:
        """:meth:`get_scores` of every query: an array of queries x documents."""
        out = np.zeros((len(queries), self.corpus_size))
        for i, q in enumerate(queries):
            out[i] = self.get_scores(q)
        return out


def bm25_scores(idiolink: IdioLink, mode: Literal["sentence", "span"] = "sentence",
                k1: float = K1, b: float = B, epsilon: float = EPSILON) -> np.ndarray:
    """BM25 scores of a split: queries x documents, in the files' order.

    The corpus is every document sentence of the split, tokenised by :func:`tokenize`; the
    query is the query's sentence (``mode="sentence"``) or its span alone (``"span"``).

    Args:
        idiolink: a split (:func:`~ncprobe.data.idiolink.load_idiolink`).
        mode: ``sentence`` or ``span``.
        k1, b, epsilon: see :class:`BM25` (defaults: the benchmark's).

    Raises:
        ValueError: an unknown mode; a parameter out of its range (:func:`check_parameters`).

    Example:
        >>> il = load_idiolink("test")                        # doctest: +SKIP
        >>> bm25_scores(il, "span").shape                     # doctest: +SKIP
        (1500, 7500)
    """
    if mode not in MODES:
        raise ValueError(f"unknown BM25 mode {mode!r}; the modes are " + ", ".join(MODES))
    check_parameters(k1, b, epsilon)  # before the corpus is tokenised
    index = BM25([tokenize(d.sentence) for d in idiolink.documents], k1=k1, b=b,
                 epsilon=epsilon)
    texts = [q.sentence if mode == "sentence" else q.span for q in idiolink.queries]
    return index.score_matrix([tokenize(t) for t in texts])
