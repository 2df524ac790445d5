"""Stimuli -> vectors: deduplicate, look up the store, encode what is missing in sorted batches.

Identical (sentence, span) items — the original sentence that every probe of
a context is compared with, or sentences shared between contexts — are
encoded once. Missing items are sorted by length (less padding), encoded in
batches, and written to the :class:`~ncprobe.cache.store.EmbeddingStore` every
``flush_every`` items (or sooner: when the batches waiting hold ``flush_bytes`` of
vectors, and in halving shards near the end, see :func:`_shard_full`), so an interrupted
run loses at most that much work.

What :func:`embed` returns is addressed by layer view: :meth:`Embeddings.part` gives
the vectors of one part (sentence or span) and one view, read from the store when
they are needed (:class:`~ncprobe.cache.store.StoredVectors`), so a layer-wise run never
holds more than one view's vectors of its stimuli. ``Embeddings.sent`` and
``Embeddings.span`` still give every view at once, for the small cases that want them.

An encoder with a sentence embedding of its own (a sentence-transformers model:
``Encoded.own``, see :func:`~ncprobe.encoders.base.has_own_sentence`) gives it from the
same forward pass as its layer views; it is kept in a second store entry of its own
fingerprint (:func:`own_store`), written from the same batches, and read as the part
``"own"`` (one view) of :class:`Embeddings`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any, Protocol, Sequence

import numpy as np

from .batches import BackgroundWriter, run_batches
from .cache.dtypes import check_store_dtype, decode_vectors, encode_measured
from .cache.store import EmbeddingStore, StoredVectors, item_key
from .data.stimuli import Stimulus
from .encoders.base import Encoded, Encoder, SentenceTooLongError, has_own_sentence
from .errors import DataError, NcprobeError, UsageError
from .schema import LEVELS, OWN_VIEW
from .transform import VectorTransform, apply_transform

log = logging.getLogger(__name__)

#: The parts of an item's vectors: the sentence vector and the span (NC) vector.
PARTS = ("sent", "span")
#: The part of the model's own sentence embedding (one view), where the encoder has one.
OWN = "own"
#: The part of :class:`Embeddings` (:meth:`Embeddings.part`) that holds each level's vectors:
#: ``span`` for ``nc`` (the compound's or expression's), ``sent`` for ``sent``.
LEVEL_PART: dict[str, str] = {level: ("span" if level == "nc" else level) for level in LEVELS}
#: Shards written at once (:class:`~ncprobe.batches.BackgroundWriter`): a GPU's batches of
#: many layer views come faster than one thread writes them.
WRITERS = 2


class VectorSource(Protocol):
    """Where :class:`Embeddings` reads its vectors from, one part and view at a time.

    A source may also have the part :data:`OWN` (the model's own sentence embedding, view 0
    only): it then says so with a true ``has_own`` attribute.

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
    ``rows[i]`` (all items in order when ``rows`` is None), stored as ``dtype``; ``own``,
    where given, ``(items, 1, own dim)``."""

    #: how far storing moved them (see StoredVectors.store_loss): set by _Collector
    store_loss: float = 0.0

    def __init__(self, sent: np.ndarray, span: np.ndarray, rows: np.ndarray | None = None,
                 dtype: str | None = None, own: np.ndarray | None = None) -> None:
        self.arrays = {"sent": sent, "span": span}
        if own is not None:
            self.arrays[OWN] = own
        self.has_own = own is not None
        self.rows, self.dtype = rows, dtype
        self.n = len(sent) if rows is None else len(rows)
        self.views = int(np.shape(sent)[1])

    def read(self, part: str, view: int) -> np.ndarray:
        a = self.arrays[part]
        if self.dtype is None:  # given as they are: a view, no copy, their own dtype
            return a[:, view, :]
        return decode_vectors(a[self.rows, view, :], self.dtype)


class _WithOwn:
    """The stored layer views and, as the part :data:`OWN`, the sentence vectors of the
    own-embedding entry (its one view)."""

    has_own = True

    def __init__(self, views: StoredVectors, own: StoredVectors) -> None:
        self.main, self.own = views, own
        self.n, self.views = views.n, views.views

    def read(self, part: str, view: int) -> np.ndarray:
        if part == OWN:
            return self.own.read("sent", view)
        return self.main.read(part, view)

    @property
    def store_loss(self) -> float:
        return max(self.main.store_loss, self.own.store_loss)

    def close(self) -> None:
        try:
            self.main.close()
        finally:
            self.own.close()


class _Transformed:
    """Another source's vectors, each part and view passed through a vector transform as it
    is read (:func:`ncprobe.transform.apply_transform`): the source (the store) is never
    changed."""

    def __init__(self, source: VectorSource, transform: VectorTransform, names: Sequence[str],
                 groups: Sequence[str]) -> None:
        self.source, self.transform = source, transform
        self.names, self.groups = list(names), list(groups)
        self.n, self.views = source.n, source.views
        self.has_own = bool(getattr(source, "has_own", False))

    def read(self, part: str, view: int) -> np.ndarray:
        name = OWN_VIEW if part == OWN else self.names[view]
        level = "nc" if part == LEVEL_PART["nc"] else "sent"  # the own embedding: sentences
        return apply_transform(self.transform, name, level, self.source.read(part, view),
                               self.groups)

    @property
    def store_loss(self) -> float:
        return getattr(self.source, "store_loss", 0.0)

    def close(self) -> None:
        close = getattr(self.source, "close", None)
        if close is not None:
            close()


class Embeddings:
    """Vectors of a list of stimuli (row ``i`` belongs to stimulus ``i``), one view at a time.

    ``Embeddings(sent, span, missing_words, missing_span_words, encoded, unique)`` wraps
    arrays held in memory; :func:`embed` returns one that reads each view from the
    embedding store when :meth:`part` asks for it.

    Attributes:
        n: stimuli.
        views: layer views.
        has_own: whether the part :data:`OWN` (the model's own sentence embedding) is there.
        missing_words, missing_span_words: per stimulus, words left out (OOV...).
        encoded: how many unique items needed a forward pass in this call.
        unique: how many unique items the stimuli hold.
    """

    def __init__(self, sent: np.ndarray, span: np.ndarray, missing_words: np.ndarray,
                 missing_span_words: np.ndarray, encoded: int, unique: int,
                 own: np.ndarray | None = None) -> None:
        """``own``: ``(n, own dim)``, the model's own sentence embedding of each stimulus
        (``None``: the encoder has none)."""
        self._source: VectorSource = _Arrays(sent, span, own=None if own is None else
                                             np.asarray(own)[:, None, :])
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

    def transformed(self, transform: VectorTransform, names: Sequence[str],
                    groups: Sequence[str]) -> "Embeddings":
        """These vectors, each part and view passed through ``transform`` when it is read
        (:mod:`ncprobe.transform`), one view at a time as ever; what they are read from (the
        store, the arrays) is left as it is.

        Args:
            names: the name of each layer view (:func:`view_names`; the part :data:`OWN` is
                the view :data:`~ncprobe.schema.OWN_VIEW`).
            groups: per row (stimulus), the expression it belongs to.
        """
        if len(names) < self.views:
            raise ValueError(f"{len(names)} view names for {self.views} views")
        if len(groups) != self.n:
            raise ValueError(f"{len(groups)} groups for {self.n} rows")
        return Embeddings.from_source(_Transformed(self._source, transform, names, groups),
                                      self.missing_words, self.missing_span_words,
                                      self.encoded, self.unique)

    @property
    def n(self) -> int:
        return self._source.n

    @property
    def views(self) -> int:
        return self._source.views

    @property
    def has_own(self) -> bool:
        return bool(getattr(self._source, "has_own", False))

    @property
    def store_loss(self) -> float:
        """The largest angle (radians) between a vector as kept (``store_dtype``) and its
        float32 original (:func:`ncprobe.cache.dtypes.storage_loss`; 0.0: float32, exact)."""
        return getattr(self._source, "store_loss", 0.0)

    def part(self, part: str, view: int) -> np.ndarray:
        """``(n, dim)`` vectors of one part (``"sent"`` or ``"span"``) and layer view:
        float32 as read from the store, or a view of the arrays given; or, part
        :data:`OWN` and view 0, the model's own sentence embedding (where
        :attr:`has_own`)."""
        if part == OWN:
            if not self.has_own:
                raise ValueError("these vectors hold no sentence embedding of the model's own")
            if view != 0:
                raise IndexError(f"the model's own sentence embedding has one view (0), not "
                                 f"view {view}")
            return self._source.read(OWN, 0)
        if part not in PARTS:
            raise ValueError(f"part must be 'sent', 'span' or 'own', not {part!r}")
        return self._source.read(part, view)

    @property
    def own(self) -> np.ndarray | None:
        """``(n, own dim)``: the model's own sentence embedding of each stimulus (read
        whole), or ``None`` where the encoder has none."""
        return self.part(OWN, 0) if self.has_own else None

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


def view_names(encoder) -> list[str]:
    """The names of an encoder's views in results tables: its own ``view_names``, else each
    view's layers joined by ``+``."""
    named = getattr(encoder, "view_names", None)
    if named:
        return list(named)
    return ["+".join(str(i) for i in v) for v in encoder.views]


def own_store(store: EmbeddingStore, encoder: Encoder) -> EmbeddingStore:
    """The store entry of ``encoder``'s own sentence embedding beside ``store`` (same cache
    root and storage dtype): fingerprint ``encoder.own_fingerprint()``, one view, sentence
    vectors only (its span vectors have size 0).

    Raises:
        ValueError: the encoder has no sentence embedding of its own.
    """
    if not has_own_sentence(encoder):
        raise ValueError(f"{encoder.name} has no sentence embedding of its own")
    fingerprint = encoder.own_fingerprint()  # type: ignore[attr-defined]
    return EmbeddingStore(fingerprint, root=store.root, shape=(1, None, 0), dtype=store.dtype)


def embed(stimuli: Sequence[Stimulus], encoder: Encoder, *, store: EmbeddingStore | None = None,
          batch_size: int = 32, batch_tokens: int | None = None, flush_every: int = 2048,
          flush_bytes: int = 1 << 27, progress: bool = True, store_dtype: str | None = None,
          own: EmbeddingStore | None = None) -> Embeddings:
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
        own: for an encoder with a sentence embedding of its own, the store entry that keeps
            it (default, with a ``store``: :func:`own_store` beside it). An item is encoded
            when either entry lacks it, and each entry is given the items it lacks, from
            the same batches (one forward pass for both).

    With a store, its entry (and the own-embedding entry, locked after it) stays locked
    from the look-up to the last shard written: a second run on the same cache waits,
    then finds the items the first one stored instead of encoding and storing them again.
    When something must be encoded, the entries are checked to be writable first
    (:meth:`~ncprobe.cache.store.EmbeddingStore.check_writable`), so a read-only cache stops the
    run before the encoding, not after it. The vectors are then read from the store one
    view at a time, when asked for (the shards are opened before the lock is released;
    :meth:`Embeddings.close` lets them go). Without a store, the unique items' vectors stay
    in memory.

    Raises:
        OutputError: the store cannot be written (read-only, full disk, no permission).
        UsageError: ``store_dtype`` is not a storage dtype, or differs from the store's;
            ``own`` given without a ``store``, for an encoder without an own embedding, or
            of another dtype than the store.
    """
    if store is None:
        if own is not None:
            raise UsageError("an own-embedding store needs the store of the layer views too")
        dtype = check_store_dtype(store_dtype or "float32")
        return _embed(stimuli, encoder, None, None, batch_size, batch_tokens, flush_every,
                      flush_bytes, progress, dtype)
    if store_dtype is not None and store_dtype != store.dtype:
        raise UsageError(f"store_dtype {store_dtype!r} differs from the store's "
                         f"{store.dtype!r} (give it to EmbeddingStore)")
    if has_own_sentence(encoder):
        own = own if own is not None else own_store(store, encoder)
        if own.dtype != store.dtype:
            raise UsageError(f"the own-embedding store keeps {own.dtype}, the store "
                             f"{store.dtype}: give both the same dtype")
    elif own is not None:
        raise UsageError(f"{encoder.name} has no sentence embedding of its own to store")
    # both entries locked, always the layer views' first (no two runs wait on each other)
    with store.lock(), (own.lock() if own is not None else contextlib.nullcontext()):
        # the locks also load the shards other processes stored meanwhile
        return _embed(stimuli, encoder, store, own, batch_size, batch_tokens, flush_every,
                      flush_bytes, progress, store.dtype)


def embed_cached(stimuli: Sequence[Stimulus], encoder: Encoder, *, cache: bool = True,
                 cache_dir: str | os.PathLike | None = None, store_dtype: str | None = None,
                 **options: Any) -> tuple[Embeddings, list[EmbeddingStore]]:
    """:func:`embed` through the embedding cache, as every probe reaches it: the encoder's
    store entry opened under the cache root (:func:`ncprobe._io.cache_root` of
    ``cache_dir``; none when not ``cache``), its shape declared
    (:func:`ncprobe.cache.shapes.vector_shape`), and beside it the entry of the encoder's own
    sentence embedding where it has one (:func:`own_store`).

    Args:
        cache: use the cache (``False``: nothing read or stored).
        cache_dir: the cache root (default ``$NCPROBE_CACHE`` or the user cache).
        store_dtype: how vectors are kept (default: float32, or the fingerprint's).
        options: more keywords of :func:`embed` (``batch_size``, ``progress`` ...).

    Returns:
        ``(embeddings, stores)``: the stores opened (the layer views', then the own
        embedding's), whose ``problems`` a run records.
    """
    from .cache.shapes import vector_shape

    stores: list[EmbeddingStore] = []
    if cache:
        stores.append(EmbeddingStore(encoder.fingerprint(), root=cache_dir,
                                     shape=vector_shape(encoder), dtype=store_dtype))
        if has_own_sentence(encoder):
            stores.append(own_store(stores[0], encoder))
    emb = embed(stimuli, encoder, store=stores[0] if stores else None,
                own=stores[1] if len(stores) > 1 else None, store_dtype=store_dtype, **options)
    return emb, stores


def _embed(stimuli: Sequence[Stimulus], encoder: Encoder, store: EmbeddingStore | None,
           own: EmbeddingStore | None, batch_size: int, batch_tokens: int | None,
           flush_every: int, flush_bytes: int, progress: bool, dtype: str) -> Embeddings:
    stimuli = list(stimuli)  # indexed item by item below: a list's indexing is the fastest
    keys = [item_key(s.tokens, s.span) for s in stimuli]
    # each key's first position, the keys in the order they first occur
    first = dict.fromkeys(keys, 0)
    first.update(zip(reversed(keys), range(len(keys) - 1, -1, -1), strict=True))
    with_own = has_own_sentence(encoder)
    # an item is encoded when any entry lacks it; each entry is then given what it lacks
    todo = list(first) if store is None else [
        k for k in first if k not in store or (own is not None and k not in own)]
    # by size, then by key: sorted by key, then (a stable sort) by size
    size = dict(zip(todo, map(_size, map(stimuli.__getitem__, map(first.__getitem__, todo))),
                    strict=True))
    todo.sort()
    todo.sort(key=size.__getitem__)
    if store is not None and todo:
        store.check_writable()  # a read-only cache fails now, not after the encoding
        if own is not None:
            own.check_writable()
    # shards are written on a thread of their own, beside the encoding
    write = _Writer(encoder.name, store, own, todo) if store is not None and todo else None
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), unit="sent", desc=f"encoding with {encoder.name}",
                   leave=False)
    pending_keys: list[bytes] = []
    pending: list[Encoded] = []
    held = 0  # bytes of vectors in ``pending``
    memory = _Collector(len(todo), dtype, with_own) if store is None else None
    items = [stimuli[first[k]] for k in todo]

    def done(start: int, stop: int, enc: Encoded) -> None:
        nonlocal pending_keys, pending, held
        if with_own and enc.own is None:
            raise NcprobeError(f"{encoder.name}: the encoder gave no sentence embedding of its "
                               "own (Encoded.own) for a batch; nothing of it was stored")
        if memory is not None:
            memory.add(enc)
        else:
            pending_keys += todo[start:stop]
            pending.append(enc)
            held += np.asarray(enc.sent).nbytes + np.asarray(enc.span).nbytes
            if enc.own is not None:
                held += np.asarray(enc.own).nbytes
            if writer is not None and write is not None and _shard_full(
                    len(pending_keys), held, len(todo) - stop, flush_every, flush_bytes):
                writer.submit(write.prepare, pending_keys, pending, then=write.commit)
                pending_keys, pending, held = [], [], 0
        if bar is not None:
            bar.update(stop - start)

    writer = BackgroundWriter(WRITERS) if write is not None else None
    try:
        run_batches(encoder, [s.tokens for s in items], [s.span for s in items], done,
                    batch_size=batch_size, batch_tokens=batch_tokens)
    except SentenceTooLongError as e:
        raise _too_long(e, items[e.index], encoder) from None
    finally:
        # what was encoded is stored, also when the run stops (an error, an interrupt)
        if writer is not None and write is not None:
            try:
                if pending_keys:
                    writer.submit(write.prepare, pending_keys, pending, then=write.commit)
            finally:
                writer.close()
        if bar is not None:
            bar.close()
    pending = []
    if not keys:
        empty = np.zeros((0, 1, encoder.dim), dtype=np.float32)
        none = np.zeros(0, dtype=np.int32)
        return Embeddings(empty, empty, none, none, len(todo), len(first),
                          own=np.zeros((0, 0), dtype=np.float32) if with_own else None)
    if store is not None:
        got = store.vectors(list(first), _positions(keys, list(first)))
        source: VectorSource = got
        if own is not None:
            try:
                source = _WithOwn(got, own.vectors(list(first), _positions(keys, list(first))))
            except BaseException:
                got.close()
                raise
        return Embeddings.from_source(source, got.missing_words, got.missing_span_words,
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
    row = dict(zip(order, range(len(order)), strict=True))
    return np.fromiter(map(row.__getitem__, keys), dtype=np.intp, count=len(keys))


class _Writer:
    """Writes a batch of shards in two halves (:meth:`prepare` on a writer thread, several at
    once; :meth:`commit` on the encoding thread, which holds the entries' locks, in order):
    the layer views into ``store`` and the own sentence embedding into ``own``, each given
    only the items it lacked when the run looked them up (``todo``: the items to encode)."""

    def __init__(self, model: str, store: EmbeddingStore, own: EmbeddingStore | None,
                 todo: Sequence[bytes]) -> None:
        self.model, self.store, self.own = model, store, own
        # both entries are locked for the whole run: what they lack does not change
        self.lacks = {"store": {k for k in todo if k not in store},
                      "own": set() if own is None else {k for k in todo if k not in own}}

    def prepare(self, keys: list[bytes], batches: list[Encoded]) -> list:
        """The shards written under temporary names: ``[(entry, prepared shard)]``."""
        out: list = []
        try:
            need = np.fromiter((k in self.lacks["store"] for k in keys), dtype=bool,
                               count=len(keys))
            if need.all():
                out.append((self.store, self.store.prepare(keys, batches)))
            elif need.any():
                out.append((self.store, self.store.prepare(
                    [k for k, n in zip(keys, need, strict=True) if n], _select(batches, need))))
            if self.own is None:
                return out
            need = np.fromiter((k in self.lacks["own"] for k in keys), dtype=bool,
                               count=len(keys))
            if need.any():
                own = [b.own for b in batches]
                if any(o is None for o in own):
                    raise NcprobeError(f"{self.model}: a batch came without the model's own "
                                       "sentence embedding; nothing of it was stored")
                vecs = np.concatenate(own)[need][:, None, :]  # type: ignore[arg-type]
                n = len(vecs)
                none = np.zeros(n, dtype=np.int32)
                # one view, sentence vectors only: the span part has size 0
                out.append((self.own, self.own.prepare(
                    [k for k, x in zip(keys, need, strict=True) if x],
                    Encoded(vecs, np.zeros((n, 1, 0), dtype=vecs.dtype), none, none))))
            return out
        except BaseException:
            for _, prepared in out:  # nothing half stored: the other entry's shard too
                if prepared is not None:
                    prepared.discard()
            raise

    def commit(self, prepared: list) -> None:
        """Name and index the shards :meth:`prepare` wrote (each removed if it cannot be)."""
        try:
            for entry, shard in prepared:
                entry.commit(shard)
        finally:
            for _, shard in prepared:
                if shard is not None:
                    shard.discard()


def _select(batches: list[Encoded], rows: np.ndarray) -> Encoded:
    """The rows ``rows`` (a mask over the batches' items, in order) as one Encoded."""
    return Encoded(np.concatenate([b.sent for b in batches])[rows],
                   np.concatenate([b.span for b in batches])[rows],
                   np.concatenate([b.missing_words for b in batches])[rows],
                   np.concatenate([b.missing_span_words for b in batches])[rows])


class _Collector:
    """The vectors of a run without a store, gathered once into arrays of ``items`` rows
    in the storage dtype (no list of batches concatenated at the end); with ``own``, the
    model's own sentence embeddings too."""

    def __init__(self, items: int, dtype: str, own: bool = False) -> None:
        self.items, self.dtype, self.at, self.with_own = items, dtype, 0, own
        self.sent: np.ndarray | None = None
        self.span: np.ndarray | None = None
        self.own: np.ndarray | None = None
        self.missing = np.zeros(items, dtype=np.int64)
        self.missing_span = np.zeros(items, dtype=np.int64)
        self.loss = 0.0  # the largest angle storing moved a vector (cache.dtypes.storage_loss)

    def _encode(self, x) -> np.ndarray:
        """``x`` as kept in the dtype: refused where it would lose more than rounding."""
        kept, loss = encode_measured(x, self.dtype)
        self.loss = max(self.loss, float(loss.max(initial=0.0)))
        return kept

    def add(self, enc: Encoded) -> None:
        sent, span = self._encode(enc.sent), self._encode(enc.span)
        own = None
        if self.with_own:
            own = self._encode(np.asarray(enc.own)[:, None, :])
        if self.sent is None or self.span is None:
            self.sent = np.empty((self.items, *sent.shape[1:]), dtype=sent.dtype)
            self.span = np.empty((self.items, *span.shape[1:]), dtype=span.dtype)
            if own is not None:
                self.own = np.empty((self.items, *own.shape[1:]), dtype=own.dtype)
        n = len(sent)
        self.sent[self.at:self.at + n] = sent
        self.span[self.at:self.at + n] = span
        if own is not None and self.own is not None:
            self.own[self.at:self.at + n] = own
        self.missing[self.at:self.at + n] = enc.missing_words
        self.missing_span[self.at:self.at + n] = enc.missing_span_words
        self.at += n

    def source(self, rows: np.ndarray) -> _Arrays:
        assert self.sent is not None and self.span is not None, "nothing was encoded"
        got = _Arrays(self.sent, self.span, rows, self.dtype, own=self.own)
        got.store_loss = self.loss
        return got


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
