"""The vector-transform seam (:mod:`ncprobe.transform`) through NCIMP's :func:`ncprobe.compute`
(and NCC, which reads NCIMP's measures through it): a transform sees every view's vectors once
as they are read, the results follow from the transformed vectors (cosines recomputed here from
the encoder's own vectors), the run records the transform and is never taken for the plain run,
and the embedding cache keeps the plain vectors.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ncprobe
from ncprobe.errors import UsageError
from ncprobe.results.store import TABLES

from .synthetic import SeededEncoder, pairs_stimuli

VIEWS = ("0", "1", "2")  # SeededEncoder(views=3): one layer per view, named by it


class Recorder:
    """A transform that records each call (view, level, shape, groups, writeable) and gives
    ``fn(view, level, vectors)``."""

    def __init__(self, fingerprint: str, fn=None) -> None:
        self.fingerprint = fingerprint
        self.fn = fn or (lambda view, level, x: np.array(x))
        self.calls: list[tuple] = []

    def __call__(self, view, level, vectors, groups):
        self.calls.append((view, level, vectors.shape, list(groups),
                           bool(vectors.flags.writeable)))
        return self.fn(view, level, vectors)


def _zero(dim: int, view: str, level: str):
    """Coordinate ``dim`` of view ``view``'s ``level`` vectors set to 0; every other as is."""
    def fn(v, lv, x):
        out = np.array(x)
        if (v, lv) == (view, level):
            out[:, dim] = 0.0
        return out
    return fn


@pytest.fixture(scope="module")
def stim(tmp_path_factory):
    return pairs_stimuli(tmp_path_factory.mktemp("pairs") / "pairs.csv", n_nc=6)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _run(stim, cache, transform=None, encoder=None):
    return ncprobe.compute(stimuli=stim, encoder=encoder or SeededEncoder(dim=6, views=3),
                           n_boot=0, progress=False, cache_dir=cache,
                           transform=transform)


@pytest.fixture(scope="module")
def plain(stim, cache):
    return _run(stim, cache)


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_identity_gives_the_plain_tables_under_another_run_id(plain, stim, cache, tmp_path):
    ident = Recorder("identity")
    res = _run(stim, cache, ident)
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(res, name), getattr(plain, name),
                                      check_exact=True)
    assert res.meta[0]["transform"] == "identity"
    assert "transform" not in plain.meta[0]
    assert res.run_id != plain.run_id
    a, b = plain.to_parquet(tmp_path / "plain"), res.to_parquet(tmp_path / "ident")
    ja = json.loads((a / "run.json").read_text())
    jb = json.loads((b / "run.json").read_text())
    assert jb["runs"][0]["transform"] == "identity" and "transform" not in ja["runs"][0]
    # the same rows and contents in every table, byte for byte of their digests
    assert {n: t["content"] for n, t in ja["tables"].items()} == \
        {n: t["content"] for n, t in jb["tables"].items()}
    assert ja["run_id"] != jb["run_id"]


def test_a_transformed_run_never_replaces_the_plain_one(plain, stim, cache, tmp_path):
    out = plain.to_parquet(tmp_path / "run")
    before = _files(out)
    res = _run(stim, cache, Recorder("identity"))
    with pytest.raises(UsageError, match="vector transform none there, identity now"):
        res.to_parquet(out)
    assert _files(out) == before
    # nor a run of another transform the transformed one; the same transform is the same run
    res.to_parquet(tmp_path / "t")
    _run(stim, cache, Recorder("identity")).to_parquet(tmp_path / "t")
    with pytest.raises(UsageError, match="vector transform identity there, other now"):
        _run(stim, cache, Recorder("other")).to_parquet(tmp_path / "t")
    with pytest.raises(UsageError, match="vector transform identity there, none now"):
        plain.to_parquet(tmp_path / "t")


def test_each_view_and_level_is_transformed_once_with_its_compounds(plain, stim, cache):
    before = _files(cache)
    enc = SeededEncoder(dim=6, views=3)
    rec = Recorder("identity")
    _run(stim, cache, rec, encoder=enc)
    assert enc.calls == 0  # every vector read from the cache
    assert sorted((c[0], c[1]) for c in rec.calls) == sorted(
        (v, lv) for v in VIEWS for lv in ("sent", "nc"))
    for _view, _level, shape, groups, writeable in rec.calls:
        assert shape == (len(stim), 6)
        # each row's group is its stimulus's compound, written "w<i> x<i>" in the pairs file
        assert groups == [s.nc for s in stim]
        assert set(groups) == {f"w{i} x{i}" for i in range(6)}
        assert not writeable  # the vectors read are never changed in place
    assert _files(cache) == before  # the cache holds the plain vectors only


def _hand_cosines(stim, view: int, level: str, fn) -> dict[tuple, float]:
    """Cosine of every probe with its context's original, from SeededEncoder's own vectors of
    each item (float32, as stored), transformed by ``fn`` row by row."""
    enc = SeededEncoder(dim=6, views=3)

    def vec(s):
        sent, span = enc.vectors(s.tokens, s.span)
        return fn((sent if level == "sent" else span)[view][None, :].astype(np.float32))[0]

    orig = {(s.nc, s.context): vec(s) for s in stim if s.probe == "original"}
    out = {}
    for s in stim:
        if s.probe == "original":
            continue
        a, b = vec(s).astype(np.float64), orig[(s.nc, s.context)].astype(np.float64)
        out[(s.nc, s.context, s.probe, s.variant)] = float(
            a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    return out


def test_a_zeroed_coordinate_changes_the_cosines_as_computed_by_hand(plain, stim, cache):
    res = _run(stim, cache, Recorder("zero-3", _zero(3, "1", "nc")))
    raw = res.cosines[res.cosines["space"] == "raw"]
    raw0 = plain.cosines[plain.cosines["space"] == "raw"]
    for view in VIEWS:
        for level in ("sent", "nc"):
            hit = (view, level) == ("1", "nc")
            want = _hand_cosines(stim, int(view), level,
                                 (lambda x: np.where(np.arange(6) == 3, 0.0, x)) if hit
                                 else (lambda x: x))
            got = raw[(raw["layers"] == view) & (raw["level"] == level)]
            assert len(got) == len(want)
            for r in got.itertuples():
                assert r.cosine == pytest.approx(want[(r.nc, r.context, r.probe, r.variant)],
                                                 abs=1e-7)
            was = raw0[(raw0["layers"] == view) & (raw0["level"] == level)]
            if hit:  # the test could fail: the zeroed coordinate moved the cosines
                assert np.abs(got["cosine"].to_numpy() - was["cosine"].to_numpy()).max() > 1e-3
            else:  # every other view and level exactly as in the plain run
                assert np.array_equal(got["cosine"].to_numpy(), was["cosine"].to_numpy())


def test_a_constant_vector_added_moves_the_cosines_as_by_hand(stim, cache):
    shift = np.linspace(-1.0, 2.0, 6)
    res = _run(stim, cache, Recorder("shift", lambda v, lv, x: np.asarray(x) + shift))
    raw = res.cosines[res.cosines["space"] == "raw"]
    want = _hand_cosines(stim, 2, "sent", lambda x: (x + shift).astype(np.float32))
    got = raw[(raw["layers"] == "2") & (raw["level"] == "sent")]
    for r in got.itertuples():
        assert r.cosine == pytest.approx(want[(r.nc, r.context, r.probe, r.variant)], abs=1e-7)


def test_bad_transforms_are_refused_by_name(stim, cache):
    enc = SeededEncoder(dim=6, views=3)
    with pytest.raises(UsageError, match="fingerprint"):
        _run(stim, cache, lambda view, level, x, groups: x, encoder=enc)
    assert enc.calls == 0  # refused before any work
    with pytest.raises(UsageError, match=r"view 0, level sent"):
        _run(stim, cache, Recorder("cut", lambda v, lv, x: np.asarray(x)[:, :3]))
    with pytest.raises(ValueError, match="read-only"):  # the vectors read are never changed
        _run(stim, cache, Recorder("in-place", lambda v, lv, x: x.__setitem__(0, 0.0)))



class _Reached(Exception):
    pass


@pytest.mark.slow  # SemanticQA's items and NCIMP's stimuli loaded twice (~4 s)
def test_ncc_takes_the_transform_to_ncimp_measures(raw_dir, tmp_path, monkeypatch):
    """NCC's classifiers read NCIMP's measures through compute: the transform reaches it and
    sees one sentence per item's compound, and the run records it (the classifiers are
    skipped here, they are NCC's own tests: the metadata is caught on its way out)."""
    import ncprobe.ncc.probe as ncc_probe
    from ncprobe.data.semanticqa import load_ncc

    seen = {}

    def caught(items_table, meta, **kw):
        seen["meta"] = meta
        raise _Reached

    monkeypatch.setattr(ncc_probe, "_classified", lambda *a, **k: [])
    monkeypatch.setattr(ncc_probe, "_selected",
                        lambda *a: (a[-1].append("selected"), pd.DataFrame())[1])
    monkeypatch.setattr("ncprobe.ncc.results.NccResults.from_items", caught)
    rec = Recorder("identity")
    for transform, want in ((rec, "identity"), (None, None)):
        with pytest.raises(_Reached):
            ncc_probe.run_ncc(models=["glove-6b-50d"], repeats=1, n_boot=0,
                              data_dir=raw_dir, cache_dir=tmp_path / "cache", progress=False,
                              transform=transform)
        assert seen["meta"][0].get("transform") == want
        assert ("transform" in seen["meta"][0]) == (want is not None)
    items = load_ncc(raw_dir).items
    assert sorted(c[1] for c in rec.calls) == ["nc", "sent"]  # GloVe's one view
    for call in rec.calls:
        assert set(call[3]) == {it.nc for it in items}
    with pytest.raises(UsageError, match="one model at a time"):
        ncc_probe.run_ncc(models=["glove-6b-50d", "glove-6b-100d"], transform=rec,
                          data_dir=raw_dir)
