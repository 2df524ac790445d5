"""NccConfig: everything that defines one ``ncprobe run ncc`` run (the SemanticQA NCC probe).

The probe's run options, declared once, as :class:`~ncprobe.ncimp.config.RunConfig` declares
NCIMP's: each field has its default, its check (``__post_init__``) and its metadata, from
which ``ncprobe run ncc`` makes its option (:func:`ncprobe.probes.options.config_options`).
:func:`~ncprobe.ncc.probe.run_ncc` takes the fields as keywords.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .._io import safe_name
from ..config import (
    N_BOOT,
    accept_modified_field,
    batch_size_field,
    check_counts,
    check_models,
    device_field,
    document_fields,
    dtype_field,
)
from ..errors import UsageError
from ..schema import Dtype
from . import NccCorrection, check_ncc_correction

__all__ = ["DEFAULT_MODELS", "OMITTED_AT_DEFAULT", "NccConfig", "run_dir"]

#: The models of a run that names none: the offline default of ncprobe.
DEFAULT_MODELS = ("glove-6b-50d",)


@document_fields
@dataclass(frozen=True)
class NccConfig:
    """One NCC run: the models whose representations (and, with ``behaviour``, answers) are
    put beside the published systems, the classifiers' cross-validation and the statistics.

    Each field is an option of ``ncprobe run ncc`` and a keyword of
    :func:`~ncprobe.ncc.probe.run_ncc`; the values are checked here, the same for both (a
    :class:`~ncprobe.errors.UsageError`: exit 2).
    """

    models: Sequence[str] = field(default=DEFAULT_MODELS, metadata={
        "option": "--model", "metavar": "M", "type": "comma_list", "repeatable": True,
        "help": "model(s) whose representations classify the items: an alias (`ncprobe "
                "models`), a HuggingFace id, a model directory or a vector file; a comma list "
                "or repeated (default: glove-6b-50d)"})
    layers: str | None = field(default=None, metadata={
        "metavar": "SPEC",
        "help": "transformer layers: last4 (default), all, -1, 9+10+11+12, or comma lists of "
                "views; each view is classified on its own"})
    behaviour: bool = field(default=False, metadata={
        "help": "the models also answer the items (causal language models only): the option "
                "whose letter has the highest next-token log-probability after the zero-shot "
                "prompt; its accuracy joins the table"})
    folds: int = field(default=10, metadata={
        "metavar": "K", "type": "positive_int",
        "help": "stratified cross-validation folds over items (default %(default)s)"})
    repeats: int = field(default=5, metadata={
        "metavar": "R", "type": "positive_int",
        "help": "cross-validation repeats, seeds seed..seed+R-1; an item's prediction is the "
                "modal one over the repeats, and each row's accuracy in each repeat gives its "
                "mean and range (default %(default)s)"})
    n_boot: int = field(default=N_BOOT, metadata={
        "metavar": "N", "type": "count",
        "help": "item resamples of the intervals and the paired tests (default %(default)s)"})
    seed: int = field(default=0, metadata={
        "metavar": "S", "type": "count", "help": "seed (default %(default)s)"})
    correction: NccCorrection = field(default="maxt", metadata={
        "option": "--correct",
        "help": "multiple-comparison correction of the tests within each family (a model's "
                "classifiers vs the systems; the gold ceiling vs the systems): maxt "
                "(Westfall-Young step-down max-T over joint item permutations, default), "
                "holm, fdr_bh or none"})
    regularisation: float = field(default=1.0, metadata={
        "metavar": "C",
        "help": "inverse regularisation strength C of the all-measure logistic regression, "
                "fixed in advance (default %(default)s)"})
    mdl: bool = field(default=False, metadata={
        "help": "also the minimum description length of every representation and ceiling "
                "classifier (online code, Voita & Titov 2020): the codelength in bits of the "
                "items' gold classes given its features, by the logistic regression of "
                "--regularisation (on the one measure for single), and its compression "
                "against the uniform code, with intervals over items"})
    device: str | None = device_field()
    dtype: Dtype | None = dtype_field()
    batch_size: int = batch_size_field("sentences (prompts)")
    accept_modified_data: bool = accept_modified_field("SemanticQA or NCIMP")

    def __post_init__(self) -> None:
        object.__setattr__(self, "models", tuple(check_models(self.models)))
        check_counts(self, {"folds": 2, "repeats": 1, "n_boot": 0, "seed": 0, "batch_size": 1})
        c = self.regularisation
        if isinstance(c, bool) or not isinstance(c, numbers.Real) or not math.isfinite(c) \
                or c <= 0:
            raise UsageError(f"regularisation={c!r} (--regularisation): give a finite number "
                             "> 0")
        check_ncc_correction(self.correction)


#: Fields added after results existed, left out of a run's ``config`` in ``run.json`` at their
#: default (:func:`~ncprobe.ncc.probe.run_ncc`): a run that does not use them keeps the
#: ``run.json`` and run id it had before (a missing field reads as its default in the run
#: identity, :func:`ncprobe.results.store.run_identity`), as NCIMP's
#: :data:`ncprobe.ncimp.config.OMITTED_AT_DEFAULT`.
OMITTED_AT_DEFAULT = ("mdl",)


def run_dir(config: NccConfig, results_dir: str | Path = "results") -> Path:
    """Where a run's results go by default: ``<results_dir>/ncc-<models>``, the models joined
    by ``+`` (each as a file name), plus ``-layers_<spec>``, ``-behaviour`` and ``-mdl``
    when given, e.g. ``results/ncc-minilm-layers_all``."""
    name = "ncc-" + "+".join(safe_name(m) for m in config.models)
    if config.layers:
        name += f"-layers_{safe_name(config.layers)}"
    if config.behaviour:
        name += "-behaviour"
    if config.mdl:
        name += "-mdl"
    return Path(results_dir) / name

