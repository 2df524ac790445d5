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
  (:func:`ncprobe.retrieval.stats.paired_tests`), a run's own tests one family (``family``,
  ``family_size``), with bound flags where a p is the floor of its flips (``p_bound``,
  ``p_corrected_bound``).

Its directory is an ncprobe results directory (:mod:`ncprobe.results.store`: parquet tables
and ``run.json`` written as one unit, verified when read) of the probe ``idiolink``. Each
model is one run of ``run.json``: the options (``config``, with the model), the model's
fingerprint (or BM25's parameters) and the data files' blob ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Sequence

import pandas as pd

from ..config import N_BOOT
from ..errors import UsageError
from ..probes.base import (
    ModelRunResults,
    ProbeResults,
    check_model_runs,
    common_option,
    refuse_pooling,
)
from ..query import not_present_message, wanted_values
from ..results import store
from .config import RetrievalConfig
from .metrics import METRICS
from .report import LABEL as REPORT_LABEL

__all__ = ["LAYOUT", "RETRIEVAL_TABLES", "RetrievalResults", "check_same_items", "json_rows"]

#: The tables of a :class:`RetrievalResults`, in the order they are written.
RETRIEVAL_TABLES = ("per_query", "overall", "per_idiom", "per_subject", "tests")
_RANGES = tuple(m + s for m in METRICS for s in ("_min", "_max"))
_INTERVALS = tuple(m + s for m in METRICS for s in ("_lo", "_hi"))
#: The columns of each table, in order.
RETRIEVAL_COLUMNS = {
    "per_query": ("model", "mode", "query", "idiom", "subject", "usage", "relevant", *METRICS,
                  *_RANGES, "fallback"),
    "overall": ("model", "mode", "usage", "n", "n_idioms", *METRICS, *_INTERVALS, *_RANGES),
    "per_idiom": ("model", "mode", "idiom", "usage", "n", *METRICS, *_RANGES),
    "per_subject": ("model", "mode", "subject", "usage", "n", *METRICS, *_RANGES),
    "tests": ("model_a", "mode_a", "model_b", "mode_b", "usage", "metric", "a", "b", "diff",
              "diff_lo", "diff_hi", "p", "p_corrected", "significant", "n", "n_idioms", "test",
              "correction", "p_bound", "p_corrected_bound", "family", "family_size"),
}
#: The results directory layout of the probe (declared by :class:`RetrievalResults`).
LAYOUT = store.Layout(
    "idiolink", RETRIEVAL_TABLES, RETRIEVAL_COLUMNS,
    frozenset({"relevant", *METRICS, *_RANGES, *_INTERVALS, "fallback", "n", "n_idioms", "a",
               "b", "diff", "diff_lo", "diff_hi", "p", "p_corrected", "significant"}),
    run_keys=("model", "split"), report_label=REPORT_LABEL, config=RetrievalConfig)
_USAGE_ORDER = {"all": 0, "literal": 1, "idiomatic": 2}


@dataclass
class RetrievalResults(ModelRunResults):
    """What :func:`ncprobe.retrieval.retrieve` returns, and what a results directory loads as.

    Attributes:
        per_query, overall, per_idiom, per_subject, tests: the tables (see the module).
        meta: one dict per model run: ``config`` (the options, ``model`` among them),
            ``fingerprint``, ``data_sources``, ``notes``.

    Its results directory (:meth:`to_parquet`, :meth:`load`, :meth:`load_found`),
    ``tables``, ``run_id`` and :meth:`edited_lines` are those of every probe whose runs are one
    model each (:class:`~ncprobe.probes.base.ProbeResults`, with :data:`LAYOUT`); its
    ``models`` are those of its rows, and :meth:`load_many` adds the tests across runs.
    """

    #: How the probe's results directories are stored (:mod:`ncprobe.results.store`).
    layout: ClassVar[store.Layout] = LAYOUT
    title = "retrieval"
    tested_within = "the modes within one run are already tested in its own table tests"
    default_table = "overall"

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

    # --- access -----------------------------------------------------------------------------

    def select(self, table: str | None = None, **filters: Any) -> pd.DataFrame:
        """Rows of one table (default ``overall``), filtered through the one filter engine
        (:func:`ncprobe.query.filter_rows`): a value or a list of values per column. On the
        ``tests`` table, ``model`` and ``mode`` match either side of a test (``model_a`` or
        ``model_b``).

        Raises:
            UsageError: an unknown table or column, or a filter value that no row has (with
                the values there are), so a typo never gives an empty frame.
        """
        table = table or self.default_table
        held = self.tables.get(table)
        columns = held.columns if held is not None else ()
        sided = {k: v for k, v in filters.items() if v is not None and k not in columns
                 and f"{k}_a" in columns}
        where = f"the {table} table"
        df = self.select_rows(table, {k: v for k, v in filters.items() if k not in sided})
        for col, want in sided.items():  # a test's two sides: either may match
            sides = df[[f"{col}_a", f"{col}_b"]].astype(str)
            values = wanted_values(want)
            present = sorted(set(sides.stack()))
            bad = [v for v in values if v not in present]
            if bad:
                raise UsageError(not_present_message(col, bad, present, where))
            df = df[sides.isin(values).any(axis=1)].reset_index(drop=True)
        return df

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
        if self.edited_lines():
            lines[:0] = [*self.edited_lines(), ""]
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

    def compare(self, other: "ProbeResults | None" = None, *,
                names: Sequence[str] | None = None, n_boot: int | None = None,
                seed: int | None = None, correction: str | None = None,
                n_flips: int | str = "auto") -> pd.DataFrame:
        """Every model of these results against every model of ``other`` on the same queries,
        mode by mode: paired tests over idioms (:func:`ncprobe.retrieval.stats.paired_tests`),
        corrected across the rows as one family of their own (named after ``names``, what
        the two are called: their results directories), as ``ncprobe compare A B`` prints.

        Raises:
            UsageError: no ``other`` (the modes of one run are tested in its own ``tests``
                table), other results of different items, one model on both sides, or no
                query mode shared.
        """
        from .stats import across_family, paired_tests

        other, names, n_boot, seed, correction = self.compare_defaults(
            other, names, n_boot, seed, correction)
        both = RetrievalResults.concat([self, other], names)
        pairs = [(cell_a, cell_b) for cell_a in self.cells for cell_b in other.cells
                 if cell_a[1] == cell_b[1]]
        if not pairs:
            raise UsageError("the two sides share no query mode: nothing to compare")
        # the models across the two sides: one family of their own, named as a report of the
        # two directories names it (tests_across_runs)
        return paired_tests(both.per_query, pairs, n_boot=n_boot, seed=seed,
                            correction=correction, n_flips=n_flips,
                            family=across_family(names))

    def report_meta(self) -> dict:
        """What the report's index says of the runs: the split, each model with its model id
        and query format, the options the runs share, the notes and the resamples."""
        models = [{"model": m["config"]["model"],
                   "id": (m.get("fingerprint") or {}).get("model"),
                   "format": m["config"].get("format")} for m in self.meta]
        shared = self.shared_config(("model", "format"))
        return {"probe": LAYOUT.probe, "split": self.split, "models": models,
                "config": shared, "notes": self.notes, "n_boot": shared.get("n_boot"),
                "edited": self.edited_lines()}

    def report_writer(self) -> Callable[..., list[Path]]:
        """:func:`ncprobe.retrieval.report.write_retrieval_report`: Table 2 layout, the
        paired tests, the figures, an index."""
        from .report import write_retrieval_report

        return write_retrieval_report

    # --- on disk ----------------------------------------------------------------------------

    @classmethod
    def check_runs(cls, tables: dict[str, pd.DataFrame], runs: list[dict], meta_file: Path
                   ) -> None:
        """Refuse a results directory whose ``run.json`` does not describe every model of its
        tables (a run removed) or describes a model they lack: the split, options and data of
        those rows would be unknown.

        Raises:
            DataError: naming ``run.json`` and the models (exit 3, a damaged results
                directory).
        """
        check_model_runs(runs, list(dict.fromkeys(str(m) for m in tables["per_query"]["model"])),
                         meta_file, run="a retrieval run", recorded="its split, options and data",
                         unheld=True)

    @classmethod
    def load_many(cls, paths: Sequence[str | Path], *, exclude: Iterable[str | Path] = (),
                  accept_edited: bool = False, across: bool = True) -> "RetrievalResults":
        """Every results directory at or below ``paths`` (less those at or below ``exclude``),
        loaded (:meth:`load`) and joined (:meth:`concat`: one model in two is refused).

        Each run's own tests keep their family and corrected p (the same as in that run's
        own report); with ``across`` (the default) and several directories, the models of
        different directories are tested against each other too
        (:func:`tests_across_runs`), a family of its own."""
        parts, names = cls.load_found(paths, exclude=exclude, accept_edited=accept_edited)
        joined = cls.concat(parts, names)
        more = tests_across_runs(parts, names) if across and len(parts) > 1 else None
        if more is not None and len(more):
            joined.tests = pd.concat([joined.tests, more], ignore_index=True)
        return joined

    @classmethod
    def check_joinable(cls, results: Sequence["RetrievalResults"], names: Sequence[str]
                       ) -> None:
        """Refuse results of different items or data (:func:`check_same_items`: never two
        corpora in one table or test), or a model in two of them (never pooled). Each
        result's paired tests stay as they are when joined, one family per run with its
        corrected p unchanged (the models of different results are tested against each other
        only by :func:`tests_across_runs`, which :meth:`load_many` adds, or by ``ncprobe
        compare``)."""
        check_same_items(results, names)
        refuse_pooling([res.models for res in results], names, "leave one out")


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
    columns = RETRIEVAL_COLUMNS["per_idiom" if by == "idiom" else "per_subject"]
    return out[list(columns)].reset_index(drop=True)


def check_same_items(results: Sequence["RetrievalResults"], names: Sequence[str]) -> None:
    """Refuse to put retrieval results of different items or data into one table or test:
    every one must be of the same split, idioms, queries and documents, from data files of
    the same git blob ids (``run.json``'s ``data_sources``), or their figures are not
    comparable (R-Precision over 200 documents is not R-Precision over 1,000; a relevance
    label changed changes the figure).

    Args:
        results: the results to be shown together.
        names: what each is called (its results directory).

    Raises:
        UsageError: naming both results, everything that differs (split, idioms, number of
            queries and documents, each data file whose blob id differs, and which side's
            file differs from its pin) and what to do.
    """
    if len(results) < 2:
        return
    facts = [_items_of(r) for r in results]
    for j in range(1, len(results)):
        diffs = _item_differences(facts[0], facts[j], names[0], names[j])
        if diffs:
            raise UsageError(
                f"{names[0]} and {names[j]} are retrieval runs on different items or data: "
                + "; ".join(diffs) + ". Their figures are not comparable query by query, so "
                "they never share a table or a paired test: report them separately (one "
                "`ncprobe report DIR --out OUT` each), or leave one out with --exclude DIR "
                "(Python: RetrievalResults.load_many(..., exclude=[DIR]))")


def _items_of(res: "RetrievalResults") -> dict:
    """What a retrieval result was run on: split, idioms, queries, documents, data files."""
    data, modified = store.data_read(res.meta)
    documents: set[int] = set()
    for m in res.meta:
        n = (m.get("corpus") or {}).get("documents")
        if isinstance(n, int):
            documents.add(n)
    return {"split": res.split, "idioms": set(map(str, res.per_query["idiom"])),
            "queries": set(map(str, res.per_query["query"])),
            "documents": documents.pop() if len(documents) == 1 else None,
            "data": data, "modified": modified}


def _item_differences(a: dict, b: dict, name_a: str, name_b: str) -> list[str]:
    """What differs between two :func:`_items_of`, in words."""
    def listed(xs: set[str], limit: int = 4) -> str:
        xs_sorted = sorted(xs)
        return ", ".join(xs_sorted[:limit]) + (f" ... ({len(xs)} in all)" if len(xs) > limit
                                              else "")

    out = []
    if a["split"] != b["split"]:
        out.append(f"split {a['split']} in {name_a}, {b['split']} in {name_b}")
    if a["idioms"] != b["idioms"]:
        only_a, only_b = a["idioms"] - b["idioms"], b["idioms"] - a["idioms"]
        out.append(f"idioms: {len(a['idioms'])} in {name_a}, {len(b['idioms'])} in {name_b}"
                   + (f" (only in {name_a}: {listed(only_a)})" if only_a else "")
                   + (f" (only in {name_b}: {listed(only_b)})" if only_b else ""))
    if a["queries"] != b["queries"]:
        out.append(f"queries: {len(a['queries'])} in {name_a}, {len(b['queries'])} in "
                   f"{name_b} ({len(a['queries'] & b['queries'])} shared)")
    if a["documents"] is not None and b["documents"] is not None \
            and a["documents"] != b["documents"]:
        out.append(f"documents: {a['documents']} in {name_a}, {b['documents']} in {name_b}")
    if a["data"] and b["data"]:  # results that recorded their data files
        for rel in sorted(set(a["data"]) | set(b["data"])):
            blob_a, blob_b = a["data"].get(rel), b["data"].get(rel)
            if blob_a == blob_b:
                continue
            pinned = [n for n, side in ((name_a, a), (name_b, b)) if rel in side["modified"]]
            out.append(f"data file {rel}: git blob {blob_a or '(not read)'} in {name_a}, "
                       f"{blob_b or '(not read)'} in {name_b}"
                       + (f" (modified: differs from its pin in {' and '.join(pinned)})"
                          if pinned else ""))
    return out


def tests_across_runs(results: Sequence["RetrievalResults"], names: Sequence[str]
                      ) -> pd.DataFrame:
    """The model-vs-model tests between different runs: for each query mode, every model of
    one result against every model of a later one that has the mode, on the same queries
    (:func:`ncprobe.retrieval.stats.paired_tests`: interval, sign-flip test). They are one
    family of their own (``family`` ``"models across runs: <names>"``), corrected together
    and never with a run's own tests, whose corrected p's therefore do not depend on what
    else is reported. The options (``n_boot``, ``seed``, ``correction``) are the runs'
    shared ones (the defaults where they differ).

    Args:
        results: the results joined (:meth:`RetrievalResults.concat` checks that they are on
            the same items).
        names: what each is called (its results directory), for the family's name.

    Returns:
        A tests table (:data:`ncprobe.retrieval.stats.TEST_COLUMNS`), empty when no two
        results share a mode.
    """
    from .stats import TEST_COLUMNS, across_family, paired_tests

    modes = list(dict.fromkeys(mode for r in results for _, mode in r.cells))
    pairs = []
    for mode in modes:  # as default_pairs orders the models within a mode
        for i, res_a in enumerate(results):
            for res_b in results[i + 1:]:
                pairs += [(ca, cb) for ca in res_a.cells for cb in res_b.cells
                          if ca[1] == mode and cb[1] == mode]
    if not pairs:
        return pd.DataFrame(columns=list(TEST_COLUMNS))
    per_query = pd.concat([r.per_query for r in results], ignore_index=True)
    runs = [m for r in results for m in r.meta]
    return paired_tests(per_query, pairs, n_boot=int(common_option(runs, "n_boot", N_BOOT)),
                        seed=int(common_option(runs, "seed", 0)),
                        correction=str(common_option(runs, "correction", "holm")),
                        family=across_family(names))

