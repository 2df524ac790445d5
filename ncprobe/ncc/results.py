"""The NCC probe's results: tidy tables, a results directory, a summary, JSON rows, the report
and the comparison of two runs.

A *system row* is one way of answering the 241 items, named by its key columns
(:data:`ncprobe.ncc.stats.KEYS`: ``system``, ``kind``, ``setting``, ``layer``, ``level``,
``measure``; its label, :func:`ncprobe.ncc.stats.label`, joins the non-empty ones): a
published prediction file (kind ``published``), the gold ceiling (``ceiling``), a model's
representation classified (``representation``), the nested selection among a model's
classifiers (``selected``), a local model's own answers (``behaviour``); the accuracy table
also holds what a rule that reads no item scores (``baseline``) and the paper's results
without a file (``published``, ``n`` 0).
An :class:`NccResults` holds five tables (fractions, not percent):

* ``items``: one row per system row x item it answered: the keys, ``item`` (the item id),
  ``nc``, ``gold`` (NC, PC, C), ``predicted`` (a class, ``none`` or ``unanswered``),
  ``correct``;
* ``accuracy``: one row per system row: ``n`` (items scored), ``accuracy`` and ``macro_f1``
  with their 95% bootstrap intervals over items (``ci_low``, ``ci_high``, ``f1_low``,
  ``f1_high``), and for a classifier row its accuracy's mean, least and greatest over the
  cross-validation repeats (``repeat_mean``, ``repeat_min``, ``repeat_max``);
* ``per_class``: per system row and class (``cls``): ``n`` (gold items), ``precision``,
  ``recall``, ``f1``;
* ``tests``: every classifier row (representation, selected, ceiling) against every system
  row (published, behaviour) on the items both hold: accuracy difference with its paired
  bootstrap interval, the discordant items, McNemar's exact p, corrected within its family,
  fixed by the question (:func:`ncprobe.ncc.stats.family_of`: a model's classifiers against
  the systems, the ceiling against the systems), by max-T by default;
* ``confusion``: per system row, ``gold`` x ``predicted`` counts.

With ``--mdl`` the results also hold the table ``mdl`` (:attr:`NccResults.mdl`): each
representation and ceiling classifier's minimum description length
(:func:`ncprobe.ncc.classify.codelength`), one row per classifier (its key columns, then ``n``,
``codelength_bits``, ``bits_low``, ``bits_high``, ``uniform_bits``, ``compression``,
``compression_low``, ``compression_high``, ``uniform_blocks``, ``n_groups``): the models' rows
in their runs' order, then the ceiling's once (results joined, :meth:`NccResults.concat`:
the ceiling's rows once, the first results', as in every table). It is an optional table
(:attr:`~ncprobe.results.store.Layout.optional`, as AStitch's ``mdl``): a run without
``--mdl`` writes no ``mdl.parquet``, and its files and run id are those it wrote before.

Its directory is an ncprobe results directory (:mod:`ncprobe.results.store`: parquet tables
and ``run.json`` written as one unit, verified when read) of the probe ``ncc``. Each model is
one run of ``run.json``: its options (``config``, with the ``model``), its fingerprint and the
data files' blob ids. The published rows and the gold ceiling are the same in every run of the
same data and options: results of several directories are joined with those rows once
(:meth:`NccResults.concat`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..probes.base import (
    SIDE_NAMES,
    ModelRunResults,
    ProbeResults,
    SharedRows,
    check_model_runs,
    refuse_pooling,
)
from ..query import filter_rows
from ..results import store
from ..significance import CORRECTION_NAMES, p_text
from . import HUMAN_ACCURACY, KINDS, NCC_CLASSES, PAPER_ROWS, check_ncc_correction
from .classify import CODE_COLUMNS
from .config import NccConfig
from .report import LABEL as REPORT_LABEL
from .report import in_kind_order
from .stats import (
    CEILING_FAMILY,
    KEYS,
    MAXT_NAME,
    N_BOOT,
    TESTS_COLUMNS,
    family_name,
    label,
)

__all__ = ["LAYOUT", "MDL_COLUMNS", "NCC_COLUMNS", "NCC_TABLES", "NccResults",
           "family_name"]

#: The tables of an :class:`NccResults`, in the order they are written.
NCC_TABLES = ("items", "accuracy", "per_class", "tests", "confusion", "mdl")
#: The columns of :attr:`NccResults.mdl`, in order.
MDL_COLUMNS = (*KEYS, *CODE_COLUMNS)
#: The columns of each table, in order.
NCC_COLUMNS = {
    "items": (*KEYS, "item", "nc", "gold", "predicted", "correct"),
    "accuracy": (*KEYS, "n", "accuracy", "ci_low", "ci_high", "macro_f1", "f1_low", "f1_high",
                 "repeat_mean", "repeat_min", "repeat_max"),
    "per_class": (*KEYS, "cls", "n", "precision", "recall", "f1"),
    "tests": TESTS_COLUMNS,
    "confusion": (*KEYS, "gold", "predicted", "count"),
    "mdl": MDL_COLUMNS,
}
#: The columns that hold numbers (or booleans).
NCC_NUMERIC = frozenset({
    "correct", "n", "accuracy", "ci_low", "ci_high", "macro_f1", "f1_low", "f1_high",
    "precision", "recall", "f1", "accuracy_a", "accuracy_b", "diff", "diff_low", "diff_high",
    "a_only", "b_only", "p", "p_corrected", "significant", "family_size", "count",
    "repeat_mean", "repeat_min", "repeat_max", *CODE_COLUMNS})
#: The results directory layout of the probe (declared by :class:`NccResults`).
LAYOUT = store.Layout(
    "ncc", NCC_TABLES, NCC_COLUMNS, NCC_NUMERIC, run_keys=("model",),
    report_label=REPORT_LABEL, config=NccConfig, optional=frozenset({"mdl"}),
    # 2: the tables of issue 38 (ncc: baselines, nested selection, repeats; astitch: subsets,
    # within-expression AUROC and control, baselines)
    version=2)
#: The kinds of row that answer the items themselves (what systems *say*) ...
SAID = ("published", "behaviour")
#: ... and the rows that are the same in every run of the same data and options.
SHARED = ("baseline", "published", "ceiling")
#: The shared rows in words (when two results' differ).
_SHARED_WHAT = "published or gold-ceiling rows"


@dataclass
class NccResults(ModelRunResults):
    """What :func:`ncprobe.ncc.probe.run_ncc` returns, and what a results directory loads as.

    Attributes:
        items, accuracy, per_class, tests, confusion: the tables (see the module).
        meta: one dict per model run: ``config`` (the options, ``model`` among them),
            ``fingerprint``, ``data_sources``, ``notes``.
        mdl: the codelength rows (``--mdl``; empty without).

    Written and read as the results of every probe of one run per model
    (:class:`~ncprobe.probes.base.ProbeResults` with :data:`LAYOUT`: :meth:`to_parquet`,
    :meth:`load`, :meth:`load_many`, ``tables``, ``run_id``, ``notes``, :meth:`edited_lines`);
    its own: the published and ceiling rows kept once when results are joined
    (:meth:`concat`), and the models its ``run.json`` must describe (:meth:`check_runs`).
    """

    #: How the probe's results directories are stored (:mod:`ncprobe.results.store`).
    layout: ClassVar[store.Layout] = LAYOUT
    title = "NCC"
    tested_within = ("the classifiers of one run are already tested against the systems in "
                     "its table tests")
    default_table = "accuracy"
    #: The published, baseline and gold-ceiling rows (and the ceiling's tests against the
    #: published systems, a family fixed by the question), the same in every run of the same
    #: data and options: kept once when results are joined; every other test stays as it is.
    shared_rows = {**{t: SharedRows(_SHARED_WHAT, "kind", SHARED)
                      for t in ("items", "accuracy", "per_class", "confusion")},
                   "tests": SharedRows(_SHARED_WHAT, "family", (CEILING_FAMILY,)),
                   "mdl": SharedRows(_SHARED_WHAT, "kind", SHARED)}
    #: The options that decide the shared rows (the classifiers' folds and seeds: the ceiling).
    shared_options = ("folds", "repeats", "seed", "n_boot", "regularisation", "correction")

    items: pd.DataFrame
    accuracy: pd.DataFrame
    per_class: pd.DataFrame
    tests: pd.DataFrame
    confusion: pd.DataFrame
    meta: list[dict] = field(default_factory=list)
    mdl: pd.DataFrame = field(default_factory=lambda: _mdl_table(None))

    def __repr__(self) -> str:
        kinds = self.accuracy["kind"].astype(str)
        counts = ", ".join(f"{int((kinds == k).sum())} {k}" for k in KINDS if (kinds == k).any())
        return (f"<NccResults {', '.join(self.models) or 'no model'}: "
                f"{self.items['item'].nunique()} items; {len(self.accuracy)} system rows "
                f"({counts})>")

    @classmethod
    def from_items(cls, items: pd.DataFrame, meta: list[dict], *, n_boot: int = N_BOOT,
                   seed: int = 0, correction: str = "maxt",
                   repeats: pd.DataFrame | None = None,
                   mdl: Sequence[Mapping] | pd.DataFrame | None = None) -> "NccResults":
        """The results of an ``items`` table (one row per system row x item): accuracy and
        macro-F1 with intervals, per-class scores, confusion counts and the paired tests
        (:mod:`ncprobe.ncc.stats`), each test corrected within its family
        (:func:`ncprobe.ncc.stats.family_of`).

        The accuracy table also holds the ``baseline`` rows
        (:func:`ncprobe.ncc.stats.baseline_table`, from the items' gold classes) and the
        paper's results without a file (:data:`ncprobe.ncc.PAPER_ROWS`: published rows with
        ``n`` 0, no interval); ``repeats`` (the key columns, ``repeat``, ``accuracy``: each
        classifier row's accuracy in each cross-validation repeat) gives ``repeat_mean``,
        ``repeat_min`` and ``repeat_max`` (NaN for the rows it lacks). ``mdl``: the
        codelength rows (``--mdl``: :data:`MDL_COLUMNS`), or none.

        Raises:
            UsageError: an items table without the columns, with an unknown kind, or with an
                item twice in a row.
        """
        from .stats import accuracy_table, confusion_table, per_class_table, tests_table

        method = check_ncc_correction(correction)
        items = items.reset_index(drop=True)
        try:
            accuracy = accuracy_table(items, n_boot=n_boot, seed=seed)
            return cls(items=items,
                       accuracy=_with_references(_with_repeats(accuracy, repeats), items),
                       per_class=per_class_table(items),
                       tests=tests_table(items, n_boot=n_boot, seed=seed, correction=method),
                       confusion=confusion_table(items), meta=list(meta),
                       mdl=_mdl_table(mdl))
        except ValueError as e:
            raise UsageError(f"items: {e}") from None

    # --- reading the tables -------------------------------------------------------------------

    def wide(self, by: str = "system") -> pd.DataFrame:
        """A wide table.

        Args:
            by: ``system``: one row per system row (the ``accuracy`` table's, in its order):
                the key columns, ``n``, accuracy and macro-F1 with their intervals, then
                ``precision_<cls>``, ``recall_<cls>`` and ``f1_<cls>`` for each class (NC,
                PC, C). ``item``: one row per item (sorted by id: ``item``, ``nc``, ``gold``),
                one column per system row that holds items (its label; not the baseline
                rows or the paper's rows without a file), True where it is right, False where
                wrong, missing where the row lacks the item (a prediction file that did not
                answer it).

        Raises:
            UsageError: another ``by``.
        """
        if by == "system":
            pc = self.per_class.assign(_key=[tuple(str(r[k]) for k in KEYS)
                                             for r in self.per_class.to_dict("records")])
            out = self.accuracy.copy()
            keys = [tuple(str(r[k]) for k in KEYS) for r in out.to_dict("records")]
            for metric in ("precision", "recall", "f1"):
                for cls in NCC_CLASSES:
                    values = dict(zip(pc.loc[pc["cls"].astype(str) == cls, "_key"],
                                      pc.loc[pc["cls"].astype(str) == cls, metric],
                                      strict=True))
                    out[f"{metric}_{cls}"] = [values.get(k, np.nan) for k in keys]
            return out.reset_index(drop=True)
        if by == "item":
            items = self.items.assign(_row=[label(r) for r in self.items.to_dict("records")])
            held = set(items["_row"])
            rows = [lab for lab in (label(r) for r in self.accuracy.to_dict("records"))
                    if lab in held]
            base = (items[["item", "nc", "gold"]].drop_duplicates("item")
                    .sort_values("item", kind="stable").reset_index(drop=True))
            right = items.pivot(index="item", columns="_row", values="correct")
            right = right.reindex(index=base["item"], columns=rows).astype("boolean")
            return pd.concat([base, right.reset_index(drop=True).rename_axis(columns=None)],
                             axis=1)
        raise UsageError(f"by={by!r}: choose system (one row per system row) or item (one row "
                         "per item, one column per system row)")

    def agreement_systems(self) -> dict[str, str]:
        """The system rows of :meth:`agreement` (label -> kind), in the order of
        :data:`ncprobe.ncc.KINDS`: every published and behaviour row that holds items, and
        each model's most accurate representation row and the gold ceiling's most accurate
        row (ties: the first in the table)."""
        out: dict[str, str] = {}
        ordered = in_kind_order(self.accuracy)
        best: dict[tuple[str, str], tuple[float, str]] = {}
        for row in ordered.to_dict("records"):
            kind = str(row["kind"])
            if kind not in (*SAID, "representation", "ceiling") or int(row["n"]) == 0:
                continue
            if kind in SAID:
                out[label(row)] = kind
                continue
            value = float(row["accuracy"]) if pd.notna(row["accuracy"]) else -np.inf
            at = (kind, str(row["system"]))
            if at not in best or value > best[at][0]:
                best[at] = (value, label(row))
        chosen = {lab: kind for (kind, _), (_, lab) in best.items()}
        # in the table's kind order, with the said rows where their kind puts them
        return {lab: k for lab, k in sorted({**out, **chosen}.items(),
                                            key=lambda x: KINDS.index(x[1]))}

    def agreement(self) -> pd.DataFrame:
        """Which items the systems get right, item by item.

        One row per item, sorted by how many systems get it right (``right``; fewest first,
        then by item id): ``item``, ``nc``, ``gold``; one column per system of
        :meth:`agreement_systems` (True right, False wrong, missing where its file lacks the
        item); ``said_right`` / ``said_n``: the published files and local models' answers
        right, of those holding the item; ``encoded_right`` / ``encoded_n``: the same of the
        representation rows; ``right`` (their sum); ``missed_by_all`` (no system and no
        representation right) and ``only_representation`` (no system right, a
        representation right). The gold ceiling is shown, never counted.
        """
        systems = self.agreement_systems()
        wide = self.wide("item")
        out = wide[["item", "nc", "gold", *systems]].copy()
        said = [s for s, k in systems.items() if k in SAID]
        encoded = [s for s, k in systems.items() if k == "representation"]
        for name, cols in (("said", said), ("encoded", encoded)):
            part = out[cols]
            out[f"{name}_right"] = part.fillna(False).astype(bool).sum(axis=1).astype(np.int64)
            out[f"{name}_n"] = part.notna().sum(axis=1).astype(np.int64)
        out["right"] = out["said_right"] + out["encoded_right"]
        out["missed_by_all"] = out["right"] == 0
        out["only_representation"] = ((out["said_right"] == 0) & (out["encoded_right"] > 0)
                                      & bool(said))
        return out.sort_values(["right", "item"], kind="stable").reset_index(drop=True)

    # --- what is printed ------------------------------------------------------------------------

    def summary(self) -> str:
        """The accuracy rows as text: the baselines first, then the published rows, the
        ceiling, the representation, the nested selection and the behaviour rows; accuracy
        and macro-F1 in percent with their intervals, the mean and range of the accuracy over
        the cross-validation repeats, and ``n``; what is compared with what; each model's
        nested selection, the most accurate representation row (descriptive) and the ceiling
        against the best published system; the notes."""
        acc = in_kind_order(self.accuracy)
        labels = [label(r) for r in acc.to_dict("records")]
        n_boot = self.option("n_boot", None)
        intervals = (f"95% bootstrap intervals over items ({n_boot} resamples) in brackets"
                     if isinstance(n_boot, int) and n_boot > 0 else "no intervals (n_boot 0)")
        lines = [f"SemanticQA NCC: {self.items['item'].nunique()} items, {len(acc)} system "
                 f"rows; accuracy and macro-F1 in percent, {intervals}; CV repeats: the "
                 "accuracy's mean over the cross-validation repeats [least, greatest]"]
        if self.edited_lines():
            lines[:0] = [*self.edited_lines(), ""]
        width = min(max([len(s) for s in labels] + [10]), 56)
        head = (f"{'kind':<14} {'system row':<{width}} {'n':>4} {'accuracy':>21} "
                f"{'macro-F1':>21} {'CV repeats':>21}")
        lines += ["", head, "-" * len(head)]
        for row, name in zip(acc.to_dict("records"), labels, strict=True):
            n = str(int(row["n"])) if int(row["n"]) else "-"
            lines.append(f"{row['kind']:<14} {name:<{width}} {n:>4} "
                         f"{_cell(row, 'accuracy', 'ci_low', 'ci_high'):>21} "
                         f"{_cell(row, 'macro_f1', 'f1_low', 'f1_high'):>21} "
                         f"{_cell(row, 'repeat_mean', 'repeat_min', 'repeat_max'):>21}")
        lines += ["", f"Reference: human {100 * HUMAN_ACCURACY:.1f} (paper; 100 sampled items, "
                  "no item-level file). The baseline rows are each task's: 3-way for the "
                  "classifiers (three classes), 4-option for the published and local models "
                  "(four options, the 4th never right).", *self.reading()]
        headline = self._headline()
        if headline:
            lines += ["", *headline]
        mdl = self._mdl_line()
        if mdl:
            lines += ["", mdl]
        if self.notes:
            lines += ["", "Notes:"] + [f"  {n}" for n in self.notes]
        return "\n".join(lines)

    def reading(self) -> list[str]:
        """What the rows compare, in words (the summary and the report's index say it)."""
        n_items = int(self.items["item"].nunique())
        folds = self.option("folds", None)
        trained = (f"about {round(n_items * (folds - 1) / folds)} gold labels per fold "
                   f"({folds}-fold cross-validation)" if isinstance(folds, int) and folds > 1
                   else "the gold labels of the training folds")
        return [
            f"The classifiers (representation, selected, ceiling) are trained on {trained}; "
            "the published systems and the local models' answers are prompted, never "
            "trained on these labels; the paper's fine-tuned BERT rows (no file: no interval, "
            "no test) are the trained systems it reports.",
            "The most accurate row of a kind is chosen on the items it is scored on "
            "(descriptive, optimistic); a model's `selected` row (setting nested) chooses its "
            "classifier inside the training folds (nested cross-validation): the number to "
            "quote.",
        ]

    def _best(self, kind: str, system: str | None = None) -> dict | None:
        """The most accurate row of a kind (of one system), the first on ties, or None."""
        rows = self.accuracy[(self.accuracy["kind"].astype(str) == kind)
                             & self.accuracy["accuracy"].notna()
                             & (self.accuracy["n"].astype(int) > 0)]
        if system is not None:
            rows = rows[rows["system"].astype(str) == system]
        if rows.empty:
            return None
        return rows.loc[rows["accuracy"].astype(float).idxmax()].to_dict()

    def _headline(self) -> list[str]:
        """Each model's nested selection, the most accurate representation row (chosen on
        the test items: descriptive) and the gold ceiling against the best published
        system: their tests."""
        best = self._best("published")
        if best is None:
            return []
        acc = self.accuracy
        chosen: list[tuple[str, dict | None]] = []
        for system in dict.fromkeys(acc.loc[acc["kind"].astype(str) == "selected", "system"]
                                    .astype(str)):
            chosen.append((f"{system} nested selection (chosen inside the training folds)",
                           self._best("selected", system)))
        chosen.append(("most accurate representation row (chosen on the items it is scored "
                       "on: descriptive)", self._best("representation")))
        ceiling = acc[(acc["kind"].astype(str) == "ceiling")
                      & (acc["setting"].astype(str) == "nested")]
        chosen.append(("gold ceiling, nested selection", ceiling.iloc[0].to_dict()
                       if len(ceiling) else self._best("ceiling")))
        lines = []
        b = label(best)
        for what, row in chosen:
            if row is None:
                continue
            a = label(row)
            test = self.tests[(self.tests["a"].astype(str) == a)
                              & (self.tests["b"].astype(str) == b)]
            if test.empty:
                lines.append(f"{what} {a} ({100 * row['accuracy']:.1f}) vs best published "
                             f"system {b} ({100 * best['accuracy']:.1f}): not tested")
                continue
            t = test.iloc[0]
            ci = (f" [{100 * t['diff_low']:+.1f}, {100 * t['diff_high']:+.1f}]"
                  if pd.notna(t["diff_low"]) and pd.notna(t["diff_high"]) else "")
            lines.append(
                f"{what} {a} vs best published system {b}, on the {int(t['n'])} items of its "
                f"file: {100 * t['accuracy_a']:.1f} vs {100 * t['accuracy_b']:.1f}, "
                f"{100 * t['diff']:+.1f} points{ci}; items right only by the classifier "
                f"{int(t['a_only'])}, only by the system {int(t['b_only'])}; McNemar p "
                f"{p_text(t['p'])}, {correction_name(str(t['correction']))} p "
                f"{p_text(t['p_corrected'])} (family {t['family']}, "
                f"{int(t['family_size'])} tests)")
        return lines

    def _mdl_line(self) -> str:
        """The best compression among the codelength rows, and what it is ('' without)."""
        mdl = self.mdl
        if mdl.empty:
            return ""
        parts = []
        for kind in ("representation", "ceiling"):
            rows = mdl[mdl["kind"].astype(str) == kind]
            if rows.empty:
                continue
            row = rows.loc[rows["compression"].idxmax()].to_dict()
            ci = (f" [{row['compression_low']:.2f}, {row['compression_high']:.2f}]"
                  if pd.notna(row["compression_low"]) else "")
            what = "representation classifier" if kind == "representation" else "ceiling"
            parts.append(f"best {what} {label(row)}: compression {row['compression']:.2f}"
                         f"{ci}, {row['codelength_bits']:.1f} of {row['uniform_bits']:.1f} "
                         "uniform bits")
        return (f"MDL (online code of the gold classes, {len(mdl)} classifier rows; above 1: "
                "the features compress the classes): " + "; ".join(parts))

    def json_rows(self) -> list[dict]:
        """The ``accuracy`` table's rows as plain JSON values (NaN as null): what ``ncprobe
        run ncc --json`` prints; with ``--mdl``, then the codelength rows
        (:attr:`mdl`), each with ``probe_kind`` ``mdl``."""
        rows = json.loads(self.accuracy.to_json(orient="records", double_precision=15))
        mdl = self.mdl
        if not mdl.empty:
            rows += [{"probe_kind": "mdl", **r} for r in
                     json.loads(mdl.to_json(orient="records", double_precision=15))]
        return rows

    # --- the report and the comparison ----------------------------------------------------------

    def report_meta(self) -> dict:
        """What the report's index says of the runs: each model with its model id and whether
        it answered the items, the options the runs share, the notes, the resamples, the
        agreement's systems, and the edited runs."""
        models = [{"model": m["config"]["model"],
                   "id": (m.get("fingerprint") or {}).get("model")
                   if isinstance(m.get("fingerprint"), Mapping) else None,
                   "behaviour": bool(m["config"].get("behaviour"))} for m in self.meta]
        shared = self.shared_config()
        return {"probe": LAYOUT.probe, "models": models, "config": shared,
                "notes": self.notes, "n_boot": shared.get("n_boot"),
                "agreement": self.agreement_systems(), "edited": self.edited_lines(),
                "reading": self.reading()}

    def report_writer(self) -> Callable[..., list[Path]]:
        """:func:`ncprobe.ncc.report.write_ncc_report`: the comparison table, the tests, the
        items, the figures, an index."""
        from .report import write_ncc_report

        return write_ncc_report

    def report_tables(self) -> dict[str, pd.DataFrame]:
        """The tables and the per-item agreement (:meth:`agreement`); with ``--mdl`` rows,
        also ``mdl`` (:attr:`mdl`)."""
        tables = {k: v for k, v in self.tables.items() if k != "mdl" or len(v)}
        return {**tables, "agreement": self.agreement()}

    def _rows(self, chosen: Any, side: str) -> list[dict]:
        """The accuracy rows a side of :meth:`compare` names: its representation rows
        (``None``), the rows matching filters (a mapping, :func:`ncprobe.query.filter_rows`)
        or the rows of the given labels."""
        if chosen is None:
            rows = self.accuracy[self.accuracy["kind"].astype(str) == "representation"]
            if rows.empty:
                raise UsageError(
                    f"{SIDE_NAMES[side]}: these results hold no representation classifier of "
                    f"a model (only published systems, baselines and the ceiling); compare "
                    f"results written by `ncprobe run ncc --model MODEL` (in Python, name the "
                    f"rows: compare(..., {side}=LABELS))")
            return rows.to_dict("records")
        if isinstance(chosen, Mapping):
            return filter_rows(self.accuracy, chosen, where="the accuracy table",
                               source=side).to_dict("records")
        wanted = [chosen] if isinstance(chosen, str) else [str(c) for c in chosen]
        by_label = {label(r): r for r in self.accuracy.to_dict("records")}
        unknown = [w for w in wanted if w not in by_label]
        if unknown or not wanted:
            shown = ", ".join(list(by_label)[:30]) + (f" ... ({len(by_label)} in all)"
                                                      if len(by_label) > 30 else "")
            raise UsageError(f"{side}: {', '.join(map(repr, unknown)) or 'no row'} is not a "
                             f"system row of these results; they hold {shown}")
        return [by_label[w] for w in wanted]

    def _correct(self, rows: Sequence[Mapping]) -> list[pd.Series]:
        """Each row's correctness per item (indexed by item id)."""
        keys = pd.MultiIndex.from_frame(self.items[list(KEYS)].astype(str))
        out = []
        for row in rows:
            part = self.items[keys == tuple(str(row[k]) for k in KEYS)]
            out.append(pd.Series(part["correct"].to_numpy(bool),
                                 index=part["item"].astype(str)))
        return out

    def compare(self, other: "ProbeResults | None" = None, *, a: Any = None, b: Any = None,
                names: Sequence[str] | None = None, n_boot: int | None = None,
                seed: int | None = None, correction: str | None = None) -> pd.DataFrame:
        """Classifier rows of these results against rows of ``other``, on the same items: the
        accuracy difference with a paired bootstrap interval and McNemar's exact test
        (:func:`ncprobe.ncc.stats.paired_test`), every test corrected as one family of its
        own, ``"classifiers across runs: <name a> vs <name b>"``.

        Args:
            other: other NCC results, of the same items and data.
            a, b: the rows of each side: default every representation classifier; a label or
                a list of labels (``"glove-6b-50d all - nc all"``), or filters of the
                accuracy table (``{"setting": "all", "level": "nc"}``).
            names: what the two are called (their directories), for the family's name.
            n_boot, seed, correction: the bootstrap and the correction (default: the runs'
                shared options, else 1000, 0, holm).

        Returns:
            A tests table (:data:`ncprobe.ncc.stats.TESTS_COLUMNS`), one row per pair, the
            items of each pair those both rows hold (sorted by id).

        Raises:
            UsageError: no other NCC results, results of different items or data, or a row
                that is not there.
        """
        from .stats import correct_families, paired_test

        other, names, n_boot, seed, correction = self.compare_defaults(
            other, names, n_boot, seed, correction)
        check_same_items([self, other], names)
        rows_a, rows_b = self._rows(a, "a"), other._rows(b, "b")
        correction = check_ncc_correction(correction)
        ids = sorted(set(self.items["item"].astype(str)))
        out, diffs = [], []
        right_b = other._correct(rows_b)
        for ra, ca in zip(rows_a, self._correct(rows_a), strict=True):
            for rb, cb in zip(rows_b, right_b, strict=True):
                both = sorted(set(ca.index) & set(cb.index))
                test = paired_test(ca[both].to_numpy(bool), cb[both].to_numpy(bool),
                                   int(n_boot), int(seed))
                out.append({"a": label(ra), "b": label(rb), "kind_a": str(ra["kind"]),
                            "kind_b": str(rb["kind"]), **test,
                            "family": f"classifiers across runs: {names[0]} vs {names[1]}"})
                d = (ca[both].astype(int) - cb[both].astype(int)).reindex(ids, fill_value=0)
                diffs.append(d.to_numpy(np.int8))
        df = pd.DataFrame(out, columns=[c for c in TESTS_COLUMNS if c not in (
            "p_corrected", "significant", "correction", "family_size")])
        df = correct_families(df, np.array(diffs, dtype=np.int8).reshape(len(out), len(ids)),
                              correction, seed=int(seed))
        return df.astype({"n": np.int64, "a_only": np.int64, "b_only": np.int64,
                          "significant": bool, "family_size": np.int64})

    # --- on disk --------------------------------------------------------------------------------

    @classmethod
    def check_runs(cls, tables: dict[str, pd.DataFrame], runs: list[dict], meta_file: Path
                   ) -> None:
        """Refuse a ``run.json`` that misses a model of the representation or behaviour rows
        (a run removed), or names one twice (:func:`~ncprobe.probes.base.check_model_runs`:
        a DataError, exit 3)."""
        check_model_runs(runs, _held_models(tables), meta_file, run="an NCC run")

    @classmethod
    def check_joinable(cls, results: Sequence["NccResults"], names: Sequence[str]) -> None:
        """Refuse results of different items or data (:func:`check_same_items`), or a model
        in two of them (never pooled)."""
        check_same_items(results, names)
        refuse_pooling([res.models + _held_models(res.tables) for res in results], names,
                       "leave one out with --exclude")


def _mdl_table(rows: Sequence[Mapping] | pd.DataFrame | None) -> pd.DataFrame:
    """The ``mdl`` table of ``rows`` (:data:`MDL_COLUMNS`, in their order; none: empty), each
    code column of its type."""
    df = pd.DataFrame([] if rows is None else rows, columns=list(MDL_COLUMNS))
    ints = {"n", "uniform_blocks", "n_groups"}
    return df.reset_index(drop=True).astype(
        {c: (np.int64 if c in ints else np.float64) for c in CODE_COLUMNS})


def _with_repeats(accuracy: pd.DataFrame, repeats: pd.DataFrame | None) -> pd.DataFrame:
    """The accuracy table with each row's mean, least and greatest accuracy over the
    cross-validation repeats (NaN where ``repeats`` has none)."""
    out = accuracy.copy()
    for col in ("repeat_mean", "repeat_min", "repeat_max"):
        out[col] = np.nan
    if repeats is None or repeats.empty:
        return out
    spread = repeats.groupby(list(KEYS), sort=False)["accuracy"].agg(["mean", "min", "max"])
    keys = pd.MultiIndex.from_frame(out[list(KEYS)].astype(str))
    spread.index = pd.MultiIndex.from_tuples([tuple(map(str, k)) for k in spread.index],
                                             names=list(KEYS))
    found = spread.reindex(keys)
    for col, agg in (("repeat_mean", "mean"), ("repeat_min", "min"), ("repeat_max", "max")):
        out[col] = found[agg].to_numpy(np.float64)
    return out


def _with_references(accuracy: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """The accuracy table with the baseline rows (from the items' gold classes) and the
    paper's rows without a file (:data:`ncprobe.ncc.PAPER_ROWS`) after its own rows."""
    from .stats import baseline_table

    if items.empty:
        return accuracy
    gold = items.drop_duplicates("item")["gold"].astype(str).to_numpy(object)
    paper = pd.DataFrame([{"system": system, "kind": "published", "setting": setting,
                           "layer": "", "level": "", "measure": "", "n": 0,
                           "accuracy": value} for system, setting, value in PAPER_ROWS])
    extra = pd.concat([baseline_table(gold), paper], ignore_index=True)
    extra = extra.reindex(columns=accuracy.columns)
    return pd.concat([accuracy, extra], ignore_index=True).astype({"n": np.int64})


def correction_name(method: str) -> str:
    """A correction in words (``maxt``: :data:`~ncprobe.ncc.stats.MAXT_NAME`)."""
    return MAXT_NAME if method == "maxt" else CORRECTION_NAMES.get(method, method)


def _held_models(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """The models whose own rows the tables hold (representation and behaviour)."""
    acc = tables["accuracy"]
    return list(dict.fromkeys(acc.loc[~acc["kind"].astype(str).isin(SHARED), "system"]
                              .astype(str)))


def _cell(row: Mapping, value: str, lo: str, hi: str) -> str:
    if pd.isna(row[value]):
        return "-"
    text = f"{100 * row[value]:.1f}"
    if pd.isna(row[lo]) or pd.isna(row[hi]):
        return text
    return f"{text} [{100 * row[lo]:.1f}, {100 * row[hi]:.1f}]"


def check_same_items(results: Sequence[NccResults], names: Sequence[str]) -> None:
    """Refuse to put NCC results of different items or data side by side: every one must hold
    the same items (ids and gold classes) from data files of the same git blob ids.

    Raises:
        UsageError: naming both results and what differs.
    """
    def facts(res: NccResults) -> tuple[dict[str, str], dict[str, str]]:
        items = res.items.drop_duplicates("item")
        return (dict(zip(items["item"].astype(str), items["gold"].astype(str), strict=True)),
                store.data_read(res.meta)[0])

    first = facts(results[0])
    for res, name in zip(results[1:], names[1:], strict=True):
        items, data = facts(res)
        diffs = []
        if items != first[0]:
            diffs.append(f"items: {len(first[0])} in {names[0]}, {len(items)} in {name} "
                         f"({sum(first[0].get(i) == g for i, g in items.items())} with the "
                         "same id and gold class)")
        for rel in sorted(set(first[1]) & set(data)):
            if first[1][rel] != data[rel]:
                diffs.append(f"data file {rel}: git blob {first[1][rel]} in {names[0]}, "
                             f"{data[rel]} in {name}")
        if diffs:
            raise UsageError(f"{names[0]} and {name} are NCC runs on different items or data: "
                             + "; ".join(diffs) + ". They are never shown or tested together: "
                             "report each on its own, or leave one out with --exclude")

