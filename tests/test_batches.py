"""Batches of an encoding run (issue 22, GPU overlap): how :mod:`ncprobe.batches` cuts them
(by count or by a token budget), the collation of tokenised sentences into model inputs, that
the staged (overlapped) run gives the same vectors as plain ``encode`` calls, where a
too-long sentence is reported, the worker threads (:class:`Prefetch`,
:class:`BackgroundWriter`), :func:`ncprobe.embed.embed` with a token budget, a failing store
and an interruption, and the ``batch_tokens`` option of the run configuration and the CLI."""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest

from ncprobe.batches import (
    BackgroundWriter,
    Batcher,
    Prefetch,
    is_staged,
    plan_batches,
    run_batches,
    token_budget,
)
from ncprobe.cache.store import EmbeddingStore
from ncprobe.data.stimuli import Stimulus
from ncprobe.embed import embed
from ncprobe.encoders import load_encoder
from ncprobe.encoders._stages import MODEL_INPUTS
from ncprobe.encoders.base import Encoded, SentenceTooLongError, encode_in_stages
from ncprobe.encoders.hf import HFEncoder

from .synthetic import random_sentences

pytestmark = pytest.mark.usefixtures("own_cache")  # fingerprints write a hash cache

# words of the tiny models' corpus (tests/tiny_models.py), and a few that split into pieces or
# [UNK]
VOCAB = ("o montanha-russa é rápida e a ação do coração vinho branco pão-duro lua cheia the "
         "grey matter of brain is an eager beaver economic aid research lab police car Este "
         "um Esta uma . zebra quixotic Übermut").split()
NO_TOKEN = "\u200b"  # a word the BERT normalizer removes: no sub-token at all


def _sentences(n: int, seed: int, longest: int = 14) -> tuple[list[list[str]], list[tuple]]:
    """``n`` random sentences of 1..longest words of :data:`VOCAB` with a random span each."""
    return random_sentences(n, seed, longest, VOCAB)


def _with_empty_span(sents, spans):
    """Adds a sentence whose span is a word that maps to no sub-token (its span is NaN)."""
    return sents + [["the", NO_TOKEN, "brain"]], spans + [(1, 2)]


def _run(encoder, sents, spans, **kw) -> list[tuple[int, int, Encoded]]:
    got: list = []
    run_batches(encoder, sents, spans, lambda a, b, e: got.append((a, b, e)), **kw)
    return got


def _n_tokens(tokenizer, words) -> int:
    return len(tokenizer(list(words), is_split_into_words=True)["input_ids"])


def _cut(n: int, bs: int) -> list[tuple[int, int]]:
    return [(i, min(i + bs, n)) for i in range(0, n, bs)]


def _greedy(sizes, budget) -> list[tuple[int, int]]:
    """The token plan by hand: extend each batch while items x longest stays in budget."""
    out, start = [], 0
    while start < len(sizes):
        stop = start + 1
        while stop < len(sizes) and (stop + 1 - start) * max(sizes[start:stop + 1]) <= budget:
            stop += 1
        out.append((start, stop))
        start = stop
    return out


def _concat(parts: list[Encoded]) -> Encoded:
    return Encoded(np.concatenate([p.sent for p in parts]), np.concatenate([p.span for p in parts]),
                   np.concatenate([p.missing_words for p in parts]),
                   np.concatenate([p.missing_span_words for p in parts]))


@pytest.fixture(scope="module")
def minilm():
    """all-MiniLM-L6-v2 (the offline package): a real WordPiece model with token type ids.
    Its loading takes seconds, so every test that asks for it is marked slow."""
    return load_encoder("minilm", "en")


#: minilm beside the tiny models, for a tokenizer that gives token type ids (slow: it loads a
#: real model).
MINILM = pytest.param("minilm", marks=pytest.mark.slow)


def _encoder(kind, tiny_bert_dir, tiny_llama_dir, tiny_st_dir, request):
    """The encoder of ``kind``; minilm is asked for only when used, so the quick loop
    (``-m "not slow"``) never builds it."""
    if kind == "bert":
        return HFEncoder(str(tiny_bert_dir), layers="all", device="cpu")
    if kind == "llama":
        return HFEncoder(str(tiny_llama_dir), device="cpu")
    if kind == "st":
        return load_encoder(str(tiny_st_dir), device="cpu")
    return request.getfixturevalue("minilm")


class Fake:
    """A non-staged encoder: vectors from word counts and lengths; raises
    SentenceTooLongError for a sentence holding ``TOOLONG``, KeyboardInterrupt at its
    ``interrupt_at``-th batch."""

    name, dim, views, levels = "fake", 3, ((0,),), ("sent", "nc")

    def __init__(self, interrupt_at: int | None = None) -> None:
        self.batches: list[int] = []
        self.interrupt_at = interrupt_at

    def fingerprint(self) -> dict:
        return {"family": "fake", "model": "fake", "format": 1}

    def encode(self, sentences, spans) -> Encoded:
        self.batches.append(len(sentences))
        if self.interrupt_at is not None and len(self.batches) == self.interrupt_at:
            raise KeyboardInterrupt
        for i, s in enumerate(sentences):
            if "TOOLONG" in s:
                raise SentenceTooLongError(self.name, i, len(s) + 2, 10)
        sent, span = _fake_expected(sentences, spans)
        zero = np.zeros(len(sentences), dtype=np.int32)
        return Encoded(sent, span, zero, zero.copy())


def _fake_expected(sents, spans):
    return (np.array([[[len(s), sum(map(len, s)), 1.0]] for s in sents], np.float32),
            np.array([[[e - b, sum(len(w) for w in s[b:e]), 2.0]]
                      for s, (b, e) in zip(sents, spans, strict=True)], np.float32))


# --- 1. plan_batches / Batcher ----------------------------------------------------------------

def test_count_mode_is_the_range_cut() -> None:
    rng = np.random.default_rng(1)
    for n in range(0, 40):
        for bs in (1, 2, 3, 5, 8, 64):
            sizes = rng.integers(1, 100, n).tolist()  # sizes do not matter without a budget
            assert plan_batches(sizes, bs) == _cut(n, bs), (n, bs)


def test_token_mode_is_contiguous_within_budget_and_maximal() -> None:
    rng = np.random.default_rng(2)
    for case in range(400):
        n = int(rng.integers(1, 60))
        sizes = rng.integers(1, 60, n).tolist()
        if case % 2:
            sizes.sort()  # as embed gives them
        budget = int(rng.integers(1, 400))
        bs = int(rng.integers(1, 10))  # the count is not what cuts a token plan
        plan = plan_batches(sizes, bs, budget)
        assert plan == _greedy(sizes, budget), (sizes, budget)
        assert plan[0][0] == 0 and plan[-1][1] == n
        for (a, b), (c, _) in zip(plan, plan[1:], strict=False):
            assert b == c and a < b
        for a, b in plan:
            assert b - a == 1 or (b - a) * max(sizes[a:b]) <= budget
            if b < n:  # maximal: one more item would not fit
                assert (b + 1 - a) * max(sizes[a:b + 1]) > budget


def test_item_over_budget_is_alone() -> None:
    sizes = [3, 3, 50, 3, 3, 3, 60, 70, 2]
    plan = plan_batches(sizes, 32, 12)
    assert plan == [(0, 2), (2, 3), (3, 6), (6, 7), (7, 8), (8, 9)]
    assert plan_batches([100], 4, 10) == [(0, 1)]


def test_batcher_add_and_finish() -> None:
    cut = Batcher(2)
    assert [cut.add(1) for _ in range(5)] == [None, None, (0, 2), None, (2, 4)]
    assert cut.finish() == (4, 5) and cut.finish() is None
    assert plan_batches([], 3) == [] and plan_batches([], 3, 10) == []


class OneByOne:
    """The batching rule written out item by item: an item closes the open batch when it
    holds ``batch_size`` items or, with a budget, when (its count + 1) x its widest item
    (this one included) passes the budget; an empty batch takes any item."""

    def __init__(self, batch_size: int, batch_tokens: int | None) -> None:
        self.batch_size, self.batch_tokens = batch_size, batch_tokens
        self.start = self.stop = self.width = 0

    def add(self, size: int) -> tuple[int, int] | None:
        closed = None
        n = self.stop - self.start
        if n and (n >= self.batch_size if self.batch_tokens is None
                  else (n + 1) * max(self.width, size) > self.batch_tokens):
            closed = (self.start, self.stop)
            self.start, self.width = self.stop, 0
        self.stop += 1
        self.width = max(self.width, size)
        return closed

    def finish(self) -> tuple[int, int] | None:
        if self.stop == self.start:
            return None
        closed, self.start = (self.start, self.stop), self.stop
        return closed


def test_batcher_add_all_is_the_rule_item_after_item() -> None:
    """The bulk cut of a tokenised chunk (what the worker does) closes the same batches and
    leaves the same open batch as the rule applied one item at a time, across chunks of any
    size (empty ones, items over the budget, items of no tokens, long runs that join one
    batch); add() and plan_batches too."""
    rng = np.random.default_rng(31)
    for case in range(600):
        bs = int(rng.integers(1, 40))
        budget = None if case % 3 == 0 else int(rng.integers(1, 2000))
        sizes = rng.integers(0 if case % 5 == 0 else 1, int(rng.integers(2, 90)),
                             int(rng.integers(0, 500))).tolist()
        one, bulk, single = OneByOne(bs, budget), Batcher(bs, budget), Batcher(bs, budget)
        at, plan = 0, []
        while at < len(sizes):
            part = sizes[at:at + int(rng.integers(0, 150))]
            at += len(part)
            expected = [b for b in map(one.add, part) if b is not None]
            plan += expected
            assert bulk.add_all(np.array(part, dtype=np.int64)) == expected, (case, at)
            assert (bulk.start, bulk.stop, bulk.width) == (one.start, one.stop, one.width)
            assert [b for b in map(single.add, part) if b is not None] == expected
        last = one.finish()
        assert bulk.finish() == last == single.finish()
        assert plan_batches(sizes, bs, budget) == plan + ([last] if last else [])
    assert Batcher(2, 10).add_all([]) == []
    cut = Batcher(4, 10)  # by hand: 3 x 3 fits in 10, a fourth would make 12
    assert cut.add_all([3, 3, 3, 3, 20, 1]) == [(0, 3), (3, 4), (4, 5)]
    assert (cut.start, cut.stop, cut.width) == (5, 6, 1)


@pytest.mark.parametrize("args", [(0,), (-1,), (1, 0), (4, -5)])
def test_bad_batch_arguments(args) -> None:
    with pytest.raises(ValueError):
        Batcher(*args)
    with pytest.raises(ValueError):
        plan_batches([1, 2, 3], *args)


# --- 2. collate ------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["bert", "llama", MINILM])
def test_collate_equals_the_tokenizers_padding(kind, tiny_bert_dir, tiny_llama_dir, request
                                               ) -> None:
    import torch

    enc = _encoder(kind, tiny_bert_dir, tiny_llama_dir, None, request)
    hf = enc.tokens if kind == "minilm" else enc
    hf.load()
    tok = hf.tokenizer
    sents, spans = _sentences(9, seed=3)
    sents, spans = _with_empty_span(sents, spans)
    ref = tok(sents, is_split_into_words=True, padding=True, return_tensors="pt")
    assert (ref["attention_mask"] == 0).any()  # lengths differ: there is padding
    batch = enc.collate(enc.tokenize(sents), sents, spans)
    assert batch.inputs == tuple(k for k in MODEL_INPUTS if k in ref)
    if kind == "minilm":
        assert "token_type_ids" in batch.inputs  # the tiny models' tokenizer gives none
    if kind == "llama":
        assert tok.pad_token == tok.eos_token  # the fallback: the tiny LLaMA has no pad token
    assert batch.grid.dtype == torch.int64 and batch.meta.dtype == torch.int64
    assert batch.grid.shape == (len(batch.inputs) + 1, *ref["input_ids"].shape)
    for i, name in enumerate(batch.inputs):
        assert torch.equal(batch.grid[i], ref[name].to(torch.int64)), name
    word_ids = torch.tensor([[-1 if w is None else w for w in ref.word_ids(i)]
                             for i in range(len(sents))])
    assert torch.equal(batch.grid[-1], word_ids)
    assert batch.meta.tolist() == [[len(s) for s in sents], [s for s, _ in spans],
                                   [e for _, e in spans]]
    assert batch.max_words == max(len(s) for s in sents)


# --- 3. staged = plain ------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["bert", "llama", "st", MINILM])
def test_staged_run_equals_plain_encode(kind, tiny_bert_dir, tiny_llama_dir, tiny_st_dir,
                                        request, caplog, monkeypatch) -> None:
    enc = _encoder(kind, tiny_bert_dir, tiny_llama_dir, tiny_st_dir, request)
    sents, spans = _sentences(22, seed=4)
    sents, spans = _with_empty_span(sents, spans)
    order = sorted(range(len(sents)), key=lambda i: len(sents[i]))  # as embed sorts them
    sents, spans = [sents[i] for i in order], [spans[i] for i in order]
    n = len(sents)
    got = _run(enc, sents, spans, batch_size=5)
    assert [(a, b) for a, b, _ in got] == _cut(n, 5)
    for a, b, e in got:
        ref = enc.encode(sents[a:b], spans[a:b])
        for part in ("sent", "span"):
            assert np.array_equal(getattr(e, part), getattr(ref, part), equal_nan=True), part
        assert np.array_equal(e.missing_words, ref.missing_words)
        assert np.array_equal(e.missing_span_words, ref.missing_span_words)
    whole = _concat([e for _, _, e in got])
    # tokenised in chunks that end inside batches: the same batches, the same bytes
    monkeypatch.setattr("ncprobe.batches.TOKENIZE_CHUNK", 4)
    chunked = _run(enc, sents, spans, batch_size=5)
    assert [(a, b) for a, b, _ in chunked] == _cut(n, 5)
    again = _concat([e for _, _, e in chunked])
    for part in ("sent", "span", "missing_words", "missing_span_words"):
        assert np.array_equal(getattr(again, part), getattr(whole, part), equal_nan=True)
    at = sents.index(["the", NO_TOKEN, "brain"])
    assert np.isnan(whole.span[at]).all() and whole.missing_span_words[at] == 1

    # by a token budget: other batches, the same vectors up to rounding
    tok = (enc.tokens if kind in ("st", "minilm") else enc).tokenizer
    sizes = [_n_tokens(tok, s) for s in sents]
    budget = 3 * max(sizes)
    with caplog.at_level(logging.WARNING, logger="ncprobe.batches"):
        by_tokens = _run(enc, sents, spans, batch_size=5, batch_tokens=budget)
    assert not [r for r in caplog.records if r.name == "ncprobe.batches"]  # a budget is taken
    plan = [(a, b) for a, b, _ in by_tokens]
    assert plan == _greedy(sizes, budget) and plan != _cut(n, 5)
    one = _concat([enc.encode([s], [sp]) for s, sp in zip(sents, spans, strict=True)])
    got_t = _concat([e for _, _, e in by_tokens])
    for part in ("sent", "span"):
        want, have = getattr(one, part), getattr(got_t, part)
        scale = max(1.0, float(np.nanmax(np.abs(want))))
        np.testing.assert_allclose(have, want, rtol=0, atol=1e-5 * scale, equal_nan=True)
    assert np.array_equal(got_t.missing_words, one.missing_words)
    assert np.array_equal(got_t.missing_span_words, one.missing_span_words)


def test_no_sentences_no_batches(tiny_bert_dir) -> None:
    assert _run(HFEncoder(str(tiny_bert_dir), device="cpu"), [], [], batch_size=4) == []
    assert _run(Fake(), [], [], batch_tokens=10) == []


class BudgetedHF(HFEncoder):
    """The tiny BERT, saying it holds ``per_token`` bytes a token (as on a GPU)."""

    def __init__(self, *args, per_token: int | None, **kw) -> None:
        super().__init__(*args, **kw)
        self.per_token = per_token

    def token_bytes(self) -> int | None:
        return self.per_token


def test_token_budget_given_off_and_automatic(tiny_bert_dir) -> None:
    cpu = HFEncoder(str(tiny_bert_dir), device="cpu")
    assert token_budget(cpu, 500) == 500
    assert token_budget(cpu, 0) is None and token_budget(cpu, None) is None  # CPU: by count
    assert token_budget(Fake(), None) is None and token_budget(Fake(), 0) is None
    # automatic: 2 GiB over the bytes a token holds, within 256..16384 tokens
    for per_token, want in ((1 << 20, 2048), (3 << 16, 10922), (1 << 30, 256), (16, 16384)):
        enc = BudgetedHF(str(tiny_bert_dir), device="cpu", per_token=per_token)
        assert token_budget(enc, None) == want, per_token
        assert token_budget(enc, 0) is None and token_budget(enc, 77) == 77
    assert token_budget(BudgetedHF(str(tiny_bert_dir), device="cpu", per_token=None), None) is None


def test_zero_budget_means_batches_of_a_count(tiny_bert_dir, caplog) -> None:
    sents, spans = _sentences(13, seed=14)
    enc = HFEncoder(str(tiny_bert_dir), device="cpu")
    assert [(a, b) for a, b, _ in _run(enc, sents, spans, batch_size=4, batch_tokens=0)] \
        == _cut(13, 4)
    fake = Fake()
    with caplog.at_level(logging.WARNING, logger="ncprobe.batches"):
        _run(fake, sents, spans, batch_size=4, batch_tokens=0)
    assert fake.batches == [4, 4, 4, 1]
    assert not [r for r in caplog.records if r.name == "ncprobe.batches"]


# --- 4. SentenceTooLongError: the global position -------------------------------------------

@pytest.mark.parametrize("budget", [None, 400])
@pytest.mark.parametrize("chunk", [1024, 7])
def test_too_long_sentence_index_is_global_staged(budget, chunk, tiny_bert_dir, monkeypatch
                                                  ) -> None:
    monkeypatch.setattr("ncprobe.batches.TOKENIZE_CHUNK", chunk)  # 37 is inside a chunk of 7
    enc = HFEncoder(str(tiny_bert_dir), device="cpu")
    sents, spans = _sentences(50, seed=5, longest=6)
    rng = np.random.default_rng(6)
    sents[37] = [VOCAB[j] for j in rng.integers(0, len(VOCAB), 200)]
    spans[37] = (0, 2)
    done: list = []
    with pytest.raises(SentenceTooLongError) as info:
        run_batches(enc, sents, spans, lambda a, b, e: done.append((a, b)), batch_size=8,
                    batch_tokens=budget)
    assert info.value.index == 37
    assert info.value.limit == enc.max_length == 128
    assert info.value.n_tokens == _n_tokens(enc.tokenizer, sents[37]) > 128
    assert all(b <= 37 for _, b in done)  # nothing past it was handed on


@pytest.mark.parametrize("budget", [None, 400])
def test_too_long_sentence_index_is_global_not_staged(budget) -> None:
    sents, spans = _sentences(50, seed=7, longest=6)
    sents[37] = sents[37] + ["TOOLONG"]
    with pytest.raises(SentenceTooLongError) as info:
        _run(Fake(), sents, spans, batch_size=8, batch_tokens=budget)
    assert info.value.index == 37 and info.value.limit == 10


# --- 5. Prefetch -----------------------------------------------------------------------------

def test_prefetch_keeps_order() -> None:
    for depth in (1, 2, 5):
        with Prefetch(iter(range(200)), depth=depth) as ready:
            assert list(ready) == list(range(200))


@pytest.mark.parametrize("error", [ValueError("boom at 3"), KeyboardInterrupt("stop at 3")])
def test_prefetch_hands_the_generators_error_to_the_loop(error) -> None:
    threads = []

    def items():
        threads.append(threading.current_thread())
        yield from range(3)
        raise error

    got = []
    with pytest.raises(type(error)) as info:
        with Prefetch(items()) as ready:
            for x in ready:
                got.append(x)
    assert got == [0, 1, 2] and str(info.value) == str(error)
    assert threads[0] is not threading.current_thread() and not threads[0].is_alive()


def _counting(total: int, produced: list, threads: list):
    threads.append(threading.current_thread())
    for i in range(total):
        produced.append(i)
        yield i


@pytest.mark.parametrize("how", ["break", "raise"])
def test_leaving_prefetch_early_stops_the_worker(how) -> None:
    produced: list = []
    threads: list = []
    consumed = 0
    try:
        with Prefetch(_counting(10_000, produced, threads), depth=2) as ready:
            for _ in ready:
                consumed += 1
                if consumed == 5:
                    if how == "break":
                        break
                    raise RuntimeError("consumer failed")
    except RuntimeError:
        assert how == "raise"
    assert consumed == 5
    assert not threads[0].is_alive()
    n = len(produced)
    assert n <= consumed + 2 + 3  # the queue's depth and the item in hand, not the 10,000
    time.sleep(0.1)
    assert len(produced) == n


# --- 6. BackgroundWriter ---------------------------------------------------------------------

class Writes:
    """Writes that pause, counting how many run at once; each logs and returns
    ``(i, its thread)``."""

    def __init__(self) -> None:
        self.log: list[tuple[int, int]] = []
        self.active = self.most = 0
        self.lock = threading.Lock()

    def __call__(self, i, pause):
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
        time.sleep(pause)
        self.log.append((i, threading.get_ident()))
        with self.lock:
            self.active -= 1
        return i, threading.get_ident()


def test_writer_runs_in_order_one_at_a_time_on_one_other_thread() -> None:
    rng = np.random.default_rng(8)
    write = Writes()
    w = BackgroundWriter()
    for i in range(20):
        w.submit(write, i, float(rng.uniform(0, 0.004)))
    w.close()
    log = write.log
    assert [i for i, _ in log] == list(range(20)) and write.most == 1
    idents = {t for _, t in log}
    assert len(idents) == 1 and threading.get_ident() not in idents


class WriteFailed(Exception):
    pass


def _fail(msg):
    raise WriteFailed(msg)


def test_writer_error_raised_at_next_submit() -> None:
    ran = []
    w = BackgroundWriter()
    w.submit(_fail, "first write")
    with pytest.raises(WriteFailed, match="first write"):
        w.submit(ran.append, 1)
    w.close()
    assert ran == []  # the next write was not handed over


def test_writer_error_raised_at_close() -> None:
    w = BackgroundWriter()
    w.submit(time.sleep, 0.01)
    w.submit(_fail, "last write")
    with pytest.raises(WriteFailed, match="last write"):
        w.close()
    with pytest.raises(WriteFailed, match="in the with"):
        with BackgroundWriter() as w2:
            w2.submit(_fail, "in the with")


def test_writer_nothing_runs_after_close() -> None:
    ran, threads = [], []

    def slow(i):
        threads.append(threading.current_thread())
        time.sleep(0.1)
        ran.append(i)

    w = BackgroundWriter()
    w.submit(slow, 1)
    w.close()
    assert ran == [1]  # close waited for it
    assert not threads[0].is_alive()
    with pytest.raises(RuntimeError):
        w.submit(slow, 2)
    time.sleep(0.15)
    assert ran == [1]


def test_two_writers_run_at_once_and_hand_on_in_order_on_the_submitting_thread() -> None:
    rng = np.random.default_rng(9)
    write, handed = Writes(), []
    w = BackgroundWriter(workers=2)
    for i in range(24):
        w.submit(write, i, float(rng.uniform(0, 0.006)),
                 then=lambda got: handed.append((got, threading.get_ident())))
    w.close()
    assert [i for (i, _), _ in handed] == list(range(24))  # in order, whatever finished first
    assert {t for _, t in handed} == {threading.get_ident()}
    assert len({t for (_, t), _ in handed} - {threading.get_ident()}) == 2
    assert write.most == 2


def test_a_failed_write_does_not_lose_the_writes_beside_it() -> None:
    handed = []
    w = BackgroundWriter(workers=2)
    w.submit(time.sleep, 0.02, then=lambda _: handed.append("first"))
    w.submit(_fail, "second write", then=lambda _: handed.append("second"))
    w.submit(lambda: "third", then=handed.append)  # two under way: takes the first
    with pytest.raises(WriteFailed, match="second write"):
        w.submit(lambda: "fourth", then=handed.append)  # takes the second: not handed over
    w.close()
    assert handed == ["first", "third"]
    w2 = BackgroundWriter(workers=2)
    w2.submit(_fail, "one")
    w2.submit(lambda: "two", then=handed.append)
    with pytest.raises(WriteFailed, match="one"):
        w2.close()
    assert handed[-1] == "two"  # taken before the first error was raised


# --- 7. embed end to end ---------------------------------------------------------------------

def _stimuli(n: int, seed: int, longest: int = 10) -> list[Stimulus]:
    sents, spans = _sentences(3 * n, seed, longest)
    out, seen = [], set()
    for words, span in zip(sents, spans, strict=True):
        if (tuple(words), span) in seen:
            continue
        seen.add((tuple(words), span))
        out.append(Stimulus("en", "nc", "N", "original", len(out), tuple(words), span,
                            " ".join(words[span[0]:span[1]])))
        if len(out) == n:
            return out
    raise AssertionError("not enough distinct sentences")


def test_embed_with_token_budget_stores_the_same_vectors(tiny_bert_dir, tmp_path) -> None:
    enc = HFEncoder(str(tiny_bert_dir), layers="all", device="cpu")
    stim = _stimuli(30, seed=9)
    by_count = embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path / "a"),
                     batch_size=4, flush_every=8, progress=False)
    by_tokens = embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path / "b"),
                      batch_size=4, batch_tokens=120, flush_every=8, progress=False)
    assert by_count.encoded == by_tokens.encoded == 30
    for part in ("sent", "span"):
        want, have = getattr(by_count, part), getattr(by_tokens, part)
        scale = max(1.0, float(np.nanmax(np.abs(want))))
        np.testing.assert_allclose(have, want, rtol=0, atol=1e-5 * scale, equal_nan=True)
    again = embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path / "b"),
                  batch_tokens=120, progress=False)
    assert again.encoded == 0


class PutFailed(Exception):
    pass


def test_embed_store_failure_is_raised_and_earlier_shards_kept(tiny_bert_dir, tmp_path,
                                                               monkeypatch) -> None:
    enc = HFEncoder(str(tiny_bert_dir), device="cpu")
    stim = _stimuli(40, seed=10)
    store = EmbeddingStore(enc.fingerprint(), root=tmp_path)
    real_prepare, calls = store.prepare, []

    def prepare(keys, vectors):  # the half of a shard's write that writes the file
        calls.append(len(keys))
        if len(calls) == 2:
            raise PutFailed("disk gone at shard 2")
        return real_prepare(keys, vectors)

    monkeypatch.setattr(store, "prepare", prepare)
    with pytest.raises(PutFailed, match="disk gone at shard 2"):
        embed(stim, enc, store=store, batch_size=4, flush_every=8, progress=False)
    assert calls[:2] == [8, 8]
    kept = len(EmbeddingStore(enc.fingerprint(), root=tmp_path))
    assert 8 <= kept <= 40 - 8  # the first shard, not the failed one
    rerun = embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path),
                  batch_size=4, progress=False)
    assert rerun.encoded == 40 - kept
    clean = embed(stim, enc, batch_size=4, progress=False)
    np.testing.assert_allclose(rerun.span, clean.span, rtol=0, atol=1e-5, equal_nan=True)


def test_embed_interrupted_non_staged_keeps_done_batches(tmp_path) -> None:
    stim = _stimuli(30, seed=11)
    enc = Fake(interrupt_at=4)
    with pytest.raises(KeyboardInterrupt):
        embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path), batch_size=4,
              flush_every=100, progress=False)
    assert len(EmbeddingStore(enc.fingerprint(), root=tmp_path)) == 3 * 4
    rerun = Fake()
    out = embed(stim, rerun, store=EmbeddingStore(enc.fingerprint(), root=tmp_path),
                batch_size=4, progress=False)
    assert out.encoded == sum(rerun.batches) == 30 - 12
    sent, span = _fake_expected([s.tokens for s in stim], [s.span for s in stim])
    np.testing.assert_array_equal(out.sent, sent)
    np.testing.assert_array_equal(out.span, span)


class InterruptedHF(HFEncoder):
    """The tiny BERT, interrupted while it waits for its ``at``-th batch."""

    def __init__(self, *args, at: int, **kw) -> None:
        super().__init__(*args, **kw)
        self.at, self.calls, self.collected = at, 0, 0

    def collect(self, launched) -> Encoded:
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        out = super().collect(launched)
        self.collected += len(out.sent)
        return out


def test_embed_interrupted_staged_keeps_done_batches(tiny_bert_dir, tmp_path) -> None:
    stim = _stimuli(30, seed=12)
    enc = InterruptedHF(str(tiny_bert_dir), device="cpu", at=4)
    fp = enc.fingerprint()
    with pytest.raises(KeyboardInterrupt):
        embed(stim, enc, store=EmbeddingStore(fp, root=tmp_path), batch_size=4, flush_every=6,
              progress=False)
    # batches 1-3 were collected; the 4th collect was interrupted (its batch is lost); the
    # 5th, already launched, is still collected and stored when the run stops
    assert enc.collected == 16
    assert len(EmbeddingStore(fp, root=tmp_path)) == 16
    plain = HFEncoder(str(tiny_bert_dir), device="cpu")
    out = embed(stim, plain, store=EmbeddingStore(fp, root=tmp_path), batch_size=4,
                progress=False)
    assert out.encoded == 30 - 16


# --- 8. a non-staged encoder given a token budget --------------------------------------------

def test_non_staged_encoder_warns_and_batches_by_count(caplog) -> None:
    stim = _stimuli(23, seed=13)
    enc = Fake()
    with caplog.at_level(logging.WARNING, logger="ncprobe.batches"):
        out = embed(stim, enc, batch_size=6, batch_tokens=50, progress=False)
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "fake" in warned[0].getMessage()
    assert enc.batches == [6, 6, 6, 5] and out.encoded == 23
    sent, span = _fake_expected([s.tokens for s in stim], [s.span for s in stim])
    np.testing.assert_array_equal(out.sent, sent)
    np.testing.assert_array_equal(out.span, span)


# --- 9. configuration and CLI ----------------------------------------------------------------

def test_run_config_batch_tokens() -> None:
    from ncprobe.ncimp.config import RunConfig
    from ncprobe.ncimp.results import NCIMP_LAYOUT
    from ncprobe.results.store import run_identity as identity

    def run_identity(meta):  # NCIMP's runs
        return identity(meta, NCIMP_LAYOUT)

    for bad in (-1, -4096):
        with pytest.raises(ValueError):
            RunConfig(batch_tokens=bad)
    assert RunConfig(batch_tokens=0).to_dict()["batch_tokens"] == 0  # 0: batches of a count
    assert "batch_tokens" not in RunConfig().to_dict()
    d = RunConfig(batch_tokens=4096).to_dict()
    assert d["batch_tokens"] == 4096
    assert RunConfig.from_dict(d).batch_tokens == 4096
    assert RunConfig.from_dict(RunConfig().to_dict()).batch_tokens is None
    base = run_identity(RunConfig().to_dict())
    assert run_identity(d) == base == run_identity(RunConfig(batch_tokens=0).to_dict())
    assert run_identity(RunConfig(n_boot=7).to_dict()) != base  # the comparison can fail


def test_cli_compute_help_lists_batch_tokens(capsys) -> None:
    from ncprobe import cli

    with pytest.raises(SystemExit) as info:
        cli.main(["compute", "--help"])
    assert info.value.code == 0
    assert "--batch-tokens N" in capsys.readouterr().out


class OutOfMemoryError(RuntimeError):
    """Named as torch's CUDA out-of-memory error (which ncprobe recognises by name)."""


class _StagedRunsOutOfMemory:
    """A staged encoder whose device runs out of memory on the batch holding sentence 5."""

    name, dim, views, levels = "oom-model", 2, ((0,),), ("sent", "nc")

    def fingerprint(self) -> dict:
        return {"family": "test-oom"}

    def load(self) -> None:
        pass

    def token_bytes(self):
        return None

    def tokenize(self, sentences):
        return [list(s) for s in sentences]

    def collate(self, tokens, sentences, spans):
        return len(sentences), any(s[0] == "w5" for s in sentences)

    def launch(self, batch):
        n, boom = batch
        if boom:
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
        return n

    def collect(self, n):
        vec = np.ones((n, 1, 2), dtype=np.float32)
        return Encoded(vec, vec, np.zeros(n, np.int32), np.zeros(n, np.int32))

    def encode(self, sentences, spans):
        return self.collect(self.launch(self.collate(None, sentences, spans)))


def test_out_of_device_memory_names_the_batch_and_the_option() -> None:
    from ncprobe.errors import NcprobeError

    sents = [[f"w{i}"] for i in range(12)]
    seen: list[tuple[int, int]] = []
    with pytest.raises(NcprobeError) as err:
        run_batches(_StagedRunsOutOfMemory(), sents, [(0, 1)] * 12,
                    lambda a, b, enc: seen.append((a, b)), batch_size=4, batch_tokens=0)
    msg = str(err.value)
    # sentence 5 is in the second batch of 4: the first, launched before it, is still handed on
    assert "batch of 4 sentences" in msg and "--batch-size 4" in msg and "20.00 GiB" in msg
    assert seen == [(0, 4)]
    assert isinstance(err.value.__cause__, OutOfMemoryError)


@pytest.mark.slow  # loads minilm
def test_tokenize_ignores_the_state_an_earlier_call_left(minilm) -> None:
    """The backend keeps truncation and padding between calls (sentence-transformers'
    pipeline truncates with the same tokenizer): tokenising words must neither truncate nor
    pad, whatever the call before it set."""
    minilm.load()
    tok = minilm.tokens.tokenizer
    sents, _ = _sentences(7, seed=21)
    expected = tok(sents, is_split_into_words=True)  # transformers' own call, no truncation
    tok(["a longer sentence than four tokens, surely"], truncation=True, max_length=4,
        padding="max_length")
    assert tok.backend_tokenizer.truncation is not None  # the state the next call must undo
    got = minilm.tokenize(sents)
    assert [x.ids.tolist() for x in got] == expected["input_ids"]
    assert [x.type_ids.tolist() for x in got] == expected["token_type_ids"]
    assert [x.word_ids.tolist() for x in got] == [
        [-1 if w is None else w for w in expected.word_ids(i)] for i in range(len(sents))]
    assert max(len(x) for x in got) > 4


def test_no_automatic_budget_for_a_device_map_without_gpus(tiny_bert_dir, monkeypatch) -> None:
    """device_map="auto" on a machine without CUDA runs on the CPU: batches stay a count (and
    the vectors what they were), as for any model on the CPU."""
    import torch

    from ncprobe.encoders.hf import HFEncoder

    enc = HFEncoder(str(tiny_bert_dir), device_map="auto")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert enc.token_bytes() is None and token_budget(enc, None) is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    # by hand, float32 (4 bytes): the 3 layers' and the embeddings' hidden states (32 wide),
    # one layer's activations (q, k, v, output: 4 x 32; the feed-forward's 64 three times),
    # one pass of pooling (16 bytes a value, one view) beside the float32 copy of its 3 layers
    assert (enc.n_layers, enc.dim, enc.inner, enc.views) == (3, 32, 64, ((0, 1, 2, 3),))
    per_token = 4 * 4 * 32 + 4 * (4 * 32 + 3 * 64) + 16 * 32 + 4 * (4 + 4) * 32
    assert enc.token_bytes() == per_token
    assert token_budget(enc, None) == max(256, min(16384, (2 << 30) // per_token))


# --- 9. the shards of a run and the first tokenised chunk --------------------------------------

@pytest.mark.parametrize("flush_every, flush_bytes", [(64, 1 << 40), (10**6, 64 * 24)])
def test_shards_halve_towards_the_end_of_a_run(flush_every, flush_bytes, tmp_path,
                                               monkeypatch) -> None:
    # 200 items in batches of 4; Fake's vectors are 2 x 3 float32 = 24 bytes an item, so
    # both limits are 64 items and an eighth of them 8. By hand: full shards of 64 up to
    # item 128 (72 to come); then a shard is written once it holds as many items as are
    # still to come: 36 (36 to come), 20 (16), 8 (8), and the last 8 (4 items would do,
    # but are fewer than 8)
    store = EmbeddingStore(Fake().fingerprint(), root=tmp_path)
    real_commit, sizes = store.commit, []

    def commit(prepared):  # on the encoding thread, in order
        sizes.append(prepared.items)
        return real_commit(prepared)

    monkeypatch.setattr(store, "commit", commit)
    stim = _stimuli(200, seed=14)
    out = embed(stim, Fake(), store=store, batch_size=4, flush_every=flush_every,
                flush_bytes=flush_bytes, progress=False)
    assert sizes == [64, 64, 36, 20, 8, 8]
    sent, span = _fake_expected([s.tokens for s in stim], [s.span for s in stim])
    np.testing.assert_array_equal(out.sent, sent)
    np.testing.assert_array_equal(out.span, span)


class ChunkCountingHF(HFEncoder):
    """The tiny BERT, counting the sentences of each call of its tokenizer."""

    def tokenize(self, sentences):
        self.chunks.append(len(sentences))
        return super().tokenize(sentences)


@pytest.mark.parametrize("chunk, calls", [(1024, [64, 128, 108]), (100, [64, 100, 100, 36]),
                                          (7, [7] * 42 + [6])])
def test_first_tokenised_chunk_is_small_and_the_next_ones_double(chunk, calls, tiny_bert_dir,
                                                                 monkeypatch) -> None:
    monkeypatch.setattr("ncprobe.batches.TOKENIZE_CHUNK", chunk)
    enc = ChunkCountingHF(str(tiny_bert_dir), device="cpu")
    enc.chunks = []
    sents, spans = _sentences(300, seed=15)
    got = _run(enc, sents, spans, batch_size=32)
    assert enc.chunks == calls
    assert [(a, b) for a, b, _ in got] == _cut(300, 32)


class SlowTokenizer:
    """A staged encoder's first stages with a tokenizer that records its calls (thread and
    size) and can be made to fail at one of them; no model."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.calls: list[tuple[int, threading.Thread]] = []
        self.second = threading.Event()
        self.fail_at = fail_at

    def tokenize(self, sentences):
        self.calls.append((len(sentences), threading.current_thread()))
        if len(self.calls) == 2:
            self.second.set()
        if self.fail_at == len(self.calls):
            raise ValueError(f"tokenizer failed at call {self.fail_at}")
        return [[0] * (len(s) + 2) for s in sentences]

    def collate(self, tokens, sentences, spans):
        return len(tokens)


def test_next_chunk_is_tokenised_while_this_ones_batches_wait() -> None:
    from ncprobe.batches import _prepared

    enc = SlowTokenizer()
    sents = [["w"] * 3] * 300
    gen = _prepared(enc, sents, [(0, 1)] * 300, 8, None)  # type: ignore[arg-type]
    assert next(gen) == (0, 8, 8)  # one batch of the first chunk (64) taken, 7 left waiting
    assert enc.second.wait(5)  # the second chunk is tokenised meanwhile, on another thread
    assert enc.calls[1][0] == 128 and enc.calls[1][1] is not threading.current_thread()
    thread = enc.calls[0][1]
    gen.close()  # stopped: the chunk after the second is never tokenised
    assert len(enc.calls) == 2 and not thread.is_alive()
    full = list(_prepared(SlowTokenizer(), sents, [(0, 1)] * 300, 8, None))  # type: ignore
    assert [(a, b) for a, b, _ in full] == _cut(300, 8)


class StagedSlow(SlowTokenizer):
    """:class:`SlowTokenizer` with the rest of the staged protocol: vectors of zeros."""

    name, dim, views, levels = "slow", 3, ((0,),), ("sent", "nc")

    def fingerprint(self) -> dict:
        return {"family": "slow"}

    def load(self) -> None:
        pass

    def token_bytes(self) -> None:
        return None

    def launch(self, batch):
        return batch

    def collect(self, n) -> Encoded:
        zero = np.zeros((n, 1, 3), np.float32)
        return Encoded(zero, zero, np.zeros(n, np.int32), np.zeros(n, np.int32))

    def encode(self, sentences, spans) -> Encoded:
        return encode_in_stages(self, sentences, spans)


def test_a_tokenizer_error_reaches_the_run_and_stops_the_threads() -> None:
    enc = StagedSlow(fail_at=2)
    sents = [["w"] * 3] * 300
    got: list = []
    with pytest.raises(ValueError, match="tokenizer failed at call 2"):
        run_batches(enc, sents, [(0, 1)] * 300, lambda a, b, e: got.append(b), batch_size=8)
    assert is_staged(enc)
    # the first chunk's batches but the last (closed by the next chunk's first item): 7
    assert got == list(range(8, 57, 8))
    assert not enc.calls[0][1].is_alive()
