"""The AStitch probe's results: tidy tables, a results directory, a summary, JSON rows, the
report and the comparison of two runs.

An :class:`AStitchResults` holds six tables (fractions, not percent):

* ``scores``: the paraphrase probe's per-use scores, one row per use x model x layer view x
  level x context (:data:`ncprobe.astitch.paraphrase.SCORE_COLUMNS`: ``literal``, the cosine
  to the literal paraphrase's sentence, and ``contrast``, that less the best cosine to a
  non-literal one; NaN where the paraphrases are lacking);
* ``auroc``: per cell and score, the AUROC of telling literal uses (label 1) from idiomatic
  ones (label 0) with its 95% cluster bootstrap interval over expressions, and how many rows
  were scored (:data:`~ncprobe.astitch.paraphrase.AUROC_COLUMNS`);
* ``predictions``: the linear probe's, the controls' and the baselines' test predictions, one
  row per cell x test use (x draw: the within-expression control's and chance's draws)
  (:data:`ncprobe.astitch.linear.PRED_COLUMNS`; the type control's labels and predictions
  beside a model's own, its decision function in ``decision``);
* ``linear``: per cell and subset (all expressions, the ambiguous ones), the C chosen on
  dev, test macro-F1 and accuracy with their intervals, the AUROC of the probe's scores, the
  type and within-expression controls' F1 and the selectivity against each; the baselines
  and the type oracle as rows of ``probe_kind`` ``baseline``
  (:data:`~ncprobe.astitch.linear.LINEAR_COLUMNS`);
* ``tests``: paired tests between cells over the same test uses, one family per run
  (:data:`ncprobe.astitch.stats.TEST_COLUMNS`);
* ``excluded``: the rows left out, and why (not placed: every probe; without the paraphrases
  a contrast needs: the paraphrase probe);
* ``mdl`` (``--mdl`` only; an optional table, absent from a run without it): per linear cell
  the online codelength of its training labels and of its control tasks' (and the static
  control's), the compression against the uniform code, with intervals over expressions
  (:data:`~ncprobe.astitch.linear.MDL_COLUMNS`, :func:`~ncprobe.astitch.linear.mdl_rows`).

Its directory is an ncprobe results directory (:mod:`ncprobe.results.store`: parquet tables
and ``run.json`` written as one unit, verified when read) of the probe ``astitch``. Each model
is one run of ``run.json``: its options (``config``, with the ``model``), its fingerprint and
the data files' blob ids. The control rows (``probe_kind`` ``control``: the majority and
expression-only baselines, whose ``model`` is empty, and the static model's probe) and the
``excluded`` table do not depend on the run's model: they are the same in every run of the
same data and options, and results of several directories are joined with them once
(:meth:`AStitchResults.concat`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..config import N_BOOT
from ..errors import UsageError
from ..probes.base import (
    SIDE_NAMES,
    ModelRunResults,
    ProbeResults,
    SharedRows,
    check_model_runs,
    refuse_pooling,
)
from ..query import check_table, filter_rows
from ..results import store
from ..significance import check_correction
from . import CONTROLS, NO_MODEL_NOTE, SCORES, SETTINGS, SPLITS
from .config import AStitchConfig
from .linear import LINEAR_COLUMNS, MDL_COLUMNS, PRED_COLUMNS, PRED_KEYS, PRED_OPTIONAL
from .paraphrase import AUROC_COLUMNS, SCORE_COLUMNS
from .report import EXCLUDED_COLUMNS, view_text
from .report import LABEL as REPORT_LABEL
from .stats import SUBSETS, TEST_COLUMNS, label

__all__ = ["ASTITCH_COLUMNS", "ASTITCH_TABLES", "AStitchResults", "LAYOUT", "across_family",
           "check_same_data", "family_name"]

#: The tables of an :class:`AStitchResults`, in the order they are written.
ASTITCH_TABLES = ("scores", "auroc", "predictions", "linear", "tests", "excluded", "mdl")
#: The columns of each table, in order.
ASTITCH_COLUMNS: dict[str, tuple[str, ...]] = {
    "scores": tuple(SCORE_COLUMNS), "auroc": tuple(AUROC_COLUMNS),
    "predictions": tuple(PRED_COLUMNS), "linear": tuple(LINEAR_COLUMNS),
    "tests": tuple(TEST_COLUMNS), "excluded": EXCLUDED_COLUMNS, "mdl": tuple(MDL_COLUMNS),
}
#: The columns that hold numbers (or booleans); the others (the layer view among them) text.
ASTITCH_NUMERIC = frozenset({
    "row", "label", "literal", "contrast", "n", "n_literal", "n_expressions", "n_unscored",
    "idiomatic_share", "auroc", "ci_low", "ci_high", "boot_used", "predicted",
    "n_within", "auroc_within", "auroc_within_low", "auroc_within_high",
    "control_label", "control_predicted", "C", "dev_macro_f1", "macro_f1", "f1_low",
    "f1_high", "accuracy", "acc_low", "acc_high", "control_f1", "control_low", "control_high",
    "selectivity", "sel_low", "sel_high", "draw", "decision", "auroc_low", "auroc_high",
    "within_f1", "within_low", "within_high", "within_sel", "wsel_low", "wsel_high", "n_draws",
    "f1_a", "f1_b", "diff", "diff_low", "diff_high", "p",
    "p_bound", "p_corrected", "p_corrected_bound", "significant", "family_size",
    "codelength_bits", "bits_low", "bits_high", "uniform_bits", "compression",
    "uniform_blocks", "stopped",
} & {c for cols in ASTITCH_COLUMNS.values() for c in cols})
#: The results directory layout of the probe (declared by :class:`AStitchResults`).
LAYOUT = store.Layout(
    "astitch", ASTITCH_TABLES, ASTITCH_COLUMNS, ASTITCH_NUMERIC, run_keys=("model",),
    report_label=REPORT_LABEL, config=AStitchConfig, optional=frozenset({"mdl"}),
    # 2: the tables of issue 38 (ncc: baselines, nested selection, repeats; astitch: subsets,
    # within-expression AUROC and control, baselines)
    version=2)
#: The ``probe_kind`` of the rows that are the same in every run of the same data and options
#: (the controls; and the baselines and ceilings, :data:`SHARED_KINDS`).
SHARED_KIND = "control"
SHARED_KINDS = (SHARED_KIND, "baseline")
#: The rows of the predictions and linear tables that no run's model made (its controls),
#: the same in every run of one data (``excluded`` is shared whole).
_CONTROL_TABLES = ("predictions", "linear")
_CONTROL_ROWS = SharedRows("control rows (majority, expression-only, static)", "probe_kind",
                           SHARED_KINDS)
_DISPLAY = {"expression": "expression-only"}


def family_name(models: Iterable[str]) -> str:
    """The family of a run's own tests: ``astitch: <models>``."""
    return f"astitch: {', '.join(models)}"


def across_family(names: Sequence[str]) -> str:
    """The family of two runs compared: ``astitch across runs: <a> vs <b>``."""
    return f"astitch across runs: {names[0]} vs {names[1]}"


def _subset(df: pd.DataFrame, subset: str = "all") -> pd.DataFrame:
    """The rows of a linear table for one subset (every row of a table without subsets)."""
    if "subset" not in df.columns:
        return df
    return df[df["subset"].astype(str) == subset]


def _num(x: Any) -> Any:
    """A cell as a JSON value: NaN and missing as None, numpy numbers as Python's."""
    if x is None or (not isinstance(x, str) and pd.isna(x)):
        return None
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(float(x)) else None
    return str(x)


def _ci(value: Any, lo: Any, hi: Any, *, pct: bool, digits: int = 1, signed: bool = False
        ) -> str:
    """``value [lo, hi]`` (percent with ``pct``); ``-`` for no value, no brackets for no
    interval."""
    if value is None or pd.isna(value):
        return "-"
    scale = 100.0 if pct else 1.0
    fmt = f"{'+' if signed else ''}.{digits}f"
    text = format(scale * float(value), fmt)
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return text
    return f"{text} [{format(scale * float(lo), fmt)}, {format(scale * float(hi), fmt)}]"


@dataclass
class AStitchResults(ModelRunResults):
    """What :func:`ncprobe.astitch.probe.run_astitch` returns, and what a results directory
    loads as.

    Attributes:
        scores, auroc, predictions, linear, tests, excluded: the tables (see the module).
        meta: one dict per model run: ``config`` (the options, ``model`` among them),
            ``fingerprint``, ``data_sources``, ``modified_data``, ``notes``.

    Its directory, ``tables``, ``run_id``, ``notes`` and :meth:`edited_lines` come from
    :class:`~ncprobe.probes.base.ProbeResults` (one run per model, :data:`LAYOUT`); what is its
    own: the control and excluded rows kept once when results are joined (:meth:`concat`), and
    which models ``run.json`` must describe (:meth:`check_runs`).
    """

    #: How the probe's results directories are stored (:mod:`ncprobe.results.store`).
    layout: ClassVar[store.Layout] = LAYOUT
    title = "AStitch"
    tested_within = "the cells of one run are already tested in its own table tests"
    default_table = "linear"
    #: The control rows and the excluded rows, the same in every run of the same data and
    #: options: kept once when results are joined; each run's tests stay as they are (one
    #: family per run).
    shared_rows = {**dict.fromkeys(_CONTROL_TABLES, _CONTROL_ROWS),
                   "excluded": SharedRows("excluded rows"),
                   "mdl": SharedRows("the static control's MDL rows", "control", ("static",))}

    scores: pd.DataFrame
    auroc: pd.DataFrame
    predictions: pd.DataFrame
    linear: pd.DataFrame
    tests: pd.DataFrame
    excluded: pd.DataFrame
    meta: list[dict] = field(default_factory=list)
    mdl: pd.DataFrame = field(default_factory=lambda: _mdl_table(None))

    def __repr__(self) -> str:
        return (f"<AStitchResults {', '.join(self.models) or 'no model'}: languages "
                f"{', '.join(self.langs) or '-'}; {len(self.auroc)} AUROC cells, "
                f"{len(self.linear)} linear cells, {len(self.tests)} tests, "
                f"{len(self.excluded)} rows excluded>")

    @classmethod
    def from_parts(cls, scores: pd.DataFrame, predictions: pd.DataFrame, fits: pd.DataFrame,
                   excluded: pd.DataFrame, meta: list[dict], *, n_boot: int = N_BOOT,
                   seed: int = 0, correction: str = "holm",
                   pairs: Sequence[tuple[Mapping, Mapping]] = (),
                   n_perm: int | str = "auto",
                   mdl: pd.DataFrame | Sequence[Mapping] | None = None) -> "AStitchResults":
        """The results of the per-use tables: the paraphrase probe's AUROC
        (:func:`ncprobe.astitch.paraphrase.auroc_table`), the linear probe's macro-F1,
        accuracy and selectivity (:func:`ncprobe.astitch.linear.linear_table`) and the
        paired tests of ``pairs`` (:func:`ncprobe.astitch.stats.paired_tests`), one family
        named after the runs' models (:func:`family_name`).

        Each run's notes gain a line for the AUROC cells left undefined (their scored rows
        hold one label) and one for the fits that did not converge (``fits["converged"]``)
        or met rows without a vector (``fits["no_vector"]``, when given), of its model and
        of the shared controls.

        Args:
            scores, predictions, fits, excluded: the per-use tables (see the module; ``fits``
                one row per linear cell: the key columns, ``C``, ``dev_macro_f1``,
                ``control_C``, ``converged``).
            meta: one dict per model run.
            n_boot, seed: the cluster bootstrap over expressions (and the swaps' seed).
            correction: the tests' correction (:data:`ncprobe.schema.CORRECTIONS`).
            pairs: the cells tested, ``(key_a, key_b)`` dicts of the key columns.
            n_perm: the swaps of each test (``"auto"``: enough for the family).
            mdl: the MDL rows (``--mdl``: :func:`ncprobe.astitch.linear.mdl_rows`), a table
                or dicts of :data:`~ncprobe.astitch.linear.MDL_COLUMNS`; none: an empty
                table (not written).

        Raises:
            UsageError: a table without its columns, an unknown correction, or a pair whose
                cells do not hold the same test rows.
        """
        from .linear import linear_table
        from .paraphrase import auroc_table
        from .stats import paired_tests

        method = check_correction(correction)
        models = [str(m["config"]["model"]) for m in meta]
        excluded = check_table(excluded, "excluded", EXCLUDED_COLUMNS, of="AStitch results")
        excluded = excluded[list(EXCLUDED_COLUMNS)].astype({"row": np.int64})
        auroc = auroc_table(check_table(scores, "scores", SCORE_COLUMNS, of="AStitch results"),
                            n_boot=n_boot, seed=seed)
        linear = linear_table(
            check_table(predictions, "predictions",
                        [c for c in PRED_COLUMNS if c not in PRED_OPTIONAL],
                        of="AStitch results"),
            check_table(fits, "fits", (*PRED_KEYS, "C", "dev_macro_f1"), of="an AStitch run"),
            n_boot=n_boot, seed=seed)
        tests = paired_tests(predictions, list(pairs), family=family_name(models),
                             n_boot=n_boot, seed=seed, correction=method, n_perm=n_perm)
        runs = [{**m, "notes": [*m.get("notes", []), *_cell_notes(auroc, fits, str(
            m["config"]["model"]))]} for m in meta]
        # a table without the draws and the decision function: none drawn, none scored
        predictions = predictions.assign(**{c: v for c, v in (("draw", -1),
                                                              ("decision", np.nan))
                                            if c not in predictions.columns})
        return cls(scores=scores.reset_index(drop=True), auroc=auroc.reset_index(drop=True),
                   predictions=predictions[list(PRED_COLUMNS)].reset_index(drop=True),
                   linear=linear.reset_index(drop=True), tests=tests.reset_index(drop=True),
                   excluded=excluded.reset_index(drop=True), meta=runs,
                   mdl=_mdl_table(mdl))

    # --- what the results hold ----------------------------------------------------------------

    @property
    def langs(self) -> list[str]:
        """The languages the tables hold, in the order of :data:`ncprobe.astitch.LANGS`."""
        held = set(self.auroc["lang"].astype(str)) | set(self.linear["lang"].astype(str))
        return [x for x in ("en", "pt") if x in held] + sorted(held - {"en", "pt"})

    # --- reading the tables -------------------------------------------------------------------

    def wide(self, table: str = "linear") -> pd.DataFrame:
        """One row per layer view (in the order of the table), one column per cell.

        Args:
            table: ``linear``: the linear probe's test macro-F1, columns (model, lang,
                setting, level, context) of its own rows (the controls are in the table
                ``linear``); ``auroc``: the paraphrase probe's within-expression AUROC (its
                headline, ``auroc_within``), columns (model, lang, split, level, context,
                score, subset).

        Raises:
            UsageError: another ``table``.
        """
        if table == "linear":
            lin = _subset(self.linear)
            df = lin[lin["probe_kind"].astype(str) == "linear"]
            keys, value = ["model", "lang", "setting", "level", "context"], "macro_f1"
        elif table == "auroc":
            df = self.auroc
            keys = ["model", "lang", "split", "level", "context", "score", "subset"]
            value = "auroc_within"
        else:
            raise UsageError(f"wide({table!r}): choose linear (test macro-F1 per layer view) or "
                             "auroc (AUROC per layer view)")
        df = df.assign(layer=df["layer"].astype(str))
        layers = list(dict.fromkeys(df["layer"]))
        columns = list(dict.fromkeys(tuple(str(r[k]) for k in keys)
                                     for r in df.to_dict("records")))
        out = pd.DataFrame(np.nan, index=pd.Index(layers, name="layer"),
                           columns=pd.MultiIndex.from_tuples(columns, names=keys)
                           if columns else pd.MultiIndex.from_tuples([], names=keys))
        for r in df.to_dict("records"):
            out.loc[r["layer"], tuple(str(r[k]) for k in keys)] = float(r[value])
        return out

    # --- what is printed ------------------------------------------------------------------------

    def summary(self) -> str:
        """The headline numbers as text, per language: the paraphrase probe's best
        within-expression AUROC per model, split, score and subset with its interval, the
        pooled AUROC beside it, ``n`` and the share of idiomatic uses among the scored rows;
        the linear probe per setting: each model's view of the best dev macro-F1 with its
        test macro-F1, accuracy, the AUROC of its scores, its type and within-expression
        controls and the selectivity against each, with their intervals, on all uses and on
        the ambiguous expressions', and the controls (majority, expression-only, static) and
        the baselines (training and test majority, chance, the type oracle) beside it; a
        warning atop a language read by a model of another language; the rows excluded; the
        notes."""
        n_boot = self.option("n_boot", None)
        intervals = (f"95% percentile intervals of a cluster bootstrap over expressions "
                     f"({n_boot} resamples) in brackets"
                     if isinstance(n_boot, int) and n_boot > 0 else
                     "95% cluster bootstrap intervals over expressions in brackets (none "
                     "where not computed)")
        lines = [f"AStitch Task 1 A (is the expression used idiomatically in this sentence?): "
                 f"{', '.join(self.models) or 'no model'}; {intervals}"]
        if self.edited_lines():
            lines[:0] = [*self.edited_lines(), ""]
        for lang in self.langs:
            lines += ["", f"== {lang.upper()} ==", *self._foreign_lines(lang)]
            lines += self._auroc_lines(lang)
            lines += self._linear_lines(lang)
            lines += self._mdl_lines(lang)
        lines += ["", *self._excluded_lines()]
        if self.notes:
            lines += ["", "Notes:"] + [f"  {n}" for n in self.notes]
        return "\n".join(lines)

    def _auroc_lines(self, lang: str) -> list[str]:
        auroc = self.auroc[(self.auroc["lang"].astype(str) == lang) & self.auroc["auroc"].notna()]
        if auroc.empty:
            return ["Paraphrase probe: no AUROC computed."]
        lines = ["Paraphrase probe (no training): AUROC of literal (1) against idiomatic (0) "
                 "uses, 0.5 chance; within: the uses of each expression compared among "
                 "themselves (pair-weighted over the expressions with both labels: the "
                 "headline), pooled: every use against every other (mostly ranks expressions); "
                 "all expressions and the ambiguous ones (both labels in the split); the best "
                 "view of each split by the within AUROC (chosen on that split: an optimistic "
                 "pick; every view in the table auroc)",
                 f"  {'model':<20} {'split':<16} {'score':<9} {'subset':<9} "
                 f"{'within [95% CI]':<22} {'pooled [95% CI]':<22} {'n':>5} {'expr.':>5} "
                 f"{'both':>4}  view; scored rows"]
        splits = [s for s in SPLITS if s in set(auroc["split"].astype(str))]
        for model in dict.fromkeys(auroc["model"].astype(str)):
            for split in splits:
                for score in SCORES:
                    for subset in SUBSETS:
                        cell = auroc[(auroc["model"].astype(str) == model)
                                     & (auroc["split"].astype(str) == split)
                                     & (auroc["score"].astype(str) == score)
                                     & (auroc["subset"].astype(str) == subset)]
                        if cell.empty:
                            continue
                        within = cell["auroc_within"].astype(float)
                        r = cell.loc[within.idxmax() if within.notna().any()
                                     else cell["auroc"].astype(float).idxmax()]
                        share = float(r["idiomatic_share"])
                        lean = ("scored rows lean idiomatic" if share > 0.5
                                else "scored rows") + f" ({100 * share:.0f}% idiomatic)"
                        head = _ci(r["auroc_within"], r["auroc_within_low"], r["auroc_within_high"],
                                   pct=False, digits=3)
                        pooled = _ci(r["auroc"], r["ci_low"], r["ci_high"], pct=False, digits=3)
                        lines.append(f"  {model:<20} {split:<16} {score:<9} {subset:<9} "
                                     f"{head:<22} {pooled:<22} {int(r['n']):>5} "
                                     f"{int(r['n_expressions']):>5} {int(r['n_within']):>4}  "
                                     f"{view_text(r)}; {lean}, {int(r['n_unscored'])} "
                                     "unscored")
        lines.append("  both: the expressions with both labels among the scored rows (the "
                     "within AUROC's); n, expr.: the scored rows and their expressions")
        return lines

    def _foreign_lines(self, lang: str) -> list[str]:
        """A warning at the top of a language's block: a model (or the static control) read
        that language without a model of it (an English model on Portuguese)."""
        mark = NO_MODEL_NOTE.format(model="", lang=lang)
        said = [n for n in self.notes if mark in n]
        if not said:
            return []
        names = ", ".join(dict.fromkeys(n.split(mark)[0] for n in said))
        return [f"WARNING: {names} has no {lang} model: a model of another language reads "
                f"these {lang} sentences, so its numbers below say little about {lang} "
                "(compare them with the baselines and the type oracle, not with the "
                f"model's own language; a model of {lang}, or --lang of the model's own "
                "language, means more)"]

    def _linear_lines(self, lang: str) -> list[str]:
        lin = self.linear[self.linear["lang"].astype(str) == lang]
        if lin.empty:
            return ["Linear probe: no cell."]
        amb_at = {_cell_key(r): r for r in _subset(lin, "ambiguous").to_dict("records")}
        lin = _subset(lin)
        lines = ["Linear probe (L2 logistic regression on frozen vectors, C chosen on dev; "
                 "test uses): per setting, each model's view of the best dev macro-F1, its two "
                 "control tasks (fitted with its C), the controls, and the baselines; percent",
                 f"  {'setting':<10} {'probe':<32} {'view':<32} {'dev F1':>6}  "
                 f"{'macro-F1 [95% CI]':<19} {'accuracy [95% CI]':<19} selectivity [95% CI]"]
        for setting in SETTINGS:
            rows = lin[lin["setting"].astype(str) == setting]
            if rows.empty:
                continue
            for r in _best_rows(rows[rows["probe_kind"].astype(str) != "baseline"]):
                kind, control = str(r["probe_kind"]), str(r["control"])
                name = (str(r["model"]) if kind == "linear" else
                        f"{_DISPLAY.get(control, control)}" + (f" ({r['model']})"
                                                               if str(r["model"]) else ""))
                dev = (f"{100 * float(r['dev_macro_f1']):.1f}"
                       if pd.notna(r["dev_macro_f1"]) else "-")
                sel = (_ci(r["selectivity"], r["sel_low"], r["sel_high"], pct=True,
                           signed=True) + " (type)" if kind == "linear" else "")
                f1 = _ci(r["macro_f1"], r["f1_low"], r["f1_high"], pct=True)
                lines.append(f"  {setting:<10} {name:<32} {view_text(r):<32} "
                             f"{dev:>6}  {f1:<19} "
                             f"{_ci(r['accuracy'], r['acc_low'], r['acc_high'], pct=True):<19} "
                             f"{sel}".rstrip())
                if kind != "linear":
                    continue
                lines += _control_lines(setting, r, "")
                amb = amb_at.get(_cell_key(r))
                if amb is not None and int(amb["n"] or 0) > 0:
                    f1 = _ci(amb["macro_f1"], amb["f1_low"], amb["f1_high"], pct=True)
                    head = (f"  ambiguous: {int(amb['n'])} uses of "
                            f"{int(amb['n_expressions'])} expr.")
                    acc = _ci(amb["accuracy"], amb["acc_low"], amb["acc_high"], pct=True)
                    lines.append(f"  {setting:<10} {head:<32} {'(the same fitted probe)':<32} "
                                 f"{'':>6}  {f1:<19} {acc:<19} "
                                 + _ci(amb["selectivity"], amb["sel_low"], amb["sel_high"],
                                       pct=True, signed=True) + " (type)")
                    lines += _control_lines(setting, amb, "  ")
            for subset in SUBSETS:
                base = _subset(self.linear[self.linear["lang"].astype(str) == lang], subset)
                base = base[(base["setting"].astype(str) == setting)
                            & (base["probe_kind"].astype(str) == "baseline")]
                if base.empty:
                    continue
                shown = [f"{_BASELINE_TEXT.get(str(b['control']), str(b['control']))} "
                         + _ci(b["macro_f1"], b["f1_low"], b["f1_high"], pct=True)
                         for b in base.to_dict("records")]
                lines.append(f"  {setting:<10} baselines, {subset} uses: " + "; ".join(shown))
        lines.append("  controls: majority (the training split's most frequent label), "
                     "expression-only (each expression's most frequent training label), static "
                     "(the same probe on a static model's vectors); control tasks, each "
                     "fitted with the probe's C: type (Hewitt and Liang: one random label per "
                     "expression type), within (the training labels shuffled among each "
                     "expression's uses, its idiomatic share kept: what the expression type "
                     "alone teaches the probe; the mean over the draws); selectivity = task F1 "
                     "- control F1, in points. Baselines: majority train, majority test (the "
                     "best constant), chance (stratified at the training shares, the mean over "
                     "seeded draws), type oracle (each expression's majority label in test: "
                     "the most a reader of the expression type alone scores). Ambiguous: the "
                     "test uses of the expressions with both labels in test")
        return lines

    def _mdl_lines(self, lang: str) -> list[str]:
        """``--mdl``: the online codelength of the cells the linear block shows (each model's
        view of the best dev macro-F1 per setting, the static control's) and of their control
        tasks; nothing for a run without it."""
        mdl = self.mdl[self.mdl["lang"].astype(str) == lang]
        if mdl.empty:
            return []
        at: dict[tuple[str, ...], list[dict]] = {}
        for r in mdl.to_dict("records"):
            at.setdefault(tuple(str(r[k]) for k in ("model", "setting", "layer", "level",
                                                    "context")), []).append(r)
        lines = ["MDL (online code, Voita and Titov 2020, of the training labels given the "
                 "vectors, the probe's C; the views above): compression = uniform / online "
                 "codelength, above 1: the labels are learnable from the vectors",
                 f"  {'setting':<10} {'probe':<32} {'view':<32} {'bits':>9} {'uniform':>9}  "
                 "compression [95% CI]"]
        lin = _subset(self.linear[self.linear["lang"].astype(str) == lang])
        for setting in SETTINGS:
            rows = lin[(lin["setting"].astype(str) == setting)
                       & lin["probe_kind"].astype(str).isin(["linear", SHARED_KIND])]
            for r in _best_rows(rows):
                key = tuple(str(r[k]) for k in ("model", "setting", "layer", "level",
                                                "context"))
                for m in at.get(key, []):
                    control = str(m["control"])
                    name = f"{m['model']}" + (f" ({control} control)" if control else "")
                    blocks = int(m["uniform_blocks"])
                    lines.append(f"  {setting:<10} {name:<32} {view_text(m):<32} "
                                 f"{float(m['codelength_bits']):>9.1f} "
                                 f"{float(m['uniform_bits']):>9.1f}  "
                                 + _ci(m["compression"], m["ci_low"], m["ci_high"], pct=False,
                                       digits=2)
                                 + (f"; {blocks} block(s) sent uniformly" if blocks else ""))
        return lines if len(lines) > 2 else []

    def _excluded_lines(self) -> list[str]:
        ex = self.excluded
        if ex.empty:
            return ["Excluded rows: none."]
        lines = [f"Excluded rows: {len(ex)} (every one in the table excluded)"]
        for lang in dict.fromkeys(ex["lang"].astype(str)):
            part = ex[ex["lang"].astype(str) == lang]
            counts = part["why"].astype(str).value_counts(sort=True)
            shown = [f"{int(n)} {why}" for why, n in counts.head(3).items()]
            if len(counts) > 3:
                shown.append(f"{int(counts.iloc[3:].sum())} for {len(counts) - 3} other "
                             "reason(s)")
            lines.append(f"  {lang}: {len(part)} rows: " + "; ".join(shown))
        return lines

    def json_rows(self) -> list[dict]:
        """The headline rows as plain JSON values (NaN as null), what ``ncprobe run astitch
        --json`` prints: one per ``auroc`` row (``probe_kind`` ``paraphrase``, ``setting``
        empty, its ``score`` and ``subset``, ``auroc_within`` with ``auroc_within_low`` /
        ``auroc_within_high``, the pooled ``auroc``) and one per ``linear`` row
        (``probe_kind`` ``linear``, ``control`` or ``baseline``, ``split`` ``test``, its
        ``subset``, ``all`` or ``ambiguous``, and ``control``, ``macro_f1`` and
        ``accuracy``; a linear row its ``C`` and the ``auroc`` of its scores; a baseline row
        its ``baseline``: ``majority_train``, ``majority_test``, ``chance``, ``type_oracle``);
        after each linear row its two control tasks, ``probe_kind`` ``control`` with
        ``control`` ``type`` or ``within`` (what it controls for), their ``macro_f1`` and
        the ``selectivity`` against each; ``ci_low`` / ``ci_high`` the interval of the
        AUROC or of the macro-F1. With ``--mdl``, last, one row per ``mdl`` row:
        ``probe_kind`` ``mdl``, ``split`` ``train`` (the rows coded), ``control`` (``""`` the
        probe, ``type``, ``within``, ``static``), ``codelength_bits`` with ``bits_low`` /
        ``bits_high``, ``uniform_bits``, ``compression`` with ``ci_low`` / ``ci_high``,
        ``uniform_blocks``, ``n``, ``n_expressions``, ``C``, ``n_draws``, ``stopped``."""
        out = []
        for r in self.auroc.to_dict("records"):
            out.append({"probe_kind": "paraphrase", "model": str(r["model"]),
                        "lang": str(r["lang"]), "split": str(r["split"]), "setting": "",
                        "level": str(r["level"]), "context": str(r["context"]),
                        "layer": _num(r["layer"]), "score": str(r["score"]),
                        "subset": str(r["subset"]),
                        "n": _num(r["n"]), "n_expressions": _num(r["n_expressions"]),
                        "n_within": _num(r["n_within"]),
                        "auroc_within": _num(r["auroc_within"]),
                        "auroc_within_low": _num(r["auroc_within_low"]),
                        "auroc_within_high": _num(r["auroc_within_high"]),
                        "auroc": _num(r["auroc"]), "ci_low": _num(r["ci_low"]),
                        "ci_high": _num(r["ci_high"]), "n_unscored": _num(r["n_unscored"]),
                        "idiomatic_share": _num(r["idiomatic_share"])})
        for r in self.linear.to_dict("records"):
            kind = str(r["probe_kind"])
            row = {"probe_kind": kind, "model": str(r["model"]),
                   "lang": str(r["lang"]), "split": "test", "setting": str(r["setting"]),
                   "level": str(r["level"]), "context": str(r["context"]),
                   "layer": _num(r["layer"]), "control": str(r["control"]),
                   "subset": str(r.get("subset", "all")),
                   "n": _num(r["n"]), "n_expressions": _num(r["n_expressions"]),
                   "macro_f1": _num(r["macro_f1"]), "ci_low": _num(r["f1_low"]),
                   "ci_high": _num(r["f1_high"]), "accuracy": _num(r["accuracy"]),
                   "acc_low": _num(r["acc_low"]), "acc_high": _num(r["acc_high"]),
                   "dev_macro_f1": _num(r["dev_macro_f1"]),
                   "control_f1": _num(r["control_f1"]),
                   "control_low": _num(r["control_low"]),
                   "control_high": _num(r["control_high"]),
                   "selectivity": _num(r["selectivity"]),
                   "sel_low": _num(r["sel_low"]), "sel_high": _num(r["sel_high"])}
            if kind == "baseline":
                row.update(baseline=str(r["control"]), n_draws=_num(r.get("n_draws")))
            if kind == "linear":
                row.update(C=_num(r["C"]), auroc=_num(r.get("auroc")),
                           auroc_low=_num(r.get("auroc_low")),
                           auroc_high=_num(r.get("auroc_high")))
            out.append(row)
            if kind != "linear":
                continue
            # the two control tasks of the cell, each a row labelled by what it controls for
            cell = {k: row[k] for k in ("model", "lang", "split", "setting", "level",
                                        "context", "layer", "subset", "n", "n_expressions",
                                        "C")}
            for control, f1, lo, hi, sel, slo, shi in (
                    ("type", "control_f1", "control_low", "control_high", "selectivity",
                     "sel_low", "sel_high"),
                    ("within", "within_f1", "within_low", "within_high", "within_sel",
                     "wsel_low", "wsel_high")):
                if _num(r.get(f1)) is None:
                    continue
                out.append({"probe_kind": "control", **cell, "control": control,
                            "macro_f1": _num(r[f1]), "ci_low": _num(r[lo]),
                            "ci_high": _num(r[hi]), "selectivity": _num(r[sel]),
                            "sel_low": _num(r[slo]), "sel_high": _num(r[shi]),
                            "n_draws": _num(r["n_draws"]) if control == "within" else None})
        for r in self.mdl.to_dict("records"):  # --mdl: after every other row
            out.append({"probe_kind": "mdl", "model": str(r["model"]), "lang": str(r["lang"]),
                        "split": "train", "setting": str(r["setting"]),
                        "level": str(r["level"]), "context": str(r["context"]),
                        "layer": _num(r["layer"]), "control": str(r["control"]),
                        **{c: _num(r[c]) for c in MDL_COLUMNS[len(PRED_KEYS):]}})
        return out

    # --- the report and the comparison ----------------------------------------------------------

    def report_meta(self) -> dict:
        """What the report's index says of the runs: each model with its model id, the
        options the runs share, the notes, the resamples and the edited runs."""
        models = [{"model": m["config"]["model"],
                   "id": ", ".join(_model_ids(m.get("fingerprint"))) or None}
                  for m in self.meta]
        shared = self.shared_config()
        return {"probe": LAYOUT.probe, "models": models, "config": shared,
                "notes": self.notes, "n_boot": shared.get("n_boot"),
                "edited": self.edited_lines()}

    def report_writer(self) -> Callable[..., list[Path]]:
        """:func:`ncprobe.astitch.report.write_astitch_report`: the AUROC, linear-probe, tests
        and excluded tables, the four figures, an index."""
        from .report import write_astitch_report

        return write_astitch_report

    def _cells(self, chosen: Any, side: str) -> list[dict]:
        """The linear cells a side of :meth:`compare` names: each model's view of the best
        dev macro-F1 per language, setting and feature (``None``), the rows matching filters
        (a mapping, :func:`ncprobe.query.filter_rows`) or the cells of the given labels
        (:func:`ncprobe.astitch.stats.label`)."""
        lin = _subset(self.linear)
        lin = lin[lin["probe_kind"].astype(str) != "baseline"]
        if chosen is None:
            own = lin[lin["probe_kind"].astype(str) == "linear"]
            if own.empty:
                raise UsageError(
                    f"{SIDE_NAMES[side]}: these results hold no linear-probe cell of a model (only "
                    f"controls and baselines); compare results written by `ncprobe run astitch "
                    f"--model MODEL` (in Python, name the cells: compare(..., {side}=LABELS))")
            best: dict[tuple, dict] = {}
            for r in own.to_dict("records"):
                at = tuple(str(r[k]) for k in ("model", "lang", "setting", "level", "context"))
                if at not in best or (pd.notna(r["dev_macro_f1"]) and (
                        pd.isna(best[at]["dev_macro_f1"])
                        or r["dev_macro_f1"] > best[at]["dev_macro_f1"])):
                    best[at] = r
            return list(best.values())
        if isinstance(chosen, Mapping):
            return filter_rows(lin, chosen, where="the linear table",
                               source=side).to_dict("records")
        wanted = [chosen] if isinstance(chosen, str) else [str(c) for c in chosen]
        # a label names a cell in every language and setting (label() leaves them out)
        by_label: dict[str, list[dict]] = {}
        for r in lin.to_dict("records"):
            by_label.setdefault(label(r), []).append(r)
        unknown = [w for w in wanted if w not in by_label]
        if unknown or not wanted:
            shown = ", ".join(list(by_label)[:30]) + (f" ... ({len(by_label)} in all)"
                                                      if len(by_label) > 30 else "")
            raise UsageError(f"{side}: {', '.join(map(repr, unknown)) or 'no cell'} is not a "
                             f"linear cell of these results; they hold {shown}")
        return [r for w in dict.fromkeys(wanted) for r in by_label[w]]

    def compare(self, other: "ProbeResults | None" = None, *, a: Any = None, b: Any = None,
                names: Sequence[str] | None = None, n_boot: int | None = None,
                seed: int | None = None, correction: str | None = None,
                n_perm: int | str | None = None) -> pd.DataFrame:
        """Linear cells of these results against cells of ``other`` on the same test uses:
        the macro-F1 difference with its paired cluster bootstrap interval and the cluster
        swap permutation test (:func:`ncprobe.astitch.stats.paired_tests`), every test
        corrected as one family of its own, :func:`across_family` (``"astitch across runs:
        <name a> vs <name b>"``).

        Args:
            other: other AStitch results, of the same data.
            a, b: the cells of each side: default each model's view of the best dev macro-F1
                per language, setting and feature, paired with the other side's of the same
                language, setting and feature; a label or a list of labels
                (:func:`ncprobe.astitch.stats.label`: a label names its cell in every language
                and setting), or filters of the ``linear`` table (``{"setting": "zero-shot",
                "layer": "12"}``), then every cell of a against every cell of b of the same
                language.
            names: what the two are called (their directories), for the family's name.
            n_boot, seed, correction, n_perm: the bootstrap, the correction and the swaps
                (default: the runs' shared options, else 1000, 0, holm, auto).

        Returns:
            A tests table (:data:`ncprobe.astitch.stats.TEST_COLUMNS`), one row per pair.

        Raises:
            UsageError: no other AStitch results, results of different data, a cell that is
                not there, or no pair of cells of the same language.
        """
        from .stats import paired_tests

        other, names, n_boot, seed, correction = self.compare_defaults(
            other, names, n_boot, seed, correction)
        check_same_data([self, other], names)
        cells_a, cells_b = self._cells(a, "a"), other._cells(b, "b")
        keys = list(PRED_KEYS)

        def key(r: Mapping) -> tuple[str, ...]:
            return tuple(str(r[k]) for k in keys)

        same = {key(r) for r in cells_a} & {key(r) for r in cells_b}
        # by default like with like; cells named: every pair of one language
        match = ("lang", "setting", "level", "context") if a is None and b is None \
            else ("lang",)
        pairs_rows = [(ra, rb) for ra in cells_a for rb in cells_b
                      if all(str(ra[k]) == str(rb[k]) for k in match)]
        if not pairs_rows:
            raise UsageError("a and b share no language (and, by default, setting and "
                             "feature): nothing to compare")
        # one predictions table of both; a cell in both (one model run twice) is told apart
        # by the side's name
        preds = []
        for res, cells, name in ((self, cells_a, names[0]), (other, cells_b, names[1])):
            wanted = {key(r) for r in cells}
            p = res.predictions
            rows = p[[key(r) in wanted for r in p[keys].to_dict("records")]]
            if same:
                rows = rows.assign(model=[f"{m} ({name})" if key(r) in same else m
                                          for m, r in zip(rows["model"].astype(str),
                                                          rows[keys].to_dict("records"),
                                                          strict=True)])
            preds.append(rows)

        def renamed(r: Mapping, name: str) -> dict:
            out = {k: r[k] for k in keys}
            if key(r) in same:
                out["model"] = f"{r['model']} ({name})"
            return out

        pairs = [(renamed(ra, names[0]), renamed(rb, names[1])) for ra, rb in pairs_rows]
        method = check_correction(correction)
        if n_perm is None:
            n_perm = self.option("n_perm", None)
            n_perm = "auto" if n_perm is None else n_perm
        return paired_tests(pd.concat(preds, ignore_index=True), pairs,
                            family=across_family(names), n_boot=int(n_boot), seed=int(seed),
                            correction=method, n_perm=n_perm)

    # --- on disk --------------------------------------------------------------------------------

    @classmethod
    def check_runs(cls, tables: dict[str, pd.DataFrame], runs: list[dict], meta_file: Path
                   ) -> None:
        """Refuse a ``run.json`` that does not describe each model of the tables once (the
        controls' rows are no run's): :func:`~ncprobe.probes.base.check_model_runs`, a
        DataError (exit 3)."""
        check_model_runs(runs, _held_models(tables), meta_file, run="an AStitch run")

    @classmethod
    def check_joinable(cls, results: Sequence["AStitchResults"], names: Sequence[str]
                       ) -> None:
        """Refuse results of different data (:func:`check_same_data`), or a model in two of
        them (never pooled)."""
        check_same_data(results, names)
        refuse_pooling([res.models + _held_models(res.tables) for res in results], names,
                       "leave one out with --exclude")


def _mdl_table(rows: pd.DataFrame | Sequence[Mapping] | None) -> pd.DataFrame:
    """The MDL table of ``rows`` (:data:`~ncprobe.astitch.linear.MDL_COLUMNS`; none: empty)."""
    if rows is None or len(rows) == 0:
        return pd.DataFrame(columns=list(MDL_COLUMNS))
    df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    df = check_table(df, "mdl", MDL_COLUMNS, of="AStitch results")
    return df[list(MDL_COLUMNS)].reset_index(drop=True)


def _model_ids(fingerprint: Any) -> list[str]:
    """The model ids a run's fingerprint names: its ``model``, or each language's (a run
    of several languages keeps one fingerprint per language)."""
    if not isinstance(fingerprint, Mapping):
        return []
    if isinstance(fingerprint.get("model"), str):
        return [fingerprint["model"]]
    return sorted({str(v["model"]) for v in fingerprint.values()
                   if isinstance(v, Mapping) and isinstance(v.get("model"), str)})


#: The baselines in words (the summary).
_BASELINE_TEXT = {"majority_train": "majority (train)", "majority_test": "majority (test)",
                  "chance": "chance (stratified)", "type_oracle": "type oracle"}


def _cell_key(r: Mapping) -> tuple[str, ...]:
    return tuple(str(r[k]) for k in PRED_KEYS)


def _control_lines(setting: str, r: Mapping, indent: str) -> list[str]:
    """The summary's lines of a linear row's two control tasks and the AUROC of its
    scores."""
    out = []
    if pd.notna(r["auroc"]):
        out.append(f"  {setting:<10} {indent + '  AUROC of its scores':<32} {'':<32} {'':>6}  "
                   + _ci(r["auroc"], r["auroc_low"], r["auroc_high"], pct=False, digits=3))
    for name, f1, lo, hi, sel, slo, shi in (
            ("type control", "control_f1", "control_low", "control_high", "selectivity",
             "sel_low", "sel_high"),
            ("within control", "within_f1", "within_low", "within_high", "within_sel",
             "wsel_low", "wsel_high")):
        if pd.isna(r[f1]):
            continue
        what = name + (f" ({int(r['n_draws'])} draws)" if name.startswith("within")
                       and pd.notna(r["n_draws"]) else "")
        ctrl = _ci(r[f1], r[lo], r[hi], pct=True)
        out.append(f"  {setting:<10} {indent + '  ' + what:<32} {'(its C)':<32} {'':>6}  "
                   f"{ctrl:<19} {'':<19} "
                   + _ci(r[sel], r[slo], r[shi], pct=True, signed=True))
    return out


def _best_rows(rows: pd.DataFrame) -> list[dict]:
    """The rows of one language and setting that the summary shows, in order: the majority
    and expression-only controls, the static model's view of the best dev macro-F1, then each
    model's (ties: the first in the table)."""
    records = rows.to_dict("records")
    out: list[dict] = []
    for control in CONTROLS:
        out += [r for r in records if str(r["probe_kind"]) == SHARED_KIND
                and str(r["control"]) == control and control in ("majority", "expression")]
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in records:
        if str(r["control"]) in ("majority", "expression"):
            continue
        groups.setdefault((str(r["probe_kind"]), str(r["control"]), str(r["model"])),
                          []).append(r)
    order = sorted(groups, key=lambda g: (g[0] == "linear", g[1]))  # controls first
    for g in order:
        cells = groups[g]
        top = cells[0]
        for r in cells[1:]:
            if pd.notna(r["dev_macro_f1"]) and (pd.isna(top["dev_macro_f1"])
                                                or r["dev_macro_f1"] > top["dev_macro_f1"]):
                top = r
        out.append(top)
    return out


def _cell_notes(auroc: pd.DataFrame, fits: pd.DataFrame, model: str) -> list[str]:
    """A run's notes on its cells: the AUROC cells left undefined, the fits that did not
    converge or met rows without a vector (its model's and the shared controls')."""
    notes = []
    undefined = auroc[(auroc["model"].astype(str) == model) & auroc["auroc"].isna()
                      & (auroc["n"] > 0) & (auroc["subset"].astype(str) == "all")]
    if len(undefined):
        shown = "; ".join(f"{r['lang']} {r['split']} {view_text(r)} {r['score']}"
                          for r in undefined.head(5).to_dict("records"))
        notes.append(f"AUROC undefined in {len(undefined)} cell(s) whose scored rows hold one "
                     f"label: {shown}" + (" ..." if len(undefined) > 5 else ""))
    mine = fits[(fits["model"].astype(str) == model)
                | (fits["probe_kind"].astype(str) == SHARED_KIND)] if len(fits) else fits
    if "converged" in mine.columns and len(mine):
        bad = mine[~mine["converged"].astype(bool)]
        if len(bad):
            notes.append(f"{len(bad)} of {len(mine)} linear fit(s) (task or control task) did "
                         "not converge within the solver's iterations: "
                         + "; ".join(f"{r['lang']} {r['setting']} {label(r)}"
                                     for r in bad.head(5).to_dict("records"))
                         + (" ..." if len(bad) > 5 else ""))
    if "extended" in mine.columns and len(mine):
        ext = mine[mine["extended"].fillna("").astype(str) != ""]
        if len(ext):
            edge = ext[ext["edge"].fillna(False).astype(bool)] if "edge" in ext.columns \
                else ext.iloc[:0]
            notes.append(f"dev picked an end of the C grid in {len(ext)} of {len(mine)} "
                         "linear fit(s); the grid was extended past it (C tried: "
                         + "; ".join(f"{r['lang']} {r['setting']} {label(r)}: {r['extended']}"
                                     for r in ext.head(5).to_dict("records"))
                         + (" ..." if len(ext) > 5 else "") + ")"
                         + (f"; {len(edge)} still chose an end after the extension (dev "
                            "macro-F1 flat there)" if len(edge) else
                            "; every choice now lies inside the grid"))
    if "no_vector" in mine.columns and len(mine):
        gaps = mine[mine["no_vector"].fillna(0).astype(int) > 0]
        if len(gaps):
            notes.append(f"{len(gaps)} linear cell(s) met uses without a vector (zeros stood "
                         "in): " + "; ".join(f"{r['lang']} {r['setting']} {label(r)} "
                                             f"({int(r['no_vector'])})"
                                             for r in gaps.head(5).to_dict("records"))
                         + (" ..." if len(gaps) > 5 else ""))
    return notes


def check_same_data(results: Sequence[AStitchResults], names: Sequence[str]) -> None:
    """Refuse to put AStitch results of different data side by side: every data file both
    read must have the same git blob id.

    Raises:
        UsageError: naming both results and the files that differ.
    """
    first = store.data_read(results[0].meta)[0]
    for res, name in zip(results[1:], names[1:], strict=True):
        data = store.data_read(res.meta)[0]
        diffs = [f"data file {rel}: git blob {first[rel]} in {names[0]}, {data[rel]} in {name}"
                 for rel in sorted(set(first) & set(data)) if first[rel] != data[rel]]
        if diffs:
            raise UsageError(f"{names[0]} and {name} are AStitch runs on different data: "
                             + "; ".join(diffs) + ". They are never shown or tested together: "
                             "report each on its own, or leave one out with --exclude")


def _held_models(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """The models whose own rows the tables hold: every model of ``scores`` and ``auroc``,
    and of the non-control rows of ``predictions`` and ``linear``."""
    held: list[str] = []
    for name in ("scores", "auroc", "predictions", "linear"):
        df = tables[name]
        if name in _CONTROL_TABLES:
            df = df[~_CONTROL_ROWS.mask(df)]
        held += list(dict.fromkeys(df["model"].astype(str)))
    return list(dict.fromkeys(held))

