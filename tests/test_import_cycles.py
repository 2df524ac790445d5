"""No import cycle between the package's modules, imports inside functions included.

The graph is built from the source at test time (every ``.py`` file under ``ncprobe/``, read
with :mod:`ast`, nothing imported), so it follows the tree as modules are added, moved or
split. What counts:

* every ``import`` and ``from ... import`` anywhere in a module: at module level, inside
  functions and methods, under ``try`` or ``if``. Only imports under ``if TYPE_CHECKING:`` are
  left out: they never run, and annotations are strings (``from __future__ import
  annotations``);
* relative imports are resolved against the importing module (``from ..cache import x`` in
  ``ncprobe/encoders/static.py`` is ``ncprobe.cache``);
* ``from P import x`` depends on the submodule ``P.x`` when there is one (``from . import
  plots``), else on ``P`` itself (its ``__init__.py`` for a package);
* importing ``ncprobe.a.b`` depends on ``ncprobe.a.b`` alone, not on the ``__init__.py`` of
  ``ncprobe.a`` that Python runs first. A package's ``__init__.py`` is the top of that package
  (it re-exports its submodules), so a submodule importing a sibling (``from .base import
  Encoded``) is no cycle, and a module below the package may use the package's bottom module
  (``ncprobe.cache`` uses ``ncprobe.encoders.base``, while ``ncprobe.encoders.static`` uses
  ``ncprobe.cache``). Such a module-level import stays safe at run time as long as the
  package's ``__init__.py`` imports, at module level, nothing that imports the module back
  (``ncprobe.encoders.registry`` imports the model families inside its loaders).

The package root, ``ncprobe/__init__.py``, re-exports the public API from nearly every
module. It is the top of the graph: nothing may import it (``tests/test_layout.py`` forbids
``from .. import name``; here any edge into it counts, ``import ncprobe`` included), so it can
never close a cycle. A cycle through it is reported like any other.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

# found without importing the package: a cycle can make importing it fail
_SPEC = importlib.util.find_spec("ncprobe")
assert _SPEC is not None and _SPEC.origin is not None
PKG = Path(_SPEC.origin).parent
ROOT = PKG.name  # "ncprobe"


def _modules(pkg: Path) -> dict[str, Path]:
    """Every module of the package ``pkg`` by dotted name (a package by its ``__init__.py``)."""
    out = {}
    for path in sorted(pkg.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = path.relative_to(pkg.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``, except those under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.orelse:  # the else branch runs
                visit(stmt)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The module of the package that importing ``name`` runs last: ``name`` itself, or the
    longest prefix of it that is a module (``ncprobe.cache.cache_root`` is
    ``ncprobe.cache``); None for a module outside the package."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _dependencies(name: str, path: Path, modules: dict[str, Path], top: Path
                  ) -> dict[str, list[str]]:
    """The package modules that module ``name`` imports, each with the import lines."""
    is_package = path.name == "__init__.py"
    out: dict[str, list[str]] = {}
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        line = f"{path.relative_to(top)}:{node.lineno}: {ast.unparse(node)}"
        targets: list[str | None] = []
        if isinstance(node, ast.Import):
            targets = [_known(a.name, modules) for a in node.names]
        else:
            if node.level:
                # the package a relative import starts from: the module's own package
                # (itself for an __init__.py), one level up per extra dot
                base = name.split(".")
                drop = node.level - 1 + (0 if is_package else 1)
                base = base[:len(base) - drop] if drop else base
                pkg = ".".join(base + ([node.module] if node.module else []))
            else:
                pkg = node.module or ""
            for a in node.names:
                sub = f"{pkg}.{a.name}"
                targets.append(sub if sub in modules else _known(pkg, modules))
        for t in dict.fromkeys(targets):  # each statement once per module it reaches
            if t is not None and t != name:
                out.setdefault(t, []).append(line)
    return out


def import_graph(pkg: Path = PKG) -> dict[str, dict[str, list[str]]]:
    """module -> {module it imports: [the import lines]}, for every module of package ``pkg``."""
    modules = _modules(pkg)
    return {name: _dependencies(name, path, modules, pkg.parent)
            for name, path in modules.items()}


def components(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted: the
    groups of modules that import each other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:  # recursion depth is bounded by the number of modules
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(found)


def find_cycles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """One cycle per component of :func:`components`, as the path ``[a, b, ..., a]``: a
    shortest one through the component's first module."""
    cycles = []
    for comp in components(graph):
        members, start = set(comp), comp[0]
        # breadth-first from start inside the component until an edge leads back to start:
        # a shortest cycle through it
        prev: dict[str, str] = {start: start}
        frontier, last = [start], None
        while last is None:
            nxt = []
            for v in frontier:
                if start in graph[v]:
                    last = v
                    break
                for w in sorted(graph[v]):
                    if w in members and w not in prev:
                        prev[w] = v
                        nxt.append(w)
            frontier = nxt
        chain = [last]
        while chain[-1] != start:
            chain.append(prev[chain[-1]])
        cycles.append([*reversed(chain), start])
    return cycles


def describe(cycle: list[str], graph: dict[str, dict[str, list[str]]]) -> str:
    """The cycle, each step with the import statements that make it (file:line: code)."""
    steps = [f"  {a} -> {b}\n" + "".join(f"      {line}\n" for line in graph[a][b])
             for a, b in zip(cycle, cycle[1:], strict=False)]
    return " -> ".join(cycle) + "\n" + "".join(steps)


def test_no_import_cycle() -> None:
    graph = import_graph()
    cycles = find_cycles(graph)
    groups = components(graph)
    assert not cycles, (
        f"{len(cycles)} group(s) of modules of {ROOT} import each other: "
        + "; ".join(", ".join(g) for g in groups) + "\nOne cycle in each:\n"
        + "\n".join(describe(c, graph) for c in cycles))


def test_nothing_imports_the_package_root() -> None:
    graph = import_graph()
    into_root = [line for name, deps in graph.items() for line in deps.get(ROOT, [])
                 if name != f"{ROOT}.__main__"]  # run by `python -m`, never imported
    assert not into_root, into_root


# --- the graph builder itself, on a package written here ------------------------------------

def test_the_graph_finds_cycles_through_functions_and_relative_imports(tmp_path) -> None:
    pkg = tmp_path / ROOT
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from .a import f\n",
        "a.py": "from .sub.b import g\n",
        "sub/__init__.py": "from .b import g\n",
        # a submodule importing a sibling and its own package's name is no cycle
        "sub/b.py": "from . import c\ndef g():\n    from ..d import h\n",
        "sub/c.py": "import os\n",
        "d.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n"
                 "def h():\n    import ncprobe.sub.b\n"),
    }
    for rel, text in files.items():
        (pkg / rel).write_text(text, encoding="utf-8")
    graph = import_graph(pkg)
    assert graph[ROOT] == {f"{ROOT}.a": [f"{ROOT}/__init__.py:1: from .a import f"]}
    assert set(graph[f"{ROOT}.sub.b"]) == {f"{ROOT}.sub.c", f"{ROOT}.d"}
    assert set(graph[f"{ROOT}.d"]) == {f"{ROOT}.sub.b"}  # not .a: TYPE_CHECKING only
    assert find_cycles(graph) == [[f"{ROOT}.d", f"{ROOT}.sub.b", f"{ROOT}.d"]]
