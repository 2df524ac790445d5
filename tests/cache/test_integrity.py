"""Cached vectors are what was written, and half precision says what it costs.

* Bytes of a shard's vectors changed on disk (a few flipped bits: a bad disk, a stray write)
  are found when the shard's items are looked up (the CRC-32 its zip entry recorded), the
  shard is reported and discarded like an unreadable one, its items are encoded again, and
  ``cache info`` lists it.
* ``--store-dtype float16`` refuses vectors too small for it (stored as subnormals or zero,
  they would move cosines by more than its bound), and a value beyond its range is a usage
  error (exit 2); what storing did is measured and recorded in ``run.json`` and the notes.
* ``compare`` of a float16 run against a float32 run says which side is which.
"""

from __future__ import annotations

import json
import logging
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest

import ncprobe
from ncprobe.cache.maintenance import cache_info
from ncprobe.cache.store import EmbeddingStore
from ncprobe.cli import main
from ncprobe.data.stimuli import Stimulus
from ncprobe.embed import embed
from ncprobe.encoders.base import Encoded
from ncprobe.errors import UsageError

from ..synthetic import SeededEncoder, pairs_stimuli


def _stim(words: str, span: tuple[int, int], variant: int = 1) -> Stimulus:
    tokens = tuple(words.split())
    return Stimulus("en", "nc", "N", "original", variant, tokens, span,
                    " ".join(tokens[span[0]:span[1]]))


MANY = [_stim(f"this is word{i} grey matter", (3, 5), variant=i) for i in range(30)]


def Scaled(scale: float = 1.0, dim: int = 16, views: int = 2,
           name: str = "scaled") -> SeededEncoder:
    """Seeded random vectors times ``scale``."""
    return SeededEncoder(dim, views, name, scale=scale)


def _flip(path: Path, member: str, offsets=(40, 47, 53)) -> None:
    """Flip one bit in each of three bytes of ``member``'s array data, in place (past the
    .npy header: the vectors themselves), the file's size and zip directory unchanged."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    with open(path, "r+b") as fh:
        fh.seek(info.header_offset + 26)
        name_len, extra_len = np.frombuffer(fh.read(4), dtype="<u2")
        data = info.header_offset + 30 + int(name_len) + int(extra_len)
        fh.seek(data + 8)
        header_len = int(np.frombuffer(fh.read(2), dtype="<u2")[0])  # .npy format 1.0
        start = data + 10 + header_len
        for off in offsets:
            fh.seek(start + off)
            byte = fh.read(1)[0]
            fh.seek(start + off)
            fh.write(bytes([byte ^ 0x10]))


@pytest.mark.parametrize("member,dtype", [
    ("sent.npy", "float32"), ("span.npy", "float32"), ("sent.npy", "float16")])
def test_flipped_bits_in_stored_vectors_are_found_reported_and_encoded_again(
        tmp_path, member, dtype, caplog, capsys):
    enc = Scaled()
    reference = embed(MANY, enc, store_dtype=dtype, progress=False)  # no store: in memory
    embed(MANY[:20], enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path, dtype=dtype),
          progress=False)
    embed(MANY, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path, dtype=dtype),
          progress=False)
    (first, second) = shards = sorted(
        EmbeddingStore(enc.fingerprint(), root=tmp_path, dtype=dtype).dir.glob("shard-*.npz"))
    assert [len(np.load(p)["keys"]) for p in shards] == [20, 10]
    _flip(first, member)
    # cache info reads every vector and names the shard; --quick reads headers only
    assert main(["cache", "info", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"corrupt shard (discarded by the next compute): {first}" in out
    assert str(second) not in out
    assert main(["cache", "info", "--quick", "--cache-dir", str(tmp_path)]) == 0
    assert str(first) not in capsys.readouterr().out
    enc.calls = 0
    with caplog.at_level(logging.WARNING, logger="ncprobe.cache"):
        store = EmbeddingStore(enc.fingerprint(), root=tmp_path, dtype=dtype)
        again = embed(MANY, enc, store=store, progress=False)
    warned = [r.getMessage() for r in caplog.records if str(first) in r.getMessage()]
    assert len(warned) == 1 and "not the bytes written" in warned[0]
    assert store.problems == warned
    # the damaged shard's 20 items, and only those, were encoded again
    assert enc.calls == 20 and again.encoded == 20
    for part in ("sent", "span"):
        for v in range(2):
            assert np.array_equal(again.part(part, v), reference.part(part, v))
    assert not first.exists() and second.exists()
    assert [e["items"] for e in cache_info(tmp_path)] == [30]
    assert cache_info(tmp_path)[0]["corrupt"] == []


def test_verification_reads_only_the_shards_a_run_looks_up_and_each_once(tmp_path,
                                                                         monkeypatch):
    import ncprobe.cache.shards as shard_io

    enc = Scaled()
    store = EmbeddingStore(enc.fingerprint(), root=tmp_path)
    embed(MANY[:10], enc, store=store, progress=False)
    embed(MANY[10:], enc, store=store, progress=False)
    shards = sorted(store.dir.glob("shard-*.npz"))
    assert len(shards) == 2
    shard_io.VERIFIED.clear()  # as a fresh process
    read: list[str] = []  # the shards whose vectors were read to be verified
    real = shard_io._crc_mismatch
    monkeypatch.setattr(shard_io, "_crc_mismatch",
                        lambda fh, members: read.append(fh.name) or real(fh, members))
    got = embed(MANY[:10], enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path),
                progress=False)
    assert got.encoded == 0 and read == [str(shards[0])]  # the other shard holds none of them
    want = embed(MANY[:10], enc, progress=False)
    assert np.array_equal(got.part("span", 1), want.part("span", 1))
    # a second run in the same process: the unchanged file is not read again
    embed(MANY[:10], enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path),
          progress=False)
    assert read == [str(shards[0])]


# --- half precision: refused where it would lose more than rounding, measured otherwise ---

def test_float16_refuses_vectors_below_its_normal_range_and_names_what_keeps_them(tmp_path):
    tiny = Scaled(scale=1e-6)  # float16's smallest normal number is 6.1e-5
    with pytest.raises(UsageError, match="bfloat16.*float32"):
        embed(MANY, tiny, store=EmbeddingStore(tiny.fingerprint(), root=tmp_path,
                                               dtype="float16"), progress=False)
    assert list(tmp_path.rglob("shard-*.npz")) == []  # nothing stored
    with pytest.raises(UsageError, match="smallest normal"):
        embed(MANY, tiny, store_dtype="float16", progress=False)  # in memory, the same
    # bfloat16 has float32's range: the same vectors are kept within its bound
    kept = embed(MANY, tiny, store_dtype="bfloat16", progress=False)
    assert 0 < kept.store_loss * 2 <= 2 * math.asin(2.0 ** -8)
    # rounding alone never trips the refusal: every value rounded by the most it can be
    # (1 + 2**-11 lies halfway between two float16 numbers), a vector's angle is ~2**-11
    # (the bound asin(|error| / |x|) is what is measured, whatever the error's direction)
    worst = np.full((3, 1, 8), 1.0 + 2.0 ** -11, dtype=np.float32) * np.float32(
        [1, 2, 4, 8, 16, 32, 64, 128])
    store = EmbeddingStore({"family": "test", "name": "worst"}, root=tmp_path, dtype="float16")
    keys = [bytes([i]) * 20 for i in range(3)]
    store.put(keys, Encoded(worst, worst, np.zeros(3, np.int32), np.zeros(3, np.int32)))
    with store.vectors(keys) as got:
        # |1 - (1 + 2**-11)| / (1 + 2**-11) in every component: that angle, by hand
        assert got.store_loss == pytest.approx(math.asin(2.0 ** -11 / (1 + 2.0 ** -11)),
                                               rel=1e-6)


def _cosines(vectors: np.ndarray) -> np.ndarray:
    unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    return unit @ unit.T


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_cost_of_half_precision_is_measured_recorded_and_holds(tmp_path, dtype):
    stim = pairs_stimuli(tmp_path / "pairs.csv", n_nc=6)
    enc = Scaled(scale=3e-3, views=2)  # small, but within float16's normal range
    kw = dict(stimuli=stim, encoder=enc, n_boot=0, progress=False, store_dtype=dtype)
    cold = ncprobe.compute(**kw, cache_dir=tmp_path / "cache")
    warm = ncprobe.compute(**kw, cache_dir=tmp_path / "cache")
    memory = ncprobe.compute(**kw, cache=False)
    recorded = cold.meta[0]["store_dtype_loss"]
    assert warm.meta[0]["store_dtype_loss"] == memory.meta[0]["store_dtype_loss"] == recorded
    assert warm.run_id == cold.run_id  # cold or warm: the same run
    # the bound, from numpy's own rounding: twice the largest angle between a vector and
    # its rounded copy (asin of the relative length of the error)
    items = {(s.tokens, s.span) for s in stim}
    vecs = np.stack([np.stack(enc.vectors(t, sp)) for t, sp in items]).reshape(-1, enc.dim)
    if dtype == "float16":
        rounded = vecs.astype(np.float16).astype(np.float32)
    else:
        rounded = _bfloat16(vecs)
    rel = np.linalg.norm(rounded.astype(np.float64) - vecs, axis=1) / np.linalg.norm(
        vecs.astype(np.float64), axis=1)
    want = 2 * float(np.arcsin(rel).max())
    assert recorded == pytest.approx(want, rel=1e-3)
    assert recorded <= 2 * math.asin(2.0 ** (-11 if dtype == "float16" else -8))
    # and it holds: no cosine between stored vectors moved further from float32's
    moved = np.abs(_cosines(rounded.astype(np.float64)) - _cosines(vecs.astype(np.float64)))
    assert moved.max() <= recorded
    assert [n for n in cold.notes if f"stored as {dtype}" in n and f"{recorded:.2g}" in n]
    exact = ncprobe.compute(stimuli=stim, encoder=enc, n_boot=0, progress=False, cache=False)
    assert "store_dtype_loss" not in exact.meta[0]  # float32: run.json as it always was


def _bfloat16(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 -> float32, rounding to nearest even on the bits (finite x)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return rounded.astype(np.uint32).view(np.float32)


def _vector_file(path: Path, scale: float) -> Path:
    """A word2vec text file of a few words (the others are out of its vocabulary)."""
    rng = np.random.default_rng(0)
    words = ["the", "a", "is", "of", "and", "in", "it", "was", "for", "on"]
    lines = [f"{len(words)} 4"] + [w + " " + " ".join(f"{v:.6g}" for v in rng.normal(size=4)
                                                      * scale) for w in words]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_overflowing_float16_is_a_usage_error_not_a_traceback(tmp_path, raw_dir, capsys):
    big = _vector_file(tmp_path / "big.txt", 1e5)
    code = main(["compute", "--model", str(big), "--store-dtype", "float16", "--n-boot", "0",
                 "--data-dir", str(raw_dir), "--cache-dir", str(tmp_path / "cache"),
                 "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert "65504" in err and "bfloat16" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_compare_names_the_options_that_tell_the_sides_apart(tmp_path, capsys):
    stim = pairs_stimuli(tmp_path / "pairs.csv", n_nc=9)
    enc = Scaled(scale=1.0, views=1)
    for dtype in ("float16", "float32"):
        res = ncprobe.compute(stimuli=stim, encoder=enc, n_boot=0, progress=False,
                              cache=False, store_dtype=dtype)
        res.to_parquet(tmp_path / dtype)
    loss = json.loads((tmp_path / "float16" / "run.json").read_text())["runs"][0][
        "store_dtype_loss"]
    assert main(["compare", str(tmp_path / "float16"), str(tmp_path / "float32"),
                 "--n-boot", "50", "--quiet"]) == 0
    out = capsys.readouterr().out
    line = [x for x in out.splitlines() if "differ in options" in x]
    assert len(line) == 1
    assert f"A store_dtype float16 (cosines within {loss:.2g}); B store_dtype float32" in line[0]
    # runs of the same options (two models): nothing to tell
    other = ncprobe.compute(stimuli=stim, encoder=Scaled(dim=12, views=1, name="other"),
                            n_boot=0, progress=False, cache=False, store_dtype="float32")
    other.to_parquet(tmp_path / "other")
    assert main(["compare", str(tmp_path / "other"), str(tmp_path / "float32"),
                 "--n-boot", "50", "--quiet"]) == 0
    assert "differ in options" not in capsys.readouterr().out
