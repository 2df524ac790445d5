"""The Encoder protocol: pre-tokenised sentences with one word span each -> vectors.

Every model family satisfies one small protocol. Given a batch of sentences
(each a sequence of words) and one word span ``[start, end)`` per sentence, an
encoder returns, for each configured *view* (a set of layers averaged
together), the sentence vector and the span vector:

* a word vector is the mean of its sub-token vectors;
* the span vector is the mean of the span's word vectors;
* the sentence vector is the mean of the sentence's word vectors.

A model with a sentence embedding of its own (a sentence-transformers model's pooling,
Dense and normalisation modules) still gives the mean of the word vectors in every view;
its own embedding comes beside them, once (``Encoded.own``, the view
:data:`~ncprobe.schema.OWN_VIEW` of the results, sentence level only).

Special tokens ([CLS], [SEP], <s>, padding) belong to no word and are never
pooled. A word that the model cannot represent (a static model's
out-of-vocabulary word, a word the tokenizer maps to no sub-token) is left out
of the means and counted; a span with no representable word gets NaN and is
reported, never silently replaced by zeros or by the sentence vector.

This module is the contract only. What the model families share lives beside it:
:mod:`ncprobe.encoders._env` (packages, devices, dtypes, the network, model paths),
:mod:`ncprobe.encoders._pool` (sub-token -> word -> span pooling of transformer states) and
:func:`ncprobe._io.hash_cache` (the weight-hash cache that fingerprints use).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import DataError

#: The default layer view of transformer models: the mean of the last four layers.
LAST_FOUR = (-4, -3, -2, -1)


def has_own_sentence(encoder) -> bool:
    """Whether ``encoder`` gives a sentence embedding of its own (``Encoded.own``) beside the
    views' means of the word vectors: it has an ``own_fingerprint`` method."""
    return callable(getattr(encoder, "own_fingerprint", None))


@dataclass
class Encoded:
    """What an encoder returns for a batch of ``n`` sentences.

    Attributes:
        sent: ``(n, views, dim)`` float32 sentence vectors (NaN where not available).
        span: ``(n, views, dim)`` float32 span vectors (NaN where no word of the
            span could be represented).
        missing_words: per sentence, the number of words left out (OOV etc.).
        missing_span_words: per sentence, the number of span words left out.
        own: ``(n, own dim)`` float32, the model's own sentence embedding of each sentence
            (one vector, whatever the views), from encoders that have one
            (:meth:`Encoder.own_fingerprint`); ``None`` for the others.
    """

    sent: np.ndarray
    span: np.ndarray
    missing_words: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    missing_span_words: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    own: np.ndarray | None = None


@runtime_checkable
class Encoder(Protocol):
    """What every model family implements.

    Attributes:
        name: the model's user-facing name (alias or id).
        dim: vector size.
        views: the layer views, one tuple of layer indices each (``((0,),)`` for
            models without layers).
        levels: which of ``sent`` and ``nc`` the encoder provides.
        view_names: optional labels of the views for results tables (default: the
            layer indices joined with ``+``, e.g. ``9+10+11+12``); an encoder with a
            sentence embedding of its own names it last, :data:`~ncprobe.schema.OWN_VIEW`.
        view_levels: optional, one tuple of levels per name of ``view_names`` (default:
            ``levels`` for every view): the own sentence embedding has ``("sent",)`` only.
        own_fingerprint: optional method, only on encoders with a sentence embedding of
            their own (they return it in :attr:`Encoded.own`): the fingerprint of the store
            entry that keeps it, one view whatever the layer views
            (:func:`ncprobe.embed.embed` writes it from the same batches).
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


@runtime_checkable
class StagedEncoder(Encoder, Protocol):
    """An encoder whose batch runs in stages, which :func:`ncprobe.batches.run_batches`
    overlaps: ``collect(launch(collate(tokenize(sentences), sentences, spans)))`` is
    ``encode(sentences, spans)``, value for value.

    ``tokenize`` and ``collate`` run on a worker thread and touch only the CPU (they may
    raise :class:`SentenceTooLongError`); ``launch`` queues the batch's device work and
    returns without waiting for it; ``collect`` waits and returns the vectors.
    """

    def load(self) -> None:
        """Load the model now (before the stages run on two threads)."""
        ...

    def token_bytes(self) -> int | None:
        """Device memory a batch holds per token (for an automatic token budget), or
        ``None`` where batches should be of a count (a model on the CPU)."""
        ...

    def tokenize(self, sentences: Sequence[Sequence[str]]) -> list:
        """One tokenised item per sentence; ``len(item)`` is its number of tokens."""
        ...

    def collate(self, tokens: Sequence, sentences: Sequence[Sequence[str]],
                spans: Sequence[tuple[int, int]]):
        """A batch of tokenised items, ready for :meth:`launch`."""
        ...

    def launch(self, batch):
        """Start the batch on the device; returns what :meth:`collect` takes."""
        ...

    def collect(self, launched) -> Encoded:
        """The batch's vectors (waits for the device)."""
        ...


def encode_in_stages(encoder: StagedEncoder, sentences: Sequence[Sequence[str]],
                     spans: Sequence[tuple[int, int]]) -> Encoded:
    """A staged encoder's ``encode``: its stages one after the other on this thread."""
    return encoder.collect(encoder.launch(encoder.collate(encoder.tokenize(sentences),
                                                          sentences, spans)))


class SentenceTooLongError(DataError):
    """A sentence of the batch has more tokens than the model takes.

    :func:`ncprobe.embed.embed` turns it into a :class:`~ncprobe.errors.DataError` that
    names the stimulus (file, row, NC, context, probe).

    Attributes:
        index: the sentence's position in the batch given to ``encode``.
        n_tokens: its length in the model's tokens (special tokens included).
        limit: the most tokens the model takes.
    """

    def __init__(self, model: str, index: int, n_tokens: int, limit: int) -> None:
        self.model, self.index, self.n_tokens, self.limit = model, index, n_tokens, limit
        super().__init__(f"{model}: sentence {index} of the batch has {n_tokens} tokens, more "
                         f"than the model's limit of {limit}")
