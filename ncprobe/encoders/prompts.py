"""How a retrieval model wants its queries and documents written: its query format.

Instruction-tuned embedding models were trained with a fixed way of putting an instruction
before a query (``Instruct: ...\\nQuery: ...`` for E5 and Qwen3-Embedding, ``<instruct>``
tags for BGE-Gemma2, a fixed prompt for BGE-en-v1.5, ...), and some prefix every query or
document (``query: `` / ``passage: `` for e5-base-v2). A :class:`QueryFormat` holds one
model's way, renders the texts, and knows nothing of any benchmark: the instruction is
whatever the caller passes (:mod:`ncprobe.retrieval.queries` gives IdioLink's). A model's
format is part of its registry entry (:attr:`ncprobe.encoders.registry.ModelSpec.query_format`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FORMAT_STYLES", "GENERIC", "QueryFormat"]

#: Each style -> its template (``{inst}`` the instruction, ``{text}`` the query,
#: ``{prompt}`` the model's fixed prompt).
_TEMPLATES: dict[str, str] = {
    "generic": "Instruct: {inst}\nQuery: {text}",
    "e5_inline": "Instruct: {inst}\nQuery: {text}",
    "e5_inline_no_space": "Instruct: {inst}\nQuery:{text}",
    "tart_sep": "{inst} [SEP] {text}",
    "bge_gemma": "<instruct>{inst}\n<query>{text}",
    "prompt_prefix": "{prompt}{text}",
    "nomic_prefix": "search_query: {text}",
    "instructor_pairs": "{inst}\nQuery: {text}",
    "plain": "{text}",
}
#: The query format styles, in the order of the documentation.
FORMAT_STYLES: tuple[str, ...] = tuple(_TEMPLATES)
#: The longest prompt :meth:`QueryFormat.describe` shows whole.
_SHOWN_PROMPT = 24


@dataclass(frozen=True)
class QueryFormat:
    """One model's way of writing an instructed query, a plain query and a document.

    Styles (``{inst}`` the instruction, ``{text}`` the query sentence):

    * ``generic``: ``Instruct: {inst}\\nQuery: {text}`` (models without a format of their own);
    * ``e5_inline``: the same text (E5, GTE-Qwen2, SFR-Mistral);
    * ``e5_inline_no_space``: ``Instruct: {inst}\\nQuery:{text}`` (Qwen3-Embedding, Lychee,
      Linq, Nemotron);
    * ``tart_sep``: ``{inst} [SEP] {text}`` (TART);
    * ``bge_gemma``: ``<instruct>{inst}\\n<query>{text}`` (BGE multilingual-gemma2);
    * ``prompt_prefix``: ``{prompt}{text}``: the instruction is replaced by the model's fixed
      ``prompt`` (BGE-en-v1.5);
    * ``nomic_prefix``: ``search_query: {text}``: the instruction is dropped (Nomic);
    * ``instructor_pairs``: rendered ``{inst}\\nQuery: {text}``. The Instructor library
      encodes the pair (instruction, text) itself and leaves the instruction's tokens out of
      the pooling; that pair encoding is not reproduced here: the instruction's tokens are
      part of the text like any other;
    * ``plain``: ``{text}``: the instruction is dropped.

    Attributes:
        style: one of :data:`FORMAT_STYLES`.
        prompt: the fixed prompt of ``prompt_prefix`` (required by it, refused by the others).
        query_prefix: prepended to the query in the modes without an instruction
            (e5-base-v2: ``query: ``).
        doc_prefix: prepended to every document (e5-base-v2: ``passage: ``, Nomic:
            ``search_document: ``).

    Raises:
        ValueError: an unknown style, or a ``prompt`` missing for ``prompt_prefix`` or
            given to another style.

    Example:
        >>> QueryFormat("tart_sep").instructed("Find it.", "A sentence.")
        'Find it. [SEP] A sentence.'
    """

    style: str = "generic"
    prompt: str = ""
    query_prefix: str = ""
    doc_prefix: str = ""

    def __post_init__(self) -> None:
        if self.style not in _TEMPLATES:
            raise ValueError(f"unknown query format style {self.style!r}; the styles are "
                             + ", ".join(FORMAT_STYLES))
        if self.style == "prompt_prefix" and not self.prompt:
            raise ValueError("query format style 'prompt_prefix' needs the model's prompt "
                             "(prompt='...')")
        if self.style != "prompt_prefix" and self.prompt:
            raise ValueError(f"query format style {self.style!r} takes no prompt (only "
                             "'prompt_prefix' does); leave prompt out")

    def instructed(self, instruction: str, text: str) -> str:
        """The query ``text`` with ``instruction``, as this format writes them.

        ``query_prefix`` is not added (it belongs to the modes without an instruction).
        """
        return _TEMPLATES[self.style].format(inst=instruction, text=text, prompt=self.prompt)

    def query(self, text: str) -> str:
        """The query ``text`` without an instruction: ``query_prefix + text``."""
        return self.query_prefix + text

    def document(self, text: str) -> str:
        """A document as the model encodes it: ``doc_prefix + text``."""
        return self.doc_prefix + text

    def describe(self) -> str:
        """One short line for listings: the style, its prompt (shortened), any prefixes.

        Example:
            >>> QueryFormat("e5_inline", query_prefix="query: ", doc_prefix="passage: ").describe()
            'e5_inline, query "query: ", document "passage: "'
        """
        out = self.style
        if self.prompt:
            shown = self.prompt
            if len(shown) > _SHOWN_PROMPT:
                shown = " ".join(shown.split()[:3]) + " ..."
            out += f' "{shown}"'
        if self.query_prefix:
            out += f', query "{self.query_prefix}"'
        if self.doc_prefix:
            out += f', document "{self.doc_prefix}"'
        return out


#: The format of models without one of their own.
GENERIC = QueryFormat()
