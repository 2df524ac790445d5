"""The board: models across probes, each probe's headline metric (:class:`~ncprobe.headline.
Headline`, declared by the probe) with its interval, each model's rank with a rank interval,
and tiers of models the probe's paired tests cannot separate (``ncprobe board``;
:mod:`ncprobe.board_files` writes it out).

Per probe, with ``U`` the units any of its models holds (sorted) and ``K = len(U)``:

* **the draws**: ``default_rng(seed).integers(0, K, (n_boot, K))`` picks units of ``U`` with
  replacement; the SAME draws for every model of the probe. On a draw, a model's metric is its
  statistic of the rows of the drawn units (a unit drawn twice counts twice; a unit the model
  lacks adds nothing).
* **value and interval**: the statistic of all the model's rows, and the percentile interval
  (``level``) of its draws.
* **rank and rank interval**: ranks 1 (best, by the metric's direction) to ``m`` among the
  models with a value, ties sharing the least rank (``min``); on each draw the models are
  ranked the same way, and the rank interval is the ``(1 - level) / 2`` and ``1 - (1 - level)
  / 2`` quantiles of a model's ranks over the draws, taken as ranks that occurred
  (``numpy.quantile(..., method="inverted_cdf")``: the smallest rank whose share of draws at or
  below it reaches the quantile).
* **paired tests**: every pair of models, the bootstrap test of a difference of 0 on the same
  draws (:func:`ncprobe.stats.bootstrap_p` of the per-draw differences), Holm-corrected over
  the probe's pairs (one family per probe).
* **tiers**: the models in order of their value (best first; ties by board order); tier 1
  starts with the first; each next model joins the current tier when its corrected test
  against the tier's first model (its best) is not significant (``p_corrected > alpha``),
  else it starts the next tier and is that tier's best.

A model of the board that a probe lacks has no value, rank or tier for it: it is shown as
missing, never ranked last.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from .config import N_BOOT
from .errors import UsageError
from .headline import UNIT, Headline
from .significance import ALPHA
from .stats import bootstrap_p, correct

#: The columns of :attr:`Board.cells`: one row per model and probe (``missing``: the probe has
#: no value for the model).
CELL_COLUMNS = ("probe", "title", "metric", "unit", "model", "missing", "value", "ci_low",
                "ci_high", "rank", "rank_low", "rank_high", "tier", "n_models", "n_units",
                "cell")
#: The columns of :attr:`Board.tests`: one row per pair of models of a probe.
TEST_COLUMNS = ("probe", "model_a", "model_b", "diff", "p", "p_bound", "p_corrected",
                "significant")


@dataclass(frozen=True)
class Board:
    """A board: :attr:`cells` (:data:`CELL_COLUMNS`), :attr:`tests` (:data:`TEST_COLUMNS`),
    the models in board order, the headlines, and the options it was computed with."""

    cells: pd.DataFrame
    tests: pd.DataFrame
    models: tuple[str, ...]
    headlines: tuple[Headline, ...]
    n_boot: int
    seed: int
    level: float
    alpha: float


def _ranks(values: np.ndarray, higher: bool) -> np.ndarray:
    """Ranks (1: best) of the finite ``values``, ties sharing the least rank; NaN stays NaN."""
    from scipy.stats import rankdata

    out = np.full(len(values), np.nan)
    ok = np.isfinite(values)
    if ok.any():
        out[ok] = rankdata(-values[ok] if higher else values[ok], method="min")
    return out


def probe_draws(h: Headline, models: Sequence[str], n_boot: int, seed: int
                ) -> tuple[np.ndarray, np.ndarray, int]:
    """The metric of each of ``models`` (those ``h`` holds) on all its rows (``(m,)``) and on
    each draw (``(n_boot, m)``), and the number of units drawn from."""
    units = sorted({str(u) for m in models for u in h.rows[m][UNIT]})
    where = {u: i for i, u in enumerate(units)}
    k = len(units)
    if k == 0:
        raise UsageError(f"the {h.probe} results hold no {h.unit} for the headline "
                         f"({h.metric}): nothing to put on a board")
    point = np.array([h.statistic(h.rows[m]) for m in models], dtype=np.float64)
    draws = np.random.default_rng(seed).integers(0, k, size=(n_boot, k))
    boot = np.full((n_boot, len(models)), np.nan)
    for j, m in enumerate(models):
        df = h.rows[m].reset_index(drop=True)
        codes = np.array([where[str(u)] for u in df[UNIT]], dtype=np.int64)
        order = np.argsort(codes, kind="stable")
        starts = np.searchsorted(codes[order], np.arange(k + 1))
        for b in range(n_boot):
            take = np.concatenate([order[starts[u]:starts[u + 1]] for u in draws[b]])
            boot[b, j] = h.statistic(df.iloc[take])
    return point, boot, k


def _tiers(models: Sequence[str], point: np.ndarray, higher: bool,
           significant: dict[frozenset, bool]) -> dict[str, int]:
    order = sorted(range(len(models)), key=lambda i: -point[i] if higher else point[i])
    tiers: dict[str, int] = {}
    tier, best = 0, None
    for i in order:
        if best is None or significant[frozenset((models[best], models[i]))]:
            tier, best = tier + 1, i
        tiers[models[i]] = tier
    return tiers


def compute_board(headlines: Sequence[Headline], *, n_boot: int = N_BOOT, seed: int = 0,
                  level: float = 0.95, alpha: float = ALPHA) -> Board:
    """The board of ``headlines`` (one per probe, in board column order; the models in the
    order first met); the module says how each number is computed.

    Raises:
        UsageError: no headline, a probe twice, ``n_boot < 1``, ``level`` outside (0, 1).
    """
    if not headlines:
        raise UsageError("no results to put on a board: give results directories of one or "
                         "more probes")
    probes = [h.probe for h in headlines]
    twice = sorted({p for p in probes if probes.count(p) > 1})
    if twice:
        raise UsageError(f"probe(s) {', '.join(twice)} given twice: give each probe's "
                         "headline once")
    if n_boot < 1:
        raise UsageError(f"--n-boot {n_boot}: give at least 1 resample")
    if not 0.0 < level < 1.0:
        raise UsageError(f"level {level}: give a coverage between 0 and 1")
    board_models = list(dict.fromkeys(m for h in headlines for m in h.rows))
    q = ((1.0 - level) / 2.0, 1.0 - (1.0 - level) / 2.0)
    cells, tests = [], []
    for h in headlines:
        models = [m for m in board_models if m in h.rows]
        point, boot, k = probe_draws(h, models, n_boot, seed)
        rank = _ranks(point, h.higher_is_better)
        boot_ranks = np.vstack([_ranks(row, h.higher_is_better) for row in boot])
        pairs = [(i, j) for i in range(len(models)) for j in range(i + 1, len(models))]
        ps, bounds = [], []
        for i, j in pairs:
            p, bound = bootstrap_p(boot[:, i] - boot[:, j])
            ps.append(p)
            bounds.append(bound)
        p_arr = np.array(ps, dtype=np.float64)
        corrected = np.full(len(p_arr), np.nan)
        ok = np.isfinite(p_arr)
        if ok.any():
            corrected[ok] = correct(p_arr[ok], "holm")
        significant = {}
        for (i, j), p, bound, pc in zip(pairs, ps, bounds, corrected, strict=True):
            sig = bool(np.isfinite(pc) and pc <= alpha)
            significant[frozenset((models[i], models[j]))] = sig
            tests.append({"probe": h.probe, "model_a": models[i], "model_b": models[j],
                          "diff": float(point[i] - point[j]), "p": p, "p_bound": bound,
                          "p_corrected": float(pc), "significant": sig})
        ranked = [i for i in range(len(models)) if np.isfinite(point[i])]
        tiers = _tiers([models[i] for i in ranked], point[ranked], h.higher_is_better,
                       significant)
        for j, m in enumerate(models):
            vals = boot[:, j][np.isfinite(boot[:, j])]
            rks = boot_ranks[:, j][np.isfinite(boot_ranks[:, j])]
            lo, hi = np.percentile(vals, [q[0] * 100, q[1] * 100]) if len(vals) else (
                math.nan, math.nan)
            rlo, rhi = np.quantile(rks, q, method="inverted_cdf") if len(rks) else (
                math.nan, math.nan)
            cells.append({"probe": h.probe, "title": h.title, "metric": h.metric,
                          "unit": h.unit, "model": m, "missing": False,
                          "value": float(point[j]), "ci_low": float(lo), "ci_high": float(hi),
                          "rank": float(rank[j]), "rank_low": float(rlo),
                          "rank_high": float(rhi), "tier": float(tiers.get(m, math.nan)),
                          "n_models": len(ranked), "n_units": k,
                          "cell": h.cell.get(m, "")})
        for m in board_models:
            if m not in h.rows:
                cells.append({"probe": h.probe, "title": h.title, "metric": h.metric,
                              "unit": h.unit, "model": m, "missing": True,
                              "n_models": len(ranked), "n_units": k, "cell": ""})
    frame = pd.DataFrame(cells, columns=list(CELL_COLUMNS))
    order = {m: i for i, m in enumerate(board_models)}
    frame = frame.sort_values(["probe", "model"], key=lambda s: s.map(
        {p: i for i, p in enumerate(probes)} if s.name == "probe" else order), kind="stable")
    return Board(frame.reset_index(drop=True), pd.DataFrame(tests, columns=list(TEST_COLUMNS)),
                 tuple(board_models), tuple(headlines), n_boot, seed, level, alpha)


def load_headlines(paths: Sequence[str | Path], *, exclude: Sequence[str | Path] = (),
                   accept_edited: bool = False) -> list[Headline]:
    """Every results directory at or below ``paths`` (less ``exclude``), read verified
    (:meth:`~ncprobe.probes.base.ProbeResults.load`: an edited directory is refused unless
    ``accept_edited``), each probe's headline (:meth:`~ncprobe.probes.base.Probe.headline`) of
    every directory, joined per probe in the order the probes are registered. Every probe's
    headline is asked for before any statistic is computed.

    Raises:
        UsageError: a probe that declares no headline metric (amnesic probing), a model
            (row of the board) in two directories of one probe (never pooled), a probe's
            directories whose headlines differ (metric, unit).
        DataError: a directory edited since ncprobe wrote it (without ``accept_edited``) or
            damaged.
    """
    from dataclasses import replace

    from .probes import get_probe, probe_names, results_by_probe
    from .probes.base import Probe

    by_probe = results_by_probe(paths, exclude, require_match=bool(exclude))
    order = {n: i for i, n in enumerate(probe_names())}
    for name, dirs in by_probe.items():  # before any directory is read
        probe = get_probe(name)
        if getattr(probe.headline, "__func__", None) is Probe.headline:
            try:
                probe.headline(None)  # type: ignore[arg-type]  # the default's refusal
            except UsageError as e:
                raise UsageError(f"{', '.join(map(str, dirs))}: {e}") from None
    out = []
    for name in sorted(by_probe, key=lambda n: order.get(n, len(order))):
        probe = get_probe(name)
        joined: Headline | None = None
        seen: dict[str, Path] = {}
        for d in by_probe[name]:
            res = probe.results_class().load(d, accept_edited=accept_edited)
            h = probe.headline(res)
            for model in h.rows:
                if model in seen:
                    raise UsageError(f"model {model!r} of probe {name} is in both {seen[model]} "
                                     f"and {d}: two runs of one model are never pooled, and a "
                                     "board shows one value per model and probe; leave one "
                                     "out (--exclude DIR)")
                seen[model] = Path(d)
            if joined is None:
                joined = h
                continue
            if (h.metric, h.unit, h.higher_is_better) != (joined.metric, joined.unit,
                                                           joined.higher_is_better):
                raise UsageError(f"the {name} results of {d} give another headline ({h.metric} "
                                 f"over {h.unit}) than the others ({joined.metric} over "
                                 f"{joined.unit}); leave one out (--exclude DIR)")
            joined = replace(joined, rows={**joined.rows, **h.rows},
                             cell={**joined.cell, **h.cell},
                             notes=tuple(dict.fromkeys(joined.notes + h.notes)))
        if joined is not None:
            out.append(joined)
    return out
