"""Results directories are what ncprobe wrote, or refused: an edited table or run.json is
named (exit 3) unless accepted on purpose, the run id is reproducible (cold or warm cache:
byte-identical files), damaged directories are named errors, killed writes leave nothing
behind for long, unwritable outputs are exit 6 before computing, and modes follow the umask.

Every expectation comes from the edit the test made itself (which file, how many rows,
which values), never from the code under test."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import ncprobe
from ncprobe.cli import main
from ncprobe.errors import DataError, NcprobeError
from ncprobe.ncimp.results import Results
from ncprobe.results.store import TABLES

from .. import synthetic

FILES = [f"{t}.parquet" for t in TABLES] + ["run.json"]


@pytest.fixture(scope="module")
def full():
    return synthetic.build()


_run = synthetic.one_run  # one run of the synthetic tables, with metadata


def _edit_keeping_metadata(path: Path, change) -> None:
    """Rewrite a parquet file with pyarrow, its schema metadata (ncprobe's run id) kept: an
    edit that only a check of the content can see."""
    table = pq.read_table(path)
    pq.write_table(change(table).replace_schema_metadata(table.schema.metadata), path)


def _negate_value(table: pa.Table) -> pa.Table:
    i = table.schema.get_field_index("value")
    return table.set_column(i, "value", pc.negate(table["value"]))


def _negate_rho(table: pa.Table) -> pa.Table:
    i = table.schema.get_field_index("rho")
    return table.set_column(i, "rho", pc.negate(table["rho"]))


def _refused(path, *names_in, names_out=()) -> str:
    with pytest.raises(DataError) as e:
        Results.load(path)
    msg = str(e.value)
    assert e.value.exit_code == 3
    for n in names_in:
        assert n in msg, (n, msg)
    for n in names_out:
        assert n not in msg, (n, msg)
    return msg


# --- 1. edited results ------------------------------------------------------------------------

def test_each_edit_is_refused_naming_what_was_edited(full, tmp_path) -> None:
    res = _run(full)
    out = res.to_parquet(tmp_path / "r")
    clean = {f: (out / f).read_bytes() for f in FILES}

    def restore():
        for f, data in clean.items():
            (out / f).write_bytes(data)

    # values negated (the parquet metadata, run id included, kept as it was)
    _edit_keeping_metadata(out / "measures.parquet", _negate_value)
    msg = _refused(out, "measures.parquet", "edited since ncprobe wrote it",
                   names_out=("distributions.parquet", "run.json (", "different runs"))
    assert "--accept-edited-results" in msg
    restore()
    # 500 rows dropped
    n = len(res.measures)
    assert n > 500
    _edit_keeping_metadata(out / "measures.parquet", lambda t: t.slice(0, n - 500))
    msg = _refused(out, "measures.parquet", "edited since ncprobe wrote it",
                   names_out=("distributions.parquet",))
    assert f"{n} rows" in msg and f"{n - 500}" in msg  # what was written, what is there
    restore()
    # another table: named, and only it
    _edit_keeping_metadata(out / "distributions.parquet", lambda t: t.slice(1))
    _refused(out, "distributions.parquet", names_out=("measures.parquet",))
    restore()
    # run.json's gold changed to the type-level score
    run = json.loads((out / "run.json").read_text())
    assert run["runs"][0]["config"]["gold"] == "comp"
    run["runs"][0]["config"]["gold"] = "type"
    (out / "run.json").write_text(json.dumps(run, indent=2))
    _refused(out, "run.json", "edited since ncprobe wrote it",
             names_out=("measures.parquet", "sentences.parquet"))
    restore()
    Results.load(out)  # as written: read


def test_the_issue_s_three_edits_are_refused_by_report_and_compare(full, tmp_path, capsys,
                                                                    monkeypatch) -> None:
    out = _run(full).to_parquet(tmp_path / "r")
    _edit_keeping_metadata(out / "measures.parquet", lambda t: _negate_value(t).slice(500))
    _edit_keeping_metadata(out / "correlations.parquet", _negate_rho)
    run = json.loads((out / "run.json").read_text())
    run["runs"][0]["config"]["gold"] = "type"
    (out / "run.json").write_text(json.dumps(run))
    msg = _refused(out, "measures.parquet", "correlations.parquet", "run.json",
                   "edited since ncprobe wrote it", names_out=("cosines.parquet",))
    assert "two runs at once" not in msg
    monkeypatch.setattr("ncprobe.ncimp.report.write_report",
                        lambda *a, **k: pytest.fail("a report of edited results"))
    capsys.readouterr()
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 3
    err = capsys.readouterr().err
    assert "measures.parquet" in err and "edited since ncprobe wrote it" in err
    assert "Traceback" not in err
    assert main(["compare", str(out), "--a", "context=nat", "--b", "context=neut"]) == 3
    err = capsys.readouterr().err
    assert "correlations.parquet" in err and "edited since ncprobe wrote it" in err


def test_a_table_rewritten_by_pandas_is_edited_not_two_runs(full, tmp_path) -> None:
    out = _run(full).to_parquet(tmp_path / "r")
    df = pd.read_parquet(out / "correlations.parquet")
    df.loc[0, "rho"] = 0.99
    df.to_parquet(out / "correlations.parquet", index=False)  # pandas: no ncprobe metadata
    msg = _refused(out, "correlations.parquet", "edited since ncprobe wrote it",
                   "rewritten by another program", names_out=("measures.parquet",))
    assert "two runs at once" not in msg and "different runs" not in msg


@pytest.mark.slow
def test_edited_results_read_on_purpose_say_so(full, tmp_path, capsys, monkeypatch) -> None:
    res = _run(full)
    out = res.to_parquet(tmp_path / "r")
    _edit_keeping_metadata(out / "measures.parquet", _negate_value)
    back = Results.load(out, accept_edited=True)
    # the negated values are what is read: -1 x what was written
    np.testing.assert_allclose(back.measures["value"].to_numpy(dtype=float),
                               -res.measures["value"].to_numpy(dtype=float))
    assert back.meta[0]["edited"] == ["measures.parquet"]
    first = back.summary().splitlines()[0]
    assert "EDITED" in first and "measures.parquet" in first and "edited since ncprobe" in first
    # a report of it says so in its index
    from ncprobe.ncimp import figures as plots

    monkeypatch.setattr(plots, "FIGURES", dict(list(plots.FIGURES.items())[:1]))  # faster
    rep = tmp_path / "rep"
    assert main(["report", str(out), "--out", str(rep), "--format", "png",
                 "--accept-edited-results", "--jobs", "1"]) == 0
    index = (rep / "README.md").read_text()
    assert "EDITED" in index and "measures.parquet" in index
    # rewritten by ncprobe, the results stay marked as edited (the mark is part of run.json)
    again = back.to_parquet(tmp_path / "again")
    assert Results.load(again).meta[0]["edited"] == ["measures.parquet"]
    capsys.readouterr()
    assert main(["compare", str(out), "--a", "context=nat", "--b", "context=neut",
                 "--n-boot", "50", "--accept-edited-results"]) == 0


def test_a_table_of_another_run_is_still_named_as_such(full, tmp_path) -> None:
    a = _run(full).to_parquet(tmp_path / "a")
    b = _run(full, standardise=True).to_parquet(tmp_path / "b")
    (a / "ncs.parquet").write_bytes((b / "ncs.parquet").read_bytes())
    _refused(a, "tables of different runs", "ncs.parquet", names_out=("cosines.parquet",))


def test_results_of_a_development_version_are_refused_by_compare(full, tmp_path,
                                                                  capsys) -> None:
    """What a development version wrote (format 2: a run id, no digests) is never read, so
    never compared: exit 3 naming the directory, whatever the other side."""
    out = _run(full).to_parquet(tmp_path / "dev")
    run = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({"format": 2, "run_id": run["run_id"],
                                              "runs": run["runs"]}))
    good = _run(full, standardise=True).to_parquet(tmp_path / "good")
    capsys.readouterr()
    for argv in (["compare", str(out), "--a", "context=nat", "--b", "context=neut"],
                 ["compare", str(good), str(out)]):
        assert main(argv) == 3
        err = capsys.readouterr().err
        assert str(out) in err and "written by a development version of ncprobe" in err
        assert "Traceback" not in err


# --- 2. the run id is reproducible ------------------------------------------------------------

def test_cold_and_warm_cache_give_byte_identical_results(raw_dir, tmp_path, monkeypatch,
                                                         capsys) -> None:
    rng = np.random.default_rng(0)
    vec = tmp_path / "vec.txt"
    vec.write_text("".join(f"{w} {' '.join(f'{x:.3f}' for x in rng.normal(size=4))}\n"
                           for w in "this is a an the grey matter brain".split()))
    monkeypatch.setenv("NCPROBE_CACHE", str(tmp_path / "cache"))
    argv = ["compute", "--model", str(vec), "--context", "neut", "--n-boot", "20", "--quiet",
            "--data-dir", str(raw_dir)]
    assert main(argv + ["--out", str(tmp_path / "cold")]) == 0
    cold_err = capsys.readouterr().err
    assert main(argv + ["--out", str(tmp_path / "warm")]) == 0
    warm_err = capsys.readouterr().err
    # the same bytes, every file ...
    for f in FILES:
        assert (tmp_path / "cold" / f).read_bytes() == (tmp_path / "warm" / f).read_bytes(), f
    run = json.loads((tmp_path / "cold" / "run.json").read_text())
    assert "encoded" not in run["runs"][0]
    # ... though the two runs went differently (the first encoded, the second read the
    # cache): said on stderr, not stored
    assert "encoded now" in cold_err and not re.search(r"\b0 of \d+ unique", cold_err)
    assert re.search(r"\b0 of \d+ unique items encoded now", warm_err)


def test_the_run_id_ignores_how_the_run_went(full, tmp_path) -> None:
    res = _run(full)
    a = res.to_parquet(tmp_path / "a")
    assert json.loads((a / "run.json").read_text())["run_id"] == res.run_id
    res.meta[0].update(encoded=123, cache_problems=["shard-x.npz: cannot be used"])
    b = res.to_parquet(tmp_path / "b")
    for f in FILES:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    assert json.loads((b / "run.json").read_text())["run_id"] == res.run_id
    assert res.notes[-1].endswith("shard-x.npz: cannot be used")  # said in memory, not stored


# --- 3. damaged results directories -----------------------------------------------------------

def test_a_table_without_its_value_column(full, tmp_path, capsys) -> None:
    out = _run(full).to_parquet(tmp_path / "r")
    _edit_keeping_metadata(out / "measures.parquet", lambda t: t.drop_columns(["value"]))
    with pytest.raises(DataError) as e:
        Results.load(out)
    assert e.value.exit_code == 3
    assert "measures.parquet" in str(e.value) and "'value'" in str(e.value)
    capsys.readouterr()
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 3
    err = capsys.readouterr().err
    assert "measures.parquet" in err and "'value'" in err and "Traceback" not in err
    assert main(["compare", str(out), "--a", "context=nat", "--b", "context=neut"]) == 3
    err = capsys.readouterr().err
    assert "measures.parquet" in err and "'value'" in err
    with pytest.raises(DataError, match="'value'"):  # damaged: refused even on purpose
        Results.load(out, accept_edited=True)


def test_value_stored_as_text(full, tmp_path, capsys) -> None:
    out = _run(full).to_parquet(tmp_path / "r")

    def as_text(t: pa.Table) -> pa.Table:
        i = t.schema.get_field_index("value")
        return t.set_column(i, "value", pc.cast(t["value"], pa.string()))

    _edit_keeping_metadata(out / "measures.parquet", as_text)
    capsys.readouterr()
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 3
    err = capsys.readouterr().err
    assert "measures.parquet" in err and "'value'" in err and "Traceback" not in err
    assert "text" in err
    with pytest.raises(DataError) as e:  # damaged: refused even on purpose
        Results.load(out, accept_edited=True)
    assert "measures.parquet" in str(e.value) and "'value'" in str(e.value)


@pytest.mark.parametrize("damage", ["config", "model", "lang"])
def test_a_run_without_its_config(full, tmp_path, capsys, damage) -> None:
    out = _run(full).to_parquet(tmp_path / "r")
    run = json.loads((out / "run.json").read_text())
    if damage == "config":
        del run["runs"][0]["config"]
    else:
        del run["runs"][0]["config"][damage]
    (out / "run.json").write_text(json.dumps(run))
    capsys.readouterr()
    for argv in (["report", str(out), "--out", str(tmp_path / "rep")],
                 ["compare", str(out), "--a", "context=nat", "--b", "context=neut"]):
        assert main(argv) == 3
        err = capsys.readouterr().err
        assert "run.json" in err and f"'{damage}'" in err and "Traceback" not in err
    with pytest.raises(DataError) as e:  # damaged: refused even on purpose
        Results.load(out, accept_edited=True)
    assert "run.json" in str(e.value) and f"'{damage}'" in str(e.value)


# --- 4. leftovers of killed writes ------------------------------------------------------------

def test_leftovers_of_killed_writes_are_removed_by_the_next_one(full, tmp_path) -> None:
    from ncprobe._io import dir_lock

    res = _run(full)
    target = res.to_parquet(tmp_path / "r")
    empty_tmp = tmp_path / ".r.k1ll3d_x.tmp"  # killed right after mkdtemp: empty
    empty_tmp.mkdir()
    partial_old = tmp_path / ".r.old-0123456789ab"  # killed while removing the previous run
    partial_old.mkdir()
    (partial_old / "ncs.parquet").write_bytes((target / "ncs.parquet").read_bytes())
    whole_old = tmp_path / ".r.old-abcdef012345"  # killed before removing it at all
    whole_old.mkdir()
    for f in FILES:
        (whole_old / f).write_bytes((target / f).read_bytes())
    busy = tmp_path / ".r.wr1t1ng_.tmp"  # another process is writing it now
    busy.mkdir()
    mine = tmp_path / ".r.old-fedcba987654"  # named like one, holding a file of the user's
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with dir_lock(busy):
        res.to_parquet(tmp_path / "r")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([busy.name, mine.name, "r"])
    assert (mine / "notes.txt").read_text() == "keep"


def test_a_previous_run_left_aside_is_put_back_not_lost(full, tmp_path) -> None:
    """A write killed between its two renames leaves the previous run as .r.old-<id> and no r:
    the next write puts it back, so a different run still needs --overwrite."""
    first = _run(full)
    out = first.to_parquet(tmp_path / "r")
    os.rename(out, tmp_path / ".r.old-0123456789ab")
    other = _run(full, standardise=True)
    with pytest.raises(NcprobeError, match="holds another run") as e:
        other.to_parquet(tmp_path / "r")
    assert e.value.exit_code == 2
    assert Results.load(tmp_path / "r").meta[0]["config"]["standardise"] is False
    other.to_parquet(tmp_path / "r", overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_a_writer_whose_fresh_directory_was_tidied_away_makes_another(full, tmp_path,
                                                                      monkeypatch) -> None:
    """Between mkdtemp and its lock, a fresh directory is empty and unlocked: another writer
    may take it for a leftover and remove it. The write goes on in a new one."""
    import tempfile

    real = tempfile.mkdtemp
    made = []

    def removed_at_once(*args, **kwargs):
        path = real(*args, **kwargs)
        made.append(path)
        if len(made) == 1:
            os.rmdir(path)  # what the other writer's tidying does
        return path

    monkeypatch.setattr(tempfile, "mkdtemp", removed_at_once)
    res = _run(full)
    out = res.to_parquet(tmp_path / "r")
    monkeypatch.undo()
    assert len(made) == 2
    assert len(Results.load(out).measures) == len(res.measures)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


# --- 5. unwritable outputs, file modes --------------------------------------------------------

def _read_only(monkeypatch, root: Path, code: int = errno.EROFS) -> None:
    """Make creating anything under ``root`` fail as on a read-only file system (the tests run
    as root, for whom chmod 0555 blocks nothing)."""
    real_mkdir, real_open = os.mkdir, os.open
    root = str(root.resolve())

    def under(path) -> bool:
        return os.path.abspath(os.fsdecode(path)).startswith(root + os.sep)

    def mkdir(path, *args, **kwargs):
        if under(path):
            raise OSError(code, os.strerror(code), os.fsdecode(path))
        return real_mkdir(path, *args, **kwargs)

    def open_(path, flags, *args, **kwargs):
        if under(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(code, os.strerror(code), os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)


@pytest.mark.parametrize("code, cause", [(errno.EROFS, "read-only"),
                                         (errno.EACCES, "permission denied")])
def test_compute_refuses_an_unwritable_out_before_computing(tmp_path, monkeypatch, capsys,
                                                            code, cause) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    monkeypatch.setattr("ncprobe.ncimp.pipeline.compute",
                        lambda *a, **k: pytest.fail("computed although --out cannot be written"))
    _read_only(monkeypatch, ro, code)
    for out in (ro / "r", ro / "deeper" / "r"):
        assert main(["compute", "--out", str(out), "--quiet"]) == 6
        err = capsys.readouterr().err
        assert str(out) in err and cause in err and "Traceback" not in err
    monkeypatch.undo()
    assert list(ro.iterdir()) == []


def test_to_parquet_names_an_unwritable_directory(full, tmp_path, monkeypatch) -> None:
    from ncprobe.errors import OutputError

    ro = tmp_path / "ro"
    ro.mkdir()
    _read_only(monkeypatch, ro)
    with pytest.raises(OutputError) as e:
        _run(full).to_parquet(ro / "r")
    monkeypatch.undo()
    assert e.value.exit_code == 6 and str(ro) in str(e.value) and "read-only" in str(e.value)
    assert list(ro.iterdir()) == []


def test_a_full_disk_while_writing_keeps_the_previous_run(full, tmp_path, monkeypatch) -> None:
    from ncprobe.errors import OutputError

    first = _run(full)
    out = first.to_parquet(tmp_path / "r")
    real = pq.write_table
    calls = []

    def disk_fills(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(*args, **kwargs)

    monkeypatch.setattr(pq, "write_table", disk_fills)
    with pytest.raises(OutputError) as e:
        _run(full, standardise=True).to_parquet(out, overwrite=True)
    monkeypatch.undo()
    assert e.value.exit_code == 6 and "disk is full" in str(e.value) and "r" in str(e.value)
    assert Results.load(out).meta[0]["config"]["standardise"] is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


@pytest.mark.parametrize("umask, dir_mode, file_mode", [(0o022, 0o755, 0o644),
                                                        (0o027, 0o750, 0o640)])
def test_results_get_the_modes_of_the_umask(full, tmp_path, umask, dir_mode, file_mode) -> None:
    old = os.umask(umask)
    try:
        out = _run(full).to_parquet(tmp_path / "r")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(out).st_mode) == dir_mode
    for f in FILES:
        assert stat.S_IMODE(os.stat(out / f).st_mode) == file_mode, f


def test_the_public_api_reads_edited_results_on_purpose_only(full, tmp_path) -> None:
    out = _run(full).to_parquet(tmp_path / "r")
    _edit_keeping_metadata(out / "distributions.parquet", lambda t: t.slice(1))
    with pytest.raises(DataError, match="distributions.parquet"):
        ncprobe.Results.load(out)
    assert ncprobe.Results.load(out, accept_edited=True).meta[0]["edited"] == [
        "distributions.parquet"]


def test_reproduce_refuses_an_unwritable_results_dir_before_computing(tmp_path,
                                                                      monkeypatch) -> None:
    from ncprobe.errors import OutputError
    from ncprobe.ncimp import reproduce

    ro = tmp_path / "ro"
    ro.mkdir()
    monkeypatch.setattr(reproduce, "compute", lambda *a, **k: pytest.fail("computed"))
    _read_only(monkeypatch, ro)
    with pytest.raises(OutputError) as e:
        reproduce.reproduce(["glove-6b-50d"], ["en"], results_dir=ro / "results", n_boot=50)
    monkeypatch.undo()
    assert e.value.exit_code == 6 and str(ro / "results") in str(e.value)
    assert list(ro.iterdir()) == []
