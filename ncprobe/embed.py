"""Stimuli -> vectors: deduplicate, look up the store, encode what is missing in sorted batches.

Identical (sentence, span) items — the original sentence that every probe of
a context is compared with, or sentences shared between contexts — are
encoded once. Missing items are sorted by length (less padding), encoded in
batches, and written to the :class:`~ncprobe.cache.EmbeddingStore` every
``flush_every`` items, so an interrupted run loses at most that much work.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .cache import EmbeddingStore, item_key
from .data.stimuli import Stimulus
from .encoders.base import Encoded, Encoder, SentenceTooLongError
from .errors import DataError

log = logging.getLogger(__name__)


@dataclass
class Embeddings:
    """Vectors of a list of stimuli (row ``i`` belongs to stimulus ``i``).

    Attributes:
        sent, span: ``(n, views, dim)`` float32.
        missing_words, missing_span_words: per stimulus, words left out (OOV...).
        encoded: how many unique items needed a forward pass in this call.
        unique: how many unique items the stimuli hold.
    """

    sent: np.ndarray
    span: np.ndarray
    missing_words: np.ndarray
    missing_span_words: np.ndarray
    encoded: int
    unique: int


def embed(stimuli: Sequence[Stimulus], encoder: Encoder, *, store: EmbeddingStore | None = None,
          batch_size: int = 32, flush_every: int = 2048, progress: bool = True) -> Embeddings:
    """Vectors for every stimulus, computing each unique item once.

    Args:
        stimuli: the stimuli (any sequence, e.g. :class:`~ncprobe.data.Stimuli`).
        encoder: any :class:`~ncprobe.encoders.base.Encoder`.
        store: where vectors persist between runs (``None``: nothing stored).
        batch_size: sentences per forward pass.
        flush_every: items per stored shard.
        progress: show a progress bar (counts and rate) on stderr.

    With a store, its entry stays locked from the look-up to the last shard written:
    a second run on the same cache waits, then finds the items the first one stored
    instead of encoding and storing them again. When something must be encoded, the
    store is checked to be writable first (:meth:`~ncprobe.cache.EmbeddingStore.check_writable`),
    so a read-only cache stops the run before the encoding, not after it.

    Raises:
        OutputError: the store cannot be written (read-only, full disk, no permission).
    """
    if store is None:
        return _embed(stimuli, encoder, None, batch_size, flush_every, progress)
    with store.lock():  # also loads the shards other processes stored meanwhile
        return _embed(stimuli, encoder, store, batch_size, flush_every, progress)


def _embed(stimuli: Sequence[Stimulus], encoder: Encoder, store: EmbeddingStore | None,
           batch_size: int, flush_every: int, progress: bool) -> Embeddings:
    keys = [item_key(s.tokens, s.span) for s in stimuli]
    first: dict[bytes, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    todo = [k for k in first if store is None or k not in store]
    todo.sort(key=lambda k: (_size(stimuli[first[k]]), k))
    if store is not None and todo:
        store.check_writable()  # a read-only cache fails now, not after the encoding
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), unit="sent", desc=f"encoding with {encoder.name}",
                   leave=False)
    pending_keys: list[bytes] = []
    pending: list[Encoded] = []
    try:
        for b in range(0, len(todo), batch_size):
            chunk = todo[b:b + batch_size]
            items = [stimuli[first[k]] for k in chunk]
            try:
                enc = encoder.encode([s.tokens for s in items], [s.span for s in items])
            except SentenceTooLongError as e:
                raise _too_long(e, items[e.index], encoder) from None
            pending_keys += chunk
            pending.append(enc)
            if store is not None and len(pending_keys) >= flush_every:
                store.put(pending_keys, _concat(pending))
                pending_keys, pending = [], []
            if bar is not None:
                bar.update(len(chunk))
    finally:
        if store is not None and pending_keys:
            store.put(pending_keys, _concat(pending))
        if bar is not None:
            bar.close()
    got: Encoded | None
    if store is not None:
        done_keys, got = list(first), store.get(list(first))
    else:  # everything was encoded now, in ``todo`` order
        done_keys, got = pending_keys, _concat(pending) if pending else None
    if keys:
        # some stimuli: each was stored or encoded above, so there are vectors to take
        assert got is not None, "stimuli given but nothing encoded or stored"
        row = {k: j for j, k in enumerate(done_keys)}
        idx = np.fromiter((row[k] for k in keys), dtype=np.intp, count=len(keys))
        sent, span = got.sent[idx], got.span[idx]
        miss = got.missing_words[idx].astype(np.int32)
        miss_span = got.missing_span_words[idx].astype(np.int32)
    else:
        sent = span = np.zeros((0, 1, encoder.dim))
        miss = miss_span = np.zeros(0, dtype=np.int32)
    return Embeddings(sent.astype(np.float32), span.astype(np.float32), miss, miss_span,
                      len(todo), len(first))


def _size(item) -> int:
    """What batches are sorted by: an item's ``size`` when it has one (a raw text's length,
    :class:`~ncprobe.retrieval.encode.TextItem`), else its number of words."""
    size = getattr(item, "size", None)
    return len(item.tokens) if size is None else int(size)


def _concat(parts: list[Encoded]) -> Encoded:
    return Encoded(np.concatenate([p.sent for p in parts]), np.concatenate([p.span for p in parts]),
                   np.concatenate([p.missing_words for p in parts]),
                   np.concatenate([p.missing_span_words for p in parts]))


def _too_long(e: SentenceTooLongError, stim: Stimulus, encoder: Encoder) -> DataError:
    """The encoder's "sentence i of the batch is too long", naming the stimulus."""
    return DataError(
        f"{stim.probe} {stim.variant} of NC {stim.nc!r} ({stim.lang}, context {stim.context}) "
        f"has {e.n_tokens} tokens for {encoder.name}, more than its limit of {e.limit}: "
        f"{stim.text[:80]!r}{'...' if len(stim.text) > 80 else ''}. Shorten the sentence or "
        "use a model that takes longer input", file=stim.source or None)
