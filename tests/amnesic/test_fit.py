"""A concept's erasers view by view (:func:`ncprobe.amnesic.fit.fit_concept`), on synthetic
concepts: each eraser equals one fitted by hand on the rows it may see, the control keeps the
concept readable while the concept's eraser leaves its probe at chance on the training rows,
and every view is read once."""

from __future__ import annotations

import numpy as np
import pytest

from ncprobe.amnesic.erase import OneLabelError, fit_eraser, grouped_folds
from ncprobe.amnesic.fit import GUARANTEE_COLUMNS, fit_concept
from ncprobe.concept import Concept, Side


def _vectors(n: int, dim: int, y: np.ndarray, seed: int) -> np.ndarray:
    """Label-independent noise plus a shift of the label-1 rows along a random direction."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, dim)) + 1.5 * y[:, None] * rng.normal(size=dim)


class Spy:
    """``read(view, level)``: the view's vectors, each read counted."""

    def __init__(self, views: dict[str, np.ndarray]) -> None:
        self.views, self.reads = views, []

    def __call__(self, view: str, level: str) -> np.ndarray:
        self.reads.append((view, level))
        return self.views[view]


def test_a_concept_with_held_out_rows_gets_one_eraser_per_view():
    n, dim = 160, 5
    rng = np.random.default_rng(0)
    y = (rng.random(n) < 0.35).astype(np.int64)        # unbalanced: a chance line of ~0.65
    groups = np.array([f"idiom{i % 40}" for i in range(n)], dtype=object)
    spy = Spy({"0": _vectors(n, dim, y, 1), "1": _vectors(n, dim, y, 2)})
    train, held = np.arange(0, 120), np.arange(120, n)

    def side(at):
        return Side(at, y[at], groups[at], [f"r{i}" for i in at])

    concept = Concept("toy idiomatic/literal", ("literal", "idiomatic"),
                      [("0", "nc"), ("1", "nc")], spy, side(train), side(held))
    seen = []
    fitted = fit_concept(concept, seed=3, on_view=lambda *a: seen.append(a))
    assert spy.reads == [("0", "nc"), ("1", "nc")]        # one read per view
    assert seen == [("0", "nc", 0, 2), ("1", "nc", 1, 2)]
    for view in ("0", "1"):
        x = spy.views[view]
        by_hand = fit_eraser(x[train], y[train], classes=[0, 1])
        got = fitted.erased(view, "nc", x, list(groups))
        np.testing.assert_allclose(got, by_hand.apply(x), rtol=0, atol=1e-12)
        # the control: the same rank, other directions
        control = fitted.control(view, "nc", x, list(groups))
        assert np.abs(control - got).max() > 1e-3
    g = fitted.guarantee
    assert list(g.columns) == list(GUARANTEE_COLUMNS) and set(g["fold"]) == {"all"}
    row = g.set_index(["view", "condition", "split", "probe"])
    chance = 1 - y[train].mean()
    for view in ("0", "1"):
        assert row.loc[(view, "concept", "train", "plain"), "accuracy"] > chance + 0.1
        # LEACE's guarantee on the training rows: the majority class, within one row
        assert abs(row.loc[(view, "concept", "train", "erased"), "accuracy"] - chance) \
            <= 1 / len(train) + 1e-12
        # erasing a random direction of the same rank leaves the concept readable
        assert row.loc[(view, "control", "train", "erased"), "accuracy"] > chance + 0.1
    assert fitted.erased.fingerprint != fitted.control.fingerprint


def test_a_concept_without_held_out_rows_is_erased_fold_by_fold():
    n_groups, per, dim, k, seed = 30, 2, 4, 5, 1
    groups = np.repeat(np.array([f"nc{i}" for i in range(n_groups)], dtype=object), per)
    y = np.repeat(np.arange(n_groups) % 3 == 0, per).astype(np.int64)
    x = _vectors(len(y), dim, y, 4)
    concept = Concept("toy class", ("C", "NC"), [("own", "sent")], Spy({"own": x}),
                      Side(np.arange(len(y)), y, groups, [str(g) for g in groups]))
    fitted = fit_concept(concept, folds=k, seed=seed)
    folds = grouped_folds(groups, k, seed, labels=y)
    got = fitted.erased("own", "sent", x, list(groups))
    for fold in range(k):  # by hand: each fold's rows by an eraser of the other folds' rows
        held = folds == fold
        by_hand = fit_eraser(x[~held], y[~held], classes=[0, 1])
        np.testing.assert_allclose(got[held], by_hand.apply(x[held]), rtol=0, atol=1e-12)
    # a compound the concept never saw: the eraser of all its rows
    new = np.random.default_rng(9).normal(size=(2, dim))
    np.testing.assert_allclose(fitted.erased("own", "sent", new, ["unseen", "unseen"]),
                               fit_eraser(x, y, classes=[0, 1]).apply(new), rtol=0,
                               atol=1e-12)
    g = fitted.guarantee
    assert sorted(set(g["fold"])) == [str(f + 1) for f in range(k)]
    train = g[(g["condition"] == "concept") & (g["split"] == "train") & (g["probe"] == "erased")]
    assert ((train["accuracy"] - train["chance"]).abs() <= 1 / train["n"] + 1e-12).all()


def test_training_rows_of_one_label_are_named():
    y = np.zeros(20, dtype=np.int64)
    concept = Concept("toy", ("a", "b"), [("0", "nc")],
                      Spy({"0": np.random.default_rng(0).normal(size=(20, 3))}),
                      Side(np.arange(20), y, [f"g{i}" for i in range(20)],
                           [str(i) for i in range(20)]),
                      Side(np.arange(5), y[:5], ["h"] * 5, ["x"] * 5))
    with pytest.raises(OneLabelError, match="toy, view 0, level nc: the training rows"):
        fit_concept(concept)
