"""NCIMP as a target of amnesic probing (:func:`ncprobe.ncimp.amnesic.target_rows`): an empty
erasure changes nothing and its test says so; an erasure's change is the difference of the two
runs' rho on the same compounds; every row has the shared columns."""

from __future__ import annotations

import numpy as np
import pytest

from ncprobe.amnesic.erase import Eraser, ErasingTransform, fit_eraser
from ncprobe.intervention import CHANGES, TARGET_COLUMNS, TARGET_RUNS, TESTED
from ncprobe.ncimp.amnesic import target_rows

from ..synthetic import SeededEncoder, pairs_stimuli

VIEWS = ("0", "1", "2")
LEVELS = ("sent", "nc")


@pytest.fixture(scope="module")
def stim(tmp_path_factory):
    return pairs_stimuli(tmp_path_factory.mktemp("pairs") / "pairs.csv", n_nc=10)


def _rows(stim, tmp_path, erased, control):
    return target_rows("seeded", "en", {"plain": None, "erased": erased, "control": control},
                       n_boot=200, compare_n_boot=200, seed=0,
                       stimuli=stim, encoder=SeededEncoder(dim=6, views=3),
                       cache_dir=tmp_path / "cache", progress=False)


def _each(make) -> ErasingTransform:
    return ErasingTransform({(v, lv): make(v, lv) for v in VIEWS for lv in LEVELS},
                            what=f"test {id(make)}")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_an_empty_erasure_changes_nothing(stim, tmp_path):
    rows = _rows(stim, tmp_path, _each(lambda v, lv: Eraser.identity(6)),
                 _each(lambda v, lv: Eraser.identity(6)))
    assert list(rows.columns) == list(TARGET_COLUMNS)
    assert set(rows["condition"]) == set(TARGET_RUNS) | set(CHANGES)
    by = {c: part.reset_index(drop=True) for c, part in rows.groupby("condition")}
    keys = ["metric", "layer", "level", "context"]
    for c in ("erased", "control"):
        assert by[c][keys + ["value", "ci_low", "ci_high"]].equals(
            by["plain"][keys + ["value", "ci_low", "ci_high"]])
    for c in CHANGES:
        assert (by[c]["value"] == 0).all() and len(by[c]) == len(by["plain"])
    tested = by[TESTED]
    assert (tested["p"] == 1).all() and not tested["significant"].any()
    assert rows.loc[rows["condition"] != TESTED, "p"].isna().all()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_change_is_the_difference_of_the_two_runs_rho(stim, tmp_path):
    rng = np.random.default_rng(0)

    def fitted(view, level):  # an eraser of a random two-class concept of 40 random vectors
        return fit_eraser(rng.normal(size=(40, 6)), np.arange(40) % 2)

    rows = _rows(stim, tmp_path, _each(fitted), _each(fitted))
    keys = ["metric", "layer", "level", "context"]
    value = {c: part.set_index(keys)["value"] for c, part in rows.groupby("condition")}
    n = {c: part.set_index(keys)["n"] for c, part in rows.groupby("condition")}
    for change in CHANGES:
        a, b = change.split(" - ")
        # where both runs' rho are over the same compounds, the paired difference is theirs
        same = (n[a] == n[change]) & (n[b] == n[change])
        assert same.any()
        diff = (value[a] - value[b])[same]
        np.testing.assert_allclose(value[change][same], diff, rtol=0, atol=1e-12)
    assert (rows.loc[rows["condition"] == "erased - plain", "value"].abs() > 1e-6).any()
