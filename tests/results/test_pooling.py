"""Issue 19, runs never pooled: two results directories of one cell (a rerun with other
options, a backup copy, two models of one name) are refused by `report`, `compare` and
`Results.concat`, naming both; `--exclude` leaves one out. Two vector files of one name in
different folders get different names. `compare --out` never replaces a file without
`--overwrite`, and says on stderr what it tests.

The expected numbers are counted here from the synthetic tables (tests/synthetic.py) or
recomputed with scipy, independently of ncprobe.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import shutil
import tempfile

import numpy as np
import pandas as pd
import pytest
import scipy.stats as ss

import ncprobe
from ncprobe.cli import main
from ncprobe.encoders import load_encoder
from ncprobe.errors import UsageError
from ncprobe.ncimp.comparison import compare
from ncprobe.ncimp.report import write_report
from ncprobe.ncimp.results import Results

from .. import synthetic

N_BOOT = 200
# the English NCs of the synthetic tables with a gold score (12; "dust storm" has none)
EN_SCORED = list(synthetic.EN_NAMES)


def _run(full: Results, model: str, layers: str, **config) -> Results:
    """One English run of the synthetic tables (one model, one layer view)."""
    return synthetic.one_run(full, model, "en", layers=layers, **config)


@pytest.fixture(scope="module")
def full() -> Results:
    return synthetic.build()


@pytest.fixture(scope="module")
def tree(full, tmp_path_factory):
    """``a/model-a`` (side A), and under ``b/``: ``model-b``, its rerun with ``--n-boot 50``
    (``model-b-boot50``) and a byte copy of it (``backup/model-b``)."""
    root = tmp_path_factory.mktemp("runs")
    _run(full, "model-a", "-").to_parquet(root / "a" / "model-a")
    b = _run(full, "model-b", "12").to_parquet(root / "b" / "model-b")
    _run(full, "model-b", "12", n_boot=50).to_parquet(root / "b" / "model-b-boot50")
    shutil.copytree(b, root / "b" / "backup" / "model-b")
    return root


def _hand_n(root, model_dir: str, **where) -> int:
    """NCs of one cell with a value and a gold score, counted from the parquet file."""
    m = pd.read_parquet(root / model_dir / "measures.parquet")
    for k, v in where.items():
        m = m[m[k].astype(str) == v]
    return int((m["value"].notna() & m["gold"].notna()).sum())


# ---------------------------------------------------------------------------------------------
# Results.concat and Results.load_many: the check every path goes through


def test_concat_refuses_a_rerun_and_a_copy_naming_both(full, tmp_path) -> None:
    run = _run(full, "model-b", "12")
    rerun = _run(full, "model-b", "12", n_boot=50)
    with pytest.raises(UsageError) as e:
        Results.concat([run, rerun], sources=["first/dir", "second/dir"])
    msg = str(e.value)
    assert "first/dir and second/dir" in msg and "n_boot 1000 in the first, 50" in msg
    assert "model model-b" in msg and "--exclude" in msg
    copy = Results.load(run.to_parquet(tmp_path / "copy"))
    with pytest.raises(UsageError, match="the same run twice"):
        Results.concat([run, copy])
    # two models: nothing shared, joined; each cell holds each NC once
    both = Results.concat([run, _run(full, "model-a", "-")])
    cell = both.measures[(both.measures["space"] == "raw") & (both.measures["level"] == "nc")
                         & (both.measures["context"] == "nat")
                         & (both.measures["measure"] == "syn")]
    assert cell.groupby("model", observed=True).size().to_dict() == {
        "model-a": len(EN_SCORED) + 1, "model-b": len(EN_SCORED) + 1}  # + dust storm


def test_load_results_excludes_and_refuses_typos(tree) -> None:

    with pytest.raises(UsageError) as e:
        Results.load_many([tree / "b"])
    msg = str(e.value)
    assert str(tree / "b" / "backup" / "model-b") in msg and str(tree / "b" / "model-b") in msg
    res = Results.load_many([tree / "b"], exclude=[tree / "b" / "backup",
                                              tree / "b" / "model-b-boot50"])
    assert [m["config"]["n_boot"] for m in res.meta] == [1000]
    assert len(res.measures) == len(pd.read_parquet(tree / "b" / "model-b" /
                                                    "measures.parquet"))
    with pytest.raises(UsageError, match="no results directory found is there"):
        Results.load_many([tree / "b"], exclude=[tree / "a"])
    with pytest.raises(UsageError, match="no such file"):
        Results.load_many([tree / "b"], exclude=[tree / "nope"])
    with pytest.raises(UsageError, match="every results directory"):
        Results.load_many([tree / "b"], exclude=[tree / "b"])


# ---------------------------------------------------------------------------------------------
# compare


def test_compare_refuses_pooled_runs_then_n_is_the_number_of_ncs(tree, tmp_path,
                                                                   capsys) -> None:
    sel = ["--a", "measure=syn", "--b", "measure=syn", "--a", "space=raw", "--b",
           "space=raw", "--n-boot", str(N_BOOT)]
    assert main(["compare", str(tree / "a"), str(tree / "b")] + sel) == 2
    err = capsys.readouterr().err
    assert "never pools" in err and "--exclude" in err and str(tree / "b" / "model-b") in err
    out = tmp_path / "cmp.csv"
    assert main(["compare", str(tree / "a"), str(tree / "b"), "--exclude",
                 str(tree / "b" / "backup"), "--exclude", str(tree / "b" / "model-b-boot50"),
                 "--out", str(out), "--quiet"] + sel) == 0
    got = pd.read_csv(out)
    assert len(got) == 4  # 2 levels x 2 context groups, raw space, P_Syn
    for _, r in got.iterrows():
        where = {"space": "raw", "level": r["level"], "context": r["context"],
                 "measure": "syn"}
        n = _hand_n(tree / "a", "model-a", **where)
        assert n == len(EN_SCORED)
        assert r["n"] == n
        a = pd.read_parquet(tree / "a" / "model-a" / "measures.parquet")
        b = pd.read_parquet(tree / "b" / "model-b" / "measures.parquet")
        pick = [(d[(d["space"] == "raw") & (d["level"] == r["level"])
                   & (d["context"] == r["context"]) & (d["measure"] == "syn")]
                 .dropna(subset=["value", "gold"]).sort_values("nc")) for d in (a, b)]
        assert r["rho_a"] == pytest.approx(ss.spearmanr(pick[0]["value"],
                                                        pick[0]["gold"]).statistic)
        assert r["rho_b"] == pytest.approx(ss.spearmanr(pick[1]["value"],
                                                        pick[1]["gold"]).statistic)


def test_compare_of_a_hand_pooled_results_is_refused(full) -> None:
    run = _run(full, "model-b", "12")
    pooled = dataclasses.replace(run, measures=pd.concat([run.measures, run.measures],
                                                         ignore_index=True))
    other = _run(full, "model-a", "-")
    with pytest.raises(UsageError, match="more than once"):
        compare(other, pooled, select_a={"measure": "syn"}, select_b={"measure": "syn"},
                n_boot=N_BOOT)
    # unpooled: n is the number of NCs shared with a gold score, counted here
    df = compare(other, run, select_a={"measure": "syn"}, select_b={"measure": "syn"},
                 n_boot=N_BOOT)
    assert set(df["n"]) == {len(EN_SCORED)}


def test_compare_shows_progress_on_stderr_unless_quiet(tree, capsys) -> None:
    args = ["compare", str(tree / "a"), str(tree / "b" / "model-b"), "--a", "measure=syn",
            "--b", "measure=syn", "--a", "space=raw", "--b", "space=raw", "--n-boot", "50"]
    assert main(args) == 0
    cap = capsys.readouterr()
    lines = [ln for ln in cap.err.splitlines() if ln.startswith("test ")]
    assert len(lines) == 4 and lines[0].startswith("test 1/4: model-a vs model-b")
    assert lines[-1].startswith("test 4/4: ")
    assert "test " not in cap.out  # stdout: only the table (it may be piped)
    assert main(args + ["--quiet"]) == 0
    assert "test 1/" not in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# report


def test_report_refuses_pooled_runs_naming_both(tree, tmp_path, capsys) -> None:
    out = tmp_path / "report"
    assert main(["report", str(tree), "--out", str(out), "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert str(tree / "b" / "model-b") in err and "--exclude" in err
    assert not out.exists()  # refused before anything is written


def test_write_report_refuses_a_hand_pooled_results(full, tmp_path) -> None:
    run = _run(full, "model-b", "12")
    pooled = dataclasses.replace(run, measures=pd.concat([run.measures, run.measures],
                                                         ignore_index=True))
    with pytest.raises(UsageError, match="more than once"):
        write_report(pooled, tmp_path / "report", formats=("png",))
    assert not (tmp_path / "report").exists()


# ---------------------------------------------------------------------------------------------
# display names of models given as paths


def _vectors(path, words, seed):
    rng = np.random.default_rng(seed)
    words = sorted(set(words))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{len(words)} 4\n" + "".join(
        f"{w} {' '.join(f'{x:.4f}' for x in rng.normal(size=4))}\n" for w in words))
    return path


def test_vector_files_of_one_name_in_two_folders_are_two_models(tmp_path) -> None:
    pairs = ncprobe.load_pairs(synthetic.write_pairs(tmp_path / "pairs.csv"), lang="en")
    words = {w for s in pairs for w in s.tokens}
    runs = []
    for i, folder in enumerate(("a", "b")):
        enc = load_encoder(str(_vectors(tmp_path / folder / "vectors.txt", words, i)))
        assert enc.name == f"{folder}/vectors.txt"
        runs.append(ncprobe.compute(stimuli=pairs, encoder=enc, cache=False, progress=False,
                                    n_boot=0))
    both = Results.concat(runs)
    m = both.measures
    cell = m[(m["space"] == "raw") & (m["level"] == "nc") & (m["context"] == "nat")
             & (m["measure"] == "syn")]
    n_nc = len({s.nc for s in pairs})
    assert n_nc == 3
    assert cell.groupby("model", observed=True).size().to_dict() == {
        "a/vectors.txt": n_nc, "b/vectors.txt": n_nc}
    # a registered model keeps its alias as its name
    assert load_encoder("glove-6b-50d").name == "glove-6b-50d"


# ---------------------------------------------------------------------------------------------
# compare --out


def test_compare_out_never_replaces_a_file_without_overwrite(tree, tmp_path, capsys) -> None:
    notes = tmp_path / "notes.md"
    notes.write_bytes(b"# my notes\n\nweeks of work\n")
    before = notes.read_bytes()
    args = ["compare", str(tree / "a"), str(tree / "b" / "model-b"), "--a", "measure=syn",
            "--b", "measure=syn", "--n-boot", "20", "--out", str(notes)]
    assert main(args) == 2
    assert notes.read_bytes() == before
    assert "--overwrite" in capsys.readouterr().err
    assert main(args + ["--overwrite"]) == 0
    assert notes.read_bytes().startswith(b"Differences of Spearman's rho")
    umask = os.umask(0o22)
    os.umask(umask)
    assert notes.stat().st_mode & 0o777 == 0o666 & ~umask
    # a directory is never replaced, even with --overwrite
    (tmp_path / "dir.md").mkdir()
    assert main(args[:-1] + [str(tmp_path / "dir.md"), "--overwrite"]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_compare_out_unwritable_is_exit_6_before_the_tests(tree, tmp_path, capsys,
                                                            monkeypatch) -> None:
    def read_only(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")
    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    out = tmp_path / "cmp.md"
    assert main(["compare", str(tree / "a"), str(tree / "b" / "model-b"), "--a",
                 "measure=syn", "--b", "measure=syn", "--n-boot", "20", "--out",
                 str(out)]) == 6
    cap = capsys.readouterr()
    assert str(out) in cap.err and "read-only" in cap.err
    assert cap.out == "" and "test 1/" not in cap.err  # refused before any test


def test_reproduce_refuses_a_model_or_language_named_twice(tmp_path, monkeypatch) -> None:
    import ncprobe.ncimp.reproduce as rp

    def never(*a, **k):
        raise AssertionError("computed before the duplicate was refused")

    monkeypatch.setattr(rp, "compute", never)
    with pytest.raises(UsageError, match="'glove-6b-50d' given twice"):
        rp.reproduce(["glove-6b-50d", "glove-6b-50d"], ["en"], results_dir=tmp_path,
                     progress=False)
    with pytest.raises(UsageError, match="'en' given twice"):
        rp.reproduce(["glove-6b-50d"], ["en", "en"], results_dir=tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []
