"""Encoding stimuli: deduplication, the on-disk store, resume after an interruption,
corrupt shards, and two processes sharing one cache."""

from __future__ import annotations

import logging
import multiprocessing

import numpy as np
import pytest

from ncprobe.cache.maintenance import cache_clear, cache_info
from ncprobe.cache.store import EmbeddingStore
from ncprobe.data.stimuli import Stimulus
from ncprobe.embed import embed
from ncprobe.encoders import load_encoder
from ncprobe.encoders.base import Encoded


def _stim(words, span, probe="original", variant=1, context="N"):
    words = tuple(words.split())
    return Stimulus("en", "nc", context, probe, variant, words, span,
                    " ".join(words[span[0]:span[1]]))


STIMULI = [_stim("this is a grey matter", (3, 5)), _stim("this is a brain", (3, 4), "syn"),
           _stim("this is a grey matter", (3, 5), context="S1"),  # same item, another context
           _stim("use your grey matter now", (2, 4), context="S2"),
           _stim("use your brain now", (2, 3), "syn", context="S2")]


class Counting:
    """Wraps an encoder and counts forward passes (sentences encoded)."""

    def __init__(self, inner, fail_after=None):
        self.inner, self.calls, self.fail_after = inner, 0, fail_after
        self.name, self.dim, self.views, self.levels = inner.name, inner.dim, inner.views, \
            inner.levels

    def fingerprint(self):
        return self.inner.fingerprint()

    def encode(self, sentences, spans):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt
        self.calls += len(sentences)
        return self.inner.encode(sentences, spans)


def test_dedup_and_store(tmp_path) -> None:
    enc = Counting(load_encoder("glove-6b-50d"))
    store = EmbeddingStore(enc.fingerprint(), root=tmp_path)
    out = embed(STIMULI, enc, store=store, progress=False)
    assert (out.unique, out.encoded, enc.calls) == (4, 4, 4)
    np.testing.assert_array_equal(out.span[0], out.span[2])
    direct = enc.inner.encode([s.tokens for s in STIMULI], [s.span for s in STIMULI])
    np.testing.assert_allclose(out.span, direct.span, atol=1e-6)
    again = embed(STIMULI, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path),
                  progress=False)
    assert again.encoded == 0 and enc.calls == 4  # no forward pass on a second run
    np.testing.assert_array_equal(again.span, out.span)
    info = cache_info(tmp_path)
    assert len(info) == 1 and info[0]["items"] == 4 and info[0]["model"] == "glove-6b-50d"
    assert len(cache_clear(tmp_path).removed) == 1 and cache_info(tmp_path) == []


def test_interrupted_run_resumes(tmp_path) -> None:
    inner = load_encoder("glove-6b-50d")
    many = [_stim(f"this is word{i} grey matter", (3, 5), variant=i) for i in range(40)]
    enc = Counting(inner, fail_after=20)
    with pytest.raises(KeyboardInterrupt):
        embed(many, enc, store=EmbeddingStore(inner.fingerprint(), root=tmp_path), batch_size=5,
              flush_every=10, progress=False)
    kept = len(EmbeddingStore(inner.fingerprint(), root=tmp_path))
    assert kept == 20  # everything encoded before the interruption was kept
    rerun = Counting(inner)
    out = embed(many, rerun, store=EmbeddingStore(inner.fingerprint(), root=tmp_path),
                batch_size=5, progress=False)
    assert rerun.calls == 40 - kept and out.encoded == 40 - kept
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".") and "tmp" in p.name]


def test_fingerprint_separates_layer_views(tmp_path) -> None:
    from .tiny_models import tiny_bert

    d = tiny_bert(tmp_path / "bert")
    a = EmbeddingStore(load_encoder(str(d)).fingerprint(), root=tmp_path / "c")
    b = EmbeddingStore(load_encoder(str(d), layers=[-1]).fingerprint(), root=tmp_path / "c")
    assert a.dir != b.dir


MANY = [_stim(f"this is word{i % 30} grey matter", (3, 5), variant=i) for i in range(40)]


def _two_shards(root):
    """A store holding MANY's 30 unique items in two shards (20 + 10): (store dir, shards)."""
    inner = load_encoder("glove-6b-50d")
    embed(MANY[:20], inner, store=EmbeddingStore(inner.fingerprint(), root=root),
          progress=False)
    embed(MANY[20:] + MANY[:20], inner, store=EmbeddingStore(inner.fingerprint(), root=root),
          progress=False)
    d = EmbeddingStore(inner.fingerprint(), root=root).dir
    return d, sorted(d.glob("shard-*.npz"))


def _truncated(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def _random_bytes(path):
    path.write_bytes(np.random.default_rng(0).bytes(path.stat().st_size))


def _zeroed(path):
    path.write_bytes(bytes(path.stat().st_size))


def _without_span(path):
    with np.load(path) as z:
        kept = {k: z[k] for k in z.files if k != "span"}
    np.savez(path, **kept)


def _wrong_shape(path):
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data["sent"] = data["sent"][:, :, :10]  # other shards hold 50 dimensions
    data["span"] = data["span"][:, :, :10]
    np.savez(path, **data)


@pytest.mark.parametrize("damage", [_truncated, _random_bytes, _zeroed, _without_span,
                                    _wrong_shape])
def test_a_corrupt_shard_is_reported_discarded_and_reencoded(tmp_path, damage, caplog,
                                                            capsys) -> None:
    from ncprobe.cli import main

    d, shards = _two_shards(tmp_path)
    assert len(shards) == 2
    inner = load_encoder("glove-6b-50d")
    good = embed(MANY, inner, progress=False)  # no store: the reference vectors
    bad = shards[1]
    with np.load(bad) as z:
        lost = len(z["keys"])  # items of the damaged shard, to be encoded again
    damage(bad)
    # cache info and cache clear --model of another model keep working, and name the shard
    # every shard that compute discards is listed, arrays missing or of another shape too
    info = cache_info(tmp_path)
    assert info[0]["items"] == 30 - lost
    assert main(["cache", "info", "--cache-dir", str(tmp_path)]) == 0
    assert f"corrupt shard (discarded by the next compute): {bad}" in capsys.readouterr().out
    enc = Counting(inner)
    with caplog.at_level(logging.WARNING, logger="ncprobe.cache"):
        store = EmbeddingStore(inner.fingerprint(), root=tmp_path)
        out = embed(MANY, enc, store=store, progress=False)
    warned = [r.getMessage() for r in caplog.records if str(bad) in r.getMessage()]
    assert len(warned) == 1 and "cannot be used" in warned[0]  # once, by path
    assert store.problems == warned
    assert enc.calls == lost and out.encoded == lost
    np.testing.assert_array_equal(out.span, good.span)
    np.testing.assert_array_equal(out.sent, good.sent)
    assert not bad.exists() and len(list(d.glob("shard-*.npz"))) == 2
    assert [e["items"] for e in cache_info(tmp_path)] == [30]
    assert len(cache_clear(tmp_path).removed) == 1


def test_a_corrupt_shard_is_named_in_the_run_notes(tmp_path) -> None:
    import ncprobe

    d, shards = _two_shards(tmp_path / "cache")
    _truncated(shards[0])
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("nc,sentence,start,end,probe,substitute,comp\n"
                     "grey matter,this is a grey matter,3,5,syn,brain,1.0\n"
                     "eager beaver,an eager beaver works,1,3,syn,workaholic,2.0\n"
                     "dust storm,a dust storm came,1,3,syn,sandstorm,4.0\n")
    res = ncprobe.compute(stimuli=ncprobe.load_pairs(pairs, lang="en"),
                          encoder=load_encoder("glove-6b-50d"), cache_dir=tmp_path / "cache",
                          n_boot=0, progress=False)
    assert [n for n in res.notes if str(shards[0]) in n and "cannot be used" in n]


def _encode_in_another_process(root, barrier, out) -> None:
    """One of two runs sharing a cache: open the store, wait for the other, then encode."""
    inner = load_encoder("glove-6b-50d")
    store = EmbeddingStore(inner.fingerprint(), root=root)  # both see an empty store here
    barrier.wait(timeout=120)
    emb = embed(MANY, inner, store=store, batch_size=4, flush_every=8, progress=False)
    np.savez(out, sent=emb.sent, span=emb.span, encoded=emb.encoded)


@pytest.mark.slow  # ~10 s: two fresh interpreters import torch
def test_two_processes_sharing_a_cache_store_each_item_once(tmp_path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    outs = [tmp_path / f"run{i}.npz" for i in range(2)]
    procs = [ctx.Process(target=_encode_in_another_process,
                         args=(tmp_path / "cache", barrier, out)) for out in outs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0]
    unique = len({(s.tokens, s.span) for s in MANY})
    assert unique == 30
    stored = 0
    for shard in (tmp_path / "cache").rglob("shard-*.npz"):
        with np.load(shard) as z:
            stored += len(z["keys"])
    assert stored == unique  # not 2 x 30: the second run found what the first stored
    a, b = (np.load(o) for o in outs)
    assert sorted([int(a["encoded"]), int(b["encoded"])]) == [0, unique]
    np.testing.assert_array_equal(a["sent"], b["sent"])
    np.testing.assert_array_equal(a["span"], b["span"])


def test_sentence_and_span_vectors_of_different_sizes_are_stored_and_read_back(tmp_path):
    # a sentence-transformers model with a Dense layer: sentence embeddings of one size
    # (e.g. 512) and token-state span vectors of another (768); both must survive the store
    from ncprobe.cache.store import item_key
    from ncprobe.encoders.base import Encoded

    fp = {"family": "test", "name": "dense", "format": 1}
    rng = np.random.default_rng(0)
    keys = [item_key(("a", "b", str(i)), (0, 1)) for i in range(5)]
    enc = Encoded(rng.normal(size=(5, 1, 6)).astype(np.float32),
                  rng.normal(size=(5, 1, 4)).astype(np.float32),
                  np.zeros(5, np.int32), np.zeros(5, np.int32))
    EmbeddingStore(fp, root=tmp_path).put(keys[:3], Encoded(enc.sent[:3], enc.span[:3],
                                                            enc.missing_words[:3],
                                                            enc.missing_span_words[:3]))
    store = EmbeddingStore(fp, root=tmp_path)
    store.put(keys[3:], Encoded(enc.sent[3:], enc.span[3:], enc.missing_words[3:],
                                enc.missing_span_words[3:]))
    again = EmbeddingStore(fp, root=tmp_path)  # both shards read from disk
    assert again.problems == [] and len(again) == 5
    got = again.get(keys)
    np.testing.assert_array_equal(got.sent, enc.sent)
    np.testing.assert_array_equal(got.span, enc.span)


def test_get_gathers_rows_from_several_shards_in_the_order_asked(tmp_path) -> None:
    store = EmbeddingStore({"family": "test", "model": "rows"}, root=tmp_path)
    rng = np.random.default_rng(0)
    keys = [bytes([i]) * 20 for i in range(9)]
    rows = {}
    for part in (keys[:4], keys[4:7], keys[7:]):  # three shards
        sent = rng.normal(size=(len(part), 1, 3)).astype(np.float32)
        span = rng.normal(size=(len(part), 1, 5)).astype(np.float32)  # sizes may differ
        miss = rng.integers(0, 3, len(part)).astype(np.int32)
        store.put(part, Encoded(sent, span, miss, miss + 1))
        rows.update({k: (sent[j], span[j], miss[j]) for j, k in enumerate(part)})
    ask = [keys[8], keys[0], keys[5], keys[0], keys[3], keys[7]]
    again = EmbeddingStore({"family": "test", "model": "rows"}, root=tmp_path)
    with again.lock():  # loads the shards on disk
        got = again.get(ask)
    np.testing.assert_array_equal(got.sent, np.stack([rows[k][0] for k in ask]))
    np.testing.assert_array_equal(got.span, np.stack([rows[k][1] for k in ask]))
    np.testing.assert_array_equal(got.missing_words, [rows[k][2] for k in ask])
    np.testing.assert_array_equal(got.missing_span_words, [rows[k][2] + 1 for k in ask])
    assert got.sent.dtype == np.float32 and got.missing_words.dtype == np.int32


@pytest.mark.parametrize("views", [1, 3])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_shard_file_holds_what_numpy_savez_writes(views, dtype) -> None:
    # the views-first vectors are streamed into the file batch by batch; every member must
    # be the bytes np.savez writes for the array built whole
    import io
    import zipfile

    from ncprobe.cache.dtypes import DISK_DTYPE, encode_vectors
    from ncprobe.cache.shards import ViewsFirst, write_npz

    rng = np.random.default_rng(3)
    batches = [rng.standard_normal((n, views, 8)).astype(np.float32) for n in (5, 1, 7)]
    whole = np.concatenate([encode_vectors(b, dtype) for b in batches]).transpose(1, 0, 2)
    small = {"keys": np.arange(13 * 20, dtype=np.uint8).reshape(13, 20),
             "layout": np.array(["views-first", dtype])}
    want, have = io.BytesIO(), io.BytesIO()
    np.savez(want, allow_pickle=False, sent=np.ascontiguousarray(whole, DISK_DTYPE[dtype]),
             **small)
    write_npz(have, {"sent": ViewsFirst(batches, dtype), **small})
    with zipfile.ZipFile(want) as a, zipfile.ZipFile(have) as b:
        assert a.namelist() == b.namelist() == ["sent.npy", "keys.npy", "layout.npy"]
        for name in a.namelist():
            assert a.read(name) == b.read(name), name  # read() also checks each CRC


def test_item_key_is_sha1_of_the_json_of_tokens_and_span() -> None:
    import hashlib
    import json

    from ncprobe.cache.store import item_key

    def by_definition(tokens, span):
        text = json.dumps([list(tokens), list(span)], ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha1(text.encode("utf-8")).digest()

    rng = np.random.default_rng(4)
    alphabet = list('ab"\\/\n\t\r\b\f\x00\x1f\x7f é—\u2028\u2029😀ção')
    cases = [(("pão-duro", "vinho", "branco"), (0, 1)), ((), (0, 0)), (("",), (0, 1))]
    for _ in range(300):
        words = tuple("".join(rng.choice(alphabet, int(rng.integers(0, 6))))
                      for _ in range(int(rng.integers(1, 6))))
        cases.append((words, (int(rng.integers(0, 3)), int(rng.integers(3, 9)))))
    for tokens, span in cases:
        assert item_key(tokens, span) == by_definition(tokens, span), (tokens, span)
        assert item_key(list(tokens), list(span)) == by_definition(tokens, span)
    with pytest.raises(TypeError):  # as json.dumps: a span of numpy integers is no key
        item_key(("a",), (np.int64(0), np.int64(1)))


@pytest.mark.parametrize("fixture", ["tiny_bert_dir", "tiny_st_dir"])
def test_transformers_loading_bar_is_not_left_among_ncprobes_progress(fixture, request, capfd,
                                                                      tmp_path) -> None:
    """transformers 5 draws a "Loading weights" bar on stderr when a model loads; ncprobe
    shows its own progress (the encoding bar) and nothing of the library's."""
    enc = load_encoder(str(request.getfixturevalue(fixture)))
    capfd.readouterr()
    embed(STIMULI, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path), progress=True)
    err = capfd.readouterr().err
    assert enc.loaded  # the weights were loaded in this call
    assert "Loading weights" not in err
    assert f"encoding with {enc.name}" in err  # ncprobe's own bar is still there
    from transformers.utils import logging as tf_logging

    assert tf_logging.is_progress_bar_enabled()  # the library's setting is left as it was
