"""The SemanticQA NCC probe (``ncprobe run ncc``): a model's *representation* of SemanticQA's
241 noun compounds in their sentences, classified into the task's three compositionality
classes, against what published systems and a local language model *say*, item by item.

Parts: :mod:`.classify` (the single-measure cut-point classifier, the all-measure logistic
regression, repeated stratified cross-validation, the nested selection), :mod:`.stats`
(accuracy and macro-F1 with bootstrap intervals, per-class scores, confusion counts, the
baselines, paired tests with McNemar's exact p corrected within families fixed by the
question, by max-T by default), :mod:`.results` (:class:`~ncprobe.ncc.results.NccResults`: the
tables, the results directory, the summary, the per-item agreement, two runs compared) and
:mod:`.report` (the comparison table, the tests, the figures of :mod:`ncprobe.ncc.figures`).
"""

from __future__ import annotations

from typing import Literal, get_args

#: The task's classes (SemanticQA's, declared with its data): NC, PC, C.
from ..data.semanticqa import NCC_CLASSES

#: Every answer an item can get: a class, ``none`` (the 4th option, "None of the above") or
#: ``unanswered`` (a prediction with no letter A-D). Only a class can be right.
ANSWERS: tuple[str, ...] = NCC_CLASSES + ("none", "unanswered")

#: The kinds of system row, in the order the summary, the tables and the figures show them:
#: what a rule that reads no item scores (``baseline``), a published prediction file (or a
#: result the paper prints without a file), the gold ceiling (the classifiers on the human
#: score), a model's representation classified, the nested selection among a model's
#: classifiers (``selected``), a local model's own answers.
KINDS: tuple[str, ...] = ("baseline", "published", "ceiling", "representation", "selected",
                          "behaviour")



def _references() -> tuple[float, tuple[tuple[str, str, float], ...]]:
    """The paper's printed values that no file lets ncprobe compute, from the data file of
    published values (:func:`ncprobe.verify.reference_values`: key ``human``, and
    ``fine-tuned/<system>``), as fractions."""
    from decimal import Decimal

    from ..verify import reference_values

    refs = reference_values("ncc")
    human = float(Decimal(refs["human"].printed) / 100)
    rows = tuple((key.split("/", 1)[1], "fine-tuned (paper)", float(Decimal(p.printed) / 100))
                 for key, p in refs.items() if key.startswith("fine-tuned/"))
    return human, rows


#: The paper's human accuracy (3 annotators on 100 sampled items; no item-level file): a
#: reference line, never a row. Read from ``ncprobe/data/published.tsv`` (its ``reference``
#: rows).
#: Results the paper prints without a prediction file (Table 12): models *fine-tuned* on
#: SemanticQA, shown as published rows without items, interval or test: (system, setting,
#: accuracy as a fraction). Read from the same file.
HUMAN_ACCURACY, PAPER_ROWS = _references()


#: The multiple-comparison corrections of the NCC tests: ``maxt`` (the default: Westfall &
#: Young's step-down max-T over joint item permutations, :func:`ncprobe.ncc.stats.maxt_adjusted`)
#: and those of :func:`ncprobe.stats.correct`.
NccCorrection = Literal["maxt", "holm", "fdr_bh", "none"]
NCC_CORRECTIONS: tuple[str, ...] = get_args(NccCorrection)


def check_ncc_correction(method: str) -> str:
    """``method`` when it is one of :data:`NCC_CORRECTIONS`.

    Raises:
        UsageError: another; the message names the known ones.
    """
    if method not in NCC_CORRECTIONS:
        from ..errors import UsageError

        raise UsageError(f"unknown multiple-comparison correction {method!r} for NCC; choose "
                         "from " + ", ".join(NCC_CORRECTIONS))
    return method
