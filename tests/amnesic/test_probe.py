"""``ncprobe run amnesic`` against what goes wrong: a run killed before or while it writes and
its rerun (nothing lost, nothing half-written read as complete), a rerun into the same
``--out``, an ``--out`` that cannot be written (exit 6), and options out of their domain (exit
2, before any work). The runs are cheap: a toy concept and a toy target handed in as the
probes' peers (synthetic vectors), or options refused before anything is read."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ncprobe.amnesic.probe import run_amnesic_probe
from ncprobe.amnesic.results import AmnesicResults
from ncprobe.concept import Concept, Side
from ncprobe.intervention import CHANGES, TARGET_COLUMNS, TARGET_RUNS

from ..command import exit_code

GLOVE = "glove-6b-50d"


class ToyTarget:
    """A target that measures the mean of its first coordinate on 12 rows of a view, plain,
    erased and control; ``stop`` makes the next call raise as Ctrl-C does."""

    stop = False

    def check_target(self, lang, **options):
        pass

    def target_rows(self, model, lang, transforms, *, compare_n_boot, fitted_on=None,
                    **options):
        if ToyTarget.stop:
            raise KeyboardInterrupt
        rng = np.random.default_rng(1)
        x = rng.normal(size=(12, 4))
        value = {}
        for c in TARGET_RUNS:
            t = transforms[c]
            v = x if t is None else t("-", "nc", x, [f"g{i}" for i in range(12)])
            value[c] = float(np.mean(v[:, 0]))
        rows = [{"condition": c, "value": value[c]} for c in TARGET_RUNS]
        rows += [{"condition": ch, "value": value[ch.split(" - ")[0]]
                  - value[ch.split(" - ")[1]]} for ch in CHANGES]
        out = pd.DataFrame(rows, columns=list(TARGET_COLUMNS))
        out = out.assign(target="toy", metric="mean x0", layer="-", level="nc",
                         context="-", ci_low=out["value"] - 0.1, ci_high=out["value"] + 0.1,
                         n=12, unit="rows", shares_concept_rows=False)
        return out


class ToyPeers:
    """The probes' look-ups of a run: a concept planted in the first coordinate of 40 rows
    (training) and 20 (held out), and the toy target."""

    def concept(self, probe, model, lang, **options):
        rng = np.random.default_rng(0)
        y = np.arange(60) % 2
        x = rng.normal(size=(60, 4))
        x[:, 0] += 2.0 * y
        ids = np.array([f"r{i}" for i in range(60)], dtype=object)
        groups = np.array([f"g{i}" for i in range(60)], dtype=object)
        return Concept("toy concept", ("a", "b"), [("-", "nc")], lambda v, lv: x,
                       Side(np.arange(40), y[:40], groups[:40], ids[:40]),
                       Side(np.arange(40, 60), y[40:], groups[40:], ids[40:]),
                       meta={"probe": "toy", "lang": lang})

    def target(self, probe):
        return ToyTarget()


def _run(out: Path, **options) -> AmnesicResults:
    return run_amnesic_probe(peers=ToyPeers(), out=out, concept="toy", targets=["toy"],
                             model="toy-model", n_boot=10, compare_n_boot=10, **options)


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


@pytest.fixture(autouse=True)
def _running():
    ToyTarget.stop = False
    yield
    ToyTarget.stop = False


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_run_killed_before_it_writes_leaves_nothing_and_its_rerun_is_the_whole_run(tmp_path):
    clean = tmp_path / "clean"
    _run(clean)
    out = tmp_path / "out"
    ToyTarget.stop = True  # the concept fitted, killed while the targets run
    with pytest.raises(KeyboardInterrupt):
        _run(out)
    # nothing written that could be read as a run: no directory, no temporary one
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["clean"]
    with pytest.raises(Exception):  # noqa: B017  # what a reader gets: an error, not rows
        AmnesicResults.load(out)
    ToyTarget.stop = False
    _run(out)  # the rerun: the same files as a run never interrupted
    assert _files(out) == _files(clean)
    # a run of the same options into the same --out: its own run again, the same bytes
    _run(out)
    assert _files(out) == _files(clean)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_run_killed_while_it_writes_leaves_the_previous_run_whole(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    first = _run(out)
    before = _files(out)
    real, written = pq.write_table, []

    def dies_after_one_table(*args, **kwargs):
        if written:
            raise KeyboardInterrupt
        real(*args, **kwargs)
        written.append(1)

    monkeypatch.setattr(pq, "write_table", dies_after_one_table)
    with pytest.raises(KeyboardInterrupt):
        _run(out, seed=1, overwrite=True)
    monkeypatch.undo()
    # all of the first run, none of the second: it reads back as the first
    assert _files(out) == before
    pd.testing.assert_frame_equal(AmnesicResults.load(out).changes, first.changes)
    # what a write killed outright (SIGKILL) leaves beside --out is removed by the next one
    left = tmp_path / ".out.k1ll3d_x.tmp"
    left.mkdir()
    (left / "changes.parquet").write_bytes(b"partial")
    _run(out, seed=1, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert AmnesicResults.load(out).meta[0]["config"]["seed"] == 1


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_rerun_with_other_options_into_the_same_out_is_refused_before_any_work(tmp_path):
    from ncprobe.errors import UsageError

    out = tmp_path / "out"
    _run(out)
    before = _files(out)
    ToyTarget.stop = True  # any work would raise KeyboardInterrupt: none is done
    with pytest.raises(UsageError, match="overwrite"):
        _run(out, seed=1)
    assert _files(out) == before


def test_an_out_that_cannot_be_written_is_exit_6_before_any_work(tmp_path, capsys,
                                                                 monkeypatch):
    import errno

    from ncprobe.amnesic import run

    locked = tmp_path / "locked"
    locked.mkdir()
    real_mkdir, real_open, root = os.mkdir, os.open, str(locked.resolve())

    def refused(path) -> bool:  # a read-only file system under locked/ (even for root)
        return os.path.abspath(os.fsdecode(path)).startswith(root + os.sep)

    def mkdir(path, *args, **kwargs):
        if refused(path):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))
        return real_mkdir(path, *args, **kwargs)

    def open_(path, flags, *args, **kwargs):
        if refused(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(run, "fit_concept", lambda *a, **k: pytest.fail("work was done"))
    assert exit_code(["run", "amnesic", "--model", GLOVE, "--targets", "ncimp",
                      "--out", str(locked / "out"), "--quiet"]) == 6
    err = capsys.readouterr().err
    assert str(locked / "out") in err and "read-only" in err
    monkeypatch.undo()
    assert list(locked.iterdir()) == []


@pytest.mark.parametrize("argv, message", [
    (["--folds", "1"], "folds"),
    (["--n-boot", "-1"], "n-boot"),
    (["--compare-n-boot", "-5"], "compare-n-boot"),
    (["--concept", "nosuchprobe"], "nosuchprobe"),
    (["--concept", "idiolink"], "offers no concept"),
    (["--targets", "ncimp,nosuchprobe"], "nosuchprobe"),
    (["--targets", "idiolink"], "cannot be a target"),
    (["--targets", "ncimp,ncimp"], "twice"),
    (["--lang", "de"], "lang"),
    (["--correction", "bonferroni"], "correction"),
    (["--targets", "ncimp,ncc", "--lang", "pt"], "NCC's items are English"),
])
def test_options_out_of_their_domain_are_exit_2(argv, message, tmp_path, capsys, monkeypatch):
    # before any work: no concept is made (its vectors would be encoded)
    for made in ("ncprobe.astitch.concept.astitch_concept", "ncprobe.ncimp.concept.ncimp_concept"):
        monkeypatch.setattr(made, lambda *a, **k: pytest.fail("work was done"))
    out = tmp_path / "out"
    assert exit_code(["run", "amnesic", "--model", GLOVE, "--targets", "ncimp",
                      "--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--quiet",
                      *argv]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_layer_the_model_lacks_is_exit_2_naming_it(tiny_bert_dir, tmp_path, capsys):
    assert exit_code(["run", "amnesic", "--model", str(tiny_bert_dir), "--targets", "ncimp",
                      "--layers", "9", "--cache-dir", str(tmp_path / "cache"),
                      "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "9" in err and "layer" in err
    assert not (tmp_path / "out").exists()
