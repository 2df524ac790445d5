"""Published values checked (`ncprobe reproduce --probes`): the verdict rule by hand, the data
file read strictly, every row of it reached, and `reproduce --probes ncc` end to end against
accuracies counted here from the prediction files themselves."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from ncprobe.cli import main
from ncprobe.errors import DataError
from ncprobe.probes import verifiers
from ncprobe.verify import (
    Measured,
    Published,
    published_rows,
    read_published,
    verdict,
    verification_table,
)

NCC_FILES = "jacklanda+SemanticQA/semantic_qa/results/noun_compound_compositionality"


# --- the verdict rule, by hand -------------------------------------------------------------

def test_equal_is_the_value_rounded_half_up_to_the_printed_decimals() -> None:
    # 66.80498 -> 66.8 (one decimal, as printed)
    assert verdict("66.8", 100 * 161 / 241, 0.1)[0] == "equal"
    # half up, not Python's round-half-even: 0.125 shows as 0.13
    assert round(0.125, 2) == 0.12
    assert verdict("0.13", 0.125) == ("equal", "")
    # the printed decimals count, trailing zeros too: 51.037 is "51.0" and "51", not "51.00"
    assert verdict("51.0", 51.037)[0] == "equal"
    assert verdict("51", 51.037)[0] == "equal"
    assert verdict("51.00", 51.037)[0] == "differs"


def test_within_is_the_difference_against_the_stated_tolerance() -> None:
    o3 = 100 * 157 / 241          # 65.1452...: 65.1 at one decimal, printed 65.2
    said, why = verdict("65.2", o3, 0.1)
    assert said == "within"       # |65.1452 - 65.2| = 0.0548 <= 0.1
    assert "65.1 at the printed decimals" in why and "0.055" in why
    assert verdict("65.2", o3, 0.05)[0] == "differs"     # 0.0548 > 0.05
    assert "no tolerance" in verdict("65.2", o3)[1]      # none stated: equal or differs
    assert verdict("65.2", o3)[0] == "differs"
    # exactly at the tolerance is within (a printed decimal is no exact binary fraction)
    assert verdict("36.04", 36.02, 0.02)[0] == "within"
    assert verdict("36.04", 36.0199, 0.02)[0] == "differs"


def test_a_range_tolerance_asks_whether_the_printed_value_is_inside_it() -> None:
    assert verdict("49.22", 49.1478, "range", low=47.78, high=50.74)[0] == "within"
    said, why = verdict("49.22", 49.1478, "range", low=49.5, high=50.74)
    assert said == "differs" and "outside" in why
    assert verdict("49.22", 49.1478, "range")[0] == "differs"  # no range reported
    assert verdict("49.22", math.nan, 1.0)[0] == "differs"


# --- the data file ---------------------------------------------------------------------------

HEADER = "probe\tkey\tpaper\ttable\trow\tcell\tprinted\ttolerance\tnote\n"


def _file(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "published.tsv"
    path.write_text("# a comment\n" + HEADER + "".join(r + "\n" for r in rows),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize(("row", "words"), [
    ("p\tk\tP\tT\tR\tC\tabc\t0.1\t", "'abc' is not a number"),
    ("p\tk\tP\tT\tR\tC\t1.5\t-1\t", "tolerance '-1'"),
    ("p\tk\tP\tT\tR\tC\t1.5\twide\t", "tolerance 'wide'"),
    ("p\t\tP\tT\tR\tC\t1.5\t\t", "empty probe or key"),
    ("p\tk\tP\tT\tR\tC\t1.5", "7 cells"),
])
def test_a_bad_row_of_the_data_file_is_named(tmp_path, row, words) -> None:
    with pytest.raises(DataError, match="line 3") as e:
        read_published(_file(tmp_path, row))
    assert words in str(e.value)


def test_a_key_given_twice_is_refused(tmp_path) -> None:
    row = "p\tk\tP\tT\tR\tC\t1.5\t\t"
    with pytest.raises(DataError, match="given twice"):
        read_published(_file(tmp_path, row, row))
    rows = read_published(_file(tmp_path, row, "p\tk2\tP\tT\tR\tC\t2\trange\tn"))
    assert [(r.key, r.printed, r.tolerance, r.line) for r in rows] == [
        ("k", "1.5", None, 3), ("k2", "2", "range", 4)]


def test_every_row_of_the_data_file_belongs_to_a_probe_that_checks_it() -> None:
    rows = read_published()
    assert {r.probe for r in rows} <= {p.name for p in verifiers()}
    # the printed values the protocols give (shared/semanticqa, shared/idiolink)
    assert len(published_rows("ncc")) == 20 and len(published_rows("idiolink")) == 4


def test_the_table_refuses_a_row_left_unmeasured_or_a_value_not_published() -> None:
    row = Published("p", "k", "P", "T", "R", "C", "65.2", 0.1)
    other = Published("p", "k2", "P", "T", "R", "C", "1", None)
    with pytest.raises(ValueError, match=r"not measured: p k2"):
        verification_table([row, other], {"p": [Measured("k", 65.1452)]})
    with pytest.raises(ValueError, match=r"not published: p k3"):
        verification_table([row], {"p": [Measured("k", 65.1), Measured("k3", 1.0)]})
    table = verification_table([row, other], {"p": [Measured("k", 65.1452, note="n"),
                                                    Measured("k2", 1.4)]})
    assert table["verdict"].tolist() == ["within", "equal"]   # 1.4 is "1" at no decimals
    assert table["difference"].tolist() == pytest.approx([65.1452 - 65.2, 0.4])


# --- every row reached, end to end ---------------------------------------------------------

def _by_hand(raw_dir: Path, key: str) -> float:
    """A prediction file's accuracy counted here: lines whose prediction starts (after spaces)
    with the target letter, over the lines (SemanticQA's protocol)."""
    path = raw_dir / NCC_FILES / f"noun_compound_compositionality_{key}.json"
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    right = sum(str(r["prediction"]).lstrip()[:1] == r["target"] for r in lines)
    return 100 * right / len(lines)


def test_reproduce_ncc_checks_every_printed_accuracy(raw_dir, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    args = ["reproduce", "--probes", "ncc", "--out", str(out), "--results-dir",
            str(tmp_path / "results"), "--data-dir", str(raw_dir), "--quiet"]
    assert main(args) == 0, capsys.readouterr().err
    with open(out / "verification" / "verification.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    printed = {(r.row, r.printed): r.key for r in published_rows("ncc")}
    assert len(rows) == len(printed) == 20  # every row of the data file, once
    for r in rows:
        key = printed[(r["row"], r["published"])]
        assert float(r["ncprobe"]) == pytest.approx(_by_hand(raw_dir, key), abs=1e-9), key
        assert abs(float(r["ncprobe"]) - float(r["published"])) <= 0.1 + 1e-9, key
    # the one printed value that is not the file's at one decimal: o3 0-shot, 157/241 = 65.145
    assert [(r["row"], r["verdict"]) for r in rows if r["verdict"] != "equal"] == [
        ("o3, 0-shot", "within")]
    assert (out / "verification" / "verification.md").read_text().count("| ncc |") == 20
    assert "\\begin{tabular}" in (out / "verification" / "verification.tex").read_text()
    assert not (tmp_path / "results").exists()  # NCC re-scores files: no run to write
    # the same command again: the files ncprobe wrote are replaced, byte for byte the same
    before = (out / "verification" / "verification.csv").read_bytes()
    assert main(args) == 0
    assert (out / "verification" / "verification.csv").read_bytes() == before


def test_idiolink_answers_every_row_of_its_own(raw_dir, tmp_path, monkeypatch) -> None:
    """Each published IdioLink key gets its value and tie range (on two idioms, without
    intervals: what is checked is that every row is reached, not the figures)."""
    import dataclasses

    import ncprobe.retrieval.probe as rp
    from ncprobe.probes import get_probe

    real = rp.retrieve

    def small(cfg, **kw):
        return real(dataclasses.replace(cfg, idioms=("all along", "at the crossroads"),
                                        n_boot=0), **kw)

    monkeypatch.setattr(rp, "retrieve", small)
    rows = published_rows("idiolink")
    got = get_probe("idiolink").verify(rows, results_dir=tmp_path, data_dir=raw_dir)
    assert [m.key for m in got] == [r.key for r in rows]
    for m in got:
        assert m.low is not None and m.high is not None
        assert 0 <= m.low <= m.value <= m.high <= 100
    assert (tmp_path / "idiolink-test-bm25" / "run.json").is_file()


def test_reproduce_refuses_what_it_cannot_do(raw_dir, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["reproduce", "--probes", "ncc,nothing", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "unknown probe(s) 'nothing'" in err and "ncimp, idiolink, ncc" in err
    # an option of the study's runs, without the study: it would do nothing
    assert main(["reproduce", "--probes", "ncc", "--models", "minilm", "--out", str(out)]) == 2
    assert "--models" in capsys.readouterr().err
    # --out inside a results directory
    results = tmp_path / "results"
    results.mkdir()
    (results / "run.json").write_text("{}")
    assert main(["reproduce", "--probes", "ncc", "--out", str(results / "v"),
                 "--data-dir", str(raw_dir)]) == 2
    assert "results directory" in capsys.readouterr().err
    assert not (results / "v").exists()
    # a file ncprobe did not write, under a name the table takes: kept, nothing written
    (out / "verification").mkdir(parents=True)
    (out / "verification" / "verification.md").write_text("mine")
    assert main(["reproduce", "--probes", "ncc", "--out", str(out), "--data-dir",
                 str(raw_dir)]) == 2
    assert "did not write" in capsys.readouterr().err
    assert (out / "verification" / "verification.md").read_text() == "mine"
    assert not (out / "verification" / "verification.csv").exists()


def test_reference_values_are_shown_never_checked(tmp_path) -> None:
    from ncprobe.verify import reference_values

    path = _file(tmp_path, "p\tk\tP\tT\tR\tC\t1.5\t\t",
                 "p\thuman\tP\tT\tHuman\tC\t71.0\treference\tn")
    assert [r.key for r in published_rows("p", path)] == ["k"]  # checked rows only
    refs = reference_values("p", path)
    assert list(refs) == ["human"] and refs["human"].printed == "71.0"
    assert refs["human"].tolerance_text == "reference" and not refs["human"].checked
    with pytest.raises(ValueError, match="never checked: p human"):
        verification_table([refs["human"]], {"p": [Measured("human", 71.0)]})
    # the NCC reference lines are the data file's printed values (the paper's 71.0, 53.6, 51.5)
    from ncprobe.ncc import HUMAN_ACCURACY, PAPER_ROWS

    shipped = reference_values("ncc")
    assert HUMAN_ACCURACY == pytest.approx(float(shipped["human"].printed) / 100, abs=0)
    assert [(s, v) for s, _, v in PAPER_ROWS] == [
        (k.split("/")[1], float(p.printed) / 100) for k, p in shipped.items()
        if k.startswith("fine-tuned/")]
    assert [r for r in read_published() if not r.checked] == list(shipped.values())
