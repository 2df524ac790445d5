"""The data layer's seams: loading NCIMP imports none of the probe generator, and the modules
of user data (splice, rows, frequency, probes, pairs, generate) use each other's public names
only."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import ncprobe

DATA = Path(ncprobe.__file__).parent / "data"
#: the generator, its probe builders, its frequency data and the optional package they use
GENERATOR = ("ncprobe.data.generate", "ncprobe.data.probes", "ncprobe.data.frequency",
             "wordfreq")


def _imported_after(statement: str) -> list[str]:
    """The modules of :data:`GENERATOR` that ``statement`` imports, in a fresh interpreter."""
    code = (f"import sys, json\n{statement}\n"
            f"print(json.dumps([m for m in {list(GENERATOR)!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("statement", [
    "import ncprobe.data.ncimp",
    "from ncprobe.data import load_stimuli, load_pairs",
    "import ncprobe",
])
def test_loading_data_imports_no_generator(statement):
    assert _imported_after(statement) == []


def test_generate_pairs_is_still_where_it_was():
    from ncprobe.data.generate import generate_pairs

    assert ncprobe.generate_pairs is generate_pairs
    assert ncprobe.data.generate_pairs is generate_pairs
    assert "generate_pairs" in ncprobe.__all__ and "generate_pairs" in ncprobe.data.__all__
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        ncprobe.data.no_such_name  # noqa: B018


@pytest.mark.parametrize("module", ["splice", "rows", "frequency", "probes", "pairs",
                                    "generate", "ncs"])
def test_user_data_modules_import_no_private_name_of_another_module(module):
    tree = ast.parse((DATA / f"{module}.py").read_text(encoding="utf-8"))
    private = [f"{node.module}.{alias.name}" for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and node.level
               for alias in node.names if alias.name.startswith("_")]
    assert private == []
