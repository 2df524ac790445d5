"""Stimuli -> vectors: deduplicate, look up the store, encode what is missing in sorted batches.

Identical (sentence, span) items — the original sentence that every probe of
a context is compared with, or sentences shared between contexts — are
encoded once. Missing items are sorted by length (less padding), encoded in
batches, and written to the :class:`~ncprobe.cache.EmbeddingStore` every
``flush_every`` items (or sooner: when the batches waiting hold ``flush_bytes`` of
vectors, and in halving shards near the end, see :func:`_shard_full`), so an interrupted
run loses at most that much work.

What :func:`embed` returns is addressed by layer view: :meth:`Embeddings.part` gives
the vectors of one part (sentence or span) and one view, read from the store when
they are needed (:class:`~ncprobe.cache.StoredVectors`), so a layer-wise run never
holds more than one view's vectors of its stimuli. ``Embeddings.sent`` and
``Embeddings.span`` still give every view at once, for the small cases that want them.
"""

from __future__ import annotations

import logging
from typing import Protocol, Sequence

import numpy as np

from .batches import BackgroundWriter, run_batches
from .cache import EmbeddingStore, check_store_dtype, decode_vectors, encode_vectors, item_key
from .data.stimuli import Stimulus
from .encoders.base import Encoded, Encoder, SentenceTooLongError
from .errors import DataError, UsageError

log = logging.getLogger(__name__)

#: The parts of an item's vectors: the sentence vector and the span (NC) vector.
PARTS = ("sent", "span")


class VectorSource(Protocol):
    """Where :class:`Embeddings` reads its vectors from, one part and view at a time.

    Attributes:
        n: rows (one per stimulus).
        views: layer views.
    """

    n: int
    views: int

    def read(self, part: str, view: int) -> np.ndarray:
        """``(n, dim)`` vectors of ``part`` (``"sent"`` or ``"span"``) in layer view ``view``."""
        ...


class _Arrays:
    """Vectors held in memory, ``(items, views, dim)`` per part: row ``i`` is item
    ``rows[i]`` (all items in order when ``rows`` is None), stored as ``dtype``."""

    def __init__(self, sent: np.ndarray, span: np.ndarray, rows: np.ndarray | None = None,
                 dtype: str | None = None) -> None:
        self.arrays = {"sent": sent, "span": span}
        self.rows, self.dtype = rows, dtype
        self.n = len(sent) if rows is None else len(rows)
        self.views = int(np.shape(sent)[1])

    def read(self, part: str, view: int) -> np.ndarray:
        a = self.arrays[part]
        if self.dtype is None:  # given as they are: a view, no copy, their own dtype
            return a[:, view, :]
        return decode_vectors(a[self.rows, view, :], self.dtype)


class Embeddings:
    """Vectors of a list of stimuli (row ``i`` belongs to stimulus ``i``), one view at a time.

    ``Embeddings(sent, span, missing_words, missing_span_words, encoded, unique)`` wraps
    arrays held in memory; :func:`embed` returns one that reads each view from the
    embedding store when :meth:`part` asks for it.

    Attributes:
        n: stimuli.
        views: layer views.
        missing_words, missing_span_words: per stimulus, words left out (OOV...).
        encoded: how many unique items needed a forward pass in this call.
        unique: how many unique items the stimuli hold.
    """

    def __init__(self, sent: np.ndarray, span: np.ndarray, missing_words: np.ndarray,
                 missing_span_words: np.ndarray, encoded: int, unique: int) -> None:
        self._source: VectorSource = _Arrays(sent, span)
        self._arrays: tuple[np.ndarray, np.ndarray] | None = (sent, span)
        self.missing_words, self.missing_span_words = missing_words, missing_span_words
        self.encoded, self.unique = encoded, unique

    @classmethod
    def from_source(cls, source: VectorSource, missing_words: np.ndarray,
                    missing_span_words: np.ndarray, encoded: int, unique: int) -> "Embeddings":
        """Embeddings whose vectors ``source`` reads on demand (a view at a time)."""
        self = cls.__new__(cls)
        self._source, self._arrays = source, None
        self.missing_words, self.missing_span_words = missing_words, missing_span_words
        self.encoded, self.unique = encoded, unique
        return self

    @property
    def n(self) -> int:
        return self._source.n

    @property
    def views(self) -> int:
        return self._source.views

    def part(self, part: str, view: int) -> np.ndarray:
        """``(n, dim)`` vectors of one part (``"sent"`` or ``"span"``) and layer view:
        float32 as read from the store, or a view of the arrays given."""
        if part not in PARTS:
            raise ValueError(f"part must be 'sent' or 'span', not {part!r}")
        return self._source.read(part, view)

    def view(self, view: int) -> tuple[np.ndarray, np.ndarray]:
        """``(sent, span)`` of one layer view, ``(n, dim)`` each."""
        return self.part("sent", view), self.part("span", view)

    def _all(self, part: str) -> np.ndarray:
        if self._arrays is not None:
            return self._arrays[PARTS.index(part)]
        return np.stack([self.part(part, v) for v in range(self.views)], axis=1)

    @property
    def sent(self) -> np.ndarray:
        """``(n, views, dim)`` sentence vectors: every view at once (read whole)."""
        return self._all("sent")

    @property
    def span(self) -> np.ndarray:
        """``(n, views, dim)`` span vectors: every view at once (read whole)."""
        return self._all("span")

    def close(self) -> None:
        """Let go of the store's files (a later :meth:`part` opens them again)."""
        close = getattr(self._source, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> "Embeddings":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def embed(stimuli: Sequence[Stimulus], encoder: Encoder, *, store: EmbeddingStore | None = None,
          batch_size: int = 32, batch_tokens: int | None = None, flush_every: int = 2048,
          flush_bytes: int = 1 << 27, progress: bool = True, store_dtype: str | None = None
          ) -> Embeddings:
    """Vectors for every stimulus, computing each unique item once.

    Args:
        stimuli: the stimuli (any sequence, e.g. :class:`~ncprobe.data.Stimuli`).
        encoder: any :class:`~ncprobe.encoders.base.Encoder`.
        store: where vectors persist between runs (``None``: nothing stored).
        batch_size: sentences per forward pass.
        batch_tokens: instead of ``batch_size`` sentences, as many as keep a batch's
            padded size (sentences x the longest one's sub-word tokens) within this many
            tokens (transformer encoders); ``0``: ``batch_size`` sentences; ``None``:
            automatic (a budget on a CUDA device, else ``batch_size``: see
            :func:`ncprobe.batches.token_budget`).
        flush_every: items per stored shard.
        flush_bytes: a shard is written sooner when the batches waiting hold this many
            bytes of vectors (large models: a shard's vectors stay within it in memory).
        progress: show a progress bar (counts and rate) on stderr.
        store_dtype: how vectors are kept (``float32``, ``float16``, ``bfloat16``): the
            store's own dtype with a store (``None``, or the same), in memory without one.

    With a store, its entry stays locked from the look-up to the last shard written:
    a second run on the same cache waits, then finds the items the first one stored
    instead of encoding and storing them again. When something must be encoded, the
    store is checked to be writable first (:meth:`~ncprobe.cache.EmbeddingStore.check_writable`),
    so a read-only cache stops the run before the encoding, not after it. The vectors
    are then read from the store one view at a time, when asked for (the shards are
    opened before the lock is released; :meth:`Embeddings.close` lets them go). Without
    a store, the unique items' vectors stay in memory.

    Raises:
        OutputError: the store cannot be written (read-only, full disk, no permission).
        UsageError: ``store_dtype`` is not a storage dtype, or differs from the store's.
    """
    if store is None:
        dtype = check_store_dtype(store_dtype or "float32")
        return _embed(stimuli, encoder, None, batch_size, batch_tokens, flush_every,
                      flush_bytes, progress, dtype)
    if store_dtype is not None and store_dtype != store.dtype:
        raise UsageError(f"store_dtype {store_dtype!r} differs from the store's "
                         f"{store.dtype!r} (give it to EmbeddingStore)")
    with store.lock():  # also loads the shards other processes stored meanwhile
        return _embed(stimuli, encoder, store, batch_size, batch_tokens, flush_every,
                      flush_bytes, progress, store.dtype)


def _embed(stimuli: Sequence[Stimulus], encoder: Encoder, store: EmbeddingStore | None,
           batch_size: int, batch_tokens: int | None, flush_every: int, flush_bytes: int,
           progress: bool, dtype: str) -> Embeddings:
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
    held = 0  # bytes of vectors in ``pending``
    memory = _Collector(len(todo), dtype) if store is None else None
    items = [stimuli[first[k]] for k in todo]

    def done(start: int, stop: int, enc: Encoded) -> None:
        nonlocal pending_keys, pending, held
        if memory is not None:
            memory.add(enc)
        else:
            pending_keys += todo[start:stop]
            pending.append(enc)
            held += np.asarray(enc.sent).nbytes + np.asarray(enc.span).nbytes
            if writer is not None and _shard_full(len(pending_keys), held, len(todo) - stop,
                                                  flush_every, flush_bytes):
                writer.submit(store.put, pending_keys, pending)  # type: ignore[union-attr]
                pending_keys, pending, held = [], [], 0
        if bar is not None:
            bar.update(stop - start)

    writer = BackgroundWriter() if store is not None and todo else None
    try:
        run_batches(encoder, [s.tokens for s in items], [s.span for s in items], done,
                    batch_size=batch_size, batch_tokens=batch_tokens)
    except SentenceTooLongError as e:
        raise _too_long(e, items[e.index], encoder) from None
    finally:
        # what was encoded is stored, also when the run stops (an error, an interrupt)
        if writer is not None:
            try:
                if pending_keys:
                    writer.submit(store.put, pending_keys, pending)  # type: ignore[union-attr]
            finally:
                writer.close()
        if bar is not None:
            bar.close()
    pending = []
    if not keys:
        empty = np.zeros((0, 1, encoder.dim), dtype=np.float32)
        none = np.zeros(0, dtype=np.int32)
        return Embeddings(empty, empty, none, none, len(todo), len(first))
    if store is not None:
        got = store.vectors(list(first), _positions(keys, list(first)))
        return Embeddings.from_source(got, got.missing_words, got.missing_span_words,
                                      len(todo), len(first))
    # everything was encoded now, in ``todo`` order
    assert memory is not None
    idx = _positions(keys, todo)
    return Embeddings.from_source(memory.source(idx), memory.missing[idx].astype(np.int32),
                                  memory.missing_span[idx].astype(np.int32), len(todo),
                                  len(first))


def _shard_full(items: int, held: int, remaining: int, flush_every: int, flush_bytes: int
                ) -> bool:
    """Whether the batches waiting (``items`` items, ``held`` bytes of vectors) are written
    now as one shard, with ``remaining`` items still to encode after them.

    A shard is written when it holds ``flush_every`` items or ``flush_bytes`` bytes. Near
    the end of a run it is also written when it holds as many items as are still to come
    (and at least an eighth of either limit): shards halve towards the end, so the write
    left after the last batch, which the run waits for, is small, while the earlier ones
    run beside the encoding (a GPU's run is not held up by writing a whole shard at its
    end). The rule depends on counts only, so a run's shards are the same every time.
    """
    if items >= flush_every or held >= flush_bytes:
        return True
    return items >= remaining and (items >= flush_every // 8 or held >= flush_bytes // 8)


def _positions(keys: Sequence[bytes], order: Sequence[bytes]) -> np.ndarray:
    """For each of ``keys``, its position in ``order``."""
    row = {k: j for j, k in enumerate(order)}
    return np.fromiter((row[k] for k in keys), dtype=np.intp, count=len(keys))


class _Collector:
    """The vectors of a run without a store, gathered once into arrays of ``items`` rows
    in the storage dtype (no list of batches concatenated at the end)."""

    def __init__(self, items: int, dtype: str) -> None:
        self.items, self.dtype, self.at = items, dtype, 0
        self.sent: np.ndarray | None = None
        self.span: np.ndarray | None = None
        self.missing = np.zeros(items, dtype=np.int64)
        self.missing_span = np.zeros(items, dtype=np.int64)

    def add(self, enc: Encoded) -> None:
        sent, span = encode_vectors(enc.sent, self.dtype), encode_vectors(enc.span, self.dtype)
        if self.sent is None or self.span is None:
            self.sent = np.empty((self.items, *sent.shape[1:]), dtype=sent.dtype)
            self.span = np.empty((self.items, *span.shape[1:]), dtype=span.dtype)
        n = len(sent)
        self.sent[self.at:self.at + n] = sent
        self.span[self.at:self.at + n] = span
        self.missing[self.at:self.at + n] = enc.missing_words
        self.missing_span[self.at:self.at + n] = enc.missing_span_words
        self.at += n

    def source(self, rows: np.ndarray) -> _Arrays:
        assert self.sent is not None and self.span is not None, "nothing was encoded"
        return _Arrays(self.sent, self.span, rows, self.dtype)


def _size(item) -> int:
    """What batches are sorted by: an item's ``size`` when it has one (a raw text's length,
    :class:`~ncprobe.retrieval.encode.TextItem`), else its number of words."""
    size = getattr(item, "size", None)
    return len(item.tokens) if size is None else int(size)


def _too_long(e: SentenceTooLongError, stim: Stimulus, encoder: Encoder) -> DataError:
    """The encoder's "sentence i of the batch is too long", naming the stimulus."""
    return DataError(
        f"{stim.probe} {stim.variant} of NC {stim.nc!r} ({stim.lang}, context {stim.context}) "
        f"has {e.n_tokens} tokens for {encoder.name}, more than its limit of {e.limit}: "
        f"{stim.text[:80]!r}{'...' if len(stim.text) > 80 else ''}. Shorten the sentence or "
        "use a model that takes longer input", file=stim.source or None)
