"""The one protocol of the directories ncprobe owns (ncprobe.owned): temporary names that every
writer makes and every tidier recognises, leftovers removed only when they are ncprobe's, the
cache marker, and the retrieval report using it without the NCIMP report module.

Expectations are derived here: temporary names are those that the writers (``_io.atomic_open``,
``tempfile``) actually leave, caught mid-write; file sets are listed by hand."""

from __future__ import annotations

import ast
import contextlib
import logging
import os
from pathlib import Path

import pytest

from ncprobe import owned
from ncprobe._io import LockBusy, atomic_open, dir_lock


def _temp_names(directory: Path, final: str) -> list[str]:
    """The names in ``directory`` while ``atomic_open`` writes ``final`` there."""
    with atomic_open(directory / final) as fh:
        fh.write(b"partial")
        seen = sorted(p.name for p in directory.iterdir())
    return seen


def test_the_temporary_names_of_atomic_writes_are_recognised(tmp_path):
    names = {"README.md", "fig01_affinity.png", "shard-ab12.npz", "run.json"}
    for final in sorted(names):
        (tmp := tmp_path / final.replace(".", "_")).mkdir()
        seen = _temp_names(tmp, final)
        assert len(seen) == 1 and seen[0].startswith(f".{final}.") and seen[0].endswith(".tmp")
        assert owned.temp_re([final]).match(seen[0])  # the writer's name, taken literally
        assert bool(owned.temp_re(pattern=r"shard-[0-9a-f]+\.npz").match(seen[0])) \
            == (final == "shard-ab12.npz")  # or by a pattern of final names
        others = owned.temp_re(sorted(names - {final}))
        assert not others.match(seen[0])  # another file's temporary name is not this one's
    # never the final names themselves, nor names of the same shape by other programs
    pattern = owned.temp_re(["run.json"])
    assert not pattern.match("run.json")
    assert not pattern.match(".run.json.tmp")  # no random part
    assert not pattern.match(".run.json.ABCDEFGH.tmp")  # not tempfile's alphabet
    assert not pattern.match("x.run.json.abcdefgh.tmp")
    with pytest.raises(ValueError):
        owned.temp_re()


def test_a_locked_temp_dir_and_an_aside_name_are_what_the_tidiers_look_for(tmp_path):
    with contextlib.ExitStack() as stack:
        tmp = owned.locked_temp_dir(tmp_path, "r", stack)
        assert tmp.parent == tmp_path and owned.temp_re(["r"]).match(tmp.name)
        with pytest.raises(LockBusy):  # held while the write goes on
            with dir_lock(tmp, blocking=False):
                pass
    aside = owned.aside_name("r")
    assert owned.aside_re("r").match(aside) and not owned.aside_re("s").match(aside)
    assert aside != owned.aside_name("r")  # fresh each time


def test_leftovers_are_removed_only_when_they_are_ncprobe_s(tmp_path, caplog):
    allowed = {"run.json", "ncs.parquet"}.__contains__
    killed = tmp_path / ".r.k1ll3d_x.tmp"  # a killed write's: removed
    killed.mkdir()
    (killed / "ncs.parquet").write_bytes(b"partial")
    busy = tmp_path / ".r.wr1t1ng_.tmp"  # being written (locked): kept
    busy.mkdir()
    mine = tmp_path / ".r.n0tm1n3_.tmp"  # holds a file ncprobe never writes: kept, named
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    other = tmp_path / ".s.k1ll3d_x.tmp"  # another name's: not this write's business
    other.mkdir()
    with dir_lock(busy), caplog.at_level(logging.INFO, logger="ncprobe.owned"):
        owned.remove_temp_dirs(tmp_path, "r", allowed)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [busy.name, mine.name, other.name])
    assert (mine / "notes.txt").read_text() == "keep"
    said = [r.getMessage() for r in caplog.records]
    assert any(str(killed) in m and "removed" in m for m in said)
    assert any(str(mine) in m and "left" in m for m in said)
    # temporary files of a report: only those of the names asked for, only regular files
    files = tmp_path / "rep"
    files.mkdir()
    for name in (".README.md.ab12cd34.tmp", ".fig01_a.png.zz99yy88.tmp", ".mine.md.ab12cd34.tmp",
                 "README.md"):
        (files / name).write_text("x")
    (files / ".table_x.md.ab12cd34.tmp").mkdir()  # a directory: never removed here
    owned.remove_temp_files(files, owned.temp_re(["README.md", "fig01_a.png", "table_x.md"]),
                            what="report directory")
    assert sorted(os.listdir(files)) == [".mine.md.ab12cd34.tmp", ".table_x.md.ab12cd34.tmp",
                                         "README.md"]


def test_the_cache_marker_is_recognised_as_ncprobe_s(tmp_path):
    tag = tmp_path / owned.CACHEDIR_TAG
    tag.write_text(owned.cachedir_tag("an ncprobe embedding cache", "ncprobe cache clear"))
    text = tag.read_text()
    # the Cache Directory Tagging Specification's signature, first
    assert text.startswith("Signature: 8a477f597d28d172789f06886806bc55\n")
    assert "`ncprobe cache clear`" in text
    assert owned.is_ncprobe_tag(tag)
    other = tmp_path / "other"
    other.write_text("Signature: 8a477f597d28d172789f06886806bc55\n# made by another tool\n")
    assert not owned.is_ncprobe_tag(other)  # the signature alone: another program's
    link = tmp_path / "link"
    link.symlink_to(tag)
    assert not owned.is_ncprobe_tag(link)  # never through a link


def test_enclosing_results_is_the_nearest_directory_holding_run_json(tmp_path):
    run = tmp_path / "a" / "run"
    (run / "deep").mkdir(parents=True)
    (run / "run.json").write_text("{}")
    assert owned.enclosing_results(run / "deep" / "x") == run.resolve()
    assert owned.enclosing_results(run) is None  # above it: nothing
    assert owned.enclosing_results(run, itself=True) == run.resolve()


def test_the_retrieval_report_does_not_import_the_ncimp_report():
    """Ownership comes from ncprobe.owned, figures' files from ncprobe.drawing (through
    ncprobe.report_files): the retrieval report imports no module of the NCIMP report (nor the
    other way round)."""
    import ncprobe.ncimp.report
    import ncprobe.retrieval.report

    def imported(module) -> set[str]:
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                found.add("." * node.level + (node.module or ""))
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        return found

    assert not {"..report", "ncprobe.ncimp.report"} & imported(ncprobe.retrieval.report)
    assert not {".retrieval.report", "ncprobe.retrieval.report", ".retrieval"} \
        & imported(ncprobe.ncimp.report)
    # ownership comes from ncprobe.owned, through the one writer of every probe's report files
    import ncprobe.report_files

    assert "..report_files" in imported(ncprobe.retrieval.report)
    assert ".owned" in imported(ncprobe.report_files)


def _fresh(script: str, cwd: Path) -> str:
    """What a fresh interpreter running ``script`` prints (an exception: its type and text)."""
    import subprocess
    import sys

    wrapped = ("try:\n" + "".join(f"    {line}\n" for line in script.strip().split("\n"))
               + "except Exception as e:\n    print(type(e).__name__, e)\n")
    return subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True,
                          timeout=120, cwd=cwd).stdout


@pytest.mark.parametrize("case", ["report", "results"])
def test_another_probe_is_named_whatever_was_imported_before(tmp_path, case):
    """A fresh interpreter that imported only the NCIMP side names the retrieval probe's report
    and how to read its results, from what the directory records alone (the store and the
    report writer ask no probe registry, issue 39)."""
    import json

    from ncprobe.probes import results_class
    from ncprobe.retrieval.results import RetrievalResults

    from .synthetic import retrieval_report

    rep = tmp_path / "rep"
    retrieval_report(rep)
    res = tmp_path / "res"
    res.mkdir()
    (res / "run.json").write_text(json.dumps({"format": 4, "probe": "idiolink", "runs": []}))
    code = {"report": f"from ncprobe.ncimp.report import check_out\ncheck_out({str(rep)!r})",
            "results": f"from ncprobe.ncimp.results import Results\nResults.load({str(res)!r})"}
    out = _fresh(code[case], tmp_path)
    if case == "report":
        # the kind the manifest records, the NCIMP report's own label for what it would write
        assert out.startswith(f"UsageError {rep} holds an idiolink report (1 file(s)"), out
        assert "an NCIMP report written there" in out
    else:
        assert out.startswith(f"UsageError {res} holds results of the 'idiolink' probe, not "
                              "of the 'ncimp' probe"), out
        assert "read it with its probe's results class " \
               "(ncprobe.probes.results_class('idiolink').load;" in out
        # and what it says to call is the retrieval probe's reader
        assert results_class("idiolink") is RetrievalResults


def test_a_fresh_interpreter_reads_a_probes_results_through_its_class_alone(tmp_path):
    """The store knows no probe (issue 39): in a fresh interpreter that imported the store and
    no module of the NCC probe (nothing registered), the NCC results class reads its
    directory, with the run id ``run.json`` holds, and no probe is looked up in the registry
    on the way."""
    import json

    from tests.ncc import handmade

    d = handmade.results().to_parquet(tmp_path / "ncc-run")
    written = json.loads((d / "run.json").read_text(encoding="utf-8"))
    script = f"""
import json, sys
import ncprobe.results.store as store
before = sorted(m for m in sys.modules if m.startswith(("ncprobe.ncc", "ncprobe.retrieval",
                                                        "ncprobe.astitch")))
from ncprobe.ncc.results import NccResults
res = NccResults.load({str(d)!r})
import ncprobe.probes as registry
print(json.dumps({{"before": before, "looked_up": sorted(registry._LOADED),
                  "run_id": res.run_id, "rows": {{n: len(t) for n, t in res.tables.items()}},
                  "probe": store.probe_of({str(d)!r})}}))
"""
    out = _fresh(script, tmp_path)
    got = json.loads(out)
    assert got["before"] == []  # the store imported no probe's module
    assert got["looked_up"] == []  # and reading asked the registry for none
    assert got["run_id"] == written["run_id"] and got["probe"] == written["probe"] == "ncc"
    rows = {n: t["rows"] for n, t in written["tables"].items()}
    # every table written, as written; an optional table (NCC's mdl) not written has no rows
    assert {n: r for n, r in got["rows"].items() if n in rows} == rows
    assert all(got["rows"][n] == 0 for n in set(got["rows"]) - set(rows))
