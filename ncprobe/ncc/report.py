"""The NCC probe's report (SemanticQA): the comparison table, the paired tests, the items no
system gets right, the figures and an index.

* :func:`accuracy_table` (and :func:`accuracy_markdown`, :func:`accuracy_latex`): every system
  row's accuracy and macro-F1 in percent with their 95% bootstrap intervals, the accuracy
  over the CV repeats, ``n`` and the F1 of each class, the rows in the order of
  :data:`ncprobe.ncc.KINDS` (baseline, published, ceiling, representation, selected,
  behaviour);
* :func:`tests_table` (:func:`tests_markdown`, :func:`tests_latex`): every paired test, with
  its McNemar p, the corrected p and the family it was corrected in;
* :func:`items_table` (:func:`items_markdown`, :func:`items_latex`): the items every system
  misses and those only the representation gets right, from the results' per-item agreement;
* :func:`write_ncc_report`: all of it, and the figures of :mod:`ncprobe.ncc.figures`, into one
  directory with a ``README.md`` index, as ncprobe's own files, as every probe's report
  (:func:`ncprobe.report_files.write_probe_report`: the ownership manifest, atomic writes,
  refusal to replace a file ncprobe did not write, resuming after an interruption; the same
  tables give the same bytes).

Nothing is computed here: the tables come as a mapping of DataFrames (the tables of
:class:`~ncprobe.ncc.results.NccResults` and its ``agreement``), plus the runs' metadata.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import pandas as pd

from .._version import VERSION
from ..errors import UsageError
from ..query import check_table
from ..report_files import (
    check_report_args,
    check_report_meta,
    figure_lines,
    meta_lines,
    write_probe_report,
)
from ..significance import STARS_NOTE, corrected_text, families_of, finite, p_text, stars
from . import HUMAN_ACCURACY, KINDS, NCC_CLASSES
from .stats import KEYS, MAXT_NAME, label

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..report_files import Drawn

__all__ = ["KIND", "LABEL", "accuracy_latex", "accuracy_markdown", "accuracy_table",
           "confusion_rows", "in_kind_order", "items_latex", "items_markdown", "items_table",
           "mdl_table", "tests_latex", "tests_markdown", "tests_table", "write_ncc_report"]

log = logging.getLogger(__name__)

#: The kind of this report, recorded in its manifest: the probe whose results it shows.
KIND = "ncc"
#: This report in words, in messages (the probe's results layout carries it).
LABEL = "NCC report (SemanticQA)"
#: The figures of the report, in order: (file stem, figure).
FIGURES = (("fig01_accuracy", "accuracy"), ("fig02_layers", "layers"),
           ("fig03_confusion", "confusion"), ("fig04_agreement", "agreement"))
#: The table files of the report (each as ``.md`` and ``.tex``).
TABLE_FILES = ("table_ncc", "table_ncc_tests", "table_ncc_items")
#: The confusion figure shows every system row up to this many; beyond, each system's most
#: accurate row (:func:`confusion_rows`).
CONFUSION_PANELS = 16
#: ... and never more panels than this.
MAX_CONFUSION_PANELS = 24

_ACCURACY = (*KEYS, "n", "accuracy", "ci_low", "ci_high", "macro_f1", "f1_low", "f1_high",
             "repeat_mean", "repeat_min", "repeat_max")
_PER_CLASS = (*KEYS, "cls", "f1")
_TESTS = ("a", "b", "kind_a", "kind_b", "n", "accuracy_a", "accuracy_b", "diff", "diff_low",
          "diff_high", "a_only", "b_only", "p", "p_corrected", "correction", "family",
          "family_size")
_AGREEMENT = ("item", "nc", "gold", "said_right", "said_n", "encoded_right", "encoded_n",
              "missed_by_all", "only_representation")
_NEEDED = ("items", "accuracy", "per_class", "tests", "confusion", "agreement")


# ---------------------------------------------------------------------------------------------
# helpers


def _check(df: Any, name: str, columns: Sequence[str]) -> pd.DataFrame:
    return check_table(df, name, columns, of="NCC results", where=f"tables[{name!r}]")



def _pct(x: Any) -> str:
    """A fraction in percent, 1 decimal (the paper's precision); blank when undefined."""
    return f"{float(x) * 100:.1f}" if finite(x) else ""


def _with_interval(value: Any, lo: Any, hi: Any) -> str:
    text = _pct(value)
    return f"{text} [{_pct(lo)}, {_pct(hi)}]" if text and finite(lo) and finite(hi) else text


def _signed(x: Any) -> str:
    return f"{float(x) * 100:+.1f}" if finite(x) else ""


def in_kind_order(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of an NCC table in the order of :data:`ncprobe.ncc.KINDS` (baseline,
    published, ceiling, representation, selected, behaviour), each kind's rows in their
    order; a fresh index."""
    rank = df["kind"].astype(str).map({k: i for i, k in enumerate(KINDS)}).fillna(len(KINDS))
    return df.iloc[rank.argsort(kind="stable")].reset_index(drop=True)


def _key(row: Mapping) -> tuple[str, ...]:
    return tuple(str(row[k]) for k in KEYS)


# ---------------------------------------------------------------------------------------------
# the comparison table


def accuracy_table(accuracy: pd.DataFrame, per_class: pd.DataFrame | None = None
                   ) -> pd.DataFrame:
    """Every system row for display, in :func:`in_kind_order`: its key columns (``kind``,
    ``system``, ``setting``, ``layer``, ``level``, ``measure``), ``n`` (items scored; blank
    for a row without items), ``accuracy (%)`` and ``macro-F1 (%)`` with their 95% bootstrap
    intervals over items (``66.8 [60.9, 72.6]``; none where not computed), ``CV repeats
    (%)`` (a classifier's accuracy over the cross-validation repeats: mean [least,
    greatest]), and, with ``per_class``, each class's F1 in percent (``F1 NC`` ...).
    ``df.attrs["note"]`` says what the cells are.

    Raises:
        UsageError: a table without the columns.
    """
    accuracy = in_kind_order(_check(accuracy, "accuracy", _ACCURACY))
    f1: dict[tuple[str, ...], dict[str, Any]] = {}
    if per_class is not None:
        for row in _check(per_class, "per_class", _PER_CLASS).to_dict("records"):
            f1.setdefault(_key(row), {})[str(row["cls"])] = row["f1"]
    shown = pd.DataFrame({
        "kind": accuracy["kind"].astype(str),
        **{k: accuracy[k].astype(str) for k in KEYS if k != "kind"},
        "n": [str(int(n)) if finite(n) and int(n) else "" for n in accuracy["n"]],
        "accuracy (%)": [_with_interval(*v) for v in zip(
            accuracy["accuracy"], accuracy["ci_low"], accuracy["ci_high"], strict=True)],
        "macro-F1 (%)": [_with_interval(*v) for v in zip(
            accuracy["macro_f1"], accuracy["f1_low"], accuracy["f1_high"], strict=True)],
        "CV repeats (%)": [_with_interval(*v) for v in zip(
            accuracy["repeat_mean"], accuracy["repeat_min"], accuracy["repeat_max"],
            strict=True)],
    }, dtype=object)
    if per_class is not None:
        keys = [_key(r) for r in accuracy.to_dict("records")]
        for cls in NCC_CLASSES:
            shown[f"F1 {cls}"] = [_pct(f1.get(k, {}).get(cls)) for k in keys]
    has_ci = accuracy["ci_low"].notna().any()
    shown.attrs["note"] = (
        "percent, 1 decimal"
        + ("; [95% percentile bootstrap interval over items]" if has_ci else "")
        + "; CV repeats: the accuracy's mean over the cross-validation repeats [least, "
        "greatest] (classifier rows); n: items scored (a prediction file holds only the items "
        "its system answered; none for a result the paper prints without a file); baseline "
        "rows: each task's rule that reads no item (3-way: the classifiers' three classes; "
        "4-option: the prompted systems' four options), expected accuracy and macro-F1 from "
        f"the expected counts; reference: human {100 * HUMAN_ACCURACY:.1f} (paper, 100 "
        "sampled items)")
    return shown


def accuracy_markdown(accuracy: pd.DataFrame, per_class: pd.DataFrame | None = None) -> str:
    """:func:`accuracy_table` as a Markdown table, with what its cells are below it."""
    from ..tables import to_markdown

    df = accuracy_table(accuracy, per_class)
    return to_markdown(df) + f"\nCells: {df.attrs['note']}.\n"


def accuracy_latex(accuracy: pd.DataFrame, per_class: pd.DataFrame | None = None,
                   caption: str | None = None) -> str:
    """:func:`accuracy_table` as a booktabs table (:func:`ncprobe.tables.to_latex`)."""
    from ..tables import to_latex

    df = accuracy_table(accuracy, per_class)
    return to_latex(df, caption or ("SemanticQA NCC: accuracy and macro-F1 of every system "
                                    f"row ({df.attrs['note']})"))


# ---------------------------------------------------------------------------------------------
# the classifiers' codelengths (--mdl)

#: The report's file of the codelength rows, written where the results hold them.
MDL_FILE = "table_ncc_mdl"
_MDL = (*KEYS, "n", "codelength_bits", "bits_low", "bits_high", "uniform_bits", "compression",
        "compression_low", "compression_high", "uniform_blocks")
_MDL_NOTE = ("online code (Voita & Titov 2020) of the items' gold classes (3 classes) given "
             "each classifier's features, by the standardised logistic regression (on the one "
             "measure for single), blocks at 0.1% ... 100% of the items; bits: the codelength "
             "[95% interval]; uniform: log2 3 bits an item; compression: uniform / online "
             "[95% interval] (above 1: the features compress the classes); intervals: cluster "
             "bootstrap over items, the models fitted once; uniform blocks: blocks after the "
             "first sent uniformly because the items before them lacked a class")


def mdl_table(mdl: pd.DataFrame) -> pd.DataFrame:
    """The codelength rows for display (in their order): ``system row``, ``kind``, ``n``,
    ``bits``, ``uniform``, ``compression``, ``uniform blocks``.

    Args:
        mdl: :attr:`NccResults.mdl <ncprobe.ncc.results.NccResults.mdl>`.
    """
    mdl = _check(mdl, "mdl", _MDL)

    def interval(value: Any, lo: Any, hi: Any, digits: int) -> str:
        text = f"{float(value):.{digits}f}"
        if pd.isna(lo) or pd.isna(hi):
            return text
        return f"{text} [{float(lo):.{digits}f}, {float(hi):.{digits}f}]"

    rows = [{"system row": label(r), "kind": str(r["kind"]), "n": str(int(r["n"])),
             "bits": interval(r["codelength_bits"], r["bits_low"], r["bits_high"], 1),
             "uniform": f"{float(r['uniform_bits']):.1f}",
             "compression": interval(r["compression"], r["compression_low"],
                                     r["compression_high"], 3),
             "uniform blocks": str(int(r["uniform_blocks"]))}
            for r in mdl.to_dict("records")]
    return pd.DataFrame(rows, columns=["system row", "kind", "n", "bits", "uniform",
                                       "compression", "uniform blocks"])


# ---------------------------------------------------------------------------------------------
# the paired tests


def _tests_note(tests: pd.DataFrame) -> str:
    if tests.empty:
        return "no paired tests in these results"
    return ("A and B on the items both hold (n: the items of B's file); A - B in percentage "
            "points with its 95% paired bootstrap interval over items; A only / B only: the "
            "discordant items; p: exact McNemar test (two-sided binomial test of A only "
            "against A only + B only); p corrected: "
            f"{corrected_text(tests).replace('maxt (maxt)', MAXT_NAME + ' (maxt)')}; sig.: "
            f"{STARS_NOTE} (corrected p)")


def tests_table(tests: pd.DataFrame) -> pd.DataFrame:
    """The paired tests for display, one row per test in the table's order: ``A``, ``B``
    (the two rows' labels), ``n``, ``A (%)``, ``B (%)``, ``A - B [95% CI]`` (percentage
    points), ``A only``, ``B only``, ``p``, ``p corrected``, ``sig.``. ``df.attrs["note"]``
    names the test, the correction and each family with its size.

    Raises:
        UsageError: a table without the columns of the ``tests`` table.
    """
    tests = _check(tests, "tests", _TESTS)
    shown = pd.DataFrame({
        "A": tests["a"].astype(str), "B": tests["b"].astype(str),
        "n": [str(int(n)) if finite(n) else "" for n in tests["n"]],
        "A (%)": [_pct(x) for x in tests["accuracy_a"]],
        "B (%)": [_pct(x) for x in tests["accuracy_b"]],
        "A - B [95% CI]": [
            _signed(d) + (f" [{_signed(lo)}, {_signed(hi)}]" if finite(lo) and finite(hi)
                          else "")
            for d, lo, hi in zip(tests["diff"], tests["diff_low"], tests["diff_high"],
                                 strict=True)],
        "A only": [str(int(x)) if finite(x) else "" for x in tests["a_only"]],
        "B only": [str(int(x)) if finite(x) else "" for x in tests["b_only"]],
        "p": [p_text(p) for p in tests["p"]],
        "p corrected": [p_text(p) for p in tests["p_corrected"]],
        "sig.": [stars(p) for p in tests["p_corrected"]],
    }, dtype=object)
    shown.attrs["note"] = _tests_note(tests)
    return shown


def tests_markdown(tests: pd.DataFrame) -> str:
    """:func:`tests_table` as Markdown with its note; one table per family (under a line
    naming it and its size) when there are several; a line saying so when there is none."""
    from ..tables import families_markdown

    tests = _check(tests, "tests", _TESTS)
    if tests.empty:
        return "No paired tests in these results.\n"
    return families_markdown(tests, tests_table, _tests_note(tests))


def tests_latex(tests: pd.DataFrame, caption: str | None = None) -> str:
    """:func:`tests_table` as booktabs tables, one per family, each caption naming the test,
    the correction and the family; a LaTeX comment when there is no test."""
    from ..tables import to_latex

    tests = _check(tests, "tests", _TESTS)
    if tests.empty:
        return "% No paired tests in these results.\n"
    title = caption or "SemanticQA NCC: paired tests, classifiers against systems"
    return "\n".join(to_latex(tests_table(part), f"{title} ({_tests_note(part)})")
                     for _, _, part in families_of(tests))


# ---------------------------------------------------------------------------------------------
# the items


def items_table(agreement: pd.DataFrame) -> pd.DataFrame:
    """The items every system misses and those only the representation gets right, for
    display (in the agreement's order): ``item``, ``compound``, ``gold``, ``systems right``
    (published files and local models' answers right, of those holding the item),
    ``representation right`` (of the representation rows counted), ``which``.

    Raises:
        UsageError: a table without the columns of
            :meth:`NccResults.agreement <ncprobe.ncc.results.NccResults.agreement>`.
    """
    agreement = _check(agreement, "agreement", _AGREEMENT)
    rows = agreement[agreement["missed_by_all"].astype(bool)
                     | agreement["only_representation"].astype(bool)]
    return pd.DataFrame({
        "item": rows["item"].astype(str), "compound": rows["nc"].astype(str),
        "gold": rows["gold"].astype(str),
        "systems right": [f"{int(r)}/{int(n)}" for r, n in zip(
            rows["said_right"], rows["said_n"], strict=True)],
        "representation right": [f"{int(r)}/{int(n)}" for r, n in zip(
            rows["encoded_right"], rows["encoded_n"], strict=True)],
        "which": ["missed by every system" if bool(m) else "right only by the representation"
                  for m in rows["missed_by_all"]],
    }, dtype=object).reset_index(drop=True)


_ITEMS_NOTE = ("systems: every published prediction file and local model's answers; the "
               "representation: each model's most accurate representation classifier (the "
               "gold ceiling is not counted)")


def items_markdown(agreement: pd.DataFrame) -> str:
    """:func:`items_table` as Markdown, with who counts as a system (a line when none)."""
    from ..tables import to_markdown

    df = items_table(agreement)
    if df.empty:
        return ("No item is missed by every system or right only by the representation "
                f"({_ITEMS_NOTE}).\n")
    return to_markdown(df) + f"\n{_ITEMS_NOTE[:1].upper()}{_ITEMS_NOTE[1:]}.\n"


def items_latex(agreement: pd.DataFrame, caption: str | None = None) -> str:
    """:func:`items_table` as a booktabs table; a LaTeX comment when it is empty."""
    from ..tables import to_latex

    df = items_table(agreement)
    if df.empty:
        return "% No item is missed by every system or right only by the representation.\n"
    return to_latex(df, caption or ("SemanticQA NCC: the items every system misses and those "
                                    f"only the representation gets right ({_ITEMS_NOTE})"))


# ---------------------------------------------------------------------------------------------
# the report


def confusion_rows(accuracy: pd.DataFrame, limit: int = CONFUSION_PANELS
                   ) -> list[tuple[str, ...]]:
    """The system rows of the confusion figure, as key tuples, in :func:`in_kind_order`:
    every row when there are at most ``limit``; else each system's most accurate row (a
    published system's best setting, a model's best classifier and layer view; ties: the
    first in the table), at most :data:`MAX_CONFUSION_PANELS`."""
    ordered = in_kind_order(accuracy)
    # the rows that answered items: not the baselines, nor the paper's rows without a file
    ordered = ordered[(ordered["kind"].astype(str) != "baseline")
                      & (ordered["n"].astype(int) > 0)].reset_index(drop=True)
    if len(ordered) <= limit:
        return [_key(r) for r in ordered.to_dict("records")]
    best: dict[tuple[str, str], dict] = {}
    for row in ordered.to_dict("records"):
        at = (str(row["kind"]), str(row["system"]))
        if at not in best or (finite(row["accuracy"]) and (
                not finite(best[at]["accuracy"]) or row["accuracy"] > best[at]["accuracy"])):
            best[at] = row
    return [_key(r) for r in best.values()][:MAX_CONFUSION_PANELS]



def _check_meta(meta: Any) -> Mapping[str, Any]:
    meta = check_report_meta(meta, kind=KIND, probe="NCC", run="an NCC run")
    if not isinstance(meta.get("agreement"), Mapping):
        raise UsageError("meta['agreement']: give the agreement's systems, each column's kind "
                         "(NccResults.agreement_systems())")
    return meta


def _table_files(tables: Mapping[str, pd.DataFrame], n_items: int) -> dict[str, bytes]:
    """The tables' files: name -> content."""
    accuracy, per_class = tables["accuracy"], tables["per_class"]
    tests, agreement = tables["tests"], tables["agreement"]
    head = f"SemanticQA NCC, {n_items} items"
    md = (f"# Accuracy of every system row ({head})\n\n"
          "Every published prediction file, the gold ceiling, each model's representation "
          "classifiers and each local model's own answers: accuracy and macro-F1 in percent, "
          "with their 95% bootstrap intervals over items, and the F1 of each class.\n\n"
          + accuracy_markdown(accuracy, per_class))
    tex = (f"% Accuracy of every system row ({head}); needs \\usepackage{{booktabs}}\n"
           + accuracy_latex(accuracy, per_class))
    tests_md = f"# Paired tests ({head})\n\n" + tests_markdown(tests)
    tests_tex = (f"% Paired tests ({head}); needs \\usepackage{{booktabs}}\n"
                 + tests_latex(tests))
    items_md = (f"# Items every system misses, or only the representation gets right "
                f"({head})\n\n" + items_markdown(agreement))
    items_tex = (f"% Items every system misses, or only the representation gets right "
                 f"({head}); needs \\usepackage{{booktabs}}\n" + items_latex(agreement))
    files = {"table_ncc.md": md.encode("utf-8"), "table_ncc.tex": tex.encode("utf-8"),
             "table_ncc_tests.md": tests_md.encode("utf-8"),
             "table_ncc_tests.tex": tests_tex.encode("utf-8"),
             "table_ncc_items.md": items_md.encode("utf-8"),
             "table_ncc_items.tex": items_tex.encode("utf-8")}
    if "mdl" in tables:
        from ..tables import to_latex, to_markdown

        df = mdl_table(tables["mdl"])
        files[f"{MDL_FILE}.md"] = (f"# Minimum description length of the classifiers ({head})"
                                   f"\n\n{to_markdown(df)}\n{_MDL_NOTE[:1].upper()}"
                                   f"{_MDL_NOTE[1:]}.\n").encode("utf-8")
        files[f"{MDL_FILE}.tex"] = (f"% Minimum description length of the classifiers ({head}); "
                                    "needs \\usepackage{booktabs}\n"
                                    + to_latex(df, f"SemanticQA NCC: {_MDL_NOTE}")
                                    ).encode("utf-8")
    return files


def _draw(kind: str, tables: Mapping[str, pd.DataFrame], kinds: Mapping[str, str]) -> Figure:
    from .figures import plot_accuracy, plot_agreement, plot_confusion, plot_layers

    if kind == "accuracy":
        return plot_accuracy(tables["accuracy"])
    if kind == "layers":
        return plot_layers(tables["accuracy"])
    if kind == "confusion":
        return plot_confusion(tables["confusion"], tables["accuracy"],
                              confusion_rows(tables["accuracy"]))
    return plot_agreement(tables["agreement"], kinds)


_FIGURE_TEXT = {
    "accuracy": "accuracy of every system row with its 95% bootstrap interval over items: "
                "the published systems by setting, the local models' answers, the gold "
                "ceiling, each model's representation classifiers (a layered model's "
                "all-measure classifier per layer view and level) and its nested selection "
                "(a diamond); lines: each panel's own task's baselines (3-way for the "
                "classifiers: uniform, stratified, majority; 4-option for the prompted "
                "systems: four options, majority) and human {human}% (paper).",
    "layers": "each layered model's representation classifiers against the layer view, one "
              "panel per model and level: the all-measure classifier with its 95% interval "
              "as a band, each single measure a line; lines: the 3-way baselines.",
    "confusion": "confusion matrices, gold class against answer, one panel per {panels}.",
    "agreement": "items x systems, right or wrong, the items sorted by how many systems get "
                 "them right (fewest first); the items every system misses and those only "
                 "the representation gets right named beside ({systems}).",
}


def _figure_text(kind: str, n_rows: int, n_shown: int) -> str:
    panels = ("system row" if n_shown == n_rows else
              f"system: its most accurate row ({n_shown} of the {n_rows} rows; the others in "
              "the tables)")
    return _FIGURE_TEXT[kind].format(
        human=f"{100 * HUMAN_ACCURACY:.1f}", panels=panels, systems=_ITEMS_NOTE)


def _baseline_text(accuracy: pd.DataFrame) -> list[str]:
    """Each baseline row in words: ``uniform 3-way 33.3%``."""
    rows = accuracy[accuracy["kind"].astype(str) == "baseline"]
    return [f"{r['system']} {r['setting']} {_pct(r['accuracy'])}% (macro-F1 "
            f"{_pct(r['macro_f1'])}%)" for r in rows.to_dict("records")] or ["none recorded"]


def _index(meta: Mapping[str, Any], tables: Mapping[str, pd.DataFrame], n_items: int,
           figures: list[Drawn]) -> str:
    """The index ``README.md``: the runs, every file, the reference lines, the notes."""
    accuracy = tables["accuracy"]
    kinds = accuracy["kind"].astype(str)
    counts = ", ".join(f"{int((kinds == k).sum())} {k}" for k in KINDS if (kinds == k).any())
    lines = ["# ncprobe NCC report\n",
             f"Made by ncprobe {VERSION} from NCC runs on SemanticQA (Liu et al., ACL 2026; "
             f"MIT): {n_items} items, {len(accuracy)} system rows ({counts}).\n",
             "## Models\n"]
    for m in meta["models"]:
        hub = f"`{m['id']}`" if m.get("id") else "no hub id"
        said = "; also answers the items (behaviour)" if m.get("behaviour") else ""
        lines.append(f"- `{m['model']}`: {hub}{said}")
    shown = len(confusion_rows(accuracy))
    lines += ["", "## Files\n",
              "- `table_ncc.md`, `table_ncc.tex`: the comparison table, every system row "
              "(published, ceiling, representation, behaviour): accuracy and macro-F1 in "
              "percent with 95% bootstrap intervals over items, n, and each class's F1.",
              "- `table_ncc_tests.md`, `table_ncc_tests.tex`: "
              + (f"the {len(tables['tests'])} paired test(s), every classifier against every "
                 f"system on the same items. {_tests_note(tables['tests'])}."
                 if len(tables["tests"]) else "the paired tests: none in these results."),
              "- `table_ncc_items.md`, `table_ncc_items.tex`: the items every system misses "
              "and those only the representation gets right."]
    if "mdl" in tables:
        lines.append(f"- `{MDL_FILE}.md`, `{MDL_FILE}.tex`: the minimum description length of "
                     f"the {len(tables['mdl'])} representation and ceiling classifier(s) "
                     "(--mdl): codelength in bits and compression against the uniform code, "
                     "with 95% intervals over items.")
    lines += figure_lines(figures, lambda kind: _figure_text(kind, len(accuracy), shown))
    lines += ["", "## Reference accuracies and what is compared\n",
              f"Human {100 * HUMAN_ACCURACY:.1f}% (the paper: 3 annotators on 100 sampled "
              "items; no item-level file, so no test against it). Chance and the majority "
              "class are the baseline rows of the comparison table, each task's own: "
              + "; ".join(_baseline_text(accuracy)) + "."]
    for line in meta.get("reading", []):
        lines += ["", str(line)]
    n_boot = meta.get("n_boot")
    if isinstance(n_boot, int) and not isinstance(n_boot, bool):
        lines += ["", (f"Intervals: 95% percentile bootstrap over items, {n_boot} resamples."
                       if n_boot > 0 else "No bootstrap intervals were computed (n_boot 0).")]
    return "\n".join(lines + meta_lines(meta)) + "\n"


def write_ncc_report(tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], out_dir, *,
                     formats: Sequence[str] = ("png", "pdf"), dpi: int = 200,
                     overwrite: bool = False,
                     progress: Callable[[str], None] | None = None) -> list[Path]:
    """Write the NCC report into ``out_dir``: the comparison table, the tests, the items, the
    figures and an index.

    Files: ``fig01_accuracy`` (:func:`ncprobe.ncc.figures.plot_accuracy`), ``fig02_layers``
    (:func:`~ncprobe.ncc.figures.plot_layers`: drawn when a model has several layer views),
    ``fig03_confusion`` (:func:`~ncprobe.ncc.figures.plot_confusion` of
    :func:`confusion_rows`), ``fig04_agreement`` (:func:`~ncprobe.ncc.figures.plot_agreement`)
    in every format of ``formats``; ``table_ncc.md`` / ``.tex`` (:func:`accuracy_table`),
    ``table_ncc_tests.md`` / ``.tex`` (:func:`tests_table`), ``table_ncc_items.md`` /
    ``.tex`` (:func:`items_table`), and the index ``README.md``. A figure with nothing to
    show is left out and named in the index.

    The files are ncprobe's own, as those of every probe's report
    (:func:`ncprobe.report_files.write_probe_report`): written atomically, recorded in
    ``.ncprobe-report.json``; a file under one of these names that ncprobe did not write, or
    that was changed since, is never replaced (refused before anything is written); another
    probe's report there is refused unless ``overwrite``; the same tables give the same
    bytes. Results read although edited (``meta["edited"]``) are said first in the index and
    in every table file.

    Args:
        tables: the tables of :class:`~ncprobe.ncc.results.NccResults` (``items``,
            ``accuracy``, ``per_class``, ``tests``, ``confusion``) and its ``agreement``.
        meta: ``models`` (``[{"model", "id", "behaviour"}]``) and ``agreement`` (each
            agreement column's kind) needed; ``probe``, ``config``, ``notes``, ``n_boot``
            and ``edited`` used when given (:meth:`NccResults.report_meta
            <ncprobe.ncc.results.NccResults.report_meta>`).
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
    formats = check_report_args(formats, dpi, tables, _NEEDED, what="the NCC tables",
                                give="give NccResults.tables and its agreement()")
    meta = _check_meta(meta)
    _check(tables["items"], "items", (*KEYS, "item"))
    _check(tables["confusion"], "confusion", (*KEYS, "gold", "predicted", "count"))
    kinds = {str(k): str(v) for k, v in meta["agreement"].items()}
    n_items = int(tables["items"]["item"].nunique())
    return write_probe_report(
        out_dir, figures=FIGURES, draw=lambda kind: _draw(kind, tables, kinds),
        tables=TABLE_FILES + ((MDL_FILE,) if "mdl" in tables else ()),
        table_files=_table_files(tables, n_items),
        index=lambda figures: _index(meta, tables, n_items, figures), formats=formats,
        dpi=dpi, edited=meta.get("edited") or [], kind=KIND,
        label=LABEL, overwrite=overwrite, progress=progress, logger=log)
