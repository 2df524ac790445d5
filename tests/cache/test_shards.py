"""Shards of layouts ncprobe no longer writes are refused, never read.

ncprobe was never released with another shard layout. A shard written by a development
version (vectors stored items first, without a ``layout`` array; half precision without its
``loss`` array), or one ncprobe never writes at all (compressed members), is named by
``cache info`` and deleted by the next run, which encodes its items again: the safe path a
damaged shard takes. The expected vectors come from the seeded encoder itself, and the
shards are rewritten here with numpy's own ``savez``.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pytest

from ncprobe.cache.maintenance import cache_info
from ncprobe.cache.store import EmbeddingStore
from ncprobe.cli import main
from ncprobe.data.stimuli import Stimulus
from ncprobe.embed import embed

from ..synthetic import SeededEncoder

DEV = "written by a development version of ncprobe"


def _stim(i: int) -> Stimulus:
    tokens = ("a", f"word{i}", "grey", "matter")
    return Stimulus("en", "nc", "N", "original", i, tokens, (2, 4), "grey matter")


STIM = [_stim(i) for i in range(12)]  # 12 distinct items


def _rewrite(path: Path, *, drop: tuple[str, ...] = (), items_first: bool = False,
             compressed: bool = False) -> None:
    """Write a shard again with numpy, without the arrays ``drop``, its vectors
    ``(items, views, dim)`` with ``items_first`` (as development versions stored them)."""
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files if k not in drop}
    if items_first:
        for part in ("sent", "span"):
            arrays[part] = np.ascontiguousarray(arrays[part].transpose(1, 0, 2))
    (np.savez_compressed if compressed else np.savez)(path, **arrays)


def _refused_then_encoded_again(tmp_path, enc: SeededEncoder, shard: Path, why: str,
                                caplog, capsys, dtype: str = "float32"):
    """``cache info`` names the shard with ``why``; the next run deletes it, warns once and
    encodes every item again, giving the encoder's own vectors. The run's Embeddings."""
    info = cache_info(tmp_path)
    assert info[0]["items"] == 0
    assert [c for c in info[0]["corrupt"] if c.startswith(f"{shard}: ") and why in c]
    assert main(["cache", "info", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"corrupt shard (discarded by the next compute): {shard}: " in out and why in out
    enc.calls = 0
    with caplog.at_level(logging.WARNING, logger="ncprobe.cache"):
        again = embed(STIM, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path,
                                                      dtype=dtype), progress=False)
    warned = [r.getMessage() for r in caplog.records if str(shard) in r.getMessage()]
    assert len(warned) == 1 and why in warned[0]
    assert enc.calls == again.encoded == len(STIM)  # read nothing of it: all encoded anew
    assert not shard.exists()
    assert [e["items"] for e in cache_info(tmp_path)] == [len(STIM)]
    return again


def test_a_shard_stored_items_first_is_refused_and_its_items_encoded_again(
        tmp_path, caplog, capsys):
    enc = SeededEncoder(dim=5, views=3, name="items-first")
    store = EmbeddingStore(enc.fingerprint(), root=tmp_path)
    embed(STIM, enc, store=store, progress=False)
    (shard,) = store.dir.glob("shard-*.npz")
    _rewrite(shard, drop=("layout",), items_first=True)
    again = _refused_then_encoded_again(tmp_path, enc, shard, DEV, caplog, capsys)
    want = [enc.vectors(s.tokens, s.span) for s in STIM]
    for v in range(3):
        assert np.array_equal(again.part("sent", v), np.stack([w[0][v] for w in want]))
        assert np.array_equal(again.part("span", v), np.stack([w[1][v] for w in want]))


def test_a_half_precision_shard_without_its_loss_is_refused_and_measured_anew(
        tmp_path, caplog, capsys):
    enc = SeededEncoder(dim=8, views=2, name="no-loss")
    store = EmbeddingStore(enc.fingerprint(), root=tmp_path, dtype="bfloat16")
    embed(STIM, enc, store=store, progress=False)
    (shard,) = store.dir.glob("shard-*.npz")
    _rewrite(shard, drop=("loss",))
    again = _refused_then_encoded_again(tmp_path, enc, shard, DEV, caplog, capsys,
                                        dtype="bfloat16")
    # the loss is known again: what rounding these vectors to bfloat16 moves them, within
    # the angle bfloat16 guarantees (asin of its unit roundoff, 2**-8)
    memory = embed(STIM, enc, store_dtype="bfloat16", progress=False)
    assert again.store_loss == memory.store_loss
    assert 0 < again.store_loss <= math.asin(2.0 ** -8)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_compressed_shard_is_refused(tmp_path, dtype, caplog, capsys):
    # ncprobe writes its shards uncompressed (rows are read in place): a compressed one,
    # layout array and all, is not one of its shards
    enc = SeededEncoder(dim=4, views=2, name=f"compressed-{dtype}")
    store = EmbeddingStore(enc.fingerprint(), root=tmp_path, dtype=dtype)
    embed(STIM, enc, store=store, progress=False)
    (shard,) = store.dir.glob("shard-*.npz")
    _rewrite(shard, compressed=True)
    _refused_then_encoded_again(tmp_path, enc, shard, "compressed, which ncprobe never writes",
                                caplog, capsys, dtype=dtype)
