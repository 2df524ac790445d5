"""docs/extending.md cannot drift from the example it walks through: every code block it says
is a file of the example is that file's text (an excerpt: lines of it, in order, as they
are), and every test file it cites exists."""

from __future__ import annotations

import re
from pathlib import Path

import ncprobe

ROOT = Path(ncprobe.__file__).resolve().parent.parent
DOC = ROOT / "docs" / "extending.md"
#: ``<!-- file: PATH -->`` or ``<!-- excerpt: PATH -->`` on the line before a fenced block.
MARKED = re.compile(r"<!-- (file|excerpt): (\S+) -->\n```[a-z]*\n(.*?)\n```", re.S)


def marked_blocks(text: str) -> list[tuple[str, str, str]]:
    """``(kind, path, block)`` of every marked code block of ``text``."""
    return [(m.group(1), m.group(2), m.group(3)) for m in MARKED.finditer(text)]


def test_the_marker_finds_its_blocks() -> None:
    text = ("x\n<!-- file: a.toml -->\n```toml\n[a]\nb = 1\n```\n\n<!-- excerpt: b.py -->\n"
            "```python\nclass B:\n    pass\n```\n```python\nnot = 'marked'\n```\n")
    assert marked_blocks(text) == [("file", "a.toml", "[a]\nb = 1"),
                                   ("excerpt", "b.py", "class B:\n    pass")]


def test_every_file_the_doc_shows_is_the_examples_file() -> None:
    text = DOC.read_text(encoding="utf-8")
    blocks = marked_blocks(text)
    # as many marked blocks as markers: a marker whose block the pattern missed would pass
    assert len(blocks) == text.count("<!-- file: ") + text.count("<!-- excerpt: ")
    assert {kind for kind, _, _ in blocks} == {"file", "excerpt"}
    shown = set()
    for kind, path, block in blocks:
        assert path.startswith("examples/ncprobe-headsim/"), path
        source = (ROOT / path).read_text(encoding="utf-8")
        if kind == "file":
            assert block == source.rstrip("\n"), f"{path}: the doc's copy differs"
        else:
            assert f"\n{block}\n" in f"\n{source}", f"{path}: the doc's excerpt is not in it"
        shown.add(path)
    # the pyproject (with its entry point) is shown whole
    assert "examples/ncprobe-headsim/pyproject.toml" in shown


def test_every_file_of_the_example_is_in_the_docs_tree() -> None:
    text = DOC.read_text(encoding="utf-8")
    tree = text[text.index("examples/ncprobe-headsim/\n"):]
    tree = tree[:tree.index("```")]
    example = ROOT / "examples" / "ncprobe-headsim"
    files = sorted(p.relative_to(example).as_posix() for p in example.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts
                   and not any(part.endswith(".egg-info") or part == "build" for part in p.parts))
    assert files and all(Path(f).name in tree for f in files), (files, tree)


def test_every_test_file_the_doc_cites_exists() -> None:
    cited = set(re.findall(r"tests/[\w/]+\.py", DOC.read_text(encoding="utf-8")))
    assert "tests/probes/test_plugins.py" in cited
    missing = sorted(c for c in cited if not (ROOT / c).is_file())
    assert not missing, missing
