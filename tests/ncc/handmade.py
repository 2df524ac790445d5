"""NCC results built by hand for the tests of tests/ncc: 20 items whose gold class cycles NC,
PC, C, and a few system rows whose right and wrong items are spelled out below, so that every
expected accuracy, count and flagged item is counted from those rules, not taken from the code.
"""

from __future__ import annotations

import pandas as pd

from ncprobe.ncc.results import NccResults

NCC_CLASSES = ["NC", "PC", "C"]
IDS = [f"{k + 1:03d}" for k in range(20)]
GOLD = [NCC_CLASSES[k % 3] for k in range(20)]
KEY = ("system", "kind", "setting", "layer", "level", "measure")
N_BOOT = 200

#: Each system row: its key, the items it holds (indices) and the indices it gets wrong with
#: the wrong answer given there (default: the next class).
GPT = ("gpt-5", "published", "0-shot", "", "", "")
CLAUDE = ("claude-sonnet-4-5", "published", "5-shot", "", "", "")
CEILING = ("gold score", "ceiling", "all", "", "", "gold")
GPT_WRONG = {0, 3, 6}                                    # right 17 of 20
CLAUDE_WRONG = {0: "none", 1: "unanswered", 6: "C"}      # right 15 of 18 (lacks 18, 19)
CEILING_WRONG = {3}                                      # right 19 of 20


def _single(model: str) -> tuple:
    return (model, "representation", "single", "-", "nc", "syn")


def _all(model: str, layer: str = "-") -> tuple:
    return (model, "representation", "all", layer, "nc", "all")


#: The representation rows of a model: single right on the odd items (10 of 20), all wrong
#: on 0 and 5 (18 of 20).
SINGLE_WRONG = {k for k in range(20) if k % 2 == 0}
ALL_WRONG = {0, 5}


def _next(gold: str) -> str:
    return NCC_CLASSES[(NCC_CLASSES.index(gold) + 1) % 3]


def _rows(key: tuple, wrong, held=range(20)) -> list[dict]:
    wrong = wrong if isinstance(wrong, dict) else {k: None for k in wrong}
    out = []
    for k in held:
        predicted = (wrong[k] or _next(GOLD[k])) if k in wrong else GOLD[k]
        out.append({**dict(zip(KEY, key, strict=True)), "item": IDS[k], "nc": f"nc {IDS[k]}",
                    "gold": GOLD[k], "predicted": predicted, "correct": predicted == GOLD[k]})
    return out


def items_table(model: str = "glove-6b-50d", *, gpt_wrong=GPT_WRONG) -> pd.DataFrame:
    rows = (_rows(GPT, gpt_wrong) + _rows(CLAUDE, CLAUDE_WRONG, range(18))
            + _rows(_single(model), SINGLE_WRONG) + _rows(_all(model), ALL_WRONG)
            + _rows(CEILING, CEILING_WRONG))
    return pd.DataFrame(rows)


def meta(model: str = "glove-6b-50d", **config) -> list[dict]:
    return [{"config": {"model": model, "folds": 10, "repeats": 5, "n_boot": N_BOOT, "seed": 0,
                        "correction": "holm", **config},
             "fingerprint": {"model": f"hub/{model}"},
             "data_sources": {"jacklanda+SemanticQA/semantic_qa/x.json": "blob1"},
             "notes": ["3 prediction files hold fewer lines", f"{model} was quick"]}]


def results(model: str = "glove-6b-50d", *, n_boot: int = N_BOOT, **kw) -> NccResults:
    return NccResults.from_items(items_table(model, **kw), meta(model, n_boot=n_boot),
                                 n_boot=n_boot)
