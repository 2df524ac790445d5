"""Bring-your-own minimal pairs (CSV and JSONL): splicing and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ncprobe

CSV = """nc,sentence,start,end,probe,substitute,comp,class
grey matter,use your grey matter for once,2,4,original,,0.5,I
grey matter,use your grey matter for once,2,4,syn,brain,0.5,I
grey matter,use your grey matter for once,2,4,rand,police car,0.5,I
grey matter,use your grey matter for once,2,4,rand,city sound,0.5,I
economic aid,they sent economic aid .,2,4,wordssyn,financial help,4.8,C
"""


def test_csv_pairs(tmp_path: Path) -> None:
    f = tmp_path / "p.csv"
    f.write_text(CSV)
    stim = ncprobe.load_pairs(f, lang="en")
    texts = [(s.probe, s.variant, s.text, s.span) for s in stim]
    assert texts == [
        ("original", 1, "use your grey matter for once", (2, 4)),
        ("syn", 1, "use your brain for once", (2, 3)),
        ("rand", 1, "use your police car for once", (2, 4)),
        ("rand", 2, "use your city sound for once", (2, 4)),
        ("original", 1, "they sent economic aid .", (2, 4)),
        ("wordssyn", 1, "they sent financial help .", (2, 4)),
    ]
    assert stim.ncs[("en", "economic aid")].comp == 4.8
    assert stim.ncs[("en", "grey matter")].cls == "I"
    assert all(s.spliced for s in stim if s.probe != "original")


def test_jsonl_pairs_with_span(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    rows = [{"nc": "pão-duro", "lang": "pt", "context": "N", "sentence": "Este é um pão-duro .",
             "span": [3, 4], "probe": "syn", "substitute": "avarento"},
            {"nc": "pão-duro", "lang": "pt", "context": "N", "sentence": "Este é um pão-duro .",
             "span": [3, 4], "probe": "comp-head", "substitute": "pão"}]
    f.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    stim = ncprobe.load_pairs(f)
    assert [s.text for s in stim] == ["Este é um pão-duro .", "Este é um avarento .",
                                      "Este é um pão ."]
    assert stim[1].char_span == (10, 18)


@pytest.mark.parametrize("line,column,message", [
    ("x,a b c,1,9,syn,d,,", None, "outside the sentence"),
    ("x,a b c,2,1,syn,d,,", None, "empty or outside"),
    ("x,a b c,0,1,synonym,d,,", "probe", "unknown probe"),
    ("x,a b c,0,1,syn,,,", "substitute", "empty substitute"),
    ("x,a b c,zero,1,syn,d,,", "start", "two integers"),
    ("x,a b c,0,1,syn,d,,Q", "class", "not one of"),
])
def test_bad_rows(tmp_path: Path, line: str, column, message: str) -> None:
    f = tmp_path / "p.csv"
    f.write_text(CSV.splitlines()[0] + "\n" + line + "\n")
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_pairs(f)
    assert message in str(e.value)
    if column:
        assert e.value.column == column and e.value.row == 1


def test_rows_of_one_context_must_agree(tmp_path: Path) -> None:
    f = tmp_path / "p.csv"
    f.write_text(CSV.splitlines()[0] + "\nx,a b c,0,1,syn,d,,\nx,a b e,0,1,rand,f,,\n")
    with pytest.raises(ncprobe.DataError, match="differs from the first row"):
        ncprobe.load_pairs(f)


def test_an_original_span_that_is_not_the_nc_is_noted(tmp_path):
    # an inflected form (the NC's words occur nowhere else in the sentence) is kept, noted;
    # a span beside the NC's words is refused (tests/data/test_pairs_checks.py)
    f = tmp_path / "pairs.csv"
    f.write_text("nc,sentence,start,end,probe,substitute\n"
                 "eager beaver,they are real eager beavers,3,5,syn,hard workers\n"
                 "grey matter,use your grey matter,2,4,syn,brain\n")
    stim = ncprobe.load_pairs(f, lang="en")
    assert len(stim.notes) == 1
    assert "1 original span(s) differ" in stim.notes[0] and "'eager beavers'" in stim.notes[0]
    assert "grey matter" not in stim.notes[0]


# --- what load_pairs refuses (each names the file, the row and the column) -------------------

HEAD = "nc,sentence,start,end,probe,substitute,comp\n"


def _csv(tmp_path: Path, body: str, name: str = "p.csv") -> Path:
    f = tmp_path / name
    f.write_text(HEAD + body, "utf-8")
    return f


def _jsonl(tmp_path: Path, *rows) -> Path:
    f = tmp_path / "p.jsonl"
    f.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return f


@pytest.mark.parametrize("comp", ["6", "-0.5", "5.01", "nan", "inf", "-inf"])
def test_comp_must_be_finite_and_on_the_scale(tmp_path: Path, comp: str) -> None:
    f = _csv(tmp_path, f"x,a b c,0,1,syn,d,0.5\ny,a b c,0,1,syn,d,{comp}\n")
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_pairs(f)
    assert (e.value.row, e.value.column) == (2, "comp") and "scale 0-5" in str(e.value)


def test_comp_scale_can_be_declared(tmp_path: Path) -> None:
    from ncprobe.errors import UsageError

    f = _csv(tmp_path, "x,a b c,0,1,syn,d,6\ny,a b c,0,1,syn,d,1\n")
    stim = ncprobe.load_pairs(f, lang="en", scale=(1, 7))
    assert stim.ncs[("en", "x")].comp == 6.0
    with pytest.raises(ncprobe.DataError, match="scale 1-7"):
        ncprobe.load_pairs(_csv(tmp_path, "x,a b c,0,1,syn,d,0.5\n"), scale=(1, 7))
    for bad in ((5, 0), (0, float("inf")), (1,), "0-5"):
        with pytest.raises(UsageError):
            ncprobe.load_pairs(f, scale=bad)


def test_a_row_repeated_exactly_is_refused(tmp_path: Path) -> None:
    f = _csv(tmp_path, "x,a b c,0,1,syn,d,1\nx,a b c,0,1,rand,e,1\nx,a b c,0,1,syn,d,1\n")
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_pairs(f)
    assert e.value.row == 3 and "repeats row 1 exactly" in str(e.value)


def test_a_probe_variant_given_twice_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "p.csv"
    f.write_text("nc,sentence,start,end,probe,substitute,variant\n"
                 "x,a b c,0,1,rand,d,1\nx,a b c,0,1,rand,e,2\nx,a b c,0,1,rand,f,1\n")
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_pairs(f)
    assert (e.value.row, e.value.column) == (3, "variant")
    assert "rand variant 1 of 'x' in context S1 is already given by row 1" in str(e.value)


@pytest.mark.parametrize("sentence", [["a", "b", "c"], 5, {"text": "a b c"}, True])
def test_a_sentence_that_is_not_a_string_is_refused(tmp_path: Path, sentence) -> None:
    f = _jsonl(tmp_path, {"nc": "x", "sentence": "a b c", "span": [0, 1], "probe": "syn",
                          "substitute": "d"},
               {"nc": "y", "sentence": sentence, "span": [0, 1], "probe": "syn",
                "substitute": "d"})
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_pairs(f)
    assert (e.value.row, e.value.column) == (2, "sentence") and "must be a string" in str(
        e.value)


@pytest.mark.parametrize("span", [[1], [1, 2, 3], ["a", 2], 1.5, True, [True, 2], [0, 2.5],
                                  "[0, 2.5]", [0.0, 2], "[1, 2, 3]", "x"])
def test_a_malformed_span_is_refused(tmp_path: Path, span) -> None:
    f = _jsonl(tmp_path, {"nc": "x", "sentence": "a b c", "span": span, "probe": "syn",
                          "substitute": "d"})
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_pairs(f)
    assert (e.value.row, e.value.column) == (1, "span") and "two integers" in str(e.value)


def test_span_and_start_end_must_agree(tmp_path: Path) -> None:
    row = {"nc": "b c", "sentence": "a b c", "probe": "syn", "substitute": "d"}
    f = _jsonl(tmp_path, {**row, "span": [1, 3], "start": 0, "end": 2})
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_pairs(f)
    assert e.value.column == "span" and "disagree" in str(e.value)
    f = _jsonl(tmp_path, {**row, "span": [1, 3], "start": 1, "end": 3})
    assert ncprobe.load_pairs(f)[1].text == "a d"


def test_csv_parse_errors_name_the_row(tmp_path: Path) -> None:
    f = _csv(tmp_path, "x,a b c,0,1,syn,d,1\nx,a b c,0,1,rand,e,1,extra\n")
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_pairs(f)
    assert e.value.row == 2 and str(f) in str(e.value) and "8 fields" in str(e.value)
    f = _csv(tmp_path, 'x,a b c,0,1,syn,d,1\nx,"a b c,0,1,rand,e,1\n')
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_pairs(f)
    assert e.value.row == 2 and "never closed" in str(e.value)


def test_encoding_errors_name_the_line(tmp_path: Path) -> None:
    f = tmp_path / "p.csv"
    f.write_bytes((HEAD + "x,a b c,0,1,syn,d,1\ncafé,o café,1,2,syn,chá,1\n").encode("latin-1"))
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_pairs(f)
    assert "line 3" in str(e.value) and "UTF-8" in str(e.value) and str(f) in str(e.value)
    f = tmp_path / "p.jsonl"
    f.write_bytes(b'{"nc": "x", "sentence": "a b", "span": [0, 1], "probe": "syn", '
                  b'"substitute": "d"}\n\n{"nc": "caf\xe9"}\n')
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_pairs(f)
    assert e.value.row == 3 and "UTF-8" in str(e.value)


def test_text_is_normalised_to_nfc(tmp_path: Path) -> None:
    import unicodedata

    nfd = lambda t: unicodedata.normalize("NFD", t)  # noqa: E731
    assert nfd("café") != "café"
    f = tmp_path / "p.csv"
    f.write_text("nc,sentence,start,end,probe,substitute\n"
                 f"café quente,{nfd('o café quente .')},1,3,syn,{nfd('bebida açucarada')}\n",
                 "utf-8")
    stim = ncprobe.load_pairs(f, lang="pt")
    assert stim.notes == []  # the span holds the NC: no "differ from their nc key" note
    assert [s.text for s in stim] == ["o café quente .", "o bebida açucarada ."]
    assert all(unicodedata.is_normalized("NFC", s.text) for s in stim)
