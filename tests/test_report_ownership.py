"""Issue 19, the report writer: files the user changed are never replaced or removed, an
interrupted report resumes, refused outputs and formats, unwritable outputs (exit 6), figure
workers that end with their parent, progress on stderr, and `reproduce --device`.

The expectations are derived here, not read from the code under test: file contents are
compared byte for byte with what the test wrote (or with an uninterrupted report), hashes are
computed with hashlib, modes from the umask the test sets, counts by hand.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ncprobe import cli, drawing, owned
from ncprobe.errors import NcprobeError
from ncprobe.ncimp import figures as plots
from ncprobe.ncimp import report, tables
from ncprobe.ncimp.report import write_report

from . import synthetic

MANIFEST = ".ncprobe-report.json"


@pytest.fixture(scope="module")
def res():
    """model-a alone (one layer view): the study's figures and tables, nothing layer-wise."""
    return synthetic.subset(synthetic.build(), lambda df: (
        df["model"] == "model-a") if "model" in df.columns else np.ones(len(df), bool))


@pytest.fixture(scope="module")
def results_dir(res, tmp_path_factory) -> Path:
    """``res`` saved as a results directory (run.json and tables), as `compute` writes one."""
    return res.to_parquet(tmp_path_factory.mktemp("runs") / "model-a-en")


@pytest.fixture
def two_figures(monkeypatch):
    """Two figures of the study only (:func:`synthetic.quick_figures`): the report logic is the
    same, and faster."""
    monkeypatch.setattr(plots, "FIGURES", synthetic.quick_figures())
    return list(plots.FIGURES)


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------------
# 1. ownership: content, not names


@pytest.mark.slow
def test_a_file_the_user_changed_is_never_replaced(res, tmp_path, two_figures):
    out = tmp_path / "rep"
    first = write_report(res, out, formats=("png",), dpi=30)
    assert (out / "README.md") in first
    (out / "README.md").write_text("# My notes on the figures\n")  # the index, now notes
    before = _snapshot(out)
    with pytest.raises(NcprobeError, match=r"README\.md \(changed since ncprobe wrote it\)") as e:
        write_report(res, out, formats=("png",), dpi=30)
    assert e.value.exit_code == 2
    assert _snapshot(out) == before  # nothing written, nothing removed
    # a figure edited by hand (same name, other bytes): refused as well
    (out / "README.md").unlink()
    fig = out / f"fig01_{two_figures[0]}.png"
    fig.write_bytes(fig.read_bytes() + b"hand-tuned")
    before = _snapshot(out)
    with pytest.raises(NcprobeError, match="fig01_") as e:
        write_report(res, out, formats=("png",), dpi=30)
    assert e.value.exit_code == 2 and _snapshot(out) == before


@pytest.mark.slow
def test_a_changed_file_no_longer_written_is_kept_and_named(res, tmp_path, two_figures, caplog):
    out = tmp_path / "rep"
    write_report(res, out, formats=("png", "svg"), dpi=30)
    tuned = out / f"fig01_{two_figures[0]}.svg"
    untouched = out / f"fig02_{two_figures[1]}.svg"
    tuned.write_bytes(tuned.read_bytes().replace(b"<svg", b"<!-- tuned by hand -->\n<svg", 1))
    mine = tuned.read_bytes()
    with caplog.at_level(logging.WARNING, logger="ncprobe.ncimp.report"):
        second = write_report(res, out, formats=("png",), dpi=30)  # svg no longer written
    assert tuned.read_bytes() == mine  # kept, as the user left it
    assert not untouched.exists()  # ncprobe's own stale file, unchanged since: removed
    warned = [r.getMessage() for r in caplog.records
              if r.name == "ncprobe.ncimp.report" and r.levelno == logging.WARNING]
    assert len(warned) == 1 and tuned.name in warned[0] and untouched.name not in warned[0]
    # the manifest names what this report wrote, with the hash of each file's content
    manifest = json.loads((out / MANIFEST).read_text())
    assert sorted(manifest["files"]) == sorted(p.name for p in second)
    assert all(manifest["files"][p.name] == _sha256(p) for p in second)
    # the kept file is not ncprobe's any more: asking for svg again is refused, file intact
    with pytest.raises(NcprobeError, match=tuned.name):
        write_report(res, out, formats=("png", "svg"), dpi=30)
    assert tuned.read_bytes() == mine


DEVELOPMENT = "written by a development version of ncprobe: run it again"


def _development_report(out: Path, manifest: dict | None) -> None:
    """A report directory as a development version of ncprobe left it: an index, a figure and
    a table, and ``manifest`` (``None``: none), each written here by hand."""
    out.mkdir()
    files = {"README.md": b"# ncprobe report\n\nMade by ncprobe 0.0.dev0 from these runs:\n",
             "fig01_affinity.png": b"\x89PNG not a real figure",
             "table_means.md": b"| model |\n"}
    for name, data in files.items():
        (out / name).write_bytes(data)
    if manifest is not None:
        manifest = dict(manifest)  # the parameter is shared between runs
        if manifest.pop("hashes", False):
            manifest["files"] = {n: hashlib.sha256(d).hexdigest() for n, d in files.items()}
        (out / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize("manifest", [
    {"format": 1, "ncprobe": "0.1.0", "files": ["README.md", "fig01_affinity.png",
                                               "table_means.md"]},  # names only
    {"format": 2, "ncprobe": "0.1.0", "hashes": True},  # no kind of report
    None,  # an index, but no manifest
], ids=["names-only", "no-kind", "no-manifest"])
def test_a_report_of_a_development_version_is_refused(res, results_dir, tmp_path, capsys,
                                                      monkeypatch, manifest):
    monkeypatch.setattr(report, "_render", lambda *a, **k: pytest.fail("drew a figure"))
    out = tmp_path / "rep"
    _development_report(out, manifest)
    before = _snapshot(out)
    with pytest.raises(NcprobeError) as e:
        write_report(res, out, formats=("png",), dpi=30)
    assert e.value.exit_code == 2
    assert str(out) in str(e.value) and DEVELOPMENT in str(e.value)
    assert _snapshot(out) == before  # nothing written, nothing removed
    # the command line says the same, before reading a figure
    assert cli.main(["report", str(results_dir), "--out", str(out), "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert str(out) in err and DEVELOPMENT in err and "Traceback" not in err
    assert _snapshot(out) == before


# ---------------------------------------------------------------------------------------------
# 2. an interrupted first report: the same command resumes


@pytest.fixture(scope="module")
def whole_report(res, tmp_path_factory) -> dict[str, bytes]:
    """The files of the report of ``res`` with :func:`synthetic.quick_figures`, not
    interrupted: what a resumed report must hold (one report for both interruptions)."""
    whole = tmp_path_factory.mktemp("whole") / "rep"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots, "FIGURES", synthetic.quick_figures())
        write_report(res, whole, formats=("png",), dpi=30)
    return _snapshot(whole)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["drawing", "writing"])
def test_an_interrupted_first_report_resumes(res, whole_report, tmp_path, monkeypatch,
                                            two_figures, where):
    expected = whole_report
    out = tmp_path / "rep"
    if where == "drawing":  # Ctrl-C while the second figure is drawn
        real_render = report._render

        def render(name, *a, **k):
            if name == two_figures[1]:
                raise KeyboardInterrupt
            return real_render(name, *a, **k)
        monkeypatch.setattr(report, "_render", render)
    else:  # killed while a table is written: its temporary file is left behind
        real_write = owned.atomic_write_bytes

        def write(path, data):
            path = Path(path)
            if path.name == "table_means.md":
                (path.parent / f".{path.name}.ab12cd34.tmp").write_bytes(data[:10])
                raise KeyboardInterrupt
            return real_write(path, data)
        monkeypatch.setattr(owned, "atomic_write_bytes", write)
    with pytest.raises(KeyboardInterrupt):
        write_report(res, out, formats=("png",), dpi=30)
    assert (out / f"fig01_{two_figures[0]}.png").exists()  # some files written
    monkeypatch.undo()
    monkeypatch.setattr(plots, "FIGURES", synthetic.quick_figures())
    write_report(res, out, formats=("png",), dpi=30)  # the same call again: resumed
    assert _snapshot(out).keys() == expected.keys()  # no leftover temporary file either
    for name, data in expected.items():
        if name != MANIFEST:
            assert _snapshot(out)[name] == data, name


# ---------------------------------------------------------------------------------------------
# 3. and 4. refused before anything is written: a results directory, a bad format


def test_report_into_a_results_directory_is_refused(results_dir, tmp_path, capsys,
                                                    monkeypatch):
    from ncprobe.ncimp.results import NCIMP_LAYOUT
    from ncprobe.results.store import check_target

    monkeypatch.setattr(report, "_render", lambda *a, **k: pytest.fail("drew a figure"))
    before = sorted(os.listdir(results_dir))
    for out in (results_dir, results_dir / "report"):
        assert cli.main(["report", str(results_dir), "--out", str(out), "--jobs", "1"]) == 2
        err = capsys.readouterr().err
        assert "results directory" in err and "--out" in err and "Traceback" not in err
    assert sorted(os.listdir(results_dir)) == before
    # compute can still write that directory again (it holds nothing but its run)
    meta = json.loads((results_dir / "run.json").read_text())["runs"]
    check_target(results_dir, meta, layout=NCIMP_LAYOUT)


@pytest.mark.parametrize("formats", ["bogus", "", "../x", "a/b", "png,", "png,png", "PNG"])
def test_a_bad_format_is_refused_before_any_drawing(results_dir, tmp_path, capsys,
                                                    monkeypatch, formats):
    monkeypatch.setattr(report, "_render", lambda *a, **k: pytest.fail("drew a figure"))
    out = tmp_path / "rep"
    assert cli.main(["report", str(results_dir), "--out", str(out), "--format", formats,
                     "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert "--format" in err and "Traceback" not in err
    if formats != "png,png":
        assert "png, pdf, svg" in err  # the formats allowed
    assert not out.exists() and not (tmp_path / "x").exists()


# ---------------------------------------------------------------------------------------------
# 5. an output that cannot be written: exit 6 naming the path; modes from the umask


@pytest.mark.parametrize("code, words", [(errno.ENOSPC, "disk is full"),
                                         (errno.EROFS, "read-only")])
def test_a_write_that_fails_is_exit_6_naming_the_file(results_dir, tmp_path, capsys,
                                                      monkeypatch, two_figures, code, words):
    real_write = owned.atomic_write_bytes

    def write(path, data):
        if Path(path).name.startswith("fig02_"):
            raise OSError(code, os.strerror(code))
        return real_write(path, data)
    monkeypatch.setattr(owned, "atomic_write_bytes", write)
    out = tmp_path / "rep"
    assert cli.main(["report", str(results_dir), "--out", str(out), "--format", "png",
                     "--jobs", "1", "--quiet"]) == 6
    err = capsys.readouterr().err
    assert f"fig02_{two_figures[1]}.png" in err and words in err and "Traceback" not in err


def test_an_unwritable_out_is_exit_6_before_drawing(results_dir, tmp_path, capsys,
                                                    monkeypatch):
    monkeypatch.setattr(report, "_render", lambda *a, **k: pytest.fail("drew a figure"))
    real_mkdir = Path.mkdir

    def mkdir(self, *a, **k):  # a read-only file system under tmp_path/ro
        if "ro" in self.parts:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
        return real_mkdir(self, *a, **k)
    monkeypatch.setattr(Path, "mkdir", mkdir)
    out = tmp_path / "ro" / "rep"
    assert cli.main(["report", str(results_dir), "--out", str(out), "--jobs", "1"]) == 6
    err = capsys.readouterr().err
    assert str(out) in err and "read-only" in err and "Traceback" not in err


def test_an_out_behind_a_link_loop_is_exit_6(results_dir, tmp_path, capsys):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    out = tmp_path / "loop" / "rep"
    assert cli.main(["report", str(results_dir), "--out", str(out), "--jobs", "1"]) == 6
    err = capsys.readouterr().err
    assert str(out) in err and "link loop" in err and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_report_files_have_the_modes_of_the_umask(res, tmp_path, two_figures, umask):
    old = os.umask(umask)
    try:
        out = tmp_path / "new" / "rep"
        write_report(res, out, formats=("png",), dpi=30)
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~umask
    files = list(out.iterdir())
    assert MANIFEST in {p.name for p in files} and len(files) > 5
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~umask, p.name


# ---------------------------------------------------------------------------------------------
# 6. figure workers end with their parent


def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(entry))
    return kids


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_figure_workers_end_when_the_report_is_killed(results_dir, tmp_path):
    # --jobs 3 starts at most 2 workers: fewer where fewer CPUs are usable (never more
    # processes than CPUs)
    workers = min(3, drawing.usable_cpus()) - 1
    if workers < 1:
        pytest.skip("one usable CPU: the report starts no worker")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ncprobe", "report", str(results_dir), "--out",
         str(tmp_path / "rep"), "--jobs", "3", "--format", "png"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kids: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            kids = _children(proc.pid)
            if len(kids) >= workers + 1:  # the figure workers and the resource tracker
                break
            time.sleep(0.05)
        assert len(kids) >= workers + 1, f"the report started {len(kids)} processes"
        time.sleep(2.0)  # the workers up and waiting for figures
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(map(_running, kids)):
            time.sleep(0.1)
        assert [pid for pid in kids if _running(pid)] == []
    finally:
        for pid in kids:  # what this test started, should it have been left running
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


# ---------------------------------------------------------------------------------------------
# 7. progress on stderr, silent with --quiet; stdout as it was


@pytest.mark.slow
def test_report_says_what_it_draws_unless_quiet(results_dir, tmp_path, capsys, two_figures):
    out = tmp_path / "rep"
    assert cli.main(["report", str(results_dir), "--out", str(out), "--format", "png",
                     "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[:2] == [f"figure 1/2: fig01_{two_figures[0]}",
                         f"figure 2/2: fig02_{two_figures[1]}"]
    n_tables = len(tables.TABLES)  # model-a has one layer view: no layer-wise table
    said = [line for line in lines if line.startswith("table ")]
    assert len(said) == n_tables and said[-1].startswith(f"table {n_tables}/{n_tables}: ")
    n_files = len([p for p in out.iterdir() if p.name != MANIFEST])
    assert captured.out == f"{n_files} files written to {out}\n"
    assert cli.main(["report", str(results_dir), "--out", str(out), "--format", "png",
                     "--jobs", "1", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == f"{n_files} files written to {out}\n"


# ---------------------------------------------------------------------------------------------
# 8. reproduce --device, given to the models it applies to


@pytest.mark.slow
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_reproduce_passes_device_to_the_models_it_applies_to(res, tmp_path, monkeypatch,
                                                             capsys, device):
    from ncprobe.ncimp import reproduce as rp

    configs, asked = [], []

    def compute(cfg, **kw):
        configs.append(cfg)
        mine = synthetic.relabel(res, cfg.model)
        meta = [{**m, "config": {**m["config"], "model": cfg.model}} for m in res.meta[:1]]
        return rp.Results(**{k: getattr(mine, k) for k in (
            "cosines", "sentences", "measures", "correlations", "distributions",
            "lexical_overlap", "rogue", "standardisation", "ncs")}, meta=meta)

    def available(model, lang, device=None, **kw):
        asked.append((model, device))
        return None
    monkeypatch.setattr(rp, "compute", compute)
    monkeypatch.setattr(rp, "availability", available)
    monkeypatch.setattr(report, "_figures", lambda results, formats, dpi, workers, options=None:
                        iter([(n, (None, ["not drawn in this test"])) for n in plots.FIGURES]))
    rc = cli.main(["reproduce", "--models", "glove-6b-50d,minilm", "--langs", "en", "--device",
                   device, "--out", str(tmp_path / "figs"), "--results-dir",
                   str(tmp_path / "runs"), "--n-boot", "0", "--jobs", "1", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 0, err
    by_model = {c.model: c.device for c in configs}
    # minilm (a transformer) runs on the device given; static GloVe vectors run on the CPU
    # only: --device cpu is true of them, any other device is left out with a note
    assert by_model == {"minilm": device, "glove-6b-50d": "cpu" if device == "cpu" else None}
    assert dict(asked) == by_model  # a model's availability is judged on its own device
    noted = [line for line in err.splitlines() if line.startswith("note: glove-6b-50d")]
    assert len(noted) == (device != "cpu")
    assert not [line for line in err.splitlines() if line.startswith("note: minilm")]


# ---------------------------------------------------------------------------------------------
# 9. one directory, two probes' reports: never replaced without --overwrite (issue 28)


@pytest.fixture(scope="module")
def retrieval_dir(raw_dir, tmp_path_factory) -> Path:
    """bm25 on one idiom of IdioLink's val split: a retrieval results directory."""
    from ncprobe.retrieval.probe import retrieve

    out = tmp_path_factory.mktemp("retrieval") / "idiolink-val-bm25"
    retrieve(models=["bm25"], split="val", idioms=["in the dock"], data_dir=raw_dir,
             n_boot=20, progress=False, out=out)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("first", ["ncimp", "idiolink"])
def test_a_report_of_another_probe_is_replaced_only_with_overwrite(
        results_dir, retrieval_dir, tmp_path, capsys, caplog, monkeypatch, two_figures, first):
    from ncprobe.retrieval import report as retrieval_report

    # the retrieval report's two figures by idiom only, the quicker (as two_figures: the same
    # report logic, faster)
    monkeypatch.setattr(retrieval_report, "_FIGURES", tuple(
        (stem, figure) for stem, figure in retrieval_report._FIGURES if figure[0] == "idioms"))
    assert len(retrieval_report._FIGURES) == 2
    source = {"ncimp": results_dir, "idiolink": retrieval_dir}
    second = "idiolink" if first == "ncimp" else "ncimp"
    out = tmp_path / "rep"
    # --jobs is the NCIMP report's own option (the retrieval report refuses it)
    jobs = {"ncimp": ["--jobs", "1"], "idiolink": []}
    assert cli.main(["report", str(source[first]), "--out", str(out), "--format", "png",
                     *jobs[first], "--quiet"]) == 0
    before = _snapshot(out)
    theirs = set(json.loads(before[MANIFEST])["files"])
    assert len(theirs) > 3 and theirs == set(before) - {MANIFEST}
    capsys.readouterr()
    assert cli.main(["report", str(source[second]), "--out", str(out), "--format", "png",
                     *jobs[second], "--quiet"]) == 2
    err = capsys.readouterr().err
    said = {"ncimp": "an NCIMP report", "idiolink": "a retrieval report"}
    assert f"holds {said[first]}" in err and f"{len(theirs)} file(s)" in err
    assert "--overwrite" in err
    assert _snapshot(out) == before  # nothing written, nothing removed
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ncprobe.ncimp.report"):
        assert cli.main(["report", str(source[second]), "--out", str(out), "--format", "png",
                         *jobs[second], "--quiet", "--overwrite"]) == 0
    after = _snapshot(out)
    ours = set(json.loads(after[MANIFEST])["files"])
    assert ours == set(after) - {MANIFEST}
    gone = sorted(theirs - ours)
    assert gone and not any((out / n).exists() for n in gone)
    warned = [r.getMessage() for r in caplog.records if "replaced the" in r.getMessage()]
    assert len(warned) == 1 and said[first].split(" ", 1)[1] in warned[0]
    assert f"removed {len(gone)} of its file(s): {', '.join(gone)}" in warned[0]
    # the manifest now says whose report it is: the same report again needs no --overwrite
    assert json.loads(after[MANIFEST])["report"] == second
    assert cli.main(["report", str(source[second]), "--out", str(out), "--format", "png",
                     *jobs[second], "--quiet"]) == 0


# ---------------------------------------------------------------------------------------------
# 10. never more figure workers than figures to draw or CPUs (issue 28)


class _CountingPool:
    """A stand-in for ProcessPoolExecutor that records how many workers were asked for and
    runs nothing (its futures stay pending: the caller draws every figure itself)."""

    asked: list[int] = []

    def __init__(self, max_workers: int, **_kw) -> None:
        _CountingPool.asked.append(max_workers)

    def submit(self, *_a, **_k):
        from concurrent.futures import Future

        return Future()

    def shutdown(self, **_kw) -> None:
        pass


@pytest.mark.slow
def test_figure_workers_never_outnumber_figures_or_cpus(results_dir, tmp_path, monkeypatch,
                                                         capsys, two_figures):
    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", _CountingPool)
    monkeypatch.setattr(drawing, "usable_cpus", lambda: 16)
    _CountingPool.asked = []
    with drawing.FigureWorkers(24, figures=10) as w:
        assert w.jobs == 10 and w.asked == 24
    monkeypatch.setattr(drawing, "usable_cpus", lambda: 3)
    with drawing.FigureWorkers(24, figures=10) as w:
        assert w.jobs == 3
    with drawing.FigureWorkers(1, figures=10) as w:
        assert w.jobs == 1
    assert _CountingPool.asked == [9, 2]  # workers besides this process; none for 1
    # no figure count given: the CPUs alone cap them (the shared pool counts no probe's
    # figures); NCIMP's reproduce gives every figure its report may draw, the study's two
    # kept here and the layer-wise figure
    monkeypatch.setattr(drawing, "usable_cpus", lambda: 16)
    with drawing.FigureWorkers(24) as w:
        assert w.jobs == 16
    with drawing.FigureWorkers(24, figures=report.most_figures()) as w:
        assert w.jobs == len(two_figures) + 1
    # the report of two figures with --jobs 24: one worker besides this process
    _CountingPool.asked = []
    assert cli.main(["report", str(results_dir), "--out", str(tmp_path / "rep"), "--format",
                     "png", "--jobs", "24", "--quiet"]) == 0
    assert _CountingPool.asked == [len(two_figures) - 1]
    capsys.readouterr()
    with pytest.raises(SystemExit):
        cli.main(["report", "--help"])
    assert "never more than the figures to draw or the CPUs" in " ".join(
        capsys.readouterr().out.split())
