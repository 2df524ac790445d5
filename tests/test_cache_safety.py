"""`ncprobe cache clear` / `cache info` pointed at directories full of someone else's files.

Only store entries that ncprobe wrote may be listed or deleted; every other file, a symbolic
link to a directory outside, and directories that merely look like entries survive, byte for
byte.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from ncprobe.cache import EmbeddingStore, cache_clear, cache_info, fingerprint_id
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


def test_entries_of_the_old_layout_are_recognised(tmp_path, glove) -> None:
    """A store written before the marker existed (fingerprint.json + shards only)."""
    store = EmbeddingStore(glove.fingerprint(), root=tmp_path)
    embed(STIMULI, glove, store=store, progress=False)
    (store.dir / "CACHEDIR.TAG").unlink(missing_ok=True)
    (tmp_path / "CACHEDIR.TAG").unlink()  # the old code tagged no root either
    (store.dir / ".tmp-abc123").write_bytes(b"")  # a temporary file the old code left
    assert [e["items"] for e in cache_info(tmp_path)] == [2]
    assert cache_clear(tmp_path).removed == [str(store.dir)]
    assert list(tmp_path.iterdir()) == []


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
