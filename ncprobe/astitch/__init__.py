"""The AStitch probe (``ncprobe run astitch``): is the expression used idiomatically *in this
sentence*? Token-level idiomaticity on AStitchInLanguageModels Task 1 A (Tayyar Madabushi et
al., Findings of EMNLP 2021), English and Portuguese, layer by layer, on frozen vectors.

Two probes: the *paraphrase* probe (no training: does the expression's vector in the sentence
sit nearer the sentence with its literal paraphrase spliced in, or one with a non-literal
paraphrase? AUROC per split) and the *linear* probe (an L2 logistic regression per layer view,
with its controls: majority, expression-only, a static model, the Hewitt-Liang type control
and the within-expression permutation control with the selectivity against each, and the
baselines: training and test majority, stratified chance, the type oracle). Parts:
:mod:`.paraphrase`, :mod:`.linear`, :mod:`.stats` (cluster bootstrap over expressions, paired
permutation tests), :mod:`.results`, :mod:`.report`; the data are read by
:mod:`ncprobe.data.astitch`.
"""

from __future__ import annotations

# the files' splits and context variants are the data's (ncprobe.data.astitch reads them)
from ..data.astitch import SPLITS, VARIANTS

# the languages of the data and the levels of a vector are NCIMP's
from ..schema import LANGS, LEVELS

__all__ = ["CONTROLS", "FEATURES", "IDIOMATIC", "LANGS", "LEVELS", "LITERAL", "NO_MODEL_NOTE",
           "PROBE_KINDS", "SCORES", "SETTINGS", "SPLITS", "VARIANTS"]

#: The linear probe's settings and the splits each trains on (dev chooses, test is reported).
#: ``one-shot-semeval`` trains on the zero-shot **and** the one-shot rows, as SemEval-2022
#: Task 2 A's one-shot setting did (ncprobe's ``one-shot`` on the one-shot rows alone).
SETTINGS: dict[str, tuple[str, ...]] = {
    "zero-shot": ("train_zero_shot",), "one-shot": ("train_one_shot",),
    "few-shot": ("train_few_shot",),
    "one-shot-semeval": ("train_zero_shot", "train_one_shot")}
#: The vectors the linear probe is trained on: (level, context).
FEATURES: tuple[tuple[str, str], ...] = (("nc", "excluded"), ("sent", "excluded"),
                                         ("nc", "included"))
#: The files' labels: 0 idiomatic, 1 not idiomatic (literal, or part of a proper noun).
IDIOMATIC, LITERAL = 0, 1
#: What a headline row is: the paraphrase probe, a model's linear probe, a control, or a
#: baseline (or ceiling: the type oracle).
PROBE_KINDS: tuple[str, ...] = ("paraphrase", "linear", "control", "baseline")
#: The run's note on a model without a model of the language read (minilm or GloVe on
#: Portuguese): written by the run, found by the summary (a warning atop the language).
NO_MODEL_NOTE = "{model} has no {lang} model: "
#: The linear probe's controls.
CONTROLS: tuple[str, ...] = ("majority", "expression", "static", "control task")
#: The paraphrase probe's scores: the literal paraphrase's cosine less the best non-literal
#: one's, and the literal paraphrase's cosine alone.
SCORES: tuple[str, ...] = ("contrast", "literal")
