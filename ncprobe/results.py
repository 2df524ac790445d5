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
everything undefined or tolerated).

A results directory is written as one unit (:meth:`Results.to_parquet`): into a
fresh temporary directory beside the target, which is then renamed into place.
Its ``run.json`` and every table (parquet schema metadata ``ncprobe.run_id``)
carry the same run id, a hash of the content, and :meth:`Results.from_parquet`
refuses a directory whose tables do not all carry the id of its ``run.json``.
"""

from __future__ import annotations

import contextlib
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
#: 2: run id in run.json and in every table; 1 (ncprobe <= 0.1): no run id, still read.
RESULTS_FORMAT = 2
_READABLE_FORMATS = (1, 2)
RUN_ID_KEY = b"ncprobe.run_id"
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
        return [f"{m['config']['model']}/{m['config']['lang']}: {n}" for m in self.meta
                for n in m.get("notes", [])]

    def run_id(self) -> str:
        """A hash of every table and of ``meta``: equal results give equal ids."""
        h = hashlib.sha256()
        h.update(json.dumps(self.meta, sort_keys=True, ensure_ascii=False, default=str).encode())
        for name in TABLES:
            df = getattr(self, name)
            h.update(f"\0{name}\0{list(df.columns)}\0{[str(t) for t in df.dtypes]}".encode())
            try:
                h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
            except TypeError:  # unhashable cells (lists...): hash their text instead
                h.update(df.to_csv(index=False).encode())
        return h.hexdigest()[:32]

    def to_parquet(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write every table as ``<table>.parquet`` and the metadata as ``run.json`` into ``path``.

        The directory is written as one unit: into a fresh temporary directory beside
        ``path``, then swapped in under a lock on the parent directory (the previous
        directory is renamed aside and removed), so readers see the old results or the
        new, never a mixture, and two runs writing the same ``path`` never collide.

        Args:
            path: the results directory.
            overwrite: replace a results directory that holds a different run (other
                config, model or data). The same run is always replaced; a non-empty
                directory that is not an ncprobe results directory never is.

        Raises:
            UsageError: ``path`` holds a different run and ``overwrite`` is false, or it is
                not an ncprobe results directory.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        from ._io import dir_lock

        target = Path(path).expanduser().resolve()  # a link as --out: write where it points
        parent = target.parent
        parent.mkdir(parents=True, exist_ok=True)
        check_target(target, self.meta, overwrite=overwrite)  # early: before any writing
        run_id = self.run_id()
        _remove_stale_temps(parent, target.name)
        tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{target.name}.", suffix=".tmp"))
        aside = None
        writing = contextlib.ExitStack()
        try:
            # locked while written: another writer never takes it for a killed run's leftover
            writing.enter_context(dir_lock(tmp))
            for name in TABLES:
                table = pa.Table.from_pandas(getattr(self, name), preserve_index=False)
                table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                                       RUN_ID_KEY: run_id.encode()})
                with open(tmp / f"{name}.parquet", "wb") as fh:
                    pq.write_table(table, fh)
                    fh.flush()
                    os.fsync(fh.fileno())
            with open(tmp / "run.json", "w", encoding="utf-8") as fh:
                fh.write(json.dumps({"format": RESULTS_FORMAT, "run_id": run_id,
                                     "runs": self.meta}, indent=2, ensure_ascii=False,
                                    default=str) + "\n")
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
            shutil.rmtree(tmp, ignore_errors=True)  # our own fresh directory, nothing else
            raise
        finally:
            writing.close()
        if aside is not None:
            _remove_results_dir(aside)
        return target

    @classmethod
    def from_parquet(cls, path: str | Path) -> "Results":
        """Read what :meth:`to_parquet` wrote.

        Raises:
            UsageError: ``path`` is not a results directory (no ``run.json``).
            DataError: ``run.json`` or a table is unreadable or missing, the format is
                unknown, or the tables do not all belong to the run of ``run.json``.
        """
        import pyarrow.parquet as pq

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
        run_id = meta.get("run_id")
        if fmt >= 2 and not isinstance(run_id, str):
            raise DataError("no run_id: the file was edited or damaged; recompute the results",
                            file=str(meta_file))
        if fmt == 1:
            log.warning("%s was written by an older ncprobe (results format 1, no run id): "
                        "nothing shows whether all its tables come from one run; recompute "
                        "it to be sure", src)
        tables, owners = {}, {}
        for name in TABLES:
            f = src / f"{name}.parquet"
            if not f.is_file():
                raise DataError(f"{f.name} is missing: the results directory is incomplete; "
                                "recompute it", file=str(f))
            try:
                if fmt >= 2:
                    got = (pq.read_schema(f).metadata or {}).get(RUN_ID_KEY)
                    owners[f.name] = got.decode() if got else None
                tables[name] = pd.read_parquet(f)
            except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
                raise DataError(f"cannot be read as parquet ({e}); recompute the results",
                                file=str(f)) from None
        stray = {n: o for n, o in owners.items() if o != run_id}
        if stray:
            listed = "; ".join(f"{n}: {o or 'no run id'}" for n, o in sorted(stray.items()))
            raise DataError(
                f"tables of different runs in one directory: run.json belongs to run {run_id}, "
                f"but {listed}. It was written by two runs at once or by an interrupted write "
                "of an older ncprobe; recompute it", file=str(src))
        return cls(**tables, meta=meta["runs"])

    @classmethod
    def concat(cls, results: list["Results"]) -> "Results":
        """Several runs (models, languages) as one Results."""
        if not results:
            raise ValueError("nothing to concatenate")
        tables = {f.name: pd.concat([getattr(r, f.name) for r in results], ignore_index=True)
                  for f in fields(cls) if f.name != "meta"}
        tables["ncs"] = tables["ncs"].drop_duplicates(["lang", "nc"], ignore_index=True)
        return cls(**tables, meta=[m for r in results for m in r.meta])

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
        the first lines, one per file.
        """
        from .tables import CORRECTION_NAMES, correction_note

        correction_note(correct, 0)  # an unknown correction: refused before any work
        lines = []
        for m in self.meta:  # first, where it cannot be missed
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


def _remove_stale_temps(parent: Path, name: str) -> None:
    """Remove what a killed :meth:`Results.to_parquet` of ``name`` left: its temporary directory.

    Only unlocked directories named as ``to_parquet`` names them (``.<name>.<8 chars>.tmp``)
    and holding some results files and nothing else are removed: a writer locks its directory
    before it writes the first file, so one being written is locked, or still empty.
    """
    from ._io import LockBusy, dir_lock

    if os.name == "nt":  # no directory locks there (see dir_lock): never guess
        return
    pattern = re.compile(rf"^\.{re.escape(name)}\.[a-z0-9_]{{8}}\.tmp$")
    for entry in os.scandir(parent):
        if not pattern.match(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            with dir_lock(entry.path, blocking=False):
                children = list(os.scandir(entry.path))
                if children and all(c.is_file(follow_symlinks=False)
                                    and c.name in _RESULT_FILES for c in children):
                    for c in children:
                        os.unlink(c.path)
                    os.rmdir(entry.path)
                    log.info("removed %s, left by an interrupted write", entry.path)
        except (LockBusy, FileNotFoundError):
            continue  # being written now, or removed by another writer meanwhile


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
