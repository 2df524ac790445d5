"""The AStitch probe's report: the paraphrase probe's AUROC, the linear probe with its
controls, the paired tests, the rows left out, the figures and an index.

* :func:`auroc_table` (:func:`auroc_markdown`, :func:`auroc_latex`): every paraphrase cell's
  AUROC per split with its 95% cluster bootstrap interval over expressions, and
  :func:`scored_table`: how many rows each split's cells scored and how idiomatic they are;
* :func:`linear_table` (:func:`linear_markdown`, :func:`linear_latex`): per language and
  setting, the controls and every linear cell: C, dev macro-F1, test macro-F1 and accuracy
  with their intervals, the control task's F1 and the selectivity;
* :func:`tests_table` (:func:`tests_markdown`, :func:`tests_latex`): the paired tests, each
  family corrected on its own;
* :func:`mdl_table` (``--mdl`` only): per linear cell the online codelength of its training
  labels and of its controls', the compression with its interval;
* :func:`excluded_table`: the rows left out, counted by language, split and reason, the rows
  named;
* :func:`per_expression`: for each model's best paraphrase view (chosen on dev), each test
  expression's mean contrast score over its idiomatic and over its literal uses (figure 4);
* :func:`write_astitch_report`: all of it, and the figures of :mod:`ncprobe.astitch.figures`,
  into one directory with a ``README.md`` index, as ncprobe's own files, as every probe's
  report (:func:`ncprobe.report_files.write_probe_report`: the ownership manifest, atomic
  writes, refusal to replace a file ncprobe did not write; the same tables give the same
  bytes).

Nothing is computed here but display cells and the per-expression means of figure 4: the
tables come as a mapping of DataFrames (those of
:class:`~ncprobe.astitch.results.AStitchResults`), plus the runs' metadata.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .._version import VERSION
from ..query import check_table
from ..report_files import (
    check_report_args,
    check_report_meta,
    figure_lines,
    meta_lines,
    write_probe_report,
)
from ..significance import STARS_NOTE, corrected_text, families_of, finite, p_text, stars
from . import CONTROLS, IDIOMATIC, LITERAL, SCORES, SETTINGS, SPLITS
from .stats import SUBSETS

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..report_files import Drawn

__all__ = ["EXCLUDED_COLUMNS", "KIND", "LABEL", "auroc_latex", "auroc_markdown", "auroc_table",
           "excluded_table", "feature_text", "linear_latex", "linear_markdown", "linear_table",
           "mdl_table",
           "per_expression", "scored_table", "tests_latex", "tests_markdown", "tests_table",
           "view_text", "write_astitch_report"]

log = logging.getLogger(__name__)

#: The kind of this report, recorded in its manifest: the probe whose results it shows.
KIND = "astitch"
#: This report in words, in messages (the probe's results layout carries it).
LABEL = "AStitch report (token-level idiomaticity)"
#: The columns of the ``excluded`` table.
EXCLUDED_COLUMNS: tuple[str, ...] = ("lang", "split", "row", "expression", "why")
#: The figures of the report, in order: (file stem, figure).
FIGURES = (("fig01_auroc", "auroc"), ("fig02_linear", "linear"),
           ("fig03_selectivity", "selectivity"), ("fig04_expressions", "expressions"))
#: The table files of the report (each as ``.md`` and ``.tex``).
TABLE_FILES = ("table_astitch_auroc", "table_astitch_linear", "table_astitch_tests",
               "table_astitch_excluded")

_AUROC = ("model", "lang", "split", "layer", "level", "context", "score", "subset", "n",
          "n_literal", "n_expressions", "n_unscored", "idiomatic_share", "n_within",
          "auroc_within", "auroc_within_low", "auroc_within_high", "auroc", "ci_low", "ci_high")
_LINEAR = ("model", "lang", "setting", "layer", "level", "context", "probe_kind", "control",
           "C", "dev_macro_f1", "n", "n_expressions", "macro_f1", "f1_low", "f1_high",
           "accuracy", "acc_low", "acc_high", "control_f1", "control_low", "control_high",
           "selectivity", "sel_low", "sel_high", "subset", "auroc", "auroc_low", "auroc_high",
           "within_f1", "within_low", "within_high", "within_sel", "wsel_low", "wsel_high",
           "n_draws")
_TESTS = ("family", "a", "b", "lang", "setting", "n", "n_expressions", "f1_a", "f1_b", "diff",
          "diff_low", "diff_high", "p", "p_bound", "p_corrected", "p_corrected_bound",
          "correction", "family_size")
_SCORES = ("model", "lang", "split", "layer", "level", "context", "row", "expression", "label",
           "contrast")
_NEEDED = ("scores", "auroc", "linear", "tests", "excluded")
_CONTROL_NAMES = {"majority": "majority", "expression": "expression-only",
                  "static": "static", "control task": "control task",
                  "majority_train": "baseline: majority (train)",
                  "majority_test": "baseline: majority (test)",
                  "chance": "baseline: chance (stratified)",
                  "type_oracle": "ceiling: type oracle"}
_INTERVAL = "95% percentile interval of a cluster bootstrap over expressions"


# ---------------------------------------------------------------------------------------------
# helpers


def _check(df: Any, name: str, columns: Sequence[str]) -> pd.DataFrame:
    return check_table(df, name, columns, of="AStitch results", where=f"tables[{name!r}]")


def _text(x: Any) -> str:
    """A key cell as text: blank for a missing value."""
    return "" if x is None or (not isinstance(x, str) and pd.isna(x)) else str(x)


def feature_text(level: Any, context: Any) -> str:
    """What a cell's vectors are, in words: ``nc, context excluded`` (blank without
    them)."""
    level, context = _text(level), _text(context)
    return f"{level}, context {context}" if level and context else level or context


def view_text(row: Mapping) -> str:
    """A cell's layer view and vectors: ``layer 12, nc, context excluded``; ``-`` for a cell
    of neither (the majority and expression-only controls)."""
    parts = [f"layer {_text(row['layer'])}" if _text(row.get("layer")) else "",
             feature_text(row.get("level"), row.get("context"))]
    return ", ".join(p for p in parts if p) or "-"


def _ci(value: Any, lo: Any, hi: Any, *, scale: float = 100.0, digits: int = 1,
        signed: bool = False) -> str:
    """``value [lo, hi]`` scaled (percent by default); blank without a value, no brackets
    without an interval."""
    if not finite(value):
        return ""
    fmt = f"{'+' if signed else ''}.{digits}f"
    text = format(scale * float(value), fmt)
    if finite(lo) and finite(hi):
        text += f" [{format(scale * float(lo), fmt)}, {format(scale * float(hi), fmt)}]"
    return text


def _pct(x: Any) -> str:
    return f"{100 * float(x):.1f}" if finite(x) else ""


def _int(x: Any) -> str:
    return str(int(x)) if finite(x) else ""


def _langs(df: pd.DataFrame) -> list[str]:
    held = list(dict.fromkeys(df["lang"].astype(str)))
    return [x for x in ("en", "pt") if x in held] + [x for x in held if x not in ("en", "pt")]


def _splits(df: pd.DataFrame) -> list[str]:
    held = set(df["split"].astype(str))
    return [s for s in SPLITS if s in held] + sorted(held - set(SPLITS))


def _ranges(rows: Sequence[int]) -> str:
    """Row numbers as ranges: ``1-3, 7, 9-10``."""
    values = sorted({int(r) for r in rows})
    out: list[str] = []
    start = prev = None
    for v in values:
        if prev is not None and v == prev + 1:
            prev = v
            continue
        if start is not None:
            out.append(f"{start}-{prev}" if prev != start else f"{start}")
        start = prev = v
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ", ".join(out)


# ---------------------------------------------------------------------------------------------
# the paraphrase probe


def auroc_table(auroc: pd.DataFrame) -> pd.DataFrame:
    """Every paraphrase cell for display, one row per language, model, layer view, level,
    context, score and subset (languages, then the scores of :data:`~ncprobe.astitch.SCORES`,
    then the subsets of :data:`~ncprobe.astitch.stats.SUBSETS`, each in the table's order),
    two columns per split (in the order of :data:`~ncprobe.astitch.SPLITS`): ``<split>
    within``, the within-expression AUROC (the headline), and ``<split> pooled``, the pooled
    one, each with its 95% interval (``0.623 [0.551, 0.702]``; blank where undefined).
    ``df.attrs["note"]`` says what the cells are.

    Raises:
        UsageError: a table without the columns.
    """
    auroc = _check(auroc, "auroc", _AUROC)
    splits = _splits(auroc)
    keys = ("lang", "model", "layer", "level", "context", "score", "subset")
    cells: dict[tuple[str, ...], dict[str, str]] = {}
    lang_rank = {x: i for i, x in enumerate(_langs(auroc))}
    score_rank = {s: i for i, s in enumerate(SCORES)}
    subset_rank = {s: i for i, s in enumerate(SUBSETS)}
    ordered = auroc.assign(
        _l=auroc["lang"].astype(str).map(lang_rank),
        _s=auroc["score"].astype(str).map(score_rank).fillna(len(SCORES)),
        _u=auroc["subset"].astype(str).map(subset_rank).fillna(len(SUBSETS))
    ).sort_values(["_l", "_s", "_u"], kind="stable")
    columns = [f"{s} {kind}" for s in splits for kind in ("within", "pooled")]
    for r in ordered.to_dict("records"):
        at = tuple(_text(r[k]) for k in keys)
        cell = cells.setdefault(at, {})
        cell[f"{r['split']} within"] = _ci(r["auroc_within"], r["auroc_within_low"],
                                           r["auroc_within_high"], scale=1.0, digits=3)
        cell[f"{r['split']} pooled"] = _ci(r["auroc"], r["ci_low"], r["ci_high"], scale=1.0,
                                           digits=3)
    shown = pd.DataFrame([{**dict(zip(keys, at, strict=True)),
                           **{c: row.get(c, "") for c in columns}}
                          for at, row in cells.items()],
                         columns=[*keys, *columns], dtype=object)
    shown.attrs["note"] = (f"AUROC of literal uses (label 1, positive) against idiomatic ones "
                           f"(label 0), 0.5 = chance, with its {_INTERVAL}; within: the uses "
                           "of each expression compared among themselves, pair-weighted over "
                           "the expressions with both labels (the headline: a type-only reader "
                           "scores 0.5), pooled: every use against every other (mostly ranks "
                           "the expressions, whose shares of literal uses differ); subset: all "
                           "expressions, or the ambiguous ones (both labels in the split); "
                           "scores: contrast = "
                           "cosine to the literal paraphrase's sentence less the best cosine "
                           "to a non-literal one, literal = the cosine to the literal "
                           "paraphrase's sentence; blank: not computed (one label, or no row)")
    return shown


def scored_table(auroc: pd.DataFrame) -> pd.DataFrame:
    """How many rows each split's paraphrase cells scored, for display: per language,
    split, score, subset, level and context (once where the models and layer views agree):
    ``n`` (scored), ``literal`` (of them label 1), ``expressions``, ``both labels`` (the
    expressions the within AUROC compares inside), ``unscored`` (without the paraphrases the
    score needs) and ``idiomatic (%)`` among the scored rows.

    Raises:
        UsageError: a table without the columns.
    """
    auroc = _check(auroc, "auroc", _AUROC)
    cols = ["lang", "split", "score", "subset", "level", "context", "n", "n_literal",
            "n_expressions", "n_within", "n_unscored", "idiomatic_share"]
    df = auroc[cols].copy()
    df["_key"] = [tuple(_text(v) for v in r) for r in df[cols].itertuples(index=False)]
    df = df.drop_duplicates("_key")
    lang_rank = {x: i for i, x in enumerate(_langs(auroc))}
    split_rank = {s: i for i, s in enumerate(_splits(auroc))}
    df = df.assign(_l=df["lang"].astype(str).map(lang_rank),
                   _p=df["split"].astype(str).map(split_rank)).sort_values(
        ["_l", "_p"], kind="stable")
    return pd.DataFrame({
        "lang": df["lang"].astype(str), "split": df["split"].astype(str),
        "score": df["score"].astype(str), "subset": df["subset"].astype(str),
        "vectors": [feature_text(lv, c) for lv, c in zip(df["level"], df["context"],
                                                           strict=True)],
        "n": [_int(x) for x in df["n"]], "literal": [_int(x) for x in df["n_literal"]],
        "expressions": [_int(x) for x in df["n_expressions"]],
        "both labels": [_int(x) for x in df["n_within"]],
        "unscored": [_int(x) for x in df["n_unscored"]],
        "idiomatic (%)": [_pct(x) for x in df["idiomatic_share"]],
    }, dtype=object).reset_index(drop=True)


def auroc_markdown(auroc: pd.DataFrame) -> str:
    """:func:`auroc_table` and :func:`scored_table` as Markdown, with what the cells are."""
    from ..tables import to_markdown

    if _check(auroc, "auroc", _AUROC).empty:
        return "No paraphrase cell in these results.\n"
    df = auroc_table(auroc)
    return (to_markdown(df) + f"\nCells: {df.attrs['note']}.\n\n"
            "## The rows scored\n\nThe contrast needs a literal and a non-literal paraphrase: "
            "the expressions without one are mostly compositional, so the rows it scores lean "
            "idiomatic (compare the share with the literal score's, over all rows with a "
            "literal paraphrase). Unscored: the rows of the cell without a finite score (no "
            "paraphrase of the kind needed, or no vector: a static model that knows none of "
            "the span's words).\n\n" + to_markdown(scored_table(auroc)))


def auroc_latex(auroc: pd.DataFrame, caption: str | None = None) -> str:
    """:func:`auroc_table` and :func:`scored_table` as booktabs tables."""
    from ..tables import to_latex

    if _check(auroc, "auroc", _AUROC).empty:
        return "% No paraphrase cell in these results.\n"
    df = auroc_table(auroc)
    return (to_latex(df, caption or f"AStitch paraphrase probe ({df.attrs['note']})")
            + to_latex(scored_table(auroc), "AStitch paraphrase probe: the rows scored per "
                       "split, and the share of idiomatic uses among them"))


# ---------------------------------------------------------------------------------------------
# the linear probe


def _control_order(linear: pd.DataFrame) -> pd.DataFrame:
    """The rows of one language and setting: the controls first (in the order of
    :data:`~ncprobe.astitch.CONTROLS`), the baselines, then every model's cells, each in the
    table's order."""
    rank = [CONTROLS.index(str(c)) if str(k) == "control" and str(c) in CONTROLS
            else len(CONTROLS) if str(k) == "control"
            else len(CONTROLS) + 1 if str(k) == "baseline" else len(CONTROLS) + 2
            for k, c in zip(linear["probe_kind"], linear["control"], strict=True)]
    return linear.iloc[np.argsort(rank, kind="stable")].reset_index(drop=True)


def linear_table(linear: pd.DataFrame) -> pd.DataFrame:
    """The linear probe's cells for display, per language and setting (in the order of
    :data:`~ncprobe.astitch.SETTINGS`), the controls first: ``lang``, ``setting``, ``probe``
    (the model, or the control), ``view``, ``C``, ``dev F1 (%)``, ``macro-F1 (%)`` and
    ``accuracy (%)`` on test with their intervals, ``control task F1 (%)`` and
    ``selectivity (points)`` with its interval. ``df.attrs["note"]`` says what they are.

    Raises:
        UsageError: a table without the columns.
    """
    linear = _check(linear, "linear", _LINEAR)
    parts = []
    settings = [s for s in SETTINGS if s in set(linear["setting"].astype(str))]
    settings += sorted(set(linear["setting"].astype(str)) - set(settings))
    for lang in _langs(linear):
        for setting in settings:
            for subset in SUBSETS:
                rows = linear[(linear["lang"].astype(str) == lang)
                              & (linear["setting"].astype(str) == setting)
                              & (linear["subset"].astype(str) == subset)]
                if len(rows):
                    parts.append(_control_order(rows))
    df = pd.concat(parts, ignore_index=True) if parts else linear.iloc[:0]
    names = [(_CONTROL_NAMES.get(str(c), str(c)) + (f" ({m})" if _text(m) else ""))
             if str(k) in ("control", "baseline") else str(m)
             for k, c, m in zip(df["probe_kind"], df["control"], df["model"], strict=True)]
    shown = pd.DataFrame({
        "lang": df["lang"].astype(str), "setting": df["setting"].astype(str),
        "subset": df["subset"].astype(str), "probe": names,
        "view": [view_text(r) for r in df.to_dict("records")],
        "C": [f"{float(c):g}" if finite(c) else "" for c in df["C"]],
        "dev F1 (%)": [_pct(x) for x in df["dev_macro_f1"]],
        "n": [_int(x) for x in df["n"]],
        "macro-F1 (%)": [_ci(*v) for v in zip(df["macro_f1"], df["f1_low"], df["f1_high"],
                                              strict=True)],
        "accuracy (%)": [_ci(*v) for v in zip(df["accuracy"], df["acc_low"], df["acc_high"],
                                              strict=True)],
        "control task F1 (%)": [_ci(*v) for v in zip(
            df["control_f1"], df["control_low"], df["control_high"], strict=True)],
        "selectivity (points)": [_ci(*v, signed=True) for v in zip(
            df["selectivity"], df["sel_low"], df["sel_high"], strict=True)],
        "within control F1 (%)": [_ci(*v) for v in zip(
            df["within_f1"], df["within_low"], df["within_high"], strict=True)],
        "selectivity vs within (points)": [_ci(*v, signed=True) for v in zip(
            df["within_sel"], df["wsel_low"], df["wsel_high"], strict=True)],
        "AUROC": [_ci(*v, scale=1.0, digits=3) for v in zip(
            df["auroc"], df["auroc_low"], df["auroc_high"], strict=True)],
    }, dtype=object)
    shown.attrs["note"] = (
        "test uses; percent, 1 decimal, with the " + _INTERVAL + " in brackets; C: the "
        "inverse L2 strength chosen on dev (best dev macro-F1, ties the smallest C); "
        "controls: majority (the training split's most frequent label), expression-only "
        "(each expression's most frequent training label, else the majority), static (the "
        "same probe on a static model's vectors, which cannot see the context), control task "
        "(Hewitt and Liang 2019: the same probe on the same vectors trained on a random label "
        "per expression: the type control), within control (the same probe trained on the "
        "training labels shuffled among each expression's uses, each expression's idiomatic "
        "share kept; the mean macro-F1 over its draws: what the expression type alone "
        "teaches it), both fitted with the probe's C; selectivity: macro-F1 less the type "
        "control's, selectivity vs within: less the within control's, in points; AUROC: of "
        "the probe's decision function, threshold-free; baselines: majority (train), "
        "majority (test, the best constant), chance (stratified at the training shares, the "
        "mean over seeded draws), and the ceiling of a type-only reader, the type oracle "
        "(each expression's majority label in test); subset all: every test use, ambiguous: "
        "the uses of expressions with both labels in test (the same fitted probes)")
    return shown


def linear_markdown(linear: pd.DataFrame) -> str:
    """:func:`linear_table` as Markdown, one table per language, setting and subset."""
    from ..tables import to_markdown

    df = linear_table(linear)
    if df.empty:
        return "No linear-probe cell in these results.\n"
    body = []
    for (lang, setting, subset), part in df.groupby(["lang", "setting", "subset"],
                                                    sort=False):
        train = " + ".join(SETTINGS.get(str(setting), ("?",)))
        body.append(f"## {str(lang).upper()}, {setting} (trains on {train}, C chosen on dev)"
                    + ("" if subset == "all" else f", {subset} expressions")
                    + "\n\n" + to_markdown(part.drop(columns=["lang", "setting", "subset"])
                                           .reset_index(drop=True)))
    return "\n".join(body) + f"\nCells: {df.attrs['note']}.\n"


def linear_latex(linear: pd.DataFrame) -> str:
    """:func:`linear_table` as booktabs tables, one per language, setting and subset."""
    from ..tables import to_latex

    df = linear_table(linear)
    if df.empty:
        return "% No linear-probe cell in these results.\n"
    return "".join(
        to_latex(part.drop(columns=["lang", "setting", "subset"]).reset_index(drop=True),
                 f"AStitch linear probe, {str(lang).upper()}, {setting}, {subset} expressions "
                 f"({df.attrs['note']})")
        for (lang, setting, subset), part in df.groupby(["lang", "setting", "subset"],
                                                        sort=False))


# ---------------------------------------------------------------------------------------------
# the paired tests


def _tests_note(tests: pd.DataFrame) -> str:
    if tests.empty:
        return "no paired tests in these results"
    return ("A and B on the same test uses; A - B: the macro-F1 difference in points with its "
            "95% paired cluster bootstrap interval over expressions; p: two-sided cluster "
            "swap permutation test (A's and B's predictions swapped per expression; exact "
            "where every swap could be counted; '< x': no swap reached the difference, the "
            f"true p lies below); p corrected: {corrected_text(tests)}; sig.: {STARS_NOTE} "
            "(corrected p)")


def tests_table(tests: pd.DataFrame) -> pd.DataFrame:
    """The paired tests for display, one row per test in the table's order: ``A``, ``B``,
    ``lang``, ``setting``, ``n``, ``expressions``, ``A F1 (%)``, ``B F1 (%)``, ``A - B [95%
    CI]`` (points), ``p``, ``p corrected``, ``sig.``. ``df.attrs["note"]`` names the test,
    the correction and each family with its size.

    Raises:
        UsageError: a table without the columns.
    """
    tests = _check(tests, "tests", _TESTS)
    shown = pd.DataFrame({
        "A": tests["a"].astype(str), "B": tests["b"].astype(str),
        "lang": tests["lang"].astype(str), "setting": tests["setting"].astype(str),
        "n": [_int(x) for x in tests["n"]],
        "expressions": [_int(x) for x in tests["n_expressions"]],
        "A F1 (%)": [_pct(x) for x in tests["f1_a"]],
        "B F1 (%)": [_pct(x) for x in tests["f1_b"]],
        "A - B [95% CI]": [_ci(*v, signed=True) for v in zip(
            tests["diff"], tests["diff_low"], tests["diff_high"], strict=True)],
        "p": [p_text(p, b) for p, b in zip(tests["p"], tests["p_bound"], strict=True)],
        "p corrected": [p_text(p, b) for p, b in zip(tests["p_corrected"],
                                                     tests["p_corrected_bound"], strict=True)],
        "sig.": [stars(p, b) for p, b in zip(tests["p_corrected"],
                                             tests["p_corrected_bound"], strict=True)],
    }, dtype=object)
    shown.attrs["note"] = _tests_note(tests)
    return shown


def tests_markdown(tests: pd.DataFrame) -> str:
    """:func:`tests_table` as Markdown with its note; one table per family when there are
    several; a line saying so when there is none."""
    from ..tables import families_markdown

    tests = _check(tests, "tests", _TESTS)
    if tests.empty:
        return "No paired tests in these results.\n"
    return families_markdown(tests, tests_table, _tests_note(tests))


def tests_latex(tests: pd.DataFrame, caption: str | None = None) -> str:
    """:func:`tests_table` as booktabs tables, one per family; a LaTeX comment when there is
    no test."""
    from ..tables import to_latex

    tests = _check(tests, "tests", _TESTS)
    if tests.empty:
        return "% No paired tests in these results.\n"
    title = caption or "AStitch linear probe: paired tests"
    return "".join(to_latex(tests_table(part), f"{title} ({_tests_note(part)})")
                   for _, _, part in families_of(tests))


# ---------------------------------------------------------------------------------------------
# MDL (--mdl)

_MDL_NOTE = ("online code (Voita and Titov 2020) of each cell's training labels given its "
             "vectors, the linear probe with the C chosen on dev, blocks at 0.1% ... 100% of "
             "the rows; bits: the online codelength with its 95% cluster bootstrap interval "
             "over expressions; uniform: log2(2) bits a row; compression = uniform / online "
             "(above 1: the labels are learnable from the vectors); probe: the probe's own "
             "labels, or a control task's (type: one random label per expression, within: the "
             "labels shuffled among each expression's uses, the mean over its draws), or the "
             "static control's probe; uniform blocks: blocks after the first sent uniformly "
             "(a class missing before them)")


def mdl_table(mdl: pd.DataFrame) -> pd.DataFrame:
    """The MDL rows for display, in the table's order: ``lang``, ``setting``, ``model``,
    ``view``, ``probe``, ``n``, ``expressions``, ``C``, ``bits [95% CI]``, ``uniform bits``,
    ``compression [95% CI]``, ``uniform blocks``. ``df.attrs["note"]`` says what they are.

    Raises:
        UsageError: a table without the columns.
    """
    from .linear import MDL_COLUMNS

    mdl = _check(mdl, "mdl", MDL_COLUMNS)
    shown = pd.DataFrame({
        "lang": mdl["lang"].astype(str), "setting": mdl["setting"].astype(str),
        "model": mdl["model"].astype(str),
        "view": [view_text(r) for r in mdl.to_dict("records")],
        "probe": [{"": "probe", "static": "static control"}.get(str(c), f"{c} control")
                  for c in mdl["control"]],
        "n": [_int(x) for x in mdl["n"]],
        "expressions": [_int(x) for x in mdl["n_expressions"]],
        "C": [f"{float(c):g}" if finite(c) else "" for c in mdl["C"]],
        "bits [95% CI]": [_ci(*v, scale=1.0, digits=1) for v in zip(
            mdl["codelength_bits"], mdl["bits_low"], mdl["bits_high"], strict=True)],
        "uniform bits": [f"{float(x):.1f}" for x in mdl["uniform_bits"]],
        "compression [95% CI]": [_ci(*v, scale=1.0, digits=3) for v in zip(
            mdl["compression"], mdl["ci_low"], mdl["ci_high"], strict=True)],
        "uniform blocks": [_int(x) for x in mdl["uniform_blocks"]],
    }, dtype=object)
    shown.attrs["note"] = _MDL_NOTE
    return shown


# ---------------------------------------------------------------------------------------------
# the rows left out


def excluded_table(excluded: pd.DataFrame) -> pd.DataFrame:
    """The rows left out, counted per language, split (in the order of
    :data:`~ncprobe.astitch.SPLITS`) and reason (the most frequent first): ``rows``,
    ``expressions``, and ``which rows`` (the data rows, as ranges: ``1-3, 7``).

    Raises:
        UsageError: a table without the columns.
    """
    excluded = _check(excluded, "excluded", EXCLUDED_COLUMNS)
    out = []
    for lang in _langs(excluded):
        part = excluded[excluded["lang"].astype(str) == lang]
        for split in _splits(part):
            rows = part[part["split"].astype(str) == split]
            counts = rows["why"].astype(str).value_counts(sort=True)
            for why in counts.index:
                these = rows[rows["why"].astype(str) == why]
                out.append({"lang": lang, "split": split, "why": why,
                            "rows": str(len(these)),
                            "expressions": str(these["expression"].nunique()),
                            "which rows": _ranges(these["row"])})
    return pd.DataFrame(out, columns=["lang", "split", "why", "rows", "expressions",
                                      "which rows"], dtype=object)


# ---------------------------------------------------------------------------------------------
# figure 4: the expressions


def _t_interval(values: np.ndarray) -> tuple[float, float]:
    """The 95% t interval of the mean of ``values`` (NaN for fewer than two)."""
    from scipy.stats import t

    n = len(values)
    if n < 2:
        return math.nan, math.nan
    half = float(t.ppf(0.975, n - 1)) * float(np.std(values, ddof=1)) / math.sqrt(n)
    mean = float(np.mean(values))
    return mean - half, mean + half


def per_expression(scores: pd.DataFrame, auroc: pd.DataFrame, *, score: str = "contrast",
                   split: str = "test") -> pd.DataFrame:
    """Which expressions a model's best paraphrase view gets right: per language and model,
    the view (layer, level, context) of the best ``score`` within-expression AUROC on dev (on
    ``split`` where there is no dev cell; the pooled AUROC where no view has a within one),
    all expressions, and on ``split`` each expression's mean score over its idiomatic and
    over its literal uses, with a 95% t interval of each mean.

    Returns:
        One row per language, model, expression and label: ``lang``, ``model``, ``layer``,
        ``level``, ``context``, ``chosen_on`` (the split the view was chosen on),
        ``auroc_within``, ``auroc_within_low``, ``auroc_within_high`` (the view's within-expression
        AUROC on ``split``), ``auroc``, ``auroc_low``, ``auroc_high`` (its pooled AUROC),
        ``expression``,
        ``label``, ``n`` (uses with a score), ``mean``, ``mean_low``, ``mean_high``,
        ``gap`` (the expression's literal mean less its idiomatic mean, NaN without both);
        sorted by language, model and ``gap`` (largest first, NaN last).

    Raises:
        UsageError: tables without the columns.
    """
    scores = _check(scores, "scores", (*_SCORES, score))
    auroc = _check(auroc, "auroc", _AUROC)
    view = ["layer", "level", "context"]
    out = []
    for lang in _langs(auroc):
        for model in dict.fromkeys(auroc.loc[auroc["lang"].astype(str) == lang, "model"]
                                   .astype(str)):
            cells = auroc[(auroc["lang"].astype(str) == lang)
                          & (auroc["model"].astype(str) == model)
                          & (auroc["subset"].astype(str) == "all")
                          & (auroc["score"].astype(str) == score) & auroc["auroc"].notna()]
            on = "dev" if (cells["split"].astype(str) == "dev").any() else split
            pick = cells[cells["split"].astype(str) == on]
            if pick.empty:
                continue
            within = pick["auroc_within"].astype(float)
            best = pick.loc[within.idxmax() if within.notna().any()
                            else pick["auroc"].astype(float).idxmax()]
            at = {k: _text(best[k]) for k in view}
            there = cells[(cells["split"].astype(str) == split)
                          & np.logical_and.reduce([cells[k].astype(str) == at[k]
                                                   for k in view])]
            report = there.iloc[0] if len(there) else None
            rows = scores[(scores["lang"].astype(str) == lang)
                          & (scores["model"].astype(str) == model)
                          & (scores["split"].astype(str) == split)
                          & np.logical_and.reduce([scores[k].astype(str) == at[k]
                                                   for k in view])]
            rows = rows[np.isfinite(rows[score].to_numpy(dtype=float))]
            block = []
            for expression, group in rows.groupby(rows["expression"].astype(str), sort=True):
                for lab in (IDIOMATIC, LITERAL):
                    values = group.loc[group["label"].astype(int) == lab,
                                       score].to_numpy(dtype=float)
                    if not len(values):
                        continue
                    lo, hi = _t_interval(values)
                    block.append({"lang": lang, "model": model, **at, "chosen_on": on,
                                  **{k: float(report[k]) if report is not None else math.nan
                                     for k in ("auroc_within", "auroc_within_low",
                                               "auroc_within_high")},
                                  "auroc": float(report["auroc"]) if report is not None
                                  else math.nan,
                                  "auroc_low": float(report["ci_low"]) if report is not None
                                  else math.nan,
                                  "auroc_high": float(report["ci_high"]) if report is not None
                                  else math.nan,
                                  "expression": expression, "label": lab, "n": len(values),
                                  "mean": float(values.mean()), "mean_low": lo,
                                  "mean_high": hi})
            means = pd.DataFrame(block)
            if means.empty:
                continue
            by = means.pivot(index="expression", columns="label", values="mean")
            gap = (by.get(LITERAL, pd.Series(math.nan, index=by.index))
                   - by.get(IDIOMATIC, pd.Series(math.nan, index=by.index)))
            means["gap"] = means["expression"].map(gap)
            order = gap.sort_values(ascending=False, na_position="last", kind="stable").index
            rank = {e: i for i, e in enumerate(order)}
            means = means.iloc[np.lexsort((means["label"].to_numpy(),
                                           means["expression"].map(rank).to_numpy()))]
            out.append(means)
    columns = ["lang", "model", *view, "chosen_on", "auroc_within", "auroc_within_low",
               "auroc_within_high", "auroc", "auroc_low", "auroc_high", "expression", "label", "n",
               "mean", "mean_low", "mean_high", "gap"]
    return (pd.concat(out, ignore_index=True)[columns] if out
            else pd.DataFrame(columns=columns))


# ---------------------------------------------------------------------------------------------
# the report



def _table_files(tables: Mapping[str, pd.DataFrame]) -> dict[str, bytes]:
    """The tables' files: name -> content."""
    from ..tables import to_latex, to_markdown

    auroc, linear, tests, excluded = (tables["auroc"], tables["linear"], tables["tests"],
                                      tables["excluded"])
    head = "AStitch Task 1 A"
    ex = excluded_table(excluded)
    files = {
        "table_astitch_auroc.md": (
            f"# The paraphrase probe: AUROC per split ({head})\n\n"
            "No training: each use's expression replaced by its literal and its non-literal "
            "paraphrases; does the score tell literal from idiomatic uses? Every layer view, "
            "level and context.\n\n" + auroc_markdown(auroc)),
        "table_astitch_auroc.tex": (f"% The paraphrase probe ({head}); needs "
                                    "\\usepackage{booktabs}\n" + auroc_latex(auroc)),
        "table_astitch_linear.md": (
            f"# The linear probe with its controls ({head})\n\n" + linear_markdown(linear)),
        "table_astitch_linear.tex": (f"% The linear probe ({head}); needs "
                                     "\\usepackage{booktabs}\n" + linear_latex(linear)),
        "table_astitch_tests.md": f"# Paired tests ({head})\n\n" + tests_markdown(tests),
        "table_astitch_tests.tex": (f"% Paired tests ({head}); needs \\usepackage{{booktabs}}\n"
                                    + tests_latex(tests)),
        "table_astitch_excluded.md": (
            f"# The rows left out ({head})\n\n"
            + ("No row left out.\n" if ex.empty else
               f"{len(excluded)} rows, by language, split and reason (every row named by its "
               "data row, 1-based, the header not counted):\n\n" + to_markdown(ex))),
        "table_astitch_excluded.tex": (
            f"% The rows left out ({head}); needs \\usepackage{{booktabs}}\n"
            + ("% No row left out.\n" if ex.empty else to_latex(
                ex.drop(columns=["which rows"]), "AStitch: the rows left out, by language, "
                "split and reason (the rows are named in table_astitch_excluded.md)"))),
    }
    if _has_mdl(tables):  # --mdl only: a run without it writes the files it always did
        shown = mdl_table(tables["mdl"])
        files["table_astitch_mdl.md"] = (f"# MDL of the linear probe and its controls ({head})"
                                         f"\n\n{to_markdown(shown)}\nRows: {_MDL_NOTE}.\n")
        files["table_astitch_mdl.tex"] = (f"% MDL ({head}); needs \\usepackage{{booktabs}}\n"
                                          + to_latex(shown, f"AStitch: MDL ({_MDL_NOTE})"))
    return {name: text.encode("utf-8") for name, text in files.items()}


def _has_mdl(tables: Mapping[str, pd.DataFrame]) -> bool:
    """Whether ``tables`` hold MDL rows (``--mdl``)."""
    mdl = tables.get("mdl")
    return mdl is not None and len(mdl) > 0


def _draw(kind: str, tables: Mapping[str, pd.DataFrame]) -> Figure:
    from .figures import plot_auroc_layers, plot_expressions, plot_linear_layers, plot_selectivity

    if kind == "auroc":
        return plot_auroc_layers(tables["auroc"])
    if kind == "linear":
        return plot_linear_layers(tables["linear"])
    if kind == "selectivity":
        return plot_selectivity(tables["linear"])
    return plot_expressions(per_expression(tables["scores"], tables["auroc"]))


_FIGURE_TEXT = {
    "auroc": "the paraphrase probe's AUROC against the layer view, one panel per language, "
             "model, score and subset (all expressions, the ambiguous ones; rows) and split "
             "(columns), one line per level and context: the within-expression AUROC (the "
             f"headline) with its {_INTERVAL} as a band, the pooled AUROC as a thin faint line "
             "with a cross at each view in the same colour; 0.5 = chance.",
    "linear": "the linear probe's test macro-F1 against the layer view, one panel per "
              "language, model and subset (rows: all expressions, then the ambiguous ones) "
              "and setting (columns), one line per feature with its 95% interval as a band; "
              "the controls, baselines and type oracle as horizontal lines with their "
              "intervals as bands (majority, expression-only, the static model's view of the "
              "best dev macro-F1, the test majority, stratified chance, the type oracle); "
              "the type control's F1 dotted (crosses) and the within-expression control's "
              "dash-dotted (plus signs) in each feature's colour (their uncertainty is that "
              "of the selectivity, figure 3).",
    "selectivity": "selectivity (macro-F1 less a control's, points) against the layer "
                   "view, per language, model, subset and setting, one line per feature "
                   "against the type control (solid) and the within-expression control "
                   "(dash-dot) with its 95% interval (same expression resamples) as a band; "
                   "0 = no better than the control.",
    "expressions": "per language and model, the paraphrase view of the best dev "
                   "within-expression AUROC (contrast score): each test expression's mean "
                   "contrast score over its "
                   "idiomatic and over its literal uses (dots, 95% t intervals of the means as "
                   "bars), the expressions sorted by literal less idiomatic mean: those on top "
                   "the space separates the right way.",
}


def _index(meta: Mapping[str, Any], tables: Mapping[str, pd.DataFrame],
           figures: list[Drawn]) -> str:
    """The index ``README.md``: the runs, every file, the notes, the configuration."""
    auroc, linear = tables["auroc"], tables["linear"]
    langs = ", ".join(_langs(pd.concat([auroc[["lang"]], linear[["lang"]]])))
    lines = ["# ncprobe AStitch report\n",
             f"Made by ncprobe {VERSION} from AStitch runs (AStitchInLanguageModels Task 1 A, "
             "Tayyar Madabushi et al., Findings of EMNLP 2021; GPL-3.0): is the expression "
             f"used idiomatically in this sentence? Languages {langs or '-'}; "
             f"{len(auroc)} paraphrase cells, {len(linear)} linear cells, "
             f"{len(tables['tests'])} paired tests, {len(tables['excluded'])} rows left "
             "out.\n",
             "The paper's own numbers come from fine-tuned multilingual BERT and XLM-R, not "
             "frozen probes: context, not a reproduction.\n", "## Models\n"]
    for m in meta["models"]:
        hub = f"`{m['id']}`" if m.get("id") else "no hub id"
        lines.append(f"- `{m['model']}`: {hub}")
    lines += ["", "## Files\n",
              "- `table_astitch_auroc.md`, `table_astitch_auroc.tex`: the paraphrase probe's "
              "within-expression AUROC (the headline) and pooled AUROC per split, cell and "
              f"subset (all expressions, the ambiguous ones) with its {_INTERVAL}; the rows "
              "scored per split and how idiomatic they are.",
              "- `table_astitch_linear.md`, `table_astitch_linear.tex`: the linear probe per "
              "language, setting and subset (all, ambiguous expressions): the controls, the "
              "baselines and the type oracle, and every cell, macro-F1 and accuracy with "
              "intervals, the type and within-expression controls' F1 and the selectivity "
              "against each, the AUROC of its scores.",
              "- `table_astitch_tests.md`, `table_astitch_tests.tex`: "
              + (f"the {len(tables['tests'])} paired test(s). {_tests_note(tables['tests'])}."
                 if len(tables["tests"]) else "the paired tests: none in these results."),
              "- `table_astitch_excluded.md`, `table_astitch_excluded.tex`: the rows left "
              "out, by language, split and reason (the Markdown names every row)."]
    if _has_mdl(tables):
        lines.append("- `table_astitch_mdl.md`, `table_astitch_mdl.tex`: the MDL of the "
                     "linear probe and its controls (`--mdl`): codelength and compression "
                     "with intervals over expressions.")
    lines += figure_lines(figures, _FIGURE_TEXT.__getitem__)
    n_boot = meta.get("n_boot")
    if isinstance(n_boot, int) and not isinstance(n_boot, bool):
        lines += ["", (f"Intervals: {_INTERVAL}, {n_boot} resamples (the same draws for "
                       "every cell of the same expressions)." if n_boot > 0 else
                       "No bootstrap intervals were computed (n_boot 0).")]
    return "\n".join(lines + meta_lines(meta)) + "\n"


def write_astitch_report(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any],
                         out_dir, *, formats: Sequence[str] = ("png", "pdf"), dpi: int = 200,
                         overwrite: bool = False,
                         progress: Callable[[str], None] | None = None) -> list[Path]:
    """Write the AStitch report into ``out_dir``: the tables, the figures and an index.

    Files: ``fig01_auroc`` (:func:`ncprobe.astitch.figures.plot_auroc_layers`),
    ``fig02_linear`` (:func:`~ncprobe.astitch.figures.plot_linear_layers`),
    ``fig03_selectivity`` (:func:`~ncprobe.astitch.figures.plot_selectivity`),
    ``fig04_expressions`` (:func:`~ncprobe.astitch.figures.plot_expressions` of
    :func:`per_expression`) in every format of ``formats``; ``table_astitch_auroc``,
    ``table_astitch_linear``, ``table_astitch_tests``, ``table_astitch_excluded`` (each
    ``.md`` and ``.tex``) and the index ``README.md``. A figure with nothing to show is left
    out and named in the index.

    The files are ncprobe's own, as those of every probe's report
    (:func:`ncprobe.report_files.write_probe_report`): written atomically, recorded in
    ``.ncprobe-report.json``; a file under one of these names that ncprobe did not write, or
    that was changed since, is never replaced; another probe's
    report there is refused unless ``overwrite``; the same tables give the same bytes.
    Results read although edited (``meta["edited"]``) are said first in every file.

    Args:
        tables: the tables of :class:`~ncprobe.astitch.results.AStitchResults` (``scores``,
            ``auroc``, ``linear``, ``tests``, ``excluded`` needed).
        meta: ``models`` (``[{"model", "id"}]``) needed; ``probe``, ``config``, ``notes``,
            ``n_boot`` and ``edited`` used when given
            (:meth:`AStitchResults.report_meta
            <ncprobe.astitch.results.AStitchResults.report_meta>`).
        out_dir: the report directory (made when needed).
        formats: the figure formats (:data:`ncprobe.drawing.FORMATS`).
        dpi: resolution of the raster figures.
        overwrite: replace another probe's report in ``out_dir``.
        progress: called with one line as each figure and table is written.

    Returns:
        The files written, in order (figures, tables, the index ``README.md`` last).

    Raises:
        UsageError: bad tables or metadata, a bad format or dpi, or an ``out_dir`` refused
            (:func:`ncprobe.owned.check_report_dir`); nothing is written.
        OutputError: ``out_dir`` cannot be written; the message names the file.
    """
    formats = check_report_args(formats, dpi, tables, _NEEDED, what="the AStitch tables",
                                give="give AStitchResults.tables")
    meta = check_report_meta(meta, kind=KIND, probe="AStitch", run="an AStitch run")
    _check(tables["scores"], "scores", _SCORES)
    return write_probe_report(
        out_dir, figures=FIGURES, draw=lambda kind: _draw(kind, tables),
        tables=(*TABLE_FILES, *(("table_astitch_mdl",) if _has_mdl(tables) else ())),
        table_files=_table_files(tables), index=lambda figures: _index(meta, tables, figures),
        formats=formats, dpi=dpi, edited=meta.get("edited") or [],
        kind=KIND, label=LABEL, overwrite=overwrite, progress=progress, logger=log)
