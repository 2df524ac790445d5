"""Layer views pooled a few at a time into one flat buffer, its host side, and the device
memory a token holds (issue 32: a layer-wise run at the speed of the forward passes)."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ncprobe.batches import AUTO_BYTES, AUTO_TOKENS  # noqa: E402
from ncprobe.encoders._pool import (  # noqa: E402
    POOL_BYTES,
    pool_layers,
    pool_states,
    views_per_pass,
)
from ncprobe.encoders._stages import Transfer, host_vectors  # noqa: E402

VIEWS = ((0,), (1, 2), (3,), (4,), (1, 2, 3, 4))


def _batch(seed: int = 0):
    """Five layers of states (B=4, T=9, D=6) and word ids with: special tokens (-1), a word
    of three tokens, a word without tokens (sentence 1, word 2), a span with no word left
    (sentence 2: its span is that of a word without tokens) and padding."""
    g = torch.Generator().manual_seed(seed)
    hidden = [torch.randn(4, 9, 6, generator=g) for _ in range(5)]
    word_ids = torch.tensor([
        [-1, 0, 1, 1, 1, 2, 3, -1, -1],
        [-1, 0, 1, 3, -1, -1, -1, -1, -1],   # word 2 has no token
        [-1, 0, 1, -1, -1, -1, -1, -1, -1],  # 3 words, the third without tokens
        [-1, 0, 1, 2, 3, 4, 5, 6, -1],
    ])
    n_words = torch.tensor([4, 4, 3, 7])
    starts, ends = torch.tensor([1, 2, 2, 0]), torch.tensor([3, 3, 3, 7])
    return hidden, word_ids, n_words, starts, ends


def _by_hand(hidden, word_ids, n_words, starts, ends):
    """The pooling rule written out with loops in float64: a view's token vector is the mean
    of its layers, a word's the mean of its tokens, a sentence's (span's) the mean of its
    (span's) words that have tokens; NaN where none has."""
    h = [x.double().numpy() for x in hidden]
    b, _, d = h[0].shape
    sent = np.full((b, len(VIEWS), d), np.nan)
    span = np.full((b, len(VIEWS), d), np.nan)
    missing, missing_span = np.zeros(b, int), np.zeros(b, int)
    for i in range(b):
        ids = word_ids[i].tolist()
        for v, layers in enumerate(VIEWS):
            tok = np.mean([h[layer][i] for layer in layers], axis=0)
            words = {w: tok[[t for t, x in enumerate(ids) if x == w]].mean(0)
                     for w in range(int(n_words[i])) if w in ids}
            if words:
                sent[i, v] = np.mean(list(words.values()), axis=0)
            inside = [words[w] for w in range(int(starts[i]), int(ends[i])) if w in words]
            if inside:
                span[i, v] = np.mean(inside, axis=0)
        missing[i] = sum(w not in ids for w in range(int(n_words[i])))
        missing_span[i] = sum(w not in ids for w in range(int(starts[i]), int(ends[i])))
    return sent, span, missing, missing_span


def test_pool_layers_follows_the_pooling_rule() -> None:
    hidden, word_ids, n_words, starts, ends = _batch()
    own = torch.arange(8.0).view(4, 2)
    flat = pool_layers(hidden, VIEWS, word_ids, n_words, starts, ends, 7, per_pass=2, own=own)
    got = host_vectors(flat.numpy(), 4, len(VIEWS), 6, own=2)
    sent, span, missing, missing_span = _by_hand(hidden, word_ids, n_words, starts, ends)
    np.testing.assert_allclose(got.sent, sent, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.span, span, rtol=1e-5, atol=1e-6)
    assert np.isnan(got.span[2]).all() and not np.isnan(got.sent[2]).any()
    assert got.missing_words.tolist() == missing.tolist() == [0, 1, 1, 0]
    assert got.missing_span_words.tolist() == missing_span.tolist() == [0, 1, 1, 0]
    assert got.missing_words.dtype == np.int32
    np.testing.assert_array_equal(got.own, own.numpy())


def test_every_view_in_one_pass_is_the_same_bytes_as_before() -> None:
    """On the CPU every view is pooled in one pass: the same float operations as ncprobe's
    pooling of every view at once (the layers averaged in float32, one einsum over all
    views), so the vectors are the same bytes."""
    hidden, word_ids, n_words, starts, ends = _batch(seed=3)
    every = torch.stack([torch.stack([hidden[i] for i in v]).float().mean(0) for v in VIEWS],
                        dim=1)
    sent, span, missing, missing_span = pool_states(every, word_ids, n_words, starts, ends, 7)
    flat = pool_layers(hidden, VIEWS, word_ids, n_words, starts, ends, 7,
                       per_pass=len(VIEWS))
    got = host_vectors(flat.numpy(), 4, len(VIEWS), 6)
    assert got.sent.tobytes() == sent.numpy().tobytes()
    assert got.span.tobytes() == span.numpy().tobytes()
    assert got.missing_words.tolist() == missing.tolist()
    assert got.missing_span_words.tolist() == missing_span.tolist()


@pytest.mark.parametrize("per_pass", [1, 2, 3])
def test_views_pooled_a_few_at_a_time_equal_one_pass_within_rounding(per_pass: int) -> None:
    """A few views at a time (on a GPU: less memory) pools the same values; a matrix
    product of another shape may round differently in the last bit."""
    hidden, word_ids, n_words, starts, ends = _batch(seed=per_pass)
    one = host_vectors(pool_layers(hidden, VIEWS, word_ids, n_words, starts, ends, 7,
                                   per_pass=len(VIEWS)).numpy(), 4, len(VIEWS), 6)
    few = host_vectors(pool_layers(hidden, VIEWS, word_ids, n_words, starts, ends, 7,
                                   per_pass=per_pass).numpy(), 4, len(VIEWS), 6)
    np.testing.assert_allclose(few.sent, one.sent, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(few.span, one.span, rtol=1e-6, atol=1e-7)
    assert np.array_equal(np.isnan(few.span), np.isnan(one.span))


def test_the_cpu_pools_every_view_in_one_pass_a_gpu_a_few(tmp_path) -> None:
    cpu = _hf_on_a_gpu(tmp_path, "all", LLAMA_082B)
    cpu._device = types.SimpleNamespace(type="cpu")
    assert cpu.views_per_pass == 17 and cpu.token_bytes() is None
    gpu = _hf_on_a_gpu(tmp_path / "gpu", "all", LLAMA_082B)
    assert gpu.views_per_pass == views_per_pass(16, 2) == 2


def test_host_vectors_are_views_with_each_views_rows_contiguous() -> None:
    """The layout: sentence vectors (views, n, dim), span vectors, the two counts, the own
    embedding; each view's rows contiguous, as a shard stores them (no copy to write)."""
    n, views, dim, own = 3, 2, 4, 5
    sent = np.arange(views * n * dim, dtype=np.float32).reshape(views, n, dim)
    span = -sent - 1
    counts = np.array([0, 1, 2, 3, 0, 1], dtype=np.float32)
    mine = np.full((n, own), 7.0, np.float32)
    flat = np.concatenate([sent.ravel(), span.ravel(), counts, mine.ravel()])
    got = host_vectors(flat, n, views, dim, own=own)
    assert got.sent.shape == got.span.shape == (n, views, dim)
    for v in range(views):
        for i in range(n):
            assert got.sent[i, v].tolist() == sent[v, i].tolist()
            assert got.span[i, v].tolist() == span[v, i].tolist()
        assert got.sent[:, v, :].flags.c_contiguous and got.span[:, v, :].flags.c_contiguous
    assert np.shares_memory(got.sent, flat) and np.shares_memory(got.span, flat)
    assert got.missing_words.tolist() == [0, 1, 2]
    assert got.missing_span_words.tolist() == [3, 0, 1]
    assert got.own.tolist() == mine.tolist()
    assert host_vectors(flat[:-n * own], n, views, dim).own is None


def test_transfer_on_the_cpu_is_the_tensor_itself() -> None:
    flat = torch.arange(2 * 2 * 3 * 4 + 2 * 3, dtype=torch.float32)
    got = Transfer(flat, (3, 2, 4, 0)).get()
    assert np.shares_memory(got.sent, flat.numpy())
    assert got.sent[1, 1].tolist() == flat[4 * 3 + 4:4 * 3 + 8].tolist()


def test_a_pass_of_pooling_holds_no_more_than_the_hidden_states() -> None:
    for layers in range(1, 81):
        for width in (2, 4):
            per_pass = views_per_pass(layers, width)
            assert per_pass >= 1
            hidden = (layers + 1) * width
            assert per_pass == 1 or POOL_BYTES * per_pass <= hidden
            assert POOL_BYTES * (per_pass + 1) > hidden  # and as many views as fit


def _hf_on_a_gpu(tmp_path, layers: str, config: dict):
    """An HFEncoder of a config.json alone (nothing is loaded), as if on a CUDA device."""
    from ncprobe.encoders.hf import HFEncoder

    folder = tmp_path / f"model-{layers}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    enc = HFEncoder(str(folder), layers=layers, dtype="bfloat16")
    enc._device = types.SimpleNamespace(type="cuda")
    return enc


LLAMA_082B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "hidden_size": 2048, "num_hidden_layers": 16, "intermediate_size": 5632,
              "num_attention_heads": 16}


def test_a_layer_wise_run_holds_what_one_forward_pass_holds(tmp_path) -> None:
    """Every layer's hidden state is held whatever the views: a layer-wise run (17 views of
    a 16-layer model) holds per token about what the last four layers' run holds, not a
    float32 copy of every view (which made its budget a quarter of the last four's)."""
    last4 = _hf_on_a_gpu(tmp_path, "last4", LLAMA_082B)
    every = _hf_on_a_gpu(tmp_path, "all", LLAMA_082B)
    assert len(every.views) == 17
    hidden = 17 * 2 * 2048  # every layer's state, bfloat16
    for enc in (last4, every):
        assert enc.token_bytes() > hidden
        # the pooled vectors are per sentence: a float32 copy of every view is not held
        assert enc.token_bytes() < hidden + 17 * 4 * 2048
    ratio = every.token_bytes() / last4.token_bytes()
    assert 0.9 < ratio < 1.1
    budget = AUTO_BYTES // every.token_bytes()
    assert AUTO_TOKENS[0] < budget < AUTO_TOKENS[1]
    assert budget > 3 * 3084  # the collapsed budget of the issue, 17 views counted
