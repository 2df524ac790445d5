"""A griffe extension for the API reference: ncprobe's docstrings, read as they are written.

ncprobe's docstrings are Google style, with three habits griffe does not read as meant:

- doctests under ``Example:``, as the Google style guide writes it: griffe reads only
  ``Examples:`` as a section of examples, and renders ``Example:`` as a note whose ``>>>``
  lines are Markdown, not code;
- Sphinx roles (``:func:`~ncprobe.compute```), which Markdown shows as they are typed: here
  they become inline code, the name as Sphinx would show it;
- parameters that share one description (``n_boot, seed: the bootstrap ...``), which griffe
  would list as one parameter named ``n_boot, seed``: here each gets the description.

The docstrings are rewritten before griffe parses them; the source files are not touched.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)
# :func:`x`, :class:`~a.b.C`, :data:`...`, :mod:`...`, :meth:`...`, :attr:`...`, :exc:`...`
_ROLE = re.compile(r":(?:py:)?(?:func|class|data|mod|meth|attr|exc|obj|const):`(~?)([^`]+)`")
_SECTION = re.compile(r"^(\s*)(Args|Arguments|Parameters|Keyword Args|Keyword Arguments):\s*$")
_GROUPED = re.compile(r"^(\s+)(\w+(?:\s*,\s*\w+)+)(\s*\([^)]*\))?:(.*)$")


def _role(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


def _split_grouped(text: str) -> str:
    """One entry per name where an Args entry names several parameters."""
    lines, out, i = text.splitlines(), [], 0
    in_args, section_indent = False, 0
    while i < len(lines):
        line = lines[i]
        indent = len(line) - len(line.lstrip())
        section = _SECTION.match(line)
        if section:
            in_args, section_indent = True, len(section.group(1))
            out.append(line)
            i += 1
            continue
        if in_args and line.strip() and indent <= section_indent:
            in_args = False
        grouped = _GROUPED.match(line) if in_args else None
        if grouped is None:
            out.append(line)
            i += 1
            continue
        lead, names, annotation, first = grouped.groups()
        body, i = [], i + 1
        while i < len(lines) and (not lines[i].strip()
                                  or len(lines[i]) - len(lines[i].lstrip()) > len(lead)):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():  # a blank line ends the entry, not its text
            i -= 1
            body.pop()
        for name in (n.strip() for n in names.split(",")):
            out.append(f"{lead}{name}{annotation or ''}:{first}")
            out.extend(body)
    return "\n".join(out)


def _imported_doc(obj: griffe.Object) -> str | None:
    """The docstring a class has once its module is imported, where ncprobe writes part of
    it then: a config class whose ``Attributes`` come from its fields' help
    (:func:`ncprobe.config.document_fields`); else ``None``."""
    if not obj.is_class:
        return None
    import importlib
    import inspect

    runtime = getattr(importlib.import_module(obj.module.path), obj.name, None)
    if not getattr(runtime, "_doc_from_fields", False):
        return None
    return inspect.cleandoc(runtime.__doc__ or "")


class ExampleSections(griffe.Extension):
    """Rewrite a docstring's ``Example:``, Sphinx roles and grouped parameters (see above);
    a config class's docstring is the one it has when imported."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            # the figures' shared paragraphs ({return_notes} ...), filled as at import time
            from ncprobe.ncimp.figures._docs import FIGURE_DOCS

            text = _imported_doc(obj) or obj.docstring.value
            text = FIGURE_DOCS.fill_text(text, strict=False)
            text = _EXAMPLE.sub(r"\1Examples:", text)
            text = _ROLE.sub(_role, text)
            obj.docstring.value = _split_grouped(text)
