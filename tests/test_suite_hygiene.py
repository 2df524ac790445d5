"""The test suite's own rules: shared helpers live in helper modules, never in another test
module; one matplotlib backend for the whole suite, chosen in conftest.py.

The checks parse the test files with ast; nothing is imported from them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
TEST_FILES = sorted(TESTS.glob("test_*.py"))


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


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: p.stem)
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
    """conftest.py's LONGEST_FIRST names test files of this folder (a renamed file would
    silently go back to the end of the queue)."""
    tree = ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8"))
    [LONGEST_FIRST] = [ast.literal_eval(node.value) for node in ast.walk(tree)
                       if isinstance(node, ast.Assign)
                       and [getattr(t, "id", None) for t in node.targets] == ["LONGEST_FIRST"]]
    missing = [name for name in LONGEST_FIRST if not (TESTS / name).is_file()]
    assert not missing and len(set(LONGEST_FIRST)) == len(LONGEST_FIRST), missing
