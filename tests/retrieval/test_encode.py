"""Raw text with a character span -> the model's sentence embedding and the span's sub-token mean
(:meth:`SBertEncoder.encode_texts`, :mod:`ncprobe.retrieval.encode`), checked against
sentence-transformers' ``encode`` and a hand-written pooling over transformers' own outputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

TEXTS = ["the grey matter of a brain is an eager beaver",
         "economic aid research lab police car",
         "vinho branco pão-duro lua cheia e a ação do coração"]
# (start, end) in characters: a whole word, two words, the middle of a word (its sub-tokens
# overlapping the span are all pooled), and no span
SPANS = [(4, 15), (9, 21), (17, 20)]


def by_hand(model_dir: Path, text: str, span: tuple[int, int], limit: int = 512) -> np.ndarray:
    """Mean of the last hidden states of the tokens overlapping ``span``, one text alone,
    from transformers directly (no padding, no batching)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    enc = tok(text, return_offsets_mapping=True, truncation=True, max_length=limit,
              return_tensors="pt")
    offsets = enc.pop("offset_mapping")[0].tolist()
    keep = [i for i, (a, b) in enumerate(offsets)
            if not (a == b == 0) and a < span[1] and b > span[0]]
    assert keep, "the test's span overlaps some token"
    with torch.no_grad():
        states = model(**enc).last_hidden_state[0]
    return states[keep].mean(0).numpy()


def test_sentence_vectors_are_the_models_own_encode(st_dir) -> None:
    from sentence_transformers import SentenceTransformer

    from ncprobe.encoders.sbert import SBertEncoder

    enc = SBertEncoder(str(st_dir)).encode_texts(TEXTS, SPANS)
    expected = SentenceTransformer(str(st_dir), device="cpu").encode(TEXTS)
    assert enc.sent.shape == (3, 1, expected.shape[1])  # the Dense layer's 16 dimensions
    np.testing.assert_allclose(enc.sent[:, 0], expected, atol=1e-5)


def test_span_vectors_are_the_mean_of_overlapping_sub_tokens(st_dir) -> None:
    from ncprobe.encoders.sbert import SBertEncoder

    enc = SBertEncoder(str(st_dir)).encode_texts(TEXTS, SPANS)
    assert enc.span.shape == (3, 1, 32)  # the transformer's hidden size, not the Dense's
    for i, (text, span) in enumerate(zip(TEXTS, SPANS, strict=True)):
        np.testing.assert_allclose(enc.span[i, 0], by_hand(st_dir, text, span), atol=1e-5)
    assert enc.missing_span_words.tolist() == [0, 0, 0]


def test_a_span_inside_a_word_pools_every_token_it_touches(st_dir) -> None:
    """Overlap, not containment: a span of one character pools the token holding it."""
    from transformers import AutoTokenizer

    from ncprobe.encoders.sbert import SBertEncoder

    text = TEXTS[0]
    offsets = AutoTokenizer.from_pretrained(st_dir)(text, return_offsets_mapping=True)[
        "offset_mapping"]
    a, b = next((a, b) for a, b in offsets if b - a >= 2)  # a real token of 2+ characters
    enc = SBertEncoder(str(st_dir)).encode_texts([text], [(a + 1, a + 2)])
    np.testing.assert_allclose(enc.span[0, 0], by_hand(st_dir, text, (a, b)), atol=1e-5)


def test_no_span_wanted_is_nan_and_not_missing(st_dir) -> None:
    from ncprobe.encoders.sbert import SBertEncoder
    from ncprobe.retrieval.encode import NO_SPAN

    enc = SBertEncoder(str(st_dir)).encode_texts(TEXTS[:2], [NO_SPAN, SPANS[1]])
    assert np.isnan(enc.span[0]).all() and not np.isnan(enc.span[1]).any()
    assert enc.missing_span_words.tolist() == [0, 0]
    assert not np.isnan(enc.sent).any()


@pytest.fixture
def short_st_dir(st_dir, tmp_path) -> Path:
    """The tiny model with its pipeline truncating at 12 tokens (positions go to 128)."""
    copy = tmp_path / "short-st"
    shutil.copytree(st_dir, copy)
    cfg_file = copy / "sentence_bert_config.json"
    cfg = json.loads(cfg_file.read_text()) if cfg_file.exists() else {}
    cfg["max_seq_length"] = 12
    cfg_file.write_text(json.dumps(cfg))
    return copy


def test_a_span_beyond_the_pipelines_truncation_is_pooled_from_the_whole_text(
        short_st_dir) -> None:
    """The sentence embedding is truncated as the model's encode truncates it; the span is
    pooled from a pass over up to 512 tokens (the position limit here: 128), as the protocol
    says, not dropped."""
    from sentence_transformers import SentenceTransformer

    from ncprobe.encoders.sbert import SBertEncoder

    text = " ".join([TEXTS[0]] * 3)  # about 3 x 11 tokens
    span = (len(text) - len("eager beaver"), len(text))
    enc = SBertEncoder(str(short_st_dir)).encode_texts([text], [span])
    st = SentenceTransformer(str(short_st_dir), device="cpu")
    assert st.max_seq_length == 12
    np.testing.assert_allclose(enc.sent[0, 0], st.encode([text])[0], atol=1e-5)
    np.testing.assert_allclose(enc.span[0, 0], by_hand(short_st_dir, text, span), atol=1e-5)
    assert enc.missing_span_words.tolist() == [0]


def test_a_span_beyond_every_limit_is_nan_and_counted(st_dir) -> None:
    """Past the model's 128 positions no token overlaps the span: NaN and counted, never the
    sentence vector."""
    from ncprobe.encoders.sbert import SBertEncoder

    text = " ".join([TEXTS[1]] * 40)  # hundreds of tokens
    enc = SBertEncoder(str(st_dir)).encode_texts([text, TEXTS[0]],
                                                 [(len(text) - 3, len(text)), SPANS[0]])
    assert np.isnan(enc.span[0]).all()
    assert enc.missing_span_words.tolist() == [1, 0]
    assert not np.isnan(enc.sent).any()


def test_text_vectors_are_cached_under_their_own_fingerprint(st_dir, tmp_path) -> None:
    from ncprobe.cache.shapes import vector_shape
    from ncprobe.cache.store import EmbeddingStore
    from ncprobe.embed import embed
    from ncprobe.encoders.sbert import SBertEncoder
    from ncprobe.retrieval.encode import POOLING, TextItem, text_encoder

    model = SBertEncoder(str(st_dir))
    enc = text_encoder(model)
    fp = enc.fingerprint()
    assert fp["pooling"] == POOLING and fp["pooling"] != model.fingerprint()["pooling"]
    items = [TextItem(t, s) for t, s in zip(TEXTS, SPANS, strict=True)] + [TextItem(TEXTS[0])]
    store = EmbeddingStore(fp, tmp_path / "cache", shape=vector_shape(enc))
    first = embed(items, enc, store=store, progress=False)
    assert first.encoded == 4  # the text with and without a span: two items
    again = embed(items, enc, store=EmbeddingStore(fp, tmp_path / "cache",
                                                   shape=vector_shape(enc)), progress=False)
    assert again.encoded == 0
    np.testing.assert_array_equal(first.sent, again.sent)
    np.testing.assert_array_equal(first.span, again.span)
    # the item without a span has the sentence vector of the one with it
    np.testing.assert_allclose(first.sent[3], first.sent[0], atol=1e-6)
    np.testing.assert_allclose(first.span[0, 0], by_hand(st_dir, TEXTS[0], SPANS[0]), atol=1e-5)


def test_only_sentence_transformers_models_encode_raw_text(bert_dir) -> None:
    from ncprobe.encoders.hf import HFEncoder
    from ncprobe.errors import UsageError
    from ncprobe.retrieval.encode import text_encoder

    with pytest.raises(UsageError, match="not a sentence-transformers model"):
        text_encoder(HFEncoder(str(bert_dir)))


def test_offsets_from_a_second_tokenisation_when_the_pipeline_gives_none(st_dir,
                                                                       monkeypatch) -> None:
    """sentence-transformers 5 has no processing options: the offsets then come from the
    tokenizer itself, checked against the pipeline's tokens; the vectors are the same."""
    from ncprobe.encoders.sbert import SBertEncoder

    model = SBertEncoder(str(st_dir))
    expected = model.encode_texts(TEXTS, SPANS)
    st = model.st
    plain = st.preprocess

    def no_options(texts, prompt=None, **kw):
        if kw:
            raise TypeError("preprocess() got an unexpected keyword argument")
        return plain(texts) if prompt is None else plain(texts, prompt=prompt)

    monkeypatch.setattr(st, "preprocess", no_options)
    got = model.encode_texts(TEXTS, SPANS)
    np.testing.assert_array_equal(got.span, expected.span)
    np.testing.assert_array_equal(got.sent, expected.sent)
