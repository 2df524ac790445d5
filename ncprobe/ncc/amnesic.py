"""NCC as a target of amnesic probing: the accuracy of NCC's classifiers on SemanticQA's items,
as the vectors are, with a concept erased and with its control erased
(:mod:`ncprobe.intervention`).

The three runs are :func:`ncprobe.ncc.probe.run_ncc` of one model with the same options, each
with its vector transform (``None``: plain; the transform acts on the vectors NCIMP's measures
of each item's sentence are taken of). Their rows, one per classifier of the representation
(kind ``representation``: each measure by two cut points, setting ``single``, and all
measures by logistic regression, ``all``; per layer view and level; context ``nat``):

* ``plain``, ``erased``, ``control``: ``accuracy <setting> <measure>`` (``accuracy all``
  for the all-measure classifier) of the items' modal cross-validated predictions, with the
  run's bootstrap interval over items;
* the changes ``erased - plain``, ``control - plain``, ``erased - control``: the accuracy
  difference on the same items with its paired bootstrap interval (the items resampled
  jointly) and, for ``erased - control``, McNemar's exact p (:func:`ncprobe.ncc.stats.
  paired_test`, what NCC's own tests use), corrected over every classifier of the run (its
  views, levels, settings and measures: the design).

The nested selection (kind ``selected``) has no layer view of its own and is not a target
row; the published systems, the gold ceiling and the model's answers (``behaviour``) do not
read the stored vectors, so erasing them changes none of them: ``behaviour`` and ``mdl`` are
refused as options. **In the forward pass** (transforms with an ``intervention``:
:mod:`ncprobe.amnesic.forward`) a causal LM's answers are the erased pass's: for such a model
the runs answer the items too, and the rows add ``accuracy behaviour 0-shot`` (layer
``answers``, level ``-``: the letter answered after the zero-shot prompt, the eraser acting at
the compound's tokens of the prompt or every token), in the same family of tests. A model
that cannot answer (an encoder, a sentence-transformers model) has no such rows.
NCC's items are English.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import UsageError
from ..intervention import CHANGES, TARGET_COLUMNS, TARGET_RUNS, TESTED, correct_family

if TYPE_CHECKING:
    import pandas as pd

    from ..concept import FittedOn
    from ..transform import VectorTransform

#: What NCC's intervals and tests resample.
UNIT = "items"
#: The kind of the rows measured: the classifiers of the representation ...
KIND = "representation"
#: ... and, in the forward pass, a causal LM's answers.
ANSWERS = "behaviour"
#: The run options the target refuses: they measure nothing the vectors change.
REFUSED = ("behaviour", "mdl", "models")


def _metric(setting: str, measure: str, kind: str = KIND) -> str:
    if kind == ANSWERS:
        return f"accuracy behaviour {setting}"
    return "accuracy all" if setting == "all" else f"accuracy {setting} {measure}"


def _cell(kind: str, layer: str, level: str) -> tuple[str, str]:
    """The ``layer`` and ``level`` of a row: the answers have none of their own."""
    return ("answers", "-") if kind == ANSWERS else (layer, level)


def _answers_too(model: str, transforms: Mapping[str, Any], run: Mapping[str, Any]) -> bool:
    """Whether the runs answer the items: every transform acts in the forward pass, and the
    model is a causal LM (:func:`ncprobe.ncc.behaviour.causal_encoder` takes it)."""
    from ..errors import ModelUnavailableError
    from .behaviour import causal_encoder

    changed = [t for c, t in transforms.items() if c != "plain"]
    if not changed or any(getattr(t, "intervention", None) is None for t in changed):
        return False
    try:
        causal_encoder(model, run.get("device"), run.get("dtype"))
    except ModelUnavailableError:  # an encoder: it has classifiers to measure, no answers
        return False
    return True


def _classifiers(res: Any) -> tuple[pd.DataFrame, dict[tuple, pd.Series]]:
    """A run's representation (and answers') rows of the accuracy table, and each one's
    ``correct`` by item (indexed by item id, sorted)."""
    from .stats import KEYS

    acc = res.accuracy[res.accuracy["kind"].astype(str).isin((KIND, ANSWERS))]
    items = res.items[res.items["kind"].astype(str).isin((KIND, ANSWERS))]
    correct = {tuple(str(v) for v in k): part.set_index("item")["correct"].sort_index()
               for k, part in items.groupby(list(KEYS), sort=False, observed=True)}
    return acc, correct


def check_target(lang: str, **options: Any) -> None:
    """Refuse what the NCC target cannot measure, before any work: another language than
    English, or ``behaviour``, ``mdl``, ``models`` among the run ``options``.

    Raises:
        UsageError: naming it.
    """
    if lang != "en":
        raise UsageError(f"lang={lang!r}: NCC's items are English; run the NCC target with "
                         "lang en")
    refused = sorted(set(options) & set(REFUSED))
    if refused:
        raise UsageError(f"the NCC target takes no {', '.join(refused)}: it measures one "
                         "model's classifiers of its vectors (the published systems, the "
                         "ceiling and the model's answers read no vector)")


def target_rows(model: str, lang: str, transforms: Mapping[str, VectorTransform | None], *,
                layers: str | None = None, n_boot: int = 1000, seed: int = 0,
                correction: str = "holm", compare_n_boot: int,
                fitted_on: FittedOn | None = None, **run: Any) -> pd.DataFrame:
    """The rows of :data:`ncprobe.intervention.TARGET_COLUMNS` of ``model``: one NCC run per
    condition (``transforms``: ``plain``, ``erased``, ``control``), then the changes (the
    module says which rows).

    Args:
        lang: ``en`` (NCC's items are English).
        layers: the transformer layer views (NccConfig's ``layers``).
        n_boot, seed: the runs' intervals (over items); the seed of every resample.
        correction: of the ``erased - control`` tests (``holm``, ``fdr_bh``, ``none``).
        compare_n_boot: the resamples of the changes' paired intervals.
        fitted_on: the rows the concept's erasers were fitted on: a classifier whose items
            hold any of them is marked ``shares_concept_rows`` (NCC offers no concept, so
            none does today).
        run: :func:`~ncprobe.ncc.probe.run_ncc`'s other keywords (its config's fields:
            ``folds``, ``repeats``, ``regularisation``, ...; ``data_dir``, ``cache``,
            ``cache_dir``, ``progress``).

    Raises:
        UsageError: another language; ``behaviour``, ``mdl`` or ``models`` (the target is
            one model's classifiers); NCC's own (a layer the model lacks).
    """
    import pandas as pd

    from .probe import run_ncc
    from .stats import KEYS, paired_test

    check_target(lang, **run)
    answers = _answers_too(model, transforms, run)
    runs = {c: run_ncc(models=[model], layers=layers, n_boot=n_boot, seed=seed,
                       transform=transforms[c], behaviour=answers, **run) for c in TARGET_RUNS}
    measured = {c: _classifiers(res) for c, res in runs.items()}
    rows: list[dict] = []
    for condition, (acc, _) in measured.items():
        for r in acc.to_dict("records"):
            kind = str(r["kind"])
            layer, level = _cell(kind, str(r["layer"]), str(r["level"]))
            rows.append({"metric": _metric(str(r["setting"]), str(r["measure"]), kind),
                         "layer": layer, "level": level,
                         "condition": condition, "value": r["accuracy"],
                         "ci_low": r["ci_low"], "ci_high": r["ci_high"], "n": r["n"]})
    _, plain = measured["plain"]
    for change in CHANGES:
        a, b = (measured[side.strip()][1] for side in change.split(" - "))
        tests = []
        for key in plain:
            both = pd.concat([a[key], b[key]], axis=1, join="inner")
            got = paired_test(both.iloc[:, 0], both.iloc[:, 1], n_boot=compare_n_boot,
                              seed=seed)
            k = dict(zip(KEYS, key, strict=True))
            layer, level = _cell(k["kind"], k["layer"], k["level"])
            tests.append({"metric": _metric(k["setting"], k["measure"], k["kind"]),
                          "layer": layer, "level": level, "condition": change,
                          "value": got["diff"],
                          "ci_low": got["diff_low"], "ci_high": got["diff_high"],
                          "n": got["n"], "p": got["p"] if change == TESTED else np.nan})
        if change == TESTED and tests:
            correct_family(tests, correction, "ncc accuracy: erased vs control, every "
                                              "classifier" + (" and the answers" if answers
                                                              else ""))
        rows += tests
    out = pd.DataFrame(rows, columns=list(TARGET_COLUMNS))
    out["target"], out["context"], out["unit"] = "ncc", "nat", UNIT
    items = {str(i) for i in runs["plain"].items["item"]}
    out["shares_concept_rows"] = bool(fitted_on is not None
                                      and fitted_on.shared("ncc", lang, items))
    return out
