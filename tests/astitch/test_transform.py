"""The vector-transform seam (:mod:`ncprobe.transform`) through ``run_astitch``: a transformed
run's paraphrase scores are the cosines of the transformed vectors (recomputed here from the
GloVe encoder's own vectors of each use and its spliced paraphrase), an identity transform
reproduces every table of the plain run under another run id, the static control is left as
it is, and the cache keeps the plain vectors."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ncprobe.astitch.probe import run_astitch
from ncprobe.errors import UsageError

from .subset import make_subset

GLOVE = "glove-6b-50d"
#: the zero-shot setting's splits: the linear probe runs once, the paraphrase probe on each
SPLITS = ("train_zero_shot", "dev", "test")


class Recorder:
    """A transform that records each call and gives ``fn(vectors)``."""

    def __init__(self, fingerprint: str, fn=None) -> None:
        self.fingerprint = fingerprint
        self.fn = fn or np.array
        self.calls: list[tuple] = []

    def __call__(self, view, level, vectors, groups):
        self.calls.append((view, level, vectors.shape, list(groups)))
        return self.fn(vectors)


@pytest.fixture(scope="module")
def subset(raw_dir, tmp_path_factory) -> Path:
    return make_subset(raw_dir, tmp_path_factory.mktemp("astitch-data"), per_label=3,
                       langs=("en",))


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("astitch-cache")


def _run(subset, cache, transform=None, static="none", models=(GLOVE,)):
    return run_astitch(models=list(models), langs=["en"], static=static, splits=SPLITS,
                       n_boot=0, within_draws=1, data_dir=subset, accept_modified_data=True,
                       cache_dir=cache, progress=False, transform=transform)


@pytest.fixture(scope="module")
def plain(subset, cache):
    return _run(subset, cache)


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_identity_gives_the_plain_tables_under_another_run_id(plain, subset, cache):
    res = _run(subset, cache, Recorder("identity"))
    for name in plain.layout.tables:
        pd.testing.assert_frame_equal(res.tables[name], plain.tables[name], check_exact=True)
    assert [m.get("transform") for m in res.meta] == ["identity"]
    assert all("transform" not in m for m in plain.meta)
    assert res.run_id != plain.run_id


def test_paraphrase_scores_are_cosines_of_the_transformed_vectors(plain, subset, cache,
                                                                  tmp_path):
    from ncprobe.data.astitch import load_astitch, spliced
    from ncprobe.encoders import load_encoder

    shift = np.linspace(-0.5, 0.5, 50).astype(np.float32)
    before = _files(cache)
    rec = Recorder("shift", lambda x: np.asarray(x) + shift)
    static = tmp_path / "static.txt"  # a static control of a few words (the others: OOV)
    static.write_text("3 2\nthe 0.5 1.5\nof 1.0 -2.0\nand 0.25 0.75\n", encoding="utf-8")
    res = _run(subset, cache, rec, static=str(static))
    # the model's entry read from the cache as it was (the static control's is new)
    after = _files(cache)
    assert {k: v for k, v in after.items() if not k.startswith("static.txt")} == before
    # the model's one view, each level once: the static control's vectors are not transformed
    # (named as the tables name it: GloVe's one view)
    views = sorted(set(plain.tables["scores"]["layer"]))
    assert len(views) == 1
    assert sorted(c[:2] for c in rec.calls) == [(views[0], "nc"), (views[0], "sent")]
    data = load_astitch("en", subset, accept_modified=True)
    recs = [r for r in data.records if r.split in SPLITS]
    # each row's group is its use's expression (the column sentence2 of the files)
    assert set(rec.calls[0][3]) == {r.expression for r in recs}
    enc = load_encoder(GLOVE, "en")
    got = res.tables["scores"]
    got = got[(got["level"] == "nc") & (got["context"] == "excluded")]
    got = got.set_index(["split", "row"])["literal"]
    was = plain.tables["scores"]
    was = was[(was["level"] == "nc") & (was["context"] == "excluded")]
    was = was.set_index(["split", "row"])["literal"]
    checked = 0
    for r in recs:
        para = data.paraphrases.get(r.expression)
        if para is None or not para.literal:
            assert np.isnan(got[(r.split, r.row)])
            continue
        tokens, span = spliced(r, para.literal, context=False)
        spans = enc.encode([list(r.tokens), list(tokens)], [tuple(r.span), tuple(span)]).span
        a, b = (np.asarray(spans[i, 0], np.float32) + shift for i in (0, 1))
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            continue
        a, b = a.astype(np.float64), b.astype(np.float64)
        want = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
        assert got[(r.split, r.row)] == pytest.approx(want, abs=1e-6)
        checked += 1
    assert checked >= 5
    moved = np.abs(got.to_numpy(float) - was.loc[got.index].to_numpy(float))
    assert np.nanmax(moved) > 1e-3  # the shift moved the scores: the test could fail


def test_a_transform_with_several_models_is_refused(subset, cache):
    with pytest.raises(UsageError, match="one model at a time"):
        _run(subset, cache, Recorder("identity"), models=(GLOVE, "glove-6b-100d"))


def test_a_transformed_run_is_refused_where_the_plain_run_is(plain, subset, cache, tmp_path):
    out = plain.to_parquet(tmp_path / "plain")
    before = _files(out)
    rec = Recorder("identity")
    with pytest.raises(UsageError, match="vector transform none there, identity now"):
        run_astitch(models=[GLOVE], langs=["en"], static="none", splits=SPLITS, n_boot=0,
                    within_draws=1, data_dir=subset, accept_modified_data=True,
                    cache_dir=cache, progress=False, transform=rec, out=out)
    assert rec.calls == [] and _files(out) == before  # refused before any work
