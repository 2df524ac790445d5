"""Statistics on results: what the tables and figures test and summarise, computed once here.

The presentation layer (:mod:`ncprobe.ncimp.tables`, :mod:`ncprobe.ncimp.figures`, the summary)
draws and formats these; it computes no statistic of its own. Everything here returns numbers in
tidy frames or arrays: no display strings, no matplotlib (seaborn's ``_statistics.py`` is the
model).

* :func:`class_tests`: do the measures differ between the compositionality classes? The
  tests of :func:`ncprobe.stats.class_tests` for every model x condition x measure, the
  p-values corrected over the whole table; what the per-class tests table shows and the
  figures by class mark (:func:`significant_pairs`);
* :func:`correlogram_matrix` and :func:`correct_correlogram`: the Spearman matrix of one
  correlogram panel, and the panels' p-values corrected as one family (figure 10);
* :func:`ratio_quartiles`: the median and quartiles of the ratio Sim_R|Syn / Sim_R|WordsSyn
  (figures 8 and 9, and the summary).

The per-class tests are memoised explicitly: one report asks for them five times (the
table and four figures). The memo is keyed on the content of the ``measures`` table (a hash
of its values, index and dtypes) and the options, so an edit of ``results.measures`` in place
is a new key, never a stale hit; it holds the last :data:`MEMO_SIZE` answers.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..schema import ALL_CLASSES, CLASSES, DISPLAY_MEASURES, GOLD, RATIO, Correction
from ..significance import ALPHA, check_correction
from ..stats import correct as correct_p
from ..stats import spearman
from .selection import conditions_in, model_order, select

if TYPE_CHECKING:  # pragma: no cover
    from .runs import ResultsData as Results

#: The pairs of classes of the per-class tests, in order.
CLASS_PAIRS: tuple[tuple[str, str], ...] = (("I", "PC"), ("I", "C"), ("PC", "C"))
#: The columns that identify a cell of :func:`class_tests` (one model, condition, measure).
CLASS_TEST_KEYS: tuple[str, ...] = ("model", "lang", "layers", "level", "condition", "measure")
#: The families of :func:`class_tests`' table: every test of one kind it holds.
TABLE_FAMILIES = {"kruskal-wallis": "the Kruskal-Wallis tests of this table",
                  "mann-whitney": "the Mann-Whitney pairs of this table",
                  "none": "uncorrected: each test on its own"}
#: How many answers of :func:`class_tests` the memo keeps.
MEMO_SIZE = 16

_memo: OrderedDict[tuple, pd.DataFrame] = OrderedDict()


def fingerprint(df: pd.DataFrame) -> str:
    """A hash of a table's content: its values, index, column names and dtypes. Two tables
    with the same fingerprint hold the same rows in the same order."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr([(str(c), str(t)) for c, t in df.dtypes.items()]).encode())
    h.update(pd.util.hash_pandas_object(df, index=True).to_numpy().tobytes())
    return h.hexdigest()


def model_names(results: Results) -> list[str]:
    """Every model of ``results``, in the order the runs were joined in."""
    return model_order(results.measures, results.sentences, results.correlations)


def condition_ranks(values) -> dict[str, int]:
    """The rank of each condition among ``values`` in the order shown
    (:func:`~ncprobe.ncimp.selection.conditions_in`: NCIMP's first, then other languages')."""
    return {c: i for i, c in enumerate(conditions_in(pd.Series(values).astype(str)))}


# ---------------------------------------------------------------------------------------------
# per-class tests


def class_tests(results: Results, *, level: str = "nc", space: str = "raw", contexts=None,
                layers=None, measures: Sequence[str] | None = None,
                correct: Correction = "holm") -> pd.DataFrame:
    """Do the measures differ between the compositionality classes (I, PC, C)?

    For every model x condition x measure of the per-NC ``measures`` table (one level, space
    and layer view, as :func:`ncprobe.ncimp.selection.select` chooses them; ``measures`` default
    :data:`~ncprobe.schema.DISPLAY_MEASURES`): the tests of
    :func:`ncprobe.stats.class_tests` on the NCs with a class and a value, Kruskal-Wallis
    across the three classes and the two-sided Mann-Whitney U of each pair (I-PC, I-C, PC-C)
    with its rank-biserial effect size ``r`` (positive: ``cls_a`` tends to be larger).

    Multiple comparisons: the family is every test of one kind this table holds. The
    Kruskal-Wallis p-values are corrected as one family and the Mann-Whitney p-values as
    another (``correct``: ``holm``, ``fdr_bh`` or ``none``; :func:`ncprobe.stats.correct`),
    so that a pair marked significant here (and on the class figures, which use this
    table) survives the correction over everything the table shows.

    Returns:
        Tidy rows, one per test: :data:`CLASS_TEST_KEYS`, then the columns of
        :data:`ncprobe.stats.CLASS_TEST_COLUMNS` (``test`` ``kruskal-wallis`` or
        ``mann-whitney``, ``cls_a``, ``cls_b``, ``n_a``, ``n_b``, ``statistic`` H or U of
        ``cls_a``, ``p``, ``p_corrected``, ``rank_biserial``, ``significant``, ``family``
        (:data:`TABLE_FAMILIES`: which tests ``p_corrected`` was corrected with) and
        ``family_size``).
        ``df.attrs`` holds ``correct`` and the family sizes ``family_kw`` / ``family_mw``.
        :func:`ncprobe.ncimp.tables.class_tests_table` is its display form. A copy of the
        memoised answer: the caller may change it.

    Raises:
        UsageError: an unknown correction.
    """
    check_correction(correct)
    key = (fingerprint(results.measures), level, space, repr(contexts), repr(layers),
           None if measures is None else tuple(measures), correct)
    hit = _memo.get(key)
    if hit is None:
        hit = _memo[key] = _class_tests(results, level, space, contexts, layers, measures,
                                        correct)
        while len(_memo) > MEMO_SIZE:
            _memo.popitem(last=False)
    else:
        _memo.move_to_end(key)
    return hit.copy()


def _class_tests(results: Results, level, space, contexts, layers, measures,
                 correct: Correction) -> pd.DataFrame:
    from ..stats import CLASS_TEST_COLUMNS
    from ..stats import class_tests as tests_of

    wanted = list(DISPLAY_MEASURES if measures is None else measures)
    m = select(results.measures, space=space, level=level, contexts=contexts,
               measures=wanted, layers=layers)
    columns = list(CLASS_TEST_KEYS) + list(CLASS_TEST_COLUMNS)
    parts = []
    if len(m):
        order = {k: i for i, k in enumerate(model_order(results.measures))}
        rank = {x: i for i, x in enumerate(wanted)}
        m = m.assign(condition=m["condition"].astype(str), _m=m["model"].map(order),
                     _c=m["condition"].astype(str).map(condition_ranks(m["condition"])),
                     _v=m["measure"].map(rank)).sort_values(["_m", "_c", "_v"], kind="stable")
        for key, rows in m.groupby(list(CLASS_TEST_KEYS), sort=False, dropna=False):
            t = tests_of(rows["value"].to_numpy(dtype=float), rows["cls"].to_list(),
                         correct_method="none")
            parts.append(t.assign(**dict(zip(CLASS_TEST_KEYS, key, strict=True))))
    out = (pd.concat(parts, ignore_index=True)[columns] if parts
           else pd.DataFrame(columns=columns))
    out["family"] = out["family"].astype(object)
    for kind, name in (("kruskal-wallis", "family_kw"), ("mann-whitney", "family_mw")):
        rows = (out["test"] == kind).to_numpy()
        p = out.loc[rows, "p"].to_numpy(dtype=float)
        out.loc[rows, "p_corrected"] = correct_p(p, correct)
        out.attrs[name] = int(np.count_nonzero(~np.isnan(p)))
        # the family the table corrects with (stats.class_tests' own was "uncorrected")
        out.loc[rows, "family"] = TABLE_FAMILIES["none" if correct == "none" else kind]
        out.loc[rows, "family_size"] = (out.attrs[name] if correct != "none"
                                        else (~np.isnan(p)).astype(np.int64))
    out["family_size"] = out["family_size"].astype("int64")
    out["p_corrected"] = out["p_corrected"].astype(float)
    out["significant"] = (out["p_corrected"] <= ALPHA).to_numpy()
    out.attrs["correct"] = correct
    return out


def significant_pairs(tests: pd.DataFrame, measures: Sequence[str]
                      ) -> dict[tuple[str, str, str], list[tuple[str, str, float]]]:
    """The pairs of classes that differ, from :func:`class_tests`' rows: the significant
    Mann-Whitney tests of ``measures``.

    Returns:
        ``{(model, condition, measure): [(cls_a, cls_b, p_corrected), ...]}``, in the
        table's order.
    """
    sig = tests[(tests["test"] == "mann-whitney") & tests["significant"]
                & tests["measure"].isin(list(measures))]
    pairs: dict[tuple[str, str, str], list[tuple[str, str, float]]] = {}
    for _, r in sig.iterrows():
        pairs.setdefault((str(r["model"]), str(r["condition"]), str(r["measure"])), []).append(
            (str(r["cls_a"]), str(r["cls_b"]), float(r["p_corrected"])))
    return pairs


# ---------------------------------------------------------------------------------------------
# the correlogram (figure 10)


def correlogram_matrix(results: Results, condition: str, *, level: str = "nc",
                       space: str = "raw", measures: Sequence[str] = (), gold: bool = True,
                       layers=None) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray]:
    """The variables, Spearman rho and p of one correlogram panel.

    Variables are (model, measure) pairs (and ``("", "gold")`` first when ``gold``), each
    a vector of per-NC values of one condition; rho and p are pairwise over the NCs
    both have (:func:`ncprobe.stats.spearman`). A variable with fewer than three values is
    left out. (:func:`ncprobe.ncimp.figures.correlogram_matrix` is this with the figure's measures
    by default.)

    Returns:
        ``(variables, rho, p)``: a list of (model, measure) and two square arrays.
    """
    data = select(results.measures, space=space, level=level, contexts="all",
                  measures=list(measures), layers=layers)
    data = data[data["condition"].astype(str) == condition]
    models = [m for m in model_names(results) if m in set(data["model"])]
    wide = data.pivot_table(index="nc", columns=["model", "measure"], values="value",
                            aggfunc="first", dropna=False)
    variables, columns = [], []
    if gold and len(data):
        g = data.drop_duplicates("nc").set_index("nc")[GOLD].reindex(wide.index)
        variables.append(("", "gold"))
        columns.append(g.to_numpy(dtype=np.float64))
    for model in models:
        for m in measures:
            if (model, m) in wide.columns:
                v = wide[(model, m)].to_numpy(dtype=np.float64)
                if np.isfinite(v).sum() >= 3:
                    variables.append((model, m))
                    columns.append(v)
    n = len(variables)
    rho = np.full((n, n), np.nan)
    p = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(i + 1):
            c = spearman(columns[i], columns[j])
            rho[i, j] = rho[j, i] = c.rho
            p[i, j] = p[j, i] = c.p
    return variables, rho, p


def correct_correlogram(p_values: Sequence[np.ndarray], correct: Correction
                        ) -> tuple[list[np.ndarray], int]:
    """The p-values of correlogram panels corrected as one family: the cells below the
    diagonal of every panel (each pair once per panel), the ones the figure can draw.

    Args:
        p_values: each panel's square matrix of p-values (:func:`correlogram_matrix`).
        correct: ``holm``, ``fdr_bh`` or ``none`` (:func:`ncprobe.stats.correct`).

    Returns:
        ``(corrected, n)``: each panel's corrected matrix (symmetric, NaN on the diagonal),
        and the size of the family (the cells with a p-value).

    Raises:
        UsageError: an unknown correction.
    """
    check_correction(correct)
    lower = [np.tril_indices(len(p), k=-1) for p in p_values]
    flat = np.concatenate([p[ix] for p, ix in zip(p_values, lower, strict=True)]
                          + [np.zeros(0)])
    fixed = correct_p(flat, correct)
    n = int(np.count_nonzero(~np.isnan(flat)))
    out, at = [], 0
    for p, ix in zip(p_values, lower, strict=True):
        q = np.full_like(p, np.nan)
        q[ix] = fixed[at:at + len(ix[0])]
        q[(ix[1], ix[0])] = q[ix]
        at += len(ix[0])
        out.append(q)
    return out, n


# ---------------------------------------------------------------------------------------------
# the ratio (figures 8, 9)

#: The columns of :func:`ratio_quartiles`.
QUARTILE_COLUMNS: tuple[str, ...] = ("model", "condition", "cls", "n", "q1", "median", "q3")


def quartiles(values: np.ndarray) -> tuple[float, float, float]:
    """The first quartile, median and third quartile of ``values`` (``numpy.percentile``,
    linear interpolation; no NaN expected)."""
    q1, med, q3 = np.percentile(np.asarray(values, dtype=np.float64), [25, 50, 75])
    return float(q1), float(med), float(q3)


def ratio_quartiles(results: Results, *, by_class: bool = False, level: str = "nc",
                    space: str = "raw", contexts=None, layers=None) -> pd.DataFrame:
    """The median and quartiles of the ratio Sim_R|Syn / Sim_R|WordsSyn over the NCs, per
    model and condition (and class when ``by_class``), from the per-NC ``measures`` table.

    Returns:
        Columns ``model, condition, cls, n, q1, median, q3`` (:func:`quartiles`; NaN values
        left out; ``cls`` is ``all`` unless ``by_class``): what figures 8 and 9 draw.
    """
    data = select(results.measures, space=space, level=level, contexts=contexts,
                  measures=[RATIO], layers=layers).dropna(subset=["value"])
    if by_class:
        data = data[data["cls"].isin(CLASSES)]
    else:
        data = data.assign(cls=ALL_CLASSES)
    rows = []
    for (model, cond, cls), g in data.groupby(["model", "condition", "cls"], observed=True,
                                              sort=False):
        q1, med, q3 = quartiles(g["value"].to_numpy(dtype=np.float64))
        rows.append({"model": str(model), "condition": str(cond), "cls": str(cls),
                     "n": len(g), "q1": q1, "median": med, "q3": q3})
    return pd.DataFrame(rows, columns=list(QUARTILE_COLUMNS))


__all__ = ["CLASS_PAIRS", "CLASS_TEST_KEYS", "MEMO_SIZE", "QUARTILE_COLUMNS", "TABLE_FAMILIES",
           "class_tests",
           "condition_ranks", "correct_correlogram", "correlogram_matrix", "fingerprint",
           "model_names", "quartiles", "ratio_quartiles", "significant_pairs"]
