"""The retrieval probe's results: tidy tables, a results directory, a summary, JSON rows.

A :class:`RetrievalResults` holds five tables (metrics as fractions):

* ``per_query``: one row per model x mode x query (:func:`ncprobe.retrieval.metrics.evaluate`'s
  columns, and ``fallback``: the query's span could not be pooled and its sentence vector
  stood in, only with the explicit ``span_fallback="sentence"``);
* ``overall``: per model x mode x query usage (``all``, ``literal``, ``idiomatic``): the
  means, their 95% idiom-cluster bootstrap intervals (``*_lo``, ``*_hi``) and tie ranges
  (``*_min``, ``*_max``), ``n`` queries and ``n_idioms``;
* ``per_idiom`` and ``per_subject``: the means per idiom or subject and usage;
* ``tests``: paired tests between modes and between models
  (:func:`ncprobe.retrieval.stats.paired_tests`).

Its directory is an ncprobe results directory (:mod:`ncprobe.results.store`: parquet tables
and ``run.json`` written as one unit, verified when read) of the probe ``idiolink``. Each
model is one run of ``run.json``: the options (``config``, with the model), the model's
fingerprint (or BM25's parameters) and the data files' blob ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from ..errors import UsageError
from ..results import store
from .metrics import METRICS

__all__ = ["LAYOUT", "RETRIEVAL_TABLES", "RetrievalResults", "json_rows"]

#: The tables of a :class:`RetrievalResults`, in the order they are written.
RETRIEVAL_TABLES = ("per_query", "overall", "per_idiom", "per_subject", "tests")
_RANGES = tuple(m + s for m in METRICS for s in ("_min", "_max"))
_INTERVALS = tuple(m + s for m in METRICS for s in ("_lo", "_hi"))
_COLUMNS = {
    "per_query": ("model", "mode", "query", "idiom", "subject", "usage", "relevant", *METRICS,
                  *_RANGES, "fallback"),
    "overall": ("model", "mode", "usage", "n", "n_idioms", *METRICS, *_INTERVALS, *_RANGES),
    "per_idiom": ("model", "mode", "idiom", "usage", "n", *METRICS, *_RANGES),
    "per_subject": ("model", "mode", "subject", "usage", "n", *METRICS, *_RANGES),
    "tests": ("model_a", "mode_a", "model_b", "mode_b", "usage", "metric", "a", "b", "diff",
              "diff_lo", "diff_hi", "p", "p_corrected", "significant", "n", "n_idioms", "test",
              "correction"),
}
#: The results directory layout of the probe (registered with the results store).
LAYOUT = store.register_layout(store.Layout(
    "idiolink", RETRIEVAL_TABLES, _COLUMNS,
    frozenset({"relevant", *METRICS, *_RANGES, *_INTERVALS, "fallback", "n", "n_idioms", "a",
               "b", "diff", "diff_lo", "diff_hi", "p", "p_corrected", "significant"}),
    run_keys=("model", "split")))
_USAGE_ORDER = {"all": 0, "literal": 1, "idiomatic": 2}


@dataclass
class RetrievalResults:
    """What :func:`ncprobe.retrieval.retrieve` returns, and what a results directory loads as.

    Attributes:
        per_query, overall, per_idiom, per_subject, tests: the tables (see the module).
        meta: one dict per model run: ``config`` (the options, ``model`` among them),
            ``fingerprint``, ``data_sources``, ``notes``.
    """

    per_query: pd.DataFrame
    overall: pd.DataFrame
    per_idiom: pd.DataFrame
    per_subject: pd.DataFrame
    tests: pd.DataFrame
    meta: list[dict] = field(default_factory=list)

    def __repr__(self) -> str:
        models = ", ".join(self.models)
        modes = ", ".join(dict.fromkeys(self.per_query["mode"]))
        return (f"<RetrievalResults {self.split}: {models}; modes {modes}; "
                f"{self.per_query['query'].nunique()} queries>")

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables by name (:data:`RETRIEVAL_TABLES`)."""
        return {name: getattr(self, name) for name in RETRIEVAL_TABLES}

    @property
    def models(self) -> list[str]:
        """The models, in run order."""
        return list(dict.fromkeys(self.per_query["model"]))

    @property
    def cells(self) -> list[tuple[str, str]]:
        """The (model, mode) pairs, in run order."""
        return list(dict.fromkeys(zip(self.per_query["model"], self.per_query["mode"],
                                      strict=True)))

    @property
    def split(self) -> str:
        splits = {m["config"].get("split") for m in self.meta}
        return ", ".join(sorted(map(str, splits))) if splits else "?"

    @property
    def notes(self) -> list[str]:
        """What was noticed while computing, one line each, prefixed by the model."""
        return [f"{m['config']['model']}: {n}" for m in self.meta for n in m.get("notes", [])]

    @property
    def run_id(self) -> str:
        """A hash of every table and of the runs' metadata (equal results, equal ids)."""
        return store.run_id(self.tables, self.meta, LAYOUT)

    # --- access -----------------------------------------------------------------------------

    def select(self, table: str = "overall", *, model=None, mode=None, usage=None
               ) -> pd.DataFrame:
        """Rows of one table, filtered (a value or a list of values per column).

        Raises:
            UsageError: an unknown table, or a filter value that no row has (with the
                values there are), so a typo never gives an empty frame.
        """
        if table not in RETRIEVAL_TABLES:
            raise UsageError(f"unknown table {table!r}; choose from {', '.join(RETRIEVAL_TABLES)}")
        df = self.tables[table]
        for col, want in (("model", model), ("mode", mode), ("usage", usage)):
            if want is None:
                continue
            cols = [c for c in (col, f"{col}_a") if c in df.columns]
            if not cols:
                raise UsageError(f"the {table} table has no {col} column")
            wanted = [want] if isinstance(want, str) else list(want)
            have = set().union(*(set(df[c]) for c in cols))
            unknown = [w for w in wanted if w not in have]
            if unknown:
                raise UsageError(f"no {col} {', '.join(map(repr, unknown))} in these results "
                                 f"(there are: {', '.join(map(str, sorted(have)))})")
            keep = df[cols[0]].isin(wanted)
            for c in cols[1:]:
                keep |= df[c].isin(wanted)
            df = df[keep]
        return df.reset_index(drop=True)

    def wide(self, metric: str = "r_precision", *, usage: str = "all") -> pd.DataFrame:
        """One row per model, one column per mode: the metric's mean (a fraction; NaN where
        the model has no such mode), models and modes in run order."""
        if metric not in METRICS:
            raise UsageError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
        df = self.select("overall", usage=usage)
        out = df.pivot(index="model", columns="mode", values=metric)
        modes = list(dict.fromkeys(df["mode"]))
        return out.reindex(index=self.models, columns=modes).rename_axis(columns=None)

    def summary(self) -> str:
        """The overall figures as text: per model and mode, R-Precision and nDCG@10 in
        percent with their intervals, per usage; then the notes."""
        lines = [f"IdioLink {self.split} split, {self.per_query['query'].nunique()} queries; "
                 "percent, 95% idiom-cluster bootstrap intervals in brackets"]
        if any(m.get("edited") for m in self.meta):
            lines.insert(0, "EDITED RESULTS (read with accept_edited): not as ncprobe wrote them")
        head = f"{'model':<16} {'mode':<21} {'usage':<9} {'R-Precision':>24} {'nDCG@10':>24}"
        lines += ["", head, "-" * len(head)]
        for row in self.overall.to_dict("records"):
            cells = [_cell(row, m) for m in METRICS]
            lines.append(f"{row['model']:<16} {row['mode']:<21} {row['usage']:<9} "
                         f"{cells[0]:>24} {cells[1]:>24}")
        ties = self.overall[(self.overall["r_precision_min"] != self.overall["r_precision_max"])
                            | (self.overall["ndcg@10_min"] != self.overall["ndcg@10_max"])]
        if len(ties):
            lines += ["", "Tied scores: documents with equal scores are ranked in corpus order "
                      "(a stable sort); reordering only tied documents could move these "
                      "figures within:"]
            for row in ties[ties["usage"] == "all"].to_dict("records"):
                lines.append("  " + f"{row['model']} {row['mode']}: " + ", ".join(
                    f"{m} {100 * row[m + '_min']:.2f}-{100 * row[m + '_max']:.2f}"
                    for m in METRICS))
        if self.notes:
            lines += ["", "Notes:"] + [f"  {n}" for n in self.notes]
        return "\n".join(lines)

    def json_rows(self) -> list[dict]:
        """The overall table as a list of rows (what ``ncprobe retrieve --json`` prints)."""
        return json_rows(self.overall)

    def report_meta(self) -> dict:
        """What the report's index says of the runs: the split, each model with its model id
        and query format, the options the runs share, the notes and the resamples."""
        models = [{"model": m["config"]["model"],
                   "id": (m.get("fingerprint") or {}).get("model"),
                   "format": m["config"].get("format")} for m in self.meta]
        configs = [{k: v for k, v in m["config"].items() if k not in ("model", "format")}
                   for m in self.meta]
        shared = {k: v for k, v in configs[0].items()
                  if all(c.get(k) == v for c in configs)} if configs else {}
        return {"probe": LAYOUT.probe, "split": self.split, "models": models,
                "config": shared, "notes": self.notes, "n_boot": shared.get("n_boot")}

    def report(self, out_dir: str | Path, *, formats: Sequence[str] = ("png", "pdf"),
               dpi: int = 200) -> list[Path]:
        """Write the report (Table 2 layout, the paired tests, the figures, an index) into
        ``out_dir``: :func:`ncprobe.retrieval.report.write_retrieval_report`."""
        from .report import write_retrieval_report

        return write_retrieval_report(self.tables, self.report_meta(), out_dir,
                                      formats=formats, dpi=dpi)

    # --- on disk ----------------------------------------------------------------------------

    def to_parquet(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the results directory ``path`` as one unit (see
        :func:`ncprobe.results.store.write_results`): refuses to replace anything that is not
        a results directory, or another run's unless ``overwrite``."""
        return store.write_results(self.tables, self.meta, path, overwrite=overwrite,
                                   layout=LAYOUT)

    @classmethod
    def load(cls, path: str | Path, *, accept_edited: bool = False) -> "RetrievalResults":
        """Read a results directory written by :meth:`to_parquet`, verified (an edited table
        or run.json is refused unless ``accept_edited``; another probe's results are a
        UsageError)."""
        tables, runs = store.read_results(path, accept_edited=accept_edited, layout=LAYOUT)
        return cls(**tables, meta=runs)

    from_parquet = load

    @classmethod
    def load_many(cls, paths: Sequence[str | Path], *, exclude: Iterable[str | Path] = (),
                  accept_edited: bool = False) -> "RetrievalResults":
        """Every results directory at or below ``paths`` (less those at or below ``exclude``),
        loaded (:meth:`load`) and joined (:meth:`concat`: one model in two is refused)."""
        found = store.find_results(paths)
        if exclude:
            found = store.drop_excluded(found, exclude, require_match=False)
        return cls.concat([cls.load(d, accept_edited=accept_edited) for d in found],
                          [str(d) for d in found])

    @classmethod
    def concat(cls, results: Sequence["RetrievalResults"], names: Sequence[str] | None = None
               ) -> "RetrievalResults":
        """Several results as one (e.g. two directories to compare). The tables are stacked
        and the paired tests recomputed for all models by the caller; a model present in
        two of them is refused, never pooled.

        Raises:
            UsageError: one model in two results (naming both), or results of two splits.
        """
        names = list(names or [f"results {i + 1}" for i in range(len(results))])
        seen: dict[str, str] = {}
        for res, name in zip(results, names, strict=True):
            for model in res.models:
                if model in seen:
                    raise UsageError(f"model {model!r} is in both {seen[model]} and {name}: "
                                     "two runs of one model are never pooled; leave one out")
                seen[model] = name
        splits = {r.split for r in results}
        if len(splits) > 1:
            raise UsageError(f"results of different splits ({', '.join(sorted(splits))}) "
                             "cannot be compared query by query")
        frames = {t: pd.concat([r.tables[t] for r in results], ignore_index=True)
                  for t in RETRIEVAL_TABLES}
        return cls(**frames, meta=[m for r in results for m in r.meta])


def _cell(row: dict, metric: str) -> str:
    value = f"{100 * row[metric]:.2f}"
    lo, hi = row[metric + "_lo"], row[metric + "_hi"]
    if pd.isna(lo) or pd.isna(hi):
        return value
    return f"{value} [{100 * lo:.2f}, {100 * hi:.2f}]"


def json_rows(overall: pd.DataFrame) -> list[dict]:
    """Rows of an ``overall`` table as plain JSON values (NaN as null)."""
    return json.loads(overall.to_json(orient="records", double_precision=15))


def grouped_means(per_query: pd.DataFrame, by: str) -> pd.DataFrame:
    """Mean metrics and tie ranges per model x mode x ``by`` (``idiom`` or ``subject``) x
    usage (``all``, then ``literal``, ``idiomatic``), in run order then first appearance."""
    from .metrics import aggregate

    every = aggregate(per_query, by).assign(usage="all")
    parts = [every]
    for usage in ("literal", "idiomatic"):
        sub = per_query[per_query["usage"] == usage]
        if len(sub):
            parts.append(aggregate(sub, by).assign(usage=usage))
    out = pd.concat(parts, ignore_index=True)
    cells = {k: i for i, k in enumerate(dict.fromkeys(
        zip(per_query["model"], per_query["mode"], strict=True)))}
    groups = {k: i for i, k in enumerate(dict.fromkeys(per_query[by]))}
    out["_c"] = [cells[k] for k in zip(out["model"], out["mode"], strict=True)]
    out["_g"] = out[by].map(groups)
    out["_u"] = out["usage"].map(_USAGE_ORDER)
    out = out.sort_values(["_c", "_g", "_u"], kind="stable").drop(columns=["_c", "_g", "_u"])
    return out[list(_COLUMNS["per_idiom" if by == "idiom" else "per_subject"])].reset_index(
        drop=True)


def check_models(models: Iterable[str]) -> list[str]:
    """The model names of one call, refusing one named twice (its runs would be pooled)."""
    out: list[str] = []
    for m in models:
        if m in out:
            raise UsageError(f"model {m!r} is named twice; each model is run once")
        out.append(m)
    if not out:
        raise UsageError("no model given")
    return out
