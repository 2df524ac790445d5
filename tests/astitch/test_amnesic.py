"""AStitch as a target of amnesic probing (:func:`ncprobe.astitch.amnesic.target_rows`) and its
paired AUROC difference (:func:`ncprobe.astitch.stats.paired_auroc_diff`), checked against
scikit-learn's AUROC with the bootstrap's weights rebuilt by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from ncprobe.amnesic.erase import Eraser, ErasingTransform, fit_eraser
from ncprobe.astitch.amnesic import target_rows
from ncprobe.astitch.stats import paired_auroc_diff
from ncprobe.concept import FittedOn
from ncprobe.intervention import CHANGES, TARGET_COLUMNS, TARGET_RUNS, TESTED
from ncprobe.stats import resample_counts

from .subset import TASK, VARIANTS, make_subset, read_rows

GLOVE = "glove-6b-50d"
SPLITS = ("train_zero_shot", "dev", "test")


def test_the_paired_auroc_difference_by_hand():
    rng = np.random.default_rng(0)
    n = 60
    labels = np.arange(n) % 2
    expr = np.array([f"e{i % 9}" for i in range(n)], dtype=object)
    a = rng.normal(size=n) + 0.8 * labels
    b = rng.normal(size=n) + 0.2 * labels
    got = paired_auroc_diff(a, b, labels, expr, n_boot=100, seed=5)
    assert got["diff"] == pytest.approx(roc_auc_score(labels, a) - roc_auc_score(labels, b),
                                        abs=1e-12)
    # the same draws for both sides: expressions (sorted) resampled, rows weighted by them
    names = sorted(set(expr))
    counts = resample_counts(len(names), 100, 5)
    inv = np.array([names.index(e) for e in expr])
    diffs = np.array([roc_auc_score(labels, a, sample_weight=c[inv])
                      - roc_auc_score(labels, b, sample_weight=c[inv]) for c in counts])
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((lo, hi), abs=1e-12)
    tail = min(np.mean(diffs <= 0), np.mean(diffs >= 0))
    assert got["p"] == pytest.approx(min(1.0, max(2 * tail, 2 / (len(diffs) + 1))))
    same = paired_auroc_diff(a, a, labels, expr, n_boot=100, seed=5)
    assert same["diff"] == 0 and same["ci_low"] == same["ci_high"] == 0 and same["p"] == 1


@pytest.fixture(scope="module")
def subset(raw_dir, tmp_path_factory) -> Path:
    return make_subset(raw_dir, tmp_path_factory.mktemp("astitch-data"), per_label=10,
                       langs=("en",))


def _rows(subset, cache, erased, control, fitted_on=None):
    return target_rows(GLOVE, "en", {"plain": None, "erased": erased, "control": control},
                       n_boot=100, compare_n_boot=100, seed=0, static="none", splits=SPLITS,
                       fitted_on=fitted_on,
                       within_draws=1,
                       data_dir=subset, accept_modified_data=True, cache_dir=cache,
                       progress=False)


def _each(make, what) -> ErasingTransform:
    return ErasingTransform({("-", lv): make() for lv in ("sent", "nc")}, what=what)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_an_empty_erasure_changes_nothing_and_a_change_is_the_runs_difference(
        subset, tmp_path):
    # erasers said to be fitted on the zero-shot training split's rows (ids <split>:<row>,
    # the files' 1-based data rows) and on dev's
    rows = len(read_rows(subset / TASK / "EN" / VARIANTS[0] / "train_zero_shot.csv"))
    ids = frozenset({f"train_zero_shot:{r}" for r in range(1, rows + 1)} | {"dev:1"})
    empty = _rows(subset, tmp_path / "cache", _each(lambda: Eraser.identity(50), "a"),
                  _each(lambda: Eraser.identity(50), "b"), FittedOn("astitch", "en", ids))
    # the zero-shot linear probe trains on those rows: its rows share them, and only they
    # (dev trains nothing; an AUROC trains nothing)
    sharing = set(empty.loc[empty["shares_concept_rows"].astype(bool), "metric"])
    assert sharing == {"macro-F1 zero-shot"}
    assert empty["shares_concept_rows"].eq(empty["metric"] == "macro-F1 zero-shot").all()
    assert list(empty.columns) == list(TARGET_COLUMNS)
    assert set(empty["condition"]) == set(TARGET_RUNS) | set(CHANGES)
    assert {m.split()[0] for m in empty["metric"]} == {"auroc", "macro-F1"}
    keys = ["metric", "layer", "level", "context"]
    by = {c: p.set_index(keys) for c, p in empty.groupby("condition")}
    assert by["erased"]["value"].equals(by["plain"]["value"])
    for change in CHANGES:  # NaN where a cell's scored uses hold one label (tiny data)
        value = by[change]["value"]
        assert ((value == 0) | value.isna()).all() and (value == 0).any()
    auroc_tests = by[TESTED][by[TESTED].index.get_level_values("metric").str.startswith("auroc")]
    assert ((auroc_tests["p"] == 1) | auroc_tests["value"].isna()).all()

    rng = np.random.default_rng(1)
    shifted = _rows(subset, tmp_path / "cache",
                    _each(lambda: fit_eraser(rng.normal(size=(40, 50)), np.arange(40) % 10), "c"),
                    _each(lambda: fit_eraser(rng.normal(size=(40, 50)), np.arange(40) % 10), "d"),
                    FittedOn("ncimp", "en", ids))
    assert not shifted["shares_concept_rows"].any()  # the same ids of another probe's data
    by = {c: p.set_index(keys) for c, p in shifted.groupby("condition")}
    auroc = by["erased - plain"].index.get_level_values("metric").str.startswith("auroc")
    change = by["erased - plain"][auroc]
    # every use scored on both sides: the paired difference is that of the runs' AUROCs
    diff = by["erased"]["value"] - by["plain"]["value"]
    np.testing.assert_allclose(change["value"], diff.loc[change.index], rtol=0, atol=1e-12,
                               equal_nan=True)
    assert (change["value"].abs() > 1e-9).any()
