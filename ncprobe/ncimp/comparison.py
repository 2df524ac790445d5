"""Comparisons that are tests: is one run's (or condition's) rho with the gold higher than
another's, on the same NCs?

:func:`compare` takes the per-NC ``measures`` of two :class:`~ncprobe.ncimp.results.Results`
(or of one, under two selections) and, for every cell present on both sides (measure x
level x context x space x layer view x language, as far as the selections leave them
open), tests the difference of Spearman's rho with the gold score on the NCs the two sides
share:

* a paired bootstrap (the NCs resampled jointly, :func:`ncprobe.stats.paired_bootstrap_rho_diff`):
  the difference, its percentile interval and a bootstrap p-value, which is the test;
* Williams' t for dependent correlations sharing a variable (:func:`ncprobe.stats.williams_t`)
  as a classical cross-check;
* the bootstrap p-values corrected for multiple comparisons across the whole output, one
  family (:func:`ncprobe.stats.correct_bounded`), and ``significant`` from the corrected p.
  A bootstrap p is never below ``2/(n_boot+1)``; where no resample fell on the other side of
  0 it is only that floor (``p_boot_bound``), the correction carries the bound on
  (``p_corrected_bound``), and a bound that limits a decision is warned about
  (:class:`ncprobe.significance.ResolutionWarning`, naming the ``n_boot`` that would resolve
  it). The default 10,000 resamples are kept rather than chosen per family: each resample
  is a pair of Spearman rhos over every NC of a cell, and the 88,000 a 44-cell Holm family
  needs would hold ~200 MB per resample matrix per cell.

Examples::

    compare(glove, minilm)                                   # two models, every cell
    compare(res, select_a={"context": "nat"}, select_b={"context": "neut"})
    compare(res, select_a={"layers": "6"}, select_b={"layers": "12"})
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..probes.options import COMPARE_N_BOOT
from ..query import filter_rows
from ..schema import GOLD, Correction
from ..significance import ALPHA, check_correction, warn_resolution
from ..stats import correct_bounded, paired_bootstrap_rho_diff, resamples_for, spearman, williams_t
from .cells import CELL_KEYS, check_same_data, refuse_repeated_cells
from .selection import default_views

if TYPE_CHECKING:
    from .runs import ResultsData as Results

log = logging.getLogger(__name__)

# The resamples of a comparison by default, COMPARE_N_BOOT, are those of every probe's
# `ncprobe compare` (ncprobe.probes.options): more than a run's intervals use (a table of 44
# cells needs n_boot > 1760 for any cell to be significant after Holm's correction, and
# 88,000 for a floored p to reach ``***``).
#: What every row of a comparison is corrected with (its ``family`` column).
COMPARE_FAMILY = "this comparison: every cell tested"
#: What a selection may filter on: the cell keys (:data:`ncprobe.ncimp.cells.CELL_KEYS`, in the
#: order the output shows them), and ``nc`` / ``cls`` (which only filter).
SELECT_KEYS: tuple[str, ...] = CELL_KEYS + ("nc", "cls")
#: The statistics of each output row, after its key columns.
STAT_COLUMNS: tuple[str, ...] = (
    "n", "rho_a", "rho_b", "diff", "ci_low", "ci_high", "p_boot", "p_boot_bound", "r_ab",
    "williams_t", "p_williams", "p_corrected", "p_corrected_bound", "significant", "family",
    "family_size")

#: What each side's runs were computed with, after :data:`STAT_COLUMNS`: the store dtype of
#: the side's run of the row's model and language (``float32``, ``float16``, ``bfloat16``: a
#: half-precision side is named in the file ``ncprobe compare --out`` writes).
SIDE_COLUMNS: tuple[str, ...] = ("store_dtype_a", "store_dtype_b")

#: One selection: column -> one value (which fixes the column on that side) or a list of
#: values (which only filters).
Selection = Mapping[str, str | Sequence[str]]


def compare(a: Results, b: Results | None = None, *, select_a: Selection | None = None,
            select_b: Selection | None = None, n_boot: int = COMPARE_N_BOOT,
            seed: int = 0, correct: Correction = "holm",
            progress: Callable[[int, int, str], None] | None = None,
            options: bool = False, same: bool = False) -> pd.DataFrame:
    """Test, cell by cell, whether side A's Spearman rho with the gold differs from side B's.

    Args:
        a: the results of side A.
        b: the results of side B; ``None``: ``a`` again, under ``select_b`` (nat vs neut of
            one model, two layer views ...).
        select_a, select_b: the rows of each side's ``measures`` table, filtered as
            :meth:`Results.select` does (values compared as text) on ``model``, ``lang``,
            ``space``, ``layers``, ``level``, ``context``, ``measure``, ``nc``, ``cls``.
            A cell key given one value (``{"context": "nat"}``) is *fixed* on that side:
            the output shows it as ``context_a`` / ``context_b`` and the other side must
            hold one value of it (or fix one). A list of values only filters.
        n_boot, seed: the bootstrap resamples (``numpy.random.default_rng(seed)``): the same
            inputs give the same output.
        correct: the multiple-comparison correction of the bootstrap p-values, the family
            being every row of the output (:data:`COMPARE_FAMILY`): ``holm`` (default),
            ``fdr_bh`` or ``none``.
        progress: called before each cell is tested as ``progress(k, total, cell)``, ``k``
            from 1, ``cell`` the cell in words (``ncprobe compare`` shows it on stderr).
        options: the messages name the selections as the command line's options
            (``--a KEY=VALUE``, ``ncprobe compare``) instead of the keywords
            (``select_a={...}``).
        same: two sides of equal values are an answer (a vector transform that changed
            nothing: every difference 0, p 1), not a mistake; without it they are refused
            as the same run given twice.

    Cells are matched on every cell key that is fixed on neither side (language, space,
    layer view, level, context group, measure, as present), and NCs are paired on
    ``(lang, nc)``. ``model`` is always a side's own: each side must hold one model. The
    layer view is a side's own too when each side holds one and they differ (a static
    model's ``-`` against a transformer's ``3+4+5+6``). When no selection names ``layers``
    and the sides share no layer view (two models whose views are named differently), each
    side keeps its default view per language (:func:`ncprobe.ncimp.selection.default_views`: the
    one its figures show), so that two models compare without options. Each NC of a cell is
    paired once: a side holding one NC of one cell twice (two runs pooled) is refused, so
    ``n`` is the number of NCs shared.

    Returns:
        One row per cell present on both sides, in the order of side A's rows. Columns:
        ``model_a, model_b``, then ``<key>_a, <key>_b`` for every other key fixed on a side
        (``layers_a, layers_b`` ...), then the matched keys (of ``lang, space, layers,
        level, context, measure``), then :data:`STAT_COLUMNS`:

        * ``n``: the NCs shared, with a value on both sides and a gold score;
        * ``rho_a``, ``rho_b``: Spearman's rho with the gold on those ``n`` NCs (it can
          differ from the ``correlations`` table, which uses every NC of one run);
        * ``diff = rho_a - rho_b``, ``ci_low``, ``ci_high``: its paired percentile bootstrap
          interval (95%), ``p_boot`` its two-sided bootstrap p-value (the definition is
          in :func:`ncprobe.stats.paired_bootstrap_rho_diff`), ``p_boot_bound`` whether it
          is only the floor ``2/(n_boot+1)`` (no resample on the other side of 0; the true
          p is smaller);
        * ``r_ab``: Spearman's rho between the two sides' values; ``williams_t``,
          ``p_williams``: Williams' t (``n - 3`` df) on ``rho_a``, ``rho_b``, ``r_ab``;
        * ``p_corrected``: ``p_boot`` corrected across the output (``correct``),
          ``p_corrected_bound`` whether it is a bound in turn
          (:func:`ncprobe.stats.correct_bounded`); ``significant``: ``p_corrected <= ALPHA``
          (0.05); ``family`` (:data:`COMPARE_FAMILY`) and ``family_size`` (the rows with a
          p, corrected together);

        then :data:`SIDE_COLUMNS`: ``store_dtype_a``, ``store_dtype_b``, how each side's
        run of the row kept its vectors (``float32`` where ``run.json`` does not say).

        The least ``p_boot`` is ``2 / (n_boot + 1)``: after Holm's correction of ``m`` tests
        it is ``2 m / (n_boot + 1)``, so ``n_boot`` must exceed ``40 m`` for any test to be
        significant under Holm, and reach ``2,000 m`` for a floored p to earn ``***``.

    Warns:
        ResolutionWarning: some corrected p's are bounds above 0.001 (they might deserve
            more stars, or be significant); the message names how many and the ``n_boot``
            that would resolve them.

    Raises:
        UsageError: a selection names an unknown column or a value the results do not hold
            (the message lists what they hold), a side holds several models or several
            values of a key the other side fixes, the two sides share no cell or no NC, or
            an NC has different gold scores on the two sides (runs made with different
            ``--gold``), or a side holds one NC of one cell more than once (two runs of one
            cell pooled by other means than :meth:`Results.concat`, which refuses them).
    """
    check_correction(correct)
    if b is not None and b is not a:  # two runs of different data: never one test
        check_same_data([a, b], ["side A", "side B"])
    say = _Words(options)
    if b is None:
        if select_b is None or dict(select_b) == dict(select_a or {}):
            raise UsageError("comparing one run with itself needs two different selections "
                             f"(e.g. {say.one('a', 'context', 'nat')}, "
                             f"{say.one('b', 'context', 'neut')}), or "
                             f"{say.side_b}")
        b = a
    side_a = _side(a, select_a, "a", say)
    side_b = _side(b, select_b, "b", say)
    named = any("layers" in (sel or {}) for sel in (select_a, select_b))
    if not named and not set(side_a["layers"]) & set(side_b["layers"]):
        # two models whose layer views are named differently: each its default view
        side_a, side_b = (default_views(side, ["model", "lang"]) for side in (side_a, side_b))
    fixed = _fixed_keys(side_a, side_b, select_a, select_b, say)
    match = [k for k in CELL_KEYS if k not in fixed]
    pair_on = match + (["lang"] if "lang" in fixed else []) + ["nc"]

    # one row per NC and cell on both sides; the fixed keys of each side become <key>_a/_b
    cols = list(CELL_KEYS) + ["nc", "value", GOLD]
    # 1:1 — each side holds one row per cell and NC (_side); never a row counted twice
    merged = side_a[cols].merge(side_b[cols], on=pair_on, how="inner", suffixes=("_a", "_b"),
                                validate="one_to_one")
    if merged.empty:
        raise UsageError("the two sides share no cell and NC: "
                         + _what_exists(side_a, side_b, pair_on, say))
    _check_gold(merged, a, b)
    same_values = merged["value_a"].to_numpy(dtype=np.float64) == merged["value_b"].to_numpy(
        dtype=np.float64)
    both_nan = merged["value_a"].isna().to_numpy() & merged["value_b"].isna().to_numpy()
    if (same_values | both_nan).all() and not same:
        # every difference would be 0 with p = 1: a comparison that cannot tell anything
        raise UsageError("the two sides hold the same value for every NC of every cell they "
                         "share: the same run (and selection) given twice? Give two runs, or "
                         "two different selections of one")
    for k in fixed:
        if k == "lang":  # paired on: one value on both sides, shown as lang_a / lang_b
            merged[f"{k}_a"] = merged[f"{k}_b"] = merged[k]
    side_cols = [f"{k}{s}" for k in fixed for s in ("_a", "_b")]
    cell_cols = side_cols + match

    rows = []
    groups = merged.groupby(cell_cols, sort=False, dropna=False)
    for done, (key, cell) in enumerate(groups, start=1):
        if progress is not None:  # "model-a vs model-b · en · raw · nc · nat · syn"
            progress(done, groups.ngroups, " · ".join(
                [f"{key[2 * i]} vs {key[2 * i + 1]}" for i in range(len(fixed))]
                + [str(v) for v in key[len(side_cols):]]))
        va = cell["value_a"].to_numpy(dtype=np.float64)
        vb = cell["value_b"].to_numpy(dtype=np.float64)
        gold = cell[f"{GOLD}_a"].to_numpy(dtype=np.float64)
        d = paired_bootstrap_rho_diff(va, vb, gold, n_boot=n_boot, seed=seed)
        ok = ~(np.isnan(va) | np.isnan(vb) | np.isnan(gold))
        r_ab = spearman(va[ok], vb[ok]).rho
        t, p_t = williams_t(d.rho_a, d.rho_b, r_ab, d.n)
        rows.append({**dict(zip(cell_cols, key, strict=True)), "n": d.n, "rho_a": d.rho_a,
                     "rho_b": d.rho_b, "diff": d.diff, "ci_low": d.ci_low,
                     "ci_high": d.ci_high, "p_boot": d.p, "p_boot_bound": d.p_bound,
                     "r_ab": r_ab, "williams_t": t, "p_williams": p_t})
    out = pd.DataFrame(rows)
    if not (out["n"] > 0).any():
        raise UsageError("the two sides share no NC with a value on both sides and a gold "
                         "score: " + _what_exists(side_a, side_b, pair_on, say))
    family = int(out["p_boot"].notna().sum())
    if correct == "holm" and family > 1 and 2.0 * family / (n_boot + 1) > ALPHA:
        log.warning("compare: %d tests corrected by Holm with %d bootstrap resamples: the "
                    "least bootstrap p is 2/(n_boot+1), so no test can be significant after "
                    "the correction; use %s >= %d", family, n_boot, say.n_boot,
                    math.ceil(2.0 * family / ALPHA))
    corrected, bound = correct_bounded(out["p_boot"].to_numpy(dtype=np.float64),
                                       out["p_boot_bound"].to_numpy(dtype=bool), correct)
    out["p_boot_bound"] = out["p_boot_bound"].astype(bool)
    out["p_corrected"] = corrected
    out["p_corrected_bound"] = bound
    out["significant"] = (out["p_corrected"] <= ALPHA).to_numpy()
    out["family"] = COMPARE_FAMILY
    out["family_size"] = family
    out["n"] = out["n"].astype("int64")
    warn_resolution(corrected, bound, rows="compared cells",
                    resamples=f"{n_boot:,} bootstrap resamples", option=say.n_boot,
                    needed=resamples_for(family, correct, per=2))
    lang = ("lang_a", "lang_b") if "lang" in fixed else ("lang", "lang")
    for res, side, at in ((a, "a", lang[0]), (b, "b", lang[1])):
        dtypes = _store_dtypes(res)
        out[f"store_dtype_{side}"] = [dtypes.get((str(m), str(lg)))
                                      for m, lg in zip(out[f"model_{side}"], out[at],
                                                       strict=True)]
    return out[cell_cols + list(STAT_COLUMNS) + list(SIDE_COLUMNS)].reset_index(drop=True)


def _store_dtypes(res: Results) -> dict[tuple[str, str], str]:
    """The store dtype of each run of ``res`` by (model, language): its ``run.json`` config's,
    the default (float32) where it leaves it out."""
    from .config import RunConfig

    return {(str(m["config"].get("model")), str(m["config"].get("lang"))):
            str(m["config"].get("store_dtype") or RunConfig.store_dtype) for m in res.meta}


class _Words:
    """How a comparison's messages name the selections: the keywords of :func:`compare`
    (``select_a={'context': 'nat'}``), or the options of ``ncprobe compare``
    (``--a context=nat``)."""

    def __init__(self, options: bool) -> None:
        self.options = options
        self.side_b = ("give RESULTS_B" if options else "give the results of side B")
        #: the resamples: ``--n-boot`` or ``n_boot``
        self.n_boot = "--n-boot" if options else "n_boot"

    def name(self, side: str) -> str:
        """What selects a side's rows: ``--a`` or ``select_a``."""
        return f"--{side}" if self.options else f"select_{side}"

    def one(self, side: str, key: str, value: str | None = None) -> str:
        """A selection of one key: ``--a context=nat`` or ``select_a={'context': 'nat'}``
        (``value`` ``None``: a placeholder)."""
        if self.options:
            return f"--{side} {key}={value if value is not None else 'VALUE'}"
        return f"select_{side}={{'{key}': {repr(value) if value is not None else '...'}}}"

    def given(self, side: str, select: Mapping) -> str:
        """A side's selection as it was given."""
        if not self.options:
            return f"select_{side} {dict(select)}"
        return " ".join(f"--{side} {k}=" + (v if _one_value(v) else ",".join(map(str, v)))
                        for k, v in select.items())

    def both(self) -> str:
        """How to select matching rows on both sides."""
        return ("--a KEY=VALUE / --b KEY=VALUE" if self.options else "select_a / select_b")


def _side(res: Results, select: Selection | None, name: str, say: _Words) -> pd.DataFrame:
    """The rows of ``res.measures`` that ``select`` keeps, with the keys as plain text."""
    select = dict(select or {})
    if res.measures.empty:
        raise UsageError(f"side {name.upper()} holds no per-NC measures (an empty results "
                         "table): compare results written by `ncprobe compute`")
    rows = filter_rows(res.measures, select, where=f"side {name.upper()}'s measures table",
                       takes=SELECT_KEYS, source=say.name(name))
    if rows.empty:
        raise UsageError(f"{say.given(name, select)} keeps no row of the per-NC measures; "
                         + _holds(res.measures, name))
    keys = list(CELL_KEYS) + ["nc"]
    rows = rows.assign(**{k: rows[k].astype(str) for k in keys})
    refuse_repeated_cells(rows, f"side {name.upper()}'s rows", "Give one run per cell "
                          "(ncprobe compare: --exclude DIR leaves a results directory out)")
    models = list(dict.fromkeys(rows["model"]))
    if len(models) > 1:
        raise UsageError(f"side {name.upper()} holds {len(models)} models ({', '.join(models)}); "
                         f"compare one model per side: {say.one(name, 'model')}")
    return rows


def _one_value(v: object) -> bool:
    """A selection value that fixes its column: one value, not a list of them."""
    return isinstance(v, (str, bytes)) or not isinstance(v, Iterable)


def _fixed_keys(side_a: pd.DataFrame, side_b: pd.DataFrame, select_a: Selection | None,
                select_b: Selection | None, say: _Words) -> list[str]:
    """The cell keys each side has its own value of (shown as ``<key>_a`` / ``<key>_b``)."""
    one = {k for sel in (select_a, select_b) for k, v in (sel or {}).items()
           if k in CELL_KEYS and _one_value(v)}
    one.add("model")
    la, lb = set(side_a["layers"]), set(side_b["layers"])
    if len(la) == 1 and len(lb) == 1 and la != lb:
        one.add("layers")
    fixed = [k for k in CELL_KEYS if k in one]
    for k in fixed:
        for name, side in (("a", side_a), ("b", side_b)):
            values = list(dict.fromkeys(side[k]))
            if len(values) > 1:
                raise UsageError(f"{k} is compared across the sides, but side {name.upper()} "
                                 f"holds several: {', '.join(values)}; select one with "
                                 f"{say.one(name, k)}")
    return fixed


def _check_gold(merged: pd.DataFrame, a: Results, b: Results) -> None:
    """Refuse to compare NCs whose gold score is not the same on both sides."""
    ga = merged[f"{GOLD}_a"].to_numpy(dtype=np.float64)
    gb = merged[f"{GOLD}_b"].to_numpy(dtype=np.float64)
    same = np.isclose(ga, gb, rtol=1e-12, atol=0.0, equal_nan=True)
    if same.all():
        return
    i = int(np.flatnonzero(~same)[0])
    r = merged.iloc[i]
    lang = r["lang"]  # a key the sides are paired on: one column
    golds = [", ".join(sorted({str((m.get("config") or {}).get("gold", "?")) for m in res.meta}))
             for res in (a, b)]
    raise UsageError(f"the gold score of NC {r['nc']!r} ({lang}) is {_num(ga[i])} on side A "
                     f"and {_num(gb[i])} on side B (gold: {golds[0] or '?'} / "
                     f"{golds[1] or '?'}): the runs were made with different gold scores "
                     "(--gold). Compare runs computed with the same --gold")


def _num(x: float) -> str:
    return "missing" if math.isnan(x) else f"{x:g}"


def _holds(rows: pd.DataFrame, name: str) -> str:
    parts = []
    for k in CELL_KEYS:
        values = list(dict.fromkeys(rows[k].astype(str)))
        shown = ", ".join(values[:12]) + (f" ... ({len(values)} in all)"
                                          if len(values) > 12 else "")
        parts.append(f"{k} {shown}")
    return f"side {name.upper()} holds " + "; ".join(parts)


def _what_exists(side_a: pd.DataFrame, side_b: pd.DataFrame, pair_on: list[str],
                 say: _Words) -> str:
    """Where the two sides' cells and NCs part, and what each holds."""
    apart = []
    for k in pair_on:
        va, vb = list(dict.fromkeys(side_a[k])), list(dict.fromkeys(side_b[k]))
        if not set(va) & set(vb):
            if k == "nc":
                apart.append(f"no NC is on both sides ({len(va)} on side A, {len(vb)} on "
                             "side B)")
            else:
                apart.append(f"{k} {', '.join(va)} on side A, {', '.join(vb)} on side B")
    why = "; ".join(apart) if apart else "no combination of the keys is on both sides"
    return (f"{why}. {_holds(side_a, 'a')}. {_holds(side_b, 'b')}. Select matching rows with "
            f"{say.both()} (a key given one value is compared across the sides)")
