"""`ncprobe cache clear` / `cache info` pointed at directories full of someone else's files.

Only store entries that ncprobe wrote may be listed or deleted; every other file, a symbolic
link to a directory outside, and directories that merely look like entries survive, byte for
byte.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

from ncprobe.cache.entries import fingerprint_id
from ncprobe.cache.maintenance import cache_clear, cache_info, check_entry
from ncprobe.cache.store import EmbeddingStore
from ncprobe.cli import main
from ncprobe.data.stimuli import Stimulus
from ncprobe.embed import embed
from ncprobe.encoders import load_encoder


def _stim(words, span, variant=1):
    words = tuple(words.split())
    return Stimulus("en", "nc", "N", "original", variant, words, span,
                    " ".join(words[span[0]:span[1]]))


STIMULI = [_stim("this is a grey matter", (3, 5)), _stim("use your brain now", (2, 3))]


@pytest.fixture(scope="module")
def glove():
    return load_encoder("glove-6b-50d")


def _snapshot(root: Path) -> dict[str, bytes | str]:
    """Every path under root (links not followed) -> file content, link target or 'dir'."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link -> " + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = p.read_bytes()
    return out


def _home(tmp_path: Path) -> tuple[Path, Path]:
    """A home directory of someone else's files, and a directory outside it that it links to."""
    home, outside = tmp_path / "home", tmp_path / "outside"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (home / "Documents").mkdir()
    (home / "Documents" / "thesis.tex").write_text("\\section{Idioms}")
    (home / "projects" / "ncimp" / "raw").mkdir(parents=True)
    (home / "projects" / "ncimp" / "raw" / "scores.csv").write_text("nc,score\n")
    (home / "notes.txt").write_text("not a directory")
    outside.mkdir()
    (outside / "precious.bin").write_bytes(b"\x00\x01")
    (home / "data-link").symlink_to(outside, target_is_directory=True)
    # a look-alike: an entry's name and a fingerprint.json, with someone's file in it
    fake_fp = {"name": "mine", "format": 1}
    fake = home / f"mine-{fingerprint_id(fake_fp)}"
    fake.mkdir()
    (fake / "fingerprint.json").write_text(json.dumps(fake_fp))
    (fake / "results.csv").write_text("a,b\n1,2\n")
    # a directory with a fingerprint.json that does not hash to its name
    odd = home / "model-0123456789abcdef"
    odd.mkdir()
    (odd / "fingerprint.json").write_text(json.dumps({"name": "model"}))
    np.savez(odd / "shard-1.npz", keys=np.zeros((1, 20), np.uint8))  # someone's arrays
    return home, outside


def test_cache_clear_on_a_home_directory_deletes_nothing(tmp_path, capsys) -> None:
    home, outside = _home(tmp_path)
    before, before_out = _snapshot(home), _snapshot(outside)
    rc = main(["cache", "clear", "--cache-dir", str(home)])
    err = capsys.readouterr().err
    assert rc == 2  # not an ncprobe cache: refused as a usage error
    assert "is not an ncprobe embedding cache" in err and "nothing was deleted" in err
    assert _snapshot(home) == before and _snapshot(outside) == before_out
    assert main(["cache", "info", "--cache-dir", str(home)]) == 0
    out = capsys.readouterr().out
    assert "(empty)" in out and "mine" not in out and ".ssh" not in out


def test_cache_clear_removes_only_ncprobe_entries_among_foreign_files(tmp_path, capsys,
                                                                      glove) -> None:
    home, outside = _home(tmp_path)
    before, before_out = _snapshot(home), _snapshot(outside)
    store = EmbeddingStore(glove.fingerprint(), root=home)  # someone ran --cache-dir ~
    embed(STIMULI, glove, store=store, progress=False)
    # a symbolic link named like an entry, pointing at a real entry outside the root
    elsewhere = EmbeddingStore(glove.fingerprint(), root=tmp_path / "other-cache")
    embed(STIMULI, glove, store=elsewhere, progress=False)
    link = home / f"linked-{elsewhere.dir.name.rsplit('-', 1)[1]}"
    link.symlink_to(elsewhere.dir, target_is_directory=True)
    kept_elsewhere = _snapshot(elsewhere.dir)
    # a real entry into which someone put a link to a file outside: not deleted through
    inner = EmbeddingStore({"name": "other", "format": 1}, root=home)
    (inner.dir / "shard-0-x.npz").symlink_to(outside / "precious.bin")

    assert not (home / "CACHEDIR.TAG").exists()  # a tag would hide the home from backups
    listed = cache_info(home)
    assert [e["dir"] for e in listed] == [str(store.dir)]  # only ncprobe's own entry
    rc = main(["cache", "clear", "--cache-dir", str(home)])
    err = capsys.readouterr()
    assert rc == 0 and "removed 1 cached model(s)" in err.out
    assert not store.dir.exists()
    after = _snapshot(home)
    for path, content in before.items():  # every foreign file and directory survives
        assert after.get(path) == content, path
    assert _snapshot(outside) == before_out and _snapshot(elsewhere.dir) == kept_elsewhere
    assert link.is_symlink() and (inner.dir / "shard-0-x.npz").is_symlink()
    assert f"kept {link}: not an ncprobe cache entry: it is a symbolic link" in err.err
    assert f"kept {inner.dir}: not an ncprobe cache entry: it holds a symbolic link" in err.err
    assert "mine-" in err.err and "holds 'results.csv', which ncprobe does not write" in err.err
    assert "does not hash to the directory's name" in err.err


def test_an_entry_whose_marker_was_removed_is_recognised(tmp_path, glove) -> None:
    """fingerprint.json + shards only: the strict layout still says the entry is ncprobe's."""
    store = EmbeddingStore(glove.fingerprint(), root=tmp_path)
    embed(STIMULI, glove, store=store, progress=False)
    (store.dir / "CACHEDIR.TAG").unlink(missing_ok=True)
    (tmp_path / "CACHEDIR.TAG").unlink()
    assert [e["items"] for e in cache_info(tmp_path)] == [2]
    assert cache_clear(tmp_path).removed == [str(store.dir)]
    assert list(tmp_path.iterdir()) == []


def test_an_entry_holding_a_temporary_name_ncprobe_no_longer_writes_is_kept(
        tmp_path, glove, capsys) -> None:
    # ncprobe's temporary files are `.<final name>.<random>.tmp`; `.tmp-*` (a development
    # version's) is someone else's file, so the entry is named and left as it is
    store = EmbeddingStore(glove.fingerprint(), root=tmp_path)
    embed(STIMULI, glove, store=store, progress=False)
    (store.dir / ".tmp-abc123").write_bytes(b"")
    before = _snapshot(store.dir)
    report = cache_clear(tmp_path)
    assert report.removed == []
    assert report.kept == [(str(store.dir), "not an ncprobe cache entry: it holds "
                            "'.tmp-abc123', which ncprobe does not write")]
    assert _snapshot(store.dir) == before
    assert main(["cache", "info", "--cache-dir", str(tmp_path)]) == 0
    assert "not listed (not an ncprobe cache entry any more: it holds '.tmp-abc123'" \
        in capsys.readouterr().out


def test_cache_clear_of_an_uncached_model_says_what_is_cached(tmp_path, capsys, glove) -> None:
    store = EmbeddingStore(glove.fingerprint(), root=tmp_path)
    embed(STIMULI, glove, store=store, progress=False)
    rc = main(["cache", "clear", "--cache-dir", str(tmp_path), "--model", "glove-6b"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "no cached vectors of model 'glove-6b'" in err and "cached: glove-6b-50d" in err
    assert store.dir.is_dir() and len(EmbeddingStore(glove.fingerprint(), root=tmp_path)) == 2
    assert main(["cache", "clear", "--cache-dir", str(tmp_path), "--model",
                 "glove-6b-50d"]) == 0
    assert not store.dir.exists()


def test_cache_clear_skips_an_entry_in_use(tmp_path, glove) -> None:
    store = EmbeddingStore(glove.fingerprint(), root=tmp_path)
    embed(STIMULI, glove, store=store, progress=False)
    with store.lock():  # as embed() holds it while a run encodes
        report = cache_clear(tmp_path)
    assert report.removed == [] and "in use by a running ncprobe" in report.kept[0][1]
    assert len(EmbeddingStore(glove.fingerprint(), root=tmp_path)) == 2
    assert cache_clear(tmp_path).removed == [str(store.dir)]


def test_a_run_that_waited_on_a_clear_recreates_its_entry(tmp_path, glove) -> None:
    store = EmbeddingStore(glove.fingerprint(), root=tmp_path)
    embed(STIMULI, glove, store=store, progress=False)
    assert len(store) == 2
    assert len(cache_clear(tmp_path).removed) == 1
    out = embed(STIMULI, glove, store=store, progress=False)  # same object, entry gone
    assert out.encoded == 2 and store.dir.is_dir()
    assert [e["items"] for e in cache_info(tmp_path)] == [2]
    np.testing.assert_array_equal(out.span, embed(STIMULI, glove, progress=False).span)


def _recorded_temp_files(monkeypatch) -> list[Path]:
    """Record every temporary file that ``tempfile.mkstemp`` creates (the one maker of
    ncprobe's temporary files: ``_io.atomic_open`` and ``_io.check_can_write`` call it)."""
    made: list[Path] = []
    real = tempfile.mkstemp

    def recording(*args, **kwargs):
        fd, path = real(*args, **kwargs)
        made.append(Path(path))
        return fd, path
    monkeypatch.setattr(tempfile, "mkstemp", recording)
    return made


def test_what_a_killed_write_leaves_in_an_entry_is_ncprobe_s_and_shards_are_tidied(
        tmp_path, glove, monkeypatch, caplog) -> None:
    """Every temporary name the cache's writers really make keeps the entry ncprobe's (`cache
    clear` accepts it); the next run that locks the entry removes those of shards (written
    under the lock only) and keeps the others (a marker or fingerprint.json may be being
    written by a run that has not taken the lock yet)."""
    made = _recorded_temp_files(monkeypatch)
    store = EmbeddingStore(glove.fingerprint(), root=tmp_path)
    embed(STIMULI, glove, store=store, progress=False)
    monkeypatch.undo()
    in_entry = sorted({p.name for p in made if p.parent == store.dir})
    # `.<final>.<8 random characters>.tmp`: the final names, by hand
    finals = {n[1:-len(".12345678.tmp")] for n in in_entry}
    assert {"CACHEDIR.TAG", "fingerprint.json", "shard-writable.npz"} <= finals
    assert any(f.startswith("shard-") and f != "shard-writable.npz" for f in finals)
    # an interrupted write of each, left behind
    for name in in_entry:
        (store.dir / name).write_bytes(b"partial")
    assert check_entry(store.dir).ok
    shards_left = [n for n in in_entry if n.startswith(".shard-")]
    others_left = [n for n in in_entry if not n.startswith(".shard-")]
    assert shards_left and others_left
    # someone else's file of nearly that form (no random part): never ncprobe's to remove
    (store.dir / ".shard-1.npz.tmp").write_bytes(b"mine")
    with caplog.at_level(logging.INFO, logger="ncprobe.cache"):
        with EmbeddingStore(glove.fingerprint(), root=tmp_path).lock() as again:
            assert len(again) == 2  # nothing stored was lost
    left = {p.name for p in store.dir.iterdir() if p.name.startswith(".")}
    assert left == set(others_left) | {".shard-1.npz.tmp"}
    removed = [r.getMessage() for r in caplog.records if "interrupted" in r.getMessage()]
    assert sorted(removed) == sorted(f"removed {store.dir / n}, left by an interrupted write"
                                     for n in shards_left)


def test_a_cache_that_cannot_be_tidied_is_still_read(tmp_path, glove, monkeypatch) -> None:
    """A killed write's shard temporary file that cannot be removed (a read-only cache) does
    not stop a run from reading what is stored."""
    store = EmbeddingStore(glove.fingerprint(), root=tmp_path)
    embed(STIMULI, glove, store=store, progress=False)
    leftover = store.dir / ".shard-00000000000000000001-0123456789ab.npz.k1ll3d_x.tmp"
    leftover.write_bytes(b"partial")
    real_unlink = os.unlink

    def read_only(path, *args, **kwargs):
        if str(path).endswith(".tmp"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_unlink(path, *args, **kwargs)
    monkeypatch.setattr(os, "unlink", read_only)
    out = embed(STIMULI, glove, store=EmbeddingStore(glove.fingerprint(), root=tmp_path),
                progress=False)
    monkeypatch.undo()
    assert out.encoded == 0 and leftover.read_bytes() == b"partial"
