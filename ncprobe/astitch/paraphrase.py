"""The AStitch paraphrase probe's scores and its AUROC table (no training).

In each labelled sentence the expression's span is replaced by its literal paraphrase and by
each of its non-literal paraphrases (:func:`ncprobe.data.astitch.spliced`); the probe (the lead's
:mod:`ncprobe.astitch.probe`) measures the cosine of the original sentence's vector (span or
sentence level) to each spliced one. Two scores per row (:data:`ncprobe.astitch.SCORES`):

* ``contrast``: the cosine to the literal paraphrase less the best cosine to a non-literal one
  (higher: the use reads more literally). Undefined (NaN) for an expression without a literal
  paraphrase or without any non-literal one;
* ``literal``: the cosine to the literal paraphrase alone (defined wherever there is one).

:func:`auroc_table` asks, per model x language x split x layer x level x context, score and
subset, whether the score separates literal from idiomatic uses, over the rows with a finite
score, label 1 (not idiomatic) positive, each number with its cluster-bootstrap interval over
expressions:

* ``auroc_within`` (the headline, :func:`ncprobe.astitch.stats.within_auroc`): literal and
  idiomatic uses compared only *within* each expression, pair-weighted over the expressions
  holding both labels. The expressions' shares of literal uses differ widely, and a literal
  paraphrase shares a word with its expression where a non-literal one does not, so a pooled
  AUROC mostly ranks expressions against each other; the within AUROC asks about the use;
* ``auroc`` (:func:`ncprobe.astitch.stats.cluster_auroc`): pooled over every scored row, beside
  it.

Every cell comes for two subsets (:data:`ncprobe.astitch.stats.SUBSETS`): ``all`` rows, and
the ``ambiguous`` ones (the rows of an expression with both labels among the cell's rows,
scored or not: :func:`ncprobe.astitch.stats.ambiguous`). The rows left out are counted
(``n_unscored``), and the share of idiomatic rows among those scored is given
(``idiomatic_share``): the expressions lacking a paraphrase are mostly compositional ones, so
the scored rows lean idiomatic, and a reader needs that beside the AUROC.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..errors import UsageError
from . import SCORES
from .stats import LEVEL, SUBSETS, ambiguous, cell_rows, cluster_auroc, within_auroc

__all__ = ["AUROC_COLUMNS", "CELL_KEYS", "SCORE_COLUMNS", "auroc_table", "scores"]

#: The columns of the scores table: one row per record x model x layer x level x context.
SCORE_COLUMNS: tuple[str, ...] = ("model", "lang", "split", "layer", "level", "context", "row",
                                  "expression", "label", "literal", "contrast")
#: The columns that name a cell of the paraphrase probe.
CELL_KEYS: tuple[str, ...] = ("model", "lang", "split", "layer", "level", "context")
#: The columns of :func:`auroc_table`.
AUROC_COLUMNS: tuple[str, ...] = (*CELL_KEYS, "score", "subset", "n", "n_literal",
                                  "n_expressions", "n_unscored", "idiomatic_share", "n_within",
                                  "auroc_within", "auroc_within_low", "auroc_within_high",
                                  "auroc", "ci_low", "ci_high", "boot_used")


def scores(lit_cos: np.ndarray, nonlit_cos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``contrast`` and ``literal`` scores of ``n`` rows.

    Args:
        lit_cos: ``(n,)`` cosine to the literal-paraphrase sentence, NaN where the expression
            has no literal paraphrase.
        nonlit_cos: ``(n, m)`` cosines to the non-literal-paraphrase sentences (``m`` = 3 in
            the data), NaN where a paraphrase is absent.

    Returns:
        ``(contrast, literal)``: ``lit - max over the non-literal cosines`` (NaN where ``lit``
        is NaN or no non-literal cosine is given) and a copy of ``lit_cos``.

    >>> c, lit = scores(np.array([0.9, 0.8, np.nan]),
    ...                 np.array([[0.5, 0.7, np.nan], [np.nan] * 3, [0.1, 0.2, 0.3]]))
    >>> c.round(2).tolist(), lit.tolist()
    ([0.2, nan, nan], [0.9, 0.8, nan])
    """
    lit = np.array(lit_cos, dtype=np.float64)
    non = np.asarray(nonlit_cos, dtype=np.float64)
    if lit.ndim != 1 or non.ndim != 2 or non.shape[0] != lit.shape[0]:
        raise UsageError(f"scores needs lit_cos (n,) and nonlit_cos (n, m), got {lit.shape} "
                         f"and {non.shape}")
    any_non = ~np.isnan(non).all(axis=1)
    best = np.full(len(lit), math.nan)
    if any_non.any():  # nanmax warns on a row of NaN: only rows with a cosine are reduced
        best[any_non] = np.nanmax(non[any_non], axis=1)
    return lit - best, lit


def auroc_table(scores_table: pd.DataFrame, *, n_boot: int, seed: int,
                level: float = LEVEL) -> pd.DataFrame:
    """The paraphrase probe's AUROC per cell and score.

    Args:
        scores_table: columns :data:`SCORE_COLUMNS`.
        n_boot: expression resamples of each interval (0: no interval).
        seed: the seed of the draws (every cell with the same scored expressions uses the same
            draws).
        level: the coverage of the percentile intervals.

    Returns:
        One row per cell (:data:`CELL_KEYS`, in order of first appearance) x subset
        (:data:`ncprobe.astitch.stats.SUBSETS` order: ``all``, ``ambiguous``) x score
        (:data:`ncprobe.astitch.SCORES` order), columns :data:`AUROC_COLUMNS`: ``n`` (rows
        of the subset with a finite score), ``n_literal`` (label 1 among them),
        ``n_expressions``, ``n_unscored`` (rows of the subset without a finite score),
        ``idiomatic_share`` (label 0 share of the scored rows; NaN for none), ``n_within``
        (scored expressions holding both labels), ``auroc_within`` with ``auroc_within_low``,
        ``auroc_within_high`` (:func:`ncprobe.astitch.stats.within_auroc`), ``auroc`` (pooled,
        label 1 positive), ``ci_low``, ``ci_high``, ``boot_used`` (resamples holding both
        labels). A cell whose scored rows hold one label (or none) has NaN AUROCs and
        intervals; one without an expression holding both labels a NaN ``auroc_within``.

    Raises:
        UsageError: a missing column, a label other than 0/1, a bad ``n_boot`` or ``level``.
    """
    missing = [c for c in SCORE_COLUMNS if c not in scores_table.columns]
    if missing:
        raise UsageError("the scores table lacks the column(s) " + ", ".join(missing))
    labels = scores_table["label"].to_numpy()
    expressions = scores_table["expression"].to_numpy(dtype=object)
    values = {s: scores_table[s].to_numpy(dtype=np.float64) for s in SCORES}
    keys = scores_table[list(CELL_KEYS)].to_numpy(dtype=object)
    rows: list[dict[str, Any]] = []
    for cell_idx in cell_rows(scores_table, CELL_KEYS).values():
        cell = dict(zip(CELL_KEYS, keys[cell_idx[0]], strict=True))
        mixed = ambiguous(expressions[cell_idx], labels[cell_idx])
        for subset in SUBSETS:
            idx = cell_idx if subset == "all" else cell_idx[mixed]
            for score in SCORES:
                ok = np.isfinite(values[score][idx])
                sel = idx[ok]
                args = (values[score][sel], labels[sel], expressions[sel])
                stats = cluster_auroc(*args, n_boot=n_boot, seed=seed, level=level)
                within = within_auroc(*args, n_boot=n_boot, seed=seed, level=level)
                n = stats["n"]
                rows.append({**cell, "score": score, "subset": subset, **stats, **within,
                             "n_unscored": int((~ok).sum()),
                             "idiomatic_share": (n - stats["n_literal"]) / n if n
                             else math.nan})
    return pd.DataFrame(rows, columns=list(AUROC_COLUMNS))
