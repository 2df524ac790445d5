"""No import cycle between the package's modules, and every module imports first.

Two graphs are built from the source at test time (every ``.py`` file under ``ncprobe/``, read
with :mod:`ast`, nothing imported), so they follow the tree as modules are added, moved or
split:

* **the design graph** (:func:`import_graph`): every ``import`` and ``from ... import``
  anywhere in a module: at module level, inside functions and methods, under ``try`` or
  ``if``. Only imports under ``if TYPE_CHECKING:`` are left out: they never run, and
  annotations are strings (``from __future__ import annotations``). Importing
  ``ncprobe.a.b`` is an edge to ``ncprobe.a.b`` alone: which module uses which;
* **the import-order graph** (``import_graph(on_import=True)``): what Python runs when a
  module is imported. Only the imports that run then (not those inside a function), and each
  one also runs the ``__init__.py`` of every package on the way, first: ``from .results.query
  import f`` at the top of ``ncprobe/selection.py`` runs ``ncprobe/results/__init__.py``, and
  with it whatever that imports. The packages that hold the importing module are left out:
  Python has run (or is running) their ``__init__.py`` before the module, so a submodule
  importing a sibling (``from .base import Encoded`` in ``ncprobe/encoders/hf.py``) runs no
  ``__init__.py``. A cycle here can make a module fail to import, or import only in a lucky
  order (issue 29: ``selection -> results/__init__ -> core -> summary -> inference ->
  selection``).

In both, relative imports are resolved against the importing module (``from ..cache import
x`` in ``ncprobe/encoders/static.py`` is ``ncprobe.cache``), and ``from P import x`` depends
on the submodule ``P.x`` when there is one (``from . import plots``), else on ``P`` itself
(its ``__init__.py`` for a package: also when ``P`` holds the importing module).

The package root, ``ncprobe/__init__.py``, re-exports the public API from nearly every
module. It holds every module, so no implicit run of it counts; nothing may import it
(``tests/test_architecture.py`` forbids ``from .. import name``; here an explicit edge into it
counts, ``import ncprobe`` included), so it can never close a cycle. That no module needs its
imports is checked by running them: each module imports first, in its own fresh process, from
a copy of the package whose ``__init__.py`` is empty
(:func:`test_every_module_imports_first_with_an_empty_package_root`).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

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


def _imports(tree: ast.AST, *, type_only: bool = False
             ) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement of ``tree``, except those under ``if TYPE_CHECKING:`` (unless
    ``type_only``), each with whether it runs when the module is imported (False: inside a
    function or lambda, or only for a type checker)."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, deferred: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test) and type_only:
            for stmt in node.body:
                visit(stmt, True)
            for stmt in node.orelse:
                visit(stmt, deferred)
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.orelse:  # the else branch runs
                visit(stmt, deferred)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, not deferred))
        inner = deferred or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                              ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, False)
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


def _statements(path: Path, *, type_only: bool
                ) -> list[tuple[ast.Import | ast.ImportFrom, bool, str]]:
    """:func:`_imports` of the file at ``path``, each with its source (``ast.unparse``): read
    once per version of the file (the five graphs of this module read every file)."""
    stat = path.stat()
    return _read_statements(str(path), (stat.st_mtime_ns, stat.st_size), type_only)


@functools.lru_cache(maxsize=None)
def _read_statements(path: str, version: tuple[int, int], type_only: bool
                     ) -> list[tuple[ast.Import | ast.ImportFrom, bool, str]]:
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    return [(node, at_import, ast.unparse(node))
            for node, at_import in _imports(tree, type_only=type_only)]


def _dependencies(name: str, path: Path, modules: dict[str, Path], top: Path, *,
                  on_import: bool = False, type_only: bool = False) -> dict[str, list[str]]:
    """The package modules that module ``name`` imports, each with the import lines; with
    ``on_import``, those that importing it runs (see the module doc)."""
    is_package = path.name == "__init__.py"
    # the packages whose __init__.py has run before this module: each one above it, and itself
    # for a package
    parts = name.split(".")
    holders = {".".join(parts[:i]) for i in range(1, len(parts) + is_package)}
    out: dict[str, list[str]] = {}
    for node, at_import, code in _statements(path, type_only=type_only):
        if on_import and not at_import:
            continue
        line = f"{path.relative_to(top)}:{node.lineno}: {code}"
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
            if t is None:
                continue
            for run in (_runs(t, holders, modules) if on_import else [t]):
                if run != name:
                    note = "" if run == t else f"  (runs {run}/__init__.py first)"
                    out.setdefault(run, []).append(line + note)
    return out


def _runs(target: str, holders: set[str], modules: dict[str, Path]) -> list[str]:
    """The modules that importing ``target`` runs, from a module whose packages ``holders``
    have run: the ``__init__.py`` of each package on the way to ``target`` that is none of
    ``holders``, outermost first, then ``target``."""
    parts = target.split(".")
    packages = [".".join(parts[:i]) for i in range(1, len(parts))]
    return [p for p in packages if p in modules and p not in holders] + [target]


def import_graph(pkg: Path = PKG, *, on_import: bool = False, type_only: bool = False
                 ) -> dict[str, dict[str, list[str]]]:
    """module -> {module it imports: [the import lines]}, for every module of package ``pkg``;
    with ``on_import``, the import-order graph (see the module doc); with ``type_only``, the
    imports only a type checker runs (under ``if TYPE_CHECKING:``) count too."""
    modules = _modules(pkg)
    return {name: _dependencies(name, path, modules, pkg.parent, on_import=on_import,
                                type_only=type_only)
            for name, path in modules.items()}


def registry_edges(pkg: Path = PKG) -> dict[str, dict[str, list[str]]]:
    """The look-ups of the probe registry as edges: ``ncprobe.probes`` -> the module of each
    entry of its ``PROBES`` (``"module:Class"``), read from the source."""
    path = pkg / "probes" / "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "PROBES":
            table = ast.literal_eval(node.value)  # type: ignore[arg-type]
            return {f"{ROOT}.probes": {v.split(":")[0]: [f"{path.relative_to(pkg.parent)}: "
                                                        f"PROBES[{k!r}] = {v!r}"]
                                       for k, v in table.items()}}
    raise AssertionError(f"no PROBES table in {path}")


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


def _no_cycle(graph: dict[str, dict[str, list[str]]], what: str) -> None:
    cycles = find_cycles(graph)
    groups = components(graph)
    assert not cycles, (
        f"{len(cycles)} group(s) of modules of {ROOT} {what}: "
        + "; ".join(", ".join(g) for g in groups) + "\nOne cycle in each:\n"
        + "\n".join(describe(c, graph) for c in cycles))


def test_no_import_cycle() -> None:
    _no_cycle(import_graph(), "import each other")


def test_no_cycle_counting_type_only_imports_and_registry_lookups() -> None:
    # a cycle through `if TYPE_CHECKING:` imports or the registry's "module:Class" strings
    # runs nothing today, but it ties the modules together as firmly as one that does
    graph = import_graph(type_only=True)
    for module, deps in registry_edges().items():
        for dep, lines in deps.items():
            graph[module].setdefault(dep, []).extend(lines)
    _no_cycle(graph, "import each other (type-only imports and registry look-ups counted)")


def _probe_packages() -> dict[str, str]:
    """The package of each built-in probe (``ncprobe.ncc`` -> ``ncc``): the package of its
    registry entry's module."""
    table = registry_edges()[f"{ROOT}.probes"]
    out = {}
    for module, lines in table.items():
        name = lines[0].split("PROBES[")[1].split("]")[0].strip("'")
        out[".".join(module.split(".")[:2])] = name
    return out


def _package_of(module: str, packages: Sequence[str]) -> str | None:
    return next((p for p in packages if module == p or module.startswith(p + ".")), None)


def test_shared_modules_import_no_probe_package() -> None:
    # the package root (the public API), the command line (it reaches probes through the
    # registry only: checked here too) and the probes' own packages aside, no module imports
    # a probe's package, type-only imports included
    packages = _probe_packages()
    graph = import_graph(type_only=True)
    bad = [line for name, deps in graph.items()
           if name != ROOT and name != f"{ROOT}.__main__" and not _package_of(name, packages)
           for dep, lines in deps.items() if _package_of(dep, packages) for line in lines]
    assert not bad, "shared modules importing a probe's package:\n" + "\n".join(bad)


def test_probe_packages_import_each_other_only_where_declared() -> None:
    # a probe uses another's code only where its declaration says so (Probe.uses: NCC uses
    # NCIMP's measures)
    from ncprobe.probes import get_probe

    packages = _probe_packages()
    graph = import_graph(type_only=True)
    bad = []
    for name, deps in graph.items():
        mine = _package_of(name, packages)
        if mine is None:
            continue
        uses = get_probe(packages[mine]).uses
        for dep, lines in deps.items():
            theirs = _package_of(dep, packages)
            if theirs not in (None, mine) and packages[theirs] not in uses:
                bad += [f"{line}  ({packages[mine]} does not declare it uses "
                        f"{packages[theirs]})" for line in lines]
    assert not bad, "\n".join(bad)


def test_no_module_outside_the_command_line_imports_it() -> None:
    # what a probe needs for its options is public (ncprobe.probes.options, ncprobe.argtypes)
    graph = import_graph(type_only=True)
    cli = f"{ROOT}.cli"
    bad = [line for name, deps in graph.items()
           if not (name == cli or name.startswith(cli + ".")) and name != f"{ROOT}.__main__"
           for dep, lines in deps.items() if dep == cli or dep.startswith(cli + ".")
           for line in lines]
    assert not bad, "\n".join(bad)


def test_no_import_order_cycle() -> None:
    # package __init__ runs count: a cycle here imports only in a lucky order
    _no_cycle(import_graph(on_import=True), "run each other when imported")


def test_nothing_imports_the_package_root() -> None:
    graph = import_graph()
    into_root = [line for name, deps in graph.items() for line in deps.get(ROOT, [])
                 if name != f"{ROOT}.__main__"]  # run by `python -m`, never imported
    assert not into_root, into_root


# --- every module imports first, the package root empty --------------------------------------

# Run in a fresh interpreter: imports the third-party packages given first (not under test:
# each forked child then imports only the package's own code), then forks one child per
# module, which imports that module first and reports what went wrong (nothing: "").
_FIRST_IMPORTS = """
import compileall, gc, importlib, json, os, sys, traceback
preload, package, expected, modules, report = json.loads(sys.argv[1])
for name in preload:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
# compiled once here, not in every child (PYTHONDONTWRITEBYTECODE may be set)
compileall.compile_dir(expected, quiet=2)
gc.collect()
gc.freeze()  # the children then copy no page for the collector
found = {}
for module in modules:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        try:
            importlib.import_module(module)
            where = os.path.dirname(os.path.abspath(sys.modules[package].__file__))
            msg = "" if where == expected else f"imported from {where}, not {expected}"
        except ModuleNotFoundError as e:
            if e.name and e.name.split(".")[0] != package:
                msg = f"missing package: {e.name}"
            else:
                msg = "".join(traceback.format_exc().splitlines(True)[-12:])
        except BaseException:
            msg = "".join(traceback.format_exc().splitlines(True)[-12:])
        os.write(write, msg.encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    msg = b"".join(chunks).decode()
    found[module] = msg or ("" if status == 0 else f"the process ended with status {status}")
with open(report, "w", encoding="utf-8") as f:
    json.dump(found, f)
"""


def first_imports(pkg: Path, where: Path, *, preload: Sequence[str] = ()) -> dict[str, str]:
    """Module -> what went wrong when it was imported first in a fresh process, from a copy of
    package ``pkg`` under ``where`` whose ``__init__.py`` is empty (``""``: it imported;
    ``"missing package: x"``: a third-party package ``x`` is not installed here)."""
    copy = where / pkg.name
    shutil.copytree(pkg, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "__init__.py").write_text("", encoding="utf-8")
    modules = [m for m in _modules(copy) if m not in (pkg.name, f"{pkg.name}.__main__")]
    report = where / "first_imports.json"
    env = {**os.environ, "PYTHONPATH": str(where), "MPLBACKEND": "Agg"}
    args = json.dumps([list(preload), pkg.name, str(copy), modules, str(report)])
    # cwd=where: the copy, not the package being tested, is the one found first
    done = subprocess.run([sys.executable, "-c", _FIRST_IMPORTS, args], cwd=where, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and report.is_file(), done.stderr[-3000:]
    return json.loads(report.read_text(encoding="utf-8"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a process per module")
@pytest.mark.slow  # ~5 s: a fresh interpreter per module
def test_every_module_imports_first_with_an_empty_package_root(tmp_path) -> None:
    found = first_imports(PKG, tmp_path,
                          preload=("numpy", "pandas", "scipy.stats", "matplotlib.figure"))
    # every module of the copy but the root and __main__ (the tree may change meanwhile)
    assert set(found) == set(_modules(tmp_path / ROOT)) - {ROOT, f"{ROOT}.__main__"}
    failed = {m: msg for m, msg in found.items() if msg and not msg.startswith("missing ")}
    assert not failed, "\n".join(f"{m}:\n{msg}" for m, msg in failed.items())


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


def test_the_import_order_graph_counts_package_init_runs(tmp_path) -> None:
    # issue 29's cycle in small: sel takes a leaf of package res, whose __init__.py imports
    # core, which imports inf, which imports sel. No module names res/__init__.py: the design
    # graph has no cycle, the import-order graph has it.
    pkg = tmp_path / ROOT
    (pkg / "res").mkdir(parents=True)
    files = {
        "__init__.py": "from .res import R\n",  # the lucky order: res first
        "sel.py": "from .res.q import f\ndef h():\n    return f\n",
        "inf.py": "from .sel import h\ndef g():\n    return h\n",
        "res/__init__.py": "from .core import R\n",
        "res/core.py": "from ..inf import g\nR = g\n",
        "res/q.py": "f = 1\n",
        # run when called, never when imported: not in the import-order graph
        "late.py": "def k():\n    from .res.q import f\n    return f\n",
    }
    for rel, text in files.items():
        (pkg / rel).write_text(text, encoding="utf-8")
    assert find_cycles(import_graph(pkg)) == []
    graph = import_graph(pkg, on_import=True)
    assert graph[f"{ROOT}.sel"] == {
        f"{ROOT}.res": [f"{ROOT}/sel.py:1: from .res.q import f  (runs {ROOT}.res/__init__.py "
                        "first)"],
        f"{ROOT}.res.q": [f"{ROOT}/sel.py:1: from .res.q import f"]}
    assert graph[f"{ROOT}.late"] == {}
    # a submodule importing a sibling runs no __init__.py: its package's has run
    assert set(graph[f"{ROOT}.res.core"]) == {f"{ROOT}.inf"}
    assert find_cycles(graph) == [[f"{ROOT}.inf", f"{ROOT}.sel", f"{ROOT}.res",
                                   f"{ROOT}.res.core", f"{ROOT}.inf"]]
    if not hasattr(os, "fork"):
        return
    # run, with the root empty: sel first runs res, core, inf, which takes h from sel before
    # sel defines it; inf first likewise takes g's module back; res and its modules import
    found = first_imports(pkg, tmp_path / "run")
    assert sorted(m for m, msg in found.items() if msg) == [f"{ROOT}.inf", f"{ROOT}.sel"]
    assert "partially initialized module" in found[f"{ROOT}.sel"]
    assert set(found) == {f"{ROOT}.{m}" for m in ("sel", "inf", "late", "res", "res.core",
                                                  "res.q")}
