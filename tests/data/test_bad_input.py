"""Bad input: every error names the file, the row and the column, and says what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import ncprobe
from ncprobe.cli import main
from ncprobe.data.ncimp import NAT_FILE, NEUTRAL_FILE

PT_S2 = NAT_FILE.format(LANG="PT", k=2)
PT_NEU = NEUTRAL_FILE.format(LANG="PT")


def _edit(data_dir: Path, rel: str, edit) -> None:
    path = data_dir / rel
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df = edit(df)
    df.to_csv(path, index=False)


def _set(row: int, column: str, value: str):
    def edit(df):
        df.loc[row - 1, column] = value
        return df
    return edit


@pytest.mark.parametrize("column,value,message", [
    ("synonym both_tag", "[False, True", "unparsable tag"),
    ("synonym both_tag", "[0, 1]", "not a list of booleans"),
    ("synonym both_tag", "[True, True]", "tag has 2 entries but the sentence has"),
])
def test_bad_tags(data_copy: Path, column: str, value: str, message: str) -> None:
    _edit(data_copy, PT_S2, _set(7, column, value))
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_stimuli("pt", contexts="S2", data_dir=data_copy,
                              accept_modified=True)
    err = e.value
    assert (err.file, err.row, err.column) == (PT_S2, 7, column)
    assert message in str(err) and "row 7" in str(err)


def _tag_for(df: pd.DataFrame, row: int, column: str, positions) -> str:
    n = len(df.loc[row - 1, column].split())
    return str([i in positions for i in range(n)])


def test_empty_and_non_contiguous_span(data_copy: Path) -> None:
    df = pd.read_csv(data_copy / PT_NEU, dtype=str, keep_default_na=False)
    _edit(data_copy, PT_NEU, _set(3, "synonym for compound_tag",
                                  _tag_for(df, 3, "synonym for compound", set())))
    _edit(data_copy, PT_NEU, _set(5, "original head only_tag",
                                  _tag_for(df, 5, "original head only", {0, 2})))
    with pytest.raises(ncprobe.DataErrors) as e:
        ncprobe.load_stimuli("pt", contexts="neut", data_dir=data_copy, collect=True,
                              accept_modified=True)
    msgs = {(x.row, x.column): x.reason for x in e.value.errors}
    assert "empty span" in msgs[(3, "synonym for compound_tag")]
    assert "non-contiguous span" in msgs[(5, "original head only_tag")]


def test_span_that_does_not_hold_the_phrase(data_copy: Path) -> None:
    _edit(data_copy, PT_NEU, _set(4, "only mwe synonym", "algo diferente"))
    with pytest.raises(ncprobe.DataError, match="column 'only mwe synonym' says 'algo diferente'"):
        ncprobe.load_stimuli("pt", contexts="neut", data_dir=data_copy,
                              accept_modified=True)


def test_missing_column_and_duplicate_nc(data_copy: Path) -> None:
    _edit(data_copy, PT_S2, lambda df: df.drop(columns=["nc rand freq sentence3"]))
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_stimuli("pt", contexts="S2", data_dir=data_copy,
                              accept_modified=True)
    assert e.value.column == "nc rand freq sentence3" and "missing column" in str(e.value)

    def dup(df):
        df.loc[9, "compound"] = df.loc[8, "compound"]
        return df
    _edit(data_copy, PT_NEU, dup)
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_stimuli("pt", contexts="neut", data_dir=data_copy,
                              accept_modified=True)
    assert (e.value.row, e.value.column) == (10, "compound") and "duplicate NC" in str(e.value)


def test_bad_score(data_copy: Path) -> None:
    rel = "marcospln+nctti/data/data_pt.tsv"
    path = data_copy / rel
    df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    df.loc[11, "MeanS2"] = "n/a"
    df.to_csv(path, sep="\t", index=False)
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_stimuli("pt", contexts="neut", data_dir=data_copy,
                              accept_modified=True)
    assert (e.value.file, e.value.row, e.value.column) == (rel, 12, "MeanS2")


def test_missing_file_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ncprobe.DataError, match="ncprobe data download"):
        ncprobe.load_stimuli("pt", contexts="neut", data_dir=tmp_path)


@pytest.mark.slow
def test_data_check_lists_every_error(data_copy: Path, capsys) -> None:
    _edit(data_copy, PT_S2, _set(2, "synonym both_tag", "[True"))
    _edit(data_copy, PT_S2, _set(4, "nc rand freq sentence1_tag", "[]"))
    assert main(["data", "check", "--data-dir", str(data_copy)]) == 3
    err = capsys.readouterr().err
    assert "row 2" in err and "'synonym both_tag'" in err
    assert "row 4" in err and "'nc rand freq sentence1_tag'" in err
    assert "content differs from the pinned upstream file" in err


def test_unknown_options_are_rejected(raw_dir: Path) -> None:
    with pytest.raises(ValueError, match="unknown context 'S4'"):
        ncprobe.load_stimuli("pt", contexts="S4", data_dir=raw_dir)
    with pytest.raises(ValueError, match="unknown probe"):
        ncprobe.load_stimuli("pt", probes="synonym", data_dir=raw_dir)
    with pytest.raises(ValueError, match="load_pairs"):
        ncprobe.load_stimuli("de", data_dir=raw_dir)


def test_info_json(raw_dir: Path, capsys) -> None:
    assert main(["data", "info", "--json", "--data-dir", str(raw_dir)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["languages"]["pt"]["ncs"] == 180
    assert info["languages"]["en"]["classes"] == {"I": 103, "PC": 89, "C": 88}
    assert any("splicing" in w for w in info["warnings"])
