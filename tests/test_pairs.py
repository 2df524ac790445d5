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
    ("x,a b c,zero,1,syn,d,,", "span", "two integers"),
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
    f = tmp_path / "pairs.csv"
    f.write_text("nc,sentence,start,end,probe,substitute\n"
                 "eager beaver,he is a real eager beaver,3,5,syn,hard worker\n"   # 'real eager'
                 "grey matter,use your grey matter,2,4,syn,brain\n")
    stim = ncprobe.load_pairs(f, lang="en")
    assert len(stim.notes) == 1
    assert "1 original span(s) differ" in stim.notes[0] and "'real eager'" in stim.notes[0]
    assert "grey matter" not in stim.notes[0]
