"""NCIMP as a target of amnesic probing (:func:`ncprobe.ncimp.amnesic.target_rows`): an empty
erasure changes nothing and its test says so; an erasure's change is the difference of the two
runs' rho on the same compounds; every row has the shared columns."""

from __future__ import annotations

import warnings

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


@pytest.fixture(scope="module")
def fitted_rows(stim, tmp_path_factory):
    """The rows of a run whose erased and control transforms are erasers fitted on random
    two-class concepts of 40 random vectors (one per view and level), and the run's cache
    directory: computed once, read by the tests of the rho changes and of class separation."""
    rng = np.random.default_rng(0)

    def fitted(view, level):
        return fit_eraser(rng.normal(size=(40, 6)), np.arange(40) % 2)

    tmp_path = tmp_path_factory.mktemp("fitted")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return _rows(stim, tmp_path, _each(fitted), _each(fitted)), tmp_path / "cache"


def test_a_change_is_the_difference_of_the_two_runs_rho(fitted_rows):
    rows, _ = fitted_rows
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


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_class_separation_is_the_kruskal_wallis_effect_size_of_each_run(stim, fitted_rows):
    """The class tests as a target: each run's ``eta2_H`` recomputed with scipy's
    Kruskal-Wallis from that run's own measures; the changes their differences; the tests of
    ``erased - control`` a family of their own, as large as their cells."""
    from scipy.stats import kruskal

    from ncprobe import compute
    from ncprobe.schema import DISPLAY_MEASURES

    rows, cache = fitted_rows
    sep = rows[rows["metric"].str.startswith("class separation ")]
    assert set(sep["condition"]) == set(TARGET_RUNS) | set(CHANGES)
    assert set(sep["metric"]) == {f"class separation {m}" for m in DISPLAY_MEASURES}
    plain = compute(model="seeded", lang="en", n_boot=200, seed=0, stimuli=stim,
                    encoder=SeededEncoder(dim=6, views=3), cache_dir=cache,
                    progress=False).measures
    plain = plain[plain["space"].astype(str) == "raw"]
    checked = 0
    for r in sep[sep["condition"] == "plain"].itertuples():
        m = plain[(plain["measure"].astype(str) == r.metric.removeprefix("class separation "))
                  & (plain["layers"].astype(str) == r.layer)
                  & (plain["level"].astype(str) == r.level)
                  & (plain["context"].astype(str) == r.context)].dropna(subset=["value", "cls"])
        if len(m) != r.n:  # a compound without a value in another run: other items
            continue
        groups = [m.loc[m["cls"] == c, "value"].to_numpy() for c in ("I", "PC", "C")]
        h = kruskal(*groups).statistic
        assert r.value == pytest.approx((h - 2) / (len(m) - 3), abs=1e-12)
        assert r.ci_low <= r.value + 0.2 and r.ci_high >= r.value - 0.2  # an interval near it
        checked += 1
    assert checked >= len(sep[sep["condition"] == "plain"]) // 2
    keys = ["metric", "layer", "level", "context"]
    value = {c: part.set_index(keys)["value"] for c, part in sep.groupby("condition")}
    for change in CHANGES:
        a, b = change.split(" - ")
        np.testing.assert_allclose(value[change], (value[a] - value[b])[value[change].index],
                                   rtol=0, atol=1e-12)
    tested = sep[sep["condition"] == TESTED]
    assert tested["p"].between(0, 1).all()
    assert tested["family"].str.startswith("ncimp class separation").all()
    assert tested["family"].str.endswith(f"({len(tested)} tests)").all()
    rho = rows[(rows["condition"] == TESTED) & rows["metric"].str.startswith("rho ")]
    assert not rho["family"].str.contains("class separation").any()


def test_a_class_separation_p_at_the_floor_of_its_resamples_is_said():
    """An erasure that takes every class difference out, tested with few resamples: every p is
    the floor 2/(B+1), and the corrected floor above the level is warned about, not left as a
    quiet 'not significant'."""
    import types

    import pandas as pd

    from ncprobe.ncimp.amnesic import class_rows
    from ncprobe.significance import ResolutionWarning

    rng = np.random.default_rng(0)
    cls = np.repeat(["I", "PC", "C"], 30)
    shift = {"I": 0.0, "PC": 1.0, "C": 2.0}

    def measures(separated: bool) -> pd.DataFrame:
        value = rng.normal(size=90) * 0.3 + (np.array([shift[c] for c in cls])
                                             if separated else 0.0)
        return pd.DataFrame({"space": "raw", "layers": "-", "level": "nc", "context": "nat",
                             "measure": "syn", "nc": [f"nc{i}" for i in range(90)],
                             "cls": cls, "value": value})

    runs = {c: types.SimpleNamespace(measures=measures(c != "erased")) for c in TARGET_RUNS}
    with pytest.warns(ResolutionWarning, match="class separation"):
        rows = class_rows(runs, n_boot=50, compare_n_boot=19, seed=0, correction="holm")
    tested = [r for r in rows if r["condition"] == TESTED]
    assert len(tested) == 1 and tested[0]["p"] == pytest.approx(2 / 20)
    assert tested[0]["value"] < -0.5
