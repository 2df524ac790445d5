"""Encoders: alignment, pooling, layers, padding invariance, real offline models."""

from __future__ import annotations

import numpy as np
import pytest

from ncprobe.encoders import load_encoder
from ncprobe.encoders.hf import HFEncoder
from ncprobe.errors import UsageError

from ..encoder_checks import assert_padding_invariant


@pytest.fixture
def llama_dir(tiny_llama_dir):
    return tiny_llama_dir


SENTS = [["Esta", "é", "uma", "montanha-russa", "."],
         ["vinho", "branco"],
         ["o", "coração", "da", "ação", "é", "um", "pão-duro", "e", "a", "lua", "cheia", "."]]
SPANS = [(3, 4), (0, 2), (9, 11)]


def _hidden(enc: HFEncoder, words, layers):
    """Token states of one unpadded sentence straight from the model, and its word ids."""
    import torch

    batch = enc.tokenizer([words], is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        out = enc.model(**{k: v for k, v in batch.items() if k != "token_type_ids"},
                        output_hidden_states=True)
    states = torch.stack([out.hidden_states[i] for i in layers]).mean(0)[0].numpy()
    return states, batch.word_ids(0), out


@pytest.mark.parametrize("which", ["bert", "llama"])
def test_span_and_sentence_are_hand_computed_means(which, bert_dir, llama_dir) -> None:
    path = bert_dir if which == "bert" else llama_dir
    enc = load_encoder(str(path), layers=[-1])
    assert isinstance(enc, HFEncoder) and enc.causal == (which == "llama")
    out = enc.encode(SENTS, SPANS)
    for words, (s, e), sent, span in zip(SENTS, SPANS, out.sent, out.span, strict=True):
        states, wids, _ = _hidden(enc, words, [enc.n_layers])
        word_vecs = [states[[t for t, w in enumerate(wids) if w == k]].mean(0)
                     for k in range(len(words))]
        # multi-piece words exist in this vocabulary (checked so the test means something)
        assert max(sum(1 for w in wids if w == k) for k in range(len(words))) > 1
        np.testing.assert_allclose(span[0], np.mean(word_vecs[s:e], axis=0), atol=1e-5)
        np.testing.assert_allclose(sent[0], np.mean(word_vecs, axis=0), atol=1e-5)
        # special tokens ([CLS]/[SEP]/<s>) have no word id and are excluded
        assert wids[0] is None


@pytest.mark.parametrize("which", ["bert", "llama"])
def test_padding_invariance(which, bert_dir, llama_dir) -> None:
    enc = load_encoder(str(bert_dir if which == "bert" else llama_dir))
    assert_padding_invariant(enc, SENTS, SPANS)


def test_layer_selection(bert_dir) -> None:
    last = load_encoder(str(bert_dir), layers=[-1])
    words = SENTS[0]
    _, _, out = _hidden(last, words, [last.n_layers])
    np.testing.assert_allclose(out.hidden_states[-1].numpy(), out.last_hidden_state.numpy())
    default = load_encoder(str(bert_dir))
    assert default.views == ((0, 1, 2, 3),)  # 3 layers + embeddings: the last four
    each = load_encoder(str(bert_dir), layers="all")
    assert each.views == ((0,), (1,), (2,), (3,))
    e_all = each.encode(SENTS, SPANS)
    e_def = default.encode(SENTS, SPANS)
    np.testing.assert_allclose(e_all.span.mean(axis=1), e_def.span[:, 0], atol=1e-5)
    np.testing.assert_allclose(e_all.span[:, 3], last.encode(SENTS, SPANS).span[:, 0], atol=1e-6)
    with pytest.raises(UsageError, match="out of range"):
        load_encoder(str(bert_dir), layers=[7])


def test_span_at_sentence_start_and_end(bert_dir) -> None:
    enc = load_encoder(str(bert_dir), layers=[-1])
    words = ["pão-duro", "e", "montanha-russa"]
    out = enc.encode([words, words], [(0, 1), (2, 3)])
    states, wids, _ = _hidden(enc, words, [enc.n_layers])
    first = states[[t for t, w in enumerate(wids) if w == 0]].mean(0)
    last = states[[t for t, w in enumerate(wids) if w == 2]].mean(0)
    np.testing.assert_allclose(out.span[0, 0], first, atol=1e-5)
    np.testing.assert_allclose(out.span[1, 0], last, atol=1e-5)


def test_unknown_model_suggests() -> None:
    with pytest.raises(UsageError, match="Did you mean bert-large"):
        load_encoder("bert-larg")


def test_glove_real_vectors() -> None:
    enc = load_encoder("glove-6b-50d")

    def vec(w):
        return enc.encode([[w]], [(0, 1)]).span[0, 0]

    def cos(a, b):
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    assert cos(vec("king"), vec("queen")) > cos(vec("king"), vec("carrot"))
    assert cos(vec("Grey"), vec("gray")) > cos(vec("grey"), vec("economic"))  # lower-cased lookup
    out = enc.encode([["the", "zzqxv", "matter"], ["zzqxv", "qqzzv"]], [(1, 3), (0, 2)])
    assert list(out.missing_words) == [1, 2] and list(out.missing_span_words) == [1, 2]
    np.testing.assert_allclose(out.span[0, 0], vec("matter"))  # OOV word left out of the mean
    assert np.isnan(out.span[1]).all() and np.isnan(out.sent[1]).all()  # reported, not zeros


def test_minilm_real_model() -> None:
    enc = load_encoder("minilm")
    out = enc.encode([["a", "doctor", "treats", "patients"], ["a", "physician", "treats",
                                                                "patients"],
                      ["a", "carrot", "grows", "underground"]], [(1, 2), (1, 2), (1, 2)])

    def cos(a, b):
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    for vecs in (out.sent[:, 0], out.own):  # the views' word means, the model's own embedding
        assert cos(vecs[0], vecs[1]) > cos(vecs[0], vecs[2])
    assert out.sent.shape[-1] == 384 and out.span.shape[-1] == 384
    # the model's own sentence embedding comes once, beside the views (not as their sentence
    # level: that is the mean of the word vectors, tests/encoders/test_sbert.py)
    ref = enc.st.encode(["a doctor treats patients"], convert_to_numpy=True)[0]
    np.testing.assert_allclose(out.own[0], ref, atol=1e-5)
    assert not np.allclose(out.sent[0, 0], ref, atol=1e-3)


@pytest.mark.slow
def test_minilm_encodes_the_whole_english_neutral_set(raw_dir) -> None:
    """Every neutral stimulus gets finite vectors; synonyms sit closer than random phrases."""
    import warnings

    import ncprobe
    from ncprobe.embed import embed
    from ncprobe.ncimp.measures import cosine

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stim = ncprobe.load_stimuli("en", contexts="neut", probes="syn,rand", data_dir=raw_dir)
    vecs = embed(stim, load_encoder("minilm"), progress=False, batch_size=64)
    assert vecs.sent.shape == (len(stim), 1, 384) and np.isfinite(vecs.span).all()
    orig = {s.nc: i for i, s in enumerate(stim) if s.probe == "original"}
    assert len(orig) == 281
    sims = {"syn": [], "rand": []}
    for i, s in enumerate(stim):
        if s.probe != "original":
            sims[s.probe].append(cosine(vecs.span[i, 0], vecs.span[orig[s.nc], 0]))
    assert np.mean(sims["syn"]) > np.mean(sims["rand"]) + 0.1


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_pools_in_float32_and_has_its_own_fingerprint(dtype, llama_dir,
                                                                     caplog) -> None:
    full = HFEncoder(str(llama_dir), device="cpu")
    half = HFEncoder(str(llama_dir), device="cpu", dtype=dtype)
    assert "half precision is slow" in caplog.text  # allowed on a CPU, with a warning
    x, y = full.encode(SENTS, SPANS), half.encode(SENTS, SPANS)
    assert y.span.dtype == np.float32 and np.isfinite(y.span).all()
    scale = np.abs(x.span).max()
    np.testing.assert_allclose(y.span, x.span, atol=0.02 * scale)  # half precision, same vectors
    assert half.fingerprint() != full.fingerprint()  # never mixed in the cache


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gpu_half_precision_matches_cpu_float32(dtype, llama_dir, bert_dir) -> None:
    for path in (llama_dir, bert_dir):
        ref = HFEncoder(str(path), device="cpu").encode(SENTS, SPANS)
        gpu = HFEncoder(str(path), device="cuda", dtype=dtype)
        got = gpu.encode(SENTS, SPANS)
        scale = np.abs(ref.span).max()
        np.testing.assert_allclose(got.span, ref.span, atol=0.02 * scale)
        np.testing.assert_allclose(got.sent, ref.sent, atol=0.02 * scale)
        alone = gpu.encode(SENTS[1:2], SPANS[1:2])  # padding invariance in half precision
        np.testing.assert_allclose(alone.span[0], got.span[1], atol=0.01 * scale)


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA device")
def test_gpu_device_map_auto(llama_dir) -> None:
    pytest.importorskip("accelerate")
    ref = HFEncoder(str(llama_dir), device="cpu").encode(SENTS, SPANS)
    got = HFEncoder(str(llama_dir), device_map="auto", dtype="float16").encode(SENTS, SPANS)
    np.testing.assert_allclose(got.span, ref.span, atol=0.02 * np.abs(ref.span).max())


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("layers", ["last4", "all"])
def test_gpu_overlapped_batches_match_cpu(dtype, layers, llama_dir, bert_dir) -> None:
    """The overlapped stages on CUDA (pinned batches, pooling on the device a few views at a
    time, copies back on a stream of their own, token-budget batches) give the CPU's float32
    vectors, sentence by sentence and view by view, in half precision."""
    from ncprobe.batches import run_batches

    rng = np.random.default_rng(0)
    words = [w for s in SENTS for w in s]
    sents = [[words[j] for j in rng.integers(0, len(words), size=n)]
             for n in rng.integers(1, 30, size=60)]
    spans = [(int(a), int(a) + 1) for a in (rng.integers(0, len(s)) for s in sents)]
    for path in (llama_dir, bert_dir):
        cpu = HFEncoder(str(path), device="cpu", layers=layers)
        gpu = HFEncoder(str(path), device="cuda", dtype=dtype, layers=layers)
        assert layers == "last4" or gpu.views_per_pass < len(gpu.views) == 4
        assert gpu.collate(gpu.tokenize(sents[:3]), sents[:3], spans[:3]).grid.is_pinned()
        got: dict[int, tuple] = {}

        def done(start, stop, enc, got=got):
            for i in range(start, stop):
                got[i] = (enc.sent[i - start], enc.span[i - start],
                          enc.missing_words[i - start])
        run_batches(gpu, sents, spans, done, batch_tokens=96)
        assert sorted(got) == list(range(len(sents)))
        for i, (s, sp) in enumerate(zip(sents, spans, strict=True)):
            ref = cpu.encode([s], [sp])
            scale = np.abs(ref.span).max()
            np.testing.assert_allclose(got[i][1], ref.span[0], atol=0.02 * scale)
            np.testing.assert_allclose(got[i][0], ref.sent[0], atol=0.02 * scale)
            assert got[i][2] == ref.missing_words[0]
