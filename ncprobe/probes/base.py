"""What a probe declares (:class:`Probe`), and the one interface of every probe's results
(:class:`ProbeResults`). ``docs/extending.md`` adds a probe step by step.
"""

from __future__ import annotations

import argparse
import json
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Mapping, Sequence, TypeVar

if TYPE_CHECKING:
    import pandas as pd

    from ..data.sources import UpstreamFile
    from ..errors import DataError
    from ..results.store import Layout

#: A results class (what its class methods return).
R = TypeVar("R", bound="ProbeResults")


#: How each side of a probe's ``compare`` is named to a user: the command line's RESULTS_A and
#: RESULTS_B, with the Python keyword (``a``, ``b``) that names it in ``compare(...)``.
SIDE_NAMES = {"a": "RESULTS_A (a)", "b": "RESULTS_B (b)"}


def common_option(runs: Iterable[Mapping], key: str, default: Any) -> Any:
    """The runs' common value of a config option (``default`` when they differ or lack it):
    ``runs`` are run metadata, each with its ``config``."""
    values = {json.dumps(m["config"].get(key, default), default=str) for m in runs}
    return json.loads(values.pop()) if len(values) == 1 else default


def check_model_runs(runs: list[dict], held: Sequence[str], meta_file: Path, *, run: str,
                     recorded: str = "its options and data", unheld: bool = False) -> None:
    """Refuse a results directory whose ``run.json`` (``meta_file``, its ``runs``) does not
    describe every model whose rows its tables hold (``held``: a run removed), or describes
    one model twice (or, with ``unheld``, a model the tables lack): a probe whose runs are one
    model each (``run``: ``an NCC run``; ``recorded``: what each run records).

    Raises:
        DataError: naming ``run.json`` and the models (exit 3, a damaged results directory).
    """
    from ..errors import DataError

    described = [str(m["config"]["model"]) for m in runs]
    missing = [m for m in held if m not in described]
    extra = [m for m in described if m not in held] if unheld else []
    twice = sorted({m for m in described if described.count(m) > 1})
    problems = ([f"no run for the model(s) {', '.join(missing)} of its tables"] if missing
                else []) + ([f"runs of model(s) {', '.join(extra)} that no table holds"]
                            if extra else []) + ([f"two runs of {', '.join(twice)}"]
                                                 if twice else [])
    if problems:
        raise DataError("; ".join(problems) + f": the file was edited or damaged (each model "
                        f"of {run} is one run, with {recorded}); recompute the results",
                        file=str(meta_file))


def refuse_pooling(models: Sequence[Sequence[str]], names: Sequence[str], advice: str) -> None:
    """Refuse to join results of which two hold one model (``models[i]``: the models of the
    results called ``names[i]``): its runs would be pooled.

    Raises:
        UsageError: naming the model and both results, then ``advice`` (what to do).
    """
    from ..errors import UsageError

    seen: dict[str, str] = {}
    for held, name in zip(models, names, strict=True):
        for model in dict.fromkeys(held):
            if model in seen:
                raise UsageError(f"model {model!r} is in both {seen[model]} and {name}: "
                                 f"two runs of one model are never pooled; {advice}")
            seen[model] = name


class ProbeResults(ABC):
    """The results of one or more runs of a probe: its tables (tidy DataFrames) and one
    ``meta`` dict per run (``config``, ``fingerprint``, ``data_sources``, ``notes``).

    Every probe's results class implements this interface, and is stored through the one
    results store (:mod:`ncprobe.results.store`, with the probe's :attr:`layout`): a results
    directory of parquet tables and a verified ``run.json``. The methods written here serve
    a probe whose runs are one model each (``config["model"]``) and whose dataclass fields
    are its layout's tables; a probe of other runs overrides them (NCIMP's: a model and a
    language each).
    """

    meta: list[dict]
    #: How the probe's results directories are stored (:mod:`ncprobe.results.store`).
    layout: ClassVar[Layout]

    # --- reading and writing ----------------------------------------------------------------

    @classmethod
    def load(cls: type[R], path: str | Path, *, accept_edited: bool = False) -> R:
        """Read a results directory written by :meth:`to_parquet`, verified (an edited table
        or run.json is refused unless ``accept_edited``; another probe's results are a
        UsageError; a run.json that does not describe the runs of the tables a DataError,
        :meth:`check_runs`)."""
        from ..results import store

        tables, runs = store.read_results(path, accept_edited=accept_edited,
                                          layout=cls.layout)
        cls.check_runs(tables, runs, Path(path) / "run.json")
        return cls(**tables, meta=runs)  # type: ignore[call-arg]

    @classmethod
    def check_runs(cls, tables: dict[str, "pd.DataFrame"], runs: list[dict], meta_file: Path
                   ) -> None:
        """Refuse a results directory whose ``run.json`` (``meta_file``) does not describe
        the runs of its tables; what :meth:`load` checks beyond the store. Nothing here.

        Raises:
            DataError: naming ``run.json`` (exit 3, a damaged results directory).
        """
        return None

    @classmethod
    def load_many(cls: type[R], paths: Sequence[str | Path], *,
                  exclude: Iterable[str | Path] = (), accept_edited: bool = False) -> R:
        """Every results directory at or below ``paths`` (less those at or below
        ``exclude``), loaded (:meth:`load`) and joined (:meth:`concat`: never two runs of one
        cell pooled)."""
        return cls.concat(*cls.load_found(paths, exclude=exclude, accept_edited=accept_edited))

    @classmethod
    def load_found(cls: type[R], paths: Sequence[str | Path], *,
                   exclude: Iterable[str | Path] = (), accept_edited: bool = False
                   ) -> tuple[list[R], list[str]]:
        """Every results directory at or below ``paths`` (less those at or below ``exclude``;
        one may leave out nothing), loaded (:meth:`load`), and the directories' names."""
        from ..results import store

        found = store.find_results(paths)
        if exclude:
            found = store.drop_excluded(found, exclude, require_match=False)
        return [cls.load(d, accept_edited=accept_edited) for d in found], [str(d) for d in found]

    @classmethod
    @abstractmethod
    def concat(cls: type[R], *args: Any, **kwargs: Any) -> R:
        """``concat(results, names=None)``: several results as one (``names``: what each is
        called in a refusal); never two runs of one cell pooled."""

    def to_parquet(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the results directory ``path`` as one unit
        (:func:`ncprobe.results.store.write_results`): refuses to replace anything that is
        not a results directory, or another run's unless ``overwrite``."""
        from ..results import store

        return store.write_results(self.tables, self.meta, path, overwrite=overwrite,
                                   layout=self.layout)

    @property
    def tables(self) -> dict[str, "pd.DataFrame"]:
        """The tables by name, in the order they are written (the layout's)."""
        return {name: getattr(self, name) for name in self.layout.tables}

    @property
    def run_id(self) -> str:
        """A hash of every table and of the runs' metadata (equal results, equal ids)."""
        from ..results import store

        return store.run_id(self.tables, self.meta, self.layout)

    # --- the runs ---------------------------------------------------------------------------

    @property
    def models(self) -> list[str]:
        """The models of the runs, in run order."""
        return [str(m["config"]["model"]) for m in self.meta]

    @property
    def notes(self) -> list[str]:
        """What was noticed while computing, one line each, prefixed by the run(s) it came
        from: a note of every run (the data's) once, prefixed by every model."""
        runs = [[str(n) for n in m.get("notes", [])] for m in self.meta]
        everywhere = [n for n in dict.fromkeys(runs[0]) if all(n in r for r in runs)] \
            if len(runs) > 1 else []
        out = [f"{', '.join(self.models)}: {n}" for n in everywhere]
        for model, notes in zip(self.models, runs, strict=True):
            out += [f"{model}: {n}" for n in dict.fromkeys(notes) if n not in everywhere]
        return out

    def edited_lines(self) -> list[str]:
        """One line per run read although edited since ncprobe wrote it
        (``load(..., accept_edited=True)``), naming the files edited; what the summary, the
        report and ``ncprobe compare`` say first. Empty for results as ncprobe wrote them."""
        return [f"EDITED RESULTS ({m['config']['model']}): {', '.join(map(str, m['edited']))} "
                "edited since ncprobe wrote it (read with accept_edited): these numbers are "
                "not what ncprobe computed" for m in self.meta if m.get("edited")]

    def option(self, key: str, default: Any) -> Any:
        """The runs' common value of a config option (``default`` when they differ or lack
        it): :func:`common_option`."""
        return common_option(self.meta, key, default)

    def shared_config(self, leave_out: Sequence[str] = ("model",)) -> dict:
        """The config options (less ``leave_out``) whose value every run shares: what a
        report's index lists."""
        configs = [{k: v for k, v in m["config"].items() if k not in leave_out}
                   for m in self.meta]
        return {k: v for k, v in configs[0].items()
                if all(c.get(k) == v for c in configs)} if configs else {}

    # --- reading the tables -----------------------------------------------------------------

    def select_rows(self, table: str, filters: Mapping[str, Any]) -> "pd.DataFrame":
        """The rows of the table ``table`` matching every filter, strictly
        (:func:`ncprobe.query.filter_rows`: an unknown column, or a value no row has, is a
        UsageError listing what there is); what :meth:`select` does once it knows the table.

        Raises:
            UsageError: also a table the layout does not have.
        """
        from ..errors import UsageError
        from ..query import filter_rows

        if table not in self.layout.tables:
            raise UsageError(f"unknown table {table!r}; choose from "
                             f"{', '.join(self.layout.tables)}")
        return filter_rows(self.tables[table], filters, where=f"the {table} table")

    @abstractmethod
    def select(self, *args: Any, **kwargs: Any) -> "pd.DataFrame":
        """``select(table=None, **filters)``: the rows of one table matching every filter (a
        value or a list of values per column), through the one filter engine
        (:mod:`ncprobe.query`)."""

    @abstractmethod
    def wide(self, *args: Any, **kwargs: Any) -> "pd.DataFrame":
        """The probe's headline table, one row per item and condition, one column per
        measure or metric."""

    @abstractmethod
    def summary(self, *args: Any, **kwargs: Any) -> str:
        """What the run command prints."""

    @abstractmethod
    def json_rows(self) -> list[dict]:
        """The headline rows, JSON-ready (what ``ncprobe run PROBE --json`` prints)."""

    # --- what is drawn from them ------------------------------------------------------------

    @abstractmethod
    def report(self, *args: Any, **kwargs: Any) -> list[Path]:
        """``report(out_dir, **options)``: write the probe's report (figures, tables, an
        index) into ``out_dir``; returns the files written."""

    @abstractmethod
    def compare(self, *args: Any, **kwargs: Any) -> "pd.DataFrame":
        """``compare(other=None, **options)``: paired tests between these results and
        ``other`` (or within these), corrected across one stated family; a tidy DataFrame."""


class Probe(ABC):
    """A probe of the registry (:data:`ncprobe.probes.PROBES`): what it asks, its data, its
    run options, how it runs, its results class, its report and its comparison.

    The command line reaches every probe through these methods only: ``ncprobe run NAME``
    (:meth:`add_run_arguments`, :meth:`run_from_args`), ``ncprobe probes`` (:attr:`asks`,
    :attr:`data`, :meth:`tables`), ``report`` (:meth:`add_report_arguments`,
    :meth:`report_from_args`), ``compare`` (:meth:`compare_from_args`), ``models --probe``
    (:meth:`models_text`), ``data info | check`` (:meth:`reads`, :meth:`data_info`,
    :meth:`data_info_lines`, :meth:`check_data`).
    """

    #: The probe's name: ``ncprobe run NAME``, ``run.json``'s ``probe``.
    name: ClassVar[str]
    #: What it asks, one sentence.
    asks: ClassVar[str]
    #: Its data, a few words (and the data's licence where it binds).
    data: ClassVar[str]
    #: The command that is the documented shorthand of ``ncprobe run NAME`` (``compute``),
    #: or ``None``.
    shorthand: ClassVar[str | None] = None
    #: The other probes whose code this probe's package uses (NCC: ``("ncimp",)``, NCIMP's
    #: measures); a probe's package imports no other probe's package beyond these
    #: (``tests/test_import_cycles.py``).
    uses: ClassVar[tuple[str, ...]] = ()
    #: One line of ``ncprobe run --help``.
    help: ClassVar[str]
    #: What ``ncprobe run NAME --help`` (and its shorthand's) says it does.
    description: ClassVar[str]
    #: The options of ``ncprobe report`` (their ``dest``) that only this probe's report
    #: takes; a report of a folder holding several probes' results gives each probe's
    #: report only its own.
    report_options: ClassVar[tuple[str, ...]] = ()

    def commands(self) -> dict[str, tuple[Callable[..., argparse.ArgumentParser],
                                          Callable[[argparse.Namespace, type], int]]]:
        """Commands of its own beyond ``run``, ``report`` and ``compare`` (NCIMP's
        ``reproduce``), by name: ``(add_parser(subparsers, config), run(args, config))``, as
        :data:`ncprobe.cli.COMMANDS` lists them. None by default."""
        return {}

    @abstractmethod
    def results_class(self) -> type[ProbeResults]:
        """The class of its results."""

    def tables(self) -> tuple[str, ...]:
        """The names of its result tables."""
        return tuple(self.results_class().layout.tables)

    # --- running ----------------------------------------------------------------------------

    @abstractmethod
    def config_class(self) -> type:
        """The dataclass holding its run options (one field each: default, help, check)."""

    @abstractmethod
    def run(self, config: Any = None, /, **options: Any) -> ProbeResults:
        """Run it from Python: a config, or its fields as keywords."""

    @abstractmethod
    def add_run_arguments(self, parser: argparse.ArgumentParser, config: type | None = None
                          ) -> None:
        """Add its run options (and ``--out``, ``--json`` ...) to ``parser``."""

    @abstractmethod
    def run_from_args(self, args: argparse.Namespace, config: type | None = None) -> int:
        """Run it from parsed options, write its results directory, print its summary (or
        ``--json`` rows); the exit code."""

    # --- what its results give --------------------------------------------------------------

    def report_from_args(self, args: argparse.Namespace, formats: Sequence[str]) -> int:
        """``ncprobe report`` of results directories of this probe; the exit code.

        By default: the report command's options of the NCIMP report (``--examples``,
        ``--space``, ``--level``) are refused, the directories read and joined
        (:meth:`ProbeResults.load_many`), results read although edited said first, and
        :meth:`ProbeResults.report` written. NCIMP's probe overrides it."""
        import sys

        from ..errors import UsageError
        from .options import say

        given = [opt for opt, value in (("--examples", args.examples),
                                        ("--space", args.space), ("--level", args.level))
                 if value is not None]
        if given:
            raise UsageError(f"{', '.join(given)}: options of the NCIMP report; {self.name} "
                             "results have no such choice")
        res = self.results_class().load_many(args.results, exclude=args.exclude,
                                             accept_edited=args.accept_edited_results)
        for line in res.edited_lines():  # first, where it cannot be missed
            print(line, file=sys.stderr)
        written = res.report(args.out, formats=formats, overwrite=args.overwrite,
                             progress=None if args.quiet else say)
        print(f"{len(written)} files written to {args.out}")
        return 0

    @abstractmethod
    def compare_from_args(self, args: argparse.Namespace, out: Path | None) -> int:
        """``ncprobe compare`` of results directories of this probe; the exit code."""

    @abstractmethod
    def models_text(self) -> str:
        """What ``ncprobe models --probe NAME`` prints: its models and what each needs."""

    # --- its data ---------------------------------------------------------------------------

    @abstractmethod
    def reads(self, f: "UpstreamFile") -> bool:
        """Whether the probe reads the pinned file ``f``."""

    @abstractmethod
    def data_info(self, root: Path) -> tuple[dict, list[str], list[str]]:
        """What ``ncprobe data info`` shows of its data in ``root``: JSON-ready keys (merged
        into the command's JSON), notes, and problems (each a line)."""

    @abstractmethod
    def data_info_lines(self, info: dict) -> list[str]:
        """Its part of ``ncprobe data info``'s text, from its :meth:`data_info` keys."""

    @abstractmethod
    def check_data(self, root: Path) -> tuple[list["DataError"], list[str], list[str]]:
        """Parse and validate every file of its data present in ``root``: the problems, the
        notes, and the known upstream anomalies tolerated."""
