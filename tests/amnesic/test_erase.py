"""The eraser (``ncprobe.amnesic.erase``) against concept-erasure's own LEACE, a concept planted
by hand, the identity, the control concept, folds by group and LEACE's guarantee.

Small synthetic data only; each expectation is derived in the test (by hand, or by the
package's reference implementation where the issue asks for equality with it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ncprobe.amnesic.erase import (
    LEACE_SETTINGS,
    Eraser,
    EraserError,
    EraserFitter,
    NonFiniteError,
    OneLabelError,
    ShapeError,
    UnknownLabelError,
    control_labels,
    erase_by_fold,
    fit_eraser,
    grouped_folds,
    guarantee,
)
from ncprobe.errors import MissingPackageError, UsageError

torch = pytest.importorskip("torch")
leace = pytest.importorskip("concept_erasure.leace")


def _concept(n: int, d: int, k: int, seed: int, shift: float = 1.5) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """``n`` correlated vectors whose class mean moves along a random direction per class."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)  # every class present
    x = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + rng.normal(size=d)
    x += shift * rng.normal(size=(k, d))[y]
    return x, y


@pytest.mark.parametrize("n, d, k", [(120, 8, 2), (90, 6, 3), (30, 40, 2)],
                         ids=["binary", "three-classes", "fewer-rows-than-dimensions"])
def test_eraser_equals_concept_erasure_and_streams(n: int, d: int, k: int) -> None:
    x, y = _concept(n, d, k, seed=n + d)
    z = np.eye(k)[y]  # one-hot, float64
    reference = leace.LeaceEraser.fit(torch.from_numpy(x), torch.from_numpy(z), **LEACE_SETTINGS)
    expected = reference(torch.from_numpy(x)).numpy()

    eraser = fit_eraser(x, y)
    np.testing.assert_allclose(eraser.apply(x), expected, rtol=0, atol=1e-10)
    assert eraser.rank == k - 1 and eraser.classes == tuple(range(k)) and eraser.n_rows == n

    chunks = np.array_split(np.arange(n), 3)
    fitter = EraserFitter(d, range(k))
    for rows in chunks:
        fitter.update(x[rows], y[rows])
    streamed = fitter.eraser()
    np.testing.assert_allclose(streamed.apply(x), expected, rtol=0, atol=1e-10)
    on_cpu = fit_eraser(x, y, device="cpu")
    np.testing.assert_allclose(on_cpu.apply(x), expected, rtol=0, atol=1e-10)
    assert streamed.rank == k - 1 and streamed.n_rows == n


def test_a_concept_planted_in_one_direction_is_removed_and_nothing_else_moves() -> None:
    """x = a * label * u + noise in u's orthogonal complement, where the noise rows of class 1
    are those of class 0 twice over: the noise's class means are equal and its sample
    cross-covariance with the label is exactly zero, so the covariance of x is block-diagonal
    (u | complement) and its shrunk form alpha * S + beta * I has u as an eigenvector. The
    whitened cross-covariance then points along u, so LEACE's I - P is u u^T: by hand,
    x' = x - ((x - mean(x)) . u) u. Tolerance 1e-10: every step is O(d) float64 sums of values
    under 10 (rounding about 1e-14) and one symmetric eigendecomposition of a covariance with
    condition number under 1e3 (about 1e-13), three orders of magnitude below."""
    rng = np.random.default_rng(7)
    d, m, a = 6, 25, 3.0
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    basis = np.linalg.qr(np.column_stack([u, rng.normal(size=(d, d - 1))]))[0][:, 1:]
    noise = rng.normal(size=(m, d - 1)) * np.array([2.0, 1.0, 0.5, 1.5, 0.8]) @ basis.T
    x = np.vstack([noise, noise + a * u, noise + a * u])   # class 0: m rows; class 1: 2m
    y = np.array([0] * m + [1] * (2 * m))

    eraser = fit_eraser(x, y)
    erased = eraser.apply(x)
    by_hand = x - np.outer((x - x.mean(axis=0)) @ u, u)

    assert eraser.rank == 1
    np.testing.assert_allclose(erased[y == 0].mean(axis=0), erased[y == 1].mean(axis=0),
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(erased @ basis, x @ basis, rtol=0, atol=1e-10)
    np.testing.assert_allclose(erased, by_hand, rtol=0, atol=1e-10)
    # before erasure the class means differ by a along u (the test can fail)
    assert (x[y == 1].mean(axis=0) - x[y == 0].mean(axis=0)) @ u == pytest.approx(a)


def test_a_weak_concept_is_erased_too() -> None:
    """A class-mean shift of 0.004 standard deviations: the whitened cross-covariance's singular
    value is about 0.5 * 0.5 * 0.004 = 0.001 (label sd times shift), under concept-erasure's
    default svd_tol of 0.01, which leaves the concept in place; ncprobe's settings erase it and
    the erased class means are equal (the same 1e-10 as above)."""
    rng = np.random.default_rng(8)
    y = np.arange(400) % 2
    x = rng.normal(size=(400, 4))
    x -= np.array([x[y == c].mean(axis=0) for c in (0, 1)])[y]   # class means exactly 0
    x[:, 2] += 0.004 * y
    default = leace.LeaceEraser.fit(torch.from_numpy(x), torch.from_numpy(np.eye(2)[y]))
    left_in = default(torch.from_numpy(x)).numpy()
    assert abs(left_in[y == 1, 2].mean() - left_in[y == 0, 2].mean()) > 0.003  # not erased

    erased = fit_eraser(x, y).apply(x)
    np.testing.assert_allclose(erased[y == 1].mean(axis=0), erased[y == 0].mean(axis=0),
                               rtol=0, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_identity_eraser_reproduces_the_input_bytes(dtype) -> None:
    x = np.random.default_rng(3).normal(size=(11, 5)).astype(dtype)
    out = Eraser.identity(5).apply(x)
    assert out.dtype == x.dtype and out.shape == x.shape and out.tobytes() == x.tobytes()
    assert out is not x
    assert Eraser.identity(5).rank == 0 and Eraser.identity(5).is_identity
    erased = fit_eraser(x.astype(np.float64), np.arange(11) % 2).apply(x)
    assert erased.dtype == x.dtype and erased.tobytes() != x.tobytes()


def test_the_fingerprint_follows_the_arrays_and_is_stable_across_processes(tmp_path) -> None:
    x, y = _concept(60, 5, 2, seed=1)
    eraser = fit_eraser(x, y)
    other = fit_eraser(x, y[::-1])
    assert eraser.fingerprint != other.fingerprint
    assert eraser.fingerprint != Eraser.identity(5).fingerprint
    assert Eraser.identity(5).fingerprint != Eraser.identity(6).fingerprint
    # equal arrays built again give the same fingerprint; one bias entry one ulp off does not
    rebuilt = Eraser(eraser.proj_left.copy(), eraser.proj_right.copy(), eraser.bias.copy())
    assert rebuilt.fingerprint == eraser.fingerprint
    nudged_bias = eraser.bias.copy()
    nudged_bias[0] = np.nextafter(nudged_bias[0], np.inf)
    assert Eraser(eraser.proj_left, eraser.proj_right, nudged_bias).fingerprint \
        != eraser.fingerprint

    np.savez(tmp_path / "e.npz", left=eraser.proj_left, right=eraser.proj_right,
             bias=eraser.bias)
    code = ("import json, sys, numpy as np\n"
            "from ncprobe.amnesic.erase import Eraser\n"
            f"a = np.load({str(tmp_path / 'e.npz')!r})\n"
            "e = Eraser(a['left'], a['right'], a['bias'])\n"
            "print(json.dumps([e.fingerprint, 'torch' in sys.modules]))\n")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    fingerprint, torch_imported = json.loads(run.stdout)
    assert fingerprint == eraser.fingerprint
    assert not torch_imported  # building and fingerprinting an eraser needs no torch


def test_control_labels_keep_the_counts_and_the_rank() -> None:
    x, y = _concept(90, 6, 3, seed=5)
    control = control_labels(y, seed=11)
    assert sorted(control.tolist()) == sorted(y.tolist())
    assert np.any(control != y)
    assert np.array_equal(control, control_labels(y, seed=11))
    assert fit_eraser(x, control).rank == fit_eraser(x, y).rank == 2
    # two rows: the only permutation that changes a label is the swap
    assert control_labels(np.array(["a", "b"]), seed=0).tolist() == ["b", "a"]
    with pytest.raises(OneLabelError, match="one label"):
        control_labels(np.zeros(5), seed=0)


def test_control_labels_by_group_permute_the_groups_labels() -> None:
    groups = np.repeat(np.array(["a", "b", "c", "d", "e", "f"]), [1, 2, 3, 1, 2, 3])
    per_group = {"a": 0, "b": 0, "c": 1, "d": 1, "e": 1, "f": 0}
    y = np.array([per_group[g] for g in groups])
    control = control_labels(y, seed=3, groups=groups)
    # by hand: one label per group, the groups' labels a permutation of theirs
    got = {g: set(control[groups == g].tolist()) for g in per_group}
    assert all(len(v) == 1 for v in got.values())
    assert sorted(v.pop() for v in got.values()) == sorted(per_group.values())
    assert np.array_equal(control, control_labels(y, seed=3, groups=groups))
    mixed = y.copy()
    mixed[1] = 1 - mixed[1]  # group b's two rows now differ
    with pytest.raises(EraserError, match="b hold rows of different labels"):
        control_labels(mixed, seed=3, groups=groups)


@pytest.mark.parametrize("control", [False, True], ids=["concept", "control"])
def test_erase_by_fold_never_uses_a_row_s_own_group(control: bool) -> None:
    rng = np.random.default_rng(2)
    n_groups, per, k, seed = 20, 3, 4, 9
    groups = np.repeat(np.arange(n_groups), per)
    y = np.repeat(rng.integers(0, 2, n_groups), per)      # one label per compound
    x = rng.normal(size=(len(y), 5)) + 2.0 * y[:, None] * rng.normal(size=5)
    out = erase_by_fold(x, y, groups, k, seed, control=control)

    folds = grouped_folds(groups, k, seed, labels=y)
    assert sorted(set(folds.tolist())) == list(range(k))
    assert all(len(set(folds[groups == g].tolist())) == 1 for g in range(n_groups))
    # a compound's rows share its label: the control permutes the compounds' labels
    fitted_on = control_labels(y, seed, groups=groups) if control else y
    for fold in range(k):
        held = folds == fold
        assert not set(groups[held].tolist()) & set(groups[~held].tolist())
        complement = fit_eraser(x[~held], fitted_on[~held], classes=[0, 1])
        np.testing.assert_allclose(out[held], complement.apply(x[held]), rtol=0, atol=1e-12)
    # an eraser fitted on every row (its own group included) gives other vectors
    assert np.abs(out - fit_eraser(x, fitted_on).apply(x)).max() > 1e-3


@pytest.mark.filterwarnings("ignore:The least populated class:UserWarning")
def test_a_fold_whose_training_part_holds_one_label_is_named() -> None:
    groups = np.repeat(np.arange(6), 2)
    y = np.where(groups == 5, 1, 0)                      # label 1 in one compound only
    x = np.random.default_rng(0).normal(size=(12, 3))
    fold = grouped_folds(groups, 3, 0, labels=y)[groups == 5][0]
    with pytest.raises(OneLabelError, match=f"fold {fold + 1} of 3.*one label") as err:
        erase_by_fold(x, y, groups, 3, 0)
    assert isinstance(err.value, ValueError) and err.value.exit_code == 2


def test_bad_input_gets_a_named_error() -> None:
    x, y = _concept(20, 4, 2, seed=0)
    fitter = EraserFitter(4, [0, 1], where="the training split")
    with pytest.raises(OneLabelError, match="the training split: a concept with one label"):
        fitter.update(x, np.zeros(20, dtype=int)).eraser()
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(NonFiniteError, match="row 3"):
        EraserFitter(4, [0, 1]).update(bad, y)
    with pytest.raises(ShapeError, match="5 dimensions, the eraser 4"):
        EraserFitter(4, [0, 1]).update(np.zeros((3, 5)), [0, 1, 0])
    with pytest.raises(ShapeError, match="labels of shape"):
        EraserFitter(4, [0, 1]).update(x, y[:-1])
    with pytest.raises(ShapeError, match="4 dimensions"):
        fit_eraser(x, y).apply(np.zeros((2, 3)))
    with pytest.raises(UnknownLabelError, match="row 0 has the label 'C'"):
        EraserFitter(4, ["NC", "PC"]).update(x[:2], ["C", "NC"])
    with pytest.raises(EraserError, match="2 groups"):
        grouped_folds([0, 0, 1, 1], 3, 0)
    for error in (OneLabelError, NonFiniteError, ShapeError, UnknownLabelError):
        assert issubclass(error, UsageError) and issubclass(error, ValueError)


def test_the_guarantee_puts_the_erased_probe_at_chance_on_its_training_rows() -> None:
    """Unbalanced classes (the chance line is the majority rate, counted here). On the erased
    training rows the classes have equal means, so the L2 logistic probe's optimum is the
    constant: every prediction is the majority class and the log-loss is the classes' entropy.
    Tolerances: one training row of accuracy (1 / n_train) for the solver's stopping point,
    1e-6 nats for the log-loss."""
    rng = np.random.default_rng(4)
    n, n_train, d = 200, 150, 8
    y = (rng.random(n) < 0.3).astype(int)
    x = rng.normal(size=(n, d)) + 2.5 * y[:, None] * rng.normal(size=d)
    eraser = fit_eraser(x[:n_train], y[:n_train])
    shown = guarantee(x[:n_train], y[:n_train], x[n_train:], y[n_train:], eraser)

    counts = np.bincount(y[:n_train])
    chance = counts.max() / n_train
    shares = counts / n_train
    assert shown.chance == pytest.approx(chance)
    assert shown.train_before > chance + 0.2 and shown.held_before > chance + 0.15
    assert abs(shown.train_after - chance) <= 1 / n_train
    assert shown.loss_after == pytest.approx(-(shares * np.log(shares)).sum(), abs=1e-6)
    assert shown.n_train == n_train and shown.n_held == n - n_train
    table = shown.table()
    assert table[["split", "condition"]].values.tolist() == [
        ["train", "plain"], ["train", "erased"], ["held", "plain"], ["held", "erased"]]
    # the plain probe on the same rows is not at chance: the check can fail
    assert abs(shown.train_before - chance) > 1 / n_train


def test_without_concept_erasure_fitting_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "concept_erasure", None)   # import fails
    x, y = _concept(10, 3, 2, seed=0)
    with pytest.raises(MissingPackageError, match=r"ncprobe\[amnesic\]"):
        EraserFitter(3, [0, 1]).update(x, y)
    assert Eraser.identity(3).apply(x).tobytes() == x.tobytes()   # applying needs neither


def test_a_dimension_constant_on_the_fitted_rows_is_set_to_its_mean() -> None:
    """MiniLM's last layer has dimensions of spread 1e-32 whose last bits carry the labels:
    whitening cannot see them, a standardising probe can. They are set to their mean: one
    more erased direction each; every other dimension is LEACE's, as concept-erasure gives."""
    import torch
    from concept_erasure import LeaceFitter

    from ncprobe.amnesic.erase import CONSTANT_SPREAD

    rng = np.random.default_rng(0)
    n = 300
    y = (rng.random(n) < 0.35).astype(np.int64)
    x = rng.normal(size=(n, 6))
    x[:, 0] += 2.0 * y
    x[:, 5] = 1e-32 * (y + 0.3 * rng.normal(size=n))   # constant, but for its last bits
    assert x[:, 5].std() <= CONSTANT_SPREAD * x.std(axis=0).max()
    eraser = fit_eraser(x, y, classes=[0, 1])
    erased = eraser.apply(x)
    assert eraser.rank == 2                              # the concept's direction, and e_5
    # its mean, whatever the row (to the last bits of x - (x - mean))
    np.testing.assert_allclose(erased[:, 5], eraser.bias[5], rtol=1e-12, atol=0)
    onehot = torch.nn.functional.one_hot(torch.tensor(y), 2).double()
    theirs = LeaceFitter(6, 2, dtype=torch.float64, **LEACE_SETTINGS).update(
        torch.tensor(x), onehot).eraser(torch.tensor(x)).numpy()
    np.testing.assert_allclose(erased[:, :5], theirs[:, :5], rtol=0, atol=1e-12)
    got = guarantee(x, y, x[:50], y[:50], eraser)
    assert abs(got.train_after - got.chance) <= 1 / n + 1e-12
