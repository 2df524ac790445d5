"""Results: the tidy tables of one or more runs, with what made them; parquet round-trip.

Tables (pandas DataFrames, one row per observation):

* ``cosines`` — one row per probe stimulus, level and layer view: ``model, lang,
  space, layers, level, context, nc, cls, comp, probe, variant, target, length,
  cosine`` (``length``: words of the original sentence; ``comp``: the gold score).
* ``sentences`` — per sentence measures: ``... context (S1..Npl), nc, measure, value``.
* ``measures`` — per NC measures: ``... context (nat, neut, neut-pl), nc, cls,
  comp, measure, value``.
* ``correlations`` — Spearman with the gold score: ``... context, analysis
  (nc | overlap-filtered | sentence), measure, n, rho, p, significant, ci_low, ci_high``.
* ``distributions`` — mean, sd and bootstrap interval of every measure, for
  all NCs and per class I / PC / C.
* ``lexical_overlap`` — Spearman between naturalistic sentence length and the
  sentence-level Sim of each probe (the name is older than what it holds; it is kept
  so that results directories written before stay readable).
* ``rogue`` — top dimensions' contribution to the expected cosine.
* ``standardisation`` — Spearman between P_Syn cosines before and after z-scoring.
* ``ncs`` — the NCs: gold scores, class, head, modifier, and whether the gold
  synonym shares a word with the NC (``syn_overlap``).

The names of the tables, their columns and the values they hold are those of
:mod:`ncprobe.schema` (:data:`~ncprobe.schema.RESULT_TABLES`,
:data:`~ncprobe.schema.RESULT_COLUMNS`).

:meth:`Results.select` gives the rows of one table that match filters (``measures`` by
default, ``correlations`` with ``analysis=``); :meth:`Results.wide` the per-NC measures
with one column per measure.

``meta`` holds, per run, the RunConfig, the encoder fingerprint, package
versions, the git blob ids of the data files read, and notes (counts of
everything undefined or tolerated); right after ``compute`` also how that computation
went (:data:`RUN_LOG_KEYS`), which is not written.

A results directory is written as one unit (:meth:`Results.to_parquet`): into a
fresh temporary directory beside the target, which is then renamed into place.
Its ``run.json`` and every table (parquet schema metadata ``ncprobe.run_id``)
carry the same run id, a hash of the content: of each table's rows (its digest, kept in
``run.json``) and of the runs' metadata. It depends only on what determines the numbers
(data, config, model fingerprint, package versions, results format), never on how the
run went (:data:`RUN_LOG_KEYS`: how many items were encoded now, cache shards discarded),
so the same computation gives the same id and byte-identical files, with a cold cache or
a warm one. :meth:`Results.from_parquet` checks every table's columns and value types,
recomputes the run id and the SHA-256 of every file, and refuses a directory that was
edited since ncprobe wrote it, naming what differs (unless ``accept_edited=True``: then
every run's ``meta["edited"]`` names it and :meth:`Results.summary` says so first).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import DataError, UsageError
from .schema import (
    ALL_CLASSES,
    CONTEXT_GROUPS,
    LEVELS,
    MEASURES,
    NC_KEYS,
    RATIO,
    RESULT_COLUMNS,
    RESULT_NUMERIC_COLUMNS,
    RESULT_TABLES,
    SPACES,
    Analysis,
    Class,
    Cls,
    Context,
    ContextGroup,
    Level,
    Probe,
    Space,
)
from .schema import ResultTable as Table
from .stats import ALPHA, Correction
from .stats import correct as correct_p

log = logging.getLogger(__name__)

#: The tables of a Results (the module doc describes them), in the order they are written
#: (:data:`ncprobe.schema.RESULT_TABLES`, also ``ncprobe.TABLES``).
TABLES = RESULT_TABLES
#: 3: run id in run.json and in every table, and each table's digests in run.json: what was
#: written is checked when read. Still read, with a warning that they cannot be checked:
#: 2 (ncprobe 0.2: run id in run.json and in every table, no digests) and 1 (ncprobe <= 0.1:
#: no run id).
RESULTS_FORMAT = 3
_READABLE_FORMATS = (1, 2, 3)
RUN_ID_KEY = b"ncprobe.run_id"
#: Keys of a run's ``meta`` that say how this computation went, not what it computed: how
#: many items were encoded now (the others came from the embedding cache) and the cache
#: shards found unusable (:attr:`Results.notes` lists them). They are kept in memory only:
#: never written to ``run.json``, never part of the run id.
RUN_LOG_KEYS = ("encoded", "cache_problems")
#: RunConfig fields that say where and how fast a run ran, not what it computed: they do not
#: make a different run (nor a different default directory name).
NOT_IDENTITY = ("batch_size", "device")
# what a results directory holds: its tables, run.json, and temporary names of ncprobe <= 0.1
_RESULT_FILES = {f"{t}.parquet" for t in TABLES} | {"run.json"}
_OLD_TEMP_RE = re.compile(r"^\.(" + "|".join(TABLES) + r")\.parquet\.tmp$|^\.run\.json\.tmp$")

#: A filter of :meth:`Results.select`: one value, several, or ``None`` (every value).
Filter = str | Sequence[str] | None
#: The filters of :meth:`Results.select`, each a column of the tables that have it.
SELECT_FILTERS = ("model", "lang", "space", "layers", "level", "context", "measure", "nc",
                  "cls", "probe", "analysis")
#: What makes a row of :meth:`Results.wide`: one NC in one condition.
WIDE_KEYS = list(NC_KEYS)
#: A cell: the columns that say which statistic a row belongs to (besides the NC). Two runs
#: that hold rows of one cell are never joined (:meth:`Results.concat`).
CELL_KEYS: tuple[str, ...] = ("model", "lang", "space", "layers", "level", "context",
                              "measure")


@dataclass
class Results:
    """Everything one or more ``compute`` runs produced (see the module doc for the tables)."""

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
        found unusable (not written with the results: see :data:`RUN_LOG_KEYS`)."""
        return [f"{m['config']['model']}/{m['config']['lang']}: {n}" for m in self.meta
                for n in [*m.get("notes", []), *m.get("cache_problems", [])]]

    def run_id(self) -> str:
        """A hash of every table's rows and of ``meta`` (less :data:`RUN_LOG_KEYS`): equal
        results give equal ids, however they were computed."""
        return _run_id(self._table_entries(), _stored_meta(self.meta))

    def _table_entries(self) -> dict[str, dict]:
        """Per table, what the run id is made of: its rows and its content digest."""
        return {name: {"rows": len(getattr(self, name)),
                       "content": _table_digest(getattr(self, name))} for name in TABLES}

    def to_parquet(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write every table as ``<table>.parquet`` and the metadata as ``run.json`` into ``path``.

        The directory is written as one unit: into a fresh temporary directory beside
        ``path``, then swapped in under a lock on the parent directory (the previous
        directory is renamed aside and removed), so readers see the old results or the
        new, never a mixture, and two runs writing the same ``path`` never collide. What a
        killed write of ``path`` left beside it is tidied first (see :func:`_tidy_leftovers`).
        ``run.json`` holds the run id and each table's digests (:meth:`from_parquet` checks
        them); how this computation went (:data:`RUN_LOG_KEYS`) is not written. The
        directory and its files get the modes a plain ``mkdir``/``open`` would give under
        the umask (0755/0644 under umask 022).

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
        from ._io import UNWRITABLE_ERRNOS, output_error

        try:
            target = Path(path).expanduser().resolve()  # a link as --out: write where it points
        except RuntimeError as e:  # Python < 3.13: a symbolic-link loop
            raise output_error(OSError(errno.ELOOP, str(e)), path,
                               what="results directory") from None
        try:
            return self._write_dir(target, overwrite)
        except OSError as e:
            if e.errno not in UNWRITABLE_ERRNOS:
                raise
            raise output_error(e, target, what="results directory") from e

    def _write_dir(self, target: Path, overwrite: bool) -> Path:
        """:meth:`to_parquet` into the resolved ``target`` (OSErrors left to the caller)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from ._io import dir_lock, file_sha256

        parent = target.parent
        parent.mkdir(parents=True, exist_ok=True)
        with dir_lock(parent):  # no swap of another writer halfway through meanwhile
            _tidy_leftovers(parent, target.name)
        check_target(target, self.meta, overwrite=overwrite)  # early: before any writing
        runs = _stored_meta(self.meta)
        frames = {name: getattr(self, name) for name in TABLES}
        tables = self._table_entries()
        run_id = _run_id(tables, runs)
        tmp: Path | None = None
        aside = None
        writing = contextlib.ExitStack()
        try:
            # locked while written: another writer never takes it for a killed run's leftover
            tmp = _locked_temp_dir(parent, target.name, writing)
            for name in TABLES:
                table = pa.Table.from_pandas(frames[name], preserve_index=False)
                table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                                       RUN_ID_KEY: run_id.encode()})
                with open(tmp / f"{name}.parquet", "wb") as fh:
                    pq.write_table(table, fh)
                    fh.flush()
                    os.fsync(fh.fileno())
                tables[name]["sha256"] = file_sha256(tmp / f"{name}.parquet")
            with open(tmp / "run.json", "w", encoding="utf-8") as fh:
                fh.write(json.dumps({"format": RESULTS_FORMAT, "run_id": run_id,
                                     "tables": tables, "runs": runs}, indent=2,
                                    ensure_ascii=False) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            with dir_lock(parent):  # the check and the swap as one step among ncprobe writers
                check_target(target, self.meta, overwrite=overwrite)
                if os.path.lexists(target):
                    aside = parent / f".{target.name}.old-{uuid.uuid4().hex[:12]}"
                    os.rename(target, aside)
                os.rename(tmp, target)
        except BaseException:
            if aside is not None and not os.path.lexists(target):
                os.rename(aside, target)  # failed between the two renames: put it back
                aside = None
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)  # our own fresh directory, nothing else
            raise
        finally:
            writing.close()
        if aside is not None:
            _remove_results_dir(aside)
        return target

    @classmethod
    def from_parquet(cls, path: str | Path, *, accept_edited: bool = False) -> "Results":
        """Read what :meth:`to_parquet` wrote, and check that it is what ncprobe wrote.

        Every table must have the columns ncprobe writes (:data:`ncprobe.schema.RESULT_COLUMNS`),
        numbers where it writes numbers, and every run of ``run.json`` its ``config`` with
        ``model`` and ``lang``. The run id is recomputed from ``run.json`` and the SHA-256 of
        every table compared with the digest ``run.json`` holds for it, so a table or a
        ``run.json`` edited since ncprobe wrote it (values changed, rows dropped, a table
        rewritten by pandas, the config changed) is refused, naming what differs. Results
        directories of formats 1 and 2 (older ncprobe) hold no digests: they are read with
        a warning that their content cannot be checked.

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
        import pyarrow as pa
        import pyarrow.parquet as pq

        from ._io import file_sha256

        src = Path(path)
        meta_file = src / "run.json"
        if not meta_file.is_file():
            raise UsageError(f"{src}: not a results directory (no run.json); write one with "
                             "`ncprobe compute --out DIR` or Results.to_parquet(DIR)")
        meta = _read_run_json(meta_file)
        fmt = meta.get("format")
        if fmt not in _READABLE_FORMATS:
            raise DataError(f"results format {fmt!r}; this ncprobe reads formats "
                            f"{', '.join(map(str, _READABLE_FORMATS))}: recompute the results "
                            "with this version, or read them with the ncprobe that wrote them",
                            file=str(meta_file))
        _check_runs(meta["runs"], meta_file)
        run_id = meta.get("run_id")
        if fmt >= 2 and not isinstance(run_id, str):
            raise DataError("no run_id: the file was edited or damaged; recompute the results",
                            file=str(meta_file))
        stored = meta.get("tables") if fmt >= 3 else None
        if fmt >= 3 and not _digests_ok(stored):
            raise DataError("no digest for every table (key 'tables'): the file was edited or "
                            "damaged; recompute the results", file=str(meta_file))
        if fmt < 3:
            log.warning("%s was written by an older ncprobe (results format %s, %s): nothing "
                        "shows whether its content is what ncprobe wrote; recompute it to be "
                        "sure", src, fmt, "no run id" if fmt == 1 else "no digests")
        edited: dict[str, str] = {}  # file -> how it differs from what ncprobe wrote
        if stored is not None and _run_id({n: {"rows": stored[n]["rows"],
                                                "content": stored[n]["content"]}
                                            for n in TABLES}, meta["runs"], fmt) != run_id:
            edited["run.json"] = "its runs or digests no longer give its run id"
        tables, strays = {}, {}
        for name in TABLES:
            f = src / f"{name}.parquet"
            if not f.is_file():
                raise DataError(f"{f.name} is missing: the results directory is incomplete; "
                                "recompute it", file=str(f))
            try:
                owner = (pq.read_schema(f).metadata or {}).get(RUN_ID_KEY)
                tables[name] = pd.read_parquet(f)
                digest = file_sha256(f) if stored is not None else None
            except (OSError, ValueError, TypeError, pa.ArrowException) as e:
                raise DataError(f"cannot be read as parquet ({e}); recompute the results",
                                file=str(f)) from None
            _check_table(name, tables[name], f)
            if fmt < 2:
                continue
            if owner is None:  # e.g. df.to_parquet: pandas keeps no metadata of ncprobe's
                edited[f.name] = ("rewritten by another program: ncprobe's run id is gone "
                                  "from its parquet metadata")
            elif owner.decode(errors="replace") != run_id:
                strays[f.name] = owner.decode(errors="replace")
            elif stored is not None and digest != stored[name]["sha256"]:
                rows, now = stored[name]["rows"], len(tables[name])
                edited[f.name] = ("its content differs from the digest in run.json: "
                                  + (f"ncprobe wrote {rows} rows, it holds {now}" if rows != now
                                     else f"the same {rows} rows, other values"))
        problems = []
        if strays:
            listed = "; ".join(f"{n}: {o}" for n, o in strays.items())
            problems.append(f"tables of different runs in one directory: run.json belongs to "
                            f"run {run_id}, but {listed} (copied from another results "
                            "directory, or written by two runs at once or by an interrupted "
                            "write of an older ncprobe)")
        if edited:
            problems.append("edited since ncprobe wrote it: "
                            + "; ".join(f"{n} ({why})" for n, why in edited.items()))
        runs = meta["runs"]
        if problems and not accept_edited:
            raise DataError(". ".join(problems) + ". Recompute the results, or read them as "
                            "edited with --accept-edited-results (Python: "
                            "Results.from_parquet(path, accept_edited=True))", file=str(src))
        if problems:
            log.warning("%s: %s; read as edited (accept_edited)", src, ". ".join(problems))
            what = sorted({*strays, *edited})
            runs = [{**m, "edited": list(dict.fromkeys([*m.get("edited", []), *what]))}
                    for m in runs]
        return cls(**tables, meta=runs)

    @classmethod
    def concat(cls, results: Sequence["Results"], *,
               sources: Sequence[str | os.PathLike] | None = None) -> "Results":
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

        Raises:
            UsageError: nothing to join, ``sources`` of another length, or two of
                ``results`` hold the same cell (the message names both, the cell, and how
                their runs differ).
        """
        results = list(results)
        if not results:
            raise UsageError("nothing to concatenate: give at least one Results")
        names = ([str(s) for s in sources] if sources is not None else
                 [f"input {i + 1}" for i in range(len(results))])
        if len(names) != len(results):
            raise UsageError(f"{len(names)} sources for {len(results)} results: give one per "
                             "Results")
        _refuse_pooling(results, names)
        tables = {f.name: pd.concat([getattr(r, f.name) for r in results], ignore_index=True)
                  for f in fields(cls) if f.name != "meta"}
        tables["ncs"] = tables["ncs"].drop_duplicates(["lang", "nc"], ignore_index=True)
        return cls(**tables, meta=[m for r in results for m in r.meta])

    def check_one_run_per_cell(self, what: str = "these results") -> None:
        """Refuse results whose ``measures`` hold one NC of one cell more than once.

        :meth:`concat` never joins two runs of a cell; tables joined by other means (e.g.
        ``pandas.concat`` of two runs' tables) may, and every statistic drawn from them would
        count those NCs twice. :func:`~ncprobe.report.write_report` and
        :func:`~ncprobe.comparison.compare` check this first.

        Raises:
            UsageError: naming the first such NC and cell and how many rows repeat.
        """
        m = self.measures
        keys = [k for k in (*CELL_KEYS, "nc") if k in m.columns]
        if m.empty or "nc" not in keys:
            return
        twice = m.duplicated(keys, keep=False)
        if not twice.any():
            return
        r = m[twice].iloc[0]
        cell = ", ".join(f"{k} {r[k]}" for k in keys)
        raise UsageError(
            f"{what} hold the per-NC measures of one cell more than once ({cell}; "
            f"{int(twice.sum())} rows in all): two runs pooled as one, which would count "
            "these NCs twice. Join runs with Results.concat (it refuses two runs of one "
            "cell), or select one run first")

    def select(self, table: Table | None = None, *, model: Filter = None, lang: Filter = None,
               space: Space | Sequence[Space] | None = None, layers: Filter = None,
               level: Level | Sequence[Level] | None = None,
               context: Context | Sequence[Context] | None = None, measure: Filter = None,
               nc: Filter = None, cls: Cls | Sequence[Cls] | None = None,
               probe: Probe | Sequence[Probe] | None = None,
               analysis: Analysis | Sequence[Analysis] | None = None) -> pd.DataFrame:
        """The rows of one tidy table that match every filter given, as a new DataFrame.

        Each filter is one value or a list of values of the table's column of that name;
        ``None`` (the default) keeps every value. Values are matched exactly, as the table
        holds them (numbers given for ``layers`` are compared as text: ``12`` = ``"12"``).

        Args:
            table: the table (see the module doc). Default: ``measures``, the per-NC
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
            ValueError: a filter on a column the table does not have (naming the filters it
                takes), or a value that is not in the table (naming the values it holds).

        Example:
            >>> res.select(level="nc", context="nat", measure=["syn", "comp"])  # doctest: +SKIP
            >>> res.select(analysis="nc", space="raw").query("significant")     # doctest: +SKIP
        """
        given: dict[str, object] = {
            "model": model, "lang": lang, "space": space, "layers": layers, "level": level,
            "context": context, "measure": measure, "nc": nc, "cls": cls, "probe": probe,
            "analysis": analysis}
        filters = {k: v for k, v in given.items() if v is not None}
        if table is None:
            table = "correlations" if "analysis" in filters else "measures"
        if table not in TABLES:
            raise ValueError(f"unknown table {table!r}; choose from {', '.join(TABLES)}")
        df = getattr(self, table)
        keep = pd.Series(True, index=df.index)
        for col, wanted in filters.items():
            if col not in df.columns:
                takes = [c for c in SELECT_FILTERS if c in df.columns]
                raise ValueError(f"the {table} table has no column {col!r} to filter on; its "
                                 f"filters: {', '.join(takes)}")
            if isinstance(wanted, Iterable) and not isinstance(wanted, (str, bytes)):
                values = [str(v) for v in wanted]
            else:
                values = [str(wanted)]
            present = list(dict.fromkeys(str(v) for v in df[col].dropna().unique()))
            _check_present(table, col, values, present)
            keep &= df[col].isin(values)
        return df[keep].reset_index(drop=True)

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
        ``comp`` of ``measures``: renamed here, as ``comp`` is also a measure (P_Comp).
        Rows are sorted by the keys; a measure undefined for an NC is NaN.

        Raises:
            ValueError: as :meth:`select`; or the measures hold one (NC, condition, measure)
                twice (the same run concatenated twice).

        Example:
            >>> w = res.wide(level="nc", context="nat", space="raw")          # doctest: +SKIP
            >>> w[["gold", "syn", "A_Syn|Rand"]].corr("spearman")             # doctest: +SKIP
        """
        long = self.select("measures", model=model, lang=lang, space=space, layers=layers,
                           level=level, context=context, measure=measure, nc=nc, cls=cls)
        long = long.assign(measure=long["measure"].astype(str))
        twice = long.duplicated(WIDE_KEYS + ["measure"])
        if twice.any():
            r = long[twice].iloc[0]
            raise ValueError("the measures hold " + ", ".join(f"{k}={r[k]}" for k in WIDE_KEYS)
                             + f", measure {r['measure']} more than once: the same run "
                             "concatenated twice? Select one model/run first")
        names = list(dict.fromkeys(long["measure"]))
        names = [m for m in MEASURES if m in names] + [m for m in names if m not in MEASURES]
        info = long.drop_duplicates(WIDE_KEYS)[WIDE_KEYS + ["cls", "comp"]].rename(
            columns={"comp": "gold"})
        if long.empty:
            return pd.DataFrame(columns=WIDE_KEYS + ["cls", "gold"] + names)
        values = long.pivot(index=WIDE_KEYS, columns="measure", values="value")[names]
        values.columns.name = None
        out = info.merge(values.reset_index(), on=WIDE_KEYS, how="left", validate="1:1")
        return out.sort_values(WIDE_KEYS, kind="stable").reset_index(drop=True)

    def summary(self, space: str | None = None, analysis: str | None = None,
                correct: Correction = "holm") -> str:
        """A compact text summary: per space, level and context, mean ± sd of every measure
        and its Spearman rho with the run's gold score, with the rho's 95% bootstrap interval.

        Args:
            space: ``raw`` or ``standardised``; ``None``: every space the run has (the
                standardised one with ``--standardise``).
            analysis: ``nc`` (rho over the NCs), ``overlap-filtered`` or ``sentence``;
                ``None``: ``nc``, plus the per-sentence correlations when the run has them
                (``--per-sentence``).
            correct: the multiple-comparison correction (``holm``, ``fdr_bh``, ``none``)
                applied to the family of every correlation printed; ``*`` marks a corrected
                p <= 0.05, and the footer says which correction and how many tests.

        The ratio ``Sim_R|Syn/Sim_R|WordsSyn`` (heavy-tailed) also gets its median and
        inter-quartile range over the NCs, from the ``measures`` table. A run computed on
        data files that differ from their pin (``--accept-modified-data``) is announced on
        the first lines, one per file, after results read although edited since ncprobe
        wrote them (``from_parquet(accept_edited=True)``: ``meta["edited"]``), one per run.
        """
        from .tables import CORRECTION_NAMES, correction_note

        correction_note(correct, 0)  # an unknown correction: refused before any work
        lines = []
        for m in self.meta:  # first, where it cannot be missed
            if m.get("edited"):
                lines.append(f"EDITED RESULTS ({m['config']['model']}/{m['config']['lang']}): "
                             f"{', '.join(m['edited'])} edited since ncprobe wrote it (read "
                             "with accept_edited): these numbers are not what ncprobe computed")
            for rel, blob in (m.get("modified_data") or {}).items():
                lines.append(f"MODIFIED DATA ({m['config']['model']}/{m['config']['lang']}): "
                             f"{rel} (git blob {blob['blob']}, pinned {blob['pinned']})")
        if lines:
            lines.append("")
        spaces = ([space] if space is not None else
                  [s for s in SPACES if s in set(self.distributions["space"].astype(str))])
        analyses = ([analysis] if analysis is not None else
                    ["nc"] + (["sentence"] if (self.correlations["analysis"] == "sentence").any()
                              else []))
        keys = ["model", "lang", "layers", "level", "context"]
        cor = self.correlations[self.correlations["analysis"].isin(analyses)
                                & self.correlations["space"].isin(spaces)]
        # the family: every correlation printed below
        cor = cor.assign(p_corrected=correct_p(cor["p"].to_numpy(dtype=float), correct))
        family = int(cor["p"].notna().sum())
        order = {**{lv: i for i, lv in enumerate(LEVELS)},
                 **{g: i for i, g in enumerate(CONTEXT_GROUPS)},
                 **{s: i for i, s in enumerate(SPACES)}}

        def ordered(df: pd.DataFrame) -> pd.DataFrame:
            return df.sort_values(["space", "model", "lang", "layers", "level", "context"],
                                  key=lambda c: c.map(order).fillna(-1) if c.name in (
                                      "level", "context", "space") else c, kind="stable")

        ratios = self.measures[self.measures["measure"].astype(str) == RATIO]
        ratio_values = {k: g["value"].dropna().to_numpy(dtype=float) for k, g in
                        ratios.groupby(["space", *keys], observed=True, sort=False)}
        label = CORRECTION_NAMES[correct]
        pcol = {"holm": "p Holm", "fdr_bh": "p BH"}.get(correct, "")
        for an in analyses:
            if an == "sentence":
                block_rows = ordered(cor[cor["analysis"] == "sentence"])
                for key, block in block_rows.groupby(["space", *keys], sort=False,
                                                     observed=True):
                    sp, model, lang, layers, level, context = key
                    shown = "" if layers == "-" else f" · layers {layers}"
                    lines.append(f"{model} · {lang}{shown} · {level} level · per sentence "
                                 f"({sp} space): each naturalistic sentence's value with its "
                                 "token-level score")
                    lines.append(f"  {'measure':<26}{'rho [95% CI]':>27}  {'p':>8}  "
                                 f"{pcol:>8}  {'sentences':>9}")
                    for _, r in block.iterrows():
                        lines.append(f"  {str(r['measure']):<26}{_rho_text(r):>27}  "
                                     f"{_p_text(r['p']):>8}  "
                                     f"{_p_text(r['p_corrected']) if pcol else '':>8}  "
                                     f"{_n_text(r['n']):>9}")
                    lines.append("")
                continue
            dist = self.distributions[(self.distributions["cls"] == ALL_CLASSES)
                                      & self.distributions["space"].isin(spaces)]
            c = cor[cor["analysis"] == an]
            c = c.rename(columns={"n": "n_rho", "ci_low": "rho_low", "ci_high": "rho_high"})
            merged = dist.merge(c[["space", *keys, "measure", "rho", "p", "p_corrected",
                                   "n_rho", "rho_low", "rho_high"]],
                                on=["space", *keys, "measure"], how="left")
            for key, block in ordered(merged).groupby(["space", *keys], sort=False,
                                                      observed=True):
                sp, model, lang, layers, level, context = key
                shown = "" if layers == "-" else f" · layers {layers}"
                what = "" if an == "nc" else f" · {an}"
                lines.append(f"{model} · {lang}{shown} · {level} level · {context}{what} "
                             f"({sp} space)")
                lines.append(f"  {'measure':<26}{'mean ± sd':>17}  {'rho [95% CI]':>27}  "
                             f"{'p':>8}  {pcol:>8}  {'NCs':>4}")
                for _, r in block.iterrows():
                    lines.append(f"  {str(r['measure']):<26}{r['mean']:>8.3f} ± {r['sd']:<6.3f}  "
                                 f"{_rho_text(r, 'rho_low', 'rho_high'):>27}  "
                                 f"{_p_text(r['p']):>8}  "
                                 f"{_p_text(r['p_corrected']) if pcol else '':>8}  "
                                 f"{_n_text(r['n_rho']):>4}")
                    v = ratio_values.get(key) if str(r["measure"]) == RATIO else None
                    if v is not None and len(v):
                        q1, med, q3 = np.percentile(v, [25, 50, 75])
                        lines.append(f"  {'':<26}median {med:.3f}, IQR [{q1:.3f}, {q3:.3f}] "
                                     "(25th-75th percentile over the NCs)")
                lines.append("")
        mark = (f"{label} p <= {ALPHA} across all {family} correlations printed above"
                if correct != "none" else
                f"p <= {ALPHA}, not corrected for the {family} correlations printed above")
        lines.append(f"* {mark} (Spearman, two-sided; p: uncorrected"
                     + (f", {pcol}: {label})" if pcol else ")"))
        lines.append(f"rho: with the {self._gold_name()} per NC; [95% CI]: "
                     f"{self._interval_name()}")
        if "sentence" in analyses:
            lines.append("per sentence: rho of each naturalistic sentence's value with that "
                         "sentence's token-level score (whatever the gold)")
        lines.append("comp: P_Comp, the NC replaced by one of its own words; per sentence the "
                     "better of comp-head (the head alone) and comp-mod (the modifier alone)")
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)

    def _gold_name(self) -> str:
        """The gold score the runs correlated with, from their configs (``--gold``)."""
        names = {"comp": "gold compositionality score (Eq. 1: token-level scores averaged "
                         "over the 3 sentences)",
                 "type": "type-level compositionality score (--gold type)"}
        # a run on a user's own stimuli (load_pairs) read no NCIMP file: its gold is theirs
        golds = {(m["config"].get("model"), m["config"].get("lang")):
                 m["config"].get("gold", "comp") if m.get("data_sources", True) else "given"
                 for m in self.meta if m.get("config")}
        names["given"] = "gold score given with the stimuli (the comp column of your pairs)"
        kinds = list(dict.fromkeys(golds.values()))
        if len(kinds) == 1:
            return names.get(kinds[0], f"gold {kinds[0]!r}")
        if not kinds:
            return "gold score (the runs' configs do not name it)"
        return "gold score of each run (" + ", ".join(
            f"{model}/{lang}: {g}" for (model, lang), g in golds.items()) + ")"

    def _interval_name(self) -> str:
        boots = list(dict.fromkeys(m["config"].get("n_boot") for m in self.meta
                                   if m.get("config")))
        if boots == [0]:
            return "none (--n-boot 0)"
        shown = ", ".join(str(b) for b in boots if b is not None)
        return ("percentile bootstrap over the NCs"
                + (f" ({shown} resamples)" if shown else ""))


def _rho_text(r, low: str = "ci_low", high: str = "ci_high") -> str:
    """``+0.593 [+0.501, +0.662]*``: rho, its interval where the run has one, ``*`` where the
    corrected p <= ALPHA."""
    if pd.isna(r["rho"]):
        return ""
    star = "*" if r["p_corrected"] <= ALPHA else " "
    if pd.isna(r[low]) or pd.isna(r[high]):
        return f"{r['rho']:+.3f}{star}"
    return f"{r['rho']:+.3f} [{r[low]:+.3f}, {r[high]:+.3f}]{star}"


def _p_text(p) -> str:
    return "" if pd.isna(p) else f"{p:.2g}"


def _n_text(n) -> str:
    return "" if pd.isna(n) else f"{int(n)}"


def _read_run_json(meta_file: Path) -> dict:
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DataError(f"cannot be read ({e}); recompute the results",
                        file=str(meta_file)) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("runs"), list):
        raise DataError("not an ncprobe run.json (no list of runs)", file=str(meta_file))
    return meta


def _table_digest(df: pd.DataFrame) -> str:
    """SHA-256 of a table's content: its columns, their types and every row, in order."""
    h = hashlib.sha256()
    h.update(f"{list(df.columns)}\0{[str(t) for t in df.dtypes]}\0".encode())
    try:
        h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    except TypeError:  # unhashable cells (lists...): hash their text instead
        h.update(df.to_csv(index=False).encode())
    return h.hexdigest()


def _stored_meta(meta: list[dict]) -> list[dict]:
    """The runs' metadata as ``run.json`` holds it: less :data:`RUN_LOG_KEYS`, in JSON's
    types (tuples as lists, paths as text), so that what is hashed is what is read back."""
    kept = [{k: v for k, v in m.items() if k not in RUN_LOG_KEYS} for m in meta]
    return json.loads(json.dumps(kept, ensure_ascii=False, default=str))


def _run_id(tables: dict[str, dict], runs: list[dict], fmt: int = RESULTS_FORMAT) -> str:
    """The run id: a hash of the results format, each table's rows and content digest, and
    the runs' metadata (as :func:`_stored_meta` gives it)."""
    text = json.dumps({"format": fmt, "tables": tables, "runs": runs},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _digests_ok(stored) -> bool:
    """``run.json``'s ``tables``: for every table its rows, content digest and file SHA-256."""
    return isinstance(stored, dict) and all(
        isinstance(stored.get(n), dict) and isinstance(stored[n].get("rows"), int)
        and all(isinstance(stored[n].get(k), str) for k in ("content", "sha256"))
        for n in TABLES)


def _check_runs(runs: list, meta_file: Path) -> None:
    """Refuse a ``run.json`` whose runs lack what every reader of them needs."""
    for i, m in enumerate(runs, start=1):
        where = f"run {i} of {len(runs)}"
        if not isinstance(m, dict):
            raise DataError(f"{where} is not an object of run metadata; the file is damaged "
                            "or was edited: recompute the results", file=str(meta_file))
        cfg = m.get("config")
        if not isinstance(cfg, dict):
            raise DataError(f"{where} has no 'config' (the options it was computed with); the "
                            "file is damaged or was edited: recompute the results",
                            file=str(meta_file))
        for key in ("model", "lang"):
            if not isinstance(cfg.get(key), str):
                raise DataError(f"{where}: 'config' has no {key!r}; the file is damaged or "
                                "was edited: recompute the results", file=str(meta_file))
        if not isinstance(m.get("notes", []), list):
            raise DataError(f"{where}: 'notes' is not a list; the file is damaged or was "
                            "edited: recompute the results", file=str(meta_file))


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.number, np.bool_)) and not isinstance(v, str)


def _check_table(name: str, df: pd.DataFrame, file: Path) -> None:
    """Refuse a table without the columns ncprobe writes, or with text where it writes numbers
    (:data:`ncprobe.schema.RESULT_NUMERIC_COLUMNS`): every statistic drawn from it would fail
    or be wrong."""
    missing = [c for c in RESULT_COLUMNS[name] if c not in df.columns]
    if missing:
        raise DataError(f"no column {', '.join(map(repr, missing))} (the {name} table has "
                        f"{', '.join(RESULT_COLUMNS[name])}); the table is damaged or was "
                        "edited: recompute the results", file=str(file))
    for col in RESULT_COLUMNS[name]:
        if col not in RESULT_NUMERIC_COLUMNS:
            continue
        values = df[col]
        if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            continue
        bad = values[values.notna() & ~values.map(_is_number).astype(bool)]
        if len(bad):  # e.g. text: an empty table's columns of no type are fine
            at = int(np.flatnonzero(values.index == bad.index[0])[0]) + 1
            kind = "text" if isinstance(bad.iloc[0], str) else type(bad.iloc[0]).__name__
            raise DataError(f"holds {kind} where ncprobe writes numbers ({bad.iloc[0]!r} in "
                            f"row {at}; {len(bad)} such rows); "
                            "the table is damaged or was edited: recompute the results",
                            file=str(file), column=col)


def _check_present(table: str, col: str, values: list[str], present: list[str]) -> None:
    """Raise ValueError for the values of a :meth:`Results.select` filter not in the table."""
    bad = [v for v in values if v not in present]
    if not bad:
        return
    hint = ""
    if col == "context":
        groups = [v for v in bad if v in CONTEXT_GROUPS]
        ids = {v: g for v in bad for g, cs in CONTEXT_GROUPS.items() if v in cs}
        if groups and any(c in present for g in groups for c in CONTEXT_GROUPS[g]):
            hint = (f"; the {table} table holds sentence contexts: "
                    + ", ".join(f"{g} is {', '.join(CONTEXT_GROUPS[g])}" for g in groups))
        elif ids and any(g in present for g in ids.values()):
            hint = (f"; the {table} table holds context groups (sentence contexts are in "
                    "cosines and sentences): " + ", ".join(f"{v} is in {g}"
                                                            for v, g in ids.items()))
    shown = ", ".join(present[:30]) + (f" ... ({len(present)} in all)"
                                       if len(present) > 30 else "")
    raise ValueError(f"{col} {', '.join(map(repr, bad))} is not in the {table} table; it holds "
                     f"{col} {shown or '(none: the table is empty)'}{hint}")


def run_identity(meta: list[dict] | dict) -> list[dict]:
    """What makes runs the same: config (less :data:`NOT_IDENTITY`), model fingerprint, data.

    Accepts a list of run metadata or one RunConfig dict (then only the config is compared).
    """
    from dataclasses import MISSING

    from .config import RunConfig

    # a field that a run.json of an older ncprobe lacks had its default value then
    defaults = {f.name: f.default for f in fields(RunConfig) if f.default is not MISSING}
    runs = [{"config": meta}] if isinstance(meta, dict) else meta
    out = []
    for m in runs:
        cfg = {**defaults, **(m.get("config") or {})}
        ident = {"config": {k: v for k, v in cfg.items() if k not in NOT_IDENTITY},
                 "fingerprint": m.get("fingerprint"), "data_sources": m.get("data_sources")}
        # as written to run.json (tuples become lists), so that read and new compare equal
        out.append(json.loads(json.dumps(ident, sort_keys=True, default=str)))
    return out


def _differences(old: list[dict], new: list[dict]) -> str:
    if len(old) != len(new):
        return f"{len(old)} run(s) there, {len(new)} now"
    diffs = []
    for a, b in zip(old, new, strict=True):
        keys = sorted(set(a["config"]) | set(b["config"]))
        diffs += [f"{k} {a['config'].get(k)!r} there, {b['config'].get(k)!r} now" for k in keys
                  if a["config"].get(k) != b["config"].get(k)]
        for part, what in (("fingerprint", "the model (its fingerprint)"),
                           ("data_sources", "the data files")):
            if a[part] is not None and b[part] is not None and a[part] != b[part]:
                diffs.append(f"{what} differ")
    return "; ".join(dict.fromkeys(diffs))


def inspect_dir(path: str | Path) -> tuple[str, str, list[dict]]:
    """What is at ``path``, without following a link or changing anything.

    Returns:
        ``(kind, why, runs)``: kind ``missing``, ``empty``, ``results`` (an ncprobe
        results directory and nothing else; ``runs`` is its metadata) or ``foreign``
        (``why`` says what makes it so).
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "missing", "", []
    if stat.S_ISLNK(st.st_mode):
        return "foreign", "it is a symbolic link", []
    if not stat.S_ISDIR(st.st_mode):
        return "foreign", "it is a file, not a directory", []
    children = sorted(os.scandir(path), key=lambda c: c.name)
    if not children:
        return "empty", "", []
    others = [c.name for c in children if not c.is_file(follow_symlinks=False)
              or not (c.name in _RESULT_FILES or _OLD_TEMP_RE.match(c.name))]
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        return "foreign", f"it holds {shown}, which ncprobe does not write there", []
    if not (path / "run.json").is_file():
        return "foreign", "it has no run.json", []
    try:
        meta = _read_run_json(path / "run.json")
    except DataError as e:
        return "foreign", str(e), []
    if not isinstance(meta.get("format"), int):
        return "foreign", "its run.json has no results format", []
    return "results", "", meta["runs"]


def check_writable(path: str | Path) -> None:
    """Refuse, before any work, a results directory that :meth:`Results.to_parquet` could not
    write: a directory is created and removed where it would write (beside ``path``; in the
    nearest existing directory above it when its parent does not exist yet).

    Raises:
        OutputError: naming ``path`` and the cause (a read-only file system, no permission,
            a file where a directory is needed, a link loop).
    """
    from ._io import output_error

    try:
        target = Path(path).expanduser().resolve()
    except RuntimeError as e:  # Python < 3.13: a symbolic-link loop
        raise output_error(OSError(errno.ELOOP, str(e)), path,
                           what="results directory") from None
    where = target.parent
    while not os.path.lexists(where) and where != where.parent:
        where = where.parent
    try:
        os.rmdir(tempfile.mkdtemp(dir=where, prefix=f".{target.name}.", suffix=".probe"))
    except OSError as e:  # whatever the cause, nothing can be written there
        raise output_error(e, path, what="results directory") from e


def check_target(path: str | Path, meta: list[dict] | dict, *, overwrite: bool = False) -> None:
    """Refuse to write a run into ``path`` when that would replace something it must not.

    Args:
        path: the results directory about to be written.
        meta: the new results' ``meta`` (a list of runs), or a RunConfig dict (a check
            before computing, on the config alone).
        overwrite: allow replacing a results directory of a different run.

    Raises:
        UsageError: ``path`` is not an ncprobe results directory (never replaced), or holds
            a different run and ``overwrite`` is false.
    """
    kind, why, runs = inspect_dir(path)
    if kind in ("missing", "empty"):
        return
    if kind == "foreign":
        raise UsageError(f"{path} is not an ncprobe results directory ({why}); ncprobe never "
                         "replaces it, even with --overwrite: choose another --out")
    new = run_identity(meta)
    old = run_identity(runs)
    if isinstance(meta, dict):  # config only: compare configs
        old = [{**o, "fingerprint": None, "data_sources": None} for o in old]
        new = [{**n, "fingerprint": None, "data_sources": None} for n in new]
    if old == new or overwrite:
        return
    described = ", ".join(f"{r['config'].get('model')}/{r['config'].get('lang')}" for r in runs)
    raise UsageError(f"{path} holds another run ({described}; {_differences(old, new)}); "
                     "pass --overwrite (Python: overwrite=True) to replace it, or choose another "
                     "--out")


def _only_results_files(path: str) -> bool:
    """Whether a directory holds nothing but files a results directory holds (or nothing)."""
    return all(c.is_file(follow_symlinks=False)
               and (c.name in _RESULT_FILES or _OLD_TEMP_RE.match(c.name))
               for c in os.scandir(path))


def _remove_files_and_dir(path: str) -> None:
    for c in os.scandir(path):
        with contextlib.suppress(FileNotFoundError):  # another writer tidying it too
            os.unlink(c.path)
    os.rmdir(path)


def _tidy_leftovers(parent: Path, name: str) -> None:
    """Tidy what killed :meth:`Results.to_parquet` writes of ``parent/name`` left beside it.

    Called with ``parent`` locked (:func:`~ncprobe._io.dir_lock`), so that no other writer is
    between the two renames of its swap. Only directories named as ``to_parquet`` names them
    and holding nothing but results files (or nothing) are touched; anything else is left
    and named in a warning.

    * ``.<name>.<8 chars>.tmp``: a temporary directory. A writer holds its lock from right
      after creating it until it is renamed into place, so an unlocked one is a killed write's,
      and is removed, empty or partly written. (A writer whose fresh directory is removed in
      the instant before it locks it makes another: :func:`_locked_temp_dir`.)
    * ``.<name>.old-<12 hex>``: a previous run moved aside. Beside an existing ``name`` the
      swap happened and the removal was cut short: removed, whole or partly removed. With no
      ``name``, the write was killed between its two renames and this is the previous run:
      put back as ``name`` (when it is whole and alone), so that it is replaced only as any
      results directory is (the same run, or ``overwrite``).
    """
    from ._io import LockBusy, dir_lock

    if os.name == "nt":  # no directory locks there (see dir_lock): never guess
        return
    tmp_re = re.compile(rf"^\.{re.escape(name)}\.[a-z0-9_]{{8}}\.tmp$")
    old_re = re.compile(rf"^\.{re.escape(name)}\.old-[0-9a-f]{{12}}$")
    entries = sorted((e for e in os.scandir(parent) if e.is_dir(follow_symlinks=False)),
                     key=lambda e: e.name)
    for entry in entries:
        if not tmp_re.match(entry.name):
            continue
        try:
            with dir_lock(entry.path, blocking=False):
                if _only_results_files(entry.path):
                    _remove_files_and_dir(entry.path)
                    log.info("removed %s, left by an interrupted write", entry.path)
                else:
                    log.warning("left %s in place: it holds files ncprobe does not write "
                                "there", entry.path)
        except (LockBusy, FileNotFoundError):
            continue  # being written now, or removed by another writer meanwhile
    olds = [Path(e.path) for e in entries if old_re.match(e.name)]
    target = parent / name
    if olds and not os.path.lexists(target):
        whole = [p for p in olds if inspect_dir(p)[0] == "results"]
        if len(whole) == 1:
            os.rename(whole[0], target)
            olds.remove(whole[0])
            log.warning("%s: put back the previous run from %s, left by a write killed "
                        "between its two renames", target, whole[0].name)
        else:
            log.warning("%s is missing and %s hold(s) earlier runs moved aside by killed "
                        "writes; left in place: rename the one to keep to %s", target,
                        ", ".join(p.name for p in olds), name)
            return
    for old in olds:
        try:
            if _only_results_files(str(old)):
                _remove_files_and_dir(str(old))
                log.info("removed %s, left by an interrupted write", old)
            else:
                log.warning("left %s in place: it holds files ncprobe does not write there",
                            old)
        except FileNotFoundError:
            continue  # removed by the writer that moved it aside, meanwhile


def _locked_temp_dir(parent: Path, name: str, stack: contextlib.ExitStack) -> Path:
    """A fresh temporary directory for a write of ``parent/name``, locked (the lock is held
    until ``stack`` closes) and given the mode ``mkdir`` would give under the umask."""
    from ._io import chmod_like_open, dir_lock

    for _ in range(10):
        tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{name}.", suffix=".tmp"))
        try:
            stack.enter_context(dir_lock(tmp))
        except FileNotFoundError:
            # another writer took it for a killed write's leftover in the instant before it
            # was locked (it was empty and unlocked) and removed it: make another
            continue
        chmod_like_open(tmp, directory=True)
        return tmp
    raise OSError(errno.EAGAIN, f"{parent}: a temporary directory for {name} was removed "
                  "each time before it could be locked")


def _remove_results_dir(path: Path) -> None:
    """Delete a results directory moved aside, file by file, if it is nothing but that."""
    kind, why, _ = inspect_dir(path)
    if kind not in ("results", "empty"):
        log.warning("left %s in place: %s", path, why)
        return
    for child in os.scandir(path):
        os.unlink(child.path)
    os.rmdir(path)


def find_results(paths) -> list[Path]:
    """Results directories named by ``paths``: each one itself, or every one found below it.

    A path holding ``run.json`` is taken as it is; any other directory is searched
    (recursively, without following links or entering hidden directories such as
    ncprobe's temporary ones) for directories holding ``run.json``, in sorted order.

    Raises:
        UsageError: a path does not exist, or is a directory with no results in or below it.
    """
    out: list[Path] = []
    for p in map(Path, paths):
        if (p / "run.json").is_file():
            out.append(p)
            continue
        if not p.is_dir():
            raise UsageError(f"{p}: no such directory; give results directories written by "
                             "`ncprobe compute` or `ncprobe reproduce`, or a directory above them")
        found = []
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            if "run.json" in filenames:
                found.append(Path(dirpath))
        if not found:
            raise UsageError(f"{p} holds no results directory (no run.json in it or below it); "
                             "give directories written by `ncprobe compute --out DIR` or "
                             "`ncprobe reproduce --results-dir DIR`")
        log.info("%s: %d results directories found", p, len(found))
        out += sorted(found)
    seen: set[Path] = set()
    unique = []
    for d in out:
        resolved = d.resolve()
        if resolved not in seen:
            seen.add(resolved)
            unique.append(d)
    return unique


def load_results(paths, *, exclude: Iterable[str | os.PathLike] = (),
                 accept_edited: bool = False, require_match: bool = True) -> Results:
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
            :meth:`Results.from_parquet`; ``--accept-edited-results``).
        require_match: ``False``: an ``exclude`` path may leave out nothing here (``ncprobe
            compare`` checks its ``--exclude`` against both sides together).

    Raises:
        UsageError: as :func:`find_results`; an ``exclude`` path that does not exist or
            leaves out nothing; every directory excluded; two directories holding one cell.
        DataError: a damaged results directory (:meth:`Results.from_parquet`).
    """
    found = drop_excluded(find_results(paths), exclude, require_match=require_match)
    runs = [Results.from_parquet(p, accept_edited=accept_edited) for p in found]
    return runs[0] if len(runs) == 1 else Results.concat(runs, sources=found)


def drop_excluded(found: list[Path], exclude: Iterable[str | os.PathLike], *,
                  require_match: bool = True) -> list[Path]:
    """``found`` less the directories at or below a path of ``exclude``.

    Raises:
        UsageError: an ``exclude`` path that does not exist, or (``require_match``) that
            leaves out no directory of ``found``; nothing left.
    """
    excluded = [Path(e).expanduser() for e in exclude]
    if not excluded:
        return list(found)
    missing = [str(e) for e in excluded if not os.path.lexists(e)]
    if missing:
        raise UsageError(f"--exclude {', '.join(missing)}: no such file or directory")
    gone = [e.resolve() for e in excluded]
    used: set[int] = set()
    keep = []
    for d in found:
        r = d.resolve()
        hit = {k for k, e in enumerate(gone) if r == e or e in r.parents}
        used |= hit
        if not hit:
            keep.append(d)
    unused = [str(e) for k, e in enumerate(excluded) if k not in used]
    if unused and require_match:
        shown = ", ".join(map(str, found[:10])) + (f" ... ({len(found)} in all)"
                                                    if len(found) > 10 else "")
        raise UsageError(f"--exclude {', '.join(unused)}: no results directory found is there "
                         f"or below it (found: {shown})")
    if not keep:
        raise UsageError("--exclude leaves out every results directory found: nothing to read")
    return keep


def _refuse_pooling(results: Sequence[Results], names: Sequence[str]) -> None:
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
        f"ncprobe.results.load_results(..., exclude=[DIR])) to leave one out{others}")


def _run_of(res: Results, model: str, lang: str) -> dict | None:
    """The run of ``res.meta`` that made the rows of ``model`` (and ``lang``), if one did."""
    if len(res.meta) == 1:
        return res.meta[0]

    def name(m: dict) -> str:
        return str(m.get("model_name") or (m.get("config") or {}).get("model"))
    runs = [m for m in res.meta if name(m) == model]
    if len(runs) > 1:
        runs = [m for m in runs if str((m.get("config") or {}).get("lang")) == lang] or runs
    return runs[0] if len(runs) == 1 else None


def _how_runs_differ(a: Results, b: Results, model: str, lang: str) -> str:
    """How the runs of two Results that share a cell of ``model`` / ``lang`` differ, in words."""
    ra, rb = _run_of(a, model, lang), _run_of(b, model, lang)
    if ra is None or rb is None:
        return "two runs of it"
    ia, ib = run_identity([ra])[0], run_identity([rb])[0]
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
