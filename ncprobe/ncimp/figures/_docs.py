"""The paragraphs that the figures' docstrings share, written once (seaborn's
``DocstringComponents`` is the model).

A figure function's docstring names a shared paragraph by a placeholder on a line of its
own, ``{return_notes}``; :func:`fill_doc` replaces it with the paragraph, indented as the
placeholder is. Only the names of :data:`FIGURE_DOCS` are replaced: any other brace in a
docstring is left as it is.
"""

from __future__ import annotations

import re
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)


class DocstringComponents:
    """Named docstring paragraphs (``components.name`` reads one), and :meth:`fill`, the
    decorator that puts them into a function's docstring."""

    def __init__(self, paragraphs: dict[str, str]) -> None:
        self._paragraphs = {name: text.strip("\n") for name, text in paragraphs.items()}

    def __getattr__(self, name: str) -> str:
        try:
            return self._paragraphs[name]
        except KeyError:
            raise AttributeError(name) from None

    def fill_text(self, doc: str, *, strict: bool = True) -> str:
        """``doc`` with each ``{name}`` line replaced by that paragraph, indented as the
        placeholder is (also for a docstring read without importing it: the API pages'
        griffe extension calls this, with ``strict=False``).

        Raises:
            KeyError: (``strict``) a placeholder that names no paragraph (a typo in a
                docstring); with ``strict=False`` it is left as it is.
        """
        def paragraph(match: re.Match) -> str:
            indent, name = match.group(1), match.group(2)
            if name not in self._paragraphs and not strict:
                return match.group(0)
            return "\n".join(indent + line if line else line
                             for line in self._paragraphs[name].split("\n"))

        return re.sub(r"^([ \t]*)\{(\w+)\}$", paragraph, doc, flags=re.MULTILINE)

    def fill(self, func: F) -> F:
        """``func`` with its docstring filled (:meth:`fill_text`): the decorator."""
        func.__doc__ = self.fill_text(func.__doc__ or "")
        return func


#: The shared paragraphs of the figures' docstrings.
FIGURE_DOCS = DocstringComponents({
    # the figures of one panel per model that can be drawn into a caller's Axes
    "ax_one_model": """
``ax=`` is accepted when the results hold one model with values for this figure:
its panel is drawn into the given Axes (no ideal panel), whose figure is returned.
""",
    "return_notes": """
``return_notes=True`` returns ``(fig, notes)``.
""",
    # figures 4, 6, 7 and 9: the per-class tests marked over the boxes
    "class_marks": """
Brackets over the boxes mark the pairs of classes that differ: two-sided Mann-Whitney U,
``correct``-ed (default Holm) across the pairs of the per-class tests table
(:func:`class_test_marks`); ``*`` / ``**`` / ``***``: corrected p <= 0.05 / 0.01 / 0.001.
""",
})

#: :meth:`DocstringComponents.fill` of :data:`FIGURE_DOCS`: the figures' decorator.
fill_doc = FIGURE_DOCS.fill

__all__ = ["FIGURE_DOCS", "DocstringComponents", "fill_doc"]
