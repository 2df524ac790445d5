"""The NCC probe's statistics: accuracy and macro-F1 with bootstrap intervals, per-class
scores, confusion counts, and paired tests of a classifier against a system on the same items.

Items are the unit (a compound appears once). Every interval is a 95% percentile bootstrap
over items from the ``(n_boot, n)`` draw counts of :func:`ncprobe.stats.resample_counts`
(``numpy.random.default_rng(seed).integers(0, n, (n_boot, n))``, the items in the order given;
the tables sort them by item id): the same seed gives the same interval on every run, and
every statistic of ``n`` items, accuracy, macro-F1 and the paired difference alike, is
computed on the same resamples (common random numbers).

* :func:`accuracy_ci`, :func:`macro_f1`, :func:`macro_f1_ci`, :func:`scores`: a row's
  headline numbers. Macro-F1 is scikit-learn's ``f1_score(average="macro", labels=NCC_CLASSES,
  zero_division=0)``: an answer that is not a class (``none``, ``unanswered``) is never right
  and counts against the gold class's recall. It is computed, for the items and for every
  resample at once, from (weighted) counts: each class's ``2 TP / (n_gold + n_predicted)`` (0
  where both are 0), the same number as ``f1_score`` on those items (the tests compare them)
  at a fraction of its cost.
* :func:`per_class` (precision, recall, F1 per class) and :func:`confusion` (tidy counts).
* :func:`paired_test`: two rows' correctness on the same items: the accuracy difference with
  a paired percentile bootstrap interval (the same resampled items for both) and McNemar's
  exact test, ``scipy.stats.binomtest(a_only, a_only + b_only, 0.5).pvalue`` (two-sided),
  1.0 when no item is discordant.
* :func:`accuracy_table`, :func:`per_class_table`, :func:`confusion_table`,
  :func:`tests_table`: the tables of the NCC results from the ``items`` table (one row per
  system row x item, keyed by :data:`KEYS`). :func:`tests_table` compares every classifier
  row (``representation``, ``selected``, ``ceiling``) with every system row (``published``,
  ``behaviour``) on the items both hold (a system is compared on the items its file answered
  only), and corrects the p-values family by family, the families fixed by the question
  (:func:`family_of`), so that a test's corrected p never depends on which other models
  shared the run.
* :func:`maxt_adjusted`: the correction by default, Westfall & Young's step-down max-T over
  joint item permutations: the paired null of every test of a family at once, each item's two
  answers swapped (or not) together in every test, so the strong dependence between the tests
  (the same items, the same systems) is kept, where Holm assumes the worst case.
* :func:`baseline_table`: the rows ``kind`` ``baseline``: what a rule that reads no item
  scores on these items' gold classes (uniform, stratified, majority over the three classes;
  uniform over the four options of the published prompts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..config import N_BOOT as N_BOOT  # the one default of every probe
from ..significance import ALPHA
from ..stats import correct as correct_p_values
from ..stats import one_blas_thread, resample_counts
from . import NCC_CLASSES, check_ncc_correction

#: The columns that name a row of the NCC tables (a system, or a classifier of one model).
KEYS: tuple[str, ...] = ("system", "kind", "setting", "layer", "level", "measure")
#: The rows that classify from a representation or the gold score (the ``a`` of a test) ...
CLASSIFIER_KINDS: tuple[str, ...] = ("representation", "selected", "ceiling")
#: ... and the rows that answer the question (the ``b`` of a test).
SYSTEM_KINDS: tuple[str, ...] = ("published", "behaviour")
#: Rows of the accuracy table only, never of the items table: what a rule that reads no item
#: scores (:func:`baseline_table`).
BASELINE = "baseline"
LEVEL = 0.95

#: The joint item permutations of ``maxt`` (the identity among them: the smallest p is
#: 1 / 10,000).
PERMUTATIONS = 10_000
#: How ``maxt`` is named in the tables' notes and the summary.
MAXT_NAME = (f"max-T corrected (Westfall-Young step-down over {PERMUTATIONS:,} joint item "
             "permutations of the paired answers, McNemar z)")

TESTS_COLUMNS: tuple[str, ...] = (
    "a", "b", "kind_a", "kind_b", "n", "accuracy_a", "accuracy_b", "diff", "diff_low",
    "diff_high", "a_only", "b_only", "p", "p_corrected", "significant", "correction", "family",
    "family_size")

_NAN = float("nan")
_SCORES = ("n", "accuracy", "ci_low", "ci_high", "macro_f1", "f1_low", "f1_high")


def label(row: Mapping[str, Any]) -> str:
    """A row's name: its non-empty ``system``, ``setting``, ``layer``, ``level``, ``measure``
    joined by spaces (``glove-6b-50d single - nc syn``, ``gpt-5 0-shot``)."""
    parts = (row.get(k, "") for k in ("system", "setting", "layer", "level", "measure"))
    return " ".join(str(p) for p in parts if isinstance(p, str) and p)


def _bools(values: ArrayLike, what: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{what} must be one value per item, got shape {array.shape}")
    if array.dtype != bool:
        if not np.isin(array, (0, 1)).all():
            raise ValueError(f"{what} must be true/false per item")
        array = array.astype(bool)
    return array


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(values, [tail, 100.0 - tail], axis=-1)
    return float(lo), float(hi)


def accuracy_ci(correct: ArrayLike, n_boot: int = N_BOOT, seed: int = 0,
                level: float = LEVEL) -> tuple[float, float, float]:
    """``(accuracy, low, high)``: the fraction right and its percentile bootstrap interval over
    items (NaN for no items; the interval NaN for ``n_boot < 1``)."""
    right = _bools(correct, "correct").astype(np.float64)
    n = len(right)
    if not n:
        return (_NAN, _NAN, _NAN)
    accuracy = float(right.mean())
    if n_boot < 1:
        return (accuracy, _NAN, _NAN)
    return (accuracy, *_interval(resample_counts(n, n_boot, seed) @ right / n, level))


def _labels(gold: Sequence[str] | ArrayLike, pred: Sequence[str] | ArrayLike,
            classes: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    g = np.asarray(gold, dtype=object).ravel()
    p = np.asarray(pred, dtype=object).ravel()
    if len(g) != len(p):
        raise ValueError(f"gold holds {len(g)} items but the predictions {len(p)}")
    unknown = sorted({str(v) for v in g if v not in classes})
    if unknown:
        raise ValueError(f"gold holds labels outside the classes {tuple(classes)}: "
                         f"{', '.join(repr(u) for u in unknown[:5])}")
    return g, p


def macro_f1(gold: Sequence[str] | ArrayLike, pred: Sequence[str] | ArrayLike,
             classes: Sequence[str] = NCC_CLASSES) -> float:
    """The mean over ``classes`` of each class's F1, ``2 TP / (n_gold + n_predicted)`` (0
    where both are 0): scikit-learn's ``f1_score(average="macro", labels=classes,
    zero_division=0)``, computed from counts (the tests compare the two) because the
    bootstrap needs the same number for a thousand resamples. NaN for no items."""
    g, p = _labels(gold, pred, classes)
    if not len(g):
        return _NAN
    return float(_resampled_macro_f1(g, p, np.ones((1, len(g))), classes)[0])


def _resampled_macro_f1(g: np.ndarray, p: np.ndarray, counts: np.ndarray,
                        classes: Sequence[str]) -> np.ndarray:
    """Macro-F1 of each resample (a row of ``counts``, how often each item was drawn). An
    answer outside the classes (``none``, ``unanswered``) is a miss of its gold class and a
    prediction of no class."""
    is_gold = np.stack([g == c for c in classes], axis=1)                       # (n, K)
    is_pred = np.stack([p == c for c in classes], axis=1)
    k = len(classes)
    # one product for the three counts; integer sums, exact in float64 in any order
    summed = counts @ np.hstack([is_gold & is_pred, is_gold, is_pred]).astype(np.float64)
    tp, both = summed[:, :k], summed[:, k:2 * k] + summed[:, 2 * k:]
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(both > 0, 2.0 * tp / both, 0.0)
    return f1.mean(axis=1)


def macro_f1_ci(gold: Sequence[str] | ArrayLike, pred: Sequence[str] | ArrayLike,
                n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL,
                classes: Sequence[str] = NCC_CLASSES) -> tuple[float, float, float]:
    """``(macro_f1, low, high)``, the interval from the resamples of :func:`accuracy_ci`."""
    g, p = _labels(gold, pred, classes)
    value = macro_f1(g, p, classes)
    if not len(g) or n_boot < 1:
        return (value, _NAN, _NAN)
    resampled = _resampled_macro_f1(g, p, resample_counts(len(g), n_boot, seed), classes)
    return (value, *_interval(resampled, level))


def scores(gold: Sequence[str] | ArrayLike, pred: Sequence[str] | ArrayLike,
           n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL,
           classes: Sequence[str] = NCC_CLASSES) -> dict[str, Any]:
    """A row of the ``accuracy`` table but its keys: ``n``, ``accuracy``, ``ci_low``,
    ``ci_high``, ``macro_f1``, ``f1_low``, ``f1_high`` (an item is right where its prediction
    equals its gold class)."""
    g, p = _labels(gold, pred, classes)
    accuracy, lo, hi = accuracy_ci(g == p, n_boot, seed, level)
    f1, f1_lo, f1_hi = macro_f1_ci(g, p, n_boot, seed, level, classes)
    return dict(zip(_SCORES, (len(g), accuracy, lo, hi, f1, f1_lo, f1_hi), strict=True))


def per_class(gold: Sequence[str] | ArrayLike, pred: Sequence[str] | ArrayLike,
              classes: Sequence[str] = NCC_CLASSES) -> pd.DataFrame:
    """One row per class: ``cls``, ``n`` (gold items of the class), ``precision``, ``recall``,
    ``f1`` (scikit-learn's ``precision_recall_fscore_support``, ``zero_division=0``)."""
    from sklearn.metrics import precision_recall_fscore_support

    g, p = _labels(gold, pred, classes)
    if not len(g):
        zeros = [0] * len(classes)
        nans = [_NAN] * len(classes)
        return pd.DataFrame({"cls": list(classes), "n": zeros, "precision": nans,
                             "recall": nans, "f1": nans})
    precision, recall, f1, support = precision_recall_fscore_support(
        g.astype(str), p.astype(str), labels=list(classes), zero_division=0)
    return pd.DataFrame({"cls": list(classes), "n": np.asarray(support, dtype=np.int64),
                         "precision": precision, "recall": recall, "f1": f1})


def confusion(gold: Sequence[str] | ArrayLike, pred: Sequence[str] | ArrayLike,
              classes: Sequence[str] = NCC_CLASSES) -> pd.DataFrame:
    """Tidy confusion counts: ``gold``, ``predicted``, ``count``; every gold class x every
    class (zeros included), then each other answer given (``none``, ``unanswered``, in order of
    first appearance) x every gold class."""
    g, p = _labels(gold, pred, classes)
    answers = list(classes) + list(dict.fromkeys(str(v) for v in p if v not in classes))
    rows = [(gc, pc, int(((g == gc) & (p == pc)).sum())) for gc in classes for pc in answers]
    return pd.DataFrame(rows, columns=["gold", "predicted", "count"]).astype(
        {"count": np.int64})


@lru_cache(maxsize=4096)
def _mcnemar(a_only: int, b_only: int) -> float:
    """McNemar's exact two-sided p: the binomial test of ``a_only`` of the discordant items
    against one half (1.0 when none is discordant)."""
    if a_only + b_only == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(a_only, a_only + b_only, 0.5).pvalue)


def paired_test(correct_a: ArrayLike, correct_b: ArrayLike, n_boot: int = N_BOOT,
                seed: int = 0, level: float = LEVEL) -> dict[str, Any]:
    """Rows ``a`` and ``b`` on the same items (position ``i`` is one item in both).

    Returns:
        ``n``, ``accuracy_a``, ``accuracy_b``, ``diff`` (a - b, a fraction), ``diff_low``,
        ``diff_high`` (the percentile interval of the difference over the resamples of
        :func:`accuracy_ci`, the same items drawn for both), ``a_only`` (items a gets right
        and b wrong), ``b_only``, ``p`` (McNemar's exact test; NaN with the accuracies for no
        items).
    """
    a = _bools(correct_a, "correct_a")
    b = _bools(correct_b, "correct_b")
    if len(a) != len(b):
        raise ValueError(f"paired_test needs the same items: {len(a)} and {len(b)} values")
    return _paired(a, b, n_boot, seed, level)


def _paired(a: np.ndarray, b: np.ndarray, n_boot: int, seed: int, level: float
            ) -> dict[str, Any]:
    n = len(a)
    a_only, b_only = int((a & ~b).sum()), int((~a & b).sum())
    if not n:
        return {"n": 0, "accuracy_a": _NAN, "accuracy_b": _NAN, "diff": _NAN,
                "diff_low": _NAN, "diff_high": _NAN, "a_only": 0, "b_only": 0, "p": _NAN}
    accuracy_a, accuracy_b = float(a.mean()), float(b.mean())
    lo = hi = _NAN
    if n_boot >= 1:
        diffs = resample_counts(n, n_boot, seed) @ (a.astype(np.float64) - b) / n
        lo, hi = _interval(diffs, level)
    return {"n": n, "accuracy_a": accuracy_a, "accuracy_b": accuracy_b,
            "diff": accuracy_a - accuracy_b, "diff_low": lo, "diff_high": hi,
            "a_only": a_only, "b_only": b_only, "p": _mcnemar(a_only, b_only)}


# ---------------------------------------------------------------------------------------------
# the tables, from the items table


def _check_items(items: pd.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in items.columns]
    if missing:
        raise ValueError(f"the items table lacks the column(s) {', '.join(missing)}")
    kinds = set(items["kind"].unique()) - set(CLASSIFIER_KINDS) - set(SYSTEM_KINDS)
    if kinds:
        raise ValueError(f"the items table holds unknown kinds {sorted(map(str, kinds))}: use "
                         f"{', '.join(CLASSIFIER_KINDS + SYSTEM_KINDS)}")
    twice = items.duplicated(subset=[*KEYS, "item"])
    if twice.any():
        first = items[twice].iloc[0]
        raise ValueError(f"the items table holds {int(twice.sum())} repeated row x item "
                         f"pair(s), e.g. item {first['item']!r} of {label(first)!r}")
    if "correct" in columns and "predicted" in columns:
        right = items["gold"].to_numpy(object) == items["predicted"].to_numpy(object)
        if not (items["correct"].to_numpy(bool) == right).all():
            raise ValueError("the items table's `correct` disagrees with gold == predicted")


def _rows(items: pd.DataFrame) -> tuple[pd.DataFrame, list[np.ndarray]]:
    """The rows of the tables: their key columns, in order of first appearance, and the
    positions of each row's lines in ``items``, sorted by item id."""
    grouped = items.groupby(list(KEYS), sort=False, dropna=False)
    keys = grouped.head(1)[list(KEYS)].reset_index(drop=True)
    group = grouped.ngroup().to_numpy()
    order = np.lexsort((items["item"].astype(str).to_numpy(), group))
    bounds = np.searchsorted(group[order], np.arange(len(keys) + 1))
    return keys, [order[bounds[k]:bounds[k + 1]] for k in range(len(keys))]


def accuracy_table(items: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0,
                   level: float = LEVEL, classes: Sequence[str] = NCC_CLASSES) -> pd.DataFrame:
    """The ``accuracy`` table: :data:`KEYS`, then :func:`scores` of each row's items (sorted
    by item id), rows in order of first appearance."""
    _check_items(items, [*KEYS, "item", "gold", "predicted", "correct"])
    keys, parts = _rows(items)
    gold, pred = items["gold"].to_numpy(object), items["predicted"].to_numpy(object)
    with one_blas_thread():
        rows = [scores(gold[at], pred[at], n_boot, seed, level, classes) for at in parts]
    out = pd.concat([keys, pd.DataFrame(rows, index=keys.index, columns=list(_SCORES))], axis=1)
    return out.astype({"n": np.int64})


def per_class_table(items: pd.DataFrame, classes: Sequence[str] = NCC_CLASSES) -> pd.DataFrame:
    """The ``per_class`` table: :data:`KEYS`, then :func:`per_class` of each row."""
    return _per_row(items, lambda g, p: per_class(g, p, classes))


def confusion_table(items: pd.DataFrame, classes: Sequence[str] = NCC_CLASSES) -> pd.DataFrame:
    """The ``confusion`` table: :data:`KEYS`, then :func:`confusion` of each row."""
    return _per_row(items, lambda g, p: confusion(g, p, classes))


def _per_row(items: pd.DataFrame,
             table: Callable[[np.ndarray, np.ndarray], pd.DataFrame]) -> pd.DataFrame:
    _check_items(items, [*KEYS, "item", "gold", "predicted"])
    keys, parts = _rows(items)
    gold, pred = items["gold"].to_numpy(object), items["predicted"].to_numpy(object)
    frames = []
    for number, at in enumerate(parts):
        rows = table(gold[at], pred[at]).reset_index(drop=True)
        head = keys.iloc[[number] * len(rows)].reset_index(drop=True)
        frames.append(pd.concat([head, rows], axis=1))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(KEYS))


def family_name(models: Sequence[str]) -> str:
    """The family of a model's classifiers against the published systems (and its own
    answers): ``classifiers vs systems: <model>``."""
    return f"classifiers vs systems: {', '.join(models)}"


#: The family of the gold ceiling against the published systems.
CEILING_FAMILY = "gold ceiling vs systems"


def family_of(kind_a: str, system_a: str, kind_b: str, system_b: str) -> str:
    """The family of the test of classifier row ``a`` against system row ``b``, fixed by the
    question, never by what else ran:

    * a model's classifiers (representation, selected) against the published systems and
      that model's own answers: ``classifiers vs systems: <model>`` (:func:`family_name`);
    * the gold ceiling against the published systems: ``gold ceiling vs systems``;
    * a model's classifiers against *another* model's answers:
      ``classifiers vs systems: <model> vs <other>'s answers``; the ceiling against a model's
      answers: ``gold ceiling vs <model>'s answers``.
    """
    ceiling = kind_a == "ceiling"
    if kind_b == "published" or (not ceiling and system_a == system_b):
        return CEILING_FAMILY if ceiling else family_name([system_a])
    return (f"gold ceiling vs {system_b}'s answers" if ceiling
            else f"{family_name([system_a])} vs {system_b}'s answers")


def maxt_adjusted(diffs: ArrayLike, signs: ArrayLike) -> np.ndarray:
    """Westfall & Young's step-down max-T adjusted p-values of ``m`` paired tests.

    Test ``j``'s statistic is McNemar's ``z``: ``|sum_i d_ij| / sqrt(#{i: d_ij != 0})`` (0
    where no item is discordant), ``d_ij`` = a right - b right on item ``i`` (-1, 0, 1; 0 for
    an item the test does not hold). Under the paired null each item's two answers may be
    swapped, which flips the sign of its ``d``; a row of ``signs`` swaps the same items in
    every test at once. With the tests ranked by their observed statistic (largest first,
    ties in the given order), the adjusted p of the test ranked ``k`` is the share of rows
    whose largest statistic among the tests ranked ``k`` or later reaches its observed one,
    then made non-decreasing along the ranks (Westfall & Young 1993, algorithm 2.8).

    Args:
        diffs: ``(m, n)``, each test's ``d`` per item.
        signs: ``(B, n)`` of +1 and -1, the swaps: every one of the ``2^n`` for the exact
            test, or the identity and ``B - 1`` random ones (:func:`item_swaps`).

    Returns:
        ``(m,)`` adjusted p-values, in the order of ``diffs``.
    """
    d = np.asarray(diffs, dtype=np.float64)
    flips = np.asarray(signs, dtype=np.float64)
    if d.ndim != 2 or flips.ndim != 2 or flips.shape[1] != d.shape[1] or not len(flips):
        raise ValueError(f"maxt_adjusted needs diffs (m, n) and signs (B, n), got "
                         f"{d.shape} and {flips.shape}")
    m = d.shape[0]
    if not m:
        return np.empty(0)
    discordant = (d != 0).sum(axis=1)
    scale = np.where(discordant > 0, 1.0 / np.sqrt(np.maximum(discordant, 1)), 0.0)
    observed = np.abs(d.sum(axis=1)) * scale
    order = np.argsort(-observed, kind="stable")
    ranked, ranked_scale = d[order].T, scale[order]
    # a maximum equal to the observed statistic of another test counts as reaching it
    reach = observed[order] * (1.0 - 1e-12)
    hits = np.zeros(m)
    for start in range(0, len(flips), 512):  # a block of swaps at a time: bounded memory
        t = np.abs(flips[start:start + 512] @ ranked) * ranked_scale          # (b, m)
        successive = np.maximum.accumulate(t[:, ::-1], axis=1)[:, ::-1]
        hits += (successive >= reach).sum(axis=0)
    adjusted = np.maximum.accumulate(hits / len(flips))
    out = np.empty(m)
    out[order] = adjusted
    return out


def item_swaps(n: int, permutations: int = PERMUTATIONS, seed: int = 0) -> np.ndarray:
    """``(permutations, n)`` signs: the identity (no item swapped) first, then
    ``permutations - 1`` draws of each item swapped or not with probability one half
    (``numpy.random.default_rng(seed)``): the same swaps for the same ``n`` and seed."""
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, 2, size=(max(permutations - 1, 0), n), dtype=np.int8) * 2 - 1
    return np.vstack([np.ones((1, n), dtype=np.int8), drawn])


def correct_families(tests: pd.DataFrame, diffs: np.ndarray, correction: str, *,
                     seed: int = 0, permutations: int = PERMUTATIONS) -> pd.DataFrame:
    """``tests`` (columns ``p`` and ``family``; row ``j``'s paired differences per item in
    ``diffs[j]``) with ``p_corrected``, ``significant``, ``correction`` and ``family_size``
    added: each family corrected on its own, by :func:`maxt_adjusted` over
    :func:`item_swaps` (``maxt``) or :func:`ncprobe.stats.correct`. A test without items
    (p NaN) is no part of its family and stays NaN."""
    method = check_ncc_correction(correction)
    out = tests.copy()
    p = out["p"].to_numpy(np.float64)
    corrected = np.full(len(out), np.nan)
    sizes = np.zeros(len(out), dtype=np.int64)
    families = out["family"].astype(str).to_numpy()
    swaps = (item_swaps(diffs.shape[1], permutations, seed)
             if method == "maxt" and len(out) else None)
    for name in dict.fromkeys(families):
        at = np.flatnonzero(families == name)
        ok = at[~np.isnan(p[at])]
        sizes[at] = len(ok)
        if swaps is not None:
            corrected[ok] = maxt_adjusted(diffs[ok], swaps)
        else:
            corrected[at] = correct_p_values(p[at], method)  # type: ignore[arg-type]
    out["p_corrected"] = corrected
    out["significant"] = np.nan_to_num(corrected, nan=np.inf) <= ALPHA
    out["correction"] = method
    out["family_size"] = sizes
    return out[list(TESTS_COLUMNS)]


def tests_table(items: pd.DataFrame, *, n_boot: int = N_BOOT, seed: int = 0,
                correction: str = "maxt", level: float = LEVEL,
                permutations: int = PERMUTATIONS) -> pd.DataFrame:
    """The ``tests`` table: every classifier row against every system row, on the same items.

    Args:
        items: the ``items`` table (at least :data:`KEYS`, ``item``, ``correct``; one line per
            row x item the row answered).
        n_boot, seed, level: the paired bootstrap (:func:`paired_test`); ``seed`` also draws
            the permutations of ``maxt``.
        correction: ``maxt`` (default), ``holm``, ``fdr_bh`` or ``none``, within each family
            of :func:`family_of` (:func:`correct_families`).
        permutations: the joint item permutations of ``maxt``.

    Returns:
        :data:`TESTS_COLUMNS`, one row per classifier row (``a``, in order of first
        appearance) x system row (``b``). ``n`` counts the items both rows hold (for a
        classifier that scores every item, the items in b's file); the items enter the
        bootstrap sorted by item id, so pairs on the same items share their resamples.
        ``family_size`` counts the tests of the row's family with a p-value (``n > 0``);
        ``significant`` is ``p_corrected <= 0.05``.

    Raises:
        ValueError: a missing column, an unknown kind, or an item twice in a row.
    """
    _check_items(items, [*KEYS, "item", "correct"])
    keys, parts = _rows(items)
    ids = np.sort(items["item"].astype(str).unique())
    column = np.searchsorted(ids, items["item"].astype(str).to_numpy())
    correct = items["correct"].to_numpy(bool)
    # row x item: whether the row holds the item, and whether it got it right
    held = np.zeros((len(keys), len(ids)), dtype=bool)
    right = np.zeros((len(keys), len(ids)), dtype=bool)
    for number, at in enumerate(parts):
        held[number, column[at]] = True
        right[number, column[at]] = correct[at]
    names = [label(row) for row in keys.to_dict("records")]
    kinds = keys["kind"].astype(str).tolist()
    systems = keys["system"].astype(str).tolist()
    rows, diffs = [], []
    with one_blas_thread():
        for a in (i for i, k in enumerate(kinds) if k in CLASSIFIER_KINDS):
            for b in (i for i, k in enumerate(kinds) if k in SYSTEM_KINDS):
                both = held[a] & held[b]
                test = _paired(right[a, both], right[b, both], n_boot, seed, level)
                rows.append({"a": names[a], "b": names[b], "kind_a": kinds[a],
                             "kind_b": kinds[b], **test,
                             "family": family_of(kinds[a], systems[a], kinds[b], systems[b])})
                diffs.append(np.where(both, right[a].astype(np.int8) - right[b], 0))
    out = pd.DataFrame(rows, columns=[c for c in TESTS_COLUMNS if c not in (
        "p_corrected", "significant", "correction", "family_size")])
    out = correct_families(out, np.array(diffs, dtype=np.int8).reshape(len(rows), len(ids)),
                           correction, seed=seed, permutations=permutations)
    return out.astype({"n": np.int64, "a_only": np.int64, "b_only": np.int64,
                       "significant": bool, "family_size": np.int64})


# ---------------------------------------------------------------------------------------------
# the baselines


#: The baseline rows: (system, setting, what it is). ``3-way``: the classifiers' task (three
#: classes); ``4-option``: the published prompts' (four options, the 4th never right).
BASELINES: tuple[tuple[str, str, str], ...] = (
    ("uniform", "3-way", "each class with probability 1/3"),
    ("stratified", "3-way", "each class with its share of the gold classes"),
    ("majority", "3-way", "always the most frequent gold class"),
    ("four_options", "4-option", "each of the four options with probability 1/4"),
)


def baseline_table(gold: Sequence[str] | ArrayLike, classes: Sequence[str] = NCC_CLASSES
                   ) -> pd.DataFrame:
    """The ``baseline`` rows of the accuracy table: what each rule of :data:`BASELINES` scores
    on ``gold`` (its expected accuracy, and its macro-F1 from the expected counts: class
    ``c`` predicted ``q_c n`` times, ``p_c q_c n`` of them right, F1 ``2 p_c q_c / (p_c +
    q_c)``), ``n`` the items, no interval (a rule, not a sample of answers).

    The majority class is the first of the most frequent (in ``classes``' order)."""
    g = np.asarray(gold, dtype=object).ravel()
    n = len(g)
    share = np.array([(g == c).sum() for c in classes], dtype=np.float64) / max(n, 1)
    k = len(classes)
    majority = np.zeros(k)
    majority[int(np.argmax(share))] = 1.0
    predicted = {"uniform": np.full(k, 1.0 / k), "stratified": share, "majority": majority,
                 "four_options": np.full(k, 1.0 / (k + 1))}
    rows = []
    for system, setting, _ in BASELINES:
        q = predicted[system]
        with np.errstate(invalid="ignore", divide="ignore"):
            f1 = np.where(share + q > 0, 2.0 * share * q / (share + q), 0.0)
        rows.append({"system": system, "kind": BASELINE, "setting": setting, "layer": "",
                     "level": "", "measure": "", "n": n,
                     "accuracy": float(share @ q) if n else _NAN, "ci_low": _NAN,
                     "ci_high": _NAN, "macro_f1": float(f1.mean()) if n else _NAN,
                     "f1_low": _NAN, "f1_high": _NAN})
    return pd.DataFrame(rows).astype({"n": np.int64})
