"""Query formats (ncprobe.encoders.prompts) and IdioLink's query texts (ncprobe.retrieval.queries).

The expected strings are typed here from the protocol (``shared/idiolink/PROTOCOL.md``,
"Query modes" and "The paper's models"), not taken from the code under test.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ncprobe.data.idiolink import load_idiolink
from ncprobe.encoders.prompts import FORMAT_STYLES, GENERIC, QueryFormat
from ncprobe.errors import UsageError
from ncprobe.retrieval.queries import (
    INSTRUCTION,
    QUERY_MODES,
    document_text,
    parse_modes,
    query_text,
)

#: The protocol's instruction, typed from PROTOCOL.md.
PROTOCOL_INSTRUCTION = ("Based on the literal/idiomatic usage of the span '{span}' in the "
                        "query, retrieve documents that contain a span conveying the same "
                        "conceptual meaning.")
BGE_PROMPT = "Represent this sentence for searching relevant passages: "


def _expected(style: str, inst: str, text: str) -> str:
    """Each template of the protocol, written out by hand."""
    if style in ("generic", "e5_inline"):
        return "Instruct: " + inst + "\n" + "Query: " + text
    if style == "e5_inline_no_space":
        return "Instruct: " + inst + "\n" + "Query:" + text
    if style == "tart_sep":
        return inst + " [SEP] " + text
    if style == "bge_gemma":
        return "<instruct>" + inst + "\n" + "<query>" + text
    if style == "prompt_prefix":
        return BGE_PROMPT + text
    if style == "nomic_prefix":
        return "search_query: " + text
    if style == "instructor_pairs":
        return inst + "\n" + "Query: " + text
    assert style == "plain"
    return text


def _fmt(style: str, **kw) -> QueryFormat:
    return QueryFormat(style, prompt=BGE_PROMPT if style == "prompt_prefix" else "", **kw)


# --- QueryFormat --------------------------------------------------------------------------

def test_every_style_renders_the_protocols_template() -> None:
    assert set(FORMAT_STYLES) == {"generic", "e5_inline", "e5_inline_no_space", "tart_sep",
                                  "bge_gemma", "prompt_prefix", "nomic_prefix",
                                  "instructor_pairs", "plain"}
    inst, text = "Find the same meaning.", "He kicked the bucket."
    for style in FORMAT_STYLES:
        assert _fmt(style).instructed(inst, text) == _expected(style, inst, text), style
    assert GENERIC == QueryFormat() and GENERIC.style == "generic"


def test_prefixes_apply_where_the_protocol_says() -> None:
    e5 = QueryFormat("e5_inline", query_prefix="query: ", doc_prefix="passage: ")
    assert e5.query("a b") == "query: a b"
    assert e5.document("a b") == "passage: a b"
    # the query prefix belongs to the modes without an instruction
    assert e5.instructed("I", "a b") == "Instruct: I\nQuery: a b"
    nomic = QueryFormat("nomic_prefix", doc_prefix="search_document: ")
    assert nomic.document("x") == "search_document: x" and nomic.query("x") == "x"
    assert GENERIC.query("x") == "x" and GENERIC.document("x") == "x"


def test_bad_formats_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown query format style 'e5'") as e:
        QueryFormat("e5")
    assert all(s in str(e.value) for s in ("e5_inline", "tart_sep", "plain"))
    with pytest.raises(ValueError, match="needs the model's prompt"):
        QueryFormat("prompt_prefix")
    with pytest.raises(ValueError, match="takes no prompt"):
        QueryFormat("e5_inline", prompt="Represent: ")


def test_describe_is_one_short_line() -> None:
    assert QueryFormat("e5_inline_no_space").describe() == "e5_inline_no_space"
    bge = QueryFormat("prompt_prefix", prompt=BGE_PROMPT).describe()
    assert bge == 'prompt_prefix "Represent this sentence ..."'
    e5 = QueryFormat("e5_inline", query_prefix="query: ", doc_prefix="passage: ").describe()
    assert "\n" not in e5 and '"query: "' in e5 and '"passage: "' in e5


# --- query_text on real records ------------------------------------------------------------

@pytest.fixture(scope="module")
def val_queries(raw_dir: Path):
    """The first 40 queries of the val split (their spans occur once in the sentence)."""
    return load_idiolink("val", raw_dir).queries[:40]


def test_the_instruction_is_the_protocols() -> None:
    assert INSTRUCTION == PROTOCOL_INSTRUCTION
    assert QUERY_MODES == ("sentence", "span", "instruction_sentence", "instruction_span")


def test_texts_and_offsets_of_every_mode_and_format(val_queries) -> None:
    formats = [_fmt(s) for s in FORMAT_STYLES]
    formats.append(QueryFormat("e5_inline", query_prefix="query: ", doc_prefix="passage: "))
    for q in val_queries:
        assert q.sentence.count(q.span) == 1  # what makes the expected offsets below hold
        inst = PROTOCOL_INSTRUCTION.replace("{span}", q.span)
        for fmt in formats:
            got = {m: query_text(fmt, m, q.sentence, q.span, q.start, q.end)
                   for m in QUERY_MODES}
            for m, qt in got.items():
                if qt.span is not None:
                    assert qt.text[qt.span[0]:qt.span[1]] == q.span, (m, fmt)
            pre = fmt.query_prefix
            assert got["sentence"].text == pre + q.sentence and got["sentence"].span is None
            assert got["span"].text == pre + q.sentence
            assert got["span"].span == (len(pre) + q.start, len(pre) + q.end)
            instructed = _expected(fmt.style, inst, q.sentence)
            assert got["instruction_sentence"].text == instructed
            assert got["instruction_sentence"].span is None
            assert got["instruction_span"].text == instructed
            # the last occurrence: inside the sentence, which ends every template
            head = len(instructed) - len(q.sentence)
            assert got["instruction_span"].span == (head + q.start, head + q.end), fmt
            quoted = instructed.find(f"'{q.span}'")
            if fmt.style in ("prompt_prefix", "nomic_prefix", "plain"):
                assert quoted == -1  # these formats drop the instruction
            else:
                assert 0 <= quoted < got["instruction_span"].span[0]
            assert document_text(fmt, q.sentence) == fmt.doc_prefix + q.sentence


def test_query_text_refuses_bad_input() -> None:
    with pytest.raises(UsageError, match="unknown query mode 'spans'") as e:
        query_text(GENERIC, "spans", "a b", "b", 2, 3)
    assert "instruction_span" in str(e.value)
    with pytest.raises(UsageError, match="not at offsets"):
        query_text(GENERIC, "span", "a b", "b", 0, 1)


# --- parse_modes ----------------------------------------------------------------------------

def test_parse_modes() -> None:
    assert parse_modes("sentence") == ("sentence",)
    assert parse_modes("instruction_span, span") == ("instruction_span", "span")
    assert parse_modes(["span", "sentence"]) == ("span", "sentence")
    assert parse_modes("all") == ("sentence", "span", "instruction_sentence",
                                  "instruction_span")


@pytest.mark.parametrize(("given", "said"), [
    ("sentense", "unknown query mode 'sentense'.*Did you mean sentence"),
    ("instruction-span", "Did you mean instruction_span"),
    ("bm25", "unknown query mode 'bm25'"),
    ("span,span", "'span' is given twice"),
    ("all,span", "'span' is given twice.*all names every mode"),
    ("", "no query mode given"),
    ("span,,sentence", "an empty query mode"),
])
def test_parse_modes_errors(given: str, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        parse_modes(given)


def test_tests_without_their_family_are_refused_not_filled_in(raw_dir, tmp_path) -> None:
    """A tests table without the bound and family columns (a development version wrote it)
    is refused, naming the column: never filled in by guessing what the family was."""
    import ncprobe
    from ncprobe.errors import DataError
    from ncprobe.retrieval.results import RetrievalResults

    res = ncprobe.run("idiolink", models=["bm25"], split="val", idioms=["in the dock"],
                      n_boot=0, data_dir=raw_dir, progress=False)
    out = res.to_parquet(tmp_path / "r")
    tests = pd.read_parquet(out / "tests.parquet").drop(columns=["family", "family_size"])
    tests.to_parquet(out / "tests.parquet")
    with pytest.raises(DataError, match="family"):
        RetrievalResults.load(out, accept_edited=True)
