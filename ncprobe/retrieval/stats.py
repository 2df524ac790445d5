"""Uncertainty of IdioLink's retrieval metrics: idiom-cluster bootstrap intervals of the mean
metrics, and paired tests between two query modes or two models on the same queries.

The 20 queries of an idiom (10 literal, 10 idiomatic in ``test``) share their relevant
documents and their expression, so they are not independent: a bootstrap over queries would
make the intervals too narrow. Both functions resample **idioms** as clusters.

* :func:`cluster_intervals`: per model x mode x query usage, the mean of each metric over
  queries and its percentile interval. A resample draws ``k`` idioms with replacement out of
  the cell's ``k``; its mean is the sum, over the drawn idioms (with multiplicity), of their
  query sums, over the same sum of their query counts (a ratio estimator: idioms with more
  queries weigh more, as in the mean over queries). Computed at once for every resample as
  ``counts @ sums / counts @ n`` with ``counts`` the ``(n_boot, k)`` draw counts of
  :func:`ncprobe.stats.resample_counts` (``default_rng(seed)``), the idioms in sorted order.
  Every cell with the same idiom set therefore uses the same resamples (common random
  numbers): a cell's interval does not depend on which other cells are in the frame, and the
  intervals of two modes and of their difference come from the same draws.
* :func:`paired_tests`: for two cells holding the same queries (matched by query id), the
  difference of the means, a paired cluster bootstrap interval of it (the same resamples), and
  a two-sided sign-flip randomisation test over idioms (:func:`ncprobe.stats.sign_flip`):
  under the null hypothesis that the two systems are exchangeable within each idiom, the sign
  of an idiom's summed difference is arbitrary. The statistic is the summed difference over
  all queries; flipping whole idioms, ``p = #{|stat*| >= |stat|} / 2^k`` over all ``2^k``
  sign patterns when ``2^k <= B`` (exact), else ``p = (1 + #{|stat*| >= |stat|}) / (1 + B)``
  over ``B`` random patterns (``default_rng([seed, 1])``), ``p_bound`` true where no pattern
  was as extreme (the true p lies below ``1/(B+1)``). ``B`` (``n_flips``, default ``"auto"``)
  is chosen so that the least corrected p of the table reaches 0.001, the finest mark
  (``B = 1,000 m`` for ``m`` tests under Holm, :func:`ncprobe.stats.choose_flips`, at most
  :data:`ncprobe.stats.MAX_FLIPS`). The p-values of the table are corrected as one family
  (:func:`ncprobe.stats.correct_bounded`, Holm by default, as ``ncprobe compare`` does),
  named in the ``family`` column with its size in ``family_size``; a corrected bound that
  limits a decision is warned about (:class:`ncprobe.significance.ResolutionWarning`): the
  engine AStitch's tests run too (:func:`ncprobe.stats.paired_family`).
* :func:`default_pairs`: the comparisons a report makes: modes within a model, then models
  within a mode.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..config import N_BOOT
from ..errors import UsageError
from ..significance import check_correction
from ..stats import choose_flips, paired_family, resample_counts, sign_flip
from .metrics import METRICS

__all__ = ["MODE_PAIRS", "TEST_COLUMNS", "USAGES", "across_family", "cluster_intervals",
           "default_pairs", "paired_tests", "run_family"]

#: The query usages of a cell's rows: every query, then each usage alone.
USAGES = ("all", "literal", "idiomatic")
#: The comparisons of two modes within a model (:func:`default_pairs`), ``(a, b)``.
MODE_PAIRS: tuple[tuple[str, str], ...] = (
    ("span", "sentence"), ("instruction_sentence", "sentence"),
    ("instruction_span", "span"), ("instruction_span", "instruction_sentence"))
#: The columns of :func:`paired_tests`' table.
TEST_COLUMNS: tuple[str, ...] = (
    "model_a", "mode_a", "model_b", "mode_b", "usage", "metric", "a", "b", "diff", "diff_lo",
    "diff_hi", "p", "p_bound", "p_corrected", "p_corrected_bound", "significant", "n",
    "n_idioms", "test", "correction", "family", "family_size")
_NEEDED = ("model", "mode", "query", "idiom", "usage", *METRICS)

Cell = tuple[str, str]
Pair = tuple[Cell, Cell]


def _check_frame(per_query: pd.DataFrame, n_boot: int, level: float) -> None:
    missing = [c for c in _NEEDED if c not in per_query.columns]
    if missing:
        raise UsageError("the per-query frame lacks the column(s) " + ", ".join(missing)
                         + "; pass ncprobe.retrieval.evaluate()'s rows")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise UsageError(f"n_boot must be a whole number >= 0 (0: no intervals), not {n_boot!r}")
    if not 0.0 < level < 1.0:
        raise UsageError(f"level must lie strictly between 0 and 1 (e.g. 0.95), not {level!r}")
    values = per_query[list(METRICS)].to_numpy(dtype=np.float64)
    if np.isnan(values).any():
        bad = per_query.index[np.isnan(values).any(axis=1)][0]
        raise UsageError(f"row {bad!r} of the per-query frame has a missing metric value; "
                         "every query needs both metrics")


def _cells(per_query: pd.DataFrame) -> dict[Cell, np.ndarray]:
    """Row positions of each (model, mode), in order of first appearance; a query id seen
    twice in a cell is refused."""
    keys = list(zip(per_query["model"], per_query["mode"], strict=True))
    rows: dict[Cell, list[int]] = {}
    for i, k in enumerate(keys):
        rows.setdefault(k, []).append(i)
    out = {k: np.asarray(v, dtype=np.intp) for k, v in rows.items()}
    queries = per_query["query"].to_numpy()
    for (model, mode), idx in out.items():
        dup = pd.Index(queries[idx]).duplicated()
        if dup.any():
            raise UsageError(
                f"cell ({model}, {mode}) holds query {queries[idx][dup][0]!r} more than once "
                f"({int(dup.sum())} duplicate row(s)); keep one row per query and cell")
    return out


def _by_idiom(idioms: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-idiom sums of ``values`` (queries x columns) and query counts, idioms sorted."""
    _, inv = np.unique(idioms.astype(str), return_inverse=True)
    k = int(inv.max()) + 1 if len(inv) else 0
    sums = np.stack([np.bincount(inv, weights=values[:, j], minlength=k)
                     for j in range(values.shape[1])], axis=1)
    return sums, np.bincount(inv, minlength=k).astype(np.float64)


def _boot_means(sums: np.ndarray, counts: np.ndarray, n_boot: int, seed: int,
                level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval (``lo``, ``hi``, one per column of ``sums``) of the mean over
    queries, idioms resampled; NaN when ``n_boot`` is 0 or there is no idiom."""
    m = sums.shape[1]
    if n_boot == 0 or len(counts) == 0:
        return np.full(m, math.nan), np.full(m, math.nan)
    draws = resample_counts(len(counts), n_boot, seed)
    means = (draws @ sums) / (draws @ counts)[:, None]
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail], axis=0)
    return lo, hi


def cluster_intervals(per_query: pd.DataFrame, *, n_boot: int = N_BOOT, seed: int = 0,
                      level: float = 0.95) -> pd.DataFrame:
    """Mean metrics per model x mode x query usage with idiom-cluster bootstrap intervals.

    Args:
        per_query: :func:`~ncprobe.retrieval.metrics.evaluate`'s rows (one or more
            model x mode); columns ``model, mode, query, idiom, usage`` and the metrics.
        n_boot: idiom resamples (0: no intervals, NaN).
        seed: the seed of the resamples (the same seed gives the same intervals).
        level: the coverage of the percentile interval.

    Returns:
        One row per (model, mode, usage): cells in order of first appearance, usages in
        :data:`USAGES` order (``all``: every query of the cell). Columns ``model, mode,
        usage, n`` (queries), ``n_idioms``, then for each metric ``m`` of
        :data:`~ncprobe.retrieval.metrics.METRICS`: ``m`` (mean over queries, a fraction),
        ``m_lo``, ``m_hi``. A usage without queries has ``n`` 0 and NaN values.

    Raises:
        UsageError: a missing column or metric value, a query twice in a cell, a bad
            ``n_boot`` or ``level``.
    """
    _check_frame(per_query, n_boot, level)
    values = per_query[list(METRICS)].to_numpy(dtype=np.float64)
    idioms = per_query["idiom"].to_numpy()
    usages = per_query["usage"].to_numpy()
    rows = []
    for (model, mode), idx in _cells(per_query).items():
        for usage in USAGES:
            sel = idx if usage == "all" else idx[usages[idx] == usage]
            sums, counts = _by_idiom(idioms[sel], values[sel])
            lo, hi = _boot_means(sums, counts, n_boot, seed, level)
            row: dict[str, object] = {"model": model, "mode": mode, "usage": usage,
                                      "n": len(sel), "n_idioms": len(counts)}
            mean = values[sel].mean(axis=0) if len(sel) else np.full(len(METRICS), math.nan)
            for j, m in enumerate(METRICS):
                row[m], row[m + "_lo"], row[m + "_hi"] = float(mean[j]), lo[j], hi[j]
            rows.append(row)
    columns = ["model", "mode", "usage", "n", "n_idioms"]
    columns += [m + s for m in METRICS for s in ("", "_lo", "_hi")]
    return pd.DataFrame(rows, columns=columns)


def default_pairs(per_query: pd.DataFrame) -> list[Pair]:
    """The comparisons of :func:`paired_tests` by default.

    Within each model (order of appearance): span vs sentence, instruction_sentence vs
    sentence, instruction_span vs span, instruction_span vs instruction_sentence, each when
    both modes are present; then for each mode (order of appearance), every pair of models
    that have it, the model that appears first being ``a``.
    """
    cells = list(dict.fromkeys(zip(per_query["model"], per_query["mode"], strict=True)))
    present = set(cells)
    models = list(dict.fromkeys(m for m, _ in cells))
    modes = list(dict.fromkeys(d for _, d in cells))
    out: list[Pair] = []
    for model in models:
        out += [((model, a), (model, b)) for a, b in MODE_PAIRS
                if (model, a) in present and (model, b) in present]
    for mode in modes:
        having = [m for m in models if (m, mode) in present]
        out += [((a, mode), (b, mode)) for a, b in itertools.combinations(having, 2)]
    return out


def run_family(models: Sequence[str]) -> str:
    """The name of a run's own family of tests: its mode comparisons and its model
    comparisons, corrected together whatever else is reported with them."""
    return f"run {' + '.join(models)}: its modes and models"


def across_family(names: Sequence[object]) -> str:
    """The name of the family of model-vs-model tests between the runs ``names`` (their
    results directories): corrected together, never with a run's own tests (a report of
    several directories and ``ncprobe compare`` name it alike)."""
    return "models across runs: " + ", ".join(map(str, names))


def _cell_name(cell: Cell) -> str:
    return f"({cell[0]}, {cell[1]})"


def _check_pairs(pairs: Sequence[Pair], cells: dict[Cell, np.ndarray]) -> list[Pair]:
    out = []
    for pair in pairs:
        try:
            (ma, da), (mb, db) = pair
        except (TypeError, ValueError):
            raise UsageError(f"a pair is ((model_a, mode_a), (model_b, mode_b)), not {pair!r}"
                             ) from None
        for cell in ((ma, da), (mb, db)):
            if cell not in cells:
                raise UsageError(f"cell {_cell_name(cell)} of the pair {pair!r} is not in the "
                                 "per-query frame; its cells are "
                                 + ", ".join(_cell_name(c) for c in cells))
        out.append(((ma, da), (mb, db)))
    return out


def paired_tests(per_query: pd.DataFrame, pairs: Sequence[Pair] | None = None, *,
                 n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95,
                 correction: str = "holm", n_flips: int | str = "auto",
                 family: str | None = None) -> pd.DataFrame:
    """Paired comparisons of two cells (model x mode) on the same queries, over idioms.

    Args:
        per_query: :func:`~ncprobe.retrieval.metrics.evaluate`'s rows.
        pairs: ``((model_a, mode_a), (model_b, mode_b))`` each (default
            :func:`default_pairs`).
        n_boot: idiom resamples of the interval of the difference (0: no interval, NaN).
        seed: the seed of the resamples and of the random sign patterns.
        level: the coverage of the percentile interval of the difference.
        correction: ``holm``, ``fdr_bh`` or ``none``, over every row of the table (one
            family).
        n_flips: random sign patterns of the test (0: no test, p NaN); ``"auto"`` (the
            default): enough for the least corrected p of this family of ``m`` tests to
            reach 0.001 (:func:`ncprobe.stats.choose_flips`: ``1,000 m`` under Holm or BH,
            at most :data:`ncprobe.stats.MAX_FLIPS`). A test on ``k`` idioms with
            ``2^k <= n_flips`` enumerates all ``2^k`` patterns instead (exact).
        family: the name of this table's family of tests (the ``family`` column; default
            :func:`run_family` of the models in ``per_query``).

    Returns:
        One row per pair x usage (:data:`USAGES`) x metric, columns :data:`TEST_COLUMNS`:
        ``model_a, mode_a, model_b, mode_b, usage, metric, a, b`` (means over queries),
        ``diff`` (``a - b``), ``diff_lo, diff_hi`` (paired idiom-cluster bootstrap interval),
        ``p`` (two-sided sign-flip test over idioms), ``p_bound`` (no random pattern was as
        extreme: ``p`` is the floor ``1/(B+1)``, the true p lies below it), ``p_corrected``
        and ``p_corrected_bound`` (:func:`ncprobe.stats.correct_bounded`), ``significant``
        (``p_corrected <= ALPHA``, :data:`ncprobe.significance.ALPHA`), ``n`` (queries),
        ``n_idioms``, ``test`` (which test gave ``p``: exact or how many random flips),
        ``correction``, ``family`` and ``family_size`` (the tests with a p corrected
        together).

    Warns:
        ResolutionWarning: some corrected p's are bounds above 0.001 (``n_flips`` too small
            or capped); the message says how many and what ``n_flips`` would resolve them.

    Raises:
        UsageError: the two cells of a pair hold different queries (the message names the
            cells and how many query ids are in only one of them), a cell of a pair is not
            in the frame, a query twice in a cell, a missing column or metric value, a bad
            ``n_boot``, ``n_flips``, ``level`` or ``correction``.
    """
    method = check_correction(correction)
    _check_frame(per_query, n_boot, level)
    choose_flips(n_flips, 1, method)  # a bad n_flips: refused before any work
    cells = _cells(per_query)
    todo = _check_pairs(default_pairs(per_query) if pairs is None else pairs, cells)
    values = per_query[list(METRICS)].to_numpy(dtype=np.float64)
    queries = per_query["query"].to_numpy()
    idioms = per_query["idiom"].to_numpy()
    usages = per_query["usage"].to_numpy()
    rows: list[dict] = []
    sums: list[np.ndarray] = []   # per (pair, usage) with idioms: per-idiom summed differences
    for cell_a, cell_b in todo:
        ia, ib = cells[cell_a], cells[cell_b]
        qa, qb = pd.Index(queries[ia]), pd.Index(queries[ib])
        differ = len(qa.symmetric_difference(qb))
        if differ:
            raise UsageError(
                f"cells {_cell_name(cell_a)} and {_cell_name(cell_b)} do not hold the same "
                f"queries: {differ} query id(s) are in only one of them ({len(qa)} and "
                f"{len(qb)} queries); a paired test needs both run on the same queries")
        ib = ib[qb.get_indexer(qa)]  # b's rows in a's query order
        for usage in USAGES:
            keep = np.ones(len(ia), dtype=bool) if usage == "all" else usages[ia] == usage
            va, vb = values[ia[keep]], values[ib[keep]]
            diffs, counts = _by_idiom(idioms[ia[keep]], va - vb)
            k, n = len(counts), int(keep.sum())
            lo, hi = _boot_means(diffs, counts, n_boot, seed, level)
            test = len(sums) if k else None
            if k:
                sums.append(diffs)
            mean_a = va.mean(axis=0) if n else np.full(len(METRICS), math.nan)
            mean_b = vb.mean(axis=0) if n else np.full(len(METRICS), math.nan)
            for j, m in enumerate(METRICS):
                rows.append({"model_a": cell_a[0], "mode_a": cell_a[1], "model_b": cell_b[0],
                             "mode_b": cell_b[1], "usage": usage, "metric": m,
                             "a": float(mean_a[j]), "b": float(mean_b[j]),
                             "diff": float(mean_a[j] - mean_b[j]), "diff_lo": float(lo[j]),
                             "diff_hi": float(hi[j]), "p": math.nan, "p_bound": False,
                             "n": n, "n_idioms": k, "_test": test, "_col": j,
                             "test": "sign-flip over idioms (not run: no queries)"})
    # the family: every row with a test; the flips are chosen for its size
    return paired_family(
        rows, sums, lambda s, n: [(t.p, t.bound, t.describe()) for t in sign_flip(s, n, seed=seed)],
        m=len(sums) * len(METRICS), n_resamples=n_flips, method=method,
        family=family if family is not None else run_family(
            list(dict.fromkeys(per_query["model"]))),
        columns=TEST_COLUMNS, name="sign-flip over idioms", option="n_flips", noun="sign flips")
