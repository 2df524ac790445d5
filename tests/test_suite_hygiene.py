"""The test suite's own rules: shared helpers live in helper modules, never in another test
module; one matplotlib backend for the whole suite, chosen in conftest.py.

The checks parse the test files with ast; nothing is imported from them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
TEST_FILES = sorted(TESTS.rglob("test_*.py"))


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, relative ones as written (".x")."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.append((node.lineno, base))
            if not node.module:  # from . import x: x is the module
                found += [(node.lineno, "." + a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return found


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: p.relative_to(TESTS).as_posix())
def test_no_test_module_imports_another(path: Path) -> None:
    """A helper two test files need goes to a helper module (synthetic.py, by_hand.py,
    tiny_models.py ...): importing a test module runs its module-level code and collects
    nothing of it, and it ties two files that should move independently."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [f"{path.name}:{line}: {mod}" for line, mod in _imported_modules(tree)
           if mod.rsplit(".", 1)[-1].startswith("test_")]
    assert not bad, bad


def test_helper_modules_import_no_test_module() -> None:
    helpers = [p for p in TESTS.glob("*.py") if not p.name.startswith("test_")]
    assert {p.name for p in helpers} >= {"conftest.py", "synthetic.py", "by_hand.py",
                                         "tiny_models.py"}
    bad = [f"{p.name}:{line}: {mod}" for p in helpers
           for line, mod in _imported_modules(ast.parse(p.read_text(encoding="utf-8")))
           if mod.rsplit(".", 1)[-1].startswith("test_")]
    assert not bad, bad


def _backend_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, backend) of every ``matplotlib.use("...")`` with a literal backend."""
    calls = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "use" and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "matplotlib" and node.args
                and isinstance(node.args[0], ast.Constant)):
            calls.append((node.lineno, node.args[0].value))
    return calls


def test_one_agg_backend_for_the_suite() -> None:
    """conftest.py chooses Agg once; a test file may switch backends only inside a test that
    checks what the package does under another one (and restores it)."""
    conftest = ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8"))
    assert [b for _, b in _backend_calls(conftest)] == ["Agg"]
    for path in TEST_FILES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top_level = [n for n in tree.body if isinstance(n, ast.Expr)]
        for node in top_level:
            assert not _backend_calls(node), f"{path.name}:{node.lineno}: module-level use()"
        assert "Agg" not in [b for _, b in _backend_calls(tree)], path.name


def test_the_longest_files_named_to_run_first_exist() -> None:
    """conftest.py's LONGEST_FIRST names test files below this folder (a renamed file would
    silently go back to the end of the queue)."""
    tree = ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8"))
    [LONGEST_FIRST] = [ast.literal_eval(node.value) for node in ast.walk(tree)
                       if isinstance(node, ast.Assign)
                       and [getattr(t, "id", None) for t in node.targets] == ["LONGEST_FIRST"]]
    missing = [name for name in LONGEST_FIRST if not (TESTS / name).is_file()]
    assert not missing and len(set(LONGEST_FIRST)) == len(LONGEST_FIRST), missing


def test_the_test_tree_mirrors_the_package() -> None:
    """A test file of a subpackage's module sits in the folder of that subpackage
    (tests/retrieval/ for ncprobe/retrieval/ ...), a root module's at the root: each folder
    below tests/ is a subpackage of ncprobe, and each subpackage with tests has its folder."""
    import ncprobe

    package = Path(ncprobe.__file__).resolve().parent
    folders = {p.parent.relative_to(TESTS).as_posix() for p in TEST_FILES} - {"."}
    subpackages = {p.parent.relative_to(package).as_posix() for p in package.rglob("__init__.py")}
    assert folders <= subpackages, folders - subpackages
    # a file at the root named after a module lives beside it: a module of the package root
    misplaced = [p.name for p in TEST_FILES if p.parent == TESTS
                 and not (package / f"{p.stem.removeprefix('test_')}.py").is_file()
                 and any((package / sub / f"{p.stem.removeprefix('test_')}.py").is_file()
                         for sub in subpackages - {"."})]
    assert not misplaced, misplaced


# --- the tiny models: one model in every process ------------------------------------------

#: Defines ``seen(root)``: builds every tiny model of tests/tiny_models.py under ``root`` and
#: returns, as JSON, what a test sees of them: the vocabularies, a few words' tokens, and a hash
#: of each file the models wrote. Run as a script (``-c``), it prints ``seen(argv[1])``.
_BUILD_TINY_MODELS = """
import hashlib, json, sys
from pathlib import Path
from tests.tiny_models import _tokenizer, make_st_dir, tiny_bert, tiny_llama, write_tiny_elmo

def seen(root):
    root = Path(root)
    bert = tiny_bert(root / "bert")
    tiny_llama(root / "llama")
    make_st_dir(bert, root / "st")
    write_tiny_elmo(root / "elmo")
    words = ["beaver", "eager beaver", "montanha-russa", "coração", "research lab", "zebra"]
    out = {"files": {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                     for p in sorted(root.rglob("*")) if p.is_file()}}
    for kind in ("bert", "llama"):
        tok = _tokenizer(kind)
        out[kind] = {"vocab": sorted(tok.get_vocab().items()),
                     "tokens": [tok.tokenize(w) for w in words],
                     "ids": [tok(w)["input_ids"] for w in words]}
    return json.dumps(out)

if __name__ == "__main__":
    print(seen(sys.argv[1]))
"""


@pytest.mark.slow
def test_the_tiny_models_are_the_same_in_every_process(tmp_path: Path) -> None:
    """Two interpreters, with other hash seeds (this one and a fresh one), build the same
    tokenizers and the same model files byte for byte. A tokenizer trained at test time was
    not: the ``tokenizers`` trainer breaks ties in the order of a Rust hash map seeded anew in
    each process (whatever PYTHONHASHSEED says), so two xdist workers tested two models, one
    of which split "beaver" as ``be ##av ##er`` and the other as ``bea ##ver``."""
    import json
    import os
    import subprocess
    import sys

    # this process (an xdist worker: a fresh interpreter of its own, whose imports are paid)
    # and a fresh one with another hash seed: two processes, one start-up instead of two
    seed = "12345" if os.environ.get("PYTHONHASHSEED") == "0" else "0"
    run = subprocess.Popen(
        [sys.executable, "-c", _BUILD_TINY_MODELS, str(tmp_path / f"seed-{seed}")],
        cwd=TESTS.parent, env={**os.environ, "PYTHONHASHSEED": seed},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    here: dict = {}
    exec(_BUILD_TINY_MODELS, here)  # not "__main__": defines seen() only
    seen = [json.loads(here["seen"](tmp_path / "here"))]  # while the other one runs
    stdout, stderr = run.communicate(timeout=300)
    assert run.returncode == 0, stderr[-3000:]
    seen.append(json.loads(stdout.strip().splitlines()[-1]))
    first, second = seen
    # what the script wrote exists: the test compares models, not two empty listings
    assert {"bert/model.safetensors", "llama/model.safetensors", "st/2_Dense/config.json",
            "elmo/weights.hdf5", "bert/tokenizer.json"} <= set(first["files"])
    for kind in ("bert", "llama"):
        assert first[kind]["vocab"] == second[kind]["vocab"], kind
        assert first[kind]["tokens"] == second[kind]["tokens"], kind
        assert first[kind]["ids"] == second[kind]["ids"], kind
    differ = sorted(name for name in first["files"].keys() | second["files"].keys()
                    if first["files"].get(name) != second["files"].get(name))
    assert not differ, differ
