"""A shard written in two halves (issue 32): the file on a writer thread, flushed to disk
under a temporary name (``prepare``), then named and indexed under the entry's lock
(``commit``), so that shards are written beside the encoding, several at once."""

from __future__ import annotations

import os

import numpy as np

from ncprobe.cache.entries import SHARD_RE, SHARD_TEMP_RE
from ncprobe.cache.store import EmbeddingStore, item_key
from ncprobe.encoders.base import Encoded

FINGERPRINT = {"family": "test-two-halves", "views": [[0], [1]]}


def _batch(n: int, seed: int) -> tuple[list[bytes], Encoded]:
    rng = np.random.default_rng(seed)
    keys = [item_key((f"w{seed}", str(i)), (0, 1)) for i in range(n)]
    vec = rng.normal(size=(n, 2, 3)).astype(np.float32)
    none = np.zeros(n, np.int32)
    return keys, Encoded(vec, -vec, none, none + 1)


def _names(folder) -> list[str]:
    return sorted(os.listdir(folder))


def test_a_prepared_shard_is_stored_only_once_committed(tmp_path) -> None:
    store = EmbeddingStore(FINGERPRINT, root=tmp_path)
    keys, enc = _batch(5, seed=1)
    with store.lock():
        prepared = store.prepare(keys, enc)
        assert prepared is not None and prepared.items == 5
        temp = [n for n in _names(store.dir) if SHARD_TEMP_RE.match(n)]
        assert temp == [prepared.path.name]  # a shard's temporary name, no shard yet
        assert not any(SHARD_RE.match(n) for n in _names(store.dir))
        assert not any(k in store for k in keys)
        store.commit(prepared)
    assert not prepared.path.exists()
    assert sum(bool(SHARD_RE.match(n)) for n in _names(store.dir)) == 1
    fresh = EmbeddingStore(FINGERPRINT, root=tmp_path)
    got = fresh.get(keys)
    np.testing.assert_array_equal(got.sent, enc.sent)
    np.testing.assert_array_equal(got.span, enc.span)
    assert got.missing_span_words.tolist() == [1] * 5


def test_a_discarded_or_abandoned_prepared_shard_leaves_nothing(tmp_path) -> None:
    store = EmbeddingStore(FINGERPRINT, root=tmp_path)
    with store.lock():
        gone = store.prepare(*_batch(3, seed=2))
        left = store.prepare(*_batch(4, seed=3))  # as a killed writer leaves it
        assert gone is not None and left is not None
        gone.discard()
        assert not gone.path.exists() and left.path.exists()
    # the next run that takes the lock removes what a killed writer left
    again = EmbeddingStore(FINGERPRINT, root=tmp_path)
    with again.lock():
        assert not left.path.exists()
    assert len(again) == 0 and not any(SHARD_RE.match(n) for n in _names(again.dir))


def test_shards_are_named_in_the_order_they_are_committed(tmp_path) -> None:
    store = EmbeddingStore(FINGERPRINT, root=tmp_path)
    batches = [_batch(2, seed=10 + i) for i in range(3)]
    with store.lock():
        prepared = [store.prepare(*b) for b in batches]
        for p in reversed(prepared):  # prepared first, committed last
            store.commit(p)
    shards = sorted(n for n in _names(store.dir) if SHARD_RE.match(n))
    fresh = EmbeddingStore(FINGERPRINT, root=tmp_path)
    first_keys = [fresh._shards[0].name]
    assert first_keys == shards[:1]
    # the first shard by name holds the batch committed first: the last one prepared
    assert all(fresh._index[k][0] == 0 for k in batches[2][0])
