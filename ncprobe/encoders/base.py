"""The Encoder protocol: pre-tokenised sentences with one word span each -> vectors.

Every model family satisfies one small protocol. Given a batch of sentences
(each a sequence of words) and one word span ``[start, end)`` per sentence, an
encoder returns, for each configured *view* (a set of layers averaged
together), the sentence vector and the span vector:

* a word vector is the mean of its sub-token vectors;
* the span vector is the mean of the span's word vectors;
* the sentence vector is the mean of the sentence's word vectors.

Special tokens ([CLS], [SEP], <s>, padding) belong to no word and are never
pooled. A word that the model cannot represent (a static model's
out-of-vocabulary word, a word the tokenizer maps to no sub-token) is left out
of the means and counted; a span with no representable word gets NaN and is
reported, never silently replaced by zeros or by the sentence vector.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

#: The default layer view of transformer models: the mean of the last four layers.
LAST_FOUR = (-4, -3, -2, -1)


@dataclass
class Encoded:
    """What an encoder returns for a batch of ``n`` sentences.

    Attributes:
        sent: ``(n, views, dim)`` float32 sentence vectors (NaN where not available).
        span: ``(n, views, dim)`` float32 span vectors (NaN where no word of the
            span could be represented).
        missing_words: per sentence, the number of words left out (OOV etc.).
        missing_span_words: per sentence, the number of span words left out.
    """

    sent: np.ndarray
    span: np.ndarray
    missing_words: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    missing_span_words: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))


@runtime_checkable
class Encoder(Protocol):
    """What every model family implements.

    Attributes:
        name: the model's user-facing name (alias or id).
        dim: vector size.
        views: the layer views, one tuple of layer indices each (``((0,),)`` for
            models without layers).
        levels: which of ``sent`` and ``nc`` the encoder provides.
    """

    name: str
    dim: int
    views: tuple[tuple[int, ...], ...]
    levels: tuple[str, ...]

    def fingerprint(self) -> dict:
        """Everything that determines the vectors: model id, revision or weight hash,
        views, pooling, dtype, format version. Two encoders with equal
        fingerprints must return equal vectors."""
        ...

    def encode(self, sentences: Sequence[Sequence[str]], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
        """Encode one batch."""
        ...


def pool_words(states: np.ndarray, word_of_token: Sequence[int | None], n_words: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Mean of sub-token vectors per word.

    Args:
        states: ``(tokens, views, dim)`` vectors of one sentence.
        word_of_token: for each token its word index, or ``None`` for special tokens.
        n_words: number of words in the sentence.

    Returns:
        ``(words, views, dim)`` word vectors (NaN for words with no token) and a
        boolean mask of the words that have at least one token.
    """
    out = np.zeros((n_words,) + states.shape[1:], dtype=np.float64)
    counts = np.zeros(n_words, dtype=np.int64)
    for t, w in enumerate(word_of_token):
        if w is not None:
            out[w] += states[t]
            counts[w] += 1
    has = counts > 0
    out[has] /= counts[has][:, None, None]
    out[~has] = np.nan
    return out, has


def pool_sentence_and_span(words: np.ndarray, has: np.ndarray, span: tuple[int, int]
                           ) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Sentence vector (mean of words) and span vector (mean of span words).

    Returns ``(sent, span, missing_words, missing_span_words)``; a vector with no
    word to average is NaN.
    """
    start, end = span
    nan = np.full(words.shape[1:], np.nan)
    sent = words[has].mean(axis=0) if has.any() else nan
    in_span = has[start:end]
    span_vec = words[start:end][in_span].mean(axis=0) if in_span.any() else nan
    return sent, span_vec, int((~has).sum()), int((~in_span).sum())
