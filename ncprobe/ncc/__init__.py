"""The SemanticQA NCC probe (``ncprobe run ncc``): a model's *representation* of SemanticQA's
241 noun compounds in their sentences, classified into the task's three compositionality
classes, against what published systems and a local language model *say*, item by item.

Parts: :mod:`.classify` (the single-measure cut-point classifier, the all-measure logistic
regression, repeated stratified cross-validation), :mod:`.stats` (accuracy and macro-F1
with bootstrap intervals, per-class scores, confusion counts, paired tests with McNemar's exact
p corrected as one family), :mod:`.results` (:class:`~ncprobe.ncc.results.NccResults`: the
tables, the results directory, the summary, the per-item agreement, two runs compared) and
:mod:`.report` (the comparison table, the tests, the figures of :mod:`ncprobe.plots.ncc`).
"""

from __future__ import annotations

#: The task's classes, from the least to the most compositional: Non-compositional, Partly
#: compositional, Compositional (the option texts of SemanticQA's NCC items).
NCC_CLASSES: tuple[str, ...] = ("NC", "PC", "C")

#: Every answer an item can get: a class, ``none`` (the 4th option, "None of the above") or
#: ``unanswered`` (a prediction with no letter A-D). Only a class can be right.
ANSWERS: tuple[str, ...] = NCC_CLASSES + ("none", "unanswered")

#: The kinds of system row, in the order the summary, the tables and the figures show them: a
#: published prediction file, the gold ceiling (the classifiers on the human score), a
#: model's representation classified, a local model's own answers.
KINDS: tuple[str, ...] = ("published", "ceiling", "representation", "behaviour")

#: Reference accuracies (fractions) that the protocol states beside the systems: the paper's
#: human accuracy (3 annotators on 100 sampled items; no item-level file), chance with four
#: options, and the majority class (NC: 95 of the 241 items).
HUMAN_ACCURACY = 0.710
CHANCE_ACCURACY = 0.25
MAJORITY_ACCURACY = 95 / 241

