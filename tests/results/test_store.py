"""Results directories: written as one unit, never mixed, never replacing another run or
someone else's files; `report` on a parent directory; report directories left intact."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from ncprobe.cli import main
from ncprobe.errors import DataError, NcprobeError
from ncprobe.ncimp.config import RunConfig
from ncprobe.ncimp.pipeline import run_dir
from ncprobe.ncimp.results import Results
from ncprobe.results.store import TABLES

from .. import synthetic


@pytest.fixture(scope="module")
def full():
    return synthetic.build()


_run = synthetic.one_run  # one run of the synthetic tables, with metadata


def _same(a: Results, b: Results) -> None:
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(a, name).reset_index(drop=True),
                                      getattr(b, name).reset_index(drop=True),
                                      check_dtype=False)
    assert a.meta == b.meta


def test_every_table_carries_the_run_id_of_run_json(full, tmp_path) -> None:
    res = _run(full)
    out = res.to_parquet(tmp_path / "r")
    run = json.loads((out / "run.json").read_text())
    ids = {name: pq.read_schema(out / f"{name}.parquet").metadata[b"ncprobe.run_id"].decode()
           for name in TABLES}
    assert set(ids.values()) == {run["run_id"]} and len(run["run_id"]) == 32
    _same(Results.load(out), res)
    # deterministic: the same results give the same id (and byte-identical files)
    again = res.to_parquet(tmp_path / "r2")
    assert json.loads((again / "run.json").read_text())["run_id"] == run["run_id"]
    assert (again / "measures.parquet").read_bytes() == (out / "measures.parquet").read_bytes()


def test_tables_of_two_runs_in_one_directory_are_refused(full, tmp_path) -> None:
    a = _run(full).to_parquet(tmp_path / "a")
    b = _run(full, "model-b").to_parquet(tmp_path / "b")
    (a / "measures.parquet").write_bytes((b / "measures.parquet").read_bytes())
    with pytest.raises(DataError) as e:
        Results.load(a)
    assert e.value.exit_code == 3
    assert "tables of different runs" in str(e.value) and "measures.parquet" in str(e.value)
    assert "cosines.parquet" not in str(e.value)  # only the stray table is named


def test_an_interrupted_write_leaves_the_previous_run_whole(full, tmp_path, monkeypatch) -> None:
    out = tmp_path / "r"
    first = _run(full)
    first.to_parquet(out)
    written = []
    real = pq.write_table

    def dies_after_three_tables(*args, **kwargs):
        if len(written) == 3:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the write
        real(*args, **kwargs)
        written.append(args[1])

    monkeypatch.setattr(pq, "write_table", dies_after_three_tables)
    with pytest.raises(KeyboardInterrupt):
        _run(full, "model-b").to_parquet(out, overwrite=True)
    monkeypatch.undo()
    _same(Results.load(out), first)  # all of the first run, none of the second
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # no temporary directory left


def test_what_a_killed_write_left_is_removed_by_the_next_one(full, tmp_path) -> None:
    from ncprobe._io import dir_lock

    left = tmp_path / ".r.k1ll3d_x.tmp"  # as a write killed before its rename leaves it
    left.mkdir()
    (left / "cosines.parquet").write_bytes(b"partial")
    busy = tmp_path / ".r.wr1t1ng_.tmp"  # another process writing right now (locked)
    busy.mkdir()
    (busy / "cosines.parquet").write_bytes(b"partial")
    mine = tmp_path / ".r.n0tm1n3_.tmp"  # the same pattern, but a file ncprobe never writes
    mine.mkdir()
    (mine / "keep.txt").write_text("keep")
    with dir_lock(busy):
        _run(full).to_parquet(tmp_path / "r")
    assert sorted(p.name for p in tmp_path.iterdir()) == [mine.name, busy.name, "r"]


def test_two_writers_of_the_same_directory_do_not_collide(full, tmp_path, monkeypatch) -> None:
    """A second run writes the same --out while the first is between two tables."""
    out = tmp_path / "r"
    res = _run(full)
    real = pq.write_table
    calls = []

    def second_writer_cuts_in(*args, **kwargs):
        real(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            res.to_parquet(out)  # the same run, started a moment later

    monkeypatch.setattr(pq, "write_table", second_writer_cuts_in)
    res.to_parquet(out)
    monkeypatch.undo()
    _same(Results.load(out), res)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_another_run_is_not_replaced_without_overwrite(full, tmp_path) -> None:
    out = tmp_path / "r"
    first = _run(full)
    first.to_parquet(out)
    first.to_parquet(out)  # the same run again: replaced, no question
    other = _run(full, standardise=True)
    with pytest.raises(NcprobeError) as e:
        other.to_parquet(out)
    assert e.value.exit_code == 2  # a usage error
    assert "holds another run" in str(e.value) and "standardise False there, True now" \
        in str(e.value) and "--overwrite" in str(e.value)
    _same(Results.load(out), first)
    other.to_parquet(out, overwrite=True)
    _same(Results.load(out), other)
    # a different model fingerprint (weights) with the same options is another run too
    changed = _run(full, standardise=True)
    changed.meta[0]["fingerprint"] = {"name": "model-a", "format": 1, "weights": "new"}
    with pytest.raises(NcprobeError, match="the model") as e:
        changed.to_parquet(out)
    assert e.value.exit_code == 2


def test_a_directory_that_is_not_ncprobe_results_is_never_replaced(full, tmp_path) -> None:
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "chapter1.tex").write_text("my work")
    for overwrite in (False, True):
        with pytest.raises(NcprobeError, match="not an ncprobe results directory") as e:
            _run(full).to_parquet(mine, overwrite=overwrite)
        assert e.value.exit_code == 2
    assert [p.name for p in mine.iterdir()] == ["chapter1.tex"]
    # results directory plus a file of the user's: not replaced either
    out = _run(full).to_parquet(tmp_path / "r")
    (out / "notes.md").write_text("my notes")
    with pytest.raises(NcprobeError, match="notes.md") as e:
        _run(full, standardise=True).to_parquet(out, overwrite=True)
    assert e.value.exit_code == 2
    assert (out / "notes.md").read_text() == "my notes"
    assert (tmp_path / "empty").mkdir() is None
    _run(full).to_parquet(tmp_path / "empty")  # an empty directory may be used


@pytest.mark.parametrize("fmt", [1, 2, 3])
def test_results_of_a_development_version_are_refused(full, tmp_path, capsys, fmt) -> None:
    """Formats 1-3 (no run id; no digests; the gold column named ``comp``) were written by
    development versions only: refused, naming the directory, never read."""
    out = _run(full).to_parquet(tmp_path / "old")
    run = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**run, "format": fmt}))
    for accept_edited in (False, True):  # not an edit: refused even on purpose
        with pytest.raises(DataError) as e:
            Results.load(out, accept_edited=accept_edited)
        assert e.value.exit_code == 3
        assert str(out) in str(e.value) and f"results format {fmt}" in str(e.value)
        assert "written by a development version of ncprobe: run it again" in str(e.value)
    capsys.readouterr()
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 3
    err = capsys.readouterr().err
    assert "development version" in err and str(out) in err and "Traceback" not in err
    assert not (tmp_path / "rep").exists()


def test_results_of_a_later_format_are_refused(full, tmp_path) -> None:
    out = _run(full).to_parquet(tmp_path / "new")
    run = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**run, "format": 7}))
    with pytest.raises(DataError, match="results format 7; this ncprobe reads format 4") as e:
        Results.load(out)
    assert "development version" not in str(e.value)


def test_old_temporary_names_in_a_results_directory_are_not_ncprobe_s(full, tmp_path) -> None:
    """A development version wrote ``.<file>.tmp`` inside a results directory; ncprobe no
    longer does: such a file makes the directory one it never replaces."""
    out = _run(full).to_parquet(tmp_path / "r")
    (out / ".run.json.tmp").write_text("{}")
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(NcprobeError, match=r"not an ncprobe results directory .*\.run\.json\.tmp"):
        _run(full).to_parquet(out)
    assert sorted(p.name for p in out.iterdir()) == before


def test_default_directory_names_follow_the_options() -> None:
    base = run_dir("results", "glove-6b-50d", "en", RunConfig())
    assert base.as_posix() == "results/glove-6b-50d-en"
    assert run_dir("results", "minilm", "en", RunConfig(model="minilm", layers="all",
                                                        standardise=True)).name == \
        "minilm-en-layers_all-std"
    assert run_dir("r", "glove-6b-50d", "en", RunConfig(n_boot=0)).name == "glove-6b-50d-en-boot_0"
    # options that do not change results do not change the name
    assert run_dir("results", "glove-6b-50d", "en", RunConfig(batch_size=4, device="cpu")) == base
    # different layer specs stay apart, even when a character had to be replaced
    a = run_dir("r", "m", "en", RunConfig(layers="9 10")).name
    b = run_dir("r", "m", "en", RunConfig(layers="9_10")).name
    assert a != b and "/" not in a and " " not in a


def _glove(argv, raw_dir, cache):
    return main(["compute", "--quiet", "--n-boot", "0", "--context", "neut", "--data-dir",
                 str(raw_dir), "--cache-dir", str(cache)] + argv)


@pytest.mark.slow  # ~10 s: five GloVe runs
def test_compute_names_default_directories_and_refuses_to_replace_another_run(
        raw_dir, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "cache"
    assert _glove([], raw_dir, cache) == 0
    assert _glove(["--standardise"], raw_dir, cache) == 0
    plain = Results.load("results/glove-6b-50d-en-ctx_neut-boot_0")
    std = Results.load("results/glove-6b-50d-en-ctx_neut-std-boot_0")
    assert set(plain.cosines["space"]) == {"raw"}
    assert set(std.cosines["space"]) == {"raw", "standardised"}
    out = str(tmp_path / "mine")
    assert _glove(["--out", out], raw_dir, cache) == 0
    assert _glove(["--out", out], raw_dir, cache) == 0  # the same run: replaced
    capsys.readouterr()

    def must_not_run(*a, **k):
        raise AssertionError("computed although the output was refused")

    monkeypatch.setattr("ncprobe.ncimp.pipeline.compute", must_not_run)
    assert _glove(["--out", out, "--standardise"], raw_dir, cache) == 2
    err = capsys.readouterr().err
    assert "holds another run" in err and "--overwrite" in err
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    assert _glove(["--out", out, "--standardise", "--overwrite"], raw_dir, cache) == 0
    assert set(Results.load(out).cosines["space"]) == {"raw", "standardised"}


def test_reproduce_refuses_before_computing(full, tmp_path, monkeypatch) -> None:
    from ncprobe.ncimp import reproduce

    target = run_dir(tmp_path, "glove-6b-50d", "en", RunConfig(n_boot=50))
    _run(full, "glove-6b-50d", n_boot=50, standardise=True).to_parquet(target)
    monkeypatch.setattr(reproduce, "compute", lambda *a, **k: pytest.fail("computed"))
    with pytest.raises(NcprobeError, match="holds another run") as e:
        reproduce.reproduce(["glove-6b-50d"], ["en"], results_dir=tmp_path, n_boot=50)
    assert e.value.exit_code == 2


def test_report_finds_the_results_directories_under_a_parent(full, tmp_path, monkeypatch,
                                                             capsys) -> None:
    parent = tmp_path / "all"
    _run(full, "model-b", "pt").to_parquet(parent / "b" / "model-b-pt")
    _run(full, "model-a", "en").to_parquet(parent / "model-a-en")
    (parent / "notes").mkdir()
    seen = []
    monkeypatch.setattr("ncprobe.ncimp.report.write_report",
                        lambda res, out, **k: seen.append(res.meta) or [])
    assert main(["report", str(parent), "--out", str(tmp_path / "rep")]) == 0
    assert [(m["config"]["model"], m["config"]["lang"]) for m in seen[0]] == [
        ("model-b", "pt"), ("model-a", "en")]  # sorted by path: b/model-b-pt < model-a-en
    capsys.readouterr()
    assert main(["report", str(parent / "notes")]) == 2
    assert "holds no results directory" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    assert "no such directory" in capsys.readouterr().err


@pytest.mark.slow
def test_report_never_replaces_files_it_did_not_write(full, tmp_path, monkeypatch) -> None:
    from ncprobe.ncimp import figures as plots
    from ncprobe.ncimp.report import write_report

    monkeypatch.setattr(plots, "FIGURES", dict(list(plots.FIGURES.items())[:1]))  # faster
    res = _run(full)
    out = tmp_path / "paper"
    out.mkdir()
    (out / "README.md").write_text("# My paper\n")
    (out / "draft.tex").write_text("draft")
    with pytest.raises(NcprobeError, match="README.md") as e:
        write_report(res, out, formats=("png",), dpi=40)
    assert e.value.exit_code == 2
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "draft.tex"]
    assert (out / "README.md").read_text() == "# My paper\n"
    # a report directory with a file of the user's beside it: refreshed, the file kept
    rep = tmp_path / "rep"
    svg = {p.name for p in write_report(res, rep, formats=("png", "svg"), dpi=40)}
    first = {p.name for p in write_report(res, rep, formats=("png",), dpi=40)}
    assert svg - first == {"fig01_sent_cosines.svg"}
    assert not (rep / "fig01_sent_cosines.svg").exists()  # its own stale file: removed
    (rep / "my-notes.txt").write_text("keep")
    (rep / "fig99_old.png").write_bytes(b"stale")  # not ncprobe's: kept
    second = {p.name for p in write_report(res, rep, formats=("png",), dpi=40)}
    assert first == second and (rep / "my-notes.txt").read_text() == "keep"
    assert (rep / "fig99_old.png").read_bytes() == b"stale"
    assert {p.name for p in rep.iterdir()} == second | {"my-notes.txt", "fig99_old.png",
                                                        ".ncprobe-report.json"}



def test_a_rerun_of_a_model_named_by_its_path_is_the_same_run(raw_dir, tmp_path,
                                                              monkeypatch) -> None:
    # the tables name the vector file ("<folder>/vec.txt"); the config keeps the path as
    # asked, so the second identical command is recognised as the same run instead of being
    # refused
    import numpy as np

    rng = np.random.default_rng(0)
    vec = tmp_path / "vec.txt"
    vec.write_text("".join(f"{w} {' '.join(f'{x:.3f}' for x in rng.normal(size=4))}\n"
                           for w in "this is a an the grey matter brain".split()))
    monkeypatch.setenv("NCPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    argv = ["compute", "--model", str(vec), "--context", "neut", "--n-boot", "0", "--quiet",
            "--data-dir", str(raw_dir)]
    assert main(argv) == 0
    assert main(argv) == 0
    out = run_dir("results", str(vec), "en", RunConfig(model=str(vec), contexts="neut",
                                                        n_boot=0))
    res = Results.load(out)
    assert set(res.cosines["model"]) == {f"{tmp_path.name}/vec.txt"}
    assert res.meta[0]["config"]["model"] == str(vec)


def test_a_probes_results_of_another_table_version_are_refused_with_what_to_do(tmp_path) -> None:
    """Regression (issue 38): NCC and AStitch tables gained columns; a directory an earlier
    ncprobe wrote was refused as "damaged or edited". A layout's version is recorded in
    run.json from 2 on, and another version is refused naming both and what to do."""
    from dataclasses import replace

    from ncprobe.results import store

    old = store.Layout("versioned", ("items",), {"items": ("model", "score")},
                       frozenset({"score"}), run_keys=("model",))
    new = replace(old, version=2)
    frames = {"items": pd.DataFrame({"model": ["m"], "score": [0.5]})}
    meta = [{"config": {"model": "m"}}]
    store.write_results(frames, meta, tmp_path / "v1", layout=old)
    store.write_results(frames, meta, tmp_path / "v2", layout=new)
    # version 1 wrote no key (its run.json is as before); version 2 records its own
    assert "version" not in json.loads((tmp_path / "v1" / "run.json").read_text())
    assert json.loads((tmp_path / "v2" / "run.json").read_text())["version"] == 2
    tables, _ = store.read_results(tmp_path / "v2", layout=new)
    assert tables["items"]["score"].tolist() == [0.5]
    with pytest.raises(DataError, match=r"version 1, written by an earlier ncprobe; this "
                       r"ncprobe reads version 2 .*recompute them") as got:
        store.read_results(tmp_path / "v1", layout=new)
    assert "damaged" not in str(got.value)
    with pytest.raises(DataError, match="version 2, written by a newer ncprobe"):
        store.read_results(tmp_path / "v2", layout=old)


# ---------------------------------------------------------------------------------------------
# the store knows no probe (issue 39): every layout is given, a run.json naming none is NCIMP's


def test_a_run_json_naming_no_probe_is_read_as_ncimps_with_its_run_id_byte_for_byte(
        full, tmp_path) -> None:
    """NCIMP's run.json names no probe (written so before probes were named, and kept so):
    the store says so (``probe_of`` is None), the registry maps it to the probe that declares
    it reads such results, and the run id is the hash of exactly what it always hashed (the
    format, each table's rows and digest, the runs: recomputed here by hand)."""
    import hashlib

    from ncprobe.ncc.results import NccResults
    from ncprobe.probes import get_probe, results_by_probe, results_probe
    from ncprobe.results import store

    res = _run(full)
    out = res.to_parquet(tmp_path / "old")
    written = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert "probe" not in written and "version" not in written
    tables = {n: {"rows": t["rows"], "content": t["content"]}
              for n, t in written["tables"].items()}
    text = json.dumps({"format": 4, "tables": tables, "runs": written["runs"]},
                      sort_keys=True, ensure_ascii=False)
    assert written["run_id"] == hashlib.sha256(text.encode()).hexdigest()[:32] == res.run_id
    assert store.probe_of(out) is None
    assert results_probe(None) == "ncimp" and get_probe("ncimp").reads_unnamed_results
    assert [p for p in ("idiolink", "ncc", "astitch") if get_probe(p).reads_unnamed_results] == []
    assert results_by_probe([tmp_path]) == {"ncimp": [out]}
    _same(Results.load(out), res)
    # a probe whose run.json names it never reads a directory naming none
    with pytest.raises(NcprobeError, match=r"holds results whose run.json names no probe.*not "
                       r"of the 'ncc' probe"):
        NccResults.load(out)


def test_no_store_function_takes_a_probes_layout_by_default(tmp_path) -> None:
    """Every function of the store that needs a layout is given it: none falls back on
    NCIMP's, and the store defines no layout of its own (nor a registry of them)."""
    import inspect

    from ncprobe.results import store

    takes = {name: inspect.signature(f).parameters["layout"]
             for name, f in vars(store).items()
             if inspect.isfunction(f) and f.__module__ == store.__name__
             and "layout" in inspect.signature(f).parameters}
    assert {"table_entries", "run_id", "write_results", "read_results", "_check_table",
            "check_target", "refuse_other_probe", "run_identity", "model_runs"} <= set(takes)
    assert {n for n, p in takes.items() if p.default is not inspect.Parameter.empty} == set()
    assert not [n for n, v in vars(store).items() if isinstance(v, store.Layout)]
    assert not {"NCIMP_LAYOUT", "LAYOUTS", "register_layout", "layout_of"} & set(vars(store))
    (tmp_path / "run.json").write_text("{}")
    with pytest.raises(TypeError, match="layout"):
        store.read_results(tmp_path)  # type: ignore[call-arg]


def test_run_identity_fills_a_runs_config_from_its_layouts_config_class() -> None:
    """A field a run's config leaves out reads as the default of the config class its layout
    names (Layout.config), not of NCIMP's RunConfig; a layout naming none fills nothing."""
    from dataclasses import dataclass, replace

    from ncprobe.results import store

    @dataclass(frozen=True)
    class ToyConfig:
        model: str = "a"
        depth: int = 3
        device: str = "cpu"  # where it ran: never identity (store.NOT_IDENTITY)

    layout = store.Layout("toy", ("items",), {"items": ("model",)}, frozenset(),
                          config=ToyConfig)
    short = [{"config": {"model": "m"}, "fingerprint": None, "data_sources": None}]
    full = [{"config": {"model": "m", "depth": 3}, "fingerprint": None, "data_sources": None}]
    other = [{"config": {"model": "m", "depth": 4}, "fingerprint": None, "data_sources": None}]
    ident = store.run_identity(short, layout)
    assert ident == store.run_identity(full, layout) != store.run_identity(other, layout)
    assert ident[0]["config"] == {"model": "m", "depth": 3}  # device left out, no n_boot
    bare = replace(layout, config=None)
    assert store.run_identity(short, bare) != store.run_identity(full, bare)
    # NCIMP's layout fills RunConfig's defaults, as run.json leaves some out at them
    from ncprobe.ncimp.results import NCIMP_LAYOUT

    assert NCIMP_LAYOUT.config is RunConfig
    assert store.run_identity(RunConfig(n_boot=7).to_dict(), NCIMP_LAYOUT)[0]["config"][
        "n_boot"] == 7
