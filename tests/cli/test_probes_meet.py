"""Where the probes meet (issue 38): `ncprobe report` of a folder holding several probes'
results (one report per probe, an index linking them, the ownership rules of reports kept),
`ncprobe compare` of one directory with itself or of two probes' results (one refusal for
every probe), and `run X --out DIR` where DIR holds another probe's results (named, never
replaced).

The results directories are small: a synthetic NCIMP run (tests/synthetic.py) and the NCC and
AStitch results written by hand (tests/ncc/handmade.py, tests/astitch/handmade_results.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from ncprobe.cli import main
from ncprobe.ncimp import figures as plots
from ncprobe.probes import get_probe

from .. import synthetic
from ..astitch import handmade_results as astitch_handmade
from ..command import exit_code
from ..ncc import handmade as ncc_handmade

MANIFEST = ".ncprobe-report.json"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Path]:
    """A results folder as `compute`, `run ncc` and `run astitch` leave it: one directory of
    each probe's results below ``results/``."""
    root = tmp_path_factory.mktemp("runs") / "results"
    ncimp = synthetic.one_run(synthetic.build(), "model-a", "en", layers="-")
    return {"root": root,
            "ncimp": ncimp.to_parquet(root / "model-a-en"),
            "ncc": ncc_handmade.results("glove-6b-50d").to_parquet(root / "ncc-glove-6b-50d"),
            "astitch": astitch_handmade.results("m").to_parquet(root / "astitch-m-en")}


@pytest.fixture
def two_figures(monkeypatch):
    """Two figures of the NCIMP report only (:func:`synthetic.quick_figures`), and the first two
    of the NCC report: the same report logic, faster."""
    from ncprobe.ncc import report as ncc_report

    monkeypatch.setattr(plots, "FIGURES", synthetic.quick_figures())
    monkeypatch.setattr(ncc_report, "FIGURES", ncc_report.FIGURES[:2])


def _tree(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` by its relative path, with its bytes."""
    return {p.relative_to(directory).as_posix(): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def _text_files(directory: Path) -> dict[str, bytes]:
    """The table files and the index of a report (figures carry no text to compare)."""
    return {k: v for k, v in _tree(directory).items()
            if k.endswith((".md", ".tex")) or k == MANIFEST}


# --- report ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_folder_of_two_probes_gives_one_report_each_and_an_index(results, tmp_path, capsys,
                                                                   two_figures):
    folder = tmp_path / "two"  # the README's results/ once `run ncc` wrote its folder
    folder.mkdir()
    for probe in ("ncimp", "ncc"):
        shutil.copytree(results[probe], folder / results[probe].name)
    out = tmp_path / "report"
    argv = ["--format", "png", "--jobs", "1", "--quiet"]
    assert main(["report", str(folder), "--out", str(out), *argv]) == 0
    # each probe's report is what a report of its results alone writes, in its subdirectory
    for probe in ("ncimp", "ncc"):
        alone = tmp_path / f"alone-{probe}"
        # --jobs is an option of NCIMP's report alone: the NCC report is refused it (exit 2)
        own = argv if probe == "ncimp" else ["--format", "png", "--quiet"]
        assert main(["report", str(results[probe]), "--out", str(alone), *own]) == 0
        got, want = _text_files(out / probe), _text_files(alone)
        assert sorted(got) == sorted(want)
        assert {k: v for k, v in got.items() if k != MANIFEST} == {
            k: v for k, v in want.items() if k != MANIFEST}
        assert sorted(_tree(out / probe)) == sorted(_tree(alone))
    # the index: a link to each report, ncprobe's own (its manifest lists it alone)
    index = (out / "README.md").read_text(encoding="utf-8")
    assert index.startswith("# ncprobe ")
    assert "](ncimp/README.md)" in index and "](ncc/README.md)" in index
    assert str(results["ncc"].name) in index and str(results["ncimp"].name) in index
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    assert set(manifest["files"]) == {"README.md"}
    assert manifest["files"]["README.md"] == hashlib.sha256(
        (out / "README.md").read_bytes()).hexdigest()
    # drawn again: the same files, nothing refused
    before = _text_files(out)
    assert main(["report", str(folder), "--out", str(out), *argv]) == 0
    assert _text_files(out) == before


@pytest.mark.slow
def test_the_index_never_replaces_another_report_unasked(results, tmp_path, capsys,
                                                         two_figures):
    folder = tmp_path / "two"
    folder.mkdir()
    for probe in ("ncimp", "ncc"):
        shutil.copytree(results[probe], folder / results[probe].name)
    out = tmp_path / "report"
    argv = ["--format", "png", "--jobs", "1", "--quiet"]
    # the README's report of NCIMP results, written before `run ncc`
    assert main(["report", str(results["ncimp"]), "--out", str(out), *argv]) == 0
    before = _tree(out)
    capsys.readouterr()
    assert exit_code(["report", str(folder), "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert "holds an NCIMP report" in err and "--overwrite" in err
    assert _tree(out) == before  # nothing written, nothing removed
    # a subdirectory holding another probe's report: refused before anything is drawn
    (out / "ncc").mkdir()
    for name, data in before.items():  # the NCIMP report where the NCC one would go
        (out / "ncc" / name).write_bytes(data)
    assert exit_code(["report", str(folder), "--out", str(out), "--overwrite", *argv]) == 0
    assert not (out / "ncc" / "fig01_ratio.png").exists()  # replaced, as asked
    assert not (out / "fig01_ratio.png").exists()  # the NCIMP report: now in ncimp/
    assert (out / "ncimp" / "fig01_ratio.png").is_file()
    # files the user wrote are never replaced, even with --overwrite
    (out / "README.md").write_text("my notes\n", encoding="utf-8")
    assert exit_code(["report", str(folder), "--out", str(out), "--overwrite", *argv]) == 2
    assert (out / "README.md").read_text(encoding="utf-8") == "my notes\n"


def test_report_options_go_to_the_probe_that_takes_them(results, tmp_path, capsys):
    folder = tmp_path / "two"
    folder.mkdir()
    for probe in ("ncc", "astitch"):
        shutil.copytree(results[probe], folder / results[probe].name)
    # no report of these results takes --space: refused before anything is written
    assert exit_code(["report", str(folder), "--out", str(tmp_path / "r"), "--space",
                      "raw"]) == 2
    assert "--space" in capsys.readouterr().err and not (tmp_path / "r").exists()
    # an --exclude that leaves out nothing: exit 2, as for one probe's results
    (tmp_path / "empty").mkdir()
    assert exit_code(["report", str(folder), "--out", str(tmp_path / "r"), "--exclude",
                      str(tmp_path / "empty")]) == 2
    assert "no results directory found is there" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


# --- compare -----------------------------------------------------------------------------------


@pytest.mark.parametrize("probe", ["ncimp", "ncc", "astitch"])
def test_a_directory_compared_with_itself_is_one_refusal_for_every_probe(results, tmp_path,
                                                                         capsys, probe):
    d = results[probe]
    os.symlink(d, tmp_path / "link")
    for other in (str(d), str(tmp_path / "link"), f"{d}/.", str(results["root"])):
        assert exit_code(["compare", str(d), other, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert "hold the same results directory" in err and str(d) in err, err


def test_one_ncimp_run_under_two_selections_is_still_compared(results, capsys):
    d = str(results["ncimp"])
    assert exit_code(["compare", d, d, "--a", "context=nat", "--b", "context=neut",
                      "--n-boot", "50", "--quiet"]) == 0


def test_two_probes_results_cannot_be_compared_and_no_exclude_is_offered(results, tmp_path,
                                                                         capsys):
    assert exit_code(["compare", str(results["ncc"]), str(results["astitch"]), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "'ncc' probe" in err and "'astitch' probe" in err and "cannot be compared" in err
    assert "--exclude" not in err
    # a side of several probes against a side of one: only the --exclude that leaves both
    # sides that one probe's results
    second = tmp_path / "second"
    second.mkdir()
    ncc_handmade.results("minilm").to_parquet(second / "ncc-minilm")
    assert exit_code(["compare", str(results["root"]), str(second), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "for the ncc results alone" in err
    assert "for the ncimp results alone" not in err and "for the astitch results alone" not in err


# --- run X --out DIR_OF_Y ----------------------------------------------------------------------


@pytest.mark.parametrize("command, own", [(["run", "ncc"], "ncc"), (["run", "astitch"], "astitch"),
                                          (["compute"], "ncimp"),
                                          (["retrieve", "--model", "bm25"], "idiolink")])
def test_a_run_never_writes_over_another_probes_results(results, tmp_path, capsys, command, own):
    for probe in ("ncimp", "ncc", "astitch"):
        if probe == own:
            continue
        target = results[probe]
        before = _tree(target)
        for overwrite in ([], ["--overwrite"]):
            assert exit_code([*command, "--out", str(target), *overwrite,
                              "--data-dir", str(tmp_path / "none"), "--quiet"]) == 2
            err = capsys.readouterr().err
            # NCIMP's run.json names no probe (issue 39: the store says so, knowing none)
            there = ("results whose run.json names no probe"
                     if get_probe(probe).reads_unnamed_results else
                     f"results of the {probe!r} probe")
            assert f"holds {there}" in err, err
            assert f"not of the {own!r} probe" in err
            assert "pass --overwrite" not in err and " there, " not in err
        assert _tree(target) == before
