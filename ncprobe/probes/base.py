"""What a probe declares (:class:`Probe`), and the one interface of every probe's results
(:class:`ProbeResults`). ``docs/extending.md`` adds a probe step by step.
"""

from __future__ import annotations

import argparse
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    ClassVar,
    Iterable,
    Mapping,
    Protocol,
    Sequence,
    TypeVar,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from ..concept import Concept, FittedOn
    from ..data.sources import UpstreamFile
    from ..errors import DataError
    from ..headline import Headline
    from ..results.store import Layout
    from ..transform import VectorTransform
    from ..verify import Measured, Published
    from .options import Option

class Peers(Protocol):
    """The look-ups a probe reaches other probes by (:attr:`Probe.peers`)."""

    def concept(self, probe: str, model: str, lang: str, **options: Any) -> "Concept": ...

    def target(self, probe: str) -> "Probe": ...

    def verifiers(self) -> list["Probe"]: ...


#: A results class (what its class methods return).
R = TypeVar("R", bound="ProbeResults")
M = TypeVar("M", bound="ModelRunResults")


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


#: Options that say where and how fast a run ran, not what it computed: never why two runs'
#: shared rows differ.
NOT_OPTIONS: tuple[str, ...] = ("model", "device", "dtype", "batch_size")


@dataclass(frozen=True)
class SharedRows:
    """The rows of one table that every run of the same data and options holds alike (a
    probe's controls, its published systems): :meth:`ProbeResults.concat` keeps them once,
    from the first results, and refuses results whose rows differ.

    Attributes:
        what: the rows in words, in that refusal (``"control rows (majority, ...)"``).
        column, values: the rows whose ``column`` is one of ``values``; no column: the whole
            table.
    """

    what: str
    column: str | None = None
    values: tuple[str, ...] = ()

    def mask(self, df: "pd.DataFrame") -> "np.ndarray":
        """Which rows of ``df`` are shared."""
        import numpy as np

        if self.column is None:
            return np.ones(len(df), dtype=bool)
        return df[self.column].astype(str).isin(self.values).to_numpy(bool)


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

    #: The probe's results in words, in messages (``"NCC"``: ``no NCC results to join``).
    title: ClassVar[str] = "probe"

    @classmethod
    @abstractmethod
    def concat(cls: type[R], *args: Any, **kwargs: Any) -> R:
        """``concat(results, names=None)``: several results as one (``names``: what each is
        called in a refusal); never two runs of one cell pooled
        (:meth:`ModelRunResults.concat` for a probe whose runs are one model each)."""

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

    def report(self, out_dir: str | Path, *, formats: Sequence[str] = ("png", "pdf"),
               dpi: int = 200, overwrite: bool = False,
               progress: Callable[[str], None] | None = None) -> list[Path]:
        """Write the probe's report (figures, tables, an index) into ``out_dir``:
        :meth:`report_writer` of :meth:`report_tables` and :meth:`report_meta`
        (``overwrite``: replace another probe's report there; ``progress``: told of each file
        written); returns the files written."""
        return self.report_writer()(self.report_tables(), self.report_meta(), out_dir,
                                    formats=formats, dpi=dpi, overwrite=overwrite,
                                    progress=progress)

    def report_writer(self) -> Callable[..., list[Path]]:
        """The probe's report writer: ``(tables, meta, out_dir, *, formats, dpi, overwrite,
        progress)``, returning the files written."""
        raise NotImplementedError(f"{type(self).__name__} has no report writer")

    def report_tables(self) -> dict[str, "pd.DataFrame"]:
        """The tables the report is written from: the results' own by default."""
        return self.tables

    def report_meta(self) -> dict:
        """What the report's index says of the runs."""
        raise NotImplementedError(f"{type(self).__name__} has no report metadata")

    @abstractmethod
    def compare(self, *args: Any, **kwargs: Any) -> "pd.DataFrame":
        """``compare(other=None, *, names=None, n_boot=None, seed=None, correction=None,
        **options)``: paired tests between these results and ``other`` (or within these),
        corrected across one stated family; a tidy DataFrame. ``names``: what the two are
        called (their directories); ``n_boot``, ``seed``, ``correction``: default the runs'
        shared options (:meth:`compare_defaults`); ``options``: the probe's own (NCC's and
        AStitch's ``a`` and ``b``, AStitch's ``n_perm``, IdioLink's ``n_flips``)."""

    #: What one run's own tests already compare: said when :meth:`compare` is given no
    #: other results of the probe.
    tested_within: ClassVar[str] = "a run's own tests are in its table tests"

    def compare_defaults(self: R, other: Any, names: Sequence[str] | None,
                         n_boot: int | None, seed: int | None, correction: str | None
                         ) -> tuple[R, list[str], Any, Any, str]:
        """What :meth:`compare` shares across probes: ``other`` checked to be results of
        this probe (and returned as such), the two sides' names (default ``results 1``,
        ``results 2``), and ``n_boot``, ``seed`` and ``correction`` where not given: the
        runs' shared options, else :data:`ncprobe.config.N_BOOT`, 0 and ``holm`` (checked by
        the tests that take them).

        Raises:
            UsageError: ``other`` is not results of this probe.
        """
        from ..config import N_BOOT
        from ..errors import UsageError

        if not isinstance(other, type(self)):
            raise UsageError(f"{self.title} results are compared with other {self.title} "
                             f"results ({self.tested_within})")
        return (other, list(names or ["results 1", "results 2"]),
                self.option("n_boot", N_BOOT) if n_boot is None else n_boot,
                self.option("seed", 0) if seed is None else seed,
                correction or self.option("correction", "holm"))


class ModelRunResults(ProbeResults):
    """The results of a probe whose runs are one model each (NCC, AStitch, IdioLink): one
    :meth:`select` over its tables, and one :meth:`concat` that keeps the rows its runs share
    (:attr:`shared_rows`) once."""

    #: The table :meth:`select` reads when none is named (the probe's headline table).
    default_table: ClassVar[str]

    def select(self, table: str | None = None, **filters: Any) -> "pd.DataFrame":
        """Rows of one table (default :attr:`default_table`) through the one filter engine
        (:func:`ncprobe.query.filter_rows`): a value or a list of values per column, e.g.
        ``select("accuracy", kind="published")``.

        Raises:
            UsageError: an unknown table or column, or a value no row has (the message lists
                the values there are), so a typo never gives an empty frame.
        """
        return self.select_rows(table or self.default_table, filters)

    #: The rows its runs share, by table (:class:`SharedRows`): :meth:`concat` keeps them once
    #: and refuses results whose shared rows differ; a table not named is stacked whole.
    shared_rows: ClassVar[Mapping[str, SharedRows]] = {}
    #: The options named when two results' shared rows differ (``None``: every option of
    #: their runs but :data:`NOT_OPTIONS`).
    shared_options: ClassVar[tuple[str, ...] | None] = None

    @classmethod
    def check_joinable(cls: type[M], results: Sequence[M], names: Sequence[str]) -> None:
        """Refuse to join ``results`` (called ``names``) that are not results of one question:
        here a model in two of them (:func:`refuse_pooling`); a probe adds its own (the same
        items, the same data files).

        Raises:
            UsageError: naming the results and what differs.
        """
        refuse_pooling([res.models for res in results], names, "leave one out")

    @classmethod
    def concat(cls: type[M], results: Sequence[M], names: Sequence[str] | None = None) -> M:
        """Several results as one (``names``: what each is called in a refusal, default
        ``results 1``, ``results 2`` ...): each table stacked in the results' order, the rows
        of :attr:`shared_rows` kept once (the first results'), never two runs of one cell
        pooled (:meth:`check_joinable`). A probe of other runs overrides it (NCIMP's).

        Raises:
            UsageError: no results, results :meth:`check_joinable` refuses, or whose shared
                rows differ (other options: each is reported on its own).
        """
        import pandas as pd

        from ..errors import UsageError

        results = list(results)
        if not results:
            raise UsageError(f"no {cls.title} results to join")
        names = list(names or [f"results {i + 1}" for i in range(len(results))])
        cls.check_joinable(results, names)
        first = results[0]
        frames = {}
        for table in cls.layout.tables:
            rule = cls.shared_rows.get(table)
            parts = [first.tables[table]]
            for res, name in zip(results[1:], names[1:], strict=True):
                df = res.tables[table]
                if rule is not None:
                    first.check_shared(res, table, rule, names[0], name)
                    if rule.column is None:
                        continue  # the whole table is shared: the first results' once
                    df = df[~rule.mask(df)]
                parts.append(df)
            frames[table] = pd.concat(parts, ignore_index=True)
        return cls(**frames, meta=[m for r in results for m in r.meta])  # type: ignore[call-arg]

    def check_shared(self, other: ProbeResults, table: str, rule: SharedRows, name_a: str,
                     name_b: str) -> None:
        """Refuse to join ``other`` to these results when the rows ``rule`` names of
        ``table`` differ (equal values: a table read from parquet and one computed may differ
        in dtype); the message names the options of the runs that differ.

        Raises:
            UsageError: naming both results, the rows and the table.
        """
        import pandas as pd

        from ..errors import UsageError

        def shared(res: ProbeResults) -> pd.DataFrame:
            df = res.tables[table]
            return df[rule.mask(df)].reset_index(drop=True)

        try:
            pd.testing.assert_frame_equal(shared(self), shared(other), check_dtype=False)
            return
        except AssertionError:
            pass
        keys = self.shared_options if self.shared_options is not None else sorted(
            {k for m in self.meta + other.meta for k in m["config"] if k not in NOT_OPTIONS},
            key=str)
        options = [f"{k} {self.option(k, None)!r} in {name_a}, {other.option(k, None)!r} in "
                   f"{name_b}" for k in keys if self.option(k, None) != other.option(k, None)]
        raise UsageError(f"{name_a} and {name_b} hold different {rule.what} (table {table})"
                         + (f": the runs' options differ ({'; '.join(options)})" if options
                            else "")
                         + ". Runs of other options are never shown in one table: report each "
                         "on its own, or leave one out with --exclude")


class Probe(ABC):
    """A probe of the registry (:data:`ncprobe.probes.PROBES`): what it asks, its data, its
    run options, how it runs, its results class, its report and its comparison.

    The command line reaches every probe through these methods only: ``ncprobe run NAME``
    (:meth:`add_run_arguments`, :meth:`run_from_args`), ``ncprobe probes`` (:attr:`asks`,
    :attr:`data`, :meth:`tables`), ``report`` (:meth:`report_options`,
    :meth:`report_from_args`), ``compare`` (:meth:`compare_options`,
    :meth:`compare_from_args`), ``models --probe``
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
    #: Whether a results directory whose ``run.json`` names no probe holds this probe's
    #: results (its layout is not ``named``): one built-in probe only, NCIMP
    #: (:func:`ncprobe.probes.results_probe`).
    reads_unnamed_results: ClassVar[bool] = False
    #: Whether the probe offers a concept: labels of its own that an eraser is fitted on
    #: (:meth:`concept`; amnesic probing, :mod:`ncprobe.amnesic`). A probe that declares it
    #: implements :meth:`concept`.
    offers_concept: ClassVar[bool] = False
    #: Whether the probe can be a target of an intervention on the vectors (:meth:`target_rows`;
    #: amnesic probing): it runs with a vector transform and measures the change itself.
    offers_target: ClassVar[bool] = False
    #: Whether the probe checks values a paper printed (:meth:`verify`): the rows of the data
    #: file of published values (:mod:`ncprobe.verify`) under its name, which ``ncprobe
    #: reproduce --probes`` puts in its verification table.
    checks_published: ClassVar[bool] = False
    #: The other probes, as the registry that made this one reaches them (its ``concept`` and
    #: ``target`` look-ups, :data:`ncprobe.probes.PEERS`); ``None`` for a probe made by hand. A
    #: probe that runs other probes (amnesic probing) asks them through it, never by
    #: importing the registry.
    peers: "Peers | None" = None
    #: One line of ``ncprobe run --help``.
    help: ClassVar[str]
    #: What ``ncprobe run NAME --help`` (and its shorthand's) says it does.
    description: ClassVar[str]
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

    def concept(self, model: str, lang: str, *, layers: str | None = None,
                data_dir: str | Path | None = None, cache: bool = True,
                cache_dir: str | Path | None = None, progress: bool = False,
                **options: Any) -> "Concept":
        """The probe's own labels of its rows as a concept, with ``model``'s vectors of them
        for ``lang``, read one layer view at a time (:class:`~ncprobe.concept.Concept`: its
        training rows, its held-out rows or none, the groups folds keep together). Only a
        probe that declares :attr:`offers_concept` has one; :func:`ncprobe.probes.concept`
        asks a probe by name.

        Args:
            layers: the transformer layer views (as the probe's ``--layers``).
            data_dir, cache, cache_dir, progress: as for the probe's run.
            options: the probe's own (its documentation lists them); one it does not take is
                refused.

        Raises:
            UsageError: here, always: this probe offers no concept (naming it). A probe's
                own: an option, a language or a layer it does not have.
        """
        from ..errors import UsageError

        raise UsageError(f"probe {self.name!r} offers no concept (labels an eraser could be "
                         "fitted on); ncprobe.probes.concept_probes() lists the probes with "
                         "one")

    def target_rows(self, model: str, lang: str,
                    transforms: "Mapping[str, VectorTransform | None]", *,
                    layers: str | None = None, n_boot: int = 1000, seed: int = 0,
                    correction: str = "holm", compare_n_boot: int,
                    fitted_on: "FittedOn | None" = None,
                    **options: Any) -> "pd.DataFrame":
        """The probe as a target of an intervention on ``model``'s vectors in ``lang``: one
        run per condition of ``transforms`` (``plain``: ``None``, ``erased``, ``control``:
        vector transforms, :mod:`ncprobe.transform`), measured by the probe itself, as rows
        of :data:`ncprobe.intervention.TARGET_COLUMNS`: each run's headline metric per layer
        view with its interval, the paired changes with their intervals over the probe's
        unit, and the test of ``erased - control`` corrected within the probe's cells. Only a
        probe that declares :attr:`offers_target` has it.

        Args:
            layers: the transformer layer views (as the probe's ``--layers``).
            n_boot, seed, correction: the runs' intervals, the resamples' seed, the correction.
            compare_n_boot: the resamples of the changes' paired intervals and tests (the
                amnesic run resolves its default, :data:`ncprobe.probes.options.
                COMPARE_N_BOOT`, as ``ncprobe compare``'s).
            fitted_on: the rows the concept's erasers were fitted on
                (:attr:`ncprobe.concept.Concept.fitted_on`), or ``None``: a target that trains
                on rows of its own marks the cells whose training rows share them
                (``shares_concept_rows``: there LEACE's guarantee alone sends the trained
                probe to chance).
            options: the probe's run options (its config's fields) and ``data_dir``,
                ``cache``, ``cache_dir``, ``progress``.

        Raises:
            UsageError: here, always: this probe is no target (naming it).
        """
        from ..errors import UsageError

        raise UsageError(f"probe {self.name!r} cannot be a target of amnesic probing (it takes "
                         "no vector transform); ncprobe.probes.target_probes() lists those "
                         "that can")

    def check_target(self, lang: str, **options: Any) -> None:
        """Refuse, before any work, what :meth:`target_rows` would refuse of ``lang`` and of
        its run ``options`` (NCC: a language other than English, ``behaviour``): a run of
        several probes (amnesic probing) asks every target before the first is run. Nothing
        by default.

        Raises:
            UsageError: naming what is refused.
        """
        return None

    def verify(self, published: Sequence["Published"], *,
               results_dir: str | Path = "results", data_dir: str | Path | None = None,
               cache: bool = True, cache_dir: str | Path | None = None,
               progress: bool = False, resume: bool = False, overwrite: bool = False,
               say: Callable[[str], None] | None = None) -> list["Measured"]:
        """ncprobe's value of each published value of this probe (``published``: the data
        file's rows under its name, :func:`ncprobe.verify.published_rows`), one
        :class:`~ncprobe.verify.Measured` per row's key, in the printed unit; what ``ncprobe
        reproduce --probes`` checks (:func:`ncprobe.verify.verification_table` refuses a row
        left unanswered). Only a probe that declares :attr:`checks_published` has it.

        Args:
            results_dir: where a run it makes is written (``<results_dir>/<its own name>``),
                as ``reproduce``'s ``--results-dir``.
            data_dir, cache, cache_dir, progress: as for the probe's run.
            resume: keep a finished results directory of the same run (same options, data
                unchanged) instead of computing it again.
            overwrite: replace a results directory that holds another run.
            say: told one line at each step.

        Raises:
            UsageError: here, always: this probe checks no published value (naming it).
        """
        from ..errors import UsageError

        raise UsageError(f"probe {self.name!r} checks no published value (the data file of "
                         "published values has none it computes)")

    # --- what its results give --------------------------------------------------------------

    def headline(self, results: ProbeResults) -> "Headline":
        """The probe's headline metric over the models of ``results``
        (:class:`~ncprobe.headline.Headline`: the metric, its direction, the probe's unit, each
        model's rows and the function of them), what ``ncprobe board`` ranks models by
        (:mod:`ncprobe.board`). A probe without one (amnesic probing: its results are
        changes, not a model's score) keeps this default.

        Raises:
            UsageError: here, always: this probe declares no headline metric (naming it).
        """
        from ..errors import UsageError

        raise UsageError(f"probe {self.name!r} declares no headline metric (Probe.headline): "
                         "its results cannot be ranked on a board; leave its directories out "
                         "(--exclude DIR)")


    def report_options(self) -> tuple["Option", ...]:
        """The options of ``ncprobe report`` that its report takes beyond those every report
        takes (the results directories, ``--out``, ``--overwrite``, ``--exclude``,
        ``--accept-edited-results``, ``--format``, ``--quiet``): :class:`~ncprobe.probes.
        options.Option` s (NCIMP's: ``--examples``, ``--space``, ``--level``, ``--correct``,
        ``--compact-tables``, ``--jobs``). Given for results of a probe that does not declare
        it, an option is refused (exit 2); :meth:`report_from_args` gets its own, at their
        defaults when not given, and no other. None by default."""
        return ()

    def compare_options(self) -> tuple["Option", ...]:
        """The options of ``ncprobe compare`` that its comparison takes beyond those every
        comparison takes (the two sides, ``--out``, ``--overwrite``, ``--exclude``,
        ``--accept-edited-results``, ``--quiet``), as :meth:`report_options` for ``report``
        (most probes: :func:`~ncprobe.probes.options.compare_test_options`, ``--n-boot``,
        ``--seed``, ``--correct``). None by default."""
        return ()

    def report_from_args(self, args: argparse.Namespace, formats: Sequence[str]) -> int:
        """``ncprobe report`` of results directories of this probe (``args``: the options
        every report takes and those of :meth:`report_options`); the exit code.

        By default: the directories read and joined (:meth:`ProbeResults.load_many`), results
        read although edited said first, and :meth:`ProbeResults.report` written."""
        import sys

        from .options import say

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
        """``ncprobe compare`` of results directories of this probe (``args``: the options
        every comparison takes and those of :meth:`compare_options`; ``out``: ``--out``,
        checked, :func:`~ncprobe.probes.commands.check_comparison_out`); the exit code
        (:func:`~ncprobe.probes.commands.compare_probe_runs` does it for most probes)."""

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
