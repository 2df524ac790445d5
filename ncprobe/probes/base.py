"""What a probe declares (:class:`Probe`), and the one interface of every probe's results
(:class:`ProbeResults`). ``docs/extending.md`` adds a probe step by step.
"""

from __future__ import annotations

import argparse
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

if TYPE_CHECKING:
    import pandas as pd

    from ..data.sources import UpstreamFile
    from ..errors import DataError


class ProbeResults(ABC):
    """The results of one or more runs of a probe: its tables (tidy DataFrames) and one
    ``meta`` dict per run (``config``, ``fingerprint``, ``data_sources``, ``notes``).

    Every probe's results class implements this interface, and is stored through the one
    results store (:mod:`ncprobe.results.store`, with the probe's ``Layout``): a results
    directory of parquet tables and a verified ``run.json``.
    """

    meta: list[dict]

    # --- reading and writing ----------------------------------------------------------------

    @classmethod
    @abstractmethod
    def load(cls, path: str | Path, *, accept_edited: bool = False) -> "ProbeResults":
        """Read one results directory, verified (an edited table or ``run.json`` is refused
        unless ``accept_edited``)."""

    @classmethod
    @abstractmethod
    def load_many(cls, *args: Any, **kwargs: Any) -> "ProbeResults":
        """``load_many(paths, *, exclude=(), accept_edited=False)``: every results directory
        at or below ``paths`` (less ``exclude``), read and joined; never two runs of one cell
        pooled."""

    @abstractmethod
    def to_parquet(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the results directory ``path`` as one unit; returns it."""

    @property
    @abstractmethod
    def tables(self) -> dict[str, "pd.DataFrame"]:
        """The tables by name, in the order they are written."""

    @property
    @abstractmethod
    def run_id(self) -> str:
        """A hash of every table's rows and of ``meta`` (equal results, equal ids)."""

    @property
    @abstractmethod
    def notes(self) -> list[str]:
        """What was noticed while computing, one line each, prefixed by the run."""

    def edited_lines(self) -> list[str]:
        """One line per run read although edited since ncprobe wrote it (``load(...,
        accept_edited=True)``): what a report and ``compare`` say first. None by default."""
        return []

    # --- reading the tables -----------------------------------------------------------------

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
    #: One line of ``ncprobe run --help``.
    help: ClassVar[str]
    #: What ``ncprobe run NAME --help`` (and its shorthand's) says it does.
    description: ClassVar[str]

    @abstractmethod
    def results_class(self) -> type[ProbeResults]:
        """The class of its results."""

    def tables(self) -> tuple[str, ...]:
        """The names of its result tables."""
        return tuple(self.results_class().layout.tables)  # type: ignore[attr-defined]

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

        from ..cli._options import say
        from ..errors import UsageError

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
