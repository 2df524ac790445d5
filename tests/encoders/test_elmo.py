"""ELMo: a tiny random biLM written as AllenNLP files; layers, pooling, state, errors."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from ncprobe.encoders import load_encoder
from ncprobe.errors import NcprobeError, UsageError

from ..encoder_checks import assert_padding_invariant
from ..tiny_models import write_tiny_elmo

try:
    import h5py
    import simple_elmo_pytorch  # noqa: F401
except ImportError:  # the [test] extra installs both
    if os.environ.get("CI"):
        raise
    pytest.skip("ELMo tests need simple-elmo-pytorch and h5py", allow_module_level=True)

@pytest.fixture(scope="module")
def elmo_dir(tmp_path_factory) -> Path:
    return write_tiny_elmo(tmp_path_factory.mktemp("elmo") / "tiny")


SENTS = [["Esta", "é", "uma", "montanha-russa", "."],
         ["vinho", "branco"],
         ["o", "coração", "da", "ação", "é", "um", "pão-duro", "e", "a", "lua", "cheia", "."],
         ["grey", "matter"]]
SPANS = [(3, 4), (0, 2), (9, 11), (1, 2)]


def raw_layers(elmo_dir: Path, words) -> np.ndarray:
    """``(n_words, 3, 2 * projection_dim)`` layer vectors of one unpadded sentence, straight
    from a freshly loaded simple_elmo_pytorch biLM (fresh: no state from earlier calls)."""
    import torch
    from simple_elmo_pytorch import ElmoBiLmSentence, batch_to_ids

    bilm = ElmoBiLmSentence(str(elmo_dir / "options.json"), str(elmo_dir / "weights.hdf5"))
    bilm.eval()
    with torch.no_grad():
        acts = bilm(batch_to_ids([words]))["activations"]
    # position 0 is <S>, 1..n the words, n + 1 is </S>
    return np.stack([a[0, 1:len(words) + 1].numpy() for a in acts], axis=1)


def test_dim_from_options(elmo_dir) -> None:
    enc = load_encoder(str(elmo_dir))
    assert type(enc).__name__ == "ElmoEncoder"
    opts = json.loads((elmo_dir / "options.json").read_text())
    # char-CNN layer + each biLSTM layer, each forward+backward projection wide
    expected = (opts["lstm"]["n_layers"] + 1) * 2 * opts["lstm"]["projection_dim"]
    assert expected == 48 and enc.dim == expected
    assert enc.views == ((0, 1, 2),) and enc.levels == ("sent", "nc")
    assert enc.view_names == ("concat:0,1,2",)
    out = enc.encode(SENTS, SPANS)
    assert out.sent.shape == out.span.shape == (len(SENTS), 1, expected)
    assert out.sent.dtype == np.float32 and out.span.dtype == np.float32
    assert not out.missing_words.any() and not out.missing_span_words.any()
    with pytest.raises(NcprobeError, match="empty sentence"):
        enc.encode([["a"], []], [(0, 1), (0, 0)])
    with pytest.raises(UsageError, match=r"--layers \[-1\] has no effect .*one layer view"):
        load_encoder(str(elmo_dir), layers=[-1])


def test_span_and_sentence_are_means_of_concatenated_layers(elmo_dir) -> None:
    enc = load_encoder(str(elmo_dir))
    out = enc.encode(SENTS, SPANS)
    for words, (s, e), sent, span in zip(SENTS, SPANS, out.sent, out.span, strict=True):
        layers = raw_layers(elmo_dir, words)  # (n, 3, 16)
        # layer 0 is the context-free char-CNN vector, duplicated by ELMo
        np.testing.assert_array_equal(layers[:, 0, :8], layers[:, 0, 8:])
        word_vecs = layers.reshape(len(words), -1)  # [layer 0 | layer 1 | layer 2]
        np.testing.assert_allclose(span[0], word_vecs[s:e].mean(0), atol=1e-5)
        np.testing.assert_allclose(sent[0], word_vecs.mean(0), atol=1e-5)
    # the vectors are contextual: "é" differs between sentences 0 and 2 in the biLSTM
    # layers, not in the context-free layer 0
    one = enc.encode([SENTS[0], SENTS[2]], [(1, 2), (4, 5)]).span[:, 0]
    np.testing.assert_allclose(one[0, :16], one[1, :16], atol=1e-6)
    assert np.abs(one[0, 16:] - one[1, 16:]).max() > 1e-3


def test_padding_invariance(elmo_dir) -> None:
    assert_padding_invariant(load_encoder(str(elmo_dir)), SENTS, SPANS)


def test_no_state_between_batches(elmo_dir) -> None:
    import torch
    from simple_elmo_pytorch import ElmoBiLmSentence, batch_to_ids

    # the package's biLSTM is stateful: a second identical call gives other vectors, so
    # the checks below can fail
    bilm = ElmoBiLmSentence(str(elmo_dir / "options.json"), str(elmo_dir / "weights.hdf5"))
    bilm.eval()
    ids = batch_to_ids(SENTS[:2])
    with torch.no_grad():
        first, second = (bilm(ids)["activations"][2] for _ in range(2))
    assert (first - second).abs().max() > 1e-4

    enc = load_encoder(str(elmo_dir))
    a = enc.encode(SENTS, SPANS)
    b = enc.encode(SENTS, SPANS)
    np.testing.assert_array_equal(a.sent, b.sent)
    np.testing.assert_array_equal(a.span, b.span)
    # other batch compositions and orders, after batches of other sizes
    order = [3, 1, 0, 2]
    c = enc.encode([SENTS[i] for i in order], [SPANS[i] for i in order])
    np.testing.assert_allclose(c.span, a.span[order], atol=1e-5)
    np.testing.assert_allclose(c.sent, a.sent[order], atol=1e-5)
    d = enc.encode(SENTS[2:], SPANS[2:])
    np.testing.assert_allclose(d.span, a.span[2:], atol=1e-5)
    # a fresh encoder (another run) gives the same vectors, also when a batch is larger than
    # every batch before it (where the package's state bookkeeping fails unless reset)
    fresh = load_encoder(str(elmo_dir))
    np.testing.assert_allclose(fresh.encode(SENTS[2:], SPANS[2:]).span, a.span[2:], atol=1e-5)
    np.testing.assert_allclose(fresh.encode(SENTS[1:], SPANS[1:]).span, a.span[1:], atol=1e-5)
    np.testing.assert_array_equal(fresh.encode(SENTS, SPANS).span, a.span)


def test_alias_explains_how_to_get_the_weights() -> None:
    with pytest.raises(NcprobeError, match="--model DIR") as en:
        load_encoder("elmo")
    assert "elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5" in str(en.value)
    assert "ncprobe[elmo]" in str(en.value)
    with pytest.raises(NcprobeError, match="Quinta de Castro") as pt:
        load_encoder("elmo", lang="pt")
    assert "elmo_pt_options.json" in str(pt.value) and "--model DIR" in str(pt.value)


def test_incomplete_or_mismatched_directories(elmo_dir, tmp_path) -> None:
    only_options = tmp_path / "only_options"
    only_options.mkdir()
    shutil.copy(elmo_dir / "options.json", only_options)
    with pytest.raises(NcprobeError, match=r"missing weights\.hdf5"):
        load_encoder(str(only_options))
    only_weights = tmp_path / "only_weights"
    only_weights.mkdir()
    shutil.copy(elmo_dir / "weights.hdf5", only_weights)
    with pytest.raises(NcprobeError, match=r"missing options\.json"):
        load_encoder(str(only_weights))
    # options that do not match the weights
    wrong = tmp_path / "wrong"
    shutil.copytree(elmo_dir, wrong)
    opts = json.loads((wrong / "options.json").read_text())
    opts["lstm"]["projection_dim"] = 10
    (wrong / "options.json").write_text(json.dumps(opts))
    lazy = load_encoder(str(wrong))  # the weights are read on the first encode
    with pytest.raises(NcprobeError, match="belong together"):
        lazy.encode(SENTS[:1], SPANS[:1])
    # a directory with neither ELMo nor HF files is no model directory
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(NcprobeError, match="not a model directory"):
        load_encoder(str(empty))


def test_allennlp_file_names_and_explicit_files(elmo_dir, tmp_path) -> None:
    named = write_tiny_elmo(tmp_path / "pt", names=("elmo_pt_options.json",
                                                    "elmo_pt_weights.hdf5"))
    from ncprobe.encoders.elmo import ElmoEncoder

    enc = load_encoder(str(named))
    assert isinstance(enc, ElmoEncoder) and enc.name == f"{tmp_path.name}/pt"
    explicit = ElmoEncoder((named / "elmo_pt_options.json", named / "elmo_pt_weights.hdf5"),
                           name="x")
    ref = load_encoder(str(elmo_dir)).encode(SENTS[:2], SPANS[:2])  # same seed, same weights
    np.testing.assert_array_equal(enc.encode(SENTS[:2], SPANS[:2]).span, ref.span)
    np.testing.assert_array_equal(explicit.encode(SENTS[:2], SPANS[:2]).span, ref.span)


def test_fingerprint_follows_the_weights(elmo_dir, tmp_path) -> None:
    from ncprobe.encoders.elmo import ElmoEncoder

    copy = tmp_path / "copy"
    shutil.copytree(elmo_dir, copy)
    base = ElmoEncoder(elmo_dir, name="tiny").fingerprint()
    assert base["family"] == "elmo" and base["views"] == ((0, 1, 2),)
    assert ElmoEncoder(copy, name="tiny").fingerprint() == base
    with h5py.File(copy / "weights.hdf5", "r+") as f:
        f["CNN_proj/b_proj"][0] += 1.0
    changed = ElmoEncoder(copy, name="tiny")
    assert changed.fingerprint() != base
    assert changed.fingerprint()["options_sha256"] == base["options_sha256"]
    assert not np.allclose(changed.encode(SENTS[:1], SPANS[:1]).span,
                           ElmoEncoder(elmo_dir).encode(SENTS[:1], SPANS[:1]).span)


def test_install_hint_when_the_package_is_missing(elmo_dir, monkeypatch) -> None:
    from ncprobe.encoders.elmo import ElmoEncoder

    monkeypatch.setitem(sys.modules, "simple_elmo_pytorch", None)
    with pytest.raises(NcprobeError, match=r"pip install 'ncprobe\[elmo\]'"):
        ElmoEncoder(elmo_dir)


def test_models_command_points_to_the_directory(capsys) -> None:
    from ncprobe.cli import main

    assert main(["models"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("elmo "))
    assert "allennlp-small / quinta-de-castro-2018" in line and "--model" in line
