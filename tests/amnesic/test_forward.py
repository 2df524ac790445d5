"""Erasure inside the forward pass (ncprobe.amnesic.forward, ncprobe.encoders._intervene).

What is checked, independently of the hooks:

* pooling is a convex combination of token states, so erasing every token of the span at layer
  ``l`` must give the span vectors of view ``l`` erased exactly as the stored vectors are
  (``Eraser.apply`` on the plain pass's vectors); the views before ``l`` are the plain pass's,
  bit for bit; the views after it change (the model's answer to the erased state);
* the empty eraser gives the plain pass's vectors, and the plain run's tables, byte for byte,
  under a cache entry of its own;
* bad input is refused by name: a static model, a layer the model lacks, fold erasers, options
  of the forward mode without it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ncprobe.amnesic.erase import Eraser, fit_eraser
from ncprobe.amnesic.forward import ForwardErasure, forward_erasure
from ncprobe.errors import UsageError
from ncprobe.transform import in_forward

from ..synthetic import random_sentences

WORDS = ["the", "old", "beaver", "sat", "on", "a", "montanha", "by", "river", "and", "cat"]


@pytest.fixture(scope="module")
def sentences():
    return random_sentences(12, seed=4, longest=7, words=WORDS)


def _encoder(path, kind="hf"):
    if kind == "sbert":
        from ncprobe.encoders.sbert import SBertEncoder

        return SBertEncoder(str(path), layers="all", device="cpu")
    from ncprobe.encoders.hf import HFEncoder

    return HFEncoder(str(path), layers="all", device="cpu")


def _eraser(vectors: np.ndarray, seed: int) -> Eraser:
    """An eraser of two random classes fitted on ``vectors`` (any concept will do: what is
    checked is where it acts, not what it erases)."""
    labels = np.random.default_rng(seed).integers(0, 2, len(vectors))
    labels[:2] = (0, 1)
    return fit_eraser(vectors.astype(np.float64), labels)


@pytest.mark.parametrize("kind,layer", [("bert", 0), ("bert", 2), ("llama", 1),
                                        ("sbert", 3)])
def test_erasing_the_span_tokens_erases_the_span_vector_of_that_layer(
        kind, layer, sentences, tiny_bert_dir, tiny_llama_dir, tiny_st_dir) -> None:
    path = {"bert": tiny_bert_dir, "llama": tiny_llama_dir, "sbert": tiny_st_dir}[kind]
    enc = _encoder(path, "sbert" if kind == "sbert" else "hf")
    sents, spans = sentences
    plain = enc.encode(sents, spans)
    eraser = _eraser(plain.span[:, layer], seed=layer)
    erased = in_forward(enc, ForwardErasure(eraser, layer, "span", "test")).encode(sents, spans)
    np.testing.assert_allclose(erased.span[:, layer], eraser.apply(plain.span[:, layer]),
                               atol=2e-5, rtol=0)
    # the layers before it are the plain pass's, bit for bit
    assert np.array_equal(erased.span[:, :layer], plain.span[:, :layer])
    assert np.array_equal(erased.sent[:, :layer], plain.sent[:, :layer])
    # the layers after it answer the erased state
    if layer < plain.span.shape[1] - 1:
        assert not np.allclose(erased.span[:, layer + 1:], plain.span[:, layer + 1:], atol=1e-4)
    # the encoder it came from is as it was
    assert enc.intervention is None


def test_erasing_every_token_erases_the_sentence_vector(sentences, tiny_bert_dir) -> None:
    enc = _encoder(tiny_bert_dir)
    sents, spans = sentences
    plain = enc.encode(sents, spans)
    eraser = _eraser(plain.sent[:, 1], seed=7)
    erased = in_forward(enc, ForwardErasure(eraser, 1, "all", "test")).encode(sents, spans)
    np.testing.assert_allclose(erased.sent[:, 1], eraser.apply(plain.sent[:, 1]), atol=2e-5,
                               rtol=0)


@pytest.mark.parametrize("positions", ["span", "all"])
def test_the_empty_eraser_is_the_plain_pass_bit_for_bit_under_its_own_key(
        positions, sentences, tiny_st_dir) -> None:
    enc = _encoder(tiny_st_dir, "sbert")
    sents, spans = sentences
    plain = enc.encode(sents, spans)
    empty = ForwardErasure(Eraser.identity(enc.dim), 2, positions, "nothing")
    got = in_forward(enc, empty)
    same = got.encode(sents, spans)
    for part in ("sent", "span", "own"):
        assert np.array_equal(getattr(same, part), getattr(plain, part)), part
    # its vectors are cached apart from the plain pass's (and its own embedding's too)
    assert got.fingerprint() != enc.fingerprint()
    assert got.fingerprint()["intervention"] == empty.fingerprint
    assert got.own_fingerprint() != enc.own_fingerprint()
    assert "intervention" not in enc.fingerprint()


def test_an_erasure_changes_the_own_sentence_embedding(sentences, tiny_st_dir) -> None:
    enc = _encoder(tiny_st_dir, "sbert")
    sents, spans = sentences
    plain = enc.encode(sents, spans)
    eraser = _eraser(plain.sent[:, 1], seed=3)
    erased = in_forward(enc, ForwardErasure(eraser, 1, "all", "t")).encode(sents, spans)
    assert not np.allclose(erased.own, plain.own, atol=1e-4)


def test_fingerprints_name_the_eraser_layer_and_positions(sentences, tiny_bert_dir) -> None:
    rng = np.random.default_rng(0)
    e = _eraser(rng.normal(size=(20, 8)), seed=1)
    other = _eraser(rng.normal(size=(20, 8)), seed=2)
    base = ForwardErasure(e, 1, "span", "t").fingerprint
    assert base == ForwardErasure(e, 1, "span", "t").fingerprint  # the same erasure
    for changed in (ForwardErasure(e, 2, "span", "t"), ForwardErasure(e, 1, "all", "t"),
                    ForwardErasure(other, 1, "span", "t")):
        assert changed.fingerprint != base


def test_a_plain_and_an_empty_forward_compute_give_the_same_tables(tmp_path, tiny_bert_dir
                                                                   ) -> None:
    import ncprobe
    from ncprobe.encoders.hf import HFEncoder
    from ncprobe.results.store import TABLES

    from ..synthetic import pairs_stimuli

    stim = pairs_stimuli(tmp_path / "pairs.csv", n_nc=3)
    kw = {"model": str(tiny_bert_dir), "stimuli": stim, "n_boot": 20, "layers": "0,2",
          "cache_dir": tmp_path / "cache", "progress": False}
    plain = ncprobe.compute(**kw)
    dim = HFEncoder(str(tiny_bert_dir)).dim
    empty = ForwardErasure(Eraser.identity(dim), 1, "span", "nothing")
    forward = ncprobe.compute(**kw, transform=empty)
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(forward, name), getattr(plain, name))
    assert forward.meta[0]["transform"] == empty.fingerprint
    assert forward.run_id != plain.run_id
    # two cache entries: the plain pass's and the erased pass's
    entries = [p for p in (tmp_path / "cache").rglob("*") if p.is_dir()
               and any(q.suffix == ".json" for q in p.iterdir())]
    assert len(entries) >= 2


def test_forward_erasure_is_refused_where_it_cannot_act(tmp_path) -> None:
    from ncprobe.amnesic.run import check_forward
    from ncprobe.encoders import load_encoder

    e = Eraser.identity(50)
    glove = load_encoder("glove-6b-50d")
    with pytest.raises(UsageError, match="no forward pass"):
        in_forward(glove, ForwardErasure(e, 1, "span", "t"))
    with pytest.raises(UsageError, match="no forward pass"):
        check_forward("glove-6b-50d", "en", 1, "span")
    with pytest.raises(UsageError, match="--erase-layer"):
        check_forward("glove-6b-50d", "en", None, "span")
    with pytest.raises(UsageError, match="positions"):
        ForwardErasure(e, 1, "tokens", "t")


def test_a_layer_the_model_lacks_is_named(tiny_bert_dir, tiny_byte_llama_dir) -> None:
    enc = _encoder(tiny_bert_dir)
    with pytest.raises(UsageError, match=r"layers 0 \(the embeddings\) \.\. 3"):
        enc.with_intervention(ForwardErasure(Eraser.identity(enc.dim), 4, "span", "t")
                              .intervention)
    from ncprobe.amnesic.run import check_forward

    with pytest.raises(UsageError, match="--erase-layer 9"):
        check_forward(str(tiny_bert_dir), "en", 9, "span")
    # the views measured by default: the erased layer's and each later one, as --layers takes
    from ncprobe.amnesic.run import forward_layers
    from ncprobe.encoders.hf import parse_layers

    n = check_forward(str(tiny_bert_dir), "en", 1, "span")
    assert n == 3
    # a model of fewer layers than the default views (the last four) is checked too
    import json

    layers = json.loads((tiny_byte_llama_dir / "config.json").read_text())["num_hidden_layers"]
    assert layers == 2 and check_forward(str(tiny_byte_llama_dir), "en", 1, "span") == 2
    assert parse_layers(forward_layers(1, n), n) == ((1,), (2,), (3,))


def test_fold_erasers_are_refused_in_the_forward_pass() -> None:
    e = Eraser.identity(4)
    with pytest.raises(UsageError, match="per fold"):
        forward_erasure({("2", "nc"): {"a": e, "b": e}}, 2, "span", "concept ncimp")
    with pytest.raises(UsageError, match="no eraser for view 3"):
        forward_erasure({("2", "nc"): e}, 3, "span", "concept astitch")
    assert forward_erasure({("2", "sent"): e}, 2, "all", "c").eraser is e


def test_forward_options_are_refused_without_the_forward_mode() -> None:
    from ncprobe.amnesic.config import AmnesicConfig

    with pytest.raises(UsageError, match="no effect with where='vectors'"):
        AmnesicConfig(erase_layer=3)
    with pytest.raises(UsageError, match="no effect with where='vectors'"):
        AmnesicConfig(positions="all")
    with pytest.raises(UsageError, match="needs the layer"):
        AmnesicConfig(where="forward")
    assert AmnesicConfig(where="forward", erase_layer=0).erase_layer == 0


def test_a_concept_without_held_out_rows_is_refused_before_any_eraser_is_fitted(
        tiny_bert_dir) -> None:
    import contextlib

    from ncprobe.amnesic.run import run_amnesic

    fitted = []

    class Folded:  # a concept fitted fold by fold: no held-out rows
        name, held, notes, meta = "folded", None, (), {}

        @property
        def views(self):
            fitted.append("read")  # fit_concept's first look: never reached
            return []

    class Peers:
        def target(self, probe):  # a target that refuses nothing (Probe.check_target)
            return type("Target", (), {"check_target": lambda self, lang, **o: None})()

        def concept(self, probe, model, lang, **options):
            assert options["layers"] == "1"  # read at the erased layer's own view
            return contextlib.nullcontext(Folded())

    with pytest.raises(UsageError, match="per fold of groups"):
        run_amnesic(str(tiny_bert_dir), peers=Peers(), concept="folded", targets=["t"],
                    where="forward", erase_layer=1)
    assert fitted == []
