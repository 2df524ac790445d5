"""The AStitch linear probe: an L2 logistic regression on frozen vectors, its baselines and
controls, and its table.

* :func:`fit_predict`: standardisation then logistic regression (scikit-learn, ``lbfgs``, L2,
  deterministic), fitted on a setting's training split once per regularisation strength of
  :data:`C_GRID`; the ``C`` of the best dev macro-F1 (ties: the smallest ``C``, the strongest
  regularisation) predicts the test split. When dev picks an end of the grid, the grid is
  extended past it, ten times further each step (:data:`MAX_EXTEND` steps at most), until dev
  picks a ``C`` inside it; what was extended, and a choice still at an edge, is in the fits
  table. The model is not refitted on train + dev: dev chooses, test is reported, as the task
  intends. Its test scores (the decision function) give a threshold-free AUROC beside the
  macro-F1.
* the controls (:data:`ncprobe.astitch.CONTROLS`) that say what a probe's number means:
  :func:`majority` (the most frequent training label), :func:`expression_only` (the label most
  frequent for the expression in training: what memorising the expression gets, without the
  sentence), the static model (the same probe on GloVe vectors: the lead runs it), and two
  control tasks, each fitted with the task probe's ``C`` (:func:`fit_fixed`; never chosen on
  its own noise labels): the Hewitt and Liang (2019) **type control**
  (:func:`control_labels`: each expression type gets a random label, the same probe learns
  it) and the **within-expression permutation control** (:func:`within_permutation`: the
  training labels shuffled among each expression's uses, every expression keeping its
  idiomatic share, :data:`WITHIN_DRAWS` seeded draws, the probe fitted per draw and scored on
  the true test labels: what the probe makes of the expression type alone). *Selectivity* =
  task F1 - control F1, against each.
* the baselines and ceilings (:data:`BASELINES`, ``probe_kind`` ``baseline``): the training
  majority, the test majority (the best constant), stratified chance (:func:`chance_draws`:
  random labels at the training split's label shares, the mean over seeded draws) and the
  **type oracle** (:func:`type_oracle`: each expression's majority label in the evaluated
  split: the most a reader of the expression type alone can score).
* :func:`linear_table`: per cell (:data:`PRED_KEYS`) and subset
  (:data:`ncprobe.astitch.stats.SUBSETS`: every test use, and the uses of ambiguous
  expressions, those with both labels in the test split) the test macro-F1 and accuracy with
  cluster-bootstrap intervals over expressions, the AUROC of the probe's scores, both
  controls' F1 and the selectivity against each with their intervals
  (:mod:`ncprobe.astitch.stats`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..errors import UsageError
from . import IDIOMATIC, LITERAL
from .stats import (
    LEVEL,
    SUBSETS,
    ambiguous,
    cell_rows,
    check_labels,
    cluster_auroc,
    cluster_scores,
    draw_scores,
    expression_index,
    label_counts,
    macro_f1,
    selectivity,
)

__all__ = ["BASELINES", "CONTROL_TASKS", "C_GRID", "FIT_COLUMNS", "LINEAR_COLUMNS", "LinearFit",
           "MAX_EXTEND", "MAX_ITER", "PRED_COLUMNS", "PRED_KEYS", "PRED_OPTIONAL", "WITHIN",
           "WITHIN_DRAWS",
           "MDL_COLUMNS", "MDL_KEYS",
           "chance_draws", "classifier", "control_labels", "expression_only", "fit_fixed",
           "fit_predict", "linear_table", "majority", "mdl_rows", "type_oracle",
           "within_permutation"]

#: The inverse regularisation strengths tried, the choice made on dev (extended past an end
#: that dev picks, :data:`MAX_EXTEND`).
C_GRID: tuple[float, ...] = (0.0001, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0)
#: Steps (each ten times further) by which the grid is extended past an end that dev picks.
MAX_EXTEND = 3
#: lbfgs's iterations at most (a fit that stops there is flagged, not refused).
MAX_ITER = 2000
#: The draws of the within-expression permutation control (and of stratified chance).
WITHIN_DRAWS = 20
#: The ``control`` of the within-expression permutation control's prediction rows.
WITHIN = "within"
#: The control tasks, named by what each controls for (the ``control`` of a JSON control
#: row): ``type`` (Hewitt and Liang: one random label per expression type) and ``within``
#: (the labels shuffled among each expression's uses).
CONTROL_TASKS: tuple[str, ...] = ("type", WITHIN)
#: The baselines and ceilings (``probe_kind`` ``baseline``, the name in ``control``).
BASELINES: tuple[str, ...] = ("majority_train", "majority_test", "chance", "type_oracle")
#: The columns that name a cell of the prediction table (one classifier, or one control).
PRED_KEYS: tuple[str, ...] = ("model", "lang", "setting", "layer", "level", "context",
                              "probe_kind", "control")
#: The prediction table: one row per cell x test row (x draw, for the rows of a drawn control:
#: ``draw`` 0, 1, ...; -1 elsewhere); ``decision``: the probe's decision function (NaN for a
#: baseline). A table without ``draw`` or ``decision`` (older results) reads as -1 and NaN.
PRED_COLUMNS: tuple[str, ...] = (*PRED_KEYS, "row", "expression", "label", "predicted",
                                 "control_label", "control_predicted", "draw", "decision")
#: The prediction columns a table given to :func:`linear_table` may lack.
PRED_OPTIONAL: tuple[str, ...] = ("draw", "decision")
#: The fits table: one row per cell (``extended``: the C values added past the grid's ends;
#: ``edge``: dev's choice still an end of the extended grid).
FIT_COLUMNS: tuple[str, ...] = (*PRED_KEYS, "C", "dev_macro_f1", "control_C", "converged",
                                "extended", "edge")
#: The columns of :func:`linear_table`.
LINEAR_COLUMNS: tuple[str, ...] = (*PRED_KEYS, "C", "dev_macro_f1", "n", "n_expressions",
                                   "macro_f1", "f1_low", "f1_high", "accuracy", "acc_low",
                                   "acc_high", "control_f1", "control_low", "control_high",
                                   "selectivity", "sel_low", "sel_high", "subset", "auroc",
                                   "auroc_low", "auroc_high", "within_f1", "within_low",
                                   "within_high", "within_sel", "wsel_low", "wsel_high",
                                   "n_draws")

#: The columns that name an MDL row: a linear cell (``probe_kind`` ``mdl``) and what was
#: coded (``control``: ``""`` the probe's own labels, ``type`` and ``within`` its control
#: tasks', ``static`` the static control's probe).
MDL_KEYS: tuple[str, ...] = PRED_KEYS
#: The MDL table (:func:`mdl_rows`): the online codelength of a cell's training labels
#: (``codelength_bits``, its interval ``bits_low`` / ``bits_high``), the uniform code's
#: (``uniform_bits``), the compression (uniform / online) with its interval ``ci_low`` /
#: ``ci_high``, the rows ``n`` and their expressions, the blocks after the first sent with the
#: uniform code (``uniform_blocks``), the draws averaged (``n_draws``: the within control's;
#: 1 elsewhere) and the fits stopped at the iteration limit (``stopped``).
MDL_COLUMNS: tuple[str, ...] = (*MDL_KEYS, "C", "n", "n_expressions", "codelength_bits",
                                "bits_low", "bits_high", "uniform_bits", "compression",
                                "ci_low", "ci_high", "uniform_blocks", "n_draws", "stopped")


@dataclass(frozen=True)
class LinearFit:
    """:func:`fit_predict`'s result.

    Attributes:
        C: the regularisation strength chosen on dev.
        dev_f1: its dev macro-F1.
        pred: the test predictions (0/1) of the model fitted on train with that ``C``.
        converged: lbfgs converged within :data:`MAX_ITER` for that ``C`` (no
            ``ConvergenceWarning``).
        scores: the test rows' decision function (higher: label 1, not idiomatic).
        extended: the ``C`` values tried past the grid's ends (dev picked an end).
        edge: dev's choice is still an end of the grid tried (after :data:`MAX_EXTEND`
            extensions, or ties going to the smallest ``C``).
    """

    C: float
    dev_f1: float
    pred: np.ndarray
    converged: bool
    scores: np.ndarray | None = None
    extended: tuple[float, ...] = ()
    edge: bool = False


def classifier(C: float) -> Any:
    """The probe, unfitted: ``StandardScaler`` then ``LogisticRegression(C=C, solver="lbfgs",
    max_iter=MAX_ITER)`` (L2, scikit-learn's default penalty) in a ``Pipeline``."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    return Pipeline([("scale", StandardScaler()),
                     ("logistic", LogisticRegression(C=C, solver="lbfgs", max_iter=MAX_ITER))])


def _matrix(x: ArrayLike, what: str) -> np.ndarray:
    array = np.asarray(x)
    if array.ndim != 2 or array.shape[0] == 0:
        raise UsageError(f"{what} must be a (rows, features) matrix with rows, got shape "
                         f"{array.shape}")
    if not np.isfinite(array).all():
        bad = int((~np.isfinite(array).all(axis=1)).sum())
        raise UsageError(f"{what}: {bad} of {len(array)} rows hold a NaN or infinite "
                         "feature; drop or repair them before fitting")
    return array


def _fit(C: float, X: np.ndarray, y: np.ndarray) -> tuple[Any, bool]:
    """The probe fitted with ``C``, and whether it converged (ConvergenceWarning caught: a
    flag in the fits table, not a warning per fit; any other warning passes on)."""
    from sklearn import config_context
    from sklearn.exceptions import ConvergenceWarning

    model = classifier(C)
    # scikit-learn's checks of each fit's input and parameters skipped: the rows were checked
    # once (_matrix: finite, of one shape), the parameters are fixed; the fit is the same
    with warnings.catch_warnings(record=True) as caught, \
            config_context(assume_finite=True, skip_parameter_validation=True):
        warnings.simplefilter("always")
        model.fit(X, y)
    converged = True
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            converged = False
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return model, converged


def fit_predict(X_train: ArrayLike, y_train: ArrayLike, X_dev: ArrayLike, y_dev: ArrayLike,
                X_test: ArrayLike, *, c_grid: Sequence[float] = C_GRID) -> LinearFit:
    """Fit the probe on train for each ``C``, choose ``C`` on dev, predict test.

    Args:
        X_train, y_train: the setting's training vectors and labels (0/1).
        X_dev, y_dev: the dev vectors and labels, for the choice of ``C`` (macro-F1,
            :func:`ncprobe.astitch.stats.macro_f1`).
        X_test: the test vectors.
        c_grid: the ``C`` values tried (each > 0); ties of dev macro-F1 go to the smallest.
            When dev picks the smallest or the largest, the grid is extended past it (a tenth
            or ten times it) until dev picks a ``C`` inside, :data:`MAX_EXTEND` steps a side
            at most.

    Returns:
        :class:`LinearFit`: the ``C`` chosen, its dev macro-F1, the test predictions and
        scores of the model fitted on train with it (not refitted), whether that fit
        converged, the ``C`` values added past the grid and whether the choice is still an
        end of the grid tried.

    Raises:
        UsageError: a training set with one label only (a classifier needs both), shapes that
            do not agree, labels other than 0/1, an empty or non-positive ``c_grid``.
    """
    xtr, xdev, xte = (_matrix(X_train, "X_train"), _matrix(X_dev, "X_dev"),
                      _matrix(X_test, "X_test"))
    ytr, ydev = check_labels(y_train, "y_train"), check_labels(y_dev, "y_dev")
    if len(ytr) != len(xtr) or len(ydev) != len(xdev):
        raise UsageError(f"rows and labels differ in number: X_train {len(xtr)} vs y_train "
                         f"{len(ytr)}, X_dev {len(xdev)} vs y_dev {len(ydev)}")
    if not xtr.shape[1] == xdev.shape[1] == xte.shape[1]:
        raise UsageError(f"train, dev and test vectors differ in width: {xtr.shape[1]}, "
                         f"{xdev.shape[1]} and {xte.shape[1]} features")
    present = np.unique(ytr)
    if len(present) < 2:
        raise UsageError(f"the training set holds label {int(present[0])} only ({len(ytr)} "
                         "rows): a classifier needs both labels (0 idiomatic, 1 not "
                         "idiomatic) in training")
    grid = sorted(float(c) for c in c_grid)
    if not grid or not all(math.isfinite(c) and c > 0 for c in grid):
        raise UsageError(f"c_grid must hold one or more positive numbers, not {list(c_grid)!r}")
    tried: dict[float, tuple[float, Any, bool]] = {}

    def fit(C: float) -> None:
        model, converged = _fit(C, xtr, ytr)
        tried[C] = (macro_f1(ydev, model.predict(xdev)), model, converged)

    def best() -> float:  # ascending: a larger C wins only when strictly better
        return max(sorted(tried), key=lambda c: (tried[c][0], -c))

    for C in grid:
        fit(C)
    extended: list[float] = []
    while len(extended) < 2 * MAX_EXTEND:
        C, lo, hi = best(), min(tried), max(tried)
        if C not in (lo, hi) or len(tried) == 1:
            break
        low = C == lo
        if sum(1 for c in extended if (c < grid[0]) == low) >= MAX_EXTEND:
            break
        nxt = C / 10.0 if low else C * 10.0
        fit(nxt)
        extended.append(nxt)
    C = best()
    f1, model, converged = tried[C]
    edge = len(tried) > 1 and C in (min(tried), max(tried))
    return LinearFit(C, f1, np.asarray(model.predict(xte), dtype=np.int64), converged,
                     np.asarray(model.decision_function(xte), dtype=np.float64),
                     tuple(extended), edge)


def fit_fixed(C: float, X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike
              ) -> LinearFit:
    """The probe fitted on train with a given ``C`` (a control task's: the task probe's ``C``,
    never one chosen on the control's own labels), predicting test: a :class:`LinearFit`
    whose ``dev_f1`` is NaN.

    Raises:
        UsageError: a training set with one label only, shapes that do not agree, labels
            other than 0/1, a ``C`` that is not a positive number.
    """
    xtr, xte = _matrix(X_train, "X_train"), _matrix(X_test, "X_test")
    ytr = check_labels(y_train, "y_train")
    if len(ytr) != len(xtr) or xtr.shape[1] != xte.shape[1]:
        raise UsageError(f"train and test do not agree: {len(xtr)} training rows, {len(ytr)} "
                         f"labels; {xtr.shape[1]} and {xte.shape[1]} features")
    if len(np.unique(ytr)) < 2:
        raise UsageError("the training set holds one label only: a classifier needs both")
    if not (isinstance(C, (int, float, np.floating)) and math.isfinite(C) and C > 0):
        raise UsageError(f"C must be a positive number, not {C!r}")
    model, converged = _fit(float(C), xtr, ytr)
    return LinearFit(float(C), math.nan, np.asarray(model.predict(xte), dtype=np.int64),
                     converged, np.asarray(model.decision_function(xte), dtype=np.float64))


def within_permutation(expressions: Sequence[str] | ArrayLike, labels: ArrayLike, *, seed: int,
                       draws: int = WITHIN_DRAWS) -> np.ndarray:
    """The within-expression permutation control's training labels: ``(draws, n)``, each row
    ``labels`` shuffled among the uses of each expression (every expression keeps its label
    counts, so its idiomatic share; which of its uses is idiomatic is random).

    Draw ``d`` is ``numpy.random.default_rng([seed, 11, d])``'s: a random key per row, the
    rows of each expression reordered by it.

    Raises:
        UsageError: lengths that differ, labels other than 0/1, ``draws`` < 1.
    """
    y = check_labels(labels, "labels")
    group, _ = expression_index(expressions)
    if len(group) != len(y):
        raise UsageError(f"{len(group)} expressions but {len(y)} labels")
    _check_draws(draws)
    slots = np.argsort(group, kind="stable")   # each expression's rows, together
    out = np.empty((int(draws), len(y)), dtype=np.int64)
    for d in range(int(draws)):
        keys = np.random.default_rng([seed, 11, d]).random(len(y))
        shuffled = np.lexsort((keys, group))    # the same blocks, each in a random order
        out[d, slots] = y[shuffled]
    return out


def _check_draws(draws: int) -> None:
    """Refuse a number of draws that is not a whole number >= 1."""
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise UsageError(f"draws must be a whole number >= 1, not {draws!r}")


def type_oracle(expressions: Sequence[str] | ArrayLike, labels: ArrayLike) -> np.ndarray:
    """Per row, its expression's most frequent label among these rows (a tie: 0, idiomatic):
    the type oracle, what a reader of the expression type alone scores at most on them.

    Raises:
        UsageError: lengths that differ, labels other than 0/1.
    """
    y = check_labels(labels, "labels")
    group, k = expression_index(expressions)
    if len(group) != len(y):
        raise UsageError(f"{len(group)} expressions but {len(y)} labels")
    if not len(y):
        return np.zeros(0, dtype=np.int64)
    ones, total = label_counts(group, y, k)
    top = np.where(ones > total - ones, LITERAL, IDIOMATIC)
    return top[group].astype(np.int64)


def chance_draws(y_train: ArrayLike, n_test: int, *, seed: int, draws: int = WITHIN_DRAWS
                 ) -> np.ndarray:
    """Stratified chance: ``(draws, n_test)`` random labels, each 1 with the training split's
    share of label 1 (scikit-learn's ``DummyClassifier(strategy="stratified")``), draw ``d``
    from ``numpy.random.default_rng([seed, 13, d])``.

    Raises:
        UsageError: no training labels, labels other than 0/1, ``draws`` < 1.
    """
    y = check_labels(y_train, "y_train")
    if not len(y):
        raise UsageError("stratified chance needs the training labels, got none")
    _check_draws(draws)
    share = float(y.mean())
    return np.stack([(np.random.default_rng([seed, 13, d]).random(int(n_test)) < share)
                     .astype(np.int64) for d in range(int(draws))])


def control_labels(expressions: Sequence[str], train_labels: Sequence[int] | ArrayLike, *,
                   seed: int) -> dict[str, int]:
    """The control task's labels (Hewitt and Liang 2019): one random label per expression type.

    Each distinct expression (sorted) draws a label from the empirical distribution of
    ``train_labels`` (``numpy.random.default_rng([seed, 7]).choice``): every use of an
    expression gets its type's label, whatever the sentence says, so only memorising the
    expression can learn it.

    Raises:
        UsageError: no training labels, or labels other than 0/1.
    """
    y = check_labels(np.asarray(train_labels), "train_labels")
    if not len(y):
        raise UsageError("control_labels needs the training labels, got none")
    types = sorted({str(e) for e in expressions})
    values, counts = np.unique(y, return_counts=True)
    drawn = np.random.default_rng([seed, 7]).choice(values, size=len(types),
                                                    p=counts / counts.sum())
    return {t: int(v) for t, v in zip(types, drawn, strict=True)}


def _most_frequent(y: np.ndarray) -> int:
    """The label most frequent in ``y``; a tie goes to 0 (idiomatic)."""
    counts = np.bincount(y, minlength=2)
    return IDIOMATIC if counts[IDIOMATIC] >= counts[LITERAL] else LITERAL


def majority(y_train: ArrayLike, n_test: int) -> np.ndarray:
    """``n_test`` predictions of the most frequent training label (a tie: 0, idiomatic).

    Raises:
        UsageError: no training labels, labels other than 0/1.
    """
    y = check_labels(y_train, "y_train")
    if not len(y):
        raise UsageError("the majority baseline needs training labels, got none")
    return np.full(int(n_test), _most_frequent(y), dtype=np.int64)


def expression_only(train_expr: Sequence[str], y_train: ArrayLike, test_expr: Sequence[str]
                    ) -> np.ndarray:
    """Per test row, the label most frequent for its expression in training (a tie between
    the two labels: the overall majority, :func:`majority`); the overall majority for an
    expression not in training (always so in zero-shot).

    Raises:
        UsageError: lengths that differ, no training labels, labels other than 0/1.
    """
    y = check_labels(y_train, "y_train")
    expr = [str(e) for e in train_expr]
    if len(expr) != len(y):
        raise UsageError(f"{len(expr)} training expressions but {len(y)} labels")
    overall = int(majority(y, 1)[0])
    counts: dict[str, list[int]] = {}
    for e, v in zip(expr, y, strict=True):
        counts.setdefault(e, [0, 0])[v] += 1
    per = {e: overall if n0 == n1 else IDIOMATIC if n0 > n1 else LITERAL
           for e, (n0, n1) in counts.items()}
    return np.array([per.get(str(e), overall) for e in test_expr], dtype=np.int64)


def _by_draw(idx: np.ndarray, draw: np.ndarray) -> list[np.ndarray]:
    """A cell's rows per draw (one group for a cell without draws), in the order of the
    draws; every draw must hold the same number of rows."""
    values = sorted(set(draw[idx].tolist()))
    if values == [-1] or len(values) <= 1:
        return [idx]
    parts = [idx[draw[idx] == d] for d in values]
    if len({len(q) for q in parts}) != 1:
        raise UsageError("the draws of a drawn cell hold different numbers of rows")
    return parts


def linear_table(predictions: pd.DataFrame, fits: pd.DataFrame, *, n_boot: int, seed: int,
                 level: float = LEVEL) -> pd.DataFrame:
    """The linear probe's, the controls' and the baselines' test scores, one row per cell and
    subset.

    Args:
        predictions: columns :data:`PRED_COLUMNS`, one row per cell x test row (x draw);
            ``draw`` and ``decision`` may be absent (-1 and NaN). The rows of a ``probe_kind``
            ``"linear"`` cell whose ``control`` is :data:`WITHIN` are the within-expression
            permutation control of the cell that is the same but for ``control`` ``""``:
            scored beside it, not a row of their own.
        fits: one row per cell, :data:`PRED_KEYS` + ``C``, ``dev_macro_f1`` (and the other
            :data:`FIT_COLUMNS`, not used here); a cell without a row has NaN ``C`` and
            ``dev_macro_f1`` (a baseline fits nothing).
        n_boot: expression resamples of each interval (0: no intervals).
        seed: the seed of the draws (the same for every cell: common random numbers).
        level: the coverage of the percentile intervals.

    Returns:
        Columns :data:`LINEAR_COLUMNS`: every cell (in order of first appearance) for the
        subset ``all``, then every cell for ``ambiguous`` (the test rows whose expression has
        both labels among the cell's test rows, :func:`ncprobe.astitch.stats.ambiguous`: the
        same fitted probe scored on them). Per row :func:`ncprobe.astitch.stats.cluster_scores`
        of ``label`` against ``predicted`` (a drawn cell, e.g. chance: the mean over its draws,
        :func:`ncprobe.astitch.stats.draw_scores`, ``n_draws`` of them), the AUROC of
        ``decision`` with its interval (:func:`ncprobe.astitch.stats.cluster_auroc`) where there
        are scores; for a ``probe_kind`` ``"linear"`` cell the type control
        (``control_label`` and ``control_predicted``, where not -1: ``control_f1`` and its
        interval, the selectivity against it) and the within-expression control
        (``within_f1``, the mean over its draws, and ``within_sel``, each with its interval);
        NaN otherwise.

    Raises:
        UsageError: a missing column, a cell with two rows in ``fits``, labels other than 0/1,
            a within control without its task cell or of other rows.
    """
    missing = [c for c in PRED_COLUMNS if c not in predictions.columns
               and c not in PRED_OPTIONAL]
    missing += [f"fits.{c}" for c in (*PRED_KEYS, "C", "dev_macro_f1") if c not in fits.columns]
    if missing:
        raise UsageError("linear_table lacks the column(s) " + ", ".join(missing))
    fit_at: dict[tuple, dict[str, float]] = {}
    for key, idx in cell_rows(fits, PRED_KEYS).items():
        if len(idx) > 1:
            raise UsageError(f"the fits table holds {len(idx)} rows for the cell {key!r}; keep "
                             "one per cell")
        fit_at[key] = {"C": float(fits["C"].iloc[idx[0]]),
                       "dev_macro_f1": float(fits["dev_macro_f1"].iloc[idx[0]])}
    n_rows = len(predictions)
    keys = predictions[list(PRED_KEYS)].to_numpy(dtype=object)
    y, pred = predictions["label"].to_numpy(), predictions["predicted"].to_numpy()
    yc, pc = predictions["control_label"].to_numpy(), predictions["control_predicted"].to_numpy()
    expressions = predictions["expression"].to_numpy(dtype=object)
    draw = (predictions["draw"].to_numpy(dtype=np.int64) if "draw" in predictions.columns
            else np.full(n_rows, -1, np.int64))
    score = (predictions["decision"].to_numpy(dtype=np.float64)
             if "decision" in predictions.columns
             else np.full(n_rows, np.nan))
    at_kind, at_control = PRED_KEYS.index("probe_kind"), PRED_KEYS.index("control")
    cells = cell_rows(predictions, PRED_KEYS)
    within: dict[tuple, np.ndarray] = {}
    for key, idx in cells.items():
        if key[at_kind] == "linear" and key[at_control] == WITHIN:
            task_key = key[:at_control] + ("",) + key[at_control + 1:]
            if task_key not in cells:
                raise UsageError(f"the within-expression control {key!r} has no task cell")
            within[task_key] = idx
    stats: dict[str, Any] = {"n_boot": n_boot, "seed": seed, "level": level}
    nan_cols = {c: math.nan for c in LINEAR_COLUMNS[LINEAR_COLUMNS.index("control_f1"):]
                if c != "subset"}
    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in SUBSETS}
    for key, idx in cells.items():
        if key[at_kind] == "linear" and key[at_control] == WITHIN:
            continue
        cell = dict(zip(PRED_KEYS, keys[idx[0]], strict=True))
        parts = _by_draw(idx, draw)
        base = parts[0]
        w_parts = _by_draw(within[key], draw) if key in within else []
        if any(len(q) != len(base) or (expressions[q] != expressions[base]).any()
               for q in w_parts):
            raise UsageError(f"the within-expression control of {key!r} holds other rows "
                             "than its task")
        masks = {"all": np.ones(len(base), bool),
                 "ambiguous": ambiguous(expressions[base], y[base])}
        for subset in SUBSETS:
            m = masks[subset]
            i, e = base[m], expressions[base[m]]
            row: dict[str, Any] = {**cell, **fit_at.get(key, {"C": math.nan,
                                                              "dev_macro_f1": math.nan})}
            row.update(cluster_scores(y[i], pred[i], e, **stats))
            row.update(nan_cols)
            row["subset"] = subset
            if len(parts) > 1:  # a drawn cell: the mean over its draws
                many = np.stack([pred[q[m]] for q in parts])
                got = draw_scores(y[i], many, e, **stats)
                row.update(macro_f1=got["macro_f1"], f1_low=got["f1_low"],
                           f1_high=got["f1_high"], n_draws=got["n_draws"],
                           accuracy=float(np.mean(many == y[i][None, :])) if len(i)
                           else math.nan, acc_low=math.nan, acc_high=math.nan)
            if len(i) and np.isfinite(score[i]).all():
                auc = cluster_auroc(score[i], y[i], e, **stats)
                row.update(auroc=auc["auroc"], auroc_low=auc["ci_low"],
                           auroc_high=auc["ci_high"])
            if cell["probe_kind"] == "linear" and (yc[i] >= 0).all() and (pc[i] >= 0).all():
                ctrl = cluster_scores(yc[i], pc[i], e, **stats)  # the same draws as the task's
                row.update(control_f1=ctrl["macro_f1"], control_low=ctrl["f1_low"],
                           control_high=ctrl["f1_high"])
                row.update(selectivity(y[i], pred[i], yc[i], pc[i], e, **stats))
            if w_parts:
                got = draw_scores(y[i], np.stack([pred[q[m]] for q in w_parts]), e,
                                  task=pred[i], **stats)
                row.update(within_f1=got["macro_f1"], within_low=got["f1_low"],
                           within_high=got["f1_high"], within_sel=got["selectivity"],
                           wsel_low=got["sel_low"], wsel_high=got["sel_high"],
                           n_draws=got["n_draws"])
            rows[subset].append(row)
    return pd.DataFrame([r for s in SUBSETS for r in rows[s]], columns=list(LINEAR_COLUMNS))


def mdl_rows(key: dict[str, Any], C: float, X_train: ArrayLike, y_train: ArrayLike,
             expressions: Sequence[str] | ArrayLike, *, control_labels: ArrayLike | None = None,
             within: ArrayLike | None = None, n_boot: int, seed: int) -> list[dict[str, Any]]:
    """The MDL rows of one linear cell (:data:`MDL_COLUMNS`): the online codelength
    (:func:`ncprobe.mdl.online_code`, Voita and Titov 2020) of its training labels given its
    training vectors, coded by the probe itself (:func:`classifier` with the ``C`` chosen on
    dev), rows in the order ``default_rng(seed)`` draws, classes 0 and 1; the interval a
    cluster bootstrap over the expressions (:func:`ncprobe.mdl.codelength_interval`,
    ``n_boot`` resamples, ``seed``).

    Args:
        key: the cell's :data:`MDL_KEYS` but ``probe_kind`` and ``control`` (set here):
            ``control`` is ``key["control"]`` for the probe's own row (``""``, or
            ``"static"`` for the static control's probe).
        C: the probe's ``C`` (dev's choice); the control tasks are coded with it too.
        X_train, y_train: the cell's training vectors and labels (0/1).
        expressions: each training row's expression (the interval's unit).
        control_labels: the type control's training labels (a row ``type``; none where they
            hold one label, as the linear probe fits none then).
        within: ``(draws, n)``: the within-expression control's training labels per draw (a
            row ``within``: each row's cost the mean over the draws' codes, so the codelength
            is the mean codelength, ``n_draws`` of them).

    Fits that stop at the iteration limit are counted in ``stopped``, not warned about.
    """
    from dataclasses import replace

    from sklearn.exceptions import ConvergenceWarning

    from ..mdl import codelength_interval, online_code

    x = _matrix(X_train, "X_train")
    groups = np.asarray([str(e) for e in np.asarray(expressions, dtype=object).ravel()],
                        dtype=object)
    n_expr = len(set(groups.tolist()))

    def coded(labels: np.ndarray) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return online_code(x, labels, lambda: classifier(C), seed=seed, classes=(0, 1))

    def row(control: str, codes: list[Any]) -> dict[str, Any]:
        code = codes[0]
        if len(codes) > 1:  # the mean over the draws, row by row
            costs = np.mean([c.costs for c in codes], axis=0)
            bits = float(costs.sum())
            code = replace(code, costs=costs, bits=bits,
                           compression=code.uniform_bits / bits)
        ci = codelength_interval(code, groups, n_boot=n_boot, seed=seed)
        return {**key, "probe_kind": "mdl", "control": control, "C": float(C),
                "n": code.n, "n_expressions": n_expr, "codelength_bits": code.bits,
                "bits_low": ci.bits_low, "bits_high": ci.bits_high,
                "uniform_bits": code.uniform_bits, "compression": code.compression,
                "ci_low": ci.compression_low, "ci_high": ci.compression_high,
                "uniform_blocks": int(max(len(c.uniform_blocks) for c in codes)),
                "n_draws": len(codes), "stopped": int(sum(c.stopped for c in codes))}

    out = [row(str(key.get("control", "")), [coded(check_labels(y_train, "y_train"))])]
    if control_labels is not None:
        yc = check_labels(control_labels, "control_labels")
        if len(np.unique(yc)) == 2:
            out.append(row("type", [coded(yc)]))
    draws = np.zeros((0, 0)) if within is None else np.atleast_2d(np.asarray(within))
    if len(draws):
        out.append(row(WITHIN, [coded(check_labels(w, "within")) for w in draws]))
    return out
