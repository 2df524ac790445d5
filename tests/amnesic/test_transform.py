"""Erasers as a vector transform (:class:`ncprobe.amnesic.erase.ErasingTransform`): an empty
eraser through :func:`ncprobe.compute` gives the plain run's tables exactly; each row is erased
by its own group's eraser; a view, level or group without an eraser is named, never passed
through."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import ncprobe
from ncprobe.amnesic.erase import (
    Eraser,
    EraserError,
    ErasingTransform,
    erase_by_fold,
    fit_eraser,
    fold_erasers,
)
from ncprobe.results.store import TABLES

from ..synthetic import SeededEncoder, pairs_stimuli

VIEWS = ("0", "1", "2")  # SeededEncoder(views=3): one layer per view, named by it
LEVELS = ("sent", "nc")


@pytest.fixture(scope="module")
def stim(tmp_path_factory):
    return pairs_stimuli(tmp_path_factory.mktemp("pairs") / "pairs.csv", n_nc=6)


def _run(stim, cache, transform=None):
    return ncprobe.compute(stimuli=stim, encoder=SeededEncoder(dim=6, views=3), n_boot=0,
                           progress=False, cache_dir=cache, transform=transform)


def _fitted(seed: int, dim: int = 6) -> Eraser:
    """An eraser of a concept planted along the first coordinate of random vectors."""
    rng = np.random.default_rng(seed)
    y = np.arange(40) % 2
    x = rng.normal(size=(40, dim))
    x[:, 0] += 3.0 * y
    return fit_eraser(x, y)


def test_empty_erasers_give_the_plain_tables(stim, tmp_path):
    plain = _run(stim, tmp_path / "cache")
    empty = ErasingTransform({(v, lv): Eraser.identity(6) for v in VIEWS for lv in LEVELS},
                             what="nothing (test)")
    erased = _run(stim, tmp_path / "cache", empty)
    for name in TABLES:
        a, b = getattr(plain, name, None), getattr(erased, name, None)
        if isinstance(a, pd.DataFrame):
            pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert erased.meta[0]["transform"] == empty.fingerprint != plain.meta[0].get("transform")
    assert erased.run_id != plain.run_id


def test_each_row_is_erased_by_its_groups_eraser():
    erasers = {"a": _fitted(1), "b": _fitted(2)}
    t = ErasingTransform({("3", "nc"): erasers}, what="folds (test)")
    x = np.random.default_rng(0).normal(size=(5, 6)).astype(np.float32)
    groups = ["a", "b", "a", "b", "b"]
    out = t("3", "nc", x, groups)
    assert out.dtype == np.float32
    for i, g in enumerate(groups):  # by hand: the row's own eraser, in float64, back to float32
        expected = erasers[g].apply(x[i:i + 1].astype(np.float64)).astype(np.float32)[0]
        np.testing.assert_array_equal(out[i], expected)
    assert not np.allclose(out[0], erasers["b"].apply(x[:1])[0])  # the other fold's differs


def test_a_view_level_or_group_without_an_eraser_is_named(stim, tmp_path):
    some = ErasingTransform({(v, lv): Eraser.identity(6) for v in VIEWS[:2] for lv in LEVELS},
                            what="two views (test)")
    with pytest.raises(EraserError, match="no eraser for view 2, level"):
        _run(stim, tmp_path / "cache", some)
    folds = ErasingTransform({("0", "nc"): {"a": _fitted(1)}}, what="one group (test)")
    with pytest.raises(EraserError, match=r"1 group\(s\) of view 0, level nc \(b\)"):
        folds("0", "nc", np.zeros((2, 6)), ["a", "b"])
    with pytest.raises(EraserError, match="what=..."):
        ErasingTransform({("0", "nc"): _fitted(1)}, what="")


def test_the_fingerprint_names_every_eraser_and_what_they_erase():
    base = ErasingTransform({("0", "nc"): _fitted(1), ("1", "nc"): _fitted(2)}, what="x")
    same = ErasingTransform({("1", "nc"): _fitted(2), ("0", "nc"): _fitted(1)}, what="x")
    other = ErasingTransform({("0", "nc"): _fitted(1), ("1", "nc"): _fitted(3)}, what="x")
    said = ErasingTransform({("0", "nc"): _fitted(1), ("1", "nc"): _fitted(2)}, what="y")
    assert base.fingerprint == same.fingerprint  # the order given does not matter
    assert len({base.fingerprint, other.fingerprint, said.fingerprint}) == 3
    assert base.fingerprint.startswith("erase:")


def test_fold_erasers_through_the_transform_equal_erase_by_fold():
    rng = np.random.default_rng(4)
    groups = np.repeat(np.array([f"nc{i}" for i in range(12)]), 2)
    y = np.repeat(np.arange(12) % 2, 2)
    x = rng.normal(size=(24, 5)) + 2.0 * y[:, None]
    for control in (False, True):
        erasers = fold_erasers(x, y, groups, 3, 7, control)
        assert set(erasers) == set(groups.tolist())
        t = ErasingTransform({("0", "nc"): erasers}, what="folds")
        np.testing.assert_array_equal(t("0", "nc", x, groups.tolist()),
                                      erase_by_fold(x, y, groups, 3, 7, control))
