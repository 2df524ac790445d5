"""The documentation: every page in the site's navigation, every repository link resolving.

The site itself is built by ``mkdocs build --strict`` in ``.ci/run`` (it checks the links and
anchors between pages, and the API reference against the docstrings); these checks need no
mkdocs and guard what the build cannot see: the Markdown files read on GitHub.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
#: the Markdown files people read in the repository, outside the site
REPOSITORY_PAGES = [REPO / "README.md", REPO / "examples" / "README.md",
                    REPO / "data" / "ncimp" / "README.md", REPO / "validation" / "README.md",
                    REPO / "figures" / "README.md"]


def _headings(path: Path) -> set[str]:
    """The anchors GitHub and MkDocs give the headings of ``path`` (lower case, spaces to -),
    with those of the files it includes (``--8<-- "path:section"``, from the repository root)."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    found = set()
    for h in re.findall(r"^#+ (.+)$", text, flags=re.M):
        explicit = re.search(r"\{#([\w-]+)\}\s*$", h)  # attr_list: ## Title {#anchor}
        found.add(explicit.group(1) if explicit
                  else re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-"))
    for included in re.findall(r'^--8<-- "([^":]+)(?::[\w-]+)?"$', text, flags=re.M):
        found |= _headings(REPO / included)
    return found


@pytest.mark.parametrize("page", REPOSITORY_PAGES + sorted(DOCS.rglob("*.md")),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in _headings(linked):
            broken.append(target)
    assert not broken, broken


def test_the_site_lists_every_page() -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*([\w/-]+\.md)\s*$", nav, flags=re.M))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert listed == pages, (sorted(pages - listed), sorted(listed - pages))


def test_the_readme_is_a_first_contact_with_a_table_of_contents() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", readme, flags=re.M)
    assert sections[0] == "Contents"
    listed = re.findall(r"^- \[([^\]]+)\]\(#", readme.split("## Contents", 1)[1].split("\n## ")[0],
                        flags=re.M)
    assert listed == sections[1:]
    # what works today leads: a clone or a wheel, not a package index ncprobe is not on
    install = readme.split("## Install\n", 1)[1].split("\n## ", 1)[0]
    assert "pip install ncprobe" not in install and "pip install -e ." in install
    assert "download.pytorch.org/whl/cpu" in install


def test_method_sections_cited_in_the_code_exist() -> None:
    """Docstrings and messages cite the method page as ``method §N``: each N is a heading."""
    cited = set()
    for src in (REPO / "ncprobe").rglob("*.py"):
        cited |= set(re.findall(r"method §(\d)", src.read_text(encoding="utf-8")))
    headings = set(re.findall(r"^## §(\d) ", (DOCS / "method.md").read_text(encoding="utf-8"),
                              flags=re.M))
    assert cited and cited <= headings, sorted(cited - headings)
