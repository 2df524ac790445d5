"""The tables of the study (method §4), as DataFrames, Markdown and LaTeX.

Every builder takes a :class:`~ncprobe.ncimp.results.Results` (one or many models, one or
both languages) and returns a DataFrame of display strings, indexed by model,
level and condition (``EN-Nat``, ``EN-Neut``, ``PT-Nat``, ``PT-Neut``), with
one column per measure. Correlation cells show Spearman's rho with two
decimals and its 95% bootstrap interval, ``0.59 [0.50, 0.66]`` (``intervals=False``:
rho alone, the study's compact form), where p <= 0.05 after the correction ``correct=``
(``holm`` by default, ``fdr_bh``, or ``none`` for the study's uncorrected marks) over the
p-values of the table, and ``-`` otherwise; :func:`caption` adds what the "-" means to a
table's caption. Empty cells (a measure a run does not have) are blank. :data:`TABLES`
maps the table names (:data:`ncprobe.schema.PAPER_TABLES`) to the builders, in the order of
method §4;
:func:`to_markdown` and :func:`to_latex` render any of them (:func:`families_markdown`: a
probe's paired tests, family by family). Column headers, level and
condition labels are those of :mod:`ncprobe.schema`.

Nothing here computes a statistic beyond the correction of a table's own family of
p-values: the per-class tests are :func:`ncprobe.ncimp.inference.class_tests`
(:func:`class_tests_table` is their display form), and the corrections' names,
:func:`~ncprobe.significance.stars`, :func:`~ncprobe.significance.p_text` and the footnotes
are :mod:`ncprobe.significance`'s.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
import pandas as pd

from ..schema import (
    AFFINITIES,
    ALL_CLASSES,
    DISPLAY_MEASURES,
    DISPLAY_SUBSTITUTIONS,
    GOLD,
    LEVEL_LABELS,
    MEASURE_LABELS,
    PAPER_TABLES,
    RATIO,
    SCALED,
    TABLE_CAPTIONS,
    Correction,
    condition_label,
)
from ..significance import ALPHA, CORRECTION_NAMES, STARS_NOTE, correction_note, p_text, stars
from ..stats import correct as correct_p
from .inference import CLASS_PAIRS, CLASS_TEST_KEYS, class_tests, condition_ranks
from .selection import model_order, select
from .view import Spec

if TYPE_CHECKING:  # pragma: no cover
    from .runs import ResultsData as Results

#: The example NCs of the study's per-NC table.
EXAMPLE_NCS = ("grey matter", "eager beaver", "Dutch courage", "eternal rest", "economic aid",
               "research lab")
INDEX = ["model", "level", "condition"]


def _rho_cell(rho: float, p: float, lo: float = math.nan, hi: float = math.nan,
              intervals: bool = False) -> str:
    """rho (two decimals) where ``p`` <= ALPHA, with ``[lo, hi]`` when ``intervals`` and the
    run has the interval (``n_boot`` 0 gives none); ``-`` otherwise; blank without a rho."""
    if rho is None or p is None or math.isnan(rho) or math.isnan(p):
        return ""
    if p > ALPHA:
        return "-"
    if intervals and not (lo is None or hi is None or math.isnan(lo) or math.isnan(hi)):
        return f"{rho:.2f} [{lo:.2f}, {hi:.2f}]"
    return f"{rho:.2f}"


def _rho_cells(rows: pd.DataFrame, *, intervals: bool, correct: Correction
               ) -> tuple[Callable[[pd.Series], str], pd.DataFrame, int]:
    """The cell of each correlation row, the rows with their corrected ``p_corrected``, and
    the size of the family (the rows with a p-value: every cell the table shows)."""
    p = rows["p"].to_numpy(dtype=float) if len(rows) else np.zeros(0)
    rows = rows.assign(p_corrected=correct_p(p, correct))
    has_ci = "ci_low" in rows.columns and "ci_high" in rows.columns

    def cell(r: pd.Series) -> str:
        lo, hi = (r["ci_low"], r["ci_high"]) if has_ci else (math.nan, math.nan)
        return _rho_cell(r["rho"], r["p_corrected"], lo, hi, intervals)

    return cell, rows, int(np.count_nonzero(~np.isnan(p)))


def _noted(table: pd.DataFrame, correct: Correction, n: int, intervals: bool) -> pd.DataFrame:
    """Record in ``table.attrs`` what its "-" and its cells mean (:func:`caption` uses it)."""
    table.attrs["correct"] = correct
    table.attrs["family"] = n
    note = correction_note(correct, n)
    if intervals:
        note += "; significant cells: rho [95% bootstrap interval]"
    table.attrs["note"] = note
    return table


def caption(name: str, table: pd.DataFrame, where: str | None = None) -> str:
    """The caption of table ``name`` (:data:`CAPTIONS`) with the footnote of its
    correction and cell format (``table.attrs["note"]``, set by the correlation tables);
    ``where`` (``"NC level, raw space"``), when given, is said before the footnote."""
    text = CAPTIONS[name] + (f"; {where}" if where else "")
    note = table.attrs.get("note")
    if not note:
        return text
    return text.replace(f" (- : p > {ALPHA})", "") + f" ({note})"


def _layout(rows: pd.DataFrame, cell: Callable[[pd.Series], str], measures: Sequence[str],
            models: list[str]) -> pd.DataFrame:
    """One row per (model, level, condition), one column per measure, in the study's order."""
    if rows.empty:
        return pd.DataFrame(columns=[MEASURE_LABELS.get(m, m) for m in measures],
                            index=pd.MultiIndex.from_tuples([], names=INDEX))
    rows = rows.assign(cell=[cell(r) for _, r in rows.iterrows()],
                       level=rows["level"].map(LEVEL_LABELS).fillna(rows["level"]))
    wide = rows.pivot_table(index=INDEX, columns="measure", values="cell", aggfunc="first",
                            observed=True)
    wide = wide.reindex(columns=[m for m in measures if m in wide.columns])
    order = {m: i for i, m in enumerate(models)}
    lv = {name: i for i, name in enumerate(LEVEL_LABELS.values())}
    wide = wide.sort_index(key=lambda s: s.map(order) if s.name == "model" else (
        s.map(lv) if s.name == "level" else s.astype(str).map(condition_ranks(s))))
    wide.columns = [MEASURE_LABELS.get(m, m) for m in wide.columns]
    return wide.fillna("")


def correlations(results: Results, measures: Sequence[str], *, level=None, analysis: str = "nc",
                 space: str = "raw", contexts=None, intervals: bool = True,
                 correct: Correction = "holm") -> pd.DataFrame:
    """Spearman rho of per-NC measures with the gold score; "-" where the corrected p > 0.05.

    Args:
        intervals: significant cells read ``rho [ci_low, ci_high]`` (the 95% bootstrap
            interval of the ``correlations`` table; rho alone where the run has none,
            ``n_boot`` 0); ``False``: rho alone (the study's compact form).
        correct: ``holm`` (default), ``fdr_bh`` or ``none``: the correction applied to the
            family of p-values this table shows (every cell with a p-value); ``none`` gives
            the study's uncorrected marks. ``df.attrs["note"]`` says which, and how many.
    """
    c = select(results.correlations, space=space, level=level, contexts=contexts,
               measures=measures)
    c = c[c["analysis"] == analysis]
    cell, c, n = _rho_cells(c, intervals=intervals, correct=correct)
    return _noted(_layout(c, cell, measures, model_order(results.correlations)), correct, n,
                  intervals)


def sent_correlations(results: Results, **kw) -> pd.DataFrame:
    """Spearman of the probes' sentence-level similarities with Comp."""
    return correlations(results, DISPLAY_SUBSTITUTIONS, level="sent", **kw)


def nc_correlations(results: Results, **kw) -> pd.DataFrame:
    """Spearman of the probes' NC-level similarities with Comp."""
    return correlations(results, DISPLAY_SUBSTITUTIONS, level="nc", **kw)


def length_correlations(results: Results, *, space: str = "raw", intervals: bool = True,
                        correct: Correction = "holm") -> pd.DataFrame:
    """Spearman between naturalistic sentence length (words) and sentence-level similarity.

    ``correct`` as in :func:`correlations`; the ``lexical_overlap`` table holds no bootstrap
    interval, so ``intervals`` changes nothing here (it is accepted like the other tables').
    """
    lo = select(results.lexical_overlap, space=space, measures=DISPLAY_SUBSTITUTIONS)
    lo = lo.assign(level="sent", condition=[condition_label(lg, "nat") for lg in lo["lang"]])
    cell, lo, n = _rho_cells(lo, intervals=intervals, correct=correct)
    return _noted(_layout(lo, cell, DISPLAY_SUBSTITUTIONS, model_order(results.lexical_overlap)),
                  correct, n, False)


def affinity_correlations(results: Results, **kw) -> pd.DataFrame:
    """Spearman of the Affinities with Comp (both levels)."""
    return correlations(results, AFFINITIES, **kw)


def scaled_correlations(results: Results, **kw) -> pd.DataFrame:
    """Spearman of the Scaled Similarities and their ratio with Comp (both levels)."""
    return correlations(results, SCALED + (RATIO,), **kw)


def filtered_correlations(results: Results, **kw) -> pd.DataFrame:
    """The correlations without the NCs whose gold synonym shares a word with the NC."""
    return correlations(results, DISPLAY_SUBSTITUTIONS + AFFINITIES + SCALED,
                        analysis="overlap-filtered", **kw)


def means(results: Results, *, space: str = "raw", contexts=None) -> pd.DataFrame:
    """Mean ± sd over NCs of every probe, Affinity and Scaled Similarity."""
    wanted = DISPLAY_MEASURES
    d = select(results.distributions, space=space, contexts=contexts, measures=wanted)
    d = d[d["cls"] == ALL_CLASSES]
    return _layout(d, lambda r: "" if math.isnan(r["mean"]) else
                   f"{r['mean']:.3f} ± {r['sd']:.3f}", wanted,
                   model_order(results.distributions))


def standardisation(results: Results, *, contexts=None) -> pd.DataFrame:
    """Spearman between the P_Syn cosines before and after z-scoring (rogue dimensions)."""
    s = select(results.standardisation, space=None, contexts=contexts)
    s = s.assign(measure="syn")
    out = _layout(s, lambda r: "" if math.isnan(r["rho"]) else f"{r['rho']:.2f}", ["syn"],
                  model_order(results.standardisation))
    syn = MEASURE_LABELS["syn"]
    return out.rename(columns={syn: f"{syn} raw vs standardised"})


def examples(results: Results, ncs: Sequence[str] | None = None, *, level: str = "nc",
             space: str = "raw", contexts=None) -> pd.DataFrame:
    """Every measure of chosen NCs (default: the six of the study), per model and condition.

    NCs are matched case-insensitively; those not in the results are listed in
    ``df.attrs["missing"]``.
    """
    wanted = [n.lower() for n in (ncs or EXAMPLE_NCS)]
    measures = DISPLAY_MEASURES
    m = select(results.measures, space=space, level=level, contexts=contexts,
               measures=measures)
    m = m[m["nc"].str.lower().isin(wanted)]
    found = set(m["nc"].str.lower())
    if m.empty:
        out = pd.DataFrame()
    else:
        m = m.assign(cell=[("" if math.isnan(v) else f"{v:.2f}") for v in m["value"]],
                     rank=m["nc"].str.lower().map({n: i for i, n in enumerate(wanted)}))
        # the gold score as printed, in the column header "Comp" (as the study prints it)
        m = m.assign(**{GOLD: [("" if c is None or math.isnan(c) else f"{c:.2f}")
                               for c in m[GOLD]]})
        wide = m.pivot_table(index=["rank", "nc", "cls", GOLD, "model", "condition"],
                             columns="measure", values="cell", aggfunc="first", observed=True)
        wide = wide.reindex(columns=[x for x in measures if x in wide.columns])
        wide.columns = [MEASURE_LABELS.get(x, x) for x in wide.columns]
        out = wide.reset_index(level="rank", drop=True).rename_axis(
            index={"cls": "class", GOLD: "Comp"}).fillna("")
    out.attrs["missing"] = [n for n in (ncs or EXAMPLE_NCS) if n.lower() not in found]
    return out


def layers(results: Results, *, level: str = "nc", space: str = "raw", measures=None, contexts=None,
           intervals: bool = True, correct: Correction = "holm") -> pd.DataFrame:
    """Layer-wise correlations: Spearman rho of each measure with the gold score per layer view.

    Rows are (model, condition, measure) for the models (and languages) with two or more
    single-layer views (see :func:`ncprobe.ncimp.selection.layerwise_views`); columns are their
    views, the single layers in layer order (``"0"`` = embeddings) and then the views that
    average several layers (``"3+4+5+6"``) as the results hold them. Cells as in
    :func:`correlations` (``intervals``, ``correct``: the family is every cell of this table);
    blank where a model lacks a view. Measures: default
    :data:`ncprobe.schema.DISPLAY_MEASURES`. Empty when no model has layer-wise views.
    """
    from .selection import layerwise_measures, layerwise_views

    shown = layerwise_measures(level, space, measures)
    runs = layerwise_views(results.correlations, space=space, level=level, contexts=contexts)
    index = ["model", "condition", "measure"]
    views = list(dict.fromkeys(v for vs in runs.values() for v in vs if v.isdecimal()))
    views = sorted(views, key=int) + list(dict.fromkeys(
        v for vs in runs.values() for v in vs if not v.isdecimal()))
    parts = [select(results.correlations, space=space, level=level, contexts=contexts,
                    measures=shown, layers=v) for v in views]
    rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if rows.empty:
        out = pd.DataFrame(columns=views, index=pd.MultiIndex.from_tuples([], names=index))
        return _noted(out, correct, 0, intervals)
    keep = np.array([(m, lg) in runs for m, lg in zip(rows["model"], rows["lang"], strict=True)],
                    dtype=bool)
    rows = rows[keep & (rows["analysis"] == "nc").to_numpy()]
    cell, rows, n = _rho_cells(rows, intervals=intervals, correct=correct)
    rows = rows.assign(cell=[cell(r) for _, r in rows.iterrows()],
                       condition=rows["condition"].astype(str))
    wide = rows.pivot_table(index=index, columns="layers", values="cell", aggfunc="first")
    wide = wide.reindex(columns=[v for v in views if v in wide.columns])
    order = {m: i for i, m in enumerate(model_order(results.correlations))}
    rank = {m: i for i, m in enumerate(shown)}
    wide = wide.sort_index(key=lambda s: s.map(order) if s.name == "model" else (
        s.map(rank) if s.name == "measure" else s.map(condition_ranks(s))))
    wide = wide.rename(index=lambda m: MEASURE_LABELS.get(m, m), level="measure")
    wide.columns = list(wide.columns)
    return _noted(wide.fillna(""), correct, n, intervals)


#: One line on what each table shows (the report's index and LaTeX captions use these).
CAPTIONS = TABLE_CAPTIONS


# The two renderers below are written by hand on purpose (issue 10 weighed pandas'
# DataFrame.to_markdown, through tabulate, and Styler.to_latex on the real tables):
# - to_markdown does not escape "|" in a header or cell, so every table with a measure such as
#   "A_Syn|WordsSyn" has more header cells than delimiter cells and GitHub (and markdown-it's
#   GFM tables) renders no table at all; by default it also re-formats the display strings
#   ("0.40" -> "0.4", "1.90" -> "1.9") and prints a MultiIndex row as a tuple
#   "('glove-6b-50d', 'Sent', 'EN-Nat')". Fixing that takes reset_index, escaping every cell,
#   disable_numparse and colalign: the code below, plus a dependency (tabulate).
# - Styler.to_latex(escape="latex") leaves "|", "<" and ">" as they are (an em dash, "¡" and
#   "¿" in LaTeX's default OT1 font encoding) and does not escape the caption ("P_Syn" stops
#   pdflatex); it puts the index names on a second header row under the measures, sets every
#   column "l", needs \usepackage{multirow} for a readable MultiIndex and draws \cline rules
#   that do not fit booktabs. Fixing that is again as much code as this renderer.


# ---------------------------------------------------------------------------------------------
# tests for display: two runs compared (ncprobe.compare) and the classes compared
# (ncprobe.ncimp.inference.class_tests)


def _num(x: float, fmt: str) -> str:
    return "" if x is None or pd.isna(x) else format(float(x), fmt)


def comparison_table(df: pd.DataFrame) -> pd.DataFrame:
    """The display form of :func:`ncprobe.ncimp.comparison.compare`'s output (for
    :func:`to_markdown` and :func:`to_latex`).

    Indexed by the cell keys of ``df`` (``model A``, ``model B``, the other keys fixed per
    side, then the matched keys; measures and levels by their display names), one column
    each for ``n``, ``rho A``, ``rho B``, ``diff [95% CI]`` (``rho A - rho B`` and its paired
    bootstrap interval), ``p boot``, ``Williams t``, ``p Williams``, ``p corrected`` and
    ``sig.`` (:func:`stars` of the corrected p). Rhos and differences have three decimals,
    p-values three (``<0.001`` below that); a p that is only a bound (``p_boot_bound``,
    ``p_corrected_bound``: no resample on the other side of 0) reads ``< 0.0002``
    (:func:`p_text`). Outputs written before the bound and family columns existed are shown
    without bounds.
    """
    from .comparison import SIDE_COLUMNS, STAT_COLUMNS

    optional = ("p_boot_bound", "p_corrected_bound", "family", "family_size")
    missing = [c for c in STAT_COLUMNS if c not in df.columns and c not in optional]
    if missing:
        raise ValueError(f"comparison_table needs the output of ncprobe.ncimp.comparison.compare; "
                         f"columns missing: {', '.join(missing)}")
    keys = [c for c in df.columns if c not in STAT_COLUMNS and c not in SIDE_COLUMNS]
    names = {k: (k[:-2] + " " + k[-1].upper() if k.endswith(("_a", "_b")) else k) for k in keys}
    shown = pd.DataFrame({names[k]: df[k].astype(str).to_numpy() for k in keys})
    for k in keys:
        base = k[:-2] if k.endswith(("_a", "_b")) else k
        if base == "measure":
            shown[names[k]] = [MEASURE_LABELS.get(m, m) for m in shown[names[k]]]
        elif base == "level":
            shown[names[k]] = [LEVEL_LABELS.get(v, v) for v in shown[names[k]]]
    diff = [("" if pd.isna(d) else f"{d:+.3f}"
             + ("" if pd.isna(lo) or pd.isna(hi) else f" [{lo:+.3f}, {hi:+.3f}]"))
            for d, lo, hi in zip(df["diff"], df["ci_low"], df["ci_high"], strict=True)]
    shown["n"] = [str(int(n)) for n in df["n"]]
    shown["rho A"] = [_num(x, ".3f") for x in df["rho_a"]]
    shown["rho B"] = [_num(x, ".3f") for x in df["rho_b"]]
    shown["diff [95% CI]"] = diff
    def flags(column: str) -> list[bool]:
        return ([not pd.isna(x) and bool(x) for x in df[column]] if column in df.columns
                else [False] * len(df))

    shown["p boot"] = [p_text(p, b) for p, b in zip(df["p_boot"], flags("p_boot_bound"),
                                                     strict=True)]
    shown["Williams t"] = [_num(x, ".2f") for x in df["williams_t"]]
    shown["p Williams"] = [p_text(p) for p in df["p_williams"]]
    corrected_bound = flags("p_corrected_bound")
    shown["p corrected"] = [p_text(p, b) for p, b in zip(df["p_corrected"], corrected_bound,
                                                          strict=True)]
    shown["sig."] = [stars(p, b) for p, b in zip(df["p_corrected"], corrected_bound,
                                                  strict=True)]
    return shown.set_index([names[k] for k in keys]) if keys else shown


def class_tests_table(results: Results, **kw) -> pd.DataFrame:
    """The per-class tests (:func:`class_tests`, same options) for display: one row per
    model, level, condition and measure; ``n I/PC/C``, the Kruskal-Wallis ``H`` and its
    corrected ``p``, and per pair (``I-PC``, ``I-C``, ``PC-C``) the rank-biserial ``r``
    (positive: the first class larger) with the corrected p and its :func:`stars`."""
    from ..schema import CLASSES

    tidy = class_tests(results, **kw)
    index = ["model", "level", "condition", "measure"]
    rows = []
    keys = list(CLASS_TEST_KEYS)
    for key, cell in tidy.groupby(keys, sort=False, dropna=False):
        k = dict(zip(keys, key, strict=True))
        kw_row = cell[cell["test"] == "kruskal-wallis"].iloc[0]
        n = {c: "0" for c in CLASSES}
        row = {"model": k["model"], "level": LEVEL_LABELS.get(k["level"], k["level"]),
               "condition": k["condition"], "measure": MEASURE_LABELS.get(k["measure"],
                                                                          k["measure"])}
        pairs = {(r["cls_a"], r["cls_b"]): r for _, r in
                 cell[cell["test"] == "mann-whitney"].iterrows()}
        for (a, b), r in pairs.items():
            n[a], n[b] = str(r["n_a"]), str(r["n_b"])
        row["n I/PC/C"] = "/".join(n[c] for c in CLASSES)
        row["H"] = _num(kw_row["statistic"], ".2f")
        row["p (H)"] = p_text(kw_row["p_corrected"]) + stars(kw_row["p_corrected"])
        for a, b in CLASS_PAIRS:
            r = pairs.get((a, b))
            row[f"r {a}-{b}"] = "" if r is None else _num(r["rank_biserial"], "+.2f")
            row[f"p {a}-{b}"] = "" if r is None else (p_text(r["p_corrected"])
                                                      + stars(r["p_corrected"]))
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=["n I/PC/C", "H", "p (H)"]
                            + [f"{x} {a}-{b}" for a, b in CLASS_PAIRS for x in ("r", "p")],
                            index=pd.MultiIndex.from_tuples([], names=index))
    out = pd.DataFrame(rows).set_index(index)
    out.attrs.update(tidy.attrs)
    out.attrs["note"] = _class_tests_note(out)
    return out


def _class_tests_note(table: pd.DataFrame) -> str:
    method = table.attrs.get("correct", "holm")
    how = CORRECTION_NAMES.get(method, method)
    return (f"p {how} across the {table.attrs.get('family_kw', 0)} Kruskal-Wallis tests and, "
            f"separately, the {table.attrs.get('family_mw', 0)} Mann-Whitney pairs of this "
            f"table; {STARS_NOTE}")


# ---------------------------------------------------------------------------------------------
# the tables of a report

_CELLS = ("correct", "intervals")  # the correlation tables: the cells' marks and format

#: Every table a report writes, in order, as a :class:`~ncprobe.ncimp.view.Spec`: the study's
#: (:data:`ncprobe.schema.PAPER_TABLES`), the per-class tests (the tests the figures by
#: class mark, at their view), then ncprobe's layer-wise table (written for results with
#: layer-wise views); each with the fields of the report's :class:`~ncprobe.ncimp.view.View` it
#: takes. The study's tables other than the per-class tests keep the raw space and their
#: default contexts whatever the view's.
TABLE_SPECS: tuple[Spec, ...] = (
    Spec("sent_correlations", sent_correlations, _CELLS),
    Spec("nc_correlations", nc_correlations, _CELLS),
    Spec("length_correlations", length_correlations, _CELLS),
    Spec("affinity_correlations", affinity_correlations, _CELLS),
    Spec("scaled_correlations", scaled_correlations, _CELLS),
    Spec("means", means),
    Spec("filtered_correlations", filtered_correlations, _CELLS),
    Spec("standardisation", standardisation),
    Spec("examples", examples, ("ncs",)),
    Spec("class_tests", class_tests_table, ("space", "level", "contexts", "layers", "correct")),
    Spec("layers", layers, ("space", "level", "contexts") + _CELLS, added=True,
         layerwise=True, says_view=True),
)
#: The tables of method §4, in order (name, :data:`ncprobe.schema.PAPER_TABLES`, ->
#: builder(results, **options) -> DataFrame), and the per-class tests after them.
TABLES: dict[str, Callable[..., pd.DataFrame]] = {s.name: s.build for s in TABLE_SPECS
                                                  if not s.added}
if tuple(TABLES)[:len(PAPER_TABLES)] != PAPER_TABLES:  # pragma: no cover
    raise ImportError(f"ncprobe.ncimp.tables: TABLE_SPECS {tuple(TABLES)} do not begin with the "
                      f"study's tables {PAPER_TABLES}")
