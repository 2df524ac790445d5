"""Never compute on damaged or incomplete input: pins, coverage, gold, malformed files.

Expected blob ids are computed here with hashlib from the bytes the test wrote (git's
``sha1(b"blob <len>\\0" + content)``, checked against ``git hash-object`` in
test_sources.py); the pinned id is that of the untouched copy, which test_sources.py
checks against the manifest. Expected NC counts and rows are counted from the files
the test wrote, with pandas or by hand.
"""

from __future__ import annotations

import hashlib
import io
import os
import pathlib
import warnings
from pathlib import Path

import pandas as pd
import pytest

import ncprobe
from ncprobe.cli import main
from ncprobe.data.ncimp import NAT_FILE, NEUTRAL_FILE, REF_FILE
from ncprobe.ncimp.results import Results

NCTTI_EN = "marcospln+nctti/data/data_en.tsv"
NCTTI_PT = "marcospln+nctti/data/data_pt.tsv"
EN_NEU = NEUTRAL_FILE.format(LANG="EN")
PT_NEU = NEUTRAL_FILE.format(LANG="PT")
PT_S2 = NAT_FILE.format(LANG="PT", k=2)


def _blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _compute(data_dir: Path, out: Path, *extra: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return main(["compute", "--data-dir", str(data_dir), "--out", str(out), "--n-boot", "0",
                     "--no-cache", "--quiet", *extra])


# --- corruptions, each returning what the test needs to know -------------------------------

def _cut_ref_mid_row(d: Path) -> None:
    p = d / REF_FILE
    data = p.read_bytes()
    p.write_bytes(data[:len(data) // 2])


def _scores_header_only(d: Path) -> None:
    p = d / NCTTI_EN
    p.write_bytes(p.read_bytes().split(b"\n", 1)[0] + b"\n")


def _slot_lower_case(d: Path) -> int:
    """Slot ``s1`` instead of ``S1`` in the first English S1 row; returns its data row."""
    df = pd.read_csv(d / REF_FILE, dtype=str, keep_default_na=False)
    i = df.index[(df["language"] == "EN") & (df["slot"] == "S1")][0]
    df.loc[i, "slot"] = "s1"
    df.to_csv(d / REF_FILE, index=False)
    return int(i) + 1


def _edit_score(d: Path, nc: str = "grey matter", value: str = "4.9") -> tuple[float, ...]:
    """Set the NC's MeanS1; returns its three token scores as edited."""
    df = pd.read_csv(d / NCTTI_EN, sep="\t", dtype=str, keep_default_na=False)
    row = df.index[df["compound"] == nc][0]
    df.loc[row, "MeanS1"] = value
    df.to_csv(d / NCTTI_EN, sep="\t", index=False)
    return tuple(float(df.loc[row, c]) for c in ("MeanS1", "MeanS2", "MeanS3"))


@pytest.mark.parametrize("corrupt,rel,contexts", [
    (_cut_ref_mid_row, REF_FILE, "nat,neut"),
    (_scores_header_only, NCTTI_EN, "neut"),
    (_slot_lower_case, REF_FILE, "nat"),
    (_edit_score, NCTTI_EN, "neut"),
], ids=["reference-cut-mid-row", "scores-header-only", "slot-s1", "edited-score"])
def test_compute_refuses_data_that_differ_from_their_pin(data_copy, raw_dir, tmp_path, capsys,
                                                         corrupt, rel, contexts):
    corrupt(data_copy)
    found, pinned = _blob((data_copy / rel).read_bytes()), _blob((raw_dir / rel).read_bytes())
    assert found != pinned
    out = tmp_path / "out"
    assert _compute(data_copy, out, "--context", contexts) == 3
    err = capsys.readouterr().err
    assert rel in err and found in err and pinned in err
    assert "ncprobe data download" in err and "--accept-modified-data" in err
    assert not out.exists()  # nothing was computed, nothing written


def test_accepted_modified_data_are_used_recorded_and_named(data_copy, raw_dir, tmp_path,
                                                            capsys):
    scores = _edit_score(data_copy, "grey matter", "4.9")
    found, pinned = _blob((data_copy / NCTTI_EN).read_bytes()), _blob(
        (raw_dir / NCTTI_EN).read_bytes())
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(["compute", "--data-dir", str(data_copy), "--out", str(out), "--n-boot", "0",
                   "--no-cache", "--context", "neut", "--accept-modified-data"])
    assert rc == 0
    summary = capsys.readouterr().out
    first = summary.splitlines()[0]
    assert first.startswith("MODIFIED DATA") and NCTTI_EN in first
    assert found in first and pinned in first
    res = Results.load(out)
    meta = res.meta[0]
    assert meta["modified_data"] == {NCTTI_EN: {"blob": found, "pinned": pinned}}
    assert meta["config"]["accept_modified_data"] is True
    assert any(n.startswith("MODIFIED DATA") and NCTTI_EN in n for n in meta["notes"])
    # the edited score is what was used: gold = mean of the three token scores as edited
    row = res.ncs[res.ncs["nc"] == "grey matter"].iloc[0]
    assert row["gold"] == pytest.approx(sum(scores) / 3)


def test_the_python_api_accepts_modified_data_only_when_asked(data_copy, raw_dir):
    _edit_score(data_copy, "acid test", "0.1")
    with pytest.raises(ncprobe.DataError) as e:
        ncprobe.load_stimuli("en", contexts="neut", data_dir=data_copy)
    assert e.value.file == NCTTI_EN
    stim = ncprobe.load_stimuli("en", contexts="neut", data_dir=data_copy, accept_modified=True)
    assert list(stim.modified) == [NCTTI_EN]
    assert stim.modified[NCTTI_EN]["pinned"] == _blob((raw_dir / NCTTI_EN).read_bytes())
    assert stim.ncs[("en", "acid test")].token_scores[0] == 0.1
    assert ncprobe.load_stimuli("en", contexts="neut", data_dir=raw_dir).modified == {}


def test_a_reference_table_cut_at_a_line_is_caught_even_when_accepted(data_copy, tmp_path,
                                                                      capsys):
    p = data_copy / REF_FILE
    lines = p.read_bytes().split(b"\r\n")
    p.write_bytes(b"\r\n".join(lines[:1000]) + b"\r\n")
    kept = pd.read_csv(p, dtype=str, keep_default_na=False)
    en = pd.read_csv(data_copy / EN_NEU, dtype=str, keep_default_na=False)["compound"]
    lacking = len(set(en) - set(kept.loc[(kept.language == "EN") & (kept.slot == "S1"),
                                         "canonical_form"]))
    assert 0 < lacking < 281
    assert _compute(data_copy, tmp_path / "out", "--accept-modified-data") == 3
    err = capsys.readouterr().err
    assert REF_FILE in err and f"context S1 lacks {lacking} of the 281 NCs" in err
    assert not (tmp_path / "out").exists()


def test_a_reference_table_cut_mid_row_names_the_row_when_accepted(data_copy, tmp_path,
                                                                   capsys):
    p = data_copy / REF_FILE
    data = p.read_bytes()
    cut = data[:len(data) // 2]
    p.write_bytes(cut)
    row = cut.count(b"\r\n")  # lines ended = header + complete rows; the cut one is next
    assert _compute(data_copy, tmp_path / "out", "--accept-modified-data") == 3
    err = capsys.readouterr().err
    assert REF_FILE in err and f"row {row}" in err and "ncprobe data download" in err


def test_a_slot_outside_s1_to_n2_is_an_error_with_its_row(data_copy):
    row = _slot_lower_case(data_copy)
    with pytest.raises(ncprobe.DataError) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        ncprobe.load_stimuli("en", contexts="nat", data_dir=data_copy, accept_modified=True)
    assert (e.value.file, e.value.row, e.value.column) == (REF_FILE, row, "slot")
    assert "'s1' is not one of S1, S2, S3, N1, N2" in str(e.value)


def test_an_nc_without_a_gold_score_stops_the_run(data_copy, tmp_path, capsys):
    p = data_copy / NCTTI_EN
    text = p.read_text("utf-8").splitlines(keepends=True)
    kept = [ln for ln in text if not ln.startswith('"grey matter"\t')]
    assert len(kept) == len(text) - 1
    p.write_text("".join(kept), "utf-8")
    assert _compute(data_copy, tmp_path / "out", "--context", "neut",
                    "--accept-modified-data") == 3
    err = capsys.readouterr().err
    assert "1 NC(s) have no gold score" in err and "grey matter" in err
    assert "dust storm" in err  # named as the one unscored by design, not as a problem
    assert not (tmp_path / "out").exists()


def test_data_info_exits_3_on_a_mismatch_and_survives_a_header_only_scores_file(
        data_copy, capsys):
    _scores_header_only(data_copy)
    assert main(["data", "info", "--data-dir", str(data_copy)]) == 3
    captured = capsys.readouterr()
    table = [ln.split() for ln in captured.out.splitlines() if NCTTI_EN in ln]
    assert table and table[0][0] == "mismatch"  # the table is still printed
    assert "header but no data rows" in captured.err and NCTTI_EN in captured.err


def test_data_info_exits_3_when_a_file_does_not_verify(data_copy, capsys):
    df = pd.read_csv(data_copy / NCTTI_PT, sep="\t", dtype=str, keep_default_na=False)
    df.loc[3, "MeanS2"] = "2.5"
    df.to_csv(data_copy / NCTTI_PT, sep="\t", index=False)
    assert main(["data", "info", "--data-dir", str(data_copy)]) == 3
    captured = capsys.readouterr()
    assert any(ln.split()[:1] == ["mismatch"] and NCTTI_PT in ln
               for ln in captured.out.splitlines())
    assert NCTTI_PT in captured.err


# --- malformed and unreadable files ----------------------------------------------------------

def _latin1(d: Path) -> str:
    """A Latin-1 byte on line 6 of the English neutral file."""
    p = d / EN_NEU
    lines = p.read_bytes().split(b"\r\n")
    lines[5] = lines[5].replace(b"This is", "Thís is".encode("latin-1"), 1)
    p.write_bytes(b"\r\n".join(lines))
    return "line 6"


def _unterminated_quote(d: Path) -> str:
    p = d / EN_NEU
    data = p.read_bytes()
    at = data.rfind(b',"') + 2  # just inside the last quoted field
    p.write_bytes(data[:at])
    complete = data[:at].count(b"\r\n")  # header + complete rows: the cut one is next
    return f"row {complete}"


def _empty(d: Path) -> str:
    (d / EN_NEU).write_bytes(b"")
    return "empty (0 bytes)"


def _extra_field(d: Path) -> str:
    p = d / EN_NEU
    lines = p.read_bytes().split(b"\r\n")
    lines[4] += b",extra"  # line 5 = data row 4
    p.write_bytes(b"\r\n".join(lines))
    return "row 4"


# (a broken scores xlsx: compute does not read it, data info names it; see
# tests/data/test_stimuli.py::test_a_broken_xlsx_is_named_by_data_info_and_not_by_compute)
@pytest.mark.parametrize("corrupt,rel,expect", [
    (_latin1, EN_NEU, "UTF-8"),
    (_unterminated_quote, EN_NEU, "never closed"),
    (_empty, EN_NEU, "ncprobe data download"),
    (_extra_field, EN_NEU, "more than the"),
    (_scores_header_only, NCTTI_EN, "header but no data rows"),
], ids=["latin-1", "unterminated-quote", "empty", "extra-field", "header-only-scores"])
def test_malformed_files_are_named_data_errors(data_copy, tmp_path, capsys, corrupt, rel,
                                               expect):
    where = corrupt(data_copy)
    # as it is: the file differs from its pin, and that is what is said first
    assert _compute(data_copy, tmp_path / "out", "--context", "neut") == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"error: {rel}" in err and "differs from the pinned" in err
    # accepted as modified: the file itself is still refused, with what is wrong and where
    assert _compute(data_copy, tmp_path / "out", "--context", "neut",
                    "--accept-modified-data") == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"error: {rel}" in err and expect in err
    if where:
        assert where in err


def test_an_unreadable_file_is_a_named_data_error(data_copy, tmp_path, capsys, monkeypatch):
    # tests run as root, for whom chmod 000 does not stop reading: refuse the read instead
    target = (data_copy / EN_NEU).resolve()
    real = pathlib.Path.read_bytes

    def read_bytes(self):
        if self.resolve() == target:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)
    monkeypatch.setattr(pathlib.Path, "read_bytes", read_bytes)
    assert _compute(data_copy, tmp_path / "out", "--context", "neut") == 3
    err = capsys.readouterr().err
    assert f"error: {EN_NEU}" in err and "Permission denied" in err
    assert "ncprobe data download" in err
    assert main(["data", "info", "--data-dir", str(data_copy)]) == 3
    assert any(ln.split()[:1] == ["unreadable"] for ln in capsys.readouterr().out.splitlines())


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root reads files whatever their mode (see the monkeypatch test)")
def test_a_file_without_read_permission_is_a_named_data_error(data_copy, tmp_path,
                                                              capsys):  # pragma: no cover
    (data_copy / EN_NEU).chmod(0)
    assert _compute(data_copy, tmp_path / "out", "--context", "neut") == 3
    assert f"error: {EN_NEU}" in capsys.readouterr().err


@pytest.mark.slow  # `data check` parses every tag column of every file (about 17 s)
def test_data_check_lists_every_broken_file(data_copy, capsys):
    p = data_copy / PT_NEU
    lines = p.read_bytes().split(b"\n")
    lines[2] = lines[2] + "é".encode("latin-1")  # line 3
    p.write_bytes(b"\n".join(lines))
    p = data_copy / PT_S2
    lines = p.read_bytes().split(b"\n")
    lines[6] += b",extra"  # line 7 = data row 6
    p.write_bytes(b"\n".join(lines))
    (data_copy / NCTTI_PT).write_bytes(b"")
    assert main(["data", "check", "--data-dir", str(data_copy)]) == 3
    err = capsys.readouterr().err.splitlines()

    def about(rel: str, *words: str) -> bool:
        return any(f"error: {rel}" in ln and all(w in ln for w in words) for ln in err)
    assert about(PT_NEU, "not UTF-8", "line 3")
    assert about(PT_S2, "row 6", "more than the")
    assert about(NCTTI_PT, "empty (0 bytes)")
    for rel in (PT_NEU, PT_S2, NCTTI_PT):
        assert about(rel, "differs from the pinned upstream file")
    assert len(err) == len(set(err))  # each problem once


# --- coverage ---------------------------------------------------------------------------------

PAIRS = """nc,sentence,start,end,probe,substitute,context,comp
grey matter,use your grey matter,2,4,syn,brain,S1,0.5
grey matter,use your grey matter,2,4,rand,police car,S1,0.5
grey matter,this is grey matter,2,4,syn,brain,N,0.5
grey matter,this is grey matter,2,4,rand,police car,N,0.5
economic aid,they sent economic aid,2,4,syn,financial help,S1,4.8
economic aid,they sent economic aid,2,4,rand,city sound,S1,4.8
economic aid,this is economic aid,2,4,syn,financial help,N,4.8
economic aid,this is economic aid,2,4,rand,city sound,N,4.8
"""


@pytest.fixture(scope="module")
def glove():
    from ncprobe.encoders import load_encoder

    return load_encoder("glove-6b-50d")


def _pairs(tmp_path: Path, text: str):
    f = tmp_path / "pairs.csv"
    f.write_text(text, "utf-8")
    return ncprobe.load_pairs(f, lang="en")


def _run(stim, encoder):
    return ncprobe.compute(stimuli=stim, encoder=encoder, cache=False, progress=False, n_boot=0)


def test_complete_pairs_compute(tmp_path, glove):
    res = _run(_pairs(tmp_path, PAIRS), glove)
    c = res.correlations
    assert set(c.loc[c["analysis"] == "nc", "n"]) == {2}


@pytest.mark.parametrize("drop,lacks", [
    ("economic aid,this is economic aid,2,4,rand,city sound,N,4.8\n", "economic aid (N rand)"),
    ("".join(ln + "\n" for ln in PAIRS.splitlines() if ln.startswith("economic aid,this")),
     "economic aid (N)"),
], ids=["a-probe-family", "a-context"])
def test_pairs_that_lack_a_probe_or_context_stop_the_run(tmp_path, glove, drop, lacks):
    stim = _pairs(tmp_path, PAIRS.replace(drop, ""))
    with pytest.raises(ncprobe.DataError) as e:
        _run(stim, glove)
    assert "1 of 2 NCs lack" in str(e.value) and lacks in str(e.value)
    assert "grey matter" not in str(e.value)


def test_pairs_with_gold_for_some_ncs_only_stop_the_run(tmp_path, glove):
    text = PAIRS.replace(",S1,4.8\n", ",S1,\n").replace(",N,4.8\n", ",N,\n")
    with pytest.raises(ncprobe.DataError, match="1 of 2 NCs have no gold score") as e:
        _run(_pairs(tmp_path, text), glove)
    assert "economic aid" in str(e.value)


def test_pairs_without_any_gold_compute_similarities_with_a_note(tmp_path, glove):
    text = "\n".join(ln.rsplit(",", 1)[0] for ln in PAIRS.splitlines()) + "\n"
    res = _run(_pairs(tmp_path, text), glove)
    assert res.cosines["cosine"].notna().all() and len(res.cosines) > 0
    assert (res.correlations["n"] == 0).all()
    assert any("no NC has a gold score" in n for n in res.meta[0]["notes"])


def test_ncimp_stimuli_missing_a_probe_family_stop_the_run(raw_dir, glove):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stim = ncprobe.load_stimuli("en", contexts="neut", data_dir=raw_dir)
    keep = [s for s in stim if not (s.nc == "acid test" and s.probe == "rand")]
    holed = ncprobe.Stimuli(tuple(keep), stim.ncs, gold_exempt=stim.gold_exempt)
    with pytest.raises(ncprobe.DataError) as e:
        _run(holed, glove)
    assert "1 of 281 NCs lack" in str(e.value) and "acid test (N rand)" in str(e.value)


def test_ncimp_known_structure_passes_coverage(raw_dir):
    from ncprobe.data import check_coverage

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stim = ncprobe.load_stimuli("en", contexts="all", data_dir=raw_dir)
    # Npl has no comp-mod and no rand upstream; dust storm has no gold score: both by design
    assert not any(s.context == "Npl" and s.probe in ("comp-mod", "rand") for s in stim)
    assert not stim.ncs[("en", "dust storm")].scored
    assert check_coverage(stim, contexts="all", probes="all") == []
    # the same stimuli without that exemption: dust storm is then a problem
    strict = ncprobe.Stimuli(stim.items, stim.ncs, gold_exempt={"en": frozenset()})
    with pytest.raises(ncprobe.DataError, match="1 NC.s. have no gold score.*dust storm"):
        check_coverage(strict, contexts="all", probes="all")


def test_default_stimuli_parse_exactly_as_pandas_does(raw_dir):
    """parse_table replaced pd.read_csv: every pinned table must come out identical."""
    from ncprobe.data.reading import parse_table

    for rel, sep in ((REF_FILE, ","), (NCTTI_EN, "\t"), (EN_NEU, ","), (PT_S2, ",")):
        data = (raw_dir / rel).read_bytes()
        want = pd.read_csv(io.BytesIO(data), sep=sep, dtype=str, keep_default_na=False)
        pd.testing.assert_frame_equal(parse_table(data, rel, sep=sep), want)
