"""The AStitch linear probe: an L2 logistic regression on frozen vectors, its baselines and
control task, and its table.

* :func:`fit_predict`: standardisation then logistic regression (scikit-learn, ``lbfgs``, L2,
  deterministic), fitted on a setting's training split once per regularisation strength of
  :data:`C_GRID`; the ``C`` of the best dev macro-F1 (ties: the smallest ``C``, the strongest
  regularisation) predicts the test split. The model is not refitted on train + dev: dev
  chooses, test is reported, as the task intends.
* the controls (:data:`ncprobe.astitch.CONTROLS`) that say what a probe's number means:
  :func:`majority` (the most frequent training label), :func:`expression_only` (the label most
  frequent for the expression in training: what memorising the expression gets, without the
  sentence), the static model (the same probe on GloVe vectors: the lead runs it), and the
  Hewitt and Liang (2019) **control task** (:func:`control_labels`: each expression type gets a
  random label, the same probe learns it; a probe that learns that as well as the task says
  little about the representation: *selectivity* = task F1 - control F1).
* :func:`linear_table`: per cell (:data:`PRED_KEYS`) the test macro-F1 and accuracy with
  cluster-bootstrap intervals over expressions, the control task's F1 and the selectivity
  with its interval (:mod:`ncprobe.astitch.stats`).
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
from .stats import LEVEL, cell_rows, check_labels, cluster_scores, macro_f1, selectivity

__all__ = ["C_GRID", "FIT_COLUMNS", "LINEAR_COLUMNS", "LinearFit", "MAX_ITER", "PRED_COLUMNS",
           "PRED_KEYS", "classifier", "control_labels", "expression_only", "fit_predict",
           "linear_table", "majority"]

#: The inverse regularisation strengths tried, the choice made on dev.
C_GRID: tuple[float, ...] = (0.001, 0.01, 0.1, 1.0, 10.0)
#: lbfgs's iterations at most (a fit that stops there is flagged, not refused).
MAX_ITER = 2000
#: The columns that name a cell of the prediction table (one classifier, or one control).
PRED_KEYS: tuple[str, ...] = ("model", "lang", "setting", "layer", "level", "context",
                              "probe_kind", "control")
#: The prediction table: one row per cell x test row.
PRED_COLUMNS: tuple[str, ...] = (*PRED_KEYS, "row", "expression", "label", "predicted",
                                 "control_label", "control_predicted")
#: The fits table: one row per cell.
FIT_COLUMNS: tuple[str, ...] = (*PRED_KEYS, "C", "dev_macro_f1", "control_C", "converged")
#: The columns of :func:`linear_table`.
LINEAR_COLUMNS: tuple[str, ...] = (*PRED_KEYS, "C", "dev_macro_f1", "n", "n_expressions",
                                   "macro_f1", "f1_low", "f1_high", "accuracy", "acc_low",
                                   "acc_high", "control_f1", "control_low", "control_high",
                                   "selectivity", "sel_low", "sel_high")


@dataclass(frozen=True)
class LinearFit:
    """:func:`fit_predict`'s result.

    Attributes:
        C: the regularisation strength chosen on dev.
        dev_f1: its dev macro-F1.
        pred: the test predictions (0/1) of the model fitted on train with that ``C``.
        converged: lbfgs converged within :data:`MAX_ITER` for that ``C`` (no
            ``ConvergenceWarning``).
    """

    C: float
    dev_f1: float
    pred: np.ndarray
    converged: bool


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
    return array


def _fit(C: float, X: np.ndarray, y: np.ndarray) -> tuple[Any, bool]:
    """The probe fitted with ``C``, and whether it converged (ConvergenceWarning caught: a
    flag in the fits table, not a warning per fit; any other warning passes on)."""
    from sklearn.exceptions import ConvergenceWarning

    model = classifier(C)
    with warnings.catch_warnings(record=True) as caught:
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

    Returns:
        :class:`LinearFit`: the ``C`` chosen, its dev macro-F1, the test predictions of the
        model fitted on train with it (not refitted), and whether that fit converged.

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
    best: tuple[float, float, Any, bool] | None = None
    for C in grid:  # ascending: a later C replaces the best only when strictly better
        model, converged = _fit(C, xtr, ytr)
        f1 = macro_f1(ydev, model.predict(xdev))
        if best is None or f1 > best[1]:
            best = (C, f1, model, converged)
    assert best is not None  # the grid is not empty
    C, f1, model, converged = best
    return LinearFit(C, f1, np.asarray(model.predict(xte), dtype=np.int64), converged)


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


def linear_table(predictions: pd.DataFrame, fits: pd.DataFrame, *, n_boot: int, seed: int,
                 level: float = LEVEL) -> pd.DataFrame:
    """The linear probe's and the controls' test scores, one row per cell.

    Args:
        predictions: columns :data:`PRED_COLUMNS`, one row per cell x test row.
        fits: one row per cell, :data:`PRED_KEYS` + ``C``, ``dev_macro_f1`` (and
            ``control_C``, ``converged``, not used here); a cell without a row has NaN ``C``
            and ``dev_macro_f1`` (a baseline fits nothing).
        n_boot: expression resamples of each interval (0: no intervals).
        seed: the seed of the draws (the same for every cell: common random numbers).
        level: the coverage of the percentile intervals.

    Returns:
        Columns :data:`LINEAR_COLUMNS`, the cells in order of first appearance:
        :func:`ncprobe.astitch.stats.cluster_scores` of ``label`` against ``predicted``; for a
        ``probe_kind`` ``"linear"`` cell whose ``control_label`` and ``control_predicted`` are
        given (not -1), ``control_f1`` (macro-F1 of the control task, with its interval
        ``control_low``, ``control_high``) and the selectivity with its interval
        (:func:`ncprobe.astitch.stats.selectivity`); NaN otherwise.

    Raises:
        UsageError: a missing column, a cell with two rows in ``fits``, labels other than 0/1.
    """
    missing = [c for c in PRED_COLUMNS if c not in predictions.columns]
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
    keys = predictions[list(PRED_KEYS)].to_numpy(dtype=object)
    y, pred = predictions["label"].to_numpy(), predictions["predicted"].to_numpy()
    yc, pc = predictions["control_label"].to_numpy(), predictions["control_predicted"].to_numpy()
    expressions = predictions["expression"].to_numpy(dtype=object)
    rows: list[dict[str, Any]] = []
    nan_sel = {"control_f1": math.nan, "control_low": math.nan, "control_high": math.nan,
               "selectivity": math.nan, "sel_low": math.nan, "sel_high": math.nan}
    for key, idx in cell_rows(predictions, PRED_KEYS).items():
        cell = dict(zip(PRED_KEYS, keys[idx[0]], strict=True))
        row: dict[str, Any] = {**cell, **fit_at.get(key, {"C": math.nan,
                                                          "dev_macro_f1": math.nan})}
        row.update(cluster_scores(y[idx], pred[idx], expressions[idx], n_boot=n_boot,
                                  seed=seed, level=level))
        row.update(nan_sel)
        if cell["probe_kind"] == "linear" and (yc[idx] >= 0).all() and (pc[idx] >= 0).all():
            ctrl = cluster_scores(yc[idx], pc[idx], expressions[idx], n_boot=n_boot,
                                  seed=seed, level=level)  # the same draws as the task's
            row.update(control_f1=ctrl["macro_f1"], control_low=ctrl["f1_low"],
                       control_high=ctrl["f1_high"])
            row.update(selectivity(y[idx], pred[idx], yc[idx], pc[idx], expressions[idx],
                                   n_boot=n_boot, seed=seed, level=level))
        rows.append(row)
    return pd.DataFrame(rows, columns=list(LINEAR_COLUMNS))
