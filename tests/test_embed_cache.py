"""Encoding stimuli: deduplication, the on-disk store, resume after an interruption."""

from __future__ import annotations

import numpy as np
import pytest

from ncprobe.cache import EmbeddingStore, cache_clear, cache_info
from ncprobe.data.stimuli import Stimulus
from ncprobe.embed import embed
from ncprobe.encoders import load_encoder


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
    assert cache_clear(tmp_path) == 1 and cache_info(tmp_path) == []


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
    assert not list(tmp_path.rglob(".tmp-*"))


def test_fingerprint_separates_layer_views(tmp_path) -> None:
    from .tiny_models import tiny_bert

    d = tiny_bert(tmp_path / "bert")
    a = EmbeddingStore(load_encoder(str(d)).fingerprint(), root=tmp_path / "c")
    b = EmbeddingStore(load_encoder(str(d), layers=[-1]).fingerprint(), root=tmp_path / "c")
    assert a.dir != b.dir
