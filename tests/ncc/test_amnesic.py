"""NCC as a target of amnesic probing (:func:`ncprobe.ncc.amnesic.target_rows`), its three runs
made by hand (each classifier's correct items chosen): every condition's accuracy is the run's,
each change the difference on the same items with McNemar's exact p, the erased-vs-control
tests corrected by Holm over every classifier (computed here with SciPy and statsmodels), and
what the target cannot measure is refused."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests

from ncprobe.concept import FittedOn
from ncprobe.errors import UsageError
from ncprobe.intervention import CHANGES, TARGET_COLUMNS, TARGET_RUNS, TESTED
from ncprobe.ncc import amnesic

ITEMS = [f"i{k:02d}" for k in range(30)]
#: (setting, layer, level, measure) of each classifier of the representation
CLASSIFIERS = [("single", "-", "nc", "syn"), ("all", "-", "nc", "all"),
               ("single", "-", "sent", "syn")]


def _correct(seed: int) -> dict[tuple, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {c: rng.random(len(ITEMS)) < 0.3 + 0.15 * seed for c in CLASSIFIERS}


#: per condition, per classifier, whether each item is answered right
CORRECT = {"plain": _correct(1), "erased": _correct(0), "control": _correct(2)}


def _run(correct: dict[tuple, np.ndarray]) -> SimpleNamespace:
    """An NCC run's items and accuracy tables: the classifiers' rows, and a published
    system's (not a target row). The items come in reverse order: the target pairs them by
    id."""
    items, acc = [], []
    for (setting, layer, level, measure), right in correct.items():
        key = {"system": "toy", "kind": "representation", "setting": setting, "layer": layer,
               "level": level, "measure": measure}
        for item, ok in reversed(list(zip(ITEMS, right, strict=True))):
            items.append({**key, "item": item, "correct": bool(ok)})
        acc.append({**key, "accuracy": right.mean(), "ci_low": right.mean() - 0.1,
                    "ci_high": right.mean() + 0.1, "n": len(ITEMS)})
    pub = {"system": "gpt", "kind": "published", "setting": "0-shot", "layer": "",
           "level": "", "measure": ""}
    items += [{**pub, "item": i, "correct": True} for i in ITEMS]
    acc.append({**pub, "accuracy": 1.0, "ci_low": 1.0, "ci_high": 1.0, "n": len(ITEMS)})
    return SimpleNamespace(items=pd.DataFrame(items), accuracy=pd.DataFrame(acc))


@pytest.fixture()
def fake_runs(monkeypatch):
    """``run_ncc`` replaced: the run of each condition is told apart by its transform."""
    from ncprobe.ncc import probe

    seen: list[dict] = []

    def run_ncc(**options):
        seen.append(options)
        return _run(CORRECT[options["transform"]])

    monkeypatch.setattr(probe, "run_ncc", run_ncc)
    return seen


def _metric(setting: str, measure: str) -> str:
    return "accuracy all" if setting == "all" else f"accuracy {setting} {measure}"


def test_the_rows_are_the_runs_accuracies_and_the_paired_changes_by_hand(fake_runs):
    rows = amnesic.target_rows("toy", "en", {c: c for c in TARGET_RUNS},  # type: ignore[misc]
                               n_boot=10, compare_n_boot=200, seed=3, folds=4,
                               fitted_on=FittedOn("astitch", "en", frozenset(ITEMS)))
    assert [o["transform"] for o in fake_runs] == list(TARGET_RUNS)
    assert all(o["models"] == ["toy"] and o["folds"] == 4 for o in fake_runs)
    assert list(rows.columns) == list(TARGET_COLUMNS)
    assert set(rows["target"]) == {"ncc"} and set(rows["unit"]) == {"items"}
    assert set(rows["condition"]) == set(TARGET_RUNS) | set(CHANGES)
    assert len(rows) == len(CLASSIFIERS) * 6  # the published system is no target row
    # the same item ids of another probe's data are other rows
    assert not rows["shares_concept_rows"].any()
    by = rows.set_index(["metric", "layer", "level", "condition"])
    p_hand = []
    for c in CLASSIFIERS:
        setting, layer, level, measure = c
        cell = (_metric(setting, measure), layer, level)
        for condition in TARGET_RUNS:
            assert by.loc[(*cell, condition), "value"] == pytest.approx(
                CORRECT[condition][c].mean())
        for change in CHANGES:
            a, b = (CORRECT[side.strip()][c] for side in change.split(" - "))
            row = by.loc[(*cell, change)]
            assert row["value"] == pytest.approx(a.mean() - b.mean())
            assert row["ci_low"] <= row["value"] <= row["ci_high"]
            assert row["n"] == len(ITEMS)
            if change == TESTED:
                a_only, b_only = int((a & ~b).sum()), int((~a & b).sum())
                p = binomtest(a_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
                assert row["p"] == pytest.approx(p)
                p_hand.append((cell, p))
            else:
                assert np.isnan(row["p"])
    holm = multipletests([p for _, p in p_hand], method="holm")[1]
    for (cell, _), expected in zip(p_hand, holm, strict=True):
        row = by.loc[(*cell, TESTED)]
        assert row["p_corrected"] == pytest.approx(expected)
        assert row["significant"] == (expected <= 0.05)
        assert row["family"].endswith(f"({len(CLASSIFIERS)} tests)")


@pytest.mark.parametrize("kwargs, message", [
    ({"lang": "pt"}, "English"),
    ({"behaviour": True}, "no behaviour"),
    ({"mdl": True}, "no mdl"),
])
def test_what_the_target_cannot_measure_is_refused_before_any_run(fake_runs, kwargs,
                                                                   message):
    options = {"lang": "en", **kwargs}
    with pytest.raises(UsageError, match=message):
        amnesic.target_rows("toy", transforms={c: c for c in TARGET_RUNS},  # type: ignore
                            compare_n_boot=10, **options)
    assert fake_runs == []


def test_in_the_forward_pass_a_causal_lm_answers_too(monkeypatch):
    """Transforms with an intervention (the forward pass): a causal LM's runs answer the items
    (``behaviour=True``), and its answers are one more cell of the family; an encoder's runs
    do not answer."""
    from ncprobe.errors import ModelUnavailableError
    from ncprobe.ncc import behaviour, probe

    answers = {"plain": _correct(1)[CLASSIFIERS[0]], "erased": _correct(0)[CLASSIFIERS[1]],
               "control": _correct(2)[CLASSIFIERS[2]]}
    asked: list[bool] = []

    def run_ncc(**options):
        asked.append(options["behaviour"])
        c = options["transform"].name
        run = _run(CORRECT[c])
        if options["behaviour"]:
            key = {"system": "toy", "kind": "behaviour", "setting": "0-shot", "layer": "",
                   "level": "", "measure": ""}
            extra = pd.DataFrame([{**key, "item": i, "correct": bool(ok)}
                                  for i, ok in zip(ITEMS, answers[c], strict=True)])
            run.items = pd.concat([run.items, extra], ignore_index=True)
            run.accuracy = pd.concat([run.accuracy, pd.DataFrame([{
                **key, "accuracy": answers[c].mean(), "ci_low": 0.0, "ci_high": 1.0,
                "n": len(ITEMS)}])], ignore_index=True)
        return run

    monkeypatch.setattr(probe, "run_ncc", run_ncc)
    forward = {c: SimpleNamespace(name=c, intervention=object()) for c in TARGET_RUNS}
    forward["plain"] = SimpleNamespace(name="plain")  # the plain run: no transform's
    monkeypatch.setattr(behaviour, "causal_encoder", lambda *a: object())
    rows = amnesic.target_rows("toy", "en", forward, n_boot=10, compare_n_boot=200, seed=3)
    assert asked == [True] * 3
    said = rows[rows["metric"] == "accuracy behaviour 0-shot"]
    assert set(said["layer"]) == {"answers"} and set(said["level"]) == {"-"}
    plain = said[said["condition"] == "plain"]["value"].item()
    assert plain == pytest.approx(answers["plain"].mean())
    change = said[said["condition"] == "erased - plain"]["value"].item()
    assert change == pytest.approx(answers["erased"].mean() - answers["plain"].mean())
    tested = rows[rows["condition"] == TESTED]
    assert len(tested) == len(CLASSIFIERS) + 1  # the answers join the classifiers' family
    a, b = answers["erased"], answers["control"]
    p = binomtest(int((a & ~b).sum()), int((a ^ b).sum()), 0.5).pvalue
    assert said[said["condition"] == TESTED]["p"].item() == pytest.approx(p)
    holm = multipletests(tested["p"].to_numpy(), method="holm")[1]
    np.testing.assert_allclose(tested["p_corrected"].to_numpy(), holm)

    asked.clear()

    def refuse(*a):
        raise ModelUnavailableError("an encoder")

    monkeypatch.setattr(behaviour, "causal_encoder", refuse)
    rows = amnesic.target_rows("toy", "en", forward, n_boot=10, compare_n_boot=200, seed=3)
    assert asked == [False] * 3
    assert not (rows["metric"] == "accuracy behaviour 0-shot").any()
