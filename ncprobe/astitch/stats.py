"""The AStitch probe's statistics: macro-F1, accuracy and AUROC with intervals that resample
expressions, selectivity, and paired permutation tests between two classifiers.

The rows of AStitch are uses of an expression: one expression's sentences share its words, its
paraphrases and (in one- and few-shot training) its examples, so they are not independent. A
bootstrap over rows would make the intervals too narrow; every interval here is a percentile
interval of a **cluster bootstrap over expressions**: a resample draws ``k`` expressions with
replacement out of the cell's ``k`` and keeps every row of each drawn expression (as often as
it is drawn). The draws are :func:`ncprobe.stats.resample_counts` ``(k, n_boot, seed)`` over
the expressions in sorted order: every cell holding the same expressions uses the same draws
(common random numbers), whatever else is computed beside it.

Nothing is recomputed per resample in a Python loop:

* macro-F1 and accuracy: each expression's confusion counts (true positives, gold and predicted
  counts of each label) are summed once; a resample's counts are then ``draws @ sums`` (a
  ``(n_boot, k)`` by ``(k, 6)`` product), and each label's F1 is ``2 TP / (n_gold +
  n_predicted)`` (0 where both are 0): scikit-learn's ``f1_score(average="macro", labels=[0,
  1], zero_division=0)`` on the resampled rows (the tests compare the two);
* AUROC (:func:`weighted_auroc`): the Mann-Whitney statistic with weights, ties counted 1/2,
  from the scores sorted once: per group of equal scores the weight of positives times the
  weight of negatives below it (plus half of those tied). :func:`cluster_auroc` goes one step
  further: with ``A[e, f]`` the (tie-corrected) count of positive rows of expression ``e``
  above negative rows of expression ``f``, a resample's numerator is ``c A c`` for its draw
  counts ``c``: a ``(n_boot, k)`` by ``(k, k)`` product, whatever the number of rows.
  :func:`within_auroc` takes the diagonal alone: the pairs inside each expression, summed
  over the expressions with both labels (a resample's numerator and denominator are two
  ``(n_boot, k')`` by ``(k',)`` products).

:func:`paired_tests` compares two classifier cells on the same test rows: the macro-F1
difference, its paired cluster-bootstrap interval (the same draws for both), and a two-sided
**cluster swap permutation test**. Under the null hypothesis the two classifiers are
exchangeable within each expression: a permutation swaps a's and b's predictions on a random
subset of the expressions. A swap changes only the confusion counts, so with ``D`` the
per-expression differences of b's and a's counts and ``M`` a ``(B, k)`` 0/1 matrix of swapped
expressions, the permuted totals are ``a + M D`` and ``b - M D``: one matrix product for a
chunk of permutations, shared by every test with the same ``k`` (chunks keep the memory
bounded when ``B`` is in the hundreds of thousands). With ``2^k <= B`` every subset is
enumerated (exact), else ``B`` random subsets give ``p = (1 + #{|d*| >= |d|}) / (1 + B)``,
``p_bound`` where none reached ``|d|``. ``B`` follows :func:`ncprobe.stats.choose_flips` (1,000
per test of the family under Holm), the family is corrected by
:func:`ncprobe.stats.correct_bounded`, and a bound that limits a decision is warned about
(:func:`ncprobe.significance.warn_resolution`): the engine :mod:`ncprobe.retrieval.stats` runs
too (:func:`ncprobe.stats.paired_family`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..errors import UsageError
from ..significance import check_correction
from ..stats import choose_flips, paired_family, resample_counts, subset_chunks

__all__ = ["LEVEL", "SUBSETS", "TEST_COLUMNS", "ambiguous", "cell_rows", "check_labels",
           "cluster_auroc", "cluster_scores", "draw_scores", "expression_index", "label",
           "label_counts", "macro_f1", "paired_tests", "selectivity", "weighted_auroc",
           "within_auroc"]

#: The coverage of every interval.
LEVEL = 0.95
#: The columns of :func:`paired_tests`' table.
TEST_COLUMNS: tuple[str, ...] = (
    "family", "a", "b", "lang", "setting", "n", "n_expressions", "f1_a", "f1_b", "diff",
    "diff_low", "diff_high", "p", "p_bound", "p_corrected", "p_corrected_bound", "significant",
    "test", "correction", "family_size")
#: The columns a prediction table needs for :func:`paired_tests` besides a pair's key columns.
_ROW_COLUMNS = ("lang", "row", "expression", "label", "predicted")
#: Elements of one chunk of swap patterns (patterns x expressions), and of the permuted
#: counts computed from it: the memory of the permutation test, whatever ``B``.
_CHUNK = 1 << 20
#: A permuted difference this close to the observed one counts as reaching it (rounding:
#: the identity and the swap of every expression give exactly ``d`` and ``-d``, but another
#: subset with the same counts may sum in another order).
_TOL = 1e-12
_NAN = math.nan


# ---------------------------------------------------------------------------------------------
# macro-F1 and accuracy


def check_labels(values: ArrayLike, what: str = "the labels") -> np.ndarray:
    """``values`` as a 1-d int array of 0s and 1s (the files' labels).

    Raises:
        UsageError: not 1-d, or a value other than 0 and 1 (``what`` names them).
    """
    array = np.asarray(values)
    if array.ndim != 1:
        raise UsageError(f"{what} must be one label per row, got shape {array.shape}")
    if array.size and not np.isin(array, (0, 1)).all():
        bad = array[~np.isin(array, (0, 1))][0]
        raise UsageError(f"{what} must hold labels 0 (idiomatic) and 1 (not idiomatic) only, "
                         f"found {bad!r}")
    return array.astype(np.int64)


#: The subsets every table is given for: every expression, and the ambiguous ones (both labels
#: among the evaluated rows). On the ambiguous subset a type-only reader cannot be perfect.
SUBSETS: tuple[str, ...] = ("all", "ambiguous")


def expression_index(expressions: ArrayLike | Sequence[str]) -> tuple[np.ndarray, int]:
    """Each row's expression as an index into the distinct expressions (sorted as text), and
    how many there are: the grouping every statistic here resamples or counts by."""
    _, inv = np.unique(np.asarray(expressions, dtype=object).astype(str), return_inverse=True)
    inv = inv.reshape(-1)
    return inv, int(inv.max()) + 1 if len(inv) else 0


def label_counts(inv: np.ndarray, y: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per expression (``inv``, ``k``: :func:`expression_index`) its rows of label 1 and all
    its rows."""
    return (np.bincount(inv, weights=y.astype(np.float64), minlength=k),
            np.bincount(inv, minlength=k))


def ambiguous(expressions: ArrayLike | Sequence[str], labels: ArrayLike) -> np.ndarray:
    """A boolean mask: True on each row whose expression has both labels among these rows.

    The rows are the evaluated ones (one split of one language): an expression is ambiguous in
    a split when that split holds at least one idiomatic and one literal use of it.
    """
    y = check_labels(labels)
    inv, k = expression_index(expressions)
    if len(inv) != len(y):
        raise UsageError(f"expressions and labels differ in length: {len(inv)} and {len(y)} rows")
    ones, total = label_counts(inv, y, k)
    both = (ones > 0) & (ones < total)
    return both[inv]


def _prepare(y: ArrayLike, pred: ArrayLike, clusters: ArrayLike | Sequence[str]
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Labels, predictions, each row's expression index (expressions sorted) and ``k``."""
    g, p = check_labels(y, "the labels"), check_labels(pred, "the predictions")
    inv, k = expression_index(clusters)
    if not len(g) == len(p) == len(inv):
        raise UsageError(f"labels, predictions and expressions differ in length: {len(g)}, "
                         f"{len(p)} and {len(inv)} rows")
    return g, p, inv, k


def _confusion_sums(y: np.ndarray, pred: np.ndarray, inv: np.ndarray, k: int) -> np.ndarray:
    """Per expression ``(k, 6)``: true positives of label 0 and 1, gold counts of 0 and 1,
    predicted counts of 0 and 1."""
    columns = (
        (y == 0) & (pred == 0), (y == 1) & (pred == 1), y == 0, y == 1, pred == 0, pred == 1)
    return np.stack([np.bincount(inv, weights=c.astype(np.float64), minlength=k)
                     for c in columns], axis=1)


def _f1_of(tp: np.ndarray, both: np.ndarray) -> np.ndarray:
    """Macro-F1 from each label's true positives and gold + predicted counts ``(..., 2)``; a
    label neither in gold nor predicted scores 0 (``zero_division=0``)."""
    f1 = np.divide(2.0 * tp, both, out=np.zeros(np.broadcast(tp, both).shape),
                   where=both > 0)
    return (f1[..., 0] + f1[..., 1]) / 2.0


def _f1(totals: np.ndarray) -> np.ndarray:
    """Macro-F1 over labels 0 and 1 from confusion totals ``(..., 6)`` (:func:`_confusion_sums`
    columns)."""
    return _f1_of(totals[..., 0:2], totals[..., 2:4] + totals[..., 4:6])


def _accuracy(totals: np.ndarray) -> np.ndarray:
    n = totals[..., 2] + totals[..., 3]
    return np.divide(totals[..., 0] + totals[..., 1], n, out=np.full_like(n, _NAN),
                     where=n > 0)


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    """Percentile interval of the finite ``values`` (NaN when there is none)."""
    values = values[np.isfinite(values)]
    if not len(values):
        return (_NAN, _NAN)
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(values, [tail, 100.0 - tail])
    return (float(lo), float(hi))


def _check_boot(n_boot: int, level: float) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise UsageError(f"n_boot must be a whole number >= 0 (0: no intervals), not {n_boot!r}")
    if not 0.0 < level < 1.0:
        raise UsageError(f"level must lie strictly between 0 and 1 (e.g. 0.95), not {level!r}")


def _draws(k: int, n_boot: int, seed: int) -> np.ndarray | None:
    """The ``(n_boot, k)`` draw counts of the expressions (sorted), or None for no interval."""
    return resample_counts(k, n_boot, seed) if n_boot > 0 and k > 0 else None


def macro_f1(y: ArrayLike, pred: ArrayLike) -> float:
    """Macro-F1 over the labels 0 and 1: ``sklearn.metrics.f1_score(y, pred,
    average="macro", labels=[0, 1], zero_division=0)``; NaN for no rows.

    >>> macro_f1([0, 0, 1, 1], [0, 1, 1, 1])
    0.7333333333333334
    """
    g, p = check_labels(y, "the labels"), check_labels(pred, "the predictions")
    if len(g) != len(p):
        raise UsageError(f"{len(g)} labels but {len(p)} predictions")
    if not len(g):
        return _NAN
    # from the counts, as the resamples are scored (scikit-learn's checks cost more than
    # the sums when the controls' draws are scored by the hundred; the tests compare the two)
    ones, pred_ones = int(g.sum()), int(p.sum())
    tp_one = int((g & p).sum())
    tp_zero = len(g) - ones - pred_ones + tp_one
    # the columns of _confusion_sums: true 0s and 1s, gold 0s and 1s, predicted 0s and 1s
    totals = np.array([tp_zero, tp_one, len(g) - ones, ones, len(g) - pred_ones, pred_ones],
                      dtype=np.float64)
    return float(_f1(totals[None, :])[0])


def cluster_scores(y: ArrayLike, pred: ArrayLike, clusters: ArrayLike | Sequence[str], *,
                   n_boot: int, seed: int, level: float = LEVEL) -> dict[str, Any]:
    """Macro-F1 and accuracy with cluster-bootstrap intervals over expressions.

    Args:
        y: gold labels (0 idiomatic, 1 not idiomatic), one per row.
        pred: predicted labels.
        clusters: each row's expression.
        n_boot: resamples of the expressions (0: no interval, NaN).
        seed: the seed of the draws.
        level: the coverage of the percentile intervals.

    Returns:
        ``{"n", "n_expressions", "macro_f1", "f1_low", "f1_high", "accuracy", "acc_low",
        "acc_high"}`` (NaN values for no rows).

    Raises:
        UsageError: labels other than 0/1, lengths that differ, a bad ``n_boot`` or ``level``.
    """
    _check_boot(n_boot, level)
    g, p, inv, k = _prepare(y, pred, clusters)
    out: dict[str, Any] = {"n": len(g), "n_expressions": k, "macro_f1": macro_f1(g, p),
                           "f1_low": _NAN, "f1_high": _NAN,
                           "accuracy": float(np.mean(g == p)) if len(g) else _NAN,
                           "acc_low": _NAN, "acc_high": _NAN}
    draws = _draws(k, n_boot, seed)
    if draws is not None:
        resampled = draws @ _confusion_sums(g, p, inv, k)
        out["f1_low"], out["f1_high"] = _interval(_f1(resampled), level)
        out["acc_low"], out["acc_high"] = _interval(_accuracy(resampled), level)
    return out


def selectivity(y: ArrayLike, pred: ArrayLike, y_ctrl: ArrayLike, pred_ctrl: ArrayLike,
                clusters: ArrayLike | Sequence[str], *, n_boot: int, seed: int,
                level: float = LEVEL) -> dict[str, float]:
    """Selectivity (Hewitt and Liang 2019): the task's macro-F1 less the control task's, on the
    same rows, with a cluster-bootstrap interval from the same draws for both.

    Args:
        y, pred: the task's labels and predictions.
        y_ctrl, pred_ctrl: the control task's labels and predictions of the same rows.
        clusters: each row's expression.
        n_boot, seed, level: as :func:`cluster_scores`.

    Returns:
        ``{"selectivity", "sel_low", "sel_high"}``.
    """
    _check_boot(n_boot, level)
    g, p, inv, k = _prepare(y, pred, clusters)
    gc, pc, _, _ = _prepare(y_ctrl, pred_ctrl, clusters)
    out = {"selectivity": macro_f1(g, p) - macro_f1(gc, pc), "sel_low": _NAN, "sel_high": _NAN}
    draws = _draws(k, n_boot, seed)
    if draws is not None:
        diff = (_f1(draws @ _confusion_sums(g, p, inv, k))
                - _f1(draws @ _confusion_sums(gc, pc, inv, k)))
        out["sel_low"], out["sel_high"] = _interval(diff, level)
    return out


def draw_scores(y: ArrayLike, preds: ArrayLike, clusters: ArrayLike | Sequence[str], *,
                n_boot: int, seed: int, level: float = LEVEL, task: ArrayLike | None = None
                ) -> dict[str, Any]:
    """Macro-F1 averaged over draws of predictions (a control fitted once per draw, random
    chance), with a cluster-bootstrap interval: each resample of the expressions scores every
    draw on the same resampled rows and averages them.

    Args:
        y: the gold labels, one per row.
        preds: ``(draws, rows)`` predictions (a ``(rows,)`` vector is one draw).
        clusters: each row's expression.
        n_boot, seed, level: as :func:`cluster_scores` (the same draws of the expressions).
        task: the task's predictions of the same rows: the selectivity against the draws'
            mean, with its interval from the same resamples.

    Returns:
        ``{"n_draws", "macro_f1", "f1_low", "f1_high"}``, and with ``task``
        ``{"selectivity", "sel_low", "sel_high"}`` (task macro-F1 less the draws' mean).
    """
    _check_boot(n_boot, level)
    p = np.asarray(preds)
    p = p[None, :] if p.ndim == 1 else p
    if p.ndim != 2 or not len(p):
        raise UsageError(f"preds must be (draws, rows) with one draw or more, not {p.shape}")
    g, _, inv, k = _prepare(y, p[0], clusters)
    rows = [check_labels(d, "the predictions") for d in p]
    if any(len(d) != len(g) for d in rows):
        raise UsageError(f"each draw needs one prediction per row ({len(g)})")
    out: dict[str, Any] = {"n_draws": len(rows),
                           "macro_f1": float(np.mean([macro_f1(g, d) for d in rows]))
                           if len(g) else _NAN, "f1_low": _NAN, "f1_high": _NAN}
    if task is not None:
        t = check_labels(task, "the task's predictions")
        out.update(selectivity=macro_f1(g, t) - out["macro_f1"], sel_low=_NAN, sel_high=_NAN)
    draws = _draws(k, n_boot, seed)
    if draws is not None:
        sums = np.stack([_confusion_sums(g, d, inv, k) for d in rows])       # (D, k, 6)
        mean = _f1(np.einsum("bk,dkc->dbc", draws, sums)).mean(axis=0)      # (n_boot,)
        out["f1_low"], out["f1_high"] = _interval(mean, level)
        if task is not None:
            diff = _f1(draws @ _confusion_sums(g, t, inv, k)) - mean
            out["sel_low"], out["sel_high"] = _interval(diff, level)
    return out


# ---------------------------------------------------------------------------------------------
# AUROC


def _scored(scores: ArrayLike, labels: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    lab = check_labels(labels, "the labels")
    if s.ndim != 1 or len(s) != len(lab):
        raise UsageError(f"needs one score per label: {s.shape} scores, {len(lab)} labels")
    if not np.isfinite(s).all():
        raise UsageError(f"{int((~np.isfinite(s)).sum())} score(s) are NaN or infinite; leave "
                         "the unscored rows out first")
    return s, lab


def _tie_groups(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stable order of ``s`` and the first position (in that order) of each group of
    equal scores."""
    order = np.argsort(s, kind="mergesort")
    ss = s[order]
    return order, np.flatnonzero(np.r_[True, ss[1:] != ss[:-1]])


def weighted_auroc(scores: ArrayLike, labels: ArrayLike, weights: ArrayLike) -> np.ndarray:
    """The AUROC (label 1 positive, higher score = more positive) under each row of weights.

    The weighted Mann-Whitney statistic: the sum over positive rows ``i`` and negative rows
    ``j`` of ``w_i w_j`` times 1 where ``s_i > s_j``, 1/2 where they are equal, over ``W_pos
    W_neg``: ``sklearn.metrics.roc_auc_score(labels, scores, sample_weight=w)`` (the tests
    compare them). The scores are sorted once; each group of equal scores contributes its
    positive weight times the negative weight below it plus half the negative weight tied with
    it.

    Args:
        scores: ``(n,)`` finite scores.
        labels: ``(n,)`` 0/1.
        weights: ``(B, n)`` non-negative weights (a ``(n,)`` vector is one row).

    Returns:
        ``(B,)``: NaN where a row's positive or negative weight is 0 (one class present).
    """
    s, lab = _scored(scores, labels)
    w = np.asarray(weights, dtype=np.float64)
    w = w[None, :] if w.ndim == 1 else w
    if w.ndim != 2 or w.shape[1] != len(s):
        raise UsageError(f"weights must be (B, {len(s)}), one column per score, not {w.shape}")
    if not len(s):
        return np.full(w.shape[0], _NAN)
    order, starts = _tie_groups(s)
    ws = w[:, order]
    wp = np.where(lab[order] == 1, ws, 0.0)
    pos = np.add.reduceat(wp, starts, axis=1)              # (B, groups)
    neg = np.add.reduceat(ws - wp, starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    num = (pos * (below + 0.5 * neg)).sum(axis=1)
    den = pos.sum(axis=1) * neg.sum(axis=1)
    return np.divide(num, den, out=np.full_like(num, _NAN), where=den > 0)


def _pair_counts(s: np.ndarray, lab: np.ndarray, inv: np.ndarray, k: int) -> np.ndarray:
    """``A[e, f]``: over positive rows of expression ``e`` and negative rows of expression
    ``f``, the pairs whose positive scores higher (ties 1/2): the AUROC numerator of a
    resample with draw counts ``c`` is ``c A c``."""
    order, starts = _tie_groups(s)
    group = np.cumsum(np.r_[False, np.diff(s[order]) != 0])    # each sorted row's group
    n_groups = len(starts)
    onehot = np.zeros((n_groups, k))
    is_pos = lab[order] == 1
    np.add.at(onehot, (group[~is_pos], inv[order][~is_pos]), 1.0)   # negatives per group
    below = np.cumsum(onehot, axis=0) - onehot
    credit = below + 0.5 * onehot                       # (groups, k): what a positive earns
    pos = np.zeros((n_groups, k))
    np.add.at(pos, (group[is_pos], inv[order][is_pos]), 1.0)
    return pos.T @ credit


def cluster_auroc(scores: ArrayLike, labels: ArrayLike, clusters: ArrayLike | Sequence[str], *,
                  n_boot: int, seed: int, level: float = LEVEL) -> dict[str, Any]:
    """The AUROC of ``scores`` for label 1 (not idiomatic) with a cluster-bootstrap interval.

    Args:
        scores: finite scores (higher = more literal), one per row.
        labels: 0 idiomatic, 1 not idiomatic.
        clusters: each row's expression.
        n_boot: resamples of the expressions (0: no interval).
        seed: the seed of the draws.
        level: the coverage of the percentile interval.

    Returns:
        ``{"n", "n_literal", "n_expressions", "auroc", "ci_low", "ci_high", "boot_used"}``:
        ``auroc`` is ``sklearn.metrics.roc_auc_score(labels, scores)``; a resample that holds
        one label only has no AUROC and is left out of the percentiles (``boot_used`` counts
        the others). One label in the rows: ``auroc`` and the interval NaN, ``boot_used`` 0.

    Raises:
        UsageError: a score that is NaN or infinite, labels other than 0/1, lengths that differ,
            a bad ``n_boot`` or ``level``.
    """
    from sklearn.metrics import roc_auc_score

    _check_boot(n_boot, level)
    s, lab = _scored(scores, labels)
    inv, k = expression_index(clusters)
    if len(inv) != len(s):
        raise UsageError(f"{len(s)} scores but {len(inv)} expressions")
    n_literal = int(lab.sum())
    out: dict[str, Any] = {"n": len(s), "n_literal": n_literal, "n_expressions": k,
                           "auroc": _NAN, "ci_low": _NAN, "ci_high": _NAN, "boot_used": 0}
    if n_literal in (0, len(s)):
        return out
    out["auroc"] = float(roc_auc_score(lab, s))
    draws = _draws(k, n_boot, seed)
    if draws is not None:
        npos, rows = label_counts(inv, lab, k)
        nneg = rows - npos
        num = np.einsum("bi,bi->b", draws @ _pair_counts(s, lab, inv, k), draws)
        den = (draws @ npos) * (draws @ nneg)
        auc = np.divide(num, den, out=np.full_like(num, _NAN), where=den > 0)
        out["ci_low"], out["ci_high"] = _interval(auc, level)
        out["boot_used"] = int(np.isfinite(auc).sum())
    return out


def within_auroc(scores: ArrayLike, labels: ArrayLike, clusters: ArrayLike | Sequence[str], *,
                 n_boot: int, seed: int, level: float = LEVEL) -> dict[str, Any]:
    """The AUROC **within expressions** (label 1 positive), with a cluster-bootstrap interval.

    Only pairs of a literal and an idiomatic use *of the same expression* are compared, so a
    score that merely ranks expressions against each other (their shares of literal uses
    differ) earns nothing: the concordant pairs inside each expression (ties 1/2), summed over
    the expressions that hold both labels, over the pairs inside them (pair-weighted: an
    expression counts by its ``n_literal x n_idiomatic`` pairs). It is the diagonal of the
    ``A[e, f]`` of :func:`cluster_auroc` over the diagonal's pair counts.

    The interval resamples the expressions that hold both labels (the others hold no pair),
    :func:`ncprobe.stats.resample_counts` over them in sorted order: the same draws on any rows
    holding the same such expressions (the ``all`` and ``ambiguous`` subsets alike).

    Args:
        scores, labels, clusters, n_boot, seed, level: as :func:`cluster_auroc`.

    Returns:
        ``{"n_within", "auroc_within", "auroc_within_low", "auroc_within_high"}``: the
        expressions with both labels, the AUROC (NaN where none has both) and its interval
        (NaN without resamples).

    Raises:
        UsageError: as :func:`cluster_auroc`.
    """
    _check_boot(n_boot, level)
    s, lab = _scored(scores, labels)
    inv, k = expression_index(clusters)
    if len(inv) != len(s):
        raise UsageError(f"{len(s)} scores but {len(inv)} expressions")
    out: dict[str, Any] = {"n_within": 0, "auroc_within": _NAN, "auroc_within_low": _NAN,
                           "auroc_within_high": _NAN}
    if not len(s):
        return out
    npos, rows = label_counts(inv, lab, k)
    pairs = npos * (rows - npos)
    both = pairs > 0
    if not both.any():
        return out
    wins = np.diagonal(_pair_counts(s, lab, inv, k))[both]
    pairs = pairs[both]
    out["n_within"] = int(both.sum())
    out["auroc_within"] = float(wins.sum() / pairs.sum())
    draws = _draws(len(pairs), n_boot, seed)
    if draws is not None:   # every drawn expression holds pairs: no resample is undefined
        out["auroc_within_low"], out["auroc_within_high"] = _interval(
            (draws @ wins) / (draws @ pairs), level)
    return out


# ---------------------------------------------------------------------------------------------
# paired tests


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or array is a value, not a missing one
        return False


def _norm(value: Any) -> Any:
    """A key value comparable across tables: missing values alike, numpy scalars as Python
    ones, a whole float as an int (a layer read back as 7.0 is layer 7)."""
    if _missing(value):
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def cell_rows(frame: pd.DataFrame, keys: Sequence[str]) -> dict[tuple, np.ndarray]:
    """The row positions of each cell of ``frame`` (rows sharing the values of ``keys``), in
    order of first appearance, keyed by the values normalised (missing values as None, a
    whole float as an int)."""
    if not len(frame):
        return {}
    groups = frame.groupby(list(keys), sort=False, dropna=False).ngroup().to_numpy()
    order = np.argsort(groups, kind="stable")
    bounds = np.flatnonzero(np.diff(groups[order])) + 1
    values = frame[list(keys)].to_numpy(dtype=object)
    out: dict[tuple, np.ndarray] = {}
    for idx in np.split(order, bounds):
        key = tuple(_norm(v) for v in values[idx[0]])
        # two groups alike once normalised (7 and 7.0) are one cell
        out[key] = np.sort(np.r_[out[key], idx]) if key in out else idx
    return out


def label(key: Mapping[str, Any]) -> str:
    """A cell's short name: its model, layer, level/context and control, where given
    (``"bert-base-cased layer 7 nc/excluded"``, ``"majority"``,
    ``"glove-6b-50d sent/excluded static"``)."""
    parts = []
    model = key.get("model")
    if not _missing(model) and str(model):
        parts.append(str(model))
    layer = _norm(key.get("layer"))
    if layer is not None and str(layer):
        parts.append(f"layer {layer}")
    level, context = key.get("level"), key.get("context")
    if not _missing(level) and str(level):
        parts.append(f"{level}/{context}" if not _missing(context) and str(context)
                     else str(level))
    control = key.get("control")
    if not _missing(control) and str(control):
        parts.append(str(control))
    return " ".join(parts) or "(unnamed cell)"


def _find_cell(key: Any, frame: pd.DataFrame, cache: dict[tuple[str, ...], dict[tuple, np.ndarray]]
               ) -> np.ndarray:
    """The row positions of the cell ``key`` (a dict of key columns) names."""
    if not isinstance(key, Mapping) or not key:
        raise UsageError(f"a pair is (key_a, key_b), each a dict of the prediction table's key "
                         f"columns, not {key!r}")
    names = tuple(key)
    unknown = [c for c in names if c not in frame.columns]
    if unknown:
        raise UsageError(f"the key {dict(key)!r} names column(s) the prediction table lacks: "
                         + ", ".join(map(str, unknown)))
    if names not in cache:
        cache[names] = cell_rows(frame, names)
    rows = cache[names].get(tuple(_norm(key[c]) for c in names))
    if rows is None:
        raise UsageError(f"no rows of the prediction table match the cell {label(key)} "
                         f"({dict(key)!r})")
    return rows


def _row_ids(frame: pd.DataFrame, rows: np.ndarray, key: Mapping[str, Any]) -> pd.Index:
    ids = pd.MultiIndex.from_arrays(
        [frame[c].to_numpy()[rows] for c in ("lang", "split", "row") if c in frame.columns])
    dup = ids.duplicated()
    if dup.any():
        raise UsageError(f"the cell {label(key)} ({dict(key)!r}) holds {int(dup.sum())} test "
                         f"row(s) more than once (first: {ids[dup][0]!r}); give every key "
                         "column so that the key names one cell")
    return ids


def _swap_tests(tests: Sequence[tuple[np.ndarray, np.ndarray]], n_perm: int, seed: int
                ) -> list[tuple[float, bool, str]]:
    """The permutation test of each ``(sums_a, sums_b)`` (per-expression confusion sums of
    the same rows, ``(k, 6)`` each): ``(p, bound, description)`` in order. Tests with the
    same ``k`` share their subsets and one pass over them."""
    out: list[tuple[float, bool, str]] = [(_NAN, False, "")] * len(tests)
    by_k: dict[int, list[int]] = {}
    for i, (sa, _) in enumerate(tests):
        by_k.setdefault(sa.shape[0], []).append(i)
    for k, members in by_k.items():
        ta = np.stack([tests[i][0].sum(axis=0) for i in members])            # (t, 6)
        tb = np.stack([tests[i][1].sum(axis=0) for i in members])
        # a swap moves true positives and predictions (columns 0, 1, 4, 5); gold stays. The
        # counts are whole numbers, exact in float64: the identity and the swap of every
        # expression reproduce the observed totals exactly, hence d and -d to the last bit
        diff = np.stack([(tests[i][1] - tests[i][0])[:, [0, 1, 4, 5]] for i in members],
                        axis=1)
        observed = np.abs(_f1(ta) - _f1(tb))                                  # (t,)
        exact = 2 ** k <= n_perm
        reached = np.zeros(len(members), dtype=np.int64)
        for masks in subset_chunks(k, n_perm, [seed, 2], exact=exact, chunk=_CHUNK):
            per = max(1, _CHUNK // (4 * len(masks)))     # tests per product: bounded memory
            for lo in range(0, len(members), per):
                sl = slice(lo, lo + per)
                d = diff[:, sl, :]
                x = (masks @ d.reshape(k, -1)).reshape(len(masks), -1, 4)   # (rows, t', 4)
                gold = ta[sl, 2:4]
                f1_a = _f1_of(ta[sl, 0:2] + x[..., 0:2], gold + ta[sl, 4:6] + x[..., 2:4])
                f1_b = _f1_of(tb[sl, 0:2] - x[..., 0:2], gold + tb[sl, 4:6] - x[..., 2:4])
                stat = np.abs(f1_a - f1_b)
                reached[sl] += (stat >= observed[sl] - _TOL).sum(axis=0)
        for j, i in enumerate(members):
            if exact:
                out[i] = (float(reached[j] / 2.0 ** k), False,
                          f"cluster swap permutation over expressions (exact, all "
                          f"{2 ** k:,} subsets)")
            else:
                out[i] = (float((1.0 + reached[j]) / (1.0 + n_perm)), bool(reached[j] == 0),
                          f"cluster swap permutation over expressions ({n_perm:,} random "
                          "swaps)")
    return out


def paired_tests(pred_table: pd.DataFrame, pairs: Sequence[tuple[Mapping[str, Any],
                                                                Mapping[str, Any]]], *,
                 family: str, n_boot: int, seed: int, correction: str = "holm",
                 n_perm: int | str = "auto", level: float = LEVEL) -> pd.DataFrame:
    """Paired comparisons of two classifier cells on the same test rows, over expressions.

    Args:
        pred_table: the prediction table (:data:`ncprobe.astitch.linear.PRED_COLUMNS`: a cell's
            key columns, ``lang``, ``row``, ``expression``, ``label``, ``predicted``).
        pairs: ``(key_a, key_b)`` each, a key a dict of key columns and their values naming
            one cell (:data:`ncprobe.astitch.linear.PRED_KEYS`).
        family: the name of this table's family of tests (the ``family`` column).
        n_boot: expression resamples of the interval of the difference (0: NaN).
        seed: the seed of the draws and of the random swaps.
        correction: ``holm``, ``fdr_bh`` or ``none``, over every row of the table.
        n_perm: random swaps per test (0: no test, p NaN); ``"auto"``: enough for the least
            corrected p of this family of ``m`` tests to reach 0.001
            (:func:`ncprobe.stats.choose_flips`: ``1,000 m`` under Holm or BH, at most
            :data:`ncprobe.stats.MAX_FLIPS`). A test on ``k`` expressions with ``2^k <=
            n_perm`` enumerates all ``2^k`` subsets instead (exact).
        level: the coverage of the percentile interval of the difference.

    Returns:
        One row per pair, columns :data:`TEST_COLUMNS`: ``a``, ``b`` (:func:`label` of the
        keys), ``lang``, ``setting`` (a's; ``"x vs y"`` when the two differ), ``n`` (rows),
        ``n_expressions``, ``f1_a``, ``f1_b`` (:func:`macro_f1`), ``diff`` (``f1_a - f1_b``),
        ``diff_low``, ``diff_high`` (paired cluster-bootstrap interval), ``p`` (two-sided
        cluster swap permutation test), ``p_bound`` (no random swap reached ``|diff|``: the
        true p lies below ``1/(B+1)``), ``p_corrected``, ``p_corrected_bound``
        (:func:`ncprobe.stats.correct_bounded`), ``significant`` (``p_corrected <=
        ALPHA``), ``test``, ``correction``, ``family_size`` (the tests corrected together).

    Warns:
        ResolutionWarning: some corrected p's are bounds above 0.001.

    Raises:
        UsageError: two cells of a pair that do not hold the same rows (matched on ``lang``,
            ``split`` where there is one, and ``row``) or not the same labels or expressions
            of them, a key that names no cell or several, a missing column, a bad
            ``n_boot``, ``level``, ``n_perm`` or ``correction``.
    """
    method = check_correction(correction)
    _check_boot(n_boot, level)
    choose_flips(n_perm, 1, method)   # a bad n_perm is refused before any work
    missing = [c for c in _ROW_COLUMNS if c not in pred_table.columns]
    if missing:
        raise UsageError("the prediction table lacks the column(s) " + ", ".join(missing))
    cache: dict[tuple[str, ...], dict[tuple, np.ndarray]] = {}
    y_all = pred_table["label"].to_numpy()
    p_all = pred_table["predicted"].to_numpy()
    expr_all = pred_table["expression"].to_numpy(dtype=object).astype(str)
    rows: list[dict[str, Any]] = []
    tests: list[tuple[np.ndarray, np.ndarray]] = []
    for pair in pairs:
        try:
            key_a, key_b = pair
        except (TypeError, ValueError):
            raise UsageError(f"a pair is (key_a, key_b), not {pair!r}") from None
        ia, ib = _find_cell(key_a, pred_table, cache), _find_cell(key_b, pred_table, cache)
        ids_a, ids_b = _row_ids(pred_table, ia, key_a), _row_ids(pred_table, ib, key_b)
        only = len(ids_a.symmetric_difference(ids_b))
        if only:
            raise UsageError(
                f"cells {label(key_a)} and {label(key_b)} do not hold the same test rows: "
                f"{only} row(s) are in only one of them ({len(ids_a)} and {len(ids_b)} rows); "
                "a paired test needs both scored on the same rows")
        ib = ib[ids_b.get_indexer(ids_a)]     # b's rows in a's order
        y = check_labels(y_all[ia], "the labels")
        if not np.array_equal(y, y_all[ib]) or not np.array_equal(expr_all[ia], expr_all[ib]):
            raise UsageError(f"cells {label(key_a)} and {label(key_b)} give the same rows "
                             "different labels or expressions; a paired test compares two "
                             "classifiers of one task")
        g, pa, inv, k = _prepare(y, p_all[ia], expr_all[ia])
        pb = check_labels(p_all[ib], "the predictions")
        sa, sb = _confusion_sums(g, pa, inv, k), _confusion_sums(g, pb, inv, k)
        f1_a, f1_b = macro_f1(g, pa), macro_f1(g, pb)
        lo = hi = _NAN
        draws = _draws(k, n_boot, seed)
        if draws is not None:
            lo, hi = _interval(_f1(draws @ sa) - _f1(draws @ sb), level)
        # the names and setting from the cells' own rows: a key may give fewer columns
        cell_a, cell_b = pred_table.iloc[ia[0]].to_dict(), pred_table.iloc[ib[0]].to_dict()
        set_a, set_b = _norm(cell_a.get("setting")), _norm(cell_b.get("setting"))
        rows.append({"a": label(cell_a), "b": label(cell_b), "lang": cell_a["lang"],
                     "setting": set_a if set_a == set_b else f"{set_a} vs {set_b}",
                     "n": len(g), "n_expressions": k, "f1_a": f1_a, "f1_b": f1_b,
                     "diff": f1_a - f1_b, "diff_low": lo, "diff_high": hi,
                     "_test": len(tests)})
        tests.append((sa, sb))
    out = paired_family(rows, tests, lambda t, n: _swap_tests(t, n, seed), m=len(tests),
                        n_resamples=n_perm, method=method, family=family,
                        columns=TEST_COLUMNS, option="n_perm", noun="swaps",
                        name="cluster swap permutation over expressions")
    out["p_bound"] = out["p_bound"].astype(bool)
    return out


def paired_auroc_diff(scores_a: ArrayLike, scores_b: ArrayLike, labels: ArrayLike,
                      clusters: ArrayLike | Sequence[str], *, n_boot: int, seed: int,
                      level: float = LEVEL) -> dict[str, Any]:
    """The AUROC of ``scores_a`` minus that of ``scores_b`` on the same rows (label 1
    positive), with a paired cluster-bootstrap interval and p-value: the expressions are
    resampled once per draw for both (the draws of :func:`cluster_auroc`, the same seed).

    Returns:
        ``{"n", "n_expressions", "auroc_a", "auroc_b", "diff", "ci_low", "ci_high", "p",
        "boot_used"}``: ``p`` is the two-sided bootstrap p-value, ``min(1, 2 min(P(d <= 0),
        P(d >= 0)))`` over the draws with both AUROCs defined, never below ``2 / (used + 1)``
        (NaN without draws).

    Raises:
        UsageError: as :func:`cluster_auroc`, or scores of different lengths.
    """
    _check_boot(n_boot, level)
    a, lab = _scored(scores_a, labels)
    b, _ = _scored(scores_b, labels)
    if len(a) != len(b):
        raise UsageError(f"{len(a)} scores on side a but {len(b)} on side b: pair the same rows")
    inv, k = expression_index(clusters)
    if len(inv) != len(a):
        raise UsageError(f"{len(a)} scores but {len(inv)} expressions")
    auc_a = float(weighted_auroc(a, lab, np.ones(len(a)))[0])
    auc_b = float(weighted_auroc(b, lab, np.ones(len(b)))[0])
    out: dict[str, Any] = {"n": len(a), "n_expressions": k, "auroc_a": auc_a, "auroc_b": auc_b,
                           "diff": auc_a - auc_b, "ci_low": _NAN,
                           "ci_high": _NAN, "p": _NAN, "boot_used": 0}
    draws = _draws(k, n_boot, seed)
    if draws is None or not np.isfinite(out["diff"]):
        return out
    npos, rows = label_counts(inv, lab, k)
    den = (draws @ npos) * (draws @ (rows - npos))

    def auc(s: np.ndarray) -> np.ndarray:
        num = np.einsum("bi,bi->b", draws @ _pair_counts(s, lab, inv, k), draws)
        return np.divide(num, den, out=np.full_like(num, _NAN), where=den > 0)

    d = auc(a) - auc(b)
    d = d[np.isfinite(d)]
    out["ci_low"], out["ci_high"] = _interval(d, level)
    out["boot_used"] = len(d)
    if len(d):
        tail = min(float(np.mean(d <= 0)), float(np.mean(d >= 0)))
        out["p"] = min(1.0, max(2.0 * tail, 2.0 / (len(d) + 1)))
    return out
