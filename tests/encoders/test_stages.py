"""The host's stages of a transformer batch (issue 32): sentences tokenised into one chunk of
arrays, collated in bulk, and the vectors these batches give: the same as the tokenizer's
own padded batch, byte for byte."""

from __future__ import annotations

from collections import UserList

import numpy as np
import pytest

from ncprobe.embed import embed
from ncprobe.encoders import load_encoder
from ncprobe.encoders._stages import MODEL_INPUTS, Batch, first_too_long
from ncprobe.encoders.base import SentenceTooLongError
from ncprobe.encoders.hf import HFEncoder

from ..synthetic import random_sentences

pytestmark = pytest.mark.usefixtures("own_cache")  # fingerprints write a hash cache

WORDS = ("o montanha-russa é rápida e a ação do coração vinho branco pão-duro lua cheia the "
         "grey matter of brain is an eager beaver economic aid research lab police car . "
         "zebra quixotic Übermut \u200b").split(" ")  # \u200b: a word of no sub-token


def _sentences(n: int, seed: int, longest: int = 12) -> tuple[list[list[str]], list[tuple]]:
    """``n`` random sentences of 1..longest of :data:`WORDS` with a random span each."""
    return random_sentences(n, seed, longest, WORDS)


def _reference(tokenizer, sents, spans) -> Batch:
    """The batch as transformers pads it (``tokenizer(..., padding=True)``), with word ids
    from its ``word_ids`` (-1 for special and padding tokens): what collation must give."""
    import torch

    ref = tokenizer([list(s) for s in sents], is_split_into_words=True, padding=True,
                    return_tensors="pt")
    inputs = tuple(k for k in MODEL_INPUTS if k in ref)
    word_ids = torch.tensor([[-1 if w is None else w for w in ref.word_ids(i)]
                             for i in range(len(sents))], dtype=torch.int64)
    grid = torch.stack([ref[k].to(torch.int64) for k in inputs] + [word_ids])
    meta = torch.tensor([[len(s) for s in sents], [a for a, _ in spans], [b for _, b in spans]],
                        dtype=torch.int64)
    return Batch(grid, meta, inputs, max_words=max(len(s) for s in sents))


def _same_batch(got: Batch, want: Batch) -> None:
    import torch

    assert got.inputs == want.inputs and got.max_words == want.max_words
    assert got.grid.dtype == want.grid.dtype == torch.int64 and got.meta.dtype == torch.int64
    assert torch.equal(got.grid, want.grid) and torch.equal(got.meta, want.meta)


def _bytes(*arrays) -> list[bytes]:
    return [np.ascontiguousarray(a).tobytes() for a in arrays]


@pytest.fixture(scope="module")
def minilm():
    """all-MiniLM-L6-v2 (offline package): WordPiece with token type ids (slow to load)."""
    enc = load_encoder("minilm", "en")
    enc.load()
    return enc


def _hf(kind, request) -> HFEncoder:
    if kind == "minilm":
        return request.getfixturevalue("minilm").tokens  # the transformer under it
    enc = HFEncoder(str(request.getfixturevalue(f"tiny_{kind}_dir")), device="cpu")
    enc.load()
    return enc


KINDS = ["bert", "llama", pytest.param("minilm", marks=pytest.mark.slow)]


@pytest.mark.parametrize("kind", KINDS)
def test_each_item_holds_the_tokenizers_own_tokens(kind, request) -> None:
    enc = _hf(kind, request)
    sents, _ = _sentences(40, seed=1)
    # lists, tuples and another sequence of words: the same tokens
    given = [s if i % 3 == 0 else tuple(s) if i % 3 == 1 else UserList(s)
             for i, s in enumerate(sents)]
    want = enc.tokenizer(sents, is_split_into_words=True)
    items = enc.tokenize(given)
    assert len(items) == len(sents)
    for i, item in enumerate(items):
        assert len(item) == len(want["input_ids"][i])
        assert item.ids.dtype == item.word_ids.dtype == np.int64
        assert item.ids.tolist() == want["input_ids"][i]
        assert item.word_ids.tolist() == [-1 if w is None else w for w in want.word_ids(i)]
        if "token_type_ids" in want:
            assert item.type_ids is not None
            assert item.type_ids.tolist() == want["token_type_ids"][i]
        else:
            assert item.type_ids is None
    assert enc.tokenize([]) == []


@pytest.mark.parametrize("kind", KINDS)
def test_collation_of_items_of_several_chunks_in_any_order(kind, request) -> None:
    """Items of three tokenizer calls, in batches that span two calls, that go backwards,
    that repeat an item, and that alternate between calls: each is the tokenizer's own
    padded batch of the same sentences."""
    enc = _hf(kind, request)
    sents, spans = _sentences(30, seed=2)
    items = enc.tokenize(sents[:10]) + enc.tokenize(sents[10:17]) + enc.tokenize(sents[17:])
    rng = np.random.default_rng(3)
    orders = [list(range(30)), list(range(6, 14)), list(range(13, 3, -1)), [5, 5, 20, 5],
              [0, 10, 1, 11, 2, 12, 17], [16, 17], [29], rng.permutation(30).tolist()]
    for order in orders:
        s, p = [sents[i] for i in order], [spans[i] for i in order]
        _same_batch(enc.collate([items[i] for i in order], s, p), _reference(enc.tokenizer, s, p))


def test_the_first_too_long_item_is_named(tiny_bert_dir) -> None:
    enc = HFEncoder(str(tiny_bert_dir), device="cpu")
    sents, spans = _sentences(12, seed=4, longest=5)
    rng = np.random.default_rng(5)
    for i in (4, 9):  # two too long in one batch: the first is named
        sents[i] = [WORDS[j] for j in rng.integers(0, len(WORDS) - 1, 150 + 10 * i)]
    lengths = [len(x) for x in enc.tokenizer(sents, is_split_into_words=True)["input_ids"]]
    assert lengths[4] > enc.max_length and lengths[9] > enc.max_length
    assert all(n <= enc.max_length for j, n in enumerate(lengths) if j not in (4, 9))
    items = enc.tokenize(sents[:6]) + enc.tokenize(sents[6:])  # across two chunks
    with pytest.raises(SentenceTooLongError) as info:
        enc.collate(items, sents, spans)
    assert (info.value.index, info.value.n_tokens, info.value.limit) == (
        4, lengths[4], enc.max_length)
    assert first_too_long(items[5:], enc.max_length) == (4, lengths[9])
    assert first_too_long(items, max(lengths)) is None


@pytest.mark.parametrize("kind", ["bert", pytest.param("minilm", marks=pytest.mark.slow)])
def test_vectors_are_those_of_the_tokenizers_batches_byte_for_byte(kind, request,
                                                                   stimuli_all) -> None:
    """CPU float32: a padded batch collated here gives the vectors of the tokenizer's own
    padded batch, and ``embed`` item by item the vectors of each item's own batch, bit for
    bit (own sentence embedding included)."""
    enc = (request.getfixturevalue("minilm") if kind == "minilm"
           else HFEncoder(str(request.getfixturevalue("tiny_bert_dir")), device="cpu"))
    hf = enc.tokens if kind == "minilm" else enc
    en = [s for s in stimuli_all if s.lang == "en"][::40]
    fit = hf.tokenizer([list(s.tokens) for s in en], is_split_into_words=True)["input_ids"]
    en = [s for s, ids in zip(en, fit, strict=True) if len(ids) <= hf.max_length]
    stim = en[::len(en) // 50][:50]
    assert len(stim) == 50 and len({s.tokens for s in stim}) > 40
    sents, spans = [s.tokens for s in stim], [s.span for s in stim]
    got = enc.encode(sents, spans)
    want = enc.collect(enc.launch(_reference(hf.tokenizer, sents, spans)))
    assert _bytes(got.sent, got.span, got.missing_words, got.missing_span_words) == _bytes(
        want.sent, want.span, want.missing_words, want.missing_span_words)
    assert (got.own is None) == (want.own is None) == (kind != "minilm")
    if got.own is not None:
        assert _bytes(got.own) == _bytes(want.own)
    out = embed(stim, enc, store=None, batch_size=1, batch_tokens=0, progress=False)
    for i, (words, span) in enumerate(zip(sents, spans, strict=True)):
        one = enc.collect(enc.launch(_reference(hf.tokenizer, [words], [span])))
        assert _bytes(out.sent[i], out.span[i]) == _bytes(one.sent[0], one.span[0]), i
        assert (out.missing_words[i], out.missing_span_words[i]) == (
            one.missing_words[0], one.missing_span_words[0])
        if one.own is not None:
            assert _bytes(out.own[i]) == _bytes(one.own[0]), i
