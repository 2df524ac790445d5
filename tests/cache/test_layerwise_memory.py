"""Issue 22, part 1: layer-wise runs in bounded memory.

The analysis reads one level and layer view at a time; the embedding store reads only the
rows and views asked for (never another language's items), and keeps vectors in float16 or
bfloat16 on request, in entries of their own. Every expectation is derived here: vectors
from a seeded generator, results from ``analyse`` given every view in memory, half
precision from numpy's own float16 and a per-value bfloat16 rounding written out below.
"""

from __future__ import annotations

import json
import math
import struct
import tracemalloc

import numpy as np
import pandas as pd
import pytest

import ncprobe
from ncprobe.cache.dtypes import decode_vectors, encode_vectors
from ncprobe.cache.maintenance import cache_info
from ncprobe.cache.store import EmbeddingStore, item_key
from ncprobe.embed import Embeddings, embed
from ncprobe.encoders.base import Encoded
from ncprobe.errors import NcprobeError
from ncprobe.ncimp.analysis import analyse
from ncprobe.ncimp.config import RunConfig
from ncprobe.ncimp.pipeline import run_dir

from ..synthetic import SeededEncoder, pairs_stimuli

TABLES = ("cosines", "sentences", "measures", "correlations", "distributions",
          "lexical_overlap", "rogue", "standardisation", "ncs")


def Synthetic(dim: int = 6, views: int = 3, name: str = "synthetic") -> SeededEncoder:
    """Seeded random vectors, the sentence ones shifted by 1 (no cosine near 0)."""
    return SeededEncoder(dim, views, name, shift=1.0)


@pytest.fixture(scope="module")
def stim(tmp_path_factory):
    return pairs_stimuli(tmp_path_factory.mktemp("pairs") / "pairs.csv", n_nc=9)


def _all_views(stim, enc: SeededEncoder) -> Embeddings:
    """Every view of every stimulus in memory, straight from the encoder (no store)."""
    pairs = [enc.vectors(s.tokens, s.span) for s in stim]
    n = len(stim)
    return Embeddings(np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs]),
                      np.zeros(n, np.int32), np.zeros(n, np.int32), n, n)


def _assert_same_tables(a, b) -> None:
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True,
                                      obj=name)


# --- 1. the analysis streams one view at a time -------------------------------------------

class CountingSource:
    """A vector source over arrays held by the test, recording every (part, view) asked
    and checking that no array it handed out before is still alive in the analysis."""

    def __init__(self, sent: np.ndarray, span: np.ndarray) -> None:
        import weakref

        self.arrays, self.asked, self.alive_at_read = {"sent": sent, "span": span}, [], []
        self._handed: list = []
        self._ref = weakref.ref
        self.n, self.views = len(sent), sent.shape[1]

    def read(self, part: str, view: int) -> np.ndarray:
        import gc

        gc.collect()
        self.alive_at_read.append(sum(r() is not None for r in self._handed))
        self.asked.append((part, view))
        # float64, as the analysis computes: it keeps this very array as the view's vectors
        out = np.array(self.arrays[part][:, view, :], dtype=np.float64)
        self._handed.append(self._ref(out))
        return out


@pytest.mark.slow  # ~3.5 s
def test_the_analysis_asks_for_one_view_at_a_time_and_gets_the_same_results(stim):
    enc = Synthetic(dim=5, views=4)
    whole = _all_views(stim, enc)
    cfg = RunConfig(model="synthetic", n_boot=20, standardise=True, per_sentence=True)
    names = ["0", "1", "2", "3"]
    want = analyse(stim, whole, cfg, model="synthetic", view_names=names,
                   levels=("sent", "nc"))
    source = CountingSource(whole.sent, whole.span)
    lazy = Embeddings.from_source(source, whole.missing_words, whole.missing_span_words,
                                  len(stim), len(stim))
    got = analyse(stim, lazy, cfg, model="synthetic", view_names=names, levels=("sent", "nc"))
    # each (part, view) once, level by level, never all at once
    assert source.asked == [("sent", v) for v in range(4)] + [("span", v) for v in range(4)]
    assert source.alive_at_read == [0] * 8  # the previous view was let go before the next
    _assert_same_tables(got, want)


@pytest.mark.slow  # ~4 s: two runs of a 640-d, 10-view model on 2,810 stimuli
def test_a_warm_layerwise_run_holds_about_one_view(raw_dir, tmp_path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        stim = ncprobe.load_stimuli("en", contexts="neut", data_dir=raw_dir)
    enc = Synthetic(dim=640, views=10)
    kw = dict(stimuli=stim, encoder=enc, cache_dir=tmp_path / "cache", n_boot=0,
              progress=False)
    cold = ncprobe.compute(**kw)
    tracemalloc.start()
    try:
        warm = ncprobe.compute(**kw)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert enc.calls == len({(s.tokens, s.span) for s in stim})  # the second run encoded none
    n = len(stim)
    one_view = n * enc.dim * 8          # one part of one view, as the analysis's float64
    every_view = n * enc.dim * 4 * 2 * len(enc.views)   # what embed() used to hold (float32)
    assert every_view >= 9 * one_view
    assert peak < 3 * one_view, (peak, one_view)
    _assert_same_tables(warm, cold)


# --- 2. the store reads only what is asked ------------------------------------------------

def _keys(prefix: str, n: int) -> list[bytes]:
    return [item_key((prefix, str(i)), (0, 1)) for i in range(n)]


def test_the_store_reads_only_the_rows_and_views_asked_for(tmp_path):
    views, dim = 3, 256
    rng = np.random.default_rng(0)
    en, pt = _keys("en", 40), _keys("pt", 2000)
    vec = {k: (rng.normal(size=(views, dim)).astype(np.float32),
               rng.normal(size=(views, dim)).astype(np.float32)) for k in en + pt}
    fp = {"family": "test", "name": "two-languages"}

    def put(store, keys):
        store.put(keys, Encoded(np.stack([vec[k][0] for k in keys]),
                                np.stack([vec[k][1] for k in keys]),
                                np.arange(len(keys), dtype=np.int32),
                                np.zeros(len(keys), np.int32)))

    store = EmbeddingStore(fp, root=tmp_path)
    # one shard with both languages interleaved, one with Portuguese only
    mixed = [k for pair in zip(en, pt[:40], strict=True) for k in pair]
    put(store, mixed)
    put(store, pt[40:])
    pt_bytes = 2000 * views * dim * 4 * 2
    tracemalloc.start()
    try:
        again = EmbeddingStore(fp, root=tmp_path)  # indexes both shards: keys and headers
        ask = [en[5], en[0], en[39], en[0]]  # any order, repeats allowed
        with again.vectors(en, order=[en.index(k) for k in ask]) as got:
            parts = {(p, v): got.read(p, v) for p in ("sent", "span") for v in range(views)}
            rows, nbytes = got.rows_read, got.bytes_read
            missing = got.missing_words
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    for (p, v), arr in parts.items():
        want = np.stack([vec[k][0 if p == "sent" else 1][v] for k in ask])
        assert arr.dtype == np.float32 and np.array_equal(arr, want)
    assert missing.tolist() == [2 * 5, 0, 2 * 39, 0]  # English rows: 0, 2, 4 ... of the shard
    # three distinct English rows per part and view, nothing of the Portuguese items
    assert rows == 3 * 2 * views and nbytes == 3 * 2 * views * dim * 4
    # the index of 2,040 keys, and the rows read: a tenth of the Portuguese vectors (one
    # Portuguese shard read whole would be nearly all of them)
    assert peak < pt_bytes / 10, (peak, pt_bytes)


def test_embed_reads_one_language_from_an_entry_holding_two(tmp_path):
    enc = Synthetic(dim=8, views=2)
    from ncprobe.data.stimuli import Stimulus

    def stimuli(lang, n):
        return [Stimulus(lang, f"nc{i}", "N", "original", 1, (lang, "word", str(i)), (1, 3),
                         f"word {i}") for i in range(n)]

    store = EmbeddingStore(enc.fingerprint(), root=tmp_path)
    en, pt = stimuli("en", 12), stimuli("pt", 300)
    embed(pt[:150] + en + pt[150:], enc, store=store, flush_every=4096,
          progress=False)  # one shard, both
    assert len(list(store.dir.glob("shard-*.npz"))) == 1
    with embed(en, enc, store=store, progress=False) as emb:
        sent, span = emb.view(1)
        source = emb._source
        # 12 rows of one view, per part: none of the 300 Portuguese items
        assert (source.rows_read, source.bytes_read, emb.encoded) == (2 * 12, 2 * 12 * 8 * 4,
                                                                      0)
    want = [enc.vectors(s.tokens, s.span) for s in en]
    assert np.array_equal(sent, np.stack([w[0][1] for w in want]))
    assert np.array_equal(span, np.stack([w[1][1] for w in want]))


# --- 3. shards of other layouts -------------------------------------------------------

def test_a_run_reads_its_vectors_after_a_cache_clear(tmp_path, stim):
    from ncprobe.cache.maintenance import cache_clear

    enc = Synthetic(dim=4, views=2)
    with embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path),
               progress=False) as emb:
        assert len(cache_clear(tmp_path).removed) == 1  # between the encoding and the analysis
        assert not list(tmp_path.rglob("shard-*.npz"))
        assert np.array_equal(emb.span, _all_views(stim, enc).span)  # through the open files


def test_a_shard_of_an_unknown_layout_is_discarded_and_named(tmp_path):
    fp = {"family": "test", "name": "layouts"}
    store = EmbeddingStore(fp, root=tmp_path)
    keys = _keys("x", 3)
    store.put(keys, Encoded(np.ones((3, 2, 4), np.float32), np.ones((3, 2, 4), np.float32),
                            np.zeros(3, np.int32), np.zeros(3, np.int32)))
    (shard,) = store.dir.glob("shard-*.npz")
    with np.load(shard) as z:
        data = {k: z[k] for k in z.files}
    data["layout"] = np.array(["views-last", "float32"])  # e.g. a newer ncprobe's
    np.savez(shard, **data)
    assert "not one ncprobe writes" in cache_info(tmp_path)[0]["corrupt"][0]
    again = EmbeddingStore(fp, root=tmp_path)
    assert len(again) == 0 and not shard.exists()
    assert [p for p in again.problems if str(shard) in p and "layout" in p]


# --- 4. half-precision storage ------------------------------------------------------------

def _bfloat16_by_hand(x: float) -> float:
    """``x`` (a float32) rounded to bfloat16 by comparing distances: the nearer of the two
    bfloat16 values around it (the one with an even last bit on a tie); past the largest
    bfloat16, infinity counts as the next value (2**128) as IEEE rounding has it."""
    if math.isnan(x) or math.isinf(x):
        return x
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    magnitude = bits & 0x7FFFFFFF

    def value(b: int) -> float:  # a float32 bit pattern's value, exactly, as a float64
        return 2.0 ** 128 if b == 0x7F800000 else struct.unpack("<f", struct.pack("<I", b))[0]

    low = magnitude & 0xFFFF0000   # the bfloat16 at or below |x|
    high = low + 0x10000           # the next one up
    below, above, at = value(low), value(high), value(magnitude)
    tie_goes_low = (low >> 16) & 1 == 0
    if at - below < above - at or (at - below == above - at and tie_goes_low):
        out = below
    else:
        out = above
    out = math.inf if out == 2.0 ** 128 else out
    return -out if bits >> 31 else out


def test_bfloat16_storage_rounds_to_nearest_even():
    rng = np.random.default_rng(3)
    x = np.concatenate([
        rng.normal(size=300).astype(np.float32) * 10.0 ** rng.integers(-8, 8, 300),
        np.array([1.0, -2.5, 0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38,
                  1e-40, 1.00390625, 1.01171875, 1.0 + 2 ** -8 + 2 ** -20], np.float32),
        np.frombuffer(struct.pack("<2I", 0x3F808000, 0x3F818000), np.float32)])  # exact ties
    got = decode_vectors(encode_vectors(x, "bfloat16"), "bfloat16")
    want = np.array([_bfloat16_by_hand(float(v)) for v in x], dtype=np.float32)
    assert got.dtype == np.float32
    assert np.array_equal(got, want, equal_nan=True)
    assert _bfloat16_by_hand(struct.unpack("<f", struct.pack("<I", 0x3F808000))[0]) == 1.0
    assert _bfloat16_by_hand(struct.unpack("<f", struct.pack("<I", 0x3F818000))[0]) == 1.015625


def test_float16_storage_is_an_entry_of_its_own_and_rounds_like_numpy(tmp_path, stim):
    enc = Synthetic(dim=6, views=2)
    fp = enc.fingerprint()
    f32, f16 = EmbeddingStore(fp, root=tmp_path), EmbeddingStore(fp, root=tmp_path,
                                                                 dtype="float16")
    bf16 = EmbeddingStore(fp, root=tmp_path, dtype="bfloat16")
    assert len({f32.dir, f16.dir, bf16.dir}) == 3
    recorded = json.loads((f16.dir / "fingerprint.json").read_text())
    assert recorded["store_dtype"] == "float16" and "store_dtype" not in json.loads(
        (f32.dir / "fingerprint.json").read_text())
    with embed(stim, enc, store=f16, progress=False) as emb:
        half = emb.sent
    whole = _all_views(stim, enc)
    assert half.dtype == np.float32
    assert np.array_equal(half, whole.sent.astype(np.float16).astype(np.float32))
    # within half a unit in the last place: 2**-11 relative (2**-25 among subnormals)
    assert np.all(np.abs(half - whole.sent) <= 2.0 ** -11 * np.abs(whole.sent) + 2.0 ** -25)
    # a float32 shard put into the float16 entry by hand is not taken for float16 vectors
    embed(stim, enc, store=f32, progress=False)
    (shard,) = f32.dir.glob("shard-*.npz")
    (f16.dir / shard.name).write_bytes(shard.read_bytes())
    again = EmbeddingStore(fp, root=tmp_path, dtype="float16")
    assert [p for p in again.problems if "stored as float32" in p]
    assert sorted(e["store_dtype"] for e in cache_info(tmp_path)) == [
        "bfloat16", "float16", "float32"]


def test_float16_refuses_values_beyond_its_range(tmp_path):
    store = EmbeddingStore({"family": "test", "name": "big"}, root=tmp_path, dtype="float16")
    big = np.full((2, 1, 3), 7e4, np.float32)
    with pytest.raises(NcprobeError, match="bfloat16"):
        store.put(_keys("b", 2), Encoded(big, big, np.zeros(2, np.int32),
                                         np.zeros(2, np.int32)))
    assert list(store.dir.glob("shard-*.npz")) == []


def test_compute_records_the_store_dtype_and_keeps_float32_results_exact(stim, tmp_path):
    enc = Synthetic(dim=5, views=3)
    kw = dict(stimuli=stim, encoder=enc, cache_dir=tmp_path / "cache", n_boot=0,
              progress=False)
    exact = ncprobe.compute(**kw)
    cfg = RunConfig(model="synthetic", n_boot=0)
    names = ["0", "1", "2"]
    want = analyse(stim, _all_views(stim, enc), cfg, model="synthetic", view_names=names,
                   levels=("sent", "nc"))
    _assert_same_tables(exact, want)  # through the store, one view at a time: the same
    assert "store_dtype" not in exact.meta[0]["config"]
    half = ncprobe.compute(**kw, store_dtype="bfloat16")
    assert half.meta[0]["config"]["store_dtype"] == "bfloat16"
    assert run_dir("r", "synthetic", "en", RunConfig(store_dtype="bfloat16")).name == \
        "synthetic-en-store-dtype_bfloat16"
    # the same table, cosines a little off (8 bits of mantissa), never another row
    a, b = exact.cosines, half.cosines
    assert len(a) == len(b)
    assert np.nanmax(np.abs(a["cosine"] - b["cosine"])) < 0.05
    assert not np.array_equal(a["cosine"], b["cosine"])
    no_cache = ncprobe.compute(stimuli=stim, encoder=enc, cache=False, n_boot=0,
                               progress=False, store_dtype="bfloat16")
    _assert_same_tables(no_cache, half)  # the same rounding without a store
