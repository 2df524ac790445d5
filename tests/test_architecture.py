"""The package's layout rules (issue 11): one version source, no upward imports."""

from __future__ import annotations

import ast
import configparser
from importlib.metadata import version
from pathlib import Path

import ncprobe

PKG = Path(ncprobe.__file__).parent


def test_version_comes_from_the_package_metadata() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(PKG.parent / "setup.cfg")
    assert ncprobe.__version__ == version("ncprobe") == cfg["metadata"]["version"]


def test_no_module_imports_names_from_the_package_root() -> None:
    # `from . import __version__` in ncprobe/cli.py (or `from .. import x` in a subpackage)
    # makes the module depend on ncprobe/__init__.py, which imports nearly everything
    submodules = {p.stem for p in PKG.glob("*.py")} | {p.name for p in PKG.iterdir()
                                                       if (p / "__init__.py").is_file()}
    upward = []
    for path in sorted(PKG.rglob("*.py")):
        depth = len(path.relative_to(PKG).parts) - 1  # 0 for ncprobe/x.py
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == depth + 1 and not node.module:
                names = [a.name for a in node.names if a.name not in submodules]
                if names and path.name != "__init__.py":
                    upward.append(f"{path.relative_to(PKG.parent)}: {', '.join(names)}")
    assert not upward, upward


def test_docs_architecture_lists_every_module() -> None:
    page = (PKG.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## The modules\n", 1)[1].split("\n## ", 1)[0]
    tree = section.split("```text\n", 1)[1].split("```", 1)[0]
    listed, stack = set(), []
    for line in tree.splitlines()[1:]:  # below "ncprobe/"
        depth = (len(line) - len(line.lstrip(" "))) // 2 - 1
        name = line.split()[0]
        stack[depth:] = [name]
        if name.endswith(".py"):
            listed.add("/".join(s.rstrip("/") for s in stack))
    modules = {str(p.relative_to(PKG)) for p in PKG.rglob("*.py")
               if p.name != "__init__.py" and "__pycache__" not in p.parts}
    assert listed == modules, (sorted(listed - modules), sorted(modules - listed))
