"""AStitch results built by hand for tests/astitch/test_results.py, test_report.py and
tests/plots/test_astitch.py: every table written row by row from the small rules below (no
code under test computes them), so every expected number is read off these rules.

* test uses: 9 rows of 3 expressions (``e1`` rows 1-3, ``e2`` 4-6, ``e3`` 7-9), labels
  :data:`TEST_LABELS`; dev uses: rows 1-6 of ``e1`` and ``e2``;
* paraphrase scores: ``contrast = 0.1 label + 0.01 row + 0.001 layer`` (test row 9 unscored:
  NaN), ``literal = 0.5 + 0.01 row``;
* AUROC: :func:`auroc_value` (best: layer 2, nc, context excluded, in every split), the
  within-expression AUROC :func:`within_value` (0.1 less; 0.11 less for the ambiguous
  subset, whose rows, by the labels above, are all the rows: every expression of a split has
  both labels);
* linear probe: two settings x two layers x three features; for nc/excluded the dev
  macro-F1 is 0.60 (layer 1) and 0.70 (layer 2) and the test macro-F1 0.55 and 0.50, so a
  choice made on dev shows layer 2's 0.50; the controls (majority, expression-only, the
  static model) the same in every model's run.
"""

from __future__ import annotations

import math

import pandas as pd

from ncprobe.astitch.results import AStitchResults

LAYERS = ("1", "2")
LEVEL_CONTEXTS = (("nc", "excluded"), ("sent", "excluded"), ("nc", "included"),
                  ("sent", "included"))
FEATURES = (("nc", "excluded"), ("sent", "excluded"), ("nc", "included"))
SETTINGS = ("zero-shot", "few-shot")
TEST_EXPRESSIONS = ["e1"] * 3 + ["e2"] * 3 + ["e3"] * 3
TEST_LABELS = [0, 0, 1, 1, 0, 1, 1, 1, 0]
DEV_EXPRESSIONS = ["e1"] * 3 + ["e2"] * 3
DEV_LABELS = [0, 1, 1, 0, 0, 1]
STATIC = "glove-6b-50d"
DATA_FILE = "H-TayyarMadabushi+AStitchInLanguageModels/Dataset/Task1/SubTaskA/EN/x/test.csv"


def contrast(label: int, row: int, layer: str) -> float:
    return 0.1 * label + 0.01 * row + 0.001 * int(layer)


def auroc_value(split: str, layer: str, level: str, context: str, score: str) -> float:
    return (0.55 + 0.1 * (layer == "2") + 0.05 * (level == "nc")
            + 0.02 * (context == "excluded") + 0.01 * (score == "contrast")
            - 0.03 * (split == "dev"))


def within_value(split: str, layer: str, level: str, context: str, score: str,
                 subset: str) -> float:
    return auroc_value(split, layer, level, context, score) - 0.1 - 0.01 * (subset != "all")


def scores_table(model: str) -> pd.DataFrame:
    rows = []
    for split, exprs, labels in (("dev", DEV_EXPRESSIONS, DEV_LABELS),
                                 ("test", TEST_EXPRESSIONS, TEST_LABELS)):
        for layer in LAYERS:
            for level, context in LEVEL_CONTEXTS:
                for i, (e, lab) in enumerate(zip(exprs, labels, strict=True)):
                    row = i + 1
                    unscored = split == "test" and row == 9
                    rows.append({"model": model, "lang": "en", "split": split, "layer": layer,
                                 "level": level, "context": context, "row": row,
                                 "expression": e, "label": lab, "literal": 0.5 + 0.01 * row,
                                 "contrast": math.nan if unscored
                                 else contrast(lab, row, layer)})
    return pd.DataFrame(rows)


def auroc_table(model: str) -> pd.DataFrame:
    rows = []
    for split in ("dev", "test"):
        for layer in LAYERS:
            for level, context in LEVEL_CONTEXTS:
                for subset in ("all", "ambiguous"):
                    for score in ("contrast", "literal"):
                        a = auroc_value(split, layer, level, context, score)
                        w = within_value(split, layer, level, context, score, subset)
                        n = (8 if score == "contrast" else 9) if split == "test" else 6
                        k = 3 if split == "test" else 2
                        rows.append({
                            "model": model, "lang": "en", "split": split, "layer": layer,
                            "level": level, "context": context, "score": score,
                            "subset": subset, "n": n, "n_literal": 4, "n_expressions": k,
                            "n_unscored": 1 if (split, score) == ("test", "contrast") else 0,
                            "idiomatic_share": 0.7 if score == "contrast" else 0.55,
                            "n_within": k, "auroc_within": w, "auroc_within_low": w - 0.09,
                            "auroc_within_high": w + 0.09, "auroc": a, "ci_low": a - 0.08,
                            "ci_high": a + 0.08, "boot_used": 200})
    return pd.DataFrame(rows)


def f1_on_dev(layer: str, level: str, context: str) -> float:
    return {"1": 0.60, "2": 0.70}[layer] - (0.0 if (level, context) == ("nc", "excluded")
                                            else 0.2)


def f1_on_test(layer: str, level: str, context: str) -> float:
    return {"1": 0.55, "2": 0.50}[layer] - (0.0 if (level, context) == ("nc", "excluded")
                                            else 0.1)


def _key(model, setting, layer, level, context, kind, control) -> dict:
    return {"model": model, "lang": "en", "setting": setting, "layer": layer, "level": level,
            "context": context, "probe_kind": kind, "control": control}


def cells(model: str, majority_f1: float = 0.40) -> list[tuple[dict, dict]]:
    """(key, numbers) of every linear cell of a model's run: the controls first."""
    out = []
    for setting in SETTINGS:
        out.append((_key("", setting, "", "", "", "control", "majority"),
                    {"C": math.nan, "dev_macro_f1": math.nan, "macro_f1": majority_f1}))
        out.append((_key("", setting, "", "", "", "control", "expression"),
                    {"C": math.nan, "dev_macro_f1": math.nan, "macro_f1": 0.45}))
        out.append((_key(STATIC, setting, "-", "nc", "excluded", "control", "static"),
                    {"C": 0.1, "dev_macro_f1": 0.52, "macro_f1": 0.48}))
        for layer in LAYERS:
            for level, context in FEATURES:
                out.append((_key(model, setting, layer, level, context, "linear", ""),
                            {"C": 1.0, "dev_macro_f1": f1_on_dev(layer, level, context),
                             "macro_f1": f1_on_test(layer, level, context)}))
    return out


def linear_table(model: str, majority_f1: float = 0.40) -> pd.DataFrame:
    rows = []
    for key, num in cells(model, majority_f1):
        f1 = num["macro_f1"]
        linear = key["probe_kind"] == "linear"
        rows.append({**key, "C": num["C"], "dev_macro_f1": num["dev_macro_f1"], "n": 9,
                     "n_expressions": 3, "macro_f1": f1, "f1_low": f1 - 0.1,
                     "f1_high": f1 + 0.1, "accuracy": f1 + 0.05, "acc_low": f1 - 0.05,
                     "acc_high": f1 + 0.15, "control_f1": f1 - 0.2 if linear else math.nan,
                     "control_low": f1 - 0.3 if linear else math.nan,
                     "control_high": f1 - 0.1 if linear else math.nan,
                     "selectivity": 0.2 if linear else math.nan,
                     "sel_low": 0.05 if linear else math.nan,
                     "sel_high": 0.35 if linear else math.nan, "subset": "all",
                     **within_numbers(f1, linear)})
    for setting in SETTINGS:
        for name, f1 in BASELINE_F1.items():
            rows.append({**_key("", setting, "", "", "", "baseline", name), "C": math.nan,
                         "dev_macro_f1": math.nan, "n": 9, "n_expressions": 3,
                         "macro_f1": f1, "f1_low": f1 - 0.1, "f1_high": f1 + 0.1,
                         "accuracy": f1, "acc_low": math.nan, "acc_high": math.nan,
                         "control_f1": math.nan, "control_low": math.nan,
                         "control_high": math.nan, "selectivity": math.nan,
                         "sel_low": math.nan, "sel_high": math.nan, "subset": "all",
                         **within_numbers(f1, False),
                         "n_draws": 20 if name == "chance" else math.nan})
    # every expression of test has both labels: the ambiguous subset is every row
    return pd.DataFrame(rows + [{**r, "subset": "ambiguous"} for r in rows])


#: The baselines' test macro-F1 (by hand from TEST_LABELS: the test majority, label 1
#: everywhere: (0 + 10/14) / 2; the type oracle, e1 -> 0, e2 and e3 -> 1: (4/7 + 8/11) / 2).
BASELINE_F1 = {"majority_train": 0.40, "majority_test": 5 / 14, "chance": 0.49,
               "type_oracle": (4 / 7 + 8 / 11) / 2}


def within_numbers(f1: float, linear: bool) -> dict:
    """A linear row's AUROC of its scores (F1 + 0.1) and its within-expression control (F1 -
    0.1, selectivity 0.1); NaN for other rows."""
    if not linear:
        return {k: math.nan for k in ("auroc", "auroc_low", "auroc_high", "within_f1",
                                      "within_low", "within_high", "within_sel", "wsel_low",
                                      "wsel_high", "n_draws")}
    return {"auroc": f1 + 0.1, "auroc_low": f1, "auroc_high": f1 + 0.2,
            "within_f1": f1 - 0.1, "within_low": f1 - 0.2, "within_high": f1,
            "within_sel": 0.1, "wsel_low": 0.0, "wsel_high": 0.2, "n_draws": 20}


def predicted(key: dict, row: int) -> int:
    """A cell's test prediction: the majority control 1 everywhere; every other cell right
    except on the rows its layer names (layer 2: rows 1 and 2; else row 3)."""
    if key["control"] == "majority":
        return 1
    gold = TEST_LABELS[row - 1]
    wrong = {1, 2} if key["layer"] == "2" else {3}
    return 1 - gold if row in wrong else gold


def predictions_table(model: str) -> pd.DataFrame:
    rows = []
    for key, _ in cells(model):
        linear = key["probe_kind"] == "linear"
        for i, (e, lab) in enumerate(zip(TEST_EXPRESSIONS, TEST_LABELS, strict=True)):
            rows.append({**key, "row": i + 1, "expression": e, "label": lab,
                         "predicted": predicted(key, i + 1),
                         "control_label": (1 if e == "e1" else 0) if linear else -1,
                         "control_predicted": 1 if linear else -1, "draw": -1,
                         "decision": float(predicted(key, i + 1)) if linear else math.nan})
    return pd.DataFrame(rows)


PAIRED_ROW = {
    "family": "astitch: m", "a": "m layer 2 nc/excluded", "b": "majority", "lang": "en",
    "setting": "zero-shot", "n": 9, "n_expressions": 3, "f1_a": 0.5, "f1_b": 0.4,
    "diff": 0.1, "diff_low": -0.05, "diff_high": 0.25, "p": 0.25, "p_bound": False,
    "p_corrected": 0.5, "p_corrected_bound": False, "significant": False,
    "test": "cluster swap permutation (exact)", "correction": "holm", "family_size": 1}


def paired_table(model: str) -> pd.DataFrame:
    return pd.DataFrame([{**PAIRED_ROW, "family": f"astitch: {model}",
                          "a": f"{model} layer 2 nc/excluded"}])


EXCLUDED_WHY = "no literal paraphrase (paraphrase contrast not scored)"


def excluded_table() -> pd.DataFrame:
    rows = [("en", "train_zero_shot", r, "x", EXCLUDED_WHY) for r in (1, 2, 3, 7)]
    rows.append(("en", "test", 12, "y", "not placed: no word begins with 'y'"))
    return pd.DataFrame(rows, columns=["lang", "split", "row", "expression", "why"])


def meta(model: str, data_blob: str = "blob1", **config) -> list[dict]:
    return [{"config": {"model": model, "langs": ["en"], "n_boot": 200, "seed": 0,
                        "correction": "holm", **config},
             "fingerprint": {"en": {"model": f"hub/{model}"}},
             "data_sources": {DATA_FILE: data_blob}, "modified_data": {},
             "notes": ["en: 5 rows left out", f"{model} was quick"]}]


def results(model: str = "m", *, majority_f1: float = 0.40, data_blob: str = "blob1",
            **config) -> AStitchResults:
    return AStitchResults(scores=scores_table(model), auroc=auroc_table(model),
                          predictions=predictions_table(model),
                          linear=linear_table(model, majority_f1), tests=paired_table(model),
                          excluded=excluded_table(), meta=meta(model, data_blob, **config))
