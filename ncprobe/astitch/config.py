"""AStitchConfig: everything that defines one ``ncprobe run astitch`` run.

The probe's run options, declared once, as :class:`~ncprobe.ncimp.config.RunConfig` declares
NCIMP's: each field has its default, its check (``__post_init__``) and its metadata, from which
``ncprobe run astitch`` makes its option (:func:`ncprobe.probes.options.config_options`).
:func:`~ncprobe.astitch.probe.run_astitch` takes the fields as keywords.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .._io import safe_name
from ..cache.dtypes import check_store_dtype
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
from ..schema import Correction, Dtype
from ..significance import check_correction
from . import LANGS, SETTINGS, SPLITS, VARIANTS
from .linear import C_GRID as _C_GRID
from .linear import WITHIN_DRAWS

__all__ = ["AUTO_STATIC", "C_GRID", "DEFAULT_MODELS", "NO_STATIC", "OMITTED_AT_DEFAULT", "STATIC",
           "AStitchConfig", "run_dir"]

#: The models of a run that names none: the offline default of ncprobe.
DEFAULT_MODELS = ("glove-6b-50d",)
# the inverse regularisation strengths the linear probe chooses from on dev, and the draws
# of its within-expression permutation control: the linear probe's (one place)
C_GRID = _C_GRID
#: ``--static none``: no static control.
NO_STATIC = "none"
#: ``--static auto``: :data:`STATIC`, unless it is a probed model.
AUTO_STATIC = "auto"
#: The static control of ``--static auto``.
STATIC = "glove-6b-50d"


def _items(value: str | Sequence[str]) -> tuple[str, ...]:
    """A comma list, or a sequence of them, as its non-empty items."""
    items = [value] if isinstance(value, str) else list(value)
    return tuple(s.strip() for item in items for s in str(item).split(",") if s.strip())


def _text_list(value: str | Sequence[str], what: str) -> tuple[str, ...]:
    out = _items(value)
    twice = sorted({x for x in out if out.count(x) > 1})
    if twice:
        raise UsageError(f"{what} {twice[0]!r} is named twice; give each once")
    return out


def _chosen(value: str | Sequence[str], allowed: Sequence[str], what: str, option: str,
            hint: str) -> tuple[str, ...]:
    """Some of ``allowed`` (a comma list or a sequence), in ``allowed``'s order; none, or one
    that is not there, is a UsageError naming ``option``."""
    given = _text_list(value, what)
    bad = [x for x in given if x not in allowed]
    if bad or not given:
        raise UsageError(f"{what} {bad[0] if bad else ''!r} ({option}): {hint}")
    return tuple(x for x in allowed if x in given)


@document_fields
@dataclass(frozen=True)
class AStitchConfig:
    """One AStitch run: the models, the languages and layer views, the linear probe's choices
    and the statistics.

    Each field is an option of ``ncprobe run astitch`` and a keyword of
    :func:`~ncprobe.astitch.probe.run_astitch`; the values are checked here, the same for
    both (a :class:`~ncprobe.errors.UsageError`: exit 2).
    """

    models: Sequence[str] = field(default=DEFAULT_MODELS, metadata={
        "option": "--model", "metavar": "M", "type": "comma_list", "repeatable": True,
        "help": "model(s) probed: an alias (`ncprobe models`), a HuggingFace id, a model "
                "directory or a vector file; a comma list or repeated (default: glove-6b-50d)"})
    langs: Sequence[str] = field(default=("en",), metadata={
        "option": "--lang", "metavar": "L", "type": "comma_list", "repeatable": True,
        "help": "language(s) of the data: en, pt, or en,pt (default: en)"})
    layers: str | None = field(default=None, metadata={
        "metavar": "SPEC",
        "help": "transformer layers: last4 (default), all, -1, 9+10+11+12, or comma lists of "
                "views; each view is probed on its own"})
    splits: Sequence[str] = field(default=SPLITS, metadata={
        "option": "--splits", "metavar": "S,...", "type": "comma_list",
        "help": "the splits read: the paraphrase probe scores each, the linear probe runs the "
                "settings whose training splits are among them (with dev and test) (default: "
                "all five)"})
    contexts: Sequence[str] = field(default=VARIANTS, metadata={
        "option": "--context", "metavar": "C", "type": "comma_list",
        "help": "the sentences a use is read in: excluded (the target sentence alone), "
                "included (with the previous and next sentences), or both (default "
                "excluded,included; excluded alone is about a quarter of the encoding)"})
    static: str = field(default="auto", metadata={
        "metavar": "M",
        "help": "the static control: the same linear probe on this model's vectors (which "
                "cannot see the context); 'none' for no static control; auto (the default): "
                "glove-6b-50d, unless it is a probed model itself (then none)"})
    c_grid: Sequence[float] = field(default=C_GRID, metadata={
        "option": "--c-grid", "metavar": "C,...", "type": "comma_list",
        "help": "inverse L2 regularisation strengths of the linear probe, the one with the "
                "best dev macro-F1 kept; when dev picks an end, the grid is extended past it "
                "(said in the notes) (default 0.0001,0.001,0.01,0.1,1,10,100)"})
    within_draws: int = field(default=WITHIN_DRAWS, metadata={
        "metavar": "N", "type": "positive_int",
        "help": "draws of the within-expression permutation control (the training labels "
                "shuffled among each expression's uses, the probe fitted per draw) and of "
                "stratified chance (default %(default)s)"})
    mdl: bool = field(default=False, metadata={
        "help": "also the minimum description length of the linear probe and of its controls "
                "(online code, Voita and Titov 2020, on each cell's training uses with the C "
                "chosen on dev): codelength in bits and compression against the uniform code, "
                "with intervals over expressions (the table mdl; off by default: about ten "
                "more fits per probe and control)"})
    n_boot: int = field(default=N_BOOT, metadata={
        "metavar": "N", "type": "count",
        "help": "expression resamples of the 95%% intervals (default %(default)s)"})
    n_perm: int | None = field(default=None, metadata={
        "metavar": "N", "type": "count",
        "help": "random expression swaps of each paired test (default: enough for the "
                "least corrected p of the run's tests to reach 0.001: 1,000 per test under "
                "holm or fdr_bh)"})
    seed: int = field(default=0, metadata={
        "metavar": "S", "type": "count",
        "help": "seed of the resamples, the swaps and the control task's labels (default "
                "%(default)s)"})
    correction: Correction = field(default="holm", metadata={
        "option": "--correct",
        "help": "multiple-comparison correction of the paired tests, one family per run "
                "(default holm)"})
    device: str | None = device_field()
    dtype: Dtype | None = dtype_field()
    store_dtype: Dtype = field(default="float32", metadata={
        "help": "how vectors are kept in the embedding cache: float32 (default, exact), "
                "float16 or bfloat16 (half the disk: a large model's every layer; results "
                "move slightly, the bound is in the notes)"})
    batch_size: int = batch_size_field()
    accept_modified_data: bool = accept_modified_field("AStitch")

    def __post_init__(self) -> None:
        models = _items(self.models)
        if not models:
            raise UsageError("no model given (--model)")
        models = tuple(check_models(models))  # one named twice: every probe's check
        object.__setattr__(self, "models", models)
        langs = _chosen(self.langs, LANGS, "language", "--lang", "give en, pt or en,pt")
        splits = _chosen(self.splits, SPLITS, "split", "--splits",
                         f"give some of {', '.join(SPLITS)}")
        trained = [x for x in splits if any(x in v for v in SETTINGS.values())]
        lacking = [x for x in ("dev", "test") if x not in splits]
        if trained and lacking:
            raise UsageError(f"splits {','.join(splits)}: the linear probe trains on "
                             f"{', '.join(trained)}, chooses on dev and is scored on test: add "
                             f"{' and '.join(lacking)}, or leave the training splits out")
        contexts = _chosen(self.contexts, VARIANTS, "context", "--context",
                           "give excluded, included or excluded,included")
        for name, chosen in (("langs", langs), ("splits", splits), ("contexts", contexts)):
            object.__setattr__(self, name, chosen)
        static = str(self.static).strip()
        if not static:
            raise UsageError("static='' (--static): give a model, or 'none'")
        if static in models:
            raise UsageError(f"the static control {static!r} (--static) is also a probed model "
                             "(--model): give --static none, or another static model")
        object.__setattr__(self, "static", static)
        grid = []
        given = (self.c_grid.split(",") if isinstance(self.c_grid, str) else
                 [self.c_grid] if isinstance(self.c_grid, numbers.Real) else list(self.c_grid))
        for c in given:
            try:
                value = float(c) if not isinstance(c, bool) else math.nan
            except (TypeError, ValueError):
                value = math.nan
            if not math.isfinite(value) or value <= 0:
                raise UsageError(f"c_grid value {c!r} (--c-grid): give finite numbers > 0, "
                                 "e.g. 0.01,0.1,1")
            grid.append(value)
        if not grid or len(set(grid)) != len(grid):
            raise UsageError(f"c_grid {list(self.c_grid)!r} (--c-grid): give one or more "
                             "distinct numbers > 0")
        object.__setattr__(self, "c_grid", tuple(sorted(grid)))
        check_counts(self, {"n_boot": 0, "seed": 0, "batch_size": 1, "within_draws": 1})
        if self.n_perm is not None and (isinstance(self.n_perm, bool) or not isinstance(
                self.n_perm, numbers.Integral) or self.n_perm < 0):
            raise UsageError(f"n_perm={self.n_perm!r} (--n-perm): give a whole number >= 0 "
                             "(0: no test)")
        check_correction(self.correction)
        check_store_dtype(self.store_dtype)
        if not isinstance(self.mdl, bool):
            raise UsageError(f"mdl={self.mdl!r} (--mdl): give True or False")

    @property
    def settings(self) -> tuple[str, ...]:
        """The linear probe's settings: those whose training splits are all read."""
        return tuple(k for k, v in SETTINGS.items() if all(x in self.splits for x in v))

    @property
    def static_model(self) -> str | None:
        """The static control's model, or ``None`` (``--static none``, or ``auto`` when
        :data:`STATIC` is a probed model: it is then a model's row, not a control's)."""
        if self.static == AUTO_STATIC:
            return None if STATIC in self.models else STATIC
        return None if self.static == NO_STATIC else self.static


#: Fields added after results existed, left out of a run's ``config`` in ``run.json`` at their
#: default (:func:`ncprobe.results.store.model_runs`): a run without ``--mdl`` keeps the
#: ``run.json`` and run id it had before.
OMITTED_AT_DEFAULT = ("mdl",)


def run_dir(config: AStitchConfig, results_dir: str | Path = "results") -> Path:
    """Where a run's results go by default: ``<results_dir>/astitch-<models>-<langs>``, the
    models joined by ``+`` (each as a file name), plus ``-layers_<spec>``, ``-context_<c>``
    and ``-splits_<s+...>`` when given, and ``-mdl`` with ``mdl``, e.g.
    ``results/astitch-minilm-en-layers_all``."""
    name = "astitch-" + "+".join(safe_name(m) for m in config.models) + "-" + \
        "+".join(config.langs)
    if config.layers:
        name += f"-layers_{safe_name(config.layers)}"
    if tuple(config.contexts) != VARIANTS:
        name += "-context_" + "+".join(config.contexts)
    if tuple(config.splits) != SPLITS:
        name += "-splits_" + "+".join(config.splits)
    if config.mdl:
        name += "-mdl"
    return Path(results_dir) / name
