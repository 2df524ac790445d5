"""Loading the stimuli fast without losing a check (issue 10).

* ``compute`` neither reads nor needs the scores xlsx (no score comes from it): parsing it cost
  a third of a second on every run. ``data info`` and ``data check`` still cross-check it
  against NCTTI and still name a broken workbook.
* The loaders walk the parsed rows directly (:func:`parse_rows`), not a DataFrame's
  ``to_dict("records")``: the rows must be exactly what pandas reads.
* Tags are parsed by a split, not ``ast.literal_eval``: the result must be the same.

Expected values come from pandas, ``ast.literal_eval`` or openpyxl, never from the loaders.
"""

from __future__ import annotations

import ast
import io
import json
import random
import warnings
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ncprobe
from ncprobe.cli import main
from ncprobe.data.ncimp import NAT_FILE, NEUTRAL_FILE, REF_FILE
from ncprobe.errors import ErrorSink

XLSX = ("risehnhew+Finding-Idiomaticity-in-Word-Representations/dataset/"
        "human_compositionality scores.xlsx")
NCTTI_EN = "marcospln+nctti/data/data_en.tsv"


def _load(data_dir: Path, **kw) -> ncprobe.Stimuli:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        return ncprobe.load_stimuli("en", contexts="neut", data_dir=data_dir, **kw)


def test_compute_neither_reads_nor_needs_the_xlsx(data_copy, tmp_path):
    (data_copy / XLSX).unlink()
    assert XLSX not in _load(data_copy).sources
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["compute", "--data-dir", str(data_copy), "--out", str(out), "--context",
                     "neut", "--n-boot", "0", "--no-cache", "--quiet"])
    assert code == 0
    sources = json.loads((out / "run.json").read_text())["runs"][0]["data_sources"]
    assert XLSX not in sources and NCTTI_EN in sources


def _edit_xlsx_token_score(data_dir: Path) -> tuple[str, str]:
    """Add 1 to the first English naturalistic token score of the workbook (openpyxl).

    Returns the NC as the workbook writes it and the sentence (``S1``..``S3``).
    """
    import openpyxl

    path = data_dir / XLSX
    wb = openpyxl.load_workbook(path)
    ws = wb.worksheets[0]
    header = [c.value for c in ws[1]]
    col = {name: header.index(name) for name in ("language", "experiment_type", "file",
                                                 "compound", "CompositionalityToken")}
    for row in ws.iter_rows(min_row=2):
        if row[col["language"]].value == "en" and \
                row[col["experiment_type"]].value == "Naturalistic":
            cell = row[col["CompositionalityToken"]]
            cell.value = float(cell.value) + 1 if float(cell.value) < 4 else 0.0
            sentence = "S" + str(row[col["file"]].value).rsplit(".", 1)[0][-1]
            wb.save(path)
            return row[col["compound"]].value, sentence
    raise AssertionError("no English naturalistic row in the workbook")


@pytest.mark.slow
def test_data_info_and_check_still_cross_check_the_xlsx(data_copy, raw_dir, capsys,
                                                        monkeypatch):
    nc, sentence = _edit_xlsx_token_score(data_copy)
    want = f"en: 1 token-level score(s) differ (> 0.01) between NCTTI and the xlsx; NCTTI is " \
           f"used: {nc} {sentence}"
    # data info: the file differs from its pin (exit 3), and its disagreement is a note
    assert main(["data", "info", "--json", "--data-dir", str(data_copy)]) == 3
    info = json.loads(capsys.readouterr().out)
    assert info["files"][XLSX]["status"] == "mismatch"
    assert want in info["notes"]
    # data check: the same note (its tag-by-tag pass is skipped here: it takes ~15 s)
    from ncprobe.data import check as check_module
    from ncprobe.data.ncimp import check as ncimp_check

    monkeypatch.setattr(ncimp_check, "_check_tags", lambda *a: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        report = check_module.check(data_copy)
    assert want in report.notes
    assert any(e.file == XLSX and "differs from the pinned" in e.reason for e in report.errors)
    # what compute loads is untouched by the xlsx: no such note, the same gold scores
    stim = _load(data_copy, accept_modified=True)
    assert not any("xlsx" in n for n in stim.notes)
    assert repr(stim.ncs) == repr(_load(raw_dir).ncs)  # repr: NaN != NaN


def test_a_broken_xlsx_is_named_by_data_info_and_not_by_compute(data_copy, tmp_path, capsys):
    (data_copy / XLSX).write_bytes(random.Random(0).randbytes(4096))
    assert main(["data", "info", "--data-dir", str(data_copy)]) == 3
    err = capsys.readouterr().err
    assert f"error: {XLSX}" in err and "not a readable Excel workbook" in err
    assert "Traceback" not in err
    stim = _load(data_copy)  # compute's loader: the workbook is not its input
    assert XLSX not in stim.sources and len(stim) > 0


@pytest.mark.parametrize("rel,sep", [(REF_FILE, ","), (NCTTI_EN, "\t"),
                                     (NEUTRAL_FILE.format(LANG="EN"), ","),
                                     (NEUTRAL_FILE.format(LANG="PT"), ","),
                                     (NAT_FILE.format(LANG="PT", k=3), ",")])
def test_rows_are_what_pandas_reads(raw_dir, rel, sep):
    from ncprobe.data.reading import parse_rows

    data = (raw_dir / rel).read_bytes()
    want = pd.read_csv(io.BytesIO(data), sep=sep, dtype=str, keep_default_na=False)
    table = parse_rows(data, rel, sep=sep)
    assert list(table.columns) == list(want.columns)
    assert table.records() == want.to_dict("records")
    assert table.column("compound" if "compound" in want else "canonical_form") == \
        want["compound" if "compound" in want else "canonical_form"].tolist()


_ITEMS = st.sampled_from(["True", "False", " True", "False ", "  False", "true", "1", "None",
                          "", "[True]", "'True'", "True\t", "\nFalse"])


@settings(max_examples=400, deadline=None)
@given(items=st.lists(_ITEMS, max_size=6), sep=st.sampled_from([",", ", ", " ,", ",,"]),
       pad=st.sampled_from(["", " ", "\t", "\n"]), brackets=st.sampled_from(["[]", "()", "[", ""]))
def test_tag_parsing_agrees_with_literal_eval(items, sep, pad, brackets):
    from ncprobe.data.reading import LoadContext, _bool_list

    tag = pad + brackets[:1] + sep.join(items) + brackets[1:] + pad
    try:
        want = ast.literal_eval(tag.strip())
    except (ValueError, SyntaxError):
        want = None
    fast = _bool_list(tag)  # the split: the plain form only, else None (literal_eval decides)
    assert fast is None or fast == want
    if brackets == "[]" and items and sep in (",", ", ") and all(
            i.strip(" ") in ("True", "False") for i in items):
        assert fast == want  # the form of every tag of the data takes the fast path
    ok = isinstance(want, list) and all(isinstance(f, bool) for f in want)
    n = len(want) if ok else max(1, len(items))  # a sentence of the tag's length
    ctx = LoadContext(Path("."), ErrorSink(collect=True))
    got = ctx.tag_span(" ".join(["w"] * n), tag, file="f", row=1, column="c", key="k")
    true_at = [i for i, f in enumerate(want) if f] if ok else []
    if true_at and true_at[-1] - true_at[0] + 1 == len(true_at):  # one non-empty run
        assert got == (true_at[0], true_at[-1] + 1) and not ctx.sink.errors
    else:
        assert got is None and len(ctx.sink.errors) == 1
