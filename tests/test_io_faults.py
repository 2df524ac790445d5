"""Issue 19, part H5: the embedding cache (a shard of another shape, odd cache paths, a
cache that cannot be written), file modes under the umask, refused or damaged model files,
and a download whose server trickles bytes.

Every expectation is derived here: item counts by hand from the stimuli, modes from the
umask (``0o666 & ~umask``), vectors from the encoder run without any cache.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from ncprobe import errors
from ncprobe._io import atomic_write_bytes, git_blob_sha1
from ncprobe.cache.maintenance import cache_info
from ncprobe.cache.store import EmbeddingStore, item_key
from ncprobe.cli import main
from ncprobe.data.stimuli import Stimulus
from ncprobe.embed import embed
from ncprobe.encoders import load_encoder
from ncprobe.errors import DownloadError, ModelUnavailableError, UsageError

from .local_http import QuietHandler, serve


def _stim(words, span, variant=1):
    words = tuple(words.split())
    return Stimulus("en", "nc", "N", "original", variant, words, span,
                    " ".join(words[span[0]:span[1]]))


#: 30 distinct sentences (word0..word29), 40 stimuli: 30 unique items
MANY = [_stim(f"this is word{i % 30} grey matter", (3, 5), variant=i) for i in range(40)]
UNIQUE = 30


class Counting:
    """Wraps an encoder and counts the sentences it encodes."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0
        self.name, self.dim, self.views, self.levels = (inner.name, inner.dim, inner.views,
                                                        inner.levels)

    def fingerprint(self):
        return self.inner.fingerprint()

    def encode(self, sentences, spans):
        self.calls += len(sentences)
        return self.inner.encode(sentences, spans)


@pytest.fixture(scope="module")
def glove():
    return load_encoder("glove-6b-50d")


def _odd_shard(directory: Path, n: int = 5, dim: int = 7) -> Path:
    """A well-formed shard of another dimension, named to sort before every other shard."""
    keys = [item_key(("odd", str(i)), (0, 1)) for i in range(n)]
    path = directory / "shard-00000000000000000000-000000000000.npz"
    rng = np.random.default_rng(1)
    np.savez(path, keys=np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(n, 20),
             sent=rng.normal(size=(n, 1, dim)).astype(np.float32),
             span=rng.normal(size=(n, 1, dim)).astype(np.float32),
             missing=np.zeros(n, np.int32), missing_span=np.zeros(n, np.int32))
    return path


# --- 1. a shard of another shape --------------------------------------------------------------

def test_a_shard_of_another_shape_is_discarded_alone_and_listed(tmp_path, glove, caplog,
                                                                capsys):
    root = tmp_path / "cache"
    fp = glove.fingerprint()
    embed(MANY[:20], glove, store=EmbeddingStore(fp, root=root), progress=False)
    embed(MANY, glove, store=EmbeddingStore(fp, root=root), progress=False)
    entry = EmbeddingStore(fp, root=root).dir
    good = sorted(entry.glob("shard-*.npz"))
    assert len(good) == 2
    odd = _odd_shard(entry)
    # cache info names the odd shard and counts only the items of the good ones
    info = cache_info(root)
    assert info[0]["items"] == UNIQUE
    assert [c for c in info[0]["corrupt"] if c.startswith(str(odd)) and "shape" in c]
    assert main(["cache", "info", "--cache-dir", str(root)]) == 0
    assert str(odd) in capsys.readouterr().out
    # compute: the odd shard alone is discarded (with a warning naming it); nothing is
    # encoded again, the vectors are those of the encoder, every later run works
    reference = embed(MANY, glove, progress=False)
    enc = Counting(glove)
    with caplog.at_level(logging.WARNING, logger="ncprobe.cache"):
        store = EmbeddingStore(fp, root=root)
        out = embed(MANY, enc, store=store, progress=False)
    assert [r for r in caplog.records if str(odd) in r.getMessage()]
    assert [p for p in store.problems if str(odd) in p]
    assert enc.calls == 0 and out.encoded == 0
    assert not odd.exists() and sorted(entry.glob("shard-*.npz")) == good
    np.testing.assert_array_equal(out.span, reference.span)
    more = MANY + [_stim("a new grey matter", (2, 4), variant=99)]
    again = Counting(glove)
    out2 = embed(more, again, store=EmbeddingStore(fp, root=root), progress=False)
    assert again.calls == 1 and len(out2.span) == len(more)
    assert cache_info(root)[0]["items"] == UNIQUE + 1


def test_the_shape_comes_from_the_fingerprint_not_from_the_first_shard(tmp_path, glove):
    # no shape given by the caller: the one fingerprint.json recorded with the first shard
    root = tmp_path / "cache"
    fp = glove.fingerprint()
    embed(MANY, glove, store=EmbeddingStore(fp, root=root), progress=False)
    entry = EmbeddingStore(fp, root=root).dir
    good = sorted(entry.glob("shard-*.npz"))
    odd = _odd_shard(entry, n=50)  # more items than the good shard: no majority vote either
    store = EmbeddingStore(fp, root=root)
    assert len(store) == UNIQUE and not odd.exists()
    assert sorted(entry.glob("shard-*.npz")) == good


def test_compute_takes_the_shape_from_the_encoder_in_an_entry_of_an_older_ncprobe(
        tmp_path, glove):
    # an entry whose fingerprint.json records no shape (as ncprobe wrote it before), holding
    # one good shard and a larger odd one: the encoder's dimension decides, not the count
    import ncprobe

    root = tmp_path / "cache"
    fp = glove.fingerprint()
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(PAIRS)
    stimuli = ncprobe.load_pairs(pairs, lang="en")
    embed(stimuli, glove, store=EmbeddingStore(fp, root=root), progress=False)
    entry = EmbeddingStore(fp, root=root).dir
    (entry / "fingerprint.json").write_text(json.dumps(fp, indent=2, sort_keys=True,
                                                       default=list))
    good = sorted(entry.glob("shard-*.npz"))
    with np.load(good[0]) as z:
        stored = len(z["keys"])
    odd = _odd_shard(entry, n=stored + 10)
    enc = Counting(glove)
    res = ncprobe.compute(stimuli=stimuli, encoder=enc, cache_dir=root, n_boot=0,
                          progress=False)
    assert enc.calls == 0 and not odd.exists() and sorted(entry.glob("shard-*.npz")) == good
    assert [n for n in res.notes if str(odd) in n]


# --- 2. odd cache paths -----------------------------------------------------------------------

def _odd_root(kind: str, tmp_path: Path) -> Path:
    root = tmp_path / "cache"
    if kind == "file":
        root.write_text("not a directory")
    elif kind == "loop":
        os.symlink(tmp_path / "loop-b", root)
        os.symlink(root, tmp_path / "loop-b")
    else:  # dangling
        os.symlink(tmp_path / "nowhere", root)
    return root


@pytest.mark.parametrize("kind", ["file", "loop", "dangling"])
def test_a_cache_root_that_is_no_directory_is_a_named_error(tmp_path, kind, glove, capsys,
                                                            monkeypatch):
    root = _odd_root(kind, tmp_path)
    with pytest.raises(errors.OutputError) as e:
        EmbeddingStore(glove.fingerprint(), root=root)
    assert e.value.exit_code == 6 and str(root) in str(e.value)
    assert "--cache-dir" in str(e.value) and "--no-cache" in str(e.value)
    for argv in (["cache", "info", "--cache-dir", str(root)],
                 ["cache", "clear", "--cache-dir", str(root)]):
        assert main(argv) == UsageError.exit_code
        err = capsys.readouterr().err
        assert str(root) in err and "Traceback" not in err
    monkeypatch.setenv("NCPROBE_CACHE", str(root))
    assert main(["cache", "info"]) == UsageError.exit_code
    assert not (tmp_path / "nowhere").exists()  # a dangling link is not followed to create


def test_compute_with_a_cache_dir_that_is_a_file_exits_6(tmp_path, raw_dir, capsys):
    root = _odd_root("file", tmp_path)
    code = main(["compute", "--context", "nat", "--n-boot", "0", "--quiet",
                 "--data-dir", str(raw_dir), "--out", str(tmp_path / "out"),
                 "--cache-dir", str(root)])
    err = capsys.readouterr().err
    assert code == 6 and str(root) in err and "Traceback" not in err


def test_a_directory_named_like_a_shard_is_skipped_and_reported(tmp_path, glove, caplog,
                                                                capsys):
    root = tmp_path / "cache"
    fp = glove.fingerprint()
    embed(MANY, glove, store=EmbeddingStore(fp, root=root), progress=False)
    entry = EmbeddingStore(fp, root=root).dir
    odd = entry / "shard-zzz.npz"
    odd.mkdir()
    (odd / "mine.txt").write_text("a user's file")
    enc = Counting(glove)
    with caplog.at_level(logging.WARNING, logger="ncprobe.cache"):
        store = EmbeddingStore(fp, root=root)
        out = embed(MANY, enc, store=store, progress=False)
    assert enc.calls == 0 and out.encoded == 0 and len(store) == UNIQUE
    assert [p for p in store.problems if "shard-zzz.npz" in p]
    assert [r for r in caplog.records if "shard-zzz.npz" in r.getMessage()]
    assert (odd / "mine.txt").read_text() == "a user's file"  # left as it is
    assert main(["cache", "info", "--cache-dir", str(root)]) == 0
    assert "shard-zzz.npz" in capsys.readouterr().out


# --- 3. a cold cache that cannot be written ---------------------------------------------------

def _refuse_writes_under(monkeypatch, root: Path, code: int) -> None:
    """Every temporary file created under ``root`` fails with ``code`` (no root needed)."""
    real = tempfile.mkstemp

    def mkstemp(*args, **kw):
        where = kw.get("dir") or (args[2] if len(args) > 2 else None)
        if where is not None and Path(where).resolve().is_relative_to(root.resolve()):
            raise OSError(code, os.strerror(code), str(where))
        return real(*args, **kw)
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)


PAIRS = ("nc,sentence,start,end,probe,substitute,comp\n"
         "grey matter,this is a grey matter,3,5,syn,brain,1.0\n"
         "eager beaver,an eager beaver works,1,3,syn,workaholic,2.0\n"
         "dust storm,a dust storm came,1,3,syn,sandstorm,4.0\n")


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
def test_a_read_only_cold_cache_fails_before_encoding(tmp_path, glove, monkeypatch, code):
    import ncprobe

    root = tmp_path / "cache"
    root.mkdir()
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(PAIRS)
    stimuli = ncprobe.load_pairs(pairs, lang="en")
    _refuse_writes_under(monkeypatch, root, code)
    enc = Counting(glove)
    with pytest.raises(errors.OutputError) as e:
        ncprobe.compute(stimuli=stimuli, encoder=enc, cache_dir=root, n_boot=0,
                        progress=False)
    assert enc.calls == 0  # stopped before the encoding, not after it
    assert e.value.exit_code == 6 and str(root) in str(e.value)
    assert "--no-cache" in str(e.value) and "--cache-dir" in str(e.value)


def test_a_warm_cache_on_a_read_only_disk_is_read_without_writing(tmp_path, glove,
                                                                  monkeypatch):
    # a guard of the check above (it passes on c3cb481 too): nothing to encode, nothing written
    root = tmp_path / "cache"
    embed(MANY, glove, store=EmbeddingStore(glove.fingerprint(), root=root), progress=False)
    _refuse_writes_under(monkeypatch, root, errno.EROFS)
    enc = Counting(glove)
    out = embed(MANY, enc, store=EmbeddingStore(glove.fingerprint(), root=root),
                progress=False)
    assert enc.calls == 0 and out.encoded == 0 and len(out.span) == len(MANY)


def test_a_full_disk_while_storing_a_shard_is_exit_6(tmp_path, glove, monkeypatch):
    import ncprobe.cache.store

    root = tmp_path / "cache"
    store = EmbeddingStore(glove.fingerprint(), root=root)  # the entry exists (warm root)

    def full(fh, arrays):  # part of the shard reaches the file, then the disk is full
        fh.write(b"PK\x03\x04" + bytes(1000))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(ncprobe.cache.store, "write_npz", full)
    with pytest.raises(errors.OutputError) as e:
        embed(MANY, glove, store=store, progress=False)
    assert e.value.exit_code == 6 and "disk is full" in str(e.value)
    assert str(store.dir) in str(e.value)
    assert not [p for p in store.dir.iterdir() if p.name.endswith(".tmp")]


def test_compute_cli_on_a_read_only_cache_exits_6_without_encoding(tmp_path, raw_dir,
                                                                   monkeypatch, capsys):
    from ncprobe.encoders.static import StaticEncoder

    root = tmp_path / "cache"
    root.mkdir()
    _refuse_writes_under(monkeypatch, root, errno.EROFS)
    calls = []
    real = StaticEncoder.encode
    monkeypatch.setattr(StaticEncoder, "encode",
                        lambda self, s, sp: calls.append(len(s)) or real(self, s, sp))
    code = main(["compute", "--context", "nat", "--n-boot", "0", "--quiet",
                 "--data-dir", str(raw_dir), "--out", str(tmp_path / "out"),
                 "--cache-dir", str(root)])
    err = capsys.readouterr().err
    assert code == 6 and "read-only" in err and str(root) in err and calls == []


# --- 4. file modes under the umask ------------------------------------------------------------

class _Body(QuietHandler):
    body = b""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.reply(self.body)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_files_and_directories_follow_the_umask(tmp_path, glove, umask):
    from ncprobe.data import sources

    old = os.umask(umask)
    try:
        file_mode, dir_mode = 0o666 & ~umask, 0o777 & ~umask
        # an atomic write
        target = atomic_write_bytes(tmp_path / "new" / "x.txt", b"x")
        assert (_mode(target), _mode(target.parent)) == (file_mode, dir_mode)
        # the cache: root, entry, marker, fingerprint and shards
        root = tmp_path / "cache"
        store = EmbeddingStore(glove.fingerprint(), root=root)
        embed(MANY[:3], glove, store=store, progress=False)
        assert _mode(root) == dir_mode and _mode(store.dir) == dir_mode
        files = [p for p in root.rglob("*") if p.is_file()]
        assert len([p for p in files if p.name.startswith("shard-")]) == 1
        assert {p.name: _mode(p) for p in files} == {p.name: file_mode for p in files}
        # downloaded data, and the directories created for it
        body = b"nc,comp\ngrey matter,1\n"
        f = sources.UpstreamFile("own/repo", "0" * 40, "sub/x.csv", git_blob_sha1(body),
                                 len(body), "required")
        with serve(_Body, body=body) as (base, _):
            sources.download(tmp_path / "data", url_template=base, files=[f], retries=0)
        got = tmp_path / "data" / f.local_path
        assert got.read_bytes() == body
        assert _mode(got) == file_mode
        assert _mode(got.parent) == dir_mode and _mode(got.parent.parent) == dir_mode
    finally:
        os.umask(old)


# --- 5. model files refused or damaged --------------------------------------------------------

def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


class _Evil:
    """Unpickling this runs ``touch MARKER``: what a hostile ``pytorch_model.bin`` does."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


SENTENCES = [["this", "is", "a", "grey", "matter"]]
SPANS = [(3, 5)]


@pytest.mark.parametrize("content", [b"", b"2 3\nthe 0.1 0.2\n", b"the 0.1 0.2\nfoo bar baz\n"],
                         ids=["empty", "cut-short", "text-for-numbers"])
def test_a_damaged_vector_file_is_exit_3_naming_it(tmp_path, raw_dir, capsys, content):
    vectors = tmp_path / "vectors.txt"
    vectors.write_bytes(content)
    code = main(["compute", "--model", str(vectors), "--lang", "en", "--context", "neut",
                 "--data-dir", str(raw_dir), "--no-cache", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 3 and str(vectors) in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_a_pickle_that_torch_refuses_is_exit_5_naming_the_file(tmp_path, bert_dir):
    import torch

    model = _copy(bert_dir, tmp_path / "pickled")
    (model / "model.safetensors").unlink()
    marker = tmp_path / "EXECUTED"
    torch.save({"x": _Evil(marker)}, model / "pytorch_model.bin")
    with pytest.raises(ModelUnavailableError) as e:
        load_encoder(str(model)).encode(SENTENCES, SPANS)
    assert e.value.exit_code == 5
    assert str(model / "pytorch_model.bin") in str(e.value) and "weights_only" in str(e.value)
    assert not marker.exists()  # nothing was run


def test_a_truncated_safetensors_file_is_exit_5_naming_it(tmp_path, bert_dir):
    model = _copy(bert_dir, tmp_path / "truncated")
    weights = model / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[:len(data) // 2])
    with pytest.raises(ModelUnavailableError) as e:
        load_encoder(str(model)).encode(SENTENCES, SPANS)
    assert e.value.exit_code == 5 and str(weights) in str(e.value)


@pytest.mark.parametrize("kind", ["os.system", "mypkg.Evil"])
def test_a_modules_json_naming_a_foreign_module_is_exit_5(tmp_path, st_dir, kind, capsys):
    model = _copy(st_dir, tmp_path / "st")
    modules = json.loads((model / "modules.json").read_text())
    modules[-1]["type"] = kind
    (model / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ModelUnavailableError) as e:
        load_encoder(str(model)).encode(SENTENCES, SPANS)
    assert e.value.exit_code == 5
    assert str(model / "modules.json") in str(e.value) and kind in str(e.value)


# --- 6. a download whose server trickles bytes ------------------------------------------------

class _Trickle(QuietHandler):
    """Announces 1000 bytes, then sends one every 0.1 s (each read well within --timeout)."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        try:
            for _ in range(1000):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:  # the client gave up
            pass


def test_a_trickling_server_is_stopped_by_the_deadline(tmp_path):
    from ncprobe.data import sources

    f = sources.UpstreamFile("own/repo", "0" * 40, "x.csv", "0" * 40, 1000, "required")
    with serve(_Trickle) as (base, _):
        started = time.monotonic()
        with pytest.raises(DownloadError) as e:
            sources.download(tmp_path / "data", url_template=base, files=[f], retries=2,
                             timeout=5, deadline=0.8)
        took = time.monotonic() - started
    assert took < 5  # the deadline, not the 100 s the body would take
    msg = str(e.value)
    assert e.value.exit_code == 4 and "x.csv" in msg and base in msg and "--deadline" in msg
    assert not (tmp_path / "data" / f.local_path).exists()


def test_the_download_cli_takes_a_deadline(tmp_path, capsys):
    with serve(_Trickle) as (base, _):
        started = time.monotonic()
        code = main(["data", "download", "--data-dir", str(tmp_path / "data"), "--url", base,
                     "--retries", "0", "--deadline", "0.5"])
        took = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 4 and took < 5 and "--deadline" in err and base in err
    with pytest.raises(SystemExit) as e:  # argparse: a usage error
        main(["data", "download", "--deadline", "0"])
    assert e.value.code == 2


def test_the_default_deadline_follows_the_pinned_size():
    from ncprobe.data import sources

    small = sources.UpstreamFile("o/r", "0" * 40, "a", "0" * 40, 1000, "required")
    big = sources.UpstreamFile("o/r", "0" * 40, "b", "0" * 40, 10_000_000, "required")
    unpinned = sources.UpstreamFile("o/r", "0" * 40, "c", "0" * 40, None, "optional")
    assert sources.file_deadline(small) == 60  # at least a minute
    assert sources.file_deadline(big) == 10_000_000 / 50_000  # 50 kB/s: 200 s
    assert sources.file_deadline(unpinned) == 64 * 2**20 / 50_000


def test_check_can_write_probes_the_nearest_existing_directory(tmp_path, monkeypatch) -> None:
    """The one writability check of every output (report, results, comparison, cache): a
    temporary file in the directory, or in the nearest one above it that exists; the error
    names the output, not the directory probed; nothing is left behind."""
    from ncprobe._io import check_can_write

    made: list[str] = []
    real = tempfile.mkstemp

    def spy(*a, **kw):
        made.append(kw["dir"])
        return real(*a, **kw)

    monkeypatch.setattr(tempfile, "mkstemp", spy)
    check_can_write(tmp_path / "not" / "yet", target=tmp_path / "not" / "yet" / "t.md")
    assert made == [tmp_path] and list(tmp_path.iterdir()) == []

    def refuse(*a, **kw):
        raise OSError(errno.EROFS, "Read-only file system", kw["dir"])

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(errors.OutputError) as err:
        check_can_write(tmp_path, target=tmp_path / "out.md", what="comparison table")
    assert "comparison table" in str(err.value) and "read-only" in str(err.value)
    assert str(tmp_path / "out.md") in str(err.value)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setattr(tempfile, "mkstemp", real)
    with pytest.raises(errors.OutputError, match="a part of the path is a file"):
        check_can_write(blocker / "below", what="report directory")
