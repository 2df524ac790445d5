"""NCIMP's results as data: the tidy tables of one or more runs with what made them, joined
without pooling, selected, read and written (:class:`ResultsData`). What draws, tests or
summarises them is above this module: :class:`~ncprobe.ncimp.results.Results` adds those
verbs, and the modules that implement them (the report, the comparison, the summary) take a
``ResultsData``, so that nothing below the results imports them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import ClassVar, TypeVar

import pandas as pd

from ..errors import UsageError
from ..probes.base import ProbeResults
from ..query import Filter, filter_rows
from ..results.store import (
    TABLES,
    Layout,
    drop_excluded,
    find_results,
    read_results,
    run_id,
    run_identity,
    write_results,
)
from ..schema import (
    GOLD,
    MEASURES,
    NC_KEYS,
    OWN_VIEW,
    RESULT_COLUMNS,
    RESULT_NUMERIC_COLUMNS,
    Analysis,
    Class,
    Cls,
    Context,
    ContextGroup,
    Level,
    Space,
    Substitution,
)
from ..schema import ResultTable as Table
from .cells import CELL_KEYS, check_same_data, refuse_repeated_cells
from .config import RunConfig

R = TypeVar("R", bound="ResultsData")

__all__ = ["KIND", "NCIMP_LAYOUT", "REPORT_LABEL", "SELECT_FILTERS", "WIDE_KEYS", "ResultsData"]

#: The kind of NCIMP's report, recorded in its manifest: the probe whose results it shows.
KIND = "ncimp"
#: NCIMP's report in words, in messages (``an NCIMP report``).
REPORT_LABEL = "NCIMP report"

#: How NCIMP's results directories are stored (:class:`~ncprobe.results.store.Layout`): its
#: tables (:data:`ncprobe.schema.RESULT_TABLES`), runs of a model and a language each, the
#: defaults of :class:`~ncprobe.ncimp.config.RunConfig`; its ``run.json`` names no probe
#: (``named=False``: written so before probes were named, and kept so, byte for byte; the
#: probe declares it reads such results, :attr:`NcimpProbe.reads_unnamed_results
#: <ncprobe.ncimp.seam.NcimpProbe.reads_unnamed_results>`).
NCIMP_LAYOUT = Layout(KIND, TABLES, RESULT_COLUMNS, RESULT_NUMERIC_COLUMNS,
                      run_keys=("model", "lang"), named=False, report_label=REPORT_LABEL,
                      config=RunConfig)

#: The filters of :meth:`Results.select`, each a column of the tables that have it.
SELECT_FILTERS = ("model", "lang", "space", "layers", "level", "context", "measure", "nc",
                  "cls", "probe", "analysis")
#: What makes a row of :meth:`Results.wide`: one NC in one condition.
WIDE_KEYS = list(NC_KEYS)

@dataclass
class ResultsData(ProbeResults):
    """Everything one or more ``compute`` runs produced (the tables: see :mod:`ncprobe.results`).

    NCIMP's results: the one results interface of every probe
    (:class:`~ncprobe.probes.base.ProbeResults`)."""

    #: How NCIMP's results directories are stored (:mod:`ncprobe.results.store`).
    layout: ClassVar[Layout] = NCIMP_LAYOUT

    cosines: pd.DataFrame
    sentences: pd.DataFrame
    measures: pd.DataFrame
    correlations: pd.DataFrame
    distributions: pd.DataFrame
    lexical_overlap: pd.DataFrame
    rogue: pd.DataFrame
    standardisation: pd.DataFrame
    ncs: pd.DataFrame
    meta: list[dict] = field(default_factory=list)

    def __repr__(self) -> str:
        runs = ", ".join(f"{m['config']['model']}/{m['config']['lang']}" for m in self.meta)
        return f"Results({runs}; {len(self.cosines)} cosines, {len(self.measures)} NC measures)"

    @property
    def notes(self) -> list[str]:
        """Every run's notes (``model/lang: note``), then the cache shards this computation
        found unusable (not written with the results: see
        :data:`~ncprobe.results.store.RUN_LOG_KEYS`)."""
        return [f"{m['config']['model']}/{m['config']['lang']}: {n}" for m in self.meta
                for n in [*m.get("notes", []), *m.get("cache_problems", [])]]

    def edited_lines(self) -> list[str]:
        """None: NCIMP's summary and report say each run read although edited themselves (its
        model and language, beside the data it read)."""
        return []

    @property
    def run_id(self) -> str:
        """A hash of every table's rows and of ``meta`` (less
        :data:`~ncprobe.results.store.RUN_LOG_KEYS`): equal results give equal ids, however
        they were computed."""
        return run_id(self._frames(), self.meta, NCIMP_LAYOUT)

    def _frames(self) -> dict[str, pd.DataFrame]:
        """The tables by name, in the order they are written."""
        return {name: getattr(self, name) for name in TABLES}

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables by name (:data:`ncprobe.schema.RESULT_TABLES`), in the order they are
        written."""
        return self._frames()

    def json_rows(self) -> list[dict]:
        """The headline rows as plain JSON values (NaN as null): Spearman's rho of every
        measure with the gold score (``correlations``, analysis ``nc`` and, with
        ``--per-sentence``, ``sentence``), per model, language, space, layer view, level and
        context, with ``n``, the 95% interval, ``p`` and ``p_corrected`` (Holm across these
        rows, the family :meth:`summary` prints). What ``ncprobe compute --json`` prints."""
        from ..stats import correct

        cor = self.correlations
        rows = cor[cor["analysis"].isin(["nc", "sentence"])]
        keys = ["model", "lang", "space", "layers", "level", "context", "measure", "analysis",
                "n", "rho", "ci_low", "ci_high", "p"]
        out = rows[keys].assign(p_corrected=correct(rows["p"].to_numpy(dtype=float), "holm"))
        out = out.astype({k: str for k in ("model", "lang", "space", "layers", "level",
                                            "context", "measure", "analysis")})
        return json.loads(out.to_json(orient="records", double_precision=15))

    def to_parquet(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write every table as ``<table>.parquet`` and the metadata as ``run.json`` into ``path``.

        The directory is written as one unit: into a fresh temporary directory beside
        ``path``, then swapped in under a lock on the parent directory (the previous
        directory is renamed aside and removed), so readers see the old results or the
        new, never a mixture, and two runs writing the same ``path`` never collide. What a
        killed write of ``path`` left beside it is tidied first (see
        :func:`~ncprobe.results.store.tidy_leftovers`). ``run.json`` holds the run id and
        each table's digests (:meth:`load` checks them); how this computation went
        (:data:`~ncprobe.results.store.RUN_LOG_KEYS`) is not written. The directory and its files
        get the modes a plain ``mkdir``/``open`` would give under the umask (0755/0644 under
        umask 022).

        Args:
            path: the results directory.
            overwrite: replace a results directory that holds a different run (other
                config, model or data). The same run is always replaced; a non-empty
                directory that is not an ncprobe results directory never is.

        Raises:
            UsageError: ``path`` holds a different run and ``overwrite`` is false, or it is
                not an ncprobe results directory.
            OutputError: ``path`` cannot be written (a read-only file system, a full disk,
                no permission, a file where a directory is needed); nothing was changed.
        """
        return write_results(self._frames(), self.meta, path, layout=NCIMP_LAYOUT,
                             overwrite=overwrite)

    @classmethod
    def load(cls: type[R], path: str | Path, *, accept_edited: bool = False) -> R:
        """Read what :meth:`to_parquet` wrote, and check that it is what ncprobe wrote.

        Every table must have the columns ncprobe writes (:data:`ncprobe.schema.RESULT_COLUMNS`),
        numbers where it writes numbers, and every run of ``run.json`` its ``config`` with
        ``model`` and ``lang``. The run id is recomputed from ``run.json`` and the SHA-256 of
        every table compared with the digest ``run.json`` holds for it, so a table or a
        ``run.json`` edited since ncprobe wrote it (values changed, rows dropped, a table
        rewritten by pandas, the config changed) is refused, naming what differs. Results
        directories of formats 1 and 2 (older ncprobe) hold no digests: they are read with
        a warning that their content cannot be checked. Formats 1-3 name the gold score's
        column ``comp`` (the name of the measure P_Comp too): read, verified as written, with
        the column renamed :data:`~ncprobe.schema.GOLD` (``gold``) and a
        ``DeprecationWarning`` (recompute them to write the current format).

        Args:
            path: the results directory.
            accept_edited: read a directory edited on purpose: what differs is logged as a
                warning and named in every run's ``meta["edited"]``, and
                :meth:`summary` (and a report of it) says so on its first lines. Columns,
                value types and ``run.json``'s keys are checked all the same.

        Raises:
            UsageError: ``path`` is not a results directory (no ``run.json``).
            DataError: ``run.json`` or a table is unreadable, missing or damaged (a column
                missing, text where numbers belong, a run without its ``config``), the
                format is unknown, or (unless ``accept_edited``) the directory was edited
                since ncprobe wrote it or holds tables of different runs.
        """
        tables, runs = read_results(path, layout=NCIMP_LAYOUT, accept_edited=accept_edited)
        return cls(**tables, meta=runs)

    @classmethod
    def load_many(cls: type[R], paths, *, exclude: Iterable[str | os.PathLike] = (),
                  accept_edited: bool = False, require_match: bool = True) -> R:
        """The results directories named by ``paths`` (:func:`find_results`), read and joined.

        What ``ncprobe report`` and ``ncprobe compare`` read. The directories are joined by
        :meth:`Results.concat`, which never pools two runs of one cell: when two directories
        found hold the same cell (a rerun with other options, a backup copy, two models of one
        name) it refuses, naming both; leave one out with ``exclude``.

        Args:
            paths: results directories, or directories above them.
            exclude: results directories to leave out, or directories above them (each must
                leave out at least one directory found, so that a typo is not ignored).
            accept_edited: read directories edited since ncprobe wrote them (passed to
                :meth:`Results.load`; ``--accept-edited-results``).
            require_match: ``False``: an ``exclude`` path may leave out nothing here (``ncprobe
                compare`` checks its ``--exclude`` against both sides together).

        Raises:
            UsageError: as :func:`find_results`; an ``exclude`` path that does not exist or
                leaves out nothing; every directory excluded; two directories holding one cell.
            DataError: a damaged results directory (:meth:`Results.load`).
        """
        found = drop_excluded(find_results(paths), exclude, require_match=require_match)
        runs = [cls.load(p, accept_edited=accept_edited) for p in found]
        return runs[0] if len(runs) == 1 else cls.concat(runs, sources=found)

    @classmethod
    def concat(cls: type[R], results: Sequence[R], *,
               sources: Sequence[str | os.PathLike] | None = None) -> R:
        """Several runs (models, languages, layer views, context groups) as one Results.

        Never two runs of one cell: two of ``results`` that hold rows of the same cell
        (:data:`CELL_KEYS`: model, lang, space, layer view, level, context, measure; in any
        table) would be pooled by every statistic drawn from the joined tables (each NC
        counted twice, or the two runs' values mixed), so they are refused, whether they are
        different runs (a rerun with other options, two models of one name) or the same run
        twice (a copy of a results directory).

        Args:
            results: the runs to join, in the order their models are shown.
            sources: what each of ``results`` is called in an error (e.g. its results
                directory); default ``input 1``, ``input 2`` ...

        Never runs of different data either: two of ``results`` that read one data file
        with different git blob ids (one computed with ``--accept-modified-data`` on an
        edited file, the other on the pinned one) are refused (:func:`check_same_data`).

        Raises:
            UsageError: nothing to join, ``sources`` of another length, two of ``results``
                hold the same cell (the message names both, the cell, and how their runs
                differ), or two were computed from different data.
        """
        results = list(results)
        if not results:
            raise UsageError("nothing to concatenate: give at least one Results")
        names = ([str(s) for s in sources] if sources is not None else
                 [f"input {i + 1}" for i in range(len(results))])
        if len(names) != len(results):
            raise UsageError(f"{len(names)} sources for {len(results)} results: give one per "
                             "Results")
        results = _own_view_once(results)
        _refuse_pooling(results, names)
        check_same_data(results, names)
        tables = {f.name: pd.concat([getattr(r, f.name) for r in results], ignore_index=True)
                  for f in fields(cls) if f.name != "meta"}
        tables["ncs"] = tables["ncs"].drop_duplicates(["lang", "nc"], ignore_index=True)
        return cls(**tables, meta=[m for r in results for m in r.meta])

    def check_one_run_per_cell(self, what: str = "these results") -> None:
        """Refuse results whose ``measures`` hold one NC of one cell more than once.

        :meth:`concat` never joins two runs of a cell; tables joined by other means (e.g.
        ``pandas.concat`` of two runs' tables) may, and every statistic drawn from them would
        count those NCs twice. :func:`~ncprobe.ncimp.report.write_report` and
        :func:`~ncprobe.ncimp.comparison.compare` check this first.

        Raises:
            UsageError: naming the first such NC and cell and how many rows repeat.
        """
        refuse_repeated_cells(self.measures, what, "Join runs with Results.concat (it "
                              "refuses two runs of one cell), or select one run first")

    def select(self, table: Table | None = None, *, model: Filter = None, lang: Filter = None,
               space: Space | Sequence[Space] | None = None, layers: Filter = None,
               level: Level | Sequence[Level] | None = None,
               context: Context | Sequence[Context] | None = None, measure: Filter = None,
               nc: Filter = None, cls: Cls | Sequence[Cls] | None = None,
               probe: Substitution | Sequence[Substitution] | None = None,
               analysis: Analysis | Sequence[Analysis] | None = None) -> pd.DataFrame:
        """The rows of one tidy table that match every filter given, as a new DataFrame.

        Each filter is one value or a list of values of the table's column of that name;
        ``None`` (the default) keeps every value. Values are matched exactly, as the table
        holds them (numbers given for ``layers`` are compared as text: ``12`` = ``"12"``).

        Args:
            table: the table (see :mod:`ncprobe.results`). Default: ``measures``, the per-NC
                measures (``value`` per model, lang, space, layers, level, context group,
                nc and measure) — or ``correlations`` when ``analysis`` is given, the only
                table with that column. ``analysis`` values, all rows of ``correlations``
                (Spearman with the gold score): ``nc`` (over the NCs, per-NC measures),
                ``overlap-filtered`` (the same without the NCs whose gold synonym shares a
                word with the NC) and ``sentence`` (over naturalistic sentences, against
                each sentence's own score; runs with ``per_sentence=True``).
            context: the per-NC tables (``measures``, ``correlations``, ``distributions``,
                ``rogue``, ``standardisation``) hold context groups ``nat`` (S1-S3),
                ``neut``, ``neut-pl``; ``cosines`` and ``sentences`` hold sentence
                contexts ``S1``, ``S2``, ``S3``, ``N``, ``Npl``.
            cls: ``I``, ``PC``, ``C`` (``distributions`` also ``all``).

        Raises:
            UsageError: (a ``ValueError``) an unknown table, a filter on a column the table
                does not have (naming the filters it takes), or a value that is not in the
                table (naming the values it holds): the messages of
                :mod:`ncprobe.query`, the engine of every selection of rows.

        Example:
            >>> res.select(level="nc", context="nat", measure=["syn", "comp"])  # doctest: +SKIP
            >>> res.select(analysis="nc", space="raw").query("significant")     # doctest: +SKIP
        """
        given: dict[str, object] = {
            "model": model, "lang": lang, "space": space, "layers": layers, "level": level,
            "context": context, "measure": measure, "nc": nc, "cls": cls, "probe": probe,
            "analysis": analysis}
        if table is None:
            table = "correlations" if analysis is not None else "measures"
        if table not in TABLES:
            raise UsageError(f"unknown table {table!r}; choose from {', '.join(TABLES)}")
        return filter_rows(getattr(self, table), given, where=f"the {table} table",
                           takes=SELECT_FILTERS)

    def wide(self, *, model: Filter = None, lang: Filter = None,
             space: Space | Sequence[Space] | None = None, layers: Filter = None,
             level: Level | Sequence[Level] | None = None,
             context: ContextGroup | Sequence[ContextGroup] | None = None,
             measure: Filter = None, nc: Filter = None,
             cls: Class | Sequence[Class] | None = None) -> pd.DataFrame:
        """The per-NC measures, one row per NC and condition, one column per measure.

        The rows of ``measures`` that :meth:`select` gives for the same filters, pivoted:
        columns ``model, lang, space, layers, level, context, nc`` (the keys of a row,
        :data:`WIDE_KEYS`), ``cls``, ``gold``, then one column per measure, in the order
        of :data:`ncprobe.MEASURES`. ``gold`` is the NC's gold score, the column
        :data:`~ncprobe.schema.GOLD` of ``measures``.
        Rows are sorted by the keys; a measure undefined for an NC is NaN.

        Raises:
            UsageError: (a ``ValueError``) as :meth:`select`; or the measures hold one NC of
                one cell twice (:func:`refuse_repeated_cells`: the same run concatenated
                twice).

        Example:
            >>> w = res.wide(level="nc", context="nat", space="raw")          # doctest: +SKIP
            >>> w[["gold", "syn", "A_Syn|Rand"]].corr("spearman")             # doctest: +SKIP
        """
        long = self.select("measures", model=model, lang=lang, space=space, layers=layers,
                           level=level, context=context, measure=measure, nc=nc, cls=cls)
        long = long.assign(measure=long["measure"].astype(str))
        refuse_repeated_cells(long, "the measures selected", "The same run concatenated "
                              "twice? Select one model/run first")
        names = list(dict.fromkeys(long["measure"]))
        names = [m for m in MEASURES if m in names] + [m for m in names if m not in MEASURES]
        info = long.drop_duplicates(WIDE_KEYS)[WIDE_KEYS + ["cls", GOLD]]
        if long.empty:
            return pd.DataFrame(columns=WIDE_KEYS + ["cls", GOLD] + names)
        values = long.pivot(index=WIDE_KEYS, columns="measure", values="value")[names]
        values.columns.name = None
        out = info.merge(values.reset_index(), on=WIDE_KEYS, how="left", validate="1:1")
        return out.sort_values(WIDE_KEYS, kind="stable").reset_index(drop=True)

def _own_rows(res: ResultsData) -> dict[str, pd.DataFrame]:
    """The rows of the :data:`~ncprobe.schema.OWN_VIEW` view in each table of ``res``."""
    out = {}
    for table in TABLES:
        df = getattr(res, table)
        if "layers" in df.columns and len(df):
            own = df["layers"].astype(str) == OWN_VIEW
            if own.any():
                out[table] = df[own].reset_index(drop=True)
    return out


def _own_view_once(results: list[R]) -> list[R]:
    """``results`` with a repeated model's own sentence embedding kept once.

    A sentence-transformers model's own sentence embedding (view ``own``) does not depend on
    the layer views a run asked for: a default run and a ``--layers all`` run of one model,
    on the same data and options, hold the same ``own`` rows. When a later run's ``own``
    rows equal an earlier run's in every table, they are one computation, not two, and are
    kept once (the earlier run's). ``own`` rows that differ in anything (another context,
    another ``--n-boot``, other weights) are left, so that :func:`_refuse_pooling` refuses
    them as it refuses any cell held twice.
    """
    kept: list[R] = []
    for res in results:
        mine = _own_rows(res)
        if mine and any(_same_tables(mine, _own_rows(earlier)) for earlier in kept):
            res = replace(res, **{t: getattr(res, t)[getattr(res, t)["layers"].astype(str)
                                                     != OWN_VIEW].reset_index(drop=True)
                                  for t in mine})
        kept.append(res)
    return kept


def _same_tables(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> bool:
    return a.keys() == b.keys() and all(a[t].equals(b[t]) for t in a)


def _refuse_pooling(results: Sequence[ResultsData], names: Sequence[str]) -> None:
    """Raise UsageError when two of ``results`` hold rows of one cell (:data:`CELL_KEYS`,
    those a table has, in any table): see :meth:`Results.concat`."""
    first: dict[tuple, int] = {}  # (table, key values...) -> the first input holding it
    clashes: dict[tuple[int, int], list[tuple[str, list[str], tuple]]] = {}
    for j, res in enumerate(results):
        for table in TABLES:
            df = getattr(res, table)
            keys = [k for k in CELL_KEYS if k in df.columns]
            if df.empty or "model" not in keys:
                continue
            cells = df[keys].drop_duplicates().astype(str)
            for values in cells.drop_duplicates().itertuples(index=False, name=None):
                i = first.setdefault((table, *values), j)
                if i != j:
                    clashes.setdefault((i, j), []).append((table, keys, values))
    if not clashes:
        return
    (i, j), cells = min(clashes.items())
    table, keys, values = next((c for c in cells if c[0] == "measures"), cells[0])
    cell = dict(zip(keys, values, strict=True))
    shown = ", ".join(f"{k} {v}" for k, v in cell.items())
    count = sum(1 for c in cells if c[0] == table)
    pairs = [f"{names[a]} and {names[b]}" for a, b in sorted(clashes)]
    others = ("" if len(pairs) == 1 else
              f". Also: {'; '.join(pairs[1:6])}" + (f" ... ({len(pairs)} pairs in all)"
                                                     if len(pairs) > 6 else ""))
    why = _how_runs_differ(results[i], results[j], cell.get("model", ""),
                           cell.get("lang", ""))
    raise UsageError(
        f"{names[i]} and {names[j]} hold results of the same cell ({shown}; {count} cell(s) "
        f"of the {table} table in all): {why}. ncprobe never pools two runs into one "
        "statistic (each NC of those cells would count twice, or two runs' values would be "
        "mixed). Give only one of them: ncprobe report / compare take --exclude DIR (Python: "
        f"ncprobe.Results.load_many(..., exclude=[DIR])) to leave one out{others}")


def _run_of(res: ResultsData, model: str, lang: str) -> dict | None:
    """The run of ``res.meta`` that made the rows of ``model`` (and ``lang``), if one did."""
    if len(res.meta) == 1:
        return res.meta[0]

    def name(m: dict) -> str:
        return str(m.get("model_name") or (m.get("config") or {}).get("model"))
    runs = [m for m in res.meta if name(m) == model]
    if len(runs) > 1:
        runs = [m for m in runs if str((m.get("config") or {}).get("lang")) == lang] or runs
    return runs[0] if len(runs) == 1 else None


def _how_runs_differ(a: ResultsData, b: ResultsData, model: str, lang: str) -> str:
    """How the runs of two Results that share a cell of ``model`` / ``lang`` differ, in words."""
    ra, rb = _run_of(a, model, lang), _run_of(b, model, lang)
    if ra is None or rb is None:
        return "two runs of it"
    ia, ib = run_identity([ra], NCIMP_LAYOUT)[0], run_identity([rb], NCIMP_LAYOUT)[0]
    if ia == ib:
        return ("the same run twice (the same options, model and data: a copy of one "
                "results directory?)")
    diffs = [f"{k} {ia['config'].get(k)!r} in the first, {ib['config'].get(k)!r} in the second"
             for k in sorted(set(ia["config"]) | set(ib["config"]))
             if ia["config"].get(k) != ib["config"].get(k)]
    for part, what in (("fingerprint", "the models differ (their fingerprints): two models "
                                       "of one name"),
                       ("data_sources", "the data files differ")):
        if ia[part] != ib[part]:
            diffs.append(what)
    return "two different runs of it (" + "; ".join(diffs or ["their metadata differ"]) + ")"
