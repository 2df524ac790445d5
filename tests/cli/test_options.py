"""Model options: what ran is what is recorded; options without effect, missing devices,
unknown models, remote code and offline hubs fail at once with their exit code."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ncprobe
from ncprobe.cli import main
from ncprobe.encoders import load_encoder
from ncprobe.errors import DataError, ModelUnavailableError, UsageError
from ncprobe.results.store import TABLES

from ..synthetic import write_pairs
from ..tiny_models import write_tiny_elmo

REPO = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("own_cache")


N_NC = 3


def write_vectors(path: Path, words, dim: int = 4, seed: int = 0) -> Path:
    """A word2vec text file (header ``n dim``) with seeded random vectors."""
    rng = np.random.default_rng(seed)
    words = sorted(set(words))
    rows = [f"{w} " + " ".join(f"{x:.5f}" for x in rng.normal(size=dim)) for w in words]
    path.write_text(f"{len(words)} {dim}\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


# --- the model in every table is the encoder that ran ------------------------------------

def test_tables_and_meta_name_the_encoder_that_ran(tmp_path) -> None:
    pairs = ncprobe.load_pairs(write_pairs(tmp_path / "pairs.csv"), lang="en")
    words = {w for s in pairs for w in s.tokens}
    enc = load_encoder(str(write_vectors(tmp_path / "mine.txt", words)))
    mine = f"{tmp_path.name}/mine.txt"  # a file given as a path: its folder and name
    assert enc.name == mine
    res = ncprobe.compute(stimuli=pairs, encoder=enc, cache=False, progress=False, n_boot=0)
    for name in TABLES:
        df = getattr(res, name)
        if "model" in df.columns and len(df):
            assert set(df["model"]) == {mine}, name  # not the default glove-6b-50d
    assert res.meta[0]["config"]["model"] == mine
    assert res.meta[0]["model_name"] == mine
    # options that only apply when ncprobe loads the model would be recorded without effect
    with pytest.raises(UsageError, match="layers='all'"):
        ncprobe.compute(stimuli=pairs, encoder=enc, cache=False, progress=False, n_boot=0,
                        layers="all")


# --- dtype of sentence-transformers models ------------------------------------------------

def test_sentence_transformers_dtype_is_applied_to_the_weights(st_dir) -> None:
    import torch

    full = load_encoder(str(st_dir), device="cpu")
    half = load_encoder(str(st_dir), device="cpu", dtype="float16")
    dtypes = {p.dtype for p in half.st[0].auto_model.parameters()}
    assert dtypes == {torch.float16}  # the transformer really runs in float16
    assert {p.dtype for p in full.st[0].auto_model.parameters()} == {torch.float32}
    assert half.fingerprint()["dtype"] == "float16" and full.fingerprint()["dtype"] == "float32"
    # the modules after the transformer (pooling, Dense) stay float32 and get float32 input
    assert {p.dtype for p in half.st[2].parameters()} == {torch.float32}
    sents, spans = [["one", "w1", "x1", "is", "here"], ["this", "is", "a", "w2"]], [(1, 3), (3, 4)]
    x, y = full.encode(sents, spans), half.encode(sents, spans)
    assert y.sent.dtype == np.float32 and y.span.dtype == np.float32
    assert not np.array_equal(x.span, y.span)  # half precision did run
    np.testing.assert_allclose(y.span, x.span, atol=0.02 * np.abs(x.span).max())
    np.testing.assert_allclose(y.sent, x.sent, atol=0.02 * np.abs(x.sent).max())


# --- options without effect are usage errors ----------------------------------------------

@pytest.mark.parametrize("option", [["--layers", "99"], ["--layers", "all"],
                                    ["--dtype", "float16"], ["--device", "cuda"]])
def test_static_model_refuses_options_without_effect(option, raw_dir, tmp_path, capsys) -> None:
    rc = main(["compute", *option, "--quiet", "--n-boot", "0", "--data-dir", str(raw_dir),
               "--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2
    assert option[0] in err and "glove-6b-50d" in err
    assert not (tmp_path / "out").exists()  # nothing recorded


def test_static_model_accepts_what_it_is(tmp_path) -> None:
    words = ["grey", "matter"]
    path = write_vectors(tmp_path / "v.txt", words)
    enc = load_encoder(str(path), dtype="float32", device="cpu")
    assert enc.encode([words], [(0, 2)]).span.shape == (1, 1, 4)
    for kw in ({"layers": [-1]}, {"dtype": "bfloat16"}, {"device": "cuda:0"}):
        with pytest.raises(UsageError, match=f"--{next(iter(kw))}.*v.txt"):
            load_encoder(str(path), **kw)


def test_unreadable_vector_file_is_a_data_error_naming_it(tmp_path, capsys) -> None:
    bad = tmp_path / "vectors.txt"
    bad.write_text("3 4\ngrey 1 2 3 4\n", encoding="utf-8")  # the header promises 3 words
    assert main(["compute", "--model", str(bad), "--quiet", "--n-boot", "0"]) == 3
    err = capsys.readouterr().err
    assert "vectors.txt" in err and "word2vec-text" in err and "Traceback" not in err
    (tmp_path / "v.bin").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(DataError, match="v.bin.*word2vec-bin"):
        load_encoder(str(tmp_path / "v.bin"))


def test_openai_refuses_layers_device_and_dtype(monkeypatch, capsys) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    for kw in ({"layers": "all"}, {"device": "cpu"}, {"dtype": "float16"}):
        with pytest.raises(UsageError, match="openai"):
            load_encoder("openai", **kw)
    assert main(["compute", "--model", "openai", "--layers", "-1", "--quiet"]) == 2
    assert "--layers -1 has no effect for model openai" in capsys.readouterr().err


def test_elmo_refuses_layers_and_half_precision_consistently(tmp_path, capsys) -> None:
    pytest.importorskip("simple_elmo_pytorch")
    elmo = write_tiny_elmo(tmp_path / "elmo")
    for kw in ({"layers": "all"}, {"layers": [-1]}, {"dtype": "float16"},
               {"dtype": "bfloat16"}):
        with pytest.raises(UsageError, match="ELMo"):
            load_encoder(str(elmo), **kw)
    assert load_encoder(str(elmo), dtype="float32", device="cpu").dim == 48
    assert main(["compute", "--model", str(elmo), "--dtype", "float16", "--quiet"]) == 2
    assert "--dtype float16 has no effect" in capsys.readouterr().err


def test_transformer_layer_errors_are_usage_errors(bert_dir, raw_dir, capsys) -> None:
    with pytest.raises(UsageError, match="layer 7 out of range"):
        load_encoder(str(bert_dir), layers=[7])
    for spec in ("99", "-9", "abc", "1+x", ","):
        assert main(["compute", "--model", str(bert_dir), "--layers", spec, "--quiet",
                     "--data-dir", str(raw_dir)]) == 2, spec
        err = capsys.readouterr().err
        assert "--layers" in err and "Traceback" not in err


# --- a device that is not there -----------------------------------------------------------

def test_cuda_without_a_cuda_device_says_what_is_missing(bert_dir, st_dir, raw_dir, tmp_path,
                                                         monkeypatch, capsys) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    rc = main(["compute", "--model", str(bert_dir), "--device", "cuda", "--quiet",
               "--data-dir", str(raw_dir), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 5
    assert "CUDA" in err and "--device cpu" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(ModelUnavailableError, match="CUDA"):
        load_encoder(str(st_dir), device="cuda")
    with pytest.raises(UsageError, match="not a device name"):
        load_encoder(str(bert_dir), device="gpu")
    pytest.importorskip("simple_elmo_pytorch")
    with pytest.raises(ModelUnavailableError, match="CUDA"):
        load_encoder(str(write_tiny_elmo(tmp_path / "elmo")), device="cuda:0")


# --- unknown models and languages ---------------------------------------------------------

def test_unknown_model_and_missing_language_are_usage_errors(capsys) -> None:
    with pytest.raises(UsageError, match="Did you mean bert-large"):
        load_encoder("bert-larg")
    assert main(["compute", "--model", "glove-6b", "--quiet"]) == 2
    assert "Did you mean glove-6b-50d" in capsys.readouterr().err
    assert main(["compute", "--model", "minilm", "--lang", "pt", "--quiet"]) == 2
    assert "has no 'pt' variant" in capsys.readouterr().err


# --- gensim: remote code only on request; offline fails fast ------------------------------

def test_gensim_downloader_is_refused_without_opt_in(tmp_path, monkeypatch, capsys) -> None:
    import gensim.downloader as api

    def no_download(*a, **k):
        raise AssertionError("gensim.downloader.load was called")
    monkeypatch.setattr(api, "load", no_download)
    monkeypatch.setattr(api, "BASE_DIR", str(tmp_path / "gensim-data"))
    for name in ("word2vec", "gensim:glove-wiki-gigaword-50"):
        with pytest.raises(ModelUnavailableError, match="--allow-gensim-downloader"):
            load_encoder(name)
    assert main(["compute", "--model", "word2vec", "--quiet"]) == 5
    err = capsys.readouterr().err
    assert "runs Python code" in err and "--allow-gensim-downloader" in err
    assert not (tmp_path / "gensim-data").exists()


def test_gensim_downloader_offline_fails_fast_and_creates_nothing(tmp_path) -> None:
    """A fresh interpreter with HOME in tmp and no network: exit 5, one line, no ~/gensim-data."""
    home = tmp_path / "home"
    home.mkdir()
    script = textwrap.dedent("""
        import socket, sys, urllib.request
        def offline(*a, **k):
            raise OSError("network unreachable (test)")
        socket.create_connection = offline
        urllib.request.urlopen = offline
        from ncprobe.cli import main
        sys.exit(main(sys.argv[1:]))
    """)
    env = {k: v for k, v in os.environ.items() if k != "GENSIM_DATA_DIR"}
    # the ncprobe under test (a checkout may differ from the installed one)
    env.update(HOME=str(home), NCPROBE_CACHE=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(Path(ncprobe.__file__).parents[1]),
                                           env.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", script, "compute", "--model",
                           "gensim:glove-wiki-gigaword-50", "--allow-gensim-downloader",
                           "--quiet"], env=env, capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    assert proc.returncode == 5, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "cannot be reached" in proc.stderr and "glove-wiki-gigaword-50" in proc.stderr
    assert list(home.iterdir()) == []  # no ~/gensim-data


def test_gensim_data_already_downloaded_loads_without_the_network(tmp_path, monkeypatch) -> None:
    import socket

    import gensim.downloader as api

    base = tmp_path / "gensim-data"
    (base / "tiny-vectors").mkdir(parents=True)
    write_vectors(base / "tiny-vectors" / "tiny.txt", ["grey", "matter"], dim=3)
    (base / "tiny-vectors" / "__init__.py").write_text(textwrap.dedent("""
        import os
        from gensim.models import KeyedVectors

        def load_data():
            here = os.path.dirname(__file__)
            return KeyedVectors.load_word2vec_format(os.path.join(here, "tiny.txt"))
    """))
    monkeypatch.setattr(api, "BASE_DIR", str(base))

    def offline(*a, **k):
        raise OSError("network unreachable (test)")
    monkeypatch.setattr(socket, "create_connection", offline)
    monkeypatch.setattr(api, "load", lambda *a, **k: pytest.fail("gensim went to the network"))
    enc = load_encoder("gensim:tiny-vectors", allow_gensim_downloader=True)
    ref = np.loadtxt(base / "tiny-vectors" / "tiny.txt", skiprows=1, usecols=(1, 2, 3))
    np.testing.assert_allclose(enc.encode([["grey"]], [(0, 1)]).span[0, 0], ref[0], atol=1e-6)


# --- gensim .kv pickles: --allow-pickle ---------------------------------------------------

def _kv_file(path: Path, words) -> Path:
    from gensim.models import KeyedVectors

    words = sorted(set(words))
    kv = KeyedVectors(vector_size=4)
    kv.add_vectors(words, np.random.default_rng(1).normal(size=(len(words), 4)))
    kv.save(str(path))
    return path


def test_kv_files_need_allow_pickle(raw_dir, tmp_path, capsys) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stim = ncprobe.load_stimuli("en", contexts="neut", data_dir=raw_dir)
    kv = _kv_file(tmp_path / "mine.kv", {w for s in stim for w in s.tokens})
    common = ["compute", "--model", str(kv), "--context", "neut", "--quiet", "--n-boot", "0",
              "--data-dir",
              str(raw_dir), "--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path / "out")]
    assert main(common) == 2
    err = capsys.readouterr().err
    assert "--allow-pickle" in err and "mine.kv" in err
    assert not (tmp_path / "out").exists()
    assert main(common + ["--allow-pickle"]) == 0
    res = ncprobe.Results.load(tmp_path / "out")
    assert set(res.cosines["model"]) == {f"{tmp_path.name}/mine.kv"}  # folder and name
    assert res.cosines["cosine"].notna().all()
    with pytest.raises(UsageError, match="--allow-pickle"):
        load_encoder(str(kv))


# --- an offline hub fails at once ---------------------------------------------------------

@pytest.fixture
def no_hub(tmp_path, monkeypatch):
    """An empty HuggingFace cache, and every way to the hub fails the test if taken."""
    import huggingface_hub
    import transformers
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))

    def called(*a, **k):
        raise AssertionError("the hub was called")
    for mod, attr in ((transformers.AutoTokenizer, "from_pretrained"),
                      (transformers.AutoConfig, "from_pretrained"),
                      (transformers.AutoModel, "from_pretrained"),
                      (huggingface_hub, "hf_hub_download")):
        monkeypatch.setattr(mod, attr, called)
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)


def test_offline_hub_fails_fast_with_hf_hub_offline(no_hub, raw_dir, monkeypatch, capsys) -> None:
    import socket

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket, "create_connection",
                        lambda *a, **k: pytest.fail("no connection expected with HF_HUB_OFFLINE"))
    rc = main(["compute", "--model", "bert-large", "--lang", "pt", "--quiet",
               "--data-dir", str(raw_dir)])
    err = capsys.readouterr().err
    assert rc == 5
    assert "neuralmind/bert-large-portuguese-cased" in err and "HF_HUB_OFFLINE" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unreachable_hub_fails_fast(no_hub, raw_dir, monkeypatch, capsys) -> None:
    import socket

    tried = []

    def offline(address, *a, **k):
        tried.append(address)
        raise OSError("network unreachable (test)")
    monkeypatch.setattr(socket, "create_connection", offline)
    for model in (["bert-large", "--lang", "pt"], ["org-x/not-cached-model"]):
        rc = main(["compute", "--model", *model, "--quiet", "--data-dir", str(raw_dir)])
        err = capsys.readouterr().err
        assert rc == 5, err
        assert "cannot be reached" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
    assert len(tried) == 2  # one connection attempt per run, no retries


def test_reproduce_still_skips_an_offline_hub_model(no_hub, monkeypatch) -> None:
    from ncprobe.ncimp.reproduce import reproduce

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rep = reproduce(["bert-ml"], ["en"], progress=False)
    assert rep.ran == [] and len(rep.skipped) == 1
    assert "HF_HUB_OFFLINE" in rep.skipped[0][2]


# --- a sentence longer than the model takes -----------------------------------------------

def _short_bert(path: Path, positions: int) -> Path:
    import torch
    from transformers import BertConfig, BertModel

    from ..tiny_models import _tokenizer

    tok = _tokenizer("bert")
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=3,
                         num_attention_heads=2, intermediate_size=32,
                         max_position_embeddings=positions)).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_too_long_sentence_names_the_stimulus(tmp_path) -> None:
    enc = load_encoder(str(_short_bert(tmp_path / "short-bert", positions=24)))
    assert enc.max_length == 24
    long = " ".join(["montanha-russa"] * 12)
    pairs = ncprobe.load_pairs(write_pairs(tmp_path / "pairs.csv", long_substitute=long),
                               lang="en")
    with pytest.raises(DataError) as info:
        ncprobe.compute(stimuli=pairs, encoder=enc, cache=False, progress=False, n_boot=0)
    msg = str(info.value)
    assert info.value.exit_code == 3
    # data rows: 24 of NC w0 x0, 6 of w1 x1 in S1, then the 6th of S2 = 36 (rand, variant 2)
    assert "pairs.csv:36:" in msg
    assert "rand 2" in msg and "'w1 x1'" in msg and "context S2" in msg
    assert "limit of 24" in msg
    # the encoder alone says which sentence of the batch it was
    from ncprobe.encoders.base import SentenceTooLongError

    with pytest.raises(SentenceTooLongError) as raw:
        enc.encode([["one"], long.split()], [(0, 1), (0, 1)])
    assert raw.value.index == 1 and raw.value.limit == 24 and raw.value.n_tokens > 24
